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

/// The 1-based line of the first line of `changed` that is exactly `needle`.
fn line_of(changed: &str, needle: &str) -> usize {
    changed.lines().position(|line| line == needle).unwrap() + 1
}

/// Like [`target_with`], also returning the changed text.
fn target_text_with(file: &str, change: impl FnOnce(String) -> String) -> (String, Vec<Diagnostic>) {
    let text = change(std::fs::read_to_string(repo().join("targets").join(file)).unwrap());
    let found = match parse_target(file, &text) {
        Ok(_) => Vec::new(),
        Err(diagnostics) => diagnostics,
    };
    (text, found)
}

/// The diagnostic of `rule` whose message contains `text_in_message`.
fn find<'a>(found: &'a [Diagnostic], rule: &str, text_in_message: &str) -> &'a Diagnostic {
    found
        .iter()
        .find(|d| d.rule == rule && d.message.contains(text_in_message))
        .unwrap_or_else(|| panic!("no {rule} `{text_in_message}` in {found:?}"))
}

#[test]
fn relocation_numbers_and_names_are_unique() {
    let (text, found) = target_text_with("x86_64.toml", |text| {
        text.replacen(
            "number = 42\nname = \"R_X86_64_REX_GOTPCRELX\"",
            "number = 41\nname = \"R_X86_64_REX_GOTPCRELX\"",
            1,
        )
        .replacen("name = \"R_X86_64_PC64\"", "name = \"R_X86_64_PC32\"", 1)
    });
    let number = find(
        &found,
        "duplicate-relocation-number",
        "`R_X86_64_REX_GOTPCRELX` reuses elf relocation number 41 of `R_X86_64_GOTPCRELX`",
    );
    assert!(number.pointer.starts_with("/relocations/") && number.pointer.ends_with("/number"));
    // The second of the two `number = 41` lines.
    let second = text
        .lines()
        .enumerate()
        .filter(|(_, line)| *line == "number = 41")
        .nth(1)
        .unwrap()
        .0
        + 1;
    assert_eq!(number.line, second);
    let name = find(
        &found,
        "duplicate-relocation-name",
        "`R_X86_64_PC32` is already declared as number 2",
    );
    assert!(name.pointer.ends_with("/name"), "{name}");
    assert_eq!(
        text.lines().nth(name.line - 2),
        Some("number = 24"),
        "the name of the relocation numbered 24 is reported"
    );
    assert_eq!(found.len(), 2, "{found:?}");
}

#[test]
fn relocation_fields_have_legal_sizes_bits_and_shifts() {
    let (text, found) = target_text_with("aarch64.toml", |text| {
        text.replacen(
            "name = \"R_AARCH64_ABS16\"\nkind = \"symbol\"\nsize = 16",
            "name = \"R_AARCH64_ABS16\"\nkind = \"symbol\"\nsize = 24",
            1,
        )
        // Past the 32-bit instruction, overlapping, and shifted past bit 63.
        .replacen(
            "name = \"R_AARCH64_CALL26\"\nkind = \"branch\"\nrelative_to = \"place\"\nsize = 32\noverflow = \"signed\"\ninstruction = { shift = 2, bits = [{ lsb = 0, width = 26 }] }",
            "name = \"R_AARCH64_CALL26\"\nkind = \"branch\"\nrelative_to = \"place\"\nsize = 32\noverflow = \"signed\"\ninstruction = { shift = 2, bits = [{ lsb = 0, width = 26 }, { lsb = 20, width = 13 }] }",
            1,
        )
        .replacen(
            "instruction = { shift = 2, bits = [{ lsb = 5, width = 14 }] }",
            "instruction = { shift = 2, bits = [{ lsb = 5, width = 14 }, { lsb = 10, width = 4 }] }",
            1,
        )
        .replacen(
            "instruction = { shift = 48, bits = [{ lsb = 5, width = 16 }] }",
            "instruction = { shift = 64, bits = [{ lsb = 5, width = 16 }] }",
            1,
        )
        .replacen(
            "name = \"R_AARCH64_ABS64\"\nkind = \"symbol\"\nsize = 64\noverflow = \"none\"",
            "name = \"R_AARCH64_ABS64\"\nkind = \"symbol\"\nsize = 64\noverflow = \"none\"\ninstruction = { bits = [{ lsb = 0, width = 0 }] }",
            1,
        )
    });
    let size = find(&found, "relocation-field", "`R_AARCH64_ABS16` patches 24 bits");
    assert_eq!(size.line, line_of(&text, "size = 24"));
    let outside = find(
        &found,
        "relocation-field",
        "bits 20..33 of `R_AARCH64_CALL26` are not a non-empty run",
    );
    assert!(outside.pointer.ends_with("/instruction/bits/1"), "{outside}");
    find(
        &found,
        "relocation-field",
        "bits 10..14 of `R_AARCH64_TSTBR14` overlap an earlier run",
    );
    find(
        &found,
        "relocation-field",
        "`R_AARCH64_MOVW_UABS_G3` shifts its value by 64",
    );
    find(
        &found,
        "relocation-field",
        "`R_AARCH64_MOVW_UABS_G3` takes 16 bits above a shift of 64",
    );
    find(
        &found,
        "relocation-field",
        "bits 0..0 of `R_AARCH64_ABS64` are not a non-empty run",
    );
    assert!(found.iter().all(|d| d.rule == "relocation-field"), "{found:?}");
}

