//! RISC-V linker relaxation, as ld.bfd does it: with the addresses of a provisional layout, instruction
//! sequences marked `R_RISCV_RELAX` are shortened, and the `nop` padding of `R_RISCV_ALIGN` is trimmed to what
//! the final addresses need. The edits are made by [`crate::shrink`], which moves symbols and edges with the
//! bytes.
//!
//! - A call (`auipc ra, %hi; jalr ra, %lo(ra)`, `R_RISCV_CALL[_PLT]`) whose target is within ±1 MiB becomes
//!   `jal` (4 bytes deleted), and a tail call (`jalr x0`) within ±2 KiB of compressed code becomes `c.j` (6).
//! - An address formed from the global pointer's neighbourhood: `auipc` + `%pcrel_lo` pairs and `lui` +
//!   `%lo` pairs whose target lies within ±2 KiB of `__global_pointer$` lose the `auipc`/`lui`, and the
//!   loads, stores and `addi`s that completed them address from `gp` (`R_RISCV_GPREL_I`/`_S`, ld.bfd's own
//!   relocations for this).
//! - A `lui` of a `%hi` whose high part is 1 to 31 wherever the address may still move becomes `c.lui` (2).
//! - A local-exec access (`lui %tprel_hi; add tp, %tprel_add; ld %tprel_lo`) to a variable within ±2 KiB of
//!   the thread pointer loses the `lui` and the `add`, and the low part addresses from `tp`.
//! - `R_RISCV_ALIGN`'s padding, always (ld.bfd trims it with `--no-relax` too).
//!
//! Distances are checked with a margin of the largest alignment of the output's code and data, since later
//! deletions can only shorten them except where alignment padding grows.

use rustc_hash::{FxHashMap, FxHashSet};

use neverc_tables::{BitRange, RelocationBase, RelocationKind};

use crate::address::target_value;
use crate::arch::RelaxPass;
use crate::context::LinkContext;
use crate::graph::{AtomId, Definition, Edge, EdgeId, InstructionField, section_flags};
use crate::shrink::AtomEdit;

/// The J-type immediate of `jal`.
const JAL_FIELD: InstructionField = InstructionField {
    size: 32,
    shift: 1,
    round: 0,
    bits: &[
        BitRange { lsb: 21, width: 10 },
        BitRange { lsb: 20, width: 1 },
        BitRange { lsb: 12, width: 8 },
        BitRange { lsb: 31, width: 1 },
    ],
};

/// The CJ-type immediate of `c.j`.
const CJ_FIELD: InstructionField = InstructionField {
    size: 16,
    shift: 1,
    round: 0,
    bits: &[
        BitRange { lsb: 3, width: 3 },
        BitRange { lsb: 11, width: 1 },
        BitRange { lsb: 2, width: 1 },
        BitRange { lsb: 7, width: 1 },
        BitRange { lsb: 6, width: 1 },
        BitRange { lsb: 9, width: 2 },
        BitRange { lsb: 8, width: 1 },
        BitRange { lsb: 12, width: 1 },
    ],
};

/// The I-type immediate (loads, `addi`, `jalr`).
const I_FIELD: InstructionField = InstructionField {
    size: 32,
    shift: 0,
    round: 0,
    bits: &[BitRange { lsb: 20, width: 12 }],
};

/// The S-type immediate (stores).
const S_FIELD: InstructionField = InstructionField {
    size: 32,
    shift: 0,
    round: 0,
    bits: &[BitRange { lsb: 7, width: 5 }, BitRange { lsb: 25, width: 7 }],
};

/// The CI-type immediate of `c.lui` (the high part of an address, rounded as `%hi` rounds it).
const CI_LUI_FIELD: InstructionField = InstructionField {
    size: 16,
    shift: 12,
    round: 12,
    bits: &[BitRange { lsb: 2, width: 5 }, BitRange { lsb: 12, width: 1 }],
};

/// `jal x0, 0`: its `rd` is set from the `jalr` it replaces.
const JAL: u32 = 0x6f;
/// `c.j 0`.
const C_J: u16 = 0xa001;
/// `addi x0, x0, 0`.
const NOP: u32 = 0x13;
/// `c.nop`.
const C_NOP: u16 = 0x1;
/// `c.lui x0, 0`: its `rd` is set from the `lui` it replaces.
const C_LUI: u16 = 0x6001;
/// The global pointer, `x3`.
const GP: u32 = 3;
/// The thread pointer, `x4`.
const TP: u32 = 4;

/// The declared relocations the rewritten instructions need, found by what they do.
struct Declared {
    jal: u32,
    c_j: Option<u32>,
    gprel_i: Option<u32>,
    gprel_s: Option<u32>,
    c_lui: Option<u32>,
}

