//! What the linker makes itself, in the synthesize phase, after the live atoms are known (garbage collection
//! and identical code folding are done) and before anything is laid out: each maker adds atoms, edges and
//! synthetics to the graph and records what it made in the context's [`Synthesized`] product.
//!
//! In this order (so the atoms come in the order they always have, and the output is the same whoever asks):
//! the PLT of indirect functions and its slots and `IRELATIVE` relocations (`iplt.rs`), the global offset
//! table (`got.rs`) and a shared library's TLS entries in it (`tls.rs`), merged strings (`strings.rs`), the unwind tables without the records of dropped
//! functions and their search table (`eh_frame.rs`), the merged program properties (`gnu_property.rs`) and
//! the build ID note (`build_id.rs`), and, for a position-independent output, its dynamic relocations and
//! `.dynamic` (`dynamic.rs`). Before all of them, a dynamically linked output's imports and exports
//! (`imports.rs`), which decide how references reach symbols of shared libraries. Linker-made code comes from the architecture's templates
//! (`code.rs`). Every maker does nothing when it has made its product already, so a rerun of the phase adds
//! nothing twice.

pub(crate) mod build_id;
pub(crate) mod code;
mod dynamic;
pub(crate) mod eh_frame;
pub(crate) mod gnu_property;
pub(crate) mod got;
pub(crate) mod imports;
mod iplt;
pub(crate) mod relr;
mod strings;
pub(crate) mod tls;

use neverc_tables::{RelocationBase, RelocationKind};
use rustc_hash::FxHashMap;

use crate::context::{LinkContext, PhaseError};
use crate::graph::{
    Atom, AtomId, Edge, EdgeKind, LinkGraph, ObjectFormat, Origin, RelocationType, SectionId, SymbolId,
};
use crate::phases::LinkPhase;

const PHASE: LinkPhase = LinkPhase::Synthesize;

/// What synthesis made, for the phases after it.
#[derive(Clone, Debug, Default)]
pub struct Synthesized {
    /// Global offset table slots: the symbol whose address each slot holds.
    pub(crate) got: Vec<SymbolId>,
    /// The synthetic `.got` atom.
    pub got_atom: Option<AtomId>,
    /// The slot of each symbol of `got`.
    pub(crate) got_slots: FxHashMap<SymbolId, usize>,
    /// Indirect functions: the synthetic `.plt` atom, the size of one entry (the architecture's template) and
    /// each resolved IFUNC symbol's entry in it. Every reference to such a symbol means its PLT entry, which
    /// jumps through a slot that an `IRELATIVE` relocation fills at start-up.
    pub(crate) iplt: Option<Iplt>,
    /// Mergeable strings: where each input piece went.
    pub merged_strings: MergedStrings,
    /// The `.eh_frame_hdr` atom (`--eh-frame-hdr`), which relocation fills in.
    pub(crate) eh_frame_hdr: Option<AtomId>,
    /// Whether the inputs' `.note.gnu.property` notes were merged.
    pub(crate) gnu_property_merged: bool,
    /// Whether the `.note.gnu.build-id` atom (`--build-id`) was made; emission fills it in.
    pub(crate) build_id_made: bool,
    /// The `.dynamic` atom of a position-independent output.
    pub(crate) dynamic: Option<AtomId>,
    /// What a dynamically linked output imports and exports, and the PLT of the functions it imports.
    pub(crate) dynamic_symbols: Option<imports::DynamicSymbols>,
    /// Values of the linker's own tables that only the final layout gives, filled in by relocation.
    pub(crate) late_fills: Vec<LateFill>,
    /// The packed relative relocations (`-z pack-relative-relocs`), which layout encodes.
    pub(crate) relr: Option<relr::Relr>,
    /// The GOT entries of a shared library's thread-local variables.
    pub(crate) tls_got: Option<tls::TlsGot>,
    /// The words of `.rela.dyn` that relocation fills.
    pub(crate) rela_dyn: Option<RelaDyn>,
}

/// The `.rela.dyn` atom and the words of it that relocation fills: each entry's place and, for a `RELATIVE`
/// one, its addend. They are kept here rather than as edges of the graph: a position-independent program has
/// an entry for every address its data holds (hundreds of thousands in a large one), and an edge costs more
/// than twice a fill, in memory and in every whole-edge scan after synthesis.
#[derive(Clone, Debug)]
pub(crate) struct RelaDyn {
    pub(crate) atom: AtomId,
    /// In offset order.
    pub(crate) fills: Vec<WordFill>,
    pub(crate) origin: Origin,
}

/// A 64-bit word of a linker-made atom that relocation fills as it would patch an edge: at `offset`,
/// relocation `raw` of the address of `target` (a symbol or an atom) plus `addend`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WordFill {
    pub(crate) offset: u64,
    pub(crate) raw: u32,
    pub(crate) target: (Option<SymbolId>, Option<AtomId>),
    pub(crate) addend: i64,
}

