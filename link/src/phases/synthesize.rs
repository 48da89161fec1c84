//! `neverc.link.synthesize`: the global offset table and the PLT of indirect functions.
//!
//! A GOT load that cannot be relaxed into a direct address (plain `GOTPCREL`, an instruction other than
//! `mov`/`call`/`jmp`, or a weak undefined target, whose slot must hold 0) gets a slot in a synthetic `.got`
//! atom, filled by an absolute relocation.
//!
//! An indirect function (`STT_GNU_IFUNC`) that a live atom refers to gets, as ld.bfd makes them in a static
//! executable, a 16-byte entry in `.plt` (x86-64 `jmp *slot(%rip)`; AArch64 `adrp x16, slot; ldr x17,
//! [x16, :lo12:slot]; add x16, x16, :lo12:slot; br x17`), a slot in `.got.plt`, and an `IRELATIVE`
//! relocation in `.rela.plt` (slot, resolver) that the C library applies at start-up between
//! `__rela_iplt_start` and `__rela_iplt_end`. Every reference to the function then means its PLT entry, so
//! all of them agree on its address.

use rustc_hash::FxHashMap;

use neverc_tables::{RelocationBase, RelocationKind};

use crate::context::{LinkContext, PhaseError};
use crate::graph::{
    Atom, AtomId, Edge, EdgeKind, LinkGraph, ObjectFormat, Origin, RelocationType, SymbolId, SymbolType, Synthetic,
    SyntheticRole,
};
use crate::phases::LinkPhase;

pub(crate) fn run(context: &mut LinkContext, phase: u16) -> Result<(), PhaseError> {
    synthesize_iplt(context, phase)?;
    synthesize_got(context, phase)
}

