//! Pruning the LTO cache directory (LOCAL_SHARED) by LLVM's cache pruning policy, the value of lld's
//! `--thinlto-cache-policy=` and of LLVMgold's `-plugin-opt=cache-policy=`: `KEY=VALUE` parts separated by
//! colons, with the keys `prune_interval` and `prune_after` (a duration: `N` then `s`, `m` or `h`),
//! `cache_size` (`N%` of the space available to the cache), `cache_size_bytes` (`N`, or `N` then `k`, `m` or
//! `g`) and `cache_size_files` (`N`). The numbers are read as LLVM reads them: decimal, or hexadecimal with
//! `0x`, binary with `0b`, octal with `0o` or a leading `0`.
//!
//! Pruning follows `llvm::pruneCache`: it runs at most once per `prune_interval` (a timestamp file in the
//! directory records the last run; a directory without one is pruned at once), removes the entries unused for
//! longer than `prune_after`, then the least recently used ones until at most `cache_size_files` remain and
//! they take no more than `cache_size_bytes` and `cache_size` of the available space (the entries' size plus
//! the free space of the file system). An entry's last use is the later of its access and modification
//! times; a lookup that finds an entry marks it accessed. Only files named as neverc-spec names its entries
//! (`crate::lto::cache::DirectoryCache::path_of`) are ever removed: whatever else the directory holds is
//! left alone. Under an entry's name, whatever is not a regular file (a symbolic link, a FIFO, a device node)
//! and any file larger than `crate::lto::cache::MAX_ENTRY_BYTES` is removed on every pruning, whatever the
//! policy's limits: lookups ignore them. Removing never follows a symbolic link (the link itself goes), and the
//! timestamp file is replaced by a rename, never written through whatever is at its name.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The timestamp file of the last pruning, in the cache directory (LLVM's is `llvmcache.timestamp`;
/// neverc-spec keeps its own, so that it never skips a pruning because another tool pruned its entries).
pub const TIMESTAMP_FILE: &str = "neverc-lto-cache.timestamp";

/// The file name suffix of a cache entry, after the 64 hexadecimal digits of its name.
pub const ENTRY_SUFFIX: &str = ".lto";

/// LLVM's `CachePruningPolicy`, with its defaults (what an empty policy string gives).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CachePolicy {
    /// `prune_interval`: the least time between two prunings (zero: prune on every link). 20 minutes.
    pub interval: Duration,
    /// `prune_after`: entries unused for longer are removed (zero: never by age). One week.
    pub expiration: Duration,
    /// `cache_size`: the largest share, in percent, of the available space the entries may take (zero: no
    /// limit). 75.
    pub max_size_percentage: u64,
    /// `cache_size_bytes`: the most bytes the entries may take (zero: no limit). No limit.
    pub max_size_bytes: u64,
    /// `cache_size_files`: the most entries (zero: no limit). One million.
    pub max_size_files: u64,
}

impl Default for CachePolicy {
    fn default() -> CachePolicy {
        CachePolicy {
            interval: Duration::from_secs(1200),
            expiration: Duration::from_secs(7 * 24 * 3600),
            max_size_percentage: 75,
            max_size_bytes: 0,
            max_size_files: 1_000_000,
        }
    }
}

/// Why a cache pruning policy is refused: each names the part of the policy that is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CachePolicyError {
    #[error(
        "unknown key `{key}` in `{part}` (the keys are prune_interval, prune_after, cache_size, \
         cache_size_bytes and cache_size_files)"
    )]
    UnknownKey { part: String, key: String },
    #[error("`{part}`: the duration is empty (a number, then s, m or h)")]
    EmptyDuration { part: String },
    #[error("`{part}`: `{value}` must end with one of s, m or h")]
    DurationUnit { part: String, value: String },
    #[error("`{part}`: `{number}` is not an integer")]
    NotAnInteger { part: String, number: String },
    #[error("`{part}`: `{value}` must be a percentage (N%)")]
    NotAPercentage { part: String, value: String },
    #[error("`{part}`: `{number}` must be between 0 and 100")]
    PercentageRange { part: String, number: String },
    #[error("`{part}`: `{value}` is too large")]
    TooLarge { part: String, value: String },
}

