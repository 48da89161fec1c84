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

use neverc_tables::RelocationKind;

use crate::address::target_value;
use crate::arch::ThunkTemplate;
use crate::context::{Destination, LinkContext, PhaseError, Thunk};
use crate::graph::{Atom, AtomId, EdgeId, Origin};
use crate::phases::LinkPhase;
use crate::synth::code::DeclaredFields;

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
        let layout = crate::place::lay_out(context)?;
        context.set_layout(layout);
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
    template: &'static ThunkTemplate,
    far: Vec<(EdgeId, AtomId)>,
) -> Result<(), PhaseError> {
    let fields = DeclaredFields::of(&context.graph, &template.code, "its thunks")
        .map_err(|error| PhaseError::new(PHASE, error))?;
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
                let edges = fields.edges(thunk, 0, (destination.0, destination.1), destination.2, origin);
                graph.edges.extend(edges.collect::<Vec<_>>());
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
