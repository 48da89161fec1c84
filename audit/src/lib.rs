//! Audits of a phase schema, for people who decide what plugins may touch.
//!
//! - [`sealing`]: per domain, the sealed gates and what each guards, every phase's capabilities, the
//!   invariants of validation and where a schema breaks them.
//! - [`smells`]: policies that are legal but worth a human look.
//! - [`baseline`]: every change between two schema versions, classified like `buf breaking`.
//! - [`abi_baseline`]: every change between two versions of the plugin ABI declarations (`abi/*.toml`),
//!   classified the same way.
//! - [`manifest`]: what a plugin manifest asks for, checked by the same function the link runtime uses when a
//!   Rust plugin registers.
//!
//! The renderers ([`text`], [`dot`], [`html`]) only format these results.

pub mod abi_baseline;
pub mod baseline;
pub mod dot;
pub mod html;
pub mod manifest;
pub mod sealing;
pub mod smells;
pub mod text;

use serde::Serialize;

/// Everything one `audit` run found: the sealing audit of the schema, and the baseline diffs (of the schema and
/// of the plugin ABI) and the manifest check when they were asked for.
#[derive(Clone, Debug, Serialize)]
pub struct AuditReport {
    pub sealing: sealing::SealingAudit,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<baseline::BaselineDiff>,
    /// The diff of the plugin ABI declarations against older ones (`--abi-baseline`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abi_baseline: Option<baseline::BaselineDiff>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifest: Option<manifest::ManifestAudit>,
}

impl AuditReport {
    /// Whether the run should fail: an invariant of validation broken, a breaking change against either
    /// baseline, or a manifest request the policy refuses.
    pub fn fails(&self) -> bool {
        !self.sealing.is_valid()
            || self.baseline.as_ref().is_some_and(baseline::BaselineDiff::is_breaking)
            || self
                .abi_baseline
                .as_ref()
                .is_some_and(baseline::BaselineDiff::is_breaking)
            || self
                .manifest
                .as_ref()
                .is_some_and(|manifest| manifest.violations().next().is_some())
    }
}
