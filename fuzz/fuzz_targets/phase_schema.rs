//! Phase schema JSON: parse and validate, then lower what validated. Must never panic, and every
//! diagnostic with a span must have a line and lie within the input.

#![no_main]

use libfuzzer_sys::fuzz_target;

mod check;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match neverc_schema::parse_phase_schema("fuzz.json", text) {
        Ok(document) => {
            let _ = neverc_schema::lower_phase_schema(&document, &neverc_schema::Bump::new());
        }
        Err(diagnostics) => check::check_diagnostics(text, &diagnostics),
    }
});
