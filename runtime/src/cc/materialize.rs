//! Materialization over a module: NeverC's `neverc.ir.pass.post_opt` pipeline over LLVM IR text.
//!
//! Functions are selected as NeverC's reference plugin selects them (source specs win; then `cc-all` with
//! a name prefix, the session spec or the shuffled layouts), existing plans are only validated, specs
//! become `"neverc-cc-plan-v1"` attributes (the spec attribute is removed), the function and its direct
//! call sites get `cc 1000`, call sites inherit the callee's plan, and functions whose address escapes are
//! reported. The output differs from the input only by these edits.

use std::collections::{BTreeMap, HashMap};

use crate::cc::ll_reader::{AttributeGroup, CallSite, FunctionHeader, ReadError, encode_ir_string, read_module};
use crate::cc::plan::{PLAN_TAG, Plan};
use crate::cc::plan_validation::{PlanRejection, check_plan_identity};
use crate::cc::planner::{PlanNote, PlanningError, plan_from_spec};
use crate::tables::TargetRecord;

/// LLVM's number for NeverC's custom calling convention.
pub const NEVER_C_CUSTOM_CONVENTION: u32 = 1000;
/// NeverC's warning for a function whose address escapes.
pub const ADDRESS_TAKEN_WARNING: &str = "custom calling convention applied to a function whose address is taken; indirect calls will not use it and may violate the ABI";

/// The plugin options of NeverC's reference plugin.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MaterializeOptions {
    /// Apply a spec to every defined function whose name starts with `prefix`.
    pub cc_all: bool,
    pub prefix: String,
    /// The session spec for `cc_all`; the target's default spec when `None`.
    pub spec: Option<String>,
    /// Cycle through the target's four layouts instead of the session spec.
    pub shuffle: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub function: String,
    pub line: usize,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Materialized {
    pub text: String,
    /// Functions given a plan, with the plan.
    pub plans: BTreeMap<String, String>,
    /// Existing plans that were validated.
    pub validated: Vec<String>,
    pub warnings: Vec<Warning>,
    pub notes: Vec<(String, PlanNote)>,
}

#[derive(Debug, thiserror::Error)]
pub enum MaterializeError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("line {line}: {function}: {error}")]
    Planning {
        function: String,
        line: usize,
        error: PlanningError,
    },
    #[error("line {line}: {function}: {message}")]
    Plan {
        function: String,
        line: usize,
        message: String,
    },
}

/// Where a function's spec comes from.
enum Source {
    Existing(String),
    Spec(String),
}

