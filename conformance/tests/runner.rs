#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The runner fails vectors that disagree with the tables instead of excusing them as not applicable.

use std::path::Path;

use neverc_conformance::{Case, Environment, Outcome, fixture_link_inputs, run_case};

fn environment() -> Environment {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let scratch = root.join("runner-links");
    std::fs::create_dir_all(&scratch).unwrap();
    Environment {
        phase_tables: &neverc_tables::BUNDLED_PHASES,
        targets: neverc_tables::BUNDLED_TARGETS.to_vec(),
        link_inputs: fixture_link_inputs(root).unwrap(),
        scratch,
    }
}

fn outcome(json: &str) -> Outcome {
    let case: Case = serde_json::from_str(json).unwrap();
    run_case(&environment(), &case)
}

/// Every case (JSON) fails with a message that contains its reason.
fn fail_saying(cases: &[(String, &str)]) {
    for (wrong, reason) in cases {
        let found = outcome(wrong);
        assert!(
            matches!(&found, Outcome::Failed(message) if message.contains(reason)),
            "{wrong}: {found:?}"
        );
    }
}

#[test]
fn wrong_machines_classes_and_expectations_fail() {
    let unknown_machine = outcome(
        r#"{"id": "x", "kind": "mutation_lowers_state", "machine": "Link", "class": "symbol_root",
            "operations": ["SetSymbolRoot"], "earliest_invalidated": "GC_COMPLETE", "expected_state": "COMDAT_SELECTED",
            "at_phase": "neverc.link.emit_image"}"#,
    );
    assert!(
        matches!(&unknown_machine, Outcome::Failed(reason) if reason.contains("no state machine `Link`")),
        "{unknown_machine:?}"
    );

    let wrong_class = outcome(
        r#"{"id": "x", "kind": "mutation_lowers_state", "machine": "link", "class": "symbol_root",
            "operations": ["CreateConstraint"], "earliest_invalidated": "GC_COMPLETE", "expected_state": "COMDAT_SELECTED",
            "at_phase": "neverc.link.emit_image"}"#,
    );
    assert!(
        matches!(&wrong_class, Outcome::Failed(reason) if reason.contains("layout_constraint")),
        "{wrong_class:?}"
    );

    let unknown_operation = outcome(
        r#"{"id": "x", "kind": "rerun_budget", "phase": "neverc.link.gc", "machine": "link", "budget": 8,
            "choices": [{"class": "symbol_root", "operations": ["Teleport"], "fails_at": "neverc.link.gc", "runs": 9}]}"#,
    );
    assert!(
        matches!(&unknown_operation, Outcome::Failed(reason) if reason.contains("Teleport")),
        "{unknown_operation:?}"
    );

    let wrong_state = outcome(
        r#"{"id": "x", "kind": "mutation_lowers_state", "machine": "link", "class": "symbol_root",
            "operations": ["SetSymbolRoot"], "earliest_invalidated": "GC_COMPLETE", "expected_state": "SYMBOLS_RESOLVED",
            "at_phase": "neverc.link.emit_image"}"#,
    );
    assert!(
        matches!(&wrong_state, Outcome::Failed(reason) if reason.contains("COMDAT_SELECTED")),
        "{wrong_state:?}"
    );

    let wrong_budget = outcome(
        r#"{"id": "x", "kind": "rerun_budget", "phase": "neverc.link.gc", "machine": "link", "budget": 8,
            "choices": [{"class": "symbol_root", "operations": ["SetSymbolRoot"], "fails_at": "neverc.link.gc", "runs": 5}]}"#,
    );
    assert!(matches!(wrong_budget, Outcome::Failed(_)), "{wrong_budget:?}");

    let right = outcome(
        r#"{"id": "x", "kind": "rerun_budget", "phase": "neverc.link.gc", "machine": "link", "budget": 8,
            "choices": [{"class": "symbol_root", "operations": ["SetSymbolRoot"], "fails_at": "neverc.link.gc", "runs": 9}]}"#,
    );
    assert_eq!(right, Outcome::Passed);
}

