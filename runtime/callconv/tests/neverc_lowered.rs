#![allow(clippy::unwrap_used, clippy::expect_used)]
//! NeverC's custom-calling-convention tests (CustomCallConvTests.cpp, fact sheet C.8), lowered and run.
//!
//! NeverC greps the assembly its patched LLVM writes for the places a test's values go (`$10, %ecx`). Here the
//! same functions, compiled by stock clang-14, are materialized with the test's spec, lowered into adapters
//! and compiled by stock llc-14; then a caller written by hand in assembly puts the test's values exactly where
//! the test says they go (`%ecx`, the first stack slot, `s5`, ...) and calls the lowered function, and the
//! program prints what it got back. The function bodies weigh their arguments differently (`a + 2b + 4c`), so a
//! value that arrives in the wrong place changes the result. AArch64 programs run under qemu-aarch64, RISC-V
//! ones (tests 6, 8-14 with RISC-V registers) under qemu-riscv64.
//!
//! Not here: the front-end tests (15, 16), which are about clang's attributes, and the hardening tests that
//! expect a diagnostic (19, 20, 22–24, 26), which fail or warn before anything is lowered
//! (`runtime/callconv/tests/materialize.rs`, `tests/cli.rs`).

use std::path::Path;
use std::process::Command;

use neverc_cc::lower::lower;
use neverc_cc::materialize::{MaterializeOptions, materialize};
use neverc_tables::target_by_name;
use neverc_test_support::{run_in, scratch, succeeded, text};

/// NeverC's `cases.c` with bodies that tell their arguments apart, and the functions of tests 8, 9, 13, 14, 21
/// and 25.
const CASES: &str = r#"
struct P { long a, b, c; };
struct Q { long a, b, c; };
__attribute__((noinline)) int add3(int a, int b, int c) { return a + 2 * b + 4 * c; }
__attribute__((noinline)) long add3l(long a, long b, long c) { return a + 2 * b + 4 * c; }
__attribute__((noinline)) float fmix(float a, float b) { return a - 2.0f * b; }
__attribute__((noinline)) int spill5(int a, int b, int c, int d, int e) { return a + 2 * b + 4 * c + 8 * d + 16 * e; }
__attribute__((noinline)) struct P mk(long x) { struct P p = { x, 2 * x, 3 * x }; return p; }
__attribute__((noinline)) long use(struct Q q) { return q.a + 2 * q.b + 4 * q.c; }
__attribute__((noinline)) int work(int a) { return a * a; }
__attribute__((noinline)) int f(int a) { return a + 1; }
"#;

/// Test 14: two functions with specs of their own, one calling the other.
const MIXED: &str = r#"
__attribute__((noinline, annotate("neverc-callconv=gpr:x11;ret:x0"))) int callee(int a) { return a * 3; }
__attribute__((noinline, annotate("neverc-callconv=gpr:x12,x13;ret:x0"))) int caller(int x, int y) { return callee(x) + y; }
"#;

/// Test 14 on RISC-V, whose `x11`-`x13` are aliases of `a1`-`a3` and `x0` the zero register: the registers
/// are temporaries instead.
const RISCV_MIXED: &str = r#"
__attribute__((noinline, annotate("neverc-callconv=gpr:t3;ret:a0"))) int callee(int a) { return a * 3; }
__attribute__((noinline, annotate("neverc-callconv=gpr:t4,t5;ret:a0"))) int caller(int x, int y) { return callee(x) + y; }
"#;

/// Test 17: a spec written on the function.
const ATTRIBUTED: &str = r#"
__attribute__((noinline, annotate("neverc-callconv=gpr:rcx,rdx,r8;ret:rax"))) int add3(int a, int b, int c) { return a + 2 * b + 4 * c; }
"#;

struct Case {
    test: &'static str,
    target: &'static str,
    source: &'static str,
    /// `--cc-all` with this spec; `None` for source specs only.
    spec: Option<&'static str>,
    prefix: &'static str,
    /// The body of `call_case`, which `main` calls with the C convention.
    caller: &'static str,
    /// `main`'s body after `call_case` is declared as `declaration`.
    declaration: &'static str,
    main: &'static str,
    expected: &'static str,
}

