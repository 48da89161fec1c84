//! Semantic checks of a phase schema: what the JSON Schema cannot say.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::diagnostic::{Finding, escape_token};
use crate::phase::{Gate, ObserverPoint, Phase, PhaseKind, PhaseSchemaDocument, PolicyFlag, StateMachine};
use crate::rule::Rule;

/// The invariant each semantic rule keeps, by rule name, in the order the checks run. A schema that loads
/// satisfies all of them; an audit lists them and the places a schema breaks them.
pub const PHASE_SCHEMA_INVARIANTS: &[(Rule, &str)] = &[
    (
        Rule::DuplicateFamily,
        "every extension family namespace is declared once",
    ),
    (Rule::FamilyRange, "every extension family's low id range is non-empty"),
    (
        Rule::FamilyOverlap,
        "extension families with the same high id do not overlap",
    ),
    (Rule::DuplicateName, "phase names are unique"),
    (Rule::DuplicateSymbol, "phase symbols are unique"),
    (Rule::DuplicateId, "phase ids are unique"),
    (
        Rule::IdFamily,
        "built-in phase ids stay out of the extension families' ranges",
    ),
    (Rule::NameDomain, "a phase of domain D is named `neverc.D.…`"),
    (
        Rule::VerifierDomain,
        "a phase's verifier is named in the phase's domain",
    ),
    (Rule::DuplicateFlag, "no policy flag or observer point is listed twice"),
    (Rule::PolicyObservable, "every phase is OBSERVABLE"),
    (
        Rule::SealedGate,
        "SEALED_HOST_GATE phases have a sealed gate and are not INTERCEPTABLE, REPLACEABLE or SKIPPABLE_WITH_PROOF, and only they have one",
    ),
    (Rule::EventPolicy, "events are only OBSERVABLE, and only AFTER"),
    (Rule::SkippableKind, "only transitions are SKIPPABLE_WITH_PROOF"),
    (Rule::CommitPoints, "exactly the sealed_commit gates offer AFTER_COMMIT"),
    (Rule::StateName, "state names are UPPER_SNAKE"),
    (Rule::DuplicateState, "state names are unique within a machine"),
    (
        Rule::UnknownState,
        "transitions, mutation classes and the proof state name declared states",
    ),
    (
        Rule::DuplicateTransition,
        "a phase drives at most one step of a machine",
    ),
    (Rule::UnknownPhase, "transitions and finalization name declared phases"),
    (
        Rule::TransitionPhase,
        "a machine's steps are transitions of the machine's domain",
    ),
    (
        Rule::TransitionStep,
        "each transition advances the state by exactly one",
    ),
    (
        Rule::StateReachedTwice,
        "no state is entered by two transitions, and the initial state by none",
    ),
    (
        Rule::StateUnreached,
        "every state but the initial one is entered by a transition",
    ),
    (
        Rule::ArtifactChain,
        "each step consumes the artifact the previous step produces",
    ),
    (Rule::DuplicateMutationClass, "mutation class names are unique"),
    (
        Rule::MutationClassState,
        "no mutation class invalidates the initial state",
    ),
    (
        Rule::DuplicateOperation,
        "every staging operation belongs to one mutation class",
    ),
];

/// Every semantic problem of a structurally valid document.
pub(crate) fn phase_schema_findings(document: &PhaseSchemaDocument) -> Vec<Finding> {
    let mut findings = Vec::new();
    check_extension_families(document, &mut findings);
    check_uniqueness(document, &mut findings);
    check_domain_namespaces(document, &mut findings);
    for (index, phase) in document.phases.iter().enumerate() {
        check_phase(index, phase, &mut findings);
    }
    if let Some(machines) = &document.state_machines {
        for (name, machine) in machines {
            check_state_machine(document, name, machine, &mut findings);
        }
    }
    findings
}

