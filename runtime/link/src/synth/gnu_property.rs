//! `.note.gnu.property`: the program properties each object declares (x86 ISA level needed, CET features),
//! merged into the one note of the output as the x86-64 psABI and the generic ABI define per range of
//! property types: "and" properties hold only if every input has them (their bits ANDed), "or" properties
//! if any input has them (ORed), "or-and" ones only if every input has them (ORed). A property of a type
//! these rules do not cover is dropped, as is a note that is not `NT_GNU_PROPERTY_TYPE_0` from "GNU".

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::context::LinkContext;
use crate::graph::{Origin, atom_flags};
use crate::sections::OutputSectionId;

/// `NT_GNU_PROPERTY_TYPE_0`.
const NT_GNU_PROPERTY_TYPE_0: u32 = 5;

/// How properties of a range of types merge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    And,
    Or,
    OrAnd,
}

/// The merge rule of a property type: the generic `GNU_PROPERTY_UINT32_AND/OR` ranges and the x86 ones.
fn rule(kind: u32) -> Option<Rule> {
    match kind {
        0xb000_0000..=0xb000_7fff | 0xc000_0000..=0xc000_7fff => Some(Rule::And),
        0xb000_8000..=0xb000_ffff | 0xc000_8000..=0xc000_ffff => Some(Rule::Or),
        0xc001_0000..=0xc001_7fff => Some(Rule::OrAnd),
        _ => None,
    }
}

/// The 4-byte properties of one input's `.note.gnu.property` bytes, by type (later notes of the same type
/// OR into earlier ones). Malformed notes end the reading.
fn read(bytes: &[u8]) -> BTreeMap<u32, u32> {
    let mut properties = BTreeMap::new();
    let word = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|field| u32::from_le_bytes([field[0], field[1], field[2], field[3]]))
    };
    let mut at = 0usize;
    while let (Some(name_size), Some(desc_size), Some(kind)) = (word(at), word(at + 4), word(at + 8)) {
        let (name_size, desc_size) = (name_size as usize, desc_size as usize);
        let name_start = at + 12;
        let desc_start = name_start + name_size.next_multiple_of(4);
        let Some(next) = desc_start.checked_add(desc_size.next_multiple_of(8)) else {
            break;
        };
        if bytes.get(name_start..name_start + name_size) == Some(b"GNU\0") && kind == NT_GNU_PROPERTY_TYPE_0 {
            let desc_end = (desc_start + desc_size).min(bytes.len());
            let mut property = desc_start;
            while let (Some(kind), Some(size)) = (word(property), word(property + 4)) {
                if property + 8 > desc_end {
                    break;
                }
                if size == 4
                    && let Some(value) = word(property + 8)
                {
                    *properties.entry(kind).or_insert(0) |= value;
                }
                property += 8 + (size as usize).next_multiple_of(8);
            }
        }
        if next <= at {
            break;
        }
        at = next;
    }
    properties
}

/// The merged properties of all inputs (one map per input object; an input without the note is an empty
/// map), encoded as one `NT_GNU_PROPERTY_TYPE_0` note; `None` when no property survives.
fn merge(inputs: &[BTreeMap<u32, u32>]) -> Option<Vec<u8>> {
    let mut merged: BTreeMap<u32, u32> = BTreeMap::new();
    let kinds: std::collections::BTreeSet<u32> = inputs.iter().flat_map(|input| input.keys().copied()).collect();
    for kind in kinds {
        let Some(rule) = rule(kind) else { continue };
        let values: Vec<Option<u32>> = inputs.iter().map(|input| input.get(&kind).copied()).collect();
        let everywhere = values.iter().all(Option::is_some);
        let value = match rule {
            Rule::And if everywhere => values.iter().flatten().fold(u32::MAX, |all, value| all & value),
            Rule::Or => values.iter().flatten().fold(0, |any, value| any | value),
            Rule::OrAnd if everywhere => values.iter().flatten().fold(0, |any, value| any | value),
            _ => continue,
        };
        // An "and" property whose bits all cleared says nothing.
        if rule == Rule::And && value == 0 {
            continue;
        }
        merged.insert(kind, value);
    }
    if merged.is_empty() {
        return None;
    }
    let mut note = Vec::with_capacity(16 + 16 * merged.len());
    note.extend_from_slice(&4u32.to_le_bytes());
    note.extend_from_slice(&(16 * merged.len() as u32).to_le_bytes());
    note.extend_from_slice(&NT_GNU_PROPERTY_TYPE_0.to_le_bytes());
    note.extend_from_slice(b"GNU\0");
    for (kind, value) in merged {
        note.extend_from_slice(&kind.to_le_bytes());
        note.extend_from_slice(&4u32.to_le_bytes());
        note.extend_from_slice(&value.to_le_bytes());
        note.extend_from_slice(&[0; 4]);
    }
    Some(note)
}

