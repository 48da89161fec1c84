//! From the inputs of a GNU ld command line to the files a link reads: `-l` searched in the library
//! directories, linker scripts expanded, shared objects taken for a dynamically linked output and refused
//! for a static one. The `ld` driver runs it over the file system
//! ([`RealFiles`]); anything implementing [`Files`] can stand in for it (the fuzz target's files in memory).
//!
//! `-lNAME` looks in every `-L` directory in order (all `-L` options apply to every `-l`, wherever they
//! appear, as in GNU ld), then in the default directories the caller gives. After `-Bstatic` (`-static`) only
//! `libNAME.a` is looked for; otherwise `libNAME.so` first, then `libNAME.a`, in each directory, as GNU ld does
//! — and a shared library found that way is refused unless the search allows shared libraries
//! ([`Search::allowing_shared_libraries`]: the output is dynamically linked). `-l:FILE` looks for FILE itself.
//!
//! A file whose first bytes are neither ELF nor an archive and which is text is a linker script
//! ([`crate::script`]); its inputs are resolved as GNU ld resolves them: `=` or `$SYSROOT` at the start means
//! the sysroot; an absolute name in a script that lies inside the sysroot is looked for in the sysroot; any
//! other name is opened as it is, and a relative one not found is looked for in the library directories.
//!
//! Expansion is bounded: scripts nest at most [`MAX_SCRIPT_DEPTH`] deep, at most [`MAX_SCRIPTS`] scripts of
//! at most [`MAX_SCRIPT_BYTES`] in all are expanded in one search, and it finds at most [`MAX_INPUTS`] inputs — so scripts that name each other many
//! times over (a `GROUP` of the same script twice, thirty levels deep) are refused, naming the script, instead
//! of expanding without end.

use std::ffi::{OsStr, OsString};
use std::io::Read as _;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use neverc_userfile::{TEXT_LIMIT, UserFileError, read_user_file, read_user_text};

use crate::script::{self, ScriptError};

/// How deeply linker scripts may name further scripts (a script that names itself is refused here).
pub const MAX_SCRIPT_DEPTH: usize = 16;

/// How many linker scripts one search expands at most, counting each time a script is named.
pub const MAX_SCRIPTS: usize = 1000;

/// How many inputs one search finds at most (counting a file each time it is named).
pub const MAX_INPUTS: usize = 1 << 20;

/// How many bytes of linker scripts one search reads at most, counting a script each time it is named.
pub const MAX_SCRIPT_BYTES: usize = 256 << 20;

/// One input in command-line order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// A file named on the command line (an object, an archive or a linker script).
    File { path: PathBuf, static_only: bool },
    /// `-lNAME` or `-l:FILE`; `static_only` is the `-Bstatic` / `-Bdynamic` state where it appears.
    Library { namespec: OsString, static_only: bool },
}

/// What a file is, from its first bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// An object, an archive, or a binary file for the link's reader to judge (it names what is wrong).
    Input,
    /// A linker script, with its text.
    Script(String),
    SharedObject,
}

/// What a search needs of the files it looks at.
pub trait Files {
    /// Whether `path` names something.
    fn exists(&self, path: &Path) -> bool;
    /// What the file at `path` is (see [`classify`] for the real files' rules).
    fn classify(&self, path: &Path) -> Result<FileKind, SearchError>;
    /// `path` as the file system names it, if it can be resolved.
    fn canonicalize(&self, path: &Path) -> Option<PathBuf>;
}

/// The real file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFiles;

impl Files for RealFiles {
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn classify(&self, path: &Path) -> Result<FileKind, SearchError> {
        classify(path)
    }

    fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(path).ok()
    }
}

