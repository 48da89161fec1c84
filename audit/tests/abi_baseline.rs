#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The ABI baseline diff over the bundled `abi/` declarations and copies of them with one change each, made in
//! memory: every change is found at its item with its class, and the unchanged declarations give none.

use neverc_audit::abi_baseline::diff_abi;
use neverc_audit::baseline::{BaselineDiff, ChangeClass};
use neverc_schema::{
    AbiField, AbiFunction, LoadedAbiPart, PluginAbiDeclaration, Stability, load_phase_schema, load_plugin_abi_with,
    target_files,
};
use neverc_test_support::repo;

/// The bundled declarations, loaded as the build loads them.
fn bundled() -> Vec<LoadedAbiPart> {
    let schema = load_phase_schema(&repo().join("PhaseSchema.json")).unwrap();
    let files = target_files(&repo().join("abi")).unwrap();
    load_plugin_abi_with(&files, &schema).unwrap()
}

fn part<'a>(parts: &'a mut [LoadedAbiPart], stem: &str) -> &'a mut PluginAbiDeclaration {
    &mut parts.iter_mut().find(|part| part.stem == stem).unwrap().declaration
}

/// The diff from the bundled declarations, changed by `old`, to them changed by `new`.
fn between(old: impl FnOnce(&mut Vec<LoadedAbiPart>), new: impl FnOnce(&mut Vec<LoadedAbiPart>)) -> BaselineDiff {
    let mut before = bundled();
    old(&mut before);
    let mut after = bundled();
    new(&mut after);
    diff_abi("old", &before, "new", &after)
}

/// The diff from the bundled declarations to them changed by `change`.
fn changed(change: impl FnOnce(&mut Vec<LoadedAbiPart>)) -> BaselineDiff {
    between(|_| {}, change)
}

/// Every change as `class rule subject`.
fn lines(diff: &BaselineDiff) -> Vec<String> {
    diff.changes
        .iter()
        .map(|change| format!("{} {} {}", change.class.name(), change.rule, change.subject))
        .collect()
}

/// Asserts the changes, in order, as `class rule subject`.
fn expect(diff: &BaselineDiff, wanted: &[&str]) {
    assert_eq!(lines(diff), wanted, "{:#?}", diff.changes);
}

fn struct_fields<'a>(parts: &'a mut [LoadedAbiPart], stem: &str, name: &str) -> &'a mut Vec<AbiField> {
    &mut part(parts, stem)
        .structs
        .iter_mut()
        .find(|item| item.name == name)
        .unwrap()
        .fields
}

fn api_slots<'a>(parts: &'a mut [LoadedAbiPart], stem: &str, name: &str) -> &'a mut Vec<AbiFunction> {
    &mut part(parts, stem)
        .apis
        .iter_mut()
        .find(|item| item.name == name)
        .unwrap()
        .slots
}

fn field(name: &str, ty: &str) -> AbiField {
    AbiField {
        name: name.into(),
        ty: ty.into(),
        doc: "Added.".into(),
    }
}

fn set_interface(
    parts: &mut [LoadedAbiPart],
    stem: &str,
    name: &str,
    change: impl FnOnce(&mut neverc_schema::AbiInterface),
) {
    change(
        part(parts, stem)
            .interfaces
            .iter_mut()
            .find(|interface| interface.name == name)
            .unwrap(),
    );
}

#[test]
fn the_bundled_declarations_against_themselves_change_nothing() {
    let diff = changed(|_| {});
    assert!(diff.changes.is_empty(), "{:?}", lines(&diff));
    assert!(!diff.is_breaking());
}

#[test]
fn documentation_is_not_compared() {
    let diff = changed(|parts| {
        for part in parts.iter_mut() {
            part.declaration.doc.push_str(" Reworded.");
            for item in &mut part.declaration.structs {
                item.doc.push_str(" Reworded.");
                for field in &mut item.fields {
                    field.doc.push_str(" Reworded.");
                }
            }
        }
    });
    assert!(diff.changes.is_empty(), "{:?}", lines(&diff));
}

