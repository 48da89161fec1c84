#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `neverc-spec audit --plugin PATH.so`: a plugin written in C against the generated headers is loaded and
//! registers with a dry-run registrar; what it asks for gets the verdicts the same requests get in a plugin
//! manifest. A library that is no plugin, and an argument for no loaded plugin, are errors.

use std::path::{Path, PathBuf};
use std::process::Output;

use neverc_test_support::{build_c_plugin, repo, run_in, scratch, text};

fn run(args: &[&str]) -> Output {
    run_in(env!("CARGO_BIN_EXE_neverc-spec"), &repo(), args)
}

/// Builds a test plugin of `runtime/plugin-host/tests/fixtures/` with gcc into `dir`.
fn build(dir: &Path, source: &str) -> PathBuf {
    let output = dir.join(source.replace(".c", ".so"));
    build_c_plugin(
        &repo().join("runtime/plugin-host/tests/fixtures").join(source),
        &output,
        &[],
    );
    output
}

fn id_of(phase: &str) -> String {
    let record = neverc_tables::BUNDLED_PHASES.phase_by_name(phase).unwrap();
    format!("{:#x}:{:#x}", record.id.high, record.id.low)
}

/// Audits the manifest `text` (written into `dir`) as JSON.
fn audit_manifest(dir: &Path, text: &str) -> Output {
    let manifest = dir.join("manifest.toml");
    std::fs::write(&manifest, text).unwrap();
    run(&[
        "audit",
        "--plugin-manifest",
        manifest.to_str().unwrap(),
        "--format",
        "json",
    ])
}

/// The verdicts of a JSON audit report: (request, allowed, code).
fn verdicts(output: &Output) -> Vec<(String, bool, Option<String>)> {
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    report["manifest"]["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|verdict| {
            (
                verdict["request"].as_str().unwrap().to_string(),
                verdict["allowed"].as_bool().unwrap(),
                verdict["code"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn a_c_plugins_requests_get_the_verdicts_of_the_same_manifest() {
    let dir = scratch!("audit-plugin");
    let plugin = build(&dir, "asker.c");
    let (lto, commit) = (id_of("neverc.link.lto_resolve"), id_of("neverc.link.commit"));
    let asks = [
        format!("org.example.asker:observe-before={lto}"),
        format!("org.example.asker:intercept={lto}"),
        format!("org.example.asker:intercept={commit}"),
        format!("org.example.asker:replace={commit}"),
        format!("org.example.asker:observe-before={commit}"),
    ];
    let mut args = vec!["audit", "--plugin", plugin.to_str().unwrap(), "--format", "json"];
    for ask in &asks {
        args.extend(["--plugin-arg", ask.as_str()]);
    }
    let loaded = run(&args);
    assert_eq!(loaded.status.code(), Some(5), "{}", text(&loaded.stderr));
    assert!(
        text(&loaded.stderr).contains("2 request(s) of"),
        "{}",
        text(&loaded.stderr)
    );

    let declared = audit_manifest(
        &dir,
        "plugin = \"org.example.asker\"\n\
         [[phases]]\nname = \"neverc.link.lto_resolve\"\nobserve = [\"BEFORE\"]\nintercept = true\n\
         [[phases]]\nname = \"neverc.link.commit\"\nobserve = [\"BEFORE\"]\nintercept = true\nreplace = true\n",
    );
    assert_eq!(declared.status.code(), Some(5));
    let (from_plugin, from_manifest) = (verdicts(&loaded), verdicts(&declared));
    assert_eq!(from_plugin, from_manifest);
    assert!(from_plugin.contains(&(
        "intercept neverc.link.commit".to_string(),
        false,
        Some("POLICY_VIOLATION".to_string())
    )));
    assert!(from_plugin.contains(&("intercept neverc.link.lto_resolve".to_string(), true, None)));
}

#[test]
fn a_library_without_an_entry_and_an_argument_for_no_plugin_are_errors() {
    let dir = scratch!("audit-plugin-errors");
    let no_entry = build(&dir, "no_entry.c");
    let output = run(&["audit", "--plugin", no_entry.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("exports no `neverc_plugin_entry`"),
        "{}",
        text(&output.stderr)
    );

    let plugin = build(&dir, "asker.c");
    let output = run(&[
        "audit",
        "--plugin",
        plugin.to_str().unwrap(),
        "--plugin-arg",
        "org.example.other:x=1",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("is for no loaded plugin"),
        "{}",
        text(&output.stderr)
    );

    let output = run(&[
        "audit",
        "--plugin",
        plugin.to_str().unwrap(),
        "--plugin-arg",
        "no-colon",
    ]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn a_c_image_verifier_is_audited_as_the_image_verifier_provider() {
    let dir = scratch!("audit-plugin-verifier");
    let plugin = build(&dir, "verifier.c");
    let loaded = run(&["audit", "--plugin", plugin.to_str().unwrap(), "--format", "json"]);
    assert!(loaded.status.success(), "{}", text(&loaded.stderr));
    let manifest = dir.join("wx.toml");
    std::fs::write(
        &manifest,
        "plugin = \"org.example.wx\"\nproviders = [\"image-verifier\"]\n",
    )
    .unwrap();
    let declared = run(&[
        "audit",
        "--plugin-manifest",
        manifest.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(declared.status.success());
    assert_eq!(verdicts(&loaded), verdicts(&declared));
    assert_eq!(verdicts(&loaded), [("provider image-verifier".to_string(), true, None)]);
}

#[test]
fn a_c_lto_providers_descriptor_gets_the_registrars_verdict() {
    let dir = scratch!("audit-plugin-lto");
    let source = repo().join("runtime/plugin-host/tests/fixtures/ltoprov.c");
    let accepted = dir.join("lto2.so");
    build_c_plugin(&source, &accepted, &[]);
    let output = run(&["audit", "--plugin", accepted.to_str().unwrap(), "--format", "json"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        verdicts(&output),
        [("lto-provider org.example.lto2".to_string(), true, None)]
    );
    // A flag bit the ABI does not declare: the descriptor is refused, and the audit fails.
    let unknown = dir.join("lto2-unknown.so");
    build_c_plugin(&source, &unknown, &["MODE_UNKNOWN_FLAGS"]);
    let output = run(&["audit", "--plugin", unknown.to_str().unwrap(), "--format", "json"]);
    assert_eq!(output.status.code(), Some(5), "{}", text(&output.stderr));
    assert_eq!(
        verdicts(&output),
        [(
            "lto-provider org.example.lto2".to_string(),
            false,
            Some("INVALID_DESCRIPTOR".to_string())
        )]
    );
}

#[test]
fn a_c_calling_convention_plugins_registration_is_listed() {
    let dir = scratch!("audit-plugin-cc");
    let plugin = build(&dir, "customcc.c");
    let output = run(&["audit", "--plugin", plugin.to_str().unwrap(), "--format", "json"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        verdicts(&output),
        [("calling-convention neverc-custom-callconv".to_string(), true, None)]
    );
}