const PRINT_INT: &str = r#"printf("%ld\n", (long)call_case()); return 0;"#;

fn x86_cases() -> Vec<Case> {
    vec![
        Case {
            test: "01 PoolGPR",
            target: "x86_64",
            source: CASES,
            spec: Some("gpr:rcx,rdx,r8;ret:rax"),
            prefix: "add3",
            caller: "pushq %rbx\n movl $10, %ecx\n movl $20, %edx\n movl $30, %r8d\n callq add3\n popq %rbx\n retq",
            declaration: "int call_case(void);",
            main: PRINT_INT,
            expected: "170",
        },
        Case {
            test: "02 PoolXMM",
            target: "x86_64",
            source: CASES,
            spec: Some("gpr:rcx;xmm:xmm5,xmm4;ret:rax;ret_xmm:xmm0"),
            prefix: "fmix",
            caller: "pushq %rbx\n movl $0x40a00000, %eax\n movd %eax, %xmm5\n movl $0x3fc00000, %eax\n movd %eax, %xmm4\n \
                     xorps %xmm0, %xmm0\n xorps %xmm1, %xmm1\n callq fmix\n popq %rbx\n retq",
            declaration: "float call_case(void);",
            main: r#"printf("%g\n", (double)call_case()); return 0;"#,
            // 5.0 - 2 * 1.5
            expected: "2",
        },
        Case {
            test: "03 PositionalForcesStack",
            target: "x86_64",
            source: CASES,
            spec: Some("args:rcx,stack,r8;ret:rax"),
            prefix: "add3",
            caller: "subq $24, %rsp\n movq $-1, %rax\n movq %rax, 8(%rsp)\n movl $20, (%rsp)\n movl $10, %ecx\n \
                     movl $30, %r8d\n callq add3\n addq $24, %rsp\n retq",
            declaration: "int call_case(void);",
            main: PRINT_INT,
            expected: "170",
        },
        Case {
            test: "04 PositionalAllStack",
            target: "x86_64",
            source: CASES,
            spec: Some("args:stack,stack,stack"),
            prefix: "add3",
            caller: "pushq $30\n pushq $20\n pushq $10\n callq add3\n addq $24, %rsp\n retq",
            declaration: "int call_case(void);",
            main: PRINT_INT,
            expected: "170",
        },
        Case {
            test: "05 PoolExhaustionSpills",
            target: "x86_64",
            source: CASES,
            spec: Some("gpr:rcx;ret:rax"),
            prefix: "add3",
            caller: "subq $8, %rsp\n pushq $30\n pushq $20\n movl $10, %ecx\n callq add3\n addq $24, %rsp\n retq",
            declaration: "int call_case(void);",
            main: PRINT_INT,
            expected: "170",
        },
        Case {
            test: "06 I64UsesWideRegister",
            target: "x86_64",
            source: CASES,
            spec: Some("gpr:rcx,rdx,r8;ret:rax"),
            prefix: "add3l",
            caller: "pushq %rbx\n movabsq $0x100000000, %rcx\n movabsq $0x200000000, %rdx\n movabsq $0x300000000, %r8\n \
                     callq add3l\n popq %rbx\n retq",
            declaration: "long call_case(void);",
            main: PRINT_INT,
            // (1 + 4 + 12) << 32
            expected: "73014444032",
        },
        Case {
            test: "07 FallbackToStandard",
            target: "x86_64",
            source: CASES,
            spec: Some("gpr:rcx,rdx,r8;ret:rax"),
            prefix: "nomatch_",
            caller: "pushq %rbx\n movl $10, %edi\n movl $20, %esi\n movl $30, %edx\n callq add3\n popq %rbx\n retq",
            declaration: "int call_case(void);",
            main: PRINT_INT,
            expected: "170",
        },
        Case {
            test: "08 StructReturnSret",
            target: "x86_64",
            source: CASES,
            spec: Some("gpr:rcx,rdx,r8;ret:rax"),
            prefix: "mk",
            // The hidden pointer goes in rcx (the first register of the pool), x in rdx.
            caller: "pushq %rbx\n movq %rdi, %rcx\n movl $7, %edx\n callq mk\n popq %rbx\n retq",
            declaration: "struct P { long a, b, c; }; void call_case(struct P *);",
            main: r#"struct P p = { 0, 0, 0 }; call_case(&p); printf("%ld %ld %ld\n", p.a, p.b, p.c); return 0;"#,
            expected: "7 14 21",
        },
        Case {
            test: "09 ByvalAggregate",
            target: "x86_64",
            source: CASES,
            spec: Some("gpr:rcx,rdx,r8;ret:rax"),
            prefix: "use",
            // The address of the by-value copy goes in rcx.
            caller: "pushq %rbx\n movq %rdi, %rcx\n callq use\n popq %rbx\n retq",
            declaration: "struct Q { long a, b, c; }; long call_case(struct Q *);",
            main: r#"struct Q q = { 1, 10, 100 }; printf("%ld\n", call_case(&q)); return 0;"#,
            expected: "421",
        },
        Case {
            test: "17 CustomAttrEndToEnd",
            target: "x86_64",
            source: ATTRIBUTED,
            spec: None,
            prefix: "",
            caller: "pushq %rbx\n movl $10, %ecx\n movl $20, %edx\n movl $30, %r8d\n callq add3\n popq %rbx\n retq",
            declaration: "int call_case(void);",
            main: PRINT_INT,
            expected: "170",
        },
        Case {
            test: "21 CalleeSavedCsr",
            target: "x86_64",
            source: CASES,
            spec: Some("gpr:rcx;ret:rax;csr:r12"),
            prefix: "work",
            // r12 must survive the call: the result is -1 if it does not.
            caller: "pushq %r12\n movq $0x5eed, %r12\n movl $9, %ecx\n callq work\n cmpq $0x5eed, %r12\n \
                     movl $-1, %ecx\n cmovnel %ecx, %eax\n popq %r12\n retq",
            declaration: "int call_case(void);",
            main: PRINT_INT,
            expected: "81",
        },
        Case {
            test: "25 StackPointerRejectedAsArgReg",
            target: "x86_64",
            source: CASES,
            spec: Some("gpr:rsp,rcx;ret:rax"),
            prefix: "f",
            caller: "pushq %rbx\n movl $41, %ecx\n callq f\n popq %rbx\n retq",
            declaration: "int call_case(void);",
            main: PRINT_INT,
            expected: "42",
        },
    ]
}

