//! From a spec (`gpr:rcx,rdx;ret:rax`) and a signature to a plan, NeverC's built-in path (fact sheet C.5),
//! with every value the plan leaves open assigned by the target's standard convention.

use std::collections::HashSet;
use std::ops::Range;

use neverc_schema::{Spec, SpecList, SpecToken, is_stack_token};

use crate::assignment::{Decider, Piece, Place, ValueAssignment, ValueRef};
use crate::layout::{LayoutError, TypeTable, layout_of};
use crate::plan::{LOCATION_BYVAL, LOCATION_INDIRECT, Location, LocationKind, Plan, PlanId};
use crate::signature::{IrType, Signature};
use crate::standard_abi::{
    AbiState, StandardAbiError, check_returnable, standard_assignments, standard_return, value_width,
};
use neverc_tables::{RegisterClassKind, ResolvedRegister, TargetRecord};

/// NeverC's warning for a register that is both callee-saved and an argument or return register.
pub const CSR_CONFLICT_WARNING: &str =
    "a register is listed as both callee-saved and an argument/return register; this is likely an ABI mistake";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoteSeverity {
    Note,
    Warning,
}

/// Something the planner wants the user to know; `span` points into the spec text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanNote {
    pub severity: NoteSeverity,
    pub message: String,
    pub span: Option<Range<usize>>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanningError {
    #[error("NeverC custom calling convention does not support variadic functions: '{function}'")]
    Variadic { function: String },
    #[error("the standard-ABI planner does not model variadic functions: '{function}'")]
    StandardVariadic { function: String },
    #[error("legacy NeverC calling convention spec is empty or malformed")]
    EmptySpec,
    #[error("malformed NeverC calling convention spec: `{token}` is not a key, a register name or a stack token")]
    MalformedSpec { token: String, span: Range<usize> },
    #[error("NeverC custom calling convention cannot materialize a scalable or oversized value")]
    Oversized,
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error(transparent)]
    Standard(#[from] StandardAbiError),
    #[error(
        "the standard convention's stack slot for argument {index} collides with the plan's stack slot at offset {offset}"
    )]
    StackConflict { index: u32, offset: u32 },
}

/// A plan and where every value goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedFunction {
    pub plan: Plan,
    pub assignments: Vec<ValueAssignment>,
    pub notes: Vec<PlanNote>,
}

fn note(severity: NoteSeverity, message: String, token: Option<&SpecToken<'_>>) -> PlanNote {
    PlanNote {
        severity,
        message,
        span: token.map(SpecToken::span),
    }
}

/// A resolved spec name, or why it is skipped.
fn resolve_name(target: &TargetRecord, token: &SpecToken<'_>, notes: &mut Vec<PlanNote>) -> Option<ResolvedRegister> {
    let Some(resolved) = target.resolve_register(token.text) else {
        // A name that is no register shifts every later value to another register: a warning, wherever the
        // spec comes from.
        notes.push(note(
            NoteSeverity::Warning,
            format!("`{}` is not a register of {}; it is skipped", token.text, target.name),
            Some(token),
        ));
        return None;
    };
    if target.is_reserved(resolved.register) {
        notes.push(note(
            NoteSeverity::Note,
            format!("`{}` is reserved on {}; it is skipped", token.text, target.name),
            Some(token),
        ));
        return None;
    }
    if target.registers[resolved.register].flags & neverc_tables::generated::targets::REGISTER_FLAG_FRAME_POINTER != 0 {
        notes.push(note(
            NoteSeverity::Warning,
            format!(
                "`{}` is the frame pointer; passing values in it is only sound with -fomit-frame-pointer",
                token.text
            ),
            Some(token),
        ));
    }
    Some(resolved)
}

fn holds_floating_point(target: &TargetRecord, register: usize) -> bool {
    target
        .class_of(register)
        .is_some_and(|class| class.kind != RegisterClassKind::General)
}

/// Size and alignment of a value as a plan records it.
fn value_size(target: &TargetRecord, ty: &IrType, types: &TypeTable) -> Result<(u32, u32), PlanningError> {
    let layout = layout_of(ty, u64::from(target.pointer_width / 8), types)?;
    let size = u32::try_from(layout.store_size).map_err(|_| PlanningError::Oversized)?;
    let alignment = u32::try_from(layout.alignment).map_err(|_| PlanningError::Oversized)?;
    Ok((size, alignment))
}

