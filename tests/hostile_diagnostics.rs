#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Hostile inputs to the declaration loaders and the diagnostics they print: positions past what a terminal
//! renderer can draw, values of many megabytes, empty target directories, numbers that do not fit, manifests
//! and vector files that are not what they claim. Each must give a clear, bounded error — never a panic,
//! never "valid".

use std::path::Path;
use std::process::Output;

use neverc_test_support::{repo, run_in, scratch, text};

fn run(args: &[&str]) -> Output {
    run_in(env!("CARGO_BIN_EXE_neverc-spec"), &repo(), args)
}

/// A panic of the binary exits with 101; the documented statuses are 0 to 5.
fn assert_no_panic(output: &Output) {
    let stderr = text(&output.stderr);
    assert!(
        !stderr.contains("panicked") && output.status.code().is_some_and(|code| code <= 5),
        "status {:?}: {}",
        output.status,
        &stderr[..stderr.len().min(2000)]
    );
}

fn bundled_schema() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(repo().join("PhaseSchema.json")).unwrap()).unwrap()
}

#[test]
fn an_error_past_column_65535_of_a_minified_schema_is_rendered() {
    let dir = scratch!("hostile-minified");
    let mut schema = bundled_schema();
    schema["phases"][0]["name"] = format!("neverc.ir.{}", "a".repeat(70_000)).into();
    let last = schema["phases"].as_array().unwrap().len() - 1;
    schema["phases"][last]["name"] = "BAD NAME".into();
    let path = dir.join("min.json");
    std::fs::write(&path, serde_json::to_string(&schema).unwrap()).unwrap();
    let output = run(&["check", "--phase-schema", path.to_str().unwrap()]);
    assert_no_panic(&output);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("\"BAD NAME\" does not match"), "{stderr}");
    // The real position is named, and the snippet shows the offending value.
    let column = serde_json::to_string(&schema).unwrap().find("\"BAD NAME\"").unwrap() + 1;
    assert!(stderr.contains(&format!("min.json:1:{column}:")), "{stderr}");
    assert!(stderr.len() < 20_000, "{} bytes of diagnostics", stderr.len());
}

#[test]
fn an_error_past_column_65535_of_a_signature_is_rendered() {
    let signature = format!("i32 ({}i32 i32)", "i32, ".repeat(20_000));
    let output = run(&[
        "cc", "plan", "--target", "x86_64", "--spec", "gpr:rcx", "--sig", &signature,
    ]);
    assert_no_panic(&output);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("invalid --sig"), "{stderr}");
    assert!(stderr.len() < 5_000, "{} bytes of diagnostics", stderr.len());
}

#[test]
fn a_fifty_megabyte_value_gives_a_few_kilobytes_of_diagnostics() {
    let dir = scratch!("hostile-big-value");
    let original = std::fs::read_to_string(repo().join("targets/x86_64.toml")).unwrap();
    let line = original.lines().find(|line| line.starts_with("triple = ")).unwrap();
    let big = original.replacen(line, &format!("triple = \"{}\"", "Y".repeat(50_000_000)), 1);
    std::fs::write(dir.join("x86_64.toml"), big).unwrap();
    let output = run(&["check", "--targets", dir.to_str().unwrap()]);
    assert_no_panic(&output);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.len() < 20_000, "{} bytes of diagnostics", stderr.len());
    assert!(stderr.contains("more bytes)"), "the clipped value says so: {stderr}");

    let output = run(&["check", "--targets", dir.to_str().unwrap(), "--format", "json"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.len() < 20_000, "{} bytes of JSON", output.stdout.len());
}

