#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Adding a target is adding a TOML file and rebuilding: no Rust edits. Adding a phase is editing
//! `PhaseSchema.json` and rebuilding.
//!
//! The test copies the workspace, drops a new file into `targets/` and appends a phase to the schema, rebuilds
//! the CLI with Cargo (in its own target directory, so it never waits on the lock of the build running this
//! test), uses the new target from every command, and runs the conformance tests the rebuild generated: the new
//! target and the new phase have tests of their own, counted per source.

use std::path::Path;
use std::process::Command;

use neverc_test_support::{add_phase_like, repo, run_in, scratch, text};

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if [".git", "target", "fuzz"].iter().any(|skip| name == *skip) {
            continue;
        }
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&path, &to.join(&name));
        } else {
            std::fs::copy(&path, to.join(&name)).unwrap();
        }
    }
}

fn run(binary: &Path, dir: &Path, args: &[&str]) -> String {
    let output = run_in(binary, dir, args);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{args:?}: {stdout}{}", text(&output.stderr));
    stdout
}

#[test]
fn a_new_toml_file_or_phase_and_a_rebuild_add_a_target_to_every_command_and_conformance_tests() {
    let repo = repo();
    let copy = scratch!("neverc-spec-new-target");
    copy_tree(&repo, &copy);
    std::fs::copy(
        repo.join("codegen/tests/fixtures/targets/toy.toml"),
        copy.join("targets/toy.toml"),
    )
    .unwrap();
    let schema_path = copy.join("PhaseSchema.json");
    let mut schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&schema_path).unwrap()).unwrap();
    add_phase_like(
        &mut schema,
        "neverc.ir.pass.post_opt",
        "neverc.ir.pass.vectorize",
        "IR_PASS_VECTORIZE",
        "0x0000000000000077",
    );
    std::fs::write(&schema_path, serde_json::to_string_pretty(&schema).unwrap()).unwrap();

    let target_dir = repo.join("target").join("new-target-test");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--bin", "neverc-spec"])
        .env("CARGO_TARGET_DIR", &target_dir)
        .current_dir(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    let binary = target_dir.join("debug").join("neverc-spec");

    let targets = run(&binary, &copy, &["targets"]);
    assert!(
        targets
            .lines()
            .any(|line| line.starts_with("toy") && line.contains("compiled-in")),
        "{targets}"
    );
    let resolved = run(&binary, &copy, &["resolve", "--target", "TOY64", "a1", "s0", "#34"]);
    assert!(
        resolved.contains("a1       -> r1 (gpr, 64-bit alias), plan number 2"),
        "{resolved}"
    );
    assert!(
        resolved.contains("s0       -> f0 (fpr, 32-bit sub-register)"),
        "{resolved}"
    );
    assert!(resolved.contains("#34      -> f1"), "{resolved}");
    let checked = run(&binary, &copy, &["check"]);
    assert!(
        checked.contains("targets (4): valid") && checked.contains("toy-unknown-none"),
        "{checked}"
    );
    // The `ld` driver's `-m` knows the new target's emulations: it becomes the link's target, and an x86-64
    // object is refused for it.
    let help = run(&binary, &copy, &["ld", "--help"]);
    assert!(help.contains("elf64toy, toyelf (toy)"), "{help}");
    std::fs::write(copy.join("x.c"), "int x(void) { return 1; }\n").unwrap();
    let compiled = run_in("gcc", &copy, &["-c", "x.c", "-o", "x.o"]);
    assert!(compiled.status.success(), "{}", text(&compiled.stderr));
    let linked = run_in(&binary, &copy, &["ld", "-static", "-mtoyelf", "-o", "x", "x.o"]);
    assert_eq!(linked.status.code(), Some(1), "{}", text(&linked.stderr));
    assert!(
        text(&linked.stderr)
            .contains("the link's target is toy (ELF machine 4660, 64-bit, little-endian), set by `-m toyelf`"),
        "{}",
        text(&linked.stderr)
    );
    let out = copy.join("generated");
    run(&binary, &copy, &["gen", "--out", out.to_str().unwrap()]);
    assert!(out.join("target_toy.rs").is_file());

    // The rebuild generated conformance tests for the new target and the new phase.
    let bundled = neverc_schema::load_declarations(
        &repo.join("PhaseSchema.json"),
        &neverc_schema::target_files(&repo.join("targets")).unwrap(),
    )
    .unwrap();
    let bundled_sets = neverc_codegen::conformance::conformance_case_sets(&bundled, &repo).unwrap();
    let conformance = |filter: &[&str]| {
        let output = Command::new(env!("CARGO"))
            .args([
                "test",
                "--quiet",
                "-p",
                "neverc-conformance",
                "--test",
                "generated",
                "--",
            ])
            .args(filter)
            .env("CARGO_TARGET_DIR", &target_dir)
            .current_dir(&copy)
            .output()
            .unwrap();
        let stdout = text(&output.stdout);
        assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
        stdout
    };
    let counts = conformance(&["--nocapture", "--exact", "generated_tests_per_source"]);
    println!("{counts}");
    let count_of = |source: &str| -> usize {
        let line = counts
            .lines()
            .find(|line| line.starts_with(&format!("conformance: {source}: ")))
            .unwrap_or_else(|| panic!("no count for {source}: {counts}"));
        line.split(": ")
            .nth(2)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let bundled_schema_cases = bundled_sets[0].cases.len();
    assert_eq!(
        count_of("PhaseSchema.json"),
        bundled_schema_cases + 6,
        "six registration tests per phase"
    );
    let toy_tests = count_of("targets/toy.toml");
    assert!(toy_tests > 0);
    // The new tests run and pass (the filter selects test names that contain `toy` or the new phase).
    let toy = conformance(&["toy"]);
    assert!(toy.contains(&format!("{toy_tests} passed")), "{toy}");
    let vectorize = conformance(&["vectorize"]);
    assert!(vectorize.contains("6 passed"), "{vectorize}");

    // The original build does not know the new target.
    let original = Command::new(env!("CARGO_BIN_EXE_neverc-spec"))
        .args(["resolve", "--target", "toy", "r1"])
        .output()
        .unwrap();
    assert_eq!(original.status.code(), Some(1));
    std::fs::remove_dir_all(&copy).unwrap();
}
