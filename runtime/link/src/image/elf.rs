//! Writing an ELF64 little-endian executable (`ET_EXEC` for a static executable: the layout says) from an
//! [`ImageLayout`] the caller computed.
//!
//! The caller lays out: it chooses every segment's and section's address and file offset, and the writer
//! writes exactly what it is told, zero-filling the gaps. The file is, in order:
//!
//! 1. the ELF header at offset 0 and the program headers right after it (one `PT_LOAD` per segment in
//!    layout order, then a `PT_GNU_STACK` with read and write permission so the stack is not executable);
//!    [`elf_headers_size`] says how many bytes they take, and no section contents may start before that;
//! 2. the section contents at their file offsets, and zero bytes up to the end of every segment's file
//!    range;
//! 3. after the last of those, the metadata the writer synthesises: the kept relocations (`--emit-relocs`:
//!    one 8-aligned `.rela<section>` per section that has any), `.symtab` (8-aligned) and `.strtab` when the
//!    layout has symbols, `.shstrtab`, and the 8-aligned section header table, which ends the file.
//!
//! The section header table is: the null section, the layout sections in layout order (layout section `i`
//! is ELF section `i + 1`), the kept relocation sections in layout order, then `.symtab`, `.strtab` (when
//! there are symbols) and `.shstrtab`. (ld.bfd lists each `.rela<section>` right after its section; the
//! order of section headers means nothing to a reader, which follows `sh_info`.)
//!
//! The writer rejects a layout it cannot write as a well-formed ELF file, with an [`ElfError`] naming the
//! item: an alignment that is neither zero nor a power of two; a segment whose `file_offset % alignment`
//! differs from `virtual_address % alignment` (the loader maps pages, so the two must be congruent); a
//! segment whose file size exceeds its memory size; segments not in ascending address order (ELF requires
//! `PT_LOAD` entries sorted by `p_vaddr`); ranges that overflow `u64`; section contents whose length is not
//! the section size, or any contents for a `NoBits` section; section contents that overlap each other or
//! the headers; references to segments or sections that do not exist; names containing NUL or reusing the
//! names of the synthesised tables; and more segments or sections than ELF can count without extended
//! numbering. Policy — writable-executable segments, where the entry point lies, overlapping segments,
//! sections outside segments — is the business of the `image_verify` gate ([`crate::image::verify_image`]),
//! which also has to judge images that a replacing plugin wrote.
//!
//! Everything is staged through a [`BoundedImageWriter`], so an image larger than the caller's bound
//! aborts. The output depends only on the layout: no timestamps, no hash-map order.

use rustc_hash::FxHashMap;
use std::fmt;
use std::ops::BitOr;

use super::sparse::SparseBytes;
use super::writer::{BoundedImageWriter, WriterError};

/// The size of the ELF64 file header.
pub(crate) const FILE_HEADER_SIZE: u64 = 64;
/// The size of one ELF64 program header.
pub(crate) const PROGRAM_HEADER_SIZE: u64 = 56;
/// The size of one ELF64 section header.
pub(crate) const SECTION_HEADER_SIZE: u64 = 64;
/// The size of one ELF64 symbol.
const SYMBOL_SIZE: u64 = 24;

pub(crate) const PT_LOAD: u32 = 1;
pub(crate) const PT_DYNAMIC: u32 = 2;
pub(crate) const PT_INTERP: u32 = 3;
pub(crate) const PT_PHDR: u32 = 6;
pub(crate) const PT_NOTE: u32 = 4;
pub(crate) const PT_TLS: u32 = 7;
pub(crate) const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
pub(crate) const PT_GNU_STACK: u32 = 0x6474_e551;
pub(crate) const PT_GNU_RELRO: u32 = 0x6474_e552;
pub(crate) const PT_GNU_PROPERTY: u32 = 0x6474_e553;
pub(crate) const PF_X: u32 = 1;
pub(crate) const PF_W: u32 = 2;
pub(crate) const PF_R: u32 = 4;
pub(crate) const SHT_NOBITS: u32 = 8;
pub(crate) const SHF_WRITE: u64 = 1;
pub(crate) const SHF_ALLOC: u64 = 2;
pub(crate) const SHF_EXECINSTR: u64 = 4;
pub(crate) const SHF_TLS: u64 = 0x400;
pub(crate) const SHF_MERGE: u64 = 0x10;
pub(crate) const SHF_STRINGS: u64 = 0x20;
pub(crate) const SHF_COMPRESSED: u64 = 0x800;
const SHT_PROGBITS: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_STRTAB: u32 = 3;
const SHT_NOTE: u32 = 7;
const SHT_INIT_ARRAY: u32 = 14;
const SHT_FINI_ARRAY: u32 = 15;
const SHT_PREINIT_ARRAY: u32 = 16;
const SHT_RELA: u32 = 4;
const SHT_DYNAMIC: u32 = 6;
const SHT_HASH: u32 = 5;
const SHT_DYNSYM: u32 = 11;
const SHT_GNU_HASH: u32 = 0x6fff_fff6;
const SHT_RELR: u32 = 19;
const SHT_GNU_VERDEF: u32 = 0x6fff_fffd;
/// `EI_OSABI` of an output that uses GNU extensions (indirect functions).
const ELFOSABI_GNU: u8 = 3;
const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;
const SHT_GNU_VERSYM: u32 = 0x6fff_ffff;
/// `sh_flags`: `sh_info` holds a section index (that of the section a relocation section applies to).
const SHF_INFO_LINK: u64 = 0x40;
/// The size of one ELF64 relocation with an addend.
const RELA_SIZE: u64 = 24;
const SHN_ABS: u16 = 0xfff1;
const SHN_LORESERVE: usize = 0xff00;
const PN_XNUM: usize = 0xffff;

/// The names of the sections the writer synthesises; layout sections may not use them.
pub(crate) const SYNTHESIZED_SECTIONS: [&str; 3] = [".symtab", ".strtab", ".shstrtab"];

/// Segment permissions, with NeverC's segment flag bits: read is b0, write b1, execute b2.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SegmentFlags(u8);

impl SegmentFlags {
    pub const READ: SegmentFlags = SegmentFlags(1);
    pub const WRITE: SegmentFlags = SegmentFlags(2);
    pub const EXECUTE: SegmentFlags = SegmentFlags(4);

    /// No permission at all.
    pub const fn empty() -> SegmentFlags {
        SegmentFlags(0)
    }

    /// The flags for NeverC bits `bits`; bits above b2 are dropped.
    pub const fn from_bits_truncate(bits: u8) -> SegmentFlags {
        SegmentFlags(bits & 7)
    }

