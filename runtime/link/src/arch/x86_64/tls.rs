//! x86-64 thread-local storage code sequences and their relaxations to the local-exec model, which is the
//! only one a static executable needs: the thread pointer is `%fs:0` and every TLS variable lies at a fixed
//! offset from it (the x86-64 psABI, "ELF Handling For Thread-Local Storage", §5.5).
//!
//! Each relaxation rewrites the instruction bytes around a relocated field in place and says which bytes it
//! rewrote, so that other relocations inside them (the call of `__tls_get_addr`) are dropped.

use std::ops::Range;

use neverc_tables::RelocationKind;

/// The bytes of the code sequence a TLS relocation of `kind` at `offset` begins, which the relaxation to
/// local-exec rewrites whole (with the call of `__tls_get_addr` in it); `None` for other relocations.
pub(super) fn relaxed_sequence(kind: RelocationKind, offset: u64) -> Option<Range<u64>> {
    match kind {
        RelocationKind::TlsGd => Some(offset.saturating_sub(4)..offset.saturating_add(12)),
        RelocationKind::TlsLd => Some(offset.saturating_sub(3)..offset.saturating_add(10)),
        _ => None,
    }
}

/// `mov %fs:0, %rax` (9 bytes).
const LOAD_THREAD_POINTER: [u8; 9] = [0x64, 0x48, 0x8b, 0x04, 0x25, 0x00, 0x00, 0x00, 0x00];

/// Why a code sequence cannot be relaxed.
pub(super) type RelaxError = String;

/// Initial-exec to local-exec: `movq x@gottpoff(%rip), %reg` becomes `movq $tpoff, %reg`, and
/// `addq x@gottpoff(%rip), %reg` becomes `leaq tpoff(%reg), %reg` (or `addq $tpoff, %reg` for `%rsp` and
/// `%r12`, whose `lea` would not fit). `at` is the field's index in `code`; the caller writes the offset
/// from the thread pointer into the field.
pub(super) fn relax_gottpoff_to_le(code: &mut [u8], at: usize) -> Result<(), RelaxError> {
    let start = at
        .checked_sub(3)
        .ok_or_else(|| "a GOTTPOFF field at the start of its section has no instruction".to_string())?;
    let [rex, opcode, modrm] = match code.get(start..at) {
        Some(&[rex, opcode, modrm]) => [rex, opcode, modrm],
        _ => return Err("a GOTTPOFF field lies outside its section".into()),
    };
    // The memory operand must be RIP-relative (mod 00, r/m 101) and the prefix REX.W, maybe with REX.R.
    if modrm & 0xc7 != 0x05 || rex & 0xfb != 0x48 {
        return Err(format!(
            "R_X86_64_GOTTPOFF must be used in `movq` or `addq` with a RIP-relative operand (found {rex:02x} {opcode:02x} {modrm:02x})"
        ));
    }
    let register = (modrm >> 3) & 7;
    let extended = rex & 0x04 != 0;
    // REX.R (the register field) becomes REX.B (the r/m field), where the register now is.
    let moved_rex = if extended { 0x49 } else { 0x48 };
    let rewritten = match opcode {
        0x8b => [moved_rex, 0xc7, 0xc0 | register],
        0x03 if register == 4 => [moved_rex, 0x81, 0xc4],
        // `lea tpoff(%reg), %reg` keeps the register in both fields: REX.R and REX.B together.
        0x03 => [
            if extended { 0x4d } else { 0x48 },
            0x8d,
            0x80 | (register << 3) | register,
        ],
        _ => {
            return Err(format!(
                "R_X86_64_GOTTPOFF must be used in `movq` or `addq` (found opcode {opcode:02x})"
            ));
        }
    };
    code[start..at].copy_from_slice(&rewritten);
    Ok(())
}

/// General-dynamic to local-exec: `.byte 0x66; leaq x@tlsgd(%rip), %rdi; .word 0x6666; rex64; call
/// __tls_get_addr@PLT` (16 bytes from the field less 4), or its `-fno-plt` form `... data16 rex64 call
/// *__tls_get_addr@GOTPCREL(%rip)` (as long), becomes `mov %fs:0, %rax; leaq tpoff(%rax), %rax`.
/// Returns the rewritten range and the index of the new 32-bit field for the offset from the thread pointer.
pub(super) fn relax_tlsgd_to_le(code: &mut [u8], at: usize) -> Result<(Range<usize>, usize), RelaxError> {
    let sequence = at.checked_sub(4).map(|start| start..start + 16);
    let expected_prefix = [0x66, 0x48, 0x8d, 0x3d];
    let calls = [[0x66, 0x66, 0x48, 0xe8], [0x66, 0x48, 0xff, 0x15]];
    match sequence.clone().and_then(|range| code.get(range)) {
        Some(bytes) if bytes[..4] == expected_prefix && calls.iter().any(|call| bytes[8..12] == call[..]) => {}
        _ => {
            return Err(
                "R_X86_64_TLSGD must start the sequence `data16 leaq x@tlsgd(%rip), %rdi; data16 data16 rex64 call __tls_get_addr@PLT`"
                    .into(),
            );
        }
    }
    let range = sequence.unwrap_or_default();
    let mut rewritten = [0u8; 16];
    rewritten[..9].copy_from_slice(&LOAD_THREAD_POINTER);
    rewritten[9..12].copy_from_slice(&[0x48, 0x8d, 0x80]);
    code[range.clone()].copy_from_slice(&rewritten);
    Ok((range.clone(), range.start + 12))
}

