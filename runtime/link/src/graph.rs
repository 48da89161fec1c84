//! The normalized link graph: every entity kind of NeverC's link API (B.1) in dense arenas.
//!
//! Each kind lives in one `Vec`, addressed by a typed dense id (`AtomId(7)` is the eighth atom); nothing is
//! kept in a map per entity. Every entity carries an [`Origin`], so any byte of the output can be traced back
//! to the input, the archive member and the phase (and plugin) that created or last changed it. ELF, COFF
//! and Mach-O objects all read into this one shape; the format-specific facts that survive are the raw
//! relocation type and the section's object index.

use std::ops::Range;
use std::sync::Arc;

use neverc_tables::TargetRecord;
use neverc_userfile::SharedBytes;

macro_rules! entity_ids {
    ($($(#[$meta:meta])* $name:ident),* $(,)?) => {
        $(
            $(#[$meta])*
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
            pub struct $name(pub u32);

            impl $name {
                pub const fn index(self) -> usize {
                    self.0 as usize
                }
            }

            impl DenseId for $name {
                fn from_raw(raw: u32) -> $name {
                    $name(raw)
                }

                fn raw(self) -> u32 {
                    self.0
                }
            }
        )*
    };
}

entity_ids!(
    /// A file given to the link, or an archive member once it is extracted.
    InputId,
    ArchiveId,
    MemberId,
    SharedLibraryId,
    BitcodeModuleId,
    /// An input section.
    SectionId,
    /// A piece of content placed as a unit; one per input section.
    AtomId,
    SymbolId,
    EdgeId,
    ComdatId,
    ImportId,
    ExportId,
    UnwindId,
    SyntheticId,
    ConstraintId,
);

/// A typed dense id, as a number.
pub trait DenseId: Copy {
    fn from_raw(raw: u32) -> Self;
    fn raw(self) -> u32;
}

/// An optional id in four bytes (an `Option` of an id takes eight): none is `u32::MAX`, which no entity's id
/// reaches. Converted from and to `Option` (`.into()`, [`MaybeId::get`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct MaybeId<T> {
    raw: u32,
    id: std::marker::PhantomData<T>,
}

impl<T: DenseId> MaybeId<T> {
    pub const NONE: MaybeId<T> = MaybeId {
        raw: u32::MAX,
        id: std::marker::PhantomData,
    };

    pub fn get(self) -> Option<T> {
        (self.raw != u32::MAX).then(|| T::from_raw(self.raw))
    }
}

impl<T: DenseId> From<Option<T>> for MaybeId<T> {
    fn from(id: Option<T>) -> MaybeId<T> {
        MaybeId {
            raw: id.map_or(u32::MAX, T::raw),
            id: std::marker::PhantomData,
        }
    }
}

impl<T: DenseId> Default for MaybeId<T> {
    fn default() -> MaybeId<T> {
        MaybeId::NONE
    }
}

impl<T: DenseId + std::fmt::Debug> std::fmt::Debug for MaybeId<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// The fifteen entity kinds of NeverC's link API, in its order (the order of the pagers and info calls), and
/// the LTO resolutions, which NeverC's LTO API pages the same way (`GetResolutionPage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntityKind {
    Input,
    Archive,
    ArchiveMember,
    SharedLibrary,
    BitcodeModule,
    Section,
    Atom,
    Symbol,
    Edge,
    Comdat,
    Import,
    Export,
    Unwind,
    Synthetic,
    Constraint,
    /// One symbol resolution of a bitcode module (`lto_resolve`'s product).
    LtoResolution,
}

impl EntityKind {
    pub const ALL: [EntityKind; 16] = [
        EntityKind::Input,
        EntityKind::Archive,
        EntityKind::ArchiveMember,
        EntityKind::SharedLibrary,
        EntityKind::BitcodeModule,
        EntityKind::Section,
        EntityKind::Atom,
        EntityKind::Symbol,
        EntityKind::Edge,
        EntityKind::Comdat,
        EntityKind::Import,
        EntityKind::Export,
        EntityKind::Unwind,
        EntityKind::Synthetic,
        EntityKind::Constraint,
        EntityKind::LtoResolution,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            EntityKind::Input => "input",
            EntityKind::Archive => "archive",
            EntityKind::ArchiveMember => "archive member",
            EntityKind::SharedLibrary => "shared library",
            EntityKind::BitcodeModule => "bitcode module",
            EntityKind::Section => "section",
            EntityKind::Atom => "atom",
            EntityKind::Symbol => "symbol",
            EntityKind::Edge => "edge",
            EntityKind::Comdat => "COMDAT",
            EntityKind::Import => "import",
            EntityKind::Export => "export",
            EntityKind::Unwind => "unwind record",
            EntityKind::Synthetic => "synthetic",
            EntityKind::Constraint => "layout constraint",
            EntityKind::LtoResolution => "LTO resolution",
        }
    }
}

/// Who made an entity and who changed it last. Phases are indices into the phase table; providers and
/// plugins are registration numbers (0 = the builtin).
///
/// Every entity carries one, so it is kept to 24 bytes: an absent input, member or phase is stored as the
/// all-ones value of its field (no link has 2^32 - 1 inputs or 65,535 phases) and read back as `None`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    input: u32,
    member: u32,
    /// The entity's place in its object file: section or symbol index; for an edge, the offset it patches
    /// within its section; for an unwind record, its offset within the unwind table.
    pub object_entity: u32,
    created_by_phase: u16,
    last_mutation_phase: u16,
    pub created_by_provider: u32,
    pub last_mutation_plugin: u32,
}

