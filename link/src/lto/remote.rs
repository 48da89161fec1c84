//! The REMOTE_SHARED LTO cache: entries in a Redis server shared by machines, under the key
//! `neverc-lto:NAMESPACE:SHA256(provider key)`, each value an entry of `cache` (its contents and their
//! SHA-256, checked on every read). The server is reached with short timeouts (one second to connect, five
//! to read or write), so that a server that is gone or stops answering costs a link at most those seconds:
//! the link goes on without the cache, with a warning, and never fails because of it.

use std::time::Duration;

use crate::context::LinkOptions;
use crate::lto::cache::{Lookup, decode_entry, encode_entry, entry_name};
use crate::lto::provider::LtoCandidate;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// The Redis key of an entry.
pub fn redis_key(namespace: &str, key: &[u8]) -> String {
    format!("neverc-lto:{namespace}:{}", entry_name(key))
}

fn connect(options: &LinkOptions) -> Result<redis::Connection, String> {
    let url = options
        .lto_cache_url
        .as_deref()
        .ok_or_else(|| "no Redis server was given (--lto-cache-url)".to_string())?;
    let client = redis::Client::open(url).map_err(|error| format!("Redis server `{url}`: {error}"))?;
    let connection = client
        .get_connection_with_timeout(CONNECT_TIMEOUT)
        .map_err(|error| format!("Redis server `{url}`: {error}"))?;
    connection
        .set_read_timeout(Some(IO_TIMEOUT))
        .and_then(|()| connection.set_write_timeout(Some(IO_TIMEOUT)))
        .map_err(|error| format!("Redis server `{url}`: {error}"))?;
    Ok(connection)
}

/// Looks the entry for `key` up on the server.
pub fn lookup(options: &LinkOptions, key: &[u8]) -> Lookup {
    let mut connection = match connect(options) {
        Ok(connection) => connection,
        Err(reason) => return Lookup::Unavailable(reason),
    };
    let name = redis_key(&options.lto.cache_namespace, key);
    let value: Result<Option<Vec<u8>>, redis::RedisError> = redis::cmd("GET").arg(&name).query(&mut connection);
    match value {
        Ok(Some(entry)) => match decode_entry(&entry, &entry_name(key), &options.lto_cache_integrity) {
            Ok(candidate) => Lookup::Hit(candidate),
            Err(reason) => Lookup::Corrupt(format!("Redis entry `{name}`: {reason}")),
        },
        Ok(None) => Lookup::Miss,
        Err(error) => Lookup::Unavailable(format!("Redis GET `{name}`: {error}")),
    }
}

/// Stores the entry for `key` on the server.
pub fn store(options: &LinkOptions, key: &[u8], candidate: &LtoCandidate) -> Result<(), String> {
    let mut connection = connect(options)?;
    let name = redis_key(&options.lto.cache_namespace, key);
    let stored: Result<(), redis::RedisError> = redis::cmd("SET")
        .arg(&name)
        .arg(encode_entry(candidate, &entry_name(key), &options.lto_cache_integrity))
        .query(&mut connection);
    stored.map_err(|error| format!("Redis SET `{name}`: {error}"))
}
