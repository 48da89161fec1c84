//! Mutations from C: `Begin/Commit/AbandonMutation` and the staging slots, each going through the runtime
//! frame's own mutation API (`PhaseFrame::begin_mutation`, `rebind_symbol`, `set_atom_live`, ...), so that
//! the runtime's policy holds for C as for Rust: an observer's mutation is POLICY_VIOLATION, a change the
//! current state's verifier refuses is VERIFICATION_FAILED, and every commit advances the generation.
//!
//! Every one of the sixteen staging slots is served.

use std::ffi::c_void;

use neverc_link::frame::{Mutation, PhaseFrame};
use neverc_link::graph::EntityKind;
use neverc_sys::plugin::copy_view;
use neverc_tables::plugin_abi::ffi;
use neverc_tables::status::{Status, StatusCode};

use super::handles::Scope;
use super::{FrameRequest, ask};
use crate::memory::{read_struct, write_plain};
use crate::status::{OK, c_status, guarded};

/// The largest content `ReplaceAtomContent` takes (the content and its zero fill).
const CONTENT_LIMIT: u64 = 64 << 20;

/// The longest constraint kind the host reads.
const KIND_LIMIT: usize = 256;

/// A change a plugin asks for through the Link API.
#[derive(Clone)]
pub(crate) enum Change {
    /// Opens a mutation of the graph a graph handle names.
    Begin(ffi::Handle),
    Commit(ffi::Handle),
    Abandon(ffi::Handle),
    RebindSymbol {
        mutation: ffi::Handle,
        symbol: ffi::Handle,
        atom: ffi::Handle,
    },
    SetSymbolRoot {
        mutation: ffi::Handle,
        symbol: ffi::Handle,
        root: bool,
    },
    SetAtomLive {
        mutation: ffi::Handle,
        atom: ffi::Handle,
        live: bool,
    },
    /// A null leader unfolds the atom.
    SetFoldLeader {
        mutation: ffi::Handle,
        atom: ffi::Handle,
        leader: ffi::Handle,
    },
    ReplaceAtomContent {
        mutation: ffi::Handle,
        atom: ffi::Handle,
        bytes: Vec<u8>,
    },
    SetSymbolResolution {
        mutation: ffi::Handle,
        symbol: ffi::Handle,
        update: neverc_link::frame::ResolutionUpdate,
    },
    /// Null symbol or atom handles stand for none.
    RetargetEdge {
        mutation: ffi::Handle,
        edge: ffi::Handle,
        symbol: ffi::Handle,
        atom: ffi::Handle,
    },
    /// A plugin's synthetic (`existing` none) or a replacement of one.
    Synthetic {
        mutation: ffi::Handle,
        existing: Option<ffi::Handle>,
        role: String,
        section: ffi::Handle,
        atom: ffi::Handle,
    },
    EraseSynthetic {
        mutation: ffi::Handle,
        synthetic: ffi::Handle,
    },
    /// A replacement of the constraint `constraint`, on the atom whose handle value is `subject`.
    ReplaceConstraint {
        mutation: ffi::Handle,
        constraint: ffi::Handle,
        kind: String,
        subject: u64,
        value: u64,
        required: bool,
    },
    EraseConstraint {
        mutation: ffi::Handle,
        constraint: ffi::Handle,
    },
    /// A layout constraint on the atom whose handle value is `subject`.
    CreateConstraint {
        mutation: ffi::Handle,
        kind: String,
        subject: u64,
        value: u64,
        required: bool,
    },
}

/// The mutation a handle names: one this callback began, in the current scope.
fn mutation_of(scope: Scope, handle: ffi::Handle, mutations: &[Mutation]) -> Result<Mutation, Status> {
    let number = scope.mutation_number(handle)?;
    (number as usize)
        .checked_sub(1)
        .and_then(|index| mutations.get(index))
        .copied()
        .ok_or_else(|| Status::new(StatusCode::StaleHandle, "not a mutation this callback began"))
}

/// Applies one change to the lent frame; the answer is the new mutation's handle for `Begin` (else null).
pub(crate) fn mutate(
    frame: &mut PhaseFrame<'_>,
    scope: Scope,
    change: Change,
    mutations: &mut Vec<Mutation>,
) -> Result<ffi::Handle, Status> {
    staged(frame, scope, change, mutations).map(|number| match number {
        0 => ffi::Handle::default(),
        number => scope.mutation(number),
    })
}

