//! Materialization over a module: NeverC's `neverc.ir.pass.post_opt` pipeline over LLVM IR text.
//!
//! Functions are selected as NeverC's reference plugin selects them (source specs win; then `cc-all` with
//! a name prefix, the session spec or the shuffled layouts), existing plans are only validated, specs
//! become `"neverc-cc-plan-v1"` attributes (the spec attribute is removed), the function and its direct
//! call sites get `cc 1000`, call sites inherit the callee's plan, and functions whose address escapes are
//! reported. The output differs from the input only by these edits.

use std::collections::{HashMap, HashSet};

use rustc_hash::FxHashMap;
use std::ops::Range;
use std::rc::Rc;

use crate::cc::ll_reader::{
    AttributeGroup, CallSite, FunctionHeader, Module, ReadError, collect_references, encode_ir_string, read_call,
    read_declarations,
};
use crate::cc::plan::{PLAN_TAG, Plan};
use crate::cc::plan_validation::check_plan_identity;
use crate::cc::planner::{PlanNote, PlanningError, plan_from_spec};
use crate::tables::TargetRecord;

/// The one spelling of LLVM's number for NeverC's custom calling convention, for the constant and the text.
macro_rules! never_c_custom_convention {
    () => {
        1000
    };
}

/// LLVM's number for NeverC's custom calling convention.
pub const NEVER_C_CUSTOM_CONVENTION: u32 = never_c_custom_convention!();
/// NeverC's warning for a function whose address escapes.
pub const ADDRESS_TAKEN_WARNING: &str = "custom calling convention applied to a function whose address is taken; indirect calls will not use it and may violate the ABI";
const CONVENTION: &str = concat!("cc ", never_c_custom_convention!());
const CONVENTION_AND_SPACE: &str = concat!("cc ", never_c_custom_convention!(), " ");

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
    /// Functions given a plan, in module order, with the plan (shared between functions planned alike).
    pub plans: Vec<(String, Rc<str>)>,
    /// Functions whose existing plan was validated.
    pub validated: Vec<String>,
    pub warnings: Vec<Warning>,
    /// Planner notes, once per distinct (spec, signature), with the first function that had them.
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

impl Materialized {
    /// The plan given to function `name` (`@name`), if any.
    pub fn plan_of(&self, name: &str) -> Option<&str> {
        self.plans
            .iter()
            .find(|(function, _)| function == name)
            .map(|(_, plan)| &**plan)
    }
}

/// An edit of the original text: replace `start..end` with a (usually shared) string.
type Edit = (usize, usize, Replacement);

/// Replacement text: a constant, or a string shared by many edits (a plan attribute).
#[derive(Clone)]
enum Replacement {
    Static(&'static str),
    Shared(Rc<str>),
}

impl Replacement {
    fn as_str(&self) -> &str {
        match self {
            Replacement::Static(text) => text,
            Replacement::Shared(text) => text,
        }
    }
}

/// A plan and its attribute text, shared by every function and call site that uses it.
#[derive(Clone)]
struct SharedPlan {
    /// Distinct plans are numbered in the order they are first made.
    id: usize,
    plan: Rc<str>,
    /// ` "neverc-cc-plan-v1"="…"`, for inline use.
    attribute: Rc<str>,
}

impl SharedPlan {
    fn new(id: usize, plan: String) -> SharedPlan {
        let attribute = format!(" \"{PLAN_TAG}\"=\"{}\"", encode_ir_string(&plan));
        SharedPlan {
            id,
            plan: plan.into(),
            attribute: attribute.into(),
        }
    }
}

/// A new group's references: `#N` (replacing a reference) and ` #N` (appended to a call site).
type GroupReferences = (Rc<str>, Rc<str>);

/// Attribute groups that carry plans: for every (original group, plan) pair one new group, holding the
/// original attributes (without a spec) and the plan, so that each function or call site only changes its
/// `#N` reference and the plan text is written once per group rather than once per use.
struct PlanGroups<'a> {
    text: &'a str,
    exclusive: HashSet<u32>,
    cleaned: HashSet<u32>,
    /// (original group, plan) → the new group's `#N` and ` #N` references.
    assigned: FxHashMap<(Option<u32>, usize), GroupReferences>,
    next_id: u32,
    appended: String,
}

