//! The output sections the linker knows by role, in one table: for each, its typed id, name, the input
//! sections that go to it, its ELF type, whether it belongs to the data that is read-only after start-up
//! (RELRO), whether it is placed with the headers, whether identical code folding must keep its inputs apart,
//! and its rank among the sections of its permission group — what ld.bfd's default script says for a static
//! executable. Layout, emission and the names the linker
//! defines ask this table; nothing else compares section names.
//!
//! An input section no rule claims goes to an output section of its own name (rank [`OTHER_RANK`]), whose
//! type follows the input's: a note stays a note, placed with the headers.

use crate::image::SectionKind;

/// An output section the linker knows by role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutputSectionId {
    Init,
    Iplt,
    Text,
    Fini,
    Rodata,
    EhFrameHdr,
    EhFrame,
    GccExceptTable,
    NoteGnuProperty,
    NoteGnuBuildId,
    RelaIplt,
    Interp,
    Hash,
    GnuHash,
    DynSym,
    DynStr,
    GnuVersion,
    GnuVersionD,
    GnuVersionR,
    RelaDyn,
    RelrDyn,
    Dynamic,
    Tdata,
    Tbss,
    PreinitArray,
    InitArray,
    FiniArray,
    DataRelRo,
    Jcr,
    Got,
    IgotPlt,
    Data,
    Bss,
}

