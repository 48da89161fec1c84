//! x86-64 specifics: relocation names and GOT relaxation (the psABI's GOTPCRELX rules, as GNU ld and lld
//! apply them in static links).

use neverc_tables::RelocationFormat;
use neverc_tables::generated::targets::x86_64 as x86_64_target;
use object::elf;

use crate::graph::{Definition, Edge, LinkGraph};

/// The name of an x86-64 ELF relocation type, for messages: the name `targets/x86_64.toml` declares for it.
pub(crate) fn relocation_name(raw: u32) -> String {
    match x86_64_target::relocation(RelocationFormat::Elf, raw) {
        Some(relocation) => relocation.name.to_string(),
        None => format!("relocation type {raw}"),
    }
}

/// Whether the edge loads an address through the GOT.
pub(crate) fn uses_got(edge: &Edge) -> bool {
    matches!(
        edge.relocation.raw,
        elf::R_X86_64_GOTPCREL | elf::R_X86_64_GOTPCRELX | elf::R_X86_64_REX_GOTPCRELX
    )
}

/// How a relaxable GOT load is rewritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Relaxation {
    /// `mov foo@GOTPCREL(%rip), %reg` → `lea foo(%rip), %reg`.
    MovToLea,
    /// `call *foo@GOTPCREL(%rip)` → `addr32 call foo`.
    Call,
    /// `jmp *foo@GOTPCREL(%rip)` → `jmp foo; nop`.
    Jump,
}

/// The relaxation of a GOTPCRELX edge, if its instruction and target allow one: the target must be
/// defined in the link (a weak undefined symbol needs a real slot holding 0).
pub(crate) fn relaxation(graph: &LinkGraph, edge: &Edge) -> Option<Relaxation> {
    if !matches!(
        edge.relocation.raw,
        elf::R_X86_64_GOTPCRELX | elf::R_X86_64_REX_GOTPCRELX
    ) || edge.addend != -4
    {
        return None;
    }
    let symbol = &graph.symbols[graph.resolved(edge.target_symbol?).index()];
    if symbol.definition == Definition::Undefined {
        return None;
    }
    let atom = &graph.atoms[edge.source.index()];
    let bytes = graph.atom_bytes(atom);
    let offset = usize::try_from(edge.offset).ok()?;
    let opcode = *bytes.get(offset.checked_sub(2)?)?;
    let modrm = *bytes.get(offset - 1)?;
    match (opcode, modrm) {
        (0x8b, _) => Some(Relaxation::MovToLea),
        (0xff, 0x15) => Some(Relaxation::Call),
        (0xff, 0x25) => Some(Relaxation::Jump),
        _ => None,
    }
}
