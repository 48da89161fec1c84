#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The sealing audit and the policy smells, on our schema, on NeverC's newest, and on copies edited to show
//! each smell and a broken invariant.

use neverc_audit::sealing::{SealingAudit, audit_sealing};
use neverc_audit::smells::SMELL_RULES;
use neverc_schema::parse_phase_schema_for_audit;
use neverc_test_support::repo;
use serde_json::{Value, json};

fn audit_text(name: &str, text: &str) -> SealingAudit {
    let (document, semantic) = parse_phase_schema_for_audit(name, text).unwrap();
    audit_sealing(name, &document, &semantic)
}

fn audit_file(path: &str) -> (SealingAudit, Value) {
    let text = std::fs::read_to_string(repo().join(path)).unwrap();
    (audit_text(path, &text), serde_json::from_str(&text).unwrap())
}

fn edited(path: &str, edit: impl FnOnce(&mut Value)) -> SealingAudit {
    let mut value: Value = serde_json::from_str(&std::fs::read_to_string(repo().join(path)).unwrap()).unwrap();
    edit(&mut value);
    audit_text("edited.json", &serde_json::to_string_pretty(&value).unwrap())
}

fn smell_subjects(audit: &SealingAudit, rule: &str) -> Vec<String> {
    audit
        .smells
        .iter()
        .filter(|smell| smell.rule == rule)
        .map(|smell| smell.subject.clone())
        .collect()
}