/// Plans `signature` under `spec` on `target`. `function` names the function in diagnostics.
pub fn plan_from_spec(
    target: &TargetRecord,
    spec_text: &str,
    signature: &Signature,
    types: &TypeTable,
    function: &str,
) -> Result<PlannedFunction, PlanningError> {
    if signature.variadic {
        return Err(PlanningError::Variadic {
            function: function.to_string(),
        });
    }
    let spec = Spec::parse(spec_text);
    if let Some(token) = spec.malformed_token() {
        return Err(PlanningError::MalformedSpec {
            token: token.text.to_string(),
            span: token.span(),
        });
    }
    if spec.is_empty() {
        return Err(PlanningError::EmptySpec);
    }
    let mut notes = Vec::new();
    for segment in spec.unknown_segments() {
        notes.push(note(
            NoteSeverity::Note,
            format!("unknown spec key `{}` is ignored", segment.key.text),
            Some(&segment.key),
        ));
    }
    let positional: Vec<&SpecToken<'_>> = spec.items(SpecList::Positional).collect();
    let mut integer_pool = spec.items(SpecList::IntegerArguments).peekable();
    let mut float_pool = spec.items(SpecList::FloatArguments).peekable();
    let mut used: HashSet<usize> = HashSet::new();
    let mut stack_offset = 0u32;
    let mut arguments = Vec::new();
    for (index, parameter) in signature.parameters.iter().enumerate() {
        let index = index as u32;
        let by_reference = parameter.attributes.byval.is_some();
        let (size, alignment) = value_size(target, &parameter.ty, types)?;
        let is_fp = parameter.ty.is_fp_class();
        let register_bytes = |resolved: &ResolvedRegister| target.registers[resolved.register].width / 8;
        let fits = |resolved: &ResolvedRegister| {
            holds_floating_point(target, resolved.register) == is_fp && size <= register_bytes(resolved)
        };
        let mut chosen = None;
        if !positional.is_empty() {
            if let Some(token) = positional.get(index as usize)
                && !is_stack_token(token.text)
                && let Some(resolved) = resolve_name(target, token, &mut notes)
                && fits(&resolved)
                && !used.contains(&resolved.register)
            {
                chosen = Some(resolved);
            }
        } else {
            let pool = if is_fp { &mut float_pool } else { &mut integer_pool };
            for token in pool.by_ref() {
                if let Some(resolved) = resolve_name(target, token, &mut notes)
                    && fits(&resolved)
                    && !used.contains(&resolved.register)
                {
                    chosen = Some(resolved);
                    break;
                }
            }
        }
        let mut flags = 0;
        if by_reference {
            flags = LOCATION_INDIRECT | LOCATION_BYVAL;
        } else if parameter.attributes.sret.is_some() {
            flags = LOCATION_INDIRECT;
        }
        let location = match chosen {
            Some(resolved) => {
                used.insert(resolved.register);
                Location {
                    kind: LocationKind::Register,
                    value_index: index,
                    piece_offset: 0,
                    size,
                    alignment,
                    register: resolved.plan_number,
                    stack_offset: 0,
                    flags,
                }
            }
            None => {
                let slot_size = size.max(8);
                let slot_alignment = alignment.max(if slot_size > 8 { 16 } else { 8 });
                let offset = stack_offset.div_ceil(slot_alignment) * slot_alignment;
                stack_offset = offset + slot_size;
                Location {
                    kind: LocationKind::Stack,
                    value_index: index,
                    piece_offset: 0,
                    size: slot_size,
                    alignment: slot_alignment,
                    register: 0,
                    stack_offset: offset,
                    flags,
                }
            }
        };
        arguments.push(location);
    }

    let mut returns = Vec::new();
    if signature.return_type != IrType::Void {
        let (size, alignment) = value_size(target, &signature.return_type, types)?;
        let list = if signature.return_type.is_fp_class() {
            SpecList::FloatReturn
        } else {
            SpecList::IntegerReturn
        };
        if let Some(token) = spec.items(list).next()
            && let Some(resolved) = resolve_name(target, token, &mut notes)
            && holds_floating_point(target, resolved.register) == signature.return_type.is_fp_class()
            && size <= target.registers[resolved.register].width / 8
        {
            returns.push(Location {
                kind: LocationKind::Register,
                value_index: 0,
                piece_offset: 0,
                size,
                alignment,
                register: resolved.plan_number,
                stack_offset: 0,
                flags: 0,
            });
        }
    }

    // A register that carries a value cannot also be preserved by the callee: NeverC warns and compiles
    // anyway; we warn too, and leave it out of the plan's callee-saved set so that the plan stays valid.
    let carrying: HashSet<usize> = arguments
        .iter()
        .chain(&returns)
        .filter_map(|location| {
            target
                .register_by_number(location.register)
                .map(|resolved| resolved.register)
        })
        .collect();
    let mut callee_saved = Vec::new();
    let mut saved_registers = HashSet::new();
    for token in spec.items(SpecList::CalleeSaved) {
        let Some(resolved) = resolve_name(target, token, &mut notes) else {
            continue;
        };
        if carrying.contains(&resolved.register) {
            notes.push(note(
                NoteSeverity::Note,
                format!(
                    "`{}` carries a value, so it is left out of the callee-saved set",
                    token.text
                ),
                Some(token),
            ));
        } else if saved_registers.insert(resolved.register) {
            callee_saved.push(resolved.plan_number);
        }
    }
    if csr_conflicts(&spec) {
        notes.push(note(
            NoteSeverity::Warning,
            CSR_CONFLICT_WARNING.to_string(),
            spec.items(SpecList::CalleeSaved).next(),
        ));
    }
    notes.push(note(
        NoteSeverity::Note,
        format!("tail calls are disabled for `{function}` and its callers"),
        None,
    ));

    let plan = Plan {
        schema: target.schema_digest.to_string(),
        target: PlanId::from(target.target_id),
        convention: PlanId::from(target.convention_id),
        stack_alignment: u64::from(target.stack_alignment),
        returns,
        arguments,
        callee_saved,
    };
    let assignments = assign(target, &plan, signature, types)?;
    hidden_pointer_clash(target, &assignments, &mut notes);
    Ok(PlannedFunction {
        plan,
        assignments,
        notes,
    })
}

