//! Structural validation against the committed JSON Schemas, with the validator of [`crate::json_schema`].

use std::sync::OnceLock;

use schemars::schema_for;
use serde_json::Value;

use crate::abi::PluginAbiDeclaration;
use crate::diagnostic::{Finding, escape_token};
use crate::json_schema::{ErrorKind, Validator};
use crate::phase::PhaseSchemaDocument;
use crate::rule::Rule;
use crate::target::TargetDeclaration;

/// The committed JSON Schema of `PhaseSchema.json` (kept fresh by a test).
pub const COMMITTED_PHASE_SCHEMA: &str = include_str!("../json/phase-schema.schema.json");
/// The committed JSON Schema of target TOML files (kept fresh by a test).
pub const COMMITTED_TARGET_SCHEMA: &str = include_str!("../json/target.schema.json");
/// The committed JSON Schema of plugin ABI files, `abi/*.toml` (kept fresh by a test).
pub const COMMITTED_PLUGIN_ABI_SCHEMA: &str = include_str!("../json/plugin-abi.schema.json");

/// The JSON Schema the Rust types describe now, pretty-printed with a trailing newline.
pub fn generated_phase_schema() -> String {
    render(serde_json::to_value(schema_for!(PhaseSchemaDocument)))
}

/// The JSON Schema the Rust types describe now, pretty-printed with a trailing newline.
pub fn generated_target_schema() -> String {
    render(serde_json::to_value(schema_for!(TargetDeclaration)))
}

/// The JSON Schema the Rust types describe now, pretty-printed with a trailing newline.
pub fn generated_plugin_abi_schema() -> String {
    render(serde_json::to_value(schema_for!(PluginAbiDeclaration)))
}

fn render(value: Result<Value, serde_json::Error>) -> String {
    let text = value
        .and_then(|value| serde_json::to_string_pretty(&value))
        .unwrap_or_default();
    format!("{text}\n")
}

#[derive(Clone, Copy)]
pub(crate) enum DocumentKind {
    PhaseSchema,
    Target,
    PluginAbi,
}

fn validator(kind: DocumentKind) -> Result<&'static Validator, Finding> {
    static PHASE: OnceLock<Result<Validator, String>> = OnceLock::new();
    static TARGET: OnceLock<Result<Validator, String>> = OnceLock::new();
    static PLUGIN_ABI: OnceLock<Result<Validator, String>> = OnceLock::new();
    let (cell, text) = match kind {
        DocumentKind::PhaseSchema => (&PHASE, COMMITTED_PHASE_SCHEMA),
        DocumentKind::Target => (&TARGET, COMMITTED_TARGET_SCHEMA),
        DocumentKind::PluginAbi => (&PLUGIN_ABI, COMMITTED_PLUGIN_ABI_SCHEMA),
    };
    cell.get_or_init(|| {
        let schema: Value = serde_json::from_str(text).map_err(|error| error.to_string())?;
        Validator::compile(&schema)
    })
    .as_ref()
    .map_err(|message| {
        Finding::error(
            Rule::InternalSchema,
            "",
            format!("the committed JSON Schema is unusable: {message}"),
        )
    })
}

/// Every structural problem of `instance`, in document order.
pub(crate) fn structural_findings(kind: DocumentKind, instance: &Value) -> Vec<Finding> {
    let validator = match validator(kind) {
        Ok(validator) => validator,
        Err(finding) => return vec![finding],
    };
    let mut findings = Vec::new();
    for error in validator.errors(instance) {
        let pointer = &error.instance_path;
        match &error.kind {
            ErrorKind::AdditionalProperties { unexpected } => {
                for key in unexpected {
                    findings.push(
                        Finding::error(
                            Rule::UnknownKey,
                            format!("{pointer}/{}", escape_token(key)),
                            format!("unknown key `{key}`"),
                        )
                        .at_key(),
                    );
                }
            }
            ErrorKind::Required { property } => findings.push(Finding::error(
                Rule::MissingKey,
                pointer.clone(),
                format!("missing required key `{property}`"),
            )),
            _ => findings.push(Finding::error(Rule::Schema, pointer.clone(), error.to_string())),
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_schemas_compile() {
        assert!(validator(DocumentKind::PhaseSchema).is_ok());
        assert!(validator(DocumentKind::Target).is_ok());
        assert!(validator(DocumentKind::PluginAbi).is_ok());
    }
}
