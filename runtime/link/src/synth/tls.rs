//! The GOT entries of a shared library's thread-local variables. A library cannot know where its TLS block
//! is (the loader allocates one per thread, and a `dlopen`ed module's lazily), so its accesses keep their
//! models, as GNU ld keeps them in a shared library: a general-dynamic access reads a pair of words (the
//! module's id, `DTPMOD64`, and the variable's offset in the module's block) that it passes to
//! `__tls_get_addr`; a local-dynamic one the module's pair only (the offsets are constants in the code); an
//! initial-exec one a word holding the variable's offset from the thread pointer (`TPOFF64`: the library then
//! needs static TLS, `DF_STATIC_TLS`); a descriptor access a pair the loader fills through a `TLSDESC`
//! relocation. A variable other modules may interpose (or one another module defines) is named by its
//! `.dynsym` entry; the library's own is found through the module (symbol 0) and its offset in the block.
//! Local-exec accesses cannot be made in a shared library: they are refused when imports are decided.
//!
//! An executable on an architecture that keeps its TLS models (`Arch::keeps_tls_models`: RISC-V, whose
//! psABI defines no relaxation) reads entries of the same kinds, which the link fills as ld.bfd does: the
//! executable is module 1, a variable's offset in the block is a constant (less the target's declared
//! `dtv_offset`), and so is its offset from the thread pointer. They need no dynamic relocation, PIE or not.

use neverc_tables::{RelocationBase, RelocationKind};
use rustc_hash::FxHashMap;

use super::{absolute_edge, declared, new_atom};
use crate::context::{LinkContext, PhaseError};
use crate::graph::{AtomId, Origin, SymbolId};
use crate::sections::OutputSectionId;

/// What a TLS GOT entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum TlsEntry {
    /// A general-dynamic access's module id and offset (two words).
    Pair,
    /// The module id of a local-dynamic access (two words, the second 0); it names no symbol.
    Module,
    /// An initial-exec access's offset from the thread pointer (one word).
    Offset,
    /// A TLS descriptor (two words) the loader fills.
    Descriptor,
}

impl TlsEntry {
    /// The entry that an access of relocation kind `kind` reads, if it reads one.
    pub(crate) fn of(kind: RelocationKind) -> Option<TlsEntry> {
        match kind {
            RelocationKind::TlsGd => Some(TlsEntry::Pair),
            RelocationKind::TlsLd => Some(TlsEntry::Module),
            RelocationKind::TlsIe => Some(TlsEntry::Offset),
            RelocationKind::TlsDesc => Some(TlsEntry::Descriptor),
            _ => None,
        }
    }

    fn size(self) -> u64 {
        match self {
            TlsEntry::Offset => 8,
            TlsEntry::Pair | TlsEntry::Module | TlsEntry::Descriptor => 16,
        }
    }
}

/// The TLS GOT entries of a shared library: their atom (in `.got`), and where each entry is in it.
#[derive(Clone, Debug)]
pub(crate) struct TlsGot {
    pub(crate) atom: AtomId,
    /// (variable, or none for the module's own entry, what the entry holds, its offset in the atom), in
    /// the order of first use.
    pub(crate) entries: Vec<(Option<SymbolId>, TlsEntry, u64)>,
    offsets: FxHashMap<(Option<SymbolId>, TlsEntry), u64>,
}

impl TlsGot {
    /// The offset in the atom of the entry holding `entry` for `symbol` (resolved; none for the module's).
    pub(crate) fn offset(&self, symbol: Option<SymbolId>, entry: TlsEntry) -> Option<u64> {
        let symbol = if entry == TlsEntry::Module { None } else { symbol };
        self.offsets.get(&(symbol, entry)).copied()
    }

    /// Whether the library reads some variable's offset from the thread pointer (`DF_STATIC_TLS`).
    pub(crate) fn needs_static_tls(&self) -> bool {
        self.entries.iter().any(|(_, entry, _)| *entry == TlsEntry::Offset)
    }
}

/// An input's place in link (command-line) order.
type Place = (u32, u32);

pub(super) fn make(context: &mut LinkContext, origin: Origin) -> Result<(), PhaseError> {
    let library = context.options.output_kind.is_shared_library();
    if context.synthesized.tls_got.is_some() || !(library || context.graph.arch().keeps_tls_models) {
        return Ok(());
    }
    let graph = &mut context.graph;
    let order = graph.command_line_order();
    // (place in link order, edge, variable, entry) of every access.
    let mut uses: Vec<(Place, usize, Option<SymbolId>, TlsEntry)> = Vec::new();
    for (position, edge) in graph.edges.iter().enumerate() {
        let source = &graph.atoms[edge.source.index()];
        if !source.is_live() {
            continue;
        }
        let Some(entry) = graph.relocation_kind(edge).and_then(TlsEntry::of) else {
            continue;
        };
        let symbol = match entry {
            TlsEntry::Module => None,
            _ => edge.target_symbol.get().map(|symbol| graph.resolved(symbol)),
        };
        let place = source
            .origin
            .input()
            .map_or((u32::MAX, 0), |input| order[input.index()]);
        uses.push((place, position, symbol, entry));
    }
    if uses.is_empty() {
        return Ok(());
    }
    uses.sort_unstable();
    let mut entries = Vec::new();
    let mut offsets = FxHashMap::default();
    let mut size = 0;
    for (_, _, symbol, entry) in uses {
        offsets.entry((symbol, entry)).or_insert_with(|| {
            entries.push((symbol, entry, size));
            size += entry.size();
            size - entry.size()
        });
    }
    // In an executable the module's id is 1, but for a variable of a shared library (`synth::dynamic` has the
    // loader fill its entries).
    let imports = context.synthesized.dynamic_symbols.as_ref();
    let run_time = |symbol: SymbolId| imports.is_some_and(|imports| imports.is_run_time(symbol));
    let mut bytes = vec![0u8; size as usize];
    for (symbol, entry, offset) in &entries {
        if let (false, TlsEntry::Pair | TlsEntry::Module, false) = (library, entry, symbol.is_some_and(run_time)) {
            let word = *offset as usize;
            bytes[word..word + 8].copy_from_slice(&1u64.to_le_bytes());
        }
    }
    let atom = new_atom(graph, None, OutputSectionId::Got.name(), 8, bytes, origin);
    // The second word of a general-dynamic pair of the library's own variable is a constant: its offset in
    // the module's block (the loader writes the other variables'). In an executable every word is the
    // link's: the module id 1, and a variable's offset from the thread pointer.
    let dtp_offset = declared(graph, RelocationKind::TlsDtpOffset, RelocationBase::Nothing, 64)?;
    let tp_offset = match library {
        true => None,
        false => Some(declared(graph, RelocationKind::TlsLe, RelocationBase::Nothing, 64)?),
    };
    for (symbol, entry, offset) in &entries {
        let Some(symbol) = symbol else {
            continue;
        };
        let run_time = run_time(*symbol);
        let word = match (entry, tp_offset) {
            (TlsEntry::Pair, _) if !run_time => Some((dtp_offset, offset + 8)),
            (TlsEntry::Offset, Some(tp_offset)) if !run_time => Some((tp_offset, *offset)),
            _ => None,
        };
        if let Some((raw, at)) = word {
            graph
                .edges
                .push(absolute_edge(raw, atom, at, (Some(*symbol), None), 0, origin));
        }
    }
    context.synthesized.tls_got = Some(TlsGot { atom, entries, offsets });
    Ok(())
}
