//! What a link works on: the options, the graph, and the products the builtin phases hand to each other
//! (the global symbol table, the layout, the relocated section contents, the emitted image).

use std::cell::{OnceCell, RefCell};
use std::hash::{DefaultHasher, Hash};
use std::ops::Range;
use std::path::PathBuf;

use neverc_userfile::SharedBytes;
use rustc_hash::FxHashMap;

use crate::graph::{AtomId, EdgeId, Input, LinkGraph, LinkTarget, SymbolId};
use crate::image::{ImageLayout, ProgramHeaderLayout, SegmentFlags, SparseBytes};
use crate::phases::LinkPhase;

/// How identical code folding runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IcfMode {
    #[default]
    None,
    All,
}

/// The symbol hash tables of a dynamic output (`--hash-style`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashStyle {
    /// The System V `.hash` (`DT_HASH`) only.
    Sysv,
    /// GNU's `.gnu.hash` (`DT_GNU_HASH`) only, as gcc asks on Debian.
    Gnu,
    /// Both, GNU ld's default.
    Both,
}

impl HashStyle {
    /// Whether the output has a System V `.hash`.
    pub fn sysv(self) -> bool {
        matches!(self, HashStyle::Sysv | HashStyle::Both)
    }

    /// Whether the output has a `.gnu.hash`.
    pub fn gnu(self) -> bool {
        matches!(self, HashStyle::Gnu | HashStyle::Both)
    }
}

/// The image base of options that leave it to the target's declaration (`[elf] image_base`).
pub const DECLARED_IMAGE_BASE: u64 = u64::MAX;

