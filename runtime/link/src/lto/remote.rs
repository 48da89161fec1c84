//! The REMOTE_SHARED LTO cache: entries in a Redis server shared by machines, under the key
//! `neverc-lto:NAMESPACE:SHA256(provider key)`, each value an entry of `cache` (its contents and their
//! SHA-256, checked on every read).
//!
//! The client is our own and small: a request opens a TCP connection, authenticates and selects the
//! database when the URL says so, sends one `GET` or `SET` (a RESP array of bulk strings, binary-safe) and
//! reads the reply with [`resp::ReplyReader`]. A server is not trusted to be quick, small or well-formed:
//!
//! - connecting (resolving the host name included) may take [`CONNECT_TIMEOUT`], each read or write may wait
//!   [`IO_TIMEOUT`] for the server, and the whole request (connect, `AUTH`, `SELECT`, the command and its
//!   reply) must be done by [`REQUEST_DEADLINE`], so a server that trickles its reply a byte at a time is cut
//!   off there;
//! - a reply may be at most [`MAX_REPLY_SIZE`] bytes, refused from its header when it claims more, and read in
//!   time and memory linear in what arrives (see `resp`); a value larger than that is not stored;
//! - a message about a reply shows at most a clipped, escaped prefix of it, and the URL's password never.
//!
//! Whatever goes wrong is an error of [`get`] and [`set`], which [`lookup`] and [`store`] turn into the
//! reasons of a cache that is unavailable: the link goes on without the cache, with a warning, and never
//! fails because of it. The URL is `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]` (port 6379 and database 0
//! by default, the user name and password percent-encoded, an IPv6 address in brackets); TLS (`rediss://`)
//! and Unix sockets are refused by name.

pub mod resp;

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs as _};
use std::time::{Duration, Instant};

use thiserror::Error;

use crate::context::LinkOptions;
use crate::lto::cache::{Lookup, decode_entry, encode_entry, entry_name};
use crate::lto::provider::LtoCandidate;

pub use resp::MAX_REPLY_SIZE;
use resp::{Clipped, Feed, Reply, ReplyError, ReplyReader};

/// How long resolving the server's name and connecting to it may take: one second.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// How long one read or write may wait for the server: five seconds.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one request may take in all, from connecting to the last byte of its reply: ten seconds. A
/// link waits at most this long for the cache per lookup and per store, however slowly the server answers;
/// at the loopback or LAN speeds a shared cache is used at, an entry of hundreds of MiB is read well within it.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(10);

/// The Redis port when the URL names none.
const DEFAULT_PORT: u16 = 6379;

/// How many bytes one read takes from the socket at most.
const READ_BUFFER: usize = 256 << 10;

/// A word of a command at least this long is written from where it is, not copied into the command's buffer.
const COPY_LIMIT: usize = 64 << 10;

