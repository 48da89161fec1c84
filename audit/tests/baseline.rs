#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The baseline diff over NeverC's published schema history, in both directions, and over deliberately
//! broken copies of the newest schema.
//!
//! Expected counts are computed here from the JSON itself (name sets and stability fields), independently of
//! the diff's code.

use std::collections::BTreeSet;

use neverc_audit::baseline::{BaselineDiff, ChangeClass, diff_schemas};
use neverc_schema::{PhaseSchemaDocument, parse_phase_schema_for_audit};
use neverc_test_support::{NEVERC_HISTORY, add_phase_like, repo};
use serde_json::Value;

/// One of NeverC's published schemas.
fn text(name: &str) -> String {
    std::fs::read_to_string(repo().join("tests/fixtures/neverc").join(name)).unwrap()
}

fn document(name: &str, text: &str) -> PhaseSchemaDocument {
    let (document, semantic) = parse_phase_schema_for_audit(name, text).unwrap();
    assert!(semantic.is_empty(), "{name}: {semantic:?}");
    document
}

fn diff(old: &str, new: &str) -> BaselineDiff {
    diff_texts(old, &text(old), new, &text(new))
}

fn diff_texts(old: &str, old_text: &str, new: &str, new_text: &str) -> BaselineDiff {
    // A broken copy may also break invariants of validation (an event opened for interception does); the diff
    // only needs a structurally sound document.
    let (new_document, _) = parse_phase_schema_for_audit(new, new_text).unwrap();
    diff_schemas(old, &document(old, old_text), new, &new_document)
}

