//! The baseline diff: every change between an old and a new phase schema, classified under the stability
//! rules in the spirit of `buf breaking`.
//!
//! Phases are matched by name. For a phase that was stable, removing it, changing its id, symbol, domain,
//! kind or artifacts, taking a capability or observer point away, loosening a sealed gate, opening a phase
//! that was closed (observe-only) and downgrading its stability are breaking; adding phases, observer points
//! or capabilities to an open phase is compatible. Experimental phases may change in any way ("allowed").
//! Renaming a verifier or dropping a builtin fallback is reported as a warning.

use neverc_schema::{Phase, PhaseSchemaDocument, PolicyFlag, Stability, StateMachine};
use serde::Serialize;

use crate::sealing::{id_text, is_sealed};

/// How much a change matters to plugins and hosts written against the old schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeClass {
    /// Old plugins keep working.
    Compatible,
    /// The phase was experimental: no promise was made.
    Allowed,
    /// Worth a look, but no promise is broken.
    Warning,
    /// A promise of the old schema is broken.
    Breaking,
}

impl ChangeClass {
    pub fn name(self) -> &'static str {
        match self {
            ChangeClass::Compatible => "compatible",
            ChangeClass::Allowed => "allowed",
            ChangeClass::Warning => "warning",
            ChangeClass::Breaking => "breaking",
        }
    }
}

/// One classified change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    pub class: ChangeClass,
    /// Short stable name of the rule, such as `phase-removed`.
    pub rule: &'static str,
    /// The phase, family or state machine the change is about.
    pub subject: String,
    pub message: String,
}

/// All changes from `old` to `new`.
#[derive(Clone, Debug, Serialize)]
pub struct BaselineDiff {
    pub old: String,
    pub new: String,
    pub changes: Vec<Change>,
}

impl BaselineDiff {
    pub fn count(&self, class: ChangeClass) -> usize {
        self.changes.iter().filter(|change| change.class == class).count()
    }

    pub fn is_breaking(&self) -> bool {
        self.count(ChangeClass::Breaking) > 0
    }
}

/// The changes found so far, in the order they were found.
pub(crate) struct Changes(pub(crate) Vec<Change>);

impl Changes {
    pub(crate) fn push(&mut self, class: ChangeClass, rule: &'static str, subject: &str, message: String) {
        self.0.push(Change {
            class,
            rule,
            subject: subject.to_string(),
            message,
        });
    }
}

/// Classifies every change from the baseline `old` (named `old_name`) to `new`.
pub fn diff_schemas(
    old_name: &str,
    old: &PhaseSchemaDocument,
    new_name: &str,
    new: &PhaseSchemaDocument,
) -> BaselineDiff {
    let mut changes = Changes(Vec::new());
    if old.schema_version != new.schema_version {
        changes.push(
            ChangeClass::Breaking,
            "schema-version",
            "schema_version",
            format!(
                "schema_version changed from {} to {}",
                old.schema_version, new.schema_version
            ),
        );
    }
    diff_families(old, new, &mut changes);
    for old_phase in &old.phases {
        match new.phase_by_name(&old_phase.name) {
            Some(new_phase) => diff_phase(old_phase, new_phase, &mut changes),
            None => {
                let class = breaking_if_stable(old_phase);
                changes.push(
                    class,
                    "phase-removed",
                    &old_phase.name,
                    format!(
                        "{} phase `{}` was removed",
                        old_phase.stability.schema_name(),
                        old_phase.name
                    ),
                );
            }
        }
    }
    for new_phase in new
        .phases
        .iter()
        .filter(|phase| old.phase_by_name(&phase.name).is_none())
    {
        changes.push(
            ChangeClass::Compatible,
            "phase-added",
            &new_phase.name,
            format!(
                "{} phase `{}` was added",
                new_phase.stability.schema_name(),
                new_phase.name
            ),
        );
    }
    diff_machines(old, new, &mut changes);
    BaselineDiff {
        old: old_name.to_string(),
        new: new_name.to_string(),
        changes: changes.0,
    }
}

