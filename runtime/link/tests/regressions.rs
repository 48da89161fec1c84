#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Inputs that once broke a reader or layout (saved under `fuzz/regressions/link_inputs`) are read again:
//! each gives a graph or an error naming the input, never a panic, a hang or unbounded memory; a graph that
//! reads is laid out and relocated under a 1 MiB output limit, as the fuzz target does, and stays within it.

use neverc_link::lay_out_within;
use neverc_link::read::{extract_all_members, graph_from_inputs};
use neverc_test_support::repo;

#[test]
fn saved_fuzz_regressions_read_without_failing_badly() {
    let dir = repo().join("fuzz/regressions/link_inputs");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let data = std::fs::read(&path).unwrap();
        match graph_from_inputs(vec![(name.clone(), data)]) {
            Ok(mut graph) => match extract_all_members(&mut graph) {
                Err(error) => assert!(error.input.contains(&name), "{error}"),
                Ok(()) => {
                    const LIMIT: u64 = 1 << 20;
                    if let Ok(size) = lay_out_within(graph, LIMIT) {
                        assert!(size <= LIMIT, "{name}: a layout of {size} bytes");
                    }
                }
            },
            // A thin-archive member is named as `archive(member)`.
            Err(error) => assert!(error.names_input(&name), "{error}"),
        }
        count += 1;
    }
    assert!(count >= 2);
}
