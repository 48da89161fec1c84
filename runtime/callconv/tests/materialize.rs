#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Materialization over real clang-14 output: NeverC's front-end, plan and hardening tests at module level,
//! and the promise that `llvm-as-14` accepts what we write and nothing else changes.

use std::path::{Path, PathBuf};
use std::process::Command;

use neverc_cc::materialize::{ADDRESS_TAKEN_WARNING, MaterializeError, MaterializeOptions, materialize};
use neverc_cc::plan::Plan;
use neverc_cc::plan_validation::validate_plan;
use neverc_tables::target_by_name;
use neverc_test_support::scratch;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cc")
        .join(name)
}

fn tool(name: &str) -> String {
    let found = Command::new(name)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(
        found,
        "`{name}` is missing: run scripts/test.sh, which installs clang-14 and llvm-14"
    );
    name.to_string()
}

/// A fresh directory for every call: the tests run in parallel and each compiles and assembles several times.
fn unique_scratch(name: &str) -> PathBuf {
    static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let unique = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    scratch!("neverc-materialize-{name}-{unique}")
}

/// `clang-14 -S -emit-llvm -O2` of a C source (from a fixture file or inline text).
fn compile(source: &str, triple: &str, extra: &[&str]) -> String {
    let dir = unique_scratch("clang");
    let input = if source.ends_with(".c") {
        fixture(source)
    } else {
        let path = dir.join(format!("inline{}.c", source.len()));
        std::fs::write(&path, source).unwrap();
        path
    };
    let output = dir.join("out.ll");
    let status = Command::new(tool("clang-14"))
        .args(["-S", "-emit-llvm", "-O2", &format!("--target={triple}")])
        .args(extra)
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read_to_string(output).unwrap()
}

