#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Property test of lowering (issue 14, must-show 1; issue 29, must-show 4): a lowered module's adapters receive
//! and make calls exactly where the plans say, on x86_64 natively, on aarch64 under `qemu-aarch64` and on riscv64
//! under `qemu-riscv64`.
//!
//! Each target's run generates random C signatures and random specs, then checks two directions.
//!
//! - **Incoming adapters.** Every case is a C function `f<k>` with its spec in `annotate("neverc-callconv=")`
//!   that records every byte it receives into `neverc_record` (a narrow integer widened to `long`, so that a
//!   missing `signext`/`zeroext` widening shows) and returns a marker. The module is compiled by
//!   `clang-14 -S -emit-llvm -O1`, materialized and lowered through the library, and compiled by `llc-14 -O2`
//!   (with opaque pointers on aarch64 and riscv64, typed ones on x86_64, the other way round for the outgoing
//!   module; on riscv64 with `-mattr=+m,+a,+f,+d,+c`, since clang's module-level attributes name rv64i only).
//!   A caller written here in assembly (`nc_call<k>`, per target, independent of the adapter templates)
//!   loads a whole register file of distinct markers (the plan's argument registers hold the argument's
//!   bytes at their low end, the rest of every register is junk), builds the plan's stack arguments above
//!   the return address (x86-64) or at `sp` (AArch64, RISC-V), calls `f<k>` and dumps every register and the stack
//!   pointer afterwards. `main` checks every recorded byte, the plan's return location(s), that every
//!   register the plan names callee-saved and every register of the standard callee-saved set (except the
//!   return registers: the plan callee is held to both) kept its marker, and that the stack pointer came
//!   back.
//! - **Outgoing adapters.** Every case is a C function `t_g<k>` calling an external `g<k>` whose declaration
//!   gets the spec as a `"neverc-callconv"` attribute group in the IR text, so that lowering routes the call
//!   through `g<k>.neverc_out`. `g<k>` is written here in assembly and implements the plan: it dumps every
//!   register, its stack arguments and the objects its by-value and by-reference pointers point at into
//!   `neverc_seen`, writes the marker through an `sret` pointer, clobbers every register the plan callee
//!   need not preserve (the standard callee-saved set plus the plan's, minus the return registers) and puts
//!   the return marker in the plan's return location. An assembly wrapper `nc_wrap<k>` loads markers into
//!   the standard callee-saved registers, calls `t_g<k>` and dumps them afterwards. `main` checks every
//!   byte where the plan says, the return value as C sees it (a narrow integer widened to `long` and to
//!   `int`, so that a return the adapter leaves unwidened shows where LLVM relies on `signext`/`zeroext`),
//!   the stack alignment at the plan callee's entry, and the C side's callee-saved registers.
//!
//! The menus (`generator`): parameters of `_Bool`, `signed char`, `unsigned char`, `short`, `unsigned short`
//! (IR `zeroext`/`signext` on x86_64, none on aarch64), `int`, `long`, pointers, `float`, `double` and a
//! 16-byte `float` vector (`<4 x float>`, a whole vector register); on aarch64 also `_Float16` (`half`); on
//! x86_64 structs of 24 and 33 bytes passed `byval` and `struct { float a, b; }` passed as `<2 x float>`; on
//! aarch64 the same big structs passed by reference (a pointer to a copy), and `[2 x i64]`, the HFAs `[2 x
//! double]` and `[3 x float]`. Returns: `void`, the same scalars and vector, the big structs through an `sret`
//! pointer, and small structs the standard convention returns in two or three registers (`{ i64, i64 }`, `{
//! double, double }`, `{ i64, double }` and `<2 x float>` on x86_64; `[2 x i64]` and the HFAs on aarch64).
//! A third of the cases are written in IR instead (issue 24): parameters of `i32`, `i64`, `float`, `double`,
//! `<4 x float>` (and `half` on aarch64) and arrays of 1 to 9 elements of `i8`, `i16`, `i32`, `i64`, `float`,
//! `double`, `<2 x float>` and `<4 x float>` (and `i128` and `half` on aarch64: every kind of block and of
//! element passed on its own; not `bfloat`, whose constants llc-14 cannot compile, while `tests/llc_oracle.rs`
//! checks where its elements go), returning nothing, a scalar or an array the standard convention returns in
//! registers. An incoming one stores its parameters into `neverc_record` and returns its marker, an outgoing
//! one calls its plan callee with constants and stores what it returns; they are appended to clang's module.
//! Functions take up to twelve parameters. Specs: integer and float pools under every key spelling
//! (`gpr`/`arg_gpr`, `xmm`/`arg_xmm`/`fpr`), or a positional `args:` list of registers of either class and
//! `stack`/`mem` tokens; `ret`/`ret_gpr` and `ret_xmm`/`ret_fpr`; `csr` sets of any registers (scratch,
//! argument, standard callee-saved, vector and reserved ones); any register sometimes spelled by a
//! sub-register's name (`ecx`, `w9`, `d5`), which names the same register. The plan of each function is the one
//! materialization wrote, and where each value goes is `assign` of that plan over the signature as clang wrote
//! it.
//!
//! On riscv64 (LP64D; programs built by clang-14 and `riscv64-linux-gnu-gcc -static`) the menus are
//! aarch64's scalars (`_Bool` to `short` arrive `zeroext`/`signext` and `int` `signext`, which the adapters widen
//! to 64 bits as the psABI says, also in stack slots) with `_Float16`, the 16-byte vector (which clang passes as
//! an `i128`: a register pair, or a register and a stack slot), the big structs by reference and `struct p16`
//! (`[2 x i64]`); returns of all of them, `struct d16`, `struct m16` and `struct v2f` (`{ double, double }`,
//! `{ i64, double }`, `{ float, float }`) and the big structs through `sret`. Floating-point values that find no
//! `fa` register left take general registers (`float_falls_back_to_integer_registers`), and then stack slots.
//! Left out there: `struct d16`, `struct m16` and `struct v2f` as parameters (clang flattens each into two IR
//! values, which the generator's one-value-per-parameter model does not follow) and `struct f12` (clang passes
//! and returns its 12 bytes as a 16-byte `[2 x i64]`); IR vectors, scalars and array elements alike, which LLVM
//! 14 splits into scalars or passes by reference without the V extension where the declared [abi] passes
//! their bytes in general registers (the target's `standard_deviations`); `fp128` and `bfloat` (deviations too,
//! and not in the menus of the other targets either); integers wider than 128 bits, which the planner splits
//! where LLVM 14 passes them by reference (not in any menu). Returns of more than two register pieces are
//! returned through the hidden pointer, as LLVM does (`max_return_registers`), so the IR cases never
//! generate them as register returns.
//!
//! Left out: `half` on x86_64 (LLVM 14 soft-promotes it to `i16` where the standard convention follows the
//! psABI's SSE registers, `HalfAsI16` in `docs/standard-abi-deviations.md`, so an adapter and llc-14's body
//! would disagree), `i128` on x86_64 (LLVM 14 splits it between registers and the stack, `I128AsTwoI64`),
//! `bfloat` on x86_64 (llc-14 cannot pass it), `x86_fp80` (returned in x87 registers the target does not
//! declare), variadic functions (they have no plan) and calls through pointers (lowering refuses them). Float
//! markers are never NaN, so that no move could quieten them.
//!
//! `issue_24_lowered_adapters_pass_arrays_as_llc_14_does_aarch64` runs the same harness over IR cases only,
//! a quarter of them the issue's `void (float, float, float, float, [5 x float], float)` and another quarter
//! its `void (i64 x 6, [3 x i32], i64)`, each under a random spec.
//!
//! Each test runs one seed: a fixed default per test, or `NEVERC_LOWER_SEED=<n>` (decimal or `0x` hex) to
//! reproduce a failure; `NEVERC_LOWER_CASES=<n>` sets the cases per direction. Every failure prints the seed.
//! The tools are required: a missing `clang-14`, `llc-14`, `qemu-aarch64`, `aarch64-linux-gnu-gcc`,
//! `qemu-riscv64` or `riscv64-linux-gnu-gcc` fails the test (`scripts/test.sh` installs them).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::{Command, Output};

use neverc_cc::assignment::{Piece, Place, ValueAssignment, ValueRef, register_view_name};
use neverc_cc::layout::layout_of;
use neverc_cc::ll_reader::{Module, read_module};
use neverc_cc::lower::lower;
use neverc_cc::materialize::{MaterializeOptions, materialize};
use neverc_cc::plan::Plan;
use neverc_cc::planner::assign;
use neverc_cc::signature::{IrType, Signature};
use neverc_tables::{RegisterClassKind, TargetRecord, target_by_name};
use neverc_test_support::{Bounds, Rng, run_bounded, scratch, seed_of, text};

use generator::{Aggregate, CType, Case, Element, Menus};
use planned::{Argument, Image, Passing, Planned, Role, SeenLayout, incoming_images, plan_case};

/// Cases per direction and target when `NEVERC_LOWER_CASES` does not say.
const DEFAULT_CASES: usize = 2000;

/// Bytes of the buffers `main` defines: the callee's record, the register dumps, what the plan callee saw,
/// and what the C caller received.
const RECORD_BYTES: usize = 1024;
const DUMP_BYTES: usize = 2048;
const SEEN_BYTES: usize = 4096;
const RETURN_BYTES: usize = 64;

#[test]
fn lowered_adapters_x86_64() {
    run_target(
        &x86_64::X86_64,
        "lowered_adapters_x86_64",
        case_count(DEFAULT_CASES),
        mixed_case,
    );
}

#[test]
fn lowered_adapters_aarch64() {
    run_target(
        &aarch64::Aarch64,
        "lowered_adapters_aarch64",
        case_count(DEFAULT_CASES),
        mixed_case,
    );
}

/// Issue 29, must-show 4: the same on riscv64 under qemu-riscv64.
#[test]
fn lowered_adapters_riscv64() {
    run_target(
        &riscv64::Riscv64,
        "lowered_adapters_riscv64",
        case_count(DEFAULT_CASES),
        mixed_case,
    );
}

/// Issue 24, must-show 3: adapters of functions taking and returning arrays run under qemu-aarch64 as the plans
/// and llc-14's bodies and callers say: the issue's two signatures (`[5 x float]` after four floats, which
/// llc-14 passes wholly on the stack, and `[3 x i32]` after six `i64`s, split between `x6`, `x7` and the stack)
/// under random specs, and random signatures with arrays of every element kind and length.
#[test]
fn issue_24_lowered_adapters_pass_arrays_as_llc_14_does_aarch64() {
    run_target(
        &aarch64::Aarch64,
        "issue_24_lowered_adapters_pass_arrays_as_llc_14_does_aarch64",
        case_count(ISSUE_24_CASES),
        issue_24_case,
    );
}

/// Cases per direction of the issue 24 run when `NEVERC_LOWER_CASES` does not say.
const ISSUE_24_CASES: usize = 400;

/// Makes the case of index `k`, named `name`.
type Generate = fn(&mut Rng, &'static TargetRecord, &Menus, usize, String) -> Case;

/// The property tests' cases: a third written in IR, with arrays (issue 24), the rest in C.
fn mixed_case(rng: &mut Rng, target: &'static TargetRecord, menus: &Menus, k: usize, name: String) -> Case {
    if rng.below(3) == 0 {
        generator::ir_case(rng, target, menus, k, name)
    } else {
        generator::case(rng, target, menus, k, name)
    }
}

/// Issue 24's cases: its two signatures, each a quarter of the cases, and random IR cases with arrays.
fn issue_24_case(rng: &mut Rng, target: &'static TargetRecord, menus: &Menus, k: usize, name: String) -> Case {
    use generator::CType::{Array, Float, Long};
    match k % 4 {
        0 => generator::with_parameters(
            rng,
            target,
            k,
            name,
            vec![Float, Float, Float, Float, Array(Element::Float, 5), Float],
        ),
        1 => generator::with_parameters(
            rng,
            target,
            k,
            name,
            vec![Long, Long, Long, Long, Long, Long, Array(Element::I32, 3), Long],
        ),
        _ => generator::ir_case(rng, target, menus, k, name),
    }
}

/// The seed of a test's run: `NEVERC_LOWER_SEED`, or the test's fixed default.
fn seed_for(test: &str) -> u64 {
    match std::env::var("NEVERC_LOWER_SEED") {
        Ok(value) => {
            let value = value.trim();
            let parsed = match value.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => value.parse(),
            };
            parsed.unwrap_or_else(|_| panic!("NEVERC_LOWER_SEED={value} is not a number"))
        }
        Err(_) => seed_of(&format!("lowered_property/{test}")),
    }
}

/// Cases per direction: `NEVERC_LOWER_CASES`, or `default`.
fn case_count(default: usize) -> usize {
    match std::env::var("NEVERC_LOWER_CASES") {
        Ok(value) => value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("NEVERC_LOWER_CASES={value} is not a number")),
        Err(_) => default,
    }
}

/// Fails the test unless `tool --version` runs.
fn require(tool: &str) {
    let found = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(
        found,
        "`{tool}` is missing: run scripts/test.sh, which installs clang-14, llvm-14, gcc-aarch64-linux-gnu, \
         gcc-riscv64-linux-gnu and qemu-user"
    );
}

/// Runs a tool in the run's directory, failing the test (with the seed) when it fails.
fn tool(context: &Context, program: &str, args: &[&str]) -> Output {
    let output = Command::new(program)
        .args(args)
        .current_dir(&context.dir)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {program}: {error}"));
    if !output.status.success() {
        context.fail(format!(
            "{program} {} failed ({}):\n{}\n{}",
            args.join(" "),
            output.status,
            text(&output.stdout),
            text(&output.stderr)
        ));
    }
    output
}

/// What every step of a target's run shares.
struct Context {
    target: &'static TargetRecord,
    seed: u64,
    /// Cases per direction.
    cases: usize,
    /// The test's name.
    test: &'static str,
    dir: PathBuf,
}

impl Context {
    /// Fails the test, saying how to run the same cases again.
    fn fail(&self, message: String) -> ! {
        panic!(
            "{message}\n(seed {seed}: rerun with NEVERC_LOWER_SEED={seed} NEVERC_LOWER_CASES={cases} \
             cargo test -p neverc-cc --test lowered_property {test}; files in {dir})",
            seed = self.seed,
            cases = self.cases,
            test = self.test,
            dir = self.dir.display()
        )
    }
}