    /// NeverC's bits.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// Whether every flag in `other` is set.
    pub const fn contains(self, other: SegmentFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The flags of both (`|`, usable in constants).
    pub const fn union(self, other: SegmentFlags) -> SegmentFlags {
        SegmentFlags(self.0 | other.0)
    }

    /// The ELF `p_flags` value (`PF_R` = 4, `PF_W` = 2, `PF_X` = 1).
    pub const fn to_elf(self) -> u32 {
        let mut flags = 0;
        if self.contains(SegmentFlags::READ) {
            flags |= PF_R;
        }
        if self.contains(SegmentFlags::WRITE) {
            flags |= PF_W;
        }
        if self.contains(SegmentFlags::EXECUTE) {
            flags |= PF_X;
        }
        flags
    }

    /// The flags of an ELF `p_flags` value; other bits are dropped.
    pub const fn from_elf(p_flags: u32) -> SegmentFlags {
        let mut bits = 0;
        if p_flags & PF_R != 0 {
            bits |= SegmentFlags::READ.0;
        }
        if p_flags & PF_W != 0 {
            bits |= SegmentFlags::WRITE.0;
        }
        if p_flags & PF_X != 0 {
            bits |= SegmentFlags::EXECUTE.0;
        }
        SegmentFlags(bits)
    }
}

impl BitOr for SegmentFlags {
    type Output = SegmentFlags;

    fn bitor(self, other: SegmentFlags) -> SegmentFlags {
        SegmentFlags(self.0 | other.0)
    }
}

impl fmt::Display for SegmentFlags {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", permission_string(self.to_elf()))
    }
}

/// Section attributes. The bits are this crate's own; [`SectionFlags::to_elf`] maps them to `sh_flags`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SectionFlags(u8);

impl SectionFlags {
    /// The section occupies memory at run time (`SHF_ALLOC`).
    pub const ALLOC: SectionFlags = SectionFlags(1);
    /// The section is writable at run time (`SHF_WRITE`).
    pub const WRITE: SectionFlags = SectionFlags(2);
    /// The section holds instructions (`SHF_EXECINSTR`).
    pub const EXECUTE: SectionFlags = SectionFlags(4);
    /// The section is part of the thread-local storage template (`SHF_TLS`).
    pub const TLS: SectionFlags = SectionFlags(8);
    /// The section is a table of NUL-terminated strings that a reader may merge (`SHF_MERGE | SHF_STRINGS`,
    /// one-byte characters: `sh_entsize` 1), such as `.debug_str` and `.comment`.
    pub const STRINGS: SectionFlags = SectionFlags(16);
    /// The section holds a compression header and compressed bytes (`SHF_COMPRESSED`).
    pub const COMPRESSED: SectionFlags = SectionFlags(32);

    /// No attribute at all.
    pub const fn empty() -> SectionFlags {
        SectionFlags(0)
    }

    /// Whether every flag in `other` is set.
    pub const fn contains(self, other: SectionFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The ELF `sh_flags` value.
    pub const fn to_elf(self) -> u64 {
        let mut flags = 0;
        if self.contains(SectionFlags::ALLOC) {
            flags |= SHF_ALLOC;
        }
        if self.contains(SectionFlags::WRITE) {
            flags |= SHF_WRITE;
        }
        if self.contains(SectionFlags::EXECUTE) {
            flags |= SHF_EXECINSTR;
        }
        if self.contains(SectionFlags::TLS) {
            flags |= SHF_TLS;
        }
        if self.contains(SectionFlags::STRINGS) {
            flags |= SHF_MERGE | SHF_STRINGS;
        }
        if self.contains(SectionFlags::COMPRESSED) {
            flags |= SHF_COMPRESSED;
        }
        flags
    }
}

impl BitOr for SectionFlags {
    type Output = SectionFlags;

    fn bitor(self, other: SectionFlags) -> SectionFlags {
        SectionFlags(self.0 | other.0)
    }
}

/// What a section holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SectionKind {
    /// Bytes from the file (`SHT_PROGBITS`).
    ProgBits,
    /// Zero bytes that take no file space (`SHT_NOBITS`, e.g. `.bss`).
    NoBits,
    /// Notes (`SHT_NOTE`).
    Note,
    /// Constructor pointers (`SHT_INIT_ARRAY`).
    InitArray,
    /// Destructor pointers (`SHT_FINI_ARRAY`).
    FiniArray,
    /// Pre-initialisation pointers (`SHT_PREINIT_ARRAY`).
    PreinitArray,
    /// Relocations with addends (`SHT_RELA`), such as the `IRELATIVE` ones of a static executable.
    Rela,
    /// The dynamic section (`SHT_DYNAMIC`): tag and value pairs for the dynamic loader.
    Dynamic,
    /// The dynamic symbol table (`SHT_DYNSYM`).
    DynSym,
    /// A string table (`SHT_STRTAB`), such as `.dynstr`.
    StrTab,
    /// GNU's symbol hash table (`SHT_GNU_HASH`).
    GnuHash,
    /// The System V symbol hash table (`SHT_HASH`): 32-bit words.
    Hash,
    /// The version of each dynamic symbol (`SHT_GNU_versym`): 16-bit words.
    VerSym,
    /// The versions the output defines (`SHT_GNU_verdef`).
    VerDef,
    /// The versions needed of each shared library (`SHT_GNU_verneed`).
    VerNeed,
    /// Relative relocations packed as addresses and bitmaps (`SHT_RELR`): 64-bit words.
    Relr,
}

impl SectionKind {
    /// The ELF `sh_type`.
    pub const fn sh_type(self) -> u32 {
        match self {
            SectionKind::ProgBits => SHT_PROGBITS,
            SectionKind::NoBits => SHT_NOBITS,
            SectionKind::Note => SHT_NOTE,
            SectionKind::InitArray => SHT_INIT_ARRAY,
            SectionKind::FiniArray => SHT_FINI_ARRAY,
            SectionKind::PreinitArray => SHT_PREINIT_ARRAY,
            SectionKind::Rela => SHT_RELA,
            SectionKind::Dynamic => SHT_DYNAMIC,
            SectionKind::DynSym => SHT_DYNSYM,
            SectionKind::StrTab => SHT_STRTAB,
            SectionKind::GnuHash => SHT_GNU_HASH,
            SectionKind::Hash => SHT_HASH,
            SectionKind::VerSym => SHT_GNU_VERSYM,
            SectionKind::VerDef => SHT_GNU_VERDEF,
            SectionKind::VerNeed => SHT_GNU_VERNEED,
            SectionKind::Relr => SHT_RELR,
        }
    }