const NO_ID: u32 = u32::MAX;
const NO_PHASE: u16 = u16::MAX;

impl Default for Origin {
    fn default() -> Origin {
        Origin::made(None, None, 0, None)
    }
}

impl std::fmt::Debug for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Origin")
            .field("input", &self.input())
            .field("member", &self.member())
            .field("object_entity", &self.object_entity)
            .field("created_by_phase", &self.created_by_phase())
            .field("created_by_provider", &self.created_by_provider)
            .field("last_mutation_phase", &self.last_mutation_phase())
            .field("last_mutation_plugin", &self.last_mutation_plugin)
            .finish()
    }
}

impl Origin {
    /// An entity made by the builtin in phase `phase`, from `input` (and archive `member`), where
    /// `object_entity` says.
    pub const fn made(
        input: Option<InputId>,
        member: Option<MemberId>,
        object_entity: u32,
        phase: Option<u16>,
    ) -> Origin {
        Origin {
            input: match input {
                Some(input) => input.0,
                None => NO_ID,
            },
            member: match member {
                Some(member) => member.0,
                None => NO_ID,
            },
            object_entity,
            created_by_phase: match phase {
                Some(phase) => phase,
                None => NO_PHASE,
            },
            last_mutation_phase: NO_PHASE,
            created_by_provider: 0,
            last_mutation_plugin: 0,
        }
    }

    /// The input the entity comes from.
    pub const fn input(&self) -> Option<InputId> {
        if self.input == NO_ID {
            None
        } else {
            Some(InputId(self.input))
        }
    }

    /// The archive member the entity comes from.
    pub const fn member(&self) -> Option<MemberId> {
        if self.member == NO_ID {
            None
        } else {
            Some(MemberId(self.member))
        }
    }

    /// The phase that made the entity.
    pub const fn created_by_phase(&self) -> Option<u16> {
        if self.created_by_phase == NO_PHASE {
            None
        } else {
            Some(self.created_by_phase)
        }
    }

    /// The phase that changed the entity last.
    pub const fn last_mutation_phase(&self) -> Option<u16> {
        if self.last_mutation_phase == NO_PHASE {
            None
        } else {
            Some(self.last_mutation_phase)
        }
    }

    pub fn set_input(&mut self, input: Option<InputId>) {
        self.input = input.map_or(NO_ID, |input| input.0);
    }

    pub fn set_member(&mut self, member: Option<MemberId>) {
        self.member = member.map_or(NO_ID, |member| member.0);
    }

    pub fn set_created_by_phase(&mut self, phase: Option<u16>) {
        self.created_by_phase = phase.unwrap_or(NO_PHASE);
    }

    pub fn set_last_mutation_phase(&mut self, phase: Option<u16>) {
        self.last_mutation_phase = phase.unwrap_or(NO_PHASE);
    }

    /// This origin, made by phase `phase` instead.
    pub fn with_created_by_phase(mut self, phase: Option<u16>) -> Origin {
        self.set_created_by_phase(phase);
        self
    }

    /// This origin, made by provider (plugin registration) `provider`.
    pub fn with_provider(mut self, provider: u32) -> Origin {
        self.created_by_provider = provider;
        self
    }
}

/// NeverC's input kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    Unknown = 0,
    Object = 1,
    Archive = 2,
    SharedLibrary = 3,
    Bitcode = 4,
    Script = 5,
    Blob = 6,
}

/// The container format of an object input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjectFormat {
    Elf,
    Coff,
    MachO,
}

/// An architecture, named by its ELF machine number (`e_machine`): the one vocabulary for machines. Targets
/// declare theirs (`[elf] machine` in `targets/*.toml`); an ELF input carries it in its header, and a COFF or
/// Mach-O input (read for inspection) is given the number of the declared target of its architecture, or
/// `EM_NONE` (0) when no target declares one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Machine(pub u16);

impl Machine {
    /// x86-64, as `targets/x86_64.toml` declares it.
    pub const X86_64: Machine = crate::arch::declared_machine(&neverc_tables::generated::targets::x86_64::TARGET);
    /// AArch64, as `targets/aarch64.toml` declares it.
    pub const AARCH64: Machine = crate::arch::declared_machine(&neverc_tables::generated::targets::aarch64::TARGET);
}

#[derive(Clone, Debug)]
pub struct Input {
    /// The path as given (or `archive(member)` for an extracted member).
    pub logical_name: String,
    pub kind: InputKind,
    pub ordinal: u32,
    pub data: SharedBytes,
    /// For an object: its bytes within `data`.
    pub object_range: Range<usize>,
    pub format: Option<ObjectFormat>,
    pub machine: Option<Machine>,
    pub archive: Option<ArchiveId>,
    pub member: Option<MemberId>,
    pub origin: Origin,
}

#[derive(Clone, Debug)]
pub struct Archive {
    pub input: InputId,
    pub thin: bool,
    pub members: Range<u32>,
    pub origin: Origin,
}

/// Why an archive member was pulled into the link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MaterializationReason {
    /// It defines a symbol that was undefined (the symbol's name).
    Defines(String),
    WholeArchive,
}

