//! Materialization over a module: NeverC's `neverc.ir.pass.post_opt` pipeline over LLVM IR text.
//!
//! Functions are selected as NeverC's reference plugin selects them (source specs win; then `cc-all` with
//! a name prefix, the session spec or the shuffled layouts), existing plans are only validated, specs
//! become `"neverc-cc-plan-v1"` attributes (the spec attribute is removed), the function and its direct
//! call sites get `cc 1000`, call sites inherit the callee's plan, and functions whose address escapes are
//! reported. The output differs from the input only by these edits.

use std::ops::Range;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::ll_reader::{
    AttributeGroup, CallSite, Module, NONE, ReadError, attribute_removal, encode_ir_string, for_each_reference,
    read_call, read_module,
};
use crate::name_table::NameTable;
use crate::plan::{PLAN_TAG, Plan};
use crate::plan_validation::check_plan_identity;
use crate::planner::{NoteSeverity, PlanNote, PlanningError, plan_from_spec};
use crate::plugin::{ConventionQuery, PlanCallingConvention, PluginPlanError, plan_query};
use neverc_tables::TargetRecord;

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
pub(crate) const CONVENTION: &str = concat!("cc ", never_c_custom_convention!());
/// The convention between blanks, as it stands in a header or a call.
pub(crate) const SPACED_CONVENTION: &str = concat!(" cc ", never_c_custom_convention!(), " ");
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

/// What materialization did. Names borrow from the module text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaterializeReport<'t> {
    /// Every materialized function (given a plan, or whose plan was validated), in module order.
    functions: Vec<&'t str>,
    /// The plan of each of `functions`, by id.
    function_plans: Vec<u32>,
    /// Distinct plans by id, and whether the plan was already in the module.
    plan_texts: Vec<(Box<str>, bool)>,
    planned: usize,
    /// Functions whose existing plan was validated.
    pub validated: Vec<&'t str>,
    pub warnings: Vec<Warning>,
    /// Planner notes, once per planned (spec, signature), with the first function that had them.
    pub notes: Vec<FunctionNote>,
}

/// A planner note about a function: the same note `cc plan` gives, with the spec its span points into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionNote {
    pub function: String,
    pub line: usize,
    pub spec: String,
    pub note: PlanNote,
}

impl<'t> MaterializeReport<'t> {
    /// Functions given a plan, in module order, with the plan.
    pub fn plans(&self) -> impl Iterator<Item = (&'t str, &str)> + '_ {
        self.functions
            .iter()
            .zip(&self.function_plans)
            .filter_map(|(function, plan)| {
                let (text, existing) = &self.plan_texts[*plan as usize];
                (!existing).then_some((*function, &**text))
            })
    }

    /// Address-taken warnings and planner warnings together.
    pub fn warning_count(&self) -> usize {
        self.warnings.len()
            + self
                .notes
                .iter()
                .filter(|noted| noted.note.severity == NoteSeverity::Warning)
                .count()
    }

    /// How many functions were given a plan.
    pub fn plan_count(&self) -> usize {
        self.planned
    }

    /// The plan given to function `name` (`@name`), if any.
    pub fn plan_of(&self, name: &str) -> Option<&str> {
        self.plans()
            .find(|(function, _)| *function == name)
            .map(|(_, plan)| plan)
    }
}

/// The materialized module text and the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Materialized<'t> {
    pub text: String,
    pub report: MaterializeReport<'t>,
}

#[derive(Debug, thiserror::Error)]
pub enum MaterializeError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("cannot write the materialized module: {0}")]
    Write(#[from] std::io::Error),
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
    #[error("line {line}: {function}: {error}")]
    Convention {
        function: String,
        line: usize,
        error: PluginPlanError,
    },
    /// Lowering the materialized module failed (`cc materialize --lower`); its lines are the materialized
    /// module's.
    #[error("lowering the materialized module: {0}")]
    Lower(Box<crate::lower::LowerError>),
}

impl MaterializeError {
    /// The module line the error is about (0 for a failed write).
    pub fn line(&self) -> usize {
        match self {
            MaterializeError::Read(read) => read.line,
            MaterializeError::Planning { line, .. }
            | MaterializeError::Plan { line, .. }
            | MaterializeError::Convention { line, .. } => *line,
            MaterializeError::Write(_) | MaterializeError::Lower(_) => 0,
        }
    }
}

