//! Checks of a plan against the current target (NeverC's four hard errors) and the record checks of every
//! location list. Nothing is accepted silently: the first violated rule is reported with NeverC's text.

use crate::plan::{LOCATION_INDIRECT, Location, LocationKind, Plan, PlanId};
use neverc_tables::TargetRecord;

/// Most locations a list may hold.
pub const MAX_LOCATIONS: usize = 128;
/// Most callee-saved registers a plan may list.
pub const MAX_CALLEE_SAVED: usize = 256;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanRejection {
    #[error("NeverC calling convention plan belongs to a foreign target schema")]
    ForeignSchema,
    #[error("NeverC calling convention plan has a foreign target ID")]
    ForeignTarget,
    #[error("NeverC calling convention plan has a foreign convention ID")]
    ForeignConvention,
    /// A record check failed; the text is NeverC's detail (such as `argument stack locations overlap`).
    #[error("{0}")]
    Invalid(String),
}

/// Byte sizes (`ceil(bits / 8)`) of the values a plan describes, when the signature is known.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValueSizes {
    /// One entry for a non-void return, none for void.
    pub returns: Vec<u32>,
    pub arguments: Vec<u32>,
}

/// The plan was written for this target: same schema digest, target id and convention id.
pub fn check_plan_identity(plan: &Plan, target: &TargetRecord) -> Result<(), PlanRejection> {
    if plan.schema != target.schema_digest {
        return Err(PlanRejection::ForeignSchema);
    }
    if plan.target != PlanId::from(target.target_id) {
        return Err(PlanRejection::ForeignTarget);
    }
    if plan.convention != PlanId::from(target.convention_id) {
        return Err(PlanRejection::ForeignConvention);
    }
    Ok(())
}

/// Identity, then every record check.
pub fn validate_plan(plan: &Plan, target: &TargetRecord, values: Option<&ValueSizes>) -> Result<(), PlanRejection> {
    check_plan_identity(plan, target)?;
    check_plan_records(plan, target, values)
}

fn invalid(text: String) -> PlanRejection {
    PlanRejection::Invalid(text)
}

/// The record checks, which depend on the target's registers (and on value sizes where given).
pub fn check_plan_records(
    plan: &Plan,
    target: &TargetRecord,
    values: Option<&ValueSizes>,
) -> Result<(), PlanRejection> {
    let bits = u64::from(target.stack_alignment) * 8;
    let plan_bits = plan.stack_alignment.saturating_mul(8);
    if plan_bits > bits || bits % plan_bits != 0 {
        return Err(invalid("stack alignment is incompatible with the target".into()));
    }
    let returns = check_list(
        "return",
        &plan.returns,
        target,
        values.map(|values| values.returns.as_slice()),
    )?;
    let arguments = check_list(
        "argument",
        &plan.arguments,
        target,
        values.map(|values| values.arguments.as_slice()),
    )?;
    if plan.callee_saved.len() > MAX_CALLEE_SAVED {
        return Err(invalid("callee-saved register array is invalid".into()));
    }
    let mut saved: Vec<usize> = Vec::with_capacity(plan.callee_saved.len());
    for number in &plan.callee_saved {
        let Some(register) = target.register_by_number(*number) else {
            return Err(invalid("callee-saved register is not in the target schema".into()));
        };
        if saved.contains(&register.register) {
            return Err(invalid("callee-saved register is duplicated".into()));
        }
        saved.push(register.register);
        if returns.contains(&register.register) || arguments.contains(&register.register) {
            return Err(invalid(
                "callee-saved register overlaps an argument or return register".into(),
            ));
        }
    }
    Ok(())
}

/// Checks one list; returns the physical registers it uses (lists are short: at most 128 locations).
fn check_list(
    label: &str,
    locations: &[Location],
    target: &TargetRecord,
    sizes: Option<&[u32]>,
) -> Result<Vec<usize>, PlanRejection> {
    if locations.len() > MAX_LOCATIONS {
        return Err(invalid(format!("{label} array is invalid")));
    }
    let mut registers: Vec<usize> = Vec::with_capacity(locations.len());
    let mut stack_ranges: Vec<(u64, u64)> = Vec::new();
    for location in locations {
        if let Some(sizes) = sizes
            && location.value_index as usize >= sizes.len()
        {
            return Err(invalid(format!("{label} location has an invalid value index")));
        }
        match location.kind {
            LocationKind::Register => {
                let Some(register) = target.register_by_number(location.register) else {
                    return Err(invalid(format!(
                        "{label} register location is not in the target schema"
                    )));
                };
                if registers.contains(&register.register) {
                    return Err(invalid(format!("{label} locations reuse a physical register")));
                }
                registers.push(register.register);
            }
            LocationKind::Stack => {
                if label == "return" {
                    return Err(invalid("return values cannot use a stack result location".into()));
                }
                if location.stack_offset % location.alignment != 0 {
                    return Err(invalid(format!("{label} stack location is misaligned")));
                }
                let range = (
                    u64::from(location.stack_offset),
                    u64::from(location.stack_offset) + u64::from(location.size),
                );
                if stack_ranges.iter().any(|other| other.0 < range.1 && range.0 < other.1) {
                    return Err(invalid(format!("{label} stack locations overlap")));
                }
                stack_ranges.push(range);
            }
        }
    }
    // Per value (first occurrence of its index): all pieces indirect or all direct, and the direct ones
    // tile [0, size) exactly. Lists are short, so this walks them instead of allocating.
    for (position, first) in locations.iter().enumerate() {
        let index = first.value_index;
        if locations[..position].iter().any(|earlier| earlier.value_index == index) {
            continue;
        }
        let pieces = || {
            locations[position..]
                .iter()
                .filter(move |location| location.value_index == index)
        };
        let count = pieces().count();
        let indirect = pieces()
            .filter(|location| location.flags & LOCATION_INDIRECT != 0)
            .count();
        if indirect != 0 && indirect != count {
            return Err(invalid(format!("{label} value mixes indirect and direct pieces")));
        }
        if indirect != 0 {
            continue;
        }
        let size = sizes
            .and_then(|sizes| sizes.get(index as usize).copied())
            .map(u64::from);
        // A value passed whole in one stack slot may have a slot larger than itself: the built-in planner
        // (NeverC's rule) rounds slots up to 8 bytes, so a plugin planning as it does must be accepted too.
        let padded_slot = count == 1 && first.kind == LocationKind::Stack && first.piece_offset == 0;
        if let Some(size) = size
            && !padded_slot
            && pieces().any(|piece| u64::from(piece.piece_offset) + u64::from(piece.size) > size)
        {
            return Err(invalid(format!("{label} piece exceeds its value")));
        }
        let mut covered = 0u64;
        for _ in 0..count {
            let Some(next) = pieces().find(|piece| u64::from(piece.piece_offset) == covered) else {
                return Err(invalid(format!("{label} value pieces overlap or leave a gap")));
            };
            covered += u64::from(next.size);
        }
        if pieces().filter(|piece| u64::from(piece.piece_offset) < covered).count() != count {
            return Err(invalid(format!("{label} value pieces overlap or leave a gap")));
        }
        if let Some(size) = size
            && covered < size
        {
            return Err(invalid(format!("{label} does not cover a value")));
        }
    }
    Ok(registers)
}