/// Why a request to the Redis server did not get its answer.
#[derive(Debug, Error)]
pub enum RemoteError {
    #[error("no Redis server was given (--lto-cache-url)")]
    NoServer,
    #[error("not a Redis URL this client takes: {0}")]
    Url(String),
    #[error("cannot resolve `{host}`: {source}")]
    Resolve { host: String, source: std::io::Error },
    #[error("`{host}` resolves to no address")]
    NoAddress { host: String },
    #[error("resolving `{host}` took longer than {CONNECT_TIMEOUT:?}")]
    ResolveTimeout { host: String },
    #[error("cannot connect to {address}: {source}")]
    Connect {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("the request took longer than {REQUEST_DEADLINE:?}, its deadline (the server is too slow)")]
    Deadline,
    #[error("the server did not {action} for {IO_TIMEOUT:?}")]
    Stalled { action: &'static str },
    #[error("{action}: {source}")]
    Io {
        action: &'static str,
        source: std::io::Error,
    },
    #[error("the server closed the connection before its reply was complete")]
    Closed,
    #[error("a malformed reply: {0}")]
    Malformed(#[from] ReplyError),
    #[error("the server sent {0} bytes nobody asked for after its reply")]
    Unsolicited(usize),
    #[error("the server refused {command}: `{message}`")]
    Refused { command: &'static str, message: Clipped },
    #[error("the server answered {command} with {got}, not {expected}")]
    Unexpected {
        command: &'static str,
        got: String,
        expected: &'static str,
    },
    #[error("the value is {size} bytes, more than a reply may have ({MAX_REPLY_SIZE} bytes with its header)")]
    ValueTooLarge { size: usize },
}

/// Where the server is and how to log in, from the URL.
#[derive(Debug, PartialEq, Eq)]
struct Server {
    host: String,
    port: u16,
    user: Option<Vec<u8>>,
    password: Option<Vec<u8>>,
    database: u64,
}

impl Server {
    /// The server `url` names.
    fn parse(url: &str) -> Result<Server, RemoteError> {
        Server::parse_parts(url).map_err(RemoteError::Url)
    }

    fn parse_parts(url: &str) -> Result<Server, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or("a Redis URL is redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]")?;
        match scheme.to_ascii_lowercase().as_str() {
            "redis" => {}
            "rediss" => return Err("TLS (`rediss://`) is not supported; use `redis://` over a trusted network".into()),
            "unix" | "redis+unix" => return Err("Unix sockets are not supported; use `redis://HOST:PORT/`".into()),
            _ => return Err(format!("the scheme `{scheme}` is not supported; use `redis://`")),
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        if path.contains(['?', '#']) || authority.contains(['?', '#']) {
            return Err("query parameters and fragments are not supported".into());
        }
        let database = match path {
            "" => 0,
            path => path
                .parse()
                .ok()
                .filter(|_| path.bytes().all(|byte| byte.is_ascii_digit()))
                .ok_or_else(|| format!("the database `{path}` is not a number"))?,
        };
        let (credentials, address) = match authority.rsplit_once('@') {
            Some((credentials, address)) => (Some(credentials), address),
            None => (None, authority),
        };
        let (user, password) = match credentials.map(|credentials| credentials.split_once(':')) {
            None => (None, None),
            Some(Some((user, password))) => (Some(percent_decode(user)?), Some(percent_decode(password)?)),
            Some(None) => return Err("a user name needs a password (redis://USER:PASSWORD@HOST)".into()),
        };
        let (host, port) = match address.strip_prefix('[') {
            Some(bracketed) => {
                let (host, after) = bracketed.split_once(']').ok_or("an IPv6 address lacks its `]`")?;
                host.parse::<std::net::Ipv6Addr>()
                    .map_err(|_| format!("`{host}` is not an IPv6 address"))?;
                (host, after)
            }
            None => match address.find(':') {
                Some(colon) => address.split_at(colon),
                None => (address, ""),
            },
        };
        if host.is_empty() {
            return Err("the URL names no host".into());
        }
        let port = match port {
            "" | ":" => DEFAULT_PORT,
            port => port
                .strip_prefix(':')
                .and_then(|digits| digits.parse().ok())
                .filter(|port| *port != 0)
                .ok_or_else(|| format!("`{port}` is not a port"))?,
        };
        Ok(Server {
            host: host.to_string(),
            port,
            user: user.filter(|user| !user.is_empty()),
            password,
            database,
        })
    }
}

/// `text` with its `%XX` escapes decoded.
fn percent_decode(text: &str) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, after)) = rest.split_first() {
        if byte == b'%' {
            let value = after
                .get(..2)
                .and_then(|hex| std::str::from_utf8(hex).ok())
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .ok_or("a `%` in the user name or password is not followed by two hexadecimal digits")?;
            bytes.push(value);
            rest = &after[2..];
        } else {
            bytes.push(byte);
            rest = after;
        }
    }
    Ok(bytes)
}

/// `url` as a message may show it: any password replaced by `***`.
fn shown_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((credentials, address)) => {
            let user = credentials.split_once(':').map_or(credentials, |(user, _)| user);
            format!("{scheme}://{user}:***@{address}{path}")
        }
        None => url.to_string(),
    }
}

/// One request's connection: every read and write bounded by the request's deadline.
struct Connection {
    stream: TcpStream,
    deadline: Instant,
    buffer: Vec<u8>,
}

impl Connection {
    /// Connects to the server of `options` by `deadline`, and logs in and selects the database as its URL
    /// says.
    fn open(options: &LinkOptions, deadline: Instant) -> Result<Connection, RemoteError> {
        let url = options.lto_cache_url.as_deref().ok_or(RemoteError::NoServer)?;
        let server = Server::parse(url)?;
        let stream = connect(&server, deadline)?;
        // Commands are written whole or in large pieces: no small write should wait for an acknowledgement.
        stream.set_nodelay(true).map_err(|source| RemoteError::Io {
            action: "configuring the connection",
            source,
        })?;
        let mut connection = Connection {
            stream,
            deadline,
            buffer: vec![0; READ_BUFFER],
        };
        if let Some(password) = &server.password {
            let reply = match &server.user {
                Some(user) => connection.command(&[b"AUTH", user, password])?,
                None => connection.command(&[b"AUTH", password])?,
            };
            expect_ok(reply, "AUTH")?;
        }
        if server.database != 0 {
            let reply = connection.command(&[b"SELECT", server.database.to_string().as_bytes()])?;
            expect_ok(reply, "SELECT")?;
        }
        Ok(connection)
    }

