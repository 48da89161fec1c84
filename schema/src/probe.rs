//! The structural findings of a JSON value, as the loader makes them, for the mutation corpus of
//! `tests/structural_corpus.rs`, which also reaches values no declaration text can hold (a `null` in a target,
//! a root that is not a table); not a stable API.

use serde_json::Value;

use crate::structural::{DocumentKind, structural_findings};
use crate::toml_map::parse_toml;

/// One structural finding as `(rule, JSON pointer, message, points at the key)`.
pub type FindingParts = (&'static str, String, String, bool);

fn parts(kind: DocumentKind, value: &Value) -> Vec<FindingParts> {
    structural_findings(kind, value)
        .into_iter()
        .map(|finding| (finding.rule.code(), finding.pointer, finding.message, finding.at_key))
        .collect()
}

/// The structural findings of a phase schema document, as the loader makes them.
pub fn phase_schema_findings(value: &Value) -> Vec<FindingParts> {
    parts(DocumentKind::PhaseSchema, value)
}

/// The structural findings of a target declaration, as the loader makes them.
pub fn target_findings(value: &Value) -> Vec<FindingParts> {
    parts(DocumentKind::Target, value)
}

/// A target TOML text turned into the JSON value the loader validates, or `None` if it does not parse.
pub fn target_value(text: &str) -> Option<Value> {
    parse_toml("target.toml", text).ok().map(|(value, _)| value)
}