    /// The ELF `sh_entsize`: pointer arrays have 8-byte entries, everything else has none.
    const fn entry_size(self) -> u64 {
        match self {
            SectionKind::InitArray | SectionKind::FiniArray | SectionKind::PreinitArray | SectionKind::Relr => 8,
            SectionKind::Rela => 24,
            SectionKind::Dynamic => 16,
            SectionKind::DynSym => 24,
            SectionKind::Hash => 4,
            SectionKind::VerSym => 2,
            _ => 0,
        }
    }
}

/// One loadable segment (`PT_LOAD`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentLayout {
    /// A name for diagnostics; ELF has no segment names.
    pub name: String,
    pub flags: SegmentFlags,
    pub virtual_address: u64,
    pub file_offset: u64,
    pub file_size: u64,
    pub memory_size: u64,
    /// `p_align`: zero or a power of two; usually the page size.
    pub alignment: u64,
}

/// What a program header other than `PT_LOAD` describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProgramHeaderKind {
    /// `PT_TLS`: the thread-local storage template (`.tdata` then `.tbss`).
    Tls,
    /// `PT_NOTE`: a run of note sections.
    Note,
    /// `PT_GNU_PROPERTY`: `.note.gnu.property`.
    GnuProperty,
    /// `PT_GNU_EH_FRAME`: `.eh_frame_hdr`.
    GnuEhFrame,
    /// `PT_GNU_RELRO`: data made read-only after start-up.
    GnuRelro,
    /// `PT_DYNAMIC`: `.dynamic`.
    Dynamic,
    /// `PT_PHDR`: the program header table itself, from which the dynamic loader learns where the executable
    /// was loaded.
    Phdr,
    /// `PT_INTERP`: `.interp`, the program interpreter's path.
    Interp,
}

impl ProgramHeaderKind {
    /// The ELF `p_type`.
    pub const fn p_type(self) -> u32 {
        match self {
            ProgramHeaderKind::Tls => PT_TLS,
            ProgramHeaderKind::Note => PT_NOTE,
            ProgramHeaderKind::GnuProperty => PT_GNU_PROPERTY,
            ProgramHeaderKind::GnuEhFrame => PT_GNU_EH_FRAME,
            ProgramHeaderKind::GnuRelro => PT_GNU_RELRO,
            ProgramHeaderKind::Dynamic => PT_DYNAMIC,
            ProgramHeaderKind::Phdr => PT_PHDR,
            ProgramHeaderKind::Interp => PT_INTERP,
        }
    }

    /// Whether the header is written before the `PT_LOAD`s: the ELF gABI wants `PT_PHDR` and `PT_INTERP`
    /// before every loadable segment (glibc's loader reads `PT_PHDR` first to learn the load address).
    pub const fn precedes_loads(self) -> bool {
        matches!(self, ProgramHeaderKind::Phdr | ProgramHeaderKind::Interp)
    }
}

/// A program header other than `PT_LOAD`, describing part of what the loads map; written after the
/// `PT_LOAD`s (but `PT_PHDR` and `PT_INTERP`, written before them), before `PT_GNU_STACK`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramHeaderLayout {
    pub kind: ProgramHeaderKind,
    pub flags: SegmentFlags,
    pub virtual_address: u64,
    pub file_offset: u64,
    pub file_size: u64,
    pub memory_size: u64,
    pub alignment: u64,
}

/// One output section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionLayout {
    pub name: String,
    /// The segment (an index into [`ImageLayout::segments`]) the section is loaded by, if any.
    pub segment: Option<usize>,
    pub kind: SectionKind,
    pub flags: SectionFlags,
    pub address: u64,
    /// Where the contents go; for `NoBits` only recorded in `sh_offset`.
    pub file_offset: u64,
    pub size: u64,
    /// `sh_addralign`: zero or a power of two.
    pub alignment: u64,
    /// Exactly `size` bytes (holes read as zeros and stay holes in the file), or nothing for `NoBits`.
    pub contents: SparseBytes,
}

/// What a symbol names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    /// Code (`STT_FUNC`).
    Function,
    /// Data (`STT_OBJECT`).
    Object,
    /// Anything else (`STT_NOTYPE`).
    NoType,
    /// An output section, for relocations against it (`STT_SECTION`, local, without a name).
    Section,
    /// A thread-local variable (`STT_TLS`): its value is its offset in the TLS template.
    Tls,
    /// An indirect function (`STT_GNU_IFUNC`): its value is the resolver's address.
    Ifunc,
}

/// A symbol's visibility to other objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymbolBinding {
    Local,
    Global,
    Weak,
}

/// One entry of the optional `.symtab`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolLayout {
    pub name: String,
    pub value: u64,
    pub size: u64,
    pub kind: SymbolKind,
    pub binding: SymbolBinding,
    /// The defining section (an index into [`ImageLayout::sections`]); `None` for an absolute symbol.
    pub section: Option<usize>,
    /// An undefined symbol (`SHN_UNDEF`, value 0): a weak reference nothing defines, which a kept relocation
    /// (`--emit-relocs`) names.
    pub undefined: bool,
}

/// Everything the writer needs to produce an executable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageLayout {
    pub entry: u64,
    /// What the image is (its `e_type` is the kind's, `ET_EXEC` for a static executable).
    pub output_kind: crate::output_kind::OutputKind,
    /// `e_machine`: the target's declared machine (`crate::graph::Machine`).
    pub machine: u16,
    /// `e_flags`: what the architecture makes of its inputs' (`Arch::elf_flags`; 0 for most).
    pub flags: u32,
    /// In ascending address order.
    pub segments: Vec<SegmentLayout>,
    /// The other program headers, in the order they are written.
    pub program_headers: Vec<ProgramHeaderLayout>,
    pub sections: Vec<SectionLayout>,
    /// Written to `.symtab` (locals first, otherwise in this order); no `.symtab` when empty.
    pub symbols: Vec<SymbolLayout>,
    /// The relocations kept in the output (`--emit-relocs`), one entry per section that has any; empty
    /// otherwise.
    pub relocations: Vec<RelocationSectionLayout>,
}

/// The kept relocations of one section, written as the non-allocated `SHT_RELA` section
/// [`RelocationSectionLayout::name`] (`.rela` and the section's name, as ld.bfd names them), whose `sh_link`
/// is `.symtab` and `sh_info` the section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelocationSectionLayout {
    /// The section the relocations apply to (an index into [`ImageLayout::sections`]).
    pub section: usize,
    /// `.rela` followed by the section's name.
    pub name: String,
    pub relocations: Vec<RelocationLayout>,
}

