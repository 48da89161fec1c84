//! `neverc-spec cc plan` and `neverc-spec cc validate`.

use std::ops::Range;

use miette::{MietteDiagnostic, Severity};
use neverc_cc::assignment::{Decider, ValueRef};
use neverc_cc::layout::TypeTable;
use neverc_cc::plan::{LocationKind, Plan};
use neverc_cc::plan_validation::{ValueSizes, check_plan_records, validate_plan};
use neverc_cc::planner::{
    NoteSeverity, PlanNote, PlannedFunction, PlanningError, assign, plan_from_spec, plan_standard,
};
use neverc_cc::signature::{Signature, parse_type_definition};
use neverc_tables::TargetRecord;
use neverc_tables::target_by_name;
use serde::Serialize;

use crate::CommandError;
use crate::cli::{CcCommand, CcLowerArgs, CcMaterializeArgs, CcPlanArgs, CcValidateArgs, Format};
use crate::targets::choose_target;

pub(crate) fn run(command: &CcCommand) -> Result<(), CommandError> {
    match command {
        CcCommand::Plan(args) => plan(args),
        CcCommand::Validate(args) => validate(args),
        CcCommand::Materialize(args) => materialize(args),
        CcCommand::Lower(args) => lower(args),
    }
}

/// Prints `message` with a caret under `span` of `text` (named `what`), as miette renders it.
fn caret(what: &str, text: &str, span: Range<usize>, message: &str) {
    caret_with(what, text, span, message, Severity::Error);
}

fn caret_with(what: &str, text: &str, span: Range<usize>, message: &str, severity: Severity) {
    // Only the part around the span is shown, so a long spec or signature stays readable and renderable.
    let diagnostic = MietteDiagnostic::new(message.to_string()).with_severity(severity);
    crate::render::print_snippet(diagnostic, what, text, span, "here");
}

/// Prints a planner note the same way on every path (`cc plan`, `cc materialize`): with a caret under the
/// spec token it is about (the spec shown as `source`), or as one line; `prefix` says where the spec came from.
fn report_note(source: &str, prefix: &str, spec: &str, note: &PlanNote) {
    let (word, severity) = match note.severity {
        NoteSeverity::Warning => ("warning", Severity::Warning),
        NoteSeverity::Note => ("note", Severity::Advice),
    };
    match &note.span {
        Some(span) => caret_with(
            source,
            spec,
            span.clone(),
            &format!("{prefix}{word}: {}", note.message),
            severity,
        ),
        None => errln!("{prefix}{word}: {}", note.message),
    }
}

/// Prints a planning error, with a caret under the spec token when the spec is at fault.
fn report_planning_error(source: &str, spec: &str, error: &PlanningError) {
    if let PlanningError::MalformedSpec { span, .. } = error {
        caret(source, spec, span.clone(), &error.to_string());
    }
}

fn types(definitions: &[String]) -> Result<TypeTable, CommandError> {
    let mut table = TypeTable::new();
    for definition in definitions {
        match parse_type_definition(definition) {
            Ok((name, Some(ty))) => {
                table.insert(name, ty);
            }
            Ok((name, None)) => {
                return Err(CommandError::Request(format!(
                    "`{name}` is opaque; its size is unknown"
                )));
            }
            Err(error) => {
                caret("--type", definition, error.span.clone(), &error.message);
                return Err(CommandError::Request("invalid --type".into()));
            }
        }
    }
    Ok(table)
}

fn signature(text: &str) -> Result<Signature, CommandError> {
    Signature::parse(text).map_err(|error| {
        caret("--sig", text, error.span.clone(), &error.message);
        CommandError::Request("invalid --sig".into())
    })
}

#[derive(Serialize)]
struct PlanRow {
    value: String,
    decided_by: &'static str,
    pieces: Vec<PieceRow>,
    indirect: bool,
}

#[derive(Serialize)]
struct PieceRow {
    place: String,
    offset: u64,
    size: u64,
    width_bits: Option<u32>,
}