/// General-dynamic to initial-exec (an imported variable): the sequence becomes `mov %fs:0, %rax; addq
/// x@gottpoff(%rip), %rax`. Returns the index of the new 32-bit PC-relative field, which reaches the
/// variable's GOT slot.
pub(super) fn relax_tlsgd_to_ie(code: &mut [u8], at: usize) -> Result<usize, RelaxError> {
    let (range, field) = relax_tlsgd_to_le(code, at)?;
    code[range.start + 9..range.start + 12].copy_from_slice(&[0x48, 0x03, 0x05]);
    Ok(field)
}

/// Local-dynamic to local-exec: `leaq x@tlsld(%rip), %rdi; call __tls_get_addr@PLT` (12 bytes from the field
/// less 3) or `... call *__tls_get_addr@GOTPCREL(%rip)` (13 bytes) becomes `mov %fs:0, %rax` padded with
/// prefixes or a `nop`. The `DTPOFF` offsets that follow are then offsets from the thread pointer.
pub(super) fn relax_tlsld_to_le(code: &mut [u8], at: usize) -> Result<Range<usize>, RelaxError> {
    let start = at.checked_sub(3);
    let lea = start.and_then(|start| code.get(start..at)) == Some(&[0x48, 0x8d, 0x3d][..]);
    let call = code.get(at + 4..at + 6);
    let length = match call {
        Some([0xe8, _]) if lea => 12,
        Some([0xff, 0x15]) if lea => 13,
        _ => {
            return Err(
                "R_X86_64_TLSLD must start the sequence `leaq x@tlsld(%rip), %rdi; call __tls_get_addr`".into(),
            );
        }
    };
    let start = start.unwrap_or_default();
    let range = start..start + length;
    let mut rewritten = vec![0x66, 0x66, 0x66];
    rewritten.extend_from_slice(&LOAD_THREAD_POINTER);
    if length == 13 {
        rewritten.push(0x90);
    }
    let target = code
        .get_mut(range.clone())
        .ok_or_else(|| "an R_X86_64_TLSLD sequence runs past its section".to_string())?;
    target.copy_from_slice(&rewritten);
    Ok(range)
}

/// TLS descriptors to local-exec: `leaq x@tlsdesc(%rip), %reg` becomes `movq $tpoff, %reg`; the caller
/// writes the offset into the field.
pub(super) fn relax_tlsdesc_to_le(code: &mut [u8], at: usize) -> Result<(), RelaxError> {
    let start = at
        .checked_sub(3)
        .ok_or_else(|| "a GOTPC32_TLSDESC field at the start of its section has no instruction".to_string())?;
    match code.get(start..at) {
        Some(&[rex, 0x8d, modrm]) if rex & 0xfb == 0x48 && modrm & 0xc7 == 0x05 => {
            let register = (modrm >> 3) & 7;
            let rex = if rex & 0x04 != 0 { 0x49 } else { 0x48 };
            code[start..at].copy_from_slice(&[rex, 0xc7, 0xc0 | register]);
            Ok(())
        }
        _ => Err("R_X86_64_GOTPC32_TLSDESC must be used in `leaq x@tlsdesc(%rip), %reg`".into()),
    }
}

/// TLS descriptors to initial-exec (an imported variable): `leaq x@tlsdesc(%rip), %reg` becomes `movq
/// x@gottpoff(%rip), %reg`, its field reaching the variable's GOT slot.
pub(super) fn relax_tlsdesc_to_ie(code: &mut [u8], at: usize) -> Result<(), RelaxError> {
    match at.checked_sub(2).and_then(|opcode| code.get_mut(opcode..at)) {
        Some([opcode @ 0x8d, modrm]) if *modrm & 0xc7 == 0x05 => {
            *opcode = 0x8b;
            Ok(())
        }
        _ => Err("R_X86_64_GOTPC32_TLSDESC must be used in `leaq x@tlsdesc(%rip), %reg`".into()),
    }
}