/// Who plans the functions of a module that have no plan yet.
#[derive(Clone, Copy)]
pub enum Planner<'p> {
    /// NeverC's reference plugin's selection with these options, planned from specs by the built-in planner.
    Specs(&'p MaterializeOptions),
    /// A plugin convention (`PlanCallingConvention`): asked about every function without a plan, in module
    /// order; it selects the functions it plans and declines the others. Its plans are checked with NeverC's
    /// texts before they are used.
    Convention(&'p dyn PlanCallingConvention),
}

/// Where the materialized module text goes, piece by piece.
pub trait TextOutput {
    fn put(&mut self, text: &str) -> std::io::Result<()>;
}

impl TextOutput for String {
    fn put(&mut self, text: &str) -> std::io::Result<()> {
        self.push_str(text);
        Ok(())
    }
}

/// Any byte sink (a buffered file, a reused buffer) as a [`TextOutput`].
pub struct WriteOutput<W>(pub W);

impl<W: std::io::Write> TextOutput for WriteOutput<W> {
    fn put(&mut self, text: &str) -> std::io::Result<()> {
        self.0.write_all(text.as_bytes())
    }
}

/// An edit of the original text: replace `start..end` with entry `text` of a replacement pool (materialization's
/// [`Replacements`], lowering's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Edit {
    pub(crate) start: u32,
    pub(crate) end: u32,
    pub(crate) text: u32,
}

impl Edit {
    pub(crate) fn new(start: usize, end: usize, text: u32) -> Edit {
        // `read_module` refuses texts whose offsets do not fit in `u32`.
        Edit {
            start: start as u32,
            end: end as u32,
            text,
        }
    }

    pub(crate) fn key(&self) -> (u32, u32) {
        (self.start, self.end)
    }
}

/// Every replacement text, stored once: the convention, nothing, group references and plan attributes.
struct Replacements {
    texts: Vec<Box<str>>,
}

const REPLACE_CONVENTION: u32 = 0;
const INSERT_CONVENTION: u32 = 1;
const REMOVE: u32 = 2;
/// Reference lines handled together in the second pass.
const REFERENCE_CHUNK: usize = 256;

impl Replacements {
    fn new() -> Replacements {
        Replacements {
            texts: vec![CONVENTION.into(), CONVENTION_AND_SPACE.into(), "".into()],
        }
    }

    fn add(&mut self, text: String) -> u32 {
        self.texts.push(text.into_boxed_str());
        self.texts.len() as u32 - 1
    }

    fn get(&self, index: u32) -> &str {
        &self.texts[index as usize]
    }
}

/// A plan, shared by every function and call site that uses it.
struct SharedPlan {
    plan: Box<str>,
    /// ` "neverc-cc-plan-v1"="…"`, for inline use, in the replacement pool.
    attribute: u32,
    /// The plan was already in the module (it is validated, not made).
    existing: bool,
}

/// A function header to rewrite: its index in the module, and the replacement for its `#N` reference (or
/// the inline plan attribute to add, when it has none).
struct HeaderEdit {
    function: u32,
    group_reference: Option<u32>,
    plan: u32,
}

/// Attribute groups that carry plans: for every (original group, plan) pair one new group, holding the
/// original attributes (without a spec) and the plan, so that each function or call site only changes its
/// `#N` reference and the plan text is written once per group rather than once per use.
struct PlanGroups<'a> {
    text: &'a str,
    /// Groups with a spec referenced by function headers only, with the number of those headers.
    exclusive: FxHashMap<u32, usize>,
    /// How many headers of each exclusive group moved to a new group.
    moved: FxHashMap<u32, usize>,
    /// (original group or [`NONE`], plan) → the new group's `#N` and ` #N` replacements.
    assigned: FxHashMap<(u32, u32), (u32, u32)>,
    /// The last lookup, which neighbouring functions usually repeat.
    last: Option<((u32, u32), (u32, u32))>,
    next_id: u32,
    appended: String,
    /// Spec removals inside the original groups.
    edits: Vec<Edit>,
}

