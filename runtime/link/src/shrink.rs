//! Size deltas: code the linker shortens once it knows where things lie (RISC-V linker relaxation: a call
//! that reaches with one instruction instead of two, alignment padding trimmed to what the final addresses
//! need). An architecture says what to delete and rewrite in an atom ([`AtomEdit`], at the atom's current
//! offsets); [`apply`] makes the atom's bytes the shortened ones and moves everything that points into it
//! consistently: the offsets of its edges (an edge inside deleted bytes goes with them), the values and
//! sizes of the symbols defined in it, and the addends of edges that reach into it by section and offset.
//! Everything that is computed from symbols later (`.eh_frame`'s and DWARF's label differences, the
//! addresses of functions) follows from that.

use std::ops::Range;

use rustc_hash::FxHashMap;

use crate::graph::{AtomId, Content, EdgeId, LinkGraph, Origin, SymbolId, SymbolType};
use crate::synth::WordFill;

/// What to do to one atom, at its offsets before the edit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct AtomEdit {
    /// Byte ranges to delete: sorted, not overlapping.
    pub(crate) deletions: Vec<Range<u64>>,
    /// Bytes to write before deleting (an instruction rewritten into a shorter form).
    pub(crate) writes: Vec<(u64, Vec<u8>)>,
    /// Edges whose relocation becomes another declared one (its raw number), for the rewritten instruction.
    pub(crate) retypes: Vec<(EdgeId, u32)>,
    /// Edges that become another declared relocation reaching another target (symbol, atom, addend).
    pub(crate) retarget: Vec<(EdgeId, u32, Target)>,
}

/// What an edge reaches: a symbol, or an atom, plus an addend.
pub(crate) type Target = (Option<SymbolId>, Option<AtomId>, i64);

impl AtomEdit {
    pub(crate) fn is_empty(&self) -> bool {
        self.deletions.is_empty() && self.writes.is_empty() && self.retypes.is_empty() && self.retarget.is_empty()
    }
}

/// Where an offset of an atom goes when `deletions` (sorted) are made: offsets inside a deleted range go
/// to its start.
pub(crate) fn moved(deletions: &[Range<u64>], offset: u64) -> u64 {
    let mut removed = 0;
    for range in deletions {
        if offset >= range.end {
            removed += range.end - range.start;
        } else if offset > range.start {
            removed += offset - range.start;
            break;
        } else {
            break;
        }
    }
    offset - removed
}

/// One atom's deletions with the bytes removed before each, so that an offset moves in logarithmic time
/// (a large atom has tens of thousands of deletions and more edges).
struct Deletions<'a> {
    /// Sorted, not overlapping.
    ranges: &'a [Range<u64>],
    /// `before[i]`: the bytes `ranges[..i]` delete.
    before: Vec<u64>,
}

impl<'a> Deletions<'a> {
    fn new(ranges: &'a [Range<u64>]) -> Self {
        let mut before = Vec::with_capacity(ranges.len() + 1);
        let mut total = 0;
        before.push(0);
        for range in ranges {
            total += range.end - range.start;
            before.push(total);
        }
        Deletions { ranges, before }
    }

    /// The index of the first range that does not end at or before `offset`.
    fn first_after(&self, offset: u64) -> usize {
        self.ranges.partition_point(|range| range.end <= offset)
    }

    /// Whether the byte at `offset` is deleted.
    fn deletes(&self, offset: u64) -> bool {
        let index = self.first_after(offset);
        self.ranges.get(index).is_some_and(|range| range.start <= offset)
    }

    /// [`moved`], by binary search.
    fn moved(&self, offset: u64) -> u64 {
        let index = self.first_after(offset);
        let mut removed = self.before[index];
        if let Some(range) = self.ranges.get(index)
            && offset > range.start
        {
            removed += offset - range.start;
        }
        offset - removed
    }
}