impl RelocationSectionLayout {
    /// The relocations of section `section`, named `.rela<section_name>`.
    pub fn new(section: usize, section_name: &str, relocations: Vec<RelocationLayout>) -> RelocationSectionLayout {
        RelocationSectionLayout {
            section,
            name: format!(".rela{section_name}"),
            relocations,
        }
    }
}

/// One kept relocation: where it applies (the address in the output, or the offset in an unallocated
/// section), its target's number for it, the symbol (an index into [`ImageLayout::symbols`]; `None` is
/// symbol 0, for a value that no symbol names) and the addend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RelocationLayout {
    pub offset: u64,
    pub kind: u32,
    pub symbol: Option<usize>,
    pub addend: i64,
}

/// Why a layout cannot be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ElfError {
    #[error(transparent)]
    Writer(#[from] WriterError),
    #[error("binary image: the writer already holds {length} bytes; an executable is written into an empty writer")]
    WriterNotEmpty { length: u64 },
    #[error("binary image: {count} segments need extended program header numbering, which is not supported")]
    TooManySegments { count: usize },
    #[error("binary image: {count} sections need extended section numbering, which is not supported")]
    TooManySections { count: usize },
    #[error("binary image: {item}: alignment {alignment:#x} is neither zero nor a power of two")]
    AlignmentNotPowerOfTwo { item: String, alignment: u64 },
    #[error(
        "binary image: segment {segment}: file offset {file_offset:#x} and address {address:#x} are not congruent modulo the alignment {alignment:#x}"
    )]
    IncongruentSegment {
        segment: String,
        file_offset: u64,
        address: u64,
        alignment: u64,
    },
    #[error("binary image: segment {segment}: file size {file_size:#x} exceeds memory size {memory_size:#x}")]
    FileSizeExceedsMemorySize {
        segment: String,
        file_size: u64,
        memory_size: u64,
    },
    #[error(
        "binary image: segment {segment} at {address:#x} comes after a segment at {previous:#x}; segments must ascend"
    )]
    SegmentsUnsorted {
        segment: String,
        address: u64,
        previous: u64,
    },
    #[error("binary image: {item}: range overflows u64")]
    RangeOverflow { item: String },
    #[error("binary image: section {section}: {contents} content bytes for a section of size {size}")]
    ContentsSizeMismatch { section: String, size: u64, contents: u64 },
    #[error("binary image: section {section}: a NoBits section cannot have contents")]
    NoBitsWithContents { section: String },
    #[error(
        "binary image: section {section}: contents at {file_offset:#x} overlap the headers ending at {headers_end:#x}"
    )]
    SectionOverlapsHeaders {
        section: String,
        file_offset: u64,
        headers_end: u64,
    },
    #[error("binary image: sections {first} and {second} overlap in the file")]
    SectionsOverlapInFile { first: String, second: String },
    #[error("binary image: section {section}: segment {segment} does not exist")]
    UnknownSegment { section: String, segment: usize },
    #[error("binary image: symbol {symbol}: section {section} does not exist")]
    UnknownSection { symbol: String, section: usize },
    #[error("binary image: relocation section {name}: {what} {index} does not exist")]
    UnknownRelocationTarget {
        name: String,
        what: &'static str,
        index: usize,
    },
    #[error("binary image: {item}: name contains a NUL byte")]
    NameContainsNul { item: String },
    #[error("binary image: section {section}: the name is reserved for a table the writer synthesises")]
    ReservedSectionName { section: String },
}

/// The bytes the ELF header and program headers take for `segment_count` segments (plus `PT_GNU_STACK`);
/// section contents must start at or after this offset.
pub fn elf_headers_size(segment_count: usize) -> u64 {
    let program_headers = (segment_count as u64).saturating_add(1);
    FILE_HEADER_SIZE.saturating_add(program_headers.saturating_mul(PROGRAM_HEADER_SIZE))
}

/// The exact size of the file [`write_elf`] produces for `layout`, after validating the layout. Pass it as
/// the bound when no tighter budget applies.
pub fn elf_file_size(layout: &ImageLayout) -> Result<u64, ElfError> {
    plan(layout).map(|plan| plan.file_size)
}

/// Writes `layout` as an executable no larger than `bound` bytes.
pub fn write_elf(layout: &ImageLayout, bound: u64) -> Result<SparseBytes, ElfError> {
    let mut writer = BoundedImageWriter::with_bound(bound)?;
    write_elf_into(layout, &mut writer)?;
    Ok(writer.finish()?)
}

/// Writes `layout` as [`write_elf`] does, but moves every section's stored bytes into the image instead of
/// copying them: afterwards each section's contents are holes of the same length (the image has the bytes).
pub fn write_elf_moving(layout: &mut ImageLayout, bound: u64) -> Result<SparseBytes, ElfError> {
    let mut writer = BoundedImageWriter::with_bound(bound)?;
    let plan = plan(layout)?;
    write_headers_and_tables(layout, plan, &mut writer)?;
    for section in &mut layout.sections {
        if section.kind != SectionKind::NoBits {
            let length = section.contents.len();
            let contents = std::mem::replace(&mut section.contents, SparseBytes::zeroed(length));
            writer.adopt_sparse_at(section.file_offset, contents)?;
        }
    }
    Ok(writer.finish()?)
}

/// Writes `layout` as an executable into `writer`, which must be empty and have a large enough bound.
/// On error the writer may hold a partial image; when the error came from the writer, staging is aborted.
pub fn write_elf_into(layout: &ImageLayout, writer: &mut BoundedImageWriter) -> Result<(), ElfError> {
    let plan = plan(layout)?;
    if !writer.is_empty() || writer.tell() != 0 {
        return Err(ElfError::WriterNotEmpty { length: writer.len() });
    }
    write_headers_and_tables(layout, plan, writer)?;
    for section in &layout.sections {
        if section.kind != SectionKind::NoBits {
            writer.write_sparse_at(section.file_offset, &section.contents)?;
        }
    }
    Ok(())
}

