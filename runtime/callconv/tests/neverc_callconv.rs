#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Plan-level equivalents of NeverC's 26 custom-calling-convention tests (CustomCallConvTests.cpp).
//!
//! NeverC compiles small C functions with its plugin and greps the assembly; here the same functions, as
//! clang lowers them to IR signatures, are planned and the register/stack expectations of each test are
//! asserted on the plan and on the resulting assignment. Tests that need a module (attributes, call
//! sites, address-taken warnings) are covered by the materializer tests.

use neverc_cc::assignment::{Decider, Place, ValueAssignment, ValueRef, register_view_name};
use neverc_cc::layout::TypeTable;
use neverc_cc::plan::{LOCATION_BYVAL, LOCATION_INDIRECT, LocationKind, Plan};
use neverc_cc::plan_validation::{PlanRejection, ValueSizes, validate_plan};
use neverc_cc::planner::{CSR_CONFLICT_WARNING, NoteSeverity, PlannedFunction, PlanningError, plan_from_spec};
use neverc_cc::signature::{IrType, Signature};
use neverc_tables::TargetRecord;
use neverc_tables::target_by_name;

const ADD3: &str = "i32 (i32, i32, i32)";
const ADD3L: &str = "i64 (i64, i64, i64)";
const FMIX: &str = "float (float, float)";
const SPILL5: &str = "i32 (i32, i32, i32, i32, i32)";

fn x86() -> &'static TargetRecord {
    target_by_name("x86_64").unwrap()
}

fn arm() -> &'static TargetRecord {
    target_by_name("aarch64").unwrap()
}

fn types() -> TypeTable {
    let three_longs = IrType::Struct {
        packed: false,
        fields: vec![IrType::Integer(64); 3],
    };
    TypeTable::from([
        ("%struct.P".to_string(), three_longs.clone()),
        ("%struct.Q".to_string(), three_longs),
    ])
}

fn plan(target: &'static TargetRecord, spec: &str, signature: &str) -> PlannedFunction {
    let signature = Signature::parse(signature).unwrap();
    let planned = plan_from_spec(target, spec, &signature, &types(), "f").unwrap();
    // Every plan the planner writes is valid for its target and survives a round trip through its text.
    let text = planned.plan.serialize();
    let reparsed = Plan::parse(&text).unwrap();
    assert_eq!(reparsed, planned.plan);
    validate_plan(&reparsed, target, None).unwrap();
    planned
}

/// Where argument `index` went, as the assembly would name it: `ecx`, `r8d`, `w9`, `s5`, `stack+0`.
fn argument(target: &TargetRecord, planned: &PlannedFunction, index: u32) -> Vec<String> {
    let assignment = planned
        .assignments
        .iter()
        .find(|a| a.value == ValueRef::Argument(index))
        .unwrap();
    assignment
        .pieces
        .iter()
        .map(|piece| piece.place.describe(target))
        .collect()
}

fn return_place(target: &TargetRecord, planned: &PlannedFunction) -> Option<(String, Decider)> {
    planned
        .assignments
        .iter()
        .find(|a| a.value == ValueRef::Return)
        .map(|a: &ValueAssignment| (a.pieces[0].place.describe(target), a.decider))
}

#[test]
fn t01_pool_gpr_and_the_derived_plan_text() {
    let planned = plan(x86(), "gpr:rcx,rdx,r8;ret:rax", ADD3);
    assert_eq!(
        planned.plan.serialize(),
        "neverc-cc-plan-v1;schema=llvm-x86_64-unknown-linux-gnu;target=0:0;cc=0:0;stack=16;returns=r,0,0,4,4,51,0,0;arguments=r,0,0,4,4,54,0,0|r,1,0,4,4,56,0,0|r,2,0,4,4,119,0,0;callee-saved="
    );
    assert_eq!(argument(x86(), &planned, 0), ["ecx"]);
    assert_eq!(argument(x86(), &planned, 2), ["r8d"]);
}

