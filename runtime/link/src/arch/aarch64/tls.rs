//! AArch64 thread-local storage code sequences and their relaxations to the local-exec model, the only one a
//! static executable needs: the thread pointer is `tpidr_el0` and every TLS variable lies at a fixed offset
//! from it (TLS variant I: after a 16-byte TCB). The rewrites are lld's and ld.bfd's for static links: the
//! offset is built in the destination register by `movz #:tprel_g1:` and `movk #:tprel_g0_nc:`, so it must
//! lie in `0 .. 2^32`.
//!
//! Which relocation starts which sequence is its declared kind; which instruction of the sequence a
//! relocation marks is read from the instruction itself (as the x86-64 relaxations read theirs).

use super::{NOP, read_instruction, write_instruction};

/// Why a code sequence cannot be relaxed.
pub(super) type RelaxError = String;

/// `adrp xd, ...`.
fn is_adrp(instruction: u32) -> bool {
    instruction & 0x9f00_0000 == 0x9000_0000
}

/// `ldr xt, [xn, #imm]` (64-bit load, unsigned scaled offset).
fn is_ldr64(instruction: u32) -> bool {
    instruction & 0xffc0_0000 == 0xf940_0000
}

/// `add xd, xn, #imm` (64-bit, immediate).
fn is_add64_immediate(instruction: u32) -> bool {
    instruction & 0xff80_0000 == 0x9100_0000
}

/// `blr xn`.
fn is_blr(instruction: u32) -> bool {
    instruction & 0xffff_fc1f == 0xd63f_0000
}

/// `movz xd, #(offset >> 16), lsl #16`.
fn movz_g1(register: u32, offset: u64) -> u32 {
    0xd2a0_0000 | (((offset >> 16) as u32 & 0xffff) << 5) | register
}

/// `movk xd, #(offset & 0xffff)`.
fn movk_g0(register: u32, offset: u64) -> u32 {
    0xf280_0000 | ((offset as u32 & 0xffff) << 5) | register
}

/// The offset from the thread pointer as the two moves build it, or why it cannot be.
fn unsigned32(offset: i128, what: &str) -> Result<u64, RelaxError> {
    u32::try_from(offset)
        .map(u64::from)
        .map_err(|_| format!("{what}: the offset {offset:#x} from the thread pointer does not fit 32 bits"))
}

/// Initial-exec to local-exec: `adrp xd, :gottprel:x` becomes `movz xd, #:tprel_g1:x` and `ldr xd, [xn,
/// :gottprel_lo12:x]` becomes `movk xd, #:tprel_g0_nc:x` (`R_AARCH64_TLSIE_ADR_GOTTPREL_PAGE21` and
/// `R_AARCH64_TLSIE_LD64_GOTTPREL_LO12_NC`). `offset` is the variable's offset from the thread pointer.
pub(super) fn relax_initial_exec_to_le(code: &mut [u8], at: usize, offset: i128) -> Result<(), RelaxError> {
    let instruction = read_instruction(code, at)?;
    let offset = unsigned32(offset, "initial-exec TLS")?;
    let register = instruction & 0x1f;
    let relaxed = if is_adrp(instruction) {
        movz_g1(register, offset)
    } else if is_ldr64(instruction) {
        movk_g0(register, offset)
    } else {
        return Err(format!(
            "an initial-exec TLS relocation must mark `adrp` or a 64-bit `ldr` (found {instruction:#010x})"
        ));
    };
    write_instruction(code, at, relaxed)
}

/// TLS descriptors to local-exec: `adrp x0, :tlsdesc:x; ldr x1, [x0, :tlsdesc_lo12:x]; add x0, x0,
/// :tlsdesc_lo12:x; .tlsdesccall x; blr x1` becomes `movz x0, #:tprel_g1:x; movk x0, #:tprel_g0_nc:x; nop;
/// nop`, leaving the offset from the thread pointer in x0 as the descriptor call would. This rewrites the
/// instruction one of the sequence's relocations marks (`R_AARCH64_TLSDESC_ADR_PAGE21`, `_LD64_LO12`,
/// `_ADD_LO12`).
pub(super) fn relax_descriptor_to_le(code: &mut [u8], at: usize, offset: i128) -> Result<(), RelaxError> {
    let instruction = read_instruction(code, at)?;
    let offset = unsigned32(offset, "TLS descriptor")?;
    let relaxed = if is_adrp(instruction) {
        movz_g1(0, offset)
    } else if is_ldr64(instruction) {
        movk_g0(0, offset)
    } else if is_add64_immediate(instruction) {
        NOP
    } else {
        return Err(format!(
            "a TLS descriptor relocation must mark the `adrp`, `ldr` or `add` of the descriptor sequence (found {instruction:#010x})"
        ));
    };
    write_instruction(code, at, relaxed)
}

