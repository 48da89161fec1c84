//! Where LTO products are kept and found again, by the cache scope of the request (`abi/lto.toml`'s
//! `LTOCacheScope`): nowhere (DISABLED); in memory for one link (TASK); in a directory shared by the links of
//! a machine (LOCAL_SHARED); in a Redis server shared by machines (REMOTE_SHARED, `crate::lto::remote`).
//!
//! An entry is the candidate's objects under the provider's cache key (a pure function of the request: see
//! `provider::cache_key`), named by the key's SHA-256 ([`entry_name`]) and sealed by a check over that name
//! and the contents, at the end ([`Integrity`]):
//!
//! - Without a key (the default), a SHA-256. It catches damage — a torn write by another tool, a disk error,
//!   an entry copied under another name — and nothing else: anyone who can write the cache directory or the
//!   Redis server can store an entry holding other objects with a matching digest, and the next link will use
//!   it. An unkeyed cache is as trustworthy as everyone who can write to it.
//! - With a key the user supplies (`--lto-cache-hmac-key-file`, or `$NEVERC_LTO_CACHE_HMAC_KEY`), an
//!   HMAC-SHA256 under that key. An entry not made by a holder of the key — forged, altered, unkeyed, moved to
//!   another cache key — fails the check. It does not hide the entries (they are objects anyone who can read
//!   the cache can read), nor tell an older entry of the same cache key from a newer one (both come from the
//!   same request).
//!
//! An entry that fails its check is never used: the lookup says why, the caller rebuilds the product and
//! reports it with a warning, and the entry is written again. A directory entry is written to a temporary
//! beside it, mode 0600, and renamed into place (`neverc-output`'s `Output::replace`), so concurrent links
//! never see half an entry, the last complete one wins, and whatever was at the entry's name (a symbolic link
//! to another file or a device, a FIFO) is replaced, never written through. An entry is read only if it is a
//! regular file (not followed through a link, never waited on like a FIFO) of at most [`MAX_ENTRY_BYTES`];
//! anything else under an entry's name is ignored with a warning, and removed by pruning.

use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::PathBuf;

use hmac::Mac as _;
use rustc_hash::FxHashMap;
use sha2::Digest as _;

use crate::lto::provider::{LtoCandidate, LtoObject};
use crate::lto::request::sha256;

/// The tag of an entry sealed by a SHA-256, first in the entry.
const DIGEST_TAG: &[u8] = b"neverc-lto-cache-entry-v2-sha256\0";

/// The tag of an entry sealed by an HMAC-SHA256, first in the entry.
const HMAC_TAG: &[u8] = b"neverc-lto-cache-entry-v2-hmac-sha256\0";

/// The tag entries had before they were bound to their cache key (neverc-spec 0.1 before hardening round 2).
const OLD_TAG: &[u8] = b"neverc-lto-cache-entry-v1\0";

/// The largest entry a lookup reads, in the directory and from Redis: 1 GiB. Larger entries are ignored (and
/// pruned from a directory); products that large are not cached.
pub const MAX_ENTRY_BYTES: u64 = 1 << 30;

/// The shortest key an HMAC may be made under: 16 bytes (128 bits).
pub const MIN_MAC_KEY_BYTES: usize = 16;

/// The secret of keyed entries. Its `Debug` form never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct MacKey(Vec<u8>);

impl MacKey {
    /// A key of at least [`MIN_MAC_KEY_BYTES`] bytes (any bytes: a line break at the end of a key file is
    /// part of the key, as in every tool that reads keys from files).
    pub fn new(bytes: Vec<u8>) -> Result<MacKey, String> {
        if bytes.len() < MIN_MAC_KEY_BYTES {
            return Err(format!(
                "the LTO cache's HMAC key has {} bytes; it must have at least {MIN_MAC_KEY_BYTES}",
                bytes.len()
            ));
        }
        Ok(MacKey(bytes))
    }
}

impl std::fmt::Debug for MacKey {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "MacKey({} bytes)", self.0.len())
    }
}

/// How entries are sealed and checked (see the module documentation for what each protects against).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Integrity {
    /// A SHA-256 of the entry's name and contents.
    #[default]
    Digest,
    /// An HMAC-SHA256 of the entry's name and contents under the user's key.
    Keyed(MacKey),
}

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

