//! Merged strings: the strings of live `SHF_MERGE | SHF_STRINGS` sections (one-byte entries) that go to the
//! same output section with the same alignment are merged into one atom, each distinct string kept once, in
//! first-seen link (command-line) order, and a string that ends another (`char` in `unsigned char`) kept only
//! as that one's tail, as GNU ld merges them; [`super::MergedStrings`] says where each input piece went
//! (`crate::address::merged_location`). The linker adds its own name and version to `.comment` (`Linker:
//! neverc-spec 0.1.0`, as lld writes `Linker: LLD 14.0.6`), so that `readelf -p .comment` tells which linker
//! made a program.

use rustc_hash::FxHashMap;

use super::new_atom;
use crate::context::LinkContext;
use crate::graph::{AtomId, Origin, section_flags};
use crate::sections::output_name;

/// The section of the tools' identification strings.
const COMMENT: &str = ".comment";

pub(super) fn merge(context: &mut LinkContext, origin: Origin) {
    let merged_strings = &mut context.synthesized.merged_strings;
    if !merged_strings.target.is_empty() {
        return;
    }
    let graph = &mut context.graph;
    let mut groups: Vec<((&str, u64), Vec<AtomId>)> = Vec::new();
    for (index, atom) in graph.atoms.iter().enumerate() {
        let Some(section) = atom.section else { continue };
        let section = &graph.sections[section.index()];
        let mergeable = section_flags::MERGEABLE | section_flags::STRINGS;
        if !atom.is_live()
            || section.flags & mergeable != mergeable
            || section.flags & section_flags::WRITABLE != 0
            || section.entry_size != 1
        {
            continue;
        }
        let key = (output_name(&section.name), atom.alignment);
        match groups.iter_mut().find(|(existing, _)| *existing == key) {
            Some((_, atoms)) => atoms.push(AtomId(index as u32)),
            None => groups.push((key, vec![AtomId(index as u32)])),
        }
    }
    // Strings are merged in link (command-line) order, as the sections are laid out.
    let order = graph.command_line_order();
    for (_, atoms) in &mut groups {
        atoms.sort_by_key(|atom| {
            let input = graph.atoms[atom.index()].origin.input();
            (input.map_or((u32::MAX, 0), |input| order[input.index()]), *atom)
        });
    }
    let groups: Vec<(bool, u64, Vec<AtomId>)> = groups
        .into_iter()
        .map(|((name, alignment), atoms)| (name == COMMENT, alignment, atoms))
        .collect();
    for (comment, alignment, atoms) in groups {
        // The distinct strings in first-seen order, and each input atom's pieces as (input offset, string).
        let mut strings: Vec<Vec<u8>> = Vec::new();
        let mut numbers: FxHashMap<Vec<u8>, usize> = FxHashMap::default();
        let mut atom_pieces: Vec<(AtomId, Vec<(u64, usize)>)> = Vec::with_capacity(atoms.len());
        let first_section = graph.atoms[atoms[0].index()].section;
        for atom in &atoms {
            let bytes = graph.atom_bytes(&graph.atoms[atom.index()]);
            let mut pieces = Vec::new();
            let mut start = 0;
            while start < bytes.len() {
                let end = bytes[start..]
                    .iter()
                    .position(|byte| *byte == 0)
                    .map_or(bytes.len(), |nul| start + nul + 1);
                let piece = &bytes[start..end];
                let number = match numbers.get(piece) {
                    Some(number) => *number,
                    None => {
                        numbers.insert(piece.to_vec(), strings.len());
                        strings.push(piece.to_vec());
                        strings.len() - 1
                    }
                };
                pieces.push((start as u64, number));
                start = end;
            }
            atom_pieces.push((*atom, pieces));
        }
        // The linker names itself in `.comment`, after the compilers, as lld and mold do.
        if comment {
            let identification = format!("Linker: neverc-spec {}\0", env!("CARGO_PKG_VERSION")).into_bytes();
            if !numbers.contains_key(&identification) {
                strings.push(identification);
            }
        }
        let (merged, offsets) = lay_out_strings(&strings);
        for (atom, pieces) in atom_pieces {
            let pieces = pieces
                .into_iter()
                .map(|(start, number)| (start, offsets[number]))
                .collect();
            merged_strings.pieces.insert(atom, pieces);
        }
        let merged_atom = new_atom(graph, first_section, ".rodata.str", alignment, merged, origin);
        for atom in atoms {
            merged_strings.target.insert(atom, merged_atom);
        }
    }
    graph.edges_by_atom.resize(graph.atoms.len(), 0..0);
}

/// The bytes of the merged strings and each string's offset in them: a string that is the tail of another
/// (with its terminating NUL, so only whole-string tails) is not written again but found at the end of the
/// longest string it ends; the others are written in the order given.
fn lay_out_strings(strings: &[Vec<u8>]) -> (Vec<u8>, Vec<u64>) {
    // Sorted by their reversed bytes, a string's tails come right before it (each a prefix of the next
    // reversed), so one backward pass finds, for every string, the longest string it ends.
    let mut by_reversed: Vec<usize> = (0..strings.len()).collect();
    by_reversed.sort_unstable_by(|a, b| strings[*a].iter().rev().cmp(strings[*b].iter().rev()));
    let mut host_of: Vec<usize> = (0..strings.len()).collect();
    let mut host: Option<usize> = None;
    for number in by_reversed.into_iter().rev() {
        let string = &strings[number];
        match host {
            Some(longer) if string.last() == Some(&0) && strings[longer].ends_with(string) => host_of[number] = longer,
            _ => host = Some(number),
        }
    }
    let mut merged = Vec::new();
    let mut offsets = vec![0; strings.len()];
    for (number, string) in strings.iter().enumerate() {
        if host_of[number] == number {
            offsets[number] = merged.len() as u64;
            merged.extend_from_slice(string);
        }
    }
    for (number, string) in strings.iter().enumerate() {
        let host = host_of[number];
        if host != number {
            offsets[number] = offsets[host] + (strings[host].len() - string.len()) as u64;
        }
    }
    (merged, offsets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_are_shared_and_the_rest_kept_in_order() {
        let strings: Vec<Vec<u8>> = [
            "char\0",
            "unsigned int\0",
            "unsigned char\0",
            "signed char\0",
            "int\0",
            "x",
        ]
        .iter()
        .map(|text| text.as_bytes().to_vec())
        .collect();
        let (merged, offsets) = lay_out_strings(&strings);
        assert_eq!(merged, b"unsigned int\0unsigned char\0x");
        assert_eq!(offsets, vec![22, 0, 13, 15, 9, 27]);
        for (number, string) in strings.iter().enumerate() {
            let at = offsets[number] as usize;
            assert_eq!(&merged[at..at + string.len()], string.as_slice());
        }
    }
}