#[test]
fn a_reordered_field_of_a_stable_struct_is_breaking_at_the_field() {
    let diff = changed(|parts| struct_fields(parts, "lto", "LTOOptions").swap(4, 5));
    let found = lines(&diff);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0] == "breaking field-reordered LTOOptions.OptimizationLevel"
            || found[0] == "breaking field-reordered LTOOptions.CodeGenOptimizationLevel",
        "{found:?}"
    );
    assert!(diff.changes[0].message.contains("its offset changed"));

    // Moving one field to the end names that field only, not the ones that shifted up behind it.
    let diff = changed(|parts| {
        let fields = struct_fields(parts, "lto", "LTOOptions");
        let moved = fields.remove(1);
        fields.push(moved);
    });
    expect(&diff, &["breaking field-reordered LTOOptions.Mode"]);
}

#[test]
fn removed_inserted_and_retyped_fields_are_breaking() {
    let diff = changed(|parts| {
        struct_fields(parts, "lto", "LTOOptions").remove(3);
    });
    expect(&diff, &["breaking field-removed LTOOptions.Flags"]);

    let diff = changed(|parts| struct_fields(parts, "lto", "LTOOptions").insert(2, field("Extra", "u64")));
    expect(&diff, &["breaking field-inserted LTOOptions.Extra"]);
    assert!(
        diff.changes[0]
            .message
            .contains("where old plugins expect `CacheScope`")
    );

    let diff = changed(|parts| struct_fields(parts, "lto", "LTOOptions")[6].ty = "u64".into());
    expect(&diff, &["breaking field-type LTOOptions.ThreadBudget"]);
    assert!(diff.changes[0].message.contains("`u32` → `u64`"));

    let diff = changed(|parts| {
        let fields = struct_fields(parts, "lto", "LTOInputModuleInfo");
        let digest = fields.iter_mut().find(|field| field.name == "ContentDigest").unwrap();
        digest.ty = "[u8; 64]".into();
    });
    expect(&diff, &["breaking array-length LTOInputModuleInfo.ContentDigest"]);

    // A rename is a removal and an addition.
    let diff = changed(|parts| struct_fields(parts, "lto", "LTOOptions")[6].name = "Threads".into());
    expect(
        &diff,
        &[
            "breaking field-removed LTOOptions.ThreadBudget",
            "breaking field-inserted LTOOptions.Threads",
        ],
    );
}

#[test]
fn an_appended_field_is_compatible_unless_the_struct_has_no_header_or_is_held_by_value() {
    let diff = changed(|parts| struct_fields(parts, "lto", "LTOOptions").push(field("Extra", "u64")));
    expect(&diff, &["compatible field-appended LTOOptions.Extra"]);
    assert!(diff.changes[0].message.contains("StructSize"));

    let diff = changed(|parts| struct_fields(parts, "core", "StringView").push(field("Extra", "u64")));
    expect(&diff, &["breaking field-appended StringView.Extra"]);
    assert!(diff.changes[0].message.contains("has no Header"));

    // LTOOptions held by value in LTORequest (in both versions): growing it moves LTORequest's later fields.
    let hold = |parts: &mut Vec<LoadedAbiPart>| {
        struct_fields(parts, "lto", "LTORequest").push(field("InlineOptions", "LTOOptions"));
    };
    let diff = between(hold, |parts| {
        hold(parts);
        struct_fields(parts, "lto", "LTOOptions").push(field("Extra", "u64"));
    });
    expect(&diff, &["breaking field-appended LTOOptions.Extra"]);
    assert!(
        diff.changes[0]
            .message
            .contains("field `LTORequest.InlineOptions` holds `LTOOptions` by value"),
        "{}",
        diff.changes[0].message
    );
}