impl PlanGroups<'_> {
    /// The group holding `base`'s attributes and `plan`, as the replacements `#N` and ` #N`.
    fn group_for(
        &mut self,
        base: Option<&AttributeGroup>,
        plan_id: u32,
        plans: &[SharedPlan],
        replacements: &mut Replacements,
    ) -> (u32, u32) {
        let key = (base.map_or(NONE, |group| group.id), plan_id);
        if let Some((last_key, references)) = self.last
            && last_key == key
        {
            return references;
        }
        let references = match self.assigned.get(&key) {
            Some(references) => *references,
            None => {
                let id = self.next_id;
                self.next_id += 1;
                let body = base
                    .map(|group| group_body_without_spec(self.text, group))
                    .unwrap_or_default();
                let separator = if body.is_empty() { "" } else { " " };
                let attribute = replacements.get(plans[plan_id as usize].attribute).trim_start();
                self.appended
                    .push_str(&format!("attributes #{id} = {{ {body}{separator}{attribute} }}\n"));
                let references = (replacements.add(format!("#{id}")), replacements.add(format!(" #{id}")));
                self.assigned.insert(key, references);
                references
            }
        };
        self.last = Some((key, references));
        references
    }

    /// Notes that a header referencing `group` moved to a new group.
    fn clean(&mut self, group: &AttributeGroup) {
        if self.exclusive.contains_key(&group.id) {
            *self.moved.entry(group.id).or_default() += 1;
        }
    }

    /// Removes the spec from every exclusive group a header moved away from. A group left without attributes
    /// is removed whole when no reference to it remains (LLVM refuses `attributes #N = { }`), and keeps its
    /// spec when one does (a header whose existing plan wins over the spec).
    fn finish_cleaning(&mut self, groups: &[AttributeGroup]) {
        for group in groups {
            let (Some(moved), Some((range, _))) = (self.moved.get(&group.id), &group.spec) else {
                continue;
            };
            if !group_body_without_spec(self.text, group).is_empty() {
                let removal = attribute_removal(self.text, range);
                self.edits.push(Edit::new(removal.start, removal.end, REMOVE));
            } else if self.exclusive.get(&group.id) == Some(moved) {
                let end = group.span.end + usize::from(self.text.as_bytes().get(group.span.end) == Some(&b'\n'));
                self.edits.push(Edit::new(group.span.start, end, REMOVE));
            }
        }
    }
}

/// Where a selected function's convention comes from.
enum Source<'m> {
    Existing(&'m str),
    /// A spec written in the source (planned for this function alone).
    Written(&'m str),
    /// The session spec or shuffle layout `index`, memoized per signature.
    Session(usize),
    /// Whatever the plugin convention says (it may decline).
    Convention(&'m dyn PlanCallingConvention),
}

/// Materializes every selected function of `text` for `target`, into a new string.
pub fn materialize<'t>(
    text: &'t str,
    target: &TargetRecord,
    options: &MaterializeOptions,
) -> Result<Materialized<'t>, MaterializeError> {
    let mut out = String::new();
    let report = materialize_to(text, target, options, &mut out)?;
    Ok(Materialized { text: out, report })
}

/// Materializes every selected function of `text` for `target`, writing the module to `out`. Nothing is
/// written when materialization fails; a failing `out` stops the writing with [`MaterializeError::Write`].
pub fn materialize_to<'t>(
    text: &'t str,
    target: &TargetRecord,
    options: &MaterializeOptions,
    out: &mut impl TextOutput,
) -> Result<MaterializeReport<'t>, MaterializeError> {
    materialize_with(text, target, Planner::Specs(options), out)
}

