#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `neverc-spec cc materialize --plugin PATH.so`: NeverC's custom-callconv example plugin written in C against
//! the generated headers (`runtime/plugin-host/tests/fixtures/customcc.c`, fact sheet C.7), built by gcc, plans the
//! functions of clang-14 modules; the module it gives is byte for byte the module of the built-in engine with
//! the matching options (the four shuffle layouts, `--cc-all` with a prefix, a session spec, specs written in
//! the source), and llvm-as-14 accepts it. Hostile builds of the same plugin: descriptors NeverC refuses,
//! plans naming an unknown register, using a register twice or claiming more locations than the host's
//! capacity, and a failing callback; each fails with a clear error naming the plugin (and the function),
//! and nothing is written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use neverc_test_support::{build_c_plugin, repo, scratch, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");
const ID: &str = "org.neverc.example.custom-callconv";

/// The plugin, built with `define` (or as it is).
fn plugin(dir: &Path, define: Option<&str>) -> PathBuf {
    let output = dir.join(format!("customcc{}.so", define.unwrap_or_default()));
    let defines: Vec<&str> = define.into_iter().collect();
    build_c_plugin(
        &repo().join("runtime/plugin-host/tests/fixtures/customcc.c"),
        &output,
        &defines,
    );
    output
}

/// `clang-14 -S -emit-llvm -O2` of one of the calling-convention fixtures, for x86_64.
fn module(dir: &Path, source: &str) -> PathBuf {
    let output = dir.join(source.replace(".c", ".ll"));
    let compiled = Command::new("clang-14")
        .args(["-S", "-emit-llvm", "-O2", "--target=x86_64-unknown-linux-gnu"])
        .arg(repo().join("runtime/callconv/tests/fixtures/cc").join(source))
        .arg("-o")
        .arg(&output)
        .output()
        .expect("clang-14 is missing: run scripts/test.sh, which installs clang-14 and llvm-14");
    assert!(compiled.status.success(), "{}", text(&compiled.stderr));
    output
}

fn materialize(input: &Path, output: &Path, extra: &[&str]) -> Output {
    Command::new(BIN)
        .args(["cc", "materialize"])
        .arg(input)
        .arg("-o")
        .arg(output)
        .args(extra)
        .output()
        .unwrap()
}

/// `cc materialize` with the plugin at `so` and its `cc-all=1`.
fn materialize_with_cc_all(input: &Path, output: &Path, so: &Path) -> Output {
    let argument = format!("{ID}:cc-all=1");
    materialize(
        input,
        output,
        &["--plugin", so.to_str().unwrap(), "--plugin-arg", &argument],
    )
}

fn assemble(path: &Path) {
    let assembled = Command::new("llvm-as-14")
        .arg(path)
        .arg("-o")
        .arg(path.with_extension("bc"))
        .output()
        .expect("llvm-as-14 is missing: run scripts/test.sh");
    assert!(
        assembled.status.success(),
        "llvm-as-14 rejected {}: {}",
        path.display(),
        text(&assembled.stderr)
    );
}

/// Materializes `source` with the built-in engine under `host_options` and with the plugin under
/// `plugin_arguments`; both succeed and write the same bytes, which llvm-as-14 accepts. Returns the module
/// and the plugin run's stderr.
fn same_module(name: &str, source: &str, host_options: &[&str], plugin_arguments: &[&str]) -> (String, String) {
    let dir = scratch!("cc-plugins-{name}");
    let input = module(&dir, source);
    let so = plugin(&dir, None);
    let built_in = dir.join("built-in.ll");
    let ran = materialize(&input, &built_in, host_options);
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    let mut extra = vec!["--plugin".to_string(), so.display().to_string()];
    for argument in plugin_arguments {
        extra.push("--plugin-arg".to_string());
        extra.push(format!("{ID}:{argument}"));
    }
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let by_plugin = dir.join("plugin.ll");
    let ran = materialize(&input, &by_plugin, &extra);
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    let expected = std::fs::read_to_string(&built_in).unwrap();
    let produced = std::fs::read_to_string(&by_plugin).unwrap();
    assert_ne!(
        produced,
        std::fs::read_to_string(&input).unwrap(),
        "nothing was materialized"
    );
    assert!(
        produced == expected,
        "the plugin's module differs from the built-in one:\n{produced}"
    );
    assemble(&by_plugin);
    (produced, text(&ran.stderr))
}

/// The plan attribute of function `name` (through its attribute group).
fn plan_of(module: &str, name: &str) -> String {
    let header = module
        .lines()
        .find(|line| line.starts_with("define") && line.contains(&format!("@{name}(")))
        .unwrap();
    let group = header.rsplit('#').next().unwrap().trim_end_matches(" {").trim();
    let line = module
        .lines()
        .find(|line| line.starts_with(&format!("attributes #{group} ")))
        .unwrap();
    let start = line.find("neverc-cc-plan-v1;").unwrap();
    line[start..line[start..].find('"').unwrap() + start].to_string()
}