    /// What is left of the request's time, or the deadline's error when nothing is.
    fn remaining(&self) -> Result<Duration, RemoteError> {
        self.deadline
            .checked_duration_since(Instant::now())
            .filter(|left| !left.is_zero())
            .ok_or(RemoteError::Deadline)
    }

    /// The error of a read or write that failed with `source`.
    fn failed(&self, action: &'static str, source: std::io::Error) -> RemoteError {
        match source.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => match self.remaining() {
                Ok(_) => RemoteError::Stalled { action },
                Err(deadline) => deadline,
            },
            std::io::ErrorKind::UnexpectedEof
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::BrokenPipe => RemoteError::Closed,
            _ => RemoteError::Io { action, source },
        }
    }

    /// Sends a command and reads its reply.
    fn command(&mut self, words: &[&[u8]]) -> Result<Reply, RemoteError> {
        // Short words go out together; a long one (a value) is written from where it is.
        let mut pending = format!("*{}\r\n", words.len()).into_bytes();
        for word in words {
            pending.extend_from_slice(format!("${}\r\n", word.len()).as_bytes());
            if word.len() >= COPY_LIMIT {
                self.write_all(&pending)?;
                self.write_all(word)?;
                pending.clear();
            } else {
                pending.extend_from_slice(word);
            }
            pending.extend_from_slice(b"\r\n");
        }
        self.write_all(&pending)?;
        self.read_reply()
    }

    fn write_all(&mut self, mut bytes: &[u8]) -> Result<(), RemoteError> {
        while !bytes.is_empty() {
            let timeout = self.remaining()?.min(IO_TIMEOUT);
            self.stream
                .set_write_timeout(Some(timeout))
                .map_err(|source| self.failed("write", source))?;
            // Pieces of at most a read buffer, so that the deadline is looked at between them.
            let piece = bytes.get(..READ_BUFFER).unwrap_or(bytes);
            match self.stream.write(piece) {
                Ok(0) => return Err(RemoteError::Closed),
                Ok(written) => bytes = &bytes[written..],
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => return Err(self.failed("accept the command", error)),
            }
        }
        Ok(())
    }

    fn read_reply(&mut self) -> Result<Reply, RemoteError> {
        let mut reader = ReplyReader::new(MAX_REPLY_SIZE);
        loop {
            let timeout = self.remaining()?.min(IO_TIMEOUT);
            self.stream
                .set_read_timeout(Some(timeout))
                .map_err(|source| self.failed("reply", source))?;
            let count = match self.stream.read(&mut self.buffer) {
                Ok(0) => return Err(RemoteError::Closed),
                Ok(count) => count,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(self.failed("reply", error)),
            };
            match reader.feed(&self.buffer[..count])? {
                Feed::NeedMore => {}
                // One command is sent at a time: whatever follows its reply was never asked for.
                Feed::Reply { used, .. } if used < count => return Err(RemoteError::Unsolicited(count - used)),
                Feed::Reply { reply, .. } => return Ok(reply),
            }
        }
    }
}

/// A connection to `server` by `deadline` (and within [`CONNECT_TIMEOUT`]), trying each of its addresses.
fn connect(server: &Server, deadline: Instant) -> Result<TcpStream, RemoteError> {
    let started = Instant::now();
    let limit = (started + CONNECT_TIMEOUT).min(deadline);
    let addresses = resolve(server, limit)?;
    let mut last = Err(RemoteError::NoAddress {
        host: server.host.clone(),
    });
    for address in addresses {
        // An address there is no time left for fails as a connection that timed out.
        let result = match limit
            .checked_duration_since(Instant::now())
            .filter(|left| !left.is_zero())
        {
            Some(left) => TcpStream::connect_timeout(&address, left),
            None => Err(std::io::ErrorKind::TimedOut.into()),
        };
        match result {
            Ok(stream) => return Ok(stream),
            Err(source) => last = Err(RemoteError::Connect { address, source }),
        }
    }
    last
}