fn breaking_if_stable(phase: &Phase) -> ChangeClass {
    match phase.stability {
        Stability::Stable => ChangeClass::Breaking,
        Stability::Experimental => ChangeClass::Allowed,
    }
}

fn diff_families(old: &PhaseSchemaDocument, new: &PhaseSchemaDocument, changes: &mut Changes) {
    for family in &old.extension_families {
        match new
            .extension_families
            .iter()
            .find(|other| other.namespace == family.namespace)
        {
            None => {
                // A family belongs to the domain its namespace names; if that domain made no promise (all of
                // its phases were experimental), the family made none either.
                let domain = family
                    .namespace
                    .strip_prefix("neverc.")
                    .and_then(|rest| rest.strip_suffix(".extension"))
                    .unwrap_or_default();
                let promised = old
                    .phases
                    .iter()
                    .any(|phase| phase.domain == domain && phase.stability == Stability::Stable);
                changes.push(
                    if promised {
                        ChangeClass::Breaking
                    } else {
                        ChangeClass::Allowed
                    },
                    "family-removed",
                    &family.namespace,
                    format!(
                        "extension family `{}` was removed: plugins using its ids no longer load{}",
                        family.namespace,
                        if promised {
                            ""
                        } else {
                            " (its domain had only experimental phases)"
                        }
                    ),
                );
            }
            Some(other) if other != family => {
                let widened = other.id_high == family.id_high
                    && other.id_low_min.0 <= family.id_low_min.0
                    && other.id_low_max.0 >= family.id_low_max.0;
                let (class, how) = if widened {
                    (ChangeClass::Compatible, "widened")
                } else {
                    (ChangeClass::Breaking, "moved or narrowed")
                };
                changes.push(
                    class,
                    "family-range",
                    &family.namespace,
                    format!(
                        "extension family `{}` {how}: {:#018x} {:#x}..={:#x} → {:#018x} {:#x}..={:#x}",
                        family.namespace,
                        family.id_high.0,
                        family.id_low_min.0,
                        family.id_low_max.0,
                        other.id_high.0,
                        other.id_low_min.0,
                        other.id_low_max.0
                    ),
                );
            }
            Some(_) => {}
        }
    }
    for family in new.extension_families.iter().filter(|family| {
        !old.extension_families
            .iter()
            .any(|other| other.namespace == family.namespace)
    }) {
        changes.push(
            ChangeClass::Compatible,
            "family-added",
            &family.namespace,
            format!("extension family `{}` was added", family.namespace),
        );
    }
}

/// Capabilities a plugin may ask for, in policy order.
const CAPABILITIES: [PolicyFlag; 4] = [
    PolicyFlag::Observable,
    PolicyFlag::Interceptable,
    PolicyFlag::Replaceable,
    PolicyFlag::SkippableWithProof,
];

/// A closed phase lets plugins only observe it.
fn is_closed(phase: &Phase) -> bool {
    !CAPABILITIES[1..].iter().any(|flag| phase.policy.contains(flag))
}