/// Writes everything of the image but the section contents: the file and program headers, then (the image
/// lengthened to the end of the contents) the tables the plan encoded after them, which are moved in.
fn write_headers_and_tables(
    layout: &ImageLayout,
    plan: Plan<'_>,
    writer: &mut BoundedImageWriter,
) -> Result<(), ElfError> {
    writer.write(&file_header(layout, &plan))?;
    let (before, after): (Vec<_>, Vec<_>) = layout
        .program_headers
        .iter()
        .partition(|header| header.kind.precedes_loads());
    for header in before {
        writer.write(&other_program_header(header))?;
    }
    for segment in &layout.segments {
        writer.write(&program_header(segment))?;
    }
    for header in after {
        writer.write(&other_program_header(header))?;
    }
    writer.write(&gnu_stack_header())?;
    if writer.len() < plan.content_end {
        writer.resize(plan.content_end)?;
    }
    let headers = section_headers(layout, &plan);
    for (offset, bytes) in plan.relocations {
        writer.adopt_sparse_at(offset, bytes.into())?;
    }
    if let Some(symbols) = plan.symbols {
        writer.adopt_sparse_at(symbols.symtab_offset, symbols.symtab.into())?;
        writer.adopt_sparse_at(symbols.strtab_offset, symbols.strtab.bytes.into())?;
    }
    writer.adopt_sparse_at(plan.shstrtab_offset, plan.shstrtab.bytes.into())?;
    writer.adopt_sparse_at(plan.section_headers_offset, headers.into())?;
    Ok(())
}

/// The encoded symbol table and where it goes.
struct SymbolPlan<'a> {
    symtab: Vec<u8>,
    symtab_offset: u64,
    /// The index of the first non-local symbol (`sh_info` of `.symtab`).
    first_global: u32,
    strtab: StringTable<'a>,
    strtab_offset: u64,
}

/// Where everything goes, computed (and the layout validated) before anything is written.
struct Plan<'a> {
    /// The end of the last section contents or segment file range (at least the end of the headers).
    content_end: u64,
    symbols: Option<SymbolPlan<'a>>,
    /// Where each kept relocation section goes and its encoded entries, in the order of
    /// [`ImageLayout::relocations`].
    relocations: Vec<(u64, Vec<u8>)>,
    shstrtab: StringTable<'a>,
    /// `sh_name` of each layout section, in layout order.
    section_names: Vec<u32>,
    shstrtab_offset: u64,
    section_headers_offset: u64,
    /// `e_shnum`, counting the null section.
    section_count: u16,
    file_size: u64,
}

impl Plan<'_> {
    /// The ELF index of `.shstrtab`, the last section.
    fn shstrtab_index(&self) -> u16 {
        self.section_count.saturating_sub(1)
    }
}

/// Validates `layout` and decides where the synthesised tables go.
fn plan(layout: &ImageLayout) -> Result<Plan<'_>, ElfError> {
    let headers_end = elf_headers_size(layout.segments.len() + layout.program_headers.len());
    let segments_end = validate_segments(&layout.segments)?;
    let sections_end = validate_sections(layout, headers_end)?;
    validate_symbols(layout)?;
    validate_relocations(layout)?;
    let content_end = headers_end.max(segments_end).max(sections_end);

    let symbol_count = if layout.symbols.is_empty() { 0 } else { 2 };
    let section_count = layout.sections.len() + layout.relocations.len() + symbol_count + 2;
    if section_count >= SHN_LORESERVE {
        return Err(ElfError::TooManySections { count: section_count });
    }

    let mut shstrtab = StringTable::new();
    let section_names = layout
        .sections
        .iter()
        .map(|section| shstrtab.add(&section.name))
        .collect();
    for relocations in &layout.relocations {
        shstrtab.add(&relocations.name);
    }
    for name in SYNTHESIZED_SECTIONS {
        shstrtab.add(name);
    }

    check_string_table(&shstrtab, ".shstrtab")?;

    let mut next = content_end;
    let (encoded_symbols, elf_index) = encode_symbols(layout);
    let mut relocations = Vec::with_capacity(layout.relocations.len());
    for section in &layout.relocations {
        let bytes = encode_relocations(section, &elf_index);
        let offset = align_up(next, 8).ok_or_else(|| overflow_item(&section.name))?;
        next = checked_end(offset, bytes.len(), &section.name)?;
        relocations.push((offset, bytes));
    }
    let symbols = if layout.symbols.is_empty() {
        None
    } else {
        let (symtab, first_global, strtab) = encoded_symbols;
        check_string_table(&strtab, ".strtab")?;
        let symtab_offset = align_up(next, 8).ok_or_else(|| overflow_item(".symtab"))?;
        let strtab_offset = checked_end(symtab_offset, symtab.len(), ".symtab")?;
        next = checked_end(strtab_offset, strtab.bytes.len(), ".strtab")?;
        Some(SymbolPlan {
            symtab,
            symtab_offset,
            first_global,
            strtab,
            strtab_offset,
        })
    };
    let shstrtab_offset = next;
    next = checked_end(shstrtab_offset, shstrtab.bytes.len(), ".shstrtab")?;
    let section_headers_offset = align_up(next, 8).ok_or_else(|| overflow_item("section header table"))?;
    let table_size = (section_count as u64).saturating_mul(SECTION_HEADER_SIZE);
    let file_size = section_headers_offset
        .checked_add(table_size)
        .ok_or_else(|| overflow_item("section header table"))?;
    Ok(Plan {
        content_end,
        symbols,
        relocations,
        shstrtab,
        section_names,
        shstrtab_offset,
        section_headers_offset,
        section_count: u16::try_from(section_count).map_err(|_| ElfError::TooManySections { count: section_count })?,
        file_size,
    })
}

/// Checks the segment rules and returns the end of the last segment file range.
fn validate_segments(segments: &[SegmentLayout]) -> Result<u64, ElfError> {
    if segments.len() + 1 >= PN_XNUM {
        return Err(ElfError::TooManySegments { count: segments.len() });
    }
    let mut end = 0;
    let mut previous: Option<u64> = None;
    for segment in segments {
        let item = || format!("segment {}", segment.name);
        check_alignment(segment.alignment, item)?;
        if segment.alignment > 1
            && segment.file_offset % segment.alignment != segment.virtual_address % segment.alignment
        {
            return Err(ElfError::IncongruentSegment {
                segment: segment.name.clone(),
                file_offset: segment.file_offset,
                address: segment.virtual_address,
                alignment: segment.alignment,
            });
        }
        if segment.file_size > segment.memory_size {
            return Err(ElfError::FileSizeExceedsMemorySize {
                segment: segment.name.clone(),
                file_size: segment.file_size,
                memory_size: segment.memory_size,
            });
        }
        let file_end = segment.file_offset.checked_add(segment.file_size);
        let memory_end = segment.virtual_address.checked_add(segment.memory_size);
        let (Some(file_end), Some(_)) = (file_end, memory_end) else {
            return Err(ElfError::RangeOverflow { item: item() });
        };
        if let Some(previous) = previous.filter(|&previous| segment.virtual_address < previous) {
            return Err(ElfError::SegmentsUnsorted {
                segment: segment.name.clone(),
                address: segment.virtual_address,
                previous,
            });
        }
        previous = Some(segment.virtual_address);
        if segment.file_size > 0 {
            end = end.max(file_end);
        }
    }
    Ok(end)
}

