//! Reading declaration files: syntax, structure (JSON Schema), then semantics, all problems at once.

use std::fs;
use std::path::{Path, PathBuf};

use neverc_userfile::{TEXT_LIMIT, UserFileError, read_user_text};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::abi::PluginAbiDeclaration;
use crate::abi_checks::{abi_findings, abi_registry_findings};
use crate::abi_type_checks::resolve_sources;
use crate::diagnostic::{Diagnostic, Finding, LineIndex, SourceMap, at_offset, escape_token, place};
use crate::json_map::JsonSourceMap;
use crate::phase::PhaseSchemaDocument;
use crate::phase_checks::phase_schema_findings;
use crate::rule::Rule;
use crate::structural::{DocumentKind, structural_findings};
use crate::target::TargetDeclaration;
use crate::target_checks::{registry_findings, target_findings};
use crate::toml_map::parse_toml;

/// The text of a declaration file, kept so that problems can be shown in context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceText {
    pub file: String,
    pub text: String,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read `{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A declaration file could not be read: missing, unreadable, not a regular file, too large, not UTF-8.
    #[error(transparent)]
    Read(#[from] UserFileError),
    #[error("{count} problem(s) in the declarations", count = diagnostics.len())]
    Invalid {
        diagnostics: Vec<Diagnostic>,
        sources: Vec<SourceText>,
    },
}

/// A target file that passed validation.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedTarget {
    pub path: PathBuf,
    /// The file name without `.toml`; names the generated module.
    pub stem: String,
    pub declaration: TargetDeclaration,
}

/// A plugin ABI file that passed validation.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedAbiPart {
    pub path: PathBuf,
    /// The file name without `.toml`; names the generated module.
    pub stem: String,
    pub declaration: PluginAbiDeclaration,
}

/// Validated declarations: the phase schema and every target.
#[derive(Clone, Debug, PartialEq)]
pub struct Declarations {
    pub phase_schema: PhaseSchemaDocument,
    pub phase_schema_path: PathBuf,
    pub targets: Vec<LoadedTarget>,
}

fn typed<T: DeserializeOwned>(value: Value, file: &str, text: &str, map: &dyn SourceMap) -> Result<T, Vec<Diagnostic>> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        // The path of the value serde refused, as a JSON pointer, so the diagnostic points at it.
        let pointer: String = error
            .path()
            .iter()
            .filter_map(|segment| match segment {
                serde_path_to_error::Segment::Seq { index } => Some(format!("/{index}")),
                serde_path_to_error::Segment::Map { key } => Some(format!("/{}", escape_token(key))),
                serde_path_to_error::Segment::Enum { .. } | serde_path_to_error::Segment::Unknown => None,
            })
            .collect();
        place(
            file,
            text,
            map,
            vec![Finding::error(Rule::Schema, pointer, error.into_inner().to_string())],
        )
    })
}

/// Unknown keys do not stop validation: they are reported, removed, and the rest is checked too.
/// Any other structural problem stops it, since the document cannot be typed.
fn only_unknown_keys(findings: &[Finding]) -> bool {
    findings
        .iter()
        .all(|finding| finding.rule == Rule::UnknownKey || finding.rule == Rule::DuplicateKey)
}

fn remove_unknown_keys(value: &mut Value, findings: &[Finding]) {
    for finding in findings.iter().filter(|finding| finding.rule == Rule::UnknownKey) {
        let Some((parent, key)) = finding.pointer.rsplit_once('/') else {
            continue;
        };
        let key = key.replace("~1", "/").replace("~0", "~");
        if let Some(Value::Object(object)) = value.pointer_mut(parent) {
            object.remove(&key);
        }
    }
}

/// The JSON value of `text`, or its syntax error placed in `file`.
fn json_value(file: &str, text: &str) -> Result<Value, Vec<Diagnostic>> {
    serde_json::from_str(text).map_err(|error| {
        let offset = LineIndex::new(text).offset(error.line(), error.column());
        vec![at_offset(
            file,
            text,
            Rule::JsonSyntax,
            error.to_string(),
            offset..offset,
        )]
    })
}

/// Parses and validates a phase schema text; `file` names it in diagnostics.
pub fn parse_phase_schema(file: &str, text: &str) -> Result<PhaseSchemaDocument, Vec<Diagnostic>> {
    let value = json_value(file, text)?;
    let map = JsonSourceMap::build(text);
    let mut findings: Vec<Finding> = map
        .duplicate_keys
        .iter()
        .map(|pointer| {
            Finding::error(
                Rule::DuplicateKey,
                pointer.clone(),
                "this key repeats an earlier key of the same object",
            )
            .at_key()
        })
        .collect();
    findings.extend(structural_findings(DocumentKind::PhaseSchema, &value));
    if !findings.is_empty() {
        return Err(place(file, text, &map, findings));
    }
    let document: PhaseSchemaDocument = typed(value, file, text, &map)?;
    let findings = phase_schema_findings(&document);
    if findings.is_empty() {
        Ok(document)
    } else {
        Err(place(file, text, &map, findings))
    }
}

/// Parses a phase schema text for an audit: syntax and structure must hold (or the document cannot be typed),
/// while the semantic problems are returned beside the document instead of refusing it, so that an audit can
/// report which invariants a schema breaks.
pub fn parse_phase_schema_for_audit(
    file: &str,
    text: &str,
) -> Result<(PhaseSchemaDocument, Vec<Diagnostic>), Vec<Diagnostic>> {
    let value = json_value(file, text)?;
    let map = JsonSourceMap::build(text);
    let findings = structural_findings(DocumentKind::PhaseSchema, &value);
    if !findings.is_empty() {
        return Err(place(file, text, &map, findings));
    }
    let document: PhaseSchemaDocument = typed(value, file, text, &map)?;
    let findings = phase_schema_findings(&document);
    let diagnostics = if findings.is_empty() {
        Vec::new()
    } else {
        place(file, text, &map, findings)
    };
    Ok((document, diagnostics))
}

/// Parses and validates one target TOML text; `file` names it in diagnostics.
pub fn parse_target(file: &str, text: &str) -> Result<TargetDeclaration, Vec<Diagnostic>> {
    let (mut value, map) = parse_toml(file, text)?;
    let mut findings = structural_findings(DocumentKind::Target, &value);
    if !only_unknown_keys(&findings) {
        return Err(place(file, text, &map, findings));
    }
    remove_unknown_keys(&mut value, &findings);
    let declaration: TargetDeclaration = typed(value, file, text, &map)?;
    findings.extend(target_findings(&declaration));
    if findings.is_empty() {
        Ok(declaration)
    } else {
        Err(place(file, text, &map, findings))
    }
}

/// Parses and validates one plugin ABI TOML text (`abi/*.toml`); `file` names it in diagnostics.
pub fn parse_plugin_abi(file: &str, text: &str) -> Result<PluginAbiDeclaration, Vec<Diagnostic>> {
    let (mut value, map) = parse_toml(file, text)?;
    let mut findings = structural_findings(DocumentKind::PluginAbi, &value);
    if !only_unknown_keys(&findings) {
        return Err(place(file, text, &map, findings));
    }
    remove_unknown_keys(&mut value, &findings);
    let declaration: PluginAbiDeclaration = typed(value, file, text, &map)?;
    findings.extend(abi_findings(&declaration));
    if findings.is_empty() {
        Ok(declaration)
    } else {
        Err(place(file, text, &map, findings))
    }
}

/// Reads and validates plugin ABI files, each on its own and then together (names and interface ids are
/// unique across all of them). Enumerations whose values come from a state machine (`from =
/// "phase_schema:state_machines/…"`) are left without values: [`load_plugin_abi_with`] fills them.
pub fn load_plugin_abi(paths: &[PathBuf]) -> Result<Vec<LoadedAbiPart>, LoadError> {
    load_plugin_abi_inner(paths, None)
}

/// [`load_plugin_abi`], with the values that `from` takes from the phase schema filled in (an unknown state
/// machine is an `abi-source` problem at the `from` key).
pub fn load_plugin_abi_with(
    paths: &[PathBuf],
    phase_schema: &PhaseSchemaDocument,
) -> Result<Vec<LoadedAbiPart>, LoadError> {
    load_plugin_abi_inner(paths, Some(phase_schema))
}

fn load_plugin_abi_inner(
    paths: &[PathBuf],
    phase_schema: Option<&PhaseSchemaDocument>,
) -> Result<Vec<LoadedAbiPart>, LoadError> {
    let ReadEach {
        passed,
        sources,
        mut diagnostics,
    } = read_each(paths, parse_plugin_abi)?;
    let maps: Vec<usize> = passed.iter().map(|(_, _, source)| *source).collect();
    let mut parts: Vec<LoadedAbiPart> = passed
        .into_iter()
        .map(|(path, declaration, _)| LoadedAbiPart {
            stem: stem_of(&path),
            path,
            declaration,
        })
        .collect();
    let mut declarations: Vec<&mut PluginAbiDeclaration> = parts.iter_mut().map(|part| &mut part.declaration).collect();
    let resolved: Vec<(usize, Finding)> = resolve_sources(&mut declarations, phase_schema)
        .into_iter()
        .map(|(index, finding)| (maps[index], finding))
        .collect();
    place_across(&sources, resolved, &mut diagnostics);
    let declarations: Vec<&PluginAbiDeclaration> = parts.iter().map(|part| &part.declaration).collect();
    let across = abi_registry_findings(&declarations)
        .into_iter()
        .map(|(index, finding)| (maps[index], finding))
        .collect();
    place_across(&sources, across, &mut diagnostics);
    if diagnostics.is_empty() {
        Ok(parts)
    } else {
        Err(LoadError::Invalid { diagnostics, sources })
    }
}

/// The text of a declaration file: a regular file of at most [`TEXT_LIMIT`] bytes.
fn read(path: &Path) -> Result<String, LoadError> {
    Ok(read_user_text(path, TEXT_LIMIT)?)
}

/// Reads and validates a phase schema file.
pub fn load_phase_schema(path: &Path) -> Result<PhaseSchemaDocument, LoadError> {
    let text = read(path)?;
    let file = path.display().to_string();
    parse_phase_schema(&file, &text).map_err(|diagnostics| LoadError::Invalid {
        diagnostics,
        sources: vec![SourceText { file, text }],
    })
}

/// The `*.toml` files of a directory, sorted by name.
pub fn target_files(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let entries = fs::read_dir(dir).map_err(|source| LoadError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| LoadError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        let path = entry.path();
        if path.extension().is_some_and(|ext| ext == "toml") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn stem_of(path: &Path) -> String {
    path.file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What reading a set of declaration files one by one found: the files that passed on their own (with the
/// index of their text in `sources`), the texts of all, and the problems of the others.
struct ReadEach<T> {
    passed: Vec<(PathBuf, T, usize)>,
    sources: Vec<SourceText>,
    diagnostics: Vec<Diagnostic>,
}

/// Reads and validates each of `paths` on its own with `parse`.
fn read_each<T>(
    paths: &[PathBuf],
    parse: fn(&str, &str) -> Result<T, Vec<Diagnostic>>,
) -> Result<ReadEach<T>, LoadError> {
    let mut each = ReadEach {
        passed: Vec::new(),
        sources: Vec::new(),
        diagnostics: Vec::new(),
    };
    for path in paths {
        let text = read(path)?;
        let file = path.display().to_string();
        match parse(&file, &text) {
            Ok(declaration) => each.passed.push((path.clone(), declaration, each.sources.len())),
            Err(found) => each.diagnostics.extend(found),
        }
        each.sources.push(SourceText { file, text });
    }
    Ok(each)
}

/// Places the findings of checks across files, each in the file whose index in `sources` it names.
fn place_across(sources: &[SourceText], findings: Vec<(usize, Finding)>, diagnostics: &mut Vec<Diagnostic>) {
    for (index, finding) in findings {
        let Some(source) = sources.get(index) else {
            continue;
        };
        match parse_toml(&source.file, &source.text) {
            Ok((_, map)) => diagnostics.extend(place(&source.file, &source.text, &map, vec![finding])),
            Err(found) => diagnostics.extend(found),
        }
    }
}

/// Reads and validates target files, each on its own and then together.
pub fn load_targets(paths: &[PathBuf]) -> Result<Vec<LoadedTarget>, LoadError> {
    let ReadEach {
        passed,
        sources,
        mut diagnostics,
    } = read_each(paths, parse_target)?;
    let maps: Vec<usize> = passed.iter().map(|(_, _, source)| *source).collect();
    let targets: Vec<LoadedTarget> = passed
        .into_iter()
        .map(|(path, declaration, _)| LoadedTarget {
            stem: stem_of(&path),
            path,
            declaration,
        })
        .collect();
    let stems: Vec<&str> = targets.iter().map(|target| target.stem.as_str()).collect();
    for (index, stem) in stems.iter().enumerate() {
        let valid_module = stem.starts_with(|c: char| c.is_ascii_lowercase())
            && stem
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid_module {
            let source = &sources[maps[index]];
            diagnostics.push(at_offset(
                &source.file,
                &source.text,
                Rule::TargetFileName,
                format!("target file name `{stem}` must be lowercase letters, digits and `_` (it names a Rust module)"),
                0..0,
            ));
        }
    }
    let declarations: Vec<&TargetDeclaration> = targets.iter().map(|target| &target.declaration).collect();
    let across = registry_findings(&declarations)
        .into_iter()
        .map(|(index, finding)| (maps[index], finding))
        .collect();
    place_across(&sources, across, &mut diagnostics);
    if diagnostics.is_empty() {
        Ok(targets)
    } else {
        Err(LoadError::Invalid { diagnostics, sources })
    }
}

/// Reads and validates everything: the phase schema and the targets, reporting all problems of all files.
pub fn load_declarations(schema_path: &Path, target_paths: &[PathBuf]) -> Result<Declarations, LoadError> {
    let schema = load_phase_schema(schema_path);
    let targets = load_targets(target_paths);
    match (schema, targets) {
        (Ok(phase_schema), Ok(targets)) => Ok(Declarations {
            phase_schema,
            phase_schema_path: schema_path.to_path_buf(),
            targets,
        }),
        (Err(LoadError::Io { path, source }), _) | (_, Err(LoadError::Io { path, source })) => {
            Err(LoadError::Io { path, source })
        }
        (Err(LoadError::Read(error)), _) | (_, Err(LoadError::Read(error))) => Err(LoadError::Read(error)),
        (schema, targets) => {
            let mut diagnostics = Vec::new();
            let mut sources = Vec::new();
            for error in [schema.err(), targets.err()].into_iter().flatten() {
                if let LoadError::Invalid {
                    diagnostics: found,
                    sources: texts,
                } = error
                {
                    diagnostics.extend(found);
                    sources.extend(texts);
                }
            }
            Err(LoadError::Invalid { diagnostics, sources })
        }
    }
}
