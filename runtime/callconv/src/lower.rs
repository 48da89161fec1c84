//! Lowering a materialized module into one stock LLVM compiles: plans stop being attributes only LLVM
//! patched by NeverC honours and become adapter thunks in module-level assembly.
//!
//! For every function defined with a plan (`cc 1000` and `"neverc-cc-plan-v1"`), the body becomes an internal
//! function of the standard convention named `<name>.neverc_body`, and the function's own symbol becomes an
//! *incoming* adapter: it receives the arguments where the plan says, calls the body with the standard
//! convention, and returns the result where the plan says, preserving the registers the plan declares
//! callee-saved that the standard convention does not. A call with a plan to a function declared here calls
//! an *outgoing* adapter, `<name>.neverc_out`, which does the reverse; a call between functions defined here
//! calls the body directly. Every other byte of the module is kept.

use std::fmt::Write as _;

use rustc_hash::FxHashMap;

use crate::adapter::{
    AdapterError, AdapterSpec, Binding, Callee, Extension, Holder, Role, SideKind, SidePiece, Stub, SymbolVisibility,
    ValueMove, entry_register, write_adapter, write_section, write_stub_macro,
};
use crate::assignment::{Decider, Place, ValueAssignment, ValueRef};
use crate::layout::{TypeTable, layout_of};
use crate::ll_reader::{FunctionHeader, Module, ReadError, for_each_reference, matching_paren, read_call, read_module};
use crate::materialize::{CONVENTION, Edit, NEVER_C_CUSTOM_CONVENTION, SPACED_CONVENTION, TextOutput};
use crate::name_table::{NOT_FOUND, NameTable};
use crate::plan::Plan;
use crate::plan_validation::validate_plan;
use crate::planner::{PlanningError, assign};
use crate::signature::{IrType, Parameter, Signature, function_type_spelling};
use crate::standard_abi::standard_assignments;
use neverc_tables::TargetRecord;

/// The suffix of a lowered function's body.
pub const BODY_SUFFIX: &str = ".neverc_body";
/// The suffix of an outgoing adapter.
pub const OUTGOING_SUFFIX: &str = ".neverc_out";

#[derive(Debug, thiserror::Error)]
pub enum LowerError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("cannot write the lowered module: {0}")]
    Write(#[from] std::io::Error),
    #[error(
        "target {target} declares no adapter templates ([lowering] in its target file), so its plans cannot be lowered"
    )]
    NoTemplates { target: &'static str },
    #[error(
        "line {line}: {function} uses the NeverC convention (cc {NEVER_C_CUSTOM_CONVENTION}) but has no plan; materialize the module first"
    )]
    NoPlan { function: String, line: usize },
    #[error("line {line}: {function}: {message}")]
    Plan {
        function: String,
        line: usize,
        message: String,
    },
    #[error("line {line}: {function}: {error}")]
    Planning {
        function: String,
        line: usize,
        error: PlanningError,
    },
    #[error("line {line}: {function}: {error}")]
    Adapter {
        function: String,
        line: usize,
        error: AdapterError,
    },
    #[error("line {line}: {function}: {detail}")]
    Unsupported {
        function: String,
        line: usize,
        detail: String,
    },
    #[error(
        "the module calls through a pointer with the NeverC convention (cc {NEVER_C_CUSTOM_CONVENTION}) {count} time(s); only direct calls can be lowered"
    )]
    IndirectCall { count: usize },
}

impl LowerError {
    /// The module line the error is about (0 when it is about no line).
    pub fn line(&self) -> usize {
        match self {
            LowerError::Read(read) => read.line,
            LowerError::NoPlan { line, .. }
            | LowerError::Plan { line, .. }
            | LowerError::Planning { line, .. }
            | LowerError::Adapter { line, .. }
            | LowerError::Unsupported { line, .. } => *line,
            LowerError::Write(_) | LowerError::NoTemplates { .. } | LowerError::IndirectCall { .. } => 0,
        }
    }
}

/// What lowering did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LowerReport<'t> {
    /// Functions whose symbol became an incoming adapter, in module order (`@name`).
    pub incoming: Vec<&'t str>,
    /// Declared functions called through an outgoing adapter, in order of their first call.
    pub outgoing: Vec<&'t str>,
    /// Calls between planned functions of the module, now calls of the bodies.
    pub direct_calls: usize,
    /// Functions that carry a `neverc-callconv` spec but no plan, in module order: the module was not
    /// materialized (`cc materialize`), so they keep the standard convention and nothing follows their specs.
    pub unmaterialized: Vec<SpecWithoutPlan<'t>>,
}

/// A function with a spec and no plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecWithoutPlan<'t> {
    /// `@name` as written.
    pub function: &'t str,
    /// The line of its header.
    pub line: usize,
}

/// The lowered module text and the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lowered<'t> {
    pub text: String,
    pub report: LowerReport<'t>,
}

/// Lowers every planned function of `text` for `target`, into a new string.
pub fn lower<'t>(text: &'t str, target: &'static TargetRecord) -> Result<Lowered<'t>, LowerError> {
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    let report = lower_to(text, target, &mut out)?;
    Ok(Lowered { text: out, report })
}

/// A function with a plan.
struct Planned {
    function: usize,
    plan: usize,
    /// What a call with the convention is redirected to: the body, or the outgoing adapter (a pool entry).
    call_target: Option<u32>,
    /// Used other than by such calls, so its symbol is declared.
    referenced: bool,
}

/// Whether `function` carries a spec (a `"neverc-callconv"` attribute, inline or in its group, or an
/// `annotate("neverc-callconv=…")`) but no plan.
fn spec_without_plan(module: &Module<'_>, groups: &FxHashMap<u32, usize>, function: &FunctionHeader<'_>) -> bool {
    let inline = module.inline_attributes.get(function.inline_attributes as usize);
    let group = groups
        .get(&function.group)
        .map(|index| &module.attribute_groups[*index]);
    let planned = inline.is_some_and(|inline| inline.plan.is_some()) || group.is_some_and(|group| group.plan.is_some());
    let specified = inline.is_some_and(|inline| inline.spec.is_some())
        || group.is_some_and(|group| group.spec.is_some())
        || module.annotations.contains_key(function.name);
    specified && !planned
}