/// Gives each declaration of an outgoing case an attribute group of its own holding its spec.
fn attach_specs(context: &Context, text: &str, cases: &[Case]) -> String {
    let mut next_group = text
        .lines()
        .filter_map(|line| line.strip_prefix("attributes #"))
        .filter_map(|rest| rest.split(' ').next()?.parse::<u32>().ok())
        .max()
        .map_or(0, |id| id + 1);
    let mut out = String::with_capacity(text.len() * 2);
    let mut groups = String::new();
    let mut attached = 0;
    for line in text.lines() {
        let declared = line
            .strip_prefix("declare ")
            .and_then(|rest| rest.split_once(" @g"))
            .and_then(|(_, rest)| rest.split_once('('))
            .and_then(|(number, _)| number.parse::<usize>().ok());
        match declared {
            Some(index) => {
                let base = match line.rfind(" #") {
                    Some(at) if line[at + 2..].bytes().all(|byte| byte.is_ascii_digit()) => &line[..at],
                    _ => line,
                };
                writeln!(out, "{base} #{next_group}").unwrap();
                writeln!(
                    groups,
                    "attributes #{next_group} = {{ \"neverc-callconv\"=\"{}\" }}",
                    cases[index].spec
                )
                .unwrap();
                next_group += 1;
                attached += 1;
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    if attached != cases.len() {
        context.fail(format!(
            "found {attached} declarations of plan callees in clang's module, expected {}",
            cases.len()
        ));
    }
    out.push_str(&groups);
    out
}

/// Compiles C to IR with clang-14 (with typed or opaque pointers: lowering edits them differently),
/// materializes and lowers it, and compiles it with llc-14; returns clang's module text (after `edit`) and
/// the plan of each case's function.
fn compile_lowered(
    context: &Context,
    isa: &dyn Isa,
    stem: &str,
    source: &str,
    cases: &[Case],
    opaque: bool,
    edit: impl Fn(&str) -> String,
) -> (String, Vec<String>) {
    let c = format!("{stem}.c");
    let ll = format!("{stem}.ll");
    std::fs::write(context.dir.join(&c), source).unwrap();
    let mut args = vec!["-S", "-emit-llvm", "-O1", "-w"];
    if opaque {
        args.extend_from_slice(&["-mllvm", "-opaque-pointers"]);
    }
    args.extend_from_slice(isa.clang_target());
    args.extend_from_slice(&[&c, "-o", &ll]);
    tool(context, "clang-14", &args);
    let clang = edit(&std::fs::read_to_string(context.dir.join(&ll)).unwrap());
    std::fs::write(context.dir.join(format!("{stem}.spec.ll")), &clang).unwrap();
    let materialized = materialize(&clang, context.target, &MaterializeOptions::default())
        .unwrap_or_else(|error| context.fail(format!("materializing {stem}: {error}")));
    let plans: Vec<String> = cases
        .iter()
        .map(|case| {
            materialized
                .report
                .plan_of(&format!("@{}", case.name))
                .unwrap_or_else(|| context.fail(format!("materialization gave {} no plan", case.name)))
                .to_string()
        })
        .collect();
    std::fs::write(context.dir.join(format!("{stem}.materialized.ll")), &materialized.text).unwrap();
    let lowered = lower(&materialized.text, context.target)
        .unwrap_or_else(|error| context.fail(format!("lowering {stem}: {error}")));
    let lowered_ll = format!("{stem}.lowered.ll");
    std::fs::write(context.dir.join(&lowered_ll), &lowered.text).unwrap();
    let assembly = format!("{stem}.s");
    let mut args = vec!["-O2", &lowered_ll, "-o", &assembly];
    if opaque {
        args.push("-opaque-pointers");
    }
    args.extend_from_slice(isa.llc_target());
    tool(context, "llc-14", &args);
    (clang, plans)
}

/// One target's run: generate, compile, lower, write the harness and `main`, build, run, judge.
/// One run of `count` cases per direction on a target (`test` names the test, to rerun it).
fn run_target(isa: &dyn Isa, test: &'static str, count: usize, generate: Generate) {
    let started = std::time::Instant::now();
    require("clang-14");
    require("llc-14");
    for name in isa.tools() {
        require(name);
    }
    let target = target_by_name(isa.name()).unwrap();
    let seed = seed_for(test);
    let context = Context {
        target,
        seed,
        cases: count,
        test,
        dir: scratch!("lowered-property-{test}"),
    };
    let mut rng = Rng::new(seed);
    let menus = isa.menus();
    let incoming: Vec<Case> = (0..count)
        .map(|k| generate(&mut rng, target, &menus, k, format!("f{k}")))
        .collect();
    let outgoing: Vec<Case> = (0..count)
        .map(|k| generate(&mut rng, target, &menus, k, format!("g{k}")))
        .collect();
    let incoming_ir = checks::incoming_ir(&incoming, isa.opaque_incoming());
    let outgoing_ir = checks::outgoing_ir(&outgoing, !isa.opaque_incoming());

    let (incoming_ir, incoming_plans) = compile_lowered(
        &context,
        isa,
        "incoming",
        &checks::incoming_module(&incoming),
        &incoming,
        isa.opaque_incoming(),
        |text| format!("{text}{incoming_ir}"),
    );
    let (outgoing_ir, outgoing_plans) = compile_lowered(
        &context,
        isa,
        "outgoing",
        &checks::outgoing_module(&outgoing),
        &outgoing,
        !isa.opaque_incoming(),
        |text| attach_specs(&context, &format!("{text}{outgoing_ir}"), &outgoing),
    );
    let incoming_module = read_module(&incoming_ir).unwrap();
    let outgoing_module = read_module(&outgoing_ir).unwrap();

    let mut main = checks::MainWriter::new(target);
    let mut assembly = String::new();
    for (case, plan) in incoming.iter().zip(&incoming_plans) {
        let planned = plan_case(&context, isa, case, &incoming_module, plan);
        isa.incoming_caller(&context, &planned, &mut rng, &mut assembly);
        main.incoming(target, &planned);
    }
    for (case, plan) in outgoing.iter().zip(&outgoing_plans) {
        let planned = plan_case(&context, isa, case, &outgoing_module, plan);
        isa.plan_callee(&context, &planned, &mut rng, &mut assembly);
        main.outgoing(target, &planned, isa.entry_bias());
    }
    // The markers of the C side's callee-saved registers, and the junk plan callees clobber with.
    writeln!(assembly, "\t.data").unwrap();
    Image::junk(&mut rng, target.registers.len() * 16).emit("nc_csr", &mut assembly);
    Image::junk(&mut rng, target.registers.len() * 16).emit("nc_junk", &mut assembly);
    std::fs::write(context.dir.join("harness.s"), assembly).unwrap();
    std::fs::write(context.dir.join("main.c"), main.finish()).unwrap();
    isa.build(
        &context,
        &["main.c", "harness.s", "incoming.s", "outgoing.s"],
        "lowered-property",
    );
    let output = isa.run(&context, "lowered-property");
    let stdout = text(&output.stdout);
    let expected = format!("{} cases, ", 2 * count);
    if !output.status.success() || !stdout.contains(&expected) || !stdout.contains(", 0 failures") {
        context.fail(format!(
            "the {} program failed ({}):\n{}\n{}",
            isa.name(),
            output.status,
            stdout,
            text(&output.stderr)
        ));
    }
    println!(
        "{}: {} incoming and {} outgoing cases, seed {seed}, {:.1?}: {}",
        isa.name(),
        count,
        count,
        started.elapsed(),
        stdout.trim()
    );
}

/// The generator: random C signatures and random specs, and the marker bytes every value carries.
mod generator {
    use super::*;

    /// The structs of the menus (no padding: every byte is a marker byte).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Aggregate {
        /// `struct s24 { long a, b, c; }`: in memory (`byval` on x86_64, by reference on aarch64, `sret`).
        S24,
        /// `struct s33 { unsigned char c[33]; }`: in memory, an odd size.
        S33,
        /// `struct p16 { long a, b; }`: two general registers.
        P16,
        /// `struct d16 { double a, b; }`: two vector registers.
        D16,
        /// `struct f12 { float a, b, c; }`: an AArch64 HFA of three.
        F12,
        /// `struct v2f { float a, b; }`: `<2 x float>` on x86_64.
        V2F,
        /// `struct m16 { long a; double b; }`: one general and one vector register on x86_64.
        M16,
    }

    /// A part of a value's bytes that markers fill.
    #[derive(Clone, Copy)]
    enum Field {
        Bytes(usize),
        /// A `_Bool`: 0 or 1.
        Bool,
        F16,
        F32,
        F64,
    }

    impl Aggregate {
        pub const ALL: [Aggregate; 7] = [
            Aggregate::S24,
            Aggregate::S33,
            Aggregate::P16,
            Aggregate::D16,
            Aggregate::F12,
            Aggregate::V2F,
            Aggregate::M16,
        ];

        pub fn tag(self) -> &'static str {
            match self {
                Aggregate::S24 => "s24",
                Aggregate::S33 => "s33",
                Aggregate::P16 => "p16",
                Aggregate::D16 => "d16",
                Aggregate::F12 => "f12",
                Aggregate::V2F => "v2f",
                Aggregate::M16 => "m16",
            }
        }

        pub fn definition(self) -> &'static str {
            match self {
                Aggregate::S24 => "struct s24 { long a, b, c; };",
                Aggregate::S33 => "struct s33 { unsigned char c[33]; };",
                Aggregate::P16 => "struct p16 { long a, b; };",
                Aggregate::D16 => "struct d16 { double a, b; };",
                Aggregate::F12 => "struct f12 { float a, b, c; };",
                Aggregate::V2F => "struct v2f { float a, b; };",
                Aggregate::M16 => "struct m16 { long a; double b; };",
            }
        }

        fn fields(self) -> Vec<Field> {
            match self {
                Aggregate::S24 => vec![Field::Bytes(24)],
                Aggregate::S33 => vec![Field::Bytes(33)],
                Aggregate::P16 => vec![Field::Bytes(16)],
                Aggregate::D16 => vec![Field::F64, Field::F64],
                Aggregate::F12 => vec![Field::F32, Field::F32, Field::F32],
                Aggregate::V2F => vec![Field::F32, Field::F32],
                Aggregate::M16 => vec![Field::Bytes(8), Field::F64],
            }
        }

        /// Whether the struct lives in memory: passed `byval` or by reference, returned through `sret`.
        pub fn in_memory(self) -> bool {
            matches!(self, Aggregate::S24 | Aggregate::S33)
        }
    }

    /// A C type of the menus.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum CType {
        Bool,
        SChar,
        UChar,
        Short,
        UShort,
        Int,
        Long,
        Pointer,
        /// `_Float16` (IR `half`), on aarch64 only.
        Half,
        Float,
        Double,
        /// `v4f`, a `float` vector of 16 bytes (`<4 x float>`).
        Vector,
        Struct(Aggregate),
        /// An IR array of this many elements (issue 24), which no C type becomes: only in the cases written
        /// in IR.
        Array(Element, u32),
    }

    /// An element type of the IR arrays.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Element {
        I8,
        I16,
        I32,
        I64,
        I128,
        Half,
        Float,
        Double,
        /// `<2 x float>`.
        V2F,
        /// `<4 x float>`.
        V4F,
    }

    impl Element {
        pub fn ir(self) -> &'static str {
            match self {
                Element::I8 => "i8",
                Element::I16 => "i16",
                Element::I32 => "i32",
                Element::I64 => "i64",
                Element::I128 => "i128",
                Element::Half => "half",
                Element::Float => "float",
                Element::Double => "double",
                Element::V2F => "<2 x float>",
                Element::V4F => "<4 x float>",
            }
        }

        fn fields(self) -> Vec<Field> {
            match self {
                Element::I8 => vec![Field::Bytes(1)],
                Element::I16 => vec![Field::Bytes(2)],
                Element::I32 => vec![Field::Bytes(4)],
                Element::I64 => vec![Field::Bytes(8)],
                Element::I128 => vec![Field::Bytes(16)],
                Element::Half => vec![Field::F16],
                Element::Float => vec![Field::F32],
                Element::Double => vec![Field::F64],
                Element::V2F => vec![Field::F32; 2],
                Element::V4F => vec![Field::F32; 4],
            }
        }
    }

    impl CType {
        pub fn spelling(self) -> String {
            match self {
                CType::Bool => "_Bool".into(),
                CType::SChar => "signed char".into(),
                CType::UChar => "unsigned char".into(),
                CType::Short => "short".into(),
                CType::UShort => "unsigned short".into(),
                CType::Int => "int".into(),
                CType::Long => "long".into(),
                CType::Pointer => "void *".into(),
                CType::Half => "_Float16".into(),
                CType::Float => "float".into(),
                CType::Double => "double".into(),
                CType::Vector => "v4f".into(),
                CType::Struct(aggregate) => format!("struct {}", aggregate.tag()),
                CType::Array(..) => self.ir().unwrap_or_default(),
            }
        }

        /// The IR type of a value of the types IR cases hold (`None` for the others).
        pub fn ir(self) -> Option<String> {
            Some(match self {
                CType::Int => "i32".into(),
                CType::Long => "i64".into(),
                CType::Half => "half".into(),
                CType::Float => "float".into(),
                CType::Double => "double".into(),
                CType::Vector => "<4 x float>".into(),
                CType::Array(element, length) => format!("[{length} x {}]", element.ir()),
                _ => return None,
            })
        }

        fn fields(self) -> Vec<Field> {
            match self {
                CType::Bool => vec![Field::Bool],
                CType::SChar | CType::UChar => vec![Field::Bytes(1)],
                CType::Short | CType::UShort => vec![Field::Bytes(2)],
                CType::Int => vec![Field::Bytes(4)],
                CType::Long | CType::Pointer => vec![Field::Bytes(8)],
                CType::Half => vec![Field::F16],
                CType::Float => vec![Field::F32],
                CType::Double => vec![Field::F64],
                CType::Vector => vec![Field::F32; 4],
                CType::Struct(aggregate) => aggregate.fields(),
                CType::Array(element, length) => (0..length).flat_map(|_| element.fields()).collect(),
            }
        }

        /// `Some(signed)` for the integers narrower than `int`.
        pub fn narrow(self) -> Option<bool> {
            match self {
                CType::SChar | CType::Short => Some(true),
                CType::Bool | CType::UChar | CType::UShort => Some(false),
                _ => None,
            }
        }

        /// Random marker bytes of a value of this type (floating-point fields never NaN).
        pub fn content(self, rng: &mut Rng) -> Vec<u8> {
            let mut bytes = Vec::new();
            for field in self.fields() {
                match field {
                    Field::Bytes(count) => bytes.extend(random_bytes(rng, count)),
                    Field::Bool => bytes.push((rng.next_u64() & 1) as u8),
                    // Clearing the exponent's top bit keeps the value finite.
                    Field::F16 => bytes.extend_from_slice(&((rng.next_u64() as u16) & !(1 << 14)).to_le_bytes()),
                    Field::F32 => bytes.extend_from_slice(&((rng.next_u64() as u32) & !(1 << 30)).to_le_bytes()),
                    Field::F64 => bytes.extend_from_slice(&(rng.next_u64() & !(1 << 62)).to_le_bytes()),
                }
            }
            bytes
        }

        /// The bytes of the value widened to `long` (narrow integers), or the value's own bytes.
        pub fn widened(self, content: &[u8]) -> Vec<u8> {
            match self.narrow() {
                Some(signed) => {
                    let negative = signed && content.last().is_some_and(|byte| byte & 0x80 != 0);
                    let mut bytes = content.to_vec();
                    bytes.resize(8, if negative { 0xff } else { 0 });
                    bytes
                }
                None => content.to_vec(),
            }
        }
    }

    pub fn random_bytes(rng: &mut Rng, count: usize) -> Vec<u8> {
        (0..count).map(|_| rng.next_u64() as u8).collect()
    }

    /// The types a target's menus hold.
    pub struct Menus {
        pub parameters: &'static [CType],
        pub returns: &'static [Option<CType>],
        /// The scalar types of the cases written in IR, besides their arrays.
        pub ir_scalars: &'static [CType],
        /// The element types of those arrays.
        pub elements: &'static [Element],
    }

    /// One generated function.
    pub struct Case {
        pub index: usize,
        pub name: String,
        pub returned: Option<CType>,
        pub parameters: Vec<CType>,
        pub spec: String,
        /// The marker bytes of each C parameter.
        pub arguments: Vec<Vec<u8>>,
        /// The marker bytes of the returned value (empty for `void`).
        pub return_content: Vec<u8>,
        /// Whether the case is written in IR (it has arrays) rather than in C.
        pub ir: bool,
    }

    impl Case {
        /// `long f12(signed char, double)`.
        pub fn prototype(&self) -> String {
            format!(
                "{} {}({})",
                self.returned.map_or("void".into(), CType::spelling),
                self.name,
                self.parameter_list(|_, ty| ty.spelling())
            )
        }

        /// The C parameter list, `void` when there is none.
        pub fn parameter_list(&self, each: impl Fn(usize, CType) -> String) -> String {
            if self.parameters.is_empty() {
                return "void".into();
            }
            let list: Vec<String> = self
                .parameters
                .iter()
                .enumerate()
                .map(|(index, ty)| each(index, *ty))
                .collect();
            list.join(", ")
        }
    }

    pub fn case(rng: &mut Rng, target: &TargetRecord, menus: &Menus, index: usize, name: String) -> Case {
        let count = rng.below(13);
        let parameters: Vec<CType> = (0..count).map(|_| *rng.pick(menus.parameters)).collect();
        let returned = *rng.pick(menus.returns);
        let spec = spec(rng, target, count);
        let arguments = parameters.iter().map(|ty| ty.content(rng)).collect();
        let return_content = returned.map_or_else(Vec::new, |ty| ty.content(rng));
        Case {
            index,
            name,
            returned,
            parameters,
            spec,
            arguments,
            return_content,
            ir: false,
        }
    }

    /// The longest array of the IR cases.
    const MAX_LENGTH: usize = 9;

    /// A random array of the menus' elements.
    fn array(rng: &mut Rng, menus: &Menus) -> CType {
        CType::Array(*rng.pick(menus.elements), 1 + rng.below(MAX_LENGTH) as u32)
    }

    /// A case written in IR (issue 24): parameters of the IR scalars and arrays of every element and length,
    /// and a return of either kind that the standard convention returns in registers (an adapter cannot
    /// return what the standard callee returns through memory where the plan wants registers, and `plan_case`
    /// holds every return to registers).
    pub fn ir_case(rng: &mut Rng, target: &TargetRecord, menus: &Menus, index: usize, name: String) -> Case {
        let count = rng.below(13);
        let parameters: Vec<CType> = (0..count)
            .map(|_| {
                if rng.below(2) == 0 {
                    array(rng, menus)
                } else {
                    *rng.pick(menus.ir_scalars)
                }
            })
            .collect();
        let returned = match rng.below(4) {
            0 => None,
            1 => Some(*rng.pick(menus.ir_scalars)),
            _ => (0..8)
                .map(|_| array(rng, menus))
                .find(|ty| returned_in_registers(target, *ty)),
        };
        let spec = spec(rng, target, count);
        let arguments = parameters.iter().map(|ty| ty.content(rng)).collect();
        let return_content = returned.map_or_else(Vec::new, |ty| ty.content(rng));
        Case {
            index,
            name,
            returned,
            parameters,
            spec,
            arguments,
            return_content,
            ir: true,
        }
    }

    /// A case written in IR with these parameters, returning nothing, under a random spec.
    pub fn with_parameters(
        rng: &mut Rng,
        target: &TargetRecord,
        index: usize,
        name: String,
        parameters: Vec<CType>,
    ) -> Case {
        let spec = spec(rng, target, parameters.len());
        let arguments = parameters.iter().map(|ty| ty.content(rng)).collect();
        Case {
            index,
            name,
            returned: None,
            parameters,
            spec,
            arguments,
            return_content: Vec::new(),
            ir: true,
        }
    }

    /// Whether the standard convention returns a value of `ty` in registers.
    fn returned_in_registers(target: &TargetRecord, ty: CType) -> bool {
        let text = ty.ir().unwrap();
        let parsed = Signature::parse(&format!("{text} ()")).unwrap();
        let returned = neverc_cc::standard_abi::standard_return(target, &parsed.return_type, &Default::default())
            .unwrap()
            .unwrap();
        !returned.indirect
    }

    /// A target's registers of one kind of class.
    fn registers_of(target: &TargetRecord, general: bool) -> Vec<usize> {
        (0..target.registers.len())
            .filter(|register| {
                target
                    .class_of(*register)
                    .is_some_and(|class| (class.kind == RegisterClassKind::General) == general)
            })
            .collect()
    }

    /// A register's name in a spec: mostly the canonical one, sometimes a sub-register's (`ecx`, `w9`,
    /// `d5`), which names the same register.
    fn spelled(rng: &mut Rng, target: &TargetRecord, register: usize) -> &'static str {
        let record = &target.registers[register];
        if !record.subregisters.is_empty() && rng.below(8) == 0 {
            rng.pick(record.subregisters).name
        } else {
            record.name
        }
    }

    fn list(rng: &mut Rng, target: &TargetRecord, registers: &[usize], length: usize) -> String {
        let items: Vec<&str> = (0..length)
            .map(|_| {
                let register = *rng.pick(registers);
                spelled(rng, target, register)
            })
            .collect();
        items.join(",")
    }

    /// A random spec for a function of `parameters` parameters.
    pub fn spec(rng: &mut Rng, target: &TargetRecord, parameters: usize) -> String {
        let general = registers_of(target, true);
        let float = registers_of(target, false);
        let mut segments = Vec::new();
        if rng.below(10) < 3 {
            let length = (parameters + rng.below(4)).max(2) - 1;
            let tokens: Vec<String> = (0..length)
                .map(|_| match rng.below(10) {
                    0..=3 => list(rng, target, &general, 1),
                    4..=6 => list(rng, target, &float, 1),
                    7 | 8 => "stack".into(),
                    _ => "mem".into(),
                })
                .collect();
            segments.push(format!("args:{}", tokens.join(",")));
        } else {
            if rng.below(10) < 8 {
                let (key, length) = (*rng.pick(&["gpr", "arg_gpr"]), 1 + rng.below(8));
                segments.push(format!("{key}:{}", list(rng, target, &general, length)));
            }
            if rng.below(10) < 6 {
                let (key, length) = (*rng.pick(&["xmm", "arg_xmm", "fpr"]), 1 + rng.below(8));
                segments.push(format!("{key}:{}", list(rng, target, &float, length)));
            }
        }
        if rng.below(10) < 7 {
            let key = *rng.pick(&["ret", "ret_gpr"]);
            segments.push(format!("{key}:{}", list(rng, target, &general, 1)));
        }
        if rng.below(10) < 6 {
            let key = *rng.pick(&["ret_xmm", "ret_fpr"]);
            segments.push(format!("{key}:{}", list(rng, target, &float, 1)));
        }
        // A spec without argument or return registers is empty (NeverC's rule): the planner refuses it.
        if segments.is_empty() {
            segments.push(format!("gpr:{}", list(rng, target, &general, 1)));
        }
        if rng.below(2) == 0 {
            let length = 1 + rng.below(5);
            let all: Vec<usize> = (0..target.registers.len()).collect();
            segments.push(format!("csr:{}", list(rng, target, &all, length)));
        }
        // The order of segments does not matter, and blanks around them are trimmed.
        for index in (1..segments.len()).rev() {
            let other = rng.below(index + 1);
            segments.swap(index, other);
        }
        let separator = *rng.pick(&[";", ";", "; ", ";;"]);
        segments.join(separator)
    }
}

