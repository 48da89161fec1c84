#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The `neverc-spec` binary on the bundled declarations, NeverC's published schemas and broken copies.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use neverc_test_support::{repo, run_in, scratch, text};

/// Runs the CLI in the workspace root.
fn run(args: &[&str]) -> Output {
    run_in(env!("CARGO_BIN_EXE_neverc-spec"), &repo(), args)
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("stdout is not JSON ({error}): {}", text(&output.stdout)))
}

#[test]
fn check_accepts_the_bundled_declarations() {
    let output = run(&["check"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("phases per domain: codegen 4, ir 8, link 20"),
        "{stdout}"
    );
    assert!(
        stdout.contains("neverc.link.commit") && stdout.contains("sealed_commit"),
        "{stdout}"
    );
    assert!(
        stdout.contains("neverc.link.relax_thunks") && stdout.contains("rerun budget 16"),
        "{stdout}"
    );
    // Each target's ELF facts, as the linker reads them.
    assert!(
        stdout.contains(
            "ELF machine 183, 64-bit, pages 4096 (max 65536), TLS variant I (a 16-byte TCB at the thread \
             pointer), emulations (ld -m) aarch64linux, aarch64elf"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("TLS variant II (the block ends at the thread pointer), emulations (ld -m) elf_x86_64"),
        "{stdout}"
    );

    let output = run(&["check", "--format", "json"]);
    assert!(output.status.success());
    let report = json(&output);
    assert_eq!(report["ok"], true);
    assert_eq!(report["phase_schema"]["domains"]["link"], 20);
    let machine = &report["phase_schema"]["state_machines"][0];
    assert_eq!(machine["transitions"].as_array().unwrap().len(), 13);
    assert_eq!(machine["proof_state"], "LAYOUT_COMPLETE");
    let targets: Vec<&str> = report["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(targets, ["aarch64", "riscv64", "x86_64"]);
    let x86 = &report["targets"][2];
    assert_eq!(x86["general_registers"], 16);
    assert_eq!(x86["vector_registers"], 16);
    assert_eq!(x86["elf"]["tls_variant"], "II");
    assert!(x86["elf"].get("tcb_size").is_none());
    assert_eq!(x86["elf"]["emulations"], serde_json::json!(["elf_x86_64"]));
    let aarch64 = &report["targets"][0]["elf"];
    assert_eq!(aarch64["tls_variant"], "I");
    assert_eq!(aarch64["tcb_size"], 16);
    assert_eq!(aarch64["emulations"], serde_json::json!(["aarch64linux", "aarch64elf"]));
    // The plugin ABI's declarations, in file-name order.
    let files: Vec<&str> = report["plugin_abi"]
        .as_array()
        .unwrap()
        .iter()
        .map(|part| part["file"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "abi/core.toml",
            "abi/host.toml",
            "abi/link.toml",
            "abi/lto.toml",
            "abi/object.toml",
            "abi/target.toml"
        ]
    );
    assert_eq!(
        report["plugin_abi"][1]["interfaces"],
        serde_json::json!(["HOST 1.0", "PHASE_REGISTRAR 1.0", "ARTIFACT 1.0"])
    );
    assert_eq!(
        report["plugin_abi"][2]["interfaces"],
        serde_json::json!(["LINK 1.0", "LINK_REGISTRAR 1.0", "LINK_PHASE 1.0"])
    );
    assert_eq!(
        report["plugin_abi"][3]["interfaces"],
        serde_json::json!(["LTO 1.0", "LTO_REGISTRAR 1.0"])
    );
    assert_eq!(
        report["plugin_abi"][3]["flags"],
        serde_json::json!([
            "NevercLTOOptionFlags",
            "NevercLTOSymbolResolutionFlags",
            "NevercLTOProviderFlags"
        ])
    );
}

#[test]
fn check_reports_a_broken_plugin_abi_file_at_its_line() {
    let dir = scratch!("cli-broken-abi");
    let text_of = std::fs::read_to_string(repo().join("abi/lto.toml")).unwrap();
    let broken = text_of.replace("{ name = \"THIN\", value = 2,", "{ name = \"THIN\", value = 1,");
    assert_ne!(broken, text_of);
    std::fs::write(dir.join("lto.toml"), &broken).unwrap();
    let output = run(&["check", "--abi", dir.to_str().unwrap(), "--format", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let report = json(&output);
    let diagnostic = &report["diagnostics"][0];
    assert_eq!(diagnostic["rule"], "abi-duplicate-value");
    let line = broken
        .lines()
        .position(|line| line.contains("{ name = \"THIN\""))
        .unwrap()
        + 1;
    assert_eq!(diagnostic["line"], line);
}

#[test]
fn check_reports_an_abi_enumeration_taken_from_an_unknown_state_machine() {
    let dir = scratch!("cli-abi-source");
    for entry in std::fs::read_dir(repo().join("abi")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    let original = std::fs::read_to_string(dir.join("link.toml")).unwrap();
    let broken = original.replace(
        "phase_schema:state_machines/link/states",
        "phase_schema:state_machines/lnk/states",
    );
    assert_ne!(broken, original);
    std::fs::write(dir.join("link.toml"), &broken).unwrap();
    let output = run(&["check", "--abi", dir.to_str().unwrap(), "--format", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let report = json(&output);
    let diagnostic = &report["diagnostics"][0];
    assert_eq!(diagnostic["rule"], "abi-source", "{report}");
    let line = broken
        .lines()
        .position(|line| line.contains("state_machines/lnk"))
        .unwrap()
        + 1;
    assert_eq!(diagnostic["line"], line);
}

/// Item 14 of issue 23: the README's `check --phase-schema tests/fixtures/neverc/PhaseSchema.json` reports on
/// the schema it names. NeverC's published schemas have no state machines; the bundled ABI files take their
/// link states from the `link` machine of the schema they derive from (the bundled `PhaseSchema.json`), and
/// are checked against that one unless `--abi` pairs them with the named schema. Every published version
/// passes, and real problems are still reported: a broken copy of the newest version, and the bundled ABI
/// explicitly paired with a schema that lacks its state machine.
#[test]
fn item_14_check_reports_on_every_published_neverc_schema_as_the_readme_says() {
    let fixtures = repo().join("tests/fixtures/neverc");
    let mut names: Vec<String> = std::fs::read_dir(&fixtures)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".json"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 7, "{names:?}");
    for name in &names {
        // The README's command, as written: text output, the bundled targets and ABI beside it.
        let path = format!("tests/fixtures/neverc/{name}");
        let output = run(&["check", "--phase-schema", &path]);
        let stdout = text(&output.stdout);
        assert!(output.status.success(), "{path}: {}", text(&output.stderr));
        assert!(
            stdout.contains(&format!("phase schema {path} (schema_version ")),
            "{stdout}"
        );
        assert!(stdout.contains("state machines: none declared"), "{path}: {stdout}");
        // The bundled ABI is still checked, against the schema it derives from.
        assert!(
            stdout.contains("plugin ABI (6 file(s)), derived from PhaseSchema.json: valid"),
            "{path}: {stdout}"
        );
        let output = run(&["check", "--phase-schema", &path, "--format", "json"]);
        let report = json(&output);
        assert!(output.status.success(), "{path}: {}", report["diagnostics"]);
        assert_eq!(report["ok"], true);
        assert_eq!(report["phase_schema"]["file"], path.as_str());
        assert!(report["phase_schema"]["state_machines"].as_array().unwrap().is_empty());
        assert_eq!(report["plugin_abi"].as_array().unwrap().len(), 6, "{path}");
        assert_eq!(report["plugin_abi_phase_schema"], "PhaseSchema.json", "{path}");
        if name == "PhaseSchema.json" {
            assert_eq!(report["phase_schema"]["phases"], 130);
            assert_eq!(report["phase_schema"]["domains"].as_object().unwrap().len(), 13);
            assert_eq!(report["phase_schema"]["sealed_gates"].as_array().unwrap().len(), 14);
        }
    }

    // A broken copy of the newest version still fails, with its problem located in the user's file.
    let dir = scratch!("cli-published-broken");
    let mut document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures.join("PhaseSchema.json")).unwrap()).unwrap();
    let first_id = document["phases"][0]["id"].clone();
    document["phases"][1]["id"] = first_id;
    let broken = dir.join("PhaseSchema.json");
    std::fs::write(&broken, serde_json::to_string_pretty(&document).unwrap()).unwrap();
    let output = run(&["check", "--phase-schema", broken.to_str().unwrap(), "--format", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let report = json(&output);
    assert_eq!(report["ok"], false);
    let diagnostics = report["diagnostics"].as_array().unwrap();
    assert!(!diagnostics.is_empty());
    assert!(
        diagnostics
            .iter()
            .all(|diagnostic| diagnostic["file"] == broken.to_str().unwrap()),
        "{report}"
    );

    // Paired explicitly with a published schema, the bundled ABI lacks its `link` state machine there.
    let oldest = fixtures.join("PhaseSchema.d8e95a6.json");
    let output = run(&[
        "check",
        "--phase-schema",
        oldest.to_str().unwrap(),
        "--abi",
        "abi",
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let report = json(&output);
    assert_eq!(report["diagnostics"][0]["rule"], "abi-source", "{report}");
    assert_eq!(report["diagnostics"][0]["file"], "abi/link.toml", "{report}");

    // Without ABI files, every published schema is valid.
    let no_abi = scratch!("cli-no-abi");
    for name in &names {
        let path = fixtures.join(name);
        let output = run(&[
            "check",
            "--phase-schema",
            path.to_str().unwrap(),
            "--abi",
            no_abi.to_str().unwrap(),
            "--format",
            "json",
        ]);
        assert!(!text(&output.stderr).contains("panicked"));
        assert!(output.status.success(), "{name}: {}", json(&output)["diagnostics"]);
    }
}

/// A copy of the declarations with five independent mistakes, one of each kind the issue names.
fn broken_copy() -> PathBuf {
    let dir = scratch!("neverc-spec-cli-broken");
    std::fs::create_dir_all(dir.join("targets")).unwrap();
    let schema = std::fs::read_to_string(repo().join("PhaseSchema.json")).unwrap();
    let mut document: serde_json::Value = serde_json::from_str(&schema).unwrap();
    let phases = document["phases"].as_array_mut().unwrap();
    let gc_id = phases.iter().find(|p| p["name"] == "neverc.link.gc").unwrap()["id"].clone();
    let icf = phases.iter_mut().find(|p| p["name"] == "neverc.link.icf").unwrap();
    icf["id"] = gc_id;
    let commit = phases.iter_mut().find(|p| p["name"] == "neverc.link.commit").unwrap();
    commit["policy"] = serde_json::json!(["OBSERVABLE", "INTERCEPTABLE", "SEALED_HOST_GATE"]);
    std::fs::write(
        dir.join("PhaseSchema.json"),
        serde_json::to_string_pretty(&document).unwrap(),
    )
    .unwrap();

    let x86 = std::fs::read_to_string(repo().join("targets/x86_64.toml")).unwrap();
    let x86 = x86.replacen(
        "name = \"rcx\"\nclass = \"gpr\"\nplan_number = 54",
        "name = \"rcx\"\nclass = \"gpr\"\nplan_number = 51",
        1,
    );
    let x86 = x86.replacen("stack_alignment = 16\n", "stack_alignment = 16\nred_zone = 128\n", 1);
    std::fs::write(dir.join("targets/x86_64.toml"), x86).unwrap();
    let arm = std::fs::read_to_string(repo().join("targets/aarch64.toml")).unwrap();
    std::fs::write(
        dir.join("targets/aarch64.toml"),
        arm.replacen("name = \"x9\"\n", "name = \"x9\n", 1),
    )
    .unwrap();
    std::fs::copy(repo().join("targets/riscv64.toml"), dir.join("targets/riscv64.toml")).unwrap();
    dir
}

#[test]
fn a_broken_copy_reports_every_problem_at_once_with_locations() {
    let dir = broken_copy();
    let schema = dir.join("PhaseSchema.json");
    let targets = dir.join("targets");
    let args = [
        "check",
        "--phase-schema",
        schema.to_str().unwrap(),
        "--targets",
        targets.to_str().unwrap(),
    ];
    let output = run(&args);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("5 problem(s) found"), "{stderr}");

    let mut with_json = args.to_vec();
    with_json.extend(["--format", "json"]);
    let output = run(&with_json);
    assert_eq!(output.status.code(), Some(1));
    let report = json(&output);
    assert_eq!(report["ok"], false);
    let diagnostics = report["diagnostics"].as_array().unwrap();
    let find = |rule: &str| {
        diagnostics
            .iter()
            .find(|d| d["rule"] == rule)
            .unwrap_or_else(|| panic!("no {rule} in {diagnostics:?}"))
    };

    let duplicate = find("duplicate-id");
    assert!(duplicate["file"].as_str().unwrap().ends_with("PhaseSchema.json"));
    assert!(duplicate["message"].as_str().unwrap().contains("neverc.link.gc"));
    let sealed = find("sealed-gate");
    assert!(sealed["message"].as_str().unwrap().contains("neverc.link.commit"));
    let reused = find("duplicate-register-number");
    assert!(
        reused["message"]
            .as_str()
            .unwrap()
            .contains("`rcx` reuses plan number 51 of register `rax`")
    );
    let unknown = find("unknown-key");
    assert!(unknown["message"].as_str().unwrap().contains("red_zone"));
    let syntax = find("toml-syntax");
    assert!(syntax["file"].as_str().unwrap().ends_with("aarch64.toml"));
    assert_eq!(diagnostics.len(), 5);

    // Every location is the real line of the offending text.
    for diagnostic in diagnostics {
        let file = std::fs::read_to_string(diagnostic["file"].as_str().unwrap()).unwrap();
        let line = diagnostic["line"].as_u64().unwrap() as usize;
        let source_line = file.lines().nth(line - 1).unwrap();
        let expected = match diagnostic["rule"].as_str().unwrap() {
            "duplicate-id" => "\"id\"",
            "sealed-gate" => "INTERCEPTABLE",
            "duplicate-register-number" => "plan_number = 51",
            "unknown-key" => "red_zone",
            "toml-syntax" => "name = \"x9",
            other => panic!("unexpected rule {other}"),
        };
        assert!(
            source_line.contains(expected),
            "{} line {line}: {source_line}",
            diagnostic["rule"]
        );
        assert!(diagnostic["column"].as_u64().unwrap() >= 1);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn gen_writes_the_files_the_build_generates_and_nothing_on_failure() {
    let out = scratch!("neverc-spec-cli-gen");
    let output = run(&["gen", "--out", out.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let files = neverc_schema::target_files(&repo().join("targets")).unwrap();
    let declarations = neverc_schema::load_declarations(&repo().join("PhaseSchema.json"), &files).unwrap();
    let expected = neverc_codegen::generate(&declarations, &repo()).unwrap();
    for file in &expected {
        let written = std::fs::read_to_string(out.join(&file.name)).unwrap();
        assert!(written == file.contents, "{} differs", file.name);
    }
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), expected.len());

    let broken = broken_copy();
    let empty = scratch!("neverc-spec-cli-gen-broken");
    let output = run(&[
        "gen",
        "--phase-schema",
        broken.join("PhaseSchema.json").to_str().unwrap(),
        "--targets",
        broken.join("targets").to_str().unwrap(),
        "--out",
        empty.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    for dir in [out, broken, empty] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn gen_headers_writes_the_committed_plugin_headers() {
    let out = scratch!("neverc-spec-cli-gen-headers");
    let targets = out.join("Targets");
    let output = run(&[
        "gen",
        "headers",
        "--out",
        out.to_str().unwrap(),
        "--targets-out",
        targets.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let mut target_names = Vec::new();
    for entry in std::fs::read_dir(&targets).unwrap() {
        let name = entry.unwrap().file_name();
        let written = std::fs::read_to_string(targets.join(&name)).unwrap();
        let committed = std::fs::read_to_string(repo().join("include/neverc/Targets").join(&name)).unwrap();
        assert!(
            written == committed,
            "{name:?} differs from the committed target header"
        );
        target_names.push(name.to_string_lossy().into_owned());
    }
    target_names.sort();
    assert_eq!(target_names, ["aarch64.h", "riscv64.h", "x86_64.h"]);
    std::fs::remove_dir_all(&targets).unwrap();
    let committed = repo().join("include/neverc/Plugin");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&out).unwrap() {
        let name = entry.unwrap().file_name();
        let written = std::fs::read_to_string(out.join(&name)).unwrap();
        assert!(
            written == std::fs::read_to_string(committed.join(&name)).unwrap(),
            "{name:?} differs from the committed header"
        );
        names.push(name.to_string_lossy().into_owned());
    }
    names.sort();
    assert_eq!(
        names,
        [
            "PluginCore.h",
            "PluginHost.h",
            "PluginLTO.h",
            "PluginLink.h",
            "PluginObject.h",
            "PluginTarget.h"
        ]
    );
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn resolve_answers_names_aliases_sub_registers_and_numbers() {
    let output = run(&[
        "resolve", "--target", "AMD64", "ECX", "r8d", "#119", "rsp", "--format", "json",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let rows = json(&output);
    assert_eq!(rows[0]["register"], "rcx");
    assert_eq!(rows[0]["width"], 32);
    assert_eq!(rows[0]["plan_number"], 25);
    assert_eq!(rows[1]["register"], "r8");
    assert_eq!(rows[1]["plan_number"], 167);
    assert_eq!(rows[2]["register"], "r8");
    assert_eq!(rows[2]["width"], 64);
    assert_eq!(rows[3]["reserved"], true);

    let output = run(&["resolve", "--target", "arm64", "d8", "x31", "fp"]);
    assert!(output.status.success());
    let stdout = text(&output.stdout);
    assert!(stdout.contains("d8       -> v8 (fpr, 64-bit sub-register)"), "{stdout}");
    assert!(stdout.contains("x31      -> sp"), "{stdout}");

    let output = run(&["resolve", "--target", "x86_64", "eax", "bogus"]);
    assert_eq!(output.status.code(), Some(1));
    let output = run(&["resolve", "--target", "vax", "r0"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("unknown target `vax`"));
    let output = run(&["resolve"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn a_target_file_can_be_loaded_at_run_time() {
    let dir = scratch!("neverc-spec-cli-target-file");
    let toy = repo().join("codegen/tests/fixtures/targets/toy.toml");
    let output = run(&["targets", "--target-file", toy.to_str().unwrap(), "--format", "json"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let rows = json(&output);
    let toy_row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == "toy")
        .unwrap();
    assert_eq!(toy_row["origin"], "loaded");
    let output = run(&["resolve", "--target-file", toy.to_str().unwrap(), "A1", "w0"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("A1       -> r1"));

    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[identity]\nname = 3\n").unwrap();
    let output = run(&["resolve", "--target-file", bad.to_str().unwrap(), "r0"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("bad.toml:2:8"), "{stderr}");
    assert!(!stderr.contains("panicked"));
    let missing = Path::new("/nonexistent/neverc.toml");
    let output = run(&["resolve", "--target-file", missing.to_str().unwrap(), "r0"]);
    assert_eq!(output.status.code(), Some(3));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn cc_plan_prints_the_plan_and_where_every_value_goes() {
    let output = run(&[
        "cc",
        "plan",
        "--target",
        "x86_64",
        "--spec",
        "gpr:rcx,rdx,r8;ret:rax",
        "--sig",
        "i32 (i32, i32, i32)",
        "--format",
        "json",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report = json(&output);
    assert_eq!(
        report["plan"],
        "neverc-cc-plan-v1;schema=llvm-x86_64-unknown-linux-gnu;target=0:0;cc=0:0;stack=16;returns=r,0,0,4,4,51,0,0;arguments=r,0,0,4,4,54,0,0|r,1,0,4,4,56,0,0|r,2,0,4,4,119,0,0;callee-saved="
    );
    assert_eq!(report["values"][3]["pieces"][0]["place"], "r8d");

    let output = run(&[
        "cc",
        "plan",
        "--target",
        "x86_64",
        "--spec",
        "gpr:rsp,rcx;ret:rax",
        "--sig",
        "i32 (i32)",
    ]);
    assert!(output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("`rsp` is reserved on x86_64; it is skipped"),
        "{stderr}"
    );
    assert!(
        text(&output.stdout).contains("argument 0   plan      ecx"),
        "{}",
        text(&output.stdout)
    );

    let output = run(&["cc", "plan", "--target", "aarch64", "--sig", "i32 (i32, flaot)"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("i32 (i32, flaot)") && stderr.contains('┬'), "{stderr}");

    let output = run(&[
        "cc",
        "plan",
        "--target",
        "aarch64",
        "--spec",
        "gpr:x9;ret:x0",
        "--sig",
        "i32 (i32, ...)",
        "--function",
        "sum",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("does not support variadic functions: 'sum'"));
}

#[test]
fn cc_validate_gives_neverc_texts() {
    let foreign = "neverc-cc-plan-v1;schema=foreign;target=0:0;cc=0:0;stack=16;returns=r,0,0,4,4,51,0,0;arguments=r,0,0,4,4,54,0,0;callee-saved=";
    let output = run(&["cc", "validate", "--target", "x86_64", foreign]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("NeverC calling convention plan belongs to a foreign target schema"));
    let ours = foreign.replace("schema=foreign", "schema=llvm-x86_64-unknown-linux-gnu");
    let output = run(&["cc", "validate", "--target", "x86_64", "--sig", "i32 (i32)", &ours]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let wrong = ours.replace("r,0,0,4,4,54,0,0", "r,0,0,4,4,99,0,0");
    let output = run(&["cc", "validate", "--target", "x86_64", &wrong]);
    assert!(text(&output.stderr).contains("argument register location is not in the target schema"));
    let output = run(&["cc", "validate", "--target", "x86_64", "not-a-plan", "--format", "json"]);
    assert!(
        json(&output)["error"]
            .as_str()
            .unwrap()
            .starts_with("malformed NeverC calling convention plan")
    );
}

#[test]
fn cc_materialize_writes_a_module_llvm_as_accepts_or_nothing() {
    let dir = scratch!("neverc-spec-cli-materialize");
    let source = repo().join("runtime/callconv/tests/fixtures/cc/sample.c");
    let module = dir.join("sample.ll");
    let status = Command::new("clang-14")
        .args(["-S", "-emit-llvm", "-O2", "--target=x86_64-unknown-linux-gnu"])
        .arg(&source)
        .arg("-o")
        .arg(&module)
        .status()
        .expect("clang-14 is installed by scripts/test.sh");
    assert!(status.success());
    let out = dir.join("out.ll");
    let output = run(&[
        "cc",
        "materialize",
        module.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--cc-all",
        "--ccshuffle",
        "--format",
        "json",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report = json(&output);
    assert_eq!(report["target"], "x86_64");
    assert!(report["plans"].as_object().unwrap().len() >= 10);
    assert!(text(&output.stderr).contains("address is taken"));
    let assembled = Command::new("llvm-as-14")
        .arg(&out)
        .arg("-o")
        .arg(dir.join("out.bc"))
        .output()
        .expect("llvm-as-14 is installed by scripts/test.sh");
    assert!(assembled.status.success(), "{}", text(&assembled.stderr));

    // A failing run leaves the previous output untouched and no temporary file behind.
    let before = std::fs::read(&out).unwrap();
    let variadic = dir.join("variadic.ll");
    let status = Command::new("clang-14")
        .args([
            "-S",
            "-emit-llvm",
            "-O2",
            "--target=x86_64-unknown-linux-gnu",
            "-x",
            "c",
            "-",
        ])
        .arg("-o")
        .arg(&variadic)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"int sum(int n, ...) { return n; }\n")?;
            child.wait()
        })
        .unwrap();
    assert!(status.success());
    let output = run(&[
        "cc",
        "materialize",
        variadic.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--cc-all",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("does not support variadic functions: 'sum'"));
    assert_eq!(std::fs::read(&out).unwrap(), before);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
    std::fs::remove_dir_all(dir).unwrap();
}