#[test]
fn t02_pool_xmm() {
    let planned = plan(x86(), "gpr:rcx;xmm:xmm5,xmm4;ret:rax;ret_xmm:xmm0", FMIX);
    assert_eq!(argument(x86(), &planned, 0), ["xmm5"]);
    assert_eq!(argument(x86(), &planned, 1), ["xmm4"]);
    assert_eq!(return_place(x86(), &planned), Some(("xmm0".into(), Decider::Plan)));
}

#[test]
fn t03_positional_forces_stack() {
    let planned = plan(x86(), "args:rcx,stack,r8;ret:rax", ADD3);
    assert_eq!(argument(x86(), &planned, 1), ["stack+0"]);
    assert_eq!(argument(x86(), &planned, 2), ["r8d"]);
}

#[test]
fn t04_positional_all_stack() {
    let planned = plan(x86(), "args:stack,stack,stack", ADD3);
    let offsets: Vec<_> = (0..3).map(|i| argument(x86(), &planned, i)).collect();
    assert_eq!(offsets, [["stack+0"], ["stack+8"], ["stack+16"]]);
    // No return register in the spec: the return value follows the standard convention.
    assert_eq!(return_place(x86(), &planned), Some(("eax".into(), Decider::Standard)));
}

#[test]
fn t05_pool_exhaustion_spills() {
    let planned = plan(x86(), "gpr:rcx;ret:rax", ADD3);
    assert_eq!(argument(x86(), &planned, 0), ["ecx"]);
    assert_eq!(argument(x86(), &planned, 1), ["stack+0"]);
    assert_eq!(argument(x86(), &planned, 2), ["stack+8"]);
}

#[test]
fn t06_i64_uses_the_wide_register() {
    let planned = plan(x86(), "gpr:rcx,rdx,r8;ret:rax", ADD3L);
    assert_eq!(argument(x86(), &planned, 2), ["r8"]);
    assert_eq!(planned.plan.arguments[2].size, 8);
}

#[test]
fn t07_fallback_to_standard() {
    let signature = Signature::parse(ADD3).unwrap();
    let standard = neverc_cc::standard_abi::standard_assignments(x86(), &signature, &types()).unwrap();
    let first = standard.iter().find(|a| a.value == ValueRef::Argument(0)).unwrap();
    assert_eq!(first.pieces[0].place.describe(x86()), "edi");
    assert!(standard.iter().all(|a| a.decider == Decider::Standard));
}

#[test]
fn t08_struct_return_through_sret() {
    let planned = plan(
        x86(),
        "gpr:rcx,rdx,r8;ret:rax",
        "void (%struct.P* noalias sret(%struct.P) align 8 %agg.result, i64 %x)",
    );
    assert_eq!(argument(x86(), &planned, 0), ["rcx"]);
    assert_eq!(planned.plan.arguments[0].flags, LOCATION_INDIRECT);
    assert_eq!(argument(x86(), &planned, 1), ["rdx"]);
}

#[test]
fn t09_byval_aggregate_address_in_a_register() {
    let planned = plan(
        x86(),
        "gpr:rcx,rdx,r8;ret:rax",
        "void (%struct.Q* byval(%struct.Q) align 8)",
    );
    assert_eq!(argument(x86(), &planned, 0), ["rcx"]);
    assert_eq!(planned.plan.arguments[0].flags, LOCATION_INDIRECT | LOCATION_BYVAL);
}

#[test]
fn t10_aarch64_pool_gpr() {
    let planned = plan(arm(), "gpr:x9,x10,x11;ret:x0", ADD3);
    assert_eq!(argument(arm(), &planned, 0), ["w9"]);
    assert_eq!(argument(arm(), &planned, 2), ["w11"]);
}

#[test]
fn t11_aarch64_fpr() {
    let planned = plan(arm(), "gpr:x9;fpr:v5,v6;ret:x0;ret_fpr:v0", FMIX);
    assert_eq!(argument(arm(), &planned, 0), ["s5"]);
    assert_eq!(argument(arm(), &planned, 1), ["s6"]);
    assert_eq!(return_place(arm(), &planned), Some(("s0".into(), Decider::Plan)));
}