#[test]
fn relocation_kinds_say_what_they_may_be_relative_to_and_whether_they_patch() {
    let (text, found) = target_text_with("x86_64.toml", |text| {
        text.replacen(
            "name = \"R_X86_64_PC32\"\nkind = \"symbol\"\nrelative_to = \"place\"",
            "name = \"R_X86_64_PC32\"\nkind = \"symbol\"\nrelative_to = \"page\"",
            1,
        )
        .replacen(
            "name = \"R_X86_64_PLT32\"\nkind = \"branch\"\nrelative_to = \"place\"\n",
            "name = \"R_X86_64_PLT32\"\nkind = \"branch\"\n",
            1,
        )
        .replacen(
            "name = \"R_X86_64_TPOFF32\"\nkind = \"tls_le\"\n",
            "name = \"R_X86_64_TPOFF32\"\nkind = \"tls_le\"\nrelative_to = \"got\"\n",
            1,
        )
        .replacen(
            "name = \"R_X86_64_64\"\nkind = \"symbol\"\nsize = 64",
            "name = \"R_X86_64_64\"\nkind = \"symbol\"\nsize = 0",
            1,
        )
        .replacen(
            "name = \"R_X86_64_TLSDESC_CALL\"\nkind = \"tls_desc_call\"\nsize = 0",
            "name = \"R_X86_64_TLSDESC_CALL\"\nkind = \"tls_desc_call\"\nsize = 32",
            1,
        )
    });
    let page = find(
        &found,
        "relocation-kind",
        "`R_X86_64_PC32` is page-relative, which only an instruction field can be",
    );
    assert_eq!(page.line, line_of(&text, "relative_to = \"page\""));
    let branch = find(
        &found,
        "relocation-kind",
        "`R_X86_64_PLT32` is of kind `branch`, which cannot be relative to `nothing` (only place)",
    );
    assert!(branch.pointer.ends_with("/relative_to"), "{branch}");
    find(
        &found,
        "relocation-kind",
        "`R_X86_64_TPOFF32` is of kind `tls_le`, which cannot be relative to `got`",
    );
    find(
        &found,
        "relocation-kind",
        "`R_X86_64_64` is of kind `symbol`, which patches its place, so its size cannot be 0",
    );
    find(
        &found,
        "relocation-kind",
        "`R_X86_64_TLSDESC_CALL` is of kind `tls_desc_call`, which is a marker",
    );
    assert_eq!(found.len(), 5, "{found:?}");
}

