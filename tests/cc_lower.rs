#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `neverc-spec cc lower` and `cc materialize --lower` as a user runs them: a program built from a lowered
//! module runs (x86_64 natively, riscv64 under qemu-riscv64), machines read the JSON, and every module that cannot be lowered is refused with a diagnostic,
//! exit status 1 and no output file.

use std::path::Path;
use std::process::Output;

use neverc_test_support::{run_in, scratch, succeeded, text};

fn cli(dir: &Path, args: &[&str]) -> Output {
    run_in(env!("CARGO_BIN_EXE_neverc-spec"), dir, args)
}

/// The repository's root.
fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Fails the test unless `tool --version` runs (scripts/test.sh installs the cross tools).
fn require(tool: &str) {
    let found = std::process::Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(found, "`{tool}` is missing: run scripts/test.sh, which installs it");
}

/// A materialized module in the form `cc materialize` writes, with `body` after its header.
fn module(body: &str) -> String {
    format!("target triple = \"x86_64-unknown-linux-gnu\"\n\n{body}")
}

const PLAN: &str = "neverc-cc-plan-v1;schema=llvm-x86_64-unknown-linux-gnu;target=0:0;cc=0:0;stack=16;returns=r,0,0,4,4,51,0,0;arguments=r,0,0,4,4,54,0,0;callee-saved=";