/// Whether `text[range]` is the convention (`cc 1000`).
fn is_convention(text: &str, range: std::ops::Range<usize>) -> bool {
    text.as_bytes().get(range) == Some(CONVENTION.as_bytes())
}
/// Reference lines read together.
const REFERENCE_CHUNK: usize = 256;

/// The replacement pool: every text that replaces something, stored once, all in one string.
struct Pool {
    text: String,
    ranges: Vec<(u32, u32)>,
}

const REMOVE: u32 = 0;
const INTERNAL: u32 = 1;

impl Pool {
    fn with_capacity(texts: usize) -> Pool {
        let mut pool = Pool {
            text: String::with_capacity(texts * 24),
            ranges: Vec::with_capacity(texts),
        };
        pool.add("");
        pool.add("internal ");
        pool
    }

    /// Adds `text`; offsets fit in `u32` as long as the pool stays below 4 GiB, which a module of at most
    /// 4 GiB keeps it.
    fn add(&mut self, text: &str) -> u32 {
        let start = self.text.len() as u32;
        self.text.push_str(text);
        self.ranges.push((start, self.text.len() as u32));
        self.ranges.len() as u32 - 1
    }

    fn get(&self, id: u32) -> &str {
        let (start, end) = self.ranges[id as usize];
        &self.text[start as usize..end as usize]
    }
}

