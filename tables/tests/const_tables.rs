#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The generated tables are usable in `const` context and say what the JSON says, read independently.

use neverc_tables::generated::phases::{self, POLICY_OBSERVABLE, POLICY_SEALED_HOST_GATE, phase_by_name};
use neverc_tables::generated::state_machines::link;
use neverc_tables::generated::targets::{self, x86_64};
use neverc_test_support::repo;
use serde_json::Value;

/// Evaluated by the compiler: a lookup in a generated table inside a `const` item.
const COMMIT_POLICY: u32 = match phase_by_name("neverc.link.commit") {
    Some(phase) => phase.policy,
    None => 0,
};
const ECX: Option<neverc_tables::ResolvedRegister> = x86_64::resolve("EcX");

fn schema_json() -> Value {
    serde_json::from_str(&std::fs::read_to_string(repo().join("PhaseSchema.json")).unwrap()).unwrap()
}

#[test]
fn const_lookups_work_at_compile_time() {
    assert_eq!(COMMIT_POLICY, POLICY_OBSERVABLE | POLICY_SEALED_HOST_GATE);
    let ecx = ECX.unwrap();
    assert_eq!(
        (x86_64::REGISTERS[ecx.register].name, ecx.width, ecx.plan_number),
        ("rcx", 32, 25)
    );
    assert_eq!(
        x86_64::by_number(61).map(|r| x86_64::REGISTERS[r.register].name),
        Some("rsp")
    );
    assert!(targets::target_by_name("X86-64").is_some());
    assert!(targets::target_by_name("vax").is_none());
}

#[test]
fn every_phase_row_matches_the_json() {
    let document = schema_json();
    let phases_json = document["phases"].as_array().unwrap();
    assert_eq!(phases_json.len(), phases::PHASE_COUNT);
    for (json, record) in phases_json.iter().zip(phases::PHASES.iter()) {
        assert_eq!(json["name"], record.name);
        let high = u64::from_str_radix(json["id"][0].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        let low = u64::from_str_radix(json["id"][1].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        assert_eq!(phases::phase_by_id(high, low).map(|p| p.name), Some(record.name));
        let bits = json["policy"].as_array().unwrap().iter().fold(0, |bits, flag| {
            bits | match flag.as_str().unwrap() {
                "OBSERVABLE" => 1,
                "INTERCEPTABLE" => 2,
                "REPLACEABLE" => 4,
                "SKIPPABLE_WITH_PROOF" => 8,
                "SEALED_HOST_GATE" => 16,
                other => panic!("{other}"),
            }
        });
        assert_eq!(record.policy, bits, "{}", record.name);
    }
}

#[test]
fn the_link_machine_matches_the_json() {
    let document = schema_json();
    let machine = &document["state_machines"]["link"];
    for transition in machine["transitions"].as_array().unwrap() {
        let from = link::MACHINE
            .state_by_name(transition["from"].as_str().unwrap())
            .unwrap();
        let record = link::MACHINE.transition_from(from).unwrap();
        assert_eq!(phases::PHASES[record.phase].name, transition["phase"]);
        assert_eq!(
            Some(record.to),
            link::MACHINE.state_by_name(transition["to"].as_str().unwrap())
        );
        assert_eq!(
            u64::from(record.rerun_budget),
            transition["rerun_budget"].as_u64().unwrap()
        );
    }
    for class in machine["mutation_classes"].as_array().unwrap() {
        let earliest = link::MACHINE
            .state_by_name(class["earliest_invalidated"].as_str().unwrap())
            .unwrap();
        for operation in class["operations"].as_array().unwrap() {
            let record = link::MACHINE.class_of_operation(operation.as_str().unwrap()).unwrap();
            assert_eq!(record.name, class["name"]);
            assert_eq!(record.earliest_invalidated, earliest);
        }
    }
    assert_eq!(
        Some(link::MACHINE.proof_state),
        link::MACHINE.state_by_name(machine["proof_state"].as_str().unwrap())
    );
    assert_eq!(link::MACHINE.transition_from(link::MACHINE.final_state()), None);
    assert_eq!(link::MACHINE.class_of_operation("NoSuchCall"), None);
}