/// Where each value of a case goes, and the memory images the harnesses load.
mod planned {
    use super::*;

    /// How a C parameter reaches the callee at IR level on a target.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Passing {
        /// As an IR value with the C type's bytes.
        Value,
        /// As a `byval` pointer (x86_64 structs in memory).
        ByVal,
        /// As a plain pointer to a copy the caller makes (aarch64 structs over 16 bytes).
        ByReference,
    }

    /// What a value's plan location holds.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum Role {
        /// The value's bytes.
        Content,
        /// The address of an object holding the value's bytes.
        Address,
        /// The address the callee writes the returned struct to.
        Sret,
    }

    /// One IR argument of a planned function, with the plan's pieces.
    pub struct Argument {
        pub role: Role,
        /// The C type (the returned one for `sret`).
        pub ty: CType,
        /// The bytes of the value, of the object pointed at, or of the returned struct.
        pub content: Vec<u8>,
        pub pieces: Vec<Piece>,
        /// The C parameter, `None` for the `sret` pointer.
        pub parameter: Option<usize>,
    }

    /// A case with its plan: where every argument and the return value go.
    pub struct Planned<'c> {
        pub case: &'c Case,
        pub plan: String,
        pub arguments: Vec<Argument>,
        /// The return value's register pieces (none for `void` and `sret`).
        pub returned: Vec<Piece>,
        /// Whether the struct is returned through an `sret` pointer.
        pub sret: bool,
        /// Registers the plan names callee-saved, at the plan's width.
        pub callee_saved: Vec<(usize, u32)>,
        /// Bytes of the plan's stack arguments.
        pub stack_bytes: u64,
    }

    impl Planned<'_> {
        pub fn description(&self) -> String {
            format!(
                "{}; spec `{}`; plan `{}`",
                self.case.prototype(),
                self.case.spec,
                self.plan
            )
        }

        pub fn return_registers(&self) -> Vec<usize> {
            self.returned
                .iter()
                .filter_map(|piece| match piece.place {
                    Place::Register { register, .. } => Some(register),
                    Place::Stack { .. } => None,
                })
                .collect()
        }

        /// The registers a plan callee keeps (the standard callee-saved set and the plan's, minus the return
        /// registers), each at the widest width either set names.
        pub fn kept(&self, target: &TargetRecord) -> Vec<(usize, u32)> {
            let returns = self.return_registers();
            let mut kept: Vec<(usize, u32)> = Vec::new();
            let standard = target.callee_saved.iter().map(|view| (view.register, view.width));
            for (register, width) in standard.chain(self.callee_saved.iter().copied()) {
                if returns.contains(&register) {
                    continue;
                }
                match kept.iter_mut().find(|(known, _)| *known == register) {
                    Some(entry) => entry.1 = entry.1.max(width),
                    None => kept.push((register, width)),
                }
            }
            kept.sort_unstable();
            kept
        }
    }

    /// Plans `case` from the plan materialization gave it, over the signature clang wrote.
    pub fn plan_case<'c>(
        context: &Context,
        isa: &dyn Isa,
        case: &'c Case,
        module: &Module<'_>,
        plan: &str,
    ) -> Planned<'c> {
        let target = context.target;
        let name = format!("@{}", case.name);
        let function = module
            .functions
            .iter()
            .find(|function| function.name == name)
            .unwrap_or_else(|| context.fail(format!("clang's module has no {name}")));
        let signature: &Signature = &module.signatures[function.signature as usize];
        let shape = |message: &str| -> ! {
            context.fail(format!(
                "the generator's model of clang is wrong for {}: {message}; signature {signature:?}",
                case.prototype()
            ))
        };
        let pointer = u64::from(target.pointer_width / 8);
        let store_size = |ty: &IrType| layout_of(ty, pointer, &module.types).unwrap().store_size;
        let sret = case
            .returned
            .is_some_and(|ty| matches!(ty, CType::Struct(aggregate) if aggregate.in_memory()));
        if signature.parameters.len() != case.parameters.len() + usize::from(sret) {
            shape("the IR has another number of parameters");
        }
        let parsed = Plan::parse(plan).unwrap_or_else(|error| context.fail(format!("{name}: plan `{plan}`: {error}")));
        let assignments: Vec<ValueAssignment> = assign(target, &parsed, signature, &module.types)
            .unwrap_or_else(|error| context.fail(format!("{name}: assign: {error}")));
        let pieces_of = |value: ValueRef| {
            assignments
                .iter()
                .find(|assignment| assignment.value == value)
                .cloned()
                .unwrap_or_else(|| context.fail(format!("{name}: no assignment for {value:?}")))
        };
        let mut arguments = Vec::new();
        for (index, parameter) in signature.parameters.iter().enumerate() {
            let assignment = pieces_of(ValueRef::Argument(index as u32));
            let (role, ty, content, c_parameter) = if sret && index == 0 {
                if parameter.attributes.sret.is_none() {
                    shape("the first parameter is no sret pointer");
                }
                (Role::Sret, case.returned.unwrap(), case.return_content.clone(), None)
            } else {
                let c_index = index - usize::from(sret);
                let ty = case.parameters[c_index];
                let passing = match ty {
                    // clang passes a small struct it would give registers `byval` when the registers have run
                    // out (x86-64 `struct v2f` with no SSE register left).
                    CType::Struct(aggregate)
                        if parameter.attributes.byval.is_some() && isa.passing(aggregate) == Passing::Value =>
                    {
                        Passing::ByVal
                    }
                    CType::Struct(aggregate) => isa.passing(aggregate),
                    _ => Passing::Value,
                };
                let content = case.arguments[c_index].clone();
                let role = match passing {
                    Passing::Value => {
                        if parameter.attributes.byval.is_some() || store_size(&parameter.ty) != content.len() as u64 {
                            shape(&format!(
                                "parameter {index} is not passed as a value of {} bytes",
                                content.len()
                            ));
                        }
                        if assignment.indirect {
                            context.fail(format!("{name}: the plan passes value {index} indirectly"));
                        }
                        Role::Content
                    }
                    Passing::ByVal => {
                        if parameter.attributes.byval.is_none() {
                            shape(&format!("parameter {index} is not byval"));
                        }
                        if !assignment.indirect {
                            context.fail(format!("{name}: the plan passes byval argument {index} directly"));
                        }
                        Role::Address
                    }
                    Passing::ByReference => {
                        if parameter.attributes.byval.is_some() || !matches!(parameter.ty, IrType::Pointer { .. }) {
                            shape(&format!("parameter {index} is not a plain pointer"));
                        }
                        Role::Address
                    }
                };
                (role, ty, content, Some(c_index))
            };
            arguments.push(Argument {
                role,
                ty,
                content,
                pieces: assignment.pieces,
                parameter: c_parameter,
            });
        }
        let returned = match case.returned {
            None => {
                if signature.return_type != IrType::Void {
                    shape("a void function returns a value");
                }
                Vec::new()
            }
            Some(_) if sret => {
                if signature.return_type != IrType::Void {
                    shape("a function returning through sret returns a value");
                }
                Vec::new()
            }
            Some(_) => {
                if store_size(&signature.return_type) != case.return_content.len() as u64 {
                    shape("the return value has another size");
                }
                let assignment = pieces_of(ValueRef::Return);
                if assignment.indirect {
                    context.fail(format!("{name}: the return value goes through a hidden pointer"));
                }
                for piece in &assignment.pieces {
                    if let Place::Stack { .. } = piece.place {
                        context.fail(format!("{name}: the return value goes on the stack"));
                    }
                }
                assignment.pieces
            }
        };
        let callee_saved = parsed
            .callee_saved
            .iter()
            .filter_map(|number| target.register_by_number(*number))
            .map(|resolved| (resolved.register, resolved.width))
            .collect();
        let stack_bytes = arguments
            .iter()
            .flat_map(|argument| &argument.pieces)
            .filter_map(|piece| match piece.place {
                Place::Stack { offset, size } => Some(offset + size),
                Place::Register { .. } => None,
            })
            .max()
            .unwrap_or(0);
        Planned {
            case,
            plan: plan.to_string(),
            arguments,
            returned,
            sret,
            callee_saved,
            stack_bytes,
        }
    }

    /// Memory contents for assembly data: bytes, with 8-aligned words that hold a symbol's address instead.
    pub struct Image {
        pub bytes: Vec<u8>,
        pub addresses: Vec<(usize, String)>,
    }

    impl Image {
        pub fn junk(rng: &mut Rng, size: usize) -> Image {
            Image {
                bytes: generator::random_bytes(rng, size.next_multiple_of(8)),
                addresses: Vec::new(),
            }
        }

        pub fn put(&mut self, at: usize, bytes: &[u8]) {
            self.bytes[at..at + bytes.len()].copy_from_slice(bytes);
        }

        pub fn address(&mut self, at: usize, symbol: String) {
            assert!(at % 8 == 0, "an address at offset {at} is not 8-aligned");
            self.addresses.push((at, symbol));
        }

        /// `.quad` lines, after a label.
        pub fn emit(&self, label: &str, out: &mut String) {
            writeln!(out, "\t.p2align 4\n\t.globl {label}\n{label}:").unwrap();
            for (word, chunk) in self.bytes.chunks(8).enumerate() {
                match self.addresses.iter().find(|(at, _)| *at == word * 8) {
                    Some((_, symbol)) => writeln!(out, "\t.quad {symbol}").unwrap(),
                    None => {
                        let mut value = [0u8; 8];
                        value[..chunk.len()].copy_from_slice(chunk);
                        writeln!(out, "\t.quad 0x{:016x}", u64::from_le_bytes(value)).unwrap();
                    }
                }
            }
        }
    }

    /// Where the plan callee of an outgoing case writes what it saw, in `neverc_seen`.
    pub struct SeenLayout {
        /// The stack pointer at entry.
        pub stack_pointer: usize,
        /// The plan's stack arguments.
        pub stack: usize,
        /// The object each `Address` argument points at, by argument index.
        pub objects: Vec<Option<usize>>,
    }

    impl SeenLayout {
        pub fn of(planned: &Planned<'_>, registers: usize) -> SeenLayout {
            let stack_pointer = registers * 16;
            let stack = stack_pointer + 16;
            let mut next = (stack + planned.stack_bytes as usize).next_multiple_of(16);
            let objects = planned
                .arguments
                .iter()
                .map(|argument| {
                    (argument.role == Role::Address).then(|| {
                        let at = next;
                        next = (next + argument.content.len()).next_multiple_of(16);
                        at
                    })
                })
                .collect();
            assert!(next <= SEEN_BYTES, "neverc_seen is too small for {}", planned.case.name);
            SeenLayout {
                stack_pointer,
                stack,
                objects,
            }
        }
    }

    /// The register file an incoming caller loads: junk everywhere, the plan's register pieces in place.
    pub fn incoming_images(context: &Context, planned: &Planned<'_>, rng: &mut Rng) -> (Image, Image, Vec<Image>) {
        let target = context.target;
        let k = planned.case.index;
        let mut registers = Image::junk(rng, target.registers.len() * 16);
        let area = planned.stack_bytes.next_multiple_of(16) as usize;
        let mut stack = Image::junk(rng, area.max(16));
        let mut objects = Vec::new();
        for (index, argument) in planned.arguments.iter().enumerate() {
            let symbol = match argument.role {
                Role::Content => None,
                Role::Address => {
                    let mut object = Image::junk(rng, argument.content.len());
                    object.put(0, &argument.content);
                    objects.push(object);
                    Some(format!("nc_obj{k}_{index}"))
                }
                Role::Sret => Some(format!("nc_sret{k}")),
            };
            for piece in &argument.pieces {
                match (&symbol, piece.place) {
                    (None, place) => {
                        let start = piece.offset as usize;
                        let end = (start + piece.size as usize).min(argument.content.len());
                        let bytes = &argument.content[start..end];
                        match place {
                            Place::Register { register, .. } => registers.put(register * 16, bytes),
                            Place::Stack { offset, .. } => stack.put(offset as usize, bytes),
                        }
                    }
                    (Some(symbol), Place::Register { register, .. }) => {
                        registers.address(register * 16, symbol.clone())
                    }
                    (Some(symbol), Place::Stack { offset, .. }) => stack.address(offset as usize, symbol.clone()),
                }
            }
        }
        (registers, stack, objects)
    }
}

