//! The PLT of indirect functions. An indirect function (`STT_GNU_IFUNC`) that a live atom refers to gets, as
//! ld.bfd makes them in a static executable, an entry in `.plt` (the architecture's template: x86-64 `jmp
//! *slot(%rip)`; AArch64 `adrp x16, slot; ldr x17, [x16, :lo12:slot]; add x16, x16, :lo12:slot; br x17`), a
//! slot in `.got.plt`, and an `IRELATIVE` relocation in `.rela.plt` (slot, resolver) that the C library
//! applies at start-up between `__rela_iplt_start` and `__rela_iplt_end`. Every reference to the function then
//! means its PLT entry, so all of them agree on its address. A shared library's indirect functions that
//! other modules may interpose are not here: the loader binds them (and runs their resolvers).

use neverc_tables::{RelocationBase, RelocationKind};
use rustc_hash::FxHashMap;

use super::code::DeclaredFields;
use super::{Iplt, PHASE, absolute_edge, declared, new_atom};
use crate::context::{LinkContext, PhaseError};
use crate::graph::{Origin, SymbolId, SymbolType, Synthetic, SyntheticRole};
use crate::sections::OutputSectionId;

pub(super) fn make(context: &mut LinkContext, origin: Origin) -> Result<(), PhaseError> {
    if context.synthesized.iplt.is_some() {
        return Ok(());
    }
    let graph = &context.graph;
    // Only a defined indirect function gets an entry: without one, no reference needs looking at (the symbols
    // are fewer than the edges, many fewer with debugging information).
    if !graph
        .symbols
        .iter()
        .any(|symbol| symbol.symbol_type == SymbolType::Ifunc && symbol.atom.is_some())
    {
        return Ok(());
    }
    let mut functions: Vec<SymbolId> = Vec::new();
    let mut index: FxHashMap<SymbolId, u32> = FxHashMap::default();
    // The entries are made in link (command-line) order of their first references, as layout orders the
    // code (so the table does not depend on when an input was read: an object LTO generated is read last).
    let order = graph.command_line_order();
    let mut references: Vec<((u32, u32), usize, SymbolId)> =
        crate::scan::edges_where(graph, context.options.threads, |position, edge| {
            let source = &graph.atoms[edge.source.index()];
            if !source.is_live() {
                return None;
            }
            let symbol = graph.resolved(edge.target_symbol.get()?);
            let entry = &graph.symbols[symbol.index()];
            // A shared library's interposable indirect function is reached as every interposable function is
            // (its PLT entry and GOT slot bound by the loader, which runs its resolver).
            if entry.symbol_type != SymbolType::Ifunc || entry.atom.is_none() || graph.is_preemptible(symbol) {
                return None;
            }
            let place = source
                .origin
                .input()
                .map_or((u32::MAX, 0), |input| order[input.index()]);
            Some((place, position, symbol))
        });
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
    let graph = &mut context.graph;
    // The entry the target's instruction set jumps through, its relocated fields, the slot's 64-bit address
    // and the start-up relocation that fills the slot.
    let Some(template) = graph.arch().iplt_entry else {
        return Err(PhaseError::new(
            PHASE,
            "indirect functions (STT_GNU_IFUNC) are not supported for this target",
        ));
    };
    let entry_size = template.size();
    let absolute = declared(graph, RelocationKind::Symbol, RelocationBase::Nothing, 64)?;
    let fields =
        DeclaredFields::of(graph, template, "its PLT entries").map_err(|error| PhaseError::new(PHASE, error))?;
    let irelative = u64::from(declared(graph, RelocationKind::Irelative, RelocationBase::Nothing, 64)?);
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
    let plt_atom = new_atom(graph, None, OutputSectionId::Iplt.name(), 16, plt, origin);
    let slots_atom = new_atom(
        graph,
        None,
        OutputSectionId::IgotPlt.name(),
        8,
        vec![0u8; (count * 8) as usize],
        origin,
    );
    let rela_atom = new_atom(graph, None, OutputSectionId::RelaIplt.name(), 8, rela, origin);
    for (entry, function) in functions.iter().enumerate() {
        let entry = entry as u64;
        let symbol = &graph.symbols[function.index()];
        let (Some(resolver_atom), resolver_offset) = (symbol.atom, symbol.value) else {
            continue;
        };
        let resolver = (None, Some(resolver_atom));
        let resolver_offset = i64::try_from(resolver_offset).unwrap_or(i64::MAX);
        let slot = i64::try_from(entry * 8).unwrap_or(i64::MAX);
        // The entry reads the slot.
        let reads = fields.edges(plt_atom, entry * entry_size, (None, Some(slots_atom)), slot, origin);
        graph.edges.extend(reads.collect::<Vec<_>>());
        graph.edges.extend([
            // The slot holds the resolver until the C library runs it (as ld.bfd leaves it).
            absolute_edge(absolute, slots_atom, entry * 8, resolver, resolver_offset, origin),
            absolute_edge(absolute, rela_atom, entry * 24, (None, Some(slots_atom)), slot, origin),
            absolute_edge(absolute, rela_atom, entry * 24 + 16, resolver, resolver_offset, origin),
        ]);
        graph.synthetics.push(Synthetic {
            role: SyntheticRole::IpltEntry(*function),
            section: None,
            atom: Some(plt_atom),
            origin,
        });
    }
    context.synthesized.iplt = Some(Iplt {
        atom: plt_atom,
        slots: slots_atom,
        relocations: rela_atom,
        entry_size,
        entries: index,
    });
    Ok(())
}
