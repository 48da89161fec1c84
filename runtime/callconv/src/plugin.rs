//! Plugin calling conventions: NeverC's `PlanCallingConvention` callback as a Rust trait. A plugin plans a
//! function directly; the host checks what it returns with every record rule and reports NeverC's texts.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::layout::{TypeTable, layout_of};
use crate::plan::{Location, Plan, check_location};
use crate::plan_validation::{PlanRejection, ValueSizes, validate_plan};
use crate::planner::{PlannedFunction, PlanningError, assign};
use crate::signature::{IrType, Signature};
use neverc_tables::{Id128, TargetRecord};

/// NeverC's status code for a plugin that failed (used when a plugin panics).
pub const STATUS_PLUGIN_FAILURE: i32 = neverc_tables::status::StatusCode::PluginFailure.raw();
/// The status of a convention that leaves a function alone (it plans only the functions it selects).
pub const STATUS_DECLINED: i32 = neverc_tables::status::StatusCode::CapabilityUnavailable.raw();

/// What the host asks a plugin convention to plan.
#[derive(Clone, Copy, Debug)]
pub struct ConventionQuery<'a> {
    pub target: &'a TargetRecord,
    pub function: &'a str,
    pub signature: &'a Signature,
    /// Arguments before any `...`.
    pub required_arguments: usize,
    /// The function's own spec (its `neverc-callconv` attribute or annotation), if it has one.
    pub source_spec: Option<&'a str>,
    /// Whether the module defines the function (rather than only declaring it).
    pub definition: bool,
    /// The module's named types, which the signature may use.
    pub types: &'a TypeTable,
}

/// A calling convention provided by a plugin.
pub trait PlanCallingConvention {
    /// The convention's canonical name, used in diagnostics.
    fn name(&self) -> &str;
    /// The target the convention belongs to.
    fn target_id(&self) -> Id128;
    /// Whether the plugin provides the plan callback at all.
    fn has_plan_callback(&self) -> bool {
        true
    }
    /// Plans a function; an `Err` is the plugin's status code ([`STATUS_DECLINED`] when the convention leaves
    /// the function alone).
    fn plan(&self, query: &ConventionQuery<'_>) -> Result<Plan, i32>;
    /// Plans a function, or says why not: what the host calls. A convention that reads its plan from records
    /// it can find malformed (a plugin in C) overrides it to say so.
    fn plan_checked(&self, query: &ConventionQuery<'_>) -> Result<Plan, PlanFailure> {
        self.plan(query).map_err(PlanFailure::Status)
    }
}

/// Why a convention gave no plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanFailure {
    /// The plugin's status code.
    Status(i32),
    /// The plugin's records break the ABI: NeverC's detail text (`argument array is invalid`, ...).
    Invalid(String),
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PluginPlanError {
    #[error("target calling convention '{0}' has no plan callback")]
    NoCallback(String),
    #[error("target calling convention '{0}' belongs to another target")]
    ForeignTarget(String),
    #[error("target calling convention '{name}' plan callback failed with status {status}")]
    CallbackFailed { name: String, status: i32 },
    #[error("target calling convention '{name}' produced an invalid plan: {detail}")]
    InvalidPlan { name: String, detail: String },
    #[error(transparent)]
    Assignment(#[from] PlanningError),
}

fn value_size(target: &TargetRecord, ty: &IrType, types: &TypeTable) -> Option<u32> {
    let layout = layout_of(ty, u64::from(target.pointer_width / 8), types).ok()?;
    u32::try_from(layout.store_size).ok()
}

/// Asks `convention` for a plan, checks it against the target and the signature, and assigns the values it
/// does not cover by the standard convention. A convention that declines the function fails with
/// [`STATUS_DECLINED`].
pub fn plan_with_plugin(
    convention: &dyn PlanCallingConvention,
    target: &TargetRecord,
    signature: &Signature,
    types: &TypeTable,
    function: &str,
) -> Result<PlannedFunction, PluginPlanError> {
    let query = ConventionQuery {
        target,
        function,
        signature,
        required_arguments: signature.parameters.len(),
        source_spec: None,
        definition: true,
        types,
    };
    plan_query(convention, &query, types)?.ok_or_else(|| PluginPlanError::CallbackFailed {
        name: convention.name().to_string(),
        status: STATUS_DECLINED,
    })
}

/// Asks `convention` to plan the function `query` describes: `None` when the convention declines it, else
/// the plan, checked against the target and the signature with NeverC's texts (a variadic function the
/// convention plans is refused), and where every value goes.
pub fn plan_query(
    convention: &dyn PlanCallingConvention,
    query: &ConventionQuery<'_>,
    types: &TypeTable,
) -> Result<Option<PlannedFunction>, PluginPlanError> {
    let (target, signature) = (query.target, query.signature);
    let name = convention.name().to_string();
    if !convention.has_plan_callback() {
        return Err(PluginPlanError::NoCallback(name));
    }
    if convention.target_id() != target.target_id {
        return Err(PluginPlanError::ForeignTarget(name));
    }
    let invalid = |detail: String| PluginPlanError::InvalidPlan {
        name: name.clone(),
        detail,
    };
    let plan = match catch_unwind(AssertUnwindSafe(|| convention.plan_checked(query))) {
        Ok(Ok(plan)) => plan,
        Ok(Err(PlanFailure::Status(STATUS_DECLINED))) => return Ok(None),
        Ok(Err(PlanFailure::Status(status))) => return Err(PluginPlanError::CallbackFailed { name, status }),
        Ok(Err(PlanFailure::Invalid(detail))) => return Err(invalid(detail)),
        Err(_) => {
            return Err(PluginPlanError::CallbackFailed {
                name,
                status: STATUS_PLUGIN_FAILURE,
            });
        }
    };
    if signature.variadic {
        return Err(invalid("variadic functions are not supported".into()));
    }
    check_records(&plan).map_err(&invalid)?;
    let sizes = ValueSizes {
        returns: if signature.return_type == IrType::Void {
            Vec::new()
        } else {
            value_size(target, &signature.return_type, types).into_iter().collect()
        },
        arguments: signature
            .parameters
            .iter()
            .map(|parameter| value_size(target, &parameter.ty, types).unwrap_or(u32::MAX))
            .collect(),
    };
    validate_plan(&plan, target, Some(&sizes)).map_err(|rejection| match rejection {
        PlanRejection::Invalid(detail) => invalid(detail),
        other => invalid(other.to_string()),
    })?;
    let assignments = assign(target, &plan, signature, types)?;
    Ok(Some(PlannedFunction {
        plan,
        assignments,
        notes: Vec::new(),
    }))
}

/// The record checks a plan string's grammar makes, for a plan a plugin built: every location's own
/// fields, and a stack alignment that is a power of two.
fn check_records(plan: &Plan) -> Result<(), String> {
    if !plan.stack_alignment.is_power_of_two() || plan.stack_alignment > u64::from(u32::MAX) {
        return Err("stack alignment is incompatible with the target".into());
    }
    let labelled = |label: &'static str, locations: &[Location]| {
        locations
            .iter()
            .try_for_each(|location| check_location(location).map_err(|detail| format!("{label} {detail}")))
    };
    labelled("return", &plan.returns)?;
    labelled("argument", &plan.arguments)
}