#[derive(Clone, Debug)]
pub struct ArchiveMember {
    pub archive: ArchiveId,
    pub name: String,
    pub ordinal: u32,
    /// The member's bytes: a range of the archive's data, or (thin archives) the external file's data.
    pub data: SharedBytes,
    pub range: Range<usize>,
    /// Names the archive's symbol index says the member defines.
    pub defines: Vec<String>,
    pub materialized: Option<(InputId, MaterializationReason)>,
    pub origin: Origin,
}

#[derive(Clone, Debug)]
pub struct SharedLibrary {
    pub input: InputId,
    /// The name the dynamic loader finds it by (`DT_NEEDED` in the output): its `DT_SONAME`, or its file name.
    pub install_name: String,
    /// The libraries it needs (its `DT_NEEDED` entries).
    pub needed: Vec<String>,
    /// The global names it leaves undefined, for the executable or another library to define.
    pub references: Vec<String>,
    /// The names it defines only in hidden versions, which no reference of the link binds to.
    pub hidden_definitions: Vec<String>,
    pub origin: Origin,
}

/// One LLVM bitcode module of an input (a bitcode file may hold several), with the symbols its irsymtab
/// lists. Its symbols are not graph symbols: `lto_resolve` resolves them together with the objects' and
/// `lto_generate` replaces the modules by the objects a provider generates from them, whose symbols are.
#[derive(Clone, Debug)]
pub struct BitcodeModule {
    pub input: InputId,
    /// The module's bytes within the input's data.
    pub range: Range<usize>,
    /// Which module of the file it is (0 for the first).
    pub ordinal: u32,
    /// The module's source file name (LLVM's module identifier).
    pub source_file: String,
    pub triple: String,
    pub symbols: Vec<BitcodeSymbol>,
    /// The objects generated from it, once `lto_generate` ran.
    pub generated: Vec<InputId>,
    pub origin: Origin,
}

/// A symbol of a bitcode module, as its irsymtab describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitcodeSymbol {
    pub name: String,
    pub binding: Binding,
    pub visibility: Visibility,
    /// `Undefined`, `Defined` or `Common`.
    pub definition: Definition,
    pub symbol_type: SymbolType,
    /// The COMDAT the definition belongs to.
    pub comdat: Option<String>,
    /// The section the definition is placed in, when the module names one (`__start_`/`__stop_` users).
    pub section: Option<String>,
    /// `__attribute__((used))` or `llvm.used`: the definition must be kept.
    pub used: bool,
    /// The definition may be dropped when nothing outside the module refers to it (`linkonce_odr` with
    /// `unnamed_addr`).
    pub may_omit: bool,
    /// For a common symbol: its size and alignment.
    pub common: Option<(u64, u64)>,
}

/// The kind of an input section, normalized over the formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SectionKind {
    Text,
    Data,
    ReadOnlyData,
    ReadOnlyString,
    UninitializedData,
    Tls,
    UninitializedTls,
    Note,
    /// Unwind tables (`.eh_frame`, `__compact_unwind`, `.pdata`/`.xdata`).
    Unwind,
    Debug,
    Metadata,
    Other,
}

pub mod section_flags {
    //! Object section flags (PluginObject.h).
    pub const ALLOCATED: u64 = 1 << 0;
    pub const EXECUTABLE: u64 = 1 << 1;
    pub const WRITABLE: u64 = 1 << 2;
    pub const MERGEABLE: u64 = 1 << 3;
    pub const STRINGS: u64 = 1 << 4;
    pub const TLS: u64 = 1 << 5;
    pub const DEBUG: u64 = 1 << 6;
    pub const UNWIND: u64 = 1 << 7;
    pub const DISCARDABLE: u64 = 1 << 8;
    pub const RETAIN: u64 = 1 << 9;
}

pub mod atom_flags {
    //! Atom flags (PluginLink.h).
    pub const LIVE: u64 = 1 << 0;
    pub const ROOT: u64 = 1 << 1;
    pub const SYNTHETIC: u64 = 1 << 2;
    pub const FOLDED: u64 = 1 << 3;
    pub const ADDRESS_SIGNIFICANT: u64 = 1 << 4;
    pub const TLS: u64 = 1 << 5;
    pub const UNWIND: u64 = 1 << 6;
}

#[derive(Clone, Debug)]
pub struct Section {
    pub input: InputId,
    pub name: String,
    pub kind: SectionKind,
    pub flags: u64,
    pub alignment: u64,
    pub address: u64,
    pub file_offset: u64,
    pub size: u64,
    pub comdat: Option<ComdatId>,
    /// For ELF `SHF_MERGE` sections: the entry size.
    pub entry_size: u64,
    pub atom: AtomId,
    pub origin: Origin,
}

/// Where an atom's bytes are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Content {
    /// A range of an input's data.
    Input { input: InputId, range: Range<usize> },
    /// Bytes made by a phase or a plugin.
    Owned(Arc<[u8]>),
    /// Only zeros (`.bss`), of the atom's `zero_fill` size.
    ZeroFill,
}

#[derive(Clone, Debug)]
pub struct Atom {
    pub section: Option<SectionId>,
    pub name: String,
    pub flags: u64,
    pub alignment: u64,
    pub address: u64,
    pub file_offset: u64,
    pub content: Content,
    pub zero_fill: u64,
    pub comdat: Option<ComdatId>,
    pub fold_leader: Option<AtomId>,
    pub origin: Origin,
}