/// Applies one change; the answer is the new mutation's number (from 1) for `Begin`, else 0.
fn staged(
    frame: &mut PhaseFrame<'_>,
    scope: Scope,
    change: Change,
    mutations: &mut Vec<Mutation>,
) -> Result<u32, Status> {
    let atom = |frame: &PhaseFrame<'_>, handle| scope.runtime(frame, handle, EntityKind::Atom);
    let symbol = |frame: &PhaseFrame<'_>, handle| scope.runtime(frame, handle, EntityKind::Symbol);
    match change {
        Change::Begin(graph) => {
            scope.check_graph(graph)?;
            let mutation = frame.begin_mutation()?;
            mutations.push(mutation);
            Ok(mutations.len() as u32)
        }
        Change::Commit(handle) => frame
            .commit_mutation(mutation_of(scope, handle, mutations)?)
            .map(|()| 0),
        Change::Abandon(handle) => frame
            .abandon_mutation(mutation_of(scope, handle, mutations)?)
            .map(|()| 0),
        Change::RebindSymbol {
            mutation,
            symbol: named,
            atom: to,
        } => {
            let mutation = mutation_of(scope, mutation, mutations)?;
            let (named, to) = (symbol(frame, named)?, atom(frame, to)?);
            frame.rebind_symbol(mutation, named, to).map(|()| 0)
        }
        Change::SetSymbolRoot {
            mutation,
            symbol: named,
            root,
        } => {
            let mutation = mutation_of(scope, mutation, mutations)?;
            let named = symbol(frame, named)?;
            frame.set_symbol_root(mutation, named, root).map(|()| 0)
        }
        Change::SetAtomLive {
            mutation,
            atom: named,
            live,
        } => {
            let mutation = mutation_of(scope, mutation, mutations)?;
            let named = atom(frame, named)?;
            frame.set_atom_live(mutation, named, live).map(|()| 0)
        }
        Change::SetFoldLeader {
            mutation,
            atom: named,
            leader,
        } => {
            let mutation = mutation_of(scope, mutation, mutations)?;
            let named = atom(frame, named)?;
            let leader = match leader {
                ffi::Handle { owner: 0, value: 0 } => None,
                leader => Some(atom(frame, leader)?),
            };
            frame.set_fold_leader(mutation, named, leader).map(|()| 0)
        }
        Change::ReplaceAtomContent {
            mutation,
            atom: named,
            bytes,
        } => {
            let mutation = mutation_of(scope, mutation, mutations)?;
            let named = atom(frame, named)?;
            frame.replace_atom_content(mutation, named, &bytes).map(|()| 0)
        }
        Change::SetSymbolResolution {
            mutation,
            symbol: named,
            update,
        } => {
            let mutation = mutation_of(scope, mutation, mutations)?;
            let named = symbol(frame, named)?;
            frame.update_symbol_resolution(mutation, named, update).map(|()| 0)
        }
        Change::CreateConstraint {
            mutation,
            kind,
            subject,
            value,
            required,
        } => {
            let mutation = mutation_of(scope, mutation, mutations)?;
            let named = subject_atom(frame, scope, subject)?;
            frame
                .create_constraint(mutation, &kind, named, value, required)
                .map(|()| 0)
        }
        Change::ReplaceConstraint {
            mutation,
            constraint,
            kind,
            subject,
            value,
            required,
        } => {
            let mutation = mutation_of(scope, mutation, mutations)?;
            let constraint = scope.runtime(frame, constraint, EntityKind::Constraint)?;
            let named = subject_atom(frame, scope, subject)?;
            frame
                .replace_constraint(mutation, constraint, &kind, named, value, required)
                .map(|()| 0)
        }
        Change::EraseConstraint { mutation, constraint } => {
            let mutation = mutation_of(scope, mutation, mutations)?;
            let constraint = scope.runtime(frame, constraint, EntityKind::Constraint)?;
            frame.erase_constraint(mutation, constraint).map(|()| 0)
        }
        Change::RetargetEdge {
            mutation,
            edge,
            symbol: to_symbol,
            atom: to_atom,
        } => {
            let mutation = mutation_of(scope, mutation, mutations)?;
            let edge = scope.runtime(frame, edge, EntityKind::Edge)?;
            let to_symbol = optional(to_symbol).map(|handle| symbol(frame, handle)).transpose()?;
            let to_atom = optional(to_atom).map(|handle| atom(frame, handle)).transpose()?;
            frame.retarget_edge(mutation, edge, to_symbol, to_atom).map(|()| 0)
        }
        Change::Synthetic {
            mutation,
            existing,
            role,
            section,
            atom: in_atom,
        } => {
            let mutation = mutation_of(scope, mutation, mutations)?;
            let section = optional(section)
                .map(|handle| scope.runtime(frame, handle, EntityKind::Section))
                .transpose()?;
            let in_atom = optional(in_atom).map(|handle| atom(frame, handle)).transpose()?;
            match existing {
                None => frame.create_synthetic(mutation, &role, section, in_atom),
                Some(existing) => {
                    let existing = scope.runtime(frame, existing, EntityKind::Synthetic)?;
                    frame.replace_synthetic(mutation, existing, &role, section, in_atom)
                }
            }
            .map(|()| 0)
        }
        Change::EraseSynthetic { mutation, synthetic } => {
            let mutation = mutation_of(scope, mutation, mutations)?;
            let synthetic = scope.runtime(frame, synthetic, EntityKind::Synthetic)?;
            frame.erase_synthetic(mutation, synthetic).map(|()| 0)
        }
    }
}