impl Integrity {
    fn tag(&self) -> &'static [u8] {
        match self {
            Integrity::Digest => DIGEST_TAG,
            Integrity::Keyed(_) => HMAC_TAG,
        }
    }

    /// The seal of `body` (which starts with the tag) stored under the entry name `name`.
    fn seal(&self, name: &str, body: &[u8]) -> [u8; 32] {
        match self {
            Integrity::Digest => {
                let mut hasher = sha2::Sha256::new();
                hasher.update((name.len() as u64).to_le_bytes());
                hasher.update(name);
                hasher.update(body);
                hasher.finalize().into()
            }
            Integrity::Keyed(secret) => self.mac(secret, name, body).finalize().into_bytes().into(),
        }
    }

    fn mac(&self, secret: &MacKey, name: &str, body: &[u8]) -> HmacSha256 {
        // HMAC takes a key of any length.
        let mut mac = <HmacSha256 as hmac::digest::KeyInit>::new_from_slice(&secret.0)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
        mac.update(&(name.len() as u64).to_le_bytes());
        mac.update(name.as_bytes());
        mac.update(body);
        mac
    }

    /// Whether `seal` is `body`'s under the entry name `name` (compared in constant time when keyed).
    fn verifies(&self, name: &str, body: &[u8], seal: &[u8]) -> bool {
        match self {
            Integrity::Digest => self.seal(name, body) == seal,
            Integrity::Keyed(secret) => self.mac(secret, name, body).verify_slice(seal).is_ok(),
        }
    }
}

/// What the cache did for one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheEvent {
    /// The products were found and code generation skipped.
    Hit,
    /// No entry: code generation ran and its products were stored.
    Miss,
    /// An entry failed its check (or was not a regular file, or too large): it was not used, and was rebuilt
    /// and stored again.
    Rebuilt(String),
    /// The cache could not be used (a Redis server gone, a directory that cannot be written): the link went
    /// on without it.
    Unavailable(String),
}

/// What a lookup found.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    Hit(LtoCandidate),
    Miss,
    /// An entry is there but cannot be used (its check fails, it is not a regular file, it is too large): it
    /// must be rebuilt.
    Corrupt(String),
    /// The cache cannot be reached (a Redis server that is gone): the link goes on without it.
    Unavailable(String),
}

/// The candidate's objects as the entry stored under the entry name `name` ([`entry_name`] of its cache key),
/// sealed as `integrity` says.
pub fn encode_entry(candidate: &LtoCandidate, name: &str, integrity: &Integrity) -> Vec<u8> {
    let mut out = integrity.tag().to_vec();
    push_u64(&mut out, candidate.objects.len() as u64);
    for object in &candidate.objects {
        push_u64(&mut out, object.source_module.map_or(u64::MAX, |module| module as u64));
        push_bytes(&mut out, object.logical_name.as_bytes());
        push_bytes(&mut out, &object.bytes);
    }
    let seal = integrity.seal(name, &out);
    out.extend_from_slice(&seal);
    out
}

/// The candidate the entry stored under the entry name `name` holds, or why it must not be used.
pub fn decode_entry(entry: &[u8], name: &str, integrity: &Integrity) -> Result<LtoCandidate, String> {
    let body_length = entry
        .len()
        .checked_sub(32)
        .ok_or_else(|| "the entry is shorter than its digest".to_string())?;
    let (body, seal) = entry.split_at(body_length);
    let tag = integrity.tag();
    if !body.starts_with(tag) {
        return Err(match integrity {
            _ if entry.starts_with(OLD_TAG) => "the entry was written by an older neverc-spec".to_string(),
            Integrity::Keyed(_) if entry.starts_with(DIGEST_TAG) => {
                "the entry carries no HMAC (it was stored without a key), and a key was given".to_string()
            }
            Integrity::Digest if entry.starts_with(HMAC_TAG) => {
                "the entry carries an HMAC and no key was given to check it".to_string()
            }
            _ => "the entry does not start with the entry tag".to_string(),
        });
    }
    if !integrity.verifies(name, body, seal) {
        return Err(match integrity {
            Integrity::Digest => "the entry's digest does not match its contents".to_string(),
            Integrity::Keyed(_) => "the entry's HMAC does not verify under the given key".to_string(),
        });
    }
    let mut reader = Reader(&body[tag.len()..]);
    let count = reader.u64()?;
    let mut objects = Vec::new();
    for _ in 0..count {
        let module = reader.u64()?;
        let name =
            String::from_utf8(reader.bytes()?.to_vec()).map_err(|_| "an object name is not UTF-8".to_string())?;
        let bytes = reader.bytes()?.to_vec();
        objects.push(LtoObject {
            source_module: usize::try_from(module).ok().filter(|_| module != u64::MAX),
            logical_name: name,
            bytes,
        });
    }
    if !reader.0.is_empty() {
        return Err("the entry has bytes after its objects".into());
    }
    Ok(LtoCandidate {
        objects,
        ..LtoCandidate::default()
    })
}

