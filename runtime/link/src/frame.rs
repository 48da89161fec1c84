//! What a plugin sees while a phase runs: a frame over the link context. Entities are named by typed,
//! task-scoped, generation-checked handles; every kind can be paged with a caller-owned buffer and a cursor;
//! mutations are staged, classified by the declared invalidation table, verified and committed as deltas.
//! Observers get read-only frames: their mutation attempts fail with `POLICY_VIOLATION`.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use neverc_tables::generated::state_machines::link::{Operation as DeclaredOperation, State as LinkState};
use neverc_tables::{PhaseRecord, StateMachineRecord};

use crate::context::LinkContext;
use crate::graph::{AtomId, Constraint, Content, EntityKind, LinkGraph, Origin, SectionId, SymbolId, atom_flags};
use crate::status::{Status, StatusCode};

/// A reference to one entity of one link at one generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Handle {
    pub kind: EntityKind,
    pub index: u32,
    pub generation: u64,
    pub session: u64,
}

/// One page of handles: how many were written, where the next page starts, whether there is one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    pub count: usize,
    pub next_cursor: u64,
    pub has_more: bool,
}

/// A proof that the graph reached a state: valid while nothing has changed since (same generation and
/// semantic digest, same target, format, image base and entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Proof {
    pub state: u32,
    pub generation: u64,
    pub semantic_digest: [u64; 2],
    pub target: u32,
    pub format: u32,
    pub image_base: u64,
    pub entry: u64,
}

/// What a frame allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameMode {
    /// Observers: reading only.
    ReadOnly,
    /// Interceptors and providers: reading, mutating, publishing products.
    Mutable,
}

/// What `SetSymbolResolution` changes about a symbol in NeverC's link API
/// (`NevercLinkSymbolResolutionUpdate`): its resolution facts, and nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResolutionUpdate {
    pub binding: crate::graph::Binding,
    pub visibility: crate::graph::Visibility,
    pub definition: crate::graph::Definition,
    pub prevailing: bool,
    pub exported: bool,
}

/// A staged graph change, named as NeverC's link API names the call.
#[derive(Clone, Debug)]
enum Operation {
    RebindSymbol(SymbolId, AtomId),
    SetSymbolResolution(SymbolId, Option<SymbolId>),
    /// SetSymbolResolution as the plugin ABI spells it: the symbol's resolution facts.
    UpdateSymbolResolution(SymbolId, ResolutionUpdate),
    SetSymbolRoot(SymbolId, bool),
    SetAtomLive(AtomId, bool),
    SetFoldLeader(AtomId, Option<AtomId>),
    ReplaceAtomContent(AtomId, Arc<[u8]>),
    CreateConstraint(Constraint),
    /// An edge pointed at another symbol and atom (either may be none).
    RetargetEdge(usize, Option<SymbolId>, Option<AtomId>),
    /// A plugin's synthetic: its role, section and atom.
    CreateSynthetic(String, Option<SectionId>, Option<AtomId>),
    ReplaceSynthetic(usize, String, Option<SectionId>, Option<AtomId>),
    EraseSynthetic(usize),
    ReplaceConstraint(usize, Constraint),
    EraseConstraint(usize),
}

/// The declared operations a plugin can stage (each has a method of [`PhaseFrame`]), in the order of
/// the variants of the staged `Operation`.
pub const STAGING_OPERATIONS: [DeclaredOperation; 13] = [
    DeclaredOperation::RebindSymbol,
    DeclaredOperation::SetSymbolResolution,
    DeclaredOperation::SetSymbolRoot,
    DeclaredOperation::SetAtomLive,
    DeclaredOperation::SetFoldLeader,
    DeclaredOperation::ReplaceAtomContent,
    DeclaredOperation::CreateConstraint,
    DeclaredOperation::RetargetEdge,
    DeclaredOperation::CreateSynthetic,
    DeclaredOperation::ReplaceSynthetic,
    DeclaredOperation::EraseSynthetic,
    DeclaredOperation::ReplaceConstraint,
    DeclaredOperation::EraseConstraint,
];