/// A handle that may be null: `None` when it is.
fn optional(handle: ffi::Handle) -> Option<ffi::Handle> {
    (handle != ffi::Handle::default()).then_some(handle)
}

/// The atom index a constraint's `SubjectID` names: the value of an atom handle of this scope.
fn subject_atom(frame: &PhaseFrame<'_>, scope: Scope, subject: u64) -> Result<u64, Status> {
    let owner = scope.entity(EntityKind::Atom, 0).owner;
    scope
        .entity_index(frame, ffi::Handle { owner, value: subject }, EntityKind::Atom)
        .map(|index| index as u64)
}

/// Sends a change through a task handle and answers with its status (and the handle it made).
fn change(task: ffi::TaskHandle, change: Change) -> (ffi::Status, ffi::Handle) {
    let mut value = ffi::Handle::default();
    let status = guarded(|| {
        let mut request = FrameRequest::Mutate { change, answer: None };
        if let Err(code) = ask(task.0, &mut request) {
            return c_status(code);
        }
        match request {
            FrameRequest::Mutate {
                answer: Some(Ok(made)), ..
            } => {
                value = made;
                OK
            }
            FrameRequest::Mutate {
                answer: Some(Err(status)),
                ..
            } => c_status(status.code),
            _ => c_status(StatusCode::InvalidState),
        }
    });
    (status, value)
}

/// `NevercLinkAPI.BeginMutation`: POLICY_VIOLATION in an observer, INVALID_STATE while one is open. The
/// graph handle is checked as the pagers check it.
pub(crate) extern "C" fn begin_mutation(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    graph: ffi::LinkGraphHandle,
    out: *mut ffi::LinkMutationHandle,
) -> ffi::Status {
    let (status, handle) = change(task, Change::Begin(graph.0));
    if status.code != OK.code {
        return status;
    }
    if write_plain(out, ffi::LinkMutationHandle(handle)).is_ok() {
        OK
    } else {
        // Nobody can name the mutation: it is abandoned at once.
        change(task, Change::Abandon(handle));
        c_status(StatusCode::InvalidArgument)
    }
}

/// `NevercLinkAPI.CommitMutation`.
pub(crate) extern "C" fn commit_mutation(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
) -> ffi::Status {
    change(task, Change::Commit(mutation.0)).0
}

/// `NevercLinkAPI.AbandonMutation`.
pub(crate) extern "C" fn abandon_mutation(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
) -> ffi::Status {
    change(task, Change::Abandon(mutation.0)).0
}

/// `NevercLinkAPI.RebindSymbol`.
pub(crate) extern "C" fn rebind_symbol(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
    symbol: ffi::LinkSymbolHandle,
    atom: ffi::LinkAtomHandle,
) -> ffi::Status {
    let change_of = Change::RebindSymbol {
        mutation: mutation.0,
        symbol: symbol.0,
        atom: atom.0,
    };
    change(task, change_of).0
}

/// `NevercLinkAPI.SetSymbolRoot`.
pub(crate) extern "C" fn set_symbol_root(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
    symbol: ffi::LinkSymbolHandle,
    root: ffi::Bool,
) -> ffi::Status {
    let change_of = Change::SetSymbolRoot {
        mutation: mutation.0,
        symbol: symbol.0,
        root: root != 0,
    };
    change(task, change_of).0
}