#[test]
fn t12_aarch64_positional_stack() {
    let planned = plan(arm(), "args:x9,stack,x11;ret:x0", ADD3);
    assert_eq!(argument(arm(), &planned, 0), ["w9"]);
    assert_eq!(argument(arm(), &planned, 1), ["stack+0"]);
    assert_eq!(argument(arm(), &planned, 2), ["w11"]);
}

#[test]
fn t13_aarch64_callee_saved_csr() {
    let planned = plan(arm(), "gpr:x9;ret:x0;csr:x28", "i32 (i32)");
    assert_eq!(argument(arm(), &planned, 0), ["w9"]);
    let x28 = arm().resolve_register("x28").unwrap().plan_number;
    assert_eq!(planned.plan.callee_saved, [x28]);
}

#[test]
fn t14_aarch64_mixed_specs_across_a_call() {
    let callee = plan(arm(), "gpr:x11;ret:x0", "i32 (i32)");
    let caller = plan(arm(), "gpr:x12,x13;ret:x0", "i32 (i32, i32)");
    assert_eq!(argument(arm(), &callee, 0), ["w11"]);
    assert_eq!(argument(arm(), &caller, 0), ["w12"]);
    assert_eq!(argument(arm(), &caller, 1), ["w13"]);
}

#[test]
fn t18_a_spec_materializes_to_a_versioned_plan_with_its_csr() {
    let planned = plan(x86(), "gpr:rcx,rdx,r8;ret:rax;csr:r12", ADD3);
    let text = planned.plan.serialize();
    assert!(text.starts_with("neverc-cc-plan-v1;schema="), "{text}");
    assert!(text.ends_with(";callee-saved=123"), "{text}");
}

#[test]
fn t19_a_malformed_plan_is_rejected() {
    let error = Plan::parse("not-a-plan").unwrap_err();
    assert!(error.to_string().contains("malformed NeverC calling convention plan"));
}

#[test]
fn t20_a_foreign_schema_plan_is_rejected() {
    let text = "neverc-cc-plan-v1;schema=foreign;target=0:0;cc=0:0;stack=16;returns=r,0,0,4,4,51,0,0;arguments=r,0,0,4,4,54,0,0;callee-saved=";
    let plan = Plan::parse(text).unwrap();
    let error = validate_plan(&plan, x86(), None).unwrap_err();
    assert_eq!(error, PlanRejection::ForeignSchema);
    assert!(error.to_string().contains("foreign target schema"));
    // The same plan for the right schema is accepted, and the other three hard errors are distinct.
    let ours = Plan::parse(&text.replace("schema=foreign", "schema=llvm-x86_64-unknown-linux-gnu")).unwrap();
    validate_plan(
        &ours,
        x86(),
        Some(&ValueSizes {
            returns: vec![4],
            arguments: vec![4],
        }),
    )
    .unwrap();
    let arm_plan = Plan {
        schema: arm().schema_digest.into(),
        ..ours.clone()
    };
    assert_eq!(validate_plan(&arm_plan, arm(), None), Err(PlanRejection::ForeignTarget));
}

#[test]
fn t21_callee_saved_csr_on_x86() {
    let planned = plan(x86(), "gpr:rcx;ret:rax;csr:r12", "i32 (i32)");
    assert_eq!(
        planned.plan.callee_saved,
        [x86().resolve_register("r12").unwrap().plan_number]
    );
    assert_eq!(argument(x86(), &planned, 0), ["ecx"]);
}

#[test]
fn t22_t23_variadic_functions_are_rejected_on_both_targets() {
    for (target, spec) in [(x86(), "gpr:rcx,rdx;ret:rax"), (arm(), "gpr:x9,x10;ret:x0")] {
        let signature = Signature::parse("i32 (i32, ...)").unwrap();
        let error = plan_from_spec(target, spec, &signature, &types(), "sum").unwrap_err();
        assert_eq!(error, PlanningError::Variadic { function: "sum".into() });
        assert_eq!(
            error.to_string(),
            "NeverC custom calling convention does not support variadic functions: 'sum'"
        );
    }
}

