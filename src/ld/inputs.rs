//! From the command line's inputs to the files the link reads: `-l` searched in the library directories,
//! linker scripts expanded, shared objects refused.
//!
//! `-lNAME` looks in every `-L` directory in order (all `-L` options apply to every `-l`, wherever they
//! appear, as in GNU ld), then — unless `-nostdlib` — in GNU ld's default directories for `elf_x86_64` on
//! Debian. After `-Bstatic` (`-static`) only `libNAME.a` is looked for; otherwise `libNAME.so` first, then
//! `libNAME.a`, in each directory, as GNU ld does — and a shared library found that way is refused, since
//! the output is a static executable. `-l:FILE` looks for FILE itself.
//!
//! A file whose first bytes are neither ELF nor an archive and which is text is a linker script
//! ([`super::script`]); its inputs are resolved as GNU ld resolves them: `=` or `$SYSROOT` at the start means
//! the sysroot; an absolute name in a script that lies inside the sysroot is looked for in the sysroot; any
//! other name is opened as it is, and a relative one not found is looked for in the library directories.

use std::ffi::OsString;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use neverc_userfile::{TEXT_LIMIT, UserFileError, read_user_file, read_user_text};

use super::args::{Item, LdCommand};
use super::error::LdError;
use neverc_link::script;

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

/// How deeply linker scripts may name further scripts (a script that names itself is refused here).
pub(crate) const MAX_SCRIPT_DEPTH: usize = 16;

/// What a file is, from its first bytes.
enum Kind {
    /// An object, an archive, or a binary file for the link's reader to judge (it names what is wrong).
    Input,
    Script(String),
    SharedObject,
}

/// Resolves the command line's inputs to files, in order.
pub(crate) struct Resolver {
    library_dirs: Vec<PathBuf>,
    sysroot: Option<PathBuf>,
    /// The sysroot as the file system names it, to tell whether a script lies inside it.
    canonical_sysroot: Option<PathBuf>,
    files: Vec<PathBuf>,
}

impl Resolver {
    pub(crate) fn new(command: &LdCommand) -> Resolver {
        let sysroot = command.sysroot.clone();
        let mut library_dirs: Vec<PathBuf> = command
            .library_dirs
            .iter()
            .map(|dir| under_sysroot(dir, sysroot.as_deref()))
            .collect();
        if !command.nostdlib {
            library_dirs.extend(
                DEFAULT_LIBRARY_DIRS
                    .iter()
                    .map(|dir| under_sysroot(Path::new(dir), sysroot.as_deref())),
            );
        }
        Resolver {
            library_dirs,
            canonical_sysroot: sysroot.as_deref().and_then(|root| std::fs::canonicalize(root).ok()),
            sysroot,
            files: Vec::new(),
        }
    }

    /// The directories `-l` searches, in order.
    pub(crate) fn library_dirs(&self) -> &[PathBuf] {
        &self.library_dirs
    }

    /// Every input file of the command line, scripts expanded, in link order.
    pub(crate) fn resolve(mut self, items: &[Item]) -> Result<Vec<PathBuf>, LdError> {
        for item in items {
            match item {
                Item::File { path, static_only } => self.add(path.clone(), *static_only, String::new(), 0)?,
                Item::Library { namespec, static_only } => {
                    let via = format!("found for -l{}", namespec.to_string_lossy());
                    let path = self.find_library(namespec, *static_only, "")?;
                    self.add(path, *static_only, via, 0)?;
                }
            }
        }
        Ok(self.files)
    }

    /// Adds `path`: an input as it is, or the inputs of the script it is. `via` says how it was found.
    fn add(&mut self, path: PathBuf, static_only: bool, via: String, depth: usize) -> Result<(), LdError> {
        match classify(&path)? {
            Kind::Input => self.files.push(path),
            Kind::SharedObject => return Err(LdError::SharedObject { path, via }),
            Kind::Script(text) => {
                if depth >= MAX_SCRIPT_DEPTH {
                    return Err(LdError::ScriptDepth {
                        limit: MAX_SCRIPT_DEPTH,
                        path,
                        via,
                    });
                }
                let inputs = script::parse(&path, &text)?;
                let inside_sysroot = self.inside_sysroot(&path);
                for input in inputs {
                    let from = if via.is_empty() {
                        format!("named by the script `{}`", path.display())
                    } else {
                        format!("named by the script `{}`, {via}", path.display())
                    };
                    let found = match input.name.strip_prefix("-l") {
                        Some(name) => self.find_library(&OsString::from(name), static_only, &from)?,
                        None => self.find_script_input(&input.name, inside_sysroot, &from)?,
                    };
                    self.add(found, static_only, from, depth + 1)?;
                }
            }
        }
        Ok(())
    }

