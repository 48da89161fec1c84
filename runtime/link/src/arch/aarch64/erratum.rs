//! Cortex-A53 erratum 843419, worked around as ld.bfd does it (`--fix-cortex-a53-843419`, which Debian's
//! `aarch64-linux-gnu-gcc` passes on every link). On an affected core, a load or store whose base register an
//! `adrp` at the end of a 4 KiB page (page offset 0xff8 or 0xffc) wrote may use a wrong address when the
//! sequence is:
//!
//! 1. the `adrp` writing `Rn`;
//! 2. any load or store, except a load of a register pair;
//! 3. optionally one more instruction;
//! 4. a load or store with an unsigned immediate offset from `Rn`.
//!
//! The instruction of step 4 is copied into a veneer followed by a branch back. Once the code is relocated,
//! ld.bfd turns the `adrp` into an `adr` of the same page address when an `adr` reaches it (±1 MiB), which
//! leaves nothing to fix and the veneer unused; otherwise the instruction of step 4 becomes a branch to the
//! veneer. Only code is searched: the spans of a section that its mapping symbols (`$x`, `$d`) mark as code.

use neverc_tables::{BitRange, RelocationBase, RelocationKind};

use super::code;
use crate::arch::{CodeField, CodeTemplate, ErratumFix, ErratumSequence};
use crate::graph::InstructionField;

pub(super) static CORTEX_A53_843419: ErratumFix = ErratumFix {
    veneer_prefix: "__erratum_843419_veneer_",
    branch: &BRANCH,
    mapping_symbol,
    find,
    apply,
};

/// `b target`: the veneer's way back.
const BRANCH: CodeTemplate = CodeTemplate {
    code: &BRANCH_CODE,
    fields: &[CodeField {
        offset: 0,
        kind: RelocationKind::Branch,
        base: RelocationBase::Place,
        field: BRANCH_26,
        bias: 0,
    }],
};

const BRANCH_CODE: [u8; 4] = code([B]);

/// The 26-bit word offset of `b` and `bl`.
const BRANCH_26: InstructionField = InstructionField {
    size: 32,
    shift: 2,
    round: 0,
    bits: &[BitRange { lsb: 0, width: 26 }],
};

/// `b .` and `adr x0, .`: the opcodes, every operand 0.
const B: u32 = 0x1400_0000;
const ADR: u32 = 0x1000_0000;

/// The page offsets at which an `adrp` may start an affected sequence.
const LAST_WORDS_OF_PAGE: [u64; 2] = [0xff8, 0xffc];

/// `$x` (code follows), `$d` (data follows), or one of them with a `.suffix`.
fn mapping_symbol(name: &str) -> Option<bool> {
    let (mark, rest) = name.split_at_checked(2)?;
    if !(rest.is_empty() || rest.starts_with('.')) {
        return None;
    }
    match mark {
        "$x" => Some(true),
        "$d" => Some(false),
        _ => None,
    }
}