/// Lowers every planned function of `text` for `target`, writing the module to `out`. Nothing is written
/// when lowering fails.
pub fn lower_to<'t>(
    text: &'t str,
    target: &'static TargetRecord,
    out: &mut impl TextOutput,
) -> Result<LowerReport<'t>, LowerError> {
    if target.lowering.is_none() {
        return Err(LowerError::NoTemplates { target: target.name });
    }
    let module = read_module(text)?;
    let context = Context {
        text,
        target,
        module: &module,
        comdat: memchr::memmem::Finder::new(" comdat"),
    };
    let groups: FxHashMap<u32, usize> = module
        .attribute_groups
        .iter()
        .enumerate()
        .map(|(index, group)| (group.id, index))
        .collect();
    // Plans are read once per attribute group, or per text when written inline.
    let mut plans: Vec<Plan> = Vec::new();
    let mut group_plans: FxHashMap<u32, usize> = FxHashMap::default();
    let mut text_plans: FxHashMap<&str, usize> = FxHashMap::default();
    let mut planned: Vec<Planned> = Vec::new();
    let mut planned_names: Vec<&'t str> = Vec::new();
    let mut planned_hashes: Vec<u64> = Vec::new();
    // Names lowering would make, if the module has them already.
    let mut taken_names: FxHashMap<&'t str, ()> = FxHashMap::default();
    // Specs only materialization turns into plans: a module without any has no function to warn about.
    let has_specs = !module.annotations.is_empty()
        || module.inline_attributes.iter().any(|inline| inline.spec.is_some())
        || module.attribute_groups.iter().any(|group| group.spec.is_some());
    let mut unmaterialized = Vec::new();
    for (index, function) in module.functions.iter().enumerate() {
        // `@f.neverc_body` and `@"f.neverc_body"` name the same symbol: names are compared bare.
        if matches!(function.name.as_bytes().last(), Some(b'y' | b't' | b'"')) {
            let bare = function.name.trim_start_matches('@').trim_matches('"');
            if bare.ends_with(BODY_SUFFIX) || bare.ends_with(OUTGOING_SUFFIX) {
                taken_names.insert(bare, ());
            }
        }
        if !function
            .convention()
            .is_some_and(|convention| is_convention(text, convention))
        {
            if has_specs && spec_without_plan(&module, &groups, function) {
                unmaterialized.push(SpecWithoutPlan {
                    function: function.name,
                    line: function.line as usize,
                });
            }
            continue;
        }
        let line = function.line as usize;
        let inline = module
            .inline_attributes
            .get(function.inline_attributes as usize)
            .and_then(|inline| inline.plan.as_ref());
        let group = groups
            .get(&function.group)
            .map(|index| &module.attribute_groups[*index])
            .filter(|group| group.plan.is_some());
        let plan_error = |message: String| LowerError::Plan {
            function: function.name.to_string(),
            line,
            message,
        };
        let mut read_plan = |plan_text: &str| -> Result<usize, LowerError> {
            let plan = Plan::parse(plan_text).map_err(|error| plan_error(error.to_string()))?;
            validate_plan(&plan, target, None).map_err(|error| plan_error(error.to_string()))?;
            plans.push(plan);
            Ok(plans.len() - 1)
        };
        let plan = match (inline, group) {
            (Some((_, plan_text)), _) => match text_plans.get(plan_text.as_str()) {
                Some(id) => *id,
                None => {
                    let id = read_plan(plan_text)?;
                    text_plans.insert(plan_text.as_str(), id);
                    id
                }
            },
            (None, Some(group)) => match group_plans.get(&group.id) {
                Some(id) => *id,
                None => {
                    let plan_text = group.plan.as_ref().map_or("", |(_, plan)| plan.as_str());
                    let id = read_plan(plan_text)?;
                    group_plans.insert(group.id, id);
                    id
                }
            },
            (None, None) => {
                return Err(LowerError::NoPlan {
                    function: function.name.to_string(),
                    line,
                });
            }
        };
        planned.push(Planned {
            function: index,
            plan,
            call_target: None,
            referenced: false,
        });
        planned_names.push(function.name);
        planned_hashes.push(function.name_hash);
    }
    let table = NameTable::new(&planned_names, &planned_hashes);

    let mut pool = Pool::with_capacity(planned.len() + 8);
    let mut edits: Vec<Edit> = Vec::with_capacity(planned.len() * 4);
    let mut appended = String::new();
    // The adapters' assembly is written to `piece`, and appended to `assembly` as `module asm` lines of
    // about `MODULE_ASM_LINE` bytes.
    let mut assembly = String::with_capacity(planned.len() * 40);
    let mut piece = String::with_capacity(MODULE_ASM_LINE + 4096);
    write_section(target, &mut piece).map_err(|error| LowerError::Adapter {
        function: String::new(),
        line: 0,
        error,
    })?;
    let mut report = LowerReport {
        unmaterialized,
        ..LowerReport::default()
    };
    // Local bodies are called from assembly only, which optimizers do not see: `@llvm.compiler.used` keeps
    // them. Global bodies are hidden symbols of their own, which no optimizer removes.
    let opaque = uses_opaque_pointers(text);
    let mut kept: Vec<String> = Vec::new();
    // Adapters shared by the functions of one plan and signature, entered from a stub per function: the
    // adapter's symbol and entry register by (plan, signature), and a stub macro by (adapter, binding,
    // visibility).
    let mut shared: FxHashMap<(usize, u32), (usize, usize)> = FxHashMap::default();
    let mut stub_macros: FxHashMap<(usize, Binding, SymbolVisibility), String> = FxHashMap::default();
    let mut hidden_linkages: FxHashMap<&'t str, u32> = FxHashMap::default();
    let mut last_linkage: Option<(&'t str, u32)> = None;
    for entry in &mut planned {
        let function = &module.functions[entry.function];
        if !function.is_definition {
            continue;
        }
        let header = context.header(function)?;
        let mut body = String::with_capacity(header.bare.len() + BODY_SUFFIX.len() + 1);
        body.push('@');
        body.push_str(header.bare);
        body.push_str(BODY_SUFFIX);
        let body_symbol = &body[1..];
        if !taken_names.is_empty() && taken_names.contains_key(body_symbol) {
            return Err(context.unsupported(function, format!("the module already has a function named {body}")));
        }
        if header.binding == Binding::Local {
            edits.push(Edit::new(header.linkage.0, header.linkage.1, INTERNAL));
            if opaque {
                kept.push(format!("ptr {body}"));
            } else {
                let prototype = format!(
                    "{}{}",
                    &text[header.prototype.0..header.name.0],
                    &text[header.name.1..header.prototype.1]
                );
                let function_type = function_type_spelling(&prototype)
                    .map_err(|error| context.unsupported(function, format!("its prototype: {}", error.message)))?;
                kept.push(format!("i8* bitcast ({function_type}* {body} to i8*)"));
            }
        } else {
            let words = &text[header.linkage.0..header.linkage.1];
            let replacement = match last_linkage.filter(|(last, _)| *last == words) {
                Some((_, id)) => id,
                None => match hidden_linkages.get(words) {
                    Some(id) => *id,
                    None => {
                        let id = pool.add(&hidden_linkage(words));
                        hidden_linkages.insert(words, id);
                        id
                    }
                },
            };
            last_linkage = Some((words, replacement));
            edits.push(Edit::new(header.linkage.0, header.linkage.1, replacement));
        }
        let body_text = pool.add(&body);
        edits.push(Edit::new(header.name.0, header.name.1, body_text));
        entry.call_target = Some(body_text);
        let key = (entry.plan, function.signature);
        let adapter = match shared.get(&key) {
            Some(found) => Some(*found),
            None => {
                let shared_symbol = format!("__neverc_adapter.{}", shared.len());
                let mut spec = context.adapter(
                    function,
                    &plans[entry.plan],
                    Direction::Incoming,
                    &shared_symbol,
                    Callee::Symbol(body_symbol),
                )?;
                let register = entry_register(target, &spec);
                if let Some(register) = register {
                    spec.callee = Callee::Register(register);
                } else {
                    // Every scratch register carries something: this function gets an adapter of its own.
                    spec.symbol = header.bare;
                    spec.binding = header.binding;
                    spec.visibility = header.visibility;
                }
                write_adapter(target, &spec, &mut piece).map_err(|error| context.adapter_error(function, error))?;
                flush_module_asm(&mut assembly, &mut piece, false);
                register.map(|register| {
                    let found = (shared.len(), register);
                    shared.insert(key, found);
                    found
                })
            }
        };
        if let Some((adapter, register)) = adapter {
            let macro_key = (adapter, header.binding, header.visibility);
            let name = match stub_macros.get(&macro_key) {
                Some(name) => name,
                None => {
                    let name = format!("__neverc_stub_{}", stub_macros.len());
                    let shared_symbol = format!("__neverc_adapter.{adapter}");
                    let stub = Stub {
                        binding: header.binding,
                        visibility: header.visibility,
                        register,
                        shared: &shared_symbol,
                        body_suffix: BODY_SUFFIX,
                    };
                    write_stub_macro(target, &name, &stub, &mut piece)
                        .map_err(|error| context.adapter_error(function, error))?;
                    stub_macros.entry(macro_key).or_insert(name)
                }
            };
            piece.push_str(name);
            piece.push(' ');
            piece.push_str(header.bare);
            piece.push('\n');
            flush_module_asm(&mut assembly, &mut piece, false);
        }
        report.incoming.push(function.name);
    }

    let mut rewritten_calls = 0;
    let mut same_plans: FxHashMap<(usize, usize), bool> = FxHashMap::default();
    // Calls are read a chunk of lines at a time, and their callees looked up together (see `name_table`).
    let mut calls = Vec::with_capacity(REFERENCE_CHUNK);
    let mut callees: Vec<&'t str> = Vec::with_capacity(REFERENCE_CHUNK);
    let mut found: Vec<u32> = Vec::with_capacity(REFERENCE_CHUNK);
    let mut handled_calls = Vec::with_capacity(REFERENCE_CHUNK);
    for chunk in module.reference_lines.chunks(REFERENCE_CHUNK) {
        calls.clear();
        callees.clear();
        for reference in chunk {
            let span = reference.start as usize..reference.end as usize;
            let call = if reference.in_function {
                read_call(text, span.clone(), reference.first_at as usize)
            } else {
                None
            };
            let rewritten = call.and_then(|call| {
                let convention = call.convention()?;
                is_convention(text, convention.clone()).then_some((call, convention))
            });
            let skip = rewritten
                .as_ref()
                .map(|(call, _)| call.callee_at as usize..call.callee_at as usize + call.callee.len());
            if reference.at_count > 1 || skip.is_none() {
                for_each_reference(text, span, skip, |used| {
                    mark_referenced(used.name, &table, &module, &mut planned);
                });
            }
            if let Some((call, convention)) = rewritten {
                callees.push(call.callee);
                calls.push((reference.line, call, convention));
            }
        }
        table.find_all(&callees, &mut found);
        handled_calls.clear();
        handled_calls.extend(calls.drain(..).zip(found.iter().copied()));
        for ((line, call, convention), index) in handled_calls.drain(..) {
            let Some(index) = (index != NOT_FOUND).then_some(index as usize) else {
                return Err(LowerError::Unsupported {
                    function: call.callee.to_string(),
                    line: line as usize,
                    detail: format!(
                        "a call uses the NeverC convention but {} has no plan of its own in the module",
                        call.callee
                    ),
                });
            };
            let callee = &module.functions[planned[index].function];
            // A call site's own plan (materialization copies its callee's) must be its callee's: the call is
            // redirected to an adapter of the callee's plan.
            let site_plan = match groups.get(&call.group).map(|group| &module.attribute_groups[*group]) {
                Some(group) => match (group_plans.get(&group.id), &group.plan) {
                    (Some(id), _) => Some(*id),
                    (None, Some((_, text))) => Some(read_call_plan(text, &mut plans, target, call.callee, line)?),
                    (None, None) => None,
                },
                None => None,
            };
            if let Some(site) = site_plan {
                // Plans of different groups are compared once per pair of groups' plans.
                let callee_plan = planned[index].plan;
                let same = site == callee_plan
                    || *same_plans
                        .entry((site, callee_plan))
                        .or_insert_with(|| site < plans.len() && plans[site] == plans[callee_plan]);
                if !same {
                    return Err(LowerError::Unsupported {
                        function: call.callee.to_string(),
                        line: line as usize,
                        detail: "the call's plan is not its callee's, so no adapter of the callee fits it".into(),
                    });
                }
                if let Some(group) = groups.get(&call.group) {
                    group_plans.insert(module.attribute_groups[*group].id, site);
                }
            }
            let target_text = match planned[index].call_target {
                Some(id) => id,
                None => {
                    // The first call of a declared function: its outgoing adapter.
                    let header = context.header(callee)?;
                    let adapter = format!("{}{OUTGOING_SUFFIX}", header.bare);
                    if taken_names.contains_key(adapter.as_str()) {
                        return Err(
                            context.unsupported(callee, format!("the module already has a function named @{adapter}"))
                        );
                    }
                    appended.push_str("declare ");
                    appended.push_str(&text[header.prototype.0..header.name.0]);
                    appended.push_str(&format!("@\"{adapter}\""));
                    appended.push_str(&text[header.name.1..header.prototype.1]);
                    appended.push('\n');
                    let spec = context.adapter(
                        callee,
                        &plans[planned[index].plan],
                        Direction::Outgoing,
                        &adapter,
                        Callee::Symbol(header.bare),
                    )?;
                    write_adapter(target, &spec, &mut piece).map_err(|error| context.adapter_error(callee, error))?;
                    flush_module_asm(&mut assembly, &mut piece, false);
                    report.outgoing.push(call.callee);
                    let id = pool.add(&format!("@\"{adapter}\""));
                    planned[index].call_target = Some(id);
                    id
                }
            };
            if callee.is_definition {
                report.direct_calls += 1;
            }
            rewritten_calls += 1;
            edits.push(Edit::new(convention.start, blank_after(text, convention.end), REMOVE));
            let callee_at = call.callee_at as usize;
            edits.push(Edit::new(callee_at, callee_at + call.callee.len(), target_text));
        }
    }
    // The reader keeps `llvm.global.annotations` apart from the other globals; it names the functions too.
    if let Some(at) = text.find("\n@llvm.global.annotations ") {
        let start = at + 1;
        let end = text[start..].find('\n').map_or(text.len(), |line| start + line);
        for_each_reference(text, start..end, None, |used| {
            mark_referenced(used.name, &table, &module, &mut planned);
        });
    }
    for entry in planned.iter().filter(|entry| entry.referenced) {
        let function = &module.functions[entry.function];
        if function.is_definition {
            let header = context.header(function)?;
            appended.push_str("declare ");
            appended.push_str(&text[header.prototype.0..header.prototype.1]);
            appended.push('\n');
        }
    }
    // Every use of the convention is a planned header or a direct call that was just rewritten.
    let uses = memchr::memmem::find_iter(text.as_bytes(), SPACED_CONVENTION).count();
    let handled = planned.len() + rewritten_calls;
    if uses > handled {
        return Err(LowerError::IndirectCall { count: uses - handled });
    }
    if !kept.is_empty() {
        keep_bodies(text, &kept, opaque, &mut pool, &mut edits, &mut appended)?;
    }
    let wrote_adapters = !report.incoming.is_empty() || !report.outgoing.is_empty();
    if wrote_adapters {
        flush_module_asm(&mut assembly, &mut piece, true);
    }

    // The edits are a few runs in ascending order (headers, then calls), which a stable sort merges.
    edits.sort_by_key(Edit::key);
    let mut at = 0;
    for edit in &edits {
        out.put(&text[at..edit.start as usize])?;
        out.put(pool.get(edit.text))?;
        at = edit.end as usize;
    }
    out.put(&text[at..])?;
    if !appended.is_empty() || wrote_adapters {
        if !text.is_empty() && !text.ends_with('\n') {
            out.put("\n")?;
        }
        out.put("\n; neverc-spec cc lower: the planned functions' symbols, and the adapters of calls out\n")?;
        out.put(&appended)?;
        out.put(&assembly)?;
    }
    Ok(report)
}