/// Which input sections go to an output section.
#[derive(Clone, Copy, Debug)]
enum Inputs {
    /// Sections of exactly these names.
    Named(&'static [&'static str]),
    /// Sections of these names or of these names followed by `.` and anything (`.text.hot`).
    Families(&'static [&'static str]),
    /// A family, or one of the names.
    FamilyOrNamed(&'static str, &'static [&'static str]),
}

impl Inputs {
    fn claims(self, name: &str) -> bool {
        let family = |prefix: &str| {
            name.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        };
        match self {
            Inputs::Named(names) => names.contains(&name),
            Inputs::Families(families) => families.iter().any(|prefix| family(prefix)),
            Inputs::FamilyOrNamed(prefix, names) => family(prefix) || names.contains(&name),
        }
    }
}

/// What the linker knows of one output section.
#[derive(Debug)]
pub struct OutputSectionKind {
    pub id: OutputSectionId,
    pub name: &'static str,
    inputs: Inputs,
    /// The ELF type (a section without file bytes is `SHT_NOBITS` whatever this says).
    pub sh_type: SectionKind,
    /// Written only by the start-up code (TLS templates, constructor arrays, GOT slots a static link fills at
    /// link time): with `-z relro`, in the RELRO part of the writable data.
    pub relro: bool,
    /// Read-only data placed with the ELF headers (notes, the `IRELATIVE` relocations).
    pub with_headers: bool,
    /// Its input sections are pieces of one sequence whose every piece counts (the start-up and exit code
    /// `.init` and `.fini` that `crti.o` opens and `crtn.o` closes, the arrays of constructors and
    /// destructors): identical code folding never folds them, as ld.lld and GNU gold never do.
    pub keep_unique: bool,
    /// The order among the sections of its permission group (lower first).
    pub rank: u32,
    /// The permissions (`section_flags` bits besides `ALLOCATED`) of what the linker makes for it (its own
    /// atoms have no input section to say).
    pub made_flags: u64,
}

/// The rank of an output section no rule names: after the known ones of its group, before `.bss`.
pub const OTHER_RANK: u32 = 50;

const fn kind(
    id: OutputSectionId,
    name: &'static str,
    inputs: Inputs,
    sh_type: SectionKind,
    rank: u32,
) -> OutputSectionKind {
    OutputSectionKind {
        id,
        name,
        inputs,
        sh_type,
        relro: false,
        with_headers: false,
        keep_unique: false,
        rank,
        made_flags: 0,
    }
}

const fn made(kind: OutputSectionKind, made_flags: u64) -> OutputSectionKind {
    OutputSectionKind { made_flags, ..kind }
}

const fn relro(kind: OutputSectionKind) -> OutputSectionKind {
    OutputSectionKind { relro: true, ..kind }
}

const fn keep_unique(kind: OutputSectionKind) -> OutputSectionKind {
    OutputSectionKind {
        keep_unique: true,
        ..kind
    }
}

const fn with_headers(kind: OutputSectionKind) -> OutputSectionKind {
    OutputSectionKind {
        with_headers: true,
        ..kind
    }
}

use crate::graph::section_flags::{EXECUTABLE, WRITABLE};
use OutputSectionId as Id;
use SectionKind::{
    DynSym, Dynamic, FiniArray, GnuHash, Hash, InitArray, Note, PreinitArray, ProgBits, Rela, Relr, StrTab, VerDef,
    VerNeed, VerSym,
};

/// The table, in the order its rules are tried: the first rule that claims an input section's name wins
/// (`.data.rel.ro` before `.data`, `.init` before `.init_array`'s family).
static OUTPUT_SECTIONS: [OutputSectionKind; 33] = [
    kind(Id::Text, ".text", Inputs::Families(&[".text"]), ProgBits, 2),
    keep_unique(kind(Id::Init, ".init", Inputs::Named(&[".init"]), ProgBits, 0)),
    made(
        kind(Id::Iplt, ".plt", Inputs::Named(&[".plt"]), ProgBits, 1),
        EXECUTABLE,
    ),
    keep_unique(kind(Id::Fini, ".fini", Inputs::Named(&[".fini"]), ProgBits, 3)),
    with_headers(kind(Id::RelaIplt, ".rela.plt", Inputs::Named(&[".rela.plt"]), Rela, 60)),
    // The program interpreter's path, first after the headers, as ld.bfd places it (the ELF gABI wants its
    // `PT_INTERP` before every load).
    with_headers(kind(Id::Interp, ".interp", Inputs::Named(&[".interp"]), ProgBits, 30)),
    // What a position-independent executable's loader (or its own start-up code) reads, after the notes, as
    // ld.bfd places it.
    with_headers(kind(Id::Hash, ".hash", Inputs::Named(&[".hash"]), Hash, 51)),
    with_headers(kind(
        Id::GnuHash,
        ".gnu.hash",
        Inputs::Named(&[".gnu.hash"]),
        GnuHash,
        52,
    )),
    with_headers(kind(Id::DynSym, ".dynsym", Inputs::Named(&[".dynsym"]), DynSym, 53)),
    with_headers(kind(Id::DynStr, ".dynstr", Inputs::Named(&[".dynstr"]), StrTab, 54)),
    // The version of each dynamic symbol and the versions the output needs of each library, after the
    // dynamic strings, as ld.bfd places them.
    with_headers(kind(
        Id::GnuVersion,
        ".gnu.version",
        Inputs::Named(&[".gnu.version"]),
        VerSym,
        55,
    )),
    with_headers(kind(
        Id::GnuVersionD,
        ".gnu.version_d",
        Inputs::Named(&[".gnu.version_d"]),
        VerDef,
        56,
    )),
    with_headers(kind(
        Id::GnuVersionR,
        ".gnu.version_r",
        Inputs::Named(&[".gnu.version_r"]),
        VerNeed,
        57,
    )),
    with_headers(kind(Id::RelaDyn, ".rela.dyn", Inputs::Named(&[".rela.dyn"]), Rela, 58)),
    // The packed relative relocations (`-z pack-relative-relocs`), after `.rela.plt`, as ld.bfd places them.
    with_headers(kind(Id::RelrDyn, ".relr.dyn", Inputs::Named(&[".relr.dyn"]), Relr, 61)),
    // The first note, as ld.bfd places it, then the build ID.
    with_headers(kind(
        Id::NoteGnuProperty,
        ".note.gnu.property",
        Inputs::Named(&[".note.gnu.property"]),
        Note,
        40,
    )),
    with_headers(kind(
        Id::NoteGnuBuildId,
        ".note.gnu.build-id",
        Inputs::Named(&[".note.gnu.build-id"]),
        Note,
        45,
    )),
    kind(Id::Rodata, ".rodata", Inputs::Families(&[".rodata"]), ProgBits, 1),
    kind(Id::EhFrame, ".eh_frame", Inputs::Named(&[".eh_frame"]), ProgBits, 3),
    kind(
        Id::GccExceptTable,
        ".gcc_except_table",
        Inputs::Families(&[".gcc_except_table"]),
        ProgBits,
        4,
    ),
    kind(
        Id::EhFrameHdr,
        ".eh_frame_hdr",
        Inputs::Named(&[".eh_frame_hdr"]),
        ProgBits,
        2,
    ),
    relro(kind(Id::Tdata, ".tdata", Inputs::Families(&[".tdata"]), ProgBits, 0)),
    relro(kind(
        Id::Tbss,
        ".tbss",
        Inputs::FamilyOrNamed(".tbss", &[".tcommon"]),
        ProgBits,
        1,
    )),
    keep_unique(relro(kind(
        Id::PreinitArray,
        ".preinit_array",
        Inputs::Families(&[".preinit_array"]),
        PreinitArray,
        2,
    ))),
    keep_unique(relro(kind(
        Id::InitArray,
        ".init_array",
        Inputs::Families(&[".init_array", ".ctors"]),
        InitArray,
        3,
    ))),
    keep_unique(relro(kind(
        Id::FiniArray,
        ".fini_array",
        Inputs::Families(&[".fini_array", ".dtors"]),
        FiniArray,
        4,
    ))),
    relro(kind(
        Id::DataRelRo,
        ".data.rel.ro",
        Inputs::Families(&[".data.rel.ro"]),
        ProgBits,
        5,
    )),
    made(
        relro(kind(Id::Dynamic, ".dynamic", Inputs::Named(&[".dynamic"]), Dynamic, 6)),
        WRITABLE,
    ),
    made(
        relro(kind(Id::Got, ".got", Inputs::Named(&[".got"]), ProgBits, 7)),
        WRITABLE,
    ),
    made(
        kind(Id::IgotPlt, ".got.plt", Inputs::Named(&[".got.plt"]), ProgBits, 8),
        WRITABLE,
    ),
    kind(Id::Data, ".data", Inputs::Families(&[".data"]), ProgBits, 9),
    // Common symbols are atoms of the linker's named `COMMON`.
    made(
        kind(
            Id::Bss,
            ".bss",
            Inputs::FamilyOrNamed(".bss", &["COMMON"]),
            ProgBits,
            100,
        ),
        WRITABLE,
    ),
    relro(kind(Id::Jcr, ".jcr", Inputs::Named(&[".jcr"]), ProgBits, OTHER_RANK)),
];

impl OutputSectionId {
    /// What the table says of this output section.
    pub fn kind(self) -> &'static OutputSectionKind {
        // Every id has exactly one row (a unit test checks it).
        OUTPUT_SECTIONS
            .iter()
            .find(|kind| kind.id == self)
            .unwrap_or(&OUTPUT_SECTIONS[0])
    }

    /// The output section's name.
    pub fn name(self) -> &'static str {
        self.kind().name
    }

    /// The output section an input section of this name goes to, if a rule claims it.
    pub fn for_input(name: &str) -> Option<OutputSectionId> {
        OUTPUT_SECTIONS
            .iter()
            .find(|kind| kind.inputs.claims(name))
            .map(|kind| kind.id)
    }
}

