#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `neverc-spec audit`, `gen conformance` and `conformance` as a user runs them: exit codes, what they print,
//! files written whole.

use std::process::{Command, Output};

use neverc_test_support::{NEVERC_HISTORY, repo, run_in, scratch, text};

/// Runs the CLI in the workspace root.
fn run(args: &[&str]) -> Output {
    run_in(env!("CARGO_BIN_EXE_neverc-spec"), &repo(), args)
}

fn neverc(name: &str) -> String {
    format!("tests/fixtures/neverc/{name}")
}

#[test]
fn audit_of_our_schema_and_neverc_newest_in_every_format() {
    let dir = scratch!("audit-cli-formats");
    for schema in ["PhaseSchema.json".to_string(), neverc("PhaseSchema.json")] {
        let output = run(&["audit", "--phase-schema", &schema]);
        assert!(output.status.success(), "{}", text(&output.stderr));
        let stdout = text(&output.stdout);
        println!("{stdout}");
        assert!(stdout.starts_with(&format!("Sealing audit of {schema}")), "{stdout}");
        assert!(stdout.contains("Invariants of validation: 28 of 28 hold"), "{stdout}");
        assert!(
            stdout.contains("sealed gate neverc.link.commit (sealed_commit)"),
            "{stdout}"
        );

        let json = run(&["audit", "--phase-schema", &schema, "--format", "json"]);
        let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        let declared: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(repo().join(&schema)).unwrap()).unwrap();
        assert_eq!(
            value["sealing"]["phase_count"],
            declared["phases"].as_array().unwrap().len()
        );

        let dot = text(&run(&["audit", "--phase-schema", &schema, "--format", "dot"]).stdout);
        assert!(dot.contains("digraph \"phase_policy_matrix\""));
        assert_eq!(
            dot.contains("digraph \"link_state_machine\""),
            schema == "PhaseSchema.json"
        );

        let page = dir.join(format!("{}.html", schema.replace('/', "_")));
        let html = run(&[
            "audit",
            "--phase-schema",
            &schema,
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ]);
        assert!(
            html.status.success() && html.stdout.is_empty(),
            "{}",
            text(&html.stderr)
        );
        let page = std::fs::read_to_string(&page).unwrap();
        assert!(page.starts_with("<!DOCTYPE html>") && page.trim_end().ends_with("</html>"));
    }
}

#[test]
fn the_dot_output_renders_with_graphviz() {
    let output = run(&["audit", "--format", "dot"]);
    let dir = scratch!("audit-cli-dot");
    let path = dir.join("audit.dot");
    std::fs::write(&path, &output.stdout).unwrap();
    let rendered = Command::new("dot").arg("-Tsvg").arg(&path).output().unwrap();
    assert!(rendered.status.success(), "{}", text(&rendered.stderr));
    let svg = text(&rendered.stdout);
    assert_eq!(svg.matches("<svg").count(), 2, "one picture per graph");
    assert!(svg.contains("LAYOUT_COMPLETE") && svg.contains("neverc.link.commit"));
}

#[test]
fn the_baseline_diff_over_neverc_history_finds_no_breaking_change() {
    for pair in NEVERC_HISTORY.windows(2) {
        let output = run(&[
            "audit",
            "--phase-schema",
            &neverc(pair[1]),
            "--baseline",
            &neverc(pair[0]),
        ]);
        let stdout = text(&output.stdout);
        let summary = stdout.lines().find(|line| line.starts_with("Baseline diff")).unwrap();
        println!("{summary}");
        assert!(output.status.success(), "{summary}");
        assert!(summary.contains(": 0 breaking"), "{summary}");
        assert!(stdout.contains("  no breaking change"));
    }
}

#[test]
fn a_deliberately_broken_history_fails_with_exit_5_and_names_each_break() {
    let output = run(&[
        "audit",
        "--phase-schema",
        &neverc("PhaseSchema.7adbf41.json"),
        "--baseline",
        &neverc("PhaseSchema.json"),
    ]);
    assert_eq!(output.status.code(), Some(5));
    let stdout = text(&output.stdout);
    let downgrades: Vec<&str> = stdout
        .lines()
        .filter(|line| line.trim_start().starts_with("breaking") && line.contains("stability-downgrade"))
        .collect();
    assert_eq!(downgrades.len(), 34, "{stdout}");
    assert!(
        downgrades
            .iter()
            .all(|line| line.contains("was downgraded to experimental"))
    );
    assert!(
        text(&output.stderr).contains("audit failed: 34 breaking change(s)"),
        "{}",
        text(&output.stderr)
    );

    // JSON says the same, for machines.
    let json = run(&[
        "audit",
        "--phase-schema",
        &neverc("PhaseSchema.c3139b3.json"),
        "--baseline",
        &neverc("PhaseSchema.3b975d8.json"),
        "--format",
        "json",
    ]);
    assert_eq!(json.status.code(), Some(5));
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let removed = value["baseline"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|change| change["class"] == "breaking" && change["rule"] == "phase-removed")
        .count();
    assert_eq!(removed, 12);
}