fn refused(output: &Output, needle: &str, out: &Path) {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr: {stderr}");
    assert!(stderr.contains(needle), "expected `{needle}` in: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!out.exists(), "nothing is written when lowering fails");
}

#[test]
fn a_lowered_program_runs_and_machines_read_the_report() {
    let dir = scratch!("cc-lower-program");
    std::fs::write(
        dir.join("lib.c"),
        "__attribute__((noinline)) int add3(int a, int b, int c) { return a + 2 * b + 4 * c; }\n\
         int (*address_of_add3(void))(int, int, int) { return add3; }\n\
         int caller3(void) { return add3(10, 20, 30); }\n",
    )
    .unwrap();
    succeeded(
        &run_in("clang-14", &dir, &["-S", "-emit-llvm", "-O2", "lib.c", "-o", "lib.ll"]),
        "clang-14",
    );
    let materialized = cli(
        &dir,
        &[
            "cc",
            "materialize",
            "lib.ll",
            "-o",
            "m.ll",
            "--cc-all",
            "--ccprefix",
            "add3",
            "--ccspec",
            "gpr:rcx,rdx,r8;ret:rax",
        ],
    );
    succeeded(&materialized, "cc materialize");
    let lowered = cli(&dir, &["cc", "lower", "m.ll", "-o", "lowered.ll", "--format", "json"]);
    succeeded(&lowered, "cc lower");
    let report: serde_json::Value = serde_json::from_slice(&lowered.stdout).unwrap();
    assert_eq!(report["target"], "x86_64");
    assert_eq!(report["incoming"], serde_json::json!(["@add3"]));
    assert_eq!(report["direct_calls"], 1);
    // The same in one step.
    let both = cli(
        &dir,
        &[
            "cc",
            "materialize",
            "lib.ll",
            "-o",
            "both.ll",
            "--cc-all",
            "--ccprefix",
            "add3",
            "--ccspec",
            "gpr:rcx,rdx,r8;ret:rax",
            "--lower",
        ],
    );
    succeeded(&both, "cc materialize --lower");
    assert!(text(&both.stdout).contains("lowered: 1 adapter(s) for planned functions"));
    assert_eq!(
        std::fs::read(dir.join("both.ll")).unwrap(),
        std::fs::read(dir.join("lowered.ll")).unwrap()
    );
    // The address the module hands out is the adapter's: a caller that follows the plan gets the plan.
    std::fs::write(
        dir.join("main.c"),
        "#include <stdio.h>\n\
         int caller3(void); int (*address_of_add3(void))(int, int, int); int through_plan(void *);\n\
         int main(void) { printf(\"%d %d\\n\", caller3(), through_plan((void *)address_of_add3())); return 0; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("plan.s"),
        ".text\n.globl through_plan\nthrough_plan:\n pushq %rbx\n movq %rdi, %r11\n movl $1, %ecx\n movl $2, %edx\n \
         movl $3, %r8d\n callq *%r11\n popq %rbx\n retq\n",
    )
    .unwrap();
    succeeded(
        &run_in(
            "clang-14",
            &dir,
            &["-O2", "main.c", "plan.s", "lowered.ll", "-o", "program"],
        ),
        "clang-14 links the lowered module",
    );
    let ran = run_in(dir.join("program"), &dir, &[]);
    succeeded(&ran, "the program");
    assert_eq!(text(&ran.stdout), "170 17\n");
}

/// Issue 29, must-show 4: a riscv64 module lowered by the command (its adapters from `targets/riscv64.toml`'s
/// templates) links with glibc and runs under qemu-riscv64, called by hand-written assembly where the plan says:
/// a function whose three `int`s arrive in temporaries (the second with its upper half all ones, which the
/// adapter's `lw` sign-extends away) and whose result goes back in `a1`, and the same function called from C
/// through its body.
#[test]
fn a_lowered_riscv64_program_runs_under_qemu() {
    for tool in ["clang-14", "llc-14", "riscv64-linux-gnu-gcc", "qemu-riscv64"] {
        require(tool);
    }
    let dir = scratch!("cc-lower-riscv64");
    std::fs::write(
        dir.join("lib.c"),
        "__attribute__((noinline)) int add3(int a, int b, int c) { return a + 2 * b + 4 * c; }\n\
         int caller3(void) { return add3(10, 20, 30); }\n",
    )
    .unwrap();
    succeeded(
        &run_in(
            "clang-14",
            &dir,
            &[
                "--target=riscv64-linux-gnu",
                "-S",
                "-emit-llvm",
                "-O2",
                "lib.c",
                "-o",
                "lib.ll",
            ],
        ),
        "clang-14",
    );
    let lowered = cli(
        &dir,
        &[
            "cc",
            "materialize",
            "lib.ll",
            "-o",
            "lowered.ll",
            "--cc-all",
            "--ccprefix",
            "add3",
            "--ccspec",
            "gpr:t3,t4,t5;ret:a1",
            "--lower",
            "--format",
            "json",
        ],
    );
    succeeded(&lowered, "cc materialize --lower");
    let report: serde_json::Value = serde_json::from_slice(&lowered.stdout).unwrap();
    assert_eq!(report["lowered"]["incoming"], 1, "{report}");
    // clang's module-level attributes name rv64i only; the adapters' `fld`/`fsd` need F and D.
    succeeded(
        &run_in(
            "llc-14",
            &dir,
            &["-O2", "-mattr=+m,+a,+f,+d,+c", "lowered.ll", "-o", "lowered.s"],
        ),
        "llc-14",
    );
    std::fs::write(
        dir.join("main.c"),
        "#include <stdio.h>\nint caller3(void); long through_plan(void);\n\
         int main(void) { printf(\"%d %ld\\n\", caller3(), through_plan()); return 0; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("plan.s"),
        ".text\n.globl through_plan\nthrough_plan:\n addi sp, sp, -16\n sd ra, 8(sp)\n li t3, 1\n \
         li t4, 0xffffffff00000002\n li t5, 3\n li a1, -1\n call add3\n mv a0, a1\n ld ra, 8(sp)\n \
         addi sp, sp, 16\n ret\n",
    )
    .unwrap();
    succeeded(
        &run_in(
            "riscv64-linux-gnu-gcc",
            &dir,
            &["-static", "-O2", "main.c", "plan.s", "lowered.s", "-o", "program"],
        ),
        "riscv64-linux-gnu-gcc links the lowered module",
    );
    let ran = run_in("qemu-riscv64", &dir, &["./program"]);
    succeeded(&ran, "the program under qemu-riscv64");
    // 10 + 40 + 120 through the body; 1 + 2 * 2 + 4 * 3 through the adapter, widened to `long` by `lw`.
    assert_eq!(text(&ran.stdout), "170 17\n");
}

#[test]
fn modules_that_cannot_be_lowered_are_refused_and_nothing_is_written() {
    let dir = scratch!("cc-lower-refused");
    let out = dir.join("out.ll");
    let case = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text).unwrap();
        name.to_string()
    };
    // The convention without a plan: the module was not materialized.
    let unplanned = case(
        "unplanned.ll",
        &module("define dso_local cc 1000 i32 @f(i32 %0) {\n  ret i32 %0\n}\n"),
    );
    refused(
        &cli(&dir, &["cc", "lower", &unplanned, "-o", "out.ll"]),
        "has no plan; materialize the module first",
        &out,
    );
    // A call through a pointer with the convention: no adapter can know the callee.
    let indirect = case(
        "indirect.ll",
        &module(&format!(
            "define dso_local cc 1000 i32 @f(i32 %0) #0 {{\n  ret i32 %0\n}}\n\n\
             define dso_local i32 @g(i32 (i32)* %p) {{\n  %r = call cc 1000 i32 %p(i32 1) #0\n  ret i32 %r\n}}\n\n\
             attributes #0 = {{ \"neverc-cc-plan-v1\"=\"{PLAN}\" }}\n"
        )),
    );
    refused(
        &cli(&dir, &["cc", "lower", &indirect, "-o", "out.ll"]),
        "calls through a pointer with the NeverC convention",
        &out,
    );
    // A type the standard convention places differently from LLVM 14.
    let half = case(
        "half.ll",
        &module(
            "define dso_local cc 1000 half @h(half %0) #0 {\n  ret half %0\n}\n\n\
             attributes #0 = { \"neverc-cc-plan-v1\"=\"neverc-cc-plan-v1;schema=llvm-x86_64-unknown-linux-gnu;target=0:0;cc=0:0;stack=16;returns=;arguments=r,0,0,2,2,54,0,0;callee-saved=\" }\n",
        ),
    );
    refused(
        &cli(&dir, &["cc", "lower", &half, "-o", "out.ll"]),
        "holds `half`",
        &out,
    );
    // A type llc-14 cannot pass at all on x86-64 (issue 24), also inside an array.
    let bfloat = case(
        "bfloat.ll",
        &module(
            "define dso_local cc 1000 void @b([2 x bfloat] %0) #0 {\n  ret void\n}\n\n\
             attributes #0 = { \"neverc-cc-plan-v1\"=\"neverc-cc-plan-v1;schema=llvm-x86_64-unknown-linux-gnu;target=0:0;cc=0:0;stack=16;returns=;arguments=r,0,0,4,4,54,0,0;callee-saved=\" }\n",
        ),
    );
    refused(
        &cli(&dir, &["cc", "lower", &bfloat, "-o", "out.ll"]),
        "holds `bfloat`",
        &out,
    );
    // A vector LLVM 14 legalizes on AArch64 where the standard convention keeps its bytes (issue 24's
    // deviations): its lanes promoted, or split one a register.
    for vector in ["<2 x i16>", "<4 x bfloat>"] {
        let name = format!("narrow-{}.ll", vector.len());
        let narrow = case(
            &name,
            &format!(
                "target triple = \"aarch64-unknown-linux-gnu\"\n\n\
                 define dso_local cc 1000 void @v({vector} %0) #0 {{\n  ret void\n}}\n\n\
                 attributes #0 = {{ \"neverc-cc-plan-v1\"=\"neverc-cc-plan-v1;schema=dwarf+1-aarch64-unknown-linux-gnu;\
                 target=5639443823411475457:1;cc=5639425114533934081:1;stack=16;returns=;arguments=r,0,0,4,4,65,0,0;\
                 callee-saved=20,21,22,23,24,25,26,27,28,29,73,74,75,76,77,78,79,80\" }}\n"
            ),
        );
        refused(
            &cli(&dir, &["cc", "lower", &narrow, "-o", "out.ll"]),
            &format!("holds `{vector}`"),
            &out,
        );
    }
    // On riscv64: `fp128`, which LLVM 14 passes in general registers where the declared psABI names a
    // floating-point one, and a vector, which it splits into scalars without the V extension.
    for (ty, piece) in [("fp128", "r,0,0,16,16,43,0,0"), ("<2 x float>", "r,0,0,8,8,11,0,0")] {
        let name = format!("riscv-{}.ll", ty.len());
        let deviating = case(
            &name,
            &format!(
                "target triple = \"riscv64-unknown-linux-gnu\"\n\n\
                 define dso_local cc 1000 void @v({ty} %0) #0 {{\n  ret void\n}}\n\n\
                 attributes #0 = {{ \"neverc-cc-plan-v1\"=\"neverc-cc-plan-v1;schema=dwarf+1-riscv64-unknown-linux-gnu;\
                 target=5639443823698785793:1;cc=5639425114821244417:1;stack=16;returns=;arguments={piece};\
                 callee-saved=9,10,19,20,21,22,23,24,25,26,27,28,41,42,51,52,53,54,55,56,57,58,59,60\" }}\n"
            ),
        );
        refused(
            &cli(&dir, &["cc", "lower", &deviating, "-o", "out.ll"]),
            &format!("holds `{ty}`"),
            &out,
        );
    }
    // A foreign plan.
    let foreign = case(
        "foreign.ll",
        &module(&format!(
            "define dso_local cc 1000 i32 @f(i32 %0) #0 {{\n  ret i32 %0\n}}\n\n\
             attributes #0 = {{ \"neverc-cc-plan-v1\"=\"{}\" }}\n",
            PLAN.replace("schema=llvm-x86_64-unknown-linux-gnu", "schema=foreign")
        )),
    );
    refused(
        &cli(&dir, &["cc", "lower", &foreign, "-o", "out.ll"]),
        "foreign target schema",
        &out,
    );
    // A function in a COMDAT group.
    let comdat = case(
        "comdat.ll",
        &module(&format!(
            "$f = comdat any\n\ndefine linkonce_odr dso_local cc 1000 i32 @f(i32 %0) #0 comdat {{\n  ret i32 %0\n}}\n\n\
             attributes #0 = {{ \"neverc-cc-plan-v1\"=\"{PLAN}\" }}\n"
        )),
    );
    refused(&cli(&dir, &["cc", "lower", &comdat, "-o", "out.ll"]), "COMDAT", &out);
    // A call whose plan is not its callee's.
    let mismatched = case(
        "mismatched.ll",
        &module(&format!(
            "define dso_local cc 1000 i32 @f(i32 %0) #0 {{\n  ret i32 %0\n}}\n\n\
             define dso_local i32 @g() {{\n  %r = call cc 1000 i32 @f(i32 1) #1\n  ret i32 %r\n}}\n\n\
             attributes #0 = {{ \"neverc-cc-plan-v1\"=\"{PLAN}\" }}\n\
             attributes #1 = {{ \"neverc-cc-plan-v1\"=\"{}\" }}\n",
            PLAN.replace("r,0,0,4,4,54,0,0;", "r,0,0,4,4,56,0,0;")
        )),
    );
    refused(
        &cli(&dir, &["cc", "lower", &mismatched, "-o", "out.ll"]),
        "the call's plan is not its callee's",
        &out,
    );
    // A target without adapter templates: every bundled one has them, so a target file does not (riscv64's
    // declaration without its `[lowering]` table), given with `--target-file`.
    let plain = case("plain.ll", &module("define i32 @f(i32 %0) {\n  ret i32 %0\n}\n"));
    let declaration = std::fs::read_to_string(repo().join("targets/riscv64.toml")).unwrap();
    let start = declaration.find("\n[lowering]\n").unwrap();
    let end = declaration.find("# Relocation types").unwrap();
    let without = format!("{}\n{}", &declaration[..start], &declaration[end..]);
    assert!(!without.contains("[lowering"), "the copy keeps a [lowering] table");
    std::fs::write(dir.join("untemplated.toml"), without).unwrap();
    refused(
        &cli(
            &dir,
            &[
                "cc",
                "lower",
                &plain,
                "-o",
                "out.ll",
                "--target-file",
                "untemplated.toml",
            ],
        ),
        "declares no adapter templates",
        &out,
    );
    // With its templates, the same file lowers the module.
    std::fs::write(dir.join("templated.toml"), &declaration).unwrap();
    succeeded(
        &cli(
            &dir,
            &["cc", "lower", &plain, "-o", "out.ll", "--target-file", "templated.toml"],
        ),
        "cc lower --target-file",
    );
    std::fs::remove_file(&out).unwrap();
    // The output may not be the input.
    let same = cli(&dir, &["cc", "lower", &plain, "-o", &plain]);
    assert_eq!(same.status.code(), Some(2), "{}", text(&same.stderr));
}

