//! Structural validation against the committed JSON Schemas, with the `jsonschema` crate.
//!
//! Each committed schema is compiled once per process (draft 2020-12, offline: every `$ref` points into the
//! same document, and a reference to anything else fails to compile rather than being fetched). `format` is
//! left an annotation, as draft 2020-12 makes it: the formats schemars writes (`uint32`, `uint64`...) come
//! with the `minimum` and `maximum` that assert them. Patterns run on the `regex` engine, in time linear in the
//! string (the committed patterns need no backtracking; one that did would fail to compile, and the test that
//! the committed schemas compile would say so). The crate's errors become findings at the JSON pointer
//! of the instance they are about: closed objects' extra members as `unknown-key` at each member's key, absent
//! required members as `missing-key` at the object, everything else as `schema` with the crate's message.

use std::sync::OnceLock;

use jsonschema::error::ValidationErrorKind;
use jsonschema::{PatternOptions, ValidationError, Validator};
use schemars::schema_for;
use serde_json::Value;

use crate::abi::PluginAbiDeclaration;
use crate::diagnostic::{Finding, escape_token};
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

/// Compiles a committed schema text, or says why it cannot be used.
fn compile(text: &str) -> Result<Validator, String> {
    let schema: Value = serde_json::from_str(text).map_err(|error| error.to_string())?;
    jsonschema::draft202012::options()
        .offline()
        .should_validate_formats(false)
        .with_pattern_options(PatternOptions::regex())
        .build(&schema)
        .map_err(|error| error.to_string())
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
    cell.get_or_init(|| compile(text)).as_ref().map_err(|message| {
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
    for error in validator.iter_errors(instance) {
        findings_of(&error, &mut findings);
    }
    findings
}

/// The findings one error of the crate stands for, placed at the instance it is about.
fn findings_of(error: &ValidationError<'_>, findings: &mut Vec<Finding>) {
    let pointer = error.instance_path().as_str();
    match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
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
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().map_or_else(|| property.to_string(), str::to_string);
            findings.push(Finding::error(
                Rule::MissingKey,
                pointer,
                format!("missing required key `{name}`"),
            ));
        }
        // The validator itself failed on this value (a reference it could not resolve, a pattern its regex
        // engine gave up on): not a verdict on the declaration.
        ValidationErrorKind::Referencing(_)
        | ValidationErrorKind::BacktrackLimitExceeded { .. }
        | ValidationErrorKind::RegexEngineFailure { .. } => findings.push(Finding::error(
            Rule::InternalSchema,
            pointer,
            format!("the JSON Schema validator could not check this value: {error}"),
        )),
        _ => findings.push(Finding::error(Rule::Schema, pointer, error.to_string())),
    }
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

    #[test]
    fn references_outside_the_document_are_refused_not_fetched() {
        let schema =
            r#"{"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": "https://example.com/x.json"}"#;
        assert!(compile(schema).is_err());
        let local = r##"{"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a"}"##;
        assert!(compile(local).is_ok());
    }

    #[test]
    fn patterns_that_need_backtracking_are_refused() {
        assert!(compile(r#"{"type": "string", "pattern": "^(?!x)[a-z]+$"}"#).is_err());
        assert!(compile(r#"{"type": "string", "pattern": "^[^;\\s]+$"}"#).is_ok());
    }

    #[test]
    fn formats_are_annotations() {
        let Ok(validator) = compile(r#"{"type": "integer", "format": "uint8", "minimum": 0}"#) else {
            panic!("the schema compiles");
        };
        assert!(validator.is_valid(&serde_json::json!(300)));
        assert!(!validator.is_valid(&serde_json::json!(-1)));
    }

    #[test]
    fn errors_become_findings_at_their_instance() {
        let Ok(validator) = compile(
            r#"{
                "type": "object",
                "properties": {"a": {"type": "string"}, "b": {"type": "string", "pattern": "^[a-z]+$"}},
                "additionalProperties": false,
                "required": ["a", "c"]
            }"#,
        ) else {
            panic!("the schema compiles");
        };
        let instance = serde_json::json!({"x/y": 1, "b": "B", "z": 2});
        let mut findings = Vec::new();
        for error in validator.iter_errors(&instance) {
            findings_of(&error, &mut findings);
        }
        let parts: Vec<(&str, &str, &str, bool)> = findings
            .iter()
            .map(|finding| {
                (
                    finding.rule.code(),
                    finding.pointer.as_str(),
                    finding.message.as_str(),
                    finding.at_key,
                )
            })
            .collect();
        assert_eq!(
            parts,
            vec![
                ("missing-key", "", "missing required key `a`", false),
                ("missing-key", "", "missing required key `c`", false),
                ("schema", "/b", r#""B" does not match "^[a-z]+$""#, false),
                ("unknown-key", "/x~1y", "unknown key `x/y`", true),
                ("unknown-key", "/z", "unknown key `z`", true),
            ]
        );
    }
}