/// Why a search failed. Every variant names the file, script or `-l` it is about.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// Linker scripts that name each other too deeply (a script that names itself, directly or not).
    #[error(
        "linker scripts nest deeper than {limit} levels at `{}`{} (does a script name itself?)",
        path.display(),
        Via(via)
    )]
    ScriptDepth { limit: usize, path: PathBuf, via: String },
    /// Too many linker scripts (or bytes of them) expanded in one search.
    #[error(
        "more than {MAX_SCRIPTS} linker scripts or {} MiB of them expanded, at `{}`{} (do scripts name each \
         other many times?)",
        MAX_SCRIPT_BYTES >> 20,
        path.display(),
        Via(via)
    )]
    TooManyScripts { path: PathBuf, via: String },
    /// Too many inputs found in one search.
    #[error("more than {limit} input files, at `{}`{}", path.display(), Via(via))]
    TooManyInputs { limit: usize, path: PathBuf, via: String },
    #[error("a linker script {0}")]
    Script(#[from] ScriptError),
    /// A `-l` that matches no archive in the search path.
    #[error("cannot find {namespec}{}; searched {searched}", Via(via))]
    LibraryNotFound {
        namespec: String,
        via: String,
        searched: String,
    },
    /// A `-l` in a static search that finds only a shared library.
    #[error(
        "cannot find {namespec}{}: only the shared library `{}` exists, and a static link cannot use it",
        Via(via),
        shared.display()
    )]
    OnlyShared {
        namespec: String,
        via: String,
        shared: PathBuf,
    },
    /// An input that is a shared object (`libc.so.6`, or a `.so` found by `-l`) where none can be linked:
    /// after `-static` (`-Bstatic`), or in a relocatable link.
    #[error(
        "`{}`{} is a shared object, which a static link cannot use: it comes after -static or -Bstatic (GNU ld: \
         \"attempted static link of dynamic object\"); name the archive, or put -Bdynamic before it for a \
         dynamically linked output",
        path.display(),
        Via(via)
    )]
    SharedObject { path: PathBuf, via: String },
    /// A file named in a linker script that exists nowhere it is looked for.
    #[error("cannot find `{name}`{}; looked for {searched}", Via(via))]
    ScriptInputNotFound {
        name: String,
        via: String,
        searched: String,
    },
    #[error("{0}")]
    Read(#[from] UserFileError),
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// How an input was found (`found for -lm`, `named by the script ...`), shown in parentheses when known.
struct Via<'a>(&'a str);

impl std::fmt::Display for Via<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(formatter, " ({})", self.0)
        }
    }
}

/// Where a search looks: the library directories, in order, and the sysroot.
#[derive(Clone, Debug)]
pub struct Search<'f, F: Files> {
    library_dirs: Vec<PathBuf>,
    sysroot: Option<PathBuf>,
    /// The sysroot as the file system names it, to tell whether a script lies inside it.
    canonical_sysroot: Option<PathBuf>,
    files: &'f F,
    /// Whether shared objects may be inputs (where no `-Bstatic` is in force), or are refused.
    shared_libraries: bool,
}

/// One input file a search found: its path, the index of the command-line item it comes from (a file a
/// script names comes from the item that named the script), and whether a script named it inside
/// `AS_NEEDED(...)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundInput {
    pub path: PathBuf,
    pub item: usize,
    pub as_needed: bool,
    /// The file is a shared object (taken where the search allows them).
    pub shared: bool,
}

/// What one resolution has found and expanded so far.
#[derive(Default)]
struct Found {
    /// (path, named inside `AS_NEEDED`, a shared object).
    files: Vec<(PathBuf, bool, bool)>,
    scripts: usize,
    script_bytes: usize,
}

impl<'f, F: Files> Search<'f, F> {
    /// A search of the `-L` directories `library_dirs`, then `default_dirs` (each of both under the sysroot
    /// when it starts with `=` or `$SYSROOT`).
    pub fn new(library_dirs: &[PathBuf], default_dirs: &[&str], sysroot: Option<PathBuf>, files: &'f F) -> Self {
        let library_dirs = library_dirs
            .iter()
            .map(PathBuf::as_path)
            .chain(default_dirs.iter().map(Path::new))
            .map(|dir| under_sysroot(dir, sysroot.as_deref()))
            .collect();
        Search {
            library_dirs,
            canonical_sysroot: sysroot.as_deref().and_then(|root| files.canonicalize(root)),
            sysroot,
            files,
            shared_libraries: false,
        }
    }

    /// The same search, taking shared objects as inputs where no `-Bstatic` is in force (their presence makes
    /// the output dynamically linked) or refusing them.
    pub fn allowing_shared_libraries(self, allowed: bool) -> Self {
        Search {
            shared_libraries: allowed,
            ..self
        }
    }

    /// The directories `-l` searches, in order.
    pub fn library_dirs(&self) -> &[PathBuf] {
        &self.library_dirs
    }

    /// Every input file of `items`, scripts expanded, in link order.
    pub fn resolve(&self, items: &[Item]) -> Result<Vec<PathBuf>, SearchError> {
        Ok(self.resolve_items(items)?.into_iter().map(|found| found.path).collect())
    }

    /// Like [`Search::resolve`], each file with the index in `items` of the item it comes from (a file a
    /// script names comes from the item that named the script), for options that apply to a stretch of the
    /// command line (`--whole-archive`).
    pub fn resolve_items(&self, items: &[Item]) -> Result<Vec<FoundInput>, SearchError> {
        let mut found = Found::default();
        let mut origins = Vec::new();
        for (index, item) in items.iter().enumerate() {
            match item {
                Item::File { path, static_only } => {
                    self.add(&mut found, path.clone(), *static_only, String::new(), 0, false)?;
                }
                Item::Library { namespec, static_only } => {
                    let via = format!("found for -l{}", namespec.to_string_lossy());
                    let path = self.find_library(namespec, *static_only, "")?;
                    self.add(&mut found, path, *static_only, via, 0, false)?;
                }
            }
            origins.resize(found.files.len(), index);
        }
        Ok(found
            .files
            .into_iter()
            .zip(origins)
            .map(|((path, as_needed, shared), item)| FoundInput {
                path,
                item,
                as_needed,
                shared,
            })
            .collect())
    }