/// The descriptor call `call *x@tlscall(%rax)` becomes the two-byte `xchg %ax, %ax`.
pub(super) fn relax_tlsdesc_call_to_le(code: &mut [u8], at: usize) -> Result<(), RelaxError> {
    match code.get_mut(at..at + 2) {
        Some(bytes) if bytes == [0xff, 0x10] => {
            bytes.copy_from_slice(&[0x66, 0x90]);
            Ok(())
        }
        _ => Err("R_X86_64_TLSDESC_CALL must mark `call *(%rax)`".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gottpoff_loads_and_adds_become_immediates() {
        // movq x@gottpoff(%rip), %rax → movq $x, %rax
        let mut code = [0x48, 0x8b, 0x05, 0, 0, 0, 0];
        relax_gottpoff_to_le(&mut code, 3).unwrap();
        assert_eq!(code[..3], [0x48, 0xc7, 0xc0]);
        // movq x@gottpoff(%rip), %r9 → movq $x, %r9
        let mut code = [0x4c, 0x8b, 0x0d, 0, 0, 0, 0];
        relax_gottpoff_to_le(&mut code, 3).unwrap();
        assert_eq!(code[..3], [0x49, 0xc7, 0xc1]);
        // addq x@gottpoff(%rip), %rdx → leaq x(%rdx), %rdx
        let mut code = [0x48, 0x03, 0x15, 0, 0, 0, 0];
        relax_gottpoff_to_le(&mut code, 3).unwrap();
        assert_eq!(code[..3], [0x48, 0x8d, 0x92]);
        // addq x@gottpoff(%rip), %r12 → addq $x, %r12
        let mut code = [0x4c, 0x03, 0x25, 0, 0, 0, 0];
        relax_gottpoff_to_le(&mut code, 3).unwrap();
        assert_eq!(code[..3], [0x49, 0x81, 0xc4]);
        // Anything else is refused.
        let mut code = [0x48, 0x2b, 0x05, 0, 0, 0, 0];
        assert!(relax_gottpoff_to_le(&mut code, 3).is_err());
        assert!(relax_gottpoff_to_le(&mut code, 2).is_err());
    }

    #[test]
    fn general_and_local_dynamic_sequences_become_thread_pointer_loads() {
        let mut code = [0x66, 0x48, 0x8d, 0x3d, 0, 0, 0, 0, 0x66, 0x66, 0x48, 0xe8, 0, 0, 0, 0];
        let (range, field) = relax_tlsgd_to_le(&mut code, 4).unwrap();
        assert_eq!((range, field), (0..16, 12));
        assert_eq!(code[..12], [0x64, 0x48, 0x8b, 0x04, 0x25, 0, 0, 0, 0, 0x48, 0x8d, 0x80]);
        // -fno-plt: the call goes through __tls_get_addr's GOT slot.
        let mut code = [0x66, 0x48, 0x8d, 0x3d, 0, 0, 0, 0, 0x66, 0x48, 0xff, 0x15, 0, 0, 0, 0];
        assert_eq!(relax_tlsgd_to_le(&mut code, 4).unwrap(), (0..16, 12));
        let mut code = [0x48, 0x8d, 0x3d, 0, 0, 0, 0, 0xe8, 0, 0, 0, 0];
        assert_eq!(relax_tlsld_to_le(&mut code, 3).unwrap(), 0..12);
        assert_eq!(code, [0x66, 0x66, 0x66, 0x64, 0x48, 0x8b, 0x04, 0x25, 0, 0, 0, 0]);
        let mut short = [0x48, 0x8d, 0x3d, 0, 0, 0, 0, 0xe8, 0, 0];
        assert!(relax_tlsld_to_le(&mut short, 3).is_err());
    }

    #[test]
    fn accesses_to_imported_variables_become_initial_exec_loads() {
        // GD: mov %fs:0, %rax; add x@gottpoff(%rip), %rax (ld.bfd's bytes), the field after them.
        let mut code = [0x66, 0x48, 0x8d, 0x3d, 0, 0, 0, 0, 0x66, 0x66, 0x48, 0xe8, 0, 0, 0, 0];
        assert_eq!(relax_tlsgd_to_ie(&mut code, 4).unwrap(), 12);
        assert_eq!(code[..12], [0x64, 0x48, 0x8b, 0x04, 0x25, 0, 0, 0, 0, 0x48, 0x03, 0x05]);
        // TLSDESC: lea x@tlsdesc(%rip), %rax → mov x@gottpoff(%rip), %rax.
        let mut code = [0x48, 0x8d, 0x05, 0, 0, 0, 0];
        relax_tlsdesc_to_ie(&mut code, 3).unwrap();
        assert_eq!(code[..3], [0x48, 0x8b, 0x05]);
        let mut code = [0x48, 0x8d, 0x04, 0x24, 0, 0, 0];
        assert!(relax_tlsdesc_to_ie(&mut code, 3).is_err());
    }
}
