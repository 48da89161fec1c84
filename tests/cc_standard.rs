#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `neverc-spec cc plan --standard`: the pure standard-ABI plan of a signature, without a spec.

use std::process::Output;

use neverc_test_support::{repo, run_in, text};

fn run(args: &[&str]) -> Output {
    run_in(env!("CARGO_BIN_EXE_neverc-spec"), &repo(), args)
}

/// `cc plan --standard` for a signature on a target, as text.
fn standard_text(target: &str, sig: &str) -> Output {
    run(&["cc", "plan", "--standard", "--target", target, "--sig", sig])
}

/// The JSON report of `cc plan --standard` for a signature on a target.
fn standard(target: &str, sig: &str) -> serde_json::Value {
    let output = run(&[
        "cc",
        "plan",
        "--standard",
        "--target",
        target,
        "--sig",
        sig,
        "--format",
        "json",
    ]);
    assert!(output.status.success(), "{sig}: {}", text(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Every piece of a value as `place@offset`.
fn pieces(report: &serde_json::Value, value: &str) -> Vec<String> {
    let row = report["values"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["value"] == value)
        .unwrap_or_else(|| panic!("no {value} in {report}"));
    row["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|piece| format!("{}@{}", piece["place"].as_str().unwrap(), piece["offset"]))
        .collect()
}

fn indirect(report: &serde_json::Value, value: &str) -> bool {
    report["values"]
        .as_array()
        .unwrap()
        .iter()
        .any(|row| row["value"] == value && row["indirect"] == true)
}

#[test]
fn a_three_word_struct_is_returned_in_rax_rdx_rcx_as_llc_14_does() {
    let report = standard("x86_64", "{ i64, i64, i64 } (i32)");
    assert_eq!(report["source"], "standard");
    assert_eq!(pieces(&report, "return"), ["rax@0", "rdx@8", "rcx@16"]);
    assert!(!indirect(&report, "return"));
    assert_eq!(pieces(&report, "argument 0"), ["edi@0"]);
    assert_eq!(
        report["callee_saved"],
        serde_json::json!(["rbx", "rbp", "r12", "r13", "r14", "r15"])
    );
    assert_eq!(report["stack_alignment"], 16);
    assert!(report.get("plan_error").is_none(), "{report}");
    // The plan string is a valid plan for the signature.
    let plan = report["plan"].as_str().unwrap();
    let output = run(&[
        "cc",
        "validate",
        "--target",
        "x86_64",
        "--sig",
        "{ i64, i64, i64 } (i32)",
        plan,
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
}

#[test]
fn an_indirect_return_takes_rdi_from_the_arguments_on_x86_64_and_x8_on_aarch64() {
    let report = standard("x86_64", "i256 (i64, i32)");
    assert!(indirect(&report, "return"));
    assert_eq!(pieces(&report, "return"), ["rdi@0"]);
    assert_eq!(pieces(&report, "argument 0"), ["rsi@0"]);
    assert_eq!(pieces(&report, "argument 1"), ["edx@0"]);
    let report = standard("x86_64", "{ i64, i64, i64, i64 } ()");
    assert_eq!(pieces(&report, "return"), ["rdi@0"]);

    let report = standard("aarch64", "i256 (i64)");
    assert!(!indirect(&report, "return"));
    assert_eq!(pieces(&report, "return"), ["x0@0", "x1@8", "x2@16", "x3@24"]);
    let report = standard("aarch64", "[9 x i64] (i64)");
    assert!(indirect(&report, "return"));
    assert_eq!(pieces(&report, "return"), ["x8@0"]);
    assert_eq!(pieces(&report, "argument 0"), ["x0@0"]);
}

#[test]
fn the_text_report_names_the_callee_saved_registers_and_the_stack_alignment() {
    let output = standard_text("x86_64", "i64 (i64, double)");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.starts_with("neverc-cc-plan-v1;"), "{stdout}");
    assert!(stdout.contains("return       standard  rax"), "{stdout}");
    assert!(stdout.contains("argument 1   standard  xmm0"), "{stdout}");
    assert!(
        stdout.contains("callee-saved: rbx, rbp, r12, r13, r14, r15"),
        "{stdout}"
    );
    assert!(stdout.contains("stack alignment: 16"), "{stdout}");
}

#[test]
fn a_placement_that_is_no_valid_plan_is_printed_without_a_plan_string() {
    // The padding of `{ i8, i64 }` leaves a gap between its pieces, which a plan string cannot have.
    let report = standard("x86_64", "{ i8, i64 } ()");
    assert!(report["plan"].is_null(), "{report}");
    assert!(report["plan_error"].as_str().unwrap().contains("gap"), "{report}");
    assert_eq!(pieces(&report, "return"), ["eax@0", "rdx@8"]);
    let output = standard_text("x86_64", "{ i8, i64 } ()");
    assert!(output.status.success());
    assert!(
        text(&output.stdout).starts_with("no plan string:"),
        "{}",
        text(&output.stdout)
    );
}

#[test]
fn bad_requests_are_refused_with_a_message_and_no_panic() {
    let refused = |args: &[&str], code: i32, words: &[&str]| {
        let output = run(args);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        for word in words {
            assert!(stderr.contains(word), "{args:?}: `{word}` missing from {stderr}");
        }
    };
    let plan = |target: &'static str, sig: &'static str| ["cc", "plan", "--standard", "--target", target, "--sig", sig];
    refused(&plan("x86_64", "i32 (i32, ...)"), 1, &["variadic"]);
    refused(&plan("x86_64", "x86_fp80 ()"), 1, &["cannot return `x86_fp80`"]);
    refused(&plan("x86_64", "i32 (i32"), 1, &["invalid --sig"]);
    refused(&plan("aarch64", "i32 (%struct.Q)"), 1, &["not defined"]);
    refused(&plan("x86_64", "i8388607 (i8388607)"), 1, &["pieces"]);
    refused(&plan("x86_64", "void ([4294967295 x i32])"), 1, &["pieces"]);
    refused(&plan("nowhere", "i32 ()"), 1, &["nowhere"]);
    refused(
        &[
            "cc",
            "plan",
            "--standard",
            "--spec",
            "gpr:rcx",
            "--target",
            "x86_64",
            "--sig",
            "i32 ()",
        ],
        2,
        &["cannot be used with"],
    );
}

/// Issue 24: one rule for a returned `x86_fp80` on x86-64, which llc-14 returns in the x87 register `st0` (two of
/// them in `st0` and `st1`) that the target does not declare. The standard convention, a spec naming a float
/// return register (`ret_xmm:xmm1`) or an integer one (`ret:xmm0`), and `cc validate --sig` of a plan that
/// returns it in `xmm1` all refuse it, inside an aggregate too; an `x86_fp80` argument still goes where a spec
/// puts it, since an adapter can move it to the stack slot the standard convention gives it.
#[test]
fn issue_24_an_x86_fp80_return_is_refused_by_the_standard_convention_every_spec_and_validate() {
    let spec_plan =
        |spec: &'static str, sig: &'static str| ["cc", "plan", "--target", "x86_64", "--spec", spec, "--sig", sig];
    let refused = |args: &[&str]| {
        let output = run(args);
        let stderr = text(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?} is accepted: {}",
            text(&output.stdout)
        );
        assert!(
            stderr.contains("x86_64 cannot return `") && stderr.contains("`x86_fp80` is passed only on the stack"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    };
    for sig in ["x86_fp80 ()", "[1 x x86_fp80] (i32)", "{ i64, x86_fp80 } ()"] {
        refused(&["cc", "plan", "--standard", "--target", "x86_64", "--sig", sig]);
        for spec in ["ret_xmm:xmm1", "ret:xmm0", "gpr:rcx;ret:rax"] {
            refused(&spec_plan(spec, sig));
        }
    }
    // The plan `ret_xmm:xmm1` gives a `double` return, with the size of an `x86_fp80`: valid records, but no
    // plan can return an `x86_fp80`.
    let output = run(&spec_plan("ret_xmm:xmm1", "double ()"));
    assert!(output.status.success(), "{}", text(&output.stderr));
    let plan = text(&output.stdout)
        .lines()
        .next()
        .unwrap()
        .replace("returns=r,0,0,8,8,", "returns=r,0,0,10,16,");
    assert!(plan.contains("returns=r,0,0,10,16,"), "{plan}");
    let output = run(&["cc", "validate", "--target", "x86_64", &plan]);
    assert!(
        output.status.success(),
        "without a signature the records are valid: {}",
        text(&output.stderr)
    );
    let validate = ["cc", "validate", "--target", "x86_64", "--sig", "x86_fp80 ()", &plan];
    refused(&validate);
    let output = run(&[&validate[..], &["--format", "json"]].concat());
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["valid"], false, "{report}");
    assert!(
        report["error"].as_str().unwrap().contains("cannot return `x86_fp80`"),
        "{report}"
    );

    // Arguments: the standard convention passes an `x86_fp80` on the stack, a spec may name a register.
    let report = standard("x86_64", "void (x86_fp80)");
    assert_eq!(pieces(&report, "argument 0"), ["stack+0@0"]);
    let output = run(&spec_plan("xmm:xmm3", "void (x86_fp80)"));
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("argument 0   plan      xmm3"),
        "{}",
        text(&output.stdout)
    );
}
