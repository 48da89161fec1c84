//! `neverc-spec resolve`: what a register name or plan number means on a target.

use neverc_tables::{NameKind, ResolvedRegister, TargetRecord};
use serde::Serialize;

use crate::CommandError;
use crate::cli::{Format, ResolveArgs};
use crate::targets::choose_target;

#[derive(Serialize)]
struct Resolution<'a> {
    query: &'a str,
    found: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    register: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    class: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    width: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    plan_number: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dwarf: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    spelling: Option<&'static str>,
    reserved: bool,
}

fn lookup(target: &TargetRecord, query: &str) -> Option<ResolvedRegister> {
    match query.strip_prefix('#') {
        Some(number) => number.parse().ok().and_then(|number| target.register_by_number(number)),
        None => target.resolve_register(query),
    }
}

pub(crate) fn run(args: &ResolveArgs) -> Result<(), CommandError> {
    let json = args.format == Format::Json;
    let target = choose_target(&args.target, json)?;
    let mut all_found = true;
    let mut rows = Vec::new();
    for query in &args.registers {
        let resolved = lookup(target, query);
        all_found &= resolved.is_some();
        let record = resolved.and_then(|resolved| target.register(resolved.register));
        rows.push(Resolution {
            query,
            found: resolved.is_some(),
            register: record.map(|record| record.name),
            class: resolved
                .and_then(|resolved| target.class_of(resolved.register))
                .map(|class| class.name),
            width: resolved.map(|resolved| resolved.width),
            plan_number: resolved.map(|resolved| resolved.plan_number),
            dwarf: record.map(|record| record.dwarf),
            spelling: resolved.map(|resolved| match resolved.kind {
                NameKind::Canonical => "canonical",
                NameKind::Alias => "alias",
                NameKind::SubRegister => "sub-register",
            }),
            reserved: resolved.is_some_and(|resolved| target.is_reserved(resolved.register)),
        });
    }
    if json {
        let text = crate::render::json_text(&rows, true)?;
        outln!("{text}");
    } else {
        for row in &rows {
            match (row.register, row.width, row.plan_number) {
                (Some(register), Some(width), Some(number)) => outln!(
                    "{:<8} -> {register} ({}, {width}-bit {}), plan number {number}, DWARF {}{}",
                    row.query,
                    row.class.unwrap_or("?"),
                    row.spelling.unwrap_or("?"),
                    row.dwarf.unwrap_or(0),
                    if row.reserved { ", reserved: specs skip it" } else { "" }
                ),
                _ => outln!("{:<8} -> not a register of {}", row.query, target.name),
            }
        }
    }
    if all_found {
        Ok(())
    } else {
        Err(CommandError::Request(format!(
            "some names are not registers of {}",
            target.name
        )))
    }
}
