//! `.eh_frame` (the DWARF call-frame records of the LSB's exception-handling ABI) and `.eh_frame_hdr`, the
//! binary search table over it.
//!
//! An unwind table is a sequence of records, each a 4-byte length and that many bytes: a CIE (id 0) holds
//! what its FDEs share (code alignment, augmentation, the pointer encoding of their addresses); an FDE
//! (id ≠ 0, the distance from the id field back to its CIE) describes one function. Layout drops the FDEs
//! of functions that are not in the output ([`compact_tables`]), as ld.bfd does, and makes room for the
//! header ([`make_header`]); relocation then fills the
//! header's table from the relocated bytes ([`header_table`]).

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::context::LinkContext;
use crate::graph::{AtomId, Content, LinkGraph, Origin, atom_flags};
use crate::sections::OutputSectionId;

/// One record of a table: its byte range, and for an FDE the start of its CIE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Record {
    start: usize,
    end: usize,
    cie: Option<usize>,
}

/// The records of `bytes`, up to a zero terminator or the first malformed length.
fn records(bytes: &[u8]) -> Vec<Record> {
    let mut records = Vec::new();
    let mut offset = 0usize;
    while let Some(header) = bytes.get(offset..offset + 8) {
        let length = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let id = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
        let Some(end) = (offset + 4).checked_add(length).filter(|end| *end <= bytes.len()) else {
            break;
        };
        if length == 0 || length == u32::MAX as usize {
            break;
        }
        let cie = (id != 0).then(|| (offset + 4).checked_sub(id)).flatten();
        records.push(Record {
            start: offset,
            end,
            cie,
        });
        offset = end;
    }
    records
}

/// Drops from every live unwind table the FDEs of functions that are not live (discarded by
/// `--gc-sections` or by COMDAT selection): their bytes, their relocations and their unwind records. The
/// kept FDEs' CIE pointers and the kept relocations' offsets follow the bytes that moved. Returns whether
/// anything changed (the edge index is then stale until the caller rebuilds it).
pub(crate) fn compact_tables(graph: &mut LinkGraph) -> bool {
    // The dead FDEs of each table, by start offset.
    let mut dead: FxHashMap<AtomId, FxHashSet<u64>> = FxHashMap::default();
    for unwind in &graph.unwinds {
        let table_live = graph.atoms[unwind.table.index()].is_live();
        let function_live = unwind.atom.is_none_or(|atom| graph.atoms[atom.index()].is_live());
        if table_live && !function_live {
            dead.entry(unwind.table).or_default().insert(unwind.range.start);
        }
    }
    if dead.is_empty() {
        return false;
    }
    // Where every kept byte of each changed table goes: (old start, old end, new start) per kept record.
    let mut moves: FxHashMap<AtomId, Vec<(u64, u64, u64)>> = FxHashMap::default();
    for (table, dropped) in &dead {
        let bytes = graph.atom_bytes(&graph.atoms[table.index()]);
        let found = records(bytes);
        let mut compacted = Vec::with_capacity(bytes.len());
        let mut kept: Vec<(u64, u64, u64)> = Vec::new();
        let mut new_start_of: FxHashMap<usize, usize> = FxHashMap::default();
        for record in &found {
            if dropped.contains(&(record.start as u64)) {
                continue;
            }
            let new_start = compacted.len();
            new_start_of.insert(record.start, new_start);
            compacted.extend_from_slice(&bytes[record.start..record.end]);
            // An FDE's id is the distance from its own id field back to its CIE, which moved too.
            if let Some(cie) = record.cie
                && let Some(new_cie) = new_start_of.get(&cie)
            {
                let id = (new_start + 4 - new_cie) as u32;
                compacted[new_start + 4..new_start + 8].copy_from_slice(&id.to_le_bytes());
            }
            kept.push((record.start as u64, record.end as u64, new_start as u64));
        }
        // Whatever follows the last record (a terminator) stays at the end.
        let tail = found.last().map_or(0, |record| record.end);
        let tail_start = compacted.len() as u64;
        compacted.extend_from_slice(&bytes[tail..]);
        kept.push((tail as u64, bytes.len() as u64, tail_start));
        graph.atoms[table.index()].content = Content::Owned(Arc::from(compacted));
        moves.insert(*table, kept);
    }
    let new_offset = |table: AtomId, offset: u64| -> Option<u64> {
        let kept = moves.get(&table)?;
        let index = kept.partition_point(|(start, _, _)| *start <= offset).checked_sub(1)?;
        let (start, end, new_start) = kept[index];
        (offset < end || (offset == end && start == end)).then_some(new_start + (offset - start))
    };
    graph.edges.retain_mut(|edge| {
        if !moves.contains_key(&edge.source) {
            return true;
        }
        match new_offset(edge.source, edge.offset) {
            Some(offset) => {
                edge.offset = offset;
                true
            }
            None => false,
        }
    });
    graph.unwinds.retain_mut(|unwind| {
        if !moves.contains_key(&unwind.table) {
            return true;
        }
        match new_offset(unwind.table, unwind.range.start) {
            Some(start) if !dead[&unwind.table].contains(&unwind.range.start) => {
                unwind.range = start..start + (unwind.range.end - unwind.range.start);
                true
            }
            _ => false,
        }
    });
    true
}

