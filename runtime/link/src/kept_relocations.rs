//! `--emit-relocs`: the relocations a linked executable keeps, as ld.bfd writes them. Every relocation of a
//! placed input section is kept (those of sections the link dropped, by `--gc-sections`, COMDAT selection or
//! identical code folding, are not; nor does the linker's own code and data, such as GOT slots, PLT entries
//! and thunks, get any), at its final address (its offset, in an unallocated section), with:
//!
//! - the symbol it names, when that is a named symbol (a global one through its resolution), with the same
//!   addend; the symbol table then lists it whatever its name or type, as ld.bfd lists it (a weak reference
//!   nothing defines as an undefined symbol);
//! - a section symbol's relocation (and an atom's) against the output section's section symbol, its addend
//!   the distance of `S + A` from the section's start: ld.bfd's "addend increased by the input section's
//!   offset in the output section", and for a merged string, its offset where the merge put it;
//! - symbol 0 and `S + A` as the addend when nothing in the output names the target (a section the link
//!   dropped), which means the same value.
//!
//! The type is the input's, except where the link rewrote the instruction: a GOT load relaxed to a direct
//! reference becomes the target's direct PC-relative 32-bit relocation (`R_X86_64_PC32`), at the field where
//! the relaxed instruction has it. ld.bfd does the same, but it makes `mov $imm` (`R_X86_64_32S`) of a `mov`
//! in a static executable, where neverc-spec makes `lea` (`R_X86_64_PC32`), and also relaxes `test` and the
//! arithmetic instructions, which neverc-spec leaves loading through the GOT. TLS sequences relaxed to
//! local-exec keep their types (`R_X86_64_TLSGD`, `R_X86_64_GOTTPOFF`, the call of `__tls_get_addr`), as
//! ld.bfd keeps them.

use neverc_tables::{RelocationBase, RelocationKind};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::address::{merged_location, placed_atom, target_value};
use crate::context::{Layout, LinkContext};
use crate::graph::{AtomId, Edge, EdgeKind, SymbolId, SymbolType, atom_flags};

/// What a kept relocation refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeptTarget {
    /// A named symbol (resolved): listed in the symbol table.
    Symbol(SymbolId),
    /// The section symbol of an output section (an index into the layout's sections).
    Section(usize),
    /// Symbol 0: the addend is the value.
    Nothing,
}

/// One kept relocation, before symbols have their indices in the symbol table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeptRelocation {
    pub(crate) offset: u64,
    pub(crate) kind: u32,
    pub(crate) target: KeptTarget,
    pub(crate) addend: i64,
    /// `S + A`, for a symbol that the symbol table turns out not to list (then symbol 0 with this addend).
    pub(crate) value: Option<i128>,
}

/// The kept relocations of every layout section (in layout order), and the symbols they name.
pub(crate) fn collect(context: &LinkContext, layout: &Layout) -> (Vec<Vec<KeptRelocation>>, FxHashSet<SymbolId>) {
    let mut section_of_atom: FxHashMap<AtomId, usize> = FxHashMap::default();
    for (index, section) in layout.sections.iter().enumerate() {
        for atom in &section.atoms {
            section_of_atom.insert(*atom, index);
        }
    }
    let graph = &context.graph;
    let mut symbols = FxHashSet::default();
    let mut kept = Vec::with_capacity(layout.sections.len());
    for section in &layout.sections {
        let mut relocations = Vec::new();
        for &atom in &section.atoms {
            let entry = &graph.atoms[atom.index()];
            if !entry.is_live() || entry.flags & (atom_flags::SYNTHETIC | atom_flags::FOLDED) != 0 {
                continue;
            }
            for (_, edge) in graph.edges_of(atom) {
                if edge.kind != EdgeKind::Relocation {
                    continue;
                }
                let relocation = kept_relocation(context, edge, entry.address, &section_of_atom, layout);
                if let KeptTarget::Symbol(symbol) = relocation.target {
                    symbols.insert(symbol);
                }
                relocations.push(relocation);
            }
        }
        kept.push(relocations);
    }
    (kept, symbols)
}