#[derive(Serialize)]
struct NoteRow {
    severity: &'static str,
    message: String,
}

#[derive(Serialize)]
struct PlanOutput {
    target: &'static str,
    /// `spec` or `standard`.
    source: &'static str,
    /// The plan string; none when the placement is no valid plan (`plan_error` says why).
    plan: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    plan_error: Option<String>,
    values: Vec<PlanRow>,
    callee_saved: Vec<String>,
    stack_alignment: u64,
    notes: Vec<NoteRow>,
}

/// Byte sizes of a signature's values, as plan checks take them.
fn value_sizes(target: &TargetRecord, signature: &Signature, types: &TypeTable) -> Result<ValueSizes, CommandError> {
    let pointer = u64::from(target.pointer_width / 8);
    let size_of = |ty: &neverc_cc::signature::IrType| -> Result<u32, CommandError> {
        let layout = neverc_cc::layout::layout_of(ty, pointer, types)
            .map_err(|error| CommandError::Request(error.to_string()))?;
        Ok(u32::try_from(layout.store_size).unwrap_or(u32::MAX))
    };
    let returns = if signature.return_type == neverc_cc::signature::IrType::Void {
        Vec::new()
    } else {
        vec![size_of(&signature.return_type)?]
    };
    let arguments = signature
        .parameters
        .iter()
        .map(|parameter| size_of(&parameter.ty))
        .collect::<Result<_, _>>()?;
    Ok(ValueSizes { returns, arguments })
}

/// Plans under the spec (or the target's default spec), or, with --standard, by the standard convention
/// alone; the plan string is withheld, with the reason, when the standard placement is no valid plan.
fn planned_function(
    args: &CcPlanArgs,
    target: &'static TargetRecord,
    signature: &Signature,
    types: &TypeTable,
) -> Result<(PlannedFunction, Option<String>), CommandError> {
    if args.standard {
        let planned = plan_standard(target, signature, types, &args.function)
            .map_err(|error| CommandError::Request(error.to_string()))?;
        let sizes = value_sizes(target, signature, types)?;
        let rejection = check_plan_records(&planned.plan, target, Some(&sizes))
            .err()
            .map(|error| error.to_string());
        return Ok((planned, rejection));
    }
    let spec = args.spec.as_deref().unwrap_or(target.default_spec);
    let planned = plan_from_spec(target, spec, signature, types, &args.function).map_err(|error| {
        report_planning_error("--spec", spec, &error);
        CommandError::Request(error.to_string())
    })?;
    Ok((planned, None))
}