/// Reads a policy (`prune_after=1h:cache_size_files=100`); an empty one is the default policy.
pub fn parse_policy(policy: &str) -> Result<CachePolicy, CachePolicyError> {
    let mut parsed = CachePolicy::default();
    let mut rest = policy;
    // As LLVM reads it: an empty policy has no parts, and an empty part after the last colon is none either.
    while !rest.is_empty() {
        let (part, after) = rest.split_once(':').unwrap_or((rest, ""));
        rest = after;
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        let not_an_integer = |number: &str| CachePolicyError::NotAnInteger {
            part: part.to_string(),
            number: number.to_string(),
        };
        match key {
            "prune_interval" => parsed.interval = duration(part, value)?,
            "prune_after" => parsed.expiration = duration(part, value)?,
            "cache_size" => {
                let number = value
                    .strip_suffix('%')
                    .ok_or_else(|| CachePolicyError::NotAPercentage {
                        part: part.to_string(),
                        value: value.to_string(),
                    })?;
                let percentage = llvm_integer(number).ok_or_else(|| not_an_integer(number))?;
                if percentage > 100 {
                    return Err(CachePolicyError::PercentageRange {
                        part: part.to_string(),
                        number: number.to_string(),
                    });
                }
                parsed.max_size_percentage = percentage;
            }
            "cache_size_bytes" => {
                let (number, unit) = match value.as_bytes().last().map(u8::to_ascii_lowercase) {
                    Some(b'k') => (&value[..value.len() - 1], 1 << 10),
                    Some(b'm') => (&value[..value.len() - 1], 1 << 20),
                    Some(b'g') => (&value[..value.len() - 1], 1 << 30),
                    _ => (value, 1),
                };
                let count = llvm_integer(number).ok_or_else(|| not_an_integer(number))?;
                parsed.max_size_bytes = count.checked_mul(unit).ok_or_else(|| CachePolicyError::TooLarge {
                    part: part.to_string(),
                    value: value.to_string(),
                })?;
            }
            "cache_size_files" => parsed.max_size_files = llvm_integer(value).ok_or_else(|| not_an_integer(value))?,
            _ => {
                return Err(CachePolicyError::UnknownKey {
                    part: part.to_string(),
                    key: key.to_string(),
                });
            }
        }
    }
    Ok(parsed)
}

/// A duration of the policy: a number, then `s`, `m` or `h`.
fn duration(part: &str, value: &str) -> Result<Duration, CachePolicyError> {
    let Some(unit) = value.chars().last() else {
        return Err(CachePolicyError::EmptyDuration { part: part.to_string() });
    };
    let number = &value[..value.len() - unit.len_utf8()];
    let count = llvm_integer(number).ok_or_else(|| CachePolicyError::NotAnInteger {
        part: part.to_string(),
        number: number.to_string(),
    })?;
    let seconds = match unit {
        's' => Some(count),
        'm' => count.checked_mul(60),
        'h' => count.checked_mul(3600),
        _ => {
            return Err(CachePolicyError::DurationUnit {
                part: part.to_string(),
                value: value.to_string(),
            });
        }
    };
    seconds
        .map(Duration::from_secs)
        .ok_or_else(|| CachePolicyError::TooLarge {
            part: part.to_string(),
            value: value.to_string(),
        })
}

