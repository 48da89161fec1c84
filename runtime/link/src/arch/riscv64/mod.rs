//! RISC-V (RV64): what its links need beyond the declared relocations. Its relocations come in pairs (a
//! `%pcrel_lo` completes the `%pcrel_hi` at its label: the declared kind `paired_low`, resolved by relocation
//! for every architecture), and its code is shortened by the linker (`relax.rs`): the padding of `R_RISCV_ALIGN`
//! trimmed to what alignment needs, with or without `--no-relax`. Initial-exec TLS accesses keep their GOT
//! slot, as ld.bfd and ld.lld link them: RISC-V has no rewrite of them to local-exec.

mod relax;

use neverc_tables::generated::targets::riscv64::TARGET;

use crate::arch::{Arch, declared_machine};

/// The table of RISC-V, bound to `targets/riscv64.toml` by its declared machine.
pub(crate) static ARCH: Arch = Arch {
    machine: declared_machine(&TARGET),
    iplt_entry: None,
    lazy_plt: None,
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
