//! Linker inputs: arbitrary bytes read as a file (probed: object, archive or anything else), then as the
//! only member of a GNU archive whose members are all extracted. Properties: no panic; an error names the
//! input (or, for a member, `archive(member)`); a graph that reads has every id in range. A graph that reads
//! is then laid out and relocated (symbol resolution through relocation), as a static executable and as a
//! dynamically linked PIE (a shared library input's definitions imported), under a 1 MiB output limit, so that
//! sizes, alignments and addresses derived from the input are checked too: they must give a layout within
//! the limit or an error, never a panic or an allocation past the limit. The same bytes are also split into an
//! object and a shared library (`read_pair`) linked as a dynamically linked PIE, so that the imports (PLT,
//! GOT, copies, thread-local variables) made from what the library defines are fuzzed too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neverc_link::graph::{AtomId, LinkGraph};
use neverc_link::output_kind::OutputKind;
use neverc_link::read::{ReadError, extract_all_members, graph_from_inputs};
use neverc_link::{lay_out_as, lay_out_within};

/// The output limit of the layout runs: small, so that the fuzzer cannot make the linker allocate gigabytes.
const OUTPUT_LIMIT: u64 = 1 << 20;

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

/// Lays out and relocates `graph` under [`OUTPUT_LIMIT`], as a static executable and as a dynamically
/// linked PIE (which imports what a shared library input defines); each laid-out file must respect the limit.
fn lay_out(graph: LinkGraph) {
    if let Ok(file_size) = lay_out_within(graph.clone(), OUTPUT_LIMIT) {
        assert!(
            file_size <= OUTPUT_LIMIT,
            "a layout of {file_size} bytes passed the limit"
        );
    }
    if let Ok(file_size) = lay_out_as(graph, OutputKind::Pie, OUTPUT_LIMIT) {
        assert!(
            file_size <= OUTPUT_LIMIT,
            "a PIE layout of {file_size} bytes passed the limit"
        );
    }
}

/// Reads `data` as input `name`, extracts every archive member, then lays the graph out.
fn read(name: &str, data: Vec<u8>) {
    match graph_from_inputs(vec![(name.to_string(), data)]) {
        Ok(mut graph) => {
            check_graph(&graph);
            match extract_all_members(&mut graph) {
                Ok(()) => {
                    check_graph(&graph);
                    lay_out(graph);
                }
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

/// An object and a shared library in one input: a little-endian `u32` (modulo the rest's length) says where
/// the object ends and the library starts. Both are read, and the graph is laid out as a dynamically linked
/// PIE, so that imports (PLT, GOT, copies, thread-local variables) are made from what the library defines.
fn read_pair(data: &[u8]) {
    let Some((split, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let at = u32::from_le_bytes(*split) as usize % (rest.len() + 1);
    let (object, library) = rest.split_at(at);
    let library_name = "/nonexistent-neverc-fuzz/libinput.so";
    let inputs = vec![
        (OBJECT.to_string(), object.to_vec()),
        (library_name.to_string(), library.to_vec()),
    ];
    match graph_from_inputs(inputs) {
        Ok(graph) => {
            check_graph(&graph);
            if let Ok(file_size) = lay_out_as(graph, OutputKind::Pie, OUTPUT_LIMIT) {
                assert!(
                    file_size <= OUTPUT_LIMIT,
                    "a PIE layout of {file_size} bytes passed the limit"
                );
            }
        }
        Err(error) => assert!(
            error.names_input(OBJECT) || error.names_input(library_name),
            "error `{error}` names neither input"
        ),
    }
}

fuzz_target!(|data: &[u8]| {
    // An object and a shared library, linked dynamically.
    read_pair(data);
    // As the file it says it is (an archive when it starts with `!<arch>`).
    read(OBJECT, data.to_vec());
    // As an archive member, so the member reader (and the archive's member data ranges) see it too.
    read(ARCHIVE, gnu_archive(data));
});
