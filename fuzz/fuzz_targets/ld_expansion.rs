//! The `ld` front end's expansions over files in memory: `@FILE` response files
//! (`neverc_link::response_file::expand`) and the search that turns inputs into files, expanding linker scripts
//! (`neverc_link::search::Search::resolve`). The input is up to eight files, `f0` to `f7`, separated by NUL
//! bytes: `f0` is the command line's response file, the others what it and they name (`@f3`, `INPUT(f5)`,
//! `-lf6`, found as `libf6.a` or `libf6.so` in the library directory `lib`).
//!
//! Beyond "never panics": each expansion stays within its bounds (arguments, files read, scripts expanded,
//! inputs found), the same files give the same result twice, and every error has a message.
#![no_main]

use std::cell::Cell;
use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use neverc_link::response_file::{self, ExpandError};
use neverc_link::search::{FileKind, Files, Item, MAX_INPUTS, MAX_SCRIPTS, Search, SearchError, classify_head};

/// Files in memory, by name; a directory `lib` holds the same files as `lib<name>.a` / `lib<name>.so`.
struct MemoryFiles {
    files: Vec<Vec<u8>>,
    /// How many times a file was found to be a script.
    scripts: Cell<usize>,
}

impl MemoryFiles {
    fn bytes(&self, path: &Path) -> Option<&[u8]> {
        let name = path.to_str()?;
        let name = name
            .strip_prefix("lib/lib")
            .and_then(|name| name.strip_suffix(".a").or_else(|| name.strip_suffix(".so")))
            .unwrap_or(name);
        let index: usize = name.strip_prefix('f')?.parse().ok()?;
        self.files.get(index).map(Vec::as_slice)
    }
}

#[derive(Debug)]
struct Missing;

impl std::fmt::Display for Missing {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("unreadable")
    }
}

impl std::error::Error for Missing {}

impl Files for MemoryFiles {
    fn exists(&self, path: &Path) -> bool {
        self.bytes(path).is_some()
    }

    fn classify(&self, path: &Path) -> Result<FileKind, SearchError> {
        let bytes = self.bytes(path).ok_or_else(|| SearchError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        })?;
        Ok(match classify_head(&bytes[..bytes.len().min(64)]) {
            Some(kind) => kind,
            None => match std::str::from_utf8(bytes) {
                Ok(text) => {
                    self.scripts.set(self.scripts.get() + 1);
                    FileKind::Script(text.to_string())
                }
                Err(_) => FileKind::Input,
            },
        })
    }

    fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
        self.exists(path).then(|| path.to_path_buf())
    }
}

fn expand(files: &MemoryFiles) -> (Result<Vec<Vec<u8>>, ExpandError<Missing>>, usize) {
    let mut reads = 0usize;
    let expanded = response_file::expand(vec![b"@f0".to_vec()], |name| {
        reads += 1;
        let path = std::str::from_utf8(name).map_err(|_| Missing)?;
        Ok(files.bytes(Path::new(path)).map(<[u8]>::to_vec))
    });
    (expanded, reads)
}

fuzz_target!(|data: &[u8]| {
    let files = MemoryFiles {
        files: data.split(|byte| *byte == 0).take(8).map(<[u8]>::to_vec).collect(),
        scripts: Cell::new(0),
    };
    let (expanded, reads) = expand(&files);
    assert!(reads <= response_file::MAX_FILES + 1, "{reads} response files read");
    assert_eq!(
        format!("{:?}", expand(&files).0),
        format!("{expanded:?}"),
        "the same files expand the same"
    );
    let arguments = match expanded {
        Ok(arguments) => arguments,
        Err(error) => {
            assert!(!error.to_string().is_empty());
            return;
        }
    };
    assert!(arguments.len() <= response_file::MAX_ARGUMENTS);
    // Every argument is an input: `-lNAME` a library, anything else a file.
    let items: Vec<Item> = arguments
        .iter()
        .filter_map(|argument| std::str::from_utf8(argument).ok())
        .map(|argument| match argument.strip_prefix("-l") {
            Some(name) => Item::Library {
                namespec: name.into(),
                static_only: name.len() % 2 == 0,
            },
            None => Item::File {
                path: PathBuf::from(argument),
                static_only: false,
            },
        })
        .collect();
    let search = Search::new(&[PathBuf::from("lib")], &[], None, &files);
    match search.resolve(&items) {
        Ok(found) => assert!(found.len() <= MAX_INPUTS),
        Err(error) => assert!(!error.to_string().is_empty()),
    }
    // Scripts are expanded at most up to the bound (the one past it is refused).
    assert!(
        files.scripts.get() <= MAX_SCRIPTS + 1,
        "{} scripts",
        files.scripts.get()
    );
});
