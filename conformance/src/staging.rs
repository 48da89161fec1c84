//! Staging one operation of a mutation class, chosen so that the change itself is harmless (the symbol is
//! rebound to the atom it already has, the atom keeps its bytes): what a case checks is what committing it
//! does to the state, not to the program.

use neverc_link::frame::{Mutation, PhaseFrame, STAGING_OPERATIONS};
use neverc_link::graph::EntityKind;
use neverc_link::status::Status;
pub(crate) use neverc_tables::generated::state_machines::link::Operation as DeclaredOperation;

/// The first of `operations` this runtime can stage, if any.
pub(crate) fn stageable(operations: &[String]) -> Option<DeclaredOperation> {
    operations
        .iter()
        .filter_map(|operation| DeclaredOperation::from_name(operation))
        .find(|operation| STAGING_OPERATIONS.contains(operation))
}

/// Stages `operation` in `mutation`. Fails if the graph has no entity to apply it to.
pub(crate) fn stage(
    frame: &mut PhaseFrame<'_>,
    mutation: Mutation,
    operation: DeclaredOperation,
) -> Result<(), Status> {
    let graph = frame.graph();
    let no_entity = || {
        Status::new(
            neverc_link::status::StatusCode::InvalidState,
            format!("no entity for {}", operation.name()),
        )
    };
    match operation {
        DeclaredOperation::RebindSymbol => {
            let (symbol, atom) = graph
                .symbols
                .iter()
                .enumerate()
                .find_map(|(index, symbol)| symbol.atom.map(|atom| (index, atom.index())))
                .ok_or_else(no_entity)?;
            let symbol = frame.handle(EntityKind::Symbol, symbol)?;
            let atom = frame.handle(EntityKind::Atom, atom)?;
            frame.rebind_symbol(mutation, symbol, atom)
        }
        DeclaredOperation::SetSymbolResolution => {
            let (index, prevailing) = graph
                .symbols
                .iter()
                .enumerate()
                .map(|(index, symbol)| (index, symbol.resolution.map(|prevailing| prevailing.index())))
                .next()
                .ok_or_else(no_entity)?;
            let symbol = frame.handle(EntityKind::Symbol, index)?;
            let prevailing = match prevailing {
                Some(prevailing) => Some(frame.handle(EntityKind::Symbol, prevailing)?),
                None => None,
            };
            frame.set_symbol_resolution(mutation, symbol, prevailing)
        }
        DeclaredOperation::SetSymbolRoot => {
            let (index, root) = graph
                .symbols
                .iter()
                .enumerate()
                .map(|(index, symbol)| (index, symbol.root))
                .next()
                .ok_or_else(no_entity)?;
            let symbol = frame.handle(EntityKind::Symbol, index)?;
            frame.set_symbol_root(mutation, symbol, root)
        }
        DeclaredOperation::SetAtomLive => {
            let (index, live) = graph
                .atoms
                .iter()
                .enumerate()
                .find(|(_, atom)| atom.is_live())
                .map(|(index, atom)| (index, atom.is_live()))
                .ok_or_else(no_entity)?;
            let atom = frame.handle(EntityKind::Atom, index)?;
            frame.set_atom_live(mutation, atom, live)
        }
        DeclaredOperation::SetFoldLeader => {
            let (index, leader) = graph
                .atoms
                .iter()
                .enumerate()
                .map(|(index, atom)| (index, atom.fold_leader.map(|leader| leader.index())))
                .next()
                .ok_or_else(no_entity)?;
            let atom = frame.handle(EntityKind::Atom, index)?;
            let leader = match leader {
                Some(leader) => Some(frame.handle(EntityKind::Atom, leader)?),
                None => None,
            };
            frame.set_fold_leader(mutation, atom, leader)
        }
        DeclaredOperation::ReplaceAtomContent => {
            let (index, bytes) = graph
                .atoms
                .iter()
                .enumerate()
                .find(|(_, atom)| {
                    let bytes = graph.atom_bytes(atom).len() as u64;
                    atom.is_live() && bytes > 0 && bytes == atom.size()
                })
                .map(|(index, atom)| (index, graph.atom_bytes(atom).to_vec()))
                .ok_or_else(no_entity)?;
            let atom = frame.handle(EntityKind::Atom, index)?;
            frame.replace_atom_content(mutation, atom, &bytes)
        }
        DeclaredOperation::CreateConstraint => frame.create_constraint(mutation, "order", 0, 0, false),
        DeclaredOperation::RetargetEdge => {
            let (index, symbol, atom) = graph
                .edges
                .iter()
                .enumerate()
                .map(|(index, edge)| (index, edge.target_symbol.get(), edge.target_atom.get()))
                .next()
                .ok_or_else(no_entity)?;
            let edge = frame.handle(EntityKind::Edge, index)?;
            let symbol = symbol
                .map(|symbol| frame.handle(EntityKind::Symbol, symbol.index()))
                .transpose()?;
            let atom = atom
                .map(|atom| frame.handle(EntityKind::Atom, atom.index()))
                .transpose()?;
            frame.retarget_edge(mutation, edge, symbol, atom)
        }
        DeclaredOperation::CreateSynthetic => frame.create_synthetic(mutation, "conformance", None, None),
        DeclaredOperation::ReplaceConstraint => {
            let (index, constraint) = graph.constraints.iter().enumerate().next().ok_or_else(no_entity)?;
            let (kind, subject, value, required) = (
                constraint.kind.clone(),
                constraint.subject,
                constraint.value,
                constraint.required,
            );
            let handle = frame.handle(EntityKind::Constraint, index)?;
            frame.replace_constraint(mutation, handle, &kind, subject, value, required)
        }
        // Replacing or erasing a plugin's synthetic, or erasing a constraint, needs one a plugin made first.
        DeclaredOperation::ReplaceSynthetic
        | DeclaredOperation::EraseSynthetic
        | DeclaredOperation::EraseConstraint => Err(no_entity()),
        DeclaredOperation::InputStructure | DeclaredOperation::Relocation | DeclaredOperation::Image => {
            Err(Status::new(
                neverc_link::status::StatusCode::InvalidArgument,
                format!("this runtime has no staging call for {}", operation.name()),
            ))
        }
    }
}
