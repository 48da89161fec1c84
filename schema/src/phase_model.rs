//! The lowered form of a validated phase schema: bits instead of flag lists, indices instead of names.
//!
//! The code generator and the run-time loader both build their tables from this one lowering.

use serde::Serialize;

use crate::phase::{
    Gate, ObserverPoint, PhaseKind, PhaseSchemaDocument, PolicyFlag, Stability, observer_point_bits, policy_bits,
};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PhaseSchemaModel {
    pub schema_version: u32,
    pub extension_families: Vec<ExtensionFamilyModel>,
    pub phases: Vec<PhaseModel>,
    /// Sorted by machine name.
    pub state_machines: Vec<StateMachineModel>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExtensionFamilyModel {
    pub namespace: String,
    pub id_high: u64,
    pub id_low_min: u64,
    pub id_low_max: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PhaseModel {
    pub name: String,
    pub symbol: String,
    pub id: (u64, u64),
    pub domain: String,
    pub kind: PhaseKind,
    pub verifier: String,
    pub input_artifact: (u64, u64),
    pub output_artifact: (u64, u64),
    pub policy: u32,
    pub policy_flags: Vec<PolicyFlag>,
    pub observer_points: u32,
    pub observer_point_flags: Vec<ObserverPoint>,
    pub gate: Gate,
    pub stability: Stability,
    pub builtin_fallback: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StateMachineModel {
    pub name: String,
    pub domain: String,
    pub states: Vec<String>,
    pub transitions: Vec<TransitionModel>,
    pub mutation_classes: Vec<MutationClassModel>,
    pub proof_state: usize,
    /// Indices into the phase list.
    pub finalization: Vec<usize>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TransitionModel {
    /// Index into the phase list.
    pub phase: usize,
    pub from: usize,
    pub to: usize,
    pub rerun_budget: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MutationClassModel {
    pub name: String,
    pub earliest_invalidated: usize,
    pub operations: Vec<String>,
}

/// Lowers a document that passed validation. Fails only if it did not (a name that does not resolve).
pub fn lower_phase_schema(document: &PhaseSchemaDocument) -> Result<PhaseSchemaModel, String> {
    let phase_index = |name: &str| {
        document
            .phases
            .iter()
            .position(|phase| phase.name == name)
            .ok_or_else(|| format!("phase `{name}` is not declared"))
    };
    let mut state_machines = Vec::new();
    for (name, machine) in document.state_machines.iter().flatten() {
        let state = |state: &str| {
            machine
                .states
                .iter()
                .position(|candidate| candidate == state)
                .ok_or_else(|| format!("state `{state}` is not declared"))
        };
        let mut transitions = machine
            .transitions
            .iter()
            .map(|transition| {
                Ok(TransitionModel {
                    phase: phase_index(&transition.phase)?,
                    from: state(&transition.from)?,
                    to: state(&transition.to)?,
                    rerun_budget: transition.rerun_budget,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        transitions.sort_by_key(|transition| transition.from);
        state_machines.push(StateMachineModel {
            name: name.clone(),
            domain: machine.domain.clone(),
            states: machine.states.clone(),
            transitions,
            mutation_classes: machine
                .mutation_classes
                .iter()
                .map(|class| {
                    Ok(MutationClassModel {
                        name: class.name.clone(),
                        earliest_invalidated: state(&class.earliest_invalidated)?,
                        operations: class.operations.clone(),
                    })
                })
                .collect::<Result<_, String>>()?,
            proof_state: state(&machine.proof_state)?,
            finalization: machine
                .finalization
                .iter()
                .map(|name| phase_index(name))
                .collect::<Result<_, _>>()?,
        });
    }
    Ok(PhaseSchemaModel {
        schema_version: document.schema_version,
        extension_families: document
            .extension_families
            .iter()
            .map(|family| ExtensionFamilyModel {
                namespace: family.namespace.clone(),
                id_high: family.id_high.0,
                id_low_min: family.id_low_min.0,
                id_low_max: family.id_low_max.0,
            })
            .collect(),
        phases: document
            .phases
            .iter()
            .map(|phase| PhaseModel {
                name: phase.name.clone(),
                symbol: phase.symbol.clone(),
                id: (phase.id.high(), phase.id.low()),
                domain: phase.domain.clone(),
                kind: phase.kind,
                verifier: phase.verifier.clone(),
                input_artifact: (phase.input_artifact.high(), phase.input_artifact.low()),
                output_artifact: (phase.output_artifact.high(), phase.output_artifact.low()),
                policy: policy_bits(&phase.policy),
                policy_flags: phase.policy.clone(),
                observer_points: observer_point_bits(&phase.observer_points),
                observer_point_flags: phase.observer_points.clone(),
                gate: phase.gate,
                stability: phase.stability,
                builtin_fallback: phase.builtin_fallback,
            })
            .collect(),
        state_machines,
    })
}