/// The addresses of `server`; a name is resolved on a thread of its own, so that a resolver that does not
/// answer costs no more than the time left before `limit` (the thread ends when the resolver does).
fn resolve(server: &Server, limit: Instant) -> Result<Vec<SocketAddr>, RemoteError> {
    if let Ok(address) = server.host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(address, server.port)]);
    }
    let (sender, receiver) = std::sync::mpsc::channel();
    let (host, port) = (server.host.clone(), server.port);
    std::thread::Builder::new()
        .name("neverc-redis-resolve".into())
        .spawn(move || {
            let _ = sender.send((host.as_str(), port).to_socket_addrs().map(Iterator::collect));
        })
        .map_err(|source| RemoteError::Resolve {
            host: server.host.clone(),
            source,
        })?;
    let left = limit.saturating_duration_since(Instant::now());
    match receiver.recv_timeout(left) {
        Ok(Ok(addresses)) => Ok(addresses),
        Ok(Err(source)) => Err(RemoteError::Resolve {
            host: server.host.clone(),
            source,
        }),
        Err(_) => Err(RemoteError::ResolveTimeout {
            host: server.host.clone(),
        }),
    }
}

/// Accepts `+OK` as the reply to `command`.
fn expect_ok(reply: Reply, command: &'static str) -> Result<(), RemoteError> {
    match reply {
        Reply::Status(status) if status == b"OK" => Ok(()),
        reply => Err(unexpected(reply, command, "`+OK`")),
    }
}

/// The error of a reply to `command` that is not the `expected` one: the server's own error (clipped), or
/// the kind of reply it sent.
fn unexpected(reply: Reply, command: &'static str, expected: &'static str) -> RemoteError {
    match reply {
        Reply::Error(message) => RemoteError::Refused {
            command,
            message: Clipped::new(&message),
        },
        reply => RemoteError::Unexpected {
            command,
            got: reply.describe(),
            expected,
        },
    }
}

/// The value of `key` on the server of `options` (`GET`), or `None` when the key does not exist.
pub fn get(options: &LinkOptions, key: &str) -> Result<Option<Vec<u8>>, RemoteError> {
    let mut connection = Connection::open(options, Instant::now() + REQUEST_DEADLINE)?;
    match connection.command(&[b"GET", key.as_bytes()])? {
        Reply::Bulk(value) => Ok(value),
        reply => Err(unexpected(reply, "GET", "a bulk string")),
    }
}

/// Sets `key` to `value` on the server of `options` (`SET`). A value larger than a reply may be is refused
/// before connecting: it could never be read back.
pub fn set(options: &LinkOptions, key: &str, value: &[u8]) -> Result<(), RemoteError> {
    if resp::bulk_size(value.len()) > MAX_REPLY_SIZE {
        return Err(RemoteError::ValueTooLarge { size: value.len() });
    }
    let mut connection = Connection::open(options, Instant::now() + REQUEST_DEADLINE)?;
    let reply = connection.command(&[b"SET", key.as_bytes(), value])?;
    expect_ok(reply, "SET")
}

/// The Redis key of an entry.
pub fn redis_key(namespace: &str, key: &[u8]) -> String {
    format!("neverc-lto:{namespace}:{}", entry_name(key))
}

/// How a message names the server of `options` (without its password).
fn server_name(options: &LinkOptions) -> String {
    options.lto_cache_url.as_deref().map_or_else(String::new, shown_url)
}

/// Looks the entry for `key` up on the server.
pub fn lookup(options: &LinkOptions, key: &[u8]) -> Lookup {
    let name = redis_key(&options.lto.cache_namespace, key);
    match get(options, &name) {
        Ok(Some(entry)) => match decode_entry(&entry, &entry_name(key), &options.lto_cache_integrity) {
            Ok(candidate) => Lookup::Hit(candidate),
            Err(reason) => Lookup::Corrupt(format!("Redis entry `{name}`: {reason}")),
        },
        Ok(None) => Lookup::Miss,
        Err(error) => Lookup::Unavailable(format!(
            "Redis server `{}`: GET `{name}`: {error}",
            server_name(options)
        )),
    }
}

/// Stores the entry for `key` on the server.
pub fn store(options: &LinkOptions, key: &[u8], candidate: &LtoCandidate) -> Result<(), String> {
    let name = redis_key(&options.lto.cache_namespace, key);
    set(
        options,
        &name,
        &encode_entry(candidate, &entry_name(key), &options.lto_cache_integrity),
    )
    .map_err(|error| format!("Redis server `{}`: SET `{name}`: {error}", server_name(options)))
}

#[cfg(test)]
mod tests;
