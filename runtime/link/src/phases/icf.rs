//! `neverc.link.icf`: identical code folding (`--icf=all`). Executable, read-only atoms whose address is not
//! significant (nothing but direct calls refers to them) fold into one leader when their bytes and their
//! relocations are equal, relocation targets compared through the folding found so far, until nothing
//! changes. Sections whose identity matters never fold, as ld.lld decides it (`crate::sections::keeps_identity`):
//! the pieces of `.init` and `.fini` (`crtn.o`'s identical epilogues of both), constructor and destructor
//! arrays, and sections named like C identifiers, which a program may walk between `__start_` and `__stop_`.

use rustc_hash::FxHashMap;

use neverc_tables::RelocationKind;

use crate::context::{IcfMode, LinkContext, PhaseError};
use crate::graph::{AtomId, atom_flags, section_flags};
use crate::sections::keeps_identity;

/// What two atoms must share to fold: their bytes and their relocations (offset, type, addend, target
/// leader, target symbol value).
type FoldKey = (Vec<u8>, Vec<(u64, u32, i64, u32, u64)>);

pub(crate) fn run(context: &mut LinkContext, _phase: u16) -> Result<(), PhaseError> {
    if context.options.icf == IcfMode::None {
        return Ok(());
    }
    let graph = &mut context.graph;
    let count = graph.atoms.len();
    let mut significant = vec![false; count];
    for edge in &graph.edges {
        // Calls, and unwind records describing a function, do not take its address.
        let source = &graph.atoms[edge.source.index()];
        if graph.relocation_kind(edge) == Some(RelocationKind::Branch)
            || !source.is_live()
            || source.flags & atom_flags::UNWIND != 0
        {
            continue;
        }
        if let Some(target) = graph.edge_target_atom(edge) {
            significant[target.index()] = true;
        }
    }
    if let Some(entry) = context.global_symbols.get(&context.options.entry)
        && let Some(atom) = graph.symbols[entry.index()].atom
    {
        significant[atom.index()] = true;
    }
    let candidates: Vec<AtomId> = (0..count as u32)
        .map(AtomId)
        .filter(|atom| {
            let entry = &graph.atoms[atom.index()];
            entry.is_live()
                && !significant[atom.index()]
                && entry.section.is_some_and(|section| {
                    let section = &graph.sections[section.index()];
                    let flags = section.flags;
                    flags & section_flags::ALLOCATED != 0
                        && flags & section_flags::EXECUTABLE != 0
                        && flags & section_flags::WRITABLE == 0
                        && !keeps_identity(&section.name)
                })
        })
        .collect();
    let mut leader: Vec<AtomId> = (0..count as u32).map(AtomId).collect();
    for _round in 0..16 {
        let mut groups: FxHashMap<FoldKey, AtomId> = FxHashMap::default();
        let mut changed = false;
        for atom in &candidates {
            let bytes = graph.atom_bytes(&graph.atoms[atom.index()]).to_vec();
            let relocations = graph
                .edges_of(*atom)
                .map(|(_, edge)| {
                    let target = graph
                        .edge_target_atom(edge)
                        .map_or(u32::MAX, |target| leader[target.index()].0);
                    let value = edge
                        .target_symbol
                        .get()
                        .map(|symbol| graph.symbols[graph.resolved(symbol).index()].value)
                        .unwrap_or(0);
                    (edge.offset, edge.relocation.raw, edge.addend, target, value)
                })
                .collect();
            let first = *groups.entry((bytes, relocations)).or_insert(*atom);
            if leader[atom.index()] != first {
                leader[atom.index()] = first;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for atom in candidates {
        let first = leader[atom.index()];
        if first != atom {
            let entry = &mut graph.atoms[atom.index()];
            entry.fold_leader = Some(first);
            entry.flags |= atom_flags::FOLDED;
        }
    }
    Ok(())
}