impl WordFill {
    /// The edge of `source` (the atom holding the word) that this fill stands for.
    pub(crate) fn edge(&self, source: AtomId, origin: Origin) -> Edge {
        absolute_edge(self.raw, source, self.offset, self.target, self.addend, origin)
    }
}

/// A value of a linker-made atom that only the final layout gives: at `offset` of `atom`, 64 bits (or the
/// 16-bit section index) of what `value` says.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LateFill {
    pub(crate) atom: AtomId,
    pub(crate) offset: u64,
    pub(crate) value: LateValue,
}

/// What a [`LateFill`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LateValue {
    /// The address of an output section (0 when the output has none).
    Start(crate::sections::OutputSectionId),
    /// The size of an output section in memory (0 when the output has none).
    Size(crate::sections::OutputSectionId),
    /// The ELF section index (16 bits, `st_shndx`) of the output section that holds an atom.
    SectionIndex(AtomId),
    /// The offset of a thread-local variable in its module's TLS block (its `st_value` in `.dynsym`).
    TlsOffset(SymbolId),
}

/// The PLT of indirect functions: its atom, the size of one entry, and each function's entry.
#[derive(Clone, Debug)]
pub(crate) struct Iplt {
    pub(crate) atom: AtomId,
    /// The `.got.plt` slots and the `.rela.plt` relocations that fill them.
    pub(crate) slots: AtomId,
    pub(crate) relocations: AtomId,
    pub(crate) entry_size: u64,
    pub(crate) entries: FxHashMap<SymbolId, u32>,
}

/// Mergeable string pieces: for a merged atom, where each input piece went.
#[derive(Clone, Debug, Default)]
pub struct MergedStrings {
    /// For each merged input atom: (input offset of the piece, offset in the merged atom), sorted.
    pub pieces: FxHashMap<AtomId, Vec<(u64, u64)>>,
    /// The merged atom that holds the input atom's strings.
    pub target: FxHashMap<AtomId, AtomId>,
}

/// Makes everything the linker makes itself (see the module documentation). `phase` is the synthesize
/// phase's index, stamped on what is made.
pub(crate) fn run(context: &mut LinkContext, phase: u16) -> Result<(), PhaseError> {
    let origin = Origin::made(None, None, 0, Some(phase));
    // The imports' PLT before the indirect functions', so that `.got.plt` starts with the words the dynamic
    // loader owns and `.rela.plt` holds the relocations of both in one run.
    imports::make(context, origin)?;
    iplt::make(context, origin)?;
    got::make(context, origin)?;
    tls::make(context, origin)?;
    strings::merge(context, origin);
    eh_frame::compact_tables(&mut context.graph);
    if context.options.eh_frame_hdr {
        eh_frame::make_header(context, origin);
    }
    gnu_property::merge_notes(context, origin);
    if context.options.build_id {
        build_id::make_note(context, origin);
    }
    // Last: every address the other makers put in the image needs its relocation.
    if context.options.output_kind.has_dynamic_section() {
        dynamic::make(context, origin)?;
    }
    // The makers add edges and remove those of dropped unwind records; none of them reads the per-atom edge
    // index, which is made again once, here, for the phases after.
    context.graph.index_edges();
    Ok(())
}

/// Adds an atom the linker made (in no input section) and returns its id.
fn new_atom(
    graph: &mut LinkGraph,
    section: Option<SectionId>,
    name: &str,
    alignment: u64,
    bytes: Vec<u8>,
    origin: Origin,
) -> AtomId {
    let atom = AtomId(graph.atoms.len() as u32);
    graph
        .atoms
        .push(Atom::synthetic(section, name, alignment, bytes, origin));
    atom
}

/// The number of the target's relocation of `kind`, `base` and `size`, or an error naming what is missing.
fn declared(graph: &LinkGraph, kind: RelocationKind, base: RelocationBase, size: u32) -> Result<u32, PhaseError> {
    graph.declared_relocation(kind, base, size).ok_or_else(|| {
        PhaseError::new(
            PHASE,
            format!(
                "the target declares no {}-bit `{}` relocation relative to {base:?}, which the linker's own entries need",
                size,
                kind.name()
            ),
        )
    })
}

/// A 64-bit relocation (relocation number `raw`, an absolute address, or another 64-bit value such as a TLS
/// offset) at `offset` of `source`, of the address of `target` (a symbol or an atom) plus `addend`.
fn absolute_edge(
    raw: u32,
    source: AtomId,
    offset: u64,
    target: (Option<SymbolId>, Option<AtomId>),
    addend: i64,
    origin: Origin,
) -> Edge {
    Edge {
        kind: EdgeKind::Relocation,
        source,
        offset,
        relocation: RelocationType {
            format: ObjectFormat::Elf,
            raw,
        },
        width: 64,
        addend,
        pc_relative: false,
        signed: false,
        target_symbol: target.0.into(),
        target_atom: target.1.into(),
        origin,
    }
}