fn plan(args: &CcPlanArgs) -> Result<(), CommandError> {
    let json = args.format == Format::Json;
    let target = choose_target(&args.target, json)?;
    let spec = args.spec.as_deref().unwrap_or(target.default_spec);
    let signature = signature(&args.sig)?;
    let types = types(&args.types)?;
    let (planned, plan_error) = planned_function(args, target, &signature, &types)?;
    let values: Vec<PlanRow> = planned
        .assignments
        .iter()
        .map(|assignment| PlanRow {
            value: match assignment.value {
                ValueRef::Return => "return".to_string(),
                ValueRef::Argument(index) => format!("argument {index}"),
            },
            decided_by: match assignment.decider {
                Decider::Plan => "plan",
                Decider::Standard => "standard",
            },
            indirect: assignment.indirect,
            pieces: assignment
                .pieces
                .iter()
                .map(|piece| PieceRow {
                    place: piece.place.describe(target),
                    offset: piece.offset,
                    size: piece.size,
                    width_bits: match piece.place {
                        neverc_cc::assignment::Place::Register { width, .. } => Some(width),
                        neverc_cc::assignment::Place::Stack { .. } => None,
                    },
                })
                .collect(),
        })
        .collect();
    let notes: Vec<NoteRow> = planned
        .notes
        .iter()
        .map(|note| NoteRow {
            severity: match note.severity {
                NoteSeverity::Note => "note",
                NoteSeverity::Warning => "warning",
            },
            message: note.message.clone(),
        })
        .collect();
    let callee_saved = planned
        .plan
        .callee_saved
        .iter()
        .map(|number| match target.register_by_number(*number) {
            Some(resolved) => neverc_cc::assignment::register_view_name(target, resolved.register, resolved.width),
            None => format!("register#{number}"),
        })
        .collect();
    let output = PlanOutput {
        target: target.name,
        source: if args.standard { "standard" } else { "spec" },
        plan: plan_error.is_none().then(|| planned.plan.serialize()),
        plan_error,
        values,
        callee_saved,
        stack_alignment: planned.plan.stack_alignment,
        notes,
    };
    if json {
        let text = crate::render::json_text(&output, true)?;
        outln!("{text}");
        return Ok(());
    }
    match (&output.plan, &output.plan_error) {
        (Some(plan), _) => outln!("{plan}"),
        (None, Some(error)) => outln!("no plan string: the standard placement is not a valid plan ({error})"),
        (None, None) => {}
    }
    outln!(
        "{:<12} {:<9} {:<12} {:>6} {:>5} {:>6}",
        "value",
        "by",
        "place",
        "offset",
        "size",
        "width"
    );
    for row in &output.values {
        for piece in &row.pieces {
            let place = if row.indirect {
                format!("{} (address)", piece.place)
            } else {
                piece.place.clone()
            };
            let width = piece
                .width_bits
                .map_or_else(|| "-".to_string(), |width| width.to_string());
            outln!(
                "{:<12} {:<9} {:<12} {:>6} {:>5} {:>6}",
                row.value,
                row.decided_by,
                place,
                piece.offset,
                piece.size,
                width
            );
        }
    }
    outln!(
        "callee-saved: {}",
        if output.callee_saved.is_empty() {
            "none".to_string()
        } else {
            output.callee_saved.join(", ")
        }
    );
    outln!("stack alignment: {}", output.stack_alignment);
    for note in &planned.notes {
        report_note("--spec", "", spec, note);
    }
    Ok(())
}

fn validate(args: &CcValidateArgs) -> Result<(), CommandError> {
    let json = args.format == Format::Json;
    let target = choose_target(&args.target, json)?;
    let parsed = match Plan::parse(&args.plan) {
        Ok(plan) => plan,
        Err(error) => {
            if json {
                let value = serde_json::json!({ "valid": false, "error": error.to_string() });
                outln!("{}", crate::render::json_text(&value, false)?);
            } else {
                caret("plan", &args.plan, error.span.clone(), &error.to_string());
            }
            return Err(CommandError::Request("the plan is malformed".into()));
        }
    };
    let signature = args.sig.as_deref().map(signature).transpose()?;
    let types = TypeTable::new();
    let sizes = match &signature {
        Some(signature) => Some(value_sizes(target, signature, &types)?),
        None => None,
    };
    // With the signature, the plan is also read over it as every plan is used (`assign`), so that what the
    // planner refuses for the signature (a return the target cannot make) is refused here too.
    let result = validate_plan(&parsed, target, sizes.as_ref())
        .map_err(|error| error.to_string())
        .and_then(|()| match &signature {
            Some(signature) => assign(target, &parsed, signature, &types)
                .map(drop)
                .map_err(|error| error.to_string()),
            None => Ok(()),
        });
    if json {
        let value = match &result {
            Ok(()) => serde_json::json!({ "valid": true, "plan": parsed.serialize() }),
            Err(error) => serde_json::json!({ "valid": false, "error": error.to_string() }),
        };
        outln!("{}", crate::render::json_text(&value, false)?);
    }
    match result {
        Ok(()) => {
            if !json {
                let registers = parsed
                    .arguments
                    .iter()
                    .chain(&parsed.returns)
                    .filter(|l| l.kind == LocationKind::Register)
                    .count();
                outln!(
                    "valid for {}: {} return and {} argument location(s), {} in registers",
                    target.name,
                    parsed.returns.len(),
                    parsed.arguments.len(),
                    registers
                );
            }
            Ok(())
        }
        Err(error) => Err(CommandError::Request(error)),
    }
}

