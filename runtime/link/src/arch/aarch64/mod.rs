//! AArch64: the instructions the linker writes itself (the PLT entries of indirect functions, the
//! range-extension veneer of `thunks.rs`), the TLS relaxations to local-exec (`tls.rs`) and what a static
//! executable makes of references to undefined weak symbols. Which relocation writes which field is the
//! target file's business: the fields here are found among its declarations by what they do
//! (`LinkGraph::declared_field`), never by number.

mod erratum;
mod thunks;
mod tls;

use neverc_tables::{BitRange, RelocationBase, RelocationKind};

use crate::arch::{
    Arch, CodeField, CodeTemplate, LazyPlt, TlsAccess, TlsRelaxed, TlsToInitialExec, Unbound, UndefinedWeak, code,
    declared_machine,
};
use crate::graph::InstructionField;

/// The table of AArch64, bound to `targets/aarch64.toml` by its declared machine.
pub(crate) static ARCH: Arch = Arch {
    machine: declared_machine(&neverc_tables::generated::targets::aarch64::TARGET),
    iplt_entry: Some(&IPLT_ENTRY),
    lazy_plt: Some(&LAZY_PLT),
    thunk: Some(&thunks::VENEER),
    // AArch64 GOT loads are not relaxed in a static executable (the target declares none relaxable).
    got_relaxation: |_, _| None,
    relax_got_load: |_, _, _| Err("AArch64 relaxes no GOT load".to_string()),
    // Every instruction of a sequence carries its own relocation: nothing is rewritten around them.
    rewritten_sequence: |_, _| None,
    relax_tls,
    relax_tls_to_ie,
    keeps_tls_models: false,
    global_pointer: None,
    elf_flags: None,
    relax: None,
    undefined_weak,
    erratum: Some(&erratum::CORTEX_A53_843419),
};

/// Relaxes a TLS access to local-exec (the addend of an AArch64 relocation is the variable's, not a PC bias,
/// so the offset is `S + A`'s).
fn relax_tls(code: &mut [u8], access: TlsAccess) -> Result<TlsRelaxed, String> {
    let TlsAccess {
        kind, at, tp_offset, ..
    } = access;
    match kind {
        RelocationKind::TlsIe => tls::relax_initial_exec_to_le(code, at, tp_offset)?,
        RelocationKind::TlsDesc => tls::relax_descriptor_to_le(code, at, tp_offset)?,
        RelocationKind::TlsDescCall => tls::relax_descriptor_call_to_le(code, at)?,
        _ => return Err("relaxing this TLS model is not supported for this target yet".to_string()),
    }
    Ok(TlsRelaxed::Done)
}

/// Relaxes a descriptor access to an imported variable to initial-exec, as ld.bfd does in an executable: the
/// `adrp` and `ldr` reach the variable's GOT slot (which the loader fills with its offset from the thread
/// pointer) and load it into x0; the `add` and the call become `nop`s.
fn relax_tls_to_ie(code: &mut [u8], access: TlsToInitialExec) -> Result<TlsRelaxed, String> {
    let TlsToInitialExec { kind, at, slot, .. } = access;
    match kind {
        RelocationKind::TlsDesc => Ok(match tls::relax_descriptor_to_ie(code, at)? {
            true => TlsRelaxed::Declared { total: slot },
            false => TlsRelaxed::Done,
        }),
        RelocationKind::TlsDescCall => tls::relax_descriptor_call_to_le(code, at).map(|()| TlsRelaxed::Done),
        _ => Err("only descriptor accesses reach thread-local variables of shared libraries".to_string()),
    }
}

/// `nop`.
const NOP: u32 = 0xd503_201f;

/// The 21-bit page offset of `adrp` (immlo at bit 29, immhi at bit 5), in pages of 4 KiB.
const ADRP_PAGE: InstructionField = InstructionField {
    size: 32,
    shift: 12,
    round: 0,
    bits: &[BitRange { lsb: 29, width: 2 }, BitRange { lsb: 5, width: 19 }],
};

/// The low 12 bits of an address in the immediate of `add` (bit 10).
const ADD_LO12: InstructionField = InstructionField {
    size: 32,
    shift: 0,
    round: 0,
    bits: &[BitRange { lsb: 10, width: 12 }],
};

/// Bits 11:3 of an address in the scaled offset of a 64-bit `ldr` (bit 10).
const LDST64_LO12: InstructionField = InstructionField {
    size: 32,
    shift: 3,
    round: 0,
    bits: &[BitRange { lsb: 10, width: 9 }],
};

/// The PLT entry of an indirect function, as ld.bfd writes them in a static executable:
/// `adrp x16, slot; ldr x17, [x16, :lo12:slot]; add x16, x16, :lo12:slot; br x17`.
const IPLT_CODE: [u8; 16] = code([0x9000_0010, 0xf940_0211, 0x9100_0210, 0xd61f_0220]);

const IPLT_ENTRY: CodeTemplate = CodeTemplate {
    code: &IPLT_CODE,
    fields: &[
        page_of_target(0),
        low_12_bits_of_target(4, LDST64_LO12),
        low_12_bits_of_target(8, ADD_LO12),
    ],
};

