//! The executor: runs the link state machine of a phase table. The transition whose input state equals the
//! graph's state runs; each run counts against the transition's declared rerun budget; after the final
//! state the finalization phases run in their declared order. States, transitions, budgets and the
//! finalization chain all come from the tables (generated from `PhaseSchema.json`, or loaded from a copy).

use std::time::{Duration, Instant};

use neverc_runtime::generated::phases::{
    POLICY_INTERCEPTABLE, POLICY_OBSERVABLE, POLICY_REPLACEABLE, POLICY_SEALED_HOST_GATE, POLICY_SKIPPABLE_WITH_PROOF,
};
use neverc_runtime::tables::{PhaseRecord, PhaseTables, StateMachineRecord};

use crate::context::{LinkContext, PhaseError};
use crate::phases::builtin_for;

/// NeverC's error when no transition leaves the current state.
pub const NO_TRANSITION: &str = "LinkGraph state has no registered outgoing transition";
/// NeverC's error when a transition runs more often than its budget allows.
pub const DID_NOT_CONVERGE: &str = "Link transition did not converge within its rerun budget";

/// Who did a phase's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Actor {
    Builtin,
    Provider,
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
    #[error(transparent)]
    Phase(#[from] PhaseError),
}

/// The policy flags of a phase, spelled as in the schema.
pub fn policy_names(phase: &PhaseRecord) -> String {
    let names = [
        (POLICY_OBSERVABLE, "OBSERVABLE"),
        (POLICY_INTERCEPTABLE, "INTERCEPTABLE"),
        (POLICY_REPLACEABLE, "REPLACEABLE"),
        (POLICY_SKIPPABLE_WITH_PROOF, "SKIPPABLE_WITH_PROOF"),
        (POLICY_SEALED_HOST_GATE, "SEALED_HOST_GATE"),
    ];
    let spelled: Vec<&str> = names
        .iter()
        .filter(|(bit, _)| phase.policy & bit != 0)
        .map(|(_, name)| *name)
        .collect();
    spelled.join("|")
}

/// The link state machine of `tables`.
pub fn link_state_machine(tables: &'static PhaseTables) -> Option<&'static StateMachineRecord> {
    tables.state_machines.iter().find(|machine| machine.domain == "link")
}

/// Runs every transition up to the final state, then the finalization phases. Returns the trace.
pub fn run_link(context: &mut LinkContext, tables: &'static PhaseTables) -> Result<Vec<TraceEntry>, LinkError> {
    let machine = link_state_machine(tables).ok_or(LinkError::NoStateMachine)?;
    let mut trace = Vec::new();
    let link_started = Instant::now();
    let mut state = 0u32;
    let mut runs = vec![0u32; machine.transitions.len()];
    let final_state = machine.final_state();
    let state_name = |state: u32| machine.states.get(state as usize).copied().unwrap_or("?");
    while state < final_state {
        let (index, transition) = machine
            .transitions
            .iter()
            .enumerate()
            .find(|(_, transition)| transition.from == state)
            .ok_or(LinkError::NoTransition(state_name(state)))?;
        let phase = &tables.phases[transition.phase];
        runs[index] += 1;
        if runs[index] > transition.rerun_budget + 1 {
            return Err(LinkError::DidNotConverge(phase.name));
        }
        let started = Instant::now();
        let builtin = builtin_for(phase.symbol).ok_or(LinkError::NoBuiltin(phase.name))?;
        builtin(context)?;
        let next = transition.to;
        trace.push(TraceEntry {
            phase: phase.name,
            policy: policy_names(phase),
            actor: Actor::Builtin,
            state_before: state_name(state),
            state_after: state_name(next),
            duration: started.elapsed(),
        });
        state = next;
    }
    // The structural phases, in declared order: `full` is the whole transition sequence above (which a
    // linker provider may replace); `object_merge` serves `-r` links only.
    for symbol in ["LINK_FULL", "LINK_OBJECT_MERGE"] {
        if let Some(phase) = tables.phases.iter().find(|phase| phase.symbol == symbol) {
            let full = symbol == "LINK_FULL";
            trace.push(TraceEntry {
                phase: phase.name,
                policy: policy_names(phase),
                actor: if full { Actor::Builtin } else { Actor::NotRequested },
                state_before: state_name(if full { 0 } else { state }),
                state_after: state_name(state),
                duration: if full { link_started.elapsed() } else { Duration::ZERO },
            });
        }
    }
    for phase_index in machine.finalization {
        let phase = &tables.phases[*phase_index];
        let started = Instant::now();
        let builtin = builtin_for(phase.symbol).ok_or(LinkError::NoBuiltin(phase.name))?;
        builtin(context)?;
        trace.push(TraceEntry {
            phase: phase.name,
            policy: policy_names(phase),
            actor: Actor::Builtin,
            state_before: state_name(state),
            state_after: state_name(state),
            duration: started.elapsed(),
        });
    }
    Ok(trace)
}