#[test]
fn a_manifest_that_intercepts_the_commit_gate_is_refused_with_the_runtime_message() {
    let dir = scratch!("audit-cli-manifest");
    let manifest = dir.join("commit-hook.toml");
    std::fs::write(
        &manifest,
        "plugin = \"commit-hook\"\n\n[[phases]]\nname = \"neverc.link.commit\"\nintercept = true\n\n[[phases]]\nname = \"neverc.link.layout\"\nobserve = [\"BEFORE\"]\nintercept = true\n",
    )
    .unwrap();
    let output = run(&["audit", "--plugin-manifest", manifest.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(5));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains(
            "refused  intercept neverc.link.commit [sealed-gate]: POLICY_VIOLATION: phase `neverc.link.commit` \
             is not INTERCEPTABLE (its declared policy is OBSERVABLE|SEALED_HOST_GATE)"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("allowed  intercept neverc.link.layout"));
    assert!(stdout.contains("3 request(s), 1 refused"));

    // A manifest with a typo is a usage problem of the manifest, named with its line.
    let broken = dir.join("typo.toml");
    std::fs::write(
        &broken,
        "plugin = \"p\"\n[[phases]]\nname = \"neverc.link.gc\"\nintercepts = true\n",
    )
    .unwrap();
    let output = run(&["audit", "--plugin-manifest", broken.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("typo.toml:4:"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn exported_vectors_run_against_this_implementation_and_count_per_source() {
    let dir = scratch!("audit-cli-vectors");
    let out = dir.join("vectors");
    let output = run(&["gen", "conformance", "--out", out.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    println!("{stdout}");
    for source in [
        "PhaseSchema.json",
        "targets/x86_64.toml",
        "targets/aarch64.toml",
        "targets/riscv64.toml",
    ] {
        assert!(
            stdout.lines().any(|line| line.starts_with(&format!("{source}: "))),
            "{source}: {stdout}"
        );
    }
    let output = run(&["conformance", "--vectors", out.to_str().unwrap()]);
    let report = text(&output.stdout);
    println!("{report}");
    assert!(output.status.success(), "{report}{}", text(&output.stderr));
    assert!(
        report.contains("targets/x86_64.toml: 126 passed, 0 not applicable, 0 failed"),
        "{report}"
    );

    // With a program to link, the link cases run too: only the listed ones are not applicable.
    let inputs = neverc_conformance::fixture_link_inputs(std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    let mut args = vec!["conformance".to_string(), "--vectors".into(), out.display().to_string()];
    for input in &inputs {
        args.push("--link-input".into());
        args.push(input.display().to_string());
    }
    let output = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let report = text(&output.stdout);
    println!("{report}");
    assert!(output.status.success(), "{report}{}", text(&output.stderr));
    let listed = std::fs::read_to_string(repo().join("conformance/not_applicable.txt"))
        .unwrap()
        .lines()
        .filter(|line| !line.trim_start().starts_with('#') && !line.trim().is_empty())
        .count();
    let cases = std::fs::read_to_string(out.join("PhaseSchema.conformance.json"))
        .unwrap()
        .matches("\"id\":")
        .count();
    assert!(
        report.contains(&format!(
            "PhaseSchema.json: {} passed, {listed} not applicable, 0 failed",
            cases - listed
        )),
        "{report}"
    );

    // A vector whose expectation is wrong fails the run (exit 5), naming the case.
    let path = out.join("targets_x86_64.conformance.json");
    let mut vectors: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let number = &mut vectors["cases"][0]["number"];
    *number = (number.as_u64().unwrap() + 1).into();
    std::fs::write(&path, serde_json::to_string_pretty(&vectors).unwrap()).unwrap();
    let output = run(&["conformance", "--vectors", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(5));
    assert!(
        text(&output.stdout).contains("FAILED register_resolves/x86_64/"),
        "{}",
        text(&output.stdout)
    );
}

/// Item 13 of issue 23: the JSON report lists the warnings the text run prints. A baseline that breaks an
/// invariant of validation (the commit gate made interceptable) is diffed as it is, with a warning.
#[test]
fn item_13_the_json_audit_lists_the_warnings_the_text_audit_prints() {
    let dir = scratch!("audit-json-warnings");
    let mut document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("PhaseSchema.json")).unwrap()).unwrap();
    let commit = document["phases"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|phase| phase["name"] == "neverc.link.commit")
        .unwrap();
    commit["policy"] = serde_json::json!(["OBSERVABLE", "INTERCEPTABLE", "SEALED_HOST_GATE"]);
    let baseline = dir.join("old.json");
    std::fs::write(&baseline, serde_json::to_string_pretty(&document).unwrap()).unwrap();
    let baseline = baseline.to_str().unwrap();
    let text_run = run(&["audit", "--baseline", baseline]);
    let stderr = text(&text_run.stderr);
    let warning = stderr
        .lines()
        .find_map(|line| line.strip_prefix("warning: "))
        .unwrap_or_else(|| panic!("no warning: {stderr}"));
    assert!(warning.contains("breaks 1 invariant(s) of validation"), "{warning}");
    let json_run = run(&["audit", "--baseline", baseline, "--format", "json"]);
    assert_eq!(json_run.status.code(), text_run.status.code());
    let report: serde_json::Value = serde_json::from_slice(&json_run.stdout).unwrap();
    assert_eq!(report["warnings"], serde_json::json!([warning]), "{report}");
    // A clean run lists none.
    let clean = run(&["audit", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&clean.stdout).unwrap();
    assert_eq!(report["warnings"], serde_json::json!([]));
}