#[test]
fn relocations_need_the_elf_facts_and_the_facts_must_hold() {
    let (_, found) = target_text_with("aarch64.toml", |text| {
        let start = text.find("[elf]\n").unwrap();
        let end = start + text[start..].find("\n\n").unwrap();
        format!("{}{}", &text[..start], &text[end..])
    });
    let declared = std::fs::read_to_string(repo().join("targets/aarch64.toml"))
        .unwrap()
        .matches("[[relocations]]")
        .count();
    assert!(declared >= 40, "{declared}");
    assert_eq!(
        found.iter().filter(|d| d.rule == "relocation-format").count(),
        declared,
        "every ELF relocation of a target without ELF facts is reported: {found:?}"
    );
    find(
        &found,
        "relocation-format",
        "`R_AARCH64_CALL26` is an ELF relocation, and the target declares no `[elf]` facts",
    );

    let (text, found) = target_text_with("x86_64.toml", |text| {
        text.replacen("machine = 62 ", "machine = 0  ", 1)
            .replacen("class = 64\n", "class = 32\n", 1)
            .replacen("common_page_size = 4096\n", "common_page_size = 8192\n", 1)
            .replacen("max_page_size = 4096\n", "max_page_size = 3000\n", 1)
    });
    let machine = find(&found, "elf", "ELF machine 0 is `EM_NONE`");
    assert_eq!(
        machine.line,
        text.lines().position(|line| line.starts_with("machine = 0")).unwrap() + 1
    );
    find(
        &found,
        "elf",
        "ELF class 32 must be 32 or 64 and equal the pointer width (64 bits)",
    );
    find(&found, "page-size", "page size 3000 is not a power of two");
    find(
        &found,
        "page-size",
        "the maximum page size 3000 is smaller than the common page size 8192",
    );
    assert_eq!(found.len(), 4, "{found:?}");
}

#[test]
fn relocation_kinds_outside_the_vocabulary_are_structural_errors() {
    let (text, found) = target_text_with("x86_64.toml", |text| {
        text.replacen(
            "name = \"R_X86_64_PC32\"\nkind = \"symbol\"",
            "name = \"R_X86_64_PC32\"\nkind = \"pc_relative\"",
            1,
        )
    });
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].rule, "schema");
    assert!(found[0].pointer.ends_with("/kind"), "{}", found[0]);
    assert_eq!(found[0].line, line_of(&text, "kind = \"pc_relative\""));
}

#[test]
fn a_tls_variant_has_a_tcb_size_exactly_when_it_is_variant_i() {
    let (text, found) = target_text_with("aarch64.toml", |text| {
        text.replacen(
            "tls = { variant = \"I\", tcb_size = 16 }",
            "tls = { variant = \"I\" }",
            1,
        )
    });
    assert_eq!(found.len(), 1, "{found:?}");
    let missing = find(&found, "tls-variant", "TLS variant I needs `tcb_size`");
    assert_eq!(missing.pointer, "/elf/tls");
    assert_eq!(missing.line, line_of(&text, "tls = { variant = \"I\" }"));

    let (text, found) = target_text_with("x86_64.toml", |text| {
        text.replacen(
            "tls = { variant = \"II\" }",
            "tls = { variant = \"II\", tcb_size = 16 }",
            1,
        )
    });
    assert_eq!(found.len(), 1, "{found:?}");
    let extra = find(&found, "tls-variant", "TLS variant II has no thread control block");
    assert!(extra.message.contains("`tcb_size = 16`"), "{extra}");
    assert_eq!(extra.pointer, "/elf/tls/tcb_size");
    assert_eq!(extra.line, line_of(&text, "tls = { variant = \"II\", tcb_size = 16 }"));
    // The variant is the TLS document's name, nothing else; and it is required.
    let only = |from: &str, to: &str| target_text_with("x86_64.toml", |text| text.replacen(from, to, 1)).1;
    let found = only("tls = { variant = \"II\" }", "tls = { variant = \"2\" }");
    assert!(
        found.len() == 1 && found[0].rule == "schema" && found[0].pointer == "/elf/tls/variant",
        "{found:?}"
    );
    let found = only("tls = { variant = \"II\" }\n", "");
    assert!(
        found.len() == 1 && found[0].rule == "missing-key" && found[0].message.contains("tls"),
        "{found:?}"
    );
}

#[test]
fn errata_are_listed_once_and_well_formed() {
    let (text, found) = target_text_with("aarch64.toml", |text| {
        text.replacen(
            "errata = [\"cortex-a53-843419\"]",
            "errata = [\"cortex-a53-843419\",\n    \"cortex-a53-843419\"]",
            1,
        )
    });
    assert_eq!(found.len(), 1, "{found:?}");
    let twice = find(
        &found,
        "duplicate-erratum",
        "erratum `cortex-a53-843419` is listed twice",
    );
    assert_eq!(twice.pointer, "/elf/errata/1");
    assert_eq!(twice.line, line_of(&text, "    \"cortex-a53-843419\"]"));
    for erratum in ["\"Cortex-A53\"", "\"fix-\"", "\"\""] {
        let (_, found) = target_text_with("aarch64.toml", |text| {
            text.replacen("errata = [\"cortex-a53-843419\"]", &format!("errata = [{erratum}]"), 1)
        });
        assert!(
            found.len() == 1 && found[0].rule == "schema" && found[0].pointer == "/elf/errata/0",
            "{erratum}: {found:?}"
        );
    }
}

