//! Policy smells: declarations that validation accepts but that deserve a human look.

use neverc_schema::{Gate, ObserverPoint, PhaseKind, PhaseSchemaDocument, PolicyFlag};
use serde::Serialize;

use crate::sealing::is_sealed;

/// One smell: which rule, about what, and why it matters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Smell {
    pub rule: &'static str,
    /// The phase or state machine the smell is about.
    pub subject: String,
    pub message: String,
}

/// The rules, with what each looks for; renderers list them so that "no smell" is visibly "none found".
pub const SMELL_RULES: &[(&str, &str)] = &[
    (
        "skippable-without-verifier",
        "a SKIPPABLE_WITH_PROOF transition whose skipped work no verifier checks (no verifier, or no sealed verifier in its domain)",
    ),
    (
        "skippable-before-proof",
        "a SKIPPABLE_WITH_PROOF transition that runs before its state machine issues proofs, so it can never be skipped",
    ),
    (
        "replaceable-without-fallback",
        "a REPLACEABLE phase without a builtin fallback: without a provider there is nothing to run",
    ),
    (
        "event-beyond-observable",
        "an event that is more than OBSERVABLE, or observable at other points than AFTER",
    ),
    (
        "sealed-gate-bypassable",
        "a sealed gate that a run of the declared state machine can finish without, or that runs after the commit",
    ),
    (
        "sealed-gate-unordered",
        "a domain with sealed gates but no declared state machine: nothing in the schema shows they cannot be bypassed",
    ),
];

/// Every smell of a schema, in rule order, then declaration order.
pub fn policy_smells(document: &PhaseSchemaDocument) -> Vec<Smell> {
    let mut smells = Vec::new();
    let machines: Vec<_> = document.state_machines.iter().flatten().collect();
    for phase in &document.phases {
        let skippable = phase.policy.contains(&PolicyFlag::SkippableWithProof);
        let domain_has_sealed_verifier = document
            .phases
            .iter()
            .any(|other| other.domain == phase.domain && other.gate == Gate::SealedVerifier);
        if skippable
            && phase.kind == PhaseKind::Transition
            && (phase.verifier.is_empty() || !domain_has_sealed_verifier)
        {
            let why = if phase.verifier.is_empty() {
                "declares no verifier".to_string()
            } else {
                format!(
                    "has no sealed verifier in domain `{}` to check the skipped product",
                    phase.domain
                )
            };
            smells.push(Smell {
                rule: "skippable-without-verifier",
                subject: phase.name.clone(),
                message: format!("`{}` may be skipped with a proof but {why}", phase.name),
            });
        }
    }
    for (name, machine) in &machines {
        let Some(proof) = machine.states.iter().position(|state| *state == machine.proof_state) else {
            continue;
        };
        for transition in &machine.transitions {
            let Some(phase) = document.phase_by_name(&transition.phase) else {
                continue;
            };
            let from = machine.states.iter().position(|state| *state == transition.from);
            if phase.policy.contains(&PolicyFlag::SkippableWithProof) && from.is_some_and(|from| from < proof) {
                smells.push(Smell {
                    rule: "skippable-before-proof",
                    subject: phase.name.clone(),
                    message: format!(
                        "`{}` is SKIPPABLE_WITH_PROOF but leaves {} before machine `{name}` issues proofs at {}; \
                         the flag can never take effect",
                        phase.name, transition.from, machine.proof_state
                    ),
                });
            }
        }
    }
    for phase in &document.phases {
        if phase.policy.contains(&PolicyFlag::Replaceable) && !phase.builtin_fallback {
            smells.push(Smell {
                rule: "replaceable-without-fallback",
                subject: phase.name.clone(),
                message: format!(
                    "`{}` is REPLACEABLE but has no builtin fallback: a host without a provider cannot run it",
                    phase.name
                ),
            });
        }
    }
    for phase in &document.phases {
        if phase.kind != PhaseKind::Event {
            continue;
        }
        let extra_flags: Vec<&str> = phase
            .policy
            .iter()
            .filter(|flag| **flag != PolicyFlag::Observable)
            .map(|flag| flag.schema_name())
            .collect();
        let extra_points: Vec<&str> = phase
            .observer_points
            .iter()
            .filter(|point| **point != ObserverPoint::After)
            .map(|point| point.schema_name())
            .collect();
        if !extra_flags.is_empty() || !extra_points.is_empty() {
            smells.push(Smell {
                rule: "event-beyond-observable",
                subject: phase.name.clone(),
                message: format!(
                    "event `{}` also declares {}: an event reports what happened and should only be observed AFTER",
                    phase.name,
                    extra_flags
                        .iter()
                        .chain(extra_points.iter())
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
    }
    for (name, machine) in &machines {
        let on_path = |phase: &str| {
            machine.transitions.iter().any(|transition| transition.phase == phase)
                || machine.finalization.iter().any(|step| step == phase)
        };
        for phase in document
            .phases
            .iter()
            .filter(|phase| phase.domain == machine.domain && is_sealed(phase))
        {
            if !on_path(&phase.name) {
                smells.push(Smell {
                    rule: "sealed-gate-bypassable",
                    subject: phase.name.clone(),
                    message: format!(
                        "sealed gate `{}` is neither a transition nor a finalization step of machine `{name}`: \
                         a run reaches {} and finishes without it",
                        phase.name,
                        machine.states.last().map(String::as_str).unwrap_or("its final state")
                    ),
                });
            }
        }
        let commit = machine.finalization.iter().position(|step| {
            document
                .phase_by_name(step)
                .is_some_and(|phase| phase.gate == Gate::SealedCommit)
        });
        if let Some(commit) = commit {
            for step in &machine.finalization[commit + 1..] {
                if document
                    .phase_by_name(step)
                    .is_some_and(|phase| phase.gate == Gate::SealedVerifier)
                {
                    smells.push(Smell {
                        rule: "sealed-gate-bypassable",
                        subject: step.clone(),
                        message: format!(
                            "sealed verifier `{step}` runs after the commit `{}` of machine `{name}`: what it \
                             rejects has already been written",
                            machine.finalization[commit]
                        ),
                    });
                }
            }
        }
    }
    let mut domains: Vec<&str> = Vec::new();
    for phase in document.phases.iter().filter(|phase| is_sealed(phase)) {
        if domains.contains(&phase.domain.as_str()) || machines.iter().any(|(_, m)| m.domain == phase.domain) {
            continue;
        }
        domains.push(&phase.domain);
        let gates: Vec<String> = document
            .phases
            .iter()
            .filter(|other| other.domain == phase.domain && is_sealed(other))
            .map(|other| format!("`{}`", other.name))
            .collect();
        smells.push(Smell {
            rule: "sealed-gate-unordered",
            subject: phase.domain.clone(),
            message: format!(
                "domain `{}` has sealed gate(s) {} but no declared state machine, so the schema cannot show \
                 that a run passes them",
                phase.domain,
                gates.join(", ")
            ),
        });
    }
    smells
}