/// Checks the section rules and returns the end of the last section contents.
fn validate_sections(layout: &ImageLayout, headers_end: u64) -> Result<u64, ElfError> {
    let mut file_ranges = Vec::new();
    for (index, section) in layout.sections.iter().enumerate() {
        let item = || format!("section {}", section.name);
        check_name(&section.name, item)?;
        if SYNTHESIZED_SECTIONS.contains(&section.name.as_str()) {
            return Err(ElfError::ReservedSectionName {
                section: section.name.clone(),
            });
        }
        check_alignment(section.alignment, item)?;
        if let Some(segment) = section.segment.filter(|&segment| segment >= layout.segments.len()) {
            return Err(ElfError::UnknownSegment {
                section: section.name.clone(),
                segment,
            });
        }
        if section.address.checked_add(section.size).is_none() {
            return Err(ElfError::RangeOverflow { item: item() });
        }
        if section.kind == SectionKind::NoBits {
            if !section.contents.is_empty() {
                return Err(ElfError::NoBitsWithContents {
                    section: section.name.clone(),
                });
            }
            continue;
        }
        if section.contents.len() != section.size {
            return Err(ElfError::ContentsSizeMismatch {
                section: section.name.clone(),
                size: section.size,
                contents: section.contents.len(),
            });
        }
        let Some(file_end) = section.file_offset.checked_add(section.size) else {
            return Err(ElfError::RangeOverflow { item: item() });
        };
        if section.size > 0 {
            if section.file_offset < headers_end {
                return Err(ElfError::SectionOverlapsHeaders {
                    section: section.name.clone(),
                    file_offset: section.file_offset,
                    headers_end,
                });
            }
            file_ranges.push((section.file_offset, file_end, index));
        }
    }
    check_file_overlaps(layout, file_ranges)
}

/// Fails when two section file ranges overlap; returns the end of the last one.
fn check_file_overlaps(layout: &ImageLayout, mut ranges: Vec<(u64, u64, usize)>) -> Result<u64, ElfError> {
    ranges.sort_unstable();
    let mut end = 0;
    let mut last: Option<(u64, usize)> = None;
    for &(start, stop, index) in &ranges {
        if let Some((_, previous)) = last.filter(|&(previous_end, _)| start < previous_end) {
            return Err(ElfError::SectionsOverlapInFile {
                first: section_name(layout, previous),
                second: section_name(layout, index),
            });
        }
        if last.is_none_or(|(previous_end, _)| stop > previous_end) {
            last = Some((stop, index));
        }
        end = end.max(stop);
    }
    Ok(end)
}

/// Checks symbol names and section references.
fn validate_symbols(layout: &ImageLayout) -> Result<(), ElfError> {
    for symbol in &layout.symbols {
        check_name(&symbol.name, || format!("symbol {}", symbol.name))?;
        if let Some(section) = symbol.section.filter(|&section| section >= layout.sections.len()) {
            return Err(ElfError::UnknownSection {
                symbol: symbol.name.clone(),
                section,
            });
        }
    }
    Ok(())
}

/// Checks that kept relocations name sections and symbols that exist, under names no other section has.
fn validate_relocations(layout: &ImageLayout) -> Result<(), ElfError> {
    for section in &layout.relocations {
        let unknown = |what: &'static str, index: usize| ElfError::UnknownRelocationTarget {
            name: section.name.clone(),
            what,
            index,
        };
        check_name(&section.name, || format!("section {}", section.name))?;
        if SYNTHESIZED_SECTIONS.contains(&section.name.as_str()) {
            return Err(ElfError::ReservedSectionName {
                section: section.name.clone(),
            });
        }
        if section.section >= layout.sections.len() {
            return Err(unknown("section", section.section));
        }
        if let Some(symbol) = section
            .relocations
            .iter()
            .filter_map(|relocation| relocation.symbol)
            .find(|&symbol| symbol >= layout.symbols.len())
        {
            return Err(unknown("symbol", symbol));
        }
    }
    Ok(())
}

/// Fails when `alignment` is neither zero nor a power of two.
fn check_alignment(alignment: u64, item: impl FnOnce() -> String) -> Result<(), ElfError> {
    if alignment > 1 && !alignment.is_power_of_two() {
        return Err(ElfError::AlignmentNotPowerOfTwo {
            item: item(),
            alignment,
        });
    }
    Ok(())
}

/// Fails when `name` cannot be stored in a NUL-terminated string table.
fn check_name(name: &str, item: impl FnOnce() -> String) -> Result<(), ElfError> {
    if name.contains('\0') {
        return Err(ElfError::NameContainsNul { item: item() });
    }
    Ok(())
}

/// Fails when `table` is too large for 32-bit string offsets.
fn check_string_table(table: &StringTable, item: &str) -> Result<(), ElfError> {
    if u32::try_from(table.bytes.len()).is_err() {
        return Err(overflow_item(item));
    }
    Ok(())
}

/// The name of layout section `index`, for diagnostics.
fn section_name(layout: &ImageLayout, index: usize) -> String {
    layout
        .sections
        .get(index)
        .map_or_else(|| format!("#{index}"), |section| section.name.clone())
}

/// The overflow error for the synthesised `item`.
fn overflow_item(item: &str) -> ElfError {
    ElfError::RangeOverflow { item: item.to_string() }
}

/// `offset + length`, or an overflow error naming `item`.
fn checked_end(offset: u64, length: usize, item: &str) -> Result<u64, ElfError> {
    offset.checked_add(length as u64).ok_or_else(|| overflow_item(item))
}

/// `value` rounded up to a multiple of the power of two `alignment`.
pub(crate) fn align_up(value: u64, alignment: u64) -> Option<u64> {
    let mask = alignment.checked_sub(1)?;
    value.checked_add(mask).map(|value| value & !mask)
}

/// `p_flags` as `readelf` prints them, e.g. `R E`.
pub(crate) fn permission_string(p_flags: u32) -> String {
    let flag = |bit: u32, letter: char| if p_flags & bit != 0 { letter } else { ' ' };
    [flag(PF_R, 'R'), flag(PF_W, 'W'), flag(PF_X, 'E')].iter().collect()
}

/// A NUL-terminated string table that stores each distinct string once.
struct StringTable<'a> {
    bytes: Vec<u8>,
    /// The offset of each name added, borrowed from the layout: no name is copied but into `bytes`.
    offsets: FxHashMap<&'a str, u32>,
}

