//! What a link makes, decided once from the options ([`OutputKind::decide`]) and read wherever the output's
//! shape depends on it: which phases run (`-r` is an object merge), the ELF file type, the file's mode, what
//! plugins are told. NeverC's ABI is the vocabulary: `NevercLinkOutputKind` (relocatable, executable, shared
//! library) with the option flags `PIE` and `STATIC`.

use neverc_tables::plugin_abi::link::{LinkOptionFlags, LinkOutputKind};

/// The kinds of output a link may make.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OutputKind {
    /// A static executable (`-static`, `ET_EXEC`, no interpreter): what the linker makes by default today.
    #[default]
    StaticExecutable,
    /// A static position-independent executable (`-static-pie`: `ET_DYN`, relocating itself at start-up).
    StaticPie,
    /// A position-independent executable (`-pie`: `ET_DYN` with an interpreter).
    Pie,
    /// A dynamically linked executable at a fixed address (`-no-pie`: `ET_EXEC` with an interpreter).
    DynamicExecutable,
    /// A shared library (`-shared`: `ET_DYN`).
    SharedLibrary,
    /// A relocatable object (`-r`: `ET_REL`), made by the `object_merge` phase (its builtin or a provider).
    Relocatable,
}

/// What the command line says about the output, from which the kind is decided.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutputRequest {
    /// `-r`.
    pub relocatable: bool,
    /// `-shared`.
    pub shared: bool,
    /// `-pie` (after `-no-pie`, or gcc's default).
    pub pie: bool,
    /// `-static` (`-Bstatic` before the inputs, `-static-pie` with `pie`).
    pub static_link: bool,
}

/// ELF file types (`e_type`).
const ET_REL: u16 = 1;
const ET_EXEC: u16 = 2;
const ET_DYN: u16 = 3;

impl OutputKind {
    /// The kind the command line asks for: `-r` wins, then `-shared`, then an executable, position-independent
    /// or not, static or not.
    pub fn decide(request: OutputRequest) -> OutputKind {
        match request {
            OutputRequest { relocatable: true, .. } => OutputKind::Relocatable,
            OutputRequest { shared: true, .. } => OutputKind::SharedLibrary,
            OutputRequest {
                pie: true,
                static_link: true,
                ..
            } => OutputKind::StaticPie,
            OutputRequest { pie: true, .. } => OutputKind::Pie,
            OutputRequest { static_link: true, .. } => OutputKind::StaticExecutable,
            _ => OutputKind::DynamicExecutable,
        }
    }

    /// NeverC's `NevercLinkOutputKind` for this kind.
    pub fn abi_kind(self) -> LinkOutputKind {
        match self {
            OutputKind::StaticExecutable | OutputKind::StaticPie | OutputKind::Pie | OutputKind::DynamicExecutable => {
                LinkOutputKind::Executable
            }
            OutputKind::SharedLibrary => LinkOutputKind::SharedLibrary,
            OutputKind::Relocatable => LinkOutputKind::Relocatable,
        }
    }

    /// The `PIE` and `STATIC` option flags of this kind.
    pub fn abi_flags(self) -> LinkOptionFlags {
        match self {
            OutputKind::StaticExecutable => LinkOptionFlags::STATIC,
            OutputKind::StaticPie => LinkOptionFlags::STATIC | LinkOptionFlags::PIE,
            OutputKind::Pie => LinkOptionFlags::PIE,
            OutputKind::DynamicExecutable | OutputKind::SharedLibrary | OutputKind::Relocatable => {
                LinkOptionFlags::default()
            }
        }
    }

    /// Whether the output may be loaded at any address: it has a `.dynamic` section and dynamic relocations
    /// for the addresses it holds.
    pub fn is_position_independent(self) -> bool {
        matches!(
            self,
            OutputKind::StaticPie | OutputKind::Pie | OutputKind::SharedLibrary
        )
    }

    /// Whether the output is loaded by the dynamic loader with the shared libraries it needs: shared
    /// libraries may be inputs.
    pub fn is_dynamic(self) -> bool {
        matches!(
            self,
            OutputKind::Pie | OutputKind::DynamicExecutable | OutputKind::SharedLibrary
        )
    }

    /// Whether the output has a `.dynamic` section (and `_DYNAMIC`): it is position-independent or dynamically
    /// linked.
    pub fn has_dynamic_section(self) -> bool {
        self.is_position_independent() || self.is_dynamic()
    }

    /// Whether the output names a program interpreter (`PT_INTERP`) that the kernel starts it through.
    pub fn has_interpreter(self) -> bool {
        matches!(self, OutputKind::Pie | OutputKind::DynamicExecutable)
    }

    /// Whether the output is a shared library (`-shared`).
    pub fn is_shared_library(self) -> bool {
        self == OutputKind::SharedLibrary
    }

    /// Whether the output is a program (as opposed to a library or an object).
    pub fn is_executable(self) -> bool {
        self.abi_kind() == LinkOutputKind::Executable
    }

    /// The ELF file type (`e_type`) of the output.
    pub fn elf_type(self) -> u16 {
        match self {
            OutputKind::StaticExecutable | OutputKind::DynamicExecutable => ET_EXEC,
            OutputKind::StaticPie | OutputKind::Pie | OutputKind::SharedLibrary => ET_DYN,
            OutputKind::Relocatable => ET_REL,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_follows_the_command_line_as_ld_decides_it() {
        let kind = |relocatable, shared, pie, static_link| {
            OutputKind::decide(OutputRequest {
                relocatable,
                shared,
                pie,
                static_link,
            })
        };
        assert_eq!(kind(true, true, true, true), OutputKind::Relocatable);
        assert_eq!(kind(false, true, true, false), OutputKind::SharedLibrary);
        assert_eq!(kind(false, false, true, true), OutputKind::StaticPie);
        assert_eq!(kind(false, false, true, false), OutputKind::Pie);
        assert_eq!(kind(false, false, false, true), OutputKind::StaticExecutable);
        assert_eq!(kind(false, false, false, false), OutputKind::DynamicExecutable);
        assert_eq!(OutputKind::Pie.elf_type(), 3);
        assert_eq!(OutputKind::StaticExecutable.elf_type(), 2);
        assert_eq!(OutputKind::Relocatable.abi_kind(), LinkOutputKind::Relocatable);
        assert!(
            OutputKind::StaticPie
                .abi_flags()
                .contains(LinkOptionFlags::PIE | LinkOptionFlags::STATIC)
        );
        assert!(!OutputKind::SharedLibrary.is_executable());
    }
}