fn diff_phase(old: &Phase, new: &Phase, changes: &mut Changes) {
    let name = old.name.as_str();
    let stable = old.stability == Stability::Stable;
    // Experimental phases carry no promise: every change is allowed, but still listed.
    let promise = |class: ChangeClass| if stable { class } else { ChangeClass::Allowed };

    if old.id != new.id {
        changes.push(
            promise(ChangeClass::Breaking),
            "phase-id",
            name,
            format!("`{name}` changed id {} → {}", id_text(&old.id), id_text(&new.id)),
        );
    }
    for (what, before, after) in [
        ("symbol", &old.symbol, &new.symbol),
        ("domain", &old.domain, &new.domain),
    ] {
        if before != after {
            changes.push(
                promise(ChangeClass::Breaking),
                if what == "symbol" {
                    "phase-symbol"
                } else {
                    "phase-domain"
                },
                name,
                format!("`{name}` changed {what} `{before}` → `{after}`"),
            );
        }
    }
    if old.kind != new.kind {
        changes.push(
            promise(ChangeClass::Breaking),
            "phase-kind",
            name,
            format!("`{name}` changed kind {:?} → {:?}", old.kind, new.kind),
        );
    }
    for (what, before, after) in [
        ("input", &old.input_artifact, &new.input_artifact),
        ("output", &old.output_artifact, &new.output_artifact),
    ] {
        if before != after {
            changes.push(
                promise(ChangeClass::Breaking),
                "phase-artifact",
                name,
                format!(
                    "`{name}` changed its {what} artifact {} → {}",
                    id_text(before),
                    id_text(after)
                ),
            );
        }
    }

    let was_sealed = is_sealed(old);
    let removed: Vec<&str> = CAPABILITIES
        .iter()
        .filter(|flag| old.policy.contains(flag) && !new.policy.contains(flag))
        .map(|flag| flag.schema_name())
        .collect();
    let added: Vec<&str> = CAPABILITIES
        .iter()
        .filter(|flag| !old.policy.contains(flag) && new.policy.contains(flag))
        .map(|flag| flag.schema_name())
        .collect();
    if was_sealed && (!is_sealed(new) || !added.is_empty()) {
        changes.push(
            promise(ChangeClass::Breaking),
            "sealed-gate-loosened",
            name,
            format!(
                "sealed gate `{name}` was loosened: policy {} → {}, gate {:?} → {:?}",
                policy_text(&old.policy),
                policy_text(&new.policy),
                old.gate,
                new.gate
            ),
        );
    } else if !added.is_empty() && is_closed(old) {
        changes.push(
            promise(ChangeClass::Breaking),
            "closed-phase-opened",
            name,
            format!("closed phase `{name}` gained {}: it was observe-only", added.join(", ")),
        );
    } else if !added.is_empty() {
        changes.push(
            ChangeClass::Compatible,
            "capability-added",
            name,
            format!("`{name}` gained {}", added.join(", ")),
        );
    }
    if !was_sealed && is_sealed(new) {
        changes.push(
            promise(ChangeClass::Breaking),
            "phase-sealed",
            name,
            format!(
                "`{name}` became a sealed gate ({:?}): plugins that intercepted or replaced it fail",
                new.gate
            ),
        );
    } else if was_sealed && is_sealed(new) && old.gate != new.gate {
        changes.push(
            promise(ChangeClass::Breaking),
            "gate-kind",
            name,
            format!("`{name}` changed gate {:?} → {:?}", old.gate, new.gate),
        );
    }
    if !removed.is_empty() {
        changes.push(
            promise(ChangeClass::Breaking),
            "capability-removed",
            name,
            format!(
                "`{name}` lost {}: plugins that asked for it fail to register",
                removed.join(", ")
            ),
        );
    }

    let points_removed: Vec<&str> = old
        .observer_points
        .iter()
        .filter(|point| !new.observer_points.contains(point))
        .map(|point| point.schema_name())
        .collect();
    let points_added: Vec<&str> = new
        .observer_points
        .iter()
        .filter(|point| !old.observer_points.contains(point))
        .map(|point| point.schema_name())
        .collect();
    if !points_removed.is_empty() {
        changes.push(
            promise(ChangeClass::Breaking),
            "observer-point-removed",
            name,
            format!(
                "`{name}` no longer offers observer point(s) {}",
                points_removed.join(", ")
            ),
        );
    }
    if !points_added.is_empty() {
        changes.push(
            ChangeClass::Compatible,
            "observer-point-added",
            name,
            format!("`{name}` offers new observer point(s) {}", points_added.join(", ")),
        );
    }

    match (old.stability, new.stability) {
        (Stability::Stable, Stability::Experimental) => changes.push(
            ChangeClass::Breaking,
            "stability-downgrade",
            name,
            format!("stable phase `{name}` was downgraded to experimental"),
        ),
        (Stability::Experimental, Stability::Stable) => changes.push(
            ChangeClass::Compatible,
            "stability-promotion",
            name,
            format!("experimental phase `{name}` became stable"),
        ),
        _ => {}
    }
    if old.verifier != new.verifier {
        changes.push(
            promise(ChangeClass::Warning),
            "verifier-renamed",
            name,
            format!("`{name}` changed verifier `{}` → `{}`", old.verifier, new.verifier),
        );
    }
    if old.builtin_fallback && !new.builtin_fallback {
        changes.push(
            promise(ChangeClass::Warning),
            "fallback-removed",
            name,
            format!("`{name}` no longer has a builtin fallback: hosts need a provider to run it"),
        );
    } else if !old.builtin_fallback && new.builtin_fallback {
        changes.push(
            ChangeClass::Compatible,
            "fallback-added",
            name,
            format!("`{name}` gained a builtin fallback"),
        );
    }
}