/// The kept form of `edge`, of an atom placed at `atom_address`.
fn kept_relocation(
    context: &LinkContext,
    edge: &Edge,
    atom_address: u64,
    section_of_atom: &FxHashMap<AtomId, usize>,
    layout: &Layout,
) -> KeptRelocation {
    let graph = &context.graph;
    let value = target_value(context, edge);
    let mut relocation = KeptRelocation {
        offset: atom_address.wrapping_add(edge.offset),
        kind: edge.relocation.raw,
        target: KeptTarget::Nothing,
        addend: edge.addend,
        value,
    };
    if let Some((moved_back, bias, direct)) = relaxed_got_load(context, edge) {
        relocation.offset = relocation.offset.wrapping_sub(moved_back);
        relocation.addend = edge.addend.wrapping_add(bias).wrapping_sub(moved_back as i64);
        relocation.kind = direct;
    }
    // A section symbol (or an atom) becomes the output section's section symbol.
    let in_section = |atom: AtomId, offset: i64| -> Option<(usize, i64)> {
        let merged = u64::try_from(offset)
            .ok()
            .and_then(|offset| merged_location(context, atom, offset))
            .map(|(merged, _)| merged);
        let placed = merged.or_else(|| placed_atom(context, atom))?;
        let index = *section_of_atom.get(&placed)?;
        let value = i64::try_from(value?).ok()?;
        Some((index, value.wrapping_sub(layout.sections[index].address as i64)))
    };
    let section_target = match (edge.target_symbol.get(), edge.target_atom.get()) {
        (Some(symbol), _) => {
            let resolved = graph.resolved(symbol);
            let entry = &graph.symbols[resolved.index()];
            match (entry.symbol_type, entry.atom) {
                (SymbolType::Section, Some(atom)) => in_section(atom, edge.addend),
                (SymbolType::Section, None) => None,
                _ => {
                    relocation.target = KeptTarget::Symbol(resolved);
                    return relocation;
                }
            }
        }
        (None, Some(atom)) => in_section(atom, edge.addend),
        (None, None) => return relocation,
    };
    match section_target {
        Some((section, addend)) => {
            relocation.target = KeptTarget::Section(section);
            relocation.addend = addend;
        }
        None => relocation.addend = nothing_addend(&relocation),
    }
    relocation
}

/// The addend of a relocation against symbol 0: its value `S + A` (the addend itself when it has none).
pub(crate) fn nothing_addend(relocation: &KeptRelocation) -> i64 {
    relocation
        .value
        .and_then(|value| i64::try_from(value).ok())
        .unwrap_or(relocation.addend)
}

/// For a GOT load the link relaxes: how many bytes its field moved back, what relocation adds to `S + A - P`
/// for it, and the number of the target's direct PC-relative 32-bit relocation that the relaxed field is.
fn relaxed_got_load(context: &LinkContext, edge: &Edge) -> Option<(u64, i64, u32)> {
    let graph = &context.graph;
    if graph.relocation_kind(edge) != Some(RelocationKind::GotEntryRelaxable) {
        return None;
    }
    let relaxation = crate::synth::got::relaxation(&context.options, graph, edge)?;
    // The instruction is rewritten in a copy of the bytes around the field, as relocation rewrites it.
    let bytes = graph.atom_bytes(&graph.atoms[edge.source.index()]);
    let at = usize::try_from(edge.offset).ok()?;
    let start = at.checked_sub(2)?;
    let mut window = bytes.get(start..(at + 4).min(bytes.len()))?.to_vec();
    let (field, bias) = (graph.arch().relax_got_load)(&mut window, 2, relaxation).ok()?;
    let moved_back = 2u64.checked_sub(field as u64)?;
    let direct = graph.declared_relocation(RelocationKind::Symbol, RelocationBase::Place, 32)?;
    Some((moved_back, i64::try_from(bias).ok()?, direct))
}