    /// Adds `path`: an input as it is, or the inputs of the script it is. `via` says how it was found;
    /// `as_needed`, whether a script named it inside `AS_NEEDED`.
    fn add(
        &self,
        found: &mut Found,
        path: PathBuf,
        static_only: bool,
        via: String,
        depth: usize,
        as_needed: bool,
    ) -> Result<(), SearchError> {
        let kind = self.files.classify(&path)?;
        // A shared object is an input where shared libraries are allowed and no -Bstatic (-static) is in
        // force, as GNU ld takes one.
        let shared = kind == FileKind::SharedObject;
        let kind = match kind {
            FileKind::SharedObject if self.shared_libraries && !static_only => FileKind::Input,
            kind => kind,
        };
        match kind {
            FileKind::Input => {
                if found.files.len() >= MAX_INPUTS {
                    return Err(SearchError::TooManyInputs {
                        limit: MAX_INPUTS,
                        path,
                        via,
                    });
                }
                found.files.push((path, as_needed, shared));
            }
            FileKind::SharedObject => return Err(SearchError::SharedObject { path, via }),
            FileKind::Script(text) => {
                if depth >= MAX_SCRIPT_DEPTH {
                    return Err(SearchError::ScriptDepth {
                        limit: MAX_SCRIPT_DEPTH,
                        path,
                        via,
                    });
                }
                found.scripts += 1;
                found.script_bytes = found.script_bytes.saturating_add(text.len());
                if found.scripts > MAX_SCRIPTS || found.script_bytes > MAX_SCRIPT_BYTES {
                    return Err(SearchError::TooManyScripts { path, via });
                }
                let inputs = script::parse(&path, &text)?;
                let inside_sysroot = self.inside_sysroot(&path);
                for input in inputs {
                    let from = if via.is_empty() {
                        format!("named by the script `{}`", path.display())
                    } else {
                        format!("named by the script `{}`, {via}", path.display())
                    };
                    let next = match input.name.strip_prefix("-l") {
                        Some(name) => self.find_library(&OsString::from(name), static_only, &from)?,
                        None => self.find_script_input(&input.name, inside_sysroot, &from)?,
                    };
                    self.add(found, next, static_only, from, depth + 1, as_needed || input.as_needed)?;
                }
            }
        }
        Ok(())
    }

    /// `-lNAME` or `-l:FILE` in the library directories.
    fn find_library(&self, namespec: &OsStr, static_only: bool, via: &str) -> Result<PathBuf, SearchError> {
        let spelled = format!("-l{}", namespec.to_string_lossy());
        if let Some(file) = namespec.as_bytes().strip_prefix(b":") {
            let file = OsStr::from_bytes(file);
            return self
                .library_dirs
                .iter()
                .map(|dir| dir.join(file))
                .find(|candidate| self.files.exists(candidate))
                .ok_or_else(|| self.not_found(spelled, via));
        }
        let mut archive = OsString::from("lib");
        archive.push(namespec);
        let mut shared = archive.clone();
        archive.push(".a");
        shared.push(".so");
        let mut shared_seen = None;
        for dir in &self.library_dirs {
            let shared = dir.join(&shared);
            if self.files.exists(&shared) {
                if !static_only {
                    // GNU ld takes the shared library here; `add` reads it (a script such as libc.so is
                    // expanded, a shared object refused, naming it).
                    return Ok(shared);
                }
                shared_seen.get_or_insert(shared);
            }
            let archive = dir.join(&archive);
            if self.files.exists(&archive) {
                return Ok(archive);
            }
        }
        Err(match shared_seen {
            Some(shared) => SearchError::OnlyShared {
                namespec: spelled,
                via: via.to_string(),
                shared,
            },
            None => self.not_found(spelled, via),
        })
    }

