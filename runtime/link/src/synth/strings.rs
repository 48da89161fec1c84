//! Merged strings: the strings of live `SHF_MERGE | SHF_STRINGS` sections (one-byte entries) that go to the
//! same output section with the same alignment are merged into one atom, each distinct string kept once, in
//! first-seen link (command-line) order; [`super::MergedStrings`] says where each input piece went
//! (`crate::address::merged_location`).

use rustc_hash::FxHashMap;

use super::new_atom;
use crate::context::LinkContext;
use crate::graph::{AtomId, Origin, section_flags};
use crate::sections::output_name;

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
            let input = graph.atoms[atom.index()].origin.input;
            (input.map_or((u32::MAX, 0), |input| order[input.index()]), *atom)
        });
    }
    let groups: Vec<(u64, Vec<AtomId>)> = groups
        .into_iter()
        .map(|((_, alignment), atoms)| (alignment, atoms))
        .collect();
    for (alignment, atoms) in groups {
        let mut merged: Vec<u8> = Vec::new();
        let mut offsets: FxHashMap<Vec<u8>, u64> = FxHashMap::default();
        let first_section = graph.atoms[atoms[0].index()].section;
        for atom in &atoms {
            let bytes = graph.atom_bytes(&graph.atoms[atom.index()]).to_vec();
            let mut pieces = Vec::new();
            let mut start = 0;
            while start < bytes.len() {
                let end = bytes[start..]
                    .iter()
                    .position(|byte| *byte == 0)
                    .map_or(bytes.len(), |nul| start + nul + 1);
                let piece = bytes[start..end].to_vec();
                let at = *offsets.entry(piece).or_insert_with_key(|piece| {
                    let at = merged.len() as u64;
                    merged.extend_from_slice(piece);
                    at
                });
                pieces.push((start as u64, at));
                start = end;
            }
            merged_strings.pieces.insert(*atom, pieces);
        }
        let merged_atom = new_atom(graph, first_section, ".rodata.str", alignment, merged, origin);
        for atom in atoms {
            merged_strings.target.insert(atom, merged_atom);
        }
    }
    graph.edges_by_atom.resize(graph.atoms.len(), 0..0);
}
