//! The names the linker defines (as GNU ld's default script and lld do), in one table: symbol resolution
//! asks whether a name is one of them, layout asks what its value is.

use crate::sections::OutputSectionId;

/// Where the value of a linker-defined name comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LinkerDefined<'n> {
    /// The start or the end of an output section holding an array (`.init_array`), or the start of the data
    /// segment if there is none.
    ArrayBound { section: OutputSectionId, end: bool },
    /// The start of `.bss`, or the end of the data segment's file bytes.
    BssStart,
    /// The end of the data segment's file bytes.
    DataEnd,
    /// The end of the image in memory.
    End,
    /// The end of `.text`.
    TextEnd,
    /// The image base (where the ELF header is mapped).
    ImageBase,
    /// The start of `.got`.
    GlobalOffsetTable,
    /// `__start_SECTION` / `__stop_SECTION` of an output section named like a C identifier.
    SectionBound { section: &'n str, end: bool },
    /// `_DYNAMIC`: the start of `.dynamic`, in an output that has one.
    Dynamic,
    /// The architecture's global pointer, which code addresses small data from (RISC-V
    /// `__global_pointer$`): as GNU ld's script places it, 0x800 past the start of the small data, but no
    /// further than 0x800 before the end of `.bss` nor closer than 0x800 after the start of `.data`.
    GlobalPointer,
}

/// The names with a fixed meaning, and what each means.
const FIXED: [(&str, LinkerDefined<'static>); 19] = [
    (
        "__init_array_start",
        LinkerDefined::ArrayBound {
            section: OutputSectionId::InitArray,
            end: false,
        },
    ),
    (
        "__init_array_end",
        LinkerDefined::ArrayBound {
            section: OutputSectionId::InitArray,
            end: true,
        },
    ),
    (
        "__fini_array_start",
        LinkerDefined::ArrayBound {
            section: OutputSectionId::FiniArray,
            end: false,
        },
    ),
    (
        "__fini_array_end",
        LinkerDefined::ArrayBound {
            section: OutputSectionId::FiniArray,
            end: true,
        },
    ),
    (
        "__preinit_array_start",
        LinkerDefined::ArrayBound {
            section: OutputSectionId::PreinitArray,
            end: false,
        },
    ),
    (
        "__preinit_array_end",
        LinkerDefined::ArrayBound {
            section: OutputSectionId::PreinitArray,
            end: true,
        },
    ),
    // The `IRELATIVE` relocations of indirect functions, which a static C library applies at start-up.
    (
        "__rela_iplt_start",
        LinkerDefined::ArrayBound {
            section: OutputSectionId::RelaIplt,
            end: false,
        },
    ),
    (
        "__rela_iplt_end",
        LinkerDefined::ArrayBound {
            section: OutputSectionId::RelaIplt,
            end: true,
        },
    ),
    ("__bss_start", LinkerDefined::BssStart),
    ("_end", LinkerDefined::End),
    ("end", LinkerDefined::End),
    ("_edata", LinkerDefined::DataEnd),
    ("edata", LinkerDefined::DataEnd),
    ("_etext", LinkerDefined::TextEnd),
    ("etext", LinkerDefined::TextEnd),
    ("__executable_start", LinkerDefined::ImageBase),
    ("__ehdr_start", LinkerDefined::ImageBase),
    ("_GLOBAL_OFFSET_TABLE_", LinkerDefined::GlobalOffsetTable),
    ("_DYNAMIC", LinkerDefined::Dynamic),
];

/// What `name` means if the linker defines it; `has_section` tells whether an input section of that name
/// exists (only then are `__start_`/`__stop_` names defined), and `dynamic` whether the output has a
/// `.dynamic` section: only then is `_DYNAMIC` defined (a static C library reads a defined one as its own
/// dynamic section), and the `IRELATIVE` bounds are not (the loader, or a static PIE's start-up code,
/// applies those relocations through `.dynamic`, as with GNU ld's PIE script); `arch` may name a global pointer.
pub(crate) fn linker_defined<'n>(
    name: &'n str,
    has_section: impl Fn(&str) -> bool,
    dynamic: bool,
    arch: &crate::arch::Arch,
) -> Option<LinkerDefined<'n>> {
    if arch.global_pointer == Some(name) {
        return Some(LinkerDefined::GlobalPointer);
    }
    if let Some((_, meaning)) = FIXED.iter().find(|(fixed, _)| *fixed == name) {
        let iplt_bound = matches!(
            meaning,
            LinkerDefined::ArrayBound {
                section: OutputSectionId::RelaIplt,
                ..
            }
        );
        let defined = match meaning {
            LinkerDefined::Dynamic => dynamic,
            _ => !(dynamic && iplt_bound),
        };
        return defined.then_some(*meaning);
    }
    let (section, end) = match (name.strip_prefix("__start_"), name.strip_prefix("__stop_")) {
        (Some(section), _) => (section, false),
        (_, Some(section)) => (section, true),
        _ => return None,
    };
    has_section(section).then_some(LinkerDefined::SectionBound { section, end })
}