impl Atom {
    /// An atom the linker makes: live, holding `bytes`, in no input section unless `section` says so.
    pub fn synthetic(section: Option<SectionId>, name: &str, alignment: u64, bytes: Vec<u8>, origin: Origin) -> Atom {
        Atom {
            section,
            name: name.into(),
            flags: atom_flags::LIVE | atom_flags::SYNTHETIC,
            alignment,
            address: 0,
            file_offset: 0,
            content: Content::Owned(std::sync::Arc::from(bytes)),
            zero_fill: 0,
            comdat: None,
            fold_leader: None,
            origin,
        }
    }

    pub fn is_live(&self) -> bool {
        self.flags & atom_flags::LIVE != 0
    }

    /// The atom's size in memory.
    pub fn size(&self) -> u64 {
        match &self.content {
            Content::Input { range, .. } => range.len() as u64,
            Content::Owned(bytes) => bytes.len() as u64,
            Content::ZeroFill => self.zero_fill,
        }
    }
}

// A symbol's binding, visibility and definition are the plugin ABI's enumerations (`abi/link.toml`), so that
// what a plugin reads and writes is the graph's own value.
pub use neverc_tables::plugin_abi::link::{
    LinkSymbolBinding as Binding, LinkSymbolDefinition as Definition, LinkSymbolVisibility as Visibility,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolType {
    None,
    Function,
    Object,
    Section,
    File,
    Tls,
    /// An indirect function (`STT_GNU_IFUNC`): the symbol names a resolver, and the function is whatever
    /// the resolver returns at start-up.
    Ifunc,
    Other,
}

#[derive(Clone, Debug)]
pub struct Symbol {
    pub name: String,
    pub version: Option<String>,
    pub binding: Binding,
    pub visibility: Visibility,
    pub definition: Definition,
    pub symbol_type: SymbolType,
    /// The defining atom (a defined, non-absolute symbol).
    pub atom: Option<AtomId>,
    /// Offset within the atom, or the absolute value; for a common symbol, its alignment.
    pub value: u64,
    pub size: u64,
    /// The definition that wins for this name (set by symbol resolution).
    pub prevailing: bool,
    pub exported: bool,
    pub imported: bool,
    pub root: bool,
    /// For an undefined or losing symbol: the prevailing symbol of the same name, once resolved.
    pub resolution: Option<SymbolId>,
    pub origin: Origin,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeKind {
    Relocation = 1,
    Association = 2,
    KeepAlive = 3,
    Unwind = 4,
    FormatExtension = 5,
}

/// A relocation type as the object file spells it, with its format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RelocationType {
    pub format: ObjectFormat,
    pub raw: u32,
}

#[derive(Clone, Debug)]
pub struct Edge {
    pub kind: EdgeKind,
    pub source: AtomId,
    pub offset: u64,
    pub relocation: RelocationType,
    /// Width in bits of the patched field.
    pub width: u8,
    pub addend: i64,
    pub pc_relative: bool,
    pub signed: bool,
    pub target_symbol: MaybeId<SymbolId>,
    pub target_atom: MaybeId<AtomId>,
    pub origin: Origin,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComdatSelection {
    Any = 1,
    ExactMatch = 2,
    SameSize = 3,
    Largest = 4,
    Newest = 5,
    NoDuplicates = 6,
}

#[derive(Clone, Debug)]
pub struct Comdat {
    pub name: String,
    pub selection: ComdatSelection,
    pub input: InputId,
    pub sections: Vec<SectionId>,
    /// The group of the same name that was kept (set by COMDAT selection).
    pub selected: Option<ComdatId>,
    pub origin: Origin,
}

#[derive(Clone, Debug)]
pub struct Import {
    pub name: String,
    pub library: Option<SharedLibraryId>,
    pub symbol: SymbolId,
    pub origin: Origin,
}

#[derive(Clone, Debug)]
pub struct Export {
    pub name: String,
    pub symbol: SymbolId,
    pub origin: Origin,
}

#[derive(Clone, Debug)]
pub struct Unwind {
    /// The atom (function) the record describes, when known.
    pub atom: Option<AtomId>,
    /// The unwind-table atom holding the record, and the record's range within it.
    pub table: AtomId,
    pub range: Range<u64>,
    pub personality: Option<SymbolId>,
    pub origin: Origin,
}

/// What a synthetic entity is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyntheticRole {
    /// A global offset table slot holding the address of a symbol.
    GotEntry(SymbolId),
    /// An indirect function's PLT entry, its `.got.plt` slot and its `IRELATIVE` relocation.
    IpltEntry(SymbolId),
    /// A symbol the linker defines (`__start_x`, `__init_array_start`, ...).
    LinkerDefined(String),
    /// Made by a plugin.
    Plugin(String),
}

#[derive(Clone, Debug)]
pub struct Synthetic {
    pub role: SyntheticRole,
    pub section: Option<SectionId>,
    pub atom: Option<AtomId>,
    pub origin: Origin,
}

#[derive(Clone, Debug)]
pub struct Constraint {
    /// What kind of constraint (`order`: place `subject` at position `value` among its output section).
    pub kind: String,
    pub subject: u64,
    pub value: u64,
    pub required: bool,
    pub origin: Origin,
}

/// The field of an instruction (or data word) that a relocation the linker makes itself writes: `size` bits
/// of the place, the value shifted right by `shift` and written into `bits` (empty: the whole place), as the
/// target file declares its relocations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstructionField {
    pub size: u32,
    pub shift: u32,
    /// 0, or the bit from which the value is rounded first (RISC-V `%hi`: 12).
    pub round: u32,
    pub bits: &'static [neverc_tables::BitRange],
}