/// Warns when the standard convention returns the value through a hidden pointer in a register that a plan
/// location also gives an argument: the two cannot share it, and the plan has no word for the pointer.
fn hidden_pointer_clash(target: &TargetRecord, assignments: &[ValueAssignment], notes: &mut Vec<PlanNote>) {
    let Some(returned) = assignments
        .iter()
        .find(|assignment| assignment.value == ValueRef::Return && assignment.indirect)
    else {
        return;
    };
    for piece in &returned.pieces {
        let Place::Register { register, .. } = piece.place else {
            continue;
        };
        let clash = assignments.iter().find(|assignment| {
            assignment.decider == Decider::Plan
                && matches!(assignment.value, ValueRef::Argument(_))
                && assignment
                    .pieces
                    .iter()
                    .any(|other| matches!(other.place, Place::Register { register: taken, .. } if taken == register))
        });
        if let Some(ValueAssignment {
            value: ValueRef::Argument(index),
            ..
        }) = clash
        {
            notes.push(note(
                NoteSeverity::Warning,
                format!(
                    "the return value does not fit the return registers and goes through a hidden pointer in `{}`, \
                     which the plan also gives argument {index}",
                    target.registers[register].name
                ),
                None,
            ));
        }
    }
}

/// The plan number of a register seen at `width`: the sub-register of that width where one is declared, else
/// the whole register.
fn plan_number_at(target: &TargetRecord, register: usize, width: u32) -> Option<u32> {
    let record = target.register(register)?;
    if record.width == width {
        return Some(record.plan_number);
    }
    Some(
        record
            .subregisters
            .iter()
            .find(|sub| sub.width == width)
            .map_or(record.plan_number, |sub| sub.plan_number),
    )
}