/// The C side and the checks of `main`.
mod checks {
    use super::*;

    /// A C string literal of `bytes` (octal escapes, which never run into the next character).
    pub fn c_bytes(bytes: &[u8]) -> String {
        let mut literal = String::from("\"");
        for byte in bytes {
            write!(literal, "\\{byte:03o}").unwrap();
        }
        literal.push('"');
        literal
    }

    pub fn c_string(text: &str) -> String {
        let mut literal = String::from("\"");
        for c in text.chars() {
            match c {
                '"' | '\\' => {
                    literal.push('\\');
                    literal.push(c);
                }
                c if c.is_ascii_graphic() || c == ' ' => literal.push(c),
                c => write!(literal, "\\{:03o}", c as u32 & 0xff).unwrap(),
            }
        }
        literal.push('"');
        literal
    }

    /// `{0x12, 0x34}`.
    fn initializer(bytes: &[u8]) -> String {
        let items: Vec<String> = bytes.iter().map(|byte| format!("0x{byte:02x}")).collect();
        format!("{{{{{}}}}}", items.join(", "))
    }

    /// A constant of type `ty` holding `bytes`, as a static union named `name`; its value is `name.v`.
    fn constant(name: &str, ty: CType, bytes: &[u8]) -> String {
        format!(
            "static const union {{ unsigned char b[{}]; {} v; }} {name} = {};",
            bytes.len(),
            ty.spelling(),
            initializer(bytes)
        )
    }

    fn prelude() -> String {
        let mut out = String::from("#include <string.h>\ntypedef float v4f __attribute__((vector_size(16)));\n");
        for aggregate in Aggregate::ALL {
            out.push_str(aggregate.definition());
            out.push('\n');
        }
        out
    }

    /// Where each C parameter of an incoming case is recorded, and how many bytes.
    fn record_offsets(case: &Case) -> Vec<(usize, usize)> {
        let mut at = 0;
        case.parameters
            .iter()
            .zip(&case.arguments)
            .map(|(ty, content)| {
                let length = if ty.narrow().is_some() { 8 } else { content.len() };
                let offset = at;
                at = (at + length).next_multiple_of(8);
                assert!(at <= RECORD_BYTES);
                (offset, length)
            })
            .collect()
    }

    /// The C callees of the incoming cases (those written in C).
    pub fn incoming_module(cases: &[Case]) -> String {
        let mut out = prelude();
        // The IR cases store into `neverc_record` too: a use keeps its declaration in clang's module.
        out.push_str("extern unsigned char neverc_record[];\nvoid *nc_keep_record(void) { return neverc_record; }\n");
        for case in cases.iter().filter(|case| !case.ir) {
            let parameters = case.parameter_list(|index, ty| format!("{} a{index}", ty.spelling()));
            let returned = case.returned.map_or("void".into(), CType::spelling);
            writeln!(
                out,
                "__attribute__((annotate(\"neverc-callconv={}\"))) {returned} {}({parameters}) {{",
                case.spec, case.name
            )
            .unwrap();
            for (index, ((offset, _), ty)) in record_offsets(case).iter().zip(&case.parameters).enumerate() {
                match ty.narrow() {
                    Some(signed) => {
                        let wide = if signed { "long" } else { "unsigned long" };
                        writeln!(
                            out,
                            "  {{ {wide} w = a{index}; memcpy(neverc_record + {offset}, &w, 8); }}"
                        )
                        .unwrap();
                    }
                    None => writeln!(out, "  memcpy(neverc_record + {offset}, &a{index}, sizeof a{index});").unwrap(),
                }
            }
            if let Some(ty) = case.returned {
                writeln!(out, "  {}\n  return r.v;", constant("r", ty, &case.return_content)).unwrap();
            }
            out.push_str("}\n");
        }
        out
    }

    /// The C callers of the outgoing cases (those written in C), with plain declarations of the plan callees.
    pub fn outgoing_module(cases: &[Case]) -> String {
        let mut out = prelude();
        out.push_str("extern unsigned char neverc_ret[];\nvoid *nc_keep_ret(void) { return neverc_ret; }\n");
        for case in cases.iter().filter(|case| !case.ir) {
            let returned = case.returned.map_or("void".into(), CType::spelling);
            writeln!(
                out,
                "{returned} {}({});",
                case.name,
                case.parameter_list(|_, ty| ty.spelling())
            )
            .unwrap();
            writeln!(out, "void t_{}(void) {{", case.name).unwrap();
            for (index, (ty, content)) in case.parameters.iter().zip(&case.arguments).enumerate() {
                writeln!(out, "  {}", constant(&format!("k{index}"), *ty, content)).unwrap();
            }
            let arguments: Vec<String> = (0..case.parameters.len()).map(|index| format!("k{index}.v")).collect();
            let call = format!("{}({})", case.name, arguments.join(", "));
            match case.returned {
                None => writeln!(out, "  {call};").unwrap(),
                Some(ty) => match ty.narrow() {
                    Some(signed) => {
                        let (wide, int) = if signed {
                            ("long", "int")
                        } else {
                            ("unsigned long", "unsigned int")
                        };
                        writeln!(
                            out,
                            "  {} r = {call};\n  {{ {wide} w = r; {int} i = r; memcpy(neverc_ret, &w, 8); memcpy(neverc_ret + 8, &i, 4); }}",
                            ty.spelling()
                        )
                        .unwrap();
                    }
                    None => writeln!(
                        out,
                        "  {} r = {call};\n  memcpy(neverc_ret, &r, sizeof r);",
                        ty.spelling()
                    )
                    .unwrap(),
                },
            }
            out.push_str("}\n");
        }
        out
    }

    /// The IR value (after its type) of a value of `ty` holding `bytes`.
    fn ir_value(ty: CType, bytes: &[u8]) -> String {
        let element = match ty {
            CType::Array(element, length) => {
                let size = bytes.len() / length as usize;
                let items: Vec<String> = bytes
                    .chunks(size)
                    .map(|chunk| format!("{} {}", element.ir(), element_value(element, chunk)))
                    .collect();
                return format!("[{}]", items.join(", "));
            }
            CType::Int => Element::I32,
            CType::Long => Element::I64,
            CType::Half => Element::Half,
            CType::Float => Element::Float,
            CType::Double => Element::Double,
            CType::Vector => Element::V4F,
            other => panic!("{other:?} is not written in IR"),
        };
        element_value(element, bytes)
    }

    /// The IR constant of an array element holding `bytes`.
    fn element_value(element: Element, bytes: &[u8]) -> String {
        match element {
            Element::I8 | Element::I16 | Element::I32 | Element::I64 | Element::I128 => {
                let mut value = [0u8; 16];
                value[..bytes.len()].copy_from_slice(bytes);
                let unused = 128 - 8 * bytes.len() as u32;
                ((i128::from_le_bytes(value) << unused) >> unused).to_string()
            }
            Element::Half => format!("0xH{:04X}", u16::from_le_bytes([bytes[0], bytes[1]])),
            // A float constant is written as the double of the same value, which holds it exactly.
            Element::Float => format!(
                "0x{:016X}",
                f64::from(f32::from_le_bytes(bytes.try_into().unwrap())).to_bits()
            ),
            Element::Double => format!("0x{:016X}", u64::from_le_bytes(bytes.try_into().unwrap())),
            Element::V2F | Element::V4F => {
                let lanes: Vec<String> = bytes
                    .chunks(4)
                    .map(|lane| format!("float {}", element_value(Element::Float, lane)))
                    .collect();
                format!("<{}>", lanes.join(", "))
            }
        }
    }

    /// The address of byte `offset` of the byte array `symbol`, as a pointer to `ty` (typed or opaque).
    fn ir_address(symbol: &str, offset: usize, ty: &str, opaque: bool) -> String {
        if opaque {
            format!("ptr getelementptr inbounds ([0 x i8], ptr @{symbol}, i64 0, i64 {offset})")
        } else {
            format!(
                "{ty}* bitcast (i8* getelementptr inbounds ([0 x i8], [0 x i8]* @{symbol}, i64 0, i64 {offset}) to {ty}*)"
            )
        }
    }

    /// An IR case's type (its return type: `void` for none).
    fn ir_type(ty: Option<CType>) -> String {
        ty.map_or("void".into(), |ty| ty.ir().unwrap())
    }

    /// The attribute group that gives the function of case `k` its spec; past any number clang uses.
    fn spec_group(k: usize) -> usize {
        1_000_000 + k
    }

    /// The callees of the incoming cases written in IR, to append to clang's module: each stores its
    /// parameters into `neverc_record` where `main` looks for them, and returns its marker.
    pub fn incoming_ir(cases: &[Case], opaque: bool) -> String {
        let mut out = String::new();
        for case in cases.iter().filter(|case| case.ir) {
            let parameters: Vec<String> = case
                .parameters
                .iter()
                .enumerate()
                .map(|(index, ty)| format!("{} %a{index}", ty.ir().unwrap()))
                .collect();
            let group = spec_group(case.index);
            let returned = ir_type(case.returned);
            writeln!(
                out,
                "\ndefine {returned} @{}({}) #{group} {{",
                case.name,
                parameters.join(", ")
            )
            .unwrap();
            for (index, ((offset, _), ty)) in record_offsets(case).iter().zip(&case.parameters).enumerate() {
                let ty = ty.ir().unwrap();
                let address = ir_address("neverc_record", *offset, &ty, opaque);
                writeln!(out, "  store {ty} %a{index}, {address}, align 1").unwrap();
            }
            match case.returned {
                Some(ty) => writeln!(out, "  ret {returned} {}", ir_value(ty, &case.return_content)).unwrap(),
                None => out.push_str("  ret void\n"),
            }
            writeln!(
                out,
                "}}\n\nattributes #{group} = {{ nounwind \"neverc-callconv\"=\"{}\" }}",
                case.spec
            )
            .unwrap();
        }
        out
    }