#[test]
fn slots_removed_or_reordered_are_breaking_and_appended_ones_compatible() {
    let diff = changed(|parts| {
        api_slots(parts, "lto", "LTOAPI").remove(1);
    });
    expect(&diff, &["breaking slot-removed LTOAPI.GetModulePage"]);

    let diff = changed(|parts| api_slots(parts, "lto", "LTOAPI").swap(1, 2));
    assert_eq!(diff.count(ChangeClass::Breaking), 1, "{:?}", lines(&diff));
    assert!(lines(&diff)[0].starts_with("breaking slot-reordered LTOAPI.Get"));

    let slot = |parts: &mut Vec<LoadedAbiPart>| {
        let slots = api_slots(parts, "lto", "LTOAPI");
        let mut extra = slots[0].clone();
        extra.name = "GetStatistics".into();
        slots.push(extra);
    };
    let diff = changed(slot);
    expect(
        &diff,
        &[
            "compatible slot-appended LTOAPI.GetStatistics",
            "warning minor-not-bumped LTOAPI",
        ],
    );
    assert!(!diff.is_breaking());

    // With the minor version bumped, the growth is compatible without a warning.
    let diff = changed(|parts| {
        slot(parts);
        set_interface(parts, "lto", "LTO", |interface| interface.minor = 1);
    });
    expect(
        &diff,
        &[
            "compatible interface-minor LTO",
            "compatible slot-appended LTOAPI.GetStatistics",
        ],
    );
}

#[test]
fn signatures_of_slots_and_callbacks_are_compared() {
    let diff = changed(|parts| {
        api_slots(parts, "lto", "LTOAPI")[2].params[2] = "Cursor: u32".into();
    });
    expect(&diff, &["breaking param-type LTOAPI.GetResolutionPage"]);

    let diff = changed(|parts| {
        api_slots(parts, "lto", "LTOAPI")[2].params[2] = "Position: u64".into();
    });
    expect(&diff, &["compatible param-renamed LTOAPI.GetResolutionPage"]);

    let diff = changed(|parts| {
        let callback = part(parts, "lto")
            .callbacks
            .iter_mut()
            .find(|callback| callback.name == "LTOCodegenFn")
            .unwrap();
        callback.returns = Some("void".into());
        callback.params.push("Flags: u64".into());
    });
    expect(
        &diff,
        &["breaking return-type LTOCodegenFn", "breaking param-count LTOCodegenFn"],
    );
}

#[test]
fn values_and_bits_may_be_added_but_not_renumbered_or_removed() {
    let diff = changed(|parts| {
        let scope = part(parts, "lto")
            .enums
            .iter_mut()
            .find(|item| item.name == "LTOCacheScope")
            .unwrap();
        scope.values[1].value = 7;
    });
    expect(&diff, &["breaking value-renumbered LTOCacheScope.TASK"]);
    assert!(diff.changes[0].message.contains("changed 1 → 7"));

    let diff = changed(|parts| {
        let scope = part(parts, "lto")
            .enums
            .iter_mut()
            .find(|item| item.name == "LTOCacheScope")
            .unwrap();
        let mut value = scope.values[0].clone();
        value.name = "ARCHIVED".into();
        value.value = 9;
        scope.values.push(value);
        scope.values.remove(0);
    });
    expect(
        &diff,
        &[
            "breaking value-removed LTOCacheScope.DISABLED",
            "compatible value-added LTOCacheScope.ARCHIVED",
        ],
    );

    let diff = changed(|parts| {
        let flags = part(parts, "lto")
            .flags
            .iter_mut()
            .find(|item| item.name == "LTOOptionFlags")
            .unwrap();
        let mut bit = flags.bits[0].clone();
        bit.name = "NEW_OPTION".into();
        bit.bit = 40;
        flags.bits[0].bit = 41;
        flags.bits.push(bit);
    });
    let found = lines(&diff);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("breaking bit-moved LTOOptionFlags."), "{found:?}");
    assert_eq!(found[1], "compatible bit-added LTOOptionFlags.NEW_OPTION");

    // Values a state machine of the phase schema gives are compared like declared ones.
    let diff = changed(|parts| {
        let state = part(parts, "link")
            .enums
            .iter_mut()
            .find(|item| item.name == "LinkState")
            .unwrap();
        state.values.swap(2, 3);
        let (a, b) = (state.values[2].value, state.values[3].value);
        state.values[2].value = b;
        state.values[3].value = a;
    });
    assert_eq!(diff.count(ChangeClass::Breaking), 2, "{:?}", lines(&diff));
}

