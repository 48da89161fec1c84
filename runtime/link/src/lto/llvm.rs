//! The default LTO provider: LLVM 14's own `llvm-lto2 run`, given every module and one `-r` per symbol
//! resolution (in module and symbol order, as it requires), full or thin as the modules are, with the
//! request's optimization levels, CPU, features and thread budget. It writes the modules into a fresh
//! private directory, runs the tool there and reads back the objects (`out.0` for the merged full-LTO
//! module, `out.N` for the N-th ThinLTO module), removing the directory whatever happens. The tool runs in a
//! process group of its own, which a signal that ends the link kills (`neverc_output::run_child`), and the
//! directory goes then too.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use neverc_output::{TempDir, run_child};

use crate::lto::ProviderFlags;
use crate::lto::distributed::{DistributedModule, DistributedNaming, levels_above, with_suffix};
use crate::lto::provider::{KeySize, LtoCandidate, LtoObject, LtoProvider, ProviderError};
use crate::lto::rename::Renames;
use crate::lto::request::{LtoOptions, LtoRequest};

/// The tool the default provider runs, found on `PATH` unless `NEVERC_LLVM_LTO2` names another.
pub const LLVM_LTO2: &str = "llvm-lto2-14";

/// `llvm-lto2 run` as an LTO provider.
#[derive(Clone, Debug)]
pub struct LlvmLto2 {
    pub tool: PathBuf,
    pub target: String,
}

impl LlvmLto2 {
    /// The provider for `target` (a triple), running [`LLVM_LTO2`] or `$NEVERC_LLVM_LTO2`.
    pub fn new(target: &str) -> LlvmLto2 {
        let tool = std::env::var_os("NEVERC_LLVM_LTO2").map_or_else(|| PathBuf::from(LLVM_LTO2), PathBuf::from);
        LlvmLto2 {
            tool,
            target: target.to_string(),
        }
    }

    /// The `llvm-lto2 run` arguments for `request`, run in the directory that holds its files as `0.bc`,
    /// `1.bc`, ... (named relatively, so that the directory's own name, which may hold a comma, never enters a
    /// resolution), with each symbol called what `renames` calls it.
    pub fn arguments(&self, request: &LtoRequest, renames: &Renames) -> Vec<String> {
        let file_path = |index: usize| format!("{index}.bc");
        let mut arguments = vec!["run".to_string()];
        arguments.extend(option_arguments(&request.options, Path::new("out")));
        arguments.extend((0..request.files.len()).map(file_path));
        arguments.extend(resolution_arguments(request, file_path, renames));
        arguments
    }
}

/// The options of `llvm-lto2 run` that come from the request's, writing to `out` (`out.0`, `out.1`, ...).
fn option_arguments(options: &LtoOptions, out: &Path) -> Vec<String> {
    let mut arguments = vec![
        format!("-o={}", out.display()),
        format!("-O={}", options.optimization_level.min(3)),
        format!("--cg-opt-level={}", options.codegen_optimization_level.min(3)),
        format!("--thinlto-threads={}", options.thread_budget.max(1)),
        // A static executable: no code needs to be position-independent (lld: static unless PIC).
        "--relocation-model=static".to_string(),
        // GOT loads the linker may relax, as clang's own code generation and lld's LTO emit them.
        "--relax-elf-relocations".to_string(),
    ];
    if !options.cpu.is_empty() {
        arguments.push(format!("--mcpu={}", options.cpu));
    }
    if !options.features.is_empty() {
        arguments.push(format!("--mattr={}", options.features));
    }
    if options.flags.contains(crate::lto::OptionFlags::SAVE_TEMPS) {
        arguments.push("--save-temps".to_string());
    }
    arguments
}