impl Operation {
    /// The declared operation this is.
    const fn declared(&self) -> DeclaredOperation {
        match self {
            Operation::RebindSymbol(..) => DeclaredOperation::RebindSymbol,
            Operation::SetSymbolResolution(..) | Operation::UpdateSymbolResolution(..) => {
                DeclaredOperation::SetSymbolResolution
            }
            Operation::SetSymbolRoot(..) => DeclaredOperation::SetSymbolRoot,
            Operation::SetAtomLive(..) => DeclaredOperation::SetAtomLive,
            Operation::SetFoldLeader(..) => DeclaredOperation::SetFoldLeader,
            Operation::ReplaceAtomContent(..) => DeclaredOperation::ReplaceAtomContent,
            Operation::CreateConstraint(..) => DeclaredOperation::CreateConstraint,
            Operation::RetargetEdge(..) => DeclaredOperation::RetargetEdge,
            Operation::CreateSynthetic(..) => DeclaredOperation::CreateSynthetic,
            Operation::ReplaceSynthetic(..) => DeclaredOperation::ReplaceSynthetic,
            Operation::EraseSynthetic(..) => DeclaredOperation::EraseSynthetic,
            Operation::ReplaceConstraint(..) => DeclaredOperation::ReplaceConstraint,
            Operation::EraseConstraint(..) => DeclaredOperation::EraseConstraint,
        }
    }

    /// The operation's name in the declared mutation classes.
    const fn name(&self) -> &'static str {
        self.declared().name()
    }
}

/// An open mutation (at most one per frame).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mutation(u64);

/// The link's execution state that frames read and change.
#[derive(Clone, Debug)]
pub struct ExecutionState {
    pub state: u32,
    pub generation: u64,
    pub session: u64,
    next_mutation: u64,
    /// The lowest state a commit sent execution back to since the driver last cleared it (`u32::MAX` if
    /// none): the driver tells "lowered to the start state" from "not lowered" with it.
    pub(crate) lowered_to: u32,
}

impl ExecutionState {
    pub fn new(session: u64) -> ExecutionState {
        ExecutionState {
            state: 0,
            generation: 0,
            session,
            next_mutation: 1,
            lowered_to: u32::MAX,
        }
    }
}

/// A plugin's view of a running phase.
pub struct PhaseFrame<'a> {
    pub(crate) context: &'a mut LinkContext,
    pub(crate) execution: &'a mut ExecutionState,
    pub(crate) machine: &'static StateMachineRecord,
    pub(crate) phase: &'static PhaseRecord,
    pub(crate) phase_index: u16,
    pub(crate) plugin: u32,
    pub(crate) mode: FrameMode,
    staged: Option<(Mutation, Vec<Operation>)>,
}

/// Which phase of which state machine a frame runs in.
#[derive(Clone, Copy)]
pub(crate) struct PhaseSite {
    pub(crate) machine: &'static StateMachineRecord,
    pub(crate) phase: &'static PhaseRecord,
    pub(crate) index: u16,
}