/// `DW_EH_PE_*` pointer encodings the table reads.
const PE_ABSPTR: u8 = 0x00;
const PE_UDATA4: u8 = 0x03;
const PE_SDATA4: u8 = 0x0b;
const PE_UDATA8: u8 = 0x04;
const PE_SDATA8: u8 = 0x0c;
const PE_PCREL: u8 = 0x10;
const PE_DATAREL: u8 = 0x30;
const PE_OMIT: u8 = 0xff;

/// Makes (or, when synthesis runs again, resizes) the `.eh_frame_hdr` atom: room for one table entry per FDE
/// of the live unwind tables; relocation fills it in. None when there are no unwind tables.
pub(super) fn make_header(context: &mut LinkContext, origin: Origin) {
    let graph = &mut context.graph;
    let fdes = graph
        .unwinds
        .iter()
        .filter(|unwind| graph.atoms[unwind.table.index()].is_live())
        .count();
    let any_table = graph
        .atoms
        .iter()
        .any(|atom| atom.is_live() && atom.flags & atom_flags::UNWIND != 0);
    let bytes = vec![0u8; header_size(fdes) as usize];
    match context.synthesized.eh_frame_hdr {
        Some(atom) => graph.atoms[atom.index()].content = Content::Owned(Arc::from(bytes)),
        None if any_table => {
            let atom = super::new_atom(graph, None, OutputSectionId::EhFrameHdr.name(), 4, bytes, origin);
            context.synthesized.eh_frame_hdr = Some(atom);
        }
        None => {}
    }
}

/// The size of `.eh_frame_hdr` for `fdes` FDEs: version, three encodings, the `.eh_frame` pointer, the
/// count, and two 4-byte values per FDE.
pub(crate) fn header_size(fdes: usize) -> u64 {
    12 + 8 * fdes as u64
}

/// The FDE encoding a CIE's augmentation declares (`R`), absolute 8-byte pointers when it declares none;
/// `None` when the augmentation cannot be read.
fn fde_encoding(cie: &[u8]) -> Option<u8> {
    // length(4) id(4) version(1) augmentation string.
    let version = *cie.get(8)?;
    let rest = cie.get(9..)?;
    let nul = rest.iter().position(|byte| *byte == 0)?;
    let augmentation = &rest[..nul];
    if !augmentation.starts_with(b"z") {
        return Some(PE_ABSPTR);
    }
    let mut at = 9 + nul + 1;
    let leb = |at: &mut usize| -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *cie.get(*at)?;
            *at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    };
    leb(&mut at)?; // code alignment
    leb(&mut at)?; // data alignment (signed; only skipped)
    if version == 1 {
        at += 1; // return address register
    } else {
        leb(&mut at)?;
    }
    leb(&mut at)?; // augmentation data length
    for letter in &augmentation[1..] {
        match letter {
            b'R' => return cie.get(at).copied(),
            b'P' => {
                let encoding = *cie.get(at)?;
                at += 1 + encoded_size(encoding)?;
            }
            b'L' => at += 1,
            b'S' | b'B' => {}
            _ => return None,
        }
    }
    Some(PE_ABSPTR)
}

/// The size of a pointer in `encoding`.
fn encoded_size(encoding: u8) -> Option<usize> {
    match encoding & 0x0f {
        PE_ABSPTR | PE_UDATA8 | PE_SDATA8 => Some(8),
        PE_UDATA4 | PE_SDATA4 => Some(4),
        _ => None,
    }
}

/// The function address an FDE at `address` (whose bytes are `fde`) starts at, read with `encoding`.
fn initial_location(fde: &[u8], address: u64, encoding: u8) -> Option<u64> {
    let field = fde.get(8..)?;
    let raw = match encoding & 0x0f {
        PE_ABSPTR | PE_UDATA8 | PE_SDATA8 => u64::from_le_bytes(field.get(..8)?.try_into().ok()?),
        PE_SDATA4 => i64::from(i32::from_le_bytes(field.get(..4)?.try_into().ok()?)) as u64,
        PE_UDATA4 => u64::from(u32::from_le_bytes(field.get(..4)?.try_into().ok()?)),
        _ => return None,
    };
    match encoding & 0x70 {
        0 => Some(raw),
        PE_PCREL => Some(address.wrapping_add(8).wrapping_add(raw)),
        _ => None,
    }
}