fn check_extension_families(document: &PhaseSchemaDocument, findings: &mut Vec<Finding>) {
    let mut namespaces = HashMap::new();
    for (index, family) in document.extension_families.iter().enumerate() {
        let pointer = format!("/extension_families/{index}");
        if let Some(first) = namespaces.insert(family.namespace.as_str(), index) {
            findings.push(Finding::error(
                Rule::DuplicateFamily,
                format!("{pointer}/namespace"),
                format!(
                    "extension family `{}` is declared twice (first at /extension_families/{first})",
                    family.namespace
                ),
            ));
        }
        if family.id_low_min > family.id_low_max {
            findings.push(Finding::error(
                Rule::FamilyRange,
                format!("{pointer}/id_low_min"),
                format!(
                    "extension family `{}` has id_low_min {} above id_low_max {}",
                    family.namespace, family.id_low_min, family.id_low_max
                ),
            ));
        }
        for (other_index, other) in document.extension_families.iter().enumerate().take(index) {
            let overlaps = other.id_high == family.id_high
                && other.id_low_min <= family.id_low_max
                && family.id_low_min <= other.id_low_max;
            if overlaps {
                findings.push(Finding::error(
                    Rule::FamilyOverlap,
                    format!("{pointer}/id_high"),
                    format!(
                        "extension family `{}` overlaps `{}` (/extension_families/{other_index}): both use id high {} with intersecting low ranges",
                        family.namespace, other.namespace, family.id_high
                    ),
                ));
            }
        }
    }
}

fn check_uniqueness(document: &PhaseSchemaDocument, findings: &mut Vec<Finding>) {
    let mut names = HashMap::new();
    let mut symbols = HashMap::new();
    let mut ids = HashMap::new();
    for (index, phase) in document.phases.iter().enumerate() {
        let pointer = format!("/phases/{index}");
        if let Some(first) = names.insert(phase.name.as_str(), index) {
            findings.push(Finding::error(
                Rule::DuplicateName,
                format!("{pointer}/name"),
                format!("phase name `{}` is already used by /phases/{first}", phase.name),
            ));
        }
        if let Some(first) = symbols.insert(phase.symbol.as_str(), index) {
            findings.push(Finding::error(
                Rule::DuplicateSymbol,
                format!("{pointer}/symbol"),
                format!("phase symbol `{}` is already used by /phases/{first}", phase.symbol),
            ));
        }
        if let Some(first) = ids.insert(phase.id, index) {
            findings.push(Finding::error(
                Rule::DuplicateId,
                format!("{pointer}/id"),
                format!(
                    "phase `{}` reuses id {} of `{}` (/phases/{first})",
                    phase.name, phase.id, document.phases[first].name
                ),
            ));
        }
    }
}

/// Built-in phases of one domain share one id high (the domain's id family); a phase whose id high is an
/// extension family's must belong to that family's domain and lie inside its range.
fn check_domain_namespaces(document: &PhaseSchemaDocument, findings: &mut Vec<Finding>) {
    let mut domain_high: BTreeMap<&str, (u64, usize)> = BTreeMap::new();
    for (index, phase) in document.phases.iter().enumerate() {
        let pointer = format!("/phases/{index}/id");
        let family = document
            .extension_families
            .iter()
            .find(|family| family.id_high.0 == phase.id.high());
        if let Some(family) = family {
            let family_domain = family
                .namespace
                .strip_prefix("neverc.")
                .and_then(|rest| rest.strip_suffix(".extension"));
            if family_domain != Some(phase.domain.as_str()) {
                findings.push(Finding::error(
                    Rule::IdFamily,
                    pointer.clone(),
                    format!(
                        "phase `{}` of domain `{}` has an id in extension family `{}`",
                        phase.name, phase.domain, family.namespace
                    ),
                ));
            } else if phase.id.low() < family.id_low_min.0 || phase.id.low() > family.id_low_max.0 {
                findings.push(Finding::error(
                    Rule::IdFamily,
                    pointer.clone(),
                    format!(
                        "phase `{}` has id low {:#x} outside its family `{}` [{}, {}]",
                        phase.name,
                        phase.id.low(),
                        family.namespace,
                        family.id_low_min,
                        family.id_low_max
                    ),
                ));
            }
            continue;
        }
        match domain_high.get(phase.domain.as_str()) {
            Some((high, first)) if *high != phase.id.high() => findings.push(Finding::error(
                Rule::IdFamily,
                pointer,
                format!(
                    "phase `{}` uses id high {:#018x}, but domain `{}` uses {:#018x} (/phases/{first})",
                    phase.name,
                    phase.id.high(),
                    phase.domain,
                    high
                ),
            )),
            Some(_) => {}
            None => {
                domain_high.insert(phase.domain.as_str(), (phase.id.high(), index));
            }
        }
        if phase.id.low() == 0 {
            findings.push(Finding::error(
                Rule::IdFamily,
                format!("/phases/{index}/id"),
                format!("phase `{}` has id low 0, which is reserved", phase.name),
            ));
        }
    }
}