impl PlanGroups<'_> {
    /// The group holding `base`'s attributes and `plan`, as the references `#N` and ` #N`.
    fn group_for(&mut self, base: Option<&AttributeGroup>, plan: &SharedPlan) -> GroupReferences {
        let key = (base.map(|group| group.id), plan.id);
        if let Some(references) = self.assigned.get(&key) {
            return references.clone();
        }
        let id = self.next_id;
        self.next_id += 1;
        let body = base
            .map(|group| group_body_without_spec(self.text, group))
            .unwrap_or_default();
        let separator = if body.is_empty() { "" } else { " " };
        self.appended.push_str(&format!(
            "attributes #{id} = {{ {body}{separator}{} }}\n",
            plan.attribute.trim_start()
        ));
        let references: GroupReferences = (Rc::from(format!("#{id}")), Rc::from(format!(" #{id}")));
        self.assigned.insert(key, references.clone());
        references
    }

    /// Removes a spec from a group in place when only spec carriers use the group (they all move away).
    fn clean(&mut self, group: &AttributeGroup, edits: &mut Vec<Edit>) {
        if self.exclusive.contains(&group.id)
            && self.cleaned.insert(group.id)
            && let Some((range, _)) = &group.spec
        {
            edits.push((range.start.saturating_sub(1), range.end, Replacement::Static("")));
        }
    }
}

/// Where a selected function's convention comes from.
enum Source {
    Existing(String),
    Spec(Rc<str>),
}