#[test]
fn emulations_are_listed_once_and_well_formed() {
    let (text, found) = target_text_with("aarch64.toml", |text| {
        text.replacen(
            "emulations = [\"aarch64linux\", \"aarch64elf\"]",
            "emulations = [\"aarch64linux\", \"aarch64elf\",\n    \"aarch64linux\"]",
            1,
        )
    });
    assert_eq!(found.len(), 1, "{found:?}");
    let twice = find(
        &found,
        "duplicate-emulation",
        "emulation `aarch64linux` is listed twice",
    );
    assert_eq!(twice.pointer, "/elf/emulations/2");
    assert_eq!(twice.line, line_of(&text, "    \"aarch64linux\"]"));
    for (emulations, pointer) in [
        ("[]", "/elf/emulations"),
        ("[\"elf x86_64\"]", "/elf/emulations/0"),
        ("[\"\"]", "/elf/emulations/0"),
    ] {
        let (_, found) = target_text_with("x86_64.toml", |text| {
            text.replacen(
                "emulations = [\"elf_x86_64\"]",
                &format!("emulations = {emulations}"),
                1,
            )
        });
        assert!(
            found.len() == 1 && found[0].rule == "schema" && found[0].pointer == pointer,
            "{emulations}: {found:?}"
        );
    }
}

#[test]
fn adapter_templates_are_checked_at_their_lines() {
    let (text, found) = target_text_with("x86_64.toml", |text| {
        text.replacen(
            "scratch = [\"r11\", \"r10\", \"rax\"]",
            "scratch = [\"r11\", \"rbx\", \"xmm0\"]",
            1,
        )
        .replacen("allocate = \"subq ${size}, %rsp\"", "allocate = \"subq ${sise}, %rsp\"", 1)
        .replacen("return = \"retq\"", "return = \"retq {symbol}\"", 1)
        .replacen(
            "load = \"movzbl {offset}(%{base}), %{register:32}\"\nload_signed = \"movsbl {offset}(%{base}), %{register:32}\"\n",
            "load = \"movzbl {offset}(%{base}), %{register:24}\"\n",
            1,
        )
    });
    let callee_saved = find(&found, "lowering", "scratch register `rbx` is callee-saved");
    assert_eq!(callee_saved.pointer, "/lowering/scratch/1");
    assert_eq!(
        callee_saved.line,
        line_of(&text, "scratch = [\"r11\", \"rbx\", \"xmm0\"]")
    );
    find(
        &found,
        "lowering",
        "scratch register `xmm0` is not a general-purpose register",
    );
    let unknown = find(&found, "lowering", "unknown placeholder `{sise}`");
    assert_eq!(unknown.pointer, "/lowering/instructions/allocate");
    assert_eq!(unknown.line, line_of(&text, "allocate = \"subq ${sise}, %rsp\""));
    find(&found, "lowering", "this template cannot use `{symbol}`");
    let view = find(&found, "lowering", "`gpr` has no 24-bit view");
    assert_eq!(
        view.line,
        line_of(&text, "load = \"movzbl {offset}(%{base}), %{register:24}\"")
    );
    find(&found, "lowering", "`gpr` at 8 bits needs `load_signed`");
    assert_eq!(found.len(), 6, "{found:?}");

    // Every general width an adapter copies with must be declared.
    let found = target_with("aarch64.toml", |text| {
        let start = text.find("[[lowering.memory]]\nclass = \"gpr\"\nwidth = 16").unwrap();
        let end = start + text[start..].find("\n\n").unwrap() + 2;
        format!("{}{}", &text[..start], &text[end..])
    });
    assert!(
        has(&found, "lowering", "adapters need loads and stores of `gpr` at 16 bits"),
        "{found:?}"
    );
    assert_eq!(found.len(), 1, "{found:?}");
}

