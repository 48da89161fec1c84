//! Where things are in the laid-out output: the address of an atom (through folding), of a symbol (an
//! indirect function's PLT entry, a string merged into another atom), and of what an edge refers to (`S + A`).
//! Asked by layout (the entry point), relocation, thunk placement and emission alike, once layout has
//! assigned atom addresses.

use crate::context::LinkContext;
use crate::graph::{AtomId, Definition, Edge, LinkGraph, SymbolId, SymbolType, atom_flags};
use crate::synth::Synthesized;

/// What addresses are computed from: the graph (placed atoms, resolved symbols) and what synthesis made (PLT
/// entries, merged strings). The link context has both; so has the view relocating threads share.
pub(crate) trait Addresses {
    fn graph(&self) -> &LinkGraph;
    fn synthesized(&self) -> &Synthesized;
}

impl Addresses for LinkContext {
    fn graph(&self) -> &LinkGraph {
        &self.graph
    }

    fn synthesized(&self) -> &Synthesized {
        &self.synthesized
    }
}

/// The address of an atom in the output (through folding).
pub(crate) fn atom_address(context: &impl Addresses, atom: AtomId) -> u64 {
    // A section nothing placed is at 0 (the tombstone of what debugging information says about code that is
    // not in the output).
    placed_atom(context, atom).map_or(0, |placed| context.graph().atoms[placed.index()].address)
}

/// The atom whose place in the output `atom` has: itself, the atom it was folded into, or, for a discarded
/// COMDAT copy, its kept copy; `None` for an atom that is not in the output.
pub(crate) fn placed_atom(context: &impl Addresses, atom: AtomId) -> Option<AtomId> {
    let graph = &context.graph();
    let entry = &graph.atoms[atom.index()];
    match entry.fold_leader {
        Some(leader) if entry.flags & atom_flags::FOLDED != 0 => Some(leader),
        _ if !entry.is_live() => graph.kept_copy(atom).filter(|kept| graph.atoms[kept.index()].is_live()),
        _ => Some(atom),
    }
}

/// The address a symbol stands for (0 for a weak undefined one).
pub(crate) fn symbol_address(context: &impl Addresses, symbol: SymbolId) -> Option<u64> {
    let resolved = context.graph().resolved(symbol);
    // An indirect function is its PLT entry, wherever it is referred to.
    if let Some(iplt) = &context.synthesized().iplt
        && let Some(entry) = iplt.entries.get(&resolved)
    {
        return atom_address(context, iplt.atom).checked_add(u64::from(*entry) * iplt.entry_size);
    }
    // An imported function called from the output is its PLT entry (a shared library's own interposable
    // function is its definition; only its calls go through its PLT entry: `plt_entry`).
    if matches!(
        context.graph().symbols[resolved.index()].definition,
        Definition::Shared | Definition::Undefined
    ) && let Some(plt) = context
        .synthesized()
        .dynamic_symbols
        .as_ref()
        .and_then(|symbols| symbols.plt.as_ref())
        && let Some(offset) = plt.entry_offset(resolved)
    {
        return atom_address(context, plt.atom).checked_add(offset);
    }
    let symbol = &context.graph().symbols[resolved.index()];
    match (symbol.definition, symbol.atom) {
        (Definition::Undefined, _) => Some(0),
        (_, Some(atom)) => match merged_location(context, atom, symbol.value) {
            Some((merged, offset)) => atom_address(context, merged).checked_add(offset),
            None => atom_address(context, atom).checked_add(symbol.value),
        },
        (Definition::Absolute, None) => Some(symbol.value),
        _ => None,
    }
}

/// The PLT entry of `symbol` (resolved), when the output has one for it.
pub(crate) fn plt_entry(context: &impl Addresses, symbol: SymbolId) -> Option<u64> {
    let plt = context.synthesized().dynamic_symbols.as_ref()?.plt.as_ref()?;
    atom_address(context, plt.atom).checked_add(plt.entry_offset(symbol)?)
}

/// `S + A` of an edge: the target's address plus the addend (a reference into merged strings through a
/// section symbol finds its string by the addend).
pub(crate) fn target_value(context: &impl Addresses, edge: &Edge) -> Option<i128> {
    let addend = i128::from(edge.addend);
    if let Some(symbol) = edge.target_symbol.get() {
        let resolved = &context.graph().symbols[context.graph().resolved(symbol).index()];
        if resolved.symbol_type == SymbolType::Section
            && let Some(atom) = resolved.atom
            && let Some(offset) = u64::try_from(edge.addend).ok()
            && let Some((merged, at)) = merged_location(context, atom, offset)
        {
            return Some(i128::from(atom_address(context, merged)) + i128::from(at));
        }
        return symbol_address(context, symbol).map(|address| i128::from(address) + addend);
    }
    let atom = edge.target_atom.get()?;
    if let Some(offset) = u64::try_from(edge.addend).ok()
        && let Some((merged, at)) = merged_location(context, atom, offset)
    {
        return Some(i128::from(atom_address(context, merged)) + i128::from(at));
    }
    Some(i128::from(atom_address(context, atom)) + addend)
}

/// The merged-string atom and offset that hold byte `offset` of mergeable atom `atom`.
pub(crate) fn merged_location(context: &impl Addresses, atom: AtomId, offset: u64) -> Option<(AtomId, u64)> {
    let merged_strings = &context.synthesized().merged_strings;
    let target = *merged_strings.target.get(&atom)?;
    let pieces = merged_strings.pieces.get(&atom)?;
    let index = pieces.partition_point(|(start, _)| *start <= offset).checked_sub(1)?;
    let (start, at) = pieces[index];
    Some((target, at.checked_add(offset - start)?))
}

/// The atom and offset an edge's target labels (a symbol's definition, or a section and offset).
pub(crate) fn label_location(
    graph: &crate::graph::LinkGraph,
    edge: &crate::graph::Edge,
) -> Option<(crate::graph::AtomId, u64)> {
    match edge.target_symbol.get() {
        Some(symbol) => {
            let symbol = &graph.symbols[graph.resolved(symbol).index()];
            let offset = match symbol.symbol_type {
                crate::graph::SymbolType::Section => symbol.value.checked_add_signed(edge.addend)?,
                _ => symbol.value,
            };
            Some((symbol.atom?, offset))
        }
        None => Some((edge.target_atom.get()?, u64::try_from(edge.addend).ok()?)),
    }
}