fn names_where(value: &Value, predicate: impl Fn(&Value) -> bool) -> Vec<String> {
    value["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|phase| predicate(phase))
        .map(|phase| phase["name"].as_str().unwrap().to_string())
        .collect()
}

fn has_flag(phase: &Value, flag: &str) -> bool {
    phase["policy"].as_array().unwrap().iter().any(|value| value == flag)
}

#[test]
fn every_phase_appears_once_with_its_declared_capabilities_and_every_sealed_gate_is_listed() {
    for path in ["PhaseSchema.json", "tests/fixtures/neverc/PhaseSchema.json"] {
        let (audit, value) = audit_file(path);
        assert!(audit.is_valid(), "{path}");
        let phases: Vec<_> = audit.phases().collect();
        assert_eq!(phases.len(), value["phases"].as_array().unwrap().len());
        for row in &phases {
            let declared = value["phases"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == row.name.as_str());
            let declared = declared.unwrap();
            assert_eq!(row.observe, has_flag(declared, "OBSERVABLE"));
            assert_eq!(row.intercept, has_flag(declared, "INTERCEPTABLE"));
            assert_eq!(row.replace, has_flag(declared, "REPLACEABLE"));
            assert_eq!(row.skip_with_proof, has_flag(declared, "SKIPPABLE_WITH_PROOF"));
            assert_eq!(row.sealed, has_flag(declared, "SEALED_HOST_GATE"));
        }
        let mut sealed: Vec<String> = audit
            .domains
            .iter()
            .flat_map(|domain| domain.sealed_gates.iter().map(|gate| gate.phase.clone()))
            .collect();
        let mut expected = names_where(&value, |phase| has_flag(phase, "SEALED_HOST_GATE"));
        sealed.sort();
        expected.sort();
        assert_eq!(sealed, expected, "{path}");
        assert!(!sealed.is_empty());
        for gate in audit.domains.iter().flat_map(|domain| &domain.sealed_gates) {
            assert!(gate.guards.contains(&gate.verifier), "{}", gate.guards);
        }
    }
}

#[test]
fn our_commit_gate_guards_the_steps_after_it_and_the_image_verifier_those_after_it() {
    let (audit, _) = audit_file("PhaseSchema.json");
    let link = audit.domains.iter().find(|domain| domain.domain == "link").unwrap();
    let gate = |name: &str| link.sealed_gates.iter().find(|gate| gate.phase == name).unwrap();
    assert_eq!(
        gate("neverc.link.commit").guarded_phases,
        vec!["neverc.link.after_commit"]
    );
    assert_eq!(
        gate("neverc.link.image_verify").guarded_phases,
        vec![
            "neverc.link.side_outputs_verify",
            "neverc.link.commit",
            "neverc.link.after_commit"
        ]
    );
}

#[test]
fn smells_of_our_schema_and_of_neverc_newest() {
    let (ours, value) = audit_file("PhaseSchema.json");
    // Proofs are issued from LAYOUT_COMPLETE; the skippable transitions that leave an earlier state can never
    // be skipped.
    let machine = &value["state_machines"]["link"];
    let states: Vec<&str> = machine["states"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    let proof = states
        .iter()
        .position(|state| *state == machine["proof_state"])
        .unwrap();
    let early: Vec<String> = machine["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|transition| states.iter().position(|state| *state == transition["from"]).unwrap() < proof)
        .map(|transition| transition["phase"].as_str().unwrap().to_string())
        .filter(|name| {
            value["phases"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == name.as_str() && has_flag(p, "SKIPPABLE_WITH_PROOF"))
        })
        .collect();
    assert!(!early.is_empty());
    assert_eq!(smell_subjects(&ours, "skippable-before-proof"), early);
    for rule in [
        "skippable-without-verifier",
        "replaceable-without-fallback",
        "event-beyond-observable",
        "sealed-gate-bypassable",
    ] {
        assert!(smell_subjects(&ours, rule).is_empty(), "{rule}");
    }
    // The domains with sealed gates but no state machine: ir and codegen.
    assert_eq!(smell_subjects(&ours, "sealed-gate-unordered"), vec!["ir", "codegen"]);

    let (neverc, value) = audit_file("tests/fixtures/neverc/PhaseSchema.json");
    let mut sealed_domains: Vec<String> = Vec::new();
    for phase in value["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| has_flag(p, "SEALED_HOST_GATE"))
    {
        let domain = phase["domain"].as_str().unwrap().to_string();
        if !sealed_domains.contains(&domain) {
            sealed_domains.push(domain);
        }
    }
    assert_eq!(smell_subjects(&neverc, "sealed-gate-unordered"), sealed_domains);
    assert!(smell_subjects(&neverc, "skippable-before-proof").is_empty());
}

#[test]
fn edited_copies_show_every_smell_and_broken_invariants_are_reported_not_refused() {
    let audit = edited("PhaseSchema.json", |value| {
        let phases = value["phases"].as_array_mut().unwrap();
        for phase in phases.iter_mut() {
            match phase["name"].as_str().unwrap() {
                // A replaceable phase without a fallback.
                "neverc.link.full" => phase["builtin_fallback"] = json!(false),
                // An event that can be intercepted (also breaks the event-policy invariant).
                "neverc.link.after_commit" => phase["policy"] = json!(["OBSERVABLE", "INTERCEPTABLE"]),
                // A skippable transition in a domain whose only sealed verifier is unsealed.
                "neverc.ir.optimize" => phase["policy"] = json!(["OBSERVABLE", "SKIPPABLE_WITH_PROOF"]),
                "neverc.ir.final_verify" => {
                    phase["policy"] = json!(["OBSERVABLE", "INTERCEPTABLE"]);
                    phase["gate"] = json!("transition");
                }
                _ => {}
            }
        }
        // The image verifier is taken off the machine's path; the side-output verifier moves after the commit.
        value["state_machines"]["link"]["finalization"] = json!([
            "neverc.link.post_emit",
            "neverc.link.commit",
            "neverc.link.side_outputs_verify",
            "neverc.link.after_commit"
        ]);
    });
    assert_eq!(
        smell_subjects(&audit, "replaceable-without-fallback"),
        vec!["neverc.link.full"]
    );
    assert_eq!(
        smell_subjects(&audit, "event-beyond-observable"),
        vec!["neverc.link.after_commit"]
    );
    assert_eq!(
        smell_subjects(&audit, "skippable-without-verifier"),
        vec!["neverc.ir.optimize"]
    );
    assert_eq!(
        smell_subjects(&audit, "sealed-gate-bypassable"),
        vec!["neverc.link.image_verify", "neverc.link.side_outputs_verify"]
    );
    for (rule, _) in SMELL_RULES {
        assert!(!smell_subjects(&audit, rule).is_empty(), "{rule} not shown");
    }
    assert!(!audit.is_valid());
    let broken: Vec<&str> = audit.invariants.iter().filter(|i| !i.holds()).map(|i| i.rule).collect();
    assert!(broken.contains(&"event-policy"), "{broken:?}");
    let violation = &audit
        .invariants
        .iter()
        .find(|i| i.rule == "event-policy")
        .unwrap()
        .violations[0];
    assert!(violation.line > 0 && violation.pointer.starts_with("/phases/"));
}