fn aarch64_cases() -> Vec<Case> {
    vec![
        Case {
            test: "10 AArch64PoolGPR",
            target: "aarch64",
            source: CASES,
            spec: Some("gpr:x9,x10,x11;ret:x0"),
            prefix: "add3",
            caller: "stp x29, x30, [sp, #-16]!\n mov w9, #10\n mov w10, #20\n mov w11, #30\n bl add3\n \
                     ldp x29, x30, [sp], #16\n ret",
            declaration: "int call_case(void);",
            main: PRINT_INT,
            expected: "170",
        },
        Case {
            test: "11 AArch64FPR",
            target: "aarch64",
            source: CASES,
            spec: Some("gpr:x9;fpr:v5,v6;ret:x0;ret_fpr:v0"),
            prefix: "fmix",
            caller: "stp x29, x30, [sp, #-16]!\n fmov s5, #5.0\n fmov s6, #1.5\n movi d0, #0\n movi d1, #0\n bl fmix\n \
                     ldp x29, x30, [sp], #16\n ret",
            declaration: "float call_case(void);",
            main: r#"printf("%g\n", (double)call_case()); return 0;"#,
            expected: "2",
        },
        Case {
            test: "12 AArch64PositionalStack",
            target: "aarch64",
            source: CASES,
            spec: Some("args:x9,stack,x11;ret:x0"),
            prefix: "add3",
            caller: "stp x29, x30, [sp, #-32]!\n mov w12, #20\n str w12, [sp]\n mov w9, #10\n mov w11, #30\n \
                     bl add3\n ldp x29, x30, [sp], #32\n ret",
            declaration: "int call_case(void);",
            main: PRINT_INT,
            expected: "170",
        },
        Case {
            test: "13 AArch64CalleeSavedCsr",
            target: "aarch64",
            source: CASES,
            spec: Some("gpr:x9;ret:x0;csr:x28"),
            prefix: "work",
            caller: "stp x29, x30, [sp, #-32]!\n str x28, [sp, #16]\n mov x28, #0x5eed\n mov w9, #9\n bl work\n \
                     mov x1, #0x5eed\n cmp x28, x1\n mov w1, #-1\n csel w0, w0, w1, eq\n ldr x28, [sp, #16]\n \
                     ldp x29, x30, [sp], #32\n ret",
            declaration: "int call_case(void);",
            main: PRINT_INT,
            expected: "81",
        },
        Case {
            test: "14 AArch64MixedSpecCrossCall",
            target: "aarch64",
            source: MIXED,
            spec: None,
            prefix: "",
            caller: "stp x29, x30, [sp, #-16]!\n mov w12, #5\n mov w13, #100\n bl caller\n ldp x29, x30, [sp], #16\n ret",
            declaration: "int call_case(void);",
            main: PRINT_INT,
            expected: "115",
        },
    ]
}

