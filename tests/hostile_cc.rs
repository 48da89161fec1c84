#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Hostile input to the calling-convention engine: deep nesting on every path, output that must assemble,
//! diagnostics that materialization must not drop, inputs that must stay linear and alignments LLVM refuses.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use neverc_cc::materialize::{MaterializeOptions, materialize};
use neverc_test_support::{Rng, repo, scratch, seed_of, text};

const TRIPLE: &str = "target triple = \"x86_64-pc-linux-gnu\"\n";

/// Runs the CLI in the workspace root, killing it after `limit` (a hang is a failure, not a stuck test run).
fn run_with_limit(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_neverc-spec"))
        .current_dir(repo())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the CLI starts");
    let started = Instant::now();
    while child.try_wait().expect("the CLI can be waited for").is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let output = child.wait_with_output().expect("the killed CLI is reaped");
            panic!(
                "`neverc-spec {}` ran longer than {limit:?}; stderr: {}",
                args.join(" ").chars().take(200).collect::<String>(),
                text(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("the CLI output is read")
}

fn run(args: &[&str]) -> Output {
    run_with_limit(args, Duration::from_secs(60))
}

/// The command failed with NeverC's request exit code (1), not a crash, and said `needles` on stderr.
fn assert_refused(output: &Output, needles: &[&str]) {
    let stderr = text(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(1),
        "expected a diagnostic and exit 1; stderr tail: {}",
        stderr
            .chars()
            .rev()
            .take(600)
            .collect::<String>()
            .chars()
            .rev()
            .collect::<String>()
    );
    for needle in needles {
        assert!(stderr.contains(needle), "stderr lacks `{needle}`: {stderr}");
    }
}

fn nested(open: &str, inner: &str, close: &str, depth: usize) -> String {
    format!("{}{inner}{}", open.repeat(depth), close.repeat(depth))
}

/// Seven thousand `{}` or `<{}>` levels, or twenty thousand `[N x ...]` levels.
fn deep_types() -> Vec<String> {
    vec![
        nested("{", "i32", "}", 7_000),
        nested("<{", "i32", "}>", 7_000),
        nested("[2 x ", "i32", "]", 20_000),
    ]
}

/// A module whose `@f` carries a spec in attribute group `#0`.
fn module_with(types: &str, parameters: &str) -> String {
    format!(
        "{TRIPLE}{types}define i32 @f({parameters}) #0 {{\n  ret i32 0\n}}\n\nattributes #0 = {{ \"neverc-callconv\"=\"gpr:rdi;ret:rax\" }}\n"
    )
}

fn materialize_file(dir: &Path, name: &str, module: &str, extra: &[&str]) -> (Output, PathBuf) {
    let input = dir.join(format!("{name}.ll"));
    let output = dir.join(format!("{name}.out.ll"));
    std::fs::write(&input, module).unwrap();
    let mut args = vec![
        "cc",
        "materialize",
        input.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    (run_with_limit(&args, Duration::from_secs(30)), output)
}

#[test]
fn deep_nesting_in_a_signature_is_refused_with_the_limit() {
    for ty in deep_types() {
        let sig = format!("i32 ({ty})");
        let output = run(&["cc", "plan", "--target", "x86_64", "--sig", &sig]);
        assert_refused(&output, &["nesting", "256"]);
        // The return type and a `--type` definition take the same path.
        let output = run(&["cc", "plan", "--target", "x86_64", "--sig", &format!("{ty} ()")]);
        assert_refused(&output, &["nesting", "256"]);
        let definition = format!("%T = type {ty}");
        let output = run(&[
            "cc",
            "plan",
            "--target",
            "x86_64",
            "--sig",
            "i32 (%T)",
            "--type",
            &definition,
        ]);
        assert_refused(&output, &["nesting", "256"]);
    }
}

#[test]
fn deep_nesting_in_a_module_is_refused_with_the_limit_and_the_line() {
    let dir = scratch!("hostile-cc-deep-module");
    for (index, ty) in deep_types().into_iter().enumerate() {
        // In a type definition the materializer reads (a file of about 20 KB).
        let module = module_with(&format!("%T = type {ty}\n"), "%T* %p");
        assert!(module.len() > 14_000);
        let (output, _) = materialize_file(&dir, &format!("definition{index}"), &module, &[]);
        assert_refused(&output, &["line 2", "nesting", "256"]);
        // In a function header.
        let module = module_with("", &format!("{ty} %p"));
        let (output, _) = materialize_file(&dir, &format!("header{index}"), &module, &[]);
        assert_refused(&output, &["line 2", "nesting", "256"]);
    }
}

#[test]
fn named_types_nest_under_the_same_limit_and_recursion_is_refused() {
    let dir = scratch!("hostile-cc-named");
    // A chain of named types, each one level deeper than the last: shallow text, deep layout.
    let mut chain = String::from("%T0 = type { i32 }\n");
    for level in 1..=2_000 {
        let _ = writeln!(chain, "%T{level} = type {{ %T{} }}", level - 1);
    }
    let (output, _) = materialize_file(&dir, "chain", &module_with(&chain, "%T2000 %p"), &[]);
    assert_refused(&output, &["nesting", "256"]);
    // A type that contains itself, once or twice per level (the second would take exponential time).
    for (name, definition) in [
        ("self", "%T = type { %T }\n"),
        ("twice", "%T = type { %T, [2 x %T] }\n"),
    ] {
        let (output, _) = materialize_file(&dir, name, &module_with(definition, "%T %p"), &[]);
        assert_refused(&output, &["%T", "contains itself"]);
    }
    // Shared named types make a layout that is exponential to expand but linear to compute.
    let mut doubling = String::from("%D0 = type { i8 }\n");
    for level in 1..=60 {
        let _ = writeln!(doubling, "%D{level} = type {{ %D{0}, %D{0} }}", level - 1);
    }
    let (output, _) = materialize_file(&dir, "doubling", &module_with(&doubling, "%D60* %p, %D20 %q"), &[]);
    assert!(output.status.code().is_some(), "{}", text(&output.stderr));
    let (output, _) = materialize_file(&dir, "doubling-value", &module_with(&doubling, "%D60 %p"), &[]);
    assert_refused(&output, &["line"]);
}

#[test]
fn deep_nesting_in_a_conformance_vector_fails_the_case_not_the_runner() {
    let dir = scratch!("hostile-cc-vectors");
    for (index, ty) in deep_types().into_iter().enumerate() {
        let vector = serde_json::json!({
            "format": "neverc-conformance-v1",
            "source": "targets/x86_64.toml",
            "cases": [{
                "id": "spec_plans/x86_64/deep",
                "kind": "spec_plans",
                "target": "x86_64",
                "spec": "gpr:rcx,rdx;ret:rax",
                "signature": format!("i64 ({ty})"),
                "origin": "hostile vector",
            }],
        });
        let vectors = dir.join(format!("set{index}"));
        std::fs::create_dir_all(&vectors).unwrap();
        std::fs::write(vectors.join("deep.conformance.json"), vector.to_string()).unwrap();
        let output = run(&["conformance", "--vectors", vectors.to_str().unwrap()]);
        let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
        assert_eq!(output.status.code(), Some(5), "{all}");
        assert!(all.contains("nesting") && all.contains("256"), "{all}");
    }
}

/// Whether llvm-as-14 accepts `module`; the error text when it does not.
fn assemble(dir: &Path, module: &str) -> Result<(), String> {
    let path = dir.join("candidate.ll");
    std::fs::write(&path, module).unwrap();
    let output = Command::new("llvm-as-14")
        .args([path.to_str().unwrap(), "-o", "/dev/null"])
        .output()
        .expect("llvm-as-14 runs");
    if output.status.success() {
        Ok(())
    } else {
        Err(text(&output.stderr))
    }
}

#[test]
fn a_spec_alone_in_a_group_leaves_no_empty_group() {
    let dir = scratch!("hostile-cc-empty-group");
    let module = module_with("", "i32 %p");
    let (output, written) = materialize_file(&dir, "alone", &module, &[]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let materialized = std::fs::read_to_string(written).unwrap();
    assert!(!materialized.contains("= { }"), "{materialized}");
    assemble(&dir, &materialized).unwrap_or_else(|error| panic!("{error}\n{materialized}"));
}

#[test]
fn a_spec_glued_to_a_bracket_is_removed_without_the_bracket() {
    let dir = scratch!("hostile-cc-glued");
    let module = "target triple = \"x86_64-pc-linux-gnu\"\n\
        define i32 @f(i32 %p) #0 {\n  ret i32 0\n}\n\
        define i32 @g(i32 %p)\"neverc-callconv\"=\"gpr:rsi;ret:rax\" {\n  ret i32 0\n}\n\
        attributes #0 = {\"neverc-callconv\"=\"gpr:rdi;ret:rax\" nounwind }\n";
    assemble(&dir, module).unwrap_or_else(|error| panic!("the input must be valid IR: {error}"));
    let (output, written) = materialize_file(&dir, "glued", module, &[]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let materialized = std::fs::read_to_string(written).unwrap();
    assert!(materialized.contains("attributes #0 = {nounwind }"), "{materialized}");
    assemble(&dir, &materialized).unwrap_or_else(|error| panic!("{error}\n{materialized}"));
}

#[test]
fn a_spec_run_into_other_text_is_refused() {
    let dir = scratch!("hostile-cc-run-into");
    for group in [
        "{$\"neverc-callconv\"=\"gpr:rdi;ret:rax\" }",
        "{ \"neverc-callconv\"=\"gpr:rdi;ret:rax\"nounwind }",
        "{ \"neverc-callconv\"=\"gpr:rdi;ret:rax\" } \"",
    ] {
        let module = format!(
            "target triple = \"x86_64-pc-linux-gnu\"\ndefine i32 @f(i32 %p) #0 {{\n  ret i32 0\n}}\nattributes #0 = {group}\n"
        );
        let (output, _) = materialize_file(&dir, "run-into", &module, &[]);
        assert_refused(&output, &["line 5"]);
    }
}

/// The `.ll` inputs of the property: clang-14 output of the fixtures under several option sets, and the
/// committed `ll_module` fuzz regressions (not the git-ignored corpus, which grows while a fuzzer runs: the
/// test reads the same inputs on every machine).
fn ll_inputs(dir: &Path) -> Vec<(String, String)> {
    let mut inputs = Vec::new();
    let fixtures = repo().join("runtime/callconv/tests/fixtures/cc");
    let option_sets: [&[&str]; 4] = [
        &["-O0"],
        &["-O2"],
        &["-O1", "-fno-inline", "-Xclang", "-disable-llvm-passes"],
        &["-O2", "-Xclang", "-opaque-pointers"],
    ];
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "c"))
        .collect();
    sources.sort();
    for source in &sources {
        for (index, options) in option_sets.iter().enumerate() {
            let out = dir.join(format!("{}-{index}.ll", source.file_stem().unwrap().to_string_lossy()));
            let status = Command::new("clang-14")
                .args(["-S", "-emit-llvm", "--target=x86_64-unknown-linux-gnu"])
                .args(*options)
                .arg(source)
                .arg("-o")
                .arg(&out)
                .status()
                .expect("clang-14 runs");
            assert!(status.success(), "clang-14 {options:?} {}", source.display());
            inputs.push((out.display().to_string(), std::fs::read_to_string(&out).unwrap()));
        }
    }
    for corpus in ["fuzz/regressions/ll_module"] {
        let Ok(entries) = std::fs::read_dir(repo().join(corpus)) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|ext| ext == "md") {
                continue;
            }
            if let Ok(module) = std::fs::read_to_string(&path) {
                inputs.push((path.display().to_string(), module));
            }
        }
    }
    inputs
}

/// Mutations that put specs where groups are shared, removed or duplicated.
fn mutations(module: &str, rng: &mut Rng) -> Vec<String> {
    let specs = [
        "gpr:rdi,rsi;ret:rax",
        "gpr:rcx;xmm:xmm1;ret:rax;csr:r12",
        "args:stack,rdx",
    ];
    let spec = *rng.pick(&specs);
    let entry = format!("\"neverc-callconv\"=\"{spec}\"");
    let lines: Vec<&str> = module.lines().collect();
    let group_lines: Vec<usize> = (0..lines.len())
        .filter(|index| lines[*index].starts_with("attributes #"))
        .collect();
    let mut out = Vec::new();
    let rebuild = |lines: &[String]| lines.join("\n") + "\n";
    let owned: Vec<String> = lines.iter().map(|line| line.to_string()).collect();
    // The spec as the only attribute of every group (then of one group at a time).
    let mut only = owned.clone();
    for index in &group_lines {
        if let Some(open) = only[*index].find('{') {
            only[*index] = format!("{} {entry} }}", &only[*index][..=open]);
        }
    }
    out.push(rebuild(&only));
    for index in &group_lines {
        let mut one = owned.clone();
        if let Some(open) = one[*index].find('{') {
            one[*index] = format!("{} {entry} }}", &one[*index][..=open]);
        }
        out.push(rebuild(&one));
        // The spec added to the group's other attributes.
        let mut added = owned.clone();
        added[*index] = added[*index].replacen('{', &format!("{{ {entry}"), 1);
        out.push(rebuild(&added));
        // The spec glued to the group's `{` (LLVM needs no blank there).
        let mut glued = owned.clone();
        glued[*index] = glued[*index].replacen('{', &format!("{{{entry} "), 1);
        out.push(rebuild(&glued));
    }
    // A group's attributes dropped one by one (keeping the spec), and a group duplicated under a new number.
    if let Some(index) = group_lines.first() {
        let mut dropped = owned.clone();
        let line = dropped[*index].clone();
        if let (Some(open), Some(close)) = (line.find('{'), line.rfind('}'))
            && open < close
        {
            let words: Vec<&str> = line[open + 1..close].split_whitespace().collect();
            if !words.is_empty() {
                let keep: Vec<&str> = words
                    .iter()
                    .enumerate()
                    .filter(|(position, _)| *position != rng.below(words.len()))
                    .map(|(_, word)| *word)
                    .collect();
                dropped[*index] = format!("{}{{ {entry} {} }}", &line[..open], keep.join(" "));
                out.push(rebuild(&dropped));
            }
            let mut duplicated = owned.clone();
            duplicated.push(
                line.replacen("attributes #", "attributes #9", 1)
                    .replacen('{', &format!("{{ {entry}"), 1),
            );
            out.push(rebuild(&duplicated));
        }
    }
    // Inline specs on every header, sharing whatever groups they already use.
    let inline: Vec<String> = owned
        .iter()
        .map(|line| {
            if (line.starts_with("define ") && line.ends_with(" {")) || line.starts_with("declare ") {
                let at = if line.ends_with(" {") {
                    line.len() - 2
                } else {
                    line.len()
                };
                format!("{} {entry}{}", &line[..at], &line[at..])
            } else {
                line.clone()
            }
        })
        .collect();
    out.push(rebuild(&inline));
    // Inline specs glued to the parameter list's `)`.
    let glued: Vec<String> = owned
        .iter()
        .map(|line| match line.rfind(')') {
            Some(close) if line.starts_with("define ") || line.starts_with("declare ") => {
                format!("{}{entry} {}", &line[..=close], &line[close + 1..])
            }
            _ => line.clone(),
        })
        .collect();
    out.push(rebuild(&glued));
    out
}

#[test]
fn materialized_output_assembles_whenever_the_input_does() {
    let dir = scratch!("hostile-cc-assembles");
    let x86 = neverc_tables::target_by_name("x86_64").unwrap();
    let mut checked = 0;
    for (name, module) in ll_inputs(&dir) {
        let mut rng = Rng::new(seed_of(&name));
        let mut candidates = vec![module.clone()];
        candidates.extend(mutations(&module, &mut rng));
        for candidate in candidates {
            if assemble(&dir, &candidate).is_err() {
                continue;
            }
            for options in [
                MaterializeOptions::default(),
                MaterializeOptions {
                    cc_all: true,
                    ..Default::default()
                },
            ] {
                // A refusal is a diagnostic; what is written must assemble.
                let Ok(result) = materialize(&candidate, x86, &options) else {
                    continue;
                };
                if let Err(error) = assemble(&dir, &result.text) {
                    panic!(
                        "{name} ({options:?}): the output does not assemble: {error}\n--- input\n{candidate}\n--- output\n{}",
                        result.text
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 40, "only {checked} outputs checked");
}

#[test]
fn an_unknown_register_is_reported_by_materialize_as_by_plan() {
    let dir = scratch!("hostile-cc-unknown-register");
    let module = format!(
        "{TRIPLE}define i32 @f(i32 %a, i32 %b) #0 {{\n  ret i32 0\n}}\n\nattributes #0 = {{ nounwind \"neverc-callconv\"=\"gpr:bogus,rdx;ret:rax\" }}\n"
    );
    let (output, _) = materialize_file(&dir, "bogus", &module, &[]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    let stdout = text(&output.stdout);
    assert!(stderr.contains("`bogus` is not a register of x86_64"), "{stderr}");
    assert!(!stdout.contains(" 0 warning(s)"), "{stdout}");
    let plan = run(&[
        "cc",
        "plan",
        "--target",
        "x86_64",
        "--sig",
        "i32 (i32, i32)",
        "--spec",
        "gpr:bogus,rdx;ret:rax",
    ]);
    let plan_stderr = text(&plan.stderr);
    assert!(
        plan_stderr.contains("`bogus` is not a register of x86_64"),
        "{plan_stderr}"
    );
    assert!(plan_stderr.contains("warning"), "{plan_stderr}");
    assert!(stderr.contains("warning"), "{stderr}");
}

#[test]
fn a_malformed_spec_is_an_error_with_its_line() {
    let dir = scratch!("hostile-cc-malformed-spec");
    for spec_entry in ["\"neverc-callconv\"=\"gpr:(\"", "\"neverc-callconv\"=\"gpr:rdi"] {
        let module = format!(
            "{TRIPLE}define i32 @f(i32 %a) #0 {{\n  ret i32 0\n}}\n\nattributes #0 = {{ nounwind {spec_entry} }}\n"
        );
        let (output, written) = materialize_file(&dir, "malformed", &module, &[]);
        assert_refused(&output, &["line", "spec"]);
        assert!(!written.exists());
    }
    let output = run(&[
        "cc",
        "plan",
        "--target",
        "x86_64",
        "--sig",
        "i32 (i32)",
        "--spec",
        "gpr:(",
    ]);
    assert_refused(&output, &["malformed", "("]);
}

/// The fastest of three runs of `work`.
fn fastest(mut work: impl FnMut()) -> Duration {
    (0..3)
        .map(|_| {
            let started = Instant::now();
            work();
            started.elapsed()
        })
        .min()
        .unwrap()
}

#[test]
fn many_groups_and_many_parameters_take_linear_time() {
    let x86 = neverc_tables::target_by_name("x86_64").unwrap();
    let options = MaterializeOptions::default();
    for (what, make, n) in [
        (
            "attribute groups",
            neverc_test_support::spec_groups_module as fn(usize) -> String,
            4_000,
        ),
        (
            "parameters",
            neverc_test_support::spec_parameters_module as fn(usize) -> String,
            5_000,
        ),
    ] {
        let (small, large) = (make(n), make(4 * n));
        let time_small = fastest(|| {
            materialize(&small, x86, &options).unwrap();
        });
        let time_large = fastest(|| {
            materialize(&large, x86, &options).unwrap();
        });
        // Linear work grows 4 times; quadratic work 16 times. The bound leaves room for a noisy machine.
        let ratio = time_large.as_secs_f64() / time_small.as_secs_f64().max(1e-6);
        assert!(
            ratio < 9.0,
            "{what}: {n} took {time_small:?}, {} took {time_large:?} (ratio {ratio:.1})",
            4 * n
        );
    }
}

#[test]
fn alignments_that_are_not_powers_of_two_are_refused() {
    for align in ["3", "0", "(6)"] {
        let sig = format!("void (ptr byval(i64) align {align})");
        let output = run(&["cc", "plan", "--target", "x86_64", "--sig", &sig]);
        assert_refused(&output, &["power of two"]);
    }
    let dir = scratch!("hostile-cc-align");
    for align in ["3", "0"] {
        let module = module_with("", &format!("i32* align {align} %p"));
        let (output, _) = materialize_file(&dir, &format!("align{align}"), &module, &[]);
        assert_refused(&output, &["line 2", "power of two"]);
    }
    // A plan in a module is held to the same rule.
    for align in ["3", "0"] {
        let plan = format!(
            "neverc-cc-plan-v1;schema=llvm-x86_64-unknown-linux-gnu;target=0:0;cc=0:0;stack=16;returns=r,0,0,4,{align},51,0,0;arguments=;callee-saved="
        );
        let module = format!(
            "{TRIPLE}define i32 @f() #0 {{\n  ret i32 0\n}}\n\nattributes #0 = {{ \"neverc-cc-plan-v1\"=\"{plan}\" }}\n"
        );
        let (output, _) = materialize_file(&dir, &format!("plan{align}"), &module, &[]);
        assert_refused(&output, &["line 2"]);
    }
}
