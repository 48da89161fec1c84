#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The bundled declarations and NeverC's published schemas, through the real loader.

use neverc_schema::{LoadError, load_declarations, load_phase_schema, target_files};
use neverc_test_support::repo;

fn show(error: &LoadError) -> String {
    match error {
        LoadError::Invalid { diagnostics, .. } => diagnostics.iter().map(|d| format!("{d}\n")).collect(),
        other => other.to_string(),
    }
}

#[test]
fn bundled_declarations_are_valid() {
    let files = target_files(&repo().join("targets")).unwrap();
    let declarations = load_declarations(&repo().join("PhaseSchema.json"), &files).map_err(|e| show(&e));
    let declarations = match declarations {
        Ok(declarations) => declarations,
        Err(text) => panic!("{text}"),
    };
    let names: Vec<&str> = declarations
        .targets
        .iter()
        .map(|t| t.declaration.identity.name.as_str())
        .collect();
    assert_eq!(names, ["aarch64", "riscv64", "x86_64"]);
    let link = declarations
        .phase_schema
        .phases
        .iter()
        .filter(|p| p.domain == "link")
        .count();
    assert_eq!(link, 20);
}

#[test]
fn neverc_newest_schema_is_accepted() {
    let path = repo().join("tests/fixtures/neverc/PhaseSchema.json");
    let document = load_phase_schema(&path).map_err(|e| show(&e));
    match document {
        Ok(document) => {
            assert_eq!(document.phases.len(), 130);
            assert!(document.state_machines.is_none());
        }
        Err(text) => panic!("{text}"),
    }
}
