//! `.ll` modules: reading and materializing never panic, a module with nothing selected comes back
//! byte-identical, and materialization never writes an empty attribute group (which LLVM refuses).
//!
//! Deep nesting is reachable whatever the corpus holds: the first byte of the input chooses a depth (up to
//! 16 times the byte, far beyond `MAX_TYPE_NESTING`), and the module is also tried with a type definition
//! and a function parameter of that depth in front of it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neverc_cc::materialize::{MaterializeOptions, materialize};

/// Whether `text` holds an attribute group without attributes.
fn has_empty_group(text: &str) -> bool {
    text.lines().any(|line| {
        line.starts_with("attributes #")
            && line
                .split_once('{')
                .is_some_and(|(_, body)| body.trim_end().trim_end_matches('}').trim().is_empty())
    })
}

fn check(text: &str) {
    let Some(x86) = neverc_tables::target_by_name("x86_64") else {
        return;
    };
    let input_has_empty_group = has_empty_group(text);
    if let Ok(result) = materialize(text, x86, &MaterializeOptions::default()) {
        if result.report.plan_count() == 0 && result.report.validated.is_empty() {
            assert_eq!(result.text, text);
        }
        assert!(
            input_has_empty_group || !has_empty_group(&result.text),
            "{}",
            result.text
        );
    }
    let shuffled = MaterializeOptions {
        cc_all: true,
        shuffle: true,
        ..Default::default()
    };
    if let Ok(result) = materialize(text, x86, &shuffled) {
        assert!(
            input_has_empty_group || !has_empty_group(&result.text),
            "{}",
            result.text
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    check(text);
    if let Some(first) = data.first() {
        let depth = usize::from(*first) * 16;
        let (open, close) = match first % 3 {
            0 => ("{".repeat(depth), "}".repeat(depth)),
            1 => ("<{".repeat(depth), "}>".repeat(depth)),
            _ => ("[2 x ".repeat(depth), "]".repeat(depth)),
        };
        let deep = format!(
            "%Deep = type {open}i32{close}\ndefine void @deep({open}i8{close} %p) #0 {{\n  ret void\n}}\n{text}"
        );
        check(&deep);
    }
});
