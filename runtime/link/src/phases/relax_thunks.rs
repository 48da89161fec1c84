//! `neverc.link.relax_thunks`: code the linker adds once it knows where code lies: range-extension thunks,
//! and the veneers of a core erratum's workaround.
//!
//! A branch whose declared field cannot reach its target (AArch64 `CALL26`/`JUMP26`: ±128 MiB) is sent to a
//! thunk placed right after the atom it is in, which reaches the target from there (the architecture's table
//! has the instructions: `arch/aarch64/thunks.rs`); layout puts every thunk after its caller's atom.
//! Branches to the same target from the same atom share a thunk. Targets whose architecture has no thunk
//! template (x86-64, whose branches reach the whole 4 GiB output limit's ±2 GiB) make none: a branch that
//! does not reach is then relocation's error.
//!
//! With `--fix-cortex-a53-843419`, every instruction sequence the architecture's erratum affects
//! ([`crate::arch::ErratumFix`]) gets a veneer after its atom, holding a copy of the instruction that may
//! have to move (with its relocations) and a branch back; relocation then makes the sequence safe.
//!
//! Both need addresses, which layout makes after this phase: this phase lays the output out provisionally,
//! adds what that layout calls for, and lays out again until nothing new is needed (what it adds moves
//! code). An image smaller than a branch's reach needs no thunk, and without the erratum option no layout
//! is made here at all.

use rustc_hash::{FxHashMap, FxHashSet};

use neverc_tables::RelocationKind;

use crate::address::target_value;
use crate::arch::{ErratumFix, Relax, RelaxPass, ThunkTemplate};
use crate::context::{Destination, ErratumSite, LinkContext, PhaseError, Thunk};
use crate::graph::{Atom, AtomId, Binding, Edge, EdgeId, Origin, section_flags};
use crate::phases::LinkPhase;
use crate::synth::code::DeclaredFields;

const PHASE: LinkPhase = LinkPhase::RelaxThunks;

/// How many provisional layouts a link may need before every branch reaches and every affected sequence
/// has its veneer (each round adds only what the layout before called for).
const MAX_ROUNDS: usize = 8;

pub(crate) fn run(context: &mut LinkContext, phase: u16) -> Result<(), PhaseError> {
    let arch = context.graph.arch();
    let target = context.graph.target_record();
    let declared = target
        .and_then(|target| target.elf)
        .is_some_and(|elf| !elf.errata.is_empty());
    let erratum = match (context.options.fix_erratum, declared, arch.erratum) {
        (false, _, _) => None,
        (true, true, Some(fix)) => Some(fix),
        (true, _, _) => {
            let target = target.map_or("?", |target| target.name);
            return Err(PhaseError::new(
                PHASE,
                format!(
                    "an erratum workaround was asked for, but the link target `{target}` declares no erratum \
                     (`[elf] errata`) that the linker has a workaround for"
                ),
            ));
        }
    };
    context.resolve_page_size();
    if let Some(relax) = arch.relax {
        relax_code(context, relax)?;
    }
    let thunk = arch
        .thunk
        .filter(|_| shortest_reach(context).is_some_and(|reach| span_bound(context) >= reach));
    if thunk.is_none() && erratum.is_none() {
        return Ok(());
    }
    // The sequences that have a veneer (atom, offset of the first instruction): found again in every later
    // layout, since the code itself does not change until relocation.
    let mut fixed: FxHashSet<(AtomId, u64)> = FxHashSet::default();
    for round in 0..=MAX_ROUNDS {
        let layout = crate::place::lay_out(context)?;
        context.set_layout(layout);
        let far = match thunk {
            Some(_) => out_of_range_branches(context),
            None => Vec::new(),
        };
        let sequences = match erratum {
            Some(fix) => affected_sequences(context, fix, &fixed),
            None => Vec::new(),
        };
        if far.is_empty() && sequences.is_empty() {
            return Ok(());
        }
        if round == MAX_ROUNDS {
            // A branch that still does not reach is relocation's error; a sequence left as it is would be a
            // silent hazard.
            return match sequences.first() {
                None => Ok(()),
                Some((atom, first, _)) => Err(PhaseError::new(
                    PHASE,
                    format!(
                        "the erratum workaround did not settle in {MAX_ROUNDS} layouts: the sequence at `{}`+{first:#x} \
                         has no veneer",
                        context.graph.atoms[atom.index()].name
                    ),
                )),
            };
        }
        if let Some(template) = thunk
            && !far.is_empty()
        {
            add_thunks(context, phase, template, far)?;
        }
        if let Some(fix) = erratum
            && !sequences.is_empty()
        {
            add_veneers(context, phase, fix, sequences, &mut fixed)?;
        }
    }
    Ok(())
}

