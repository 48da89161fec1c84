//! Generates the runtime's tables from the bundled declarations: `../PhaseSchema.json` and
//! `../targets/*.toml`. Adding a TOML file under `targets/` and rebuilding is all a new target needs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            println!(
                "cargo::error={}",
                message.lines().next().unwrap_or("declarations are invalid")
            );
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").map_err(|e| e.to_string())?);
    let root = manifest_dir.join("..");
    let schema = root.join("PhaseSchema.json");
    let targets_dir = root.join("targets");
    println!("cargo::rerun-if-changed={}", schema.display());
    // A directory makes Cargo rerun when any file in it changes, appears or disappears.
    println!("cargo::rerun-if-changed={}", targets_dir.display());
    let files = neverc_schema::target_files(&targets_dir).map_err(|error| error.to_string())?;
    for file in &files {
        println!("cargo::rerun-if-changed={}", file.display());
    }
    let declarations = neverc_schema::load_declarations(&schema, &files).map_err(|error| describe(&error))?;
    let generated = neverc_codegen::generate(&declarations, &root).map_err(|error| error.to_string())?;
    for file in generated {
        write_if_changed(&out_dir.join(&file.name), &file.contents)?;
    }
    Ok(())
}

fn describe(error: &neverc_schema::LoadError) -> String {
    match error {
        neverc_schema::LoadError::Invalid { diagnostics, .. } => {
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

fn write_if_changed(path: &Path, contents: &str) -> Result<(), String> {
    if std::fs::read_to_string(path).is_ok_and(|existing| existing == contents) {
        return Ok(());
    }
    std::fs::write(path, contents).map_err(|error| format!("cannot write {}: {error}", path.display()))
}