/// The target a module's `target triple` names: the one whose triple has the same architecture.
fn target_for_triple(triple: &str) -> Option<&'static TargetRecord> {
    let architecture = triple.split('-').next().unwrap_or("");
    neverc_tables::BUNDLED_TARGETS
        .iter()
        .copied()
        .find(|target| target.triple.split('-').next() == Some(architecture) || target.answers_to(architecture))
}

/// The target `--target` names, or the one of the module's `target triple`.
fn module_target(name: Option<&str>, text: &str) -> Result<&'static TargetRecord, CommandError> {
    if let Some(name) = name {
        return target_by_name(name).ok_or_else(|| CommandError::Request(format!("unknown target `{name}`")));
    }
    let triple = text
        .lines()
        .find_map(|line| {
            line.strip_prefix("target triple = \"")
                .and_then(|rest| rest.strip_suffix('"'))
        })
        .ok_or_else(|| CommandError::Request("the module has no `target triple`; give --target".into()))?;
    target_for_triple(triple)
        .ok_or_else(|| CommandError::Request(format!("no bundled target for triple `{triple}`; give --target")))
}

/// Prints `message` under the line `line` of `text` (named by `input`), as miette renders it.
fn caret_at_line(input: &std::path::Path, text: &str, line: usize, message: &str) {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let length = text[start..].find('\n').unwrap_or(text.len() - start);
    caret(&input.display().to_string(), text, start..start + length, message);
}

/// The calling-convention plugin of `--plugin`, registered: loaded with its arguments, its conventions checked.
fn convention_plugin(args: &CcMaterializeArgs) -> Result<Option<neverc_plugin_host::ConventionPlugin>, CommandError> {
    let Some(path) = &args.plugin else {
        return Ok(None);
    };
    let mut loaded = crate::plugins::load_all(std::slice::from_ref(path), &args.plugin_args)?;
    let Some(plugin) = loaded.pop() else {
        return Ok(None);
    };
    neverc_plugin_host::ConventionPlugin::register(plugin, &neverc_tables::BUNDLED_PHASES)
        .map(Some)
        .map_err(|error| CommandError::Request(format!("{error} ({})", error.code().name())))
}

/// What a calling-convention plugin reported through the host table, each printed as a warning or a note
/// naming it, and returned (`true` for a warning) for the JSON report.
fn convention_reports(plugin: &neverc_plugin_host::ConventionPlugin) -> Vec<(bool, String)> {
    let warning = neverc_tables::plugin_abi::core::Severity::Warning.raw();
    plugin
        .reports()
        .into_iter()
        .map(|(severity, text)| {
            let is_warning = severity >= warning;
            let word = if is_warning { "warning" } else { "note" };
            errln!("{word}: plugin `{}`: {text}", plugin.id());
            (is_warning, text)
        })
        .collect()
}

