//! Generates the runtime's tables from the bundled declarations: `../PhaseSchema.json` and
//! `../targets/*.toml`. Adding a TOML file under `targets/` and rebuilding is all a new target needs.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            neverc_codegen::build_support::report_failure(&message);
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").map_err(|e| e.to_string())?);
    let root = manifest_dir.join("..");
    let declarations = neverc_codegen::build_support::load_bundled_declarations(&root)?;
    let generated = neverc_codegen::generate(&declarations, &root).map_err(|error| error.to_string())?;
    for file in generated {
        neverc_codegen::build_support::write_if_changed(&out_dir.join(&file.name), &file.contents)?;
    }
    Ok(())
}