/// Applies the edits (at most one per atom) to the graph; an error names what could not be applied.
/// `fills` are the words of linker-made tables that relocation fills as edges (`.rela.dyn`'s): those that
/// reach into an edited atom follow its bytes as edges do.
pub(crate) fn apply(
    graph: &mut LinkGraph,
    fills: &mut [WordFill],
    edits: Vec<(AtomId, AtomEdit)>,
) -> Result<(), String> {
    if edits.is_empty() {
        return Ok(());
    }
    // The deletions of each edited atom, indexed by atom (every edge is looked up, so no hashing).
    let mut deletions_of: Vec<Option<Deletions<'_>>> = Vec::new();
    deletions_of.resize_with(graph.atoms.len(), || None);
    for (atom, edit) in &edits {
        let slot = deletions_of
            .get_mut(atom.index())
            .ok_or("an edit names an atom the graph does not have")?;
        *slot = Some(Deletions::new(&edit.deletions));
    }
    let by_atom = |atom: &AtomId| deletions_of.get(atom.index()).and_then(Option::as_ref);
    // The bytes of each edited atom.
    for (atom, edit) in &edits {
        let entry = &graph.atoms[atom.index()];
        let mut bytes = graph.atom_bytes(entry).to_vec();
        for (offset, written) in &edit.writes {
            let start = usize::try_from(*offset).map_err(|_| "a rewrite lies outside its atom".to_string())?;
            bytes
                .get_mut(start..start + written.len())
                .ok_or_else(|| format!("`{}`: a rewrite lies outside the atom", entry.name))?
                .copy_from_slice(written);
        }
        let mut kept = Vec::with_capacity(bytes.len());
        let mut from = 0usize;
        for range in &edit.deletions {
            let (start, end) = (range.start as usize, range.end as usize);
            if start < from || end > bytes.len() {
                return Err(format!(
                    "`{}`: deleted bytes lie outside the atom or overlap",
                    entry.name
                ));
            }
            kept.extend_from_slice(&bytes[from..start]);
            from = end;
        }
        kept.extend_from_slice(&bytes[from..]);
        graph.atoms[atom.index()].content = Content::Owned(std::sync::Arc::from(kept));
    }
    // Edges: those of edited atoms move (and go when their bytes go), and those that reach into an edited
    // atom by offset follow the bytes they reach.
    let retyped: FxHashMap<EdgeId, u32> = edits
        .iter()
        .flat_map(|(_, edit)| edit.retypes.iter().copied())
        .collect();
    let section_symbol = |graph: &LinkGraph, edge: &crate::graph::Edge| {
        edge.target_symbol.get().and_then(|symbol| {
            let symbol = &graph.symbols[graph.resolved(symbol).index()];
            (symbol.symbol_type == SymbolType::Section)
                .then_some(symbol.atom)
                .flatten()
        })
    };
    // The addend of an edge that reaches into an edited atom by offset, moved with the bytes it reaches.
    let followed_addend = |graph: &LinkGraph, edge: &crate::graph::Edge| {
        let reached = edge.target_atom.get().or_else(|| section_symbol(graph, edge))?;
        let offset = u64::try_from(edge.addend).ok()?;
        by_atom(&reached).map(|deletions| deletions.moved(offset) as i64)
    };
    // Retargeted edges reach their new targets first, so that their addends follow those targets' bytes.
    for (_, edit) in &edits {
        for (id, raw, (symbol, atom, addend)) in &edit.retarget {
            let edge = &mut graph.edges[id.index()];
            edge.relocation.raw = *raw;
            edge.target_symbol = (*symbol).into();
            edge.target_atom = (*atom).into();
            edge.addend = *addend;
        }
    }
    let mut removed = vec![false; graph.edges.len()];
    let mut addends = Vec::new();
    for (index, edge) in graph.edges.iter().enumerate() {
        if let Some(deletions) = by_atom(&edge.source)
            && deletions.deletes(edge.offset)
        {
            removed[index] = true;
            continue;
        }
        if let Some(addend) = followed_addend(graph, edge) {
            addends.push((index, addend));
        }
    }
    for (index, addend) in addends {
        graph.edges[index].addend = addend;
    }
    for fill in fills.iter_mut() {
        if let Some(addend) = followed_addend(graph, &fill.edge(AtomId(0), Origin::default())) {
            fill.addend = addend;
        }
    }
    for (index, edge) in graph.edges.iter_mut().enumerate() {
        if let Some(deletions) = by_atom(&edge.source) {
            edge.offset = deletions.moved(edge.offset);
        }
        if let Some(raw) = retyped.get(&EdgeId(index as u32)) {
            edge.relocation.raw = *raw;
        }
    }
    if removed.iter().any(|removed| *removed) {
        let mut index = 0;
        graph.edges.retain(|_| {
            let keep = !removed[index];
            index += 1;
            keep
        });
    }
    // Symbols defined in edited atoms keep pointing at the same bytes, and their sizes lose what was
    // deleted inside them.
    for symbol in &mut graph.symbols {
        let Some(deletions) = symbol.atom.and_then(|atom| by_atom(&atom)) else {
            continue;
        };
        if symbol.symbol_type == SymbolType::Section {
            continue;
        }
        let start = deletions.moved(symbol.value);
        let end = deletions.moved(symbol.value.saturating_add(symbol.size));
        symbol.value = start;
        symbol.size = end - start;
    }
    graph.index_edges();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_move_past_deletions_and_into_their_starts() {
        let deletions = [4..8, 12..14];
        assert_eq!(moved(&deletions, 0), 0);
        assert_eq!(moved(&deletions, 4), 4);
        assert_eq!(moved(&deletions, 6), 4);
        assert_eq!(moved(&deletions, 8), 4);
        assert_eq!(moved(&deletions, 12), 8);
        assert_eq!(moved(&deletions, 13), 8);
        assert_eq!(moved(&deletions, 20), 14);
    }

    #[test]
    fn the_binary_search_moves_offsets_as_the_linear_walk_does() {
        let ranges = [0..2, 4..8, 12..14, 14..15, 30..40];
        let deletions = Deletions::new(&ranges);
        for offset in 0..50 {
            assert_eq!(deletions.moved(offset), moved(&ranges, offset), "offset {offset}");
            let deleted = ranges.iter().any(|range| range.contains(&offset));
            assert_eq!(deletions.deletes(offset), deleted, "offset {offset}");
        }
    }
}