/// Materializes every function `planner` plans in `text` for `target`, writing the module to `out`. Nothing
/// is written when materialization fails; a failing `out` stops the writing with [`MaterializeError::Write`].
/// The module written depends only on the plans: the same plans from either planner give the same bytes.
pub fn materialize_with<'t>(
    text: &'t str,
    target: &TargetRecord,
    planner: Planner<'_>,
    out: &mut impl TextOutput,
) -> Result<MaterializeReport<'t>, MaterializeError> {
    let default_options = MaterializeOptions::default();
    let options = match planner {
        Planner::Specs(options) => options,
        Planner::Convention(_) => &default_options,
    };
    let module = read_module(text)?;
    let groups: FxHashMap<u32, &AttributeGroup> =
        module.attribute_groups.iter().map(|group| (group.id, group)).collect();
    let mut replacements = Replacements::new();
    let mut plan_groups = PlanGroups {
        text,
        exclusive: exclusive_spec_groups(text, &module),
        moved: FxHashMap::default(),
        assigned: FxHashMap::default(),
        last: None,
        next_id: module
            .attribute_groups
            .iter()
            .map(|group| group.id + 1)
            .max()
            .unwrap_or(0),
        appended: String::new(),
        edits: Vec::new(),
    };
    let session_specs: Vec<&str> = if options.shuffle && !target.shuffle_layouts.is_empty() {
        target.shuffle_layouts.to_vec()
    } else {
        vec![options.spec.as_deref().unwrap_or(target.default_spec)]
    };
    // Session plans by (session spec, signature).
    let signature_count = module.signatures.len();
    let mut memo: Vec<u32> = vec![NONE; session_specs.len() * signature_count];
    let mut shared_plans = SharedPlans::default();
    let mut header_edits: Vec<HeaderEdit> = Vec::new();
    let mut functions: Vec<&'t str> = Vec::new();
    let mut function_plans: Vec<u32> = Vec::new();
    let mut function_hashes: Vec<u64> = Vec::new();
    let mut validated = Vec::new();
    let mut notes = Vec::new();
    let mut shuffle_counter = 0usize;

    for (function_index, function) in module.functions.iter().enumerate() {
        let group = (function.group != NONE)
            .then(|| groups.get(&function.group).copied())
            .flatten();
        let inline = module.inline_attributes.get(function.inline_attributes as usize);
        let existing = inline
            .and_then(|inline| inline.plan.as_ref())
            .or_else(|| group.and_then(|group| group.plan.as_ref()))
            .map(|(_, plan)| plan.as_str());
        let source_spec = inline
            .and_then(|inline| inline.spec.as_ref())
            .or_else(|| group.and_then(|group| group.spec.as_ref()))
            .map(|(_, spec)| spec.as_str())
            .or_else(|| {
                if module.annotations.is_empty() {
                    None
                } else {
                    module.annotations.get(function.name).map(String::as_str)
                }
            });
        // The prefix test reads the name, which is no longer in the cache; an empty prefix needs no test.
        let selected_by_prefix =
            || options.prefix.is_empty() || bare_function_name(function.name).starts_with(&options.prefix);
        let source = if let Some(plan) = existing {
            Source::Existing(plan)
        } else if let Planner::Convention(convention) = planner {
            Source::Convention(convention)
        } else if let Some(spec) = source_spec {
            Source::Written(spec)
        } else if options.cc_all && function.is_definition && selected_by_prefix() {
            shuffle_counter += 1;
            Source::Session((shuffle_counter - 1) % session_specs.len())
        } else {
            continue;
        };
        let mut plan_for = |spec: &str| -> Result<u32, MaterializeError> {
            let signature = &module.signatures[function.signature as usize];
            let bare_name = bare_function_name(function.name);
            let planned = plan_from_spec(target, spec, signature, &module.types, bare_name).map_err(|error| {
                MaterializeError::Planning {
                    function: function.name.to_string(),
                    line: function.line as usize,
                    error,
                }
            })?;
            notes.extend(planned.notes.into_iter().map(|note| FunctionNote {
                function: function.name.to_string(),
                line: function.line as usize,
                spec: spec.to_string(),
                note,
            }));
            Ok(shared_plans.share(planned.plan.serialize(), false, &mut replacements))
        };
        let plan_id = match source {
            Source::Existing(plan) => {
                let failure = |message: String| MaterializeError::Plan {
                    function: function.name.to_string(),
                    line: function.line as usize,
                    message,
                };
                let parsed =
                    Plan::parse(plan).map_err(|_| failure("malformed NeverC calling convention plan".into()))?;
                check_plan_identity(&parsed, target).map_err(|rejection| failure(rejection.to_string()))?;
                validated.push(function.name);
                functions.push(function.name);
                function_hashes.push(function.name_hash);
                function_plans.push(shared_plans.share(plan.to_string(), true, &mut replacements));
                continue;
            }
            Source::Convention(convention) => {
                let query = ConventionQuery {
                    target,
                    function: bare_function_name(function.name),
                    signature: &module.signatures[function.signature as usize],
                    required_arguments: module.signatures[function.signature as usize].parameters.len(),
                    source_spec,
                    definition: function.is_definition,
                    types: &module.types,
                };
                let planned =
                    plan_query(convention, &query, &module.types).map_err(|error| MaterializeError::Convention {
                        function: function.name.to_string(),
                        line: function.line as usize,
                        error,
                    })?;
                let Some(planned) = planned else { continue };
                shared_plans.share(planned.plan.serialize(), false, &mut replacements)
            }
            Source::Written(spec) => plan_for(spec)?,
            Source::Session(index) => {
                let slot = index * signature_count + function.signature as usize;
                if memo[slot] == NONE {
                    memo[slot] = plan_for(session_specs[index])?;
                }
                memo[slot]
            }
        };
        // The new group is made now, so that groups are numbered in the order functions and then call
        // sites first need them; the header itself is rewritten while the module is written.
        let group_reference = match (group, function.attribute_group()) {
            (Some(group), Some(_)) => {
                plan_groups.clean(group);
                Some(
                    plan_groups
                        .group_for(Some(group), plan_id, &shared_plans.plans, &mut replacements)
                        .0,
                )
            }
            _ => None,
        };
        header_edits.push(HeaderEdit {
            function: function_index as u32,
            group_reference,
            plan: plan_id,
        });
        functions.push(function.name);
        function_hashes.push(function.name_hash);
        function_plans.push(plan_id);
    }

    // Materialized functions by name (see `name_table` for why not a hash map).
    let materialized = NameTable::new(&functions, &function_hashes);

    // Second pass over the lines that name globals, in text order and in chunks (whose callees are looked
    // up together): call sites of materialized functions, and any other reference to one of them (its
    // address escapes).
    let mut call_edits: Vec<Edit> = Vec::new();
    let mut warnings = Vec::new();
    if !functions.is_empty() {
        call_edits.reserve(module.reference_lines.len() * 2);
        let mut warned: FxHashSet<&str> = FxHashSet::default();
        let mut calls: Vec<(usize, CallSite<'t>)> = Vec::new();
        let mut callees: Vec<&str> = Vec::new();
        let mut found: Vec<u32> = Vec::new();
        for chunk in module.reference_lines.chunks(REFERENCE_CHUNK) {
            calls.clear();
            callees.clear();
            for (index, line) in chunk.iter().enumerate() {
                if line.in_function
                    && let Some(call) = read_call(text, line.start as usize..line.end as usize, line.first_at as usize)
                {
                    callees.push(call.callee);
                    calls.push((index, call));
                }
            }
            materialized.find_all(&callees, &mut found);
            let mut next_call = calls.iter().zip(&found).peekable();
            for (index, line) in chunk.iter().enumerate() {
                let mut skip = None;
                if let Some(((_, call), found)) = next_call.next_if(|((call_line, _), _)| *call_line == index) {
                    skip = Some(call.callee_at as usize..call.callee_at as usize + call.callee.len());
                    if let Some(plan_id) = function_plans.get(*found as usize) {
                        let base = (call.group != NONE).then(|| groups.get(&call.group).copied()).flatten();
                        let mut shared = SharedText {
                            plans: &shared_plans.plans,
                            replacements: &mut replacements,
                        };
                        call_edits.extend(
                            edit_call(call, base, *plan_id, &mut shared, &mut plan_groups)
                                .into_iter()
                                .flatten(),
                        );
                    }
                }
                // A call whose callee is the line's only name refers to nothing else.
                if skip.is_some() && line.at_count == 1 {
                    continue;
                }
                for_each_reference(text, line.start as usize..line.end as usize, skip, |reference| {
                    if let Some(found) = materialized.get(reference.name)
                        && warned.insert(functions[found])
                    {
                        warnings.push(Warning {
                            function: reference.name.to_string(),
                            line: line.line as usize,
                            message: ADDRESS_TAKEN_WARNING.to_string(),
                        });
                    }
                });
            }
        }
    }

    plan_groups.finish_cleaning(&module.attribute_groups);
    let mut group_edits = std::mem::take(&mut plan_groups.edits);
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
        let appended = replacements.add(format!("{prefix}{}", plan_groups.appended));
        group_edits.push(Edit::new(at, at, appended));
    }
    group_edits.sort_by_key(Edit::key);
    let functions_planned = header_edits.len();
    let header_edits = header_edits.iter().flat_map(|edit| {
        let (edits, count) = edits_of_header(text, &module, edit, &shared_plans.plans);
        edits.into_iter().take(count)
    });
    apply(
        text,
        header_edits,
        call_edits.into_iter(),
        group_edits.into_iter(),
        &replacements,
        out,
    )?;
    Ok(MaterializeReport {
        functions,
        function_plans,
        planned: functions_planned,
        plan_texts: shared_plans
            .plans
            .into_iter()
            .map(|shared| (shared.plan, shared.existing))
            .collect(),
        validated,
        warnings,
        notes,
    })
}

