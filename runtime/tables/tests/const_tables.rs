#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The generated tables are usable in `const` context and say what the JSON says, read independently.

use neverc_tables::generated::phases::{self, POLICY_OBSERVABLE, POLICY_SEALED_HOST_GATE, phase_by_name};
use neverc_tables::generated::state_machines::link;
use neverc_tables::generated::targets::{self, aarch64, x86_64};
use neverc_tables::{
    BUNDLED_TARGETS, RelocationBase, RelocationFormat, RelocationKind, RelocationRecord, TargetRecord, TlsVariant,
    target_by_elf, target_by_emulation,
};
use neverc_test_support::repo;
use serde_json::Value;

/// Evaluated by the compiler: a lookup in a generated table inside a `const` item.
const COMMIT_POLICY: u32 = match phase_by_name("neverc.link.commit") {
    Some(phase) => phase.policy,
    None => 0,
};
const ECX: Option<neverc_tables::ResolvedRegister> = x86_64::resolve("EcX");
const PC32: Option<&RelocationRecord> = x86_64::relocation(RelocationFormat::Elf, 2);
const CALL26: Option<&RelocationRecord> = aarch64::relocation_by_name("R_AARCH64_CALL26");
const AARCH64_LINUX: Option<&TargetRecord> = target_by_emulation("aarch64linux");
const AARCH64_TLS: TlsVariant = TlsVariant::of(AARCH64_LINUX);

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

#[test]
fn relocation_lookups_work_at_compile_time_and_agree_both_ways() {
    let pc32 = PC32.unwrap();
    assert_eq!(
        (pc32.name, pc32.kind, pc32.relative_to, pc32.size),
        ("R_X86_64_PC32", RelocationKind::Symbol, RelocationBase::Place, 32)
    );
    let call26 = CALL26.unwrap();
    assert_eq!(
        (call26.number, call26.kind, call26.shift),
        (283, RelocationKind::Branch, 2)
    );
    let mut checked = 0;
    for target in BUNDLED_TARGETS {
        let mut previous = None;
        for relocation in target.relocations {
            assert!(
                previous < Some((relocation.format, relocation.number)),
                "{} is sorted",
                target.name
            );
            previous = Some((relocation.format, relocation.number));
            assert_eq!(
                target.relocation(relocation.format, relocation.number),
                Some(relocation)
            );
            assert_eq!(target.relocation_by_name(relocation.name), Some(relocation));
            assert_eq!(target.relocation_by_name(&relocation.name.to_ascii_lowercase()), None);
            checked += 1;
        }
        assert_eq!(target.relocation(RelocationFormat::Elf, u32::MAX), None);
        assert_eq!(target.relocation_by_name(""), None);
    }
    assert!(checked >= 75, "{checked}");
    // R_X86_64_RELATIVE64 and R_AARCH64_P32_ABS32 exist, but not in a static link's inputs.
    assert_eq!(x86_64::relocation(RelocationFormat::Elf, 38), None);
    assert_eq!(aarch64::relocation(RelocationFormat::Elf, 1), None);
}

#[test]
fn targets_are_found_by_their_elf_header_facts() {
    assert_eq!(target_by_elf(62, 64, true).map(|target| target.name), Some("x86_64"));
    assert_eq!(target_by_elf(183, 64, true).map(|target| target.name), Some("aarch64"));
    assert_eq!(target_by_elf(243, 64, true).map(|target| target.name), Some("riscv64"));
    assert_eq!(target_by_elf(62, 32, true), None, "x32 is not bundled");
    assert_eq!(target_by_elf(183, 64, false), None, "big-endian AArch64 is not bundled");
    assert_eq!(target_by_elf(3, 32, true), None, "i386 is not bundled");
}

#[test]
fn targets_are_found_by_their_gnu_ld_emulations_and_declare_their_tls_variant() {
    assert_eq!(AARCH64_LINUX.map(|target| target.name), Some("aarch64"));
    assert_eq!(AARCH64_TLS, TlsVariant::I { tcb_size: 16 });
    let by_emulation = |name| target_by_emulation(name).map(|target| target.name);
    assert_eq!(by_emulation("aarch64elf"), Some("aarch64"));
    assert_eq!(by_emulation("elf_x86_64"), Some("x86_64"));
    assert_eq!(by_emulation("elf64lriscv"), Some("riscv64"));
    // Exact spellings, as GNU ld compares them; emulations of other targets are nobody's.
    assert_eq!(by_emulation("ELF_X86_64"), None);
    assert_eq!(by_emulation("elf32_x86_64"), None, "x32 is not bundled");
    assert_eq!(by_emulation("aarch64linuxb"), None, "big-endian AArch64 is not bundled");
    assert_eq!(by_emulation(""), None);
    // Every target declares at least one, and no two targets the same one.
    let mut seen = std::collections::HashSet::new();
    for target in BUNDLED_TARGETS {
        let elf = target.elf.unwrap();
        assert!(!elf.emulations.is_empty(), "{}", target.name);
        for emulation in elf.emulations {
            assert!(seen.insert(*emulation), "{emulation}");
            assert_eq!(by_emulation(emulation), Some(target.name));
        }
    }
    let tls = |name| TlsVariant::of(neverc_tables::target_by_name(name));
    assert_eq!(tls("x86_64"), TlsVariant::II);
    assert_eq!(tls("riscv64"), TlsVariant::I { tcb_size: 0 });
    assert_eq!(tls("x86_64").tcb_size(), None);
    assert_eq!((tls("aarch64").name(), tls("aarch64").tcb_size()), ("I", Some(16)));
}