/// Whether identical code folding must keep an input section of this name apart from every other, as ld.lld
/// decides it: its output section's row says so ([`OutputSectionKind::keep_unique`]), or the name is a C
/// identifier, so that a program may walk the output section between its `__start_` and `__stop_` symbols and
/// count on every piece being there.
pub fn keeps_identity(input: &str) -> bool {
    let c_identifier = input
        .chars()
        .next()
        .is_some_and(|first| first == '_' || first.is_ascii_alphabetic())
        && input.chars().all(|char| char == '_' || char.is_ascii_alphanumeric());
    c_identifier || OutputSectionId::for_input(input).is_some_and(|id| id.kind().keep_unique)
}

/// The name of the output section an input section of this name goes to.
pub fn output_name(input: &str) -> &str {
    match OutputSectionId::for_input(input) {
        Some(id) => id.name(),
        None => input,
    }
}

/// The kinds of code GNU ld's default script gathers at the start of `.text`, in its order: code unlikely to
/// run (`.text.unlikely`, `.text.*_unlikely`), exit-time code, start-up code, hot code, then the sections
/// to sort by name (`.text.sorted.*`); everything else follows them in link order. With
/// `-z keep-text-section-prefix` the first four become output sections of their own, named after the prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CodeKind {
    Unlikely,
    Exit,
    Startup,
    Hot,
    Sorted,
}

impl CodeKind {
    /// The kind of code an input section of this name holds, if the script places it specially.
    pub fn of(input: &str) -> Option<CodeKind> {
        let family = |prefix: &str| {
            input
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        };
        if family(".text.unlikely") || (input.starts_with(".text.") && input.ends_with("_unlikely")) {
            Some(CodeKind::Unlikely)
        } else if family(".text.exit") {
            Some(CodeKind::Exit)
        } else if family(".text.startup") {
            Some(CodeKind::Startup)
        } else if family(".text.hot") {
            Some(CodeKind::Hot)
        } else if input.starts_with(".text.sorted.") {
            Some(CodeKind::Sorted)
        } else {
            None
        }
    }

    /// The output section `-z keep-text-section-prefix` puts this kind of code in, if it keeps one.
    pub fn kept_prefix(self) -> Option<&'static str> {
        match self {
            CodeKind::Unlikely => Some(".text.unlikely"),
            CodeKind::Exit => Some(".text.exit"),
            CodeKind::Startup => Some(".text.startup"),
            CodeKind::Hot => Some(".text.hot"),
            CodeKind::Sorted => None,
        }
    }
}