#[test]
fn relocation_and_elf_cases_that_disagree_with_the_tables_fail() {
    let right = r#"{"id": "x", "kind": "relocation_resolves", "target": "aarch64", "format": "elf", "number": 275,
        "name": "R_AARCH64_ADR_PREL_PG_HI21", "relocation_kind": "symbol", "relative_to": "page", "size": 32,
        "overflow": "signed", "shift": 12, "bits": [[29, 2], [5, 19]]}"#;
    assert_eq!(outcome(right), Outcome::Passed);
    fail_saying(&[
        (
            right.replace("\"number\": 275", "\"number\": 276"),
            "`R_AARCH64_ADR_PREL_PG_HI21_NC`, not",
        ),
        (
            right.replace("\"number\": 275", "\"number\": 9999"),
            "relocation 9999 is not in the tables",
        ),
        (right.replace("[[29, 2], [5, 19]]", "[[5, 19], [29, 2]]"), "declared"),
        (right.replace("\"shift\": 12", "\"shift\": 0"), "declared"),
        (
            right.replace("\"relative_to\": \"page\"", "\"relative_to\": \"place\""),
            "declared",
        ),
        (
            right.replace("\"format\": \"elf\"", "\"format\": \"coff\""),
            "unknown relocation format",
        ),
    ]);
    let elf = r#"{"id": "x", "kind": "elf_facts", "target": "x86_64", "machine": 62, "class": 64,
        "common_page_size": 4096, "max_page_size": 4096, "tls_variant": "II", "emulations": ["elf_x86_64"]}"#;
    assert_eq!(outcome(elf), Outcome::Passed);
    let aarch64 = r#"{"id": "x", "kind": "elf_facts", "target": "aarch64", "machine": 183, "class": 64,
        "common_page_size": 4096, "max_page_size": 65536, "tls_variant": "I", "tcb_size": 16,
        "emulations": ["aarch64linux", "aarch64elf"]}"#;
    assert_eq!(outcome(aarch64), Outcome::Passed);
    fail_saying(&[
        (
            elf.replace("\"max_page_size\": 4096", "\"max_page_size\": 65536"),
            "declared",
        ),
        (
            elf.replace("\"tls_variant\": \"II\"", "\"tls_variant\": \"I\", \"tcb_size\": 16"),
            "TLS II; declared I { tcb_size: 16 }",
        ),
        (
            elf.replace("\"tls_variant\": \"II\"", "\"tls_variant\": \"III\""),
            "no TLS variant",
        ),
        (
            aarch64.replace("\"tcb_size\": 16", "\"tcb_size\": 0"),
            "TLS I { tcb_size: 16 }; declared I { tcb_size: 0 }",
        ),
        (
            elf.replace("[\"elf_x86_64\"]", "[\"elf_x86_64\", \"elf32_x86_64\"]"),
            "emulations [\"elf_x86_64\"]",
        ),
    ]);
    // An emulation that another loaded target also answers to chooses that one, and the case fails.
    let mut environment = environment();
    let mut copy = *neverc_tables::target_by_name("aarch64").unwrap();
    let mut elf_record = copy.elf.unwrap();
    elf_record.emulations = &["elf_x86_64"];
    copy.elf = Some(elf_record);
    environment.targets.insert(0, Box::leak(Box::new(copy)));
    let case: Case = serde_json::from_str(elf).unwrap();
    let found = run_case(&environment, &case);
    assert!(
        matches!(&found, Outcome::Failed(message) if message.contains("chooses Some(\"aarch64\")")),
        "{found:?}"
    );
}

/// The program the linking cases link is a mixed one: its bitcode object and bitcode archive member go
/// through LTO, and the program it makes runs like the `basics` reference linked by ld.bfd.
#[test]
fn the_fixture_program_links_bitcode_through_lto_and_runs() {
    use neverc_link::context::{LinkContext, LinkOptions};
    let environment = environment();
    let output = environment.scratch.join("fixture-program.out");
    let mut context = LinkContext::new(LinkOptions::new(environment.link_inputs.clone(), output.clone()));
    let mut registry = neverc_link::plugin::Registry::default();
    neverc_link::execute::run_link(&mut context, environment.phase_tables, &mut registry).unwrap();
    let modules = &context.graph.bitcode_modules;
    assert_eq!(modules.len(), 2, "the bitcode object and the archive's bitcode member");
    assert!(
        modules.iter().all(|module| !module.generated.is_empty()),
        "every module was compiled"
    );
    assert!(!context.graph.lto_resolutions.is_empty());
    let ran = std::process::Command::new(&output).output().unwrap();
    let dir = environment.link_inputs[0].parent().unwrap();
    let status = std::fs::read_to_string(dir.join("expected.status")).unwrap();
    assert_eq!(ran.status.code(), Some(status.trim().parse().unwrap()), "{ran:?}");
    assert_eq!(
        String::from_utf8(ran.stdout).unwrap(),
        std::fs::read_to_string(dir.join("expected.stdout")).unwrap()
    );
}

/// A descriptor vector that disagrees with the host fails, naming what differs; one for a descriptor this
/// runtime does not register is not applicable.
#[test]
fn descriptor_vectors_that_disagree_with_the_host_fail() {
    let case = |flags: u64, callbacks: &str, twice: bool, expected: &str, mentions: &str| {
        format!(
            r#"{{"id": "x", "kind": "descriptor_registration", "descriptor": "LTOProviderDescriptor", "flags": {flags},
                "callbacks": [{callbacks}], "twice": {twice}, "expected": "{expected}", "mentions": [{mentions}]}}"#
        )
    };
    fail_saying(&[
        // FULL with Codegen is accepted, not refused.
        (case(1, r#""Codegen""#, false, "INVALID_DESCRIPTOR", ""), "was accepted"),
        // Without Codegen the host refuses; a vector expecting acceptance fails.
        (case(1, "", false, "ACCEPTED", ""), "INVALID_DESCRIPTOR"),
        // The refusal names Codegen, not BuildCacheKey.
        (
            case(1, "", false, "INVALID_DESCRIPTOR", r#""BuildCacheKey""#),
            "does not name `BuildCacheKey`",
        ),
        // The second registration of an id is DUPLICATE_ID.
        (case(1, r#""Codegen""#, true, "INVALID_DESCRIPTOR", ""), "DUPLICATE_ID"),
        (
            case(1, r#""Generate""#, false, "ACCEPTED", ""),
            "no callback `Generate`",
        ),
    ]);
    let other = outcome(
        r#"{"id": "x", "kind": "descriptor_registration", "descriptor": "CCDescriptor", "flags": 1,
            "callbacks": [], "twice": false, "expected": "ACCEPTED", "mentions": []}"#,
    );
    assert!(matches!(other, Outcome::NotApplicable(_)), "{other:?}");
}