/// TLS descriptors to initial-exec (an imported variable): `adrp x0, :tlsdesc:x; ldr x1, [x0,
/// :tlsdesc_lo12:x]; add x0, x0, :tlsdesc_lo12:x; blr x1` becomes `adrp x0, :gottprel:x; ldr x0, [x0,
/// :gottprel_lo12:x]; nop; nop`. Rewrites the instruction the relocation at `at` marks; returns whether its
/// field is still to be written (reaching the GOT slot through the relocation's declared field).
pub(super) fn relax_descriptor_to_ie(code: &mut [u8], at: usize) -> Result<bool, RelaxError> {
    let instruction = read_instruction(code, at)?;
    if is_adrp(instruction) {
        Ok(true)
    } else if is_ldr64(instruction) {
        // The load's destination (Rt, bits 4:0) becomes x0, where the descriptor call leaves its result.
        write_instruction(code, at, instruction & !0x1f)?;
        Ok(true)
    } else if is_add64_immediate(instruction) {
        write_instruction(code, at, NOP)?;
        Ok(false)
    } else {
        Err(format!(
            "a TLS descriptor relocation must mark the `adrp`, `ldr` or `add` of the descriptor sequence (found {instruction:#010x})"
        ))
    }
}

/// The descriptor call `blr x1` (`R_AARCH64_TLSDESC_CALL`) becomes a `nop`.
pub(super) fn relax_descriptor_call_to_le(code: &mut [u8], at: usize) -> Result<(), RelaxError> {
    let instruction = read_instruction(code, at)?;
    if !is_blr(instruction) {
        return Err(format!(
            "R_AARCH64_TLSDESC_CALL must mark `blr` (found {instruction:#010x})"
        ));
    }
    write_instruction(code, at, NOP)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(code: &[u8]) -> Vec<u32> {
        code.chunks(4)
            .map(|word| u32::from_le_bytes(word.try_into().unwrap()))
            .collect()
    }

    fn bytes(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|word| word.to_le_bytes()).collect()
    }

    #[test]
    fn descriptor_sequences_of_imported_variables_load_their_got_slots() {
        // adrp x0, :tlsdesc:x; ldr x1, [x0, :tlsdesc_lo12:x]; add x0, x0, :tlsdesc_lo12:x; blr x1.
        let mut code = bytes(&[0x9000_0000, 0xf940_0001, 0x9100_0000, 0xd63f_0020]);
        assert!(relax_descriptor_to_ie(&mut code, 0).unwrap());
        assert!(relax_descriptor_to_ie(&mut code, 4).unwrap());
        assert!(!relax_descriptor_to_ie(&mut code, 8).unwrap());
        relax_descriptor_call_to_le(&mut code, 12).unwrap();
        // adrp x0, ...; ldr x0, [x0, ...]; nop; nop (ld.bfd's relaxation).
        assert_eq!(words(&code), [0x9000_0000, 0xf940_0000, NOP, NOP]);
        let mut other = bytes(&[0xd503_201f]);
        assert!(relax_descriptor_to_ie(&mut other, 0).is_err());
    }

    #[test]
    fn initial_exec_loads_become_moves_of_the_offset() {
        // adrp x3, :gottprel:x; ldr x3, [x3, :gottprel_lo12:x] (GNU as output).
        let mut code = bytes(&[0x9000_0003, 0xf940_0063]);
        relax_initial_exec_to_le(&mut code, 0, 0x1_2345).unwrap();
        relax_initial_exec_to_le(&mut code, 4, 0x1_2345).unwrap();
        // movz x3, #0x1, lsl #16; movk x3, #0x2345
        assert_eq!(words(&code), [0xd2a0_0023, 0xf284_68a3]);
        let mut other = bytes(&[0x8b00_0000]);
        assert!(relax_initial_exec_to_le(&mut other, 0, 16).is_err());
        assert!(relax_initial_exec_to_le(&mut code, 0, -16).is_err());
        assert!(relax_initial_exec_to_le(&mut code, 0, 1 << 32).is_err());
    }

    #[test]
    fn descriptor_sequences_become_moves_into_x0_and_nops() {
        // adrp x0, :tlsdesc:x; ldr x1, [x0, :tlsdesc_lo12:x]; add x0, x0, :tlsdesc_lo12:x; blr x1
        let mut code = bytes(&[0x9000_0000, 0xf940_0001, 0x9100_0000, 0xd63f_0020]);
        for at in [0, 4, 8] {
            relax_descriptor_to_le(&mut code, at, 0x10).unwrap();
        }
        relax_descriptor_call_to_le(&mut code, 12).unwrap();
        // movz x0, #0, lsl #16; movk x0, #0x10; nop; nop
        assert_eq!(words(&code), [0xd2a0_0000, 0xf280_0200, NOP, NOP]);
        assert!(relax_descriptor_call_to_le(&mut code, 0).is_err());
        assert!(relax_descriptor_to_le(&mut code, 12, 0).is_err());
        assert!(relax_descriptor_to_le(&mut code, 14, 0).is_err());
    }
}
