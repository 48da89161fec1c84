//! IR signatures (`--sig`): never panic; errors point inside the input; the standard ABI assigns any
//! parsed signature without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neverc_cc::layout::TypeTable;
use neverc_cc::signature::Signature;
use neverc_cc::standard_abi::standard_assignments;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Signature::parse(text) {
        Ok(signature) => {
            for target in neverc_tables::BUNDLED_TARGETS {
                let _ = standard_assignments(target, &signature, &TypeTable::new());
            }
        }
        Err(error) => assert!(
            error.span.start <= error.span.end && error.span.end <= text.len(),
            "{error:?}"
        ),
    }
});
