#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The committed JSON Schemas must match what the Rust types generate.
//! Run with `NEVERC_BLESS=1` to rewrite them after changing the types.

use std::path::Path;

fn check(file: &str, generated: String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("json").join(file);
    if std::env::var_os("NEVERC_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap();
    assert!(
        committed == generated,
        "{} is stale; rerun the tests with NEVERC_BLESS=1 and commit the result",
        path.display()
    );
}

#[test]
fn phase_schema_json_schema_is_fresh() {
    check("phase-schema.schema.json", neverc_schema::generated_phase_schema());
}

#[test]
fn target_json_schema_is_fresh() {
    check("target.schema.json", neverc_schema::generated_target_schema());
}

#[test]
fn plugin_abi_json_schema_is_fresh() {
    check("plugin-abi.schema.json", neverc_schema::generated_plugin_abi_schema());
}
