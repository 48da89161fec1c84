#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The structural findings of a deterministic corpus of mutated declarations, as the loader reports them.
//!
//! The corpus is the one the in-house JSON Schema validator was once held to the `jsonschema` crate with (the
//! same seeds and mutations): the bundled `PhaseSchema.json`, NeverC's published phase schemas, the target
//! files and a few hand-made documents, each with 250 mutants (5,750 in all). The bundled declarations are
//! copies in `tests/fixtures/corpus/`, so that editing or adding a declaration does not change the corpus; a
//! change of the JSON Schemas that makes a copy invalid calls for a new copy and snapshot. Every document is
//! validated as a JSON value, as the loader validates it, and every mutant that a declaration text can hold
//! is also written out (JSON for phase schemas, TOML for targets) and loaded through `parse_phase_schema` or
//! `parse_target`. The test asserts that
//!
//! - the valid originals yield no finding, and every hand-made document at least one;
//! - every finding is at a pointer inside the document: the member an `unknown-key` names exists, the object
//!   a `missing-key` names lacks the key, the value a `schema` finding names exists;
//! - every located diagnostic is the finding made from the value, at a line and column whose text is that key
//!   or value;
//! - the number of findings of each kind is the snapshot below, so a change of validator or schema that
//!   finds more, fewer or other problems shows here.

use neverc_test_support::Rng;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use neverc_schema::probe::{self, FindingParts};
use neverc_schema::{DIAGNOSTIC_TEXT_LIMIT, Diagnostic, parse_phase_schema, parse_target};
use serde_json::{Map, Value, json};

/// Mutated variants made of each source document.
const MUTANTS_PER_DOCUMENT: usize = 250;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The corpus's copies of the declarations it was made from.
fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus")
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

/// One document of the corpus.
struct Document {
    label: String,
    value: Value,
    /// A file of the repository, which must be valid.
    original: bool,
    mutant: bool,
}

/// The sources and, after each, its mutants, in the order (and from the seed) the corpus has always had.
fn corpus(sources: Vec<(String, Value, bool)>, seed: u64) -> Vec<Document> {
    let palette = palette();
    let mut rng = Rng::new(seed);
    let mut documents = Vec::new();
    for (label, document, original) in sources {
        let trimmed = trimmed(&document);
        documents.push(Document {
            label: label.clone(),
            value: document,
            original,
            mutant: false,
        });
        for index in 0..MUTANTS_PER_DOCUMENT {
            let mut mutant = trimmed.clone();
            for _ in 0..=rng.below(3) {
                mutate(&mut rng, &mut mutant, &palette);
            }
            documents.push(Document {
                label: format!("{label} mutant {index}"),
                value: mutant,
                original: false,
                mutant: true,
            });
        }
    }
    documents
}

fn hand_made() -> Vec<(String, Value, bool)> {
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
    .map(|(index, value)| (format!("hand-made {index}"), value, false))
    .collect()
}

/// The kinds of `schema` findings, each with the words only its messages have. The `oneOf` ones come first:
/// their messages quote the whole instance, which may hold any of the other words.
const SCHEMA_KINDS: &[(&str, &str)] = &[
    (
        "oneOf (more than one)",
        "is valid under more than one of the schemas listed in the 'oneOf' keyword",
    ),
    (
        "oneOf (none)",
        "is not valid under any of the schemas listed in the 'oneOf' keyword",
    ),
    ("false schema", "False schema does not allow "),
    ("const", " was expected"),
    ("enum", " is not one of "),
    ("minimum", " is less than the minimum of "),
    ("maximum", " is greater than the maximum of "),
    ("minItems", " has less than "),
    ("maxItems", " has more than "),
    ("pattern", " does not match \""),
    ("type", " is not of type"),
];

/// What kind of problem a finding is: its rule, and for `schema` the keyword its message is about.
fn kind_of(rule: &str, message: &str) -> String {
    if rule != "schema" {
        return rule.to_string();
    }
    let (keyword, _) = SCHEMA_KINDS
        .iter()
        .find(|(_, words)| message.contains(words))
        .unwrap_or_else(|| panic!("a `schema` finding of no known kind: {message}"));
    format!("schema: {keyword}")
}

/// The key a JSON pointer's last token names, and the pointer of its parent.
fn split_pointer(pointer: &str) -> Option<(&str, String)> {
    let (parent, token) = pointer.rsplit_once('/')?;
    Some((parent, token.replace("~1", "/").replace("~0", "~")))
}