/// The edits of one round of `pass` over the current layout.
pub(crate) fn edits(context: &LinkContext, pass: RelaxPass) -> Result<Vec<(AtomId, AtomEdit)>, String> {
    let graph = &context.graph;
    let Some(layout) = context.layout() else {
        return Ok(Vec::new());
    };
    let rvc = crate::arch::merged_elf_flags(graph).map_err(|(_, message)| message)? & super::RVC != 0;
    let declared = Declared {
        jal: graph
            .declared_field(RelocationKind::Branch, RelocationBase::Place, &JAL_FIELD)
            .ok_or("the target declares no `jal` relocation, which relaxation needs")?,
        c_j: graph.declared_field(RelocationKind::Branch, RelocationBase::Place, &CJ_FIELD),
        gprel_i: graph.declared_field(RelocationKind::Symbol, RelocationBase::GlobalPointer, &I_FIELD),
        gprel_s: graph.declared_field(RelocationKind::Symbol, RelocationBase::GlobalPointer, &S_FIELD),
        c_lui: graph.declared_field(RelocationKind::Symbol, RelocationBase::Nothing, &CI_LUI_FIELD),
    };
    // The most the code can still shrink: every address moves down by at most this (and up by at most the
    // margin, where alignment padding grows).
    let code_size: u64 = layout
        .sections
        .iter()
        .filter(|section| section.flags & section_flags::EXECUTABLE != 0)
        .map(|section| section.size)
        .sum();
    let margin = layout
        .sections
        .iter()
        .map(|section| section.alignment)
        .max()
        .unwrap_or(1);
    // A shared library addresses nothing from gp, which is the executable's.
    let global_pointer = super::ARCH
        .global_pointer
        .filter(|_| !context.options.output_kind.is_shared_library())
        .and_then(|name| context.global_symbols.get(name))
        .and_then(|symbol| crate::address::symbol_address(context, *symbol));
    // Only data lies near the global pointer for good: the code and read-only data before it move as the
    // code shrinks, the data with it.
    let data_start = layout
        .segments
        .iter()
        .find(|segment| segment.flags.contains(crate::image::SegmentFlags::WRITE))
        .map(|segment| segment.address);
    let near_gp = |value: i128| -> bool {
        let (Some(gp), Some(data)) = (global_pointer, data_start) else {
            return false;
        };
        if value < i128::from(data) || declared.gprel_i.is_none() || declared.gprel_s.is_none() {
            return false;
        }
        let distance = value - i128::from(gp);
        let margin = i128::from(margin);
        -2048 + margin <= distance && distance < 2048 - margin
    };
    let mut edits = Vec::new();
    for section in layout
        .sections
        .iter()
        .filter(|section| section.flags & section_flags::EXECUTABLE != 0)
    {
        for atom in &section.atoms {
            let edit = match pass {
                RelaxPass::Shorten => {
                    let bounds = Bounds { margin, code_size, rvc };
                    shorten(context, *atom, &declared, bounds, &near_gp)?
                }
                RelaxPass::Align => align(context, *atom)?,
            };
            if !edit.is_empty() {
                edits.push((*atom, edit));
            }
        }
    }
    Ok(edits)
}

/// The 32-bit instruction at `offset` of `bytes`.
fn instruction(bytes: &[u8], offset: u64) -> Option<u32> {
    let at = usize::try_from(offset).ok()?;
    bytes
        .get(at..at.checked_add(4)?)?
        .try_into()
        .ok()
        .map(u32::from_le_bytes)
}

/// What a round knows of how far addresses may still move, and whether compressed code may be written.
#[derive(Clone, Copy)]
struct Bounds {
    /// The largest alignment of the output's sections: what alignment padding may add.
    margin: u64,
    /// The size of the output's code: what deletions may still take away.
    code_size: u64,
    /// Whether the inputs hold compressed instructions (`EF_RISCV_RVC`), so that the output may too.
    rvc: bool,
}

/// Whether `lui rd, %hi(target)` may become `c.lui` for good: the high part lies in `c.lui`'s 1..=31 wherever
/// the address moves (0 is no `c.lui`, and negative high parts are left alone).
fn fits_c_lui(target: i128, bounds: Bounds) -> bool {
    let high = |value: i128| (value + 0x800) >> 12;
    let lowest = target - i128::from(bounds.code_size) - i128::from(bounds.margin);
    let highest = target + i128::from(bounds.margin);
    high(lowest) >= 1 && high(highest) <= 31
}

