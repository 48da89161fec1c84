#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Each semantic rule, broken on purpose in a copy of the bundled declarations, is reported at the right place.

use neverc_schema::{Diagnostic, parse_phase_schema, parse_target};
use neverc_test_support::repo;
use serde_json::{Value, json};

fn schema_with(change: impl FnOnce(&mut Value)) -> Vec<Diagnostic> {
    let text = std::fs::read_to_string(repo().join("PhaseSchema.json")).unwrap();
    let mut document: Value = serde_json::from_str(&text).unwrap();
    change(&mut document);
    let text = serde_json::to_string_pretty(&document).unwrap();
    match parse_phase_schema("PhaseSchema.json", &text) {
        Ok(_) => Vec::new(),
        Err(diagnostics) => {
            for diagnostic in &diagnostics {
                let line = text.lines().nth(diagnostic.line - 1).unwrap_or("");
                assert!(diagnostic.line >= 1, "{diagnostic} has no line");
                assert!(!line.trim().is_empty(), "{diagnostic} points at a blank line");
            }
            diagnostics
        }
    }
}

fn phase<'a>(document: &'a mut Value, name: &str) -> &'a mut Value {
    document["phases"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|phase| phase["name"] == name)
        .unwrap()
}

fn index_of(name: &str) -> usize {
    let text = std::fs::read_to_string(repo().join("PhaseSchema.json")).unwrap();
    let document: Value = serde_json::from_str(&text).unwrap();
    document["phases"]
        .as_array()
        .unwrap()
        .iter()
        .position(|phase| phase["name"] == name)
        .unwrap()
}

fn rules(diagnostics: &[Diagnostic]) -> Vec<(&'static str, String)> {
    diagnostics.iter().map(|d| (d.rule.code(), d.pointer.clone())).collect()
}

#[test]
fn the_bundled_schema_has_no_problem() {
    assert!(schema_with(|_| {}).is_empty());
}

#[test]
fn names_symbols_and_ids_are_unique() {
    let gc = index_of("neverc.link.gc");
    let icf = index_of("neverc.link.icf");
    let found = schema_with(|document| {
        let name = document["phases"][gc]["name"].clone();
        let symbol = document["phases"][gc]["symbol"].clone();
        let id = document["phases"][gc]["id"].clone();
        let icf = &mut document["phases"][icf];
        icf["name"] = name;
        icf["symbol"] = symbol;
        icf["id"] = id;
    });
    let found = rules(&found);
    for rule in ["duplicate-name", "duplicate-symbol", "duplicate-id"] {
        assert!(
            found
                .iter()
                .any(|(r, pointer)| *r == rule && pointer.starts_with(&format!("/phases/{icf}/"))),
            "{rule} missing in {found:?}"
        );
    }
}

#[test]
fn sealed_gates_exclude_capabilities_and_need_a_sealed_gate() {
    let verify = index_of("neverc.link.image_verify");
    let found = schema_with(|document| {
        phase(document, "neverc.link.image_verify")["policy"] =
            json!(["OBSERVABLE", "REPLACEABLE", "SKIPPABLE_WITH_PROOF", "SEALED_HOST_GATE"]);
        phase(document, "neverc.link.side_outputs_verify")["gate"] = json!("transition");
        phase(document, "neverc.link.post_emit")["gate"] = json!("sealed_verifier");
    });
    let found = rules(&found);
    assert!(
        found.contains(&("sealed-gate", format!("/phases/{verify}/policy/1"))),
        "{found:?}"
    );
    assert!(
        found.contains(&("sealed-gate", format!("/phases/{verify}/policy/2"))),
        "{found:?}"
    );
    assert!(
        found.contains(&(
            "sealed-gate",
            format!("/phases/{}/gate", index_of("neverc.link.side_outputs_verify"))
        )),
        "{found:?}"
    );
    assert!(
        found.contains(&(
            "sealed-gate",
            format!("/phases/{}/policy", index_of("neverc.link.post_emit"))
        )),
        "{found:?}"
    );
}

#[test]
fn events_are_observable_after_only() {
    let event = index_of("neverc.link.after_commit");
    let found = schema_with(|document| {
        let phase = phase(document, "neverc.link.after_commit");
        phase["policy"] = json!(["OBSERVABLE", "INTERCEPTABLE"]);
        phase["observer_points"] = json!(["BEFORE", "AFTER"]);
    });
    let found = rules(&found);
    assert!(
        found.contains(&("event-policy", format!("/phases/{event}/policy"))),
        "{found:?}"
    );
    assert!(
        found.contains(&("event-policy", format!("/phases/{event}/observer_points"))),
        "{found:?}"
    );
}

#[test]
fn ids_stay_in_their_domain_family() {
    let found = schema_with(|document| {
        // A link phase with an id in the IR extension family, and an IR phase with a foreign id high.
        phase(document, "neverc.link.gc")["id"] = json!(["0x4e435048495200ff", "0x0000000000010001"]);
        phase(document, "neverc.ir.optimize")["id"][0] = json!("0x4e43504849520002");
    });
    let found = rules(&found);
    assert!(
        found.contains(&("id-family", format!("/phases/{}/id", index_of("neverc.link.gc")))),
        "{found:?}"
    );
    assert!(
        found.contains(&("id-family", format!("/phases/{}/id", index_of("neverc.ir.optimize")))),
        "{found:?}"
    );
}