/// The key a `missing-key` message names.
fn missing_key(message: &str) -> &str {
    message
        .strip_prefix("missing required key `")
        .and_then(|rest| rest.strip_suffix('`'))
        .unwrap_or_else(|| panic!("not a missing-key message: {message}"))
}

/// Asserts that a finding is at a pointer inside `document`, as its rule requires.
fn assert_inside(label: &str, document: &Value, (rule, pointer, message, at_key): &FindingParts) {
    match *rule {
        "unknown-key" => {
            assert!(at_key, "{label}: an unknown key is shown at the key");
            let (parent, key) = split_pointer(pointer).unwrap_or_else(|| panic!("{label}: `{pointer}` names no key"));
            let members = document.pointer(parent).and_then(Value::as_object);
            assert!(
                members.is_some_and(|members| members.contains_key(&key)),
                "{label}: unknown key at `{pointer}`, which is no member"
            );
        }
        "missing-key" => {
            let members = document.pointer(pointer).and_then(Value::as_object);
            let key = missing_key(message);
            assert!(
                members.is_some_and(|members| !members.contains_key(key)),
                "{label}: missing key `{key}` at `{pointer}`, which is no object without it"
            );
        }
        "schema" => assert!(
            document.pointer(pointer).is_some(),
            "{label}: a schema finding at `{pointer}`, which is not in the document"
        ),
        other => panic!("{label}: a structural finding of rule `{other}`: {message}"),
    }
}

/// A message or pointer as a diagnostic keeps it (cut past [`DIAGNOSTIC_TEXT_LIMIT`] bytes).
fn kept(text: &str) -> &str {
    let mut end = text.len().min(DIAGNOSTIC_TEXT_LIMIT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// 1-based line and character column of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |newline| newline + 1);
    (line, before[start..].chars().count() + 1)
}

/// How one format reads the text at a diagnostic's span back: a key, or a value.
struct Format {
    key: fn(&str) -> Option<String>,
    value: fn(&str, &Value, &str) -> Option<Value>,
}

const JSON: Format = Format {
    key: |shown| serde_json::from_str(shown).ok(),
    value: |shown, _, _| serde_json::from_str(shown).ok(),
};

const TOML: Format = Format {
    key: |shown| {
        let table: toml::Table = toml::from_str(&format!("{shown} = 0")).ok()?;
        table.keys().next().cloned()
    },
    value: toml_value,
};

/// The value a TOML span shows. A table given by a header (`[a.b]`, `[[a.b]]`) is shown at its header: it
/// stands for the value at `pointer` when it names the keys of that pointer.
fn toml_value(shown: &str, document: &Value, pointer: &str) -> Option<Value> {
    // `["x"]` reads both as a header and as an array: it is a header only when it names the pointer's keys.
    if header_keys(shown).is_some_and(|keys| keys == pointer_keys(document, pointer)) {
        return document.pointer(pointer).cloned();
    }
    let table: toml::Table = toml::from_str(&format!("value = {shown}")).ok()?;
    serde_json::to_value(table.get("value")?).ok()
}

/// The keys a table header names, read by the TOML parser (`[a."b.c"]` names `a` and `b.c`).
fn header_keys(header: &str) -> Option<Vec<String>> {
    if !header.starts_with('[') || header.contains('\n') {
        return None;
    }
    let mut value = serde_json::to_value(toml::from_str::<toml::Table>(header).ok()?).ok()?;
    let mut keys = Vec::new();
    loop {
        value = match value {
            Value::Object(members) if members.len() == 1 => {
                let (key, inner) = members.into_iter().next()?;
                keys.push(key);
                inner
            }
            Value::Array(mut items) if items.len() == 1 => items.pop()?,
            _ => return Some(keys),
        }
    }
}

/// The keys of a pointer into `document`, without the indices into arrays.
fn pointer_keys(document: &Value, pointer: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut here = document;
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        here = match here {
            Value::Array(items) => token.parse::<usize>().ok().and_then(|index| items.get(index)),
            Value::Object(members) => {
                keys.push(token.clone());
                members.get(&token)
            }
            _ => None,
        }
        .unwrap_or(&Value::Null);
    }
    keys
}

