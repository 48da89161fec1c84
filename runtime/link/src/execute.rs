//! The executor: runs the link state machine of a phase table. The transition whose input state equals the
//! graph's state runs — its BEFORE observers, then its interceptors (a chain, outermost first registered,
//! each continuation callable once) around a replacing provider or the builtin, then its AFTER observers;
//! a skip request with a valid proof skips the work. A mutation that lowers the state sends execution back
//! through the earlier transitions; every run counts against the transition's declared rerun budget.
//! After the final state the finalization phases run in declared order. A plugin that panics is contained.
//! States, transitions, budgets and the finalization chain come only from the tables.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use neverc_tables::policy::policy_names;
use neverc_tables::{PhaseTables, StateMachineRecord};

use crate::context::{LinkContext, PhaseError};
use crate::frame::{ExecutionState, FrameMode, PhaseFrame, PhaseSite, current_proof};
use crate::phases::{LinkPhase, builtin_for};
use crate::plugin::{Hook, Interceptor, ObserverPoint, Provider, Registry};
use crate::status::{Status, StatusCode};
use neverc_tables::generated::phases::link::DOMAIN as LINK_DOMAIN;
use neverc_tables::generated::state_machines::link::State as LinkState;

/// NeverC's error when no transition leaves the current state.
pub const NO_TRANSITION: &str = "LinkGraph state has no registered outgoing transition";
/// NeverC's error when a transition runs more often than its budget allows.
pub const DID_NOT_CONVERGE: &str = "Link transition did not converge within its rerun budget";

/// Who did a phase's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Actor {
    Builtin,
    Provider,
    /// An interceptor returned without running the rest of the chain.
    Interceptor,
    SkippedWithProof,
    /// A structural phase the link did not ask for (`object_merge` without `-r`).
    NotRequested,
}

impl Actor {
    pub const fn name(self) -> &'static str {
        match self {
            Actor::Builtin => "builtin",
            Actor::Provider => "provider",
            Actor::Interceptor => "interceptor",
            Actor::SkippedWithProof => "skipped with proof",
            Actor::NotRequested => "not requested",
        }
    }
}