/// The AArch64 cases on RISC-V (LP64D), with tests 6, 8 and 9 besides: a 64-bit value, a struct returned
/// through the hidden pointer, and one passed by reference (a pointer to the caller's copy, as the psABI passes
/// structs over 16 bytes). The callers save ra around their call; `call` itself clobbers nothing else.
fn riscv64_cases() -> Vec<Case> {
    const ENTER: &str = "addi sp, sp, -16\n sd ra, 8(sp)\n";
    const LEAVE: &str = "\n ld ra, 8(sp)\n addi sp, sp, 16\n ret";
    vec![
        Case {
            test: "10 RiscvPoolGPR",
            target: "riscv64",
            source: CASES,
            spec: Some("gpr:t3,t4,t5;ret:a0"),
            prefix: "add3",
            caller: wrapped(ENTER, "li t3, 10\n li t4, 20\n li t5, 30\n call add3", LEAVE),
            declaration: "int call_case(void);",
            main: PRINT_INT,
            expected: "170",
        },
        Case {
            test: "11 RiscvFPR",
            target: "riscv64",
            source: CASES,
            spec: Some("gpr:t3;fpr:ft5,ft6;ret:a0;ret_fpr:fa0"),
            prefix: "fmix",
            caller: wrapped(
                ENTER,
                "li t0, 0x40a00000\n fmv.w.x ft5, t0\n li t0, 0x3fc00000\n fmv.w.x ft6, t0\n \
                 fmv.w.x fa0, zero\n fmv.w.x fa1, zero\n call fmix",
                LEAVE,
            ),
            declaration: "float call_case(void);",
            main: r#"printf("%g\n", (double)call_case()); return 0;"#,
            expected: "2",
        },
        Case {
            test: "12 RiscvPositionalStack",
            target: "riscv64",
            source: CASES,
            spec: Some("args:t3,stack,t5;ret:a0"),
            prefix: "add3",
            // The stack slot's upper half is all ones: the adapter sign-extends the `int` from its low half.
            caller: "addi sp, sp, -32\n sd ra, 16(sp)\n li t0, -1\n sd t0, 0(sp)\n li t0, 20\n sw t0, 0(sp)\n \
                     li t3, 10\n li t5, 30\n call add3\n ld ra, 16(sp)\n addi sp, sp, 32\n ret",
            declaration: "int call_case(void);",
            main: PRINT_INT,
            expected: "170",
        },
        Case {
            test: "13 RiscvCalleeSavedCsr",
            target: "riscv64",
            source: CASES,
            spec: Some("gpr:t3;ret:a0;csr:t6"),
            prefix: "work",
            // t6 must survive the call: the result is -1 if it does not.
            caller: wrapped(
                ENTER,
                "li t6, 0x5eed\n li t3, 9\n call work\n li t0, 0x5eed\n beq t6, t0, 1f\n li a0, -1\n1:",
                LEAVE,
            ),
            declaration: "int call_case(void);",
            main: PRINT_INT,
            expected: "81",
        },
        Case {
            test: "14 RiscvMixedSpecCrossCall",
            target: "riscv64",
            source: RISCV_MIXED,
            spec: None,
            prefix: "",
            caller: wrapped(ENTER, "li t4, 5\n li t5, 100\n call caller", LEAVE),
            declaration: "int call_case(void);",
            main: PRINT_INT,
            expected: "115",
        },
        Case {
            test: "06 RiscvI64UsesWideRegister",
            target: "riscv64",
            source: CASES,
            spec: Some("gpr:t3,t4,t5;ret:a0"),
            prefix: "add3l",
            caller: wrapped(
                ENTER,
                "li t3, 0x100000000\n li t4, 0x200000000\n li t5, 0x300000000\n call add3l",
                LEAVE,
            ),
            declaration: "long call_case(void);",
            main: PRINT_INT,
            // (1 + 4 + 12) << 32
            expected: "73014444032",
        },
        Case {
            test: "08 RiscvStructReturnSret",
            target: "riscv64",
            source: CASES,
            spec: Some("gpr:t3,t4,t5;ret:a0"),
            prefix: "mk",
            // The hidden pointer goes in t3 (the first register of the pool), x in t4.
            caller: wrapped(ENTER, "mv t3, a0\n li t4, 7\n call mk", LEAVE),
            declaration: "struct P { long a, b, c; }; void call_case(struct P *);",
            main: r#"struct P p = { 0, 0, 0 }; call_case(&p); printf("%ld %ld %ld\n", p.a, p.b, p.c); return 0;"#,
            expected: "7 14 21",
        },
        Case {
            test: "09 RiscvAggregateByReference",
            target: "riscv64",
            source: CASES,
            spec: Some("gpr:t3,t4,t5;ret:a0"),
            prefix: "use",
            // The address of the caller's copy goes in t3.
            caller: wrapped(ENTER, "mv t3, a0\n call use", LEAVE),
            declaration: "struct Q { long a, b, c; }; long call_case(struct Q *);",
            main: r#"struct Q q = { 1, 10, 100 }; printf("%ld\n", call_case(&q)); return 0;"#,
            expected: "421",
        },
    ]
}