#[test]
fn every_shuffle_layout_from_the_c_plugin_is_the_built_in_engines() {
    let (module, _) = same_module(
        "shuffle",
        "cases.c",
        &["--cc-all", "--ccshuffle"],
        &["cc-all=1", "ccshuffle=true"],
    );
    // add3, add3l, spill5, pick, deref in module order take layouts 0-4 (mod 4): add3 gets rcx, rdx, r8;
    // add3l rdi, rsi, rdx; spill5 r9, r8, r10, r11 and the stack; pick rsi, rdi, rcx; deref rcx, rdx again.
    let x86 = neverc_tables::target_by_name("x86_64").unwrap();
    let number = |name: &str| x86.resolve_register(name).unwrap().plan_number;
    let argument =
        |size: u32, index: u32, register: &str| format!("r,{index},0,{size},{size},{},0,0", number(register));
    let expected = [
        (
            "add3",
            [argument(4, 0, "rcx"), argument(4, 1, "rdx"), argument(4, 2, "r8")],
        ),
        (
            "add3l",
            [argument(8, 0, "rdi"), argument(8, 1, "rsi"), argument(8, 2, "rdx")],
        ),
        (
            "pick",
            [argument(8, 0, "rsi"), argument(8, 1, "rdi"), argument(4, 2, "rcx")],
        ),
    ];
    for (function, arguments) in expected {
        let plan = plan_of(&module, function);
        assert!(
            plan.contains(&format!("arguments={}", arguments.join("|"))),
            "{function}: {plan}"
        );
    }
    let spill5 = plan_of(&module, "spill5");
    assert!(spill5.contains("|s,4,0,8,8,0,0,0;"), "{spill5}");
    assert!(plan_of(&module, "deref").contains(&format!("returns=r,0,0,8,8,{},0,0", number("rax"))));
}

#[test]
fn cc_all_with_a_prefix_and_a_session_spec_match_the_built_in_engine() {
    let (module, _) = same_module(
        "prefix",
        "cases.c",
        &["--cc-all", "--ccprefix", "add", "--ccspec", "args:rcx,stack,r8;ret:rax"],
        &["cc-all=1", "ccprefix=add", "ccspec=args:rcx,stack,r8;ret:rax"],
    );
    assert!(plan_of(&module, "add3").contains("|s,1,0,8,8,0,0,0|"));
    // Functions the prefix does not select keep the standard convention, at their definition and calls.
    assert!(
        !module
            .lines()
            .any(|line| line.contains("@spill5(") && line.contains("cc 1000")),
        "{module}"
    );
    same_module(
        "session-spec",
        "cases.c",
        &["--cc-all", "--ccspec", "gpr:rcx;ret:rax;csr:r12"],
        &["cc-all=1", "ccspec=gpr:rcx;ret:rax;csr:r12"],
    );
    same_module("default-spec", "cases.c", &["--cc-all"], &["cc-all=1"]);
}

#[test]
fn specs_written_in_the_source_match_the_built_in_engine_without_cc_all() {
    let (module, _) = same_module("source", "annotated.c", &[], &[]);
    assert!(module.contains("neverc-cc-plan-v1;"));
    // Booleans are true only when exactly `1` or `true`: `yes` leaves cc-all off.
    same_module("not-a-boolean", "annotated.c", &[], &["cc-all=yes"]);
}

#[test]
fn a_callee_saved_register_that_carries_a_value_is_reported_by_the_plugin() {
    let (_, stderr) = same_module(
        "csr-conflict",
        "cases.c",
        &["--cc-all", "--ccprefix", "add3", "--ccspec", "gpr:rcx;ret:rax;csr:rax"],
        &["cc-all=1", "ccprefix=add3", "ccspec=gpr:rcx;ret:rax;csr:rax"],
    );
    assert!(
        stderr.contains(&format!(
            "warning: plugin `{ID}`: {}",
            neverc_cc::planner::CSR_CONFLICT_WARNING
        )),
        "{stderr}"
    );
}

/// Runs a hostile build of the plugin over cases.c with cc-all: the command fails with exit status 1, its
/// error contains `expected`, and the output that was there is left as it was.
fn refused(define: &str, expected: &str) {
    let dir = scratch!("cc-plugins-hostile-{define}");
    let input = module(&dir, "cases.c");
    let so = plugin(&dir, Some(define));
    let output = dir.join("out.ll");
    std::fs::write(&output, "previous").unwrap();
    let ran = materialize_with_cc_all(&input, &output, &so);
    let stderr = text(&ran.stderr);
    assert_eq!(ran.status.code(), Some(1), "{define}: {stderr}");
    assert!(stderr.contains(expected), "{define}: {stderr}");
    assert!(
        stderr.contains(&format!("error: plugin `{ID}`")) || stderr.contains(&format!("plugin '{ID}'")),
        "{define}: {stderr}"
    );
    assert_eq!(std::fs::read_to_string(&output).unwrap(), "previous", "{define}");
}