/// Notes that the planned definition `name` (if it is one) is used other than by a call with the convention.
fn mark_referenced(name: &str, table: &NameTable<'_>, module: &Module<'_>, planned: &mut [Planned]) {
    if let Some(index) = table.get(name)
        && module.functions[planned[index].function].is_definition
    {
        planned[index].referenced = true;
    }
}

/// Reads and validates the plan of a call site's attribute group, adding it to `plans`.
fn read_call_plan(
    text: &str,
    plans: &mut Vec<Plan>,
    target: &'static TargetRecord,
    callee: &str,
    line: u32,
) -> Result<usize, LowerError> {
    let plan_error = |message: String| LowerError::Plan {
        function: callee.to_string(),
        line: line as usize,
        message: format!("the plan of a call: {message}"),
    };
    let plan = Plan::parse(text).map_err(|error| plan_error(error.to_string()))?;
    validate_plan(&plan, target, None).map_err(|error| plan_error(error.to_string()))?;
    plans.push(plan);
    Ok(plans.len() - 1)
}

/// The size from which [`flush_module_asm`] makes a `module asm` line of what it has.
const MODULE_ASM_LINE: usize = 16 * 1024;

/// Moves the assembly in `piece` to `assembly` as a `module asm` line, once there is enough of it (or at the
/// `end`).
fn flush_module_asm(assembly: &mut String, piece: &mut String, end: bool) {
    if piece.len() >= MODULE_ASM_LINE || end {
        push_module_asm(assembly, piece);
        piece.clear();
    }
}

