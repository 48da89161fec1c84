//! What a link works on: the options, the graph, and the products the builtin phases hand to each other
//! (the global symbol table, the layout, the relocated section contents, the emitted image).

use std::cell::OnceCell;
use std::path::PathBuf;

use rustc_hash::FxHashMap;

use crate::graph::{AtomId, EdgeId, LinkGraph, SymbolId};
use crate::image::SegmentFlags;
use crate::phases::LinkPhase;

/// How identical code folding runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IcfMode {
    #[default]
    None,
    All,
}

/// The options of one link (the command line of `neverc-spec link`).
#[derive(Clone, Debug)]
pub struct LinkOptions {
    pub inputs: Vec<PathBuf>,
    pub output: PathBuf,
    pub entry: String,
    pub gc_sections: bool,
    pub icf: IcfMode,
    pub map_file: Option<PathBuf>,
    /// The image base: where the first segment goes.
    pub image_base: u64,
    pub page_size: u64,
    /// `-r`: merge the inputs into one relocatable object (an object-merge provider does the work).
    pub relocatable: bool,
}

impl LinkOptions {
    pub fn new(inputs: Vec<PathBuf>, output: PathBuf) -> LinkOptions {
        LinkOptions {
            inputs,
            output,
            entry: "_start".into(),
            gc_sections: false,
            icf: IcfMode::None,
            map_file: None,
            image_base: 0x40_0000,
            page_size: 0x1000,
            relocatable: false,
        }
    }
}

/// An output section: a name, its flags and the atoms placed in it, in order.
#[derive(Clone, Debug)]
pub struct OutputSection {
    pub name: String,
    /// `section_flags` bits (allocated, writable, executable).
    pub flags: u64,
    pub alignment: u64,
    pub address: u64,
    pub file_offset: u64,
    /// Size in memory.
    pub size: u64,
    /// Bytes in the file (0 for `.bss`).
    pub file_size: u64,
    pub atoms: Vec<AtomId>,
    pub segment: usize,
}

/// A loadable segment: a run of output sections with the same permissions.
#[derive(Clone, Debug)]
pub struct OutputSegment {
    pub flags: SegmentFlags,
    pub address: u64,
    pub file_offset: u64,
    pub file_size: u64,
    pub memory_size: u64,
    pub sections: Vec<usize>,
}

/// The result of layout.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub sections: Vec<OutputSection>,
    pub segments: Vec<OutputSegment>,
    /// Where the section headers and tables go: the end of the last segment's file bytes.
    pub file_size: u64,
    pub entry: u64,
}

/// Mergeable string pieces: for a merged atom, where each input piece went.
#[derive(Clone, Debug, Default)]
pub struct MergedStrings {
    /// For each merged input atom: (input offset of the piece, offset in the merged atom), sorted.
    pub pieces: FxHashMap<AtomId, Vec<(u64, u64)>>,
    /// The merged atom that holds the input atom's strings.
    pub target: FxHashMap<AtomId, AtomId>,
}

/// The state every phase reads and writes.
#[derive(Clone, Debug)]
pub struct LinkContext {
    pub options: LinkOptions,
    pub graph: LinkGraph,
    /// Global names to the prevailing symbol.
    pub global_symbols: FxHashMap<String, SymbolId>,
    /// Global offset table slots: the symbol whose address each slot holds.
    pub got: Vec<SymbolId>,
    pub got_atom: Option<AtomId>,
    pub merged_strings: MergedStrings,
    pub layout: Option<Layout>,
    /// Relocated contents, one buffer per output section (empty for `.bss`).
    pub section_bytes: Vec<Vec<u8>>,
    /// The emitted image, not yet written to its file, and the layout it was written from.
    pub image: Option<Vec<u8>>,
    pub image_layout: Option<crate::image::ImageLayout>,
    pub map_text: Option<String>,
    pub warnings: Vec<String>,
    /// Edges by target atom, built once when a verifier first needs it (for as many edges as there were).
    incoming: OnceCell<(usize, Vec<Vec<EdgeId>>)>,
}

impl LinkContext {
    pub fn new(options: LinkOptions) -> LinkContext {
        LinkContext {
            options,
            graph: LinkGraph::default(),
            global_symbols: FxHashMap::default(),
            got: Vec::new(),
            got_atom: None,
            merged_strings: MergedStrings::default(),
            layout: None,
            section_bytes: Vec::new(),
            image: None,
            image_layout: None,
            map_text: None,
            warnings: Vec::new(),
            incoming: OnceCell::new(),
        }
    }

    /// Forgets the index of edges by target atom: after any change to edges, symbol bindings or
    /// resolutions (a committed mutation, a builtin's work), it may name the wrong atoms.
    pub(crate) fn invalidate_edge_index(&mut self) {
        self.incoming.take();
    }

    /// The edges that refer to `atom` (directly or through a symbol defined in it).
    pub fn incoming_edges(&self, atom: AtomId) -> Vec<EdgeId> {
        let graph = &self.graph;
        let target_of = |edge: &crate::graph::Edge| graph.edge_target_atom(edge);
        let (edges, index) = self.incoming.get_or_init(|| {
            let mut index = vec![Vec::new(); graph.atoms.len()];
            for (edge_index, edge) in graph.edges.iter().enumerate() {
                if let Some(target) = target_of(edge)
                    && let Some(slot) = index.get_mut(target.index())
                {
                    slot.push(EdgeId(edge_index as u32));
                }
            }
            (graph.edges.len(), index)
        });
        if *edges == graph.edges.len()
            && let Some(found) = index.get(atom.index())
        {
            return found.clone();
        }
        // Edges were added since the index was built: look them all up.
        (0..graph.edges.len() as u32)
            .map(EdgeId)
            .filter(|edge| target_of(&graph.edges[edge.index()]) == Some(atom))
            .collect()
    }
}

/// A builtin phase failed; the message names the input, symbol or site.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", phase.short_name())]
pub struct PhaseError {
    pub phase: LinkPhase,
    pub message: String,
}

impl PhaseError {
    pub fn new(phase: LinkPhase, message: impl Into<String>) -> PhaseError {
        PhaseError {
            phase,
            message: message.into(),
        }
    }
}