/// The options of one link (the command line of `neverc-spec link`).
#[derive(Clone, Debug)]
pub struct LinkOptions {
    pub inputs: Vec<PathBuf>,
    /// `--whole-archive`: the indices in `inputs` of the archives every member of which is linked (or merged,
    /// for `-r`), whether or not it defines a symbol something needs.
    pub whole_archive: std::collections::BTreeSet<usize>,
    /// The inputs (by index) given with `--as-needed` or inside a script's `AS_NEEDED`: a shared library
    /// among them is needed (`DT_NEEDED`) only when the output imports one of its definitions.
    pub as_needed: std::collections::BTreeSet<usize>,
    /// `--export-dynamic` (`-E`): every global definition goes into `.dynsym`, not only those the link's
    /// shared libraries refer to.
    pub export_dynamic: bool,
    pub output: PathBuf,
    pub entry: String,
    pub gc_sections: bool,
    pub icf: IcfMode,
    pub map_file: Option<PathBuf>,
    /// The image base: where the first segment goes; [`DECLARED_IMAGE_BASE`] until the target's declared
    /// one replaces it (`LinkContext::resolve_image_base`).
    pub image_base: u64,
    /// Output sections at fixed addresses (`--section-start`, `-Ttext`, `-Tdata`, `-Tbss`), by name; the
    /// last address given for a name counts. Layout places the sections after one of them after it.
    pub section_starts: Vec<(String, u64)>,
    /// `-z separate-code` (the default): code in `PT_LOAD`s of its own, apart from the headers and the
    /// read-only data; `-z noseparate-code` maps all three with one read-and-execute `PT_LOAD`.
    pub separate_code: bool,
    /// `-z keep-text-section-prefix`: unlikely, exit, start-up and hot code go to output sections named
    /// `.text.unlikely`, `.text.exit`, `.text.startup` and `.text.hot` instead of `.text`.
    pub keep_text_section_prefix: bool,
    /// The page size segments are aligned to (`-z max-page-size`); 0, the default, means the target's declared
    /// maximum page size (`[elf] max_page_size`: 4 KiB for x86-64, 64 KiB for AArch64, as ld.bfd's defaults),
    /// which layout resolves once the target is known.
    pub page_size: u64,
    /// What the link makes (`-r` is a relocatable object, which the `object_merge` phase makes), decided once
    /// from the command line.
    pub output_kind: crate::output_kind::OutputKind,
    /// `-dynamic-linker FILE`: the program interpreter a dynamically linked executable names in `PT_INTERP`;
    /// `None` means the target's declared one (`[elf] interpreter`).
    pub interpreter: Option<String>,
    /// `--hash-style`: which symbol hash tables a dynamic output's loader finds its symbols by (`.hash`,
    /// `.gnu.hash` or both; GNU ld writes both unless told otherwise).
    pub hash_style: HashStyle,
    /// The largest image layout may lay out, in bytes from the image base, in the file and in memory
    /// ([`MAX_OUTPUT_SIZE`] by default). Every size and address derived from the inputs is checked against
    /// it before anything is allocated for it.
    pub max_output_size: u64,
    /// `--build-id`: a `.note.gnu.build-id` holding the SHA-1 of the image.
    pub build_id: bool,
    /// `--eh-frame-hdr`: a `.eh_frame_hdr` binary search table and its `PT_GNU_EH_FRAME`.
    pub eh_frame_hdr: bool,
    /// `-z relro` (the default) or `-z norelro`: a `PT_GNU_RELRO` over the data that is read-only after start-up.
    pub relro: bool,
    /// `-rpath DIR` (`-R DIR`), in order: where the dynamic loader looks for the libraries a dynamically
    /// linked output needs (`DT_RUNPATH`, or `DT_RPATH` with `--disable-new-dtags`), joined by `:`.
    pub rpath: Vec<String>,
    /// `--enable-new-dtags` (the default, as Debian's GNU ld has it) or `--disable-new-dtags`.
    pub new_dtags: bool,
    /// Where the libraries the link's shared libraries need (their `DT_NEEDED` entries) are looked for, in
    /// order, to check the names they leave undefined: the `-rpath-link` directories, the `-rpath` ones,
    /// the library search directories.
    pub needed_library_dirs: Vec<PathBuf>,
    /// `-z now`: every function is bound at start-up (`DF_BIND_NOW`, `DF_1_NOW`), not at its first call.
    pub bind_now: bool,
    /// `-z origin`: the output's paths may name `$ORIGIN` (`DF_ORIGIN`, `DF_1_ORIGIN`).
    pub origin: bool,
    /// `-z pack-relative-relocs`: the `RELATIVE` relocations of aligned words are packed into `.relr.dyn`
    /// (`DT_RELR`) instead of `.rela.dyn`.
    pub pack_relative_relocs: bool,
    /// `--fix-cortex-a53-843419`: work around the core erratum of the target's architecture
    /// ([`crate::arch::ErratumFix`]); an error on a target whose architecture has none.
    pub fix_erratum: bool,
    /// `--compress-debug-sections=zlib|zstd`: debugging sections are written compressed where that makes
    /// them smaller.
    pub compress_debug_sections: crate::image::DebugCompression,
    /// `--print-gc-sections`: `gc` lists the sections it removes in [`LinkContext::notes`].
    pub print_gc_sections: bool,
    /// `-M` / `--print-map`: the link map is made (as for `-Map`) for the caller to print.
    pub print_map: bool,
    /// `--fatal-warnings`: a link with warnings fails before anything is written.
    pub fatal_warnings: bool,
    /// `-s` / `-S`: which symbols the image keeps.
    pub strip: Strip,
    /// `--relax` (the default) or `--no-relax`: whether GOT loads the architecture can rewrite become direct
    /// references. As with ld.bfd, `--no-relax` keeps every GOT load and its slot, and changes nothing else:
    /// the TLS sequences of a static executable are relaxed to local-exec either way.
    pub relax: bool,
    /// How many threads a phase that works in parallel may use (`--threads=N`; 1 with `--no-threads`). The
    /// output is the same whatever the number: the threads write disjoint bytes.
    pub threads: usize,
    /// `-z notext`: 64-bit words of read-only sections may need the loader to relocate them (text
    /// relocations, `DT_TEXTREL`); by default (`-z text`) they are refused, as ld.lld refuses them.
    pub text_relocations: bool,
    /// A shared library's `DT_SONAME` (`-soname`).
    pub soname: Option<String>,
    /// `-z defs` / `--no-undefined`: a shared library's undefined references are errors, as an executable's
    /// are (by default a shared library leaves them to the loader).
    pub no_undefined: bool,
    /// `-Bsymbolic`, `-Bsymbolic-functions`: which of a shared library's exported definitions its own
    /// references bind to directly, instead of through the loader (which lets another definition interpose).
    pub symbolic: SymbolicBinding,
    /// `-z nodelete`, `-z nodlopen`, `-z initfirst`, `-z interpose`: what a shared library asks of the loader.
    pub loader_requests: LoaderRequests,
    /// `--exclude-libs`: the archives (by file name, or `ALL`) whose definitions a shared library does not
    /// export.
    pub exclude_libs: Vec<String>,
    /// `--emit-relocs` (`-q`): the executable keeps the relocations of its sections, as ld.bfd writes them
    /// (`.rela<section>`, against the output's symbol table).
    pub emit_relocs: bool,
    /// How bitcode inputs are optimized and compiled (`-plugin-opt=`, `--lto-*`, `--thinlto-*`).
    pub lto: crate::lto::request::LtoOptions,
    /// Where the LTO cache of scope LOCAL_SHARED lives (`-plugin-opt=cache-dir=`, `--lto-cache-dir`).
    pub lto_cache_dir: Option<PathBuf>,
    /// Distributed ThinLTO (`--thinlto-index-only[=FILE]`): write each bitcode file's `.thinlto.bc` index and
    /// `.imports` list beside it (and, with FILE, the list of the bitcode files in FILE) and stop, linking
    /// nothing; the backends are compiled elsewhere (`clang -fthinlto-index=`) and linked by a second link.
    pub thinlto_index_only: Option<Option<PathBuf>>,
    /// Distributed ThinLTO's names (`--thinlto-object-suffix-replace=`, `--thinlto-prefix-replace=`): where an
    /// index-only link writes each module's files and what it calls the module. Unused by other links.
    pub thinlto_naming: crate::lto::distributed::DistributedNaming,
    /// How the cache directory is pruned after the link (`--thinlto-cache-policy=`,
    /// `-plugin-opt=cache-policy=`); it is not pruned without a policy.
    pub lto_cache_policy: Option<crate::lto::prune::CachePolicy>,
    /// The Redis server of the LTO cache of scope REMOTE_SHARED
    /// (`--lto-cache-url=redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`; see `lto::remote`).
    pub lto_cache_url: Option<String>,
    /// How the entries of the shared LTO caches (directory and Redis) are sealed and checked: a digest, or an
    /// HMAC under the user's key (`--lto-cache-hmac-key-file`, `$NEVERC_LTO_CACHE_HMAC_KEY`).
    pub lto_cache_integrity: crate::lto::cache::Integrity,
    /// The target the link is for: taken from the first object by default, or fixed by the caller (the `ld`
    /// driver's `-m EMULATION`), in which case every object must be one of its.
    pub target: LinkTarget,
    /// How symbols resolve and which the symbol table keeps (`-u`, `--defsym`, `--wrap`, ...).
    pub symbols: crate::symbol_options::SymbolOptions,
}