impl LlvmLto2 {
    /// Distributed ThinLTO: writes every bitcode file's `.thinlto.bc` index and `.imports` list
    /// (`llvm-lto2 run --thinlto-distributed-indexes`) where `naming` puts them (beside the file unless its
    /// options say otherwise: `crate::lto::distributed`), for backends compiled elsewhere (`clang
    /// -fthinlto-index=FILE.thinlto.bc`). Every file must be a file of its own (not an archive member).
    /// Returns what was written for each file, in request order.
    ///
    /// llvm-lto2 calls each module by the path it is given, relative to its working directory, and writes the
    /// module's files beside that path. So it runs in a private directory holding a copy of each module with a
    /// relative path at that path, deep enough for the `..` of every path to stay inside it, and the files it
    /// writes there are moved where they belong. A module with an absolute path is read where it is and its
    /// files are written beside it, then moved if they belong elsewhere: its suffix cannot be replaced (no copy
    /// can be put at an absolute path), and files already beside it that the move would take away are refused.
    pub fn write_distributed_indexes(
        &self,
        request: &LtoRequest,
        naming: &DistributedNaming,
    ) -> Result<Vec<DistributedModule>, ProviderError> {
        let mut modules = Vec::new();
        for file in &request.files {
            let Some(path) = &file.path else {
                return Err(ProviderError::new(format!(
                    "`{}` is an archive member; distributed ThinLTO needs each bitcode module in a file of \
                     its own (extract it, or link without --thinlto-index-only)",
                    file.logical_name
                )));
            };
            let module = DistributedModule::new(naming, path);
            if module.module.is_absolute() {
                if module.module != module.input {
                    return Err(ProviderError::new(format!(
                        "--thinlto-object-suffix-replace makes `{}` the module `{}`, an absolute path: \
                         neverc-spec can rename only relative paths (name the input relative to the working \
                         directory)",
                        module.input.display(),
                        module.module.display()
                    )));
                }
                for (suffix, destination) in [(".thinlto.bc", &module.index), (".imports", &module.imports)] {
                    let beside = with_suffix(&module.module, suffix);
                    if beside != *destination && fs::symlink_metadata(&beside).is_ok() {
                        return Err(ProviderError::new(format!(
                            "`{}` exists: llvm-lto2 writes the files of the module `{}` beside it before they \
                             are moved to `{}`, and would replace it (remove it, or name the input relative to \
                             the working directory)",
                            beside.display(),
                            module.module.display(),
                            destination.display()
                        )));
                    }
                }
            }
            modules.push(module);
        }
        let dir = temporary_dir()?;
        let levels = modules
            .iter()
            .filter(|module| module.module.is_relative())
            .map(|module| levels_above(&module.module))
            .max()
            .unwrap_or(0);
        let mut work = dir.path().join("modules");
        for level in 0..levels {
            work.push(level.to_string());
        }
        let cannot = |what: &str, path: &Path, error: std::io::Error| {
            ProviderError::new(format!("cannot {what} {}: {error}", path.display()))
        };
        fs::create_dir_all(&work).map_err(|error| cannot("create", &work, error))?;
        for (module, file) in modules.iter().zip(&request.files) {
            if module.module.is_absolute() {
                continue;
            }
            let copy = work.join(&module.module);
            if let Some(parent) = copy.parent() {
                fs::create_dir_all(parent).map_err(|error| cannot("create", parent, error))?;
            }
            let mut out = match fs::OpenOptions::new().write(true).create_new(true).open(&copy) {
                Ok(out) => out,
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                    return Err(ProviderError::new(format!(
                        "two bitcode files are the module `{}` (the second is `{}`)",
                        module.module.display(),
                        module.input.display()
                    )));
                }
                Err(error) => return Err(cannot("write", &copy, error)),
            };
            std::io::Write::write_all(&mut out, &file.bytes).map_err(|error| cannot("write", &copy, error))?;
        }
        let names: Vec<String> = modules
            .iter()
            .map(|module| module.module.display().to_string())
            .collect();
        let mut arguments = vec!["run".to_string(), "--thinlto-distributed-indexes".to_string()];
        arguments.extend(option_arguments(&request.options, &dir.path().join("out")));
        arguments.extend(names.iter().cloned());
        if let Some(name) = Renames::of(request).first() {
            return Err(ProviderError::new(format!(
                "the symbol `{name}` has a comma, which llvm-lto2's resolutions cannot carry, and distributed \
                 ThinLTO compiles the modules as they are, so it cannot be renamed (link without \
                 --thinlto-index-only)"
            )));
        }
        arguments.extend(resolution_arguments(
            request,
            |file| names.get(file).cloned().unwrap_or_default(),
            &Renames::default(),
        ));
        let output = run_child(Command::new(&self.tool).args(&arguments).current_dir(&work))
            .map_err(|error| ProviderError::new(format!("cannot run `{}`: {error}", self.tool.display())))?;
        if !output.status.success() {
            return Err(ProviderError::new(format!(
                "`{}` failed ({}):\n{}",
                self.tool.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr)
            )));
        }
        for module in &modules {
            let written = if module.module.is_absolute() {
                module.module.clone()
            } else {
                work.join(&module.module)
            };
            let index = with_suffix(&written, ".thinlto.bc");
            if !index.exists() {
                return Err(ProviderError::new(format!(
                    "`{}` wrote no index for `{}` (is every input ThinLTO bitcode, from clang -flto=thin?)",
                    self.tool.display(),
                    module.module.display()
                )));
            }
            for (from, to) in [
                (index, &module.index),
                (with_suffix(&written, ".imports"), &module.imports),
            ] {
                if from != *to {
                    move_file(&from, to)?;
                }
            }
        }
        Ok(modules)
    }

    /// What `llvm-lto2 --version` prints, asked once per tool and process.
    fn identity(&self) -> Result<String, ProviderError> {
        static IDENTITIES: std::sync::Mutex<Vec<(PathBuf, String)>> = std::sync::Mutex::new(Vec::new());
        let mut known = IDENTITIES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, identity)) = known.iter().find(|(tool, _)| *tool == self.tool) {
            return Ok(identity.clone());
        }
        let output = Command::new(&self.tool).arg("--version").output().map_err(|error| {
            ProviderError::new(format!(
                "cannot run `{} --version` (LLVM 14's LTO tool; Debian package llvm-14): {error}",
                self.tool.display()
            ))
        })?;
        let identity = String::from_utf8_lossy(&output.stdout).into_owned();
        known.push((self.tool.clone(), identity.clone()));
        Ok(identity)
    }
}

