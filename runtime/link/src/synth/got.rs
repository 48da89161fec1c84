//! The global offset table. A GOT load that cannot be relaxed into a direct address (plain `GOTPCREL`, an
//! instruction the architecture does not rewrite, or a weak undefined target, whose slot must hold 0) gets a
//! slot in a synthetic `.got` atom, filled by an absolute relocation (for an import, by the dynamic loader:
//! `dynamic.rs`), and so does an access to an imported thread-local variable (initial-exec, or a
//! general-dynamic or descriptor one relaxed to it: the loader stores its offset from the thread pointer). Slots come in the link (command-line)
//! order of first use, as layout orders the code.

use neverc_tables::{RelocationBase, RelocationKind};
use rustc_hash::FxHashMap;

use super::{absolute_edge, declared, new_atom};
use crate::arch::GotRelaxation;
use crate::context::{LinkContext, LinkOptions, PhaseError};
use crate::graph::{Edge, LinkGraph, Origin, SymbolId, Synthetic, SyntheticRole};
use crate::sections::OutputSectionId;

pub(super) fn make(context: &mut LinkContext, origin: Origin) -> Result<(), PhaseError> {
    if context.synthesized.got_atom.is_some() {
        return Ok(());
    }
    let options = &context.options;
    let imports = context.synthesized.dynamic_symbols.as_ref();
    // A shared library's TLS accesses read entries of their own (`tls.rs`), and so do an executable's where the
    // architecture keeps the TLS models.
    let executable = !options.output_kind.is_shared_library() && !context.graph.arch().keeps_tls_models;
    let graph = &context.graph;
    // `index` holds the slot of each symbol already given one.
    let mut slots: Vec<SymbolId> = Vec::new();
    let mut index: FxHashMap<SymbolId, usize> = FxHashMap::default();
    let order = graph.command_line_order();
    let mut uses: Vec<((u32, u32), usize, SymbolId)> =
        crate::scan::edges_where(graph, options.threads, |position, edge| {
            let source = &graph.atoms[edge.source.index()];
            let imported_tls = executable
                && matches!(
                    graph.relocation_kind(edge),
                    Some(RelocationKind::TlsIe | RelocationKind::TlsGd | RelocationKind::TlsDesc)
                )
                && edge
                    .target_symbol
                    .get()
                    .is_some_and(|symbol| imports.is_some_and(|imports| imports.is_run_time(graph.resolved(symbol))));
            if !(uses_got(graph, edge) || imported_tls)
                || !source.is_live()
                || relaxation(options, graph, edge).is_some()
            {
                return None;
            }
            let symbol = graph.resolved(edge.target_symbol.get()?);
            let place = source
                .origin
                .input()
                .map_or((u32::MAX, 0), |input| order[input.index()]);
            Some((place, position, symbol))
        });
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
    let graph = &mut context.graph;
    let absolute = declared(graph, RelocationKind::Symbol, RelocationBase::Nothing, 64)?;
    let atom = new_atom(
        graph,
        None,
        OutputSectionId::Got.name(),
        8,
        vec![0u8; slots.len() * 8],
        origin,
    );
    for (slot, symbol) in slots.iter().enumerate() {
        graph.edges.push(absolute_edge(
            absolute,
            atom,
            slot as u64 * 8,
            (Some(*symbol), None),
            0,
            origin,
        ));
        graph.synthetics.push(Synthetic {
            role: SyntheticRole::GotEntry(*symbol),
            section: None,
            atom: Some(atom),
            origin,
        });
    }
    let synthesized = &mut context.synthesized;
    synthesized.got = slots;
    synthesized.got_slots = index;
    synthesized.got_atom = Some(atom);
    Ok(())
}

/// How the GOT load of `edge` becomes a direct reference, if the architecture can rewrite its instruction
/// and the link relaxes (`--no-relax` keeps every GOT load). Synthesis (which loads get no slot) and
/// relocation (which instructions are rewritten) both ask this, so they cannot disagree.
pub(crate) fn relaxation(options: &LinkOptions, graph: &LinkGraph, edge: &Edge) -> Option<GotRelaxation> {
    if !options.relax {
        return None;
    }
    (graph.arch().got_relaxation)(graph, edge)
}

/// Whether the edge loads an address through the GOT (its declared kind says so).
fn uses_got(graph: &LinkGraph, edge: &Edge) -> bool {
    matches!(
        graph.relocation_kind(edge),
        Some(RelocationKind::GotEntry | RelocationKind::GotEntryRelaxable)
    )
}