/// A function's name without `@` and without the quotes of a quoted name (byte operations: this runs
/// once per function).
fn bare_function_name(name: &str) -> &str {
    let name = name.strip_prefix('@').unwrap_or(name);
    name.strip_prefix('"')
        .and_then(|name| name.strip_suffix('"'))
        .unwrap_or(name)
}

/// Every plan of the module, once per text: functions and call sites with the same plan share its id, and so
/// its attribute groups, whichever planner made it.
#[derive(Default)]
struct SharedPlans {
    plans: Vec<SharedPlan>,
    /// (plan text, already in the module) → id.
    ids: FxHashMap<(Box<str>, bool), u32>,
}

impl SharedPlans {
    /// The id of `plan`, adding it and its attribute text to the pool the first time.
    fn share(&mut self, plan: String, existing: bool, replacements: &mut Replacements) -> u32 {
        let key = (plan.into_boxed_str(), existing);
        if let Some(id) = self.ids.get(&key) {
            return *id;
        }
        let attribute = replacements.add(format!(" \"{PLAN_TAG}\"=\"{}\"", encode_ir_string(&key.0)));
        let id = self.plans.len() as u32;
        self.plans.push(SharedPlan {
            plan: key.0.clone(),
            attribute,
            existing,
        });
        self.ids.insert(key, id);
        id
    }
}

