//! `neverc.link.synthesize`: the global offset table. A GOT load that cannot be relaxed into a direct
//! address (plain `GOTPCREL`, an instruction other than `mov`/`call`/`jmp`, or a weak undefined target,
//! whose slot must hold 0) gets a slot in a synthetic `.got` atom, filled by an absolute relocation.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::context::{LinkContext, PhaseError};
use crate::graph::{
    Atom, AtomId, Content, Edge, EdgeKind, ObjectFormat, Origin, RelocationType, SymbolId, Synthetic, SyntheticRole,
    atom_flags,
};
use crate::x86_64::{relaxation, uses_got};

pub(crate) fn run(context: &mut LinkContext, phase: u16) -> Result<(), PhaseError> {
    if context.got_atom.is_some() {
        return Ok(());
    }
    let graph = &mut context.graph;
    // Slots in the order of first use; `index` holds the slot of each symbol already given one.
    let mut slots: Vec<SymbolId> = Vec::new();
    let mut index: FxHashMap<SymbolId, usize> = FxHashMap::default();
    for edge in &graph.edges {
        if !uses_got(edge) || !graph.atoms[edge.source.index()].is_live() || relaxation(graph, edge).is_some() {
            continue;
        }
        let Some(symbol) = edge.target_symbol.map(|symbol| graph.resolved(symbol)) else {
            continue;
        };
        index.entry(symbol).or_insert_with(|| {
            slots.push(symbol);
            slots.len() - 1
        });
    }
    if slots.is_empty() {
        return Ok(());
    }
    let origin = Origin {
        created_by_phase: Some(phase),
        ..Origin::default()
    };
    let atom = AtomId(graph.atoms.len() as u32);
    graph.atoms.push(Atom {
        section: None,
        name: ".got".into(),
        flags: atom_flags::LIVE | atom_flags::SYNTHETIC,
        alignment: 8,
        address: 0,
        file_offset: 0,
        content: Content::Owned(Arc::from(vec![0u8; slots.len() * 8])),
        zero_fill: 0,
        comdat: None,
        fold_leader: None,
        origin,
    });
    for (slot, symbol) in slots.iter().enumerate() {
        graph.edges.push(Edge {
            kind: EdgeKind::Relocation,
            source: atom,
            offset: slot as u64 * 8,
            relocation: RelocationType {
                format: ObjectFormat::Elf,
                raw: object::elf::R_X86_64_64,
            },
            width: 64,
            addend: 0,
            pc_relative: false,
            signed: false,
            target_symbol: Some(*symbol),
            target_atom: None,
            origin,
        });
        graph.synthetics.push(Synthetic {
            role: SyntheticRole::GotEntry(*symbol),
            section: None,
            atom: Some(atom),
            origin,
        });
    }
    graph.index_edges();
    context.set_got(slots, index);
    context.got_atom = Some(atom);
    Ok(())
}