fn check_phase(index: usize, phase: &Phase, findings: &mut Vec<Finding>) {
    let pointer = format!("/phases/{index}");
    let name = &phase.name;
    let prefix = format!("neverc.{}.", phase.domain);
    if !phase.name.starts_with(&prefix) {
        findings.push(Finding::error(
            Rule::NameDomain,
            format!("{pointer}/name"),
            format!("phase `{name}` of domain `{}` must be named `{prefix}…`", phase.domain),
        ));
    }
    if !phase.verifier.starts_with(&prefix) {
        findings.push(Finding::error(
            Rule::VerifierDomain,
            format!("{pointer}/verifier"),
            format!(
                "verifier `{}` of phase `{name}` must be named `{prefix}…`",
                phase.verifier
            ),
        ));
    }
    for (list, values) in [
        (
            "policy",
            phase.policy.iter().map(|flag| flag.schema_name()).collect::<Vec<_>>(),
        ),
        (
            "observer_points",
            phase.observer_points.iter().map(|point| point.schema_name()).collect(),
        ),
    ] {
        let mut seen = HashSet::new();
        for (position, value) in values.iter().enumerate() {
            if !seen.insert(*value) {
                findings.push(Finding::error(
                    Rule::DuplicateFlag,
                    format!("{pointer}/{list}/{position}"),
                    format!("phase `{name}` lists {value} twice in {list}"),
                ));
            }
        }
    }
    let has = |flag: PolicyFlag| phase.policy.contains(&flag);
    if !has(PolicyFlag::Observable) {
        findings.push(Finding::error(
            Rule::PolicyObservable,
            format!("{pointer}/policy"),
            format!("phase `{name}` is not OBSERVABLE; every phase must be observable"),
        ));
    }
    if has(PolicyFlag::SealedHostGate) {
        for forbidden in [
            PolicyFlag::Interceptable,
            PolicyFlag::Replaceable,
            PolicyFlag::SkippableWithProof,
        ] {
            if has(forbidden) {
                let position = phase.policy.iter().position(|flag| *flag == forbidden).unwrap_or(0);
                findings.push(Finding::error(
                    Rule::SealedGate,
                    format!("{pointer}/policy/{position}"),
                    format!("sealed phase `{name}` must not be {}: SEALED_HOST_GATE excludes INTERCEPTABLE, REPLACEABLE and SKIPPABLE_WITH_PROOF", forbidden.schema_name()),
                ));
            }
        }
        if !phase.gate.is_sealed() {
            findings.push(Finding::error(Rule::SealedGate, format!("{pointer}/gate"), format!("phase `{name}` is SEALED_HOST_GATE but its gate is `transition`; it needs sealed_verifier or sealed_commit")));
        }
    } else if phase.gate.is_sealed() {
        findings.push(Finding::error(
            Rule::SealedGate,
            format!("{pointer}/policy"),
            format!("phase `{name}` has a sealed gate but its policy lacks SEALED_HOST_GATE"),
        ));
    }
    if phase.kind == PhaseKind::Event {
        if phase.policy.iter().any(|flag| *flag != PolicyFlag::Observable) {
            findings.push(Finding::error(
                Rule::EventPolicy,
                format!("{pointer}/policy"),
                format!("event `{name}` may only be OBSERVABLE"),
            ));
        }
        if phase.observer_points.iter().any(|point| *point != ObserverPoint::After) {
            findings.push(Finding::error(
                Rule::EventPolicy,
                format!("{pointer}/observer_points"),
                format!("event `{name}` may only be observed AFTER"),
            ));
        }
    }
    if has(PolicyFlag::SkippableWithProof) && phase.kind != PhaseKind::Transition {
        findings.push(Finding::error(
            Rule::SkippableKind,
            format!("{pointer}/policy"),
            format!("only transitions can be SKIPPABLE_WITH_PROOF; `{name}` is an event"),
        ));
    }
    let commit_point = phase.observer_points.contains(&ObserverPoint::AfterCommit);
    if commit_point != (phase.gate == Gate::SealedCommit) {
        let message = if commit_point {
            format!("phase `{name}` has an AFTER_COMMIT observer point but is not a sealed_commit gate")
        } else {
            format!("sealed_commit gate `{name}` must offer the AFTER_COMMIT observer point")
        };
        findings.push(Finding::error(
            Rule::CommitPoints,
            format!("{pointer}/observer_points"),
            message,
        ));
    }
}