    /// The callers of the outgoing cases written in IR, with plain declarations of their plan callees, to
    /// append to clang's module: each calls its callee with its markers and stores what it returns into
    /// `neverc_ret`.
    pub fn outgoing_ir(cases: &[Case], opaque: bool) -> String {
        let mut out = String::new();
        for case in cases.iter().filter(|case| case.ir) {
            let returned = ir_type(case.returned);
            let types: Vec<String> = case.parameters.iter().map(|ty| ty.ir().unwrap()).collect();
            let arguments: Vec<String> = case
                .parameters
                .iter()
                .zip(&case.arguments)
                .map(|(ty, bytes)| format!("{} {}", ty.ir().unwrap(), ir_value(*ty, bytes)))
                .collect();
            writeln!(out, "\ndeclare {returned} @{}({})", case.name, types.join(", ")).unwrap();
            writeln!(out, "\ndefine void @t_{}() {{", case.name).unwrap();
            if case.returned.is_some() {
                let address = ir_address("neverc_ret", 0, &returned, opaque);
                writeln!(
                    out,
                    "  %r = call {returned} @{}({})\n  store {returned} %r, {address}, align 1",
                    case.name,
                    arguments.join(", ")
                )
                .unwrap();
            } else {
                writeln!(out, "  call void @{}({})", case.name, arguments.join(", ")).unwrap();
            }
            out.push_str("  ret void\n}\n");
        }
        out
    }

    const MAIN_PRELUDE: &str = r#"#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

unsigned char neverc_record[RECORD_BYTES] __attribute__((aligned(16)));
unsigned char neverc_out[DUMP_BYTES] __attribute__((aligned(16)));
unsigned char neverc_seen[SEEN_BYTES] __attribute__((aligned(16)));
unsigned char neverc_ret[RETURN_BYTES] __attribute__((aligned(16)));
unsigned long neverc_saved_sp;
extern unsigned char nc_csr[];

static const char *const register_names[] = {REGISTER_NAMES};
static int failures, checks, reported = -1, current = -1;
static const char *current_description = "";

static void hex(const void *bytes, unsigned length) {
  for (unsigned at = 0; at < length; at++) printf(" %02x", ((const unsigned char *)bytes)[at]);
}

static void fail(int k, const char *description, const char *what) {
  failures++;
  if (failures > 200) return;
  if (reported != k) {
    printf("case %d: %s\n", k, description);
    reported = k;
  }
  printf("  %s:", what);
}

static void chk(int k, const char *description, const char *what, const void *actual, const void *expected,
                unsigned length) {
  checks++;
  if (memcmp(actual, expected, length) == 0) return;
  fail(k, description, what);
  if (failures > 200) return;
  printf(" expected");
  hex(expected, length);
  printf(", got");
  hex(actual, length);
  printf("\n");
}

/* Checks the registers `saved` lists (pairs of a register index and a byte count) in two 16-byte-per-register
   dumps. */
static void chk_saved(int k, const char *description, const char *what, const unsigned char *after,
                      const unsigned char *before, const unsigned short *saved, unsigned count) {
  for (unsigned at = 0; at < count; at++) {
    unsigned r = saved[2 * at], length = saved[2 * at + 1];
    char label[160];
    snprintf(label, sizeof label, "%s %s (%u bytes)", what, register_names[r], length);
    chk(k, description, label, after + 16 * r, before + 16 * r, length);
  }
}

static void chk_aligned(int k, const char *description, const char *what, const void *address, unsigned long bias) {
  unsigned long value;
  checks++;
  memcpy(&value, address, 8);
  if ((value + bias) % 16 == 0) return;
  fail(k, description, what);
  if (failures <= 200) printf(" 0x%lx is not 16-byte aligned (with a bias of %lu)\n", value, bias);
}

static void start(int k, const char *description) {
  current = k;
  current_description = description;
  memset(neverc_record, 0xee, sizeof neverc_record);
  memset(neverc_out, 0xee, sizeof neverc_out);
  memset(neverc_seen, 0xee, sizeof neverc_seen);
  memset(neverc_ret, 0xee, sizeof neverc_ret);
}

static void crashed(int signal) {
  char message[512];
  int length = snprintf(message, sizeof message, "signal %d in case %d: %s\n", signal, current, current_description);
  if (length > 0) write(1, message, (size_t)length < sizeof message ? (size_t)length : sizeof message - 1);
  _exit(3);
}

static char alternate_stack[65536];

static void catch_crashes(void) {
  stack_t stack;
  struct sigaction action;
  memset(&stack, 0, sizeof stack);
  stack.ss_sp = alternate_stack;
  stack.ss_size = sizeof alternate_stack;
  sigaltstack(&stack, 0);
  memset(&action, 0, sizeof action);
  action.sa_handler = crashed;
  action.sa_flags = SA_ONSTACK;
  sigaction(SIGSEGV, &action, 0);
  sigaction(SIGBUS, &action, 0);
  sigaction(SIGILL, &action, 0);
  sigaction(SIGFPE, &action, 0);
  sigaction(SIGTRAP, &action, 0);
}
"#;

    /// The checks of one case: calls of `chk` and `chk_aligned` in the body of its C function.
    struct CaseChecks {
        k: usize,
        body: String,
    }

    impl CaseChecks {
        /// `length` bytes at `actual` must be those at `expected` (C expressions).
        fn bytes(&mut self, what: &str, actual: String, expected: String, length: usize) {
            writeln!(
                self.body,
                "  chk({}, d, {}, {actual}, {expected}, {length});",
                self.k,
                c_string(what)
            )
            .unwrap();
        }

        /// Each register of `saved` (at its width) must hold the same bytes in the dumps `after` and `before`.
        fn saved(&mut self, what: &str, after: &str, before: &str, saved: &[(usize, u32)]) {
            let list: Vec<String> = saved
                .iter()
                .map(|(register, width)| format!("{register}, {}", width / 8))
                .collect();
            let name = format!("saved{}", self.body.matches("chk_saved").count());
            writeln!(
                self.body,
                "  static const unsigned short {name}[] = {{{}}};\n  chk_saved({}, d, {}, {after}, {before}, {name}, {});",
                list.join(", "),
                self.k,
                c_string(what),
                saved.len()
            )
            .unwrap();
        }

        /// The 8-byte stack pointer at `actual` plus `bias` must be a multiple of 16.
        fn aligned(&mut self, what: &str, actual: String, bias: u64) {
            writeln!(
                self.body,
                "  chk_aligned({}, d, {}, {actual}, {bias});",
                self.k,
                c_string(what)
            )
            .unwrap();
        }
    }

    /// `main.c`: one C function per case that runs it and checks it, and `main`, which runs them all.
    pub struct MainWriter {
        source: String,
        cases: Vec<String>,
    }

    impl MainWriter {
        pub fn new(target: &TargetRecord) -> MainWriter {
            let names: Vec<String> = target.registers.iter().map(|record| c_string(record.name)).collect();
            let source = MAIN_PRELUDE
                .replace("REGISTER_NAMES", &names.join(", "))
                .replace("RECORD_BYTES", &RECORD_BYTES.to_string())
                .replace("DUMP_BYTES", &DUMP_BYTES.to_string())
                .replace("SEEN_BYTES", &SEEN_BYTES.to_string())
                .replace("RETURN_BYTES", &RETURN_BYTES.to_string());
            MainWriter {
                source,
                cases: Vec::new(),
            }
        }

        /// Adds the C function `function` that describes the case, runs `call` and makes the checks.
        fn add(&mut self, function: String, description: String, call: String, checks: CaseChecks) {
            writeln!(
                self.source,
                "static void {function}(void) {{\n  static const char d[] = {};\n  start({}, d);\n  {call}();\n{}}}",
                c_string(&description),
                checks.k,
                checks.body
            )
            .unwrap();
            self.cases.push(function);
        }

        /// The checks of an incoming case: what the C callee recorded, the return location(s) and the
        /// callee-saved registers in the caller's dump, the stack pointer.
        pub fn incoming(&mut self, target: &TargetRecord, planned: &Planned<'_>) {
            let case = planned.case;
            let k = case.index;
            writeln!(
                self.source,
                "void nc_call{k}(void);\nextern unsigned char nc_in{k}[], nc_sret{k}[];"
            )
            .unwrap();
            let mut checks = CaseChecks { k, body: String::new() };
            for ((offset, length), (index, ty)) in record_offsets(case).iter().zip(case.parameters.iter().enumerate()) {
                let argument = planned
                    .arguments
                    .iter()
                    .find(|argument| argument.parameter == Some(index))
                    .unwrap();
                let places: Vec<String> = argument
                    .pieces
                    .iter()
                    .map(|piece| piece.place.describe(target))
                    .collect();
                let what = format!(
                    "argument {index} ({}, {:?} in {}) as the callee received it",
                    ty.spelling(),
                    argument.role,
                    places.join(" + ")
                );
                let expected = ty.widened(&case.arguments[index]);
                assert_eq!(expected.len(), *length);
                checks.bytes(&what, format!("neverc_record + {offset}"), c_bytes(&expected), *length);
            }
            for piece in &planned.returned {
                let Place::Register { register, .. } = piece.place else {
                    unreachable!("plan_case refuses returns on the stack")
                };
                let (start, end) = (piece.offset as usize, (piece.offset + piece.size) as usize);
                checks.bytes(
                    &format!("return value bytes {start}..{end} in {}", piece.place.describe(target)),
                    format!("neverc_out + {}", register * 16),
                    c_bytes(&case.return_content[start..end]),
                    end - start,
                );
            }
            if planned.sret {
                checks.bytes(
                    "the struct returned through the sret pointer",
                    format!("nc_sret{k}"),
                    c_bytes(&case.return_content),
                    case.return_content.len(),
                );
            }
            checks.saved(
                "after the call, callee-saved",
                "neverc_out",
                &format!("nc_in{k}"),
                &planned.kept(target),
            );
            checks.bytes(
                "the stack pointer after the call",
                format!("neverc_out + {}", target.registers.len() * 16),
                "&neverc_saved_sp".into(),
                8,
            );
            let description = format!("f{k} (incoming): {}", planned.description());
            self.add(format!("incoming{k}"), description, format!("nc_call{k}"), checks);
        }

        /// The checks of an outgoing case: what the plan callee saw where the plan says, the return value as
        /// C received it, the stack alignment at the plan callee's entry, the C side's callee-saved
        /// registers in the wrapper's dump and its stack pointer.
        pub fn outgoing(&mut self, target: &TargetRecord, planned: &Planned<'_>, bias: u64) {
            let case = planned.case;
            let k = case.index;
            let layout = SeenLayout::of(planned, target.registers.len());
            writeln!(self.source, "void nc_wrap{k}(void);").unwrap();
            let mut checks = CaseChecks { k, body: String::new() };
            for (index, argument) in planned.arguments.iter().enumerate() {
                let what = |place: &Place| {
                    format!(
                        "argument {index} ({}, {:?}) in {} as the plan callee saw it",
                        argument.ty.spelling(),
                        argument.role,
                        place.describe(target)
                    )
                };
                match argument.role {
                    Role::Content => {
                        for piece in &argument.pieces {
                            let start = piece.offset as usize;
                            let end = (start + piece.size as usize).min(argument.content.len());
                            let at = match piece.place {
                                Place::Register { register, .. } => register * 16,
                                Place::Stack { offset, .. } => layout.stack + offset as usize,
                            };
                            checks.bytes(
                                &what(&piece.place),
                                format!("neverc_seen + {at}"),
                                c_bytes(&argument.content[start..end]),
                                end - start,
                            );
                        }
                    }
                    Role::Address => {
                        let at = layout.objects[index].unwrap();
                        checks.bytes(
                            &format!("{} (the object it points at)", what(&argument.pieces[0].place)),
                            format!("neverc_seen + {at}"),
                            c_bytes(&argument.content),
                            argument.content.len(),
                        );
                    }
                    // What the callee writes through it is the return value, checked below.
                    Role::Sret => {}
                }
            }
            if let Some(ty) = case.returned {
                let widened = ty.widened(&case.return_content);
                checks.bytes(
                    &format!("the return value ({}) as the C caller received it", ty.spelling()),
                    "neverc_ret".into(),
                    c_bytes(&widened),
                    widened.len(),
                );
                if ty.narrow().is_some() {
                    checks.bytes(
                        &format!("the return value ({}) as the C caller widened it to int", ty.spelling()),
                        "neverc_ret + 8".into(),
                        c_bytes(&widened[..4]),
                        4,
                    );
                }
            }
            checks.aligned(
                "the stack pointer at the plan callee's entry",
                format!("neverc_seen + {}", layout.stack_pointer),
                bias,
            );
            let standard: Vec<(usize, u32)> = target
                .callee_saved
                .iter()
                .map(|view| (view.register, view.width))
                .collect();
            checks.saved("the C caller's callee-saved", "neverc_out", "nc_csr", &standard);
            let stack_pointer = target.registers.len() * 16;
            checks.bytes(
                "the stack pointer after the call",
                format!("neverc_out + {stack_pointer}"),
                format!("neverc_out + {}", stack_pointer + 8),
                8,
            );
            let description = format!("g{k} (outgoing): {}", planned.description());
            self.add(format!("outgoing{k}"), description, format!("nc_wrap{k}"), checks);
        }

        pub fn finish(mut self) -> String {
            self.source
                .push_str("int main(void) {\n  setvbuf(stdout, 0, _IOLBF, 0);\n  catch_crashes();\n");
            for case in &self.cases {
                writeln!(self.source, "  {case}();").unwrap();
            }
            writeln!(
                self.source,
                "  printf(\"%d cases, %d checks, %d failures\\n\", {}, checks, failures);\n  return failures != 0;\n}}",
                self.cases.len()
            )
            .unwrap();
            self.source
        }
    }
}

