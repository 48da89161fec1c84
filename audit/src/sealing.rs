//! The sealing audit: per domain, which phases are sealed gates and what each guards, what every phase lets a
//! plugin do, and which invariants of validation hold.

use neverc_schema::{
    Diagnostic, Gate, IdPair, PHASE_SCHEMA_INVARIANTS, Phase, PhaseKind, PhaseSchemaDocument, PolicyFlag, Stability,
    StateMachine,
};
use serde::Serialize;

use crate::smells::{Smell, policy_smells};

/// Everything the audit found in one schema.
#[derive(Clone, Debug, Serialize)]
pub struct SealingAudit {
    /// The schema file as named on the command line.
    pub source: String,
    pub schema_version: u32,
    pub phase_count: usize,
    pub domains: Vec<DomainAudit>,
    pub state_machines: Vec<MachineView>,
    pub invariants: Vec<InvariantStatus>,
    pub smells: Vec<Smell>,
}

/// One domain: its phases in declaration order and its sealed gates.
#[derive(Clone, Debug, Serialize)]
pub struct DomainAudit {
    pub domain: String,
    pub phases: Vec<PhaseCapabilities>,
    pub sealed_gates: Vec<SealedGate>,
}

/// What a plugin may do with one phase.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseCapabilities {
    pub name: String,
    pub symbol: String,
    pub kind: PhaseKind,
    pub gate: Gate,
    pub stability: Stability,
    pub observe: bool,
    pub intercept: bool,
    pub replace: bool,
    pub skip_with_proof: bool,
    pub sealed: bool,
    pub observer_points: Vec<&'static str>,
    pub verifier: String,
    pub builtin_fallback: bool,
}

/// A sealed gate and what it guards.
#[derive(Clone, Debug, Serialize)]
pub struct SealedGate {
    pub phase: String,
    pub gate: Gate,
    pub verifier: String,
    /// The artifact the gate checks (its input).
    pub artifact: String,
    /// Phases that consume what the gate passes on, or run after it in a state machine's finalization.
    pub guarded_phases: Vec<String>,
    /// One sentence for people.
    pub guards: String,
}

/// One state machine, as the pictures draw it.
#[derive(Clone, Debug, Serialize)]
pub struct MachineView {
    pub name: String,
    pub domain: String,
    pub states: Vec<String>,
    pub proof_state: String,
    pub transitions: Vec<TransitionView>,
    pub finalization: Vec<StepView>,
    pub mutation_classes: Vec<MutationClassView>,
}