/// The target a graph's objects are read for: whose ELF machine, class and byte order they must have, and
/// whose declared relocations they may use.
#[derive(Clone, Default)]
pub enum LinkTarget {
    /// Not known yet: the first object read sets it to the bundled target its ELF header names (as lld infers
    /// its target from the first input without `-m`). A first object that is not ELF, or is of a machine no
    /// bundled target declares, is refused.
    #[default]
    FromFirstObject,
    /// Every object must be an ELF file of this target's machine, class and byte order, and use only its
    /// declared relocations. `set_by` names what chose it for messages: the input whose header did, or the
    /// caller's option (`-m aarch64linux`); none when a caller chose it without saying how.
    Fixed {
        target: &'static TargetRecord,
        set_by: Option<String>,
    },
    /// Objects of any format and machine are read side by side, for inspecting inputs (never for a link): an
    /// ELF object's relocations are checked against the bundled target of its machine, when there is one.
    AnyMachine,
}

impl std::fmt::Debug for LinkTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkTarget::FromFirstObject => f.write_str("FromFirstObject"),
            LinkTarget::Fixed { target, set_by } => f
                .debug_struct("Fixed")
                .field("target", &target.name)
                .field("set_by", set_by)
                .finish(),
            LinkTarget::AnyMachine => f.write_str("AnyMachine"),
        }
    }
}

/// The graph of one link. Entities are never removed while a link runs (losing COMDAT groups and dead
/// atoms are marked), so ids stay dense and stable.
#[derive(Clone, Debug, Default)]
pub struct LinkGraph {
    /// The target the objects are read for.
    pub target: LinkTarget,
    pub inputs: Vec<Input>,
    pub archives: Vec<Archive>,
    pub archive_members: Vec<ArchiveMember>,
    pub shared_libraries: Vec<SharedLibrary>,
    pub bitcode_modules: Vec<BitcodeModule>,
    pub sections: Vec<Section>,
    pub atoms: Vec<Atom>,
    pub symbols: Vec<Symbol>,
    pub edges: Vec<Edge>,
    pub comdats: Vec<Comdat>,
    pub imports: Vec<Import>,
    pub exports: Vec<Export>,
    pub unwinds: Vec<Unwind>,
    pub synthetics: Vec<Synthetic>,
    pub constraints: Vec<Constraint>,
    /// Edges grouped by source atom: `edges_of[atom]` is a range of `edge_order`.
    pub edge_order: Vec<EdgeId>,
    pub edges_by_atom: Vec<Range<u32>>,
    /// One resolution per symbol of every bitcode module, made by `lto_resolve`.
    pub lto_resolutions: Vec<crate::lto::LtoResolution>,
    /// Whether readers leave out the relocations of debugging sections, which an output that strips them
    /// (`-s`, `-S`) never applies (they keep nothing alive either): most of the relocations of objects built
    /// with debugging information, such as the Rust standard library's.
    pub skip_debug_relocations: bool,
    /// For a shared library output: which of its exported definitions its own references still reach
    /// through the loader, so that another definition may interpose (`None` for any other output; set by
    /// symbol resolution).
    pub interposable: Option<crate::context::SymbolicBinding>,
    /// For a shared library output: the definitions a dynamic list (or `--export-dynamic-symbol` with
    /// `-Bsymbolic`) names, which stay interposable whatever `interposable` binds here.
    pub listed_interposable: rustc_hash::FxHashSet<SymbolId>,
}

impl LinkGraph {
    /// How many entities of `kind` the graph holds.
    pub fn count(&self, kind: EntityKind) -> usize {
        match kind {
            EntityKind::Input => self.inputs.len(),
            EntityKind::Archive => self.archives.len(),
            EntityKind::ArchiveMember => self.archive_members.len(),
            EntityKind::SharedLibrary => self.shared_libraries.len(),
            EntityKind::BitcodeModule => self.bitcode_modules.len(),
            EntityKind::Section => self.sections.len(),
            EntityKind::Atom => self.atoms.len(),
            EntityKind::Symbol => self.symbols.len(),
            EntityKind::Edge => self.edges.len(),
            EntityKind::Comdat => self.comdats.len(),
            EntityKind::Import => self.imports.len(),
            EntityKind::Export => self.exports.len(),
            EntityKind::Unwind => self.unwinds.len(),
            EntityKind::Synthetic => self.synthetics.len(),
            EntityKind::Constraint => self.constraints.len(),
            EntityKind::LtoResolution => self.lto_resolutions.len(),
        }
    }

    /// The bytes of an atom (zeros are not materialized: a zero-fill atom has none).
    pub fn atom_bytes<'a>(&'a self, atom: &'a Atom) -> &'a [u8] {
        match &atom.content {
            Content::Input { input, range } => self
                .inputs
                .get(input.index())
                .and_then(|input| input.data.get(range.clone()))
                .unwrap_or(&[]),
            Content::Owned(bytes) => bytes,
            Content::ZeroFill => &[],
        }
    }

