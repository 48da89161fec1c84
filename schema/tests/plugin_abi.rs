#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The plugin ABI declarations (`abi/*.toml`): the bundled files are valid, and every rule, broken on purpose
//! in a copy of them, is reported at the right line.

use neverc_schema::{
    Diagnostic, LoadError, load_phase_schema, load_plugin_abi, load_plugin_abi_with, parse_plugin_abi, target_files,
};
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

fn abi_text(stem: &str) -> String {
    std::fs::read_to_string(repo().join(format!("abi/{stem}.toml"))).unwrap()
}

/// Loads every bundled ABI file with `stem` replaced by `change` of it, against the bundled phase schema;
/// returns the changed text and the diagnostics reported in that file.
fn bundle_with(stem: &str, change: impl FnOnce(String) -> String) -> (String, Vec<Diagnostic>) {
    // Each call gets a directory of its own: the tests of this file run in parallel.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = scratch!("schema-abi/bundle-{stem}-{call}");
    let original = abi_text(stem);
    let changed = change(original.clone());
    assert_ne!(changed, original, "the change did not apply");
    let mut paths = Vec::new();
    for path in target_files(&repo().join("abi")).unwrap() {
        let name = path.file_name().unwrap().to_owned();
        let text = if path.file_stem().unwrap() == stem {
            changed.clone()
        } else {
            std::fs::read_to_string(&path).unwrap()
        };
        std::fs::write(dir.join(&name), text).unwrap();
        paths.push(dir.join(name));
    }
    let schema = load_phase_schema(&repo().join("PhaseSchema.json")).unwrap();
    let diagnostics = match load_plugin_abi_with(&paths, &schema) {
        Err(LoadError::Invalid { diagnostics, .. }) => diagnostics,
        Err(other) => panic!("{other}"),
        Ok(_) => Vec::new(),
    };
    let file = format!("{stem}.toml");
    (
        changed,
        diagnostics
            .into_iter()
            .filter(|diagnostic| diagnostic.file.ends_with(&file))
            .collect(),
    )
}

#[test]
fn the_bundled_abi_takes_link_states_and_policies_from_the_phase_schema() {
    let schema = load_phase_schema(&repo().join("PhaseSchema.json")).unwrap();
    let parts = load_plugin_abi_with(&target_files(&repo().join("abi")).unwrap(), &schema).unwrap();
    let link = parts.iter().find(|part| part.stem == "link").unwrap();
    let states = link
        .declaration
        .enums
        .iter()
        .find(|item| item.name == "LinkState")
        .unwrap();
    let numbered: Vec<(&str, u64)> = states
        .values
        .iter()
        .map(|value| (value.name.as_str(), value.value))
        .collect();
    assert_eq!(numbered.len(), 14);
    assert_eq!(numbered[0], ("INITIAL", 0));
    assert_eq!(numbered[7], ("GC_COMPLETE", 7));
    assert_eq!(numbered[13], ("IMAGE_EMITTED", 13));
    assert_eq!(link.declaration.handles.len(), 26);
    let api = link.declaration.apis.iter().find(|api| api.name == "LinkAPI").unwrap();
    assert_eq!(api.slots.len(), 52);
    let core = parts.iter().find(|part| part.stem == "core").unwrap();
    let policy = core
        .declaration
        .flags
        .iter()
        .find(|item| item.name == "PhasePolicyFlags")
        .unwrap();
    let bits: Vec<(&str, u32)> = policy.bits.iter().map(|bit| (bit.name.as_str(), bit.bit)).collect();
    assert_eq!(bits[0], ("OBSERVABLE", 0));
    assert_eq!(bits[4], ("SEALED_HOST_GATE", 4));
}