fn push_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn push_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    push_u64(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn u64(&mut self) -> Result<u64, String> {
        let (head, rest) = self
            .0
            .split_first_chunk::<8>()
            .ok_or_else(|| "the entry ends inside a number".to_string())?;
        self.0 = rest;
        Ok(u64::from_le_bytes(*head))
    }

    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let length = usize::try_from(self.u64()?).map_err(|_| "a length does not fit in memory".to_string())?;
        if length > self.0.len() {
            return Err("a length runs past the entry".into());
        }
        let (head, rest) = self.0.split_at(length);
        self.0 = rest;
        Ok(head)
    }
}

/// The file name of the entry for `key`: its SHA-256 in hex (keys may be any bytes).
pub fn entry_name(key: &[u8]) -> String {
    sha256(key).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A directory of entries (LOCAL_SHARED).
#[derive(Clone, Debug)]
pub struct DirectoryCache {
    pub dir: PathBuf,
    pub integrity: Integrity,
}

/// What is at an entry's name when it is not an entry to read.
enum Unreadable {
    Missing,
    Refused(String),
}

impl DirectoryCache {
    /// The entry's file: its name is what `crate::lto::prune::is_entry_name` recognizes, and pruning removes
    /// no other file.
    pub fn path_of(&self, key: &[u8]) -> PathBuf {
        self.dir
            .join(format!("{}{}", entry_name(key), crate::lto::prune::ENTRY_SUFFIX))
    }

    /// The entry for `key`. An entry found is marked accessed now, whatever the file system's access-time
    /// updates, so that pruning removes the least recently used entries first.
    pub fn lookup(&self, key: &[u8]) -> Lookup {
        let path = self.path_of(key);
        let (file, entry) = match read_entry(&path) {
            Ok(read) => read,
            Err(Unreadable::Missing) => return Lookup::Miss,
            Err(Unreadable::Refused(reason)) => return Lookup::Corrupt(format!("{}: {reason}", path.display())),
        };
        match decode_entry(&entry, &entry_name(key), &self.integrity) {
            Ok(candidate) => {
                let now = std::fs::FileTimes::new().set_accessed(std::time::SystemTime::now());
                let _ = file.set_times(now);
                Lookup::Hit(candidate)
            }
            Err(reason) => Lookup::Corrupt(format!("{}: {reason}", path.display())),
        }
    }

    /// Stores the entry (complete or not at all, mode 0600), creating the directory if needed, replacing
    /// whatever was at its name.
    pub fn store(&self, key: &[u8], candidate: &LtoCandidate) -> Result<(), String> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|error| format!("cannot create the LTO cache directory {}: {error}", self.dir.display()))?;
        let entry = encode_entry(candidate, &entry_name(key), &self.integrity);
        neverc_output::replace_bytes(&self.path_of(key), neverc_output::Mode::Private, &entry)
            .map_err(|error| error.to_string())
    }
}