impl LtoProvider for LlvmLto2 {
    fn id(&self) -> &str {
        "org.llvm.llvm-lto2-14"
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn flags(&self) -> u64 {
        (ProviderFlags::FULL | ProviderFlags::THIN | ProviderFlags::DETERMINISTIC | ProviderFlags::CACHEABLE).bits()
    }

    fn builds_cache_keys(&self) -> bool {
        true
    }

    /// The request digest (which covers the target, options, modules and resolutions), the provider's id and
    /// the tool's identity (its `--version` text, so that another LLVM never reuses these objects).
    fn build_cache_key(&self, request: &LtoRequest, buffer: &mut [u8]) -> Result<KeySize, ProviderError> {
        let mut key = format!("{}\n", self.id()).into_bytes();
        key.extend_from_slice(self.identity()?.as_bytes());
        key.extend_from_slice(&request.request_digest);
        let count = key.len().min(buffer.len());
        buffer[..count].copy_from_slice(&key[..count]);
        Ok(KeySize(key.len()))
    }

    fn codegen(&self, request: &LtoRequest) -> Result<LtoCandidate, ProviderError> {
        let dir = temporary_dir()?;
        let renames = Renames::of(request);
        for (index, file) in request.files.iter().enumerate() {
            let path = dir.path().join(format!("{index}.bc"));
            fs::write(&path, &file.bytes).map_err(|error| {
                ProviderError::new(format!("cannot write a module for {}: {error}", self.tool.display()))
            })?;
            if !renames.is_empty() {
                renames.rewrite_module(request, index, &path, dir.path())?;
            }
        }
        let output = run_child(
            Command::new(&self.tool)
                .args(self.arguments(request, &renames))
                .current_dir(dir.path()),
        )
        .map_err(|error| {
            ProviderError::new(format!(
                "cannot run `{}` (LLVM 14's LTO tool; Debian package llvm-14): {error}",
                self.tool.display()
            ))
        })?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let first_lines: Vec<&str> = stderr.lines().take(20).collect();
            return Err(ProviderError::new(format!(
                "`{}` failed ({}):\n{}",
                self.tool.display(),
                output.status,
                first_lines.join("\n")
            )));
        }
        // Task 0 is the merged full-LTO module, task N (from 1) the N-th ThinLTO module; a task with
        // nothing to compile writes no file. Each object is named after the bitcode it was made from, so that
        // a message about it names the user's file: a ThinLTO module's own, the merged module's of the
        // modules that are not ThinLTO tasks.
        let written =
            |task: usize| fs::metadata(dir.path().join(format!("out.{task}"))).is_ok_and(|metadata| metadata.len() > 0);
        let module_name = |module: usize| {
            request
                .files
                .get(request.modules[module].file)
                .map_or("?", |file| &file.logical_name)
        };
        let merged: Vec<&str> = (0..request.modules.len())
            .filter(|module| !written(module + 1))
            .map(module_name)
            .collect();
        let mut objects = Vec::new();
        for task in 0..=request.modules.len() {
            let logical_name = match task.checked_sub(1) {
                Some(module) => format!("{} (LTO)", module_name(module)),
                None => merged_object_name(&merged),
            };
            let path = dir.path().join(format!("out.{task}"));
            if !path.exists() {
                continue;
            }
            if !renames.is_empty() && fs::metadata(&path).is_ok_and(|metadata| metadata.len() > 0) {
                renames.restore_object(&path)?;
            }
            let Ok(bytes) = fs::read(&path) else { continue };
            if bytes.is_empty() {
                continue;
            }
            objects.push(LtoObject {
                source_module: task.checked_sub(1),
                logical_name,
                bytes,
            });
        }
        if objects.is_empty() {
            return Err(ProviderError::new(format!("`{}` wrote no object", self.tool.display())));
        }
        Ok(LtoCandidate {
            objects,
            ..LtoCandidate::default()
        })
    }
}