/// A caller's body: its prologue, instructions and epilogue (leaked: the cases live as long as the test).
fn wrapped(enter: &str, body: &str, leave: &str) -> &'static str {
    String::leak(format!("{enter} {body}{leave}"))
}

/// A tool's path, failing with the reason when it is missing (CI installs it through scripts/test.sh).
fn tool(name: &str) -> &str {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .map(|output| output.status.success())
        .unwrap_or(false);
    assert!(found, "`{name}` is missing: run scripts/test.sh, which installs it");
    name
}

fn check(output: std::process::Output, what: &str) {
    succeeded(&output, what);
}

/// Compiles, materializes, lowers, assembles, links and runs one case; returns what it printed.
fn run_case(case: &Case, dir: &Path) -> String {
    let target = target_by_name(case.target).unwrap();
    let triple = match case.target {
        "x86_64" => "x86_64-unknown-linux-gnu",
        "riscv64" => "riscv64-unknown-linux-gnu",
        _ => "aarch64-unknown-linux-gnu",
    };
    std::fs::write(dir.join("cases.c"), case.source).unwrap();
    check(
        run_in(
            tool("clang-14"),
            dir,
            &[
                "-target",
                triple,
                "-S",
                "-emit-llvm",
                "-O2",
                "cases.c",
                "-o",
                "cases.ll",
            ],
        ),
        "clang-14",
    );
    let module = std::fs::read_to_string(dir.join("cases.ll")).unwrap();
    let options = MaterializeOptions {
        cc_all: case.spec.is_some(),
        prefix: case.prefix.to_string(),
        spec: case.spec.map(str::to_string),
        shuffle: false,
    };
    let materialized = materialize(&module, target, &options).unwrap();
    let lowered = lower(&materialized.text, target).unwrap();
    let planned = materialized.report.plan_count();
    assert_eq!(
        lowered.report.incoming.len(),
        planned,
        "{}: every planned definition is lowered",
        case.test
    );
    std::fs::write(dir.join("lowered.ll"), &lowered.text).unwrap();
    check(
        run_in(tool("llvm-as-14"), dir, &["lowered.ll", "-o", "lowered.bc"]),
        "llvm-as-14",
    );
    let mut llc = vec!["-O2", "lowered.ll", "-o", "lowered.s"];
    if case.target == "riscv64" {
        // clang's module-level attributes name rv64i only; the adapters' `fld`/`fsd` need F and D.
        llc.push("-mattr=+m,+a,+f,+d,+c");
    }
    check(run_in(tool("llc-14"), dir, &llc), "llc-14");
    let caller = format!(
        ".text\n.globl call_case\n.type call_case,%function\ncall_case:\n {}\n",
        case.caller
    );
    std::fs::write(dir.join("caller.s"), caller).unwrap();
    std::fs::write(
        dir.join("main.c"),
        format!(
            "#include <stdio.h>\n{}\nint main(void) {{ {} }}\n",
            case.declaration, case.main
        ),
    )
    .unwrap();
    let (compiler, runner): (&str, Option<&str>) = match case.target {
        "x86_64" => (tool("gcc"), None),
        "riscv64" => (tool("riscv64-linux-gnu-gcc"), Some(tool("qemu-riscv64"))),
        _ => (tool("aarch64-linux-gnu-gcc"), Some(tool("qemu-aarch64"))),
    };
    check(
        run_in(
            compiler,
            dir,
            &["-static", "main.c", "caller.s", "lowered.s", "-o", "program"],
        ),
        compiler,
    );
    let output = match runner {
        Some(runner) => run_in(runner, dir, &["./program"]),
        None => run_in(dir.join("program"), dir, &[]),
    };
    check(output.clone(), case.test);
    text(&output.stdout).trim().to_string()
}