/// Replaces an explicit calling convention with `cc 1000`, or inserts it where one would go.
fn convention_edit(convention: Option<Range<usize>>, at: usize) -> Edit {
    match convention {
        Some(range) => Edit::new(range.start, range.end, REPLACE_CONVENTION),
        None => Edit::new(at, at, INSERT_CONVENTION),
    }
}

/// The (at most three) edits of a function header, in text order.
fn edits_of_header(text: &str, module: &Module<'_>, edit: &HeaderEdit, plans: &[SharedPlan]) -> ([Edit; 3], usize) {
    let function = &module.functions[edit.function as usize];
    let mut edits = [Edit::new(0, 0, REMOVE); 3];
    edits[0] = convention_edit(function.convention(), function.convention_at as usize);
    let mut count = 1;
    if let Some(inline) = module.inline_attributes.get(function.inline_attributes as usize)
        && let Some((range, _)) = &inline.spec
    {
        let removal = attribute_removal(text, range);
        edits[count] = Edit::new(removal.start, removal.end, REMOVE);
        count += 1;
    }
    edits[count] = match (edit.group_reference, function.attribute_group()) {
        (Some(reference), Some((_, range))) => Edit::new(range.start, range.end, reference),
        _ => {
            let at = function.attributes_at as usize;
            Edit::new(at, at, plans[edit.plan as usize].attribute)
        }
    };
    count += 1;
    edits[..count].sort_by_key(Edit::key);
    (edits, count)
}