/// What `-s` (`--strip-all`) and `-S` (`--strip-debug`) remove.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strip {
    /// Keep the symbol table.
    #[default]
    Nothing,
    /// `-S`: drop debugging sections (the image has none yet, so this changes nothing).
    Debug,
    /// `-s`: drop the symbol table too.
    All,
}

/// What a shared library asks of the dynamic loader (`DT_FLAGS_1` bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoaderRequests {
    /// `-z nodelete` (`DF_1_NODELETE`): never unloaded.
    pub no_delete: bool,
    /// `-z nodlopen` (`DF_1_NOOPEN`): not for `dlopen`.
    pub no_dlopen: bool,
    /// `-z initfirst` (`DF_1_INITFIRST`): initialized before the other objects.
    pub init_first: bool,
    /// `-z interpose` (`DF_1_INTERPOSE`): its definitions come before those of the objects loaded before it.
    pub interpose: bool,
}

/// Which of a shared library's own exported definitions its references bind to at link time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SymbolicBinding {
    /// None (`-Bno-symbolic`, the default): every exported definition may be interposed.
    #[default]
    None,
    /// The functions (`-Bsymbolic-functions`).
    Functions,
    /// All of them (`-Bsymbolic`).
    All,
}

/// The largest executable this static x86-64 ELF writer produces: 4 GiB from the image base.
pub const MAX_OUTPUT_SIZE: u64 = 4 << 30;