#[test]
fn t25_the_stack_pointer_is_skipped_with_a_note() {
    let planned = plan(x86(), "gpr:rsp,rcx;ret:rax", "i32 (i32)");
    assert_eq!(argument(x86(), &planned, 0), ["ecx"]);
    assert!(
        planned
            .notes
            .iter()
            .any(|note| note.message.contains("`rsp` is reserved") && note.span == Some(4..7))
    );
    let arm_planned = plan(arm(), "gpr:x31,sp,x29,x9;ret:x0", "i32 (i32)");
    assert_eq!(argument(arm(), &arm_planned, 0), ["w9"]);
}

#[test]
fn t26_a_csr_conflict_warns() {
    let planned = plan(x86(), "gpr:rcx;ret:rax;csr:rax", "i32 (i32)");
    assert!(
        planned
            .notes
            .iter()
            .any(|note| note.severity == NoteSeverity::Warning && note.message == CSR_CONFLICT_WARNING)
    );
    // The check is textual on the first segments only, like NeverC's: an alias key is not compared.
    let planned = plan(x86(), "arg_gpr:rcx;ret_gpr:rax;csr:rax", "i32 (i32)");
    assert!(!planned.notes.iter().any(|note| note.message == CSR_CONFLICT_WARNING));
    // And the plan itself rejects a callee-saved register that carries a value.
    let plan = Plan::parse("neverc-cc-plan-v1;schema=llvm-x86_64-unknown-linux-gnu;target=0:0;cc=0:0;stack=16;returns=r,0,0,4,4,51,0,0;arguments=r,0,0,4,4,54,0,0;callee-saved=22").unwrap();
    assert_eq!(
        validate_plan(&plan, x86(), None).unwrap_err().to_string(),
        "callee-saved register overlaps an argument or return register"
    );
}

#[test]
fn hardening_frame_pointer_warns_and_empty_specs_fail() {
    let planned = plan(x86(), "gpr:rbp;ret:rax", "i32 (i32)");
    assert_eq!(argument(x86(), &planned, 0), ["ebp"]);
    assert!(
        planned
            .notes
            .iter()
            .any(|note| note.severity == NoteSeverity::Warning && note.message.contains("frame pointer"))
    );
    let signature = Signature::parse("i32 (i32)").unwrap();
    assert_eq!(
        plan_from_spec(x86(), "csr:r12", &signature, &types(), "f").unwrap_err(),
        PlanningError::EmptySpec
    );
    assert_eq!(
        plan_from_spec(x86(), ";;", &signature, &types(), "f")
            .unwrap_err()
            .to_string(),
        "legacy NeverC calling convention spec is empty or malformed"
    );
}

#[test]
fn pool_and_positional_edge_cases() {
    // A register already used, a class mismatch and an index past the tokens all go to the stack.
    let planned = plan(x86(), "args:rcx,rcx,xmm0", SPILL5);
    assert_eq!(
        (0..5)
            .map(|i| argument(x86(), &planned, i)[0].clone())
            .collect::<Vec<_>>(),
        ["ecx", "stack+0", "stack+8", "stack+16", "stack+24"]
    );
    // Stack slots of 16-byte values are 16-byte aligned.
    let planned = plan(x86(), "args:stack,stack", "void (i64, <4 x float>)");
    assert_eq!(argument(x86(), &planned, 1), ["stack+16"]);
    assert_eq!(planned.plan.arguments[1].alignment, 16);
    assert!(planned.plan.arguments.iter().all(|l| l.kind == LocationKind::Stack));
    let riscv = target_by_name("riscv64").unwrap();
    let planned = plan(riscv, "gpr:a2,a3;fpr:fa5;ret:a0", "i32 (i32, double, i64)");
    assert_eq!(argument(riscv, &planned, 0), ["a2"]);
    assert_eq!(argument(riscv, &planned, 1), ["fa5"]);
    assert_eq!(argument(riscv, &planned, 2), ["a3"]);
    assert!(matches!(planned.assignments[0].pieces[0].place, Place::Register { .. }));
    assert_eq!(
        register_view_name(riscv, riscv.resolve_register("x12").unwrap().register, 32),
        "a2"
    );
}