/// Phase name → stability, straight from the JSON.
fn stabilities(name: &str) -> Vec<(String, String)> {
    let value: Value = serde_json::from_str(&text(name)).unwrap();
    value["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|phase| {
            (
                phase["name"].as_str().unwrap().to_string(),
                phase["stability"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn rules(diff: &BaselineDiff, class: ChangeClass) -> Vec<&'static str> {
    diff.changes
        .iter()
        .filter(|change| change.class == class)
        .map(|change| change.rule)
        .collect()
}

#[test]
fn neverc_history_has_no_breaking_change_and_every_addition_and_promotion_is_named() {
    for pair in NEVERC_HISTORY.windows(2) {
        let (old, new) = (pair[0], pair[1]);
        let result = diff(old, new);
        let old_phases = stabilities(old);
        let new_phases = stabilities(new);
        let old_names: BTreeSet<_> = old_phases.iter().map(|(name, _)| name.clone()).collect();
        let added: BTreeSet<_> = new_phases
            .iter()
            .filter(|(name, _)| !old_names.contains(name))
            .map(|(name, _)| name.clone())
            .collect();
        let promoted = new_phases
            .iter()
            .filter(|(name, stability)| {
                stability == "stable"
                    && old_phases
                        .iter()
                        .any(|(old_name, old_stability)| old_name == name && old_stability == "experimental")
            })
            .count();
        println!(
            "{old} → {new}: {} breaking, {} compatible ({} phases added, {promoted} promoted), {} allowed",
            result.count(ChangeClass::Breaking),
            result.count(ChangeClass::Compatible),
            added.len(),
            result.count(ChangeClass::Allowed)
        );
        assert!(
            !result.is_breaking(),
            "{old} → {new}: {:#?}",
            rules(&result, ChangeClass::Breaking)
        );
        let reported_added: BTreeSet<_> = result
            .changes
            .iter()
            .filter(|change| change.rule == "phase-added")
            .map(|change| change.subject.clone())
            .collect();
        assert_eq!(reported_added, added, "{old} → {new}");
        assert_eq!(
            result
                .changes
                .iter()
                .filter(|change| change.rule == "stability-promotion")
                .count(),
            promoted,
            "{old} → {new}"
        );
        assert!(!added.is_empty() || promoted > 0, "{old} → {new} should differ");
    }
}

#[test]
fn going_back_in_history_is_breaking_and_each_break_is_named() {
    // Newest → 7adbf41: the phases promoted in the newest schema are downgraded again.
    let back = diff("PhaseSchema.json", "PhaseSchema.7adbf41.json");
    let promoted_in_newest = stabilities("PhaseSchema.json")
        .iter()
        .zip(stabilities("PhaseSchema.7adbf41.json").iter())
        .filter(|((_, new), (_, old))| new == "stable" && old == "experimental")
        .count();
    assert!(promoted_in_newest > 0);
    assert_eq!(
        rules(&back, ChangeClass::Breaking),
        vec!["stability-downgrade"; promoted_in_newest]
    );
    for change in back
        .changes
        .iter()
        .filter(|change| change.class == ChangeClass::Breaking)
    {
        assert!(change.message.contains(&change.subject) && change.message.contains("downgraded"));
    }

    // 3b975d8 → c3139b3 removes the phases 3b975d8 added; those that were stable break.
    let removed = diff("PhaseSchema.3b975d8.json", "PhaseSchema.c3139b3.json");
    let old_names: BTreeSet<_> = stabilities("PhaseSchema.c3139b3.json")
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let expected: Vec<_> = stabilities("PhaseSchema.3b975d8.json")
        .into_iter()
        .filter(|(name, stability)| !old_names.contains(name) && stability == "stable")
        .map(|(name, _)| name)
        .collect();
    assert!(!expected.is_empty());
    let reported: Vec<_> = removed
        .changes
        .iter()
        .filter(|change| change.class == ChangeClass::Breaking)
        .map(|change| {
            assert_eq!(change.rule, "phase-removed");
            change.subject.clone()
        })
        .collect();
    assert_eq!(reported, expected);

    // 7adbf41 → b553b6d drops phases that were experimental, and the extension family 7adbf41 added for their
    // domain, which had no stable phase: all allowed, nothing breaks.
    let experimental = diff("PhaseSchema.7adbf41.json", "PhaseSchema.b553b6d.json");
    let older: BTreeSet<_> = stabilities("PhaseSchema.b553b6d.json")
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let dropped: Vec<_> = stabilities("PhaseSchema.7adbf41.json")
        .into_iter()
        .filter(|(name, _)| !older.contains(name))
        .collect();
    assert!(!dropped.is_empty() && dropped.iter().all(|(_, stability)| stability == "experimental"));
    let mut expected = vec!["family-removed"];
    expected.extend(vec!["phase-removed"; dropped.len()]);
    assert_eq!(rules(&experimental, ChangeClass::Allowed), expected);
    assert!(!experimental.is_breaking());
    let family = &experimental.changes[0];
    assert_eq!(family.subject, "neverc.dyncode.extension");
    assert!(family.message.contains("only experimental phases"));
}

/// Applies `edit` to the newest schema's JSON and diffs newest → edited.
fn broken_copy(edit: impl FnOnce(&mut Value)) -> BaselineDiff {
    let original = text("PhaseSchema.json");
    let mut value: Value = serde_json::from_str(&original).unwrap();
    edit(&mut value);
    let edited = serde_json::to_string_pretty(&value).unwrap();
    diff_texts("PhaseSchema.json", &original, "broken.json", &edited)
}

fn phase_mut(value: &mut Value, predicate: impl Fn(&Value) -> bool) -> &mut Value {
    value["phases"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|phase| predicate(phase))
        .unwrap()
}

fn only_breaking_rule(diff: &BaselineDiff) -> (&'static str, String) {
    let breaking: Vec<_> = diff
        .changes
        .iter()
        .filter(|change| change.class == ChangeClass::Breaking)
        .collect();
    assert_eq!(breaking.len(), 1, "{breaking:#?}");
    (breaking[0].rule, breaking[0].subject.clone())
}

#[test]
fn deliberately_broken_copies_are_caught_with_the_rule_they_break() {
    let stable_transition = |phase: &Value| {
        phase["stability"] == "stable" && phase["gate"] == "transition" && phase["kind"] == "transition"
    };

    let removed = broken_copy(|value| {
        let phases = value["phases"].as_array_mut().unwrap();
        let index = phases
            .iter()
            .position(|phase| phase["name"] == "neverc.link.commit")
            .unwrap();
        phases.remove(index);
    });
    assert_eq!(
        only_breaking_rule(&removed),
        ("phase-removed", "neverc.link.commit".to_string())
    );

    let renumbered = broken_copy(|value| {
        let phase = phase_mut(value, stable_transition);
        phase["id"][1] = Value::from("0x00000000000000ff");
    });
    assert_eq!(only_breaking_rule(&renumbered).0, "phase-id");

    let reartifacted = broken_copy(|value| {
        let phase = phase_mut(value, stable_transition);
        phase["output_artifact"][1] = Value::from("0x0000000000000fff");
    });
    assert_eq!(only_breaking_rule(&reartifacted).0, "phase-artifact");

    let loosened = broken_copy(|value| {
        let phase = phase_mut(value, |phase| phase["name"] == "neverc.link.commit");
        phase["policy"] = serde_json::json!(["OBSERVABLE", "INTERCEPTABLE"]);
        phase["gate"] = Value::from("transition");
    });
    assert_eq!(
        only_breaking_rule(&loosened),
        ("sealed-gate-loosened", "neverc.link.commit".to_string())
    );

    let opened = broken_copy(|value| {
        let phase = phase_mut(value, |phase| {
            phase["stability"] == "stable" && phase["policy"] == serde_json::json!(["OBSERVABLE"])
        });
        phase["policy"] = serde_json::json!(["OBSERVABLE", "INTERCEPTABLE"]);
    });
    assert_eq!(only_breaking_rule(&opened).0, "closed-phase-opened");

    let closed = broken_copy(|value| {
        let phase = phase_mut(value, |phase| {
            stable_transition(phase)
                && phase["policy"]
                    .as_array()
                    .unwrap()
                    .contains(&Value::from("REPLACEABLE"))
        });
        let policy: Vec<Value> = phase["policy"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|flag| **flag != "REPLACEABLE")
            .cloned()
            .collect();
        phase["policy"] = Value::from(policy);
    });
    assert_eq!(only_breaking_rule(&closed).0, "capability-removed");

    let downgraded = broken_copy(|value| {
        phase_mut(value, stable_transition)["stability"] = Value::from("experimental");
    });
    assert_eq!(only_breaking_rule(&downgraded).0, "stability-downgrade");

    let unobservable = broken_copy(|value| {
        phase_mut(value, stable_transition)["observer_points"] = serde_json::json!(["AFTER"]);
    });
    assert_eq!(only_breaking_rule(&unobservable).0, "observer-point-removed");

    let family = broken_copy(|value| {
        value["extension_families"].as_array_mut().unwrap().remove(0);
    });
    assert_eq!(only_breaking_rule(&family).0, "family-removed");

    // Compatible edits stay compatible.
    let more = broken_copy(|value| {
        add_phase_like(
            value,
            "neverc.link.commit",
            "neverc.link.audit_trail",
            "LINK_AUDIT_TRAIL",
            "0x000000000000fff0",
        );
    });
    assert!(!more.is_breaking(), "{:#?}", more.changes);
    assert_eq!(rules(&more, ChangeClass::Compatible), vec!["phase-added"]);
}

/// Applies `edit` to our schema (which declares the link state machine) and diffs ours → edited.
fn machine_edit(edit: impl FnOnce(&mut Value)) -> BaselineDiff {
    let original = std::fs::read_to_string(repo().join("PhaseSchema.json")).unwrap();
    let mut value: Value = serde_json::from_str(&original).unwrap();
    edit(&mut value);
    let edited = serde_json::to_string_pretty(&value).unwrap();
    diff_texts("PhaseSchema.json", &original, "edited.json", &edited)
}

fn link_machine(value: &mut Value) -> &mut Value {
    &mut value["state_machines"]["link"]
}

#[test]
fn state_machine_changes_follow_the_stability_of_the_phases_they_involve() {
    // Lowering a stable transition's budget can make a converging plugin fail; raising it cannot.
    let lowered = machine_edit(|value| link_machine(value)["transitions"][6]["rerun_budget"] = 0.into());
    assert_eq!(only_breaking_rule(&lowered).0, "rerun-budget");
    let raised = machine_edit(|value| link_machine(value)["transitions"][6]["rerun_budget"] = 99.into());
    assert!(!raised.is_breaking());
    assert_eq!(rules(&raised, ChangeClass::Compatible), vec!["rerun-budget"]);

    // An experimental transition appended after the old final state: compatible, and removing it again is
    // allowed.
    let extended = machine_edit(|value| {
        let strip = add_phase_like(
            value,
            "neverc.link.emit_image",
            "neverc.link.strip",
            "LINK_STRIP",
            "0x00000000000000f0",
        );
        strip["stability"] = "experimental".into();
        let machine = link_machine(value);
        machine["states"].as_array_mut().unwrap().push("IMAGE_STRIPPED".into());
        machine["transitions"].as_array_mut().unwrap().push(serde_json::json!({
            "phase": "neverc.link.strip", "from": "IMAGE_EMITTED", "to": "IMAGE_STRIPPED", "rerun_budget": 1
        }));
    });
    assert!(!extended.is_breaking(), "{:#?}", extended.changes);
    assert!(rules(&extended, ChangeClass::Compatible).contains(&"machine-states"));

    // Mutation classes: a new class or operation is compatible, a reordered list is no change, a lost
    // operation or a moved invalidation point breaks.
    let added = machine_edit(|value| {
        let classes = link_machine(value)["mutation_classes"].as_array_mut().unwrap();
        classes.push(serde_json::json!({"name": "debug_info", "earliest_invalidated": "IMAGE_EMITTED", "operations": ["ReplaceDebugInfo"]}));
        classes[5]["operations"]
            .as_array_mut()
            .unwrap()
            .push("MoveSynthetic".into());
        classes[5]["operations"].as_array_mut().unwrap().reverse();
    });
    assert!(!added.is_breaking(), "{:#?}", added.changes);
    assert_eq!(
        rules(&added, ChangeClass::Compatible),
        vec!["mutation-class-operation-added", "mutation-class-added"]
    );
    let lost = machine_edit(|value| {
        link_machine(value)["mutation_classes"][5]["operations"]
            .as_array_mut()
            .unwrap()
            .pop();
    });
    assert_eq!(only_breaking_rule(&lost).0, "mutation-class");
    let moved = machine_edit(|value| {
        link_machine(value)["mutation_classes"][5]["earliest_invalidated"] = "LAYOUT_COMPLETE".into();
    });
    assert_eq!(only_breaking_rule(&moved).0, "mutation-class");

    // Reordering the sealed finalization steps breaks.
    let reordered = machine_edit(|value| {
        let steps = link_machine(value)["finalization"].as_array_mut().unwrap();
        steps.swap(1, 2);
    });
    assert_eq!(only_breaking_rule(&reordered).0, "machine-finalization");
}
