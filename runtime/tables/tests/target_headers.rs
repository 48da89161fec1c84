#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The C side of the targets: the committed headers `include/neverc/Targets/*.h` are what codegen makes of
//! `targets/*.toml` now (`NEVERC_BLESS=1` rewrites them), they compile as strict C11 and C++17, and a C
//! program reading them finds every register spelling at the plan number the runtime's tables give it.

use neverc_schema::{load_declarations, target_files};
use neverc_test_support::{check_committed_files, compile_strict, repo, run_in, scratch, succeeded, text};

fn headers() -> Vec<neverc_codegen::GeneratedFile> {
    let root = repo();
    let declarations = load_declarations(
        &root.join("PhaseSchema.json"),
        &target_files(&root.join("targets")).unwrap(),
    )
    .unwrap();
    neverc_codegen::target_headers(&declarations, &root).unwrap()
}

#[test]
fn committed_target_headers_are_what_codegen_produces_now() {
    let headers = headers();
    assert!(!headers.is_empty());
    check_committed_files(
        &repo().join(neverc_codegen::TARGET_HEADER_DIR),
        headers
            .iter()
            .map(|header| (header.name.as_str(), header.contents.as_str())),
    );
}

#[test]
fn target_headers_compile_and_name_the_tables_plan_numbers() {
    let dir = scratch!("tables-target-headers");
    let mut source = String::from("#include <stdio.h>\n");
    // The targets in the order of their headers: each header is named after its target file's stem, which
    // is the target's name.
    let targets: Vec<&neverc_tables::TargetRecord> = headers()
        .iter()
        .map(|header| {
            source.push_str(&format!("#include \"neverc/Targets/{}\"\n", header.name));
            neverc_tables::target_by_name(header.name.trim_end_matches(".h")).unwrap()
        })
        .collect();
    source.push_str("#define PRINT(NAME, NUMBER, REGISTER, WIDTH, FLOATING, RESERVED) printf(\"%s %u %u\\n\", NAME, NUMBER, REGISTER);\n");
    source.push_str("int main(void) {\n");
    for target in &targets {
        source.push_str(&format!(
            "  NEVERC_TARGET_{}_REGISTER_NAMES(PRINT)\n",
            target.name.to_ascii_uppercase()
        ));
    }
    source.push_str("  return 0;\n}\n");
    std::fs::write(dir.join("names.c"), &source).unwrap();
    std::fs::write(dir.join("names.cpp"), &source).unwrap();
    compile_strict("g++", &dir, &["-c", "names.cpp"]);
    compile_strict("gcc", &dir, &["names.c", "-o", "names"]);
    let ran = run_in(dir.join("names"), &dir, &[]);
    succeeded(&ran, "the names program");
    let printed = text(&ran.stdout);
    let mut checked = 0;
    let mut lines = printed.lines();
    for target in &targets {
        for entry in target.names {
            let line = lines.next().unwrap();
            let register = target.registers[entry.register].plan_number;
            assert_eq!(
                line,
                format!("{} {} {register}", entry.name, entry.plan_number),
                "{}",
                target.name
            );
            let resolved = target.resolve_register(entry.name).unwrap();
            assert_eq!(resolved.plan_number, entry.plan_number);
            checked += 1;
        }
    }
    assert!(lines.next().is_none());
    assert!(checked > 100, "{checked}");
}