/// An unsigned integer as LLVM's `StringRef::getAsInteger` reads it with radix 0: `0x` hexadecimal, `0b`
/// binary, `0o` or a leading `0` octal, decimal otherwise; nothing may follow the digits.
fn llvm_integer(text: &str) -> Option<u64> {
    let lower = text.get(..2).map(str::to_ascii_lowercase);
    let (digits, radix) = match lower.as_deref() {
        Some("0x") => (&text[2..], 16),
        Some("0b") => (&text[2..], 2),
        Some("0o") => (&text[2..], 8),
        _ if text.len() > 1 && text.starts_with('0') && text.as_bytes()[1].is_ascii_digit() => (&text[1..], 8),
        _ => (text, 10),
    };
    // `from_str_radix` accepts a leading `+`, which LLVM does not.
    if digits.is_empty() || !digits.chars().all(|digit| digit.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Whether `name` is the file name of an entry neverc-spec wrote: 64 lowercase hexadecimal digits, then
/// [`ENTRY_SUFFIX`].
pub fn is_entry_name(name: &str) -> bool {
    name.strip_suffix(ENTRY_SUFFIX).is_some_and(|digest| {
        digest.len() == 64
            && digest
                .bytes()
                .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
    })
}

/// What one pruning did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PruneOutcome {
    /// Whether the directory was pruned (not when the interval since the last pruning has not passed, when the
    /// policy sets no limit, or when there is no directory).
    pub pruned: bool,
    /// The entries removed.
    pub removed: Vec<PathBuf>,
}

/// Why a pruning could not be done.
#[derive(Debug, thiserror::Error)]
pub enum PruneError {
    #[error("cannot list the LTO cache directory {}: {source}", dir.display())]
    List { dir: PathBuf, source: std::io::Error },
    #[error("cannot find the free space of the LTO cache directory {}: {source}", dir.display())]
    FreeSpace { dir: PathBuf, source: std::io::Error },
}

/// One entry, for pruning by size: least recently used first, then the larger first, then by path (LLVM's
/// order).
struct Entry {
    last_use: SystemTime,
    size: u64,
    path: PathBuf,
}

/// Prunes the cache directory `dir` by `policy`, as of `now`.
pub fn prune(dir: &Path, policy: &CachePolicy, now: SystemTime) -> Result<PruneOutcome, PruneError> {
    let mut outcome = PruneOutcome::default();
    if !dir.is_dir() {
        return Ok(outcome);
    }
    let percentage = policy.max_size_percentage.min(100);
    if policy.expiration.is_zero() && percentage == 0 && policy.max_size_bytes == 0 && policy.max_size_files == 0 {
        return Ok(outcome);
    }
    let timestamp = dir.join(TIMESTAMP_FILE);
    match std::fs::symlink_metadata(&timestamp) {
        // Not a file of ours (a symbolic link planted there, say): replaced, as if there were none.
        Ok(metadata) if !metadata.is_file() => write_timestamp(&timestamp, now),
        Ok(metadata) => {
            if !policy.interval.is_zero() {
                let age = metadata
                    .modified()
                    .ok()
                    .and_then(|modified| now.duration_since(modified).ok())
                    .unwrap_or_default();
                if age <= policy.interval {
                    return Ok(outcome);
                }
            }
            write_timestamp(&timestamp, now);
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => write_timestamp(&timestamp, now),
        // LLVM does not prune when the timestamp cannot be read for another reason.
        Err(_) => return Ok(outcome),
    }
    outcome.pruned = true;
    let listing = std::fs::read_dir(dir).map_err(|source| PruneError::List {
        dir: dir.to_path_buf(),
        source,
    })?;
    let mut entries = Vec::new();
    for found in listing {
        let Ok(found) = found else { continue };
        let name = found.file_name();
        if !name.to_str().is_some_and(is_entry_name) {
            continue;
        }
        // Never follow a symbolic link. What lookups ignore is removed: anything but a regular file (a
        // directory cannot be removed this way, and stays), and entries too large to be read.
        let Ok(metadata) = std::fs::symlink_metadata(found.path()) else {
            continue;
        };
        if !metadata.is_file() || metadata.len() > crate::lto::cache::MAX_ENTRY_BYTES {
            remove(found.path(), &mut outcome);
            continue;
        }
        let last_use = [metadata.accessed().ok(), metadata.modified().ok()]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let unused = now.duration_since(last_use).unwrap_or_default();
        if !policy.expiration.is_zero() && unused > policy.expiration {
            remove(found.path(), &mut outcome);
            continue;
        }
        entries.push(Entry {
            last_use,
            size: metadata.len(),
            path: found.path(),
        });
    }
    entries.sort_by(|a, b| {
        a.last_use
            .cmp(&b.last_use)
            .then(b.size.cmp(&a.size))
            .then_with(|| a.path.cmp(&b.path))
    });
    let mut total: u64 = entries.iter().map(|entry| entry.size).sum();
    let mut oldest = entries.into_iter();
    let mut count = oldest.len() as u64;
    if policy.max_size_files != 0 {
        while count > policy.max_size_files {
            let Some(entry) = oldest.next() else { break };
            remove(entry.path, &mut outcome);
            total = total.saturating_sub(entry.size);
            count -= 1;
        }
    }
    if percentage > 0 || policy.max_size_bytes > 0 {
        let free = free_space(dir).map_err(|source| PruneError::FreeSpace {
            dir: dir.to_path_buf(),
            source,
        })?;
        let available = total.saturating_add(free);
        let percentage = if percentage == 0 { 100 } else { percentage };
        let by_share = u64::try_from(u128::from(available) * u128::from(percentage) / 100).unwrap_or(u64::MAX);
        let by_bytes = if policy.max_size_bytes == 0 {
            available
        } else {
            policy.max_size_bytes
        };
        let target = by_share.min(by_bytes);
        while total > target {
            let Some(entry) = oldest.next() else { break };
            remove(entry.path, &mut outcome);
            total = total.saturating_sub(entry.size);
        }
    }
    Ok(outcome)
}

/// Creates or replaces the timestamp file, dated `now`; a failure only means the next link prunes again.
fn write_timestamp(path: &Path, now: SystemTime) {
    use std::os::unix::fs::OpenOptionsExt as _;
    if neverc_output::replace_bytes(path, neverc_output::Mode::Private, b"").is_err() {
        return;
    }
    if let Ok(file) = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
    {
        let _ = file.set_modified(now);
    }
}

/// Removes an entry; one already gone (another link pruned it) or that cannot be removed is skipped, as
/// LLVM skips it.
fn remove(path: PathBuf, outcome: &mut PruneOutcome) {
    if std::fs::remove_file(&path).is_ok() {
        outcome.removed.push(path);
    }
}

/// The free space of the file system holding `dir`, in bytes (what LLVM's `sys::fs::disk_space` calls free:
/// all free blocks, those reserved for the superuser included).
fn free_space(dir: &Path) -> std::io::Result<u64> {
    let stats = rustix::fs::statvfs(dir).map_err(std::io::Error::from)?;
    Ok(stats.f_bfree.saturating_mul(stats.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_as_llvm_reads_them() {
        assert_eq!(parse_policy(""), Ok(CachePolicy::default()));
        let policy =
            parse_policy("prune_interval=30s:prune_after=2h:cache_size=50%:cache_size_bytes=4k:cache_size_files=0x10");
        assert_eq!(
            policy,
            Ok(CachePolicy {
                interval: Duration::from_secs(30),
                expiration: Duration::from_secs(7200),
                max_size_percentage: 50,
                max_size_bytes: 4096,
                max_size_files: 16,
            })
        );
        assert_eq!(
            parse_policy("prune_after=3m:").map(|p| p.expiration),
            Ok(Duration::from_secs(180))
        );
        assert_eq!(
            parse_policy("cache_size_bytes=2G").map(|p| p.max_size_bytes),
            Ok(2 << 30)
        );
        assert_eq!(parse_policy("cache_size_files=010").map(|p| p.max_size_files), Ok(8));
        assert_eq!(parse_policy("cache_size_files=0").map(|p| p.max_size_files), Ok(0));
        for (bad, says) in [
            ("bogus", "unknown key `bogus` in `bogus`"),
            (":prune_after=1h", "unknown key `` in ``"),
            ("prune_after=1h:frob=2", "unknown key `frob` in `frob=2`"),
            ("prune_after", "`prune_after`: the duration is empty"),
            (
                "prune_after=1d",
                "`prune_after=1d`: `1d` must end with one of s, m or h",
            ),
            ("prune_interval=xs", "`prune_interval=xs`: `x` is not an integer"),
            ("prune_interval=s", "`prune_interval=s`: `` is not an integer"),
            ("cache_size=50", "`cache_size=50`: `50` must be a percentage"),
            ("cache_size=", "`cache_size=`: `` must be a percentage"),
            ("cache_size=101%", "`cache_size=101%`: `101` must be between 0 and 100"),
            ("cache_size_bytes=1t", "`cache_size_bytes=1t`: `1t` is not an integer"),
            ("cache_size_bytes=+1", "`cache_size_bytes=+1`: `+1` is not an integer"),
            (
                "cache_size_bytes=99999999999999g",
                "`cache_size_bytes=99999999999999g`: `99999999999999g` is too large",
            ),
            (
                "cache_size_files=many",
                "`cache_size_files=many`: `many` is not an integer",
            ),
        ] {
            let error = parse_policy(bad).expect_err(bad).to_string();
            assert!(error.starts_with(says), "{bad}: {error}");
        }
    }

    #[test]
    fn only_neverc_entries_are_entries() {
        let digest = "0123456789abcdef".repeat(4);
        assert!(is_entry_name(&format!("{digest}.lto")));
        assert!(!is_entry_name(&format!("{}.lto", digest.to_uppercase())));
        assert!(!is_entry_name(&format!("{digest}.lto.tmp")));
        assert!(!is_entry_name(&format!("{}.lto", &digest[1..])));
        assert!(!is_entry_name(&format!("llvmcache-{digest}")));
        assert!(!is_entry_name(TIMESTAMP_FILE));
    }
}
