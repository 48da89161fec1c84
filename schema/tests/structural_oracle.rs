#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Differential test of the in-house JSON Schema validator against the `jsonschema` crate, which did the
//! structural validation before and is kept as a development dependency only to serve as this oracle.
//!
//! Both validators run over the bundled `PhaseSchema.json`, the target files, NeverC's published phase
//! schemas, a few hand-made documents and thousands of deterministic mutations of them. For every document
//! the two must report the same errors in the same order (instance path, keyword, and the message or the
//! keys it names), and the findings the loader makes from them must be identical.

use neverc_test_support::Rng;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jsonschema::error::ValidationErrorKind;
use neverc_schema::oracle::{self, ErrorKind, FindingParts, Validator};
use neverc_schema::{COMMITTED_PHASE_SCHEMA, COMMITTED_TARGET_SCHEMA};
use serde_json::{Map, Value, json};

/// Mutated variants made of each source document.
const MUTANTS_PER_DOCUMENT: usize = 250;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn sorted_files(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == extension))
        .collect();
    files.sort();
    files
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Every JSON pointer of `value`, the root included, in document order, each with its value's kind.
fn pointers(value: &Value, here: String, out: &mut Vec<(String, Kind)>) {
    match value {
        Value::Object(members) => {
            out.push((here.clone(), Kind::Object));
            for (key, child) in members {
                pointers(child, format!("{here}/{}", escape(key)), out);
            }
        }
        Value::Array(items) => {
            out.push((here.clone(), Kind::Array));
            for (index, child) in items.iter().enumerate() {
                pointers(child, format!("{here}/{index}"), out);
            }
        }
        Value::String(_) => out.push((here, Kind::String)),
        Value::Number(_) => out.push((here, Kind::Number)),
        _ => out.push((here, Kind::Other)),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Object,
    Array,
    String,
    Number,
    Other,
}

/// Values that break a schema in many ways: wrong types, limits, integers as floats, huge numbers.
fn palette() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(false),
        json!(0),
        json!(1),
        json!(2),
        json!(-1),
        json!(1.5),
        json!(-0.5),
        json!(2.0),
        json!(-3.0),
        json!(4_294_967_296_u64),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(1e300),
        json!(""),
        json!("x"),
        json!("transition"),
        json!("Transition"),
        json!("OBSERVABLE"),
        json!("stable"),
        json!("neverc."),
        json!("neverc.core.extension"),
        json!("0x0000000000000001"),
        json!("0x1:0x2"),
        json!("a b"),
        json!("a;b"),
        json!("a\u{a0}b"),
        json!("ÄÖ"),
        json!([]),
        json!([1]),
        json!(["x"]),
        json!(["0x0000000000000001", "0x0000000000000002", "0x0000000000000003"]),
        json!({}),
        json!({"a": 1}),
    ]
}

fn tweak_string(rng: &mut Rng, text: &str) -> String {
    match rng.below(11) {
        0 => text.to_uppercase(),
        1 => format!(" {text}"),
        2 => format!("{text}\n"),
        3 => format!("{text};"),
        4 => format!("{text}\u{a0}x"),
        5 => text.chars().take(text.chars().count() / 2).collect(),
        6 => String::new(),
        7 => format!("{text}_x"),
        8 => format!("{text}.y"),
        9 => format!("{text}\u{2003}"),
        _ => text.replace('_', "-"),
    }
}

/// Whether mutation `operation` applies to a value of `kind`.
fn applies(operation: usize, kind: Kind) -> bool {
    match operation {
        1 | 8 | 9 => kind == Kind::Object,
        3 => kind == Kind::Array || kind == Kind::Object,
        4 => kind == Kind::String,
        5 => kind == Kind::Number,
        6 => kind == Kind::Array,
        _ => true,
    }
}