#[test]
fn unknown_sources_of_values_are_located() {
    let (text, found) = bundle_with("link", |text| {
        text.replace(
            "from = \"phase_schema:state_machines/link/states\"",
            "from = \"phase_schema:link_states\"",
        )
    });
    let unknown = find(
        &found,
        "abi-source",
        "`phase_schema:link_states` is not a source of values",
    );
    assert_eq!(unknown.line, line_of(&text, "phase_schema:link_states"));
    // A state machine the phase schema lacks is found when the files are loaded against it.
    let (text, found) = bundle_with("link", |text| {
        text.replace(
            "from = \"phase_schema:state_machines/link/mutation_classes\"",
            "from = \"phase_schema:state_machines/lnk/mutation_classes\"",
        )
    });
    let machine = find(&found, "abi-source", "no state machine for the `lnk` domain");
    assert_eq!(machine.line, line_of(&text, "state_machines/lnk/"));
    let (text, found) = bundle_with("core", |text| {
        text.replace(
            "from = \"phase_schema:observer_points\"",
            "from = \"phase_schema:state_machines/link/states\"",
        )
    });
    let kind = find(
        &found,
        "abi-source",
        "gives values, not the bits of `PhaseObserverPoints`",
    );
    assert_eq!(
        kind.line,
        line_of(&text, "from = \"phase_schema:state_machines/link/states\"")
    );
}

#[test]
fn type_references_resolve_across_files() {
    let (text, found) = bundle_with("lto", |text| {
        text.replace(
            "{ name = \"LinkSymbol\", type = \"LinkSymbolHandle\"",
            "{ name = \"LinkSymbol\", type = \"LinkSymbolHandel\"",
        )
        .replace(
            "\"Request: const LTORequest*\", \"OutCandidate",
            "\"Request: const LTORequests*\", \"OutCandidate",
        )
        .replace("interface = \"LTO_REGISTRAR\"", "interface = \"LTO_REGISTRY\"")
    });
    let field = find(&found, "abi-unknown-name", "type `LinkSymbolHandel` is not declared");
    assert_eq!(field.line, line_of(&text, "LinkSymbolHandel"));
    let param = find(&found, "abi-unknown-name", "type `LTORequests` is not declared");
    assert_eq!(param.line, line_of(&text, "LTORequests"));
    let interface = find(&found, "abi-unknown-name", "interface `LTO_REGISTRY` is not declared");
    assert_eq!(interface.line, line_of(&text, "LTO_REGISTRY"));
}

#[test]
fn structures_start_with_a_header_and_have_no_implicit_padding() {
    let (text, found) = bundle_with("lto", |text| {
        text.replace(
            "{ name = \"ThinBackendPartitions\", type = \"u32\", doc = \"The number of ThinLTO backend partitions.\" },\n",
            "",
        )
        .replace(
            "{ name = \"SymbolCount\", type = \"u64\", doc = \"The number of its symbols.\" },",
            "{ name = \"SymbolCount\", type = \"u32\", doc = \"The number of its symbols.\" },",
        )
    });
    let padded = find(
        &found,
        "abi-layout",
        "`LTOOptions.CPU` would follow 4 byte(s) of padding at offset 44",
    );
    assert_eq!(padded.line, line_of(&text, "{ name = \"CPU\", type = \"StringView\""));
    let inner = find(
        &found,
        "abi-layout",
        "`LTOInputModuleInfo.Extensions` would follow 4 byte(s)",
    );
    assert_eq!(
        inner.line,
        line_of(
            &text,
            "{ name = \"Extensions\", type = \"StructArrayView\", doc = \"Extensions: NevercLinkExtension[].\" },"
        )
    );
    let (text, found) = bundle_with("lto", |text| {
        text.replacen(
            "fields = [\n    { name = \"Header\", type = \"ABITableHeader\", doc = \"The structure's size and version.\" },\n    { name = \"Product\"",
            "fields = [\n    { name = \"Product\"",
            1,
        )
    });
    let header = find(
        &found,
        "abi-header",
        "`LTOProductCandidate` must start with `Header: ABITableHeader`",
    );
    assert_eq!(
        header.line,
        line_of(&text, "{ name = \"Product\", type = \"LTOProductHandle\"")
    );
}