#[test]
fn extension_families_do_not_overlap() {
    let found = schema_with(|document| {
        let mut copy = document["extension_families"][0].clone();
        copy["namespace"] = json!("neverc.extra.extension");
        copy["id_low_min"] = json!("0x00000000ffff0000");
        document["extension_families"].as_array_mut().unwrap().push(copy);
    });
    let found = rules(&found);
    assert!(
        found.contains(&("family-overlap", "/extension_families/8/id_high".to_string())),
        "{found:?}"
    );
}

#[test]
fn the_state_machine_must_chain() {
    let found = schema_with(|document| {
        let machine = &mut document["state_machines"]["link"];
        // gc now claims to reach ICF_COMPLETE, which icf also reaches, and nothing reaches GC_COMPLETE.
        machine["transitions"][6]["to"] = json!("ICF_COMPLETE");
        machine["mutation_classes"][0]["earliest_invalidated"] = json!("NOT_A_STATE");
        machine["proof_state"] = json!("LAYOUT_DONE");
        machine["finalization"][1] = json!("neverc.link.commit");
    });
    let found = rules(&found);
    for (rule, pointer) in [
        ("transition-step", "/state_machines/link/transitions/6/to"),
        ("state-reached-twice", "/state_machines/link/transitions/7/to"),
        ("state-unreached", "/state_machines/link/states/7"),
        (
            "unknown-state",
            "/state_machines/link/mutation_classes/0/earliest_invalidated",
        ),
        ("unknown-state", "/state_machines/link/proof_state"),
        ("artifact-chain", "/state_machines/link/finalization/1"),
    ] {
        assert!(
            found.contains(&(rule, pointer.to_string())),
            "{rule} at {pointer} missing in {found:?}"
        );
    }
}

#[test]
fn artifacts_chain_from_transition_to_transition() {
    let found = schema_with(|document| {
        phase(document, "neverc.link.layout")["input_artifact"] = json!(["0x4e4341524c4e4b01", "0x0000000000000063"]);
    });
    let found = rules(&found);
    assert!(
        found.contains(&(
            "artifact-chain",
            "/state_machines/link/transitions/10/phase".to_string()
        )),
        "{found:?}"
    );
}

#[test]
fn structure_errors_are_all_reported_with_unknown_keys_at_the_key() {
    let found = schema_with(|document| {
        phase(document, "neverc.link.gc")["owner"] = json!("me");
        phase(document, "neverc.link.icf")["colour"] = json!("red");
        document["state_machines"]["link"]["extra"] = json!(1);
    });
    let unknown: Vec<_> = found.iter().filter(|d| d.rule == "unknown-key").collect();
    assert_eq!(unknown.len(), 3, "{found:?}");
    assert!(unknown.iter().any(|d| d.message.contains("`owner`")));
}

fn target_with(file: &str, change: impl FnOnce(String) -> String) -> Vec<Diagnostic> {
    let text = change(std::fs::read_to_string(repo().join("targets").join(file)).unwrap());
    match parse_target(file, &text) {
        Ok(_) => Vec::new(),
        Err(diagnostics) => diagnostics,
    }
}

fn has(found: &[Diagnostic], rule: &str, text_in_message: &str) -> bool {
    found
        .iter()
        .any(|d| d.rule == rule && d.message.contains(text_in_message))
}

#[test]
fn register_names_numbers_and_widths_are_checked() {
    let found = target_with("aarch64.toml", |text| {
        text.replacen(
            "subregisters = [{ name = \"w9\", width = 32 }]",
            "subregisters = [{ name = \"w8\", width = 16 }]",
            1,
        )
        .replacen("dwarf = 10\n", "dwarf = 9\n", 1)
    });
    assert!(has(&found, "duplicate-register-name", "`w8`"), "{found:?}");
    assert!(has(&found, "width", "`w8` has width 16"), "{found:?}");
    assert!(has(&found, "duplicate-dwarf-number", "DWARF number 9"), "{found:?}");
    assert!(has(&found, "schema-digest", "plan number = DWARF + 1"), "{found:?}");
}

#[test]
fn reserved_registers_stay_out_of_pools_specs_and_layouts() {
    let found = target_with("x86_64.toml", |text| {
        text.replacen(
            "integer_arguments = [\"rdi\"",
            "integer_arguments = [\"rsp\", \"rdi\"",
            1,
        )
        .replacen(
            "default_spec = \"gpr:r10,r11,rsi,rdi;ret:rdx\"",
            "default_spec = \"gpr:r10,esp;ret:rdx;stack_pointer:rsp\"",
            1,
        )
        .replacen("\"gpr:rcx,rdx,r8,r9;ret:rax\"", "\"gpr:rcx,xmm0;ret:rax\"", 1)
    });
    assert!(
        has(
            &found,
            "reserved-register",
            "the integer argument pool names reserved register `rsp`"
        ),
        "{found:?}"
    );
    assert!(
        has(
            &found,
            "reserved-register",
            "the default spec names reserved register `esp`"
        ),
        "{found:?}"
    );
    assert!(has(&found, "spec", "unknown key `stack_pointer`"), "{found:?}");
    assert!(has(&found, "register-class", "`xmm0` is not one"), "{found:?}");
}

#[test]
fn toml_errors_carry_line_and_column() {
    let found = target_with("riscv64.toml", |text| {
        text.replacen("stack_alignment = 16", "stack_alignment = ", 1)
    });
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].rule, "toml-syntax");
    let line = std::fs::read_to_string(repo().join("targets/riscv64.toml"))
        .unwrap()
        .lines()
        .position(|l| l.starts_with("stack_alignment"))
        .unwrap()
        + 1;
    assert_eq!(found[0].line, line);
    assert!(found[0].column > 1);
}