/// Materializes every selected function of `text` for `target`.
pub fn materialize(
    text: &str,
    target: &TargetRecord,
    options: &MaterializeOptions,
) -> Result<Materialized, MaterializeError> {
    let module = read_module(text)?;
    let groups: HashMap<u32, usize> = module
        .attribute_groups
        .iter()
        .enumerate()
        .map(|(index, group)| (group.id, index))
        .collect();
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut plans = BTreeMap::new();
    let mut validated = Vec::new();
    let mut notes = Vec::new();
    let mut shuffle_counter = 0usize;
    let mut next_group = module
        .attribute_groups
        .iter()
        .map(|group| group.id + 1)
        .max()
        .unwrap_or(0);
    let mut new_groups: HashMap<u32, u32> = HashMap::new();
    let mut appended_groups = String::new();
    let mut materialized: HashMap<String, String> = HashMap::new();
    let exclusive_groups = exclusive_spec_groups(text, &module);

    for function in &module.functions {
        let group = function
            .attribute_group
            .as_ref()
            .and_then(|(id, _)| groups.get(id))
            .map(|index| &module.attribute_groups[*index]);
        let existing = function
            .inline_plan
            .clone()
            .map(|(_, plan)| plan)
            .or_else(|| group.and_then(|group| group.plan.clone()).map(|(_, plan)| plan));
        let source_spec = function
            .inline_spec
            .clone()
            .map(|(_, spec)| spec)
            .or_else(|| group.and_then(|group| group.spec.clone()).map(|(_, spec)| spec))
            .or_else(|| module.annotations.get(&function.name).cloned());
        let bare_name = function.name.trim_start_matches('@').trim_matches('"');
        let source = if let Some(plan) = existing {
            Source::Existing(plan)
        } else if let Some(spec) = source_spec {
            Source::Spec(spec)
        } else if options.cc_all && function.is_definition && bare_name.starts_with(&options.prefix) {
            if options.shuffle && !target.shuffle_layouts.is_empty() {
                let layout = target.shuffle_layouts[shuffle_counter % target.shuffle_layouts.len()];
                shuffle_counter += 1;
                Source::Spec(layout.to_string())
            } else {
                Source::Spec(options.spec.clone().unwrap_or_else(|| target.default_spec.to_string()))
            }
        } else {
            continue;
        };
        let plan_text = match source {
            Source::Existing(plan) => {
                let parsed = Plan::parse(&plan).map_err(|_| MaterializeError::Plan {
                    function: function.name.clone(),
                    line: function.line,
                    message: "malformed NeverC calling convention plan".into(),
                })?;
                check_plan_identity(&parsed, target).map_err(|rejection: PlanRejection| MaterializeError::Plan {
                    function: function.name.clone(),
                    line: function.line,
                    message: rejection.to_string(),
                })?;
                validated.push(function.name.clone());
                plan
            }
            Source::Spec(spec) => {
                let planned =
                    plan_from_spec(target, &spec, &function.signature, &module.types, bare_name).map_err(|error| {
                        MaterializeError::Planning {
                            function: function.name.clone(),
                            line: function.line,
                            error,
                        }
                    })?;
                notes.extend(planned.notes.into_iter().map(|note| (function.name.clone(), note)));
                let plan = planned.plan.serialize();
                let mut in_place = Vec::new();
                edit_function(
                    function,
                    group.map(|group| (group.id, group.spec.is_some())),
                    &plan,
                    &mut edits,
                    |id| {
                        *new_groups.entry(id).or_insert_with(|| {
                            let Some(group) = groups.get(&id).map(|index| &module.attribute_groups[*index]) else {
                                return id;
                            };
                            // A group used only by functions that all carry its spec is edited in place; a group
                            // shared with anything else is copied without the spec under a new number.
                            if exclusive_groups.contains(&id) {
                                if let Some((range, _)) = &group.spec {
                                    in_place.push((range.start.saturating_sub(1), range.end, String::new()));
                                }
                                return id;
                            }
                            let assigned = next_group;
                            next_group += 1;
                            appended_groups.push_str(&group_without_spec(text, group, assigned));
                            assigned
                        })
                    },
                );
                edits.extend(in_place);
                plans.insert(function.name.clone(), plan.clone());
                plan
            }
        };
        materialized.insert(function.name.clone(), plan_text);
    }

    for call in &module.calls {
        if let Some(plan) = materialized.get(&call.callee) {
            edit_call(call, plan, &mut edits);
        }
    }
    let mut warnings = Vec::new();
    let mut warned = std::collections::HashSet::new();
    for reference in &module.references {
        if materialized.contains_key(&reference.name) && warned.insert(reference.name.clone()) {
            warnings.push(Warning {
                function: reference.name.clone(),
                line: reference.line,
                message: ADDRESS_TAKEN_WARNING.to_string(),
            });
        }
    }
    if !appended_groups.is_empty() {
        let at = module.attribute_groups.last().map_or(text.len(), |group| {
            let end = group.span.end;
            if text.as_bytes().get(end) == Some(&b'\n') {
                end + 1
            } else {
                end
            }
        });
        let prefix = if at == text.len() && !text.ends_with('\n') {
            "\n"
        } else {
            ""
        };
        edits.push((at, at, format!("{prefix}{appended_groups}")));
    }
    Ok(Materialized {
        text: apply(text, edits),
        plans,
        validated,
        warnings,
        notes,
    })
}

