#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Reading on several threads builds the same graph, entity for entity, as reading one input after another.

use std::path::PathBuf;

use neverc_link::read::{graph_from_inputs, graph_from_inputs_in_parallel};
use neverc_test_support::build_fixture_programs;

#[test]
fn parallel_reading_equals_sequential_reading_on_every_fixture_program() {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("parallel-fixtures");
    build_fixture_programs(&out);
    let programs = std::fs::read_to_string(out.join("programs.txt")).unwrap();
    for program in programs.split_whitespace() {
        let dir = out.join(program);
        let inputs: Vec<(String, Vec<u8>)> = std::fs::read_to_string(dir.join("inputs.txt"))
            .unwrap()
            .split_whitespace()
            .map(|name| {
                (
                    dir.join(name).display().to_string(),
                    std::fs::read(dir.join(name)).unwrap(),
                )
            })
            .collect();
        let sequential = graph_from_inputs(inputs.clone()).unwrap();
        for workers in [1, 2, 3, 8] {
            let parallel = graph_from_inputs_in_parallel(inputs.clone(), workers).unwrap();
            assert_eq!(
                format!("{parallel:?}"),
                format!("{sequential:?}"),
                "{program} with {workers} workers"
            );
        }
        assert!(!sequential.symbols.is_empty() && !sequential.edges.is_empty());
    }
}
