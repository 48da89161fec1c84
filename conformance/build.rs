//! Generates one Rust test per conformance case of the bundled declarations (`../PhaseSchema.json`,
//! `../targets/*.toml`, `../abi/*.toml`) into `OUT_DIR/conformance_tests.rs`, which `tests/generated.rs` includes. A new phase
//! or a new target file adds tests on the next build.

use std::process::ExitCode;

fn main() -> ExitCode {
    neverc_codegen::build_support::run_build_script(|declarations, root| {
        let mut sets =
            neverc_codegen::conformance::conformance_case_sets(declarations, root).map_err(|e| e.to_string())?;
        let abi = neverc_codegen::build_support::load_bundled_plugin_abi(root)?;
        sets.extend(neverc_codegen::conformance::plugin_abi_case_sets(&abi, root));
        Ok(vec![
            neverc_codegen::conformance::conformance_tests(&sets).map_err(|e| e.to_string())?,
        ])
    })
}
