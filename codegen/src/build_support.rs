//! What the build scripts that generate from the bundled declarations share: finding and validating them,
//! telling Cargo when to rerun, and writing outputs only when they change.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use neverc_schema::{
    Declarations, LoadError, LoadedAbiPart, load_declarations, load_phase_schema, load_plugin_abi_with, target_files,
};

use crate::GeneratedFile;

/// Loads `root/PhaseSchema.json` and `root/targets/*.toml` for a build script, printing the
/// `cargo::rerun-if-changed` lines that make Cargo rerun it when any of them changes, appears or disappears.
fn load_bundled_declarations(root: &Path) -> Result<Declarations, String> {
    let schema = root.join("PhaseSchema.json");
    let targets_dir = root.join("targets");
    println!("cargo::rerun-if-changed={}", schema.display());
    // A directory makes Cargo rerun when any file in it changes, appears or disappears.
    println!("cargo::rerun-if-changed={}", targets_dir.display());
    let files = target_files(&targets_dir).map_err(|error| error.to_string())?;
    for file in &files {
        println!("cargo::rerun-if-changed={}", file.display());
    }
    load_declarations(&schema, &files).map_err(|error| describe(&error))
}

/// Loads `root/abi/*.toml` for a build script, printing the `cargo::rerun-if-changed` lines for them; the
/// values they take from `root/PhaseSchema.json` (`from`) are filled in.
pub fn load_bundled_plugin_abi(root: &Path) -> Result<Vec<LoadedAbiPart>, String> {
    let schema = root.join("PhaseSchema.json");
    println!("cargo::rerun-if-changed={}", schema.display());
    let phase_schema = load_phase_schema(&schema).map_err(|error| describe(&error))?;
    let dir = root.join("abi");
    println!("cargo::rerun-if-changed={}", dir.display());
    let files = target_files(&dir).map_err(|error| error.to_string())?;
    for file in &files {
        println!("cargo::rerun-if-changed={}", file.display());
    }
    load_plugin_abi_with(&files, &phase_schema).map_err(|error| describe(&error))
}

fn describe(error: &LoadError) -> String {
    match error {
        LoadError::Invalid { diagnostics, .. } => {
            let mut text = format!(
                "the bundled declarations are invalid ({} problem(s)); run `neverc-spec check` for details\n",
                diagnostics.len()
            );
            for diagnostic in diagnostics {
                text.push_str(&format!("{diagnostic}\n"));
            }
            text
        }
        other => other.to_string(),
    }
}

/// Writes `contents` unless the file already holds exactly that, so unchanged outputs keep their timestamps.
fn write_if_changed(path: &Path, contents: &str) -> Result<(), String> {
    if std::fs::read_to_string(path).is_ok_and(|existing| existing == contents) {
        return Ok(());
    }
    std::fs::write(path, contents).map_err(|error| format!("cannot write {}: {error}", path.display()))
}

/// The body of a build script that generates from the bundled declarations in the workspace root (the
/// nearest directory above the package that holds `PhaseSchema.json` and `targets/`): loads them, calls `generate` and writes each file it returns into `OUT_DIR`
/// (only when changed). A failure is reported to Cargo (first line as the error, the rest on stderr).
pub fn run_build_script(generate: impl FnOnce(&Declarations, &Path) -> Result<Vec<GeneratedFile>, String>) -> ExitCode {
    let result = (|| -> Result<(), String> {
        let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
        let out_dir = PathBuf::from(std::env::var("OUT_DIR").map_err(|e| e.to_string())?);
        let root = manifest_dir
            .ancestors()
            .skip(1)
            .find(|dir| dir.join("PhaseSchema.json").is_file() && dir.join("targets").is_dir())
            .ok_or_else(|| {
                format!(
                    "no directory above {} holds the bundled declarations",
                    manifest_dir.display()
                )
            })?
            .to_path_buf();
        let declarations = load_bundled_declarations(&root)?;
        for file in generate(&declarations, &root)? {
            write_if_changed(&out_dir.join(&file.name), &file.contents)?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            println!(
                "cargo::error={}",
                message.lines().next().unwrap_or("the bundled declarations are invalid")
            );
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}
