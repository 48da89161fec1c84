//! Linker scripts (`GROUP`/`INPUT`/`AS_NEEDED`/`OUTPUT_FORMAT`, what libraries ship as `libm.a` or
//! `libc.so`): parsing never panics, every input it names is the text of its span, and every error points
//! inside the script.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use neverc_link::script::parse;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse(Path::new("fuzz.ld"), text) {
        Ok(inputs) => {
            for input in inputs {
                let named = text.get(input.span.clone()).expect("a span inside the script");
                assert!(
                    named.contains(input.name.trim_start_matches("-l")),
                    "{named:?} / {:?}",
                    input.name
                );
            }
        }
        Err(error) => {
            assert!(
                error.span.start <= error.span.end && error.span.end <= text.len(),
                "{error:?}"
            );
            assert!(error.line >= 1 && error.column >= 1, "{error:?}");
        }
    }
});