    /// Rebuilds the per-atom edge index after edges were added: the edges in (source, offset) order, edges
    /// at the same place in the order they were added. A counting sort by source (linear in the edges and
    /// atoms, one pass to count, one to place); readers and makers append an atom's edges mostly by offset,
    /// so the edges of one atom are sorted by offset only when they are not in order already.
    pub fn index_edges(&mut self) {
        let mut ranges = vec![0u32..0u32; self.atoms.len()];
        // Reading makes the edges in source order (atoms in input order, each section's relocations after the
        // section's atom); synthesis then appends edges of the atoms it made, not always in their order. So
        // the edges up to the first whose source comes before its predecessor's (`split`) keep their places,
        // and when every edge after that is of a later atom than all before it, only those are sorted.
        let mut valid = true;
        let mut split = None;
        let mut previous = (0u32, 0u64);
        // The atoms before `split` whose edges are not by offset (some assemblers write relocations out of
        // order).
        let mut unsorted = Vec::new();
        for (index, edge) in self.edges.iter().enumerate() {
            match ranges.get_mut(edge.source.index()) {
                Some(range) => range.end += 1,
                None => valid = false,
            }
            if split.is_some() {
                continue;
            }
            let place = (edge.source.0, edge.offset);
            if place < previous {
                if place.0 == previous.0 {
                    unsorted.push(place.0);
                } else {
                    split = Some(index);
                }
            }
            previous = place;
        }
        let split = split.unwrap_or(self.edges.len());
        // The sources before `split` do not decrease, so the last is the greatest.
        let before = split.checked_sub(1).map(|last| self.edges[last].source);
        let tail_after = self.edges[split..]
            .iter()
            .all(|edge| before.is_none_or(|before| edge.source > before));
        let mut next = 0u32;
        for range in &mut ranges {
            let count = range.end;
            *range = if valid && tail_after {
                next..next + count
            } else {
                next..next
            };
            next += count;
        }
        if valid && tail_after {
            let mut tail: Vec<EdgeId> = (split as u32..next).map(EdgeId).collect();
            // Stable: edges at the same place stay in the order they were added.
            tail.sort_by_key(|id| {
                let edge = &self.edges[id.index()];
                (edge.source, edge.offset)
            });
            self.edge_order = (0..split as u32).map(EdgeId).chain(tail).collect();
            unsorted.dedup();
            let unsorted: Vec<Range<u32>> = unsorted.iter().map(|atom| ranges[*atom as usize].clone()).collect();
            self.sort_atom_edges_by_offset(&unsorted);
            self.edges_by_atom = ranges;
            return;
        }
        let mut order = vec![EdgeId(0); next as usize];
        for (index, edge) in self.edges.iter().enumerate() {
            if let Some(range) = ranges.get_mut(edge.source.index()) {
                order[range.end as usize] = EdgeId(index as u32);
                range.end += 1;
            }
        }
        self.edge_order = order;
        self.sort_atom_edges_by_offset(&ranges);
        self.edges_by_atom = ranges;
    }

    /// Sorts each atom's part of `edge_order` (its edges in the order added) by offset, keeping edges at the
    /// same offset in that order.
    fn sort_atom_edges_by_offset(&mut self, ranges: &[Range<u32>]) {
        for range in ranges {
            let edges = &mut self.edge_order[range.start as usize..range.end as usize];
            let offset = |id: &EdgeId| self.edges[id.index()].offset;
            if !edges.is_sorted_by_key(offset) {
                edges.sort_by_key(offset);
            }
        }
    }

    /// The edges whose source is `atom`, by offset.
    pub fn edges_of(&self, atom: AtomId) -> impl Iterator<Item = (EdgeId, &Edge)> {
        let range = self.edges_by_atom.get(atom.index()).cloned().unwrap_or(0..0);
        self.edge_order[range.start as usize..range.end as usize]
            .iter()
            .map(|id| (*id, &self.edges[id.index()]))
    }

    /// The edges of `atom` at `offset`, found by binary search in the atom's edges (which `index_edges`
    /// sorts by offset).
    pub fn edges_at(&self, atom: AtomId, offset: u64) -> impl Iterator<Item = (EdgeId, &Edge)> {
        let range = self.edges_by_atom.get(atom.index()).cloned().unwrap_or(0..0);
        let ids = &self.edge_order[range.start as usize..range.end as usize];
        let first = ids.partition_point(|id| self.edges[id.index()].offset < offset);
        ids[first..]
            .iter()
            .map(|id| (*id, &self.edges[id.index()]))
            .take_while(move |(_, edge)| edge.offset == offset)
    }

