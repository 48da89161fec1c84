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
//! A shared library (`shlib.c`) and a program importing its functions, data and thread-local variables
//! (`shmain.c`) are linked through `riscv64-linux-gnu-gcc -B` and run with glibc's dynamic loader under qemu.
//!
//! The fixtures (`tests/fixtures/riscv64/build.sh`) are built once per run of this test binary.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use neverc_test_support::{LinkCases, read_text, repo, run_script, scratch, text};

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

/// Where glibc's RISC-V shared libraries and dynamic loader are (Debian: libc6-riscv64-cross).
const SYSROOT: &str = "/usr/riscv64-linux-gnu";

/// Runs `riscv64-linux-gnu-gcc -O2 ARGS`, with neverc-spec as its `ld` when `ours` (a symbolic link in
/// `DIR/bin`, which `-B` names), else with ld.bfd; panics naming the link when it fails.
fn gcc(dir: &Path, ours: bool, args: &[&str]) {
    let mut command = Command::new("riscv64-linux-gnu-gcc");
    command.arg("-O2").args(args).current_dir(dir);
    if ours {
        let bin = dir.join("bin");
        if !bin.exists() {
            std::fs::create_dir_all(&bin).unwrap();
            symlink(BIN, bin.join("ld")).unwrap();
        }
        command.arg("-B").arg(&bin);
    }
    let result = command.output().unwrap();
    assert!(
        result.status.success(),
        "riscv64-linux-gnu-gcc {args:?} (ours: {ours}): {}",
        text(&result.stderr)
    );
}

/// Runs a dynamically linked RISC-V `program` under qemu-riscv64 with glibc's loader, finding its shared
/// libraries in `libraries` (bound lazily, or all at start-up with `bind_now`): (stdout, exit status).
fn run_dynamic(program: &Path, libraries: &Path, bind_now: bool) -> (String, i32) {
    let result = Command::new("qemu-riscv64")
        .args(["-L", SYSROOT, "-E"])
        .arg(format!("LD_LIBRARY_PATH={}", libraries.display()))
        .args(["-E", if bind_now { "LD_BIND_NOW=1" } else { "LD_BIND_NOW=" }])
        .arg(program)
        .output()
        .expect("qemu-riscv64 runs (Debian: qemu-user)");
    (
        format!("{}{}", text(&result.stdout), text(&result.stderr)),
        result.status.code().unwrap_or(-1),
    )
}

/// The defined global symbols a shared library exports (`binding type name`, sorted).
fn exports(library: &Path) -> Vec<String> {
    let listing = Command::new("readelf")
        .args(["--dyn-syms", "-W"])
        .arg(library)
        .output()
        .unwrap();
    let mut exports: Vec<String> = text(&listing.stdout)
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|fields| fields.len() >= 8 && fields[0].ends_with(':') && fields[6] != "UND" && fields[4] != "LOCAL")
        .map(|fields| format!("{} {} {}", fields[4], fields[3], fields[7]))
        .collect();
    exports.sort();
    exports
}

/// `shlib.c` as a shared library by `gcc -shared` through neverc-spec exports what ld.bfd's build does, and
/// `shmain.c` using it — as gcc's default PIE compiled with `-fPIC` (general-dynamic accesses to the library's
/// thread-local variables) and with `-no-pie` (initial-exec accesses, a copy relocation of its data) — linked
/// by neverc-spec and by ld.bfd, runs with either library as ld.bfd's program with ld.bfd's library does,
/// bound lazily and at start-up.
#[test]
fn a_shared_library_and_programs_importing_its_functions_data_and_thread_locals_run_like_ld_bfds() {
    let dir = scratch!("riscv64-shared");
    let fixtures = repo().join("tests/fixtures/riscv64");
    let (library, main) = (fixtures.join("shlib.c"), fixtures.join("shmain.c"));
    let (library, main) = (library.to_str().unwrap(), main.to_str().unwrap());
    for (label, ours) in [("ours", true), ("bfd", false)] {
        std::fs::create_dir_all(dir.join(label)).unwrap();
        let output = format!("{label}/libshared.so");
        gcc(&dir, ours, &["-fPIC", "-shared", library, "-o", &output]);
    }
    assert_eq!(
        exports(&dir.join("ours/libshared.so")),
        exports(&dir.join("bfd/libshared.so"))
    );
    assert!(
        exports(&dir.join("ours/libshared.so"))
            .iter()
            .any(|export| export.ends_with(" TLS tls_counter"))
    );
    let libraries = |label: &str| dir.join(label);
    let mut failures = Vec::new();
    for (variant, flags) in [("pie", &["-fPIC"][..]), ("no-pie", &["-no-pie"][..])] {
        for (label, ours) in [("ours", true), ("bfd", false)] {
            let output = format!("{label}/main-{variant}");
            let mut args = flags.to_vec();
            args.extend([main, "-Lbfd", "-lshared", "-o", &output]);
            gcc(&dir, ours, &args);
        }
        let expected = run_dynamic(&dir.join(format!("bfd/main-{variant}")), &libraries("bfd"), false);
        assert!(
            expected.1 == 0 && expected.0.contains("tls_counter: 114, bump: 123"),
            "ld.bfd's build: {expected:?}"
        );
        for (program, library) in [("ours", "bfd"), ("ours", "ours"), ("bfd", "ours")] {
            for bind_now in [false, true] {
                let ran = run_dynamic(
                    &dir.join(format!("{program}/main-{variant}")),
                    &libraries(library),
                    bind_now,
                );
                if ran != expected {
                    failures.push(format!(
                        "{variant}: the program by {program} with the library by {library} (bind now: {bind_now}): \
                         exit {}\n{}",
                        ran.1, ran.0
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
