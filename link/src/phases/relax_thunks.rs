//! `neverc.link.relax_thunks`: range-extension thunks. A branch whose declared field cannot reach its target
//! (AArch64 `CALL26`/`JUMP26`: ±128 MiB) is sent to a thunk placed right after the atom it is in, which
//! reaches the target from there (the architecture's table has the instructions: `arch/aarch64/thunks.rs`); layout puts every thunk after
//! its caller's atom.
//!
//! Whether a branch reaches needs addresses, which layout makes after this phase: when the live atoms could
//! span more than the shortest branch reaches, this phase lays the output out provisionally, adds the thunks
//! the out-of-range branches need, and lays out again until no branch needs a new one (adding thunks moves
//! code). Branches to the same target from the same atom share a thunk. An image smaller than a branch's
//! reach needs no layout here at all. Targets whose architecture has no thunk template (x86-64, whose
//! branches reach the whole 4 GiB output limit's ±2 GiB) make none: a branch that does not reach is then
//! relocation's error.

use rustc_hash::FxHashMap;

use neverc_tables::{RelocationBase, RelocationKind};

use crate::arch::ThunkTemplate;
use crate::context::{Destination, LinkContext, PhaseError, Thunk};
use crate::graph::{Atom, AtomId, Edge, EdgeId, EdgeKind, ObjectFormat, Origin, RelocationType};
use crate::phases::LinkPhase;
use crate::phases::layout;
use crate::phases::relocate::target_value;

const PHASE: LinkPhase = LinkPhase::RelaxThunks;

/// How many provisional layouts a link may need before every branch reaches (each adds thunks only for
/// branches that did not reach in the one before).
const MAX_ROUNDS: usize = 8;

pub(crate) fn run(context: &mut LinkContext, phase: u16) -> Result<(), PhaseError> {
    let Some(template) = context.graph.arch().thunk else {
        return Ok(());
    };
    context.resolve_page_size();
    let Some(reach) = shortest_reach(context) else {
        return Ok(());
    };
    if span_bound(context) < reach {
        return Ok(());
    }
    for _ in 0..MAX_ROUNDS {
        layout::run(context, phase)?;
        let far = out_of_range_branches(context);
        if far.is_empty() {
            return Ok(());
        }
        add_thunks(context, phase, template, far)?;
    }
    Ok(())
}

/// The shortest distance a declared branch relocation reaches forward (`2^(w-1) << shift` for a signed field
/// of `w` bits), if the target declares any with a field narrower than 64 bits.
fn shortest_reach(context: &LinkContext) -> Option<u64> {
    context
        .graph
        .target_record()?
        .relocations
        .iter()
        .filter(|relocation| relocation.kind == RelocationKind::Branch)
        .map(|relocation| relocation.value_width().saturating_add(relocation.shift))
        .filter(|bits| (1..64).contains(bits))
        .map(|bits| 1u64 << (bits - 1))
        .min()
}

/// More than the distance between any two addresses layout can give the live atoms: every atom's size and
/// alignment, and the pages and headers between segments.
fn span_bound(context: &LinkContext) -> u64 {
    let page = context.options.page_size.max(0x1000);
    context
        .graph
        .atoms
        .iter()
        .filter(|atom| atom.is_live())
        .fold(page.saturating_mul(16), |total, atom| {
            total.saturating_add(atom.size()).saturating_add(atom.alignment)
        })
}

/// Which live branch reaches which target: the edges whose value does not fit their field in the current
/// layout, with the atom each is in (calls of undefined weak symbols, which become `nop`s, excepted).
fn out_of_range_branches(context: &LinkContext) -> Vec<(EdgeId, AtomId)> {
    let graph = &context.graph;
    let Some(layout) = context.layout() else {
        return Vec::new();
    };
    let mut far = Vec::new();
    for section in &layout.sections {
        for atom in &section.atoms {
            let address = graph.atoms[atom.index()].address;
            for (id, edge) in graph.edges_of(*atom) {
                let Some(record) = graph
                    .relocation(edge)
                    .filter(|record| record.kind == RelocationKind::Branch)
                else {
                    continue;
                };
                // Only weak symbols are undefined in a linked output.
                let undefined = edge.target_symbol.is_some_and(|symbol| {
                    graph.symbols[graph.resolved(symbol).index()].definition == crate::graph::Definition::Undefined
                });
                if undefined {
                    continue;
                }
                let Some(target) = target_value(context, edge) else {
                    continue;
                };
                let value = target - i128::from(address) - i128::from(edge.offset);
                let fits = i64::try_from(value).is_ok_and(|value| record.fits(value));
                if !fits {
                    far.push((id, *atom));
                }
            }
        }
    }
    far
}

