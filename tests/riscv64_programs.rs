#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Freestanding RISC-V (riscv64) static executables: objects built by riscv64-linux-gnu-gcc with no C library
//! (`start.s` sets gp to `__global_pointer$`, `rt.c` makes the system calls with `ecall` and points tp at a
//! copy of the PT_TLS image), linked by `neverc-spec link` and through the `ld` driver with `--no-relax`, run
//! under `qemu-riscv64`. Each must print what ld.bfd's build prints and exit as it does, with and without
//! `--gc-sections`, and with `--no-relax` what ld.bfd's `--no-relax` build prints. The oracles are
//! riscv64-linux-gnu-ld (ld.bfd) and the programs themselves: each prints `ok` or `FAIL` per check and exits
//! with the number of failures. The C programs call across three units, tail call, switch through a jump
//! table and address small data from gp; `free-far` calls across 1.5 MiB, which no `jal` reaches, and reads
//! back what the link made of each call site; the TLS programs use the local-exec, initial-exec and
//! general-dynamic models.
//!
//! The fixtures (`tests/fixtures/riscv64/build.sh`) are built once per run of this test binary.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use neverc_test_support::{LinkCases, read_text, repo, run_script, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

static FIXTURES: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// The built fixtures (on first use).
fn fixtures() -> &'static Path {
    let built = FIXTURES.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("riscv64-programs");
        run_script(&repo().join("tests/fixtures/riscv64/build.sh"), &out).map(|()| out)
    });
    match built {
        Ok(path) => path,
        Err(message) => panic!(
            "building the RISC-V fixtures failed (gcc-riscv64-linux-gnu and qemu-user are needed; scripts/test.sh \
             installs them): {message}"
        ),
    }
}

/// The cases, linked by neverc-spec.
fn cases() -> LinkCases<'static> {
    LinkCases {
        dir: fixtures(),
        linker: BIN,
    }
}

/// Runs a RISC-V `program` under qemu-riscv64 in its directory: (stdout, exit status).
fn run(program: &Path) -> (String, i32) {
    let result = Command::new("qemu-riscv64")
        .arg(program)
        .current_dir(program.parent().unwrap())
        .output()
        .expect("qemu-riscv64 runs (Debian: qemu-user)");
    (text(&result.stdout), result.status.code().unwrap_or(-1))
}

/// What ld.bfd's `--no-relax` build of `case` printed and its exit status.
fn expected_without_relaxation(case: &Path) -> (String, i32) {
    let status = read_text(&case.join("expected-no-relax.status"));
    (
        read_text(&case.join("expected-no-relax.stdout")),
        status.trim().parse().unwrap(),
    )
}

/// Links `case` through the `ld` driver with `--no-relax` (and its link flags, then `extra`) into `output`;
/// the link's stderr when it fails. `neverc-spec link` has no `--no-relax`.
fn link_without_relaxation(case: &Path, output: &Path, extra: &[&str]) -> Result<(), String> {
    let mut flags = LinkCases::lines(case, "flags.txt");
    flags.extend(extra.iter().map(|flag| flag.to_string()));
    flags.dedup();
    let result = Command::new(BIN)
        .args(["ld", "-static", "--no-relax", "-o"])
        .arg(output)
        .args(&flags)
        .args(LinkCases::lines(case, "inputs.txt"))
        .output()
        .unwrap();
    if result.status.success() {
        Ok(())
    } else {
        Err(text(&result.stderr))
    }
}

/// ld.bfd's builds of `case` (with and without relaxation) passed every check of their own: at least
/// `checks` `ok` lines, no `FAIL`, exit status 0.
fn passed_its_own_checks(case: &Path, checks: usize) {
    for (stdout, status) in [LinkCases::expected(case), expected_without_relaxation(case)] {
        let passed = stdout.lines().filter(|line| line.starts_with("ok ")).count();
        assert!(
            status == 0 && !stdout.contains("FAIL") && passed >= checks,
            "{}: exit {status}, {passed} checks passed (at least {checks} expected):\n{stdout}",
            case.display()
        );
    }
}

/// Every case with `prefix`, linked with and without `--gc-sections`, runs like its ld.bfd build, and with
/// `--no-relax` too like ld.bfd's `--no-relax` build; each passed at least `checks` checks of its own.
fn check_cases(prefix: &str, checks: usize) {
    for name in cases().names(prefix) {
        passed_its_own_checks(&fixtures().join(name), checks);
    }
    cases().check(prefix, run, |name, case, extra, _| {
        let label = if extra.is_empty() { "" } else { "-gc" };
        let output = case.join(format!("neverc-no-relax{label}.elf"));
        if let Err(stderr) = link_without_relaxation(case, &output, extra) {
            return Some(format!("{name} --no-relax {extra:?}: the link failed:\n{stderr}"));
        }
        let (stdout, status) = run(&output);
        let (expected, expected_status) = expected_without_relaxation(case);
        ((stdout.as_str(), status) != (expected.as_str(), expected_status)).then(|| {
            format!(
                "{name} --no-relax {extra:?}: exit {status} (ld.bfd's --no-relax build: {expected_status})\n\
                 --- ours\n{stdout}--- ld.bfd's\n{expected}"
            )
        })
    });
}

#[test]
fn freestanding_c_programs_run_like_their_ld_bfd_builds_with_and_without_relaxation() {
    // free-c (gcc's default PIE code: GOT loads), free-c-nopie (lui/%lo), free-c-sections (--gc-sections).
    assert_eq!(cases().names("free-c").len(), 3);
    check_cases("free-c", 16);
}

#[test]
fn calls_beyond_1_mib_keep_auipc_and_jalr_and_near_ones_become_jal_unless_told_no_relax() {
    check_cases("free-far", 13);
    // The program says what each near call site became: ld.bfd relaxes them (the call to `jal`, the tail call
    // to `c.j`, both small-data addresses to gp-relative loads) unless told --no-relax; ours, which printed
    // the same, did as well. The far ones kept auipc+jalr (checked by the program).
    let case = fixtures().join("free-far");
    let (relaxed, _) = LinkCases::expected(&case);
    for line in [
        "near call: jal",
        "near tail call: c.j",
        "lui/%lo of small data: load from gp",
        "auipc/%pcrel_lo of small data: load from gp",
    ] {
        assert!(relaxed.lines().any(|printed| printed == line), "{line}:\n{relaxed}");
    }
    let (kept, _) = expected_without_relaxation(&case);
    for line in [
        "near call: auipc",
        "near tail call: auipc",
        "lui/%lo of small data: lui",
        "auipc/%pcrel_lo of small data: auipc",
    ] {
        assert!(kept.lines().any(|printed| printed == line), "{line}:\n{kept}");
    }
}

#[test]
fn thread_local_variables_in_the_local_exec_initial_exec_and_general_dynamic_models_run_like_ld_bfds() {
    assert_eq!(cases().names("free-tls-").len(), 3);
    check_cases("free-tls-", 16);
}
