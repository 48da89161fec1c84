//! Relocatable output (`-r`, the builtin `object_merge` phase): arbitrary bytes read as an object, and, when
//! the link's readers accept it, merged with a second copy of itself (so that every global is defined twice
//! and every COMDAT group has a copy to drop) and alone. Properties: no panic; an error is a phase error with
//! a message; a merged object stays within the output limit and is itself an input the readers accept (what
//! `-r` writes, a later link reads).
#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use neverc_link::context::LinkOptions;
use neverc_link::merge_relocatable;
use neverc_link::read::graph_from_inputs;

/// The output limit of the merges: small, so that the fuzzer cannot make the linker allocate gigabytes.
const OUTPUT_LIMIT: u64 = 1 << 20;

fn options() -> LinkOptions {
    let mut options = LinkOptions::new(Vec::new(), PathBuf::from("/nonexistent-neverc-fuzz/merged.o"));
    options.max_output_size = OUTPUT_LIMIT;
    options.symbols.allow_multiple_definition = true;
    options
}

fn merge(inputs: Vec<(String, Vec<u8>)>) {
    let Ok(graph) = graph_from_inputs(inputs) else {
        return;
    };
    match merge_relocatable(graph, options()) {
        Ok(merged) => {
            assert!(
                merged.len() as u64 <= OUTPUT_LIMIT,
                "a merged object of {} bytes",
                merged.len()
            );
            if let Err(error) = graph_from_inputs(vec![("merged.o".to_string(), merged)]) {
                panic!("the merged object does not read back: {error}");
            }
        }
        Err(error) => assert!(!error.message.is_empty(), "an error without a message"),
    }
}

fuzz_target!(|data: &[u8]| {
    merge(vec![("/nonexistent-neverc-fuzz/input.o".to_string(), data.to_vec())]);
    merge(vec![
        ("/nonexistent-neverc-fuzz/a.o".to_string(), data.to_vec()),
        ("/nonexistent-neverc-fuzz/b.o".to_string(), data.to_vec()),
    ]);
});
