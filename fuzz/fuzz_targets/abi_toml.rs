//! Plugin ABI TOML (`abi/*.toml`): parse and validate, then generate the tables of what validated. Must
//! never panic, and every diagnostic with a span must have a line and lie within the input.

#![no_main]

use libfuzzer_sys::fuzz_target;

mod check;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match neverc_schema::parse_plugin_abi("fuzz.toml", text) {
        Ok(declaration) => {
            // The conformance cases of whatever validated are derived without panicking.
            let _ = neverc_codegen::conformance::plugin_abi_cases(&declaration, "fuzz.toml");
        }
        Err(diagnostics) => check::check_diagnostics(text, &diagnostics),
    }
});
