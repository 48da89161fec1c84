//! Packed relative relocations (`-z pack-relative-relocs`, `DT_RELR`): instead of one 24-byte `RELATIVE`
//! relocation per word that holds an address, `.relr.dyn` lists the words as 64-bit entries: an even entry
//! is the address of a word to relocate, and an odd one a bitmap of the 63 words after the last address
//! (bit `i + 1` for word `i`), the next bitmap continuing where it ends. The encoding needs the words'
//! addresses, so synthesis only collects the words and makes an empty `.relr.dyn`; layout encodes them
//! ([`encode_after_layout`]) and lays out again while the table grows, which it does at most a few times.
//! The table never shrinks between rounds (so the rounds end): what is left over is filled with empty bitmaps
//! (`1`), which relocate nothing, as ld.lld pads it.

use std::sync::Arc;

use crate::context::{LinkContext, PhaseError};
use crate::graph::{AtomId, Content};
use crate::phases::LinkPhase;

/// The words `.relr.dyn` relocates (each at `offset` in `atom`, which is 8-byte aligned) and its atom.
#[derive(Clone, Debug)]
pub(crate) struct Relr {
    pub(crate) atom: AtomId,
    pub(crate) words: Vec<(AtomId, u64)>,
}

/// The words a bitmap entry covers.
const BITMAP_WORDS: u64 = 63;

/// How many layouts a link may make before the table stops growing.
const MAX_ROUNDS: usize = 16;

/// The `DT_RELR` entries that relocate the words at `addresses` (each a multiple of 8).
pub(crate) fn encode(addresses: &mut Vec<u64>) -> Vec<u64> {
    addresses.sort_unstable();
    addresses.dedup();
    let mut entries = Vec::new();
    let mut next = 0;
    while let Some(&base) = addresses.get(next) {
        entries.push(base);
        next += 1;
        // The first word the next bitmap covers.
        let mut from = base + 8;
        loop {
            let mut bitmap = 0u64;
            while let Some(&address) = addresses.get(next) {
                let word = (address - from) / 8;
                if word >= BITMAP_WORDS {
                    break;
                }
                bitmap |= 1 << word;
                next += 1;
            }
            if bitmap == 0 {
                break;
            }
            entries.push(bitmap << 1 | 1);
            from += BITMAP_WORDS * 8;
        }
    }
    entries
}

/// Encodes the table for the layout just made, growing it (and laying out again) until it holds the
/// encoding; `lay_out` makes a new layout of the context. Nothing is done for a link without the table.
pub(crate) fn encode_after_layout(
    context: &mut LinkContext,
    phase: LinkPhase,
    mut lay_out: impl FnMut(&mut LinkContext) -> Result<(), PhaseError>,
) -> Result<(), PhaseError> {
    let Some(relr) = context.synthesized.relr.clone() else {
        return Ok(());
    };
    for _ in 0..MAX_ROUNDS {
        let graph = &mut context.graph;
        let mut addresses: Vec<u64> = relr
            .words
            .iter()
            .map(|(atom, offset)| graph.atoms[atom.index()].address + offset)
            .collect();
        let entries = encode(&mut addresses);
        let size = graph.atoms[relr.atom.index()].size();
        let needed = entries.len() as u64 * 8;
        if needed <= size {
            let mut bytes: Vec<u8> = entries.iter().flat_map(|entry| entry.to_le_bytes()).collect();
            bytes.resize(size as usize, 0);
            for padding in bytes[needed as usize..].chunks_exact_mut(8) {
                padding.copy_from_slice(&1u64.to_le_bytes());
            }
            graph.atoms[relr.atom.index()].content = Content::Owned(Arc::from(bytes));
            return Ok(());
        }
        graph.atoms[relr.atom.index()].content = Content::Owned(Arc::from(vec![0u8; needed as usize]));
        lay_out(context)?;
    }
    Err(PhaseError::new(
        phase,
        format!("the packed relative relocations (.relr.dyn) still grew after {MAX_ROUNDS} layouts"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_bitmaps_encode_the_words() {
        // One word: its address.
        assert_eq!(encode(&mut vec![0x1000]), [0x1000]);
        // Consecutive words: the first's address, a bitmap of the rest (bits 1, 2: words 0 and 1 after it).
        assert_eq!(encode(&mut vec![0x1010, 0x1000, 0x1008]), [0x1000, 0b111]);
        // The 63rd word after the address is the bitmap's last bit; the 64th starts the next bitmap.
        let last = 0x1000 + 8 + 62 * 8;
        assert_eq!(encode(&mut vec![0x1000, last]), [0x1000, 1 << 63 | 1]);
        assert_eq!(encode(&mut vec![0x1000, last + 8]), [0x1000, last + 8]);
        // A word beyond a bitmap's reach starts a new address entry.
        assert_eq!(encode(&mut vec![0x1000, 0x9000, 0x9008]), [0x1000, 0x9000, 0b11]);
        assert_eq!(encode(&mut vec![]), Vec::<u64>::new());
    }
}