fn materialize(args: &CcMaterializeArgs) -> Result<(), CommandError> {
    use neverc_cc::materialize::{MaterializeError, MaterializeOptions, Planner, WriteOutput, materialize_with};
    use neverc_output::WriteError;
    let json = args.format == Format::Json;
    let mut inputs = vec![("the input", args.input.as_path())];
    if let Some(plugin) = &args.plugin {
        inputs.push(("--plugin", plugin.as_path()));
    }
    neverc_output::check_distinct(&[("-o", &args.output)], &inputs)?;
    let text = neverc_userfile::read_user_text(&args.input, neverc_userfile::MODULE_LIMIT)
        .map_err(|error| CommandError::Io(error.to_string()))?;
    let target = module_target(args.target.as_deref(), &text)?;
    let options = MaterializeOptions {
        cc_all: args.cc_all,
        prefix: args.ccprefix.clone(),
        spec: args.ccspec.clone(),
        shuffle: args.ccshuffle,
    };
    let plugin = convention_plugin(args)?;
    let convention = match &plugin {
        Some(plugin) => Some(
            plugin
                .convention_for(target)
                .map_err(|error| CommandError::Request(format!("{error} ({})", error.code().name())))?,
        ),
        None => None,
    };
    let planner = match &convention {
        Some(convention) => Planner::Convention(convention),
        None => Planner::Specs(&options),
    };
    let produced = neverc_output::write_with(&args.output, neverc_output::Mode::Data, |file| {
        if !args.lower {
            return materialize_with(&text, target, planner, &mut WriteOutput(file)).map(|report| (report, None));
        }
        let mut materialized = String::with_capacity(text.len() + text.len() / 4);
        let report = materialize_with(&text, target, planner, &mut materialized)?;
        let lowered = neverc_cc::lower::lower_to(&materialized, target, &mut WriteOutput(file))
            .map(|lowered| (lowered.incoming.len(), lowered.outgoing.len(), lowered.direct_calls))
            .map_err(|error| MaterializeError::Lower(Box::new(error)))?;
        Ok((report, Some(lowered)))
    });
    let plugin_reports = plugin.as_ref().map(convention_reports).unwrap_or_default();
    // A plugin's failure names the plugin; the engine's message names the line and the function.
    let by_plugin = |message: String| match &plugin {
        Some(plugin) => format!("plugin `{}`: {message}", plugin.id()),
        None => message,
    };
    let (result, lowered) = match produced {
        Ok(result) => result,
        Err(WriteError::Output(error)) => return Err(error.into()),
        Err(WriteError::Produce(MaterializeError::Write(error))) => {
            return Err(CommandError::Io(format!(
                "cannot write `{}`: {error}",
                args.output.display()
            )));
        }
        Err(WriteError::Produce(error)) => {
            if !json && error.line() > 0 {
                caret_at_line(&args.input, &text, error.line(), &by_plugin(error.to_string()));
            }
            return Err(CommandError::Request(by_plugin(format!(
                "{}: {error}",
                args.input.display()
            ))));
        }
    };
    for warning in &result.warnings {
        errln!(
            "{}:{}: warning: {}: {}",
            args.input.display(),
            warning.line,
            warning.function,
            warning.message
        );
    }
    for noted in &result.notes {
        let prefix = format!("{}:{}: {}: ", args.input.display(), noted.line, noted.function);
        let source = format!("spec of {} ({}:{})", noted.function, args.input.display(), noted.line);
        report_note(&source, &prefix, &noted.spec, &noted.note);
    }
    if json {
        // The plugin's reports, as the text run prints them: its warnings with the engine's, its notes with
        // the planner's, each naming the plugin.
        let plugin_id = plugin.as_ref().map(|plugin| plugin.id());
        let reported = |wanted: bool| {
            plugin_reports
                .iter()
                .filter(move |(is_warning, _)| *is_warning == wanted)
                .map(move |(_, text)| serde_json::json!({"plugin": plugin_id, "message": text}))
        };
        let warnings = result
            .warnings
            .iter()
            .map(|w| serde_json::json!({"function": w.function, "line": w.line, "message": w.message}))
            .chain(reported(true));
        let notes = result
            .notes
            .iter()
            .map(|n| {
                serde_json::json!({
                    "function": n.function,
                    "line": n.line,
                    "severity": if n.note.severity == NoteSeverity::Warning { "warning" } else { "note" },
                    "message": n.note.message,
                })
            })
            .chain(reported(false).map(|mut note| {
                note["severity"] = "note".into();
                note
            }));
        let value = serde_json::json!({
            "target": target.name,
            "lowered": lowered.map(|(incoming, outgoing, direct)| serde_json::json!({"incoming": incoming, "outgoing": outgoing, "direct_calls": direct})),
            "plans": result.plans().map(|(name, plan)| (name, plan.to_string())).collect::<std::collections::BTreeMap<_, _>>(),
            "validated": result.validated,
            "warnings": warnings.collect::<Vec<_>>(),
            "notes": notes.collect::<Vec<_>>(),
        });
        outln!("{}", crate::render::json_text(&value, false)?);
    } else {
        outln!(
            "{}: {} plan(s) materialized, {} existing plan(s) validated, {} warning(s); wrote {}",
            args.input.display(),
            result.plan_count(),
            result.validated.len(),
            result.warning_count(),
            args.output.display()
        );
        if let Some((incoming, outgoing, direct)) = lowered {
            outln!(
                "lowered: {incoming} adapter(s) for planned functions, {outgoing} for calls out, {direct} direct call(s) of bodies"
            );
        }
    }
    Ok(())
}