#[test]
fn tail_padding_and_self_containment_are_refused() {
    let (text, found) = bundle_with("core", |text| {
        text.replace(
            "    { name = \"Output\", type = \"ArtifactHandle\", doc = \"The artifact the phase produces, once produced (null before).\" },\n",
            "    { name = \"Output\", type = \"ArtifactHandle\", doc = \"The artifact the phase produces, once produced (null before).\" },\n    { name = \"Extra\", type = \"u32\", doc = \"Breaks the layout.\" },\n    { name = \"Frame\", type = \"PhaseFrame\", doc = \"Contains itself.\" },\n",
        )
    });
    let itself = find(&found, "abi-layout", "`PhaseFrame` has no size");
    assert_eq!(itself.line, line_of(&text, "name = \"PhaseFrame\""));
    let (text, found) = bundle_with("core", |text| {
        text.replace(
            "    { name = \"Output\", type = \"ArtifactHandle\", doc = \"The artifact the phase produces, once produced (null before).\" },\n",
            "    { name = \"Output\", type = \"ArtifactHandle\", doc = \"The artifact the phase produces, once produced (null before).\" },\n    { name = \"Extra\", type = \"u32\", doc = \"Breaks the layout.\" },\n",
        )
    });
    let tail = find(&found, "abi-layout", "`PhaseFrame` would end with 4 byte(s) of padding");
    assert_eq!(tail.line, line_of(&text, "name = \"PhaseFrame\""));
}

#[test]
fn names_within_structures_tables_and_signatures_are_unique_and_types_well_formed() {
    let (text, found) = bundle_with("lto", |text| {
        text.replace(
            "{ name = \"GetModuleInfo\", params",
            "{ name = \"GetModulePage\", params",
        )
        .replace(
            "{ name = \"ModuleIdentifier\", type = \"StringView\"",
            "{ name = \"LogicalURI\", type = \"StringView\"",
        )
        .replace(
            "\"UserData: void*\", \"Task: TaskHandle\", \"Request: const LTORequest*\", \"Key: MutableByteView\"",
            "\"UserData: void*\", \"Task: TaskHandle\", \"Task: const LTORequest*\", \"Key: MutableByteView\"",
        )
        .replace(
            "{ name = \"ResolutionDigest\", type = \"[u8; 32]\"",
            "{ name = \"ResolutionDigest\", type = \"[u8; 0x20]\"",
        )
    });
    let slot = find(
        &found,
        "abi-duplicate-name",
        "`GetModulePage` names two fields of `LTOAPI`",
    );
    assert_eq!(
        slot.line,
        line_of(
            &text,
            "{ name = \"GetModulePage\", params = [\"Task: TaskHandle\", \"Module:"
        )
    );
    let field = find(
        &found,
        "abi-duplicate-name",
        "`LogicalURI` names two fields of `LTOInputModuleInfo`",
    );
    assert_eq!(
        field.line,
        line_of(
            &text,
            "{ name = \"LogicalURI\", type = \"StringView\", doc = \"The module identifier"
        )
    );
    let param = find(
        &found,
        "abi-duplicate-name",
        "`Task` names two parameters of `LTOBuildCacheKeyFn`",
    );
    assert_eq!(param.line, line_of(&text, "\"Task: const LTORequest*\""));
    let array = find(&found, "abi-type", "an array's length is a decimal number");
    assert_eq!(array.line, line_of(&text, "[u8; 0x20]"));
    let (text, found) = bundle_with("lto", |text| {
        text.replace(
            "\"RegistrarContext: void*\", \"Descriptor: const LTOProviderDescriptor*\"",
            "\"RegistrarContext: void*\", \"Descriptor: LTOAPI\"",
        )
    });
    let by_value = find(
        &found,
        "abi-type",
        "API table `LTOAPI` is only passed through a pointer",
    );
    assert_eq!(by_value.line, line_of(&text, "\"Descriptor: LTOAPI\""));
}
