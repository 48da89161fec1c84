//! Redis servers on loopback ports for the tests of the LTO cache's Redis client: a real `redis-server`
//! ([`RedisServer`]), and a scriptable fake ([`FakeRedis`]) that reads the commands a client sends (RESP
//! arrays of bulk strings, as every client writes them) and answers each as the test says, which may be
//! slowly, hugely or wrongly. The fake keeps the commands it received for the test to check.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One command: its words (`GET`, the key, ...).
pub type Command = Vec<Vec<u8>>;

/// How the server answers one command, writing to the client's stream; an error closes the connection.
pub type Answer = dyn Fn(&Command, &mut TcpStream) -> std::io::Result<()> + Send + Sync;

/// A fake Redis server, stopped when dropped (connections it is serving end when their client goes).
pub struct FakeRedis {
    port: u16,
    commands: Arc<Mutex<Vec<Command>>>,
    stopped: Arc<AtomicBool>,
}

impl FakeRedis {
    /// Starts a server on a free loopback port that answers every command of every connection with `answer`.
    pub fn start(
        answer: impl Fn(&Command, &mut TcpStream) -> std::io::Result<()> + Send + Sync + 'static,
    ) -> FakeRedis {
        let listener = match TcpListener::bind("127.0.0.1:0") {
            Ok(listener) => listener,
            Err(error) => panic!("cannot listen on a loopback port: {error}"),
        };
        let port = match listener.local_addr() {
            Ok(address) => address.port(),
            Err(error) => panic!("the loopback listener has no address: {error}"),
        };
        let commands = Arc::new(Mutex::new(Vec::new()));
        let stopped = Arc::new(AtomicBool::new(false));
        let answer: Arc<Answer> = Arc::new(answer);
        let (received, stop) = (Arc::clone(&commands), Arc::clone(&stopped));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let (answer, received) = (Arc::clone(&answer), Arc::clone(&received));
                std::thread::spawn(move || serve(stream, &*answer, &received));
            }
        });
        FakeRedis {
            port,
            commands,
            stopped,
        }
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of the server, database 0 and no password: `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The commands received so far, in the order they arrived.
    pub fn commands(&self) -> Vec<Command> {
        match self.commands.lock() {
            Ok(commands) => commands.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

impl Drop for FakeRedis {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wakes the accepting thread so that it sees the flag and ends.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Reads commands from one client and answers them until the client goes or an answer fails.
fn serve(mut stream: TcpStream, answer: &Answer, received: &Mutex<Vec<Command>>) {
    let mut pending = Vec::new();
    loop {
        let command = loop {
            if let Some((command, used)) = parse_command(&pending) {
                pending.drain(..used);
                break command;
            }
            let mut buffer = [0; 64 * 1024];
            match stream.read(&mut buffer) {
                Ok(0) | Err(_) => return,
                Ok(count) => pending.extend_from_slice(&buffer[..count]),
            }
        };
        match received.lock() {
            Ok(mut commands) => commands.push(command.clone()),
            Err(poisoned) => poisoned.into_inner().push(command.clone()),
        }
        if answer(&command, &mut stream).is_err() {
            return;
        }
    }
}

/// The first command of `bytes` (an array of bulk strings) and how many bytes it takes, once it is complete.
/// Malformed input is never complete: the test's client is the thing under test, and a hang shows up there.
fn parse_command(bytes: &[u8]) -> Option<(Command, usize)> {
    fn line(bytes: &[u8], at: usize, tag: u8) -> Option<(usize, usize)> {
        let rest = bytes.get(at..)?;
        let end = rest.windows(2).position(|pair| pair == b"\r\n")?;
        let (&first, number) = rest[..end].split_first()?;
        let value = std::str::from_utf8(number).ok()?.parse().ok()?;
        (first == tag).then_some((value, at + end + 2))
    }
    let (count, mut at) = line(bytes, 0, b'*')?;
    let mut words = Vec::new();
    for _ in 0..count {
        let (length, start) = line(bytes, at, b'$')?;
        let end = start.checked_add(length)?;
        if bytes.get(end..end.checked_add(2)?)? != b"\r\n" {
            return None;
        }
        words.push(bytes.get(start..end)?.to_vec());
        at = end + 2;
    }
    Some((words, at))
}

/// Writes `bytes` one at a time with `gap` before each, as a server that trickles its reply does; it stops
/// (with the error) when the client has gone.
pub fn trickle(stream: &mut TcpStream, bytes: &[u8], gap: Duration) -> std::io::Result<()> {
    for byte in bytes {
        std::thread::sleep(gap);
        stream.write_all(std::slice::from_ref(byte))?;
    }
    Ok(())
}

/// Writes `header`, then `count` bytes of `fill` in large writes: a huge reply, or the body of one whose
/// header lies. It stops (with the error) when the client has gone.
pub fn flood(stream: &mut TcpStream, header: &[u8], fill: u8, count: u64) -> std::io::Result<()> {
    stream.write_all(header)?;
    let chunk = vec![fill; 1 << 20];
    let mut left = count;
    while left > 0 {
        let now = left.min(chunk.len() as u64) as usize;
        stream.write_all(&chunk[..now])?;
        left -= now as u64;
    }
    Ok(())
}

/// A real `redis-server` on a free loopback port, keeping nothing on disk, stopped when dropped.
pub struct RedisServer {
    /// The server process.
    pub child: std::process::Child,
    port: u16,
}

impl RedisServer {
    /// Starts `redis-server` in `dir` with `args` added to its command line (`--requirepass`, ...).
    pub fn start(dir: &Path, args: &[&str]) -> RedisServer {
        let port = match TcpListener::bind("127.0.0.1:0").and_then(|listener| listener.local_addr()) {
            Ok(address) => address.port(),
            Err(error) => panic!("no free loopback port: {error}"),
        };
        let port_text = port.to_string();
        let mut child = match std::process::Command::new("redis-server")
            .args([
                "--port",
                &port_text,
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(args)
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .spawn()
        {
            Ok(child) => child,
            Err(error) => panic!("cannot run redis-server (scripts/test.sh installs it): {error}"),
        };
        for _ in 0..100 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return RedisServer { child, port };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("redis-server did not start on port {port}");
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of the server, database 0 and no password: `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// What `redis-cli -p PORT ARGS...` prints; it must succeed.
    pub fn cli(&self, args: &[&str]) -> String {
        let port = self.port.to_string();
        let mut all = vec!["-p", port.as_str()];
        all.extend(args);
        let output = crate::run_in("redis-cli", Path::new("/"), &all);
        crate::succeeded(&output, "redis-cli");
        crate::text(&output.stdout)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
