#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Adding a phase to a copy of the schema, or a target file, adds conformance cases and generated tests with
//! nothing else to edit; the new cases run against tables loaded from the changed declarations.

use std::path::{Path, PathBuf};

use neverc_codegen::conformance::{CaseSet, conformance_case_sets, conformance_tests};
use neverc_conformance::{Environment, fixture_link_inputs, run_case_set};
use neverc_schema::load_declarations;
use neverc_test_support::{add_phase_like, repo, scratch};
use serde_json::Value;

fn bundled_targets() -> Vec<PathBuf> {
    neverc_schema::target_files(&repo().join("targets")).unwrap()
}

fn sets(schema: &Path, targets: &[PathBuf]) -> Vec<CaseSet> {
    let declarations = load_declarations(schema, targets).unwrap();
    conformance_case_sets(&declarations, schema.parent().unwrap()).unwrap()
}

fn generated_test_count(sets: &[CaseSet]) -> usize {
    conformance_tests(sets).unwrap().contents.matches("#[test]").count()
}

fn environment(schema: &Path, targets: &[PathBuf], scratch: PathBuf) -> Environment {
    let declarations = load_declarations(schema, targets).unwrap();
    Environment {
        phase_tables: neverc_loader::phase_tables_from_document(&declarations.phase_schema).unwrap(),
        targets: targets
            .iter()
            .map(|path| neverc_loader::load_target_file(path).unwrap())
            .collect(),
        link_inputs: fixture_link_inputs(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap(),
        scratch,
    }
}

fn print_counts(label: &str, sets: &[CaseSet]) {
    for set in sets {
        println!("{label}: {}: {} case(s)", set.source, set.cases.len());
    }
}

#[test]
fn a_phase_added_to_a_schema_copy_adds_its_cases_and_tests() {
    let dir = scratch!("sources-phase");
    let original = repo().join("PhaseSchema.json");
    let before = sets(&original, &bundled_targets());
    print_counts("bundled", &before);

    // A new link event, declared after the commit, and a new observe-and-intercept IR pass slot.
    let mut value: Value = serde_json::from_str(&std::fs::read_to_string(&original).unwrap()).unwrap();
    add_phase_like(
        &mut value,
        "neverc.ir.pass.post_opt",
        "neverc.ir.pass.vectorize",
        "IR_PASS_VECTORIZE",
        "0x0000000000000077",
    );
    let copy = dir.join("PhaseSchema.json");
    std::fs::write(&copy, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    let after = sets(&copy, &bundled_targets());
    print_counts("with one more phase", &after);

    // Six registration requests per phase; nothing else changes.
    assert_eq!(after[0].cases.len(), before[0].cases.len() + 6);
    let new: Vec<_> = after[0]
        .cases
        .iter()
        .filter(|case| case.id.contains("neverc.ir.pass.vectorize"))
        .collect();
    assert_eq!(new.len(), 6);
    for (old, new) in before[1..].iter().zip(&after[1..]) {
        assert!(old.cases == new.cases, "the cases of {} changed", old.source);
    }
    assert_eq!(generated_test_count(&after), generated_test_count(&before) + 6);

    // The new cases pass against tables loaded from the copy, and fail against the bundled ones (which do not
    // know the phase): the cases really are about the copy.
    let copy_environment = environment(&copy, &bundled_targets(), dir.clone());
    let only_new = CaseSet {
        cases: new.into_iter().cloned().collect(),
        ..after[0].clone()
    };
    let summary = run_case_set(&copy_environment, &only_new);
    assert_eq!((summary.passed, summary.failed.len()), (6, 0), "{summary:?}");
    let bundled_environment = environment(&original, &bundled_targets(), dir);
    let summary = run_case_set(&bundled_environment, &only_new);
    assert!(summary.failed.len() >= 2, "{summary:?}");
}

#[test]
fn a_target_file_adds_a_source_of_register_reserved_spec_elf_and_relocation_cases() {
    let dir = scratch!("sources-target");
    let toy = repo().join("codegen/tests/fixtures/targets/toy.toml");
    let mut targets = bundled_targets();
    let before = sets(&repo().join("PhaseSchema.json"), &targets);
    targets.push(toy.clone());
    let after = sets(&repo().join("PhaseSchema.json"), &targets);
    print_counts("with toy.toml", &after);
    assert_eq!(after.len(), before.len() + 1);
    let added = after.last().unwrap();
    assert!(added.source.ends_with("toy.toml"), "{}", added.source);
    let declaration: toml_names::Names = toml_names::read(&toy);
    // One resolution case per spelling (name, alias, sub-register), one per reserved register, and the spec
    // cases (shuffle layouts and the default spec).
    let resolves = added
        .cases
        .iter()
        .filter(|case| case.id.starts_with("register_resolves/"))
        .count();
    assert_eq!(resolves, declaration.spellings);
    let reserved = added
        .cases
        .iter()
        .filter(|case| case.id.starts_with("reserved_skipped/"))
        .count();
    assert_eq!(reserved, declaration.reserved);
    let specs = added
        .cases
        .iter()
        .filter(|case| case.id.starts_with("spec_plans/"))
        .count();
    assert_eq!(specs, declaration.shuffle_layouts + 1);
    // One case per relocation, and one for the ELF facts.
    let count = |prefix: &str| added.cases.iter().filter(|case| case.id.starts_with(prefix)).count();
    assert!(declaration.relocations > 0 && declaration.has_elf);
    assert_eq!(count("relocation_resolves/toy/elf/"), declaration.relocations);
    assert_eq!(count("elf_facts/"), 1);
    assert_eq!(
        generated_test_count(&after),
        generated_test_count(&before) + added.cases.len()
    );

    let environment = environment(&repo().join("PhaseSchema.json"), &targets, dir);
    let summary = run_case_set(&environment, added);
    assert_eq!(
        (summary.passed, summary.failed.len()),
        (added.cases.len(), 0),
        "{summary:?}"
    );
}

/// Counts read straight from a target TOML, independently of the lowering.
mod toml_names {
    use std::path::Path;

    pub(crate) struct Names {
        pub(crate) spellings: usize,
        pub(crate) reserved: usize,
        pub(crate) shuffle_layouts: usize,
        pub(crate) relocations: usize,
        pub(crate) has_elf: bool,
    }

    pub(crate) fn read(path: &Path) -> Names {
        let value: toml::Value = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let registers = value["registers"].as_array().unwrap();
        let spellings = registers
            .iter()
            .map(|register| {
                1 + register.get("aliases").and_then(|a| a.as_array()).map_or(0, Vec::len)
                    + register
                        .get("subregisters")
                        .and_then(|s| s.as_array())
                        .map_or(0, Vec::len)
            })
            .sum();
        let reserved = value
            .get("reserved")
            .or_else(|| value.get("abi").and_then(|abi| abi.get("reserved")))
            .and_then(|r| r.as_array())
            .map_or(0, Vec::len);
        let shuffle_layouts = value
            .get("conventions")
            .and_then(|c| c.get("shuffle_layouts"))
            .and_then(|s| s.as_array())
            .map_or(0, Vec::len);
        let relocations = value.get("relocations").and_then(|r| r.as_array()).map_or(0, Vec::len);
        Names {
            spellings,
            reserved,
            shuffle_layouts,
            relocations,
            has_elf: value.get("elf").is_some(),
        }
    }
}