/// Asserts that the located diagnostics of `text` are exactly `findings`, each at the line, column and span of
/// its key or value.
fn assert_located(
    label: &str,
    text: &str,
    document: &Value,
    findings: &[FindingParts],
    diagnostics: &[Diagnostic],
    format: &Format,
) {
    assert_eq!(
        diagnostics.len(),
        findings.len(),
        "{label}: {} findings but {} diagnostics: {diagnostics:#?}",
        findings.len(),
        diagnostics.len()
    );
    for ((rule, pointer, message, at_key), diagnostic) in findings.iter().zip(diagnostics) {
        assert_eq!(diagnostic.rule.code(), *rule, "{label}: {diagnostic}");
        assert_eq!(diagnostic.pointer, kept(pointer), "{label}: {diagnostic}");
        if message.len() <= DIAGNOSTIC_TEXT_LIMIT {
            assert_eq!(&diagnostic.message, message, "{label}: {diagnostic}");
        } else {
            assert!(
                diagnostic.message.starts_with(kept(message)) && diagnostic.message.ends_with(" more bytes)"),
                "{label}: {diagnostic}"
            );
        }
        let span = diagnostic
            .span
            .clone()
            .unwrap_or_else(|| panic!("{label}: no place for {diagnostic}"));
        assert_eq!(
            (diagnostic.line, diagnostic.column),
            line_column(text, span.start),
            "{label}: {diagnostic}"
        );
        assert!(diagnostic.line >= 1 && diagnostic.column >= 1, "{label}: {diagnostic}");
        let shown = &text[span];
        if pointer.is_empty() {
            // The whole document is shown where it starts (a TOML file's root table has no text of its own).
            assert_eq!((diagnostic.line, diagnostic.column), (1, 1), "{label}: {diagnostic}");
        } else if *at_key {
            let (_, key) = split_pointer(pointer).unwrap();
            assert_eq!((format.key)(shown), Some(key), "{label}: {diagnostic} shows `{shown}`");
        } else {
            assert_eq!(
                (format.value)(shown, document, pointer).as_ref(),
                document.pointer(pointer),
                "{label}: {diagnostic} shows `{shown}`"
            );
        }
    }
}

/// Counts of the corpus, by kind of finding.
#[derive(Default, Debug, PartialEq, Eq)]
struct Tally {
    documents: usize,
    mutants: usize,
    invalid_mutants: usize,
    /// Documents also loaded from their text.
    located: usize,
    findings: BTreeMap<String, usize>,
}

impl Tally {
    fn snapshot(&self) -> String {
        let mut lines = vec![
            format!("documents {}", self.documents),
            format!("mutants {}", self.mutants),
            format!("invalid mutants {}", self.invalid_mutants),
            format!("loaded from text {}", self.located),
        ];
        lines.extend(self.findings.iter().map(|(kind, count)| format!("{kind}: {count}")));
        lines.join("\n")
    }
}

/// Checks the findings of one document as a value, and counts them in `tally`.
fn check_value(document: &Document, findings: &[FindingParts], tally: &mut Tally) {
    let label = &document.label;
    tally.documents += 1;
    tally.mutants += usize::from(document.mutant);
    tally.invalid_mutants += usize::from(document.mutant && !findings.is_empty());
    if document.original {
        assert!(findings.is_empty(), "{label} is valid, but: {findings:#?}");
    } else if !document.mutant {
        assert!(!findings.is_empty(), "{label} is invalid, but nothing was found");
    }
    for finding in findings {
        assert_inside(label, &document.value, finding);
        *tally.findings.entry(kind_of(finding.0, &finding.2)).or_default() += 1;
    }
}

/// Whether a loader diagnostic comes from structural validation.
fn structural(diagnostic: &Diagnostic) -> bool {
    matches!(
        diagnostic.rule.code(),
        "unknown-key" | "missing-key" | "internal-schema"
    )
}

/// The files, each read as a value by `read`, then the hand-made documents.
fn sources(files: Vec<PathBuf>, read: fn(&str) -> Option<Value>) -> Vec<(String, Value, bool)> {
    let mut sources: Vec<(String, Value, bool)> = files
        .into_iter()
        .map(|path| {
            let value = read(&std::fs::read_to_string(&path).unwrap());
            let value = value.unwrap_or_else(|| panic!("{} does not parse", path.display()));
            (path.display().to_string(), value, true)
        })
        .collect();
    sources.extend(hand_made());
    sources
}

fn phase_schema_tally() -> Tally {
    let mut files = vec![corpus_dir().join("PhaseSchema.json")];
    files.extend(sorted_files(&repo().join("tests/fixtures/neverc"), "json"));
    let sources = sources(files, |text| serde_json::from_str(text).ok());
    let mut tally = Tally::default();
    for document in corpus(sources, 0x5eed_0001) {
        let findings = probe::phase_schema_findings(&document.value);
        check_value(&document, &findings, &mut tally);
        // Every JSON value is a phase schema text.
        let text = serde_json::to_string_pretty(&document.value).unwrap();
        tally.located += 1;
        match parse_phase_schema(&document.label, &text) {
            Ok(_) => assert!(findings.is_empty(), "{}: loaded despite {findings:#?}", document.label),
            Err(diagnostics) if findings.is_empty() => assert!(
                !diagnostics.iter().any(structural),
                "{}: structural diagnostics without findings: {diagnostics:#?}",
                document.label
            ),
            Err(diagnostics) => {
                assert_located(&document.label, &text, &document.value, &findings, &diagnostics, &JSON);
            }
        }
    }
    tally
}

