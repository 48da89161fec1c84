//! `neverc-spec audit`: the sealing audit of a phase schema, baseline diffs of the schema and of the plugin ABI
//! declarations, and a plugin manifest check, as text, JSON, DOT or one HTML page.

use std::io::Write as _;
use std::path::Path;

use neverc_audit::AuditReport;
use neverc_audit::abi_baseline::diff_abi;
use neverc_audit::baseline::{BaselineDiff, diff_schemas};
use neverc_audit::manifest::{PhaseRequests, PluginManifest, RequestVerdict, audit_manifest, parse_manifest};
use neverc_audit::sealing::audit_sealing;
use neverc_schema::{
    LoadedAbiPart, PhaseSchemaDocument, SourceText, load_plugin_abi_with, parse_phase_schema_for_audit, target_files,
};
use neverc_tables::policy::Request;

use crate::CommandError;
use crate::cli::{AuditArgs, AuditFormat};
use crate::render::{load_failure, print_diagnostics};

/// The text of a schema or manifest file: a regular file of at most [`neverc_userfile::TEXT_LIMIT`] bytes.
fn read_text(path: &Path) -> Result<String, CommandError> {
    neverc_userfile::read_user_text(path, neverc_userfile::TEXT_LIMIT)
        .map_err(|error| CommandError::Io(error.to_string()))
}

/// Reads a schema for the audit: syntax and structure must hold; semantic problems come back with it.
fn read_schema(path: &Path) -> Result<(PhaseSchemaDocument, Vec<neverc_schema::Diagnostic>), CommandError> {
    let text = read_text(path)?;
    let file = path.display().to_string();
    parse_phase_schema_for_audit(&file, &text).map_err(|diagnostics| {
        print_diagnostics(&diagnostics, &[SourceText { file, text }]);
        errln!("error: {} problem(s) found", diagnostics.len());
        CommandError::Invalid
    })
}

/// Reads and validates the ABI declarations of a directory, with the values they take from `phase_schema`.
fn read_abi(dir: &Path, phase_schema: &PhaseSchemaDocument) -> Result<Vec<LoadedAbiPart>, CommandError> {
    let files = target_files(dir).map_err(|error| CommandError::Io(error.to_string()))?;
    if files.is_empty() {
        return Err(CommandError::Request(format!(
            "no ABI declarations: `{}` holds no `*.toml`",
            dir.display()
        )));
    }
    load_plugin_abi_with(&files, phase_schema).map_err(|error| load_failure(error, false).0)
}

/// The diff of the ABI declarations of `--abi` against `--abi-baseline`; the old ones are read with the old
/// schema when there is one.
fn abi_diff(
    args: &AuditArgs,
    document: &PhaseSchemaDocument,
    old_document: Option<&PhaseSchemaDocument>,
) -> Result<Option<BaselineDiff>, CommandError> {
    let Some(old_dir) = &args.abi_baseline else {
        return Ok(None);
    };
    let old = read_abi(old_dir, old_document.unwrap_or(document))?;
    let new = read_abi(&args.abi, document)?;
    Ok(Some(diff_abi(
        &old_dir.display().to_string(),
        &old,
        &args.abi.display().to_string(),
        &new,
    )))
}

/// The tables a runtime would load from the schema: refused when the schema breaks invariants, since no runtime
/// would load it.
fn runtime_tables(
    source: &str,
    document: &neverc_schema::PhaseSchemaDocument,
    semantic: &[neverc_schema::Diagnostic],
    option: &str,
) -> Result<&'static neverc_tables::PhaseTables, CommandError> {
    if !semantic.is_empty() {
        return Err(CommandError::Request(format!(
            "cannot check {option}: `{source}` breaks {} invariant(s) of validation, so no runtime would load it \
             (run without {option} to see them)",
            semantic.len()
        )));
    }
    neverc_loader::phase_tables_from_document(document).map_err(|error| CommandError::Request(error.to_string()))
}

/// Loads a C plugin, lets it register with a dry-run registrar and writes what it asked for as a manifest, so
/// that its requests get the verdicts a manifest's get. The LTO code generation providers it registered
/// come with the verdicts the registrar gave their descriptors (the runtime's `check_descriptor`).
fn plugin_requests(
    path: &Path,
    arguments: &[String],
    tables: &'static neverc_tables::PhaseTables,
) -> Result<(PluginManifest, Vec<RequestVerdict>), CommandError> {
    let mut loaded = crate::plugins::load_all(std::slice::from_ref(&path.to_path_buf()), arguments)?;
    let plugin = loaded.remove(0);
    let asked = neverc_plugin_host::register_dry_run(&plugin, tables).map_err(crate::plugins::plugin_failure)?;
    let mut phases: Vec<PhaseRequests> = Vec::new();
    let mut providers = Vec::new();
    let mut descriptors = Vec::new();
    for request in asked {
        if let Some(descriptor) = &request.descriptor {
            let refusal = request.answer.as_ref().err();
            descriptors.push(RequestVerdict {
                request: descriptor.request(),
                phase: request.phase.clone(),
                allowed: refusal.is_none(),
                rule: refusal.map(|_| "descriptor"),
                code: refusal.map(|status| status.code.name()),
                message: refusal.map(|status| status.message.clone()),
            });
            continue;
        }
        if let Some(provider) = request.provider {
            providers.push(provider.name().to_string());
            continue;
        }
        let position = match phases.iter().position(|entry| entry.name == request.phase) {
            Some(position) => position,
            None => {
                phases.push(PhaseRequests {
                    name: request.phase.clone(),
                    observe: Vec::new(),
                    intercept: false,
                    replace: false,
                    skip_with_proof: false,
                });
                phases.len() - 1
            }
        };
        let entry = &mut phases[position];
        match (request.request, request.observe_bits) {
            (Some(Request::Observe(point)), _) => entry.observe.push(point.point().1.to_string()),
            (None, Some(bits)) => entry.observe.push(format!("{bits:#x}")),
            (Some(Request::Intercept), _) => entry.intercept = true,
            (Some(Request::Replace), _) => entry.replace = true,
            (Some(Request::SkipWithProof), _) => entry.skip_with_proof = true,
            (None, None) => {}
        }
    }
    let manifest = PluginManifest {
        plugin: plugin.id.clone(),
        providers,
        phases,
    };
    Ok((manifest, descriptors))
}