fn policy_text(policy: &[PolicyFlag]) -> String {
    policy
        .iter()
        .map(|flag| flag.schema_name())
        .collect::<Vec<_>>()
        .join("|")
}

fn diff_machines(old: &PhaseSchemaDocument, new: &PhaseSchemaDocument, changes: &mut Changes) {
    let empty = Default::default();
    let old_machines = old.state_machines.as_ref().unwrap_or(&empty);
    let new_machines = new.state_machines.as_ref().unwrap_or(&empty);
    for (name, machine) in old_machines {
        match new_machines.get(name) {
            None => changes.push(
                ChangeClass::Breaking,
                "machine-removed",
                name,
                format!("state machine `{name}` was removed"),
            ),
            Some(other) => diff_machine(name, (old, machine), (new, other), changes),
        }
    }
    for name in new_machines.keys().filter(|name| !old_machines.contains_key(*name)) {
        changes.push(
            ChangeClass::Compatible,
            "machine-added",
            name,
            format!("state machine `{name}` was added"),
        );
    }
}

/// Whether `phase` was promised to plugins in `document`: declared and stable.
fn is_stable(document: &PhaseSchemaDocument, phase: &str) -> bool {
    document
        .phase_by_name(phase)
        .is_some_and(|phase| phase.stability == Stability::Stable)
}