/// Sends each of `far` to a thunk after its atom that jumps to the branch's target, making the thunks not
/// made yet.
fn add_thunks(
    context: &mut LinkContext,
    phase: u16,
    template: &ThunkTemplate,
    far: Vec<(EdgeId, AtomId)>,
) -> Result<(), PhaseError> {
    let fields = template
        .code
        .fields
        .iter()
        .map(|field| {
            context
                .graph
                .declared_field(RelocationKind::Symbol, field.base, &field.field)
                .map(|raw| (field, raw))
                .ok_or_else(|| {
                    PhaseError::new(
                        PHASE,
                        format!(
                            "the target declares no `symbol` relocation relative to {:?} writing {:?}, which its thunks need",
                            field.base, field.field
                        ),
                    )
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut existing: FxHashMap<(AtomId, Destination), AtomId> = context
        .thunks
        .iter()
        .map(|thunk| ((thunk.anchor, thunk.destination), thunk.atom))
        .collect();
    let graph = &mut context.graph;
    for (id, anchor) in far {
        let edge = &graph.edges[id.index()];
        let destination = (
            edge.target_symbol.map(|symbol| graph.resolved(symbol)),
            edge.target_atom,
            edge.addend,
        );
        let caller = &graph.atoms[anchor.index()];
        // A thunk goes where its caller's input section goes; the linker's own code has none.
        let Some(section) = caller.section else {
            continue;
        };
        let (input, member) = (caller.origin.input, caller.origin.member);
        let thunk = match existing.get(&(anchor, destination)) {
            Some(thunk) => *thunk,
            None => {
                let origin = Origin {
                    input,
                    member,
                    created_by_phase: Some(phase),
                    ..Origin::default()
                };
                let target_name = match destination {
                    (Some(symbol), _, _) => graph.symbols[symbol.index()].name.clone(),
                    (None, Some(atom), addend) => format!("{}+{addend:#x}", graph.atoms[atom.index()].name),
                    (None, None, _) => continue,
                };
                let thunk = AtomId(graph.atoms.len() as u32);
                graph.atoms.push(Atom::synthetic(
                    Some(section),
                    &format!("{}{target_name}", template.name_prefix),
                    template.alignment,
                    template.code.code.to_vec(),
                    origin,
                ));
                for (field, raw) in &fields {
                    graph.edges.push(Edge {
                        kind: EdgeKind::Relocation,
                        source: thunk,
                        offset: field.offset,
                        relocation: RelocationType {
                            format: ObjectFormat::Elf,
                            raw: *raw,
                        },
                        width: field.field.size as u8,
                        addend: destination.2.saturating_add(field.bias),
                        pc_relative: field.base != RelocationBase::Nothing,
                        signed: field.base != RelocationBase::Nothing,
                        target_symbol: destination.0,
                        target_atom: destination.1,
                        origin,
                    });
                }
                context.thunks.push(Thunk {
                    atom: thunk,
                    anchor,
                    destination,
                });
                existing.insert((anchor, destination), thunk);
                thunk
            }
        };
        // The branch now goes to the thunk.
        let edge = &mut graph.edges[id.index()];
        edge.target_symbol = None;
        edge.target_atom = Some(thunk);
        edge.addend = 0;
    }
    graph.index_edges();
    context.invalidate_edge_index();
    Ok(())
}

/// `atoms` (of one output section, in order) with every thunk moved right after the atom whose branches
/// it serves (a thunk whose caller is elsewhere stays where it is).
pub(crate) fn place_after_callers(atoms: &mut Vec<AtomId>, thunks: &[Thunk]) {
    if thunks.is_empty() {
        return;
    }
    let mut after: FxHashMap<AtomId, Vec<AtomId>> = FxHashMap::default();
    for thunk in thunks {
        after.entry(thunk.anchor).or_default().push(thunk.atom);
    }
    let present: rustc_hash::FxHashSet<AtomId> = atoms.iter().copied().collect();
    let placed: rustc_hash::FxHashSet<AtomId> = thunks
        .iter()
        .filter(|thunk| present.contains(&thunk.anchor))
        .map(|thunk| thunk.atom)
        .collect();
    let mut ordered = Vec::with_capacity(atoms.len());
    for atom in atoms.iter() {
        if placed.contains(atom) {
            continue;
        }
        ordered.push(*atom);
        if let Some(thunks) = after.get(atom) {
            ordered.extend(thunks.iter().filter(|thunk| present.contains(thunk)));
        }
    }
    *atoms = ordered;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thunks_go_right_after_their_callers() {
        let thunk = |atom, anchor| Thunk {
            atom: AtomId(atom),
            anchor: AtomId(anchor),
            destination: (None, Some(AtomId(0)), 0),
        };
        // Atoms 1, 2, 3 in a section, thunks 10 and 11 (for 1) and 12 (for 3) appended at its end as layout
        // first collects them, and 13 for an atom of another section.
        let mut atoms: Vec<AtomId> = [1, 2, 3, 10, 11, 12, 13].into_iter().map(AtomId).collect();
        let thunks = [thunk(10, 1), thunk(11, 1), thunk(12, 3), thunk(13, 7)];
        place_after_callers(&mut atoms, &thunks);
        let order: Vec<u32> = atoms.iter().map(|atom| atom.0).collect();
        assert_eq!(order, [1, 10, 11, 2, 3, 12, 13]);
        let mut unchanged = vec![AtomId(4), AtomId(5)];
        place_after_callers(&mut unchanged, &[]);
        assert_eq!(unchanged, [AtomId(4), AtomId(5)]);
    }
}