#[test]
fn help_explains_lowering() {
    let dir = scratch!("cc-lower-help");
    let help = cli(&dir, &["cc", "lower", "--help"]);
    succeeded(&help, "cc lower --help");
    let help = text(&help.stdout);
    assert!(help.contains("neverc_body") && help.contains("neverc_out"), "{help}");
    assert!(help.contains("[lowering]"), "{help}");
}

/// Item 15 of issue 23: `cc lower` on clang-14's output whose functions carry `neverc-callconv` specs but no
/// plans (the module was not materialized) writes no adapter for them, so code that calls them by their specs
/// would compute wrong results. It says so: a warning naming the functions (a clipped list in text, every one
/// in JSON) and the command that materializes them; that command then lowers every one of them.
#[test]
fn item_15_lowering_specs_without_plans_warns_naming_the_functions_and_the_command() {
    let dir = scratch!("cc-lower-unmaterialized");
    let mut source = String::from("int plain(int a) { return a + 1; }\n");
    for index in 0..12 {
        source.push_str(&format!(
            "__attribute__((noinline, annotate(\"neverc-callconv=gpr:rcx,rdx;ret:rax\"))) int f{index}(int a, int b) \
             {{ return a * {index} + b; }}\n"
        ));
    }
    std::fs::write(dir.join("specs.c"), source).unwrap();
    succeeded(
        &run_in(
            "clang-14",
            &dir,
            &["-S", "-emit-llvm", "-O2", "specs.c", "-o", "specs.ll"],
        ),
        "clang-14",
    );
    let names: Vec<String> = (0..12).map(|index| format!("@f{index}")).collect();

    let lowered = cli(&dir, &["cc", "lower", "specs.ll", "-o", "lowered.ll"]);
    succeeded(&lowered, "cc lower");
    let stderr = text(&lowered.stderr);
    let warning = stderr
        .lines()
        .find(|line| line.contains("warning:"))
        .unwrap_or_else(|| panic!("no warning: {stderr}"));
    assert!(warning.starts_with("specs.ll: warning: 12 function(s)"), "{warning}");
    assert!(warning.contains("neverc-callconv"), "{warning}");
    for name in &names[..8] {
        assert!(
            warning.contains(&format!("{name},")) || warning.contains(&format!("{name} ")),
            "{name}: {warning}"
        );
    }
    assert!(!warning.contains("@f8") && warning.contains("and 4 more"), "{warning}");
    assert!(!warning.contains("@plain"), "{warning}");
    let command = "neverc-spec cc materialize specs.ll -o lowered.ll --lower";
    assert!(warning.contains(command), "{warning}");

    let json = cli(
        &dir,
        &["cc", "lower", "specs.ll", "-o", "lowered.ll", "--format", "json"],
    );
    succeeded(&json, "cc lower --format json");
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["incoming"], serde_json::json!([]));
    let warnings = report["warnings"].as_array().unwrap();
    let warned: Vec<&str> = warnings
        .iter()
        .map(|warning| warning["function"].as_str().unwrap())
        .collect();
    assert_eq!(warned, names);
    assert!(warnings.iter().all(|warning| {
        warning["line"].as_u64().unwrap() > 0 && warning["message"].as_str().unwrap().contains(command)
    }));

    // The command the warning names materializes and lowers every one of them, without a warning.
    let materialized = cli(
        &dir,
        &[
            "cc",
            "materialize",
            "specs.ll",
            "-o",
            "both.ll",
            "--lower",
            "--format",
            "json",
        ],
    );
    succeeded(&materialized, "cc materialize --lower");
    assert!(
        !text(&materialized.stderr).contains("warning"),
        "{}",
        text(&materialized.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&materialized.stdout).unwrap();
    assert_eq!(report["lowered"]["incoming"], 12, "{report}");
    let relowered = cli(&dir, &["cc", "materialize", "specs.ll", "-o", "m.ll"]);
    succeeded(&relowered, "cc materialize");
    let relowered = cli(&dir, &["cc", "lower", "m.ll", "-o", "lowered.ll"]);
    succeeded(&relowered, "cc lower of the materialized module");
    assert!(
        !text(&relowered.stderr).contains("warning"),
        "{}",
        text(&relowered.stderr)
    );
}