fn diff_machine(
    name: &str,
    (old_document, old): (&PhaseSchemaDocument, &StateMachine),
    (new_document, new): (&PhaseSchemaDocument, &StateMachine),
    changes: &mut Changes,
) {
    if old.domain != new.domain {
        changes.push(
            ChangeClass::Breaking,
            "machine-domain",
            name,
            format!(
                "`{name}` now drives domain `{}` instead of `{}`",
                new.domain, old.domain
            ),
        );
    }
    if old.states != new.states {
        // States appended after the old ones keep every old state where it was.
        let appended = new.states.starts_with(&old.states);
        let (class, how) = if appended {
            (ChangeClass::Compatible, "gained states at its end")
        } else {
            (ChangeClass::Breaking, "changed its states")
        };
        changes.push(
            class,
            "machine-states",
            name,
            format!("`{name}` {how}: {} → {}", old.states.join(" "), new.states.join(" ")),
        );
    }
    for transition in &old.transitions {
        let promised = is_stable(old_document, &transition.phase);
        let promise = |class: ChangeClass| if promised { class } else { ChangeClass::Allowed };
        match new.transitions.iter().find(|other| other.phase == transition.phase) {
            None => changes.push(
                promise(ChangeClass::Breaking),
                "machine-transition",
                name,
                format!("`{}` no longer drives a step of `{name}`", transition.phase),
            ),
            Some(other) if other.from != transition.from || other.to != transition.to => changes.push(
                promise(ChangeClass::Breaking),
                "machine-transition",
                name,
                format!(
                    "`{}` moved from {} → {} to {} → {} in `{name}`",
                    transition.phase, transition.from, transition.to, other.from, other.to
                ),
            ),
            Some(other) if other.rerun_budget != transition.rerun_budget => {
                // A smaller budget can make a plugin that converged before fail to converge.
                let class = if other.rerun_budget < transition.rerun_budget {
                    promise(ChangeClass::Breaking)
                } else {
                    ChangeClass::Compatible
                };
                changes.push(
                    class,
                    "rerun-budget",
                    name,
                    format!(
                        "the rerun budget of `{}` changed {} → {}",
                        transition.phase, transition.rerun_budget, other.rerun_budget
                    ),
                );
            }
            Some(_) => {}
        }
    }
    for transition in new
        .transitions
        .iter()
        .filter(|transition| !old.transitions.iter().any(|other| other.phase == transition.phase))
    {
        changes.push(
            ChangeClass::Compatible,
            "machine-transition-added",
            name,
            format!(
                "`{}` drives a new step {} → {} of `{name}`",
                transition.phase, transition.from, transition.to
            ),
        );
    }
    if old.finalization != new.finalization {
        // Only the order of the promised (stable) steps is a promise.
        let promised = |steps: &[String], document: &PhaseSchemaDocument| -> Vec<String> {
            steps.iter().filter(|step| is_stable(document, step)).cloned().collect()
        };
        let kept = promised(&old.finalization, old_document) == promised(&new.finalization, old_document)
            && promised(&old.finalization, new_document)
                .iter()
                .all(|step| new.finalization.contains(step));
        changes.push(
            if kept {
                ChangeClass::Allowed
            } else {
                ChangeClass::Breaking
            },
            "machine-finalization",
            name,
            format!(
                "the finalization of `{name}` changed: {} → {}",
                old.finalization.join(", "),
                new.finalization.join(", ")
            ),
        );
    }
    if old.proof_state != new.proof_state {
        changes.push(
            ChangeClass::Breaking,
            "machine-proof-state",
            name,
            format!(
                "`{name}` issues proofs from {} instead of {}",
                new.proof_state, old.proof_state
            ),
        );
    }
    for class in &old.mutation_classes {
        let Some(other) = new.mutation_classes.iter().find(|other| other.name == class.name) else {
            changes.push(
                ChangeClass::Breaking,
                "mutation-class",
                name,
                format!("mutation class `{}` of `{name}` was removed", class.name),
            );
            continue;
        };
        if other.earliest_invalidated != class.earliest_invalidated {
            changes.push(
                ChangeClass::Breaking,
                "mutation-class",
                name,
                format!(
                    "mutation class `{}` of `{name}` now invalidates {} instead of {}",
                    class.name, other.earliest_invalidated, class.earliest_invalidated
                ),
            );
        }
        let removed: Vec<&str> = class
            .operations
            .iter()
            .filter(|operation| !other.operations.contains(operation))
            .map(String::as_str)
            .collect();
        if !removed.is_empty() {
            changes.push(
                ChangeClass::Breaking,
                "mutation-class",
                name,
                format!(
                    "mutation class `{}` of `{name}` lost {}",
                    class.name,
                    removed.join(", ")
                ),
            );
        }
        let added: Vec<&str> = other
            .operations
            .iter()
            .filter(|operation| !class.operations.contains(operation))
            .map(String::as_str)
            .collect();
        if !added.is_empty() {
            changes.push(
                ChangeClass::Compatible,
                "mutation-class-operation-added",
                name,
                format!(
                    "mutation class `{}` of `{name}` gained {}",
                    class.name,
                    added.join(", ")
                ),
            );
        }
    }
    for class in new
        .mutation_classes
        .iter()
        .filter(|class| !old.mutation_classes.iter().any(|other| other.name == class.name))
    {
        changes.push(
            ChangeClass::Compatible,
            "mutation-class-added",
            name,
            format!(
                "mutation class `{}` ({}) of `{name}` was added",
                class.name,
                class.operations.join(", ")
            ),
        );
    }
}
