//! Lowering `.ll` modules: reading, materializing and lowering never panic; a module without plans comes back
//! byte-identical; every adapter written names a symbol that a `module asm` line defines.
//!
//! Each input is lowered as it is (it may carry plans and `cc 1000` of its own, well-formed or not) and after
//! `--cc-all` materialization with the input's first byte choosing the spec layout, on x86_64, aarch64 and riscv64.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neverc_cc::lower::lower;
use neverc_cc::materialize::{MaterializeOptions, materialize};

fn check(text: &str, target: &'static neverc_tables::TargetRecord) {
    if let Ok(lowered) = lower(text, target) {
        let report = &lowered.report;
        if report.incoming.is_empty() && report.outgoing.is_empty() {
            assert_eq!(lowered.text, text);
        }
        for function in &report.incoming {
            let bare = function.trim_start_matches('@');
            // A stub macro invoked with the symbol (within a `module asm` line or at its end), or a label.
            assert!(
                lowered.text.contains(&format!(" {bare}\\0A"))
                    || lowered.text.contains(&format!(" {bare}\"\n"))
                    || lowered.text.contains(&format!("\\0A{bare}:")),
                "no definition of {bare} in the lowered module"
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for name in ["x86_64", "aarch64", "riscv64"] {
        let Some(target) = neverc_tables::target_by_name(name) else {
            return;
        };
        check(text, target);
        let options = MaterializeOptions {
            cc_all: true,
            shuffle: data.first().is_some_and(|byte| byte % 2 == 1),
            ..Default::default()
        };
        if let Ok(materialized) = materialize(text, target, &options) {
            check(&materialized.text, target);
        }
    }
});