/// Appends the assembly `asm` (lines ending in `\n`) as one `module asm` line: LLVM joins the strings of a
/// module's `module asm` lines with line breaks, and a line break inside one is `\0A`.
fn push_module_asm(out: &mut String, asm: &str) {
    let asm = asm.strip_suffix('\n').unwrap_or(asm);
    if asm.is_empty() {
        return;
    }
    out.push_str("module asm \"");
    let bytes = asm.as_bytes();
    // Line breaks are nearly all there is to escape; anything else (a quote, a backslash in a macro, a control
    // character a template holds) is rare, and found by a separate pass.
    let plain_text = |byte: &u8| (0x20..0x7f).contains(byte) && *byte != b'"' && *byte != b'\\';
    if bytes.iter().all(|byte| *byte == b'\n' || plain_text(byte)) {
        let mut start = 0;
        for at in memchr::memchr_iter(b'\n', bytes) {
            out.push_str(&asm[start..at]);
            out.push_str("\\0A");
            start = at + 1;
        }
        out.push_str(&asm[start..]);
    } else {
        let mut plain = 0;
        for (at, byte) in bytes.iter().enumerate() {
            if plain_text(byte) {
                continue;
            }
            out.push_str(&asm[plain..at]);
            let _ = write!(out, "\\{byte:02X}");
            plain = at + 1;
        }
        out.push_str(&asm[plain..]);
    }
    out.push_str("\"\n");
}

/// The linkage words of a global body: its own linkage, hidden (no preemption, no DLL storage).
fn hidden_linkage(words: &str) -> String {
    let mut kept = String::new();
    for word in words.split_ascii_whitespace() {
        if matches!(
            word,
            "default" | "hidden" | "protected" | "dllimport" | "dllexport" | "dso_local" | "dso_preemptable"
        ) || word == "cc"
            || word.bytes().all(|byte| byte.is_ascii_digit())
        {
            continue;
        }
        kept.push_str(word);
        kept.push(' ');
    }
    kept.push_str("hidden ");
    kept
}

/// Whether the module spells pointers `ptr` (opaque) rather than `T*`.
fn uses_opaque_pointers(text: &str) -> bool {
    let bytes = text.as_bytes();
    memchr::memmem::find_iter(bytes, b"ptr").any(|at| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + 3).copied();
        matches!(before, Some(b' ' | b'(' | b',' | b'[' | b'{' | b'<'))
            && matches!(after, Some(b' ' | b',' | b')' | b']' | b'}' | b'>' | b'\n'))
    })
}

const COMPILER_USED: &str = "@llvm.compiler.used = appending global [";

/// Adds `kept` to the module's `@llvm.compiler.used` (made when there is none).
fn keep_bodies(
    text: &str,
    kept: &[String],
    opaque: bool,
    pool: &mut Pool,
    edits: &mut Vec<Edit>,
    appended: &mut String,
) -> Result<(), LowerError> {
    let element = if opaque { "ptr" } else { "i8*" };
    let existing = text
        .match_indices(COMPILER_USED)
        .find(|(at, _)| *at == 0 || text.as_bytes()[at - 1] == b'\n');
    let Some((start, _)) = existing else {
        appended.push_str(&format!(
            "{COMPILER_USED}{} x {element}] [{}], section \"llvm.metadata\"\n",
            kept.len(),
            kept.join(", ")
        ));
        return Ok(());
    };
    let end = text[start..].find('\n').map_or(text.len(), |at| start + at);
    let line = &text[start..end];
    let unreadable = || LowerError::Unsupported {
        function: "@llvm.compiler.used".into(),
        line: text[..start].matches('\n').count() + 1,
        detail: "its initializer is not `[N x T] [...]`, so the adapters' bodies cannot be added to it".into(),
    };
    let rest = &line[COMPILER_USED.len()..];
    let (count, rest) = rest.split_once(" x ").ok_or_else(unreadable)?;
    let count: usize = count.trim().parse().map_err(|_| unreadable())?;
    let (element_type, rest) = rest.split_once("] [").ok_or_else(unreadable)?;
    let close = rest.rfind(']').ok_or_else(unreadable)?;
    let (elements, tail) = (&rest[..close], &rest[close + 1..]);
    let separator = if elements.trim().is_empty() { "" } else { ", " };
    let replacement = pool.add(&format!(
        "{COMPILER_USED}{} x {element_type}] [{elements}{separator}{}]{tail}",
        count + kept.len(),
        kept.join(", ")
    ));
    edits.push(Edit::new(start, end, replacement));
    Ok(())
}

/// The first scalar or vector of `ty` (through aggregates and named types) that `deviations` names.
fn deviating_type(ty: &IrType, types: &TypeTable, deviations: &[&str], depth: usize) -> Option<String> {
    if depth > crate::signature::MAX_TYPE_NESTING {
        return None;
    }
    match ty {
        IrType::Vector { element, .. } => {
            let spelled = ty.to_string();
            if deviations.contains(&spelled.as_str()) {
                return Some(spelled);
            }
            deviating_type(element, types, deviations, depth + 1)
        }
        IrType::Array { element, .. } => deviating_type(element, types, deviations, depth + 1),
        IrType::Struct { fields, .. } => fields
            .iter()
            .find_map(|field| deviating_type(field, types, deviations, depth + 1)),
        IrType::Named(name) => types
            .get(name)
            .and_then(|ty| deviating_type(ty, types, deviations, depth + 1)),
        scalar => {
            let spelled = scalar.to_string();
            deviations.contains(&spelled.as_str()).then_some(spelled)
        }
    }
}