/// How many provisional layouts shortening code may take before it stops (each round shortens only what
/// the layout before allowed; what is left is correct, only longer).
const MAX_RELAX_ROUNDS: usize = 16;

/// Linker relaxation: instruction sequences shortened round by round over provisional layouts until none
/// shortens more (unless `--no-relax`), then alignment padding trimmed for the final addresses.
fn relax_code(context: &mut LinkContext, relax: Relax) -> Result<(), PhaseError> {
    let failed = |message: String| PhaseError::new(PHASE, message);
    if context.options.relax {
        for _ in 0..MAX_RELAX_ROUNDS {
            let layout = crate::place::lay_out(context)?;
            context.set_layout(layout);
            let edits = relax(context, RelaxPass::Shorten).map_err(failed)?;
            // A round that deletes nothing moves no address, so the next would find what this one did
            // (rewrites that only change a base register are made again, to the same bytes).
            let shrinks = edits.iter().any(|(_, edit)| !edit.deletions.is_empty());
            apply_edits(context, edits).map_err(failed)?;
            if !shrinks {
                break;
            }
        }
    }
    let layout = crate::place::lay_out(context)?;
    context.set_layout(layout);
    let edits = relax(context, RelaxPass::Align).map_err(failed)?;
    apply_edits(context, edits).map_err(failed)
}