fn check_state_machine(
    document: &PhaseSchemaDocument,
    machine_name: &str,
    machine: &StateMachine,
    findings: &mut Vec<Finding>,
) {
    let base = format!("/state_machines/{}", escape_token(machine_name));
    let mut state_index = HashMap::new();
    for (index, state) in machine.states.iter().enumerate() {
        if !is_upper_snake(state) {
            findings.push(Finding::error(
                Rule::StateName,
                format!("{base}/states/{index}"),
                format!("state `{state}` must be UPPER_SNAKE"),
            ));
        }
        if state_index.insert(state.as_str(), index).is_some() {
            findings.push(Finding::error(
                Rule::DuplicateState,
                format!("{base}/states/{index}"),
                format!("state `{state}` is declared twice"),
            ));
        }
    }
    let lookup_state = |state: &str, pointer: String, findings: &mut Vec<Finding>| -> Option<usize> {
        let found = state_index.get(state).copied();
        if found.is_none() {
            findings.push(Finding::error(
                Rule::UnknownState,
                pointer,
                format!("state `{state}` is not declared in {base}/states"),
            ));
        }
        found
    };

    let mut reached: HashMap<usize, usize> = HashMap::new();
    let mut phases_seen = HashMap::new();
    let mut chain: Vec<(usize, &Phase, usize)> = Vec::new();
    for (index, transition) in machine.transitions.iter().enumerate() {
        let pointer = format!("{base}/transitions/{index}");
        if let Some(first) = phases_seen.insert(transition.phase.as_str(), index) {
            findings.push(Finding::error(
                Rule::DuplicateTransition,
                format!("{pointer}/phase"),
                format!("phase `{}` already drives {base}/transitions/{first}", transition.phase),
            ));
        }
        let phase = document.phase_by_name(&transition.phase);
        match phase {
            None => findings.push(Finding::error(
                Rule::UnknownPhase,
                format!("{pointer}/phase"),
                format!("transition phase `{}` is not declared in /phases", transition.phase),
            )),
            Some(phase) => {
                if phase.kind != PhaseKind::Transition || phase.gate.is_sealed() {
                    findings.push(Finding::error(
                        Rule::TransitionPhase,
                        format!("{pointer}/phase"),
                        format!(
                            "`{}` must be an unsealed phase of kind transition to drive a state transition",
                            phase.name
                        ),
                    ));
                }
                if phase.domain != machine.domain {
                    findings.push(Finding::error(
                        Rule::TransitionPhase,
                        format!("{pointer}/phase"),
                        format!(
                            "`{}` belongs to domain `{}`, not `{}`",
                            phase.name, phase.domain, machine.domain
                        ),
                    ));
                }
            }
        }
        let from = lookup_state(&transition.from, format!("{pointer}/from"), findings);
        let to = lookup_state(&transition.to, format!("{pointer}/to"), findings);
        if let (Some(from), Some(to)) = (from, to) {
            if to != from + 1 {
                findings.push(Finding::error(
                    Rule::TransitionStep,
                    format!("{pointer}/to"),
                    format!(
                        "transition `{}` goes from {} to {}; a transition advances exactly one state",
                        transition.phase, transition.from, transition.to
                    ),
                ));
            }
            if let Some(first) = reached.insert(to, index) {
                findings.push(Finding::error(
                    Rule::StateReachedTwice,
                    format!("{pointer}/to"),
                    format!(
                        "state {} is already reached by {base}/transitions/{first}",
                        transition.to
                    ),
                ));
            }
            if let Some(phase) = phase {
                chain.push((from, phase, index));
            }
        }
    }
    for (index, state) in machine.states.iter().enumerate().skip(1) {
        if !reached.contains_key(&index) {
            findings.push(Finding::error(
                Rule::StateUnreached,
                format!("{base}/states/{index}"),
                format!("no transition reaches state {state}"),
            ));
        }
    }
    if reached.contains_key(&0) {
        findings.push(Finding::error(
            Rule::StateReachedTwice,
            format!("{base}/states/0"),
            format!(
                "initial state {} must not be the target of a transition",
                machine.states[0]
            ),
        ));
    }
    chain.sort_by_key(|(from, _, _)| *from);
    for pair in chain.windows(2) {
        let (_, before, _) = pair[0];
        let (_, after, index) = pair[1];
        if before.output_artifact != after.input_artifact {
            findings.push(Finding::error(
                Rule::ArtifactChain,
                format!("{base}/transitions/{index}/phase"),
                format!(
                    "`{}` consumes {} but the previous transition `{}` produces {}",
                    after.name, after.input_artifact, before.name, before.output_artifact
                ),
            ));
        }
    }

    let mut class_names = HashMap::new();
    let mut operations = HashMap::new();
    for (index, class) in machine.mutation_classes.iter().enumerate() {
        let pointer = format!("{base}/mutation_classes/{index}");
        if class_names.insert(class.name.as_str(), index).is_some() {
            findings.push(Finding::error(
                Rule::DuplicateMutationClass,
                format!("{pointer}/name"),
                format!("mutation class `{}` is declared twice", class.name),
            ));
        }
        if let Some(state) = lookup_state(
            &class.earliest_invalidated,
            format!("{pointer}/earliest_invalidated"),
            findings,
        ) && state == 0
        {
            findings.push(Finding::error(
                Rule::MutationClassState,
                format!("{pointer}/earliest_invalidated"),
                format!("mutation class `{}` cannot invalidate the initial state", class.name),
            ));
        }
        for (position, operation) in class.operations.iter().enumerate() {
            if let Some(other) = operations.insert(operation.as_str(), class.name.as_str()) {
                findings.push(Finding::error(
                    Rule::DuplicateOperation,
                    format!("{pointer}/operations/{position}"),
                    format!("operation `{operation}` is already classified as `{other}`"),
                ));
            }
        }
    }
    lookup_state(&machine.proof_state, format!("{base}/proof_state"), findings);

    let mut previous = chain.last().map(|(_, phase, _)| *phase);
    for (index, name) in machine.finalization.iter().enumerate() {
        let pointer = format!("{base}/finalization/{index}");
        let Some(phase) = document.phase_by_name(name) else {
            findings.push(Finding::error(
                Rule::UnknownPhase,
                pointer,
                format!("finalization phase `{name}` is not declared in /phases"),
            ));
            previous = None;
            continue;
        };
        if phase.domain != machine.domain {
            findings.push(Finding::error(
                Rule::TransitionPhase,
                pointer.clone(),
                format!(
                    "`{name}` belongs to domain `{}`, not `{}`",
                    phase.domain, machine.domain
                ),
            ));
        }
        if phases_seen.contains_key(name.as_str()) {
            findings.push(Finding::error(
                Rule::DuplicateTransition,
                pointer.clone(),
                format!("`{name}` already drives a state transition"),
            ));
        }
        if let Some(before) = previous
            && before.output_artifact != phase.input_artifact
        {
            findings.push(Finding::error(
                Rule::ArtifactChain,
                pointer,
                format!(
                    "`{name}` consumes {} but `{}` before it produces {}",
                    phase.input_artifact, before.name, before.output_artifact
                ),
            ));
        }
        previous = Some(phase);
    }
}

fn is_upper_snake(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_uppercase())
        && text
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}