/// The sections no segment loads that GNU ld's default script names, in its order: the comment, then
/// DWARF 1 to 5 debugging information. An unallocated output section goes by its position here (one not
/// named after all of them, in first-seen order).
const UNALLOCATED_ORDER: [&str; 32] = [
    ".comment",
    ".gnu.build.attributes",
    ".debug",
    ".line",
    ".debug_srcinfo",
    ".debug_sfnames",
    ".debug_aranges",
    ".debug_pubnames",
    ".debug_info",
    ".debug_abbrev",
    ".debug_line",
    ".debug_frame",
    ".debug_str",
    ".debug_loc",
    ".debug_macinfo",
    ".debug_weaknames",
    ".debug_funcnames",
    ".debug_typenames",
    ".debug_varnames",
    ".debug_pubtypes",
    ".debug_ranges",
    ".debug_addr",
    ".debug_line_str",
    ".debug_loclists",
    ".debug_macro",
    ".debug_names",
    ".debug_rnglists",
    ".debug_str_offsets",
    ".debug_sup",
    ".gnu.attributes",
    ".stab",
    ".stabstr",
];

/// The order of an unallocated output section (see [`UNALLOCATED_ORDER`]).
pub fn unallocated_rank(name: &str) -> usize {
    UNALLOCATED_ORDER
        .iter()
        .position(|known| *known == name)
        .unwrap_or(UNALLOCATED_ORDER.len())
}

/// Whether an input section holds debugging information, which `-S` and `-s` drop: what GNU ld marks as
/// such by name (DWARF's `.debug*` and `.zdebug*`, `.gnu.linkonce.wi.*`, `.line`, stabs).
pub fn is_debugging(name: &str) -> bool {
    name.starts_with(".debug")
        || name.starts_with(".zdebug")
        || name.starts_with(".gnu.linkonce.wi.")
        || name == ".line"
        || name.starts_with(".stab")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_has_one_row_whose_name_its_own_rule_claims() {
        for (index, kind) in OUTPUT_SECTIONS.iter().enumerate() {
            assert_eq!(kind.id.kind().name, kind.name);
            assert!(
                OUTPUT_SECTIONS[index + 1..].iter().all(|other| other.id != kind.id),
                "{:?} twice",
                kind.id
            );
            assert_eq!(OutputSectionId::for_input(kind.name), Some(kind.id), "{}", kind.name);
        }
    }

    #[test]
    fn input_sections_go_where_ld_bfds_script_puts_them() {
        for (input, output) in [
            (".text.hot.f", Some(".text")),
            (".init", Some(".init")),
            (".init_array.00100", Some(".init_array")),
            (".ctors", Some(".init_array")),
            (".dtors.65535", Some(".fini_array")),
            (".data.rel.ro.local", Some(".data.rel.ro")),
            (".data.x", Some(".data")),
            (".tdata.v", Some(".tdata")),
            (".tcommon", Some(".tbss")),
            ("COMMON", Some(".bss")),
            (".rodata.str1.1", Some(".rodata")),
            (".textual", None),
            ("neverc_items", None),
            (".note.ABI-tag", None),
        ] {
            assert_eq!(
                OutputSectionId::for_input(input).map(OutputSectionId::name),
                output,
                "{input}"
            );
        }
    }

    #[test]
    fn code_kinds_are_the_patterns_of_ld_bfds_text_statement() {
        for (input, kind) in [
            (".text.unlikely", Some(CodeKind::Unlikely)),
            (".text.unlikely.f", Some(CodeKind::Unlikely)),
            (".text.f_unlikely", Some(CodeKind::Unlikely)),
            (".text.exit.f", Some(CodeKind::Exit)),
            (".text.startup.main", Some(CodeKind::Startup)),
            (".text.hot.f", Some(CodeKind::Hot)),
            (".text.hotter", None),
            (".text.sorted.0001", Some(CodeKind::Sorted)),
            (".text", None),
            (".text.f", None),
        ] {
            assert_eq!(CodeKind::of(input), kind, "{input}");
        }
        assert!(CodeKind::Unlikely < CodeKind::Exit && CodeKind::Hot < CodeKind::Sorted);
    }

    #[test]
    fn folding_keeps_apart_what_lld_keeps_apart() {
        for input in [
            ".init",
            ".fini",
            ".init_array.00100",
            ".ctors",
            ".dtors.65535",
            ".preinit_array",
            "neverc_items",
        ] {
            assert!(keeps_identity(input), "{input}");
        }
        for input in [".text", ".text.twin", ".rodata.str1.1", ".initial", "9lives", ""] {
            assert!(!keeps_identity(input), "{input}");
        }
    }
}