impl<'a> PhaseFrame<'a> {
    pub(crate) fn new(
        context: &'a mut LinkContext,
        execution: &'a mut ExecutionState,
        site: PhaseSite,
        plugin: u32,
        mode: FrameMode,
    ) -> PhaseFrame<'a> {
        PhaseFrame {
            context,
            execution,
            machine: site.machine,
            phase: site.phase,
            phase_index: site.index,
            plugin,
            mode,
            staged: None,
        }
    }

    /// The phase being run (`neverc.link.layout`).
    pub fn phase(&self) -> &'static str {
        self.phase.name
    }

    /// The graph's state, by name.
    pub fn state(&self) -> &'static str {
        self.machine
            .states
            .get(self.execution.state as usize)
            .copied()
            .unwrap_or("?")
    }

    pub fn generation(&self) -> u64 {
        self.execution.generation
    }

    /// The link's session: every handle of this link carries it.
    pub fn session(&self) -> u64 {
        self.execution.session
    }

    /// The graph, for ordinary iteration (handles and pages are the checked way to name entities).
    pub fn graph(&self) -> &LinkGraph {
        &self.context.graph
    }

    /// The link context (options and products), read-only.
    pub fn context(&self) -> &LinkContext {
        self.context
    }

    /// A handle for entity `index` of `kind`, valid in the current generation.
    pub fn handle(&self, kind: EntityKind, index: usize) -> Result<Handle, Status> {
        if index >= self.context.graph.count(kind) {
            return Err(Status::new(
                StatusCode::InvalidArgument,
                format!("there is no {} {index}", kind.name()),
            ));
        }
        Ok(Handle {
            kind,
            index: index as u32,
            generation: self.execution.generation,
            session: self.execution.session,
        })
    }

    /// The entity index a handle names, if it is of `kind`, of this link, current and in range.
    pub fn resolve(&self, handle: Handle, kind: EntityKind) -> Result<usize, Status> {
        if handle.session != self.execution.session {
            return Err(Status::new(
                StatusCode::WrongSession,
                "the handle belongs to another link",
            ));
        }
        if handle.kind != kind {
            return Err(Status::new(
                StatusCode::WrongType,
                format!("expected a {} handle, got a {} handle", kind.name(), handle.kind.name()),
            ));
        }
        if handle.generation != self.execution.generation {
            return Err(Status::new(
                StatusCode::StaleHandle,
                format!(
                    "the {} handle is from generation {}, the graph is at generation {}",
                    kind.name(),
                    handle.generation,
                    self.execution.generation
                ),
            ));
        }
        let index = handle.index as usize;
        if index >= self.context.graph.count(kind) {
            return Err(Status::new(
                StatusCode::StaleHandle,
                format!("no {} {index} exists (a forged handle)", kind.name()),
            ));
        }
        Ok(index)
    }

    /// Fills `out` with handles of `kind` from `cursor` on (NeverC's page semantics: the caller owns the
    /// buffer; its length is the capacity).
    pub fn page(&self, kind: EntityKind, cursor: u64, out: &mut [Handle]) -> Result<Page, Status> {
        let total = self.context.graph.count(kind) as u64;
        if cursor > total {
            return Err(Status::new(
                StatusCode::InvalidArgument,
                format!("cursor {cursor} is past the end ({total})"),
            ));
        }
        let count = out.len().min((total - cursor) as usize);
        for (offset, slot) in out.iter_mut().take(count).enumerate() {
            *slot = Handle {
                kind,
                index: (cursor as usize + offset) as u32,
                generation: self.execution.generation,
                session: self.execution.session,
            };
        }
        let next_cursor = cursor + count as u64;
        Ok(Page {
            count,
            next_cursor,
            has_more: next_cursor < total,
        })
    }

    /// The LTO resolution a handle names (page them with [`EntityKind::LtoResolution`]), with the name of its
    /// symbol.
    pub fn lto_resolution(&self, handle: Handle) -> Result<(&crate::lto::LtoResolution, &str), Status> {
        let index = self.resolve(handle, EntityKind::LtoResolution)?;
        let graph = &self.context.graph;
        let resolution = &graph.lto_resolutions[index];
        let name = graph
            .bitcode_modules
            .get(resolution.module.index())
            .and_then(|module| module.symbols.get(resolution.symbol as usize))
            .map_or("", |symbol| symbol.name.as_str());
        Ok((resolution, name))
    }

    /// The proof of the current state, from the declared proof state on.
    pub fn proof(&self) -> Option<Proof> {
        (self.execution.state >= self.machine.proof_state).then(|| current_proof(self.context, self.execution))
    }

    /// Opens a mutation. Observers may not: `POLICY_VIOLATION`.
    pub fn begin_mutation(&mut self) -> Result<Mutation, Status> {
        if self.mode == FrameMode::ReadOnly {
            return Err(Status::new(
                StatusCode::PolicyViolation,
                format!("observers of {} may not mutate the graph", self.phase.name),
            ));
        }
        if self.staged.is_some() {
            return Err(Status::new(StatusCode::InvalidState, "a mutation is already open"));
        }
        let mutation = Mutation(self.execution.next_mutation);
        self.execution.next_mutation += 1;
        self.staged = Some((mutation, Vec::new()));
        Ok(mutation)
    }

    fn stage(&mut self, mutation: Mutation, operation: Operation) -> Result<(), Status> {
        match &mut self.staged {
            Some((open, operations)) if *open == mutation => {
                operations.push(operation);
                Ok(())
            }
            _ => Err(Status::new(StatusCode::InvalidState, "no such open mutation")),
        }
    }

    pub fn rebind_symbol(&mut self, mutation: Mutation, symbol: Handle, atom: Handle) -> Result<(), Status> {
        let symbol = SymbolId(self.resolve(symbol, EntityKind::Symbol)? as u32);
        let atom = AtomId(self.resolve(atom, EntityKind::Atom)? as u32);
        self.stage(mutation, Operation::RebindSymbol(symbol, atom))
    }

    /// Makes `prevailing` the symbol that `symbol` resolves to (or none).
    pub fn set_symbol_resolution(
        &mut self,
        mutation: Mutation,
        symbol: Handle,
        prevailing: Option<Handle>,
    ) -> Result<(), Status> {
        let symbol = SymbolId(self.resolve(symbol, EntityKind::Symbol)? as u32);
        let prevailing = match prevailing {
            Some(prevailing) => Some(SymbolId(self.resolve(prevailing, EntityKind::Symbol)? as u32)),
            None => None,
        };
        self.stage(mutation, Operation::SetSymbolResolution(symbol, prevailing))
    }

    /// Sets `symbol`'s binding, visibility, definition and whether it prevails and is exported (the plugin
    /// ABI's `SetSymbolResolution`).
    pub fn update_symbol_resolution(
        &mut self,
        mutation: Mutation,
        symbol: Handle,
        update: ResolutionUpdate,
    ) -> Result<(), Status> {
        let symbol = SymbolId(self.resolve(symbol, EntityKind::Symbol)? as u32);
        self.stage(mutation, Operation::UpdateSymbolResolution(symbol, update))
    }

    pub fn set_symbol_root(&mut self, mutation: Mutation, symbol: Handle, root: bool) -> Result<(), Status> {
        let symbol = SymbolId(self.resolve(symbol, EntityKind::Symbol)? as u32);
        self.stage(mutation, Operation::SetSymbolRoot(symbol, root))
    }

    pub fn set_atom_live(&mut self, mutation: Mutation, atom: Handle, live: bool) -> Result<(), Status> {
        let atom = AtomId(self.resolve(atom, EntityKind::Atom)? as u32);
        self.stage(mutation, Operation::SetAtomLive(atom, live))
    }

    pub fn set_fold_leader(&mut self, mutation: Mutation, atom: Handle, leader: Option<Handle>) -> Result<(), Status> {
        let atom = AtomId(self.resolve(atom, EntityKind::Atom)? as u32);
        let leader = match leader {
            Some(leader) => Some(AtomId(self.resolve(leader, EntityKind::Atom)? as u32)),
            None => None,
        };
        self.stage(mutation, Operation::SetFoldLeader(atom, leader))
    }

    pub fn replace_atom_content(&mut self, mutation: Mutation, atom: Handle, bytes: &[u8]) -> Result<(), Status> {
        let atom = AtomId(self.resolve(atom, EntityKind::Atom)? as u32);
        self.stage(mutation, Operation::ReplaceAtomContent(atom, Arc::from(bytes)))
    }

    /// A layout constraint; `order` puts atom `subject` at position `value` of its output section.
    pub fn create_constraint(
        &mut self,
        mutation: Mutation,
        kind: &str,
        subject: u64,
        value: u64,
        required: bool,
    ) -> Result<(), Status> {
        let constraint = Constraint {
            kind: kind.to_string(),
            subject,
            value,
            required,
            origin: Origin::default(),
        };
        self.stage(mutation, Operation::CreateConstraint(constraint))
    }

    /// Points `edge` at `symbol` and `atom` (either may be none).
    pub fn retarget_edge(
        &mut self,
        mutation: Mutation,
        edge: Handle,
        symbol: Option<Handle>,
        atom: Option<Handle>,
    ) -> Result<(), Status> {
        let edge = self.resolve(edge, EntityKind::Edge)?;
        let symbol = match symbol {
            Some(symbol) => Some(SymbolId(self.resolve(symbol, EntityKind::Symbol)? as u32)),
            None => None,
        };
        let atom = match atom {
            Some(atom) => Some(AtomId(self.resolve(atom, EntityKind::Atom)? as u32)),
            None => None,
        };
        self.stage(mutation, Operation::RetargetEdge(edge, symbol, atom))
    }

    /// A synthetic made by a plugin (`role` names what for), with its section and atom if it has them.
    pub fn create_synthetic(
        &mut self,
        mutation: Mutation,
        role: &str,
        section: Option<Handle>,
        atom: Option<Handle>,
    ) -> Result<(), Status> {
        let (section, atom) = self.synthetic_parts(section, atom)?;
        self.stage(mutation, Operation::CreateSynthetic(role.to_string(), section, atom))
    }

    /// Replaces a synthetic a plugin made; the linker's own (GOT and PLT entries, linker-defined symbols) are
    /// INVALID_ARGUMENT.
    pub fn replace_synthetic(
        &mut self,
        mutation: Mutation,
        synthetic: Handle,
        role: &str,
        section: Option<Handle>,
        atom: Option<Handle>,
    ) -> Result<(), Status> {
        let synthetic = self.plugin_synthetic(synthetic)?;
        let (section, atom) = self.synthetic_parts(section, atom)?;
        self.stage(
            mutation,
            Operation::ReplaceSynthetic(synthetic, role.to_string(), section, atom),
        )
    }

    /// Erases a synthetic a plugin made; the linker's own are INVALID_ARGUMENT.
    pub fn erase_synthetic(&mut self, mutation: Mutation, synthetic: Handle) -> Result<(), Status> {
        let synthetic = self.plugin_synthetic(synthetic)?;
        self.stage(mutation, Operation::EraseSynthetic(synthetic))
    }

    /// Replaces a layout constraint.
    pub fn replace_constraint(
        &mut self,
        mutation: Mutation,
        constraint: Handle,
        kind: &str,
        subject: u64,
        value: u64,
        required: bool,
    ) -> Result<(), Status> {
        let index = self.resolve(constraint, EntityKind::Constraint)?;
        let replacement = Constraint {
            kind: kind.to_string(),
            subject,
            value,
            required,
            origin: Origin::default(),
        };
        self.stage(mutation, Operation::ReplaceConstraint(index, replacement))
    }

    /// Erases a layout constraint.
    pub fn erase_constraint(&mut self, mutation: Mutation, constraint: Handle) -> Result<(), Status> {
        let index = self.resolve(constraint, EntityKind::Constraint)?;
        self.stage(mutation, Operation::EraseConstraint(index))
    }

    fn synthetic_parts(
        &self,
        section: Option<Handle>,
        atom: Option<Handle>,
    ) -> Result<(Option<SectionId>, Option<AtomId>), Status> {
        let section = match section {
            Some(section) => Some(SectionId(self.resolve(section, EntityKind::Section)? as u32)),
            None => None,
        };
        let atom = match atom {
            Some(atom) => Some(AtomId(self.resolve(atom, EntityKind::Atom)? as u32)),
            None => None,
        };
        Ok((section, atom))
    }

    /// The index of a synthetic a plugin made.
    fn plugin_synthetic(&self, synthetic: Handle) -> Result<usize, Status> {
        let index = self.resolve(synthetic, EntityKind::Synthetic)?;
        match self.context.graph.synthetics.get(index).map(|entry| &entry.role) {
            Some(crate::graph::SyntheticRole::Plugin(_)) => Ok(index),
            _ => Err(Status::new(
                StatusCode::InvalidArgument,
                "only a synthetic a plugin made may be replaced or erased",
            )),
        }
    }

    /// Drops a staged mutation.
    pub fn abandon_mutation(&mut self, mutation: Mutation) -> Result<(), Status> {
        match &self.staged {
            Some((open, _)) if *open == mutation => {
                self.staged = None;
                Ok(())
            }
            _ => Err(Status::new(StatusCode::InvalidState, "no such open mutation")),
        }
    }

    /// Verifies the staged change against the current state's verifier and applies it: the state drops to
    /// `min(state, earliest invalidated - 1)` and the generation advances (every handle becomes stale). A
    /// change the verifier rejects is not applied (`VERIFICATION_FAILED`). The cost is that of the change.
    pub fn commit_mutation(&mut self, mutation: Mutation) -> Result<(), Status> {
        let operations = match self.staged.take() {
            Some((open, operations)) if open == mutation => operations,
            other => {
                self.staged = other;
                return Err(Status::new(StatusCode::InvalidState, "no such open mutation"));
            }
        };
        let mut earliest = u32::MAX;
        for operation in &operations {
            let class = self.machine.class_of_operation(operation.name()).ok_or_else(|| {
                Status::new(
                    StatusCode::InvalidState,
                    format!("operation {} has no declared invalidation class", operation.name()),
                )
            })?;
            earliest = earliest.min(class.earliest_invalidated);
        }
        verify_change(self.context, self.execution.state, self.machine, &operations)?;
        self.context.invalidate_edge_index();
        let origin_phase = Some(self.phase_index);
        let plugin = self.plugin;
        let touched = |origin: &mut Origin| {
            origin.set_last_mutation_phase(origin_phase);
            origin.last_mutation_plugin = plugin;
        };
        let graph = &mut self.context.graph;
        let (mut erased_synthetics, mut erased_constraints) = (Vec::new(), Vec::new());
        for operation in operations {
            match operation {
                Operation::RebindSymbol(symbol, atom) => {
                    let entry = &mut graph.symbols[symbol.index()];
                    entry.atom = Some(atom);
                    touched(&mut entry.origin);
                }
                Operation::SetSymbolResolution(symbol, prevailing) => {
                    let entry = &mut graph.symbols[symbol.index()];
                    entry.resolution = prevailing;
                    touched(&mut entry.origin);
                }
                Operation::UpdateSymbolResolution(symbol, update) => {
                    let entry = &mut graph.symbols[symbol.index()];
                    entry.binding = update.binding;
                    entry.visibility = update.visibility;
                    entry.definition = update.definition;
                    entry.prevailing = update.prevailing;
                    entry.exported = update.exported;
                    touched(&mut entry.origin);
                }
                Operation::SetSymbolRoot(symbol, root) => {
                    let entry = &mut graph.symbols[symbol.index()];
                    entry.root = root;
                    touched(&mut entry.origin);
                }
                Operation::SetAtomLive(atom, live) => {
                    let entry = &mut graph.atoms[atom.index()];
                    if live {
                        entry.flags |= atom_flags::LIVE;
                    } else {
                        entry.flags &= !atom_flags::LIVE;
                    }
                    touched(&mut entry.origin);
                }
                Operation::SetFoldLeader(atom, leader) => {
                    let entry = &mut graph.atoms[atom.index()];
                    entry.fold_leader = leader;
                    // As `icf` folds: the flag is what relocation and layout go by.
                    if leader.is_some() {
                        entry.flags |= atom_flags::FOLDED;
                    } else {
                        entry.flags &= !atom_flags::FOLDED;
                    }
                    touched(&mut entry.origin);
                }
                Operation::ReplaceAtomContent(atom, bytes) => {
                    let entry = &mut graph.atoms[atom.index()];
                    entry.content = Content::Owned(bytes);
                    touched(&mut entry.origin);
                }
                Operation::CreateConstraint(mut constraint) => {
                    constraint.origin = Origin::made(None, None, 0, origin_phase).with_provider(self.plugin);
                    graph.constraints.push(constraint);
                }
                Operation::RetargetEdge(edge, symbol, atom) => {
                    let entry = &mut graph.edges[edge];
                    entry.target_symbol = (symbol).into();
                    entry.target_atom = (atom).into();
                    touched(&mut entry.origin);
                }
                Operation::CreateSynthetic(role, section, atom) => {
                    graph.synthetics.push(crate::graph::Synthetic {
                        role: crate::graph::SyntheticRole::Plugin(role),
                        section,
                        atom,
                        origin: Origin::made(None, None, 0, origin_phase).with_provider(self.plugin),
                    });
                }
                Operation::ReplaceSynthetic(index, role, section, atom) => {
                    let entry = &mut graph.synthetics[index];
                    entry.role = crate::graph::SyntheticRole::Plugin(role);
                    entry.section = section;
                    entry.atom = atom;
                    touched(&mut entry.origin);
                }
                Operation::ReplaceConstraint(index, replacement) => {
                    let entry = &mut graph.constraints[index];
                    entry.kind = replacement.kind;
                    entry.subject = replacement.subject;
                    entry.value = replacement.value;
                    entry.required = replacement.required;
                    touched(&mut entry.origin);
                }
                // Erasures are applied last, so that the indexes the other operations name still hold.
                Operation::EraseSynthetic(index) => erased_synthetics.push(index),
                Operation::EraseConstraint(index) => erased_constraints.push(index),
            }
        }
        erased_synthetics.sort_unstable();
        erased_synthetics.dedup();
        for index in erased_synthetics.into_iter().rev() {
            graph.synthetics.remove(index);
        }
        erased_constraints.sort_unstable();
        erased_constraints.dedup();
        for index in erased_constraints.into_iter().rev() {
            graph.constraints.remove(index);
        }
        if earliest != u32::MAX {
            let lowered = earliest.saturating_sub(1);
            self.execution.state = self.execution.state.min(lowered);
            self.execution.lowered_to = self.execution.lowered_to.min(lowered);
        }
        self.execution.generation += 1;
        Ok(())
    }

    /// Replaces the relocated section contents (a provider, or a plugin that skips `relocate` with a proof,
    /// publishes the phase's product this way).
    pub fn publish_section_bytes(&mut self, bytes: Vec<crate::image::SparseBytes>) -> Result<(), Status> {
        if self.mode == FrameMode::ReadOnly {
            return Err(Status::new(
                StatusCode::PolicyViolation,
                format!("observers of {} may not publish products", self.phase.name),
            ));
        }
        self.context.set_section_bytes(bytes);
        Ok(())
    }
}

