#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The plugin ABI declarations (`abi/*.toml`): the bundled files are valid, and every rule, broken on purpose
//! in a copy of them, is reported at the right line.

use neverc_schema::{Diagnostic, LoadError, load_plugin_abi, parse_plugin_abi, target_files};
use neverc_test_support::{repo, scratch};

fn lto_text() -> String {
    std::fs::read_to_string(repo().join("abi/lto.toml")).unwrap()
}

/// The diagnostics of `abi/lto.toml` changed by `change` (which must change it), each checked to point at
/// a line holding `needle`-like text.
fn lto_with(change: impl FnOnce(String) -> String) -> (String, Vec<Diagnostic>) {
    let original = lto_text();
    let changed = change(original.clone());
    assert_ne!(changed, original, "the change did not apply");
    let diagnostics = parse_plugin_abi("abi/lto.toml", &changed).err().unwrap_or_default();
    (changed, diagnostics)
}

fn find<'a>(found: &'a [Diagnostic], rule: &str, text_in_message: &str) -> &'a Diagnostic {
    found
        .iter()
        .find(|diagnostic| diagnostic.rule.code() == rule && diagnostic.message.contains(text_in_message))
        .unwrap_or_else(|| panic!("no {rule} mentioning {text_in_message:?} in {found:#?}"))
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|line| line.contains(needle)).unwrap() + 1
}

#[test]
fn the_bundled_abi_files_are_valid() {
    let files = target_files(&repo().join("abi")).unwrap();
    assert!(!files.is_empty());
    let parts = load_plugin_abi(&files).unwrap_or_else(|error| match error {
        LoadError::Invalid { diagnostics, .. } => panic!("{diagnostics:#?}"),
        other => panic!("{other}"),
    });
    let lto = parts.iter().find(|part| part.stem == "lto").unwrap();
    assert_eq!(lto.declaration.interfaces.len(), 2);
    assert_eq!(lto.declaration.enums.len(), 2);
    assert_eq!(lto.declaration.flags.len(), 3);
}

#[test]
fn values_and_bits_are_unique_and_fit_their_width() {
    let (text, found) = lto_with(|text| {
        text.replace("{ name = \"THIN\", value = 2,", "{ name = \"THIN\", value = 1,")
            .replace("{ name = \"EXPORTED\", bit = 2,", "{ name = \"EXPORTED\", bit = 64,")
            .replace("{ name = \"CAN_INLINE\", bit = 4,", "{ name = \"CAN_INLINE\", bit = 3,")
            .replace(
                "{ name = \"REMOTE_SHARED\", value = 3,",
                "{ name = \"REMOTE_SHARED\", value = 4294967296,",
            )
    });
    let duplicate = find(&found, "abi-duplicate-value", "has the value 1 of `FULL`");
    assert_eq!(duplicate.line, line_of(&text, "{ name = \"THIN\""));
    let outside = find(&found, "abi-width", "bit 64 is not one of the 64 bits");
    assert_eq!(outside.line, line_of(&text, "{ name = \"EXPORTED\""));
    let twice = find(
        &found,
        "abi-duplicate-value",
        "`CAN_INLINE` is bit 3 like `FINAL_DEFINITION`",
    );
    assert_eq!(twice.line, line_of(&text, "{ name = \"CAN_INLINE\""));
    let wide = find(
        &found,
        "abi-width",
        "4294967296 does not fit the 32 bits of `LTOCacheScope`",
    );
    assert_eq!(wide.line, line_of(&text, "{ name = \"REMOTE_SHARED\""));
}