/// The lazily bound PLT, as ld.bfd writes it: the first entry `stp x16, x30, [sp, #-16]!; adrp x16, GOT+16;
/// ldr x17, [x16, :lo12:GOT+16]; add x16, x16, :lo12:GOT+16; br x17` and three `nop`s (the dynamic loader's
/// resolver finds the function from the slot's address in x16), each function's entry the same code as an
/// indirect function's, reaching its own slot, which first holds the first entry's address.
const LAZY_PLT_HEADER: [u8; 32] = code([
    0xa9bf_7bf0,
    0x9000_0010,
    0xf940_0211,
    0x9100_0210,
    0xd61f_0220,
    NOP,
    NOP,
    NOP,
]);

const LAZY_PLT: LazyPlt = LazyPlt {
    header: CodeTemplate {
        code: &LAZY_PLT_HEADER,
        fields: &[
            biased(page_of_target(4), 16),
            biased(low_12_bits_of_target(8, LDST64_LO12), 16),
            biased(low_12_bits_of_target(12, ADD_LO12), 16),
        ],
    },
    entry: IPLT_ENTRY,
    entry_to_header: CodeTemplate { code: &[], fields: &[] },
    index_at: None,
    unbound: Unbound::Header,
    reserved_slots: 3,
    dynamic_in_first_slot: true,
};

/// `field`, reaching `bias` bytes past its target.
const fn biased(field: CodeField, bias: i64) -> CodeField {
    CodeField { bias, ..field }
}

/// The `adrp` at `offset` of linker-made code: the page of its target.
const fn page_of_target(offset: u64) -> CodeField {
    CodeField {
        offset,
        kind: RelocationKind::Symbol,
        base: RelocationBase::Page,
        field: ADRP_PAGE,
        bias: 0,
    }
}

/// The `add` or `ldr` at `offset` of linker-made code: the low 12 bits of its target, written as `field`.
const fn low_12_bits_of_target(offset: u64, field: InstructionField) -> CodeField {
    CodeField {
        offset,
        kind: RelocationKind::Symbol,
        base: RelocationBase::Nothing,
        field,
        bias: 0,
    }
}

/// What a relocation against an undefined weak symbol becomes in a static executable, as ld.bfd makes it:
/// a call or jump (`bl`, `b`) becomes a `nop`, and a PC- or page-relative reference resolves to the place
/// itself (an `adrp` of the place's own page); `None`: the symbol is 0 as everywhere else.
fn undefined_weak(kind: RelocationKind, base: RelocationBase, place: i128) -> Option<UndefinedWeak> {
    match (kind, base) {
        (RelocationKind::Branch, _) => Some(UndefinedWeak::Instruction(NOP)),
        (RelocationKind::Symbol, RelocationBase::Place | RelocationBase::Page) => Some(UndefinedWeak::Value(place)),
        _ => None,
    }
}

/// Replaces the 32-bit instruction at `at` by `instruction`.
fn write_instruction(code: &mut [u8], at: usize, instruction: u32) -> Result<(), String> {
    code.get_mut(at..at.saturating_add(4))
        .filter(|place| place.len() == 4)
        .ok_or_else(|| "an instruction lies past the end of its section".to_string())?
        .copy_from_slice(&instruction.to_le_bytes());
    Ok(())
}

/// The 32-bit instruction at `at`.
fn read_instruction(code: &[u8], at: usize) -> Result<u32, String> {
    code.get(at..at.saturating_add(4))
        .and_then(|bytes| bytes.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| "an instruction lies past the end of its section".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plt_entry_is_ld_bfds() {
        // adrp x16, 0; ldr x17, [x16]; add x16, x16, #0; br x17 (objdump of ld.bfd's .plt in a static glibc link).
        assert_eq!(
            IPLT_CODE,
            [
                0x10, 0x00, 0x00, 0x90, 0x11, 0x02, 0x40, 0xf9, 0x10, 0x02, 0x00, 0x91, 0x20, 0x02, 0x1f, 0xd6
            ]
        );
    }

    #[test]
    fn undefined_weak_calls_become_nops_and_addresses_the_place() {
        assert_eq!(
            undefined_weak(RelocationKind::Branch, RelocationBase::Place, 8),
            Some(UndefinedWeak::Instruction(NOP))
        );
        assert_eq!(
            undefined_weak(RelocationKind::Symbol, RelocationBase::Page, 0x40_1234),
            Some(UndefinedWeak::Value(0x40_1234))
        );
        assert_eq!(undefined_weak(RelocationKind::Symbol, RelocationBase::Nothing, 8), None);
        let mut code = [0u8; 6];
        write_instruction(&mut code, 0, NOP).unwrap();
        assert_eq!(read_instruction(&code, 0).unwrap(), NOP);
        assert!(write_instruction(&mut code, 4, NOP).is_err());
        assert!(read_instruction(&code, usize::MAX).is_err());
    }
}
