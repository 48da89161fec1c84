//! The Redis client against hostile servers on loopback ports (issue 23, item 7): one that trickles, one whose
//! reply is huge, one whose header claims 2 GB, malformed replies, one that does not read; against a real
//! redis-server, with a password and a database; and the URL forms it takes and refuses.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::time::{Duration, Instant};

use neverc_test_support::redis::{FakeRedis, RedisServer, flood, trickle};

use super::*;
use crate::lto::cache::Lookup;

fn options(url: &str) -> LinkOptions {
    let mut options = LinkOptions::new(Vec::new(), "a.out".into());
    options.lto_cache_url = Some(url.to_string());
    options
}

/// The reason of a lookup that found the cache unavailable; any other outcome fails the test.
fn unavailable(found: Lookup) -> String {
    match found {
        Lookup::Unavailable(reason) => reason,
        Lookup::Hit(_) => panic!("a hit where the cache should be unavailable"),
        other => panic!("{other:?} where the cache should be unavailable"),
    }
}

/// Fails unless `reason` is short and holds no long run of the `A`s the hostile servers send.
fn assert_not_echoed(reason: &str) {
    assert!(
        reason.len() < 400,
        "a reason of {} bytes: {:.400}",
        reason.len(),
        reason
    );
    assert!(!reason.contains(&"A".repeat(64)), "the reply is echoed: {reason:.400}");
}

#[test]
fn item_7_a_trickling_server_is_cut_off_at_the_request_deadline() {
    // A byte every 4 s is within any per-read timeout of 5 s: only a deadline on the whole request stops it.
    // The reply is complete after 27 bytes (108 s), so that a client without a deadline ends too. Anything
    // but GET (what a client sends as it connects) is answered at once.
    let server = FakeRedis::start(|command, stream| {
        if command.first().is_some_and(|word| word.as_slice() == b"GET") {
            trickle(stream, b"$20\r\nAAAAAAAAAAAAAAAAAAAA\r\n", Duration::from_secs(4))
        } else {
            stream.write_all(b"+OK\r\n")
        }
    });
    let started = Instant::now();
    let found = lookup(&options(&server.url()), b"key");
    let elapsed = started.elapsed();
    eprintln!("item 7, a trickling server: {found:?} after {elapsed:.2?}");
    assert!(server.commands().iter().any(|command| command[0] == b"GET"));
    let reason = unavailable(found);
    assert!(elapsed < Duration::from_secs(12), "{elapsed:?}: {reason}");
    assert_not_echoed(&reason);
}

#[test]
fn item_7_a_50_mb_reply_is_read_in_linear_time_and_never_echoed() {
    const SIZE: u64 = 50 << 20;
    // A 50 MB value that is not an entry: read whole, then found corrupt.
    let bulk = FakeRedis::start(|_, stream| {
        flood(stream, format!("${SIZE}\r\n").as_bytes(), b'A', SIZE)?;
        stream.write_all(b"\r\n")
    });
    let started = Instant::now();
    let value = get(&options(&bulk.url()), "key").unwrap().unwrap();
    let elapsed = started.elapsed();
    eprintln!("item 7, a 50 MB bulk reply read in {elapsed:.2?}");
    assert_eq!(value.len() as u64, SIZE);
    assert!(value.iter().all(|byte| *byte == b'A'));
    assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
    // Its digest is checked (in a test build, SHA-256 takes most of the time).
    let started = Instant::now();
    let found = lookup(&options(&bulk.url()), b"key");
    eprintln!(
        "item 7, a 50 MB bulk reply: {found:.200?} after {:.2?}",
        started.elapsed()
    );
    match found {
        Lookup::Corrupt(reason) => assert_not_echoed(&reason),
        other => panic!("{other:.400?} for a 50 MB value that is not an entry"),
    }
    // A 50 MB status line is no answer to GET: refused, and none of it repeated.
    let status = FakeRedis::start(|_, stream| {
        flood(stream, b"+", b'A', SIZE)?;
        stream.write_all(b"\r\n")
    });
    let started = Instant::now();
    let found = lookup(&options(&status.url()), b"key");
    let elapsed = started.elapsed();
    eprintln!("item 7, a 50 MB status reply: {found:.200?} after {elapsed:.2?}");
    assert_not_echoed(&unavailable(found));
    assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
}

/// The variable that makes [`item_7_a_2_gb_bulk_length_is_refused_from_its_header_in_small_memory`] the child
/// it runs: the URL of the server to look a key up on.
const CHILD_URL: &str = "NEVERC_TEST_REDIS_CHILD_URL";