#[test]
fn names_are_unique_and_widths_legal() {
    let (text, found) = lto_with(|text| {
        text.replace("{ name = \"TASK\", value = 1,", "{ name = \"DISABLED\", value = 1,")
            .replace("name = \"LTOProviderFlags\"", "name = \"LTOOptionFlags\"")
            .replace("name = \"LTO_REGISTRAR\"", "name = \"LTO\"")
            .replace(
                "c_prefix = \"NEVERC_LTO_CACHE_\"\nwidth = 32",
                "c_prefix = \"NEVERC_LTO_CACHE_\"\nwidth = 24",
            )
    });
    let value = find(
        &found,
        "abi-duplicate-name",
        "`DISABLED` names two values of `LTOCacheScope`",
    );
    assert_eq!(value.line, line_of(&text, "{ name = \"DISABLED\", value = 1"));
    find(&found, "abi-duplicate-name", "interface `LTO` is declared twice");
    let width = find(&found, "abi-width", "width 24 is not 8, 16, 32 or 64 bits");
    assert_eq!(width.line, line_of(&text, "width = 24"));
    // Type names are unique across the whole ABI (checked when the files are loaded together).
    let dir = scratch!("schema-abi/names");
    std::fs::write(dir.join("lto.toml"), lto_text()).unwrap();
    let other = lto_text()
        .replace("NEVERC_LTO_", "NEVERC_OTHER_")
        .replace("0x4e43504c544f", "0x4e43504c5400");
    std::fs::write(dir.join("other.toml"), other).unwrap();
    let Err(LoadError::Invalid { diagnostics, .. }) = load_plugin_abi(&[dir.join("lto.toml"), dir.join("other.toml")])
    else {
        panic!("duplicates across files were accepted");
    };
    let across = find(
        &diagnostics,
        "abi-duplicate-name",
        "type `NevercLTOType` is declared twice (also in another ABI file)",
    );
    assert!(across.file.ends_with("other.toml"), "{across}");
}

#[test]
fn constants_and_interface_ids_are_unique_across_files() {
    let dir = scratch!("schema-abi/constants");
    std::fs::write(dir.join("lto.toml"), lto_text()).unwrap();
    // The same constants and ids under other type names.
    let other = lto_text()
        .replace("name = \"LTO", "name = \"OTHER")
        .replace("[\"LTOMode\"]", "[\"OTHERMode\"]");
    std::fs::write(dir.join("other.toml"), other).unwrap();
    let Err(LoadError::Invalid { diagnostics, .. }) = load_plugin_abi(&[dir.join("lto.toml"), dir.join("other.toml")])
    else {
        panic!("duplicates across files were accepted");
    };
    find(
        &diagnostics,
        "abi-duplicate-name",
        "C constant `NEVERC_LTO_FULL` is declared twice",
    );
    find(&diagnostics, "abi-duplicate-value", "has the id of `LTO`");
}

#[test]
fn structure_errors_name_the_key() {
    let (text, found) = lto_with(|text| {
        text.replace(
            "major = 1\nminor = 0\nstability = \"stable\"\ndoc = \"Reading",
            "major = 1\nminor = 0\nstability = \"stable\"\nslots = 5\ndoc = \"Reading",
        )
    });
    let unknown = find(&found, "unknown-key", "unknown key `slots`");
    assert_eq!(unknown.line, line_of(&text, "slots = 5"));
    let (_, found) = lto_with(|text| text.replace("c_prefix = \"NEVERC_LTO_SYMBOL_\"", "c_prefix = \"lto_symbol_\""));
    assert!(
        found.iter().any(|diagnostic| diagnostic.rule.code() == "schema"),
        "{found:#?}"
    );
}

#[test]
fn descriptor_rules_name_declared_bits_and_callbacks() {
    let (text, found) = lto_with(|text| {
        text.replace("one_of = [\"FULL\", \"THIN\"]", "one_of = [\"FULL\", \"THINN\"]")
            .replace(
                "bit_requires = [{ bit = \"CACHEABLE\", callback = \"BuildCacheKey\" }]",
                "bit_requires = [{ bit = \"CACHED\", callback = \"BuildKey\" }]",
            )
            .replace(
                "required_callbacks = [\"Codegen\"]",
                "required_callbacks = [\"CodeGen\"]",
            )
    });
    let bit = find(
        &found,
        "abi-unknown-name",
        "`THINN` is not a flag bit of `LTOProviderDescriptor`",
    );
    assert_eq!(bit.line, line_of(&text, "one_of = "));
    let required = find(&found, "abi-unknown-name", "`CodeGen` is not a callback");
    assert_eq!(required.line, line_of(&text, "required_callbacks = "));
    find(&found, "abi-unknown-name", "`CACHED` is not a flag bit");
    let callback = find(&found, "abi-unknown-name", "`BuildKey` is not a callback");
    assert_eq!(callback.line, line_of(&text, "bit_requires = "));
}