/// One target's harness: the assembly written by hand for it, and how its programs are built and run.
trait Isa {
    /// The target's name in the bundled tables.
    fn name(&self) -> &'static str;
    /// Arguments that make clang-14 compile for the target.
    fn clang_target(&self) -> &'static [&'static str];
    /// Arguments llc-14 needs besides the module's triple (the extensions its module-level attributes omit).
    fn llc_target(&self) -> &'static [&'static str];
    /// The C types the generator picks parameters and returns from.
    fn menus(&self) -> Menus;
    /// How clang passes a struct of the menus on the target.
    fn passing(&self, aggregate: Aggregate) -> Passing;
    /// Whether the incoming module is compiled with opaque pointers (and the outgoing one with typed ones),
    /// so that each target sees both.
    fn opaque_incoming(&self) -> bool;
    /// The tools the target's run needs besides clang-14 and llc-14.
    fn tools(&self) -> &'static [&'static str];
    /// What makes the stack pointer at a function's entry a multiple of 16 when added (8 on x86-64, for the
    /// return address the call pushed).
    fn entry_bias(&self) -> u64;
    /// The registers the harness loads with markers and dumps.
    fn loaded(&self, target: &TargetRecord) -> Vec<usize>;
    /// The incoming caller `nc_call<k>` and its data (`nc_in<k>`, `nc_stack<k>`, objects, `nc_sret<k>`).
    fn incoming_caller(&self, context: &Context, planned: &Planned<'_>, rng: &mut Rng, out: &mut String);
    /// The plan callee `g<k>` of an outgoing case, its return data and its wrapper `nc_wrap<k>`.
    fn plan_callee(&self, context: &Context, planned: &Planned<'_>, rng: &mut Rng, out: &mut String);
    /// Builds the program from C and assembly files in the run's directory.
    fn build(&self, context: &Context, inputs: &[&str], program: &str);
    /// Runs the program.
    fn run(&self, context: &Context, program: &str) -> Output;
}

/// The x86-64 harness (AT&T syntax, System V).
mod x86_64 {
    use super::*;
    use generator::CType::*;

    pub struct X86_64;

    const PARAMETERS: &[CType] = &[
        Bool,
        SChar,
        UChar,
        Short,
        UShort,
        Int,
        Long,
        Pointer,
        Float,
        Double,
        Vector,
        Struct(Aggregate::S24),
        Struct(Aggregate::S33),
        Struct(Aggregate::V2F),
    ];
    const RETURNS: &[Option<CType>] = &[
        None,
        Some(Bool),
        Some(SChar),
        Some(UChar),
        Some(Short),
        Some(UShort),
        Some(Int),
        Some(Long),
        Some(Pointer),
        Some(Float),
        Some(Double),
        Some(Vector),
        Some(Struct(Aggregate::S24)),
        Some(Struct(Aggregate::S33)),
        Some(Struct(Aggregate::P16)),
        Some(Struct(Aggregate::D16)),
        Some(Struct(Aggregate::M16)),
        Some(Struct(Aggregate::V2F)),
    ];
    /// The scalars of the IR cases (not `half`, which LLVM 14 passes differently, `HalfAsI16`).
    const IR_SCALARS: &[CType] = &[Int, Long, Float, Double, Vector];
    /// The elements of their arrays (not `half` nor `i128`, `I128AsTwoI64`).
    const ELEMENTS: &[Element] = &[
        Element::I8,
        Element::I16,
        Element::I32,
        Element::I64,
        Element::Float,
        Element::Double,
        Element::V2F,
        Element::V4F,
    ];
    /// The System V callee-saved registers, which a hand-written caller saves and restores.
    const SAVED: [&str; 6] = ["rbp", "rbx", "r12", "r13", "r14", "r15"];

    /// Whether `register` is a general one (else a vector register).
    fn general(target: &TargetRecord, register: usize) -> bool {
        target
            .class_of(register)
            .is_some_and(|class| class.kind == RegisterClassKind::General)
    }

    /// The register's whole name.
    fn name(target: &TargetRecord, register: usize) -> &'static str {
        target.registers[register].name
    }

    /// Loads the whole of `register` from its 16-byte slot in the block at `symbol`.
    fn load(target: &TargetRecord, register: usize, symbol: &str, out: &mut String) {
        let op = if general(target, register) { "movq" } else { "movups" };
        writeln!(
            out,
            "\t{op} {symbol}+{}(%rip), %{}",
            register * 16,
            name(target, register)
        )
        .unwrap();
    }

    /// Stores the whole of `register` into its 16-byte slot in the block at `symbol`.
    fn store(target: &TargetRecord, register: usize, symbol: &str, out: &mut String) {
        let op = if general(target, register) { "movq" } else { "movups" };
        writeln!(
            out,
            "\t{op} %{}, {symbol}+{}(%rip)",
            name(target, register),
            register * 16
        )
        .unwrap();
    }

    /// Starts the global function `symbol`.
    fn function(symbol: &str, out: &mut String) {
        writeln!(
            out,
            "\t.text\n\t.globl {symbol}\n\t.type {symbol},@function\n\t.p2align 4\n{symbol}:"
        )
        .unwrap();
    }

    /// Saves the System V callee-saved registers, leaving the stack 16-byte aligned.
    fn push_saved(out: &mut String) {
        for register in SAVED {
            writeln!(out, "\tpushq %{register}").unwrap();
        }
        // Six pushes leave the stack 8 bytes off 16-byte alignment.
        out.push_str("\tsubq $8, %rsp\n");
    }

    /// Restores what `push_saved` saved and returns.
    fn pop_saved(out: &mut String) {
        out.push_str("\taddq $8, %rsp\n");
        for register in SAVED.iter().rev() {
            writeln!(out, "\tpopq %{register}").unwrap();
        }
        out.push_str("\tretq\n");
    }

    impl Isa for X86_64 {
        fn name(&self) -> &'static str {
            "x86_64"
        }

        fn clang_target(&self) -> &'static [&'static str] {
            &[]
        }

        fn llc_target(&self) -> &'static [&'static str] {
            &[]
        }

        fn menus(&self) -> Menus {
            Menus {
                parameters: PARAMETERS,
                returns: RETURNS,
                ir_scalars: IR_SCALARS,
                elements: ELEMENTS,
            }
        }

        fn passing(&self, aggregate: Aggregate) -> Passing {
            if aggregate.in_memory() {
                Passing::ByVal
            } else {
                Passing::Value
            }
        }

        fn opaque_incoming(&self) -> bool {
            false
        }

        fn tools(&self) -> &'static [&'static str] {
            &[]
        }

        fn entry_bias(&self) -> u64 {
            8
        }

        fn loaded(&self, target: &TargetRecord) -> Vec<usize> {
            (0..target.registers.len())
                .filter(|register| target.registers[*register].name != "rsp")
                .collect()
        }

        fn incoming_caller(&self, context: &Context, planned: &Planned<'_>, rng: &mut Rng, out: &mut String) {
            let target = context.target;
            let k = planned.case.index;
            let (registers, stack, objects) = incoming_images(context, planned, rng);
            let area = stack.bytes.len();
            function(&format!("nc_call{k}"), out);
            push_saved(out);
            // The stack arguments start at the stack pointer of the call: the callee sees them above its
            // return address. `neverc_saved_sp` keeps the stack pointer of the call.
            writeln!(out, "\tsubq ${area}, %rsp\n\tmovq %rsp, neverc_saved_sp(%rip)").unwrap();
            for word in (0..area).step_by(8) {
                writeln!(out, "\tmovq nc_stack{k}+{word}(%rip), %rax\n\tmovq %rax, {word}(%rsp)").unwrap();
            }
            // Every register gets its marker; no register is needed afterwards, since data is addressed
            // relative to the instruction pointer.
            let loaded = self.loaded(target);
            for register in &loaded {
                load(target, *register, &format!("nc_in{k}"), out);
            }
            writeln!(out, "\tcallq f{k}").unwrap();
            for register in &loaded {
                store(target, *register, "neverc_out", out);
            }
            writeln!(
                out,
                "\tmovq %rsp, neverc_out+{}(%rip)\n\tmovq neverc_saved_sp(%rip), %rsp\n\taddq ${area}, %rsp",
                target.registers.len() * 16
            )
            .unwrap();
            pop_saved(out);
            out.push_str("\t.data\n");
            registers.emit(&format!("nc_in{k}"), out);
            stack.emit(&format!("nc_stack{k}"), out);
            let mut objects = objects.into_iter();
            for (index, argument) in planned.arguments.iter().enumerate() {
                if argument.role == Role::Address {
                    objects.next().unwrap().emit(&format!("nc_obj{k}_{index}"), out);
                }
            }
            let sret = Image {
                bytes: vec![0xee; planned.case.return_content.len().max(8).next_multiple_of(8)],
                addresses: Vec::new(),
            };
            sret.emit(&format!("nc_sret{k}"), out);
        }

        fn plan_callee(&self, context: &Context, planned: &Planned<'_>, rng: &mut Rng, out: &mut String) {
            let target = context.target;
            let k = planned.case.index;
            let layout = SeenLayout::of(planned, target.registers.len());
            let loaded = self.loaded(target);
            let kept: Vec<usize> = planned.kept(target).iter().map(|(register, _)| *register).collect();
            let free: Vec<usize> = loaded
                .iter()
                .copied()
                .filter(|register| general(target, *register) && !kept.contains(register))
                .collect();
            let [pointer, byte, ..] = free[..] else {
                context.fail(format!("g{k}: fewer than two registers to work with"))
            };
            let (pointer, byte8) = (name(target, pointer), register_view_name(target, byte, 8));
            let byte32 = register_view_name(target, byte, 32);
            // First everything as it arrived: the registers, the stack pointer, the stack arguments (above
            // the return address), the objects pointed at; then the return value through an `sret` pointer.
            function(&format!("g{k}"), out);
            for register in &loaded {
                store(target, *register, "neverc_seen", out);
            }
            writeln!(out, "\tmovq %rsp, neverc_seen+{}(%rip)", layout.stack_pointer).unwrap();
            for word in (0..planned.stack_bytes.next_multiple_of(8)).step_by(8) {
                writeln!(
                    out,
                    "\tmovq {}(%rsp), %{pointer}\n\tmovq %{pointer}, neverc_seen+{}(%rip)",
                    8 + word,
                    layout.stack + word as usize
                )
                .unwrap();
            }
            // The pointer an `Address` or `sret` argument arrives in, into `pointer`.
            let fetch = |argument: &Argument, out: &mut String| match argument.pieces[0].place {
                Place::Register { register, .. } => {
                    writeln!(out, "\tmovq neverc_seen+{}(%rip), %{pointer}", register * 16).unwrap()
                }
                Place::Stack { offset, .. } => writeln!(out, "\tmovq {}(%rsp), %{pointer}", 8 + offset).unwrap(),
            };
            for (index, argument) in planned.arguments.iter().enumerate() {
                match argument.role {
                    Role::Content => {}
                    Role::Address => {
                        fetch(argument, out);
                        let at = layout.objects[index].unwrap();
                        for offset in 0..argument.content.len() {
                            writeln!(
                                out,
                                "\tmovzbl {offset}(%{pointer}), %{byte32}\n\tmovb %{byte8}, neverc_seen+{}(%rip)",
                                at + offset
                            )
                            .unwrap();
                        }
                    }
                    Role::Sret => {
                        fetch(argument, out);
                        for (offset, value) in argument.content.iter().enumerate() {
                            writeln!(out, "\tmovb ${value}, {offset}(%{pointer})").unwrap();
                        }
                    }
                }
            }
            // Then every register the plan callee need not keep is clobbered, and the return registers get
            // the return value's bytes (and junk above them).
            for register in loaded.iter().filter(|register| !kept.contains(register)) {
                load(target, *register, "nc_junk", out);
            }
            let mut returned = Image::junk(rng, target.registers.len() * 16);
            for piece in &planned.returned {
                let Place::Register { register, .. } = piece.place else {
                    unreachable!("plan_case refuses returns on the stack")
                };
                let start = piece.offset as usize;
                returned.put(
                    register * 16,
                    &planned.case.return_content[start..start + piece.size as usize],
                );
                load(target, register, &format!("nc_retv{k}"), out);
            }
            out.push_str("\tretq\n");

            // The wrapper: markers in the C side's callee-saved registers around the C caller.
            function(&format!("nc_wrap{k}"), out);
            push_saved(out);
            let standard: Vec<usize> = target.callee_saved.iter().map(|view| view.register).collect();
            for register in &standard {
                load(target, *register, "nc_csr", out);
            }
            writeln!(
                out,
                "\tmovq %rsp, neverc_out+{}(%rip)\n\tcallq t_g{k}",
                target.registers.len() * 16 + 8
            )
            .unwrap();
            for register in &standard {
                store(target, *register, "neverc_out", out);
            }
            writeln!(out, "\tmovq %rsp, neverc_out+{}(%rip)", target.registers.len() * 16).unwrap();
            pop_saved(out);
            out.push_str("\t.data\n");
            returned.emit(&format!("nc_retv{k}"), out);
        }

        fn build(&self, context: &Context, inputs: &[&str], program: &str) {
            let mut args = vec!["-O0", "-w"];
            args.extend_from_slice(inputs);
            args.extend_from_slice(&["-o", program]);
            tool(context, "clang-14", &args);
        }

        fn run(&self, context: &Context, program: &str) -> Output {
            let path = context.dir.join(program);
            run_bounded(&path, &context.dir, &[], Bounds::default())
        }
    }
}

/// The AArch64 harness (LLVM's and GNU as's syntax, AAPCS64), run under qemu-aarch64.
mod aarch64 {
    use super::*;
    use generator::CType::*;

    pub struct Aarch64;

    const PARAMETERS: &[CType] = &[
        Bool,
        SChar,
        UChar,
        Short,
        UShort,
        Int,
        Long,
        Pointer,
        Half,
        Float,
        Double,
        Vector,
        Struct(Aggregate::S24),
        Struct(Aggregate::S33),
        Struct(Aggregate::P16),
        Struct(Aggregate::D16),
        Struct(Aggregate::F12),
    ];
    const RETURNS: &[Option<CType>] = &[
        None,
        Some(Bool),
        Some(SChar),
        Some(UChar),
        Some(Short),
        Some(UShort),
        Some(Int),
        Some(Long),
        Some(Pointer),
        Some(Half),
        Some(Float),
        Some(Double),
        Some(Vector),
        Some(Struct(Aggregate::S24)),
        Some(Struct(Aggregate::S33)),
        Some(Struct(Aggregate::P16)),
        Some(Struct(Aggregate::D16)),
        Some(Struct(Aggregate::F12)),
    ];
    /// The scalars of the IR cases.
    const IR_SCALARS: &[CType] = &[Int, Long, Half, Float, Double, Vector];
    /// The elements of their arrays: every kind of block and of element passed on its own.
    const ELEMENTS: &[Element] = &[
        Element::I8,
        Element::I16,
        Element::I32,
        Element::I64,
        Element::I128,
        Element::Half,
        Element::Float,
        Element::Double,
        Element::V2F,
        Element::V4F,
    ];

    /// Whether `register` is a general one (else a vector register).
    fn general(target: &TargetRecord, register: usize) -> bool {
        target
            .class_of(register)
            .is_some_and(|class| class.kind == RegisterClassKind::General)
    }

    /// `x9`, or `q3` for the whole of `v3`.
    fn name(target: &TargetRecord, register: usize) -> String {
        let canonical = target.registers[register].name;
        if general(target, register) {
            canonical.to_string()
        } else {
            format!("q{}", &canonical[1..])
        }
    }