/// The JSON report: the audit, and the warnings the text run prints on stderr.
#[derive(serde::Serialize)]
struct JsonReport<'a> {
    #[serde(flatten)]
    report: &'a AuditReport,
    warnings: &'a [String],
}

pub(crate) fn run(args: &AuditArgs) -> Result<(), CommandError> {
    if let Some(output) = &args.output {
        let inputs: Vec<(&str, &Path)> = [
            ("--phase-schema", Some(&args.phase_schema)),
            ("--baseline", args.baseline.as_ref()),
            ("--plugin-manifest", args.plugin_manifest.as_ref()),
            ("--plugin", args.plugin.as_ref()),
        ]
        .into_iter()
        .filter_map(|(role, path)| Some((role, path?.as_path())))
        .collect();
        neverc_output::check_distinct(&[("-o", output)], &inputs)?;
    }
    let (document, semantic) = read_schema(&args.phase_schema)?;
    let source = args.phase_schema.display().to_string();
    let sealing = audit_sealing(&source, &document, &semantic);
    // Printed on stderr as they arise, and listed by the JSON report.
    let mut warnings: Vec<String> = Vec::new();
    let old_document = match &args.baseline {
        Some(path) => {
            let (old, old_semantic) = read_schema(path)?;
            if !old_semantic.is_empty() {
                let warning = format!(
                    "the baseline `{}` breaks {} invariant(s) of validation; its structure is diffed as it is",
                    path.display(),
                    old_semantic.len()
                );
                errln!("warning: {warning}");
                warnings.push(warning);
            }
            Some((path.display().to_string(), old))
        }
        None => None,
    };
    let baseline = old_document
        .as_ref()
        .map(|(name, old)| diff_schemas(name, old, &source, &document));
    let abi_baseline = abi_diff(args, &document, old_document.as_ref().map(|(_, old)| old))?;
    let manifest = match (&args.plugin_manifest, &args.plugin) {
        (Some(path), _) => {
            let file = path.display().to_string();
            let manifest = parse_manifest(&file, &read_text(path)?)
                .map_err(|error| CommandError::Request(format!("cannot read the plugin manifest: {error}")))?;
            let tables = runtime_tables(&source, &document, &semantic, "--plugin-manifest")?;
            Some(audit_manifest(&file, &manifest, tables))
        }
        (None, Some(path)) => {
            let tables = runtime_tables(&source, &document, &semantic, "--plugin")?;
            let (manifest, descriptors) = plugin_requests(path, &args.plugin_args, tables)?;
            let mut audit = audit_manifest(&path.display().to_string(), &manifest, tables);
            audit.requests.extend(descriptors);
            Some(audit)
        }
        (None, None) => None,
    };
    let report = AuditReport {
        sealing,
        baseline,
        abi_baseline,
        manifest,
    };
    let rendered = match args.format {
        AuditFormat::Text => neverc_audit::text::audit_text(&report),
        AuditFormat::Json => {
            let mut json = crate::render::json_text(
                &JsonReport {
                    report: &report,
                    warnings: &warnings,
                },
                true,
            )?;
            json.push('\n');
            json
        }
        AuditFormat::Dot => neverc_audit::dot::audit_dot(&report),
        AuditFormat::Html => neverc_audit::html::audit_html(&report),
    };
    match &args.output {
        Some(path) => neverc_output::write_bytes(path, neverc_output::Mode::Data, rendered.as_bytes())?,
        None => {
            // On a terminal, names from the schema are shown with their control characters escaped; a file
            // gets the report as it is.
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(crate::render::escape_controls(&rendered).as_bytes());
        }
    }
    if report.fails() {
        let mut reasons = Vec::new();
        if !report.sealing.is_valid() {
            reasons.push("invariants of validation are broken".to_string());
        }
        if let Some(diff) = report.baseline.as_ref().filter(|diff| diff.is_breaking()) {
            reasons.push(format!(
                "{} breaking change(s) against {}",
                diff.count(neverc_audit::baseline::ChangeClass::Breaking),
                diff.old
            ));
        }
        if let Some(diff) = report.abi_baseline.as_ref().filter(|diff| diff.is_breaking()) {
            reasons.push(format!(
                "{} breaking ABI change(s) against {}",
                diff.count(neverc_audit::baseline::ChangeClass::Breaking),
                diff.old
            ));
        }
        if let Some(manifest) = &report.manifest {
            let refused = manifest.violations().count();
            if refused > 0 {
                reasons.push(format!(
                    "{refused} request(s) of {} refused by the policy",
                    manifest.file
                ));
            }
        }
        return Err(CommandError::AuditFailed(format!(
            "audit failed: {}",
            reasons.join("; ")
        )));
    }
    Ok(())
}