/// One line of `--trace-phases`.
#[derive(Clone, Debug)]
pub struct TraceEntry {
    pub phase: &'static str,
    pub policy: String,
    pub actor: Actor,
    /// Interceptors wrapped the work.
    pub intercepted: bool,
    pub state_before: &'static str,
    pub state_after: &'static str,
    pub duration: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("the phase schema declares no link state machine")]
    NoStateMachine,
    #[error("{NO_TRANSITION} (state {0})")]
    NoTransition(&'static str),
    #[error("{DID_NOT_CONVERGE}: {0}")]
    DidNotConverge(&'static str),
    #[error("phase {0} has no builtin implementation")]
    NoBuiltin(&'static str),
    #[error("the link state machine declares no state {0}, which the builtin verifiers need")]
    MissingState(&'static str),
    #[error(transparent)]
    Phase(#[from] PhaseError),
    #[error("{phase}: {status}")]
    Plugin { phase: &'static str, status: Status },
}

impl LinkError {
    /// NeverC's status code for the failure.
    pub fn code(&self) -> StatusCode {
        match self {
            LinkError::Plugin { status, .. } => status.code,
            LinkError::DidNotConverge(_) | LinkError::NoTransition(_) => StatusCode::InvalidState,
            LinkError::Phase(error) if error.phase == LinkPhase::ImageVerify => StatusCode::VerificationFailed,
            _ => StatusCode::InvalidState,
        }
    }
}

/// The link state machine of `tables`.
pub fn link_state_machine(tables: &'static PhaseTables) -> Option<&'static StateMachineRecord> {
    tables
        .state_machines
        .iter()
        .find(|machine| machine.domain == LINK_DOMAIN)
}

/// Links are numbered so that handles of one link are refused by another.
static SESSIONS: AtomicU64 = AtomicU64::new(1);

/// Runs the whole link with the registered plugins. Returns the trace.
pub fn run_link(
    context: &mut LinkContext,
    tables: &'static PhaseTables,
    registry: &mut Registry,
) -> Result<Vec<TraceEntry>, LinkError> {
    let machine = link_state_machine(tables).ok_or(LinkError::NoStateMachine)?;
    let started = Instant::now();
    // The builtin verifiers check liveness from GC_COMPLETE on; a machine without it cannot run them.
    if machine.state_by_name(LinkState::GcComplete.name()).is_none() {
        return Err(LinkError::MissingState(LinkState::GcComplete.name()));
    }
    let full = LinkPhase::Full.index_in(tables);
    let full_provider = full.is_some_and(|full| {
        registry
            .registrations
            .iter()
            .any(|registration| registration.phase == full && matches!(registration.hook, Hook::Replace(_)))
    });
    let merge = LinkPhase::ObjectMerge.index_in(tables);
    let relocatable = context.options.output_kind == crate::output_kind::OutputKind::Relocatable;
    // The LTO code generators plugins registered reach the builtin `lto_generate` through the context.
    context.lto.providers.clone_from(&registry.lto_code_generators);
    let mut run = Run {
        context,
        registry,
        tables,
        machine,
        execution: ExecutionState::new(SESSIONS.fetch_add(1, Ordering::Relaxed)),
        trace: Vec::new(),
    };
    if relocatable {
        // `-r`: the builtin `object_merge` (or a provider that replaces it) reads the inputs and merges them into
        // one relocatable object; the transitions of a static link do not run.
        let merge = merge.ok_or(LinkError::NoBuiltin(LinkPhase::ObjectMerge.name()))?;
        run_phase(&mut run, merge)?;
        run.execution.state = machine.final_state();
    } else if let (true, Some(full)) = (full_provider, full) {
        // A linker provider does the whole link; the sealed gates below still run.
        run_phase(&mut run, full)?;
        run.execution.state = machine.final_state();
    } else {
        let mut runs = vec![0u32; machine.transitions.len()];
        while run.execution.state < machine.final_state() {
            let state = run.execution.state;
            let (index, transition) = machine
                .transitions
                .iter()
                .enumerate()
                .find(|(_, transition)| transition.from == state)
                .ok_or(LinkError::NoTransition(state_name(machine, state)))?;
            runs[index] += 1;
            if runs[index] > transition.rerun_budget.saturating_add(1) {
                return Err(LinkError::DidNotConverge(tables.phases[transition.phase].name));
            }
            run.execution.lowered_to = u32::MAX;
            run_phase(&mut run, transition.phase)?;
            // A commit that lowered the state below the transition's start sends the loop back through earlier
            // transitions. One that invalidated only this transition's own product (after its work ran, or
            // with no work run at all) runs it again. Otherwise the transition is done.
            if run.execution.state >= state && run.execution.lowered_to > state {
                run.execution.state = transition.to;
            }
            if let Some(entry) = run.trace.last_mut() {
                entry.state_after = state_name(machine, run.execution.state);
            }
            if run.context.stopped.is_some() {
                // A phase ended the link early and successfully: nothing is emitted, verified or written.
                return Ok(run.trace);
            }
        }
        if let Some(full) = full {
            let phase = &tables.phases[full];
            run.trace.push(TraceEntry {
                phase: phase.name,
                policy: policy_names(phase),
                actor: Actor::Builtin,
                intercepted: false,
                state_before: state_name(machine, 0),
                state_after: state_name(machine, run.execution.state),
                duration: started.elapsed(),
            });
        }
    }
    if let Some(merge) = merge.map(|merge| &tables.phases[merge]).filter(|_| !relocatable) {
        run.trace.push(TraceEntry {
            phase: merge.name,
            policy: policy_names(merge),
            actor: Actor::NotRequested,
            intercepted: false,
            state_before: state_name(machine, run.execution.state),
            state_after: state_name(machine, run.execution.state),
            duration: Duration::ZERO,
        });
    }
    for phase_index in machine.finalization {
        run.execution.lowered_to = u32::MAX;
        run_phase(&mut run, *phase_index)?;
        // The sealed gates verify and commit the image emitted from the graph; a change to the graph now would
        // let them pass an image that no longer matches it.
        if run.execution.lowered_to != u32::MAX {
            let phase = tables.phases[*phase_index].name;
            return Err(LinkError::Plugin {
                phase,
                status: Status::new(
                    StatusCode::InvalidState,
                    format!(
                        "a commit during finalization invalidated {}; the emitted image would no longer match \
                         the link graph",
                        state_name(machine, run.execution.lowered_to.saturating_add(1))
                    ),
                ),
            });
        }
        if LinkPhase::ImageVerify.index_in(tables) == Some(*phase_index) {
            run_image_verifiers(run.context, run.registry, tables.phases[*phase_index].name)?;
        }
    }
    Ok(run.trace)
}

fn state_name(machine: &StateMachineRecord, state: u32) -> &'static str {
    machine.states.get(state as usize).copied().unwrap_or("?")
}

/// Runs a plugin callback; a panic becomes `PLUGIN_FAILURE`.
fn contained<T>(
    names: &[String],
    plugin: u32,
    phase: &str,
    call: impl FnOnce() -> Result<T, Status>,
) -> Result<T, Status> {
    match catch_unwind(AssertUnwindSafe(call)) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|text| text.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            let name = names.get(plugin as usize - 1).map_or("<unknown>", String::as_str);
            Err(Status::new(
                StatusCode::PluginFailure,
                format!("plugin `{name}` panicked in {phase}: {message}"),
            ))
        }
    }
}

/// One run of the link state machine: what every phase of it works with.
struct Run<'r> {
    context: &'r mut LinkContext,
    registry: &'r mut Registry,
    tables: &'static PhaseTables,
    machine: &'static StateMachineRecord,
    execution: ExecutionState,
    trace: Vec<TraceEntry>,
}

/// One phase: observers, skip, interceptors around provider or builtin, observers.
fn run_phase(run: &mut Run<'_>, phase_index: usize) -> Result<(), LinkError> {
    let context = &mut *run.context;
    let registry = &mut *run.registry;
    let execution = &mut run.execution;
    let trace = &mut run.trace;
    let (machine, tables) = (run.machine, run.tables);
    let phase = &tables.phases[phase_index];
    let site = PhaseSite {
        machine,
        phase,
        index: phase_index as u16,
    };
    let started = Instant::now();
    let state_before = state_name(machine, execution.state);
    let plugin_error = |status: Status| LinkError::Plugin {
        phase: phase.name,
        status,
    };
    let names = registry.plugin_names.clone();
    // Builtins of earlier phases changed the graph directly; indexes built over it before are stale.
    context.invalidate_edge_index();
    run_observers(context, execution, site, registry, ObserverPoint::Before, &names).map_err(plugin_error)?;

    // A skip request whose proof is valid for the current graph skips the work. The proof is computed only
    // when the phase has a skip request.
    let mut actor = None;
    let skippable = registry
        .registrations
        .iter()
        .any(|registration| registration.phase == phase_index && matches!(registration.hook, Hook::Skip(_)));
    if let Some(current) =
        (skippable && execution.state >= machine.proof_state).then(|| current_proof(context, execution))
    {
        for registration in registry.registrations.iter_mut().filter(|r| r.phase == phase_index) {
            if let Hook::Skip(skipper) = &mut registration.hook {
                let plugin = registration.plugin;
                let mut frame = PhaseFrame::new(context, execution, site, plugin, FrameMode::Mutable);
                let claimed = contained(&names, plugin, phase.name, || Ok(skipper(&mut frame, Some(current))))
                    .map_err(plugin_error)?;
                if claimed == Some(current) {
                    actor = Some(Actor::SkippedWithProof);
                    break;
                }
            }
        }
    }

    let mut intercepted = false;
    if actor.is_none() {
        let mut interceptors: Vec<(u32, &mut Interceptor)> = Vec::new();
        let mut provider: Option<(u32, &mut Provider)> = None;
        for registration in registry.registrations.iter_mut().filter(|r| r.phase == phase_index) {
            match &mut registration.hook {
                Hook::Intercept(interceptor) => interceptors.push((registration.plugin, interceptor)),
                Hook::Replace(replacement) => provider = Some((registration.plugin, replacement)),
                Hook::Observe(..) | Hook::Skip(_) => {}
            }
        }
        intercepted = !interceptors.is_empty();
        let builtin = LinkPhase::from_symbol(phase.symbol).and_then(builtin_for);
        let mut builtin_error: Option<PhaseError> = None;
        let mut core_ran = false;
        let mut used_provider = false;
        let mut core = |frame: &mut PhaseFrame<'_>| -> Result<(), Status> {
            core_ran = true;
            let result = if let Some((plugin, provider)) = provider.as_mut() {
                used_provider = true;
                let plugin = *plugin;
                contained(&names, plugin, phase.name, || provider(frame))
            } else {
                match builtin {
                    Some(builtin) => builtin(frame.context, site.index).map_err(|error| {
                        let status = Status::new(StatusCode::InvalidState, error.to_string());
                        builtin_error = Some(error);
                        status
                    }),
                    None => Err(Status::new(
                        StatusCode::CapabilityUnavailable,
                        format!("phase {} has no builtin implementation", phase.name),
                    )),
                }
            };
            // The work saw every earlier commit, and its own commits are part of its product (as a published
            // product moves the state on in NeverC): only a later commit can invalidate it.
            frame.execution.lowered_to = u32::MAX;
            result
        };
        let mut frame = PhaseFrame::new(context, execution, site, 0, FrameMode::Mutable);
        let result = run_chain(&mut frame, &mut interceptors, &mut core, &names, phase.name);
        if let Some(error) = builtin_error {
            return Err(LinkError::Phase(error));
        }
        result.map_err(plugin_error)?;
        if builtin.is_none() && !core_ran && provider.is_none() {
            return Err(LinkError::NoBuiltin(phase.name));
        }
        actor = Some(if used_provider {
            Actor::Provider
        } else if core_ran {
            Actor::Builtin
        } else {
            Actor::Interceptor
        });
    }

    run_observers(context, execution, site, registry, ObserverPoint::After, &names).map_err(plugin_error)?;
    run_observers(context, execution, site, registry, ObserverPoint::AfterCommit, &names).map_err(plugin_error)?;
    trace.push(TraceEntry {
        phase: phase.name,
        policy: policy_names(phase),
        actor: actor.unwrap_or(Actor::Builtin),
        intercepted,
        state_before,
        state_after: state_name(machine, execution.state),
        duration: started.elapsed(),
    });
    Ok(())
}

/// Runs `interceptors` (outermost first) around `core`; each continuation may be called once.
fn run_chain(
    frame: &mut PhaseFrame<'_>,
    interceptors: &mut [(u32, &mut Interceptor)],
    core: &mut dyn FnMut(&mut PhaseFrame<'_>) -> Result<(), Status>,
    names: &[String],
    phase: &str,
) -> Result<(), Status> {
    let Some(((plugin, first), rest)) = interceptors.split_first_mut() else {
        return core(frame);
    };
    let mut called = false;
    let mut next = |frame: &mut PhaseFrame<'_>| -> Result<(), Status> {
        if called {
            return Err(Status::new(
                StatusCode::InvalidState,
                "an interceptor called its continuation more than once",
            ));
        }
        called = true;
        run_chain(frame, rest, core, names, phase)
    };
    let plugin = *plugin;
    frame.plugin = plugin;
    contained(names, plugin, phase, || first(frame, &mut next))
}

fn run_observers(
    context: &mut LinkContext,
    execution: &mut ExecutionState,
    site: PhaseSite,
    registry: &mut Registry,
    point: ObserverPoint,
    names: &[String],
) -> Result<(), Status> {
    let phase = site.phase;
    for registration in registry
        .registrations
        .iter_mut()
        .filter(|r| r.phase == usize::from(site.index))
    {
        if let Hook::Observe(at, observer) = &mut registration.hook
            && *at == point
        {
            let plugin = registration.plugin;
            let mut frame = PhaseFrame::new(context, execution, site, plugin, FrameMode::ReadOnly);
            contained(names, plugin, phase.name, || observer(&mut frame))?;
        }
    }
    Ok(())
}

fn run_image_verifiers(context: &LinkContext, registry: &mut Registry, phase: &'static str) -> Result<(), LinkError> {
    let (Some(image), Some(layout)) = (context.image(), context.image_layout()) else {
        return Ok(());
    };
    let names = registry.plugin_names.clone();
    for (plugin, verifier) in &mut registry.image_verifiers {
        contained(&names, *plugin, phase, || verifier(image, layout)).map_err(|status| LinkError::Plugin {
            phase,
            status: if status.code == StatusCode::PluginFailure {
                status
            } else {
                Status::new(StatusCode::VerificationFailed, status.message)
            },
        })?;
    }
    Ok(())
}

/// Runs `work` with a mutable frame of `phase` over `context`, outside a link run (for tools that edit a
/// graph directly, and for benchmarks). `None` when the tables have no such phase or no link machine.
pub fn with_frame<T>(
    context: &mut LinkContext,
    execution: &mut ExecutionState,
    tables: &'static PhaseTables,
    phase: &str,
    work: impl FnOnce(&mut PhaseFrame<'_>) -> T,
) -> Option<T> {
    let machine = link_state_machine(tables)?;
    let index = tables.phases.iter().position(|record| record.name == phase)?;
    let mut frame = PhaseFrame::new(
        context,
        execution,
        PhaseSite {
            machine,
            phase: &tables.phases[index],
            index: index as u16,
        },
        0,
        FrameMode::Mutable,
    );
    Some(work(&mut frame))
}
