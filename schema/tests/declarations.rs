#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The bundled declarations and NeverC's published schemas, through the real loader.

use neverc_schema::{LoadError, load_declarations, load_phase_schema, load_targets, target_files};
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

#[test]
fn an_emulation_is_declared_by_one_target_only() {
    let dir = neverc_test_support::scratch!("schema-duplicate-emulation");
    let mut files = Vec::new();
    for name in ["aarch64.toml", "riscv64.toml", "x86_64.toml"] {
        let text = std::fs::read_to_string(repo().join("targets").join(name)).unwrap();
        let text = match name {
            "riscv64.toml" => text.replacen(
                "emulations = [\"elf64lriscv\"]",
                "emulations = [\"elf64lriscv\", \"aarch64elf\"]",
                1,
            ),
            "x86_64.toml" => text.replacen(
                "emulations = [\"elf_x86_64\"]",
                "emulations = [\"aarch64elf\",\n    \"elf_x86_64\"]",
                1,
            ),
            _ => text,
        };
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        files.push(path);
    }
    let Err(LoadError::Invalid { diagnostics, .. }) = load_targets(&files) else {
        panic!("an emulation of two targets was accepted");
    };
    let found: Vec<(String, String, usize, String)> = diagnostics
        .iter()
        .map(|d| {
            let file = std::path::Path::new(&d.file).file_name().unwrap();
            (
                file.to_string_lossy().into_owned(),
                d.pointer.clone(),
                d.line,
                format!("{}: {}", d.rule, d.message),
            )
        })
        .collect();
    let line = |name: &str, needle: &str| {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        text.lines().position(|line| line.contains(needle)).unwrap() + 1
    };
    // Each later declaration is reported, in its own file and at its own line, naming the first.
    let expected = |name: &str, pointer: &str, needle: &str| {
        (
            name.to_string(),
            pointer.to_string(),
            line(name, needle),
            "duplicate-emulation: emulation `aarch64elf` is already declared by target `aarch64`".to_string(),
        )
    };
    assert_eq!(
        found,
        [
            expected(
                "riscv64.toml",
                "/elf/emulations/1",
                "emulations = [\"elf64lriscv\", \"aarch64elf\"]"
            ),
            expected("x86_64.toml", "/elf/emulations/0", "emulations = [\"aarch64elf\","),
        ]
    );
}
