//! Types of `PhaseSchema.json`: NeverC's published format plus our optional `state_machines` extension.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::hex::{HexU64, IdPair};

/// The whole phase schema document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "NeverC phase schema")]
pub struct PhaseSchemaDocument {
    /// Format version; always 1.
    #[schemars(range(min = 1, max = 1))]
    pub schema_version: u32,
    /// Id ranges reserved for phases that plugins add.
    pub extension_families: Vec<ExtensionFamily>,
    /// Every built-in phase.
    pub phases: Vec<Phase>,
    /// neverc-spec extension: the state machines NeverC keeps in C++, keyed by machine name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_machines: Option<BTreeMap<String, StateMachine>>,
}

/// A range of phase ids that plugins of one namespace may use.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtensionFamily {
    /// `neverc.<domain>.extension`.
    #[schemars(regex(pattern = r"^neverc\.[a-z][a-z0-9_]*\.extension$"))]
    pub namespace: String,
    pub id_high: HexU64,
    pub id_low_min: HexU64,
    pub id_low_max: HexU64,
}

/// One phase entry: exactly NeverC's thirteen keys.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// Dotted name starting with `neverc.<domain>.`.
    #[schemars(regex(pattern = r"^neverc\.[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$"))]
    pub name: String,
    /// UPPER_SNAKE symbol used for generated constants.
    #[schemars(regex(pattern = r"^[A-Z][A-Z0-9_]*$"))]
    pub symbol: String,
    pub id: IdPair,
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_]*$"))]
    pub domain: String,
    pub kind: PhaseKind,
    /// Dotted name of the verifier that checks the phase's output.
    #[schemars(regex(pattern = r"^neverc\.[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$"))]
    pub verifier: String,
    pub input_artifact: IdPair,
    pub output_artifact: IdPair,
    #[schemars(length(min = 1))]
    pub policy: Vec<PolicyFlag>,
    #[schemars(length(min = 1))]
    pub observer_points: Vec<ObserverPoint>,
    pub gate: Gate,
    pub stability: Stability,
    pub builtin_fallback: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseKind {
    /// Turns an input artifact into an output artifact.
    Transition,
    /// Reports that something happened; can only be observed.
    Event,
}

impl PhaseKind {
    /// The spelling in the schema.
    pub fn schema_name(self) -> &'static str {
        match self {
            PhaseKind::Transition => "transition",
            PhaseKind::Event => "event",
        }
    }
}

/// A policy capability. The discriminant is the bit NeverC's C ABI uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PolicyFlag {
    Observable = 1,
    Interceptable = 2,
    Replaceable = 4,
    SkippableWithProof = 8,
    SealedHostGate = 16,
}

impl PolicyFlag {
    pub const ALL: [PolicyFlag; 5] = [
        PolicyFlag::Observable,
        PolicyFlag::Interceptable,
        PolicyFlag::Replaceable,
        PolicyFlag::SkippableWithProof,
        PolicyFlag::SealedHostGate,
    ];

    pub fn bit(self) -> u32 {
        self as u32
    }

    /// The spelling used in the schema and in generated constants.
    pub fn schema_name(self) -> &'static str {
        match self {
            PolicyFlag::Observable => "OBSERVABLE",
            PolicyFlag::Interceptable => "INTERCEPTABLE",
            PolicyFlag::Replaceable => "REPLACEABLE",
            PolicyFlag::SkippableWithProof => "SKIPPABLE_WITH_PROOF",
            PolicyFlag::SealedHostGate => "SEALED_HOST_GATE",
        }
    }
}

/// Where an observer may run. The discriminant is the bit NeverC's C ABI uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ObserverPoint {
    Before = 1,
    After = 2,
    AfterCommit = 4,
}

impl ObserverPoint {
    pub const ALL: [ObserverPoint; 3] = [ObserverPoint::Before, ObserverPoint::After, ObserverPoint::AfterCommit];

    pub fn bit(self) -> u32 {
        self as u32
    }

    pub fn schema_name(self) -> &'static str {
        match self {
            ObserverPoint::Before => "BEFORE",
            ObserverPoint::After => "AFTER",
            ObserverPoint::AfterCommit => "AFTER_COMMIT",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// An ordinary phase.
    Transition,
    /// A host-owned verifier that plugins may only observe.
    SealedVerifier,
    /// The host-owned commit of outputs; observers see it BEFORE and AFTER_COMMIT.
    SealedCommit,
}

impl Gate {
    pub fn is_sealed(self) -> bool {
        !matches!(self, Gate::Transition)
    }

    /// The spelling in the schema.
    pub fn schema_name(self) -> &'static str {
        match self {
            Gate::Transition => "transition",
            Gate::SealedVerifier => "sealed_verifier",
            Gate::SealedCommit => "sealed_commit",
        }
    }
}

/// Compatibility promise of a phase, from weakest to strongest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stability {
    Experimental,
    Stable,
}

impl Stability {
    /// The spelling in the schema.
    pub fn schema_name(self) -> &'static str {
        match self {
            Stability::Experimental => "experimental",
            Stability::Stable => "stable",
        }
    }
}

/// neverc-spec extension: a state machine over one domain's graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateMachine {
    /// The domain whose phases drive this machine.
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_]*$"))]
    pub domain: String,
    /// States in order; the first is the initial state.
    #[schemars(length(min = 1))]
    pub states: Vec<StateName>,
    /// One transition phase per step, each advancing the state by one.
    pub transitions: Vec<StateTransition>,
    /// Classes of staged mutations and the earliest state each invalidates.
    #[serde(default)]
    pub mutation_classes: Vec<MutationClass>,
    /// The state from which proofs are issued.
    pub proof_state: StateName,
    /// Phases that run, in this order, once the final state is reached (gates, commit, events).
    #[serde(default)]
    pub finalization: Vec<String>,
}

/// An UPPER_SNAKE state name.
pub type StateName = String;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateTransition {
    /// Name of a declared phase of kind `transition`.
    pub phase: String,
    pub from: StateName,
    pub to: StateName,
    /// How many extra runs the phase gets before the link fails to converge.
    pub rerun_budget: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MutationClass {
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_]*$"))]
    pub name: String,
    /// The earliest state a committed mutation of this class invalidates; the graph drops below it.
    pub earliest_invalidated: StateName,
    /// The staging operations (link API calls) that belong to this class.
    #[serde(default)]
    pub operations: Vec<String>,
}

/// Bit value of a policy list.
pub fn policy_bits(flags: &[PolicyFlag]) -> u32 {
    flags.iter().fold(0, |bits, flag| bits | flag.bit())
}

/// Bit value of an observer point list.
pub fn observer_point_bits(points: &[ObserverPoint]) -> u32 {
    points.iter().fold(0, |bits, point| bits | point.bit())
}

impl PhaseSchemaDocument {
    pub fn phase_by_name(&self, name: &str) -> Option<&Phase> {
        self.phases.iter().find(|phase| phase.name == name)
    }
}
