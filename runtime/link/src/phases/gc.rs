//! `neverc.link.gc`: which atoms are live. Without `--gc-sections` every allocated atom of a kept section
//! is. With it, liveness spreads along edges from the roots: the entry symbol, what a dynamically linked
//! output exports (every global definition of a shared library), `.init` and `.fini`, the
//! init/fini arrays, retained sections, sections named by a referenced `__start_X`/`__stop_X`, and unwind
//! tables (whose own edges keep nothing alive: a function's unwind record does not make the function live).
//!
//! Sections that are not allocated but hold content the output keeps (debugging information, `.comment`,
//! notes for tools) are live either way, as GNU ld keeps them, unless `-S` or `-s` strips debugging
//! information; they keep nothing alive themselves (what their relocations name may be collected, and then
//! reads as the tombstone value relocation gives it).

use rustc_hash::FxHashMap;

use crate::context::{LinkContext, PhaseError, Strip};
use crate::graph::{AtomId, LinkGraph, SectionKind, atom_flags, section_flags};

pub(crate) fn run(context: &mut LinkContext, _phase: u16) -> Result<(), PhaseError> {
    let gc = context.options.gc_sections;
    // What a dynamically linked output exports is kept (every global definition of a shared library).
    let exported: Vec<AtomId> = if gc && context.options.output_kind.is_dynamic() {
        crate::synth::imports::exports(context)
            .into_iter()
            .filter_map(|symbol| context.graph.symbols[symbol.index()].atom)
            .collect()
    } else {
        Vec::new()
    };
    let graph = &mut context.graph;
    let count = graph.atoms.len();
    let placeable: Vec<bool> = (0..count)
        .map(|index| is_placeable(graph, AtomId(index as u32)))
        .collect();
    let mut live = vec![false; count];
    if !gc {
        live.clone_from(&placeable);
    } else {
        let mut work: Vec<AtomId> = Vec::new();
        let mark = |atom: AtomId, live: &mut Vec<bool>, work: &mut Vec<AtomId>| {
            if placeable.get(atom.index()).copied().unwrap_or(false) && !live[atom.index()] {
                live[atom.index()] = true;
                work.push(atom);
            }
        };
        if let Some(entry) = context.global_symbols.get(&context.options.entry)
            && let Some(atom) = graph.symbols[entry.index()].atom
        {
            mark(atom, &mut live, &mut work);
        }
        for atom in exported {
            mark(atom, &mut live, &mut work);
        }
        // `-u`, `--require-defined` and `--defsym` keep what they name, as GNU ld's `EXTERN` does.
        for name in context.options.symbols.references() {
            if let Some(symbol) = context.global_symbols.get(name)
                && let Some(atom) = graph.symbols[symbol.index()].atom
            {
                mark(atom, &mut live, &mut work);
            }
        }
        let started: Vec<String> = context
            .global_symbols
            .keys()
            .filter_map(|name| name.strip_prefix("__start_").or_else(|| name.strip_prefix("__stop_")))
            .map(str::to_string)
            .collect();
        for index in 0..count {
            let atom = AtomId(index as u32);
            if is_root(graph, atom, &started) {
                mark(atom, &mut live, &mut work);
            }
        }
        if let Some(got) = context.synthesized.got_atom {
            mark(got, &mut live, &mut work);
        }
        let (records_of, record_targets) = unwind_record_targets(graph);
        for target in &records_of.common {
            mark(*target, &mut live, &mut work);
        }
        while let Some(atom) = work.pop() {
            // A live function's unwind records keep what they refer to: its exception table (the LSDA).
            if let Some(records) = records_of.by_function.get(&atom) {
                for record in records {
                    for target in &record_targets[*record] {
                        mark(*target, &mut live, &mut work);
                    }
                }
            }
            if graph.atoms[atom.index()].flags & atom_flags::UNWIND != 0 {
                continue;
            }
            let targets: Vec<AtomId> = graph
                .edges_of(atom)
                .filter_map(|(_, edge)| graph.edge_target_atom(edge))
                .collect();
            for target in targets {
                mark(target, &mut live, &mut work);
            }
        }
    }
    if context.options.print_gc_sections {
        let removed: Vec<String> = (0..count)
            .filter(|index| placeable[*index] && !live[*index])
            .filter_map(|index| {
                let atom = &graph.atoms[index];
                // Empty sections are not worth a line (GNU ld does not list them either).
                let section = graph
                    .sections
                    .get(atom.section?.index())
                    .filter(|section| section.size > 0)?;
                Some(format!(
                    "removing unused section '{}' in file '{}'",
                    section.name,
                    graph.input_name(atom.origin.input())
                ))
            })
            .collect();
        context.notes.extend(removed);
    }
    let strip_debug = context.options.strip != Strip::Nothing;
    for (index, live) in live.iter_mut().enumerate() {
        if !*live && is_kept_unallocated(graph, AtomId(index as u32), strip_debug) {
            *live = true;
        }
    }
    for (atom, live) in graph.atoms.iter_mut().zip(live) {
        if live {
            atom.flags |= atom_flags::LIVE;
        } else {
            atom.flags &= !atom_flags::LIVE;
        }
    }
    Ok(())
}