    /// The index of the register `name`.
    fn index(target: &TargetRecord, name: &str) -> usize {
        target.resolve_register(name).unwrap().register
    }

    /// Starts the global function `symbol`.
    fn function(symbol: &str, out: &mut String) {
        writeln!(
            out,
            "\t.text\n\t.globl {symbol}\n\t.type {symbol},%function\n\t.p2align 2\n{symbol}:"
        )
        .unwrap();
    }

    /// Puts the address of `symbol` into `register`.
    fn address(register: &str, symbol: &str, out: &mut String) {
        writeln!(
            out,
            "\tadrp {register}, {symbol}\n\tadd {register}, {register}, :lo12:{symbol}"
        )
        .unwrap();
    }

    /// Saves x29, x30 and the AAPCS64 callee-saved registers (176 bytes).
    fn save(out: &mut String) {
        out.push_str("\tstp x29, x30, [sp, #-176]!\n");
        for (pair, at) in [(19, 16), (21, 32), (23, 48), (25, 64), (27, 80)] {
            writeln!(out, "\tstp x{pair}, x{}, [sp, #{at}]", pair + 1).unwrap();
        }
        for (pair, at) in [(8, 96), (10, 112), (12, 128), (14, 144)] {
            writeln!(out, "\tstp d{pair}, d{}, [sp, #{at}]", pair + 1).unwrap();
        }
    }

    /// Restores what `save` saved and returns.
    fn restore(out: &mut String) {
        for (pair, at) in [(19, 16), (21, 32), (23, 48), (25, 64), (27, 80)] {
            writeln!(out, "\tldp x{pair}, x{}, [sp, #{at}]", pair + 1).unwrap();
        }
        for (pair, at) in [(8, 96), (10, 112), (12, 128), (14, 144)] {
            writeln!(out, "\tldp d{pair}, d{}, [sp, #{at}]", pair + 1).unwrap();
        }
        out.push_str("\tldp x29, x30, [sp], #176\n\tret\n");
    }

    impl Isa for Aarch64 {
        fn name(&self) -> &'static str {
            "aarch64"
        }

        fn clang_target(&self) -> &'static [&'static str] {
            &["--target=aarch64-linux-gnu"]
        }

        fn llc_target(&self) -> &'static [&'static str] {
            &[]
        }

        fn menus(&self) -> Menus {
            Menus {
                parameters: PARAMETERS,
                returns: RETURNS,
                ir_scalars: IR_SCALARS,
                elements: ELEMENTS,
            }
        }

        fn passing(&self, aggregate: Aggregate) -> Passing {
            if aggregate.in_memory() {
                Passing::ByReference
            } else {
                Passing::Value
            }
        }

        fn opaque_incoming(&self) -> bool {
            true
        }

        fn tools(&self) -> &'static [&'static str] {
            &["aarch64-linux-gnu-gcc", "qemu-aarch64"]
        }

        fn entry_bias(&self) -> u64 {
            0
        }

        fn loaded(&self, target: &TargetRecord) -> Vec<usize> {
            let mut loaded: Vec<usize> = (0..=28).map(|n| index(target, &format!("x{n}"))).collect();
            loaded.extend((0..32).map(|n| index(target, &format!("v{n}"))));
            loaded
        }

        fn incoming_caller(&self, context: &Context, planned: &Planned<'_>, rng: &mut Rng, out: &mut String) {
            let target = context.target;
            let k = planned.case.index;
            let (registers, stack, objects) = incoming_images(context, planned, rng);
            let area = stack.bytes.len();
            let loaded = self.loaded(target);
            let x16 = index(target, "x16");
            function(&format!("nc_call{k}"), out);
            save(out);
            // The stack arguments start at the stack pointer of the call, which `neverc_saved_sp` keeps.
            writeln!(out, "\tsub sp, sp, #{area}\n\tmov x17, sp").unwrap();
            out.push_str("\tadrp x16, neverc_saved_sp\n\tstr x17, [x16, :lo12:neverc_saved_sp]\n");
            address("x16", &format!("nc_stack{k}"), out);
            for word in (0..area).step_by(8) {
                writeln!(out, "\tldr x17, [x16, #{word}]\n\tstr x17, [sp, #{word}]").unwrap();
            }
            // Every register gets its marker from the block x16 points at, x16 itself last.
            address("x16", &format!("nc_in{k}"), out);
            for register in loaded.iter().filter(|register| **register != x16) {
                writeln!(out, "\tldr {}, [x16, #{}]", name(target, *register), register * 16).unwrap();
            }
            writeln!(out, "\tldr x16, [x16, #{}]\n\tbl f{k}", x16 * 16).unwrap();
            // The dump's base is a register whose value after the call nobody checks.
            let checked: Vec<usize> = planned
                .kept(target)
                .iter()
                .map(|(register, _)| *register)
                .chain(planned.return_registers())
                .collect();
            let base = loaded
                .iter()
                .copied()
                .find(|register| general(target, *register) && !checked.contains(register))
                .unwrap_or_else(|| context.fail(format!("nc_call{k}: every general register is checked")));
            let base_name = name(target, base);
            address(&base_name, "neverc_out", out);
            for register in loaded.iter().filter(|register| **register != base) {
                writeln!(
                    out,
                    "\tstr {}, [{base_name}, #{}]",
                    name(target, *register),
                    register * 16
                )
                .unwrap();
            }
            let other = if base == x16 { "x17" } else { "x16" };
            writeln!(
                out,
                "\tmov {other}, sp\n\tstr {other}, [{base_name}, #{}]",
                target.registers.len() * 16
            )
            .unwrap();
            writeln!(
                out,
                "\tadrp x16, neverc_saved_sp\n\tldr x16, [x16, :lo12:neverc_saved_sp]\n\tadd sp, x16, #{area}"
            )
            .unwrap();
            restore(out);
            out.push_str("\t.data\n");
            registers.emit(&format!("nc_in{k}"), out);
            stack.emit(&format!("nc_stack{k}"), out);
            let mut objects = objects.into_iter();
            for (index, argument) in planned.arguments.iter().enumerate() {
                if argument.role == Role::Address {
                    objects.next().unwrap().emit(&format!("nc_obj{k}_{index}"), out);
                }
            }
            let sret = Image {
                bytes: vec![0xee; planned.case.return_content.len().max(8).next_multiple_of(8)],
                addresses: Vec::new(),
            };
            sret.emit(&format!("nc_sret{k}"), out);
        }

        fn plan_callee(&self, context: &Context, planned: &Planned<'_>, rng: &mut Rng, out: &mut String) {
            let target = context.target;
            let k = planned.case.index;
            let layout = SeenLayout::of(planned, target.registers.len());
            let loaded = self.loaded(target);
            let (x15, x16, x17) = (index(target, "x15"), index(target, "x16"), index(target, "x17"));
            let kept: Vec<usize> = planned.kept(target).iter().map(|(register, _)| *register).collect();
            function(&format!("g{k}"), out);
            // x15, x16 and x17 are set aside so that they can be the dump's base and carry data.
            out.push_str("\tsub sp, sp, #48\n\tstp x15, x16, [sp]\n\tstr x17, [sp, #16]\n");
            address("x16", "neverc_seen", out);
            for register in loaded.iter().filter(|register| ![x15, x16, x17].contains(register)) {
                writeln!(out, "\tstr {}, [x16, #{}]", name(target, *register), register * 16).unwrap();
            }
            for (register, at) in [(x15, 0), (x16, 8), (x17, 16)] {
                writeln!(out, "\tldr x17, [sp, #{at}]\n\tstr x17, [x16, #{}]", register * 16).unwrap();
            }
            writeln!(out, "\tadd x17, sp, #48\n\tstr x17, [x16, #{}]", layout.stack_pointer).unwrap();
            for word in (0..planned.stack_bytes.next_multiple_of(8)).step_by(8) {
                writeln!(
                    out,
                    "\tldr x17, [sp, #{}]\n\tstr x17, [x16, #{}]",
                    48 + word,
                    layout.stack + word as usize
                )
                .unwrap();
            }
            // The pointer an `Address` or `sret` argument arrives in, into x17.
            let fetch = |argument: &Argument, out: &mut String| match argument.pieces[0].place {
                Place::Register { register, .. } => writeln!(out, "\tldr x17, [x16, #{}]", register * 16).unwrap(),
                Place::Stack { offset, .. } => writeln!(out, "\tldr x17, [sp, #{}]", 48 + offset).unwrap(),
            };
            for (index, argument) in planned.arguments.iter().enumerate() {
                if argument.role == Role::Address {
                    fetch(argument, out);
                    let at = layout.objects[index].unwrap();
                    for offset in 0..argument.content.len() {
                        writeln!(out, "\tldrb w15, [x17, #{offset}]\n\tstrb w15, [x16, #{}]", at + offset).unwrap();
                    }
                }
            }
            if let Some(argument) = planned.arguments.iter().find(|argument| argument.role == Role::Sret) {
                fetch(argument, out);
                address("x16", &format!("nc_sretv{k}"), out);
                for offset in 0..argument.content.len() {
                    writeln!(out, "\tldrb w15, [x16, #{offset}]\n\tstrb w15, [x17, #{offset}]").unwrap();
                }
            }
            out.push_str("\tldp x15, x16, [sp]\n\tldr x17, [sp, #16]\n\tadd sp, sp, #48\n");
            // Then every register the plan callee need not keep is clobbered through a base register that is
            // one of them, and the return registers get the return value's bytes (and junk above them).
            let returns = planned.return_registers();
            let Some(base) = loaded
                .iter()
                .copied()
                .find(|register| general(target, *register) && !kept.contains(register))
            else {
                context.fail(format!("g{k}: no register to work with"))
            };
            let base_name = name(target, base);
            address(&base_name, "nc_junk", out);
            for register in loaded
                .iter()
                .filter(|register| !kept.contains(register) && **register != base)
            {
                writeln!(
                    out,
                    "\tldr {}, [{base_name}, #{}]",
                    name(target, *register),
                    register * 16
                )
                .unwrap();
            }
            let mut returned = Image::junk(rng, target.registers.len() * 16);
            address(&base_name, &format!("nc_retv{k}"), out);
            for piece in &planned.returned {
                let Place::Register { register, .. } = piece.place else {
                    unreachable!("plan_case refuses returns on the stack")
                };
                let start = piece.offset as usize;
                returned.put(
                    register * 16,
                    &planned.case.return_content[start..start + piece.size as usize],
                );
            }
            for register in returns.iter().filter(|register| **register != base) {
                writeln!(
                    out,
                    "\tldr {}, [{base_name}, #{}]",
                    name(target, *register),
                    register * 16
                )
                .unwrap();
            }
            // The base last: its return value, or junk when it returns nothing.
            writeln!(out, "\tldr {base_name}, [{base_name}, #{}]", base * 16).unwrap();
            out.push_str("\tret\n");

            // The wrapper: markers in the C side's callee-saved registers around the C caller.
            function(&format!("nc_wrap{k}"), out);
            save(out);
            let standard: Vec<(usize, u32)> = target
                .callee_saved
                .iter()
                .map(|view| (view.register, view.width))
                .collect();
            address("x16", "nc_csr", out);
            for (register, width) in &standard {
                let view = register_view_name(target, *register, *width);
                writeln!(out, "\tldr {view}, [x16, #{}]", register * 16).unwrap();
            }
            address("x16", "neverc_out", out);
            writeln!(
                out,
                "\tmov x17, sp\n\tstr x17, [x16, #{}]\n\tbl t_g{k}",
                target.registers.len() * 16 + 8
            )
            .unwrap();
            address("x16", "neverc_out", out);
            for (register, width) in &standard {
                let view = register_view_name(target, *register, *width);
                writeln!(out, "\tstr {view}, [x16, #{}]", register * 16).unwrap();
            }
            writeln!(out, "\tmov x17, sp\n\tstr x17, [x16, #{}]", target.registers.len() * 16).unwrap();
            restore(out);
            out.push_str("\t.data\n");
            returned.emit(&format!("nc_retv{k}"), out);
            if planned.sret {
                let mut value = Image::junk(rng, planned.case.return_content.len());
                value.put(0, &planned.case.return_content);
                value.emit(&format!("nc_sretv{k}"), out);
            }
        }

        fn build(&self, context: &Context, inputs: &[&str], program: &str) {
            // clang-14 compiles the large `main.c` in less than half gcc's time; gcc links against glibc.
            let mut objects = Vec::new();
            for input in inputs {
                match input.strip_suffix(".c") {
                    Some(stem) => {
                        let object = format!("{stem}.o");
                        tool(
                            context,
                            "clang-14",
                            &["--target=aarch64-linux-gnu", "-O0", "-w", "-c", input, "-o", &object],
                        );
                        objects.push(object);
                    }
                    None => objects.push(input.to_string()),
                }
            }
            let mut args = vec!["-static", "-o", program];
            args.extend(objects.iter().map(String::as_str));
            tool(context, "aarch64-linux-gnu-gcc", &args);
        }

        fn run(&self, context: &Context, program: &str) -> Output {
            let bounds = Bounds {
                timeout: std::time::Duration::from_secs(120),
                ..Bounds::default()
            };
            run_bounded("qemu-aarch64", &context.dir, &[program], bounds)
        }
    }
}

/// The RISC-V harness (the assembly syntax LLVM and GNU as share, LP64D), run under qemu-riscv64.
mod riscv64 {
    use super::*;
    use generator::CType::*;

    pub struct Riscv64;

    /// clang passes `struct d16`, `struct v2f` and `struct m16` as two IR values each (the psABI's flattening
    /// into floating-point registers), which the generator's one-value-per-parameter model cannot follow, and
    /// `struct f12` as a `[2 x i64]` of 16 bytes holding its 12: those are left out.
    const PARAMETERS: &[CType] = &[
        Bool,
        SChar,
        UChar,
        Short,
        UShort,
        Int,
        Long,
        Pointer,
        Half,
        Float,
        Double,
        Vector,
        Struct(Aggregate::S24),
        Struct(Aggregate::S33),
        Struct(Aggregate::P16),
    ];
    const RETURNS: &[Option<CType>] = &[
        None,
        Some(Bool),
        Some(SChar),
        Some(UChar),
        Some(Short),
        Some(UShort),
        Some(Int),
        Some(Long),
        Some(Pointer),
        Some(Half),
        Some(Float),
        Some(Double),
        Some(Vector),
        Some(Struct(Aggregate::S24)),
        Some(Struct(Aggregate::S33)),
        Some(Struct(Aggregate::P16)),
        Some(Struct(Aggregate::D16)),
        Some(Struct(Aggregate::M16)),
        Some(Struct(Aggregate::V2F)),
    ];
    /// The scalars of the IR cases (not `<4 x float>`, which LLVM 14 splits into four `float`s where the
    /// declared [abi] passes its bytes in two general registers: a `standard_deviations` entry).
    const IR_SCALARS: &[CType] = &[Int, Long, Half, Float, Double];
    /// The elements of their arrays (not the vectors, as above).
    const ELEMENTS: &[Element] = &[
        Element::I8,
        Element::I16,
        Element::I32,
        Element::I64,
        Element::I128,
        Element::Half,
        Element::Float,
        Element::Double,
    ];
    /// The largest offset of a load or store (a signed 12-bit immediate).
    const MAX_IMMEDIATE: u64 = 2047;
    /// Bytes of the frame `save` makes: ra, s0-s11 and fs0-fs11.
    const SAVE_FRAME: u64 = 208;