#[test]
fn interfaces_keep_their_id_and_major_version_and_may_grow_their_minor() {
    let diff = changed(|parts| set_interface(parts, "link", "LINK", |interface| interface.id.low = 2));
    expect(&diff, &["breaking interface-id LINK"]);

    let diff = changed(|parts| {
        set_interface(parts, "link", "LINK", |interface| {
            interface.major = 2;
            interface.minor = 0;
        });
    });
    expect(&diff, &["breaking interface-major LINK"]);

    let diff = changed(|parts| set_interface(parts, "target", "TARGET", |interface| interface.minor = 0));
    expect(&diff, &["breaking interface-minor TARGET"]);

    let diff = changed(|parts| {
        let mut added = part(parts, "lto").interfaces[0].clone();
        added.name = "LTO_CACHE".into();
        added.id.high += 0x100;
        part(parts, "lto").interfaces.push(added);
    });
    expect(&diff, &["compatible interface-added LTO_CACHE"]);

    let diff = changed(|parts| {
        part(parts, "lto").interfaces.remove(1);
    });
    assert!(
        lines(&diff).contains(&"breaking interface-removed LTO_REGISTRAR".to_string()),
        "{:?}",
        lines(&diff)
    );
}

#[test]
fn an_experimental_interface_may_change_but_a_stable_one_may_not_become_experimental() {
    let experimental = |parts: &mut Vec<LoadedAbiPart>| {
        set_interface(parts, "lto", "LTO", |interface| {
            interface.stability = Stability::Experimental
        });
    };
    // The interface was experimental in the baseline: its table's changes are allowed, and so is its major bump.
    let diff = between(experimental, |parts| {
        experimental(parts);
        api_slots(parts, "lto", "LTOAPI").remove(1);
        set_interface(parts, "lto", "LTO", |interface| interface.major = 2);
    });
    expect(
        &diff,
        &[
            "allowed interface-major LTO",
            "allowed slot-removed LTOAPI.GetModulePage",
        ],
    );
    assert!(!diff.is_breaking());

    // The same change to the stable interface is breaking, and downgrading it is breaking too.
    let diff = changed(|parts| {
        experimental(parts);
        api_slots(parts, "lto", "LTOAPI").remove(1);
    });
    expect(
        &diff,
        &[
            "breaking stability-downgrade LTO",
            "breaking slot-removed LTOAPI.GetModulePage",
        ],
    );

    // A file with an experimental interface makes its untied types experimental, unless a stable type uses them:
    // LTOOptions is reached from LTORequest, which the stable LTO_REGISTRAR's descriptor callbacks take.
    let diff = between(experimental, |parts| {
        experimental(parts);
        struct_fields(parts, "lto", "LTOOptions").swap(4, 5);
    });
    assert_eq!(diff.count(ChangeClass::Breaking), 1, "{:?}", lines(&diff));
    let both = |parts: &mut Vec<LoadedAbiPart>| {
        experimental(parts);
        set_interface(parts, "lto", "LTO_REGISTRAR", |interface| {
            interface.stability = Stability::Experimental;
        });
    };
    let diff = between(both, |parts| {
        both(parts);
        struct_fields(parts, "lto", "LTOOptions").swap(4, 5);
    });
    assert_eq!(diff.count(ChangeClass::Allowed), 1, "{:?}", lines(&diff));
    assert!(!diff.is_breaking());
}

#[test]
fn types_removed_renamed_or_changed_in_kind_are_breaking_and_new_ones_compatible() {
    let diff = changed(|parts| {
        let lto = part(parts, "lto");
        let index = lto
            .callbacks
            .iter()
            .position(|item| item.name == "LTOCodegenFn")
            .unwrap();
        lto.callbacks[index].name = "LTOGenerateFn".into();
    });
    let found = lines(&diff);
    assert!(
        found.contains(&"breaking type-removed LTOCodegenFn".to_string()),
        "{found:?}"
    );
    assert!(
        found.contains(&"compatible type-added LTOGenerateFn".to_string()),
        "{found:?}"
    );

    let diff = changed(|parts| {
        let lto = part(parts, "lto");
        let handle = lto.handles[0].clone();
        lto.handles.push(neverc_schema::AbiHandle {
            name: "LTOPartition".into(),
            ..handle
        });
    });
    expect(&diff, &["compatible type-added LTOPartitionHandle"]);

    let diff = changed(|parts| {
        let lto = part(parts, "lto");
        let moved = lto.flags.remove(0);
        part(parts, "link").flags.push(moved);
    });
    expect(&diff, &["warning type-moved LTOOptionFlags"]);
}