fn lower(args: &CcLowerArgs) -> Result<(), CommandError> {
    use neverc_cc::lower::{LowerError, lower_to};
    use neverc_cc::materialize::WriteOutput;
    use neverc_output::WriteError;
    let json = args.format == Format::Json;
    let mut inputs = vec![("the input", args.input.as_path())];
    if let Some(path) = &args.target_file {
        inputs.push(("--target-file", path.as_path()));
    }
    neverc_output::check_distinct(&[("-o", &args.output)], &inputs)?;
    let text = neverc_userfile::read_user_text(&args.input, neverc_userfile::MODULE_LIMIT)
        .map_err(|error| CommandError::Io(error.to_string()))?;
    let target = match &args.target_file {
        Some(path) => crate::targets::load_runtime_target(path, json)?,
        None => module_target(args.target.as_deref(), &text)?,
    };
    let produced = neverc_output::write_with(&args.output, neverc_output::Mode::Data, |file| {
        lower_to(&text, target, &mut WriteOutput(file))
    });
    let report = match produced {
        Ok(report) => report,
        Err(WriteError::Output(error)) => return Err(error.into()),
        Err(WriteError::Produce(LowerError::Write(error))) => {
            return Err(CommandError::Io(format!(
                "cannot write `{}`: {error}",
                args.output.display()
            )));
        }
        Err(WriteError::Produce(error)) => {
            if !json && error.line() > 0 {
                caret_at_line(&args.input, &text, error.line(), &error.to_string());
            }
            return Err(CommandError::Request(format!("{}: {error}", args.input.display())));
        }
    };
    // Functions with specs and no plans keep the standard convention: lowering is not what their specs need.
    let input = args.input.display();
    let advice = format!(
        "materialize them first: `neverc-spec cc materialize {input} -o {} --lower`",
        args.output.display()
    );
    if !report.unmaterialized.is_empty() {
        const SHOWN: usize = 8;
        let names: Vec<&str> = report
            .unmaterialized
            .iter()
            .take(SHOWN)
            .map(|unplanned| unplanned.function)
            .collect();
        let more = report.unmaterialized.len().saturating_sub(SHOWN);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        errln!(
            "{input}: warning: {} function(s) carry a neverc-callconv spec but no plan, so they keep the standard \
             convention and nothing follows their specs: {}{more}; {advice}",
            report.unmaterialized.len(),
            names.join(", ")
        );
    }
    if json {
        let warnings: Vec<serde_json::Value> = report
            .unmaterialized
            .iter()
            .map(|unplanned| {
                serde_json::json!({
                    "function": unplanned.function,
                    "line": unplanned.line,
                    "message": format!(
                        "carries a neverc-callconv spec but no plan, so it keeps the standard convention; {advice}"
                    ),
                })
            })
            .collect();
        let value = serde_json::json!({
            "target": target.name,
            "incoming": report.incoming,
            "outgoing": report.outgoing,
            "direct_calls": report.direct_calls,
            "warnings": warnings,
        });
        outln!("{}", crate::render::json_text(&value, false)?);
    } else {
        outln!(
            "{}: {} adapter(s) for planned functions, {} for calls out, {} direct call(s) of bodies; wrote {}",
            args.input.display(),
            report.incoming.len(),
            report.outgoing.len(),
            report.direct_calls,
            args.output.display()
        );
    }
    Ok(())
}
