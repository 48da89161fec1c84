//! The only crate of neverc-spec with `unsafe` code; every other crate forbids it.
//!
//! It maps input files into memory ([`MappedFile`]), and it crosses into plugins written in C ([`plugin`]:
//! loading their libraries, calling their functions, reading and writing the memory they point at), naming
//! the plugin that was running when a fatal signal ends the process ([`crash`]). Input
//! files are mapped read-only: an input that is mapped is neither zeroed, nor copied,
//! nor freed, and only the pages the link touches are ever read (an archive's unused members never are).
//! On the real-programs benchmark this took a glibc static link from 59 to ~50 ms (BENCHMARKS.md).
//!
//! Every `unsafe` block carries a `// SAFETY:` line; `unsafe_op_in_unsafe_fn` is denied.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod crash;
pub mod plugin;
pub mod scoped;

use std::fs::File;
use std::io;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many [`MappedFile`]s are alive in this process.
static LIVE_MAPS: AtomicUsize = AtomicUsize::new(0);

/// A file's bytes mapped read-only into memory.
///
/// The contract, the same as lld's and mold's for their inputs: nobody truncates or rewrites the file while
/// the mapping lives. A file truncated under a link would make the process fail with `SIGBUS` when it reads
/// the missing pages; a file rewritten in place would show the link a mix of old and new bytes. The build
/// systems that run linkers never do either to an input of a running link, and tools that replace files
/// (compilers, `ar`, this linker) write a new file and rename it, which leaves a mapping of the old one
/// intact.
pub struct MappedFile {
    map: memmap2::Mmap,
}

impl MappedFile {
    /// Maps the whole of `file`, which must be a regular file opened for reading.
    ///
    /// Fails as `mmap` fails (a file that cannot be mapped, such as an empty one on some systems).
    pub fn map(file: &File) -> io::Result<MappedFile> {
        // SAFETY: the mapping is read-only and private, and the type's contract (stated above and in
        // ARCHITECTURE.md) is that the file is not truncated or modified while the mapping lives.
        let map = unsafe { memmap2::MmapOptions::new().map(file) }?;
        LIVE_MAPS.fetch_add(1, Ordering::Relaxed);
        Ok(MappedFile { map })
    }

    /// How many mappings of this type are alive in the process (each is one of the kernel's memory maps, of
    /// which a process may have only `vm.max_map_count`).
    pub fn live_count() -> usize {
        LIVE_MAPS.load(Ordering::Relaxed)
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        LIVE_MAPS.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Deref for MappedFile {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.map
    }
}

impl AsRef<[u8]> for MappedFile {
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "MappedFile({} bytes)", self.map.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn a_mapped_file_shows_its_bytes() -> io::Result<()> {
        let path = std::env::temp_dir().join(format!("neverc-sys-map-{}", std::process::id()));
        let bytes: Vec<u8> = (0..100_000u32).map(|value| (value % 251) as u8).collect();
        File::create(&path)?.write_all(&bytes)?;
        let mapped = MappedFile::map(&File::open(&path)?)?;
        std::fs::remove_file(&path)?;
        // Removing the file's name leaves the mapping intact.
        assert_eq!(&*mapped, &bytes[..]);
        Ok(())
    }
}
