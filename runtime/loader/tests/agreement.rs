#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Generated tables and tables loaded at run time from the same files must agree, name by name.

use neverc_loader::{load_phase_tables, load_target_file};
use neverc_tables::{BUNDLED_PHASES, BUNDLED_TARGETS, TlsVariant, target_by_name};
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

#[test]
fn a_target_file_loaded_at_run_time_exposes_its_elf_facts_and_relocations() {
    let dir = neverc_test_support::scratch!("loader-relocations");
    let text = std::fs::read_to_string(repo().join("targets/x86_64.toml")).unwrap();
    let text = text
        .replacen("max_page_size = 4096", "max_page_size = 2097152", 1)
        .replacen(
            "tls = { variant = \"II\" }",
            "tls = { variant = \"I\", tcb_size = 64 }",
            1,
        )
        .replacen(
            "emulations = [\"elf_x86_64\"]",
            "emulations = [\"elf_x86_64\", \"elf_x86_64_big_pages\"]",
            1,
        )
        + "\n[[relocations]]\nformat = \"elf\"\nnumber = 30\nname = \"R_X86_64_GOTPLT64\"\nkind = \"got_entry\"\n\
           relative_to = \"got\"\nsize = 64\noverflow = \"none\"\n";
    let path = dir.join("x86_64.toml");
    std::fs::write(&path, text).unwrap();
    let loaded = load_target_file(&path).unwrap();
    let bundled = target_by_name("x86_64").unwrap();
    assert_eq!(loaded.elf.map(|elf| elf.max_page_size), Some(2 << 20));
    assert_eq!(bundled.elf.map(|elf| elf.max_page_size), Some(4096));
    // The TLS variant the linker uses, and the emulations, are the file's.
    assert_eq!(TlsVariant::of(Some(loaded)), TlsVariant::I { tcb_size: 64 });
    assert_eq!(TlsVariant::of(Some(bundled)), TlsVariant::II);
    assert_eq!(
        loaded.elf.map(|elf| elf.emulations),
        Some(&["elf_x86_64", "elf_x86_64_big_pages"][..])
    );
    assert!(loaded.elf.unwrap().has_emulation("elf_x86_64_big_pages"));
    assert!(!bundled.elf.unwrap().has_emulation("elf_x86_64_big_pages"));
    let added = loaded
        .relocation(neverc_tables::RelocationFormat::Elf, 30)
        .expect("the loaded file's own relocation");
    assert_eq!(
        (added.name, added.kind),
        ("R_X86_64_GOTPLT64", neverc_tables::RelocationKind::GotEntry)
    );
    assert_eq!(loaded.relocation_by_name("R_X86_64_GOTPLT64"), Some(added));
    assert_eq!(bundled.relocation(neverc_tables::RelocationFormat::Elf, 30), None);
    assert_eq!(loaded.relocations.len(), bundled.relocations.len() + 1);
    for relocation in bundled.relocations {
        assert_eq!(loaded.relocation_by_name(relocation.name), Some(relocation));
    }
}
