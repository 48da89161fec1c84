#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Adding a target is adding a TOML file and rebuilding: no Rust edits.
//!
//! The test copies the workspace, drops a new file into `targets/`, rebuilds the CLI with Cargo (in its own
//! target directory, so it never waits on the lock of the build running this test) and uses the new target
//! from every command.

use std::path::{Path, PathBuf};
use std::process::Command;

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
    let output = Command::new(binary).args(args).current_dir(dir).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{args:?}: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn a_new_toml_file_and_a_rebuild_add_a_target_to_every_command() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let copy = std::env::temp_dir().join(format!("neverc-spec-new-target-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&copy);
    copy_tree(&repo, &copy);
    std::fs::copy(
        repo.join("codegen/tests/fixtures/targets/toy.toml"),
        copy.join("targets/toy.toml"),
    )
    .unwrap();

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
    let out = copy.join("generated");
    run(&binary, &copy, &["gen", "--out", out.to_str().unwrap()]);
    assert!(out.join("target_toy.rs").is_file());

    // The original build does not know the new target.
    let original = Command::new(env!("CARGO_BIN_EXE_neverc-spec"))
        .args(["resolve", "--target", "toy", "r1"])
        .output()
        .unwrap();
    assert_eq!(original.status.code(), Some(1));
    std::fs::remove_dir_all(&copy).unwrap();
}