/// The entry file at `path` and its bytes, if it is a regular file of at most [`MAX_ENTRY_BYTES`]: checked
/// before it is opened and again on the opened file, which is opened without following a symbolic link and
/// without waiting for a writer (a FIFO put there in between).
fn read_entry(path: &std::path::Path) -> Result<(std::fs::File, Vec<u8>), Unreadable> {
    let check = |metadata: &std::fs::Metadata| {
        if !metadata.file_type().is_file() {
            return Err(Unreadable::Refused(format!(
                "not a regular file ({}); ignored",
                kind(metadata)
            )));
        }
        if metadata.len() > MAX_ENTRY_BYTES {
            return Err(Unreadable::Refused(format!(
                "{} bytes, more than the largest entry read ({MAX_ENTRY_BYTES} bytes); ignored",
                metadata.len()
            )));
        }
        Ok(())
    };
    let refused = |error: std::io::Error| Unreadable::Refused(format!("cannot be read: {error}"));
    match std::fs::symlink_metadata(path) {
        Ok(metadata) => check(&metadata)?,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Err(Unreadable::Missing),
        Err(error) => return Err(refused(error)),
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32)
        .open(path)
        .map_err(refused)?;
    let metadata = file.metadata().map_err(refused)?;
    check(&metadata)?;
    let mut bytes = Vec::new();
    (&file)
        .take(MAX_ENTRY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(refused)?;
    if bytes.len() as u64 > MAX_ENTRY_BYTES {
        return Err(Unreadable::Refused(format!(
            "more than the largest entry read ({MAX_ENTRY_BYTES} bytes); ignored"
        )));
    }
    Ok((file, bytes))
}

/// What a file that is not a regular file is, for a warning.
pub(crate) fn kind(metadata: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    let kind = metadata.file_type();
    if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// Entries in memory for one link (TASK).
///
/// The entries live and die with the link's memory, so they are sealed by a digest only.
#[derive(Clone, Debug, Default)]
pub struct TaskCache {
    entries: FxHashMap<Vec<u8>, Vec<u8>>,
}

impl TaskCache {
    pub fn lookup(&self, key: &[u8]) -> Lookup {
        match self.entries.get(key) {
            Some(entry) => match decode_entry(entry, &entry_name(key), &Integrity::Digest) {
                Ok(candidate) => Lookup::Hit(candidate),
                Err(reason) => Lookup::Corrupt(reason),
            },
            None => Lookup::Miss,
        }
    }

    pub fn store(&mut self, key: &[u8], candidate: &LtoCandidate) {
        self.entries.insert(
            key.to_vec(),
            encode_entry(candidate, &entry_name(key), &Integrity::Digest),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate() -> LtoCandidate {
        LtoCandidate {
            objects: vec![
                LtoObject {
                    source_module: None,
                    logical_name: "<lto object 0>".into(),
                    bytes: b"\x7fELF merged".to_vec(),
                },
                LtoObject {
                    source_module: Some(2),
                    logical_name: "<lto object 3>".into(),
                    bytes: vec![0; 100],
                },
            ],
            ..LtoCandidate::default()
        }
    }

    fn keyed(secret: &[u8]) -> Integrity {
        Integrity::Keyed(MacKey::new(secret.to_vec()).unwrap_or_else(|error| panic!("{error}")))
    }

    #[test]
    fn entries_round_trip_and_every_corruption_is_caught() {
        for integrity in [Integrity::Digest, keyed(b"0123456789abcdef")] {
            let entry = encode_entry(&candidate(), "name", &integrity);
            assert_eq!(decode_entry(&entry, "name", &integrity), Ok(candidate()));
            for index in 0..entry.len() {
                let mut flipped = entry.clone();
                flipped[index] ^= 0x40;
                assert!(
                    decode_entry(&flipped, "name", &integrity).is_err(),
                    "a flip at {index} went unnoticed"
                );
            }
            for length in 0..entry.len() {
                assert!(
                    decode_entry(&entry[..length], "name", &integrity).is_err(),
                    "a cut at {length} went unnoticed"
                );
            }
            // An entry moved under another cache key is not that key's entry.
            assert!(decode_entry(&entry, "other name", &integrity).is_err());
        }
    }

    #[test]
    fn item_3_a_keyed_cache_refuses_entries_not_made_under_its_key() {
        let key = "entry name";
        let ours = keyed(b"our secret, 16+ bytes");
        // What anyone who can write an unkeyed cache can do: a fresh digest over other contents.
        let mut forged = candidate();
        forged.objects[0].bytes = b"\x7fELF forged".to_vec();
        let unkeyed = encode_entry(&forged, key, &Integrity::Digest);
        assert_eq!(decode_entry(&unkeyed, key, &Integrity::Digest), Ok(forged.clone()));
        let error = decode_entry(&unkeyed, key, &ours).unwrap_err();
        assert!(error.contains("carries no HMAC"), "{error}");
        // An HMAC under another key, and an HMAC entry read without a key.
        let theirs = encode_entry(&forged, key, &keyed(b"their secret, 16+ bytes"));
        let error = decode_entry(&theirs, key, &ours).unwrap_err();
        assert!(error.contains("does not verify"), "{error}");
        let error = decode_entry(&theirs, key, &Integrity::Digest).unwrap_err();
        assert!(error.contains("no key was given"), "{error}");
        // Keys too short to be keys are refused, and a key never shows in debug output.
        assert!(MacKey::new(b"short".to_vec()).is_err());
        assert_eq!(format!("{ours:?}"), "Keyed(MacKey(21 bytes))");
    }

    #[test]
    fn the_hmac_is_rfc_4231s() {
        // RFC 4231, test case 2 ("Jefe" is shorter than the keys MacKey accepts, so the MAC is computed
        // directly): the HMAC-SHA256 used for entries is the standard one.
        let mut mac = <HmacSha256 as hmac::digest::KeyInit>::new_from_slice(b"Jefe").unwrap_or_else(|_| unreachable!());
        mac.update(b"what do ya want for nothing?");
        let hex: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        assert_eq!(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }
}