fn synthesize_iplt(context: &mut LinkContext, phase: u16) -> Result<(), PhaseError> {
    if context.iplt.is_some() {
        return Ok(());
    }
    let graph = &mut context.graph;
    let mut functions: Vec<SymbolId> = Vec::new();
    let mut index: FxHashMap<SymbolId, u32> = FxHashMap::default();
    // The entries are made in link (command-line) order of their first references, as layout orders the
    // code (so the table does not depend on when an input was read: an object LTO generated is read last).
    let order = crate::phases::layout::command_line_order(graph);
    let mut references: Vec<((u32, u32), usize, SymbolId)> = Vec::new();
    for (position, edge) in graph.edges.iter().enumerate() {
        let source = &graph.atoms[edge.source.index()];
        if !source.is_live() {
            continue;
        }
        let Some(symbol) = edge.target_symbol.map(|symbol| graph.resolved(symbol)) else {
            continue;
        };
        let entry = &graph.symbols[symbol.index()];
        if entry.symbol_type != SymbolType::Ifunc || entry.atom.is_none() {
            continue;
        }
        let place = source.origin.input.map_or((u32::MAX, 0), |input| order[input.index()]);
        references.push((place, position, symbol));
    }
    references.sort_unstable();
    for (_, _, symbol) in references {
        index.entry(symbol).or_insert_with(|| {
            functions.push(symbol);
            functions.len() as u32 - 1
        });
    }
    if functions.is_empty() {
        return Ok(());
    }
    // The entry the target's instruction set jumps through, its relocated fields, the slot's 64-bit address
    // and the start-up relocation that fills the slot.
    let Some(template) = graph.arch().iplt_entry else {
        return Err(PhaseError::new(
            LinkPhase::Synthesize,
            "indirect functions (STT_GNU_IFUNC) are not supported for this target",
        ));
    };
    let entry_size = template.size();
    let absolute = declared(graph, RelocationKind::Symbol, RelocationBase::Nothing, 64)?;
    let fields = template
        .fields
        .iter()
        .map(|field| {
            graph
                .declared_field(RelocationKind::Symbol, field.base, &field.field)
                .map(|raw| (field, raw))
                .ok_or_else(|| {
                    PhaseError::new(
                        LinkPhase::Synthesize,
                        format!(
                            "the target declares no `symbol` relocation relative to {:?} writing {:?}, which its PLT entries need",
                            field.base, field.field
                        ),
                    )
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let irelative = u64::from(declared(graph, RelocationKind::Irelative, RelocationBase::Nothing, 64)?);
    let origin = Origin {
        created_by_phase: Some(phase),
        ..Origin::default()
    };
    let count = functions.len() as u64;
    let mut plt = Vec::with_capacity((count * entry_size) as usize);
    let mut rela = Vec::with_capacity((count * 24) as usize);
    for _ in 0..count {
        plt.extend_from_slice(template.code);
        // r_offset (patched below), r_info = IRELATIVE with no symbol, r_addend (patched below).
        rela.extend_from_slice(&[0; 8]);
        rela.extend_from_slice(&irelative.to_le_bytes());
        rela.extend_from_slice(&[0; 8]);
    }
    let new_atom = |graph: &mut crate::graph::LinkGraph, name: &str, alignment: u64, bytes: Vec<u8>| {
        let atom = AtomId(graph.atoms.len() as u32);
        graph.atoms.push(Atom::synthetic(None, name, alignment, bytes, origin));
        atom
    };
    let plt_atom = new_atom(graph, IPLT, 16, plt);
    let slots_atom = new_atom(graph, IGOT, 8, vec![0u8; (count * 8) as usize]);
    let rela_atom = new_atom(graph, IRELA, 8, rela);
    let absolute_edge = |source: AtomId, offset: u64, target: AtomId, addend: i64| Edge {
        kind: EdgeKind::Relocation,
        source,
        offset,
        relocation: RelocationType {
            format: ObjectFormat::Elf,
            raw: absolute,
        },
        width: 64,
        addend,
        pc_relative: false,
        signed: false,
        target_symbol: None,
        target_atom: Some(target),
        origin,
    };
    for (entry, function) in functions.iter().enumerate() {
        let entry = entry as u64;
        let symbol = &graph.symbols[function.index()];
        let (Some(resolver_atom), resolver_offset) = (symbol.atom, symbol.value) else {
            continue;
        };
        let resolver_offset = i64::try_from(resolver_offset).unwrap_or(i64::MAX);
        let slot = i64::try_from(entry * 8).unwrap_or(i64::MAX);
        // The entry reads the slot.
        for (field, raw) in &fields {
            graph.edges.push(Edge {
                kind: EdgeKind::Relocation,
                source: plt_atom,
                offset: entry * entry_size + field.offset,
                relocation: RelocationType {
                    format: ObjectFormat::Elf,
                    raw: *raw,
                },
                width: field.field.size as u8,
                addend: slot + field.bias,
                pc_relative: field.base != RelocationBase::Nothing,
                signed: field.base != RelocationBase::Nothing,
                target_symbol: None,
                target_atom: Some(slots_atom),
                origin,
            });
        }
        graph.edges.extend([
            // The slot holds the resolver until the C library runs it (as ld.bfd leaves it).
            absolute_edge(slots_atom, entry * 8, resolver_atom, resolver_offset),
            absolute_edge(rela_atom, entry * 24, slots_atom, slot),
            absolute_edge(rela_atom, entry * 24 + 16, resolver_atom, resolver_offset),
        ]);
        graph.synthetics.push(Synthetic {
            role: SyntheticRole::IpltEntry(*function),
            section: None,
            atom: Some(plt_atom),
            origin,
        });
    }
    graph.index_edges();
    context.iplt = Some((plt_atom, entry_size, index));
    Ok(())
}

/// Whether the edge loads an address through the GOT (its declared kind says so).
fn uses_got(graph: &LinkGraph, edge: &Edge) -> bool {
    matches!(
        graph.relocation_kind(edge),
        Some(RelocationKind::GotEntry | RelocationKind::GotEntryRelaxable)
    )
}

/// The number of the target's relocation of `kind`, `base` and `size`, or an error naming what is missing.
fn declared(
    graph: &crate::graph::LinkGraph,
    kind: RelocationKind,
    base: RelocationBase,
    size: u32,
) -> Result<u32, PhaseError> {
    graph.declared_relocation(kind, base, size).ok_or_else(|| {
        PhaseError::new(
            LinkPhase::Synthesize,
            format!(
                "the target declares no {}-bit `{}` relocation relative to {base:?}, which the linker's own entries need",
                size,
                kind.name()
            ),
        )
    })
}

/// The names of the synthetic atoms of indirect functions, which are also their output sections' names
/// (ld.bfd's, for a static executable).
pub(crate) const IPLT: &str = ".plt";
pub(crate) const IGOT: &str = ".got.plt";
pub(crate) const IRELA: &str = ".rela.plt";

fn synthesize_got(context: &mut LinkContext, phase: u16) -> Result<(), PhaseError> {
    if context.got_atom.is_some() {
        return Ok(());
    }
    let graph = &mut context.graph;
    // Slots in the link (command-line) order of first use, as layout orders the code; `index` holds the slot
    // of each symbol already given one.
    let mut slots: Vec<SymbolId> = Vec::new();
    let mut index: FxHashMap<SymbolId, usize> = FxHashMap::default();
    let order = crate::phases::layout::command_line_order(graph);
    let mut uses: Vec<((u32, u32), usize, SymbolId)> = Vec::new();
    for (position, edge) in graph.edges.iter().enumerate() {
        let source = &graph.atoms[edge.source.index()];
        if !uses_got(graph, edge) || !source.is_live() || (graph.arch().got_relaxation)(graph, edge).is_some() {
            continue;
        }
        let Some(symbol) = edge.target_symbol.map(|symbol| graph.resolved(symbol)) else {
            continue;
        };
        let place = source.origin.input.map_or((u32::MAX, 0), |input| order[input.index()]);
        uses.push((place, position, symbol));
    }
    uses.sort_unstable();
    for (_, _, symbol) in uses {
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
    let absolute = declared(graph, RelocationKind::Symbol, RelocationBase::Nothing, 64)?;
    let atom = AtomId(graph.atoms.len() as u32);
    graph
        .atoms
        .push(Atom::synthetic(None, ".got", 8, vec![0u8; slots.len() * 8], origin));
    for (slot, symbol) in slots.iter().enumerate() {
        graph.edges.push(Edge {
            kind: EdgeKind::Relocation,
            source: atom,
            offset: slot as u64 * 8,
            relocation: RelocationType {
                format: ObjectFormat::Elf,
                raw: absolute,
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
