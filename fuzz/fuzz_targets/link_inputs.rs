//! Linker inputs: arbitrary bytes read as a file (probed: object, archive or anything else), then as the
//! only member of a GNU archive whose members are all extracted. Properties: no panic; an error names the
//! input (or, for a member, `archive(member)`); a graph that reads has every id in range.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neverc_link::graph::{AtomId, LinkGraph};
use neverc_link::read::{ReadError, extract_all_members, graph_from_inputs};

/// Input names live in a directory that does not exist, so a thin archive's relative member paths
/// resolve to nothing instead of to the fuzzer's working directory.
const OBJECT: &str = "/nonexistent-neverc-fuzz/input.o";
const ARCHIVE: &str = "/nonexistent-neverc-fuzz/libinput.a";

fn check_error(name: &str, error: &ReadError) {
    assert!(error.names_input(name), "error `{error}` does not name input {name}");
    assert!(!error.message.is_empty(), "error for {name} has no message");
}

fn check_graph(graph: &LinkGraph) {
    if let Some(dangling) = graph.dangling_id() {
        panic!("{dangling}");
    }
    for atom in &graph.atoms {
        let _ = graph.atom_bytes(atom).len();
        let _ = atom.size();
    }
    let mut edges = 0;
    for atom in 0..graph.atoms.len() {
        edges += graph.edges_of(AtomId(atom as u32)).count();
    }
    assert_eq!(edges, graph.edges.len());
}

/// Reads `data` as input `name`, then extracts every archive member.
fn read(name: &str, data: Vec<u8>) {
    match graph_from_inputs(vec![(name.to_string(), data)]) {
        Ok(mut graph) => {
            check_graph(&graph);
            match extract_all_members(&mut graph) {
                Ok(()) => check_graph(&graph),
                Err(error) => check_error(name, &error),
            }
        }
        Err(error) => check_error(name, &error),
    }
}

/// A GNU archive (no symbol index) with `data` as its only member.
fn gnu_archive(data: &[u8]) -> Vec<u8> {
    let mut archive = b"!<arch>\n".to_vec();
    let header = format!(
        "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
        "input.o/",
        0,
        0,
        0,
        644,
        data.len()
    );
    archive.extend_from_slice(header.as_bytes());
    archive.extend_from_slice(data);
    if data.len() % 2 == 1 {
        archive.push(b'\n');
    }
    archive
}

fuzz_target!(|data: &[u8]| {
    // As the file it says it is (an archive when it starts with `!<arch>`).
    read(OBJECT, data.to_vec());
    // As an archive member, so the member reader (and the archive's member data ranges) see it too.
    read(ARCHIVE, gnu_archive(data));
});
