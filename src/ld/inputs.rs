//! From the command line's inputs to the files the link reads: `neverc_link::search` (`-l` searched, linker
//! scripts expanded, shared objects refused) over the library directories of the command line and, unless
//! `-nostdlib`, GNU ld's default directories for `elf_x86_64` on Debian.

use neverc_link::search::{RealFiles, Search};

use super::args::LdCommand;

/// GNU ld's default library directories for `elf_x86_64` on Debian (`ld --verbose | grep SEARCH_DIR`), each
/// under the sysroot.
pub(crate) const DEFAULT_LIBRARY_DIRS: [&str; 12] = [
    "=/usr/local/lib/x86_64-linux-gnu",
    "=/lib/x86_64-linux-gnu",
    "=/usr/lib/x86_64-linux-gnu",
    "=/usr/lib/x86_64-linux-gnu64",
    "=/usr/local/lib64",
    "=/lib64",
    "=/usr/lib64",
    "=/usr/local/lib",
    "=/lib",
    "=/usr/lib",
    "=/usr/x86_64-linux-gnu/lib64",
    "=/usr/x86_64-linux-gnu/lib",
];

/// The search of `command`'s library directories, then (unless `-nostdlib`) GNU ld's default ones, under its
/// sysroot, over the file system.
pub(crate) fn search<'f>(command: &LdCommand, files: &'f RealFiles) -> Search<'f, RealFiles> {
    let defaults: &[&str] = if command.nostdlib { &[] } else { &DEFAULT_LIBRARY_DIRS };
    Search::new(&command.library_dirs, defaults, command.sysroot.clone(), files)
}