/// The peak resident memory of this process, in KiB (`VmHWM` of `/proc/self/status`).
fn peak_resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn item_7_a_2_gb_bulk_length_is_refused_from_its_header_in_small_memory() {
    if let Ok(url) = std::env::var(CHILD_URL) {
        // The child: one lookup, in a process of its own so that its peak memory is the lookup's.
        let (kind, reason) = match lookup(&options(&url), b"key") {
            Lookup::Hit(_) => ("hit", String::new()),
            Lookup::Miss => ("miss", String::new()),
            Lookup::Corrupt(reason) => ("corrupt", reason),
            Lookup::Unavailable(reason) => ("unavailable", reason),
        };
        // A line of its own: the test harness's own line is not ended yet.
        println!("\nchild-kind {kind}");
        println!("child-reason {reason:.400}");
        println!("child-reason-length {}", reason.len());
        println!("child-peak-kib {}", peak_resident_kib());
        return;
    }
    // The header claims 2 GiB and the body follows, as fast as the client takes it.
    let server = FakeRedis::start(|_, stream| flood(stream, b"$2147483648\r\n", b'A', 2 << 30));
    let test = module_path!().split_once("::").unwrap().1.to_string()
        + "::item_7_a_2_gb_bulk_length_is_refused_from_its_header_in_small_memory";
    let started = Instant::now();
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_URL, server.url())
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let field = |name: &str| {
        stdout
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {stdout}"))
            .trim()
            .to_string()
    };
    let peak: u64 = field("child-peak-kib").parse().unwrap();
    eprintln!(
        "item 7, a 2 GB bulk length: {} `{}` after {elapsed:.2?}, peak resident memory {} MiB",
        field("child-kind"),
        field("child-reason"),
        peak / 1024
    );
    assert_eq!(field("child-kind"), "unavailable");
    assert!(field("child-reason-length").parse::<usize>().unwrap() < 400);
    assert!(peak < 128 * 1024, "{peak} KiB");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

#[test]
fn item_7_a_malformed_reply_is_unavailable_with_a_clipped_escaped_reason() {
    let mut garbage = b"?\x00\xff\x1b[2J".to_vec();
    garbage.extend(std::iter::repeat_n(b'A', 10_000));
    let cases: [(&[u8], &str); 5] = [
        // No RESP2 reply starts with `?`; the bytes are shown escaped (no terminal escape reaches stderr).
        (&garbage, r"\x00\xff\x1b"),
        // A bulk string not followed by CRLF.
        (b"$5\r\nhelloAAAA\r\n", "CRLF"),
        (b"$12x\r\n", "12x"),
        (b"$-7\r\n", "-7"),
        // The server goes in the middle of a reply.
        (b"$10\r\nhel", "closed"),
    ];
    for (reply, shown) in cases {
        let reply = reply.to_vec();
        let server = FakeRedis::start(move |_, stream| {
            stream.write_all(&reply)?;
            Err(std::io::Error::other("the reply is sent: close"))
        });
        let started = Instant::now();
        let found = lookup(&options(&server.url()), b"key");
        let elapsed = started.elapsed();
        eprintln!("item 7, a malformed reply: {found:?} after {elapsed:.2?}");
        let reason = unavailable(found);
        assert_not_echoed(&reason);
        assert!(reason.contains(shown), "`{shown}` is not in {reason}");
        assert!(!reason.contains('\x1b'), "{reason:?}");
        assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    }
}

#[test]
fn urls_name_the_host_port_credentials_and_database() {
    let server = |url: &str| Server::parse(url).unwrap();
    assert_eq!(
        server("redis://127.0.0.1:6380/"),
        Server {
            host: "127.0.0.1".into(),
            port: 6380,
            user: None,
            password: None,
            database: 0
        }
    );
    assert_eq!(server("REDIS://cache.example").port, 6379);
    assert_eq!(server("redis://cache.example:/").port, 6379);
    let full = server("redis://ci%3Auser:p%40ss%3Aword@[::1]:7000/12");
    assert_eq!((full.host.as_str(), full.port, full.database), ("::1", 7000, 12));
    assert_eq!(full.user.as_deref(), Some(b"ci:user".as_slice()));
    assert_eq!(full.password.as_deref(), Some(b"p@ss:word".as_slice()));
    // An empty user name is the default user: `AUTH password`.
    let password_only = server("redis://:secret@host/3");
    assert_eq!(
        (password_only.user, password_only.password),
        (None, Some(b"secret".to_vec()))
    );
    for (url, problem) in [
        ("rediss://host/", "TLS (`rediss://`) is not supported"),
        ("redis+unix:///run/redis.sock", "Unix sockets are not supported"),
        ("unix:///run/redis.sock", "Unix sockets are not supported"),
        ("http://host/", "the scheme `http` is not supported"),
        ("127.0.0.1:6379", "a Redis URL is redis://"),
        ("redis://user@host/", "a user name needs a password"),
        ("redis://:secret@/", "the URL names no host"),
        ("redis://host:0/", "`:0` is not a port"),
        ("redis://host:65536/", "`:65536` is not a port"),
        ("redis://host:x/", "`:x` is not a port"),
        ("redis://host/one", "the database `one` is not a number"),
        ("redis://host/+1", "the database `+1` is not a number"),
        ("redis://host/0/1", "the database `0/1` is not a number"),
        (
            "redis://host/1?protocol=resp3",
            "query parameters and fragments are not supported",
        ),
        ("redis://[::1/", "an IPv6 address lacks its `]`"),
        ("redis://[host]/", "`host` is not an IPv6 address"),
        ("redis://:%4@host/", "not followed by two hexadecimal digits"),
        ("redis://:%zz@host/", "not followed by two hexadecimal digits"),
    ] {
        let error = Server::parse(url).unwrap_err().to_string();
        assert!(error.contains(problem), "{url}: {error}");
    }
    // A password is never shown, in the URL or in a message about it.
    let reason = unavailable(lookup(&options("rediss://user:hunter2@host/"), b"key"));
    assert!(
        reason.starts_with("Redis server `rediss://user:***@host/`: GET `neverc-lto::"),
        "{reason}"
    );
    assert!(
        reason.ends_with("not a Redis URL this client takes: TLS (`rediss://`) is not supported; use `redis://` over a trusted network"),
        "{reason}"
    );
    assert!(!reason.contains("hunter2"), "{reason}");
    assert_eq!(shown_url("redis://:hunter2@host:1/2"), "redis://:***@host:1/2");
    assert_eq!(shown_url("redis://host:1/2"), "redis://host:1/2");
}