    /// The target the link is for, once an object (or the caller) fixed it.
    pub fn target_record(&self) -> Option<&'static neverc_tables::TargetRecord> {
        match &self.target {
            LinkTarget::Fixed { target, .. } => Some(target),
            _ => None,
        }
    }

    /// What the target declares about an edge's relocation type (`targets/*.toml`): its kind, base, field
    /// and overflow rule. `None` for an undeclared type (the reader refuses those) or before the target is
    /// known.
    pub fn relocation(&self, edge: &Edge) -> Option<&'static neverc_tables::RelocationRecord> {
        let format = match edge.relocation.format {
            ObjectFormat::Elf => neverc_tables::RelocationFormat::Elf,
            _ => return None,
        };
        self.target_record()?.relocation(format, edge.relocation.raw)
    }

    /// The number of the target's relocation of `kind` relative to `base` with a field of `size` bits, for
    /// edges the linker makes itself (a GOT slot's address, a PLT entry's jump).
    pub fn declared_relocation(
        &self,
        kind: neverc_tables::RelocationKind,
        base: neverc_tables::RelocationBase,
        size: u32,
    ) -> Option<u32> {
        self.target_record()?
            .relocations
            .iter()
            .find(|relocation| relocation.kind == kind && relocation.relative_to == base && relocation.size == size)
            .map(|relocation| relocation.number)
    }

    /// The number of the target's relocation that writes a value of `kind` relative to `base` into the field
    /// `field` describes (its size, shift and instruction bits), for instructions the linker writes itself (a
    /// PLT entry's `adrp`, a thunk's `add`). Relocations that differ only in name compute the same thing, so
    /// the first is as good as any; of those that differ in their overflow rule, one that checks is preferred.
    pub fn declared_field(
        &self,
        kind: neverc_tables::RelocationKind,
        base: neverc_tables::RelocationBase,
        field: &InstructionField,
    ) -> Option<u32> {
        let matching = |relocation: &&neverc_tables::RelocationRecord| {
            relocation.kind == kind
                && relocation.relative_to == base
                && relocation.size == field.size
                && relocation.shift == field.shift
                && relocation.round == field.round
                && relocation.bits == field.bits
        };
        let relocations = self.target_record()?.relocations;
        relocations
            .iter()
            .filter(matching)
            .find(|relocation| relocation.overflow != neverc_tables::Overflow::None)
            .or_else(|| relocations.iter().find(matching))
            .map(|relocation| relocation.number)
    }

    /// The atom that stands for `atom`, a section of a group that lost COMDAT selection: the section of the
    /// same name and size in the group that won, as GNU ld redirects what refers to a discarded copy (the
    /// debugging information of the unit whose copy was discarded).
    pub fn kept_copy(&self, atom: AtomId) -> Option<AtomId> {
        let entry = self.atoms.get(atom.index())?;
        let comdat = self.comdats.get(entry.comdat?.index())?;
        let kept = self.comdats.get(comdat.selected?.index())?;
        let section = self.sections.get(entry.section?.index())?;
        kept.sections
            .iter()
            .map(|kept| &self.sections[kept.index()])
            .find(|kept| kept.name == section.name && kept.size == section.size)
            .map(|kept| kept.atom)
    }

    /// Whether an atom belongs to a group that lost COMDAT selection.
    pub fn is_discarded(&self, atom: AtomId) -> bool {
        self.atoms
            .get(atom.index())
            .and_then(|atom| atom.comdat)
            .and_then(|comdat| self.comdats.get(comdat.index()).map(|entry| (comdat, entry.selected)))
            .is_some_and(|(comdat, selected)| selected.is_some_and(|selected| selected != comdat))
    }

    /// For every input, its place in command-line order: (the position of the input, or of the archive it was
    /// extracted from; 0 for a top-level input, 1 + the member's ordinal in its archive for a member). An object
    /// LTO generated takes the place of the bitcode it was generated from (the first of them, for the merged
    /// module of full LTO), as ld.bfd places a plugin's objects: before the start files' epilogues (`crtend.o`,
    /// `crtn.o`) that must come last, and where a distributed ThinLTO build's final link puts its objects.
    pub fn command_line_order(&self) -> Vec<(u32, u32)> {
        let mut order: Vec<(u32, u32)> = self
            .inputs
            .iter()
            .enumerate()
            .map(|(index, input)| match input.member {
                Some(member) => {
                    let member = &self.archive_members[member.index()];
                    let archive = &self.archives[member.archive.index()];
                    (archive.input.0, member.ordinal.saturating_add(1))
                }
                None => (index as u32, 0),
            })
            .collect();
        for module in &self.bitcode_modules {
            let Some(&place) = order.get(module.input.index()) else {
                continue;
            };
            for generated in &module.generated {
                if let Some(slot) = order.get_mut(generated.index()) {
                    // Bitcode inputs come before the objects generated from them, so the first module wins.
                    if generated.index() > module.input.index() && *slot > place {
                        *slot = place;
                    }
                }
            }
        }
        order
    }

    /// The machine of the link's target, as its file declares it; `None` before the target is known.
    pub fn machine(&self) -> Option<Machine> {
        self.target_record()?.elf.map(|elf| Machine(elf.machine))
    }

    /// The per-architecture code of the link's target (relaxations, the entries of indirect functions,
    /// range-extension thunks): its architecture's table, or the generic one before the target is known or
    /// for a target the linker has no such code for.
    pub(crate) fn arch(&self) -> &'static crate::arch::Arch {
        crate::arch::Arch::of(self.target_record())
    }

    /// The declared kind of an edge's relocation, if it is declared.
    pub fn relocation_kind(&self, edge: &Edge) -> Option<neverc_tables::RelocationKind> {
        self.relocation(edge).map(|relocation| relocation.kind)
    }

    /// The symbol a reference resolves to: the prevailing definition of its name, or itself.
    pub fn resolved(&self, symbol: SymbolId) -> SymbolId {
        self.symbols
            .get(symbol.index())
            .and_then(|entry| entry.resolution)
            .unwrap_or(symbol)
    }

    /// Whether `symbol` (resolved) is a definition of a shared library output that the loader may bind
    /// elsewhere (preemptible): a global or weak definition of default visibility, unless `-Bsymbolic`
    /// (or, for a function, `-Bsymbolic-functions`, or a dynamic list that does not name it) binds it here.
    pub fn is_preemptible(&self, symbol: SymbolId) -> bool {
        use crate::context::SymbolicBinding;
        let (Some(symbolic), Some(entry)) = (self.interposable, self.symbols.get(symbol.index())) else {
            return false;
        };
        let function = matches!(entry.symbol_type, SymbolType::Function | SymbolType::Ifunc);
        !matches!(
            entry.definition,
            Definition::Undefined | Definition::Shared | Definition::Absolute
        ) && matches!(entry.binding, Binding::Global | Binding::Weak)
            && entry.visibility == Visibility::Default
            && !matches!(entry.symbol_type, SymbolType::Section | SymbolType::File)
            && (self.listed_interposable.contains(&symbol)
                || match symbolic {
                    SymbolicBinding::None => true,
                    SymbolicBinding::Functions => !function,
                    SymbolicBinding::All => false,
                })
    }

    /// The atom an edge points into: its target atom, or the atom defining the symbol its target resolves to.
    pub fn edge_target_atom(&self, edge: &Edge) -> Option<AtomId> {
        edge.target_atom.get().or_else(|| {
            edge.target_symbol
                .get()
                .and_then(|symbol| self.symbols.get(self.resolved(symbol).index()))
                .and_then(|symbol| symbol.atom)
        })
    }

    /// The first id that points outside its arena, described; `None` when every id is in range (readers
    /// must keep it so for any input).
    pub fn dangling_id(&self) -> Option<String> {
        let atoms = self.atoms.len();
        let in_atoms = |atom: AtomId| atom.index() < atoms;
        for (index, atom) in self.atoms.iter().enumerate() {
            if atom
                .section
                .is_some_and(|section| section.index() >= self.sections.len())
            {
                return Some(format!("atom {index}: section out of range"));
            }
        }
        for (index, section) in self.sections.iter().enumerate() {
            if !in_atoms(section.atom) || section.input.index() >= self.inputs.len() {
                return Some(format!("section {index}: atom or input out of range"));
            }
        }
        for (index, symbol) in self.symbols.iter().enumerate() {
            if symbol.atom.is_some_and(|atom| !in_atoms(atom)) {
                return Some(format!("symbol {index}: atom out of range"));
            }
        }
        for (index, edge) in self.edges.iter().enumerate() {
            if !in_atoms(edge.source)
                || edge
                    .target_symbol
                    .get()
                    .is_some_and(|symbol| symbol.index() >= self.symbols.len())
                || edge.target_atom.get().is_some_and(|atom| !in_atoms(atom))
            {
                return Some(format!("edge {index}: source or target out of range"));
            }
        }
        for (index, library) in self.shared_libraries.iter().enumerate() {
            if library.input.index() >= self.inputs.len() {
                return Some(format!("shared library {index}: input out of range"));
            }
        }
        for (index, comdat) in self.comdats.iter().enumerate() {
            if comdat
                .sections
                .iter()
                .any(|section| section.index() >= self.sections.len())
            {
                return Some(format!("COMDAT {index}: section out of range"));
            }
        }
        for (index, unwind) in self.unwinds.iter().enumerate() {
            if !in_atoms(unwind.table)
                || unwind.atom.is_some_and(|atom| !in_atoms(atom))
                || unwind.range.start > unwind.range.end
            {
                return Some(format!("unwind record {index}: atom or range out of range"));
            }
        }
        None
    }

    /// The name of the input an entity came from, for messages.
    pub fn input_name(&self, input: Option<InputId>) -> &str {
        input
            .and_then(|input| self.inputs.get(input.index()))
            .map_or("<linker>", |input| input.logical_name.as_str())
    }
}

