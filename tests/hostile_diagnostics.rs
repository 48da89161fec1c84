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