/// Calls and global-pointer addressing in `atom` that the current layout lets shorten.
fn shorten(
    context: &LinkContext,
    atom: AtomId,
    declared: &Declared,
    bounds: Bounds,
    near_gp: &dyn Fn(i128) -> bool,
) -> Result<AtomEdit, String> {
    let Bounds { margin, rvc, .. } = bounds;
    let graph = &context.graph;
    let entry = &graph.atoms[atom.index()];
    let kind = |edge: &Edge| graph.relocation(edge).map(|record| (record.kind, record));
    let marked: FxHashSet<u64> = graph
        .edges_of(atom)
        .filter(|(_, edge)| graph.relocation_kind(edge) == Some(RelocationKind::Relax))
        .map(|(_, edge)| edge.offset)
        .collect();
    let mut edit = AtomEdit::default();
    if marked.is_empty() {
        return Ok(edit);
    }
    let bytes = graph.atom_bytes(entry);
    let undefined = |edge: &Edge| {
        edge.target_symbol
            .get()
            .is_some_and(|symbol| graph.symbols[graph.resolved(symbol).index()].definition == Definition::Undefined)
    };
    // The paired low parts in this atom, by the offset of the high part they complete: (edge, marked).
    let mut lows: FxHashMap<u64, Vec<(EdgeId, bool, bool)>> = FxHashMap::default();
    for (id, edge) in graph.edges_of(atom) {
        let Some((RelocationKind::PairedLow, record)) = kind(edge) else {
            continue;
        };
        let store = record.bits.len() == 2;
        match crate::address::label_location(graph, edge) {
            Some((label_atom, offset)) if label_atom == atom => {
                lows.entry(offset)
                    .or_default()
                    .push((id, marked.contains(&edge.offset), store));
            }
            // A low part completing a high part elsewhere keeps that one as it is.
            Some((_, _)) | None => {}
        }
    }
    let margin = i128::from(margin);
    // A local-exec offset from the thread pointer that a 12-bit immediate holds (offsets within the TLS
    // block do not move as code shrinks).
    let tls = context.layout().and_then(|layout| layout.tls);
    let small_tp_offset = |edge: &Edge| -> bool {
        let (Some(tls), Some(value)) = (tls, target_value(context, edge)) else {
            return false;
        };
        let Ok(address) = u64::try_from(value - i128::from(edge.addend)) else {
            return false;
        };
        (-2048..2048).contains(&(tls.tp_offset(address) + i128::from(edge.addend)))
    };
    let mut deletions = Vec::new();
    for (id, edge) in graph.edges_of(atom) {
        if !marked.contains(&edge.offset) || undefined(edge) {
            continue;
        }
        let Some((kind, record)) = kind(edge) else {
            continue;
        };
        let place = i128::from(entry.address) + i128::from(edge.offset);
        match kind {
            // `auipc` + `jalr` (a 64-bit place).
            RelocationKind::Branch if record.size == 64 => {
                let Some(target) = target_value(context, edge) else {
                    continue;
                };
                let Some(jalr) = instruction(bytes, edge.offset + 4) else {
                    continue;
                };
                let rd = (jalr >> 7) & 0x1f;
                let distance = target - place;
                if rvc && rd == 0 && declared.c_j.is_some() && -2048 + margin <= distance && distance < 2048 - margin {
                    edit.writes.push((edge.offset, C_J.to_le_bytes().to_vec()));
                    edit.retypes.push((id, declared.c_j.unwrap_or(declared.jal)));
                    deletions.push(edge.offset + 2..edge.offset + 8);
                } else if -(1 << 20) + margin <= distance && distance < (1 << 20) - margin {
                    edit.writes.push((edge.offset, (JAL | rd << 7).to_le_bytes().to_vec()));
                    edit.retypes.push((id, declared.jal));
                    deletions.push(edge.offset + 4..edge.offset + 8);
                }
            }
            // `auipc` of a `%pcrel_hi` whose every `%pcrel_lo` here is marked too: the low parts address
            // from `gp` and the `auipc` goes.
            RelocationKind::Symbol if record.relative_to == RelocationBase::Place && record.round != 0 => {
                let Some(target) = target_value(context, edge) else {
                    continue;
                };
                let Some(completing) = lows.get(&edge.offset) else {
                    continue;
                };
                if !near_gp(target) || completing.iter().any(|(_, marked, _)| !marked) {
                    continue;
                }
                for (low, _, store) in completing {
                    let low_edge = &graph.edges[low.index()];
                    let Some(word) = instruction(bytes, low_edge.offset) else {
                        continue;
                    };
                    let raw = if *store { declared.gprel_s } else { declared.gprel_i };
                    let Some(raw) = raw else { continue };
                    edit.writes
                        .push((low_edge.offset, with_base(word, GP).to_le_bytes().to_vec()));
                    edit.retarget.push((
                        *low,
                        raw,
                        (edge.target_symbol.get(), edge.target_atom.get(), edge.addend),
                    ));
                }
                deletions.push(edge.offset..edge.offset + 4);
            }
            // `lui` of a `%hi`: goes when its target is near the global pointer, else becomes `c.lui` when
            // its high part is small (and its register is neither x0 nor sp, which `c.lui` cannot name).
            RelocationKind::Symbol
                if record.relative_to == RelocationBase::Nothing && record.round != 0 && record.size == 32 =>
            {
                let Some(target) = target_value(context, edge) else {
                    continue;
                };
                if near_gp(target) {
                    deletions.push(edge.offset..edge.offset + 4);
                    continue;
                }
                let (Some(raw), Some(lui)) = (declared.c_lui, instruction(bytes, edge.offset)) else {
                    continue;
                };
                let rd = (lui >> 7) & 0x1f;
                if rvc && rd != 0 && rd != 2 && fits_c_lui(target, bounds) {
                    let c_lui = C_LUI | (rd as u16) << 7;
                    edit.writes.push((edge.offset, c_lui.to_le_bytes().to_vec()));
                    edit.retypes.push((id, raw));
                    deletions.push(edge.offset + 2..edge.offset + 4);
                }
            }
            // A `%lo` in a load, store or `addi`: addresses from `gp` instead.
            RelocationKind::Symbol
                if record.relative_to == RelocationBase::Nothing && record.round == 0 && !record.bits.is_empty() =>
            {
                if !target_value(context, edge).is_some_and(near_gp) {
                    continue;
                }
                let raw = if record.bits.len() == 2 {
                    declared.gprel_s
                } else {
                    declared.gprel_i
                };
                let (Some(raw), Some(word)) = (raw, instruction(bytes, edge.offset)) else {
                    continue;
                };
                edit.writes
                    .push((edge.offset, with_base(word, GP).to_le_bytes().to_vec()));
                edit.retypes.push((id, raw));
            }
            // `lui` of a `%tprel_hi` and the `add` of the thread pointer: go when the offset is small.
            RelocationKind::TlsLe | RelocationKind::TlsLeAdd
                if (kind == RelocationKind::TlsLeAdd || record.round != 0) && small_tp_offset(edge) =>
            {
                deletions.push(edge.offset..edge.offset + 4);
            }
            // A `%tprel_lo`: addresses from `tp` instead of the register the deleted sequence formed.
            RelocationKind::TlsLe if record.round == 0 && !record.bits.is_empty() && small_tp_offset(edge) => {
                let Some(word) = instruction(bytes, edge.offset) else {
                    continue;
                };
                edit.writes
                    .push((edge.offset, with_base(word, TP).to_le_bytes().to_vec()));
            }
            _ => {}
        }
    }
    deletions.sort_by_key(|range| range.start);
    deletions.dedup();
    edit.deletions = deletions;
    Ok(edit)
}

