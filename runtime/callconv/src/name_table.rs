//! A table from function names to small integers, built and probed in batches.
//!
//! Materializing a large module looks up one callee name per call site in a table of every materialized
//! function. Those probes land at random places in a table far larger than the caches, and each one costs
//! a trip to memory (and, on virtual machines, a page walk). A general-purpose hash map runs such probes one
//! after another. This table keeps its slots small (a 32-bit tag and a 32-bit index) and processes keys in
//! chunks: first a tight loop only reads the slots of the whole chunk (independent reads, which the
//! processor overlaps), then the real probes find those slots in the cache. Every match is confirmed by comparing the names themselves.

use std::hash::BuildHasher;

/// How many keys a batch handles at a time.
const CHUNK: usize = 32;
/// An empty slot.
const EMPTY: u64 = 0;
/// "Not found" in batch results.
pub(crate) const NOT_FOUND: u32 = u32::MAX;

/// Reads every item of `items` and discards the result. The reads are independent of each other, so the
/// processor keeps many of them in flight at once; afterwards the data is in the cache for the real work.
#[inline(always)]
fn touch(items: impl Iterator<Item = u64>) {
    std::hint::black_box(items.fold(0u64, |sink, item| sink ^ item));
}

/// The hash the table files `name` under (the reader computes it while the name is in the cache).
pub(crate) fn hash_of(name: &str) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(name)
}

/// Names mapped to their position in the slice the table was built from.
pub(crate) struct NameTable<'n> {
    names: &'n [&'n str],
    /// `tag << 32 | (index + 1)`, or [`EMPTY`].
    slots: Vec<u64>,
    mask: usize,
    shift: u32,
}

impl<'n> NameTable<'n> {
    /// A table of `names`, whose [`hash_of`] values are `hashes`; a name that occurs twice maps to its last
    /// position.
    pub(crate) fn new(names: &'n [&'n str], hashes: &[u64]) -> NameTable<'n> {
        // At most half full, so that probe sequences stay short.
        let capacity = (names.len() * 2).next_power_of_two().max(16);
        let bits = capacity.trailing_zeros();
        let mut table = NameTable {
            names,
            slots: vec![EMPTY; capacity],
            mask: capacity - 1,
            shift: 64 - bits,
        };
        for (chunk_index, chunk) in hashes.chunks(CHUNK).enumerate() {
            touch(chunk.iter().map(|hash| table.slots[table.home(*hash)]));
            for (offset, hash) in chunk.iter().enumerate() {
                table.insert(*hash, chunk_index * CHUNK + offset);
            }
        }
        table
    }

    fn home(&self, hash: u64) -> usize {
        (hash >> self.shift) as usize & self.mask
    }

    fn tag(hash: u64) -> u64 {
        hash & 0xffff_ffff
    }

    fn insert(&mut self, hash: u64, index: usize) {
        let tag = Self::tag(hash);
        let mut slot = self.home(hash);
        loop {
            let value = self.slots[slot];
            if value == EMPTY {
                break;
            }
            if value >> 32 == tag && self.names[(value & 0xffff_ffff) as usize - 1] == self.names[index] {
                break;
            }
            slot = (slot + 1) & self.mask;
        }
        // Positions fit in 32 bits: the names come from a module of at most 4 GiB.
        self.slots[slot] = tag << 32 | (index as u64 + 1);
    }

    /// The position of `name`, probing the table directly.
    pub(crate) fn get(&self, name: &str) -> Option<usize> {
        let hash = hash_of(name);
        let tag = Self::tag(hash);
        let mut slot = self.home(hash);
        loop {
            let value = self.slots[slot];
            if value == EMPTY {
                return None;
            }
            let index = (value & 0xffff_ffff) as usize - 1;
            if value >> 32 == tag && self.names[index] == name {
                return Some(index);
            }
            slot = (slot + 1) & self.mask;
        }
    }

    /// The position of every key, or [`NOT_FOUND`], computed in chunks (see the module comment).
    /// `found` is cleared first.
    pub(crate) fn find_all(&self, keys: &[&str], found: &mut Vec<u32>) {
        found.clear();
        let mut hashes = [0u64; CHUNK];
        for chunk in keys.chunks(CHUNK) {
            for (hash, key) in hashes.iter_mut().zip(chunk) {
                *hash = hash_of(key);
            }
            let hashes = &hashes[..chunk.len()];
            touch(hashes.iter().map(|hash| self.slots[self.home(*hash)]));
            // The first slot with the key's tag is the likely answer.
            let start = found.len();
            for hash in hashes {
                let tag = Self::tag(*hash);
                let mut slot = self.home(*hash);
                let candidate = loop {
                    let value = self.slots[slot];
                    if value == EMPTY {
                        break NOT_FOUND;
                    }
                    if value >> 32 == tag {
                        break (value & 0xffff_ffff) as u32 - 1;
                    }
                    slot = (slot + 1) & self.mask;
                };
                found.push(candidate);
            }
            // Confirm each candidate by its name (fetched the same way). A candidate whose name differs,
            // its tag having matched by chance, is settled by a direct probe.
            let candidates = &mut found[start..];
            let names = |candidates: &[u32]| {
                candidates
                    .iter()
                    .filter_map(|candidate| self.names.get(*candidate as usize))
                    .collect::<Vec<_>>()
            };
            touch(names(candidates).iter().map(|name| name.len() as u64));
            touch(
                names(candidates)
                    .iter()
                    .map(|name| u64::from(name.as_bytes().first().copied().unwrap_or(0))),
            );
            for (candidate, key) in candidates.iter_mut().zip(chunk) {
                if *candidate != NOT_FOUND && self.names[*candidate as usize] != *key {
                    *candidate = self.get(key).map_or(NOT_FOUND, |position| position as u32);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_agree_with_direct_probes_and_a_hash_map() {
        let names: Vec<String> = (0..5_000).map(|n| format!("@f{}", n % 4_000)).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let hashes: Vec<u64> = names.iter().map(|name| hash_of(name)).collect();
        let table = NameTable::new(&names, &hashes);
        let mut expected = std::collections::HashMap::new();
        for (index, name) in names.iter().enumerate() {
            expected.insert(*name, index);
        }
        let keys: Vec<String> = (0..9_000).map(|n| format!("@f{}", (n * 7919) % 6_000)).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let mut found = Vec::new();
        table.find_all(&keys, &mut found);
        for (key, found) in keys.iter().zip(found) {
            let want = expected.get(key).copied();
            assert_eq!(table.get(key), want, "{key}");
            assert_eq!((found != NOT_FOUND).then_some(found as usize), want, "{key}");
        }
    }

    #[test]
    fn an_empty_table_finds_nothing() {
        let table = NameTable::new(&[], &[]);
        assert_eq!(table.get("@f"), None);
        let mut found = vec![7];
        table.find_all(&["@f", ""], &mut found);
        assert_eq!(found, [NOT_FOUND, NOT_FOUND]);
    }
}
