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

use rustc_hash::FxHashMap;

use crate::adapter::{
    AdapterError, AdapterSpec, Binding, Extension, Holder, Role, SideKind, SidePiece, SymbolVisibility, ValueMove,
    write_adapter,
};
use crate::assignment::{Decider, Place, ValueAssignment, ValueRef};
use crate::layout::{TypeTable, layout_of};
use crate::ll_reader::{FunctionHeader, Module, ReadError, encode_ir_string, matching_paren, read_call, read_module};
use crate::materialize::{NEVER_C_CUSTOM_CONVENTION, TextOutput};
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
}

const CONVENTION: &str = "cc 1000";

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
    let groups: FxHashMap<u32, usize> = module
        .attribute_groups
        .iter()
        .enumerate()
        .map(|(index, group)| (group.id, index))
        .collect();
    let mut plans: Vec<Plan> = Vec::new();
    let mut plan_ids: FxHashMap<&str, usize> = FxHashMap::default();
    let mut planned: FxHashMap<&'t str, Planned> = FxHashMap::default();
    let mut names: FxHashMap<&'t str, usize> = FxHashMap::default();
    for (index, function) in module.functions.iter().enumerate() {
        names.insert(function.name, index);
        let Some(convention) = function.convention() else {
            continue;
        };
        if &text[convention] != CONVENTION {
            continue;
        }
        let line = function.line as usize;
        let inline = module.inline_attributes.get(function.inline_attributes as usize);
        let group = groups
            .get(&function.group)
            .map(|index| &module.attribute_groups[*index]);
        let plan_text = inline
            .and_then(|inline| inline.plan.as_ref())
            .or_else(|| group.and_then(|group| group.plan.as_ref()))
            .map(|(_, plan)| plan.as_str())
            .ok_or_else(|| LowerError::NoPlan {
                function: function.name.to_string(),
                line,
            })?;
        let plan = match plan_ids.get(plan_text) {
            Some(id) => *id,
            None => {
                let plan_error = |message: String| LowerError::Plan {
                    function: function.name.to_string(),
                    line,
                    message,
                };
                let plan = Plan::parse(plan_text).map_err(|error| plan_error(error.to_string()))?;
                validate_plan(&plan, target, None).map_err(|error| plan_error(error.to_string()))?;
                plans.push(plan);
                plan_ids.insert(plan_text, plans.len() - 1);
                plans.len() - 1
            }
        };
        planned.insert(function.name, Planned { function: index, plan });
    }

    let context = Context {
        text,
        target,
        module: &module,
    };
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut appended = String::new();
    let mut assembly: Vec<String> = Vec::new();
    let mut report = LowerReport::default();
    // The bodies are called from assembly only, which optimizers do not see: `@llvm.compiler.used` keeps them.
    let opaque = uses_opaque_pointers(text);
    let mut kept: Vec<String> = Vec::new();
    for function in &module.functions {
        let Some(entry) = planned.get(function.name) else {
            continue;
        };
        if !function.is_definition {
            continue;
        }
        let header = context.header(function)?;
        let body = format!("@\"{}{BODY_SUFFIX}\"", header.bare);
        if names.contains_key(body.as_str()) {
            return Err(context.unsupported(function, format!("the module already has a function named {body}")));
        }
        edits.push((header.linkage.0, header.linkage.1, "internal ".to_string()));
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
        edits.push((header.name.0, header.name.1, body));
        appended.push_str("declare ");
        appended.push_str(&text[header.prototype.0..header.prototype.1]);
        appended.push('\n');
        let body_symbol = format!("{}{BODY_SUFFIX}", header.bare);
        let spec = context.adapter(
            function,
            &plans[entry.plan],
            Direction::Incoming,
            header.bare,
            &body_symbol,
            header.binding,
            header.visibility,
        )?;
        write_adapter(target, &spec, &mut assembly).map_err(|error| context.adapter_error(function, error))?;
        report.incoming.push(function.name);
    }

    let mut outgoing: FxHashMap<&'t str, ()> = FxHashMap::default();
    let mut rewritten_calls = 0;
    for reference in module.reference_lines.iter().filter(|line| line.in_function) {
        let span = reference.start as usize..reference.end as usize;
        let Some(call) = read_call(text, span, reference.first_at as usize) else {
            continue;
        };
        let Some(convention) = call.convention() else { continue };
        if &text[convention.clone()] != CONVENTION {
            continue;
        }
        let line = reference.line as usize;
        let Some(entry) = planned.get(call.callee) else {
            return Err(LowerError::Unsupported {
                function: call.callee.to_string(),
                line,
                detail: format!(
                    "a call uses the NeverC convention but {} has no plan of its own in the module",
                    call.callee
                ),
            });
        };
        let callee = &module.functions[entry.function];
        let header = context.header(callee)?;
        let target_name = if callee.is_definition {
            report.direct_calls += 1;
            format!("@\"{}{BODY_SUFFIX}\"", header.bare)
        } else {
            let adapter = format!("{}{OUTGOING_SUFFIX}", header.bare);
            if outgoing.insert(call.callee, ()).is_none() {
                appended.push_str("declare ");
                appended.push_str(&text[header.prototype.0..header.name.0]);
                appended.push_str(&format!("@\"{adapter}\""));
                appended.push_str(&text[header.name.1..header.prototype.1]);
                appended.push('\n');
                let spec = context.adapter(
                    callee,
                    &plans[entry.plan],
                    Direction::Outgoing,
                    &adapter,
                    header.bare,
                    Binding::Local,
                    SymbolVisibility::Default,
                )?;
                write_adapter(target, &spec, &mut assembly).map_err(|error| context.adapter_error(callee, error))?;
                report.outgoing.push(call.callee);
            }
            format!("@\"{adapter}\"")
        };
        rewritten_calls += 1;
        let after = blank_after(text, convention.end);
        edits.push((convention.start, after, String::new()));
        let callee_at = call.callee_at as usize;
        edits.push((callee_at, callee_at + call.callee.len(), target_name));
    }
    // Every use of the convention is a planned header or a direct call that was just rewritten.
    let uses = memchr::memmem::find_iter(text.as_bytes(), b" cc 1000 ").count();
    let handled = planned.len() + rewritten_calls;
    if uses > handled {
        return Err(LowerError::IndirectCall { count: uses - handled });
    }

    if !kept.is_empty() {
        keep_bodies(text, &kept, opaque, &mut edits, &mut appended)?;
    }
    edits.sort_by_key(|edit| (edit.0, edit.1));
    let mut at = 0;
    for (start, end, replacement) in &edits {
        out.put(&text[at..*start])?;
        out.put(replacement)?;
        at = *end;
    }
    out.put(&text[at..])?;
    if !text.is_empty() && !text.ends_with('\n') {
        out.put("\n")?;
    }
    if !appended.is_empty() || !assembly.is_empty() {
        out.put("\n; neverc-spec cc lower: the planned functions' symbols, and the adapters of calls out\n")?;
        out.put(&appended)?;
        for line in &assembly {
            out.put("module asm \"")?;
            out.put(&encode_ir_string(line))?;
            out.put("\"\n")?;
        }
    }
    Ok(report)
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
    edits: &mut Vec<(usize, usize, String)>,
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
    edits.push((
        start,
        end,
        format!(
            "{COMPILER_USED}{} x {element_type}] [{elements}{separator}{}]{tail}",
            count + kept.len(),
            kept.join(", ")
        ),
    ));
    Ok(())
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
        if text[parameters_end..line_end].contains(" comdat") {
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

    #[allow(clippy::too_many_arguments)]
    fn adapter<'n>(
        &self,
        function: &FunctionHeader<'_>,
        plan: &Plan,
        direction: Direction,
        symbol: &'n str,
        callee: &'n str,
        binding: Binding,
        visibility: SymbolVisibility,
    ) -> Result<AdapterSpec<'n>, LowerError> {
        let signature = &self.module.signatures[function.signature as usize];
        if signature.variadic {
            return Err(self.unsupported(function, "variadic functions have no plan to lower".into()));
        }
        let types = &self.module.types;
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
            binding,
            visibility,
            callee,
            caller_kind: match direction {
                Direction::Incoming => SideKind::Plan,
                Direction::Outgoing => SideKind::Standard,
            },
            arguments,
            returned,
            preserve,
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
        let Some(parameter) = parameter else {
            let layout = layout_of(&signature.return_type, pointer, types).map_err(layout_error)?;
            return Ok((layout.store_size, Extension::None));
        };
        let size = match &parameter.attributes.byval {
            Some(pointee) => layout_of(pointee, pointer, types).map_err(layout_error)?.alloc_size,
            None => {
                layout_of(&parameter.ty, pointer, types)
                    .map_err(layout_error)?
                    .store_size
            }
        };
        let extension = if parameter.attributes.signext {
            Extension::Sign
        } else if parameter.attributes.zeroext {
            Extension::Zero
        } else {
            Extension::None
        };
        let narrow_integer = matches!(parameter.ty, IrType::Integer(bits) if bits < 32);
        Ok((size, if narrow_integer { extension } else { Extension::None }))
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

    #[test]
    fn blanks_after_a_convention_go_with_it() {
        assert_eq!(blank_after("cc 1000 i32", 7), 8);
        assert_eq!(blank_after("cc 1000", 7), 7);
    }
}
