//! `neverc-spec targets`: the targets compiled into this binary, and any loaded at run time.

use neverc_loader::{LoadTablesError, load_target_file};
use neverc_tables::BUNDLED_TARGETS;
use neverc_tables::TargetRecord;
use serde::Serialize;

use crate::CommandError;
use crate::cli::{Format, TargetChoice, TargetsArgs};
use crate::render::load_failure;

#[derive(Serialize)]
struct TargetRow<'a> {
    name: &'a str,
    aliases: &'a [&'a str],
    triple: &'a str,
    origin: &'a str,
    schema_digest: &'a str,
    target_id: String,
    convention_id: String,
    registers: usize,
    spellings: usize,
    default_spec: &'a str,
}

/// Loads a `--target-file`, printing its problems.
pub(crate) fn load_runtime_target(path: &std::path::Path, json: bool) -> Result<&'static TargetRecord, CommandError> {
    load_target_file(path).map_err(|error| match error {
        LoadTablesError::Load(error) => load_failure(error, json).0,
        LoadTablesError::Lowering(message) => CommandError::Internal(message),
    })
}

/// The target a command names: a `--target-file`, or a compiled-in target by name or alias.
pub(crate) fn choose_target(choice: &TargetChoice, json: bool) -> Result<&'static TargetRecord, CommandError> {
    match (&choice.target, &choice.target_file) {
        (_, Some(path)) => load_runtime_target(path, json),
        (Some(name), None) => neverc_tables::target_by_name(name)
            .ok_or_else(|| CommandError::Request(format!("unknown target `{name}`; `neverc-spec targets` lists them"))),
        (None, None) => Err(CommandError::Request("give --target or --target-file".into())),
    }
}

pub(crate) fn run(args: &TargetsArgs) -> Result<(), CommandError> {
    let json = args.format == Format::Json;
    let mut targets: Vec<(&TargetRecord, &str)> =
        BUNDLED_TARGETS.iter().map(|target| (*target, "compiled-in")).collect();
    for path in &args.target_files {
        targets.push((load_runtime_target(path, json)?, "loaded"));
    }
    let rows: Vec<TargetRow<'_>> = targets
        .iter()
        .map(|(target, origin)| TargetRow {
            name: target.name,
            aliases: target.aliases,
            triple: target.triple,
            origin,
            schema_digest: target.schema_digest,
            target_id: format!("{:#x}:{:#x}", target.target_id.high, target.target_id.low),
            convention_id: format!("{:#x}:{:#x}", target.convention_id.high, target.convention_id.low),
            registers: target.registers.len(),
            spellings: target.names.len(),
            default_spec: target.default_spec,
        })
        .collect();
    if json {
        let text = crate::render::json_text(&rows, true)?;
        outln!("{text}");
    } else {
        for row in &rows {
            outln!(
                "{:<8} {:<12} {:<28} {:>3} registers {:>4} spellings  plans `{}` target={} cc={}  aliases [{}]  default `{}`",
                row.name,
                row.origin,
                row.triple,
                row.registers,
                row.spellings,
                row.schema_digest,
                row.target_id,
                row.convention_id,
                row.aliases.join(", "),
                row.default_spec
            );
        }
    }
    Ok(())
}