/// The name of the object compiled from the merged full-LTO module of the bitcode files `names`: the file's
/// name for one, the first three and how many more for several.
fn merged_object_name(names: &[&str]) -> String {
    match names {
        [] => "the merged LTO module".to_string(),
        [one] => format!("{one} (LTO)"),
        [first @ .., last] if names.len() <= 3 => format!("{} and {last} (LTO, merged)", first.join(", ")),
        _ => format!("{} and {} more (LTO, merged)", names[..3].join(", "), names.len() - 3),
    }
}

/// One `-r=FILE,SYMBOL,FLAGS` per resolution, in file, module and symbol order (the modules of a file are
/// consecutive, and the resolutions follow the modules), `file_name` naming each file as the tool was given it
/// and `renames` each symbol.
fn resolution_arguments(request: &LtoRequest, file_name: impl Fn(usize) -> String, renames: &Renames) -> Vec<String> {
    let mut arguments = Vec::new();
    for resolution in &request.resolutions {
        let Some(module) = request.modules.get(resolution.module.index()) else {
            continue;
        };
        let name = module
            .symbols
            .get(resolution.symbol as usize)
            .map_or("", String::as_str);
        let name = renames.tool_name(name);
        arguments.push(format!("-r={},{name},{}", file_name(module.file), resolution.letters()));
    }
    arguments
}

/// Moves a file llvm-lto2 wrote to `to`, creating `to`'s directory as needed (lld creates it too); the file
/// is written there complete or not at all.
fn move_file(from: &Path, to: &Path) -> Result<(), ProviderError> {
    let bytes =
        fs::read(from).map_err(|error| ProviderError::new(format!("cannot read {}: {error}", from.display())))?;
    if let Some(parent) = to.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|error| {
            ProviderError::new(format!("cannot create the directory {}: {error}", parent.display()))
        })?;
    }
    neverc_output::write_bytes(to, neverc_output::Mode::Data, &bytes)
        .map_err(|error| ProviderError::new(format!("cannot write {}: {error}", to.display())))?;
    fs::remove_file(from).map_err(|error| ProviderError::new(format!("cannot remove {}: {error}", from.display())))
}

/// A private directory for one run of the tool, removed when dropped or when a signal ends the process.
fn temporary_dir() -> Result<TempDir, ProviderError> {
    TempDir::new("neverc-lto").map_err(|error| {
        ProviderError::new(format!(
            "cannot create a directory for LTO in {}: {error}",
            std::env::temp_dir().display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::merged_object_name;

    #[test]
    fn a_merged_module_is_named_after_its_files() {
        assert_eq!(merged_object_name(&["a.o"]), "a.o (LTO)");
        assert_eq!(merged_object_name(&["a.o", "b.o"]), "a.o and b.o (LTO, merged)");
        assert_eq!(
            merged_object_name(&["a.o", "b.o", "c.o"]),
            "a.o, b.o and c.o (LTO, merged)"
        );
        assert_eq!(
            merged_object_name(&["a.o", "b.o", "c.o", "d.o", "e.o"]),
            "a.o, b.o, c.o and 2 more (LTO, merged)"
        );
    }
}