#[test]
fn an_empty_target_directory_is_an_error_not_valid() {
    let dir = scratch!("hostile-no-targets");
    let output = run(&["check", "--targets", dir.to_str().unwrap()]);
    assert_no_panic(&output);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    assert!(
        text(&output.stderr).contains("no target files"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn a_number_too_large_for_u32_is_reported_where_it_stands() {
    let dir = scratch!("hostile-u32");
    let original = std::fs::read_to_string(repo().join("targets/x86_64.toml")).unwrap();
    let line = original
        .lines()
        .position(|line| line.starts_with("plan_number = "))
        .unwrap();
    let changed: Vec<String> = original
        .lines()
        .enumerate()
        .map(|(index, text)| {
            if index == line {
                "plan_number = 5000000000".to_string()
            } else {
                text.to_string()
            }
        })
        .collect();
    std::fs::write(dir.join("x86_64.toml"), changed.join("\n")).unwrap();
    let output = run(&["check", "--targets", dir.to_str().unwrap(), "--format", "json"]);
    assert_eq!(output.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let diagnostic = &report["diagnostics"][0];
    assert_eq!(diagnostic["line"], line + 1, "{diagnostic}");
    assert_eq!(diagnostic["column"], "plan_number = ".len() + 1, "{diagnostic}");
    assert!(
        diagnostic["pointer"].as_str().unwrap().ends_with("/plan_number"),
        "{diagnostic}"
    );
}

#[test]
fn a_json_array_manifest_is_refused_as_json() {
    let dir = scratch!("hostile-manifest");
    let path = dir.join("manifest.json");
    std::fs::write(&path, r#"[{"plugin": "x", "phases": []}]"#).unwrap();
    let output = run(&["audit", "--plugin-manifest", path.to_str().unwrap()]);
    assert_no_panic(&output);
    assert_ne!(output.status.code(), Some(0));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("not an array"), "read as JSON, not TOML: {stderr}");
}

fn export_vectors(dir: &Path) -> std::path::PathBuf {
    let vectors = dir.join("vectors");
    let output = run(&["gen", "conformance", "--out", vectors.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    vectors
}

#[test]
fn a_vector_file_without_cases_is_refused() {
    let dir = scratch!("hostile-empty-vectors");
    let vectors = export_vectors(&dir);
    let file = vectors.join("targets_x86_64.conformance.json");
    let mut set: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    set["cases"] = serde_json::json!([]);
    std::fs::write(&file, serde_json::to_string(&set).unwrap()).unwrap();
    let output = run(&["conformance", "--vectors", vectors.to_str().unwrap()]);
    assert_no_panic(&output);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    assert!(
        text(&output.stderr).contains("holds no cases"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn duplicate_case_ids_are_refused_within_and_across_files() {
    let dir = scratch!("hostile-duplicate-cases");
    let vectors = export_vectors(&dir);
    let file = vectors.join("targets_x86_64.conformance.json");
    let original = std::fs::read_to_string(&file).unwrap();
    let mut set: serde_json::Value = serde_json::from_str(&original).unwrap();
    let first = set["cases"][0].clone();
    set["cases"].as_array_mut().unwrap().push(first);
    std::fs::write(&file, serde_json::to_string(&set).unwrap()).unwrap();
    let output = run(&["conformance", "--vectors", vectors.to_str().unwrap()]);
    assert_no_panic(&output);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    assert!(
        text(&output.stderr).contains("more than once"),
        "{}",
        text(&output.stderr)
    );

    // The same file twice under another name: every id repeats across files.
    std::fs::write(&file, original).unwrap();
    std::fs::copy(&file, vectors.join("copy.conformance.json")).unwrap();
    let output = run(&["conformance", "--vectors", vectors.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    assert!(text(&output.stderr).contains("is in both"), "{}", text(&output.stderr));
}

/// The characters a terminal acts on that a diagnostic must not print raw: C0 controls other than the
/// newlines and tabs of its own layout, DEL, and the C1 controls (U+0080 to U+009F, U+009B being CSI).
fn raw_controls(printed: &str) -> Vec<char> {
    printed
        .chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .collect()
}

/// Item 13 of issue 23: user data in diagnostics carries no raw control bytes to the terminal. A symbol name
/// with an ESC sequence, a CR and a C1 CSI (from clang-14, which writes any name), file names with an OSC
/// title sequence, a spec with an ESC sequence, a phase schema and a linker script with raw ESC bytes in
/// their text: each error names them with the controls escaped (`\x1b`, `\r`, `\u{9b}`), and JSON output
/// escapes them too while keeping the value.
#[test]
fn item_13_control_bytes_of_user_data_are_escaped_in_diagnostics() {
    let dir = scratch!("hostile-control-bytes");
    let bin = env!("CARGO_BIN_EXE_neverc-spec");
    let checked = |output: &Output, what: &str| -> String {
        assert_no_panic(output);
        let stderr = text(&output.stderr);
        assert!(!output.status.success(), "{what}: {stderr}");
        assert_eq!(raw_controls(&stderr), Vec::<char>::new(), "{what}: {stderr:?}");
        stderr
    };

    // An undefined symbol named with an ESC sequence, a CR and a C1 CSI, in an object whose file name
    // carries an OSC sequence that would retitle the terminal.
    std::fs::write(
        dir.join("u.c"),
        "extern int evil(void) __asm__(\"\\x1b[31mevil\\r\\xc2\\x9b\" \"2J\");\nvoid _start(void) { evil(); }\n",
    )
    .unwrap();
    let object = "u\u{1b}]0;owned\u{7}.o";
    let compiled = run_in("clang-14", &dir, &["-c", "-O2", "-fno-pie", "u.c", "-o", object]);
    assert!(compiled.status.success(), "clang-14: {}", text(&compiled.stderr));
    // Through `link` and the `ld` driver, the undefined symbol and the object referring to it are named
    // escaped, and so is a file that cannot be read.
    let missing = "gone\u{1b}[2J\r.o";
    for command in ["link", "ld"] {
        for (input, expected) in [
            (object, [r"\x1b[31mevil\r\u{9b}2J", r"u\x1b]0;owned\x07.o"]),
            (missing, [r"gone\x1b[2J\r.o", "cannot read"]),
        ] {
            let output = run_in(bin, &dir, &[command, "-static", "-o", "a.out", input]);
            let stderr = checked(&output, &format!("{command} {input:?}"));
            for expected in expected {
                assert!(stderr.contains(expected), "{command}: {expected}: {stderr}");
            }
        }
    }

    // A spec in a caret diagnostic (miette's snippet of the spec and its message).
    let output = run(&[
        "cc",
        "plan",
        "--target",
        "x86_64",
        "--spec",
        "gpr:\u{1b}[31mrcx",
        "--sig",
        "i32 (i32)",
    ]);
    let stderr = checked(&output, "spec");
    assert!(stderr.contains(r"\x1b[31mrcx"), "{stderr}");

    // A phase schema with raw ESC bytes and a CR inside a string: the snippet of its line is escaped, and
    // the file name in the header line too.
    let schema = dir.join("schema\u{1b}[1m.json");
    std::fs::write(
        &schema,
        "{\n  \"schema_version\": 1,\n  \"phases\": \"\u{1b}[31mred\r\"\n}\n",
    )
    .unwrap();
    let output = run(&["check", "--phase-schema", schema.to_str().unwrap()]);
    let stderr = checked(&output, "phase schema");
    assert!(stderr.contains(r"schema\x1b[1m.json"), "{stderr}");
    assert!(stderr.contains(r"\x1b[31mred\r"), "{stderr}");

    // A linker script with an ESC sequence where a command belongs (the `ld` driver's snippet).
    std::fs::write(dir.join("evil.ld"), "GROUP ( a.o )\n\u{1b}[31mNOT_A_COMMAND ( b.o )\n").unwrap();
    let output = run_in(bin, &dir, &["ld", "-static", "-o", "a.out", "evil.ld"]);
    let stderr = checked(&output, "linker script");
    assert!(stderr.contains(r"\x1b[31mNOT_A_COMMAND"), "{stderr}");

    // JSON keeps the value and prints no raw control either (serde escapes C0; DEL and C1 too).
    let query = "\u{9b}2J\u{7f}rcx\u{1b}";
    let output = run(&["resolve", "--target", "x86_64", query, "--format", "json"]);
    assert_no_panic(&output);
    let stdout = text(&output.stdout);
    assert_eq!(raw_controls(&stdout), Vec::<char>::new(), "{stdout:?}");
    let rows: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(rows[0]["query"], query, "{stdout}");
    // The text answer names the query escaped.
    let output = run(&["resolve", "--target", "x86_64", query]);
    let stdout = text(&output.stdout);
    assert_eq!(raw_controls(&stdout), Vec::<char>::new(), "{stdout:?}");
    assert!(stdout.contains(r"\u{9b}2J\x7frcx\x1b -> not a register"), "{stdout}");
}