/// Attribute groups holding a spec whose every reference is a function header (those functions all take
/// the group's spec, so the spec can be removed from the group itself).
fn exclusive_spec_groups(text: &str, module: &crate::cc::ll_reader::Module) -> std::collections::HashSet<u32> {
    let mut result = std::collections::HashSet::new();
    for group in module.attribute_groups.iter().filter(|group| group.spec.is_some()) {
        let token = format!("#{}", group.id);
        let mut occurrences = 0;
        for (at, _) in text.match_indices(&token) {
            let next = text.as_bytes().get(at + token.len());
            if next.is_some_and(u8::is_ascii_digit) || text[..at].ends_with("attributes ") {
                continue;
            }
            occurrences += 1;
        }
        let headers = module
            .functions
            .iter()
            .filter(|function| function.attribute_group.as_ref().is_some_and(|(id, _)| *id == group.id))
            .count();
        if occurrences == headers {
            result.insert(group.id);
        }
    }
    result
}

fn plan_attribute(plan: &str) -> String {
    format!("\"{PLAN_TAG}\"=\"{}\"", encode_ir_string(plan))
}

fn convention_text() -> String {
    format!("cc {NEVER_C_CUSTOM_CONVENTION}")
}

fn edit_function(
    function: &FunctionHeader,
    group: Option<(u32, bool)>,
    plan: &str,
    edits: &mut Vec<(usize, usize, String)>,
    mut replacement_group: impl FnMut(u32) -> u32,
) {
    match &function.convention {
        Some((range, _)) => edits.push((range.start, range.end, convention_text())),
        None => edits.push((
            function.convention_at,
            function.convention_at,
            format!("{} ", convention_text()),
        )),
    }
    if let Some((range, _)) = &function.inline_spec {
        let start = if range.start > 0 { range.start - 1 } else { range.start };
        edits.push((start, range.end, String::new()));
    }
    if let (Some((id, true)), Some((_, range))) = (group, &function.attribute_group) {
        edits.push((range.start, range.end, format!("#{}", replacement_group(id))));
    }
    edits.push((
        function.attributes_at,
        function.attributes_at,
        format!(" {}", plan_attribute(plan)),
    ));
}

fn edit_call(call: &CallSite, plan: &str, edits: &mut Vec<(usize, usize, String)>) {
    match &call.convention {
        Some((range, _)) => edits.push((range.start, range.end, convention_text())),
        None => edits.push((
            call.convention_at,
            call.convention_at,
            format!("{} ", convention_text()),
        )),
    }
    if call.plan.is_none() {
        edits.push((
            call.after_arguments,
            call.after_arguments,
            format!(" {}", plan_attribute(plan)),
        ));
    }
}

/// A copy of an attribute group under a new number, without its spec attribute.
fn group_without_spec(text: &str, group: &AttributeGroup, id: u32) -> String {
    let mut body = text[group.body.clone()].to_string();
    if let Some((range, _)) = &group.spec {
        let relative = range.start - group.body.start..range.end - group.body.start;
        body.replace_range(relative, "");
        body = body.split_whitespace().collect::<Vec<_>>().join(" ");
        body = format!(" {body} ");
    }
    format!("attributes #{id} = {{{body}}}\n")
}

/// Applies non-overlapping edits `(start, end, replacement)` in one pass.
fn apply(text: &str, mut edits: Vec<(usize, usize, String)>) -> String {
    edits.sort_by_key(|(start, end, _)| (*start, *end));
    let mut out = String::with_capacity(text.len() + edits.iter().map(|(_, _, s)| s.len()).sum::<usize>());
    let mut cursor = 0;
    for (start, end, replacement) in edits {
        if start < cursor {
            continue;
        }
        out.push_str(&text[cursor..start]);
        out.push_str(&replacement);
        cursor = end;
    }
    out.push_str(&text[cursor..]);
    out
}