impl LinkOptions {
    pub fn new(inputs: Vec<PathBuf>, output: PathBuf) -> LinkOptions {
        LinkOptions {
            inputs,
            whole_archive: std::collections::BTreeSet::new(),
            as_needed: std::collections::BTreeSet::new(),
            export_dynamic: false,
            output,
            entry: "_start".into(),
            gc_sections: false,
            icf: IcfMode::None,
            map_file: None,
            image_base: DECLARED_IMAGE_BASE,
            section_starts: Vec::new(),
            separate_code: true,
            keep_text_section_prefix: false,
            page_size: 0,
            output_kind: crate::output_kind::OutputKind::StaticExecutable,
            interpreter: None,
            hash_style: HashStyle::Both,
            max_output_size: MAX_OUTPUT_SIZE,
            build_id: false,
            eh_frame_hdr: false,
            relro: true,
            rpath: Vec::new(),
            new_dtags: true,
            needed_library_dirs: Vec::new(),
            bind_now: false,
            origin: false,
            pack_relative_relocs: false,
            fix_erratum: false,
            compress_debug_sections: crate::image::DebugCompression::None,
            print_gc_sections: false,
            print_map: false,
            fatal_warnings: false,
            strip: Strip::Nothing,
            relax: true,
            threads: 1,
            text_relocations: false,
            soname: None,
            no_undefined: false,
            symbolic: SymbolicBinding::None,
            loader_requests: LoaderRequests::default(),
            exclude_libs: Vec::new(),
            emit_relocs: false,
            lto: crate::lto::request::LtoOptions::default(),
            lto_cache_dir: None,
            thinlto_index_only: None,
            thinlto_naming: crate::lto::distributed::DistributedNaming::default(),
            lto_cache_policy: None,
            lto_cache_url: None,
            lto_cache_integrity: crate::lto::cache::Integrity::Digest,
            target: LinkTarget::FromFirstObject,
            symbols: crate::symbol_options::SymbolOptions::default(),
        }
    }
}

/// An output section: a name, its identity when the linker knows it by role, its type and flags and the
/// atoms placed in it, in order.
#[derive(Clone, Debug)]
pub struct OutputSection {
    pub name: String,
    /// Its row of `crate::sections`' table; `None` for a section of an input's own name.
    pub id: Option<crate::sections::OutputSectionId>,
    /// The ELF type it is written with (unless it has no file bytes: then `SHT_NOBITS`).
    pub sh_type: crate::image::SectionKind,
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

impl OutputSection {
    /// An output section with nothing in it yet, not placed.
    pub(crate) fn empty(
        name: &str,
        id: Option<crate::sections::OutputSectionId>,
        sh_type: crate::image::SectionKind,
        flags: u64,
    ) -> OutputSection {
        OutputSection {
            name: name.to_string(),
            id,
            sh_type,
            flags,
            alignment: 1,
            address: 0,
            file_offset: 0,
            size: 0,
            file_size: 0,
            atoms: Vec::new(),
            segment: 0,
        }
    }
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
    /// The program headers other than the loads (`PT_TLS`, `PT_NOTE`, ...), in the order they are written.
    pub program_headers: Vec<ProgramHeaderLayout>,
    /// The thread-local storage template, when the output has one.
    pub tls: Option<TlsTemplate>,
    /// Where the section headers and tables go: the end of the last segment's file bytes.
    pub file_size: u64,
    pub entry: u64,
}

/// The thread-local storage template (`PT_TLS`): `.tdata` then `.tbss`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlsTemplate {
    pub address: u64,
    pub memory_size: u64,
    pub alignment: u64,
    /// Where the executable's block lies relative to the thread pointer (the target's TLS variant).
    pub variant: TlsVariant,
}

/// Where the executable's TLS block lies relative to the thread pointer: the link target's `[elf] tls`, read
/// through [`TlsVariant::of`].
pub use neverc_tables::TlsVariant;

impl TlsTemplate {
    /// The offset of `address` (inside the template) from the thread pointer, by the template's variant: in
    /// variant II the block ends at the thread pointer, its size rounded up to its alignment; in variant I it
    /// starts after the TCB, at `align_up(tcb_size, alignment)` (as ld.bfd and lld compute `TPREL`).
    pub fn tp_offset(&self, address: u64) -> i128 {
        let alignment = u128::from(self.alignment.max(1));
        let from_start = i128::from(address) - i128::from(self.address);
        match self.variant {
            TlsVariant::II => {
                let size = u128::from(self.memory_size).div_ceil(alignment) * alignment;
                from_start - size as i128
            }
            TlsVariant::I { tcb_size } => {
                let gap = u128::from(tcb_size).div_ceil(alignment) * alignment;
                from_start + gap as i128
            }
        }
    }
}

/// What a range-extension thunk jumps to: a branch's target symbol (resolved) or atom, and its addend.
pub(crate) type Destination = (Option<SymbolId>, Option<AtomId>, i64);

