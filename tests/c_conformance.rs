#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The generated conformance vectors run through a plugin written in C (`runtime/plugin-host/tests/fixtures/conform.c`,
//! which asks for what each case asks and reports the host's answers): every case a plugin can ask gets the
//! same verdict as from the Rust runner, and a vector changed to expect something else fails through both.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use neverc_test_support::{build_c_plugin, repo, run_in, scratch, text};

fn run(args: &[&str]) -> Output {
    run_in(env!("CARGO_BIN_EXE_neverc-spec"), &repo(), args)
}

/// `neverc-spec conformance` over `vectors`, linking the fixture program, through `plugin` if given: every
/// case's verdict ("passed", "not applicable: REASON" or "failed: REASON"), and the exit status.
fn verdicts(vectors: &Path, plugin: Option<&Path>) -> (BTreeMap<String, String>, Option<i32>) {
    let inputs = neverc_conformance::fixture_link_inputs(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    let mut args: Vec<String> = vec!["conformance".into(), "--vectors".into(), vectors.display().to_string()];
    for input in &inputs {
        args.push("--link-input".into());
        args.push(input.display().to_string());
    }
    if let Some(plugin) = plugin {
        args.push("--plugin".into());
        args.push(plugin.display().to_string());
    }
    args.push("--format".into());
    args.push("json".into());
    let arguments: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = run(&arguments);
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|error| panic!("{error}: {}", text(&output.stderr)));
    let mut verdicts = BTreeMap::new();
    let sets: Vec<(String, serde_json::Value)> = std::fs::read_dir(vectors)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let set: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            (set["source"].as_str().unwrap().to_string(), set)
        })
        .collect();
    for (source, set) in &sets {
        let result = report
            .as_array()
            .unwrap()
            .iter()
            .find(|result| result["source"] == source.as_str())
            .unwrap();
        let listed = |field: &str, word: &str| -> Vec<(String, String)> {
            result[field]
                .as_array()
                .unwrap()
                .iter()
                .map(|verdict| {
                    (
                        verdict["id"].as_str().unwrap().to_string(),
                        format!("{word}: {}", verdict["reason"].as_str().unwrap()),
                    )
                })
                .collect()
        };
        let mut others: BTreeMap<String, String> = listed("not_applicable", "not applicable").into_iter().collect();
        others.extend(listed("failed", "failed"));
        for case in set["cases"].as_array().unwrap() {
            let id = case["id"].as_str().unwrap().to_string();
            let verdict = others.get(&id).cloned().unwrap_or_else(|| "passed".to_string());
            verdicts.insert(format!("{source} {id}"), verdict);
        }
    }
    (verdicts, output.status.code())
}

fn generic_plugin(dir: &Path) -> PathBuf {
    let plugin = dir.join("conform.so");
    build_c_plugin(
        &repo().join("runtime/plugin-host/tests/fixtures/conform.c"),
        &plugin,
        &[],
    );
    plugin
}

fn export(dir: &Path) -> PathBuf {
    let vectors = dir.join("vectors");
    let exported = run(&["gen", "conformance", "--out", vectors.to_str().unwrap()]);
    assert!(exported.status.success(), "{}", text(&exported.stderr));
    vectors
}

/// Whether a source's cases are asked of plugins (the phase schema's and the plugin ABI's).
fn plugin_case(key: &str) -> bool {
    key.starts_with("PhaseSchema.json ") || key.starts_with("abi/")
}

#[test]
fn a_c_plugin_gets_the_verdicts_of_the_rust_runner_on_every_plugin_case() {
    let dir = scratch!("c-conformance");
    let plugin = generic_plugin(&dir);
    let vectors = export(&dir);
    let (rust, rust_status) = verdicts(&vectors, None);
    let (c, c_status) = verdicts(&vectors, Some(&plugin));
    assert_eq!((rust_status, c_status), (Some(0), Some(0)));
    assert_eq!(rust.len(), c.len());
    let mut compared = 0;
    for (key, verdict) in &rust {
        if plugin_case(key) {
            // Not-applicable reasons are worded by each runner; the verdict itself must match.
            let kind = |verdict: &str| verdict.split(':').next().unwrap_or_default().to_string();
            assert_eq!(kind(&c[key]), kind(verdict), "{key}: C {} / Rust {verdict}", c[key]);
            compared += 1;
        } else {
            assert!(c[key].starts_with("not applicable: a target case"), "{key}: {}", c[key]);
        }
    }
    let passed = c.values().filter(|verdict| *verdict == "passed").count();
    assert!(
        compared >= 283 && passed >= 270,
        "{compared} compared, {passed} passed through C"
    );
}

#[test]
fn a_changed_vector_fails_through_the_c_plugin_as_through_rust() {
    let dir = scratch!("c-conformance-changed");
    let plugin = generic_plugin(&dir);
    let vectors = export(&dir);
    // Flip what three plugin cases expect: a registration's verdict, a mutation's state, a descriptor's status.
    let path = vectors.join("PhaseSchema.conformance.json");
    let mut set: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut changed = Vec::new();
    for case in set["cases"].as_array_mut().unwrap() {
        let id = case["id"].as_str().unwrap().to_string();
        if id == "registration/neverc.link.commit/intercept" {
            case["allowed"] = serde_json::Value::Bool(true);
            changed.push(id);
        } else if id == "mutation_lowers_state/link/layout_constraint" {
            case["expected_state"] = serde_json::Value::String("INITIAL".into());
            changed.push(id);
        }
    }
    std::fs::write(&path, set.to_string()).unwrap();
    let path = vectors.join("abi_lto.conformance.json");
    let mut set: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let case = &mut set["cases"].as_array_mut().unwrap()[0];
    case["expected"] = serde_json::Value::String("DUPLICATE_ID".into());
    changed.push(case["id"].as_str().unwrap().to_string());
    std::fs::write(&path, set.to_string()).unwrap();
    assert_eq!(changed.len(), 3, "{changed:?}");
    for plugin in [None, Some(plugin.as_path())] {
        let (verdicts, status) = verdicts(&vectors, plugin);
        assert_eq!(status, Some(5), "{plugin:?}");
        let failed: Vec<&String> = verdicts
            .iter()
            .filter(|(_, verdict)| verdict.starts_with("failed"))
            .map(|(key, _)| key)
            .collect();
        assert_eq!(failed.len(), 3, "{plugin:?}: {failed:?}");
        for id in &changed {
            assert!(
                failed.iter().any(|key| key.ends_with(&format!(" {id}"))),
                "{plugin:?}: {id}"
            );
        }
    }
}
