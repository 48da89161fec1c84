//! `.ll` modules: reading and materializing never panic, and a module with nothing selected comes back
//! byte-identical.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neverc_cc::materialize::{MaterializeOptions, materialize};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Some(x86) = neverc_tables::target_by_name("x86_64") else { return };
    if let Ok(result) = materialize(text, x86, &MaterializeOptions::default())
        && (result.report.plan_count() == 0)
        && result.report.validated.is_empty()
    {
        assert_eq!(result.text, text);
    }
    let _ = materialize(text, x86, &MaterializeOptions { cc_all: true, shuffle: true, ..Default::default() });
});
