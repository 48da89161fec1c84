//! Generates the runtime's tables from the bundled declarations: `../PhaseSchema.json` and
//! `../targets/*.toml`. Adding a TOML file under `targets/` and rebuilding is all a new target needs.

use std::process::ExitCode;

fn main() -> ExitCode {
    neverc_codegen::build_support::run_build_script(|declarations, root| {
        neverc_codegen::generate(declarations, root).map_err(|error| error.to_string())
    })
}