#[derive(Clone, Debug, Serialize)]
pub struct TransitionView {
    pub phase: String,
    pub from: String,
    pub to: String,
    pub rerun_budget: u32,
    pub skippable: bool,
    pub sealed: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct StepView {
    pub phase: String,
    pub sealed: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct MutationClassView {
    pub name: String,
    pub earliest_invalidated: String,
    pub operations: Vec<String>,
}

/// One invariant of validation and the places the schema breaks it.
#[derive(Clone, Debug, Serialize)]
pub struct InvariantStatus {
    pub rule: &'static str,
    pub statement: &'static str,
    pub violations: Vec<Diagnostic>,
}

impl InvariantStatus {
    pub fn holds(&self) -> bool {
        self.violations.is_empty()
    }
}

impl SealingAudit {
    /// Whether every invariant of validation holds.
    pub fn is_valid(&self) -> bool {
        self.invariants.iter().all(InvariantStatus::holds)
    }

    /// Every phase in declaration order across domains.
    pub fn phases(&self) -> impl Iterator<Item = &PhaseCapabilities> {
        self.domains.iter().flat_map(|domain| domain.phases.iter())
    }
}

/// Formats a 128-bit id the way the schema writes it.
pub fn id_text(id: &IdPair) -> String {
    format!("{:016x}:{:016x}", id.high(), id.low())
}

/// Audits a schema that passed syntax and structure; `semantic` are the problems validation found, if any.
pub fn audit_sealing(source: &str, document: &PhaseSchemaDocument, semantic: &[Diagnostic]) -> SealingAudit {
    let mut domains: Vec<DomainAudit> = Vec::new();
    for phase in &document.phases {
        let index = match domains.iter().position(|domain| domain.domain == phase.domain) {
            Some(index) => index,
            None => {
                domains.push(DomainAudit {
                    domain: phase.domain.clone(),
                    phases: Vec::new(),
                    sealed_gates: Vec::new(),
                });
                domains.len() - 1
            }
        };
        domains[index].phases.push(capabilities_of(phase));
        if is_sealed(phase) {
            domains[index].sealed_gates.push(sealed_gate(document, phase));
        }
    }
    let state_machines = document
        .state_machines
        .iter()
        .flatten()
        .map(|(name, machine)| machine_view(document, name, machine))
        .collect();
    let invariants = PHASE_SCHEMA_INVARIANTS
        .iter()
        .map(|(rule, statement)| InvariantStatus {
            rule: rule.code(),
            statement,
            violations: semantic
                .iter()
                .filter(|diagnostic| diagnostic.rule == *rule)
                .cloned()
                .collect(),
        })
        .collect();
    SealingAudit {
        source: source.to_string(),
        schema_version: document.schema_version,
        phase_count: document.phases.len(),
        domains,
        state_machines,
        invariants,
        smells: policy_smells(document),
    }
}

/// A phase is a sealed gate if its policy says so or its gate is sealed (validation demands both together).
pub(crate) fn is_sealed(phase: &Phase) -> bool {
    phase.policy.contains(&PolicyFlag::SealedHostGate) || phase.gate.is_sealed()
}

fn capabilities_of(phase: &Phase) -> PhaseCapabilities {
    let has = |flag| phase.policy.contains(&flag);
    PhaseCapabilities {
        name: phase.name.clone(),
        symbol: phase.symbol.clone(),
        kind: phase.kind,
        gate: phase.gate,
        stability: phase.stability,
        observe: has(PolicyFlag::Observable),
        intercept: has(PolicyFlag::Interceptable),
        replace: has(PolicyFlag::Replaceable),
        skip_with_proof: has(PolicyFlag::SkippableWithProof),
        sealed: is_sealed(phase),
        observer_points: phase.observer_points.iter().map(|point| point.schema_name()).collect(),
        verifier: phase.verifier.clone(),
        builtin_fallback: phase.builtin_fallback,
    }
}

/// What a gate guards: in a state machine, the finalization steps after it; otherwise the phases declared after
/// it that consume the artifact it passes on.
fn sealed_gate(document: &PhaseSchemaDocument, phase: &Phase) -> SealedGate {
    let finalization = document.state_machines.iter().flatten().find_map(|(_, machine)| {
        let position = machine.finalization.iter().position(|name| *name == phase.name)?;
        Some(machine.finalization[position + 1..].to_vec())
    });
    let (guarded_phases, guards) = match (finalization, phase.gate) {
        (Some(after), Gate::SealedCommit) => {
            let sentence = format!(
                "commits the output bundle only after `{}` accepts it; nothing is written before this gate, \
                 and {} observe the committed result",
                phase.verifier,
                name_list(&after, "no later phase")
            );
            (after, sentence)
        }
        (Some(after), _) => {
            let sentence = format!(
                "`{}` checks {} before {} run; a rejection stops the link with nothing written",
                phase.verifier,
                id_text(&phase.input_artifact),
                name_list(&after, "nothing else")
            );
            (after, sentence)
        }
        (None, gate) => {
            // Without a declared order, the phases declared after the gate that consume what it passes on.
            let consumers: Vec<String> = document
                .phases
                .iter()
                .skip_while(|other| other.name != phase.name)
                .skip(1)
                .filter(|other| other.input_artifact == phase.output_artifact)
                .map(|other| other.name.clone())
                .collect();
            let what = if gate == Gate::SealedCommit {
                "commits"
            } else {
                "checks"
            };
            let readers = match consumers.len() {
                0 => "no phase declared after it consumes".to_string(),
                1 => format!("{} consumes", name_list(&consumers, "")),
                _ => format!("{} consume", name_list(&consumers, "")),
            };
            let sentence = format!(
                "`{}` {what} {} and hands on {}, which {readers}",
                phase.verifier,
                id_text(&phase.input_artifact),
                id_text(&phase.output_artifact),
            );
            (consumers, sentence)
        }
    };
    SealedGate {
        phase: phase.name.clone(),
        gate: phase.gate,
        verifier: phase.verifier.clone(),
        artifact: id_text(&phase.input_artifact),
        guarded_phases,
        guards,
    }
}

fn name_list(names: &[String], empty: &str) -> String {
    if names.is_empty() {
        return empty.to_string();
    }
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn machine_view(document: &PhaseSchemaDocument, name: &str, machine: &StateMachine) -> MachineView {
    let phase = |name: &str| document.phase_by_name(name);
    MachineView {
        name: name.to_string(),
        domain: machine.domain.clone(),
        states: machine.states.clone(),
        proof_state: machine.proof_state.clone(),
        transitions: machine
            .transitions
            .iter()
            .map(|transition| TransitionView {
                phase: transition.phase.clone(),
                from: transition.from.clone(),
                to: transition.to.clone(),
                rerun_budget: transition.rerun_budget,
                skippable: phase(&transition.phase)
                    .is_some_and(|phase| phase.policy.contains(&PolicyFlag::SkippableWithProof)),
                sealed: phase(&transition.phase).is_some_and(is_sealed),
            })
            .collect(),
        finalization: machine
            .finalization
            .iter()
            .map(|step| StepView {
                phase: step.clone(),
                sealed: phase(step).is_some_and(is_sealed),
            })
            .collect(),
        mutation_classes: machine
            .mutation_classes
            .iter()
            .map(|class| MutationClassView {
                name: class.name.clone(),
                earliest_invalidated: class.earliest_invalidated.clone(),
                operations: class.operations.clone(),
            })
            .collect(),
    }
}