#[test]
fn a_url_with_a_password_and_a_database_logs_in_and_selects_it() {
    let dir = std::env::temp_dir().join(format!("neverc-redis-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = RedisServer::start(&dir, &["--requirepass", "p@ss:word"]);
    let port = server.port();
    let url = format!("redis://:p%40ss%3Aword@127.0.0.1:{port}/2");
    // Binary-safe, both ways.
    let value = b"\0\r\n$-1\r\n\xff".to_vec();
    set(&options(&url), "key", &value).unwrap();
    assert_eq!(get(&options(&url), "key").unwrap(), Some(value.clone()));
    assert_eq!(get(&options(&url), "other").unwrap(), None);
    // The value is in database 2, and only there.
    let cli = |database: &str, command: &[&str]| {
        let mut args = vec!["-a", "p@ss:word", "--no-auth-warning", "-n", database, "--raw"];
        args.extend(command);
        server.cli(&args)
    };
    assert_eq!(cli("2", &["STRLEN", "key"]), format!("{}\n", value.len()));
    assert_eq!(cli("0", &["EXISTS", "key"]), "0\n");
    // The user form (`AUTH default password`).
    let user = format!("redis://default:p%40ss%3Aword@127.0.0.1:{port}/2");
    assert_eq!(get(&options(&user), "key").unwrap(), Some(value));
    // The server's refusals, never with the password.
    for (url, refusal) in [
        (
            format!("redis://:wrong@127.0.0.1:{port}/2"),
            "the server refused AUTH: `WRONGPASS",
        ),
        (
            format!("redis://127.0.0.1:{port}/2"),
            "the server refused SELECT: `NOAUTH",
        ),
        (
            format!("redis://:p%40ss%3Aword@127.0.0.1:{port}/99"),
            "the server refused SELECT: `ERR DB index is out of range`",
        ),
    ] {
        let reason = unavailable(lookup(&options(&url), b"key"));
        assert!(reason.contains(refusal), "{reason}");
        assert!(!reason.contains("wrong") && !reason.contains("p%40ss"), "{reason}");
    }
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_server_that_reads_nothing_stalls_a_store_for_the_io_timeout_only() {
    // The server accepts and never reads: the socket's buffers fill and the write of a 64 MiB value waits.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().take(1).collect();
        std::thread::sleep(Duration::from_secs(30));
        drop(held);
    });
    let started = Instant::now();
    let error = set(&options(&url), "key", &vec![b'A'; 64 << 20]).unwrap_err();
    let elapsed = started.elapsed();
    assert!(
        matches!(
            error,
            RemoteError::Stalled {
                action: "accept the command"
            }
        ),
        "{error}"
    );
    assert!(
        elapsed >= IO_TIMEOUT && elapsed < IO_TIMEOUT + Duration::from_secs(2),
        "{elapsed:?}"
    );
    // A value larger than any reply may be is not even sent.
    let error = set(&options(&url), "key", &vec![0; MAX_REPLY_SIZE]).unwrap_err();
    assert!(
        matches!(error, RemoteError::ValueTooLarge { size: MAX_REPLY_SIZE }),
        "{error}"
    );
}

#[test]
fn a_server_that_is_gone_is_unavailable_at_once() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let reason = unavailable(lookup(&options(&format!("redis://127.0.0.1:{port}/")), b"key"));
    assert!(reason.contains("cannot connect to 127.0.0.1:"), "{reason}");
    assert!(started.elapsed() < CONNECT_TIMEOUT, "{:?}", started.elapsed());
    let mut none = options("");
    none.lto_cache_url = None;
    assert!(unavailable(lookup(&none, b"key")).contains("no Redis server was given"));
}