impl<'a> StringTable<'a> {
    /// A table holding only the empty string at offset 0.
    fn new() -> StringTable<'a> {
        let mut offsets = FxHashMap::default();
        offsets.insert("", 0);
        StringTable {
            bytes: vec![0],
            offsets,
        }
    }

    /// A table holding only the empty string, with room for `names` more strings, `bytes` bytes in all (so
    /// that a symbol table of a million names is not rehashed twenty times).
    fn with_capacity(names: usize, bytes: usize) -> StringTable<'a> {
        let mut table = StringTable::new();
        table.offsets.reserve(names);
        table.bytes.reserve(bytes);
        table
    }

    /// The offset of `name`, adding it first if needed.
    fn add(&mut self, name: &'a str) -> u32 {
        if let Some(&offset) = self.offsets.get(name) {
            return offset;
        }
        let offset = u32::try_from(self.bytes.len()).unwrap_or(u32::MAX);
        // A symbol name that was not UTF-8 is written as the bytes it was read as.
        self.bytes.extend_from_slice(&crate::symbol_name::to_bytes(name));
        self.bytes.push(0);
        self.offsets.insert(name, offset);
        offset
    }
}

/// Little-endian field encoding into a byte vector.
#[derive(Default)]
struct Encoder(Vec<u8>);

impl Encoder {
    fn u8(&mut self, value: u8) -> &mut Encoder {
        self.0.push(value);
        self
    }

    fn u16(&mut self, value: u16) -> &mut Encoder {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }

    fn u32(&mut self, value: u32) -> &mut Encoder {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }

    fn u64(&mut self, value: u64) -> &mut Encoder {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }
}

/// The ELF header.
fn file_header(layout: &ImageLayout, plan: &Plan) -> Vec<u8> {
    let mut encoder = Encoder::default();
    // e_ident: magic, ELFCLASS64, ELFDATA2LSB, EV_CURRENT, the OS ABI, ABI version 0, padding. An output
    // defining indirect functions (`STT_GNU_IFUNC`, a GNU extension) says it follows the GNU ABI
    // (`ELFOSABI_GNU`), as GNU ld marks it; any other the System V one (`ELFOSABI_NONE`).
    let gnu = layout
        .symbols
        .iter()
        .any(|symbol| symbol.kind == SymbolKind::Ifunc && !symbol.undefined);
    encoder.0.extend_from_slice(b"\x7fELF");
    encoder.u8(2).u8(1).u8(1).u8(if gnu { ELFOSABI_GNU } else { 0 }).u8(0);
    encoder.0.resize(16, 0);
    let program_header_count =
        u16::try_from(layout.segments.len() + layout.program_headers.len() + 1).unwrap_or(u16::MAX);
    encoder
        .u16(layout.output_kind.elf_type())
        .u16(layout.machine)
        .u32(1)
        .u64(layout.entry)
        .u64(FILE_HEADER_SIZE)
        .u64(plan.section_headers_offset)
        .u32(layout.flags)
        .u16(FILE_HEADER_SIZE as u16)
        .u16(PROGRAM_HEADER_SIZE as u16)
        .u16(program_header_count)
        .u16(SECTION_HEADER_SIZE as u16)
        .u16(plan.section_count)
        .u16(plan.shstrtab_index());
    encoder.0
}

/// The `PT_LOAD` program header of `segment`.
fn program_header(segment: &SegmentLayout) -> Vec<u8> {
    let mut encoder = Encoder::default();
    encoder
        .u32(PT_LOAD)
        .u32(segment.flags.to_elf())
        .u64(segment.file_offset)
        .u64(segment.virtual_address)
        .u64(segment.virtual_address)
        .u64(segment.file_size)
        .u64(segment.memory_size)
        .u64(segment.alignment);
    encoder.0
}

/// A program header other than `PT_LOAD`.
fn other_program_header(header: &ProgramHeaderLayout) -> Vec<u8> {
    let mut encoder = Encoder::default();
    encoder
        .u32(header.kind.p_type())
        .u32(header.flags.to_elf())
        .u64(header.file_offset)
        .u64(header.virtual_address)
        .u64(header.virtual_address)
        .u64(header.file_size)
        .u64(header.memory_size)
        .u64(header.alignment);
    encoder.0
}

/// The `PT_GNU_STACK` program header: a readable, writable, never executable stack.
fn gnu_stack_header() -> Vec<u8> {
    let mut encoder = Encoder::default();
    encoder
        .u32(PT_GNU_STACK)
        .u32(PF_R | PF_W)
        .u64(0)
        .u64(0)
        .u64(0)
        .u64(0)
        .u64(0)
        .u64(16);
    encoder.0
}

/// One section header.
struct SectionHeader {
    name: u32,
    kind: u32,
    flags: u64,
    address: u64,
    offset: u64,
    size: u64,
    link: u32,
    info: u32,
    alignment: u64,
    entry_size: u64,
}

impl SectionHeader {
    fn encode(&self, encoder: &mut Encoder) {
        encoder
            .u32(self.name)
            .u32(self.kind)
            .u64(self.flags)
            .u64(self.address)
            .u64(self.offset)
            .u64(self.size)
            .u32(self.link)
            .u32(self.info)
            .u64(self.alignment)
            .u64(self.entry_size);
    }

    /// A non-allocated string table.
    fn string_table(name: u32, offset: u64, size: usize) -> SectionHeader {
        SectionHeader {
            name,
            kind: SHT_STRTAB,
            flags: 0,
            address: 0,
            offset,
            size: size as u64,
            link: 0,
            info: 0,
            alignment: 1,
            entry_size: 0,
        }
    }
}

/// The number of entries of a `.gnu.version_r` or `.gnu.version_d` (its `sh_info`): the chain of `vn_next`
/// (`vd_next`) offsets, the word at `next_at` of each entry, from the first entry to the one whose is 0.
fn version_entry_count(contents: &SparseBytes, next_at: usize) -> u32 {
    let mut count = 0;
    let mut at = 0u64;
    while let Ok(Some(entry)) = contents.read(at, next_at as u64 + 4) {
        count += 1;
        let next = u32::from_le_bytes([
            entry[next_at],
            entry[next_at + 1],
            entry[next_at + 2],
            entry[next_at + 3],
        ]);
        if next == 0 || count >= u32::from(u16::MAX) {
            break;
        }
        at += u64::from(next);
    }
    count
}

