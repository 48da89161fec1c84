//! How distributed ThinLTO (`--thinlto-index-only`) names what it writes, as lld 14 names it.
//!
//! Each bitcode file is a module whose path is the file's path as the command line names it, except that with
//! `--thinlto-object-suffix-replace=OLD;NEW` a path ending in OLD ends in NEW instead: the thin link may then
//! read minimized bitcode (`foo.thinlink.bc`, from clang's `-fthin-link-bitcode=`) while the indexes name the
//! full bitcode files the backends compile and import from (`foo.o`). The module path is what the index, the
//! other modules' `.imports` lists and the backend's command line (`clang -c -x ir foo.o
//! -fthinlto-index=...`) call the module.
//!
//! A module's `.thinlto.bc` index and `.imports` list are written beside its module path, or, with
//! `--thinlto-prefix-replace=OLD;NEW`, at the module path with its leading OLD replaced by NEW (directories
//! are created as needed); the list of `--thinlto-index-only=FILE` names each module's native object by that
//! same replaced path. The replacements are plain byte-string ones, as in LLVM: a prefix `src` also matches
//! `src2/a.o`. Both options change nothing but these names, and only in an index-only link (lld ignores them
//! otherwise).

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};

/// lld's `--thinlto-object-suffix-replace` and `--thinlto-prefix-replace`: each an (OLD, NEW) pair.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DistributedNaming {
    /// A bitcode file whose path ends in OLD is the module whose path ends in NEW instead.
    pub object_suffix_replace: Option<(String, String)>,
    /// A module whose path starts with OLD has its index, imports and native object under NEW instead.
    pub prefix_replace: Option<(String, String)>,
}

impl DistributedNaming {
    /// The module path of the bitcode file at `input`.
    pub fn module_path(&self, input: &Path) -> PathBuf {
        let bytes = input.as_os_str().as_bytes();
        match &self.object_suffix_replace {
            Some((old, new)) => match bytes.strip_suffix(old.as_bytes()) {
                Some(stem) => join_bytes(stem, new.as_bytes()),
                None => input.to_path_buf(),
            },
            None => input.to_path_buf(),
        }
    }

    /// Where the files of the module at `module` go, less their suffix (`.thinlto.bc`, `.imports`); also the
    /// path of its native object in the `--thinlto-index-only=FILE` list.
    pub fn output_base(&self, module: &Path) -> PathBuf {
        let bytes = module.as_os_str().as_bytes();
        match &self.prefix_replace {
            Some((old, new)) => match bytes.strip_prefix(old.as_bytes()) {
                Some(rest) => join_bytes(new.as_bytes(), rest),
                None => module.to_path_buf(),
            },
            None => module.to_path_buf(),
        }
    }
}

fn join_bytes(head: &[u8], tail: &[u8]) -> PathBuf {
    let mut bytes = head.to_vec();
    bytes.extend_from_slice(tail);
    PathBuf::from(OsString::from_vec(bytes))
}

/// What an index-only link writes for one bitcode file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistributedModule {
    /// The bitcode file as the command line names it.
    pub input: PathBuf,
    /// The module's path (the input, unless its suffix was replaced).
    pub module: PathBuf,
    /// `BASE.thinlto.bc`.
    pub index: PathBuf,
    /// `BASE.imports`.
    pub imports: PathBuf,
    /// BASE, the path of the module's native object in the list of the linked objects.
    pub native_object: PathBuf,
}

impl DistributedModule {
    pub fn new(naming: &DistributedNaming, input: &Path) -> DistributedModule {
        let module = naming.module_path(input);
        let base = naming.output_base(&module);
        DistributedModule {
            input: input.to_path_buf(),
            index: with_suffix(&base, ".thinlto.bc"),
            imports: with_suffix(&base, ".imports"),
            native_object: base,
            module,
        }
    }
}

/// `path` with `suffix` appended to its last component.
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// How many directories above the working directory a relative path reaches at most (`../../a.o`: 2,
/// `a/../../b.o`: 1, `a.o`: 0), read component by component without looking at the file system.
pub fn levels_above(path: &Path) -> usize {
    let mut depth: isize = 0;
    let mut lowest: isize = 0;
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => depth -= 1,
            std::path::Component::Normal(_) => depth += 1,
            _ => {}
        }
        lowest = lowest.min(depth);
    }
    lowest.unsigned_abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_replaced_as_lld_replaces_them() {
        let naming = DistributedNaming {
            object_suffix_replace: Some((".thinlink.bc".into(), ".o".into())),
            prefix_replace: Some(("src/".into(), "out/".into())),
        };
        let module = DistributedModule::new(&naming, Path::new("src/a.thinlink.bc"));
        assert_eq!(module.module, Path::new("src/a.o"));
        assert_eq!(module.index, Path::new("out/a.o.thinlto.bc"));
        assert_eq!(module.imports, Path::new("out/a.o.imports"));
        assert_eq!(module.native_object, Path::new("out/a.o"));
        // Neither matches: the file's own path, and its files beside it.
        let other = DistributedModule::new(&naming, Path::new("lib/b.o"));
        assert_eq!(other.module, Path::new("lib/b.o"));
        assert_eq!(other.index, Path::new("lib/b.o.thinlto.bc"));
        // Plain byte strings, not path components.
        let bytes = DistributedNaming {
            object_suffix_replace: None,
            prefix_replace: Some(("sr".into(), "zz".into())),
        };
        assert_eq!(bytes.output_base(Path::new("src/a.o")), Path::new("zzc/a.o"));
        let prepend = DistributedNaming {
            object_suffix_replace: None,
            prefix_replace: Some((String::new(), "pre/".into())),
        };
        assert_eq!(prepend.output_base(Path::new("src/a.o")), Path::new("pre/src/a.o"));
    }

    #[test]
    fn levels_above_the_working_directory() {
        for (path, levels) in [
            ("a.o", 0),
            ("./a.o", 0),
            ("../a.o", 1),
            ("../../x/a.o", 2),
            ("x/../../a.o", 1),
            ("x/y/../../a.o", 0),
        ] {
            assert_eq!(levels_above(Path::new(path)), levels, "{path}");
        }
    }
}