fn target_tally() -> Tally {
    let sources = sources(sorted_files(&corpus_dir().join("targets"), "toml"), probe::target_value);
    let mut tally = Tally::default();
    for document in corpus(sources, 0x5eed_0002) {
        let findings = probe::target_findings(&document.value);
        check_value(&document, &findings, &mut tally);
        // TOML holds no `null`, no integer past `i64::MAX` and no document that is not a table: such mutants
        // are checked as values only.
        if !document.value.is_object() || !toml_holds(&document.value) {
            continue;
        }
        let label = &document.label;
        let text = toml::to_string(&document.value).unwrap_or_else(|error| panic!("{label}: {error}"));
        let value =
            probe::target_value(&text).unwrap_or_else(|| panic!("{label}: the TOML written does not parse:\n{text}"));
        assert_eq!(
            value, document.value,
            "{label}: the TOML written reads back as another value:\n{text}"
        );
        // TOML writes a table's plain members before its tables, so the findings follow the text's order.
        let findings = probe::target_findings(&value);
        tally.located += 1;
        match parse_target(label, &text) {
            Ok(_) => assert!(findings.is_empty(), "{label}: loaded despite {findings:#?}"),
            Err(diagnostics) if findings.is_empty() => assert!(
                !diagnostics.iter().any(structural),
                "{label}: structural diagnostics without findings: {diagnostics:#?}"
            ),
            Err(diagnostics) => {
                // Unknown keys alone do not stop loading: the semantic findings follow them.
                let stops = findings.iter().any(|(rule, ..)| *rule != "unknown-key");
                if !stops {
                    assert!(
                        diagnostics.len() >= findings.len(),
                        "{label}: {findings:#?} but only {diagnostics:#?}"
                    );
                }
                let shown = if stops {
                    &diagnostics[..]
                } else {
                    &diagnostics[..findings.len()]
                };
                assert_located(label, &text, &value, &findings, shown, &TOML);
            }
        }
    }
    tally
}

/// Whether a TOML text can hold `value`.
fn toml_holds(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Number(number) => number.is_i64() || number.is_f64(),
        Value::Array(items) => items.iter().all(toml_holds),
        Value::Object(members) => members.values().all(toml_holds),
        Value::Bool(_) | Value::String(_) => true,
    }
}

/// The snapshot of the phase schema corpus. The corpus follows its sources, so a change of the copied
/// `PhaseSchema.json`, of NeverC's published schemas or of the committed JSON Schema changes it: then the counts the failing test
/// prints replace these. A change of the validator alone must leave them as they are.
const PHASE_SCHEMA_SNAPSHOT: &str = "\
documents 3514
mutants 3500
invalid mutants 3280
loaded from text 3514
missing-key: 2165
schema: enum: 275
schema: false schema: 226
schema: maxItems: 226
schema: maximum: 112
schema: minItems: 359
schema: minimum: 149
schema: oneOf (none): 115
schema: pattern: 446
schema: type: 1844
unknown-key: 1243";

/// The snapshot of the target corpus, likewise (it follows the copied target files and the target JSON
/// Schema).
const TARGET_SNAPSHOT: &str = "\
documents 2259
mutants 2250
invalid mutants 2072
loaded from text 1008
missing-key: 1991
schema: enum: 6
schema: maxItems: 8
schema: minItems: 17
schema: minimum: 66
schema: oneOf (none): 49
schema: pattern: 36
schema: type: 1515
unknown-key: 358";

#[test]
fn phase_schema_corpus_findings_are_located() {
    let tally = phase_schema_tally();
    assert_eq!(
        tally.snapshot(),
        PHASE_SCHEMA_SNAPSHOT,
        "the phase schema corpus's findings changed:\n{}",
        tally.snapshot()
    );
}

#[test]
fn target_corpus_findings_are_located() {
    let tally = target_tally();
    assert_eq!(
        tally.snapshot(),
        TARGET_SNAPSHOT,
        "the target corpus's findings changed:\n{}",
        tally.snapshot()
    );
}
