#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `neverc-spec link --plugin PATH.so`: a plugin written in C against the generated headers observes every
//! transition of a real link (a program with gcc objects and LLVM bitcode) before and after, in the order
//! the phases run; the program still runs. An observer that fails fails the link naming the plugin and its
//! status, and the previous output stays as it was.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use neverc_test_support::{build_c_plugin, repo, scratch, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

fn counter(dir: &Path, defines: &[&str]) -> PathBuf {
    let output = dir.join(format!("counter{}.so", defines.join("-")));
    build_c_plugin(&repo().join("plugin-host/tests/fixtures/counter.c"), &output, defines);
    output
}

/// The link machine's transitions, by name, with the `HIGH:LOW` id the plugin is given.
fn transitions() -> Vec<(&'static str, String)> {
    let tables = &neverc_tables::BUNDLED_PHASES;
    let machine = neverc_link::execute::link_state_machine(tables).unwrap();
    machine
        .transitions
        .iter()
        .map(|transition| {
            let phase = &tables.phases[transition.phase];
            (phase.name, format!("{:#x}:{:#x}", phase.id.high, phase.id.low))
        })
        .collect()
}

fn link(plugin: &Path, output: &Path) -> Output {
    let inputs = neverc_conformance::fixture_link_inputs(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    let mut command = Command::new(BIN);
    command
        .arg("link")
        .arg("-o")
        .arg(output)
        .args(&inputs)
        .arg("--trace-phases")
        .arg("--plugin")
        .arg(plugin);
    for (_, id) in transitions() {
        command
            .arg("--plugin-arg")
            .arg(format!("org.example.counter:observe={id}"));
    }
    command.output().unwrap()
}

#[test]
fn a_c_observer_sees_every_transition_before_and_after_in_order() {
    let dir = scratch!("c-plugin-observer");
    let output = dir.join("a.out");
    let linked = link(&counter(&dir, &[]), &output);
    assert!(linked.status.success(), "{}", text(&linked.stderr));
    let notes: Vec<String> = text(&linked.stderr)
        .lines()
        .filter_map(|line| line.strip_prefix("note: plugin `org.example.counter`: "))
        .map(str::to_string)
        .collect();
    // The phases in the order they ran, from the trace.
    let ids = transitions();
    let mut expected = Vec::new();
    for line in text(&linked.stdout).lines() {
        let phase = line.split_whitespace().next().unwrap_or_default();
        if let Some((_, id)) = ids.iter().find(|(name, _)| *name == phase) {
            expected.push(format!("before {id}"));
            expected.push(format!("after {id}"));
        }
    }
    assert_eq!(expected.len(), 2 * ids.len(), "{}", text(&linked.stdout));
    assert_eq!(notes, expected);
    let inputs = neverc_conformance::fixture_link_inputs(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    let ran = Command::new(&output).output().unwrap();
    let dir = inputs[0].parent().unwrap();
    assert_eq!(
        text(&ran.stdout),
        std::fs::read_to_string(dir.join("expected.stdout")).unwrap()
    );
}

#[test]
fn a_failing_c_observer_fails_the_link_and_leaves_the_old_output() {
    let dir = scratch!("c-plugin-failing");
    let output = dir.join("a.out");
    std::fs::write(&output, b"the previous output").unwrap();
    let linked = link(&counter(&dir, &["MODE_FAIL_AFTER"]), &output);
    assert_eq!(linked.status.code(), Some(1), "{}", text(&linked.stderr));
    let stderr = text(&linked.stderr);
    assert!(
        stderr.contains("plugin `org.example.counter`: its observer returned PLUGIN_FAILURE"),
        "{stderr}"
    );
    // The first transition's AFTER observer failed: the link stopped there.
    assert!(stderr.contains(transitions()[0].0), "{stderr}");
    assert_eq!(std::fs::read(&output).unwrap(), b"the previous output");
}