/// The end of the blank after `at`, if there is one.
fn blank_after(text: &str, at: usize) -> usize {
    if text.as_bytes().get(at) == Some(&b' ') {
        at + 1
    } else {
        at
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// The plan's caller calls the adapter; the adapter calls the standard body.
    Incoming,
    /// A standard caller calls the adapter; the adapter calls the planned function.
    Outgoing,
}

/// What lowering reads of a function header.
struct Header<'t> {
    /// The name without `@` and quotes.
    bare: &'t str,
    /// The `@name` range.
    name: (usize, usize),
    /// The linkage, visibility and convention words after `define `, with their blanks.
    linkage: (usize, usize),
    /// From the return type to the parameter list's `)`.
    prototype: (usize, usize),
    binding: Binding,
    visibility: SymbolVisibility,
}

struct Context<'a, 't> {
    text: &'t str,
    target: &'static TargetRecord,
    module: &'a Module<'t>,
    /// Built once: a searcher is costly to build per header.
    comdat: memchr::memmem::Finder<'static>,
}

impl<'t> Context<'_, 't> {
    fn unsupported(&self, function: &FunctionHeader<'_>, detail: String) -> LowerError {
        LowerError::Unsupported {
            function: function.name.to_string(),
            line: function.line as usize,
            detail,
        }
    }

    fn adapter_error(&self, function: &FunctionHeader<'_>, error: AdapterError) -> LowerError {
        LowerError::Adapter {
            function: function.name.to_string(),
            line: function.line as usize,
            error,
        }
    }

    fn header(&self, function: &FunctionHeader<'t>) -> Result<Header<'t>, LowerError> {
        let text = self.text;
        let name_start = function.name.as_ptr() as usize - text.as_ptr() as usize;
        let name_end = name_start + function.name.len();
        let line_start = text[..name_start].rfind('\n').map_or(0, |at| at + 1);
        let keyword_end = line_start
            + if function.is_definition {
                "define ".len()
            } else {
                "declare ".len()
            };
        let convention_at = function.convention_at as usize;
        let convention_end = function.convention_end as usize;
        let prototype_start = blank_after(text, convention_end);
        let parameters_end = matching_paren(text, name_end)
            .ok_or_else(|| self.unsupported(function, "unbalanced parameter list".into()))?;
        let bare = function.name.trim_start_matches('@');
        let bare = bare
            .strip_prefix('"')
            .and_then(|name| name.strip_suffix('"'))
            .unwrap_or(bare);
        let assembler_name = !bare.is_empty()
            && !bare.starts_with(|c: char| c.is_ascii_digit())
            && bare
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$'));
        if !assembler_name {
            return Err(self.unsupported(
                function,
                "its name cannot be written in assembly without quoting, which adapters do not do".into(),
            ));
        }
        let line_end = text[name_end..].find('\n').map_or(text.len(), |at| name_end + at);
        if self.comdat.find(&text.as_bytes()[parameters_end..line_end]).is_some() {
            return Err(self.unsupported(function, "a function in a COMDAT group cannot be lowered".into()));
        }
        let mut binding = Binding::Global;
        let mut visibility = SymbolVisibility::Default;
        for word in text[keyword_end..convention_at].split_ascii_whitespace() {
            match word {
                "internal" | "private" => binding = Binding::Local,
                "weak" | "linkonce" | "linkonce_odr" | "weak_odr" | "extern_weak" => binding = Binding::Weak,
                "hidden" => visibility = SymbolVisibility::Hidden,
                "protected" => visibility = SymbolVisibility::Protected,
                "available_externally" | "common" | "appending" => {
                    return Err(self.unsupported(function, format!("`{word}` functions cannot be lowered")));
                }
                _ => {}
            }
        }
        Ok(Header {
            bare,
            name: (name_start, name_end),
            linkage: (keyword_end, prototype_start),
            prototype: (prototype_start, parameters_end),
            binding,
            visibility,
        })
    }

    /// The adapter of `function`'s `plan` in `direction`, a local symbol (the caller makes it the function's
    /// own where it is).
    fn adapter<'n>(
        &self,
        function: &FunctionHeader<'_>,
        plan: &Plan,
        direction: Direction,
        symbol: &'n str,
        callee: Callee<'n>,
    ) -> Result<AdapterSpec<'n>, LowerError> {
        let signature = &self.module.signatures[function.signature as usize];
        if signature.variadic {
            return Err(self.unsupported(function, "variadic functions have no plan to lower".into()));
        }
        let types = &self.module.types;
        if let Some(lowering) = &self.target.lowering {
            let mut values = signature
                .parameters
                .iter()
                .flat_map(|parameter| std::iter::once(&parameter.ty).chain(parameter.attributes.byval.as_ref()))
                .chain(std::iter::once(&signature.return_type));
            if let Some(ty) = values.find_map(|ty| deviating_type(ty, types, lowering.standard_deviations, 0)) {
                return Err(self.unsupported(
                    function,
                    format!(
                        "its signature holds `{ty}`, which {} passes differently from the LLVM that compiles the \
                         body (docs/standard-abi-deviations.md), so it is not lowered",
                        self.target.name
                    ),
                ));
            }
        }
        let planning = |error: PlanningError| LowerError::Planning {
            function: function.name.to_string(),
            line: function.line as usize,
            error,
        };
        let planned = assign(self.target, plan, signature, types).map_err(planning)?;
        let standard = standard_assignments(self.target, signature, types).map_err(|error| planning(error.into()))?;
        let moves = |value: ValueRef, parameter: Option<&Parameter>| -> Result<Option<ValueMove>, LowerError> {
            let find = |assignments: &[ValueAssignment]| assignments.iter().find(|a| a.value == value).cloned();
            let (Some(on_plan), Some(on_standard)) = (find(&planned), find(&standard)) else {
                return Ok(None);
            };
            let (content_size, extension) = self.content(signature, parameter, types, function)?;
            let plan_pieces = self.pieces(&on_plan, parameter, function)?;
            let standard_pieces = self.pieces(&on_standard, parameter, function)?;
            let (caller, callee) = match direction {
                Direction::Incoming => (plan_pieces, standard_pieces),
                Direction::Outgoing => (standard_pieces, plan_pieces),
            };
            Ok(Some(ValueMove {
                content_size,
                extension,
                caller,
                callee,
            }))
        };
        let mut arguments = Vec::new();
        for (index, parameter) in signature.parameters.iter().enumerate() {
            let value = moves(ValueRef::Argument(index as u32), Some(parameter))?
                .ok_or_else(|| self.unsupported(function, format!("argument {index} has no location")))?;
            arguments.push(value);
        }
        let returned = moves(ValueRef::Return, None)?;
        let preserve = match direction {
            Direction::Incoming => self.plan_only_saved(plan, returned.as_ref()),
            Direction::Outgoing => self.standard_saved_used_by(&arguments, returned.as_ref()),
        };
        Ok(AdapterSpec {
            symbol,
            binding: Binding::Local,
            visibility: SymbolVisibility::Default,
            callee,
            caller_kind: match direction {
                Direction::Incoming => SideKind::Plan,
                Direction::Outgoing => SideKind::Standard,
            },
            arguments,
            returned,
            preserve,
            sret_argument: signature
                .parameters
                .iter()
                .position(|parameter| parameter.attributes.sret.is_some()),
        })
    }

    /// The content's size (a by-value argument's content is the object it points at) and its widening.
    fn content(
        &self,
        signature: &Signature,
        parameter: Option<&Parameter>,
        types: &TypeTable,
        function: &FunctionHeader<'_>,
    ) -> Result<(u64, Extension), LowerError> {
        let pointer = u64::from(self.target.pointer_width / 8);
        let layout_error = |error| LowerError::Planning {
            function: function.name.to_string(),
            line: function.line as usize,
            error: PlanningError::Layout(error),
        };
        // 32-bit integers too: RISC-V's standard convention widens a `signext`/`zeroext` i32 to 64 bits.
        let narrow = |ty: &IrType| matches!(ty, IrType::Integer(bits) if *bits <= 32);
        let extension_of = |attributes: &crate::signature::ValueAttributes| {
            if attributes.signext {
                Extension::Sign
            } else if attributes.zeroext {
                Extension::Zero
            } else {
                Extension::None
            }
        };
        let Some(parameter) = parameter else {
            let layout = layout_of(&signature.return_type, pointer, types).map_err(layout_error)?;
            let extension = if narrow(&signature.return_type) {
                extension_of(&signature.return_attributes)
            } else {
                Extension::None
            };
            return Ok((layout.store_size, extension));
        };
        let size = match &parameter.attributes.byval {
            Some(pointee) => layout_of(pointee, pointer, types).map_err(layout_error)?.alloc_size,
            None => {
                layout_of(&parameter.ty, pointer, types)
                    .map_err(layout_error)?
                    .store_size
            }
        };
        let extension = if narrow(&parameter.ty) {
            extension_of(&parameter.attributes)
        } else {
            Extension::None
        };
        Ok((size, extension))
    }

    /// One side's pieces of a value, with what each holds.
    fn pieces(
        &self,
        assignment: &ValueAssignment,
        parameter: Option<&Parameter>,
        function: &FunctionHeader<'_>,
    ) -> Result<Vec<SidePiece>, LowerError> {
        let role = match parameter {
            None if assignment.indirect => Role::Address,
            None => Role::Content,
            Some(parameter) if parameter.attributes.sret.is_some() => Role::Content,
            Some(parameter) if parameter.attributes.byval.is_some() => {
                match (assignment.decider, assignment.indirect) {
                    (Decider::Standard, _) => Role::Content,
                    (Decider::Plan, true) => Role::Address,
                    (Decider::Plan, false) => {
                        return Err(
                            self.unsupported(function, "a by-value argument's plan location is not INDIRECT".into())
                        );
                    }
                }
            }
            Some(_) if assignment.indirect => Role::Address,
            Some(_) => Role::Content,
        };
        let pointer = u64::from(self.target.pointer_width / 8);
        Ok(assignment
            .pieces
            .iter()
            .map(|piece| {
                let holder = match piece.place {
                    Place::Register { register, .. } => Holder::Register(register),
                    Place::Stack { offset, .. } => Holder::Stack(offset),
                };
                match role {
                    Role::Content => SidePiece {
                        holder,
                        role,
                        offset: piece.offset,
                        size: piece.size,
                    },
                    Role::Address => SidePiece {
                        holder,
                        role,
                        offset: 0,
                        size: pointer,
                    },
                }
            })
            .collect())
    }

    /// Registers the plan declares callee-saved that the standard convention does not preserve (whole),
    /// except those the plan's caller gets the return value in: a return the standard convention places
    /// (the plan has none) may use a register the plan also lists, and restoring it would overwrite the value.
    fn plan_only_saved(&self, plan: &Plan, returned: Option<&ValueMove>) -> Vec<usize> {
        let returns: Vec<usize> = returned
            .into_iter()
            .flat_map(|value| &value.caller)
            .filter(|piece| piece.role == Role::Content)
            .filter_map(|piece| match piece.holder {
                Holder::Register(register) => Some(register),
                Holder::Stack(_) => None,
            })
            .collect();
        let mut saved = Vec::new();
        for number in &plan.callee_saved {
            let Some(resolved) = self.target.register_by_number(*number) else {
                continue;
            };
            if returns.contains(&resolved.register) {
                continue;
            }
            let standard = self
                .target
                .callee_saved
                .iter()
                .any(|view| view.register == resolved.register && view.width >= resolved.width);
            if !standard && !saved.contains(&resolved.register) {
                saved.push(resolved.register);
            }
        }
        saved
    }

    /// Standard callee-saved registers the planned callee receives values in or returns values in: the
    /// outgoing adapter preserves them for its standard caller.
    fn standard_saved_used_by(&self, arguments: &[ValueMove], returned: Option<&ValueMove>) -> Vec<usize> {
        let mut saved = Vec::new();
        for piece in arguments.iter().chain(returned).flat_map(|value| &value.callee) {
            let Holder::Register(register) = piece.holder else {
                continue;
            };
            let standard = self.target.callee_saved.iter().any(|view| view.register == register);
            if standard && !saved.contains(&register) {
                saved.push(register);
            }
        }
        saved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A declared planned function returning through `sret` and one returning a `signext i8`, called from C.
    const CALLS_OUT: &str = "target triple = \"x86_64-unknown-linux-gnu\"\n\n\
        %struct.P = type { i64, i64, i64 }\n\n\
        declare cc 1000 void @mk(%struct.P* sret(%struct.P) align 8, i64) #0\n\n\
        declare cc 1000 signext i8 @narrow(i32) #1\n\n\
        define dso_local i64 @use(%struct.P* %p) {\n\
        \x20 call cc 1000 void @mk(%struct.P* sret(%struct.P) align 8 %p, i64 7) #0\n\
        \x20 %c = call cc 1000 signext i8 @narrow(i32 1) #1\n\
        \x20 %w = sext i8 %c to i64\n\
        \x20 ret i64 %w\n}\n\n\
        attributes #0 = { \"neverc-cc-plan-v1\"=\"neverc-cc-plan-v1;schema=llvm-x86_64-unknown-linux-gnu;target=0:0;cc=0:0;stack=16;returns=;arguments=r,0,0,8,8,54,0,1|r,1,0,8,8,56,0,0;callee-saved=\" }\n\
        attributes #1 = { \"neverc-cc-plan-v1\"=\"neverc-cc-plan-v1;schema=llvm-x86_64-unknown-linux-gnu;target=0:0;cc=0:0;stack=16;returns=r,0,0,1,1,119,0,0;arguments=r,0,0,4,4,54,0,0;callee-saved=\" }\n";

    /// The assembly of the adapter `symbol` in a lowered module, a line each.
    fn adapter_lines(text: &str, symbol: &str) -> Vec<String> {
        let assembly: String = text
            .lines()
            .filter_map(|line| {
                line.strip_prefix("module asm \"")?
                    .strip_suffix('"')
                    .map(str::to_string)
            })
            .collect::<Vec<_>>()
            .join("\\0A");
        let lines: Vec<String> = assembly.split("\\0A").map(str::to_string).collect();
        let start = lines
            .iter()
            .position(|line| *line == format!("{symbol}:"))
            .unwrap_or(lines.len());
        lines[start..]
            .iter()
            .take_while(|line| !line.starts_with(".size"))
            .cloned()
            .collect()
    }

    #[test]
    fn outgoing_adapters_return_what_the_standard_caller_relies_on() {
        let x86 = neverc_tables::target_by_name("x86_64").unwrap();
        let lowered = lower(CALLS_OUT, x86).unwrap();
        assert_eq!(lowered.report.outgoing, ["@mk", "@narrow"]);
        // After the call, the sret pointer the caller passed (in rdi, kept in the first content slot) is
        // returned in rax, as the psABI says.
        let mk = adapter_lines(&lowered.text, "mk.neverc_out");
        let ret = mk.iter().position(|line| line == "retq").unwrap();
        let call = mk.iter().position(|line| line.starts_with("callq mk@PLT")).unwrap();
        assert!(
            mk[call..ret]
                .iter()
                .any(|line| line.starts_with("movq ") && line.ends_with("(%rsp), %rax")),
            "{mk:#?}"
        );
        assert!(mk.iter().any(|line| line.starts_with("movq %rdi, ")), "{mk:#?}");
        // A `signext i8` returned in r8b comes back in eax widened again.
        let narrow = adapter_lines(&lowered.text, "narrow.neverc_out");
        let call = narrow
            .iter()
            .position(|line| line.starts_with("callq narrow@PLT"))
            .unwrap();
        assert!(
            narrow[call..]
                .iter()
                .any(|line| line.starts_with("movsbl ") && line.ends_with(", %eax")),
            "{narrow:#?}"
        );
    }

    #[test]
    fn functions_with_specs_and_no_plans_are_reported_and_planned_ones_are_not() {
        let x86 = neverc_tables::target_by_name("x86_64").unwrap();
        // `@inline` and `@grouped` carry specs only (inline and through a group); `@planned` has its plan.
        let module = format!(
            "target triple = \"x86_64-unknown-linux-gnu\"\n\n\
             define i32 @plain(i32 %0) {{\n  ret i32 %0\n}}\n\n\
             define i32 @inline(i32 %0) \"neverc-callconv\"=\"gpr:rcx\" {{\n  ret i32 %0\n}}\n\n\
             define i32 @grouped(i32 %0) #0 {{\n  ret i32 %0\n}}\n\n\
             define cc 1000 i32 @planned(i32 %0) #1 {{\n  ret i32 %0\n}}\n\n\
             attributes #0 = {{ \"neverc-callconv\"=\"gpr:rcx\" }}\n\
             attributes #1 = {{ \"neverc-callconv\"=\"gpr:rcx\" \"neverc-cc-plan-v1\"=\"{}\" }}\n",
            "neverc-cc-plan-v1;schema=llvm-x86_64-unknown-linux-gnu;target=0:0;cc=0:0;stack=16;returns=r,0,0,4,4,51,0,0;arguments=r,0,0,4,4,54,0,0;callee-saved="
        );
        let lowered = lower(&module, x86).unwrap();
        assert_eq!(lowered.report.incoming, ["@planned"]);
        let unmaterialized: Vec<(&str, usize)> = lowered
            .report
            .unmaterialized
            .iter()
            .map(|unplanned| (unplanned.function, unplanned.line))
            .collect();
        assert_eq!(unmaterialized, [("@inline", 7), ("@grouped", 11)]);
    }

    #[test]
    fn blanks_after_a_convention_go_with_it() {
        assert_eq!(blank_after("cc 1000 i32", 7), 8);
        assert_eq!(blank_after("cc 1000", 7), 7);
    }
}