/// A range-extension thunk: its atom, the atom whose branches it serves (layout places it right after that
/// one), and where it jumps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Thunk {
    pub(crate) atom: AtomId,
    pub(crate) anchor: AtomId,
    pub(crate) destination: Destination,
}

/// A sequence a core erratum affects, found in a provisional layout (`relax_thunks`): its atom, the offsets
/// in it of its first instruction and of the instruction its veneer holds, and the veneer's atom (placed
/// right after the sequence's atom, as a thunk is). Relocation makes the sequence safe
/// ([`crate::arch::ErratumFix::apply`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ErratumSite {
    pub(crate) atom: AtomId,
    pub(crate) first: u64,
    pub(crate) moved: u64,
    pub(crate) veneer: AtomId,
}

/// What the builtin phases hand to each other. A phase that needs another's product asks for it by the
/// phase that makes it, so a missing product is an error naming both phases, never a silent default.
#[derive(Clone, Debug, Default)]
struct Products {
    /// From `layout`.
    layout: Option<Layout>,
    /// From `relocate` (or a provider that publishes section bytes): one buffer per output section, empty
    /// for `.bss`.
    section_bytes: Option<Vec<SparseBytes>>,
    /// From `emit_image` (or a provider): the image, not yet written to its file, and the layout it was
    /// written from (none for a merged relocatable object).
    image: Option<(SparseBytes, Option<ImageLayout>)>,
    /// From `side_outputs_verify`: the `-Map` text, checked and ready to write.
    map_text: Option<String>,
}

/// The state every phase reads and writes.
#[derive(Clone, Debug)]
pub struct LinkContext {
    pub options: LinkOptions,
    pub graph: LinkGraph,
    /// Global names to the prevailing symbol.
    pub global_symbols: FxHashMap<String, SymbolId>,
    /// What synthesis made: the GOT, the PLT of indirect functions, merged strings, the unwind tables' search
    /// table, program properties and the build ID note.
    pub synthesized: crate::synth::Synthesized,
    /// Range-extension thunks (`relax_thunks`), each placed right after the atom whose branches it serves.
    pub(crate) thunks: Vec<Thunk>,
    /// The sequences a core erratum affects (`relax_thunks`), in atom and offset order.
    pub(crate) erratum_sites: Vec<ErratumSite>,
    /// The proof digest's hashing of the inputs so far (see [`LinkContext::input_digest`]).
    input_digest: RefCell<Option<InputDigest>>,
    /// The products phases hand to each other, each set only by the phase that makes it.
    products: Products,
    pub warnings: Vec<String>,
    /// What the link was asked to report besides warnings (`--print-gc-sections`), in order.
    pub notes: Vec<String>,
    /// Edges by target atom, built once when a verifier first needs it (for as many edges as there were).
    incoming: OnceCell<(usize, Vec<Vec<EdgeId>>)>,
    /// What LTO keeps for the length of the link: registered code generators, the TASK-scope cache and
    /// what the caches did.
    pub lto: crate::lto::LtoRuntime,
    /// Set by a phase that ended the link early and successfully (`--thinlto-index-only`), saying what it
    /// did: the state machine stops after that phase, and nothing is emitted or written.
    pub stopped: Option<String>,
}

impl LinkContext {
    pub fn new(options: LinkOptions) -> LinkContext {
        LinkContext {
            graph: LinkGraph {
                target: options.target.clone(),
                ..LinkGraph::default()
            },
            options,
            global_symbols: FxHashMap::default(),
            synthesized: crate::synth::Synthesized::default(),
            thunks: Vec::new(),
            erratum_sites: Vec::new(),
            input_digest: RefCell::new(None),
            products: Products::default(),
            warnings: Vec::new(),
            notes: Vec::new(),
            incoming: OnceCell::new(),
            lto: crate::lto::LtoRuntime::default(),
            stopped: None,
        }
    }

    /// Sets `options.page_size` to the target's declared maximum page size unless it was given (it is 0 by
    /// default); 4 KiB when the target declares none. Segments are aligned to it and `p_align` is it.
    pub(crate) fn resolve_page_size(&mut self) {
        let elf = self.graph.target_record().and_then(|target| target.elf);
        if self.options.page_size == 0 {
            self.options.page_size = elf.map_or(0x1000, |elf| elf.max_page_size.max(1));
        }
        self.resolve_image_base();
    }

