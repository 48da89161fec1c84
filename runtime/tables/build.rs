//! Generates the runtime's tables from the bundled declarations: `../PhaseSchema.json`,
//! `../targets/*.toml` and `../abi/*.toml`. Adding a TOML file under `targets/` and rebuilding is all a new
//! target needs.

use std::process::ExitCode;

fn main() -> ExitCode {
    neverc_codegen::build_support::run_build_script(|declarations, root| {
        let mut files = neverc_codegen::generate(declarations, root).map_err(|error| error.to_string())?;
        let abi = neverc_codegen::build_support::load_bundled_plugin_abi(root)?;
        files.push(neverc_codegen::plugin_abi(&abi, root).map_err(|error| error.to_string())?);
        Ok(files)
    })
}
