#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Generated tables and tables loaded at run time from the same files must agree, name by name.

use neverc_loader::{load_phase_tables, load_target_file};
use neverc_tables::{BUNDLED_PHASES, BUNDLED_TARGETS, target_by_name};
use neverc_test_support::repo;

#[test]
fn every_bundled_target_agrees_with_its_runtime_loaded_file() {
    let files = neverc_schema::target_files(&repo().join("targets")).unwrap();
    assert_eq!(files.len(), BUNDLED_TARGETS.len());
    let mut names_checked = 0;
    for file in files {
        let loaded = load_target_file(&file).unwrap();
        let generated = target_by_name(loaded.name).unwrap();
        assert_eq!(loaded, generated, "{}", file.display());
        // Every spelling, in three casings, resolves identically through both tables.
        for entry in generated.names {
            for spelling in [
                entry.name.to_string(),
                entry.name.to_ascii_uppercase(),
                capitalize(entry.name),
            ] {
                let from_generated = generated.resolve_register(&spelling);
                assert!(from_generated.is_some(), "{spelling} on {}", generated.name);
                assert_eq!(
                    from_generated,
                    loaded.resolve_register(&spelling),
                    "{spelling} on {}",
                    generated.name
                );
                names_checked += 1;
            }
        }
        for entry in generated.numbers {
            let resolved = generated.register_by_number(entry.number).unwrap();
            assert_eq!(resolved.register, entry.register);
            assert_eq!(Some(resolved), loaded.register_by_number(entry.number));
        }
        assert_eq!(generated.resolve_register("no_such_register"), None);
        assert_eq!(loaded.resolve_register(""), None);
    }
    assert!(names_checked > 1000, "only {names_checked} spellings checked");
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

#[test]
fn bundled_phase_tables_agree_with_the_runtime_loaded_schema() {
    let loaded = load_phase_tables(&repo().join("PhaseSchema.json")).unwrap();
    assert_eq!(*loaded, BUNDLED_PHASES);
}