/// The pure standard-convention plan of `signature` on `target`: every value where the target's standard
/// convention puts it (returns included, and a hidden pointer for a value returned indirectly), the target's
/// callee-saved registers and its stack alignment. `function` names the function in diagnostics.
///
/// A register location names the register at the piece's width; a stack location has the piece's size and
/// the largest alignment (up to the target's maximum) its offset has. Not every standard placement is a
/// valid plan string (a struct's padding leaves gaps between its pieces, which plans do not allow); callers
/// check the plan with [`crate::plan_validation::check_plan_records`] before they hand it on.
pub fn plan_standard(
    target: &TargetRecord,
    signature: &Signature,
    types: &TypeTable,
    function: &str,
) -> Result<PlannedFunction, PlanningError> {
    if signature.variadic {
        return Err(PlanningError::StandardVariadic {
            function: function.to_string(),
        });
    }
    let assignments = standard_assignments(target, signature, types)?;
    let maximum = u64::from(target.abi.stack_max_alignment.max(1));
    let mut returns = Vec::new();
    let mut arguments = Vec::new();
    for assignment in &assignments {
        let (ty, value_index, byval) = match assignment.value {
            ValueRef::Return => (&signature.return_type, 0, false),
            ValueRef::Argument(index) => {
                let Some(parameter) = signature.parameters.get(index as usize) else {
                    continue;
                };
                (&parameter.ty, index, parameter.attributes.byval.is_some())
            }
        };
        let (_, value_alignment) = value_size(target, ty, types)?;
        let flags = match (assignment.indirect, byval) {
            (true, true) => LOCATION_INDIRECT | LOCATION_BYVAL,
            (true, false) => LOCATION_INDIRECT,
            (false, _) => 0,
        };
        for piece in &assignment.pieces {
            let offset = u32::try_from(piece.offset).map_err(|_| PlanningError::Oversized)?;
            let size = u32::try_from(piece.size).map_err(|_| PlanningError::Oversized)?;
            let location = match piece.place {
                Place::Register { register, width } => Location {
                    kind: LocationKind::Register,
                    value_index,
                    piece_offset: offset,
                    size,
                    alignment: value_alignment.min(size.max(1).next_power_of_two()),
                    register: plan_number_at(target, register, width).unwrap_or(0),
                    stack_offset: 0,
                    flags,
                },
                Place::Stack {
                    offset: stack_offset, ..
                } => {
                    let alignment = if stack_offset == 0 {
                        maximum
                    } else {
                        (1u64 << stack_offset.trailing_zeros()).min(maximum)
                    };
                    Location {
                        kind: LocationKind::Stack,
                        value_index,
                        piece_offset: offset,
                        size,
                        alignment: u32::try_from(alignment).map_err(|_| PlanningError::Oversized)?,
                        register: 0,
                        stack_offset: u32::try_from(stack_offset).map_err(|_| PlanningError::Oversized)?,
                        flags,
                    }
                }
            };
            match assignment.value {
                ValueRef::Return => returns.push(location),
                ValueRef::Argument(_) => arguments.push(location),
            }
        }
    }
    let callee_saved = target
        .callee_saved
        .iter()
        .filter_map(|view| plan_number_at(target, view.register, view.width))
        .collect();
    let plan = Plan {
        schema: target.schema_digest.to_string(),
        target: PlanId::from(target.target_id),
        convention: PlanId::from(target.convention_id),
        stack_alignment: u64::from(target.stack_alignment),
        returns,
        arguments,
        callee_saved,
    };
    Ok(PlannedFunction {
        plan,
        assignments,
        notes: Vec::new(),
    })
}

/// NeverC's textual check: the first `csr` segment against the first `args`, `gpr`, `xmm`, `ret` and
/// `ret_xmm` segments, case-insensitively (the aliases `arg_gpr`, `fpr`, `ret_gpr`, ... are not checked).
fn csr_conflicts(spec: &Spec<'_>) -> bool {
    let first = |key: &str| {
        spec.segments
            .iter()
            .find(|segment| segment.key.text.eq_ignore_ascii_case(key))
    };
    let Some(csr) = first("csr") else { return false };
    ["args", "gpr", "xmm", "ret", "ret_xmm"]
        .into_iter()
        .filter_map(first)
        .any(|segment| {
            segment
                .items
                .iter()
                .any(|item| csr.items.iter().any(|saved| saved.text.eq_ignore_ascii_case(item.text)))
        })
}