/// Applies one random mutation to `document`: deletes a member or item, adds an unknown key, replaces a
/// value (by a wrong type, a number past a limit, a string that breaks a pattern, or a subtree from
/// elsewhere in the document), empties or grows an array, or reorders or mixes up the members of an object.
fn mutate(rng: &mut Rng, document: &mut Value, palette: &[Value]) {
    let mut all = Vec::new();
    pointers(document, String::new(), &mut all);
    let mut operation = rng.below(10);
    let mut candidates: Vec<&String> = all
        .iter()
        .filter(|(_, kind)| applies(operation, *kind))
        .map(|(pointer, _)| pointer)
        .collect();
    if candidates.is_empty() {
        operation = 2;
        candidates = all.iter().map(|(pointer, _)| pointer).collect();
    }
    let pointer = (*rng.pick(&candidates)).clone();
    let source = rng.pick(&all).0.clone();
    let elsewhere = document.pointer(&source).cloned().unwrap_or(Value::Null);
    if operation == 0 {
        if let Some((parent, key)) = pointer.rsplit_once('/') {
            let key = key.replace("~1", "/").replace("~0", "~");
            match document.pointer_mut(parent) {
                Some(Value::Object(members)) => {
                    members.shift_remove(&key);
                }
                Some(Value::Array(items)) => {
                    if let Ok(index) = key.parse::<usize>()
                        && index < items.len()
                    {
                        items.remove(index);
                    }
                }
                _ => {}
            }
        }
        return;
    }
    let Some(target) = document.pointer_mut(&pointer) else {
        return;
    };
    match (operation, target) {
        (1, Value::Object(members)) => {
            let key = *rng.pick(&["unknown", "x/y", "t~ilde", "name2", "", "Name"]);
            members.insert(key.to_string(), rng.pick(palette).clone());
        }
        (3, Value::Array(items)) => items.clear(),
        (3, Value::Object(members)) => members.clear(),
        (4, Value::String(text)) => *text = tweak_string(rng, text),
        (5, target) => {
            *target = match rng.below(3) {
                0 => negated(target),
                1 => json!(target.as_i64().unwrap_or(0).saturating_add(1)),
                _ => rng.pick(palette).clone(),
            }
        }
        (6, Value::Array(items)) => {
            let extra = items.last().cloned().unwrap_or_else(|| rng.pick(palette).clone());
            items.push(extra);
        }
        (7, target) => *target = elsewhere,
        (8, Value::Object(members)) if members.len() >= 2 => {
            // Puts one member's value under another member's key.
            let keys: Vec<String> = members.keys().cloned().collect();
            let from = rng.pick(&keys).clone();
            let to = rng.pick(&keys).clone();
            let value = members[&from].clone();
            members.insert(to, value);
        }
        (9, Value::Object(members)) => {
            // Reverses the members, so that the order of the reports changes.
            let reversed: Map<String, Value> = std::mem::take(members).into_iter().rev().collect();
            *members = reversed;
        }
        (_, target) => *target = rng.pick(palette).clone(),
    }
}

/// A number below zero (or below the original): integers `-n - 1`, floats `-x - 0.5`.
fn negated(number: &Value) -> Value {
    match number.as_i64() {
        Some(integer) => json!(integer.saturating_neg().saturating_sub(1)),
        None => json!(-number.as_f64().unwrap_or(1.0) - 0.5),
    }
}

/// One error as both validators can describe it: path, keyword, and the message or the keys it names.
type Described = (String, String, String);

fn describe_reference(error: &jsonschema::ValidationError<'_>) -> Described {
    let detail = match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => unexpected.join("\u{0}"),
        ValidationErrorKind::Required { property } => property.as_str().unwrap_or_default().to_string(),
        _ => error.to_string(),
    };
    (
        error.instance_path().as_str().to_string(),
        error.kind().keyword().to_string(),
        detail,
    )
}

fn describe_ours(error: &oracle::SchemaError<'_>) -> Described {
    let detail = match &error.kind {
        ErrorKind::AdditionalProperties { unexpected } => unexpected.join("\u{0}"),
        ErrorKind::Required { property } => property.clone(),
        _ => error.to_string(),
    };
    (error.instance_path.clone(), error.kind.keyword().to_string(), detail)
}

/// The findings the loader made from the `jsonschema` crate's errors before it was replaced.
fn reference_findings(errors: &[jsonschema::ValidationError<'_>]) -> Vec<FindingParts> {
    let mut findings = Vec::new();
    for error in errors {
        let pointer = error.instance_path().as_str().to_string();
        match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                for key in unexpected {
                    findings.push((
                        "unknown-key",
                        format!("{pointer}/{}", escape(key)),
                        format!("unknown key `{key}`"),
                        true,
                    ));
                }
            }
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().map_or_else(|| property.to_string(), str::to_string);
                findings.push(("missing-key", pointer, format!("missing required key `{name}`"), false));
            }
            _ => findings.push(("schema", pointer, error.to_string(), false)),
        }
    }
    findings
}

struct Oracle {
    reference: jsonschema::Validator,
    ours: Validator,
    findings: fn(&Value) -> Vec<FindingParts>,
}

impl Oracle {
    fn new(schema_text: &str, findings: fn(&Value) -> Vec<FindingParts>) -> Oracle {
        let schema: Value = serde_json::from_str(schema_text).unwrap();
        Oracle {
            reference: jsonschema::validator_for(&schema).unwrap(),
            ours: Validator::compile(&schema).unwrap(),
            findings,
        }
    }