/// Unwind records (FDEs) by the function they describe, and what the rest of the tables (the CIEs) refer to:
/// personality routines, which stay whenever unwind tables do.
#[derive(Default)]
struct UnwindRecords {
    by_function: FxHashMap<AtomId, Vec<usize>>,
    common: Vec<AtomId>,
}

/// For every unwind record, the atoms its relocations refer to (found by offset within its table, with one
/// sort of each table's edges), and the records by function.
fn unwind_record_targets(graph: &LinkGraph) -> (UnwindRecords, Vec<Vec<AtomId>>) {
    let mut records = UnwindRecords::default();
    let mut tables: FxHashMap<AtomId, Vec<(u64, AtomId)>> = FxHashMap::default();
    for unwind in &graph.unwinds {
        tables.entry(unwind.table).or_insert_with(|| {
            let mut edges: Vec<(u64, AtomId)> = graph
                .edges_of(unwind.table)
                .filter_map(|(_, edge)| Some((edge.offset, graph.edge_target_atom(edge)?)))
                .collect();
            edges.sort_unstable_by_key(|(offset, _)| *offset);
            edges
        });
    }
    let mut covered: FxHashMap<AtomId, Vec<std::ops::Range<u64>>> = FxHashMap::default();
    for unwind in &graph.unwinds {
        covered.entry(unwind.table).or_default().push(unwind.range.clone());
    }
    for (table, edges) in &tables {
        let mut ranges = covered.remove(table).unwrap_or_default();
        ranges.sort_unstable_by_key(|range| range.start);
        for (offset, target) in edges {
            let record = ranges.partition_point(|range| range.start <= *offset);
            let inside = record > 0 && ranges[record - 1].contains(offset);
            if !inside {
                records.common.push(*target);
            }
        }
    }
    let targets = graph
        .unwinds
        .iter()
        .enumerate()
        .map(|(index, unwind)| {
            if let Some(function) = unwind.atom {
                records.by_function.entry(function).or_default().push(index);
            }
            let edges = &tables[&unwind.table];
            let first = edges.partition_point(|(offset, _)| *offset < unwind.range.start);
            edges[first..]
                .iter()
                .take_while(|(offset, _)| *offset < unwind.range.end)
                .map(|(_, target)| *target)
                .filter(|target| Some(*target) != unwind.atom)
                .collect()
        })
        .collect();
    (records, targets)
}

/// Allocated, not discarded by COMDAT selection, and with a home in the output. A `.gnu.warning` section
/// is a message for the linker (resolution reports it), never part of the image, even when it is allocated.
fn is_placeable(graph: &LinkGraph, atom: AtomId) -> bool {
    let entry = &graph.atoms[atom.index()];
    let allocated = match entry.section {
        Some(section) => {
            let section = &graph.sections[section.index()];
            section.flags & section_flags::ALLOCATED != 0 && !section.name.starts_with(".gnu.warning")
        }
        None => true,
    };
    allocated && !graph.is_discarded(atom)
}

/// Whether `atom` is a section that is not allocated and whose content the output keeps, as GNU ld keeps
/// orphan sections: debugging information (unless `strip_debug`), `.comment` and the like. Markers and what
/// only the linker reads are not kept: `.note.GNU-stack`, `.gnu.warning*`, LTO and address-significance
/// tables, and sections of groups that lost COMDAT selection.
fn is_kept_unallocated(graph: &LinkGraph, atom: AtomId, strip_debug: bool) -> bool {
    let entry = &graph.atoms[atom.index()];
    let Some(section) = entry.section else {
        return false;
    };
    let section = &graph.sections[section.index()];
    let name = section.name.as_str();
    let linker_only = name == ".note.GNU-stack"
        || name.starts_with(".gnu.warning")
        || name.starts_with(".gnu.lto_")
        || name.starts_with(".llvm")
        || name == ".gnu_debuglink";
    section.flags & section_flags::ALLOCATED == 0
        && matches!(
            section.kind,
            SectionKind::Debug | SectionKind::Other | SectionKind::Note
        )
        && !linker_only
        && !(strip_debug && crate::sections::is_debugging(name))
        && !graph.is_discarded(atom)
}

fn is_root(graph: &LinkGraph, atom: AtomId, started: &[String]) -> bool {
    let entry = &graph.atoms[atom.index()];
    let Some(section) = entry.section else {
        return false;
    };
    let section = &graph.sections[section.index()];
    let name = section.name.as_str();
    // GNU ld's default script keeps these (`KEEP`): `.init` and `.fini` are the prologue and epilogue
    // fragments crti.o and crtn.o wrap around everything between them, which nothing refers to.
    matches!(name, ".init" | ".fini" | ".jcr")
        || name.starts_with(".init_array")
        || name.starts_with(".fini_array")
        || name.starts_with(".preinit_array")
        || name.starts_with(".ctors")
        || name.starts_with(".dtors")
        || name.starts_with(".note")
        || section.kind == SectionKind::Unwind
        || section.flags & section_flags::RETAIN != 0
        || started.iter().any(|started| started == name)
}
