//! x86-64: the PLT entry of an indirect function, GOT relaxation (the psABI's GOTPCRELX rules, as GNU ld and
//! lld apply them in static links) and the TLS relaxations to local-exec (`tls.rs`). Which relocations load
//! through the GOT or may be relaxed is the declared kind's business.

mod tls;

use neverc_tables::{RelocationBase, RelocationKind};

use crate::arch::{
    Arch, CodeField, CodeTemplate, GotRelaxation, LazyPlt, TlsAccess, TlsRelaxed, TlsToInitialExec, Unbound,
    declared_machine,
};
use crate::graph::{Definition, Edge, InstructionField, LinkGraph};

/// The table of x86-64, bound to `targets/x86_64.toml` by its declared machine.
pub(crate) static ARCH: Arch = Arch {
    machine: declared_machine(&neverc_tables::generated::targets::x86_64::TARGET),
    iplt_entry: Some(&IPLT_ENTRY),
    lazy_plt: Some(&LAZY_PLT),
    // A branch reaches ±2 GiB, the whole 4 GiB output limit: one that does not is relocation's error.
    thunk: None,
    got_relaxation: relaxation,
    relax_got_load: relax_gotpcrelx,
    rewritten_sequence: tls::relaxed_sequence,
    relax_tls,
    relax_tls_to_ie,
    keeps_tls_models: false,
    global_pointer: None,
    elf_flags: None,
    relax: None,
    undefined_weak: |_, _, _| None,
    erratum: None,
};

/// The PLT entry of an indirect function, as ld.bfd writes them in a static executable: `jmp *slot(%rip)`,
/// then an eight-byte and a two-byte `nop` to fill the 16 bytes.
const IPLT_ENTRY: CodeTemplate = CodeTemplate {
    code: &[0xff, 0x25, 0, 0, 0, 0, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0, 0x66, 0x90],
    fields: &[CodeField {
        offset: 2,
        kind: RelocationKind::Symbol,
        base: RelocationBase::Place,
        // The jump's 32-bit displacement, from the end of the instruction (the field + 4).
        field: InstructionField {
            size: 32,
            shift: 0,
            round: 0,
            bits: &[],
        },
        bias: -4,
    }],
};

/// A 32-bit displacement from the end of its instruction, which the field ends.
const DISPLACEMENT: InstructionField = InstructionField {
    size: 32,
    shift: 0,
    round: 0,
    bits: &[],
};

/// A field of linker-made code holding `target + offset` as a displacement from the end of its instruction.
const fn displacement(at: u64, offset: i64) -> CodeField {
    CodeField {
        offset: at,
        kind: RelocationKind::Symbol,
        base: RelocationBase::Place,
        field: DISPLACEMENT,
        bias: offset - 4,
    }
}

/// The lazily bound PLT, as ld.bfd writes it (without IBT): the first entry `push GOT+8(%rip); jmp
/// *GOT+16(%rip); nopl 0(%rax)`; each function's entry `jmp *slot(%rip); push $index; jmp first`, whose slot
/// first points at its `push`.
const LAZY_PLT: LazyPlt = LazyPlt {
    header: CodeTemplate {
        code: &[0xff, 0x35, 0, 0, 0, 0, 0xff, 0x25, 0, 0, 0, 0, 0x0f, 0x1f, 0x40, 0x00],
        fields: &[displacement(2, 8), displacement(8, 16)],
    },
    entry: CodeTemplate {
        code: &[0xff, 0x25, 0, 0, 0, 0, 0x68, 0, 0, 0, 0, 0xe9, 0, 0, 0, 0],
        fields: &[displacement(2, 0)],
    },
    entry_to_header: CodeTemplate {
        code: &[],
        fields: &[displacement(12, 0)],
    },
    index_at: Some(7),
    unbound: Unbound::IntoEntry(6),
    reserved_slots: 3,
    dynamic_in_first_slot: true,
};

/// How a relaxable GOT load is rewritten (the meanings of this architecture's [`GotRelaxation`]s):
/// `mov foo@GOTPCREL(%rip), %reg` → `lea foo(%rip), %reg`.
const MOV_TO_LEA: GotRelaxation = GotRelaxation(0);
/// `call *foo@GOTPCREL(%rip)` → `addr32 call foo`.
const CALL: GotRelaxation = GotRelaxation(1);
/// `jmp *foo@GOTPCREL(%rip)` → `jmp foo; nop`.
const JUMP: GotRelaxation = GotRelaxation(2);