/// The little-endian instruction at word `index` of `code`.
fn word(code: &[u8], index: usize) -> Option<u32> {
    let bytes = code.get(index * 4..index * 4 + 4)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

fn is_adrp(instruction: u32) -> bool {
    instruction & 0x9f00_0000 == 0x9000_0000
}

/// `Rd` (or `Rt`): bits 4:0.
fn destination(instruction: u32) -> u32 {
    instruction & 0x1f
}

/// `Rn`: bits 9:5.
fn base_register(instruction: u32) -> u32 {
    (instruction >> 5) & 0x1f
}

/// A load or store of one or more registers at an unsigned immediate offset (`ldr x0, [x1, #8]`).
fn is_unsigned_offset_access(instruction: u32) -> bool {
    instruction & 0x3b00_0000 == 0x3900_0000
}

/// Whether `instruction` is in one of the load and store classes the erratum concerns, and if so whether
/// it loads a pair of registers (which cannot be step 2). Atomic memory operations are none of them.
fn memory_access(instruction: u32) -> Option<PairLoad> {
    // The load and store encoding space: op0 = x1x0.
    if instruction & 0x0a00_0000 != 0x0800_0000 {
        return None;
    }
    let load = instruction & (1 << 22) != 0;
    let pair = |is_pair: bool| Some(PairLoad(is_pair && load));
    // Load/store exclusive: a pair when bit 21 is set.
    if instruction & 0x3f00_0000 == 0x0800_0000 {
        return pair(instruction & (1 << 21) != 0);
    }
    // Load/store pair: no-allocate, post-indexed, offset and pre-indexed.
    if matches!(
        instruction & 0x3b80_0000,
        0x2800_0000 | 0x2880_0000 | 0x2900_0000 | 0x2980_0000
    ) {
        return pair(true);
    }
    // Load literal, and single registers: unscaled, post-indexed, unprivileged, pre-indexed, register offset
    // and unsigned offset.
    let single = instruction & 0x3b00_0000 == 0x1800_0000
        || matches!(
            instruction & 0x3b20_0c00,
            0x3800_0000 | 0x3800_0400 | 0x3800_0800 | 0x3800_0c00 | 0x3820_0800
        )
        || is_unsigned_offset_access(instruction);
    // Advanced SIMD multiple and single structures, with and without post-indexing.
    let structures = instruction & 0xbfbf_0000 == 0x0c00_0000
        || instruction & 0xbfa0_0000 == 0x0c80_0000
        || instruction & 0xbf9f_0000 == 0x0d00_0000
        || instruction & 0xbf80_0000 == 0x0d80_0000;
    (single || structures).then_some(PairLoad(false))
}

/// Whether a load or store loads a pair of registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PairLoad(bool);

/// See [`ErratumFix::find`].
fn find(address: u64, code: &[u8]) -> Option<usize> {
    if !LAST_WORDS_OF_PAGE.contains(&(address & 0xfff)) {
        return None;
    }
    let first = word(code, 0).filter(|first| is_adrp(*first))?;
    memory_access(word(code, 1)?).filter(|access| *access == PairLoad(false))?;
    let moved =
        |instruction: u32| is_unsigned_offset_access(instruction) && base_register(instruction) == destination(first);
    if moved(word(code, 2)?) {
        return Some(8);
    }
    word(code, 3).filter(|fourth| moved(*fourth)).map(|_| 12)
}

/// See [`ErratumFix::apply`].
fn apply(code: &mut [u8], sequence: ErratumSequence) -> Result<(), String> {
    let ErratumSequence {
        first_at,
        first_place,
        moved_at,
        moved_place,
        veneer,
    } = sequence;
    let tail = code.get(first_at..).unwrap_or_default();
    let still_affected = moved_at
        .checked_sub(first_at)
        .is_some_and(|moved| find(first_place, tail) == Some(moved));
    if !still_affected {
        return Ok(());
    }
    let adrp = word(tail, 0).ok_or("an erratum 843419 sequence lies past its section")?;
    // The page the relocated `adrp` names, as an offset from the `adrp` itself.
    let pages = (((adrp >> 5) & 0x7_ffff) << 2) | ((adrp >> 29) & 0x3);
    let pages = i64::from(((pages << 11) as i32) >> 11);
    let target = (first_place & !0xfff) as i64 + (pages << 12);
    let offset = target - first_place as i64;
    if (-(1 << 20)..1 << 20).contains(&offset) {
        let immediate = offset as u32;
        let adr = ADR | ((immediate & 0x3) << 29) | (((immediate >> 2) & 0x7_ffff) << 5) | destination(adrp);
        return write(code, first_at, adr);
    }
    let distance = veneer as i64 - moved_place as i64;
    if distance % 4 != 0 || !(-(1 << 27)..1 << 27).contains(&distance) {
        return Err(format!(
            "the erratum 843419 veneer at {veneer:#x} is out of reach of the branch at {moved_place:#x}"
        ));
    }
    write(code, moved_at, B | ((distance >> 2) as u32 & 0x3ff_ffff))
}

fn write(code: &mut [u8], at: usize, instruction: u32) -> Result<(), String> {
    code.get_mut(at..at + 4)
        .ok_or_else(|| "an erratum 843419 sequence lies past its section".to_string())?
        .copy_from_slice(&instruction.to_le_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Encodings as GNU as 2.40 writes them.
    const ADRP_X1: u32 = 0x9000_0001; // adrp x1, .
    const LDR_X2_X1: u32 = 0xf940_0022; // ldr x2, [x1]
    const LDR_X0_X1: u32 = 0xf940_0020; // ldr x0, [x1]
    const LDR_W3_X1_4: u32 = 0xb940_0423; // ldr w3, [x1, #4]
    const LDP: u32 = 0xa940_0440; // ldp x0, x1, [x2]
    const STP: u32 = 0xa900_0440; // stp x0, x1, [x2]
    const ADD_X1: u32 = 0x9100_0021; // add x1, x1, #0
    const LDXR: u32 = 0xc85f_7c40; // ldxr x0, [x2]
    const LDAXP: u32 = 0xc87f_8440; // ldaxp x0, x1, [x2]
    const ST1: u32 = 0x4c00_7040; // st1 {v0.16b}, [x2]
    const LD1: u32 = 0x4c40_7040; // ld1 {v0.16b}, [x2]
    const LDR_REGISTER: u32 = 0xf863_6840; // ldr x0, [x2, x3]
    const LDR_POST: u32 = 0xf840_8440; // ldr x0, [x2], #8
    const LDR_LITERAL: u32 = 0x5800_0000; // ldr x0, .
    const LDADD: u32 = 0xf820_0041; // ldadd x0, x1, [x2]
    const STR_Q0: u32 = 0x3d80_0420; // str q0, [x1, #16]

    fn bytes(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|word| word.to_le_bytes()).collect()
    }

    #[test]
    fn the_classes_of_loads_and_stores() {
        for access in [
            LDR_X2_X1,
            STP,
            LDXR,
            ST1,
            LD1,
            LDR_REGISTER,
            LDR_POST,
            LDR_LITERAL,
            STR_Q0,
        ] {
            assert_eq!(memory_access(access), Some(PairLoad(false)), "{access:#x}");
        }
        assert_eq!(memory_access(LDP), Some(PairLoad(true)));
        assert_eq!(memory_access(LDAXP), Some(PairLoad(true)));
        for other in [ADRP_X1, ADD_X1, LDADD, B, ADR] {
            assert_eq!(memory_access(other), None, "{other:#x}");
        }
    }

    #[test]
    fn sequences_of_three_and_four_instructions_at_the_end_of_a_page() {
        let three = bytes(&[ADRP_X1, LDR_X2_X1, LDR_X0_X1]);
        assert_eq!(find(0x1ff8, &three), Some(8));
        assert_eq!(find(0x1ffc, &three), Some(8));
        assert_eq!(find(0x1ff4, &three), None);
        assert_eq!(find(0x2000, &three), None);
        let four = bytes(&[ADRP_X1, STP, ADD_X1, LDR_W3_X1_4]);
        assert_eq!(find(0x1ff8, &four), Some(12));
        // A pair load cannot be the second instruction; the last one must use the `adrp`'s register; the
        // sequence must lie within its code.
        assert_eq!(find(0x1ff8, &bytes(&[ADRP_X1, LDP, LDR_X0_X1])), None);
        assert_eq!(find(0x1ff8, &bytes(&[ADRP_X1, LDR_X2_X1, 0xf940_0040])), None);
        assert_eq!(find(0x1ff8, &three[..8]), None);
    }

    #[test]
    fn near_pages_become_adr_and_far_ones_branch_to_the_veneer() {
        // At 0x1ff8, `adrp x1` of the page 0x10 pages on (0x11000): `adr x1, .+0xf008` reaches it.
        let near = ADRP_X1 | ((0x10 >> 2) << 5);
        let mut code = bytes(&[near, LDR_X2_X1, LDR_X0_X1]);
        let sequence = ErratumSequence {
            first_at: 0,
            first_place: 0x1ff8,
            moved_at: 8,
            moved_place: 0x2000,
            veneer: 0x3000,
        };
        apply(&mut code, sequence).unwrap();
        // GNU as: `adr x1, .+0xf008` at 0x1ff8.
        assert_eq!(word(&code, 0), Some(0x1007_8041));
        assert_eq!(word(&code, 2), Some(LDR_X0_X1));
        // 0x1000 pages (16 MiB) on: out of an `adr`'s reach, so the load branches to the veneer.
        let far = ADRP_X1 | ((0x1000 >> 2) << 5);
        let mut code = bytes(&[far, LDR_X2_X1, LDR_X0_X1]);
        apply(&mut code, sequence).unwrap();
        assert_eq!(word(&code, 0), Some(far));
        assert_eq!(word(&code, 2), Some(0x1400_0400));
        // A sequence that no longer ends a page is left alone.
        let mut code = bytes(&[far, LDR_X2_X1, LDR_X0_X1]);
        apply(
            &mut code,
            ErratumSequence {
                first_place: 0x1ff0,
                ..sequence
            },
        )
        .unwrap();
        assert_eq!(word(&code, 2), Some(LDR_X0_X1));
    }

    #[test]
    fn mapping_symbols() {
        assert_eq!(mapping_symbol("$x"), Some(true));
        assert_eq!(mapping_symbol("$x.12"), Some(true));
        assert_eq!(mapping_symbol("$d"), Some(false));
        assert_eq!(mapping_symbol("$d.3"), Some(false));
        assert_eq!(mapping_symbol("$xyz"), None);
        assert_eq!(mapping_symbol("$a"), None);
        assert_eq!(mapping_symbol("x"), None);
    }
}