    fn not_found(&self, namespec: String, via: &str) -> SearchError {
        SearchError::LibraryNotFound {
            namespec,
            via: via.to_string(),
            searched: if self.library_dirs.is_empty() {
                "no directories (give -L DIR)".to_string()
            } else {
                self.library_dirs
                    .iter()
                    .map(|dir| dir.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        }
    }

    /// A file name from a script, found by GNU ld's rules (see the module documentation).
    fn find_script_input(&self, name: &str, inside_sysroot: bool, via: &str) -> Result<PathBuf, SearchError> {
        let path = Path::new(name);
        let mut candidates = Vec::new();
        if is_sysroot_relative(name) {
            candidates.push(under_sysroot(path, self.sysroot.as_deref()));
        } else if let (true, true, Some(sysroot)) = (path.is_absolute(), inside_sysroot, &self.sysroot) {
            let mut rooted = sysroot.clone().into_os_string();
            rooted.push(path.as_os_str());
            candidates.push(PathBuf::from(rooted));
        } else {
            candidates.push(path.to_path_buf());
            if path.is_relative() {
                candidates.extend(self.library_dirs.iter().map(|dir| dir.join(path)));
            }
        }
        candidates
            .iter()
            .find(|candidate| self.files.exists(candidate))
            .cloned()
            .ok_or_else(|| SearchError::ScriptInputNotFound {
                name: name.to_string(),
                via: via.to_string(),
                searched: candidates
                    .iter()
                    .map(|candidate| format!("`{}`", candidate.display()))
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    fn inside_sysroot(&self, script: &Path) -> bool {
        match (&self.canonical_sysroot, self.files.canonicalize(script)) {
            (Some(root), Some(script)) => script.starts_with(root),
            _ => false,
        }
    }
}

fn is_sysroot_relative(name: &str) -> bool {
    name.starts_with('=') || name.starts_with("$SYSROOT")
}

/// A directory or file name that starts with `=` or `$SYSROOT`, under the sysroot (the prefix dropped when
/// there is none); any other name unchanged.
fn under_sysroot(path: &Path, sysroot: Option<&Path>) -> PathBuf {
    let bytes = path.as_os_str().as_bytes();
    let rest = if let Some(rest) = bytes.strip_prefix(b"=") {
        rest
    } else if let Some(rest) = bytes.strip_prefix(b"$SYSROOT") {
        rest
    } else {
        return path.to_path_buf();
    };
    let mut rooted = sysroot.map_or_else(OsString::new, |root| root.as_os_str().to_os_string());
    rooted.push(OsStr::from_bytes(rest));
    PathBuf::from(rooted)
}

/// How many bytes tell an ELF file's type and an archive's magic.
const PEEK: u64 = 64;

/// What the file at `path` is: an ELF file (a shared object when its `e_type` says so) or an archive is read
/// no further; a text file is a linker script, read whole; anything else is an input for the link's reader to
/// judge.
pub fn classify(path: &Path) -> Result<FileKind, SearchError> {
    // With a limit of 0, the user-file reader checks what it always checks (the path names a regular file,
    // not a device or a FIFO, which would block) and reads nothing of a non-empty file.
    match read_user_file(path, 0) {
        Ok(_) => return Ok(FileKind::Script(String::new())),
        Err(UserFileError::TooLarge { .. }) => {}
        Err(error) => return Err(error.into()),
    }
    let io = |source| SearchError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut head = Vec::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(PEEK)
        .read_to_end(&mut head)
        .map_err(io)?;
    Ok(match classify_head(&head) {
        Some(kind) => kind,
        None => match read_user_text(path, TEXT_LIMIT) {
            Ok(text) => FileKind::Script(text),
            // Not text after all: the link's reader says what it is not.
            Err(UserFileError::NotUtf8 { .. } | UserFileError::TooLarge { .. }) => FileKind::Input,
            Err(error) => return Err(error.into()),
        },
    })
}

/// What a file is from its first bytes, unless it may be a script (which only its whole text tells).
pub fn classify_head(head: &[u8]) -> Option<FileKind> {
    if head.starts_with(b"\x7fELF") {
        // e_type (16 bits at offset 16, in the file's byte order): 3 is a shared object.
        let e_type = match (head.get(5), head.get(16..18)) {
            (Some(1), Some(&[low, high])) => u16::from_le_bytes([low, high]),
            (Some(2), Some(&[high, low])) => u16::from_be_bytes([high, low]),
            _ => 0,
        };
        return Some(if e_type == 3 {
            FileKind::SharedObject
        } else {
            FileKind::Input
        });
    }
    if head.starts_with(b"!<arch>\n") || head.starts_with(b"!<thin>\n") || head.contains(&0) {
        return Some(FileKind::Input);
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn sysroot_prefixes() {
        let root = Some(Path::new("/sys/root"));
        assert_eq!(
            under_sysroot(Path::new("=/usr/lib"), root),
            PathBuf::from("/sys/root/usr/lib")
        );
        assert_eq!(
            under_sysroot(Path::new("$SYSROOT/lib"), root),
            PathBuf::from("/sys/root/lib")
        );
        assert_eq!(under_sysroot(Path::new("=/usr/lib"), None), PathBuf::from("/usr/lib"));
        assert_eq!(under_sysroot(Path::new("/usr/lib"), root), PathBuf::from("/usr/lib"));
    }
}