    /// Whether `register` is a general one (else a floating-point register).
    fn general(target: &TargetRecord, register: usize) -> bool {
        target
            .class_of(register)
            .is_some_and(|class| class.kind == RegisterClassKind::General)
    }

    /// The register's name (its ABI name: `t0`, `fa0`).
    fn name(target: &TargetRecord, register: usize) -> &'static str {
        target.registers[register].name
    }

    /// The index of the register `name`.
    fn index(target: &TargetRecord, name: &str) -> usize {
        target.resolve_register(name).unwrap().register
    }

    /// The whole-register load or store of `register`.
    fn op(target: &TargetRecord, register: usize, store: bool) -> &'static str {
        match (general(target, register), store) {
            (true, false) => "ld",
            (true, true) => "sd",
            (false, false) => "fld",
            (false, true) => "fsd",
        }
    }

    /// `op register, offset(base)`; an offset beyond the immediate's reach goes through `temp`.
    fn access(op: &str, register: &str, base: &str, offset: u64, temp: &str, out: &mut String) {
        if offset <= MAX_IMMEDIATE {
            writeln!(out, "\t{op} {register}, {offset}({base})").unwrap();
        } else {
            assert!(temp != register && temp != base, "{temp} is the register or the base");
            writeln!(
                out,
                "\tli {temp}, {offset}\n\tadd {temp}, {temp}, {base}\n\t{op} {register}, 0({temp})"
            )
            .unwrap();
        }
    }

    /// Starts the global function `symbol`.
    fn function(symbol: &str, out: &mut String) {
        writeln!(
            out,
            "\t.text\n\t.globl {symbol}\n\t.type {symbol},@function\n\t.p2align 2\n{symbol}:"
        )
        .unwrap();
    }

    /// Saves ra and the LP64D callee-saved registers (`SAVE_FRAME` bytes).
    fn save(out: &mut String) {
        writeln!(out, "\taddi sp, sp, -{SAVE_FRAME}\n\tsd ra, 0(sp)").unwrap();
        for n in 0..12 {
            writeln!(out, "\tsd s{n}, {}(sp)\n\tfsd fs{n}, {}(sp)", 8 + 8 * n, 104 + 8 * n).unwrap();
        }
    }

    /// Restores what `save` saved and returns.
    fn restore(out: &mut String) {
        for n in 0..12 {
            writeln!(out, "\tld s{n}, {}(sp)\n\tfld fs{n}, {}(sp)", 8 + 8 * n, 104 + 8 * n).unwrap();
        }
        writeln!(out, "\tld ra, 0(sp)\n\taddi sp, sp, {SAVE_FRAME}\n\tret").unwrap();
    }

    impl Isa for Riscv64 {
        fn name(&self) -> &'static str {
            "riscv64"
        }

        fn clang_target(&self) -> &'static [&'static str] {
            &["--target=riscv64-linux-gnu"]
        }

        fn llc_target(&self) -> &'static [&'static str] {
            // The module-level attributes clang writes name rv64i only: without the F and D extensions llc-14
            // would tell the assembler so, which then refuses the LP64D adapters' `fld` and `fsd`.
            &["-mattr=+m,+a,+f,+d,+c"]
        }

        fn menus(&self) -> Menus {
            Menus {
                parameters: PARAMETERS,
                returns: RETURNS,
                ir_scalars: IR_SCALARS,
                elements: ELEMENTS,
            }
        }

        fn passing(&self, aggregate: Aggregate) -> Passing {
            if aggregate.in_memory() {
                Passing::ByReference
            } else {
                Passing::Value
            }
        }

        fn opaque_incoming(&self) -> bool {
            true
        }

        fn tools(&self) -> &'static [&'static str] {
            &["riscv64-linux-gnu-gcc", "qemu-riscv64"]
        }

        fn entry_bias(&self) -> u64 {
            0
        }

        /// Every register but zero, ra (which the harness's own calls overwrite), sp, gp (which relaxed code
        /// addresses globals from) and tp (the thread pointer).
        fn loaded(&self, target: &TargetRecord) -> Vec<usize> {
            (0..target.registers.len())
                .filter(|register| !["zero", "ra", "sp", "gp", "tp"].contains(&name(target, *register)))
                .collect()
        }

        fn incoming_caller(&self, context: &Context, planned: &Planned<'_>, rng: &mut Rng, out: &mut String) {
            let target = context.target;
            let k = planned.case.index;
            let (registers, stack, objects) = incoming_images(context, planned, rng);
            let area = stack.bytes.len();
            let loaded = self.loaded(target);
            let t0 = index(target, "t0");
            function(&format!("nc_call{k}"), out);
            save(out);
            // The stack arguments start at the stack pointer of the call, which `neverc_saved_sp` keeps.
            writeln!(out, "\tli t0, {area}\n\tsub sp, sp, t0").unwrap();
            out.push_str("\tlla t0, neverc_saved_sp\n\tsd sp, 0(t0)\n");
            writeln!(out, "\tlla t0, nc_stack{k}").unwrap();
            for word in (0..area as u64).step_by(8) {
                access("ld", "t1", "t0", word, "t2", out);
                access("sd", "t1", "sp", word, "t2", out);
            }
            // Every register gets its marker from the block t0 points at, t0 itself last.
            writeln!(out, "\tlla t0, nc_in{k}").unwrap();
            for register in loaded.iter().filter(|register| **register != t0) {
                writeln!(
                    out,
                    "\t{} {}, {}(t0)",
                    op(target, *register, false),
                    name(target, *register),
                    register * 16
                )
                .unwrap();
            }
            writeln!(out, "\tld t0, {}(t0)\n\tcall f{k}", t0 * 16).unwrap();
            // The dump's base is a register whose value after the call nobody checks.
            let checked: Vec<usize> = planned
                .kept(target)
                .iter()
                .map(|(register, _)| *register)
                .chain(planned.return_registers())
                .collect();
            let base = loaded
                .iter()
                .copied()
                .find(|register| general(target, *register) && !checked.contains(register))
                .unwrap_or_else(|| context.fail(format!("nc_call{k}: every general register is checked")));
            let base_name = name(target, base);
            writeln!(out, "\tlla {base_name}, neverc_out").unwrap();
            for register in loaded.iter().filter(|register| **register != base) {
                writeln!(
                    out,
                    "\t{} {}, {}({base_name})",
                    op(target, *register, true),
                    name(target, *register),
                    register * 16
                )
                .unwrap();
            }
            writeln!(out, "\tsd sp, {}({base_name})", target.registers.len() * 16).unwrap();
            writeln!(
                out,
                "\tlla t0, neverc_saved_sp\n\tld t0, 0(t0)\n\tli t1, {area}\n\tadd sp, t0, t1"
            )
            .unwrap();
            restore(out);
            out.push_str("\t.data\n");
            registers.emit(&format!("nc_in{k}"), out);
            stack.emit(&format!("nc_stack{k}"), out);
            let mut objects = objects.into_iter();
            for (index, argument) in planned.arguments.iter().enumerate() {
                if argument.role == Role::Address {
                    objects.next().unwrap().emit(&format!("nc_obj{k}_{index}"), out);
                }
            }
            let sret = Image {
                bytes: vec![0xee; planned.case.return_content.len().max(8).next_multiple_of(8)],
                addresses: Vec::new(),
            };
            sret.emit(&format!("nc_sret{k}"), out);
        }

        fn plan_callee(&self, context: &Context, planned: &Planned<'_>, rng: &mut Rng, out: &mut String) {
            let target = context.target;
            let k = planned.case.index;
            let layout = SeenLayout::of(planned, target.registers.len());
            let loaded = self.loaded(target);
            let set_aside: Vec<usize> = ["t0", "t1", "t2", "t3"]
                .iter()
                .map(|register| index(target, register))
                .collect();
            let kept: Vec<usize> = planned.kept(target).iter().map(|(register, _)| *register).collect();
            function(&format!("g{k}"), out);
            // t0-t3 are set aside so that they can be the dump's base and carry data; t1 points at
            // `neverc_seen`.
            out.push_str("\taddi sp, sp, -48\n\tsd t0, 0(sp)\n\tsd t1, 8(sp)\n\tsd t2, 16(sp)\n\tsd t3, 24(sp)\n");
            out.push_str("\tlla t1, neverc_seen\n");
            for register in loaded.iter().filter(|register| !set_aside.contains(register)) {
                writeln!(
                    out,
                    "\t{} {}, {}(t1)",
                    op(target, *register, true),
                    name(target, *register),
                    register * 16
                )
                .unwrap();
            }
            for (at, register) in set_aside.iter().enumerate() {
                writeln!(out, "\tld t2, {}(sp)\n\tsd t2, {}(t1)", 8 * at, register * 16).unwrap();
            }
            writeln!(out, "\taddi t2, sp, 48\n\tsd t2, {}(t1)", layout.stack_pointer).unwrap();
            for word in (0..planned.stack_bytes.next_multiple_of(8)).step_by(8) {
                access("ld", "t2", "sp", 48 + word, "t3", out);
                access("sd", "t2", "t1", layout.stack as u64 + word, "t3", out);
            }
            // The pointer an `Address` or `sret` argument arrives in, into t2.
            let fetch = |argument: &Argument, out: &mut String| match argument.pieces[0].place {
                Place::Register { register, .. } => writeln!(out, "\tld t2, {}(t1)", register * 16).unwrap(),
                Place::Stack { offset, .. } => access("ld", "t2", "sp", 48 + offset, "t3", out),
            };
            for (index, argument) in planned.arguments.iter().enumerate() {
                if argument.role == Role::Address {
                    fetch(argument, out);
                    let at = layout.objects[index].unwrap();
                    writeln!(out, "\tlla t0, neverc_seen+{at}").unwrap();
                    for offset in 0..argument.content.len() {
                        writeln!(out, "\tlbu t3, {offset}(t2)\n\tsb t3, {offset}(t0)").unwrap();
                    }
                }
            }
            if let Some(argument) = planned.arguments.iter().find(|argument| argument.role == Role::Sret) {
                fetch(argument, out);
                writeln!(out, "\tlla t0, nc_sretv{k}").unwrap();
                for offset in 0..argument.content.len() {
                    writeln!(out, "\tlbu t3, {offset}(t0)\n\tsb t3, {offset}(t2)").unwrap();
                }
            }
            out.push_str("\tld t0, 0(sp)\n\tld t1, 8(sp)\n\tld t2, 16(sp)\n\tld t3, 24(sp)\n\taddi sp, sp, 48\n");
            // Then every register the plan callee need not keep is clobbered through a base register that is
            // one of them, and the return registers get the return value's bytes (and junk above them).
            let returns = planned.return_registers();
            let Some(base) = loaded
                .iter()
                .copied()
                .find(|register| general(target, *register) && !kept.contains(register))
            else {
                context.fail(format!("g{k}: no register to work with"))
            };
            let base_name = name(target, base);
            writeln!(out, "\tlla {base_name}, nc_junk").unwrap();
            for register in loaded
                .iter()
                .filter(|register| !kept.contains(register) && **register != base)
            {
                writeln!(
                    out,
                    "\t{} {}, {}({base_name})",
                    op(target, *register, false),
                    name(target, *register),
                    register * 16
                )
                .unwrap();
            }
            let mut returned = Image::junk(rng, target.registers.len() * 16);
            writeln!(out, "\tlla {base_name}, nc_retv{k}").unwrap();
            for piece in &planned.returned {
                let Place::Register { register, .. } = piece.place else {
                    unreachable!("plan_case refuses returns on the stack")
                };
                let start = piece.offset as usize;
                returned.put(
                    register * 16,
                    &planned.case.return_content[start..start + piece.size as usize],
                );
            }
            for register in returns.iter().filter(|register| **register != base) {
                writeln!(
                    out,
                    "\t{} {}, {}({base_name})",
                    op(target, *register, false),
                    name(target, *register),
                    register * 16
                )
                .unwrap();
            }
            // The base last: its return value, or junk when it returns nothing.
            writeln!(out, "\tld {base_name}, {}({base_name})\n\tret", base * 16).unwrap();

            // The wrapper: markers in the C side's callee-saved registers around the C caller.
            function(&format!("nc_wrap{k}"), out);
            save(out);
            let standard: Vec<usize> = target.callee_saved.iter().map(|view| view.register).collect();
            out.push_str("\tlla t0, nc_csr\n");
            for register in &standard {
                writeln!(
                    out,
                    "\t{} {}, {}(t0)",
                    op(target, *register, false),
                    name(target, *register),
                    register * 16
                )
                .unwrap();
            }
            writeln!(
                out,
                "\tlla t0, neverc_out\n\tsd sp, {}(t0)\n\tcall t_g{k}",
                target.registers.len() * 16 + 8
            )
            .unwrap();
            out.push_str("\tlla t0, neverc_out\n");
            for register in &standard {
                writeln!(
                    out,
                    "\t{} {}, {}(t0)",
                    op(target, *register, true),
                    name(target, *register),
                    register * 16
                )
                .unwrap();
            }
            writeln!(out, "\tsd sp, {}(t0)", target.registers.len() * 16).unwrap();
            restore(out);
            out.push_str("\t.data\n");
            returned.emit(&format!("nc_retv{k}"), out);
            if planned.sret {
                let mut value = Image::junk(rng, planned.case.return_content.len());
                value.put(0, &planned.case.return_content);
                value.emit(&format!("nc_sretv{k}"), out);
            }
        }

        fn build(&self, context: &Context, inputs: &[&str], program: &str) {
            // clang-14 compiles the large `main.c` in less than half gcc's time; gcc links against glibc.
            let mut objects = Vec::new();
            for input in inputs {
                match input.strip_suffix(".c") {
                    Some(stem) => {
                        let object = format!("{stem}.o");
                        tool(
                            context,
                            "clang-14",
                            &["--target=riscv64-linux-gnu", "-O0", "-w", "-c", input, "-o", &object],
                        );
                        objects.push(object);
                    }
                    None => objects.push(input.to_string()),
                }
            }
            let mut args = vec!["-static", "-o", program];
            args.extend(objects.iter().map(String::as_str));
            tool(context, "riscv64-linux-gnu-gcc", &args);
        }

        fn run(&self, context: &Context, program: &str) -> Output {
            let bounds = Bounds {
                timeout: std::time::Duration::from_secs(120),
                ..Bounds::default()
            };
            run_bounded("qemu-riscv64", &context.dir, &[program], bounds)
        }
    }
}