/// `NevercLinkAPI.SetAtomLive`: from GC_COMPLETE on, dropping an atom a live atom refers to is
/// VERIFICATION_FAILED at commit.
pub(crate) extern "C" fn set_atom_live(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
    atom: ffi::LinkAtomHandle,
    live: ffi::Bool,
) -> ffi::Status {
    let change_of = Change::SetAtomLive {
        mutation: mutation.0,
        atom: atom.0,
        live: live != 0,
    };
    change(task, change_of).0
}

/// `NevercLinkAPI.SetFoldLeader`: a null leader unfolds the atom.
pub(crate) extern "C" fn set_fold_leader(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
    atom: ffi::LinkAtomHandle,
    leader: ffi::LinkAtomHandle,
) -> ffi::Status {
    let change_of = Change::SetFoldLeader {
        mutation: mutation.0,
        atom: atom.0,
        leader: leader.0,
    };
    change(task, change_of).0
}

/// `NevercLinkAPI.ReplaceAtomContent`: the atom's bytes become `Content` followed by `ZeroFillSize` zero
/// bytes. A view that cannot be read (null with a length) or that, with the zero fill, is above 64 MiB is
/// INVALID_ARGUMENT.
pub(crate) extern "C" fn replace_atom_content(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
    atom: ffi::LinkAtomHandle,
    content: ffi::ByteView,
    zero_fill_size: u64,
) -> ffi::Status {
    let total = content
        .length
        .checked_add(zero_fill_size)
        .filter(|total| *total <= CONTENT_LIMIT);
    let Some(total) = total else {
        return c_status(StatusCode::InvalidArgument);
    };
    let Some(mut bytes) = copy_view(content.data, content.length, CONTENT_LIMIT as usize) else {
        return c_status(StatusCode::InvalidArgument);
    };
    bytes.resize(total as usize, 0);
    let change_of = Change::ReplaceAtomContent {
        mutation: mutation.0,
        atom: atom.0,
        bytes,
    };
    change(task, change_of).0
}

/// A constraint descriptor with its kind read: INVALID_ARGUMENT when either cannot be read (ABI_MISMATCH for
/// a short descriptor).
fn constraint_of(descriptor: *const ffi::LinkConstraintInfo) -> Result<(ffi::LinkConstraintInfo, String), StatusCode> {
    let descriptor = read_struct(descriptor)?;
    let kind = copy_view(descriptor.kind.data.cast(), descriptor.kind.length, KIND_LIMIT)
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or(StatusCode::InvalidArgument)?;
    Ok((descriptor, kind))
}

/// `NevercLinkAPI.CreateConstraint`: the descriptor's `SubjectID` is the value of the constrained atom's
/// handle (from a symbol's or atom's info); the new constraint's handle comes with the next generation, so
/// the one written out is null.
pub(crate) extern "C" fn create_constraint(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
    descriptor: *const ffi::LinkConstraintInfo,
    out: *mut ffi::LinkConstraintHandle,
) -> ffi::Status {
    let (descriptor, kind) = match constraint_of(descriptor) {
        Ok(read) => read,
        Err(code) => return c_status(code),
    };
    let (status, _) = change(
        task,
        Change::CreateConstraint {
            mutation: mutation.0,
            kind,
            subject: descriptor.subject_id,
            value: descriptor.value,
            required: descriptor.required != 0,
        },
    );
    let _ = write_plain(out, ffi::LinkConstraintHandle::default());
    status
}

/// `NevercLinkAPI.SetSymbolResolution`: the symbol's binding, visibility, definition and whether it prevails
/// and is exported become the update's. An update smaller than this host's, or with a value the ABI does not
/// declare, is INVALID_ARGUMENT (ABI_MISMATCH for the size).
pub(crate) extern "C" fn set_symbol_resolution(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
    symbol: ffi::LinkSymbolHandle,
    update: *const ffi::LinkSymbolResolutionUpdate,
) -> ffi::Status {
    use neverc_link::graph::{Binding, Definition, Visibility};
    let update = match read_struct(update) {
        Ok(update) => update,
        Err(code) => return c_status(code),
    };
    let values = (
        Binding::from_raw(update.binding),
        Visibility::from_raw(update.visibility),
        Definition::from_raw(update.definition),
    );
    let (Some(binding), Some(visibility), Some(definition)) = values else {
        return c_status(StatusCode::InvalidArgument);
    };
    let change_of = Change::SetSymbolResolution {
        mutation: mutation.0,
        symbol: symbol.0,
        update: neverc_link::frame::ResolutionUpdate {
            binding,
            visibility,
            definition,
            prevailing: update.is_prevailing != 0,
            exported: update.is_exported != 0,
        },
    };
    change(task, change_of).0
}

