//! AArch64 range-extension thunks: `bl` and `b` (`CALL26`, `JUMP26`) reach ±128 MiB; a call beyond goes to a
//! veneer placed after its caller that reaches ±4 GiB, the whole output: `adrp x16, target; add x16, x16,
//! :lo12:target; br x16` (ld.bfd's `aarch64_adrp_branch_stub`, lld's `AArch64ADRPThunk`). x16 (ip0) is the
//! intra-procedure-call scratch register the AAPCS64 reserves for veneers.

use super::{ADD_LO12, code, low_12_bits_of_target, page_of_target};
use crate::arch::{CodeTemplate, ThunkTemplate};

/// `adrp x16, target; add x16, x16, :lo12:target; br x16`.
const VENEER_CODE: [u8; 12] = code([0x9000_0010, 0x9100_0210, 0xd61f_0200]);

pub(super) const VENEER: ThunkTemplate = ThunkTemplate {
    name_prefix: "__AArch64ADRPThunk_",
    alignment: 4,
    code: CodeTemplate {
        code: &VENEER_CODE,
        fields: &[page_of_target(0), low_12_bits_of_target(4, ADD_LO12)],
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_veneer_is_adrp_add_br_through_x16() {
        // GNU as: adrp x16, 0; add x16, x16, #0; br x16.
        assert_eq!(
            VENEER_CODE,
            [0x10, 0x00, 0x00, 0x90, 0x10, 0x02, 0x00, 0x91, 0x00, 0x02, 0x1f, 0xd6]
        );
    }
}
