//! Plugin manifests: what a plugin asks for, in TOML or JSON, checked against a schema's tables with the
//! function the link runtime calls when a Rust plugin registers ([`check_phase_request`]).
//!
//! ```toml
//! plugin = "layout-tweaks"
//! providers = ["image-verifier"]          # linker, object-merge, image-verifier, lto
//!
//! [[phases]]
//! name = "neverc.link.layout"
//! observe = ["BEFORE", "AFTER"]           # BEFORE, AFTER, AFTER_COMMIT
//! intercept = true
//! replace = false
//! skip_with_proof = false
//! ```

use neverc_tables::PhaseTables;
use neverc_tables::generated::phases::POLICY_SEALED_HOST_GATE;
use neverc_tables::policy::{Capability, ObserverPoint, ProviderKind, Request, check_phase_request};
use serde::{Deserialize, Serialize};

/// A manifest as written.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PluginManifest {
    pub plugin: String,
    #[serde(default)]
    pub providers: Vec<String>,
    #[serde(default)]
    pub phases: Vec<PhaseRequests>,
}

/// What the plugin asks of one phase.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseRequests {
    pub name: String,
    #[serde(default)]
    pub observe: Vec<String>,
    #[serde(default)]
    pub intercept: bool,
    #[serde(default)]
    pub replace: bool,
    #[serde(default)]
    pub skip_with_proof: bool,
}

/// A manifest that cannot be read as one.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct ManifestError {
    pub file: String,
    /// 1-based; 0 when the parser did not say.
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Parses a manifest; JSON if the text starts with `{`, TOML otherwise.
pub fn parse_manifest(file: &str, text: &str) -> Result<PluginManifest, ManifestError> {
    // JSON when it looks like JSON: an object, or anything else that is valid JSON (an array must not be read
    // as TOML, where `[` opens a table header); TOML otherwise.
    let trimmed = text.trim_start();
    let is_json = trimmed.starts_with('{')
        || (trimmed.starts_with('[') && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok());
    if is_json && !trimmed.starts_with('{') {
        let (line, column) = line_column(text, text.len() - trimmed.len());
        return Err(ManifestError {
            file: file.to_string(),
            line,
            column,
            message: "a JSON plugin manifest is one object (`{\"plugin\": ..., \"phases\": [...]}`), not an array"
                .to_string(),
        });
    }
    if is_json {
        return serde_json::from_str(text).map_err(|error| ManifestError {
            file: file.to_string(),
            line: error.line(),
            column: error.column(),
            message: error.to_string(),
        });
    }
    toml::from_str(text).map_err(|error| {
        let (line, column) = error.span().map_or((0, 0), |span| line_column(text, span.start));
        ManifestError {
            file: file.to_string(),
            line,
            column,
            message: error.message().to_string(),
        }
    })
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |tail| tail.chars().count()) + 1;
    (line, column)
}

/// One request of the manifest and the verdict of the policy check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RequestVerdict {
    /// What was asked, such as `intercept neverc.link.commit` or `provider linker`.
    pub request: String,
    pub phase: String,
    pub allowed: bool,
    /// The rule a refusal breaks: `sealed-gate` (sealed gates can only be observed), `policy` (the phase's
    /// declared policy lacks the capability), `observer-point` (the phase offers no such point),
    /// `unknown-phase`, `unknown-provider` or `unknown-observer-point`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<&'static str>,
    /// The status code of a refusal (`POLICY_VIOLATION`, `INVALID_ARGUMENT`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
    /// The refusal's message: the runtime's, word for word.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Every request of a manifest with its verdict, in manifest order.
#[derive(Clone, Debug, Serialize)]
pub struct ManifestAudit {
    pub file: String,
    pub plugin: String,
    pub requests: Vec<RequestVerdict>,
}

impl ManifestAudit {
    pub fn violations(&self) -> impl Iterator<Item = &RequestVerdict> {
        self.requests.iter().filter(|verdict| !verdict.allowed)
    }
}

fn verdict(tables: &'static PhaseTables, what: String, phase: &str, request: Request) -> RequestVerdict {
    match check_phase_request(tables, phase, request) {
        Ok(_) => RequestVerdict {
            request: what,
            phase: phase.to_string(),
            allowed: true,
            rule: None,
            code: None,
            message: None,
        },
        Err(status) => {
            let record = tables.phase_by_name(phase);
            let rule = match (record, request) {
                (None, _) => "unknown-phase",
                (Some(record), Request::Observe(_)) if record.allows(Capability::Observe.policy().0) => {
                    "observer-point"
                }
                (Some(record), _) if record.allows(POLICY_SEALED_HOST_GATE) => "sealed-gate",
                (Some(_), _) => "policy",
            };
            RequestVerdict {
                request: what,
                phase: phase.to_string(),
                allowed: false,
                rule: Some(rule),
                code: Some(status.code.name()),
                message: Some(status.message),
            }
        }
    }
}

fn refused(what: String, phase: &str, rule: &'static str, message: String) -> RequestVerdict {
    RequestVerdict {
        request: what,
        phase: phase.to_string(),
        allowed: false,
        rule: Some(rule),
        code: Some("INVALID_ARGUMENT"),
        message: Some(message),
    }
}

/// Checks every request of a manifest against the tables.
pub fn audit_manifest(file: &str, manifest: &PluginManifest, tables: &'static PhaseTables) -> ManifestAudit {
    let mut requests = Vec::new();
    for provider in &manifest.providers {
        let what = format!("provider {provider}");
        match ProviderKind::ALL.into_iter().find(|kind| kind.name() == provider) {
            Some(kind) => {
                let (phase, request) = kind.request();
                requests.push(verdict(tables, what, phase, request));
            }
            None => requests.push(refused(
                what,
                "",
                "unknown-provider",
                format!("unknown provider `{provider}` (linker, object-merge, image-verifier or lto)"),
            )),
        }
    }
    for entry in &manifest.phases {
        let phase = entry.name.as_str();
        let asks = !entry.observe.is_empty() || entry.intercept || entry.replace || entry.skip_with_proof;
        if !asks && tables.phase_by_name(phase).is_none() {
            // Nothing requested, but a name no schema declares is still a mistake worth a refusal.
            requests.push(refused(
                format!("phase {phase}"),
                phase,
                "unknown-phase",
                format!("unknown phase `{phase}`"),
            ));
        }
        for point in &entry.observe {
            let what = format!("observe {phase} {point}");
            match ObserverPoint::from_schema_name(point) {
                Some(point) => requests.push(verdict(tables, what, phase, Request::Observe(point))),
                None => requests.push(refused(
                    what,
                    phase,
                    "unknown-observer-point",
                    format!("unknown observer point `{point}` (BEFORE, AFTER or AFTER_COMMIT)"),
                )),
            }
        }
        for (asked, word, request) in [
            (entry.intercept, "intercept", Request::Intercept),
            (entry.replace, "replace", Request::Replace),
            (entry.skip_with_proof, "skip_with_proof", Request::SkipWithProof),
        ] {
            if asked {
                requests.push(verdict(tables, format!("{word} {phase}"), phase, request));
            }
        }
    }
    ManifestAudit {
        file: file.to_string(),
        plugin: manifest.plugin.clone(),
        requests,
    }
}