#[test]
fn descriptors_neverc_refuses_are_refused_with_its_text() {
    let text = format!("plugin '{ID}' has an invalid LLVM calling convention (INVALID_DESCRIPTOR)");
    for define in ["HOSTILE_RESERVED", "HOSTILE_LLVM_256", "HOSTILE_CALLBACK_WITH_LLVM"] {
        refused(define, &text);
    }
    refused("HOSTILE_TWICE", "twice (DUPLICATE_ID)");
    refused(
        "HOSTILE_SMALL_DESCRIPTOR",
        &format!(
            "a NevercCallingConventionDescriptor is {} (ABI_MISMATCH)",
            std::mem::size_of::<neverc_tables::plugin_abi::ffi::CallingConventionDescriptor>()
        ),
    );
    refused(
        "HOSTILE_FORGED_CONTEXT",
        "its registration failed with INVALID_ARGUMENT",
    );
}

#[test]
fn invalid_plans_are_refused_naming_the_plugin_and_the_function() {
    let invalid = "target calling convention 'neverc-custom-callconv' produced an invalid plan:";
    refused(
        "HOSTILE_UNKNOWN_REGISTER",
        &format!("@add3: {invalid} argument register location is not in the target schema"),
    );
    refused(
        "HOSTILE_OVERLAP",
        &format!("@add3: {invalid} argument locations reuse a physical register"),
    );
    refused(
        "HOSTILE_OVER_CAPACITY",
        &format!("@add3: {invalid} argument array is invalid"),
    );
    refused(
        "HOSTILE_BAD_RECORD",
        &format!("@add3: {invalid} argument location has a bad ABI record"),
    );
    refused(
        "HOSTILE_PLAN_FLAGS",
        &format!("@add3: {invalid} plan record is invalid"),
    );
    refused(
        "HOSTILE_FAIL",
        "@add3: target calling convention 'neverc-custom-callconv' plan callback failed with status 20",
    );
}

#[test]
fn declarations_are_left_alone_and_a_variadic_definition_is_refused() {
    // `show` calls the declared `printf`: the plugin is asked about the declaration too, and declines it.
    let (materialized, _) = same_module(
        "declarations",
        "variadic.c",
        &["--cc-all", "--ccprefix", "show"],
        &["cc-all=1", "ccprefix=show"],
    );
    assert!(materialized.contains("declare noundef i32 @printf("), "{materialized}");
    // Selecting the variadic `sum` fails on both paths, and nothing is written.
    let dir = scratch!("cc-plugins-variadic");
    let input = module(&dir, "variadic.c");
    let so = plugin(&dir, None);
    let output = dir.join("out.ll");
    let built_in = materialize(&input, &output, &["--cc-all"]);
    assert_eq!(built_in.status.code(), Some(1));
    assert!(text(&built_in.stderr).contains("does not support variadic functions: 'sum'"));
    let by_plugin = materialize_with_cc_all(&input, &output, &so);
    let stderr = text(&by_plugin.stderr);
    assert_eq!(by_plugin.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "plugin `{ID}`: {}: line",
            input.display()
        )) && stderr.contains("@sum: target calling convention 'neverc-custom-callconv' produced an invalid plan: variadic functions are not supported"),
        "{stderr}"
    );
    assert!(!output.exists());
}

/// Item 13 of issue 23: `--format json` lists the warnings a calling-convention plugin reports, which the
/// text run prints on stderr (an option the plugin does not know is ignored with a warning).
#[test]
fn item_13_the_json_report_lists_the_plugin_warnings_the_text_prints() {
    let dir = scratch!("cc-plugins-json-warnings");
    let input = module(&dir, "annotated.c");
    let so = plugin(&dir, None);
    let unknown = format!("{ID}:no-such-option=1");
    let arguments = ["--plugin", so.to_str().unwrap(), "--plugin-arg", unknown.as_str()];
    let text_run = materialize(&input, &dir.join("text.ll"), &arguments);
    assert!(text_run.status.success(), "{}", text(&text_run.stderr));
    let warning = "unknown option `no-such-option` is ignored";
    assert!(
        text(&text_run.stderr).contains(&format!("warning: plugin `{ID}`: {warning}")),
        "{}",
        text(&text_run.stderr)
    );
    let mut json_arguments = arguments.to_vec();
    json_arguments.extend(["--format", "json"]);
    let json_run = materialize(&input, &dir.join("json.ll"), &json_arguments);
    assert!(json_run.status.success(), "{}", text(&json_run.stderr));
    let report: serde_json::Value = serde_json::from_slice(&json_run.stdout).unwrap();
    assert_eq!(
        report["warnings"],
        serde_json::json!([{ "plugin": ID, "message": warning }]),
        "{report}"
    );
}