/// The edits of one call site of a materialized function: its convention and the group of its plan.
fn edit_call(
    call: &CallSite<'_>,
    base: Option<&AttributeGroup>,
    plan_id: u32,
    shared: &mut SharedText<'_>,
    plan_groups: &mut PlanGroups<'_>,
) -> [Option<Edit>; 2] {
    let convention = Some(convention_edit(call.convention(), call.convention_at as usize));
    if call.has_plan {
        return [convention, None];
    }
    let group = match base {
        Some(base) if call.group != NONE => {
            let (reference, _) = plan_groups.group_for(Some(base), plan_id, shared.plans, shared.replacements);
            Edit::new(call.group_start as usize, call.group_end as usize, reference)
        }
        _ => {
            let (_, reference) = plan_groups.group_for(None, plan_id, shared.plans, shared.replacements);
            let at = call.after_arguments as usize;
            Edit::new(at, at, reference)
        }
    };
    [convention, Some(group)]
}

/// The plans shared by the module and the replacement texts edits refer to.
struct SharedText<'a> {
    plans: &'a [SharedPlan],
    replacements: &'a mut Replacements,
}

/// Attribute groups holding a spec whose every reference is a function header (those functions all take
/// the group's spec, so the spec can be removed from the group itself), with the number of those headers.
/// One scan of the text counts the `#N` references of every such group.
fn exclusive_spec_groups(text: &str, module: &Module<'_>) -> FxHashMap<u32, usize> {
    let mut references: FxHashMap<u32, usize> = module
        .attribute_groups
        .iter()
        .filter(|group| group.spec.is_some())
        .map(|group| (group.id, 0))
        .collect();
    if references.is_empty() {
        return references;
    }
    let bytes = text.as_bytes();
    for at in memchr::memchr_iter(b'#', bytes) {
        let digits = bytes[at + 1..].iter().take_while(|byte| byte.is_ascii_digit()).count();
        if digits == 0 || text[..at].ends_with("attributes ") {
            continue;
        }
        if let Ok(id) = text[at + 1..at + 1 + digits].parse::<u32>()
            && let Some(count) = references.get_mut(&id)
        {
            *count += 1;
        }
    }
    let mut headers: FxHashMap<u32, usize> = FxHashMap::default();
    for function in &module.functions {
        if references.contains_key(&function.group) {
            *headers.entry(function.group).or_default() += 1;
        }
    }
    references
        .into_iter()
        .filter_map(|(id, occurrences)| {
            let headers = headers.get(&id).copied().unwrap_or(0);
            (occurrences == headers).then_some((id, headers))
        })
        .collect()
}

/// The attributes of a group without its spec, as one line.
fn group_body_without_spec(text: &str, group: &AttributeGroup) -> String {
    let mut body = text[group.body.clone()].to_string();
    if let Some((range, _)) = &group.spec {
        body.replace_range(range.start - group.body.start..range.end - group.body.start, "");
    }
    body.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Writes `text` with three streams of non-overlapping edits applied, each stream sorted by position, in
/// one pass (an edit that starts inside an earlier one is dropped).
fn apply(
    text: &str,
    first: impl Iterator<Item = Edit>,
    second: impl Iterator<Item = Edit>,
    third: impl Iterator<Item = Edit>,
    replacements: &Replacements,
    out: &mut impl TextOutput,
) -> std::io::Result<()> {
    let mut cursor = 0;
    let (mut first, mut second, mut third) = (first.peekable(), second.peekable(), third.peekable());
    loop {
        // The stream whose next edit comes first (earlier streams win ties, as a stable sort would).
        let keys = [first.peek(), second.peek(), third.peek()].map(|edit| edit.map(Edit::key));
        let next = match keys {
            [Some(a), b, c] if b.is_none_or(|b| a <= b) && c.is_none_or(|c| a <= c) => first.next(),
            [_, Some(b), c] if c.is_none_or(|c| b <= c) => second.next(),
            _ => third.next(),
        };
        let Some(edit) = next else { break };
        let (start, end) = (edit.start as usize, edit.end as usize);
        if start >= cursor {
            out.put(&text[cursor..start])?;
            out.put(replacements.get(edit.text))?;
            cursor = end;
        }
    }
    out.put(&text[cursor..])
}