/// Materializes every selected function of `text` for `target`.
pub fn materialize(
    text: &str,
    target: &TargetRecord,
    options: &MaterializeOptions,
) -> Result<Materialized, MaterializeError> {
    let module = read_declarations(text)?;
    let groups: HashMap<u32, &AttributeGroup> = module.attribute_groups.iter().map(|group| (group.id, group)).collect();
    let mut plan_groups = PlanGroups {
        text,
        exclusive: exclusive_spec_groups(text, &module),
        cleaned: HashSet::new(),
        assigned: FxHashMap::default(),
        next_id: module
            .attribute_groups
            .iter()
            .map(|group| group.id + 1)
            .max()
            .unwrap_or(0),
        appended: String::new(),
    };
    let mut distinct_plans = 0usize;
    let session_spec: Rc<str> = Rc::from(options.spec.clone().unwrap_or_else(|| target.default_spec.to_string()));
    let layouts: Vec<Rc<str>> = target.shuffle_layouts.iter().map(|layout| Rc::from(*layout)).collect();
    // Keyed by the spec's allocation (session specs and layouts are shared) and the signature index; the
    // value keeps the spec alive so that its address is not reused.
    let mut memo: FxHashMap<(usize, usize), (Rc<str>, SharedPlan)> = FxHashMap::default();
    let mut edits: Vec<Edit> = Vec::with_capacity(module.functions.len() * 3);
    let mut plans = Vec::new();
    let mut validated = Vec::new();
    let mut notes = Vec::new();
    let mut shuffle_counter = 0usize;
    let mut materialized: FxHashMap<&str, SharedPlan> =
        FxHashMap::with_capacity_and_hasher(module.functions.len(), Default::default());

    for (function_index, function) in module.functions.iter().enumerate() {
        let group = function
            .attribute_group
            .as_ref()
            .and_then(|(id, _)| groups.get(id))
            .copied();
        let existing = function
            .inline_plan
            .as_ref()
            .or_else(|| group.and_then(|group| group.plan.as_ref()))
            .map(|(_, plan)| plan.clone());
        let source_spec = function
            .inline_spec
            .as_ref()
            .or_else(|| group.and_then(|group| group.spec.as_ref()))
            .map(|(_, spec)| spec.clone())
            .or_else(|| {
                if module.annotations.is_empty() {
                    None
                } else {
                    module.annotations.get(&function.name).cloned()
                }
            });
        let bare_name = function.name.trim_start_matches('@').trim_matches('"');
        let source = if let Some(plan) = existing {
            Source::Existing(plan)
        } else if let Some(spec) = source_spec {
            Source::Spec(Rc::from(spec))
        } else if options.cc_all && function.is_definition && bare_name.starts_with(&options.prefix) {
            if options.shuffle && !layouts.is_empty() {
                shuffle_counter += 1;
                Source::Spec(Rc::clone(&layouts[(shuffle_counter - 1) % layouts.len()]))
            } else {
                Source::Spec(Rc::clone(&session_spec))
            }
        } else {
            continue;
        };
        let shared = match source {
            Source::Existing(plan) => {
                let failure = |message: String| MaterializeError::Plan {
                    function: function.name.clone(),
                    line: function.line,
                    message,
                };
                let parsed =
                    Plan::parse(&plan).map_err(|_| failure("malformed NeverC calling convention plan".into()))?;
                check_plan_identity(&parsed, target).map_err(|rejection| failure(rejection.to_string()))?;
                validated.push(function.name.clone());
                distinct_plans += 1;
                SharedPlan::new(distinct_plans - 1, plan)
            }
            Source::Spec(spec) => {
                let key = (Rc::as_ptr(&spec).cast::<u8>() as usize, function.signature);
                let shared = match memo.get(&key) {
                    Some((_, shared)) => shared.clone(),
                    None => {
                        let signature = &module.signatures[function.signature];
                        let planned =
                            plan_from_spec(target, &spec, signature, &module.types, bare_name).map_err(|error| {
                                MaterializeError::Planning {
                                    function: function.name.clone(),
                                    line: function.line,
                                    error,
                                }
                            })?;
                        notes.extend(planned.notes.into_iter().map(|note| (function.name.clone(), note)));
                        distinct_plans += 1;
                        let shared = SharedPlan::new(distinct_plans - 1, planned.plan.serialize());
                        memo.insert(key, (Rc::clone(&spec), shared.clone()));
                        shared
                    }
                };
                edit_function(function, group, &shared, &mut edits, &mut plan_groups);
                plans.push((function_index, Rc::clone(&shared.plan)));
                shared
            }
        };
        materialized.insert(function.name.as_str(), shared);
    }

    // Second pass over the bodies, in text order: call sites of materialized functions, and any other
    // reference to one of them (its address escapes).
    let mut call_edits: Vec<Edit> = Vec::new();
    let mut warnings = Vec::new();
    let mut warned = HashSet::new();
    let mut calls = Vec::with_capacity(1);
    let mut references = Vec::new();
    let mut in_function = false;
    let mut offset = 0;
    for (index, raw_line) in text.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += raw_line.len();
        let line = raw_line.trim_end_matches(['\n', '\r']);
        let span = start..start + line.len();
        if line.starts_with("define ") {
            in_function = line.ends_with('{');
            continue;
        }
        if line == "}" {
            in_function = false;
            continue;
        }
        let global_line = line.starts_with('@') && !line.starts_with("@llvm.global.annotations ");
        if !(in_function || global_line) || memchr::memchr(b'@', line.as_bytes()).is_none() {
            continue;
        }
        calls.clear();
        references.clear();
        let skip = if in_function {
            read_call(text, span.clone(), index + 1, &mut calls)
        } else {
            None
        };
        if let Some(call) = calls.first()
            && let Some(shared) = materialized.get(call.callee.as_str())
        {
            let base = call
                .attribute_group
                .as_ref()
                .and_then(|(id, _)| groups.get(id))
                .copied();
            edit_call(call, base, shared, &mut call_edits, &mut plan_groups);
        }
        collect_references(text, span, index + 1, &mut references, skip);
        for reference in references.drain(..) {
            if let Some((name, _)) = materialized.get_key_value(reference.name.as_str())
                && warned.insert(*name)
            {
                warnings.push(Warning {
                    function: reference.name,
                    line: reference.line,
                    message: ADDRESS_TAKEN_WARNING.to_string(),
                });
            }
        }
    }
    if !plan_groups.appended.is_empty() {
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
        edits.push((
            at,
            at,
            Replacement::Shared(Rc::from(format!("{prefix}{}", plan_groups.appended))),
        ));
    }
    edits.sort_by_key(|(start, end, _)| (*start, *end));
    let text = apply(text, merge(edits, call_edits));
    let mut names: Vec<String> = module.functions.into_iter().map(|function| function.name).collect();
    let plans = plans
        .into_iter()
        .map(|(index, plan)| (std::mem::take(&mut names[index]), plan))
        .collect();
    Ok(Materialized {
        text,
        plans,
        validated,
        warnings,
        notes,
    })
}