/// The FDEs of the relocated `.eh_frame` bytes at `address` as (function address, FDE address), sorted and
/// without repeats (functions folded into one keep one entry); `None` when a CIE's pointer encoding cannot
/// be read, in which case the header gets no table (as ld.bfd does).
pub(crate) fn fde_locations(bytes: &[u8], address: u64) -> Option<Vec<(u64, u64)>> {
    let mut encodings: FxHashMap<usize, u8> = FxHashMap::default();
    let mut locations = Vec::new();
    for record in records(bytes) {
        let record_bytes = &bytes[record.start..record.end];
        match record.cie {
            None => {
                if let Some(encoding) = fde_encoding(record_bytes) {
                    encodings.insert(record.start, encoding);
                }
            }
            Some(cie) => {
                let encoding = *encodings.get(&cie)?;
                let fde_address = address + record.start as u64;
                locations.push((initial_location(record_bytes, fde_address, encoding)?, fde_address));
            }
        }
    }
    locations.sort_unstable();
    locations.dedup_by_key(|(location, _)| *location);
    Some(locations)
}

/// The bytes of `.eh_frame_hdr` at `header` for `.eh_frame` at `frames` with `locations` (from
/// [`fde_locations`]; `None` writes a header without a table), exactly `size` bytes (the layout's room).
pub(crate) fn header_table(header: u64, frames: u64, locations: Option<&[(u64, u64)]>, size: u64) -> Option<Vec<u8>> {
    let mut bytes = Vec::with_capacity(size as usize);
    let pointer = i32::try_from(i128::from(frames) - i128::from(header + 4)).ok()?;
    let table = locations.filter(|locations| header_size(locations.len()) <= size);
    let (count_encoding, table_encoding) = match table {
        Some(_) => (PE_UDATA4, PE_DATAREL | PE_SDATA4),
        None => (PE_OMIT, PE_OMIT),
    };
    bytes.extend_from_slice(&[1, PE_PCREL | PE_SDATA4, count_encoding, table_encoding]);
    bytes.extend_from_slice(&pointer.to_le_bytes());
    if let Some(locations) = table {
        bytes.extend_from_slice(&(locations.len() as u32).to_le_bytes());
        for (location, fde) in locations {
            let relative = |value: u64| i32::try_from(i128::from(value) - i128::from(header)).ok();
            bytes.extend_from_slice(&relative(*location)?.to_le_bytes());
            bytes.extend_from_slice(&relative(*fde)?.to_le_bytes());
        }
    }
    bytes.resize(size as usize, 0);
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CIE with augmentation "zR" and FDE encoding pcrel|sdata4, then an FDE for a function 0x100 bytes
    /// before it, then a terminator.
    fn table() -> Vec<u8> {
        let mut bytes = vec![
            0x14, 0, 0, 0, 0, 0, 0, 0, 1, b'z', b'R', 0, 1, 0x78, 0x10, 1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0,
        ];
        // FDE: length 0x14, CIE pointer 0x1c (back to offset 0), pc_begin -0x120 (pcrel), pc_range 0x10.
        bytes.extend_from_slice(&[0x14, 0, 0, 0, 0x1c, 0, 0, 0]);
        bytes.extend_from_slice(&(-0x120i32).to_le_bytes());
        bytes.extend_from_slice(&[0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        bytes.extend_from_slice(&[0, 0, 0, 0]);
        bytes
    }

    #[test]
    fn records_and_locations_are_read_from_relocated_bytes() {
        let bytes = table();
        let found = records(&bytes);
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].cie, Some(0));
        let locations = fde_locations(&bytes, 0x1000).unwrap();
        // The FDE is at 0x1018; its pc_begin field at 0x1020 holds -0x120.
        assert_eq!(locations, [(0x1020 - 0x120, 0x1018)]);
        let header = header_table(0x800, 0x1000, Some(&locations), header_size(1)).unwrap();
        assert_eq!(header[..4], [1, 0x1b, 0x03, 0x3b]);
        assert_eq!(i32::from_le_bytes(header[4..8].try_into().unwrap()), 0x1000 - 0x804);
        assert_eq!(u32::from_le_bytes(header[8..12].try_into().unwrap()), 1);
        assert_eq!(i32::from_le_bytes(header[12..16].try_into().unwrap()), 0xf00 - 0x800);
    }
}