/// The one note a merged relocatable object (`-r`) holds for its objects' `.note.gnu.property` bytes (`None`
/// for an object without the note, which counts as one without properties), merged by the rules a link
/// uses; `None` when no property survives, and the output then has no such section.
pub(crate) fn merged_note(objects: &[Option<&[u8]>]) -> Option<Vec<u8>> {
    let inputs: Vec<BTreeMap<u32, u32>> = objects
        .iter()
        .map(|bytes| bytes.map(read).unwrap_or_default())
        .collect();
    merge(&inputs)
}

/// Replaces the inputs' `.note.gnu.property` notes by one note with their merged properties (or none);
/// every input object counts, with or without a note of its own.
pub(super) fn merge_notes(context: &mut LinkContext, origin: Origin) {
    if context.synthesized.gnu_property_merged {
        return;
    }
    context.synthesized.gnu_property_merged = true;
    let graph = &mut context.graph;
    let section_name = OutputSectionId::NoteGnuProperty.name();
    let mut by_input: FxHashMap<u32, BTreeMap<u32, u32>> = FxHashMap::default();
    let mut notes = Vec::new();
    for (index, atom) in graph.atoms.iter().enumerate() {
        let Some(input) = atom.origin.input().filter(|_| atom.is_live()) else {
            continue;
        };
        let properties = by_input.entry(input.0).or_default();
        let is_note = atom
            .section
            .is_some_and(|section| graph.sections[section.index()].name == section_name);
        if is_note {
            properties.extend(read(graph.atom_bytes(atom)));
            notes.push(index);
        }
    }
    if notes.is_empty() {
        return;
    }
    for index in notes {
        graph.atoms[index].flags &= !atom_flags::LIVE;
    }
    let inputs: Vec<_> = by_input.into_values().collect();
    if let Some(note) = merge(&inputs) {
        super::new_atom(graph, None, section_name, 8, note, origin);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FEATURE_1_AND: u32 = 0xc000_0002;
    const ISA_1_NEEDED: u32 = 0xc000_8002;
    const FEATURE_2_USED: u32 = 0xc001_0001;

    fn note(properties: &[(u32, u32)]) -> Vec<u8> {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&4u32.to_le_bytes());
        bytes.extend_from_slice(&(16 * properties.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&5u32.to_le_bytes());
        bytes.extend_from_slice(b"GNU\0");
        for (kind, value) in properties {
            bytes.extend_from_slice(&kind.to_le_bytes());
            bytes.extend_from_slice(&4u32.to_le_bytes());
            bytes.extend_from_slice(&value.to_le_bytes());
            bytes.extend_from_slice(&[0; 4]);
        }
        bytes
    }

    #[test]
    fn and_properties_need_every_input_or_properties_any() {
        let a = read(&note(&[(FEATURE_1_AND, 3), (ISA_1_NEEDED, 1), (FEATURE_2_USED, 2)]));
        let b = read(&note(&[(FEATURE_1_AND, 1), (ISA_1_NEEDED, 4), (FEATURE_2_USED, 1)]));
        assert_eq!(merge(&[a.clone(), b.clone()]).map(|bytes| read(&bytes)).unwrap(), {
            BTreeMap::from([(FEATURE_1_AND, 1), (ISA_1_NEEDED, 5), (FEATURE_2_USED, 3)])
        });
        // An input without the note removes the "and" and "or-and" properties, keeps the "or" ones.
        let merged = merge(&[a, b, BTreeMap::new()]).unwrap();
        assert_eq!(read(&merged), BTreeMap::from([(ISA_1_NEEDED, 5)]));
        assert_eq!(merged.len(), 32);
        assert_eq!(merge(&[BTreeMap::new()]), None);
    }

    #[test]
    fn malformed_notes_end_the_reading_without_a_panic() {
        let bytes = note(&[(ISA_1_NEEDED, 1)]);
        for cut in 0..bytes.len() {
            let _ = read(&bytes[..cut]);
        }
        let mut huge = bytes.clone();
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        let _ = read(&huge);
    }
}
