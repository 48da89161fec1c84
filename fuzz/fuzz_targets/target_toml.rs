//! Target TOML: parse and validate, then lower what validated. Must never panic, and every
//! diagnostic with a span must have a line and lie within the input.

#![no_main]

use libfuzzer_sys::fuzz_target;

mod check;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match neverc_schema::parse_target("fuzz.toml", text) {
        Ok(declaration) => {
            let _ = neverc_schema::lower_target(&declaration, &neverc_schema::Bump::new());
        }
        Err(diagnostics) => check::check_diagnostics(text, &diagnostics),
    }
});
