//! x86-64 specifics: GOT relaxation (the psABI's GOTPCRELX rules, as GNU ld and lld apply them in static
//! links). Which relocations load through the GOT or may be relaxed is the declared kind's business.

use neverc_tables::{RelocationBase, RelocationKind};

use crate::graph::{Definition, Edge, InstructionField, LinkGraph};
use crate::phases::synthesize::{PltEntry, PltField};

/// The PLT entry of an indirect function, as ld.bfd writes them in a static executable: `jmp *slot(%rip)`,
/// then an eight-byte and a two-byte `nop` to fill the 16 bytes.
pub(crate) const IPLT_ENTRY: PltEntry = PltEntry {
    code: &[0xff, 0x25, 0, 0, 0, 0, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0, 0x66, 0x90],
    fields: &[PltField {
        offset: 2,
        base: RelocationBase::Place,
        // The jump's 32-bit displacement, from the end of the instruction (the field + 4).
        field: InstructionField {
            size: 32,
            shift: 0,
            bits: &[],
        },
        bias: -4,
    }],
};

/// Whether the edge loads an address through the GOT (its declared kind says so).
pub(crate) fn uses_got(graph: &LinkGraph, edge: &Edge) -> bool {
    matches!(
        graph.relocation_kind(edge),
        Some(RelocationKind::GotEntry | RelocationKind::GotEntryRelaxable)
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
    if graph.relocation_kind(edge) != Some(RelocationKind::GotEntryRelaxable) || edge.addend != -4 {
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

/// Rewrites the instruction of a relaxable GOT load whose field is at `at` (see [`Relaxation`]); returns
/// where the direct PC-relative field now is and what to add to `S + A - P` for it.
pub(crate) fn relax_gotpcrelx(code: &mut [u8], at: usize, relaxation: Relaxation) -> Result<(usize, i128), String> {
    let missing = || "a relaxable GOT load at the start of its section has no instruction to relax".to_string();
    let byte = |code: &mut [u8], back: usize| -> Result<usize, String> {
        at.checked_sub(back)
            .filter(|index| *index < code.len())
            .ok_or_else(missing)
    };
    match relaxation {
        Relaxation::MovToLea => {
            let opcode = byte(code, 2)?;
            code[opcode] = 0x8d;
            Ok((at, 0))
        }
        Relaxation::Call => {
            let (prefix, opcode) = (byte(code, 2)?, byte(code, 1)?);
            code[prefix] = 0x67;
            code[opcode] = 0xe8;
            Ok((at, 0))
        }
        Relaxation::Jump => {
            // `jmp rel32` is one byte shorter: the field moves back a byte and a `nop` fills the end.
            let opcode = byte(code, 2)?;
            code[opcode] = 0xe9;
            if let Some(last) = code.get_mut(at + 3) {
                *last = 0x90;
            }
            Ok((at - 1, 1))
        }
    }
}
