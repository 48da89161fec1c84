//! Generates one Rust test per conformance case of the bundled declarations (`../PhaseSchema.json`,
//! `../targets/*.toml`) into `OUT_DIR/conformance_tests.rs`, which `tests/generated.rs` includes. A new phase
//! or a new target file adds tests on the next build.

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
    let sets = neverc_codegen::conformance::conformance_case_sets(&declarations, &root).map_err(|e| e.to_string())?;
    let file = neverc_codegen::conformance::conformance_tests(&sets).map_err(|e| e.to_string())?;
    neverc_codegen::build_support::write_if_changed(&out_dir.join(&file.name), &file.contents)
}
