//! RISC-V (RV64): what its links need beyond the declared relocations. Its relocations come in pairs (a
//! `%pcrel_lo` completes the `%pcrel_hi` at its label: the declared kind `paired_low`, resolved by relocation
//! for every architecture), and its code is shortened by the linker (`relax.rs`): the padding of `R_RISCV_ALIGN`
//! trimmed to what alignment needs, with or without `--no-relax`. Initial-exec TLS accesses keep their GOT
//! slot, as ld.bfd and ld.lld link them: RISC-V has no rewrite of them to local-exec. Imported functions are
//! called through the psABI's lazily bound PLT.

mod relax;

use neverc_tables::generated::targets::riscv64::TARGET;

use neverc_tables::{BitRange, RelocationBase, RelocationKind};

use crate::arch::{Arch, CodeField, CodeTemplate, LazyPlt, Unbound, code, declared_machine};
use crate::graph::InstructionField;

/// The table of RISC-V, bound to `targets/riscv64.toml` by its declared machine.
pub(crate) static ARCH: Arch = Arch {
    machine: declared_machine(&TARGET),
    iplt_entry: None,
    lazy_plt: Some(&LAZY_PLT),
    // `auipc` + `jalr` reaches ±2 GiB, the whole 4 GiB output limit: a branch that does not reach is
    // relocation's error.
    thunk: None,
    got_relaxation: |_, _| None,
    relax_got_load: |_, _, _| Err("RISC-V relaxes no GOT load this way".to_string()),
    rewritten_sequence: |_, _| None,
    relax_tls: |_, _| Err("RISC-V does not relax this TLS model in an executable yet".to_string()),
    relax_tls_to_ie: |_, _| {
        Err("reaching thread-local variables of shared libraries is not supported for RISC-V yet".to_string())
    },
    keeps_tls_models: true,
    global_pointer: Some("__global_pointer$"),
    elf_flags: Some(merge_flags),
    relax: Some(relax::edits),
    undefined_weak: |_, _, _| None,
    erratum: None,
};

/// `EF_RISCV_RVC`: the code may hold compressed instructions.
const RVC: u32 = 0x1;
/// `EF_RISCV_FLOAT_ABI`: the floating-point ABI (soft, single, double, quad).
const FLOAT_ABI: u32 = 0x6;
/// `EF_RISCV_RVE`: the RV32E/RV64E register file.
const RVE: u32 = 0x8;
/// `EF_RISCV_TSO`: the code needs the total store ordering memory model.
const TSO: u32 = 0x10;

/// Merges `e_flags` as ld.bfd does: compressed code and TSO anywhere mark the output; the floating-point ABI
/// and the register file must agree.
fn merge_flags(merged: u32, input: u32) -> Result<u32, String> {
    if merged & FLOAT_ABI != input & FLOAT_ABI {
        let name = |flags: u32| match flags & FLOAT_ABI {
            0 => "soft-float",
            2 => "single-float",
            4 => "double-float",
            _ => "quad-float",
        };
        return Err(format!(
            "cannot link {} modules with {} modules",
            name(input),
            name(merged)
        ));
    }
    if merged & RVE != input & RVE {
        return Err("cannot link RVE modules with modules of the full register file".to_string());
    }
    Ok(merged | (input & (RVC | TSO)))
}

/// An `auipc` and the I-type instruction after it (`ld`, `addi`, `jalr`) at `offset`, reaching their target
/// plus `bias` from the `auipc`: the 64-bit field of `R_RISCV_CALL`, whose low part is the second word's
/// immediate.
const fn pc_pair(offset: u64, bias: i64) -> CodeField {
    CodeField {
        offset,
        kind: RelocationKind::Branch,
        base: RelocationBase::Place,
        field: InstructionField {
            size: 64,
            shift: 0,
            round: 12,
            bits: &[BitRange { lsb: 52, width: 12 }, BitRange { lsb: 12, width: 20 }],
        },
        bias,
    }
}

/// The first PLT entry: `sub t1, t1, t3` (t1 holds the calling entry's address + 12, t3 this entry's),
/// `auipc t3; ld t3` of `.got.plt[0]` (the loader's resolver), `addi t1, t1, -44`, `auipc t0; ld t0` of
/// `.got.plt[1]` (the loader's link map), `srli t1, t1, 1` (the byte offset of the function's slot after the
/// reserved ones, which the resolver expects in t1) and `jr t3`. The psABI's first entry computes the same
/// registers; here each `auipc` is followed by the instruction completing it, so that one declared
/// relocation writes both.
const LAZY_PLT_HEADER: [u8; 32] = code([
    0x41c3_0333,
    0x0000_0e17,
    0x000e_3e03,
    0xfd43_0313,
    0x0000_0297,
    0x0002_b283,
    0x0013_5313,
    0x000e_0067,
]);

/// A function's PLT entry, the psABI's: `auipc t3; ld t3` of the function's slot, `jalr t1, t3`, `nop`.
const LAZY_PLT_ENTRY: [u8; 16] = code([0x0000_0e17, 0x000e_3e03, 0x000e_0367, 0x0000_0013]);

/// The lazily bound PLT of the RISC-V psABI: `.got.plt` starts with the loader's two words (its resolver
/// and link map), and a function's slot first holds the first entry's address.
const LAZY_PLT: LazyPlt = LazyPlt {
    header: CodeTemplate {
        code: &LAZY_PLT_HEADER,
        fields: &[pc_pair(4, 0), pc_pair(16, 8)],
    },
    entry: CodeTemplate {
        code: &LAZY_PLT_ENTRY,
        fields: &[pc_pair(0, 0)],
    },
    entry_to_header: CodeTemplate { code: &[], fields: &[] },
    index_at: None,
    unbound: Unbound::Header,
    reserved_slots: 2,
    dynamic_in_first_slot: false,
};