/// Where every value goes: the plan's locations in order, and the standard convention for the rest, with
/// the registers and stack the plan took already allocated.
pub fn assign(
    target: &TargetRecord,
    plan: &Plan,
    signature: &Signature,
    types: &TypeTable,
) -> Result<Vec<ValueAssignment>, PlanningError> {
    // Whatever the plan says, a value the target cannot return is refused, as the standard convention refuses it.
    check_returnable(target, &signature.return_type, types)?;
    let mut state = AbiState::new(target);
    let mut assignments = Vec::new();
    let plan_place = |location: &Location| match location.kind {
        LocationKind::Register => {
            let resolved = target.register_by_number(location.register);
            resolved.map(|resolved| Place::Register {
                register: resolved.register,
                width: resolved.width,
            })
        }
        LocationKind::Stack => Some(Place::Stack {
            offset: u64::from(location.stack_offset),
            size: u64::from(location.size),
        }),
    };
    let return_pieces: Vec<&Location> = plan
        .returns
        .iter()
        .filter(|location| location.value_index == 0)
        .collect();
    let single = return_pieces.len() == 1;
    let mut placed_return = Vec::new();
    for location in &return_pieces {
        let Some(place) = plan_place(location) else { continue };
        // One piece is seen at the width of the returned value; a value in several pieces at the width each
        // piece's register number names.
        let place = match place {
            Place::Register { register, .. } if single => Place::Register {
                register,
                width: value_width(&signature.return_type, target).min(target.registers[register].width),
            },
            other => other,
        };
        placed_return.push(Piece {
            place,
            offset: u64::from(location.piece_offset),
            size: u64::from(location.size),
        });
    }
    if placed_return.is_empty() {
        if let Some(assignment) = standard_return(target, &signature.return_type, types)? {
            state.withhold_hidden_pointer(&assignment);
            assignments.push(assignment);
        }
    } else {
        let returned = ValueAssignment {
            value: ValueRef::Return,
            pieces: placed_return,
            indirect: return_pieces
                .iter()
                .any(|location| location.flags & LOCATION_INDIRECT != 0),
            decider: Decider::Plan,
        };
        state.withhold_hidden_pointer(&returned);
        assignments.push(returned);
    }
    for location in &plan.arguments {
        if let Some(Place::Register { register, .. }) = plan_place(location) {
            state.used.insert(register);
        }
    }
    // The plan's pieces by value, in plan order within a value (a stable sort), walked once: looking the
    // pieces of each parameter up in the whole list would take quadratic time.
    let mut by_value: Vec<&Location> = plan.arguments.iter().collect();
    by_value.sort_by_key(|location| location.value_index);
    let mut next_piece = 0;
    for (index, parameter) in signature.parameters.iter().enumerate() {
        let index = index as u32;
        while next_piece < by_value.len() && by_value[next_piece].value_index < index {
            next_piece += 1;
        }
        let first_piece = next_piece;
        while next_piece < by_value.len() && by_value[next_piece].value_index == index {
            next_piece += 1;
        }
        let pieces = &by_value[first_piece..next_piece];
        if pieces.is_empty() {
            assignments.push(state.assign_argument(index, parameter, types)?);
            continue;
        }
        let mut placed = Vec::new();
        for location in pieces {
            let Some(place) = plan_place(location) else { continue };
            let place = match place {
                Place::Register { register, .. } => Place::Register {
                    register,
                    width: value_width(&parameter.ty, target).min(target.registers[register].width),
                },
                Place::Stack { offset, size } => {
                    if offset < state.stack_size {
                        return Err(PlanningError::StackConflict {
                            index,
                            offset: location.stack_offset,
                        });
                    }
                    state.stack_size = offset + size;
                    Place::Stack { offset, size }
                }
            };
            placed.push(Piece {
                place,
                offset: u64::from(location.piece_offset),
                size: u64::from(location.size),
            });
        }
        let indirect = pieces.iter().any(|location| location.flags & LOCATION_INDIRECT != 0);
        assignments.push(ValueAssignment {
            value: ValueRef::Argument(index),
            pieces: placed,
            indirect,
            decider: Decider::Plan,
        });
    }
    Ok(assignments)
}