fn run_all(cases: Vec<Case>, name: &str) {
    let root = scratch!("neverc-lowered-{name}");
    let mut failures = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        let dir = root.join(index.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let printed = run_case(case, &dir);
        if printed != case.expected {
            failures.push(format!(
                "test {}: printed `{printed}`, expected `{}` (in {})",
                case.test,
                case.expected,
                dir.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn neverc_x86_64_tests_lowered_receive_their_arguments_where_the_tests_say() {
    run_all(x86_cases(), "x86_64");
}

#[test]
fn neverc_aarch64_tests_lowered_receive_their_arguments_where_the_tests_say() {
    run_all(aarch64_cases(), "aarch64");
}

#[test]
fn neverc_riscv64_tests_lowered_receive_their_arguments_where_the_tests_say() {
    run_all(riscv64_cases(), "riscv64");
}

#[test]
fn without_a_plan_nothing_is_lowered() {
    // Test 7's module: `--ccprefix nomatch_` selects nothing, so lowering leaves the module as it is.
    let dir = scratch!("neverc-lowered-fallback");
    std::fs::write(dir.join("cases.c"), CASES).unwrap();
    check(
        run_in(
            tool("clang-14"),
            &dir,
            &["-S", "-emit-llvm", "-O2", "cases.c", "-o", "cases.ll"],
        ),
        "clang-14",
    );
    let module = std::fs::read_to_string(dir.join("cases.ll")).unwrap();
    let target = target_by_name("x86_64").unwrap();
    let lowered = lower(&module, target).unwrap();
    assert!(lowered.report.incoming.is_empty());
    assert_eq!(lowered.text, module);
}
