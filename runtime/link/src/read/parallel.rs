//! Reading many inputs on all cores. Each input is read into a fragment of its own (a small graph whose ids
//! start at 0), by whichever worker takes it next; the fragments are then appended in input order, their
//! ids shifted, so the graph is the same entity for entity as reading the inputs one after another. The link's
//! target, which reading one after another takes from the first object, is taken from it before the workers
//! start, so every fragment is checked against it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::graph::{
    ArchiveId, AtomId, ComdatId, Content, InputId, InputKind, LinkGraph, LinkTarget, MemberId, SectionId, SymbolId,
};
use crate::read::object_file::target_named_by;
use crate::read::{ReadError, read_input};

/// Reads every input of `graph` (probed, not yet parsed) into it, using up to `workers` threads.
pub(crate) fn read_all_inputs(graph: &mut LinkGraph, phase: u16, workers: usize) -> Result<(), ReadError> {
    if matches!(graph.target, LinkTarget::FromFirstObject)
        && let Some(first) = graph.inputs.iter().find(|input| input.kind == InputKind::Object)
        && let Some(target) = first.data.get(first.object_range.clone()).and_then(target_named_by)
    {
        // What reading the first object would set; if it cannot, its fragment fails as it would have.
        graph.target = LinkTarget::Fixed {
            target,
            set_by: Some(first.logical_name.clone()),
        };
    }
    let count = graph.inputs.len();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<LinkGraph, ReadError>>>> = Mutex::new((0..count).map(|_| None).collect());
    let shared: &LinkGraph = graph;
    std::thread::scope(|scope| {
        for _ in 0..workers.clamp(1, count.max(1)) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= count {
                        break;
                    }
                    // The fragment holds only its input, as input 0.
                    let mut fragment = LinkGraph {
                        inputs: vec![shared.inputs[index].clone()],
                        target: shared.target.clone(),
                        skip_debug_relocations: shared.skip_debug_relocations,
                        ..LinkGraph::default()
                    };
                    let result = read_input(&mut fragment, InputId(0), phase).map(|()| fragment);
                    if let Ok(mut results) = results.lock()
                        && let Some(slot) = results.get_mut(index)
                    {
                        *slot = Some(result);
                    }
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_default();
    for (index, result) in results.into_iter().enumerate() {
        match result {
            Some(Ok(fragment)) => append_fragment(graph, fragment, InputId(index as u32)),
            Some(Err(error)) => return Err(error),
            None => {
                return Err(ReadError::new(
                    &graph.inputs[index].logical_name,
                    "a reader thread stopped before reading this input",
                ));
            }
        }
    }
    graph.index_edges();
    Ok(())
}

/// Appends what a fragment read for `input`, shifting every id by the graph's current counts.
fn append_fragment(graph: &mut LinkGraph, fragment: LinkGraph, input: InputId) {
    let sections = graph.sections.len() as u32;
    let atoms = graph.atoms.len() as u32;
    let symbols = graph.symbols.len() as u32;
    let comdats = graph.comdats.len() as u32;
    let archives = graph.archives.len() as u32;
    let members = graph.archive_members.len() as u32;
    let section = |id: SectionId| SectionId(id.0 + sections);
    let atom = |id: AtomId| AtomId(id.0 + atoms);
    let symbol = |id: SymbolId| SymbolId(id.0 + symbols);
    let comdat = |id: ComdatId| ComdatId(id.0 + comdats);
    let member = |id: MemberId| MemberId(id.0 + members);
    let shift_origin = |origin: &mut crate::graph::Origin| {
        origin.set_member(origin.member().map(member));
        origin.set_input(origin.input().map(|_| input));
    };

    if matches!(graph.target, LinkTarget::FromFirstObject) {
        graph.target = fragment.target;
    }
    if let Some(read) = fragment.inputs.first() {
        let entry = &mut graph.inputs[input.index()];
        entry.format = read.format;
        entry.machine = read.machine;
        entry.archive = read.archive.map(|id| ArchiveId(id.0 + archives));
    }
    graph.sections.extend(fragment.sections.into_iter().map(|mut entry| {
        entry.input = input;
        entry.atom = atom(entry.atom);
        entry.comdat = entry.comdat.map(comdat);
        shift_origin(&mut entry.origin);
        entry
    }));
    graph.atoms.extend(fragment.atoms.into_iter().map(|mut entry| {
        entry.section = entry.section.map(section);
        entry.comdat = entry.comdat.map(comdat);
        entry.fold_leader = entry.fold_leader.map(atom);
        if let Content::Input { input: read_from, .. } = &mut entry.content {
            *read_from = input;
        }
        shift_origin(&mut entry.origin);
        entry
    }));
    graph.symbols.extend(fragment.symbols.into_iter().map(|mut entry| {
        entry.atom = entry.atom.map(atom);
        entry.resolution = entry.resolution.map(symbol);
        shift_origin(&mut entry.origin);
        entry
    }));
    graph.edges.extend(fragment.edges.into_iter().map(|mut entry| {
        entry.source = atom(entry.source);
        entry.target_symbol = (entry.target_symbol.get().map(symbol)).into();
        entry.target_atom = (entry.target_atom.get().map(atom)).into();
        shift_origin(&mut entry.origin);
        entry
    }));
    graph.comdats.extend(fragment.comdats.into_iter().map(|mut entry| {
        entry.input = input;
        entry.sections = entry.sections.into_iter().map(section).collect();
        entry.selected = entry.selected.map(comdat);
        shift_origin(&mut entry.origin);
        entry
    }));
    graph.unwinds.extend(fragment.unwinds.into_iter().map(|mut entry| {
        entry.atom = entry.atom.map(atom);
        entry.table = atom(entry.table);
        entry.personality = entry.personality.map(symbol);
        shift_origin(&mut entry.origin);
        entry
    }));
    graph.archives.extend(fragment.archives.into_iter().map(|mut entry| {
        entry.input = input;
        entry.members = entry.members.start + members..entry.members.end + members;
        shift_origin(&mut entry.origin);
        entry
    }));
    graph
        .archive_members
        .extend(fragment.archive_members.into_iter().map(|mut entry| {
            entry.archive = ArchiveId(entry.archive.0 + archives);
            shift_origin(&mut entry.origin);
            entry
        }));
    graph
        .shared_libraries
        .extend(fragment.shared_libraries.into_iter().map(|mut entry| {
            entry.input = input;
            shift_origin(&mut entry.origin);
            entry
        }));
    graph
        .bitcode_modules
        .extend(fragment.bitcode_modules.into_iter().map(|mut entry| {
            entry.input = input;
            shift_origin(&mut entry.origin);
            entry
        }));
}