/// The section header table.
fn section_headers(layout: &ImageLayout, plan: &Plan) -> Vec<u8> {
    let mut encoder = Encoder::default();
    encoder.0.resize(SECTION_HEADER_SIZE as usize, 0);
    // The links ELF defines between the dynamic sections: `.dynamic` and `.dynsym` name their string
    // table, the hash table and the dynamic relocations `.dynsym`, and the PLT's relocations the slots
    // they fill (ELF section `i + 1` is layout section `i`).
    let index_of = |kind: SectionKind| {
        layout
            .sections
            .iter()
            .position(|section| section.kind == kind)
            .map_or(0, |index| u32::try_from(index + 1).unwrap_or(0))
    };
    let (dynstr, dynsym) = (index_of(SectionKind::StrTab), index_of(SectionKind::DynSym));
    let got_plt = layout
        .sections
        .iter()
        .position(|section| section.name == ".got.plt")
        .map_or(0, |index| u32::try_from(index + 1).unwrap_or(0));
    for (section, &name) in layout.sections.iter().zip(&plan.section_names) {
        let (link, info) = match section.kind {
            SectionKind::Dynamic => (dynstr, 0),
            // One local symbol: the null one.
            SectionKind::DynSym => (dynstr, 1),
            SectionKind::GnuHash | SectionKind::Hash | SectionKind::VerSym => (dynsym, 0),
            SectionKind::VerNeed => (dynstr, version_entry_count(&section.contents, 12)),
            SectionKind::VerDef => (dynstr, version_entry_count(&section.contents, 16)),
            SectionKind::Rela if dynsym != 0 => (dynsym, if section.name == ".rela.plt" { got_plt } else { 0 }),
            _ => (0, 0),
        };
        SectionHeader {
            name,
            kind: section.kind.sh_type(),
            flags: section.flags.to_elf()
                | if section.kind == SectionKind::Rela && info != 0 {
                    SHF_INFO_LINK
                } else {
                    0
                },
            address: section.address,
            offset: section.file_offset,
            size: section.size,
            link,
            info,
            alignment: section.alignment,
            entry_size: if section.flags.contains(SectionFlags::STRINGS) {
                1
            } else {
                section.kind.entry_size()
            },
        }
        .encode(&mut encoder);
    }
    let name = |name: &str| plan.shstrtab.offsets.get(name).copied().unwrap_or(0);
    // `.symtab` follows the layout sections and the kept relocation sections, and `.strtab` follows it.
    let symtab_index = layout.sections.len() + layout.relocations.len() + 1;
    for (section, (offset, bytes)) in layout.relocations.iter().zip(&plan.relocations) {
        SectionHeader {
            name: name(&section.name),
            kind: SHT_RELA,
            flags: SHF_INFO_LINK,
            address: 0,
            offset: *offset,
            size: bytes.len() as u64,
            link: if plan.symbols.is_some() {
                u32::try_from(symtab_index).unwrap_or(0)
            } else {
                0
            },
            info: u32::try_from(section.section + 1).unwrap_or(0),
            alignment: 8,
            entry_size: RELA_SIZE,
        }
        .encode(&mut encoder);
    }
    if let Some(symbols) = &plan.symbols {
        let strtab_index = u32::try_from(symtab_index + 1).unwrap_or(0);
        SectionHeader {
            name: name(".symtab"),
            kind: SHT_SYMTAB,
            flags: 0,
            address: 0,
            offset: symbols.symtab_offset,
            size: symbols.symtab.len() as u64,
            link: strtab_index,
            info: symbols.first_global,
            alignment: 8,
            entry_size: SYMBOL_SIZE,
        }
        .encode(&mut encoder);
        SectionHeader::string_table(name(".strtab"), symbols.strtab_offset, symbols.strtab.bytes.len())
            .encode(&mut encoder);
    }
    SectionHeader::string_table(name(".shstrtab"), plan.shstrtab_offset, plan.shstrtab.bytes.len())
        .encode(&mut encoder);
    encoder.0
}

/// The encoded symbol table: `.symtab`, the index of its first non-local symbol, and `.strtab`.
type EncodedSymbols<'a> = (Vec<u8>, u32, StringTable<'a>);

/// `.symtab` (null symbol, locals, then the rest, each group in layout order), the index of the first
/// non-local symbol, and `.strtab`; and the index in `.symtab` of each layout symbol.
fn encode_symbols(layout: &ImageLayout) -> (EncodedSymbols<'_>, Vec<u32>) {
    let names: usize = layout.symbols.iter().map(|symbol| symbol.name.len() + 1).sum();
    let mut strtab = StringTable::with_capacity(layout.symbols.len(), names);
    let mut encoder = Encoder::default();
    encoder.0.reserve((layout.symbols.len() + 1) * SYMBOL_SIZE as usize);
    encoder.0.resize(SYMBOL_SIZE as usize, 0);
    type Numbered<'a> = Vec<(usize, &'a SymbolLayout)>;
    let (locals, others): (Numbered<'_>, Numbered<'_>) = layout
        .symbols
        .iter()
        .enumerate()
        .partition(|(_, symbol)| symbol.binding == SymbolBinding::Local);
    let first_global = u32::try_from(locals.len() + 1).unwrap_or(u32::MAX);
    let mut elf_index = vec![0u32; layout.symbols.len()];
    for (written, (index, symbol)) in locals.into_iter().chain(others).enumerate() {
        elf_index[index] = u32::try_from(written + 1).unwrap_or(u32::MAX);
        let binding: u8 = match symbol.binding {
            SymbolBinding::Local => 0,
            SymbolBinding::Global => 1,
            SymbolBinding::Weak => 2,
        };
        let kind: u8 = match symbol.kind {
            SymbolKind::NoType => 0,
            SymbolKind::Object => 1,
            SymbolKind::Function => 2,
            SymbolKind::Section => 3,
            SymbolKind::Tls => 6,
            SymbolKind::Ifunc => 10,
        };
        // Layout section `i` is ELF section `i + 1`; the count was checked against SHN_LORESERVE.
        let section_index = match symbol.section {
            _ if symbol.undefined => 0,
            Some(section) => u16::try_from(section + 1).unwrap_or(SHN_ABS),
            None => SHN_ABS,
        };
        encoder
            .u32(strtab.add(&symbol.name))
            .u8((binding << 4) | kind)
            .u8(0)
            .u16(section_index)
            .u64(symbol.value)
            .u64(symbol.size);
    }
    ((encoder.0, first_global, strtab), elf_index)
}

/// The entries of a kept relocation section, with each symbol's index in `.symtab` (`elf_index`).
fn encode_relocations(section: &RelocationSectionLayout, elf_index: &[u32]) -> Vec<u8> {
    let mut encoder = Encoder::default();
    for relocation in &section.relocations {
        let symbol = relocation
            .symbol
            .and_then(|symbol| elf_index.get(symbol).copied())
            .unwrap_or(0);
        encoder
            .u64(relocation.offset)
            .u64((u64::from(symbol) << 32) | u64::from(relocation.kind))
            .u64(relocation.addend as u64);
    }
    encoder.0
}