impl PhaseFrame<'_> {
    /// Publishes a finished image (a linker provider replacing `full` does); the sealed gates still check
    /// and commit it.
    pub fn publish_image(
        &mut self,
        bytes: crate::image::SparseBytes,
        layout: crate::image::ImageLayout,
    ) -> Result<(), Status> {
        if self.mode == FrameMode::ReadOnly {
            return Err(Status::new(
                StatusCode::PolicyViolation,
                format!("observers of {} may not publish products", self.phase.name),
            ));
        }
        self.context.set_image(bytes, Some(layout));
        Ok(())
    }

    /// Publishes a merged relocatable object (an object-merge provider does, for `-r`).
    pub fn publish_object(&mut self, bytes: Vec<u8>) -> Result<(), Status> {
        if self.mode == FrameMode::ReadOnly {
            return Err(Status::new(
                StatusCode::PolicyViolation,
                format!("observers of {} may not publish products", self.phase.name),
            ));
        }
        self.context.set_image(bytes.into(), None);
        Ok(())
    }
}

/// The verifier of the current state, run over a staged change before it is applied. From GC_COMPLETE on,
/// an atom may not be made dead while a live atom refers to it; unwind tables do not count, as for `gc`
/// (a function's unwind record does not keep the function alive).
fn verify_change(
    context: &LinkContext,
    state: u32,
    machine: &StateMachineRecord,
    operations: &[Operation],
) -> Result<(), Status> {
    // `run_link` refuses a machine without the state; should one get here anyway, verify from the start.
    let gc_complete = machine.state_by_name(LinkState::GcComplete.name()).unwrap_or(0);
    if state < gc_complete {
        return Ok(());
    }
    let graph = &context.graph;
    for operation in operations {
        if let Operation::SetAtomLive(atom, false) = operation {
            let referrer = context
                .incoming_edges(*atom)
                .iter()
                .map(|edge| &graph.edges[edge.index()])
                .find(|edge| {
                    let source = &graph.atoms[edge.source.index()];
                    edge.source != *atom && source.is_live() && source.flags & atom_flags::UNWIND == 0
                });
            if let Some(edge) = referrer {
                return Err(Status::new(
                    StatusCode::VerificationFailed,
                    format!(
                        "{} verifier: the mutation would orphan live atom `{}` ({}), referred to by live atom `{}` ({})",
                        machine.states.get(state as usize).copied().unwrap_or("?"),
                        graph.atoms[atom.index()].name,
                        graph.input_name(graph.atoms[atom.index()].origin.input()),
                        graph.atoms[edge.source.index()].name,
                        graph.input_name(graph.atoms[edge.source.index()].origin.input()),
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The proof of the current state: what it pins, with a digest of the inputs and options. The inputs are
/// hashed once per link ([`LinkContext::input_digest`]); each call hashes only the options on top.
pub(crate) fn current_proof(context: &LinkContext, execution: &ExecutionState) -> Proof {
    let mut digests = [0u64; 2];
    for (digest, mut hasher) in digests.iter_mut().zip(context.input_digest()) {
        context.options.entry.hash(&mut hasher);
        context.options.gc_sections.hash(&mut hasher);
        (context.options.icf as u8).hash(&mut hasher);
        context.options.image_base.hash(&mut hasher);
        context.graph.constraints.len().hash(&mut hasher);
        *digest = hasher.finish();
    }
    // The link target's ELF machine (`e_machine`), as its file declares it; 0 before the target is known.
    let machine = context.graph.machine().map_or(0, |machine| u32::from(machine.0));
    Proof {
        state: execution.state,
        generation: execution.generation,
        semantic_digest: digests,
        target: machine,
        format: 1,
        image_base: context.options.image_base,
        entry: context.layout().map_or(0, |layout| layout.entry),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::LinkOptions;
    use crate::graph::LinkTarget;

    #[test]
    fn the_proof_names_the_link_targets_declared_machine_as_its_elf_number() {
        for target in neverc_tables::generated::targets::TARGETS {
            let mut context = LinkContext::new(LinkOptions::new(Vec::new(), "out".into()));
            context.graph.target = LinkTarget::Fixed { target, set_by: None };
            let proof = current_proof(&context, &ExecutionState::new(1));
            let declared = target.elf.map_or(0, |elf| u32::from(elf.machine));
            assert_eq!(proof.target, declared, "{}", target.name);
        }
        // Before the target is known, the machine is EM_NONE.
        let context = LinkContext::new(LinkOptions::new(Vec::new(), "out".into()));
        assert_eq!(current_proof(&context, &ExecutionState::new(1)).target, 0);
    }
}
