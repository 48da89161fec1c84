#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `plan_standard`: the pure standard-ABI plan says what `standard_assignments` says, and read back through
//! `assign` (as every plan is) it places every value in the same registers and stack slots.

use neverc_cc::assignment::{Place, ValueAssignment};
use neverc_cc::layout::TypeTable;
use neverc_cc::plan_validation::{ValueSizes, check_plan_records};
use neverc_cc::planner::{assign, plan_standard};
use neverc_cc::signature::{IrType, Signature};
use neverc_cc::standard_abi::standard_assignments;
use neverc_tables::{BUNDLED_TARGETS, TargetRecord};
use neverc_test_support::Rng;

const SEED: u64 = 0x5354_4441_4249_0002;
const SIGNATURES: usize = 2000;
const PARAMETERS: &[&str] = &[
    "i8",
    "i16",
    "i32",
    "i64",
    "ptr",
    "i128",
    "i256",
    "half",
    "float",
    "double",
    "fp128",
    "<2 x float>",
    "<4 x float>",
    "<8 x float>",
    "[2 x double]",
    "[4 x float]",
    "[2 x i64]",
    "[5 x float]",
    "[9 x double]",
    "[3 x half]",
    "[3 x i32]",
    "[2 x i128]",
    "[2 x <4 x float>]",
    "[2 x [2 x i64]]",
    "ptr byval({ i64, i64, i64 }) align 8",
];
const RETURNS: &[&str] = &[
    "void",
    "i32",
    "i64",
    "i128",
    "i256",
    "double",
    "<4 x float>",
    "{ i64, i64, i64 }",
    "{ i64, i64, i64, i64 }",
    "{ i64, double }",
    "[9 x i64]",
    "[3 x double]",
    "[5 x float]",
    "[3 x i32]",
    "[1 x i128]",
];

/// One value's pieces (offset, size, place) and whether they hold its address.
type Placed = (String, Vec<(u64, u64, String)>, bool);

/// Places only: who decided and the register widths may differ between the two readings.
fn places(assignments: &[ValueAssignment]) -> Vec<Placed> {
    let mut rows: Vec<_> = assignments
        .iter()
        .map(|assignment| {
            let pieces = assignment
                .pieces
                .iter()
                .map(|piece| {
                    let place = match piece.place {
                        Place::Register { register, .. } => format!("r{register}"),
                        Place::Stack { offset, .. } => format!("s{offset}"),
                    };
                    (piece.offset, piece.size, place)
                })
                .collect();
            (format!("{:?}", assignment.value), pieces, assignment.indirect)
        })
        .collect();
    rows.sort();
    rows
}

fn sizes(target: &TargetRecord, signature: &Signature) -> ValueSizes {
    let size = |ty: &IrType| {
        let layout = neverc_cc::layout::layout_of(ty, u64::from(target.pointer_width / 8), &TypeTable::new()).unwrap();
        u32::try_from(layout.store_size).unwrap()
    };
    ValueSizes {
        returns: if signature.return_type == IrType::Void {
            Vec::new()
        } else {
            vec![size(&signature.return_type)]
        },
        arguments: signature
            .parameters
            .iter()
            .map(|parameter| size(&parameter.ty))
            .collect(),
    }
}

#[test]
fn the_standard_plan_reads_back_as_the_standard_placement() {
    let mut rng = Rng::new(SEED);
    let mut valid = 0;
    for _ in 0..SIGNATURES {
        let count = rng.below(12);
        let parameters: Vec<&str> = (0..count).map(|_| PARAMETERS[rng.below(PARAMETERS.len())]).collect();
        let ret = RETURNS[rng.below(RETURNS.len())];
        let text = format!("{ret} ({})", parameters.join(", "));
        let signature = Signature::parse(&text).unwrap();
        for target in BUNDLED_TARGETS.iter().copied() {
            let types = TypeTable::new();
            let standard = standard_assignments(target, &signature, &types).unwrap();
            let planned = plan_standard(target, &signature, &types, "f").unwrap();
            assert_eq!(
                places(&planned.assignments),
                places(&standard),
                "{} {text}",
                target.name
            );
            assert_eq!(planned.plan.stack_alignment, u64::from(target.stack_alignment));
            assert_eq!(planned.plan.callee_saved.len(), target.callee_saved.len());
            if check_plan_records(&planned.plan, target, Some(&sizes(target, &signature))).is_err() {
                continue;
            }
            valid += 1;
            let read_back = assign(target, &planned.plan, &signature, &types).unwrap();
            assert_eq!(
                places(&read_back),
                places(&standard),
                "{} {text}: {}",
                target.name,
                planned.plan
            );
        }
    }
    // Without padded structs every standard placement is a valid plan.
    assert!(valid == SIGNATURES * BUNDLED_TARGETS.len(), "only {valid} valid plans");
}