    /// Gives the image base its target's declared value unless the command line set one (or the output
    /// is position-independent); done as soon as the inputs are read, so that every proof pins the same.
    pub(crate) fn resolve_image_base(&mut self) {
        if self.options.image_base == DECLARED_IMAGE_BASE {
            let elf = self.graph.target_record().and_then(|target| target.elf);
            self.options.image_base = elf.map_or(0x40_0000, |elf| elf.image_base);
        }
    }

    /// The layout, once `layout` has made it.
    pub fn layout(&self) -> Option<&Layout> {
        self.products.layout.as_ref()
    }

    /// The layout, for a phase that cannot run without it.
    pub(crate) fn required_layout(&self, needed_by: LinkPhase) -> Result<&Layout, PhaseError> {
        self.products
            .layout
            .as_ref()
            .ok_or_else(|| missing(needed_by, "the layout", LinkPhase::Layout))
    }

    pub(crate) fn set_layout(&mut self, layout: Layout) {
        self.products.layout = Some(layout);
    }

    /// The relocated contents of the output sections, once `relocate` has made them.
    pub fn section_bytes(&self) -> Option<&[SparseBytes]> {
        self.products.section_bytes.as_deref()
    }

    pub(crate) fn set_section_bytes(&mut self, bytes: Vec<SparseBytes>) {
        self.products.section_bytes = Some(bytes);
    }

    /// Takes the relocated contents, for a phase that consumes them.
    pub(crate) fn take_section_bytes(&mut self, needed_by: LinkPhase) -> Result<Vec<SparseBytes>, PhaseError> {
        self.products
            .section_bytes
            .take()
            .ok_or_else(|| missing(needed_by, "the relocated sections", LinkPhase::Relocate))
    }

    /// The emitted image (or merged object), once made.
    pub fn image(&self) -> Option<&SparseBytes> {
        self.products.image.as_ref().map(|(bytes, _)| bytes)
    }

    /// The layout the image was emitted from (none for a merged relocatable object).
    pub fn image_layout(&self) -> Option<&ImageLayout> {
        self.products.image.as_ref().and_then(|(_, layout)| layout.as_ref())
    }

    /// The image, for a phase that cannot run without it.
    pub(crate) fn required_image(&self, needed_by: LinkPhase) -> Result<&SparseBytes, PhaseError> {
        self.image()
            .ok_or_else(|| missing(needed_by, "the emitted image", LinkPhase::EmitImage))
    }

    pub(crate) fn set_image(&mut self, bytes: SparseBytes, layout: Option<ImageLayout>) {
        self.products.image = Some((bytes, layout));
    }

    /// The checked `-Map` text, once `side_outputs_verify` has made it.
    pub fn map_text(&self) -> Option<&str> {
        self.products.map_text.as_deref()
    }

