//! Materialization over a module: NeverC's `neverc.ir.pass.post_opt` pipeline over LLVM IR text.
//!
//! Functions are selected as NeverC's reference plugin selects them (source specs win; then `cc-all` with
//! a name prefix, the session spec or the shuffled layouts), existing plans are only validated, specs
//! become `"neverc-cc-plan-v1"` attributes (the spec attribute is removed), the function and its direct
//! call sites get `cc 1000`, call sites inherit the callee's plan, and functions whose address escapes are
//! reported. The output differs from the input only by these edits.

use std::collections::{HashMap, HashSet};

use rustc_hash::FxHashMap;
use std::rc::Rc;

use crate::cc::ll_reader::{
    AttributeGroup, CallSite, FunctionHeader, Module, ReadError, encode_ir_string, read_module,
};
use crate::cc::plan::{PLAN_TAG, Plan};
use crate::cc::plan_validation::check_plan_identity;
use crate::cc::planner::{PlanNote, PlanningError, plan_from_spec};
use crate::tables::TargetRecord;

/// LLVM's number for NeverC's custom calling convention.
pub const NEVER_C_CUSTOM_CONVENTION: u32 = 1000;
/// NeverC's warning for a function whose address escapes.
pub const ADDRESS_TAKEN_WARNING: &str = "custom calling convention applied to a function whose address is taken; indirect calls will not use it and may violate the ABI";
const CONVENTION: &str = "cc 1000";
const CONVENTION_AND_SPACE: &str = "cc 1000 ";

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
    plan: Rc<str>,
    attribute: Rc<str>,
}

impl SharedPlan {
    fn new(plan: String) -> SharedPlan {
        let attribute = format!(" \"{PLAN_TAG}\"=\"{}\"", encode_ir_string(&plan));
        SharedPlan {
            plan: plan.into(),
            attribute: attribute.into(),
        }
    }
}

/// Moving spec-carrying functions off their attribute groups.
struct GroupRewriter<'a> {
    text: &'a str,
    module: &'a Module,
    exclusive: HashSet<u32>,
    replaced: HashMap<u32, u32>,
    next_id: u32,
    appended: String,
}

impl GroupRewriter<'_> {
    /// The group a function moves to once its spec is gone; edits or copies the group on first use.
    fn replacement(&mut self, id: u32, edits: &mut Vec<Edit>) -> u32 {
        if let Some(replaced) = self.replaced.get(&id) {
            return *replaced;
        }
        let Some(group) = self.module.attribute_groups.iter().find(|group| group.id == id) else {
            return id;
        };
        // A group used only by functions that all carry its spec is edited in place; a group shared with
        // anything else is copied without the spec under a new number.
        let assigned = if self.exclusive.contains(&id) {
            if let Some((range, _)) = &group.spec {
                edits.push((range.start.saturating_sub(1), range.end, Replacement::Static("")));
            }
            id
        } else {
            let assigned = self.next_id;
            self.next_id += 1;
            self.appended.push_str(&group_without_spec(self.text, group, assigned));
            assigned
        };
        self.replaced.insert(id, assigned);
        assigned
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
    let module = read_module(text)?;
    let groups: HashMap<u32, &AttributeGroup> = module.attribute_groups.iter().map(|group| (group.id, group)).collect();
    let mut rewriter = GroupRewriter {
        text,
        module: &module,
        exclusive: exclusive_spec_groups(text, &module),
        replaced: HashMap::new(),
        next_id: module
            .attribute_groups
            .iter()
            .map(|group| group.id + 1)
            .max()
            .unwrap_or(0),
        appended: String::new(),
    };
    let session_spec: Rc<str> = Rc::from(options.spec.clone().unwrap_or_else(|| target.default_spec.to_string()));
    let layouts: Vec<Rc<str>> = target.shuffle_layouts.iter().map(|layout| Rc::from(*layout)).collect();
    let mut memo: FxHashMap<(Rc<str>, usize), SharedPlan> = FxHashMap::default();
    let mut edits: Vec<Edit> = Vec::with_capacity(module.functions.len() * 2 + module.calls.len() * 2);
    let mut plans = Vec::new();
    let mut validated = Vec::new();
    let mut notes = Vec::new();
    let mut shuffle_counter = 0usize;
    let mut materialized: FxHashMap<&str, SharedPlan> =
        FxHashMap::with_capacity_and_hasher(module.functions.len(), Default::default());

    for function in &module.functions {
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
                SharedPlan::new(plan)
            }
            Source::Spec(spec) => {
                let key = (spec, function.signature);
                let shared = match memo.get(&key) {
                    Some(shared) => shared.clone(),
                    None => {
                        let signature = &module.signatures[function.signature];
                        let planned =
                            plan_from_spec(target, &key.0, signature, &module.types, bare_name).map_err(|error| {
                                MaterializeError::Planning {
                                    function: function.name.clone(),
                                    line: function.line,
                                    error,
                                }
                            })?;
                        notes.extend(planned.notes.into_iter().map(|note| (function.name.clone(), note)));
                        let shared = SharedPlan::new(planned.plan.serialize());
                        memo.insert(key, shared.clone());
                        shared
                    }
                };
                edit_function(function, group, &shared, &mut edits, &mut rewriter);
                plans.push((function.name.clone(), Rc::clone(&shared.plan)));
                shared
            }
        };
        materialized.insert(function.name.as_str(), shared);
    }

    for call in &module.calls {
        if let Some(shared) = materialized.get(call.callee.as_str()) {
            edit_call(call, shared, &mut edits);
        }
    }
    let mut warnings = Vec::new();
    let mut warned = HashSet::new();
    for reference in &module.references {
        if materialized.contains_key(reference.name.as_str()) && warned.insert(reference.name.as_str()) {
            warnings.push(Warning {
                function: reference.name.clone(),
                line: reference.line,
                message: ADDRESS_TAKEN_WARNING.to_string(),
            });
        }
    }
    if !rewriter.appended.is_empty() {
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
            Replacement::Shared(Rc::from(format!("{prefix}{}", rewriter.appended))),
        ));
    }
    Ok(Materialized {
        text: apply(text, edits),
        plans,
        validated,
        warnings,
        notes,
    })
}