/// An I- or S-type instruction with `register` as its base register (`rs1`).
const fn with_base(word: u32, register: u32) -> u32 {
    (word & !(0x1f << 15)) | (register << 15)
}

/// The alignment padding of `atom` trimmed for its current address: each `R_RISCV_ALIGN` of `A` bytes of
/// `nop`s keeps what aligns the next instruction to the power of two above `A`.
fn align(context: &LinkContext, atom: AtomId) -> Result<AtomEdit, String> {
    let graph = &context.graph;
    let entry = &graph.atoms[atom.index()];
    let mut edit = AtomEdit::default();
    for (_, edge) in graph.edges_of(atom) {
        if graph.relocation_kind(edge) != Some(RelocationKind::Align) {
            continue;
        }
        let padding =
            u64::try_from(edge.addend).map_err(|_| format!("`{}`: R_RISCV_ALIGN with a negative size", entry.name))?;
        let alignment = (padding + 2).next_power_of_two();
        if alignment > entry.alignment.max(1) {
            return Err(format!(
                "`{}`+{:#x}: code aligned to {alignment} bytes in a section aligned to {}",
                entry.name, edge.offset, entry.alignment
            ));
        }
        let address = entry.address + crate::shrink::moved(&edit.deletions, edge.offset);
        let keep = address.next_multiple_of(alignment) - address;
        if keep > padding {
            return Err(format!(
                "`{}`+{:#x}: {padding} bytes of padding cannot align to {alignment} bytes",
                entry.name, edge.offset
            ));
        }
        let mut nops = Vec::with_capacity(keep as usize);
        for _ in 0..keep / 4 {
            nops.extend_from_slice(&NOP.to_le_bytes());
        }
        if keep % 4 == 2 {
            nops.extend_from_slice(&C_NOP.to_le_bytes());
        }
        if keep > 0 {
            edit.writes.push((edge.offset, nops));
        }
        if keep < padding {
            edit.deletions.push(edge.offset + keep..edge.offset + padding);
        }
    }
    Ok(edit)
}