    /// `-lNAME` or `-l:FILE` in the library directories.
    fn find_library(&self, namespec: &OsString, static_only: bool, via: &str) -> Result<PathBuf, LdError> {
        let spelled = format!("-l{}", namespec.to_string_lossy());
        let bytes = namespec.as_encoded_bytes();
        if bytes.first() == Some(&b':') {
            let file = super::args::os_from_bytes_of(namespec, 1);
            return self
                .library_dirs
                .iter()
                .map(|dir| dir.join(file))
                .find(|candidate| candidate.exists())
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
            if shared.exists() {
                if !static_only {
                    // GNU ld takes the shared library here; `add` reads it (a script such as libc.so is
                    // expanded, a shared object refused, naming it).
                    return Ok(shared);
                }
                shared_seen.get_or_insert(shared);
            }
            let archive = dir.join(&archive);
            if archive.exists() {
                return Ok(archive);
            }
        }
        Err(match shared_seen {
            Some(shared) => LdError::OnlyShared {
                namespec: spelled,
                via: via.to_string(),
                shared,
            },
            None => self.not_found(spelled, via),
        })
    }

    fn not_found(&self, namespec: String, via: &str) -> LdError {
        LdError::LibraryNotFound {
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
    fn find_script_input(&self, name: &str, inside_sysroot: bool, via: &str) -> Result<PathBuf, LdError> {
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
            .find(|candidate| candidate.exists())
            .cloned()
            .ok_or_else(|| LdError::ScriptInputNotFound {
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
        match (&self.canonical_sysroot, std::fs::canonicalize(script)) {
            (Some(root), Ok(script)) => script.starts_with(root),
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
    let bytes = path.as_os_str().as_encoded_bytes();
    let skip = if bytes.starts_with(b"=") {
        1
    } else if bytes.starts_with(b"$SYSROOT") {
        "$SYSROOT".len()
    } else {
        return path.to_path_buf();
    };
    let rest = super::args::os_from_bytes_of(path.as_os_str(), skip);
    let mut rooted = sysroot.map_or_else(OsString::new, |root| root.as_os_str().to_os_string());
    rooted.push(rest);
    PathBuf::from(rooted)
}

/// How many bytes tell an ELF file's type and an archive's magic.
const PEEK: u64 = 64;

/// Reads enough of `path` to tell what it is; a script is read whole.
fn classify(path: &Path) -> Result<Kind, LdError> {
    // With a limit of 0, the user-file reader checks what it always checks (the path names a regular file,
    // not a device or a FIFO, which would block) and reads nothing of a non-empty file.
    match read_user_file(path, 0) {
        Ok(_) => return Ok(Kind::Script(String::new())),
        Err(UserFileError::TooLarge { .. }) => {}
        Err(error) => return Err(error.into()),
    }
    let io = |source| LdError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut head = Vec::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(PEEK)
        .read_to_end(&mut head)
        .map_err(io)?;
    if head.starts_with(b"\x7fELF") {
        // e_type (16 bits at offset 16, in the file's byte order): 3 is a shared object.
        let e_type = match (head.get(5), head.get(16..18)) {
            (Some(1), Some(&[low, high])) => u16::from_le_bytes([low, high]),
            (Some(2), Some(&[high, low])) => u16::from_be_bytes([high, low]),
            _ => 0,
        };
        return Ok(if e_type == 3 { Kind::SharedObject } else { Kind::Input });
    }
    if head.starts_with(b"!<arch>\n") || head.starts_with(b"!<thin>\n") || head.contains(&0) {
        return Ok(Kind::Input);
    }
    match read_user_text(path, TEXT_LIMIT) {
        Ok(text) => Ok(Kind::Script(text)),
        // Not text after all: the link's reader says what it is not.
        Err(UserFileError::NotUtf8 { .. } | UserFileError::TooLarge { .. }) => Ok(Kind::Input),
        Err(error) => Err(error.into()),
    }
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
