#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A plugin convention plans functions directly; the host validates what it returns with NeverC's texts
//! (the equivalents of NeverC's PluginCallingConventionTest, plus the other failure paths).

use neverc_cc::assignment::{Decider, ValueRef};
use neverc_cc::layout::TypeTable;
use neverc_cc::plan::{Location, LocationKind, Plan, PlanId};
use neverc_cc::plugin::{ConventionQuery, PlanCallingConvention, PluginPlanError, plan_with_plugin};
use neverc_cc::signature::Signature;
use neverc_tables::target_by_name;
use neverc_tables::{Id128, TargetRecord};

/// A convention for aarch64 that puts argument 0 in a register and argument 1 on the stack, with
/// knobs to break the plan in the ways NeverC's host tests do.
struct TestConvention {
    argument_register: u32,
    stack_offset: u32,
    target: Id128,
    fail: Option<i32>,
    panic: bool,
}

fn register(target: &TargetRecord, name: &str) -> u32 {
    target.resolve_register(name).unwrap().plan_number
}

impl PlanCallingConvention for TestConvention {
    fn name(&self) -> &str {
        "test-cc"
    }

    fn target_id(&self) -> Id128 {
        self.target
    }

    fn plan(&self, query: &ConventionQuery<'_>) -> Result<Plan, i32> {
        if let Some(status) = self.fail {
            return Err(status);
        }
        assert!(!self.panic, "the plugin fell over");
        let target = query.target;
        let location = |kind, value_index, size, register, stack_offset| Location {
            kind,
            value_index,
            piece_offset: 0,
            size,
            alignment: if kind == LocationKind::Stack { 8 } else { size },
            register,
            stack_offset,
            flags: 0,
        };
        Ok(Plan {
            schema: target.schema_digest.to_string(),
            target: PlanId::from(target.target_id),
            convention: PlanId::from(target.convention_id),
            stack_alignment: 16,
            returns: vec![location(LocationKind::Register, 0, 4, register(target, "x10"), 0)],
            arguments: vec![
                location(LocationKind::Register, 0, 4, self.argument_register, 0),
                Location {
                    size: 8,
                    ..location(LocationKind::Stack, 1, 8, 0, self.stack_offset)
                },
            ],
            callee_saved: vec![register(target, "x20")],
        })
    }
}

fn convention() -> TestConvention {
    let arm = target_by_name("aarch64").unwrap();
    TestConvention {
        argument_register: register(arm, "x11"),
        stack_offset: 0,
        target: arm.target_id,
        fail: None,
        panic: false,
    }
}

fn run(convention: &TestConvention, signature: &str) -> Result<neverc_cc::planner::PlannedFunction, PluginPlanError> {
    let arm = target_by_name("aarch64").unwrap();
    plan_with_plugin(
        convention,
        arm,
        &Signature::parse(signature).unwrap(),
        &TypeTable::new(),
        "f",
    )
}

#[test]
fn a_valid_register_and_stack_plan_is_accepted_and_the_rest_falls_back() {
    let planned = run(&convention(), "i32 (i32, i64, double)").unwrap();
    let arm = target_by_name("aarch64").unwrap();
    let third = planned
        .assignments
        .iter()
        .find(|a| a.value == ValueRef::Argument(2))
        .unwrap();
    assert_eq!(third.decider, Decider::Standard);
    assert_eq!(third.pieces[0].place.describe(arm), "d0");
    let first = planned
        .assignments
        .iter()
        .find(|a| a.value == ValueRef::Argument(0))
        .unwrap();
    assert_eq!(first.pieces[0].place.describe(arm), "w11");
}

#[test]
fn a_foreign_register_is_not_in_the_target_schema() {
    let error = run(
        &TestConvention {
            argument_register: 999,
            ..convention()
        },
        "i32 (i32, i64)",
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "target calling convention 'test-cc' produced an invalid plan: argument register location is not in the target schema"
    );
}

#[test]
fn a_misaligned_stack_slot_is_rejected() {
    let error = run(
        &TestConvention {
            stack_offset: 3,
            ..convention()
        },
        "i32 (i32, i64)",
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "target calling convention 'test-cc' produced an invalid plan: argument stack location is misaligned"
    );
}

#[test]
fn a_plan_for_fewer_values_than_it_describes_is_rejected() {
    let error = run(&convention(), "i32 (i32)").unwrap_err();
    assert_eq!(
        error.to_string(),
        "target calling convention 'test-cc' produced an invalid plan: argument location has an invalid value index"
    );
}

#[test]
fn other_targets_failures_panics_and_variadics_are_reported() {
    let x86 = target_by_name("x86_64").unwrap();
    let error = run(
        &TestConvention {
            target: x86.target_id,
            ..convention()
        },
        "i32 (i32, i64)",
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "target calling convention 'test-cc' belongs to another target"
    );
    let error = run(
        &TestConvention {
            fail: Some(18),
            ..convention()
        },
        "i32 (i32, i64)",
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "target calling convention 'test-cc' plan callback failed with status 18"
    );
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let error = run(
        &TestConvention {
            panic: true,
            ..convention()
        },
        "i32 (i32, i64)",
    )
    .unwrap_err();
    std::panic::set_hook(previous);
    assert_eq!(
        error.to_string(),
        "target calling convention 'test-cc' plan callback failed with status 20"
    );
    let error = run(&convention(), "i32 (i32, ...)").unwrap_err();
    assert_eq!(
        error.to_string(),
        "target calling convention 'test-cc' produced an invalid plan: variadic functions are not supported"
    );
}