/// `load_signed` is required below 32 bits, may be declared at 32 bits for a wider general class (RISC-V's
/// `lw`, whose standard convention widens 32-bit values to 64), and nowhere else.
#[test]
fn sign_extending_loads_are_declared_below_32_bits_and_at_32_for_wider_classes() {
    let found = target_with("riscv64.toml", |text| text);
    assert!(found.is_empty(), "riscv64 declares `lw` at 32 bits: {found:?}");
    let (text, found) = target_text_with("riscv64.toml", |text| {
        text.replacen(
            "load = \"ld {register}, {offset}({base})\"\n",
            "load = \"ld {register}, {offset}({base})\"\nload_signed = \"ld {register}, {offset}({base})\"\n",
            1,
        )
    });
    let refused = find(
        &found,
        "lowering",
        "`load_signed` is declared only for general classes below 32 bits",
    );
    assert_eq!(refused.pointer, "/lowering/memory/0/load_signed");
    assert_eq!(
        refused.line,
        line_of(&text, "load_signed = \"ld {register}, {offset}({base})\"")
    );
    assert_eq!(found.len(), 1, "{found:?}");
}

#[test]
fn array_block_pieces_are_widths_the_pools_hold_and_floating_point_types() {
    let (text, found) = target_text_with("aarch64.toml", |text| {
        text.replacen("integer_bits = [64]", "integer_bits = [64, 16, 64, 128]", 1)
            .replacen(
                "float_types = [\"half\", \"float\", \"double\", \"fp128\"]",
                "float_types = [\"half\", \"float\", \"i32\", \"float\"]",
                1,
            )
            .replacen("vector_bits = [64, 128]", "vector_bits = [64, 256]", 1)
    });
    let narrow = find(&found, "abi-rule", "hold no 16-bit piece");
    assert_eq!(narrow.pointer, "/abi/rules/array_blocks/integer_bits/1");
    assert_eq!(narrow.line, line_of(&text, "integer_bits = [64, 16, 64, 128]"));
    assert_eq!(
        find(&found, "abi-rule", "64 is listed twice").pointer,
        "/abi/rules/array_blocks/integer_bits/2"
    );
    // 128 bits is no width of `gpr` either; the first problem found is the one reported.
    assert_eq!(
        find(&found, "abi-rule", "hold no 128-bit piece").pointer,
        "/abi/rules/array_blocks/integer_bits/3"
    );
    let not_float = find(&found, "abi-rule", "`i32` is not an IR floating-point type");
    assert_eq!(not_float.pointer, "/abi/rules/array_blocks/float_types/2");
    assert_eq!(
        find(&found, "abi-rule", "`float` is listed twice").pointer,
        "/abi/rules/array_blocks/float_types/3"
    );
    let wide = find(&found, "abi-rule", "the float argument registers hold no 256-bit piece");
    assert_eq!(wide.pointer, "/abi/rules/array_blocks/vector_bits/1");
    assert_eq!(wide.line, line_of(&text, "vector_bits = [64, 256]"));
    assert_eq!(found.len(), 6, "{found:?}");

    // Vectors are split into pieces of `vector_register_bytes`: none is wider.
    let found = target_with("aarch64.toml", |text| {
        text.replacen("vector_register_bytes = 16", "vector_register_bytes = 8", 1)
    });
    let wide = find(&found, "abi-rule", "no piece is 128 bits wide");
    assert_eq!(wide.pointer, "/abi/rules/array_blocks/vector_bits/1");
    assert_eq!(found.len(), 1, "{found:?}");

    // A table that names no piece is refused; one with an unknown key is a structural error.
    let found = target_with("aarch64.toml", |text| {
        text.replacen("integer_bits = [64]\n", "", 1)
            .replacen("float_types = [\"half\", \"float\", \"double\", \"fp128\"]\n", "", 1)
            .replacen("vector_bits = [64, 128]\n", "", 1)
    });
    assert!(has(&found, "abi-rule", "names no piece"), "{found:?}");
    assert_eq!(found.len(), 1, "{found:?}");
    let found = target_with("aarch64.toml", |text| {
        text.replacen("vector_bits = [64, 128]", "vector_bits = [64, 128]\nmax_members = 4", 1)
    });
    assert!(found.iter().any(|d| d.rule == "unknown-key"), "{found:?}");
}