fn edit_function(
    function: &FunctionHeader,
    group: Option<&AttributeGroup>,
    shared: &SharedPlan,
    edits: &mut Vec<Edit>,
    rewriter: &mut GroupRewriter<'_>,
) {
    match &function.convention {
        Some((range, _)) => edits.push((range.start, range.end, Replacement::Static(CONVENTION))),
        None => edits.push((
            function.convention_at,
            function.convention_at,
            Replacement::Static(CONVENTION_AND_SPACE),
        )),
    }
    if let Some((range, _)) = &function.inline_spec {
        edits.push((range.start.saturating_sub(1), range.end, Replacement::Static("")));
    }
    if let (Some(group), Some((_, range))) = (group, &function.attribute_group)
        && group.spec.is_some()
    {
        let replacement = rewriter.replacement(group.id, edits);
        if replacement != group.id {
            edits.push((
                range.start,
                range.end,
                Replacement::Shared(Rc::from(format!("#{replacement}"))),
            ));
        }
    }
    edits.push((
        function.attributes_at,
        function.attributes_at,
        Replacement::Shared(Rc::clone(&shared.attribute)),
    ));
}

fn edit_call(call: &CallSite, shared: &SharedPlan, edits: &mut Vec<Edit>) {
    match &call.convention {
        Some((range, _)) => edits.push((range.start, range.end, Replacement::Static(CONVENTION))),
        None => edits.push((
            call.convention_at,
            call.convention_at,
            Replacement::Static(CONVENTION_AND_SPACE),
        )),
    }
    if call.plan.is_none() {
        edits.push((
            call.after_arguments,
            call.after_arguments,
            Replacement::Shared(Rc::clone(&shared.attribute)),
        ));
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

/// A copy of an attribute group under a new number, without its spec attribute.
fn group_without_spec(text: &str, group: &AttributeGroup, id: u32) -> String {
    let mut body = text[group.body.clone()].to_string();
    if let Some((range, _)) = &group.spec {
        body.replace_range(range.start - group.body.start..range.end - group.body.start, "");
        body = format!(" {} ", body.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    format!("attributes #{id} = {{{body}}}\n")
}

/// Applies non-overlapping edits in one pass.
fn apply(text: &str, mut edits: Vec<Edit>) -> String {
    // Function edits and call-site edits are each in text order: a stable merge sort sees two runs.
    edits.sort_by_key(|(start, end, _)| (*start, *end));
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