    /// Compares the two on one document; returns the keywords of the errors found.
    fn compare(&self, label: &str, instance: &Value) -> Vec<String> {
        let reference: Vec<jsonschema::ValidationError<'_>> = self.reference.iter_errors(instance).collect();
        let expected: Vec<Described> = reference.iter().map(describe_reference).collect();
        let actual: Vec<Described> = self.ours.errors(instance).iter().map(describe_ours).collect();
        assert_eq!(
            actual,
            expected,
            "{label}: the validators disagree on\n{}",
            serde_json::to_string(instance).unwrap()
        );
        assert_eq!(
            (self.findings)(instance),
            reference_findings(&reference),
            "{label}: the findings differ"
        );
        expected.into_iter().map(|(_, keyword, _)| keyword).collect()
    }
}

#[derive(Default)]
struct Tally {
    documents: usize,
    mutants: usize,
    invalid: usize,
    keywords: BTreeMap<String, usize>,
}

impl Tally {
    fn add(&mut self, keywords: Vec<String>, mutant: bool) {
        self.documents += 1;
        self.mutants += usize::from(mutant);
        self.invalid += usize::from(!keywords.is_empty());
        for keyword in keywords {
            *self.keywords.entry(keyword).or_default() += 1;
        }
    }
}

/// A smaller copy of a long document, for cheaper mutants: arrays keep their first eight and last four items.
fn trimmed(value: &Value) -> Value {
    match value {
        Value::Array(items) if items.len() > 12 => {
            let kept = items[..8].iter().chain(&items[items.len() - 4..]);
            Value::Array(kept.map(trimmed).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(trimmed).collect()),
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(key, child)| (key.clone(), trimmed(child)))
                .collect(),
        ),
        _ => value.clone(),
    }
}

fn run(oracle: &Oracle, sources: &[(String, Value)], seed: u64, tally: &mut Tally) {
    let palette = palette();
    let mut rng = Rng::new(seed);
    for (label, document) in sources {
        tally.add(oracle.compare(label, document), false);
        let document = &trimmed(document);
        for index in 0..MUTANTS_PER_DOCUMENT {
            let mut mutant = document.clone();
            for _ in 0..=rng.below(3) {
                mutate(&mut rng, &mut mutant, &palette);
            }
            tally.add(oracle.compare(&format!("{label} mutant {index}"), &mutant), true);
        }
    }
}

fn hand_made() -> Vec<(String, Value)> {
    [
        json!(null),
        json!([]),
        json!("x"),
        json!(5),
        json!({}),
        json!({"unknown": 1}),
    ]
    .into_iter()
    .enumerate()
    .map(|(index, value)| (format!("hand-made {index}"), value))
    .collect()
}

#[test]
fn in_house_validator_agrees_with_the_jsonschema_crate() {
    let mut phase_sources = vec![(
        "PhaseSchema.json".to_string(),
        serde_json::from_str(&std::fs::read_to_string(repo().join("PhaseSchema.json")).unwrap()).unwrap(),
    )];
    for path in sorted_files(&repo().join("tests/fixtures/neverc"), "json") {
        let text = std::fs::read_to_string(&path).unwrap();
        phase_sources.push((path.display().to_string(), serde_json::from_str(&text).unwrap()));
    }
    phase_sources.extend(hand_made());
    let mut target_sources = Vec::new();
    for path in sorted_files(&repo().join("targets"), "toml") {
        let text = std::fs::read_to_string(&path).unwrap();
        target_sources.push((path.display().to_string(), oracle::target_value(&text).unwrap()));
    }
    target_sources.extend(hand_made());

    let mut tally = Tally::default();
    let phase = Oracle::new(COMMITTED_PHASE_SCHEMA, oracle::phase_schema_findings);
    run(&phase, &phase_sources, 0x5eed_0001, &mut tally);
    let target = Oracle::new(COMMITTED_TARGET_SCHEMA, oracle::target_findings);
    run(&target, &target_sources, 0x5eed_0002, &mut tally);

    eprintln!(
        "compared {} documents ({} sources, {} mutants), {} invalid; errors by keyword: {:?}",
        tally.documents,
        tally.documents - tally.mutants,
        tally.mutants,
        tally.invalid,
        tally.keywords
    );
    // The oracle only means something if the mutants break every kind of rule the schemas have.
    for keyword in [
        "type",
        "required",
        "additionalProperties",
        "pattern",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "enum",
        "oneOf",
        "falseSchema",
    ] {
        let count = tally.keywords.get(keyword).copied().unwrap_or(0);
        assert!(count >= 5, "the mutants produced only {count} `{keyword}` errors");
    }
    assert!(
        tally.invalid * 2 > tally.mutants,
        "too few mutants are invalid: {}",
        tally.invalid
    );
}