/// The alignment an input's `sh_addralign` (or a common symbol's alignment) stands for: 0 means 1 (as ELF
/// says). The reader refuses a section alignment that is not a power of two, as ld.lld does; any other value
/// that is not one (a common symbol's) counts as its lowest set bit (3 as 1, 24 as 8), the largest power of
/// two it is a multiple of, as ld.bfd reads it.
pub fn effective_alignment(raw: u64) -> u64 {
    if raw == 0 { 1 } else { raw & raw.wrapping_neg() }
}

/// How strongly a definition of `definition` and `binding` defines its name: strong [`STRONG`], common
/// [`COMMON`], weak 2, a shared library's 1 (any definition in the link's own objects prevails over it, as
/// in GNU ld), undefined 0 (symbol resolution and LTO's resolution rank bitcode symbols the same way).
pub fn strength(definition: Definition, binding: Binding) -> u8 {
    match (definition, binding) {
        (Definition::Undefined, _) => 0,
        (Definition::Shared, _) => 1,
        (_, Binding::Weak) => 2,
        (Definition::Common, _) | (_, Binding::Common) => COMMON,
        _ => STRONG,
    }
}

/// The [`strength`] of a strong definition.
pub const STRONG: u8 = 4;
/// The [`strength`] of a common symbol.
pub const COMMON: u8 = 3;