#[test]
fn an_indirect_return_withholds_its_register_from_the_arguments_where_it_is_one() {
    let signature = Signature::parse("[9 x i64] (i64, i64)").unwrap();
    for target in BUNDLED_TARGETS.iter().copied() {
        let standard = standard_assignments(target, &signature, &TypeTable::new()).unwrap();
        let returned = &standard[0];
        assert!(returned.indirect, "{}", target.name);
        let Place::Register { register: hidden, .. } = returned.pieces[0].place else {
            panic!("{}: the hidden pointer is not in a register", target.name);
        };
        assert_eq!(hidden, target.abi.sret_register, "{}", target.name);
        for argument in &standard[1..] {
            for piece in &argument.pieces {
                assert_ne!(
                    piece.place, returned.pieces[0].place,
                    "{}: an argument shares the hidden pointer's register",
                    target.name
                );
                if let Place::Register { register, .. } = piece.place {
                    assert_ne!(register, hidden, "{}", target.name);
                }
            }
        }
    }
}

#[test]
fn a_spec_that_gives_the_hidden_pointer_register_to_an_argument_is_warned_about() {
    let target = neverc_tables::target_by_name("x86_64").unwrap();
    let signature = Signature::parse("{ i64, i64, i64, i64 } (i64, i64)").unwrap();
    let warned = |spec: &str| {
        neverc_cc::planner::plan_from_spec(target, spec, &signature, &TypeTable::new(), "f")
            .unwrap()
            .notes
            .iter()
            .any(|note| note.message.contains("hidden pointer in `rdi`") && note.message.contains("argument 0"))
    };
    assert!(warned("gpr:rdi,rsi;ret:rax"));
    assert!(!warned("gpr:rcx,rdx;ret:rax"));
}

/// LLVM returns at most two register pieces on RISC-V (`[abi.rules] max_return_registers`): a return that the
/// return registers could hold in more (`fa0`, `fa1` and then `a0`, since floating-point values fall back to
/// general registers) goes through the hidden pointer in `a0`, as llc-14 returns it; two pieces stay in registers.
#[test]
fn riscv64_returns_more_than_two_register_pieces_through_the_hidden_pointer() {
    let target = neverc_tables::target_by_name("riscv64").unwrap();
    let register = |name: &str| target.resolve_register(name).unwrap().register;
    let returned = |text: &str| {
        let signature = Signature::parse(&format!("{text} ()")).unwrap();
        neverc_cc::standard_abi::standard_return(target, &signature.return_type, &TypeTable::new())
            .unwrap()
            .unwrap()
    };
    for text in [
        "[3 x float]",
        "[4 x double]",
        "{ double, i64, i64 }",
        "{ i64, i64, double }",
    ] {
        let value = returned(text);
        assert!(value.indirect, "{text}: {value:?}");
        assert!(
            matches!(value.pieces[..], [piece] if piece.place == Place::Register { register: register("a0"), width: 64 }),
            "{text}: {value:?}"
        );
    }
    for (text, expected) in [
        ("[2 x double]", ["fa0", "fa1"]),
        ("{ i64, double }", ["a0", "fa0"]),
        ("i128", ["a0", "a1"]),
    ] {
        let value = returned(text);
        assert!(!value.indirect, "{text}: {value:?}");
        let registers: Vec<usize> = value
            .pieces
            .iter()
            .map(|piece| match piece.place {
                Place::Register { register, .. } => register,
                Place::Stack { .. } => panic!("{text}: a piece on the stack"),
            })
            .collect();
        assert_eq!(registers, expected.map(register), "{text}");
    }
}
