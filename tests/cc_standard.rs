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