/// `NevercLinkAPI.RetargetEdge`: a null symbol or atom handle leaves the edge without one.
pub(crate) extern "C" fn retarget_edge(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
    edge: ffi::LinkEdgeHandle,
    symbol: ffi::LinkSymbolHandle,
    atom: ffi::LinkAtomHandle,
) -> ffi::Status {
    let change_of = Change::RetargetEdge {
        mutation: mutation.0,
        edge: edge.0,
        symbol: symbol.0,
        atom: atom.0,
    };
    change(task, change_of).0
}

/// The role, section and atom of a synthetic's descriptor, or INVALID_ARGUMENT (ABI_MISMATCH for a short one).
fn synthetic_of(descriptor: *const ffi::LinkSyntheticInfo) -> Result<(String, ffi::Handle, ffi::Handle), StatusCode> {
    let descriptor = read_struct(descriptor)?;
    let role = copy_view(descriptor.role.data.cast(), descriptor.role.length, KIND_LIMIT)
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .filter(|role| !role.is_empty())
        .ok_or(StatusCode::InvalidArgument)?;
    Ok((role, descriptor.section.0, descriptor.atom.0))
}

/// `NevercLinkAPI.CreateSynthetic`: a synthetic of the plugin's (its `Role` names what for); its handle comes
/// with the next generation, so the one written out is null.
pub(crate) extern "C" fn create_synthetic(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
    descriptor: *const ffi::LinkSyntheticInfo,
    out: *mut ffi::LinkSyntheticHandle,
) -> ffi::Status {
    let status = match synthetic_of(descriptor) {
        Ok((role, section, atom)) => {
            let change_of = Change::Synthetic {
                mutation: mutation.0,
                existing: None,
                role,
                section,
                atom,
            };
            change(task, change_of).0
        }
        Err(code) => c_status(code),
    };
    let _ = write_plain(out, ffi::LinkSyntheticHandle::default());
    status
}

/// `NevercLinkAPI.ReplaceSynthetic`: only a synthetic a plugin made; the linker's own are INVALID_ARGUMENT.
pub(crate) extern "C" fn replace_synthetic(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
    synthetic: ffi::LinkSyntheticHandle,
    descriptor: *const ffi::LinkSyntheticInfo,
) -> ffi::Status {
    match synthetic_of(descriptor) {
        Ok((role, section, atom)) => {
            let change_of = Change::Synthetic {
                mutation: mutation.0,
                existing: Some(synthetic.0),
                role,
                section,
                atom,
            };
            change(task, change_of).0
        }
        Err(code) => c_status(code),
    }
}

/// `NevercLinkAPI.EraseSynthetic`: only a synthetic a plugin made.
pub(crate) extern "C" fn erase_synthetic(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
    synthetic: ffi::LinkSyntheticHandle,
) -> ffi::Status {
    let change_of = Change::EraseSynthetic {
        mutation: mutation.0,
        synthetic: synthetic.0,
    };
    change(task, change_of).0
}

/// `NevercLinkAPI.ReplaceConstraint`: the descriptor's fields replace the constraint's (`SubjectID` as for
/// CreateConstraint).
pub(crate) extern "C" fn replace_constraint(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
    constraint: ffi::LinkConstraintHandle,
    descriptor: *const ffi::LinkConstraintInfo,
) -> ffi::Status {
    let (descriptor, kind) = match constraint_of(descriptor) {
        Ok(read) => read,
        Err(code) => return c_status(code),
    };
    let change_of = Change::ReplaceConstraint {
        mutation: mutation.0,
        constraint: constraint.0,
        kind,
        subject: descriptor.subject_id,
        value: descriptor.value,
        required: descriptor.required != 0,
    };
    change(task, change_of).0
}

/// `NevercLinkAPI.EraseConstraint`.
pub(crate) extern "C" fn erase_constraint(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
    constraint: ffi::LinkConstraintHandle,
) -> ffi::Status {
    let change_of = Change::EraseConstraint {
        mutation: mutation.0,
        constraint: constraint.0,
    };
    change(task, change_of).0
}
