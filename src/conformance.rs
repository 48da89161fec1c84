//! `neverc-spec gen conformance` (export the cases of the declarations as JSON vectors) and
//! `neverc-spec conformance` (run vectors against this implementation).

use std::path::{Path, PathBuf};

use neverc_codegen::conformance::{CaseSet, conformance_case_sets, plugin_abi_case_sets};
use neverc_conformance::{Environment, VectorFileError, read_case_set, run_case_set, run_case_set_through_plugin};
use neverc_schema::{load_declarations, load_plugin_abi_with, target_files};
use serde::Serialize;

use crate::CommandError;
use crate::check::{declarations_root, declared_target_files};
use crate::cli::{ConformanceArgs, DeclarationArgs, Format, GenConformanceArgs};
use crate::render::load_failure;

/// The file a source's vectors go to: `PhaseSchema.json` → `PhaseSchema.conformance.json`,
/// `targets/x86_64.toml` → `targets_x86_64.conformance.json`.
fn vector_file_name(source: &str) -> String {
    let stem = source
        .trim_end_matches(".json")
        .trim_end_matches(".toml")
        .replace(['/', '\\'], "_");
    format!("{stem}.conformance.json")
}

fn case_sets(args: &DeclarationArgs, abi: &Path) -> Result<Vec<CaseSet>, CommandError> {
    let files = declared_target_files(args)?;
    let declarations = load_declarations(&args.phase_schema, &files).map_err(|error| load_failure(error, false).0)?;
    let abi_files = target_files(abi).map_err(|error| CommandError::Io(error.to_string()))?;
    let abi =
        load_plugin_abi_with(&abi_files, &declarations.phase_schema).map_err(|error| load_failure(error, false).0)?;
    let root = declarations_root(args);
    let mut sets =
        conformance_case_sets(&declarations, root).map_err(|error| CommandError::Internal(error.to_string()))?;
    sets.extend(plugin_abi_case_sets(&abi, root));
    Ok(sets)
}

#[derive(Serialize)]
struct Exported {
    source: String,
    file: String,
    cases: usize,
}

pub(crate) fn export(args: &GenConformanceArgs) -> Result<(), CommandError> {
    let sets = case_sets(&args.declarations, &args.abi)?;
    std::fs::create_dir_all(&args.out)
        .map_err(|error| CommandError::Io(format!("cannot create `{}`: {error}", args.out.display())))?;
    let mut exported = Vec::new();
    for set in &sets {
        let mut json = serde_json::to_string_pretty(set)
            .map_err(|error| CommandError::Internal(format!("cannot render vectors: {error}")))?;
        json.push('\n');
        let path = args.out.join(vector_file_name(&set.source));
        neverc_output::write_bytes(&path, neverc_output::Mode::Data, json.as_bytes())?;
        exported.push(Exported {
            source: set.source.clone(),
            file: path.display().to_string(),
            cases: set.cases.len(),
        });
    }
    match args.format {
        Format::Json => {
            outln!("{}", crate::render::json_text(&exported, true)?);
        }
        Format::Text => {
            for file in &exported {
                outln!("{}: {} case(s) → {}", file.source, file.cases, file.file);
            }
            outln!(
                "{} case(s) in all",
                exported.iter().map(|file| file.cases).sum::<usize>()
            );
        }
    }
    Ok(())
}

/// The vector files of a directory, sorted by name.
fn vector_files(dir: &Path) -> Result<Vec<PathBuf>, CommandError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|error| CommandError::Io(format!("cannot read `{}`: {error}", dir.display())))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.ends_with(".conformance.json"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(CommandError::Request(format!(
            "`{}` holds no `*.conformance.json` file; write some with `neverc-spec gen conformance --out {}`",
            dir.display(),
            dir.display()
        )));
    }
    Ok(files)
}

#[derive(Serialize)]
struct SourceResult {
    source: String,
    passed: usize,
    not_applicable: Vec<Verdict>,
    failed: Vec<Verdict>,
}

#[derive(Serialize)]
struct Verdict {
    id: String,
    reason: String,
}

fn verdicts(list: Vec<(String, String)>) -> Vec<Verdict> {
    list.into_iter().map(|(id, reason)| Verdict { id, reason }).collect()
}

pub(crate) fn run(args: &ConformanceArgs) -> Result<(), CommandError> {
    let files = declared_target_files(&args.declarations)?;
    let declarations =
        load_declarations(&args.declarations.phase_schema, &files).map_err(|error| load_failure(error, false).0)?;
    let phase_tables = neverc_loader::phase_tables_from_document(&declarations.phase_schema)
        .map_err(|error| CommandError::Request(error.to_string()))?;
    let mut targets = Vec::new();
    for target in &declarations.targets {
        targets.push(
            neverc_loader::load_target_file(&target.path).map_err(|error| CommandError::Request(error.to_string()))?,
        );
    }
    let scratch = ScratchDirectory::create()?;
    let environment = Environment {
        phase_tables,
        targets,
        link_inputs: args.link_inputs.clone(),
        scratch: scratch.0.clone(),
    };
    let mut results = Vec::new();
    let mut seen: std::collections::HashMap<String, PathBuf> = std::collections::HashMap::new();
    for path in vector_files(&args.vectors)? {
        let set = read_case_set(&path).map_err(|error| match error {
            VectorFileError::Io(message) => CommandError::Io(message),
            VectorFileError::Format(message) => CommandError::Request(message),
        })?;
        for case in &set.cases {
            if let Some(first) = seen.insert(case.id.clone(), path.clone()) {
                return Err(CommandError::Request(format!(
                    "case `{}` is in both `{}` and `{}`",
                    case.id,
                    first.display(),
                    path.display()
                )));
            }
        }
        let summary = match &args.plugin {
            Some(plugin) => run_case_set_through_plugin(&environment, &set, plugin),
            None => run_case_set(&environment, &set),
        };
        results.push(SourceResult {
            source: set.source.clone(),
            passed: summary.passed,
            not_applicable: verdicts(summary.not_applicable),
            failed: verdicts(summary.failed),
        });
    }
    drop(scratch);
    match args.format {
        Format::Json => outln!("{}", crate::render::json_text(&results, true)?),
        Format::Text => {
            for result in &results {
                outln!(
                    "{}: {} passed, {} not applicable, {} failed",
                    result.source,
                    result.passed,
                    result.not_applicable.len(),
                    result.failed.len()
                );
                for verdict in &result.not_applicable {
                    outln!("  not applicable {}: {}", verdict.id, verdict.reason);
                }
                for verdict in &result.failed {
                    outln!("  FAILED {}: {}", verdict.id, verdict.reason);
                }
            }
        }
    }
    let failed: usize = results.iter().map(|result| result.failed.len()).sum();
    if failed > 0 {
        return Err(CommandError::AuditFailed(format!(
            "{failed} conformance case(s) failed"
        )));
    }
    Ok(())
}

/// A directory for the links of a run, removed however the run ends.
struct ScratchDirectory(PathBuf);

impl ScratchDirectory {
    fn create() -> Result<ScratchDirectory, CommandError> {
        let path = std::env::temp_dir().join(format!("neverc-spec-conformance-{}", std::process::id()));
        std::fs::create_dir_all(&path)
            .map_err(|error| CommandError::Io(format!("cannot create `{}`: {error}", path.display())))?;
        Ok(ScratchDirectory(path))
    }
}

impl Drop for ScratchDirectory {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
