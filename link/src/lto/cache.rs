//! Where LTO products are kept and found again, by the cache scope of the request (`abi/lto.toml`'s
//! `LTOCacheScope`): nowhere (DISABLED); in memory for one link (TASK); in a directory shared by the links of
//! a machine (LOCAL_SHARED); in a Redis server shared by machines (REMOTE_SHARED, `crate::lto::remote`).
//!
//! An entry is the candidate's objects under the provider's cache key (a pure function of the request: see
//! `provider::cache_key`), encoded with a SHA-256 of its contents at the end. An entry whose digest does not
//! match (a torn write by another tool, a disk error, tampering) is never used: the lookup says so, the
//! caller rebuilds the product and reports it, and the entry is written again. A directory entry is written
//! to a temporary beside it and renamed into place (`neverc-output`), so concurrent links never see half an
//! entry and the last complete one wins.

use std::path::PathBuf;

use rustc_hash::FxHashMap;

use crate::lto::provider::{LtoCandidate, LtoObject};
use crate::lto::request::sha256;

/// The encoding's tag, first in every entry.
const ENTRY_TAG: &[u8] = b"neverc-lto-cache-entry-v1\0";

/// What the cache did for one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheEvent {
    /// The products were found and code generation skipped.
    Hit,
    /// No entry: code generation ran and its products were stored.
    Miss,
    /// An entry failed its digest check: it was not used, and was rebuilt and stored again.
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
    /// An entry is there but its digest does not match: it must be rebuilt.
    Corrupt(String),
    /// The cache cannot be reached (a Redis server that is gone): the link goes on without it.
    Unavailable(String),
}

/// The candidate's objects as a cache entry.
pub fn encode_entry(candidate: &LtoCandidate) -> Vec<u8> {
    let mut out = ENTRY_TAG.to_vec();
    push_u64(&mut out, candidate.objects.len() as u64);
    for object in &candidate.objects {
        push_u64(&mut out, object.source_module.map_or(u64::MAX, |module| module as u64));
        push_bytes(&mut out, object.logical_name.as_bytes());
        push_bytes(&mut out, &object.bytes);
    }
    let digest = sha256(&out);
    out.extend_from_slice(&digest);
    out
}

/// The candidate an entry holds, or why it is not a sound entry.
pub fn decode_entry(entry: &[u8]) -> Result<LtoCandidate, String> {
    let body_length = entry
        .len()
        .checked_sub(32)
        .ok_or_else(|| "the entry is shorter than its digest".to_string())?;
    let (body, digest) = entry.split_at(body_length);
    if sha256(body) != digest {
        return Err("the entry's digest does not match its contents".into());
    }
    let mut reader = Reader(
        body.strip_prefix(ENTRY_TAG)
            .ok_or_else(|| "the entry does not start with the entry tag".to_string())?,
    );
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
        match std::fs::read(&path) {
            Ok(entry) => match decode_entry(&entry) {
                Ok(candidate) => {
                    if let Ok(file) = std::fs::File::open(&path) {
                        let now = std::fs::FileTimes::new().set_accessed(std::time::SystemTime::now());
                        let _ = file.set_times(now);
                    }
                    Lookup::Hit(candidate)
                }
                Err(reason) => Lookup::Corrupt(format!("{}: {reason}", path.display())),
            },
            Err(_) => Lookup::Miss,
        }
    }

    /// Stores the entry (complete or not at all), creating the directory if needed.
    pub fn store(&self, key: &[u8], candidate: &LtoCandidate) -> Result<(), String> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|error| format!("cannot create the LTO cache directory {}: {error}", self.dir.display()))?;
        neverc_output::write_bytes(&self.path_of(key), neverc_output::Mode::Data, &encode_entry(candidate))
            .map_err(|error| error.to_string())
    }
}

/// Entries in memory for one link (TASK).
#[derive(Clone, Debug, Default)]
pub struct TaskCache {
    entries: FxHashMap<Vec<u8>, Vec<u8>>,
}

impl TaskCache {
    pub fn lookup(&self, key: &[u8]) -> Lookup {
        match self.entries.get(key) {
            Some(entry) => match decode_entry(entry) {
                Ok(candidate) => Lookup::Hit(candidate),
                Err(reason) => Lookup::Corrupt(reason),
            },
            None => Lookup::Miss,
        }
    }

    pub fn store(&mut self, key: &[u8], candidate: &LtoCandidate) {
        self.entries.insert(key.to_vec(), encode_entry(candidate));
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

    #[test]
    fn entries_round_trip_and_every_corruption_is_caught() {
        let entry = encode_entry(&candidate());
        assert_eq!(decode_entry(&entry), Ok(candidate()));
        for index in 0..entry.len() {
            let mut flipped = entry.clone();
            flipped[index] ^= 0x40;
            assert!(decode_entry(&flipped).is_err(), "a flip at {index} went unnoticed");
        }
        for length in 0..entry.len() {
            assert!(
                decode_entry(&entry[..length]).is_err(),
                "a cut at {length} went unnoticed"
            );
        }
    }
}