/// The relaxation of a GOTPCRELX edge, if its instruction and target allow one: the target must be
/// defined in the link (a weak undefined symbol needs a real slot holding 0).
fn relaxation(graph: &LinkGraph, edge: &Edge) -> Option<GotRelaxation> {
    if graph.relocation_kind(edge) != Some(RelocationKind::GotEntryRelaxable) || edge.addend != -4 {
        return None;
    }
    let resolved = graph.resolved(edge.target_symbol.get()?);
    let symbol = &graph.symbols[resolved.index()];
    // A symbol a shared library defines has its address only at run time (unless the output holds a copy), and
    // so does a shared library's own interposable definition.
    if symbol.definition == Definition::Undefined
        || (symbol.definition == Definition::Shared && symbol.atom.is_none())
        || graph.is_preemptible(resolved)
    {
        return None;
    }
    let atom = &graph.atoms[edge.source.index()];
    let bytes = graph.atom_bytes(atom);
    let offset = usize::try_from(edge.offset).ok()?;
    let opcode = *bytes.get(offset.checked_sub(2)?)?;
    let modrm = *bytes.get(offset - 1)?;
    match (opcode, modrm) {
        (0x8b, _) => Some(MOV_TO_LEA),
        (0xff, 0x15) => Some(CALL),
        (0xff, 0x25) => Some(JUMP),
        _ => None,
    }
}

/// Rewrites the instruction of a relaxable GOT load whose field is at `at`; returns where the direct
/// PC-relative field now is and what to add to `S + A - P` for it.
fn relax_gotpcrelx(code: &mut [u8], at: usize, relaxation: GotRelaxation) -> Result<(usize, i128), String> {
    let missing = || "a relaxable GOT load at the start of its section has no instruction to relax".to_string();
    let byte = |code: &mut [u8], back: usize| -> Result<usize, String> {
        at.checked_sub(back)
            .filter(|index| *index < code.len())
            .ok_or_else(missing)
    };
    match relaxation {
        MOV_TO_LEA => {
            let opcode = byte(code, 2)?;
            code[opcode] = 0x8d;
            Ok((at, 0))
        }
        CALL => {
            let (prefix, opcode) = (byte(code, 2)?, byte(code, 1)?);
            code[prefix] = 0x67;
            code[opcode] = 0xe8;
            Ok((at, 0))
        }
        JUMP => {
            // `jmp rel32` is one byte shorter: the field moves back a byte and a `nop` fills the end.
            let opcode = byte(code, 2)?;
            code[opcode] = 0xe9;
            if let Some(last) = code.get_mut(at + 3) {
                *last = 0x90;
            }
            Ok((at - 1, 1))
        }
        GotRelaxation(other) => Err(format!("unknown GOT relaxation {other}")),
    }
}

/// Relaxes a TLS access to local-exec. The relaxed sequences hold the offset of the variable itself from the
/// thread pointer: the relocation's addend was the PC-relative bias of the field it replaced.
/// General-dynamic and descriptor accesses to an imported variable become initial-exec ones, as ld.bfd
/// relaxes them in an executable.
fn relax_tls_to_ie(code: &mut [u8], access: TlsToInitialExec) -> Result<TlsRelaxed, String> {
    let TlsToInitialExec {
        kind,
        at,
        place,
        slot,
        addend,
    } = access;
    match kind {
        RelocationKind::TlsGd => {
            let field = tls::relax_tlsgd_to_ie(code, at)?;
            // The new field lies `field - at` bytes after the old one, and is relative to its own end.
            let new_place = place + (field - at) as i128;
            Ok(TlsRelaxed::Signed32 {
                at: field,
                value: slot - (new_place + 4),
            })
        }
        RelocationKind::TlsDesc => {
            tls::relax_tlsdesc_to_ie(code, at)?;
            Ok(TlsRelaxed::Declared {
                total: slot + i128::from(addend),
            })
        }
        RelocationKind::TlsDescCall => tls::relax_tlsdesc_call_to_le(code, at).map(|()| TlsRelaxed::Done),
        _ => Err("only general-dynamic and descriptor accesses reach variables of shared libraries".to_string()),
    }
}

fn relax_tls(code: &mut [u8], access: TlsAccess) -> Result<TlsRelaxed, String> {
    let TlsAccess {
        kind,
        at,
        tp_offset,
        addend,
    } = access;
    let of_symbol = tp_offset - i128::from(addend);
    match kind {
        RelocationKind::TlsIe => {
            tls::relax_gottpoff_to_le(code, at)?;
            Ok(TlsRelaxed::Signed32 { at, value: of_symbol })
        }
        RelocationKind::TlsGd => {
            let (_, field) = tls::relax_tlsgd_to_le(code, at)?;
            Ok(TlsRelaxed::Signed32 {
                at: field,
                value: of_symbol,
            })
        }
        RelocationKind::TlsLd => tls::relax_tlsld_to_le(code, at).map(|_| TlsRelaxed::Done),
        RelocationKind::TlsDesc => {
            tls::relax_tlsdesc_to_le(code, at)?;
            Ok(TlsRelaxed::Signed32 { at, value: of_symbol })
        }
        RelocationKind::TlsDescCall => tls::relax_tlsdesc_call_to_le(code, at).map(|()| TlsRelaxed::Done),
        _ => Err("relaxing this TLS model is not supported for this target yet".to_string()),
    }
}