/// Applies one round's edits to the graph and to `.rela.dyn`'s fills, and drops the edge index they outdate.
fn apply_edits(context: &mut LinkContext, edits: Vec<crate::arch::RelaxEdit>) -> Result<(), String> {
    let fills = context
        .synthesized
        .rela_dyn
        .as_mut()
        .map_or(&mut [][..], |rela| &mut rela.fills[..]);
    crate::shrink::apply(&mut context.graph, fills, edits)?;
    context.invalidate_edge_index();
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
                let undefined = edge.target_symbol.get().is_some_and(|symbol| {
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
            edge.target_symbol.get().map(|symbol| graph.resolved(symbol)),
            edge.target_atom.get(),
            edge.addend,
        );
        let caller = &graph.atoms[anchor.index()];
        // A thunk goes where its caller's input section goes; the linker's own code has none.
        let Some(section) = caller.section else {
            continue;
        };
        let (input, member) = (caller.origin.input(), caller.origin.member());
        let thunk = match existing.get(&(anchor, destination)) {
            Some(thunk) => *thunk,
            None => {
                let origin = Origin::made(input, member, 0, Some(phase));
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
        edge.target_symbol = (None).into();
        edge.target_atom = (Some(thunk)).into();
        edge.addend = 0;
    }
    graph.index_edges();
    context.invalidate_edge_index();
    Ok(())
}

/// The sequences of the current layout that the erratum affects and that have no veneer yet: (atom, offset
/// of the first instruction, offset of the instruction a veneer takes). Only the code of executable sections
/// is searched, the spans its mapping symbols mark as code.
fn affected_sequences(
    context: &LinkContext,
    fix: &ErratumFix,
    fixed: &FxHashSet<(AtomId, u64)>,
) -> Vec<(AtomId, u64, u64)> {
    let graph = &context.graph;
    let Some(layout) = context.layout() else {
        return Vec::new();
    };
    let mut marks: FxHashMap<AtomId, Vec<(u64, bool)>> = FxHashMap::default();
    for symbol in &graph.symbols {
        if symbol.binding != Binding::Local {
            continue;
        }
        if let (Some(atom), Some(code)) = (symbol.atom, (fix.mapping_symbol)(&symbol.name)) {
            marks.entry(atom).or_default().push((symbol.value, code));
        }
    }
    let mut found = Vec::new();
    for section in layout
        .sections
        .iter()
        .filter(|section| section.flags & section_flags::EXECUTABLE != 0)
    {
        for atom in &section.atoms {
            let Some(marks) = marks.get_mut(atom) else {
                continue;
            };
            marks.sort_unstable();
            let entry = &graph.atoms[atom.index()];
            let bytes = graph.atom_bytes(entry);
            for (index, (start, code)) in marks.iter().enumerate() {
                if !code {
                    continue;
                }
                let end = marks
                    .get(index + 1)
                    .map_or(bytes.len() as u64, |(next, _)| *next)
                    .min(bytes.len() as u64);
                let mut offset = start.next_multiple_of(4);
                while offset + 4 <= end {
                    let address = entry.address + offset;
                    // Only the last words of a page can start a sequence: skip to them.
                    let page_offset = address & 0xfff;
                    if page_offset < 0xff8 {
                        offset += 0xff8 - page_offset;
                        continue;
                    }
                    if !fixed.contains(&(*atom, offset))
                        && let Some(moved) = (fix.find)(address, &bytes[offset as usize..end as usize])
                    {
                        found.push((*atom, offset, offset + moved as u64));
                    }
                    offset += 4;
                }
            }
        }
    }
    found
}

/// Gives each of `sequences` a veneer after its atom: a copy of the instruction that may move, with copies
/// of its relocations, then a branch back to the instruction after it.
fn add_veneers(
    context: &mut LinkContext,
    phase: u16,
    fix: &'static ErratumFix,
    sequences: Vec<(AtomId, u64, u64)>,
    fixed: &mut FxHashSet<(AtomId, u64)>,
) -> Result<(), PhaseError> {
    let back = DeclaredFields::of(&context.graph, fix.branch, "its erratum veneers")
        .map_err(|error| PhaseError::new(PHASE, error))?;
    for (atom, first, moved) in sequences {
        fixed.insert((atom, first));
        let graph = &mut context.graph;
        let entry = &graph.atoms[atom.index()];
        let Some(section) = entry.section else {
            continue;
        };
        let origin = Origin::made(entry.origin.input(), entry.origin.member(), 0, Some(phase));
        let name = format!("{}{:x}", fix.veneer_prefix, entry.address + first);
        let mut code = graph
            .atom_bytes(entry)
            .get(moved as usize..moved as usize + 4)
            .ok_or_else(|| {
                PhaseError::new(
                    PHASE,
                    format!("`{}`: an erratum sequence lies past its end", entry.name),
                )
            })?
            .to_vec();
        code.extend_from_slice(fix.branch.code);
        let veneer = AtomId(graph.atoms.len() as u32);
        graph.atoms.push(Atom::synthetic(Some(section), &name, 4, code, origin));
        let copies: Vec<Edge> = graph
            .edges_of(atom)
            .filter(|(_, edge)| edge.offset == moved)
            .map(|(_, edge)| Edge {
                source: veneer,
                offset: 0,
                origin,
                ..edge.clone()
            })
            .collect();
        graph.edges.extend(copies);
        let after_moved = (None, Some(atom));
        graph.edges.extend(
            back.edges(veneer, 4, after_moved, moved as i64 + 4, origin)
                .collect::<Vec<_>>(),
        );
        context.thunks.push(Thunk {
            atom: veneer,
            anchor: atom,
            destination: (None, Some(atom), moved as i64 + 4),
        });
        context.erratum_sites.push(ErratumSite {
            atom,
            first,
            moved,
            veneer,
        });
    }
    context.erratum_sites.sort_by_key(|site| (site.atom, site.first));
    context.graph.index_edges();
    context.invalidate_edge_index();
    Ok(())
}