    pub(crate) fn set_map_text(&mut self, text: String) {
        self.products.map_text = Some(text);
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

/// The error of a phase that needs a product no phase has made yet.
fn missing(needed_by: LinkPhase, product: &str, producer: LinkPhase) -> PhaseError {
    PhaseError::new(
        needed_by,
        format!("needs {product}, which {} has not produced", producer.name()),
    )
}

/// A builtin phase failed; the message names the input, symbol or site.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", phase.short_name())]
pub struct PhaseError {
    pub phase: LinkPhase,
    pub message: String,
    /// Whether the phase failed because a file could not be read or written (an input that is missing,
    /// not a regular file or too large), rather than because of what a file holds.
    pub io: bool,
}

impl PhaseError {
    pub fn new(phase: LinkPhase, message: impl Into<String>) -> PhaseError {
        PhaseError {
            phase,
            message: message.into(),
            io: false,
        }
    }

    /// The error of a phase that could not read (or write) a file.
    pub fn io(phase: LinkPhase, message: impl Into<String>) -> PhaseError {
        PhaseError {
            io: true,
            ..PhaseError::new(phase, message)
        }
    }

    /// The error of a phase whose input could not be read or was malformed, keeping which it was.
    pub(crate) fn from_read(phase: LinkPhase, error: &crate::read::ReadError) -> PhaseError {
        if error.io {
            PhaseError::io(phase, error.to_string())
        } else {
            PhaseError::new(phase, error.to_string())
        }
    }
}

impl LinkContext {
    /// The slot of `symbol` (a resolved symbol) in the global offset table, found in constant time through
    /// the index synthesis builds with the table.
    pub fn got_slot_of(&self, symbol: SymbolId) -> Option<usize> {
        self.synthesized.got_slots.get(&symbol).copied()
    }

    /// The global offset table's slots: the symbol whose address each holds, in slot order.
    pub fn got(&self) -> &[SymbolId] {
        &self.synthesized.got
    }

    /// The synthetic `.got` atom, once synthesis made one.
    pub fn got_atom(&self) -> Option<AtomId> {
        self.synthesized.got_atom
    }

    /// The proof digest's two hashers (one per round) after the round number and every input's name and
    /// object bytes. The bytes are hashed once per link: inputs are only ever appended to the graph and their
    /// data is read-only `Arc` data, so a later call hashes only the inputs added since. A graph replaced by
    /// another (its inputs no longer start with the ones hashed) is hashed again from the start.
    pub(crate) fn input_digest(&self) -> [DefaultHasher; 2] {
        let inputs = &self.graph.inputs;
        let mut cache = self.input_digest.borrow_mut();
        if cache.as_ref().is_some_and(|digest| !digest.is_prefix_of(inputs)) {
            *cache = None;
        }
        let digest = cache.get_or_insert_with(InputDigest::new);
        if let Some(added) = inputs.get(digest.inputs..)
            && let Some(last) = added.last()
        {
            for input in added {
                for hasher in &mut digest.hashers {
                    input.logical_name.hash(hasher);
                    input.data.get(input.object_range.clone()).unwrap_or(&[]).hash(hasher);
                }
            }
            digest.inputs = inputs.len();
            digest.last = Some((last.data.clone(), last.object_range.clone(), last.logical_name.clone()));
        }
        digest.hashers.clone()
    }
}

/// How far the proof digest has hashed the inputs.
#[derive(Clone, Debug)]
struct InputDigest {
    /// How many inputs the hashers have seen.
    inputs: usize,
    /// The data, object range and name of the last of them (the data is held, so its address cannot be
    /// reused by another input).
    last: Option<(SharedBytes, Range<usize>, String)>,
    hashers: [DefaultHasher; 2],
}

impl InputDigest {
    fn new() -> InputDigest {
        let mut hashers = [DefaultHasher::new(), DefaultHasher::new()];
        for (round, hasher) in hashers.iter_mut().enumerate() {
            round.hash(hasher);
        }
        InputDigest {
            inputs: 0,
            last: None,
            hashers,
        }
    }

    /// Whether `inputs` start with the inputs hashed so far (checked by the last of them).
    fn is_prefix_of(&self, inputs: &[Input]) -> bool {
        let Some((data, range, name)) = &self.last else {
            return true;
        };
        self.inputs
            .checked_sub(1)
            .and_then(|last| inputs.get(last))
            .is_some_and(|input| {
                SharedBytes::ptr_eq(data, &input.data) && *range == input.object_range && *name == input.logical_name
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_offsets_follow_the_targets_variant() {
        let template = |variant, alignment| TlsTemplate {
            address: 0x41_0000,
            memory_size: 0x50,
            alignment,
            variant,
        };
        // x86-64: the block (0x50 rounded up to 0x20 = 0x60) ends at the thread pointer.
        let x86_64 = template(TlsVariant::II, 0x20);
        assert_eq!(x86_64.tp_offset(0x41_0000), -0x60);
        assert_eq!(x86_64.tp_offset(0x41_0008), -0x58);
        // AArch64: a 16-byte TCB, then the block at its alignment (ld.bfd's and lld's TPREL).
        let aarch64 = |alignment| template(TlsVariant::I { tcb_size: 16 }, alignment);
        assert_eq!(aarch64(8).tp_offset(0x41_0000), 16);
        assert_eq!(aarch64(16).tp_offset(0x41_0008), 24);
        assert_eq!(aarch64(64).tp_offset(0x41_0000), 64);
        // RISC-V: the thread pointer points at the block.
        assert_eq!(template(TlsVariant::I { tcb_size: 0 }, 8).tp_offset(0x41_0010), 16);
        // The variant is the one the target declares in `[elf] tls`; without a target (no object read), II.
        let by_name = |name| TlsVariant::of(neverc_tables::target_by_name(name));
        assert_eq!(by_name("aarch64"), TlsVariant::I { tcb_size: 16 });
        assert_eq!(by_name("x86_64"), TlsVariant::II);
        assert_eq!(by_name("riscv64"), TlsVariant::I { tcb_size: 0 });
        assert_eq!(TlsVariant::of(None), TlsVariant::II);
    }
}