/// Replaces an explicit calling convention with `cc 1000`, or inserts it where one would go.
fn edit_convention(convention: &Option<Range<usize>>, at: usize, edits: &mut Vec<Edit>) {
    match convention {
        Some(range) => edits.push((range.start, range.end, Replacement::Static(CONVENTION))),
        None => edits.push((at, at, Replacement::Static(CONVENTION_AND_SPACE))),
    }
}

fn edit_function(
    function: &FunctionHeader,
    group: Option<&AttributeGroup>,
    shared: &SharedPlan,
    edits: &mut Vec<Edit>,
    plan_groups: &mut PlanGroups<'_>,
) {
    edit_convention(&function.convention, function.convention_at, edits);
    if let Some((range, _)) = &function.inline_spec {
        edits.push((range.start.saturating_sub(1), range.end, Replacement::Static("")));
    }
    match (group, &function.attribute_group) {
        (Some(group), Some((_, range))) => {
            plan_groups.clean(group, edits);
            let id = plan_groups.group_for(Some(group), shared);
            edits.push((range.start, range.end, Replacement::Shared(id.0)));
        }
        _ => edits.push((
            function.attributes_at,
            function.attributes_at,
            Replacement::Shared(Rc::clone(&shared.attribute)),
        )),
    }
}

fn edit_call(
    call: &CallSite,
    base: Option<&AttributeGroup>,
    shared: &SharedPlan,
    edits: &mut Vec<Edit>,
    plan_groups: &mut PlanGroups<'_>,
) {
    edit_convention(&call.convention, call.convention_at, edits);
    if call.plan.is_some() {
        return;
    }
    match (&call.attribute_group, base) {
        (Some((_, range)), Some(base)) => {
            let id = plan_groups.group_for(Some(base), shared);
            edits.push((range.start, range.end, Replacement::Shared(id.0)));
        }
        _ => {
            let id = plan_groups.group_for(None, shared);
            edits.push((call.after_arguments, call.after_arguments, Replacement::Shared(id.1)));
        }
    }
}

/// Attribute groups holding a spec whose every reference is a function header (those functions all take
/// the group's spec, so the spec can be removed from the group itself).
fn exclusive_spec_groups(text: &str, module: &Module) -> HashSet<u32> {
    let mut result = HashSet::new();
    for group in module.attribute_groups.iter().filter(|group| group.spec.is_some()) {
        let token = format!("#{}", group.id);
        let occurrences = text
            .match_indices(&token)
            .filter(|(at, _)| {
                let next = text.as_bytes().get(at + token.len());
                !next.is_some_and(u8::is_ascii_digit) && !text[..*at].ends_with("attributes ")
            })
            .count();
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

/// The attributes of a group without its spec, as one line.
fn group_body_without_spec(text: &str, group: &AttributeGroup) -> String {
    let mut body = text[group.body.clone()].to_string();
    if let Some((range, _)) = &group.spec {
        body.replace_range(range.start - group.body.start..range.end - group.body.start, "");
    }
    body.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Merges two lists of edits that are each in text order.
fn merge(first: Vec<Edit>, second: Vec<Edit>) -> Vec<Edit> {
    let mut merged = Vec::with_capacity(first.len() + second.len());
    let mut second = second.into_iter().peekable();
    for edit in first {
        while let Some(next) = second.next_if(|next| (next.0, next.1) < (edit.0, edit.1)) {
            merged.push(next);
        }
        merged.push(edit);
    }
    merged.extend(second);
    merged
}

/// Applies non-overlapping edits, sorted by position, in one pass.
fn apply(text: &str, edits: Vec<Edit>) -> String {
    let mut out = String::with_capacity(
        text.len()
            + edits
                .iter()
                .map(|(_, _, replacement)| replacement.as_str().len())
                .sum::<usize>(),
    );
    let mut cursor = 0;
    for (start, end, replacement) in edits {
        if start < cursor {
            continue;
        }
        out.push_str(&text[cursor..start]);
        out.push_str(replacement.as_str());
        cursor = end;
    }
    out.push_str(&text[cursor..]);
    out
}