fn assemble(text: &str) {
    let dir = unique_scratch("as");
    let path = dir.join("module.ll");
    std::fs::write(&path, text).unwrap();
    let output = Command::new(tool("llvm-as-14"))
        .arg(&path)
        .arg("-o")
        .arg(dir.join("module.bc"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "llvm-as-14 rejected the output: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Every line that differs mentions a materialized function or is an added attribute group.
fn only_expected_lines_changed(before: &str, after: &str, functions: &[&str]) {
    let before: Vec<&str> = before.lines().collect();
    let after: Vec<&str> = after.lines().collect();
    let mut changed = 0;
    let mut b = 0;
    for line in &after {
        if b < before.len() && before[b] == *line {
            b += 1;
            continue;
        }
        changed += 1;
        let explained =
            line.starts_with("attributes #") || functions.iter().any(|name| line.contains(&format!("@{name}(")));
        assert!(explained, "unexpected change: {line}");
        if b < before.len() && !before[b].starts_with("attributes #") && line.starts_with("attributes #") {
            continue;
        }
        b += 1;
    }
    assert_eq!(b, before.len(), "lines were lost");
    assert!(changed > 0);
}

#[test]
fn front_end_annotations_become_plans_end_to_end() {
    let x86 = target_by_name("x86_64").unwrap();
    let module = compile("annotated.c", "x86_64-unknown-linux-gnu", &[]);
    assert!(module.contains("@llvm.global.annotations"));
    let result = materialize(&module, x86, &MaterializeOptions::default()).unwrap();
    // CustomAttrEndToEnd: add3's plan puts 10 in ecx and 30 in r8d; its call site inherits the plan.
    let add3 = result.report.plan_of("@add3").unwrap();
    assert_eq!(
        add3,
        "neverc-cc-plan-v1;schema=llvm-x86_64-unknown-linux-gnu;target=0:0;cc=0:0;stack=16;returns=r,0,0,4,4,51,0,0;arguments=r,0,0,4,4,54,0,0|r,1,0,4,4,56,0,0|r,2,0,4,4,119,0,0;callee-saved="
    );
    let call = "tail call cc 1000 i32 @add3(i32 noundef 10, i32 noundef 20, i32 noundef 30)";
    assert!(group_of(&result.text, call).contains(&format!("\"neverc-cc-plan-v1\"=\"{add3}\"")));
    assert_eq!(
        result.report.plan_count(),
        2,
        "only annotated functions are materialized"
    );
    assert!(!result.text.contains("call cc 1000 i32 @plain("));
    assert!(result.report.warnings.is_empty());
    only_expected_lines_changed(&module, &result.text, &["add3", "f"]);
    assemble(&result.text);
}

#[test]
fn a_declspec_style_windows_target_triple_still_gets_its_attribute() {
    // CustomAttrDeclspec: the annotation also works under the MSVC triple; the module keeps its triple.
    let source = "__declspec(noinline) __attribute__((annotate(\"neverc-callconv=gpr:rcx;ret:rax\"))) int msfunc(int a) { return a; }\n";
    let module = compile(source, "x86_64-pc-windows-msvc", &["-fms-extensions"]);
    let result = materialize(
        &module,
        target_by_name("x86_64").unwrap(),
        &MaterializeOptions::default(),
    )
    .unwrap();
    assert!(result.report.plan_of("@msfunc").is_some());
    assert!(
        result
            .text
            .contains("\"neverc-cc-plan-v1\"=\"neverc-cc-plan-v1;schema=")
    );
    assemble(&result.text);
}

#[test]
fn cc_all_with_a_spec_materializes_versioned_plans_and_removes_specs() {
    let module = compile("sample.c", "x86_64-unknown-linux-gnu", &[]);
    let options = MaterializeOptions {
        cc_all: true,
        spec: Some("gpr:rcx,rdx,r8;ret:rax;csr:r12".into()),
        ..Default::default()
    };
    let result = materialize(&module, target_by_name("x86_64").unwrap(), &options).unwrap();
    assert!(
        result
            .text
            .contains("\"neverc-cc-plan-v1\"=\"neverc-cc-plan-v1;schema=")
    );
    assert!(!result.text.contains("\"neverc-callconv\"="));
    assert!(
        result
            .report
            .plans()
            .all(|(_, plan)| plan.ends_with("callee-saved=123"))
    );
    // IndirectAddressTakenWarns: `target` escapes through `get`.
    assert!(
        result
            .report
            .warnings
            .iter()
            .any(|w| w.function == "@target" && w.message == ADDRESS_TAKEN_WARNING)
    );
    assemble(&result.text);
}

#[test]
fn shuffle_cycles_layouts_so_neighbours_differ_and_llvm_as_accepts_it() {
    for (triple, target) in [
        ("x86_64-unknown-linux-gnu", "x86_64"),
        ("aarch64-unknown-linux-gnu", "aarch64"),
    ] {
        let target = target_by_name(target).unwrap();
        for extra in [&[][..], &["-Xclang", "-opaque-pointers"][..]] {
            let module = compile("sample.c", triple, extra);
            let options = MaterializeOptions {
                cc_all: true,
                shuffle: true,
                ..Default::default()
            };
            let result = materialize(&module, target, &options).unwrap();
            assert!(
                result.report.plan_count() >= 10,
                "{triple} {extra:?}: {}",
                result.report.plan_count()
            );
            for (_, plan) in result.report.plans() {
                validate_plan(&Plan::parse(plan).unwrap(), target, None).unwrap();
            }
            // Functions in module order take layouts 0, 1, 2, 3, 0, ...: neighbours with the same
            // signature never share a register assignment.
            let add3 = Plan::parse(result.report.plan_of("@add3").unwrap()).unwrap();
            let add3l = Plan::parse(result.report.plan_of("@add3l").unwrap()).unwrap();
            assert_ne!(add3.arguments[0].register, add3l.arguments[0].register);
            assemble(&result.text);
        }
    }
}

#[test]
fn prefix_selects_functions_and_others_keep_the_standard_convention() {
    let module = compile("sample.c", "x86_64-unknown-linux-gnu", &[]);
    let options = MaterializeOptions {
        cc_all: true,
        prefix: "nomatch_".into(),
        spec: Some("gpr:rcx,rdx,r8;ret:rax".into()),
        ..Default::default()
    };
    let result = materialize(&module, target_by_name("x86_64").unwrap(), &options).unwrap();
    assert!((result.report.plan_count() == 0));
    assert_eq!(
        result.text, module,
        "nothing selected: the module is unchanged byte for byte"
    );
    let options = MaterializeOptions {
        cc_all: true,
        prefix: "add".into(),
        ..Default::default()
    };
    let result = materialize(&module, target_by_name("x86_64").unwrap(), &options).unwrap();
    assert_eq!(
        result.report.plans().map(|(name, _)| name).collect::<Vec<_>>(),
        ["@add3", "@add3l"]
    );
}

/// The attribute group line that the line containing `needle` refers to with `#N`.
fn group_of(text: &str, needle: &str) -> String {
    let line = text
        .lines()
        .find(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle}"));
    let id = line
        .rsplit_once(" #")
        .map(|(_, id)| id.split(|c: char| !c.is_ascii_digit()).next().unwrap_or(""))
        .unwrap();
    let prefix = format!("attributes #{id} = {{");
    text.lines().find(|line| line.starts_with(&prefix)).unwrap().to_string()
}

fn with_attributes(module: &str, function: &str, attributes: &str) -> String {
    let marker = format!("@{function}(");
    module
        .lines()
        .map(|line| {
            if line.starts_with("define") && line.contains(&marker) && line.ends_with(" {") {
                format!("{} {attributes} {{", &line[..line.len() - 2])
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn existing_plans_are_only_validated_with_neverc_texts() {
    let x86 = target_by_name("x86_64").unwrap();
    let module = compile("int malformed(int x) { return x; }\n", "x86_64-unknown-linux-gnu", &[]);
    let bad = with_attributes(
        &module,
        "malformed",
        "\"neverc-callconv\"=\"gpr:rcx;ret:rax\" \"neverc-cc-plan-v1\"=\"not-a-plan\"",
    );
    let error = materialize(&bad, x86, &MaterializeOptions::default()).unwrap_err();
    assert!(
        error.to_string().contains("malformed NeverC calling convention plan"),
        "{error}"
    );

    let foreign = "neverc-cc-plan-v1;schema=foreign;target=0:0;cc=0:0;stack=16;returns=r,0,0,4,4,51,0,0;arguments=r,0,0,4,4,54,0,0;callee-saved=";
    let bad = with_attributes(
        &module,
        "malformed",
        &format!("\"neverc-callconv\"=\"gpr:rcx;ret:rax\" \"neverc-cc-plan-v1\"=\"{foreign}\""),
    );
    let error = materialize(&bad, x86, &MaterializeOptions::default()).unwrap_err();
    assert!(error.to_string().contains("foreign target schema"), "{error}");

    let ours = foreign.replace("schema=foreign", "schema=llvm-x86_64-unknown-linux-gnu");
    let good = with_attributes(&module, "malformed", &format!("\"neverc-cc-plan-v1\"=\"{ours}\""));
    let result = materialize(&good, x86, &MaterializeOptions::default()).unwrap();
    assert_eq!(result.report.validated, ["@malformed"]);
}

#[test]
fn variadic_functions_are_rejected_on_both_targets() {
    let source = "#include <stdarg.h>\nint sum(int n, ...) { va_list ap; va_start(ap, n); int s = 0; for (int i = 0; i < n; i++) s += va_arg(ap, int); va_end(ap); return s; }\n";
    for (triple, name, spec) in [
        ("x86_64-unknown-linux-gnu", "x86_64", "gpr:rcx,rdx;ret:rax"),
        ("aarch64-unknown-linux-gnu", "aarch64", "gpr:x9,x10;ret:x0"),
    ] {
        let module = compile(source, triple, &[]);
        let options = MaterializeOptions {
            cc_all: true,
            prefix: "sum".into(),
            spec: Some(spec.into()),
            ..Default::default()
        };
        let error = materialize(&module, target_by_name(name).unwrap(), &options).unwrap_err();
        assert!(matches!(error, MaterializeError::Planning { .. }));
        assert!(
            error.to_string().contains("does not support variadic functions: 'sum'"),
            "{error}"
        );
    }
}

#[test]
fn a_spec_in_a_shared_attribute_group_moves_to_a_new_group() {
    let x86 = target_by_name("x86_64").unwrap();
    let module = compile(
        "int one(int x) { return x + 1; }\nint two(int x) { return x + 2; }\n",
        "x86_64-unknown-linux-gnu",
        &[],
    );
    let with_spec = module.replacen(
        "attributes #0 = { ",
        "attributes #0 = { \"neverc-callconv\"=\"gpr:rcx;ret:rax\" ",
        1,
    );
    let result = materialize(&with_spec, x86, &MaterializeOptions::default()).unwrap();
    assert_eq!(result.report.plan_count(), 2);
    assert!(!result.text.contains("\"neverc-callconv\""));
    assert!(
        result.text.contains("attributes #0 = { mustprogress"),
        "the spec is removed from the unused group in place"
    );
    assemble(&result.text);

    // Shared with a function that has its own plan-free life (a call site refers to the group): copied.
    let shared = with_spec.replacen(
        "ret i32 %2\n}",
        "ret i32 %2\n}\ndefine i32 @three(i32 %x) {\n  %r = call i32 @one(i32 %x) #0\n  ret i32 %r\n}",
        1,
    );
    let result = materialize(&shared, x86, &MaterializeOptions::default()).unwrap();
    assert!(result.text.contains("attributes #1 = {"), "{}", result.text);
    assemble(&result.text);
}
