//! Symbols whose names `llvm-lto2`'s command line cannot carry. Each resolution is one argument
//! `-r=FILE,SYMBOL,FLAGS`, which the tool splits at the first two commas, so a symbol with a comma in its name
//! (`int f(void) __asm__("a,b")`, legal in C and in ELF) cannot be resolved there: the tool refuses the link.
//!
//! The default provider renames such symbols for the tool's run instead: every module that names one is
//! disassembled (`llvm-dis-14`), each such name becomes a placeholder, `__neverc_lto_renamed_` and 16 hex
//! digits of its SHA-256, and the module is assembled again (`llvm-as-14`, or `opt-14 --module-summary` for a
//! module with a summary, made afresh for the new names). The resolutions use the placeholders, and
//! in the objects the tool writes every placeholder is given its name back (`llvm-objcopy-14
//! --redefine-sym`), so the link sees the names the user wrote.

use std::fs;
use std::path::Path;
use std::process::Command;

use neverc_output::run_child;

use crate::lto::provider::ProviderError;
use crate::lto::request::{LtoRequest, sha256};

/// What the provider runs for each step, found on `PATH` unless the environment names another.
const LLVM_DIS: (&str, &str) = ("llvm-dis-14", "NEVERC_LLVM_DIS");
const LLVM_AS: (&str, &str) = ("llvm-as-14", "NEVERC_LLVM_AS");
const OPT: (&str, &str) = ("opt-14", "NEVERC_OPT");
const LLVM_OBJCOPY: (&str, &str) = ("llvm-objcopy-14", "NEVERC_LLVM_OBJCOPY");

/// Whether `llvm-lto2`'s `-r` syntax can carry `name`.
pub fn resolvable(name: &str) -> bool {
    !name.contains(',')
}

/// The names of a request that need a placeholder, each with it, in the order of their first appearance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Renames {
    pairs: Vec<(String, String)>,
}

impl Renames {
    /// The request's names that `-r` cannot carry.
    pub fn of(request: &LtoRequest) -> Renames {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for name in request.modules.iter().flat_map(|module| &module.symbols) {
            if !resolvable(name) && !pairs.iter().any(|(original, _)| original == name) {
                let digest: String = sha256(name.as_bytes())[..8]
                    .iter()
                    .map(|byte| format!("{byte:02x}"))
                    .collect();
                pairs.push((name.clone(), format!("__neverc_lto_renamed_{digest}")));
            }
        }
        Renames { pairs }
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The name the tool knows `name` by.
    pub fn tool_name<'a>(&'a self, name: &'a str) -> &'a str {
        self.pairs
            .iter()
            .find(|(original, _)| original == name)
            .map_or(name, |(_, placeholder)| placeholder.as_str())
    }

    /// The first name of the request, if any, for a message.
    pub fn first(&self) -> Option<&str> {
        self.pairs.first().map(|(original, _)| original.as_str())
    }

    /// Rewrites the bitcode file `file` (the request's `index`-th) in `dir` with the placeholders, if any of
    /// its modules names a renamed symbol.
    pub fn rewrite_module(
        &self,
        request: &LtoRequest,
        index: usize,
        file: &Path,
        dir: &Path,
    ) -> Result<(), ProviderError> {
        let modules: Vec<_> = request.modules.iter().filter(|module| module.file == index).collect();
        let names_one = modules
            .iter()
            .any(|module| module.symbols.iter().any(|name| !resolvable(name)));
        if !names_one {
            return Ok(());
        }
        if modules.len() > 1 {
            return Err(ProviderError::new(format!(
                "`{}` holds {} bitcode modules and names the symbol `{}`, whose comma llvm-lto2's resolutions \
                 cannot carry; neverc-spec renames such symbols in files of one module only",
                request.files[index].logical_name,
                modules.len(),
                self.first().unwrap_or_default()
            )));
        }
        let text_path = dir.join(format!("{index}.ll"));
        run(tool(LLVM_DIS).arg(file).arg("-o").arg(&text_path))?;
        let text = fs::read_to_string(&text_path)
            .map_err(|error| ProviderError::new(format!("cannot read {}: {error}", text_path.display())))?;
        // A module's summary names the old symbols: it is dropped and made again, with a module hash if it had
        // one (ThinLTO modules have; full LTO modules carry a summary with a hash of zeros).
        let summary = text.lines().find(|line| line.starts_with("^0 = module:"));
        let hashed = summary.is_some_and(|line| !line.contains("hash: (0, 0, 0, 0, 0)"));
        let mut renamed: String = text
            .lines()
            .filter(|line| !line.starts_with('^'))
            .flat_map(|line| [line, "\n"])
            .collect();
        for (original, placeholder) in &self.pairs {
            let quoted = quoted_ir_name(original);
            for sigil in ['@', '$'] {
                renamed = renamed.replace(&format!("{sigil}{quoted}"), &format!("{sigil}{placeholder}"));
            }
        }
        fs::write(&text_path, renamed)
            .map_err(|error| ProviderError::new(format!("cannot write {}: {error}", text_path.display())))?;
        let mut assemble = match summary {
            Some(_) => {
                let mut opt = tool(OPT);
                opt.arg("--module-summary");
                if hashed {
                    opt.arg("--module-hash");
                }
                opt
            }
            None => tool(LLVM_AS),
        };
        run(assemble.arg(&text_path).arg("-o").arg(file))
    }

    /// Gives every placeholder in the object `path` its name back.
    pub fn restore_object(&self, path: &Path) -> Result<(), ProviderError> {
        let mut command = tool(LLVM_OBJCOPY);
        for (original, placeholder) in &self.pairs {
            command.arg(format!("--redefine-sym={placeholder}={original}"));
        }
        run(command.arg(path))
    }
}

/// How LLVM's assembly writes a global's name that needs quotes (one with a comma always does): in double
/// quotes, every byte that is not printable ASCII, a quote or a backslash written as `\` and two uppercase hex
/// digits.
fn quoted_ir_name(name: &str) -> String {
    let mut quoted = String::from("\"");
    for byte in name.bytes() {
        if (0x20..0x7f).contains(&byte) && byte != b'"' && byte != b'\\' {
            quoted.push(char::from(byte));
        } else {
            quoted.push_str(&format!("\\{byte:02X}"));
        }
    }
    quoted.push('"');
    quoted
}

/// The command of one of the tools, from the environment or `PATH`.
fn tool((name, variable): (&str, &str)) -> Command {
    Command::new(std::env::var_os(variable).unwrap_or_else(|| name.into()))
}

/// Runs a tool to completion; a failure names it and shows the first lines it printed.
fn run(command: &mut Command) -> Result<(), ProviderError> {
    let program = command.get_program().to_string_lossy().into_owned();
    let output = run_child(command)
        .map_err(|error| ProviderError::new(format!("cannot run `{program}` (Debian package llvm-14): {error}")))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let first_lines: Vec<&str> = stderr.lines().take(20).collect();
    Err(ProviderError::new(format!(
        "`{program}` failed ({}):\n{}",
        output.status,
        first_lines.join("\n")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_as_llvm_writes_them() {
        assert_eq!(quoted_ir_name("a,b"), "\"a,b\"");
        assert_eq!(quoted_ir_name("q\"u\\o\u{1b}é"), "\"q\\22u\\5Co\\1B\\C3\\A9\"");
    }
}
