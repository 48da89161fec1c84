#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Real-world programs: sqlite3 (the amalgamation of the `libsqlite3-sys` crate), Lua 5.4 (`lua-src`), zstd
//! (`zstd-sys`) and zlib (`libz-sys`), fetched by cargo and compiled with gcc -O2, with and without
//! `-ffunction-sections -fdata-sections`, each driven by a workload (SQL queries, a Lua script, compression round
//! trips), plus one program running all four. Each is linked statically against musl (`musl-gcc -static -B DIR`)
//! and against glibc (`gcc -static -B DIR`), DIR holding `ld`, a symbolic link to neverc-spec, with and without
//! `-Wl,--gc-sections` for the `-ffunction-sections` builds; and compiled with `clang-14 -O2 -flto=thin` into
//! bitcode archives, linked against glibc through ThinLTO (`clang-14 -flto=thin -static -B DIR`). The oracle is
//! the ld.bfd build of the same objects through the same driver (for the bitcode, ld.bfd with LLVM's gold
//! plugin, as clang runs it): what our build writes to stdout and stderr and its exit status must be its.
//!
//! The fixtures (`tests/fixtures/realworld/build.sh`: sources fetched, libraries compiled once per libc and flag
//! set, the ld.bfd builds and what they do) are built once per run of this test binary.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use neverc_test_support::{read_text, repo, run_script, text, version_definitions};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

/// The built fixtures (on first use).
fn fixtures() -> &'static Path {
    static FIXTURES: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = FIXTURES.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("realworld");
        run_script(&repo().join("tests/fixtures/realworld/build.sh"), &out).map(|()| out)
    });
    match built {
        Ok(path) => path,
        Err(message) => panic!(
            "building the real-world fixtures failed (cargo with access to crates.io, gcc, musl-tools and \
             binutils are needed): {message}"
        ),
    }
}

/// The directory holding `ld`, a symbolic link to neverc-spec: what the drivers' `-B` points at.
fn ld_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("realworld-bin");
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        symlink(BIN, dir.join("ld")).unwrap();
        dir
    })
}

/// The lines of a file in a case directory.
fn lines(case: &Path, file: &str) -> Vec<String> {
    read_text(&case.join(file)).lines().map(str::to_string).collect()
}

/// Links `case` through its compiler driver with neverc-spec as `ld` into `output` (a name in the case
/// directory); the link's stderr when it fails.
fn link(case: &Path, output: &str) -> Result<(), String> {
    link_with(case, output, lines(case, "link.args"))
}

/// Links `case` as [`link`] does, with `arguments` for the driver instead of its `link.args`.
fn link_with(case: &Path, output: &str, arguments: Vec<String>) -> Result<(), String> {
    let driver = read_text(&case.join("driver"));
    let result = Command::new(driver.trim())
        .arg("-B")
        .arg(ld_dir())
        .args(arguments)
        // `-v`: the linker prints its version line, which says which linker ran.
        .args(["-Wl,-v", "-o", output])
        .current_dir(case)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", driver.trim()));
    let stderr = text(&result.stderr);
    if !result.status.success() {
        return Err(stderr);
    }
    let stdout = text(&result.stdout);
    if !stdout.contains("neverc-spec") {
        return Err(format!("neverc-spec did not run as ld:\n{stdout}\n{stderr}"));
    }
    Ok(())
}

/// A fresh working directory for running a program of `case`, private to the caller's `label`: the workloads
/// write files (zlib's gzip file) where they run, and the tests of this binary run the same case's programs
/// concurrently. The case's input files named in `run.args` are copied into it.
fn work_dir(case: &Path, label: &str) -> PathBuf {
    let dir = case.join(format!("run-{label}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    for argument in lines(case, "run.args") {
        let input = case.join(&argument);
        if !argument.contains('/') && input.is_file() {
            fs::copy(&input, dir.join(&argument)).unwrap();
        }
    }
    dir
}

/// What a program in `case` does with the case's arguments, run in its own working directory (by the case's
/// `runner`, qemu-aarch64 for an AArch64 shared-library case, when it has one): (stdout, stderr, exit status).
fn run(case: &Path, program: &str) -> (String, String, Option<i32>) {
    let runner = fs::read_to_string(case.join("runner")).unwrap_or_default();
    let mut words = runner.split_whitespace();
    let mut command = match words.next() {
        Some(runner) => {
            let mut command = Command::new(runner);
            command.args(words).arg(case.join(program));
            command
        }
        None => Command::new(case.join(program)),
    };
    let result = command
        .args(lines(case, "run.args"))
        .current_dir(work_dir(case, program))
        .output()
        .unwrap_or_else(|error| panic!("cannot run {program} in {}: {error}", case.display()));
    (text(&result.stdout), text(&result.stderr), result.status.code())
}

/// The size of a program's `.text`.
fn text_size(program: &Path) -> u64 {
    let image = fs::read(program).unwrap_or_else(|error| panic!("{}: {error}", program.display()));
    neverc_test_support::elf_section(&image, ".text").1.len() as u64
}

/// What the ld.bfd build of `case` did: (stdout, stderr, exit status).
fn expected(case: &Path) -> (String, String, Option<i32>) {
    (
        read_text(&case.join("expected.stdout")),
        read_text(&case.join("expected.stderr")),
        Some(read_text(&case.join("expected.status")).trim().parse().unwrap()),
    )
}

/// Every case of `program` (every libc, flag set, with and without --gc-sections) linked by neverc-spec runs
/// as its ld.bfd build does.
fn check_program(program: &str) {
    let prefix = format!("{program}-");
    let cases: Vec<String> = read_text(&fixtures().join("cases.txt"))
        .lines()
        .filter(|name| name.starts_with(&prefix))
        .map(str::to_string)
        .collect();
    // musl and glibc, plain and -ffunction-sections, the latter with and without --gc-sections; and glibc
    // with ThinLTO (bitcode archives).
    // Five variants, the two `sections` ones also with --gc-sections; sqlite also with full LTO, the program of
    // all four also with debugging information (gcc -g -O2).
    let variants = if program == "sqlite" || program == "all" { 8 } else { 7 };
    assert_eq!(cases.len(), variants, "the cases of {program}: {cases:?}");
    let mut failures = Vec::new();
    for name in &cases {
        let case = fixtures().join(name);
        let expected = expected(&case);
        // The workload ran: the reference printed its results.
        assert!(
            expected.0.lines().count() > 10,
            "{name}: ld.bfd's build wrote:\n{}",
            expected.0
        );
        if let Err(stderr) = link(&case, "neverc.elf") {
            failures.push(format!("{name}: the link failed:\n{stderr}"));
            continue;
        }
        let ours = run(&case, "neverc.elf");
        if ours != expected {
            failures.push(format!(
                "{name}: exit {:?} (ld.bfd's build: {:?})\n--- our stdout\n{}--- ld.bfd's\n{}--- our stderr\n{}--- ld.bfd's\n{}",
                ours.2, expected.2, ours.0, expected.0, ours.1, expected.1
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn sqlite_runs_its_sql_workload_like_its_ld_bfd_builds() {
    check_program("sqlite");
}

#[test]
fn lua_runs_its_script_like_its_ld_bfd_builds() {
    check_program("lua");
}

#[test]
fn zstd_round_trips_like_its_ld_bfd_builds() {
    check_program("zstd");
}

#[test]
fn zlib_round_trips_like_its_ld_bfd_builds() {
    check_program("zlib");
}

#[test]
fn the_four_workloads_in_one_program_run_like_their_ld_bfd_builds() {
    check_program("all");
}

/// The program of all four workloads against glibc, built as a static PIE (`gcc -static-pie` instead of
/// `-static`; Debian's gcc compiles position-independent code by default), plain and with --gc-sections, runs
/// as its ld.bfd build (a static executable) does.
#[test]
fn the_four_workloads_as_a_static_pie_run_like_their_ld_bfd_builds() {
    let mut failures = Vec::new();
    // With its relative relocations packed (`DT_RELR`, which glibc's start-up code applies) too.
    for (name, option) in [
        ("all-glibc-plain", None),
        ("all-glibc-sections-gc", None),
        ("all-glibc-plain", Some(PACKED)),
    ] {
        let case = fixtures().join(name);
        let arguments: Vec<String> = lines(&case, "link.args")
            .into_iter()
            .map(|argument| {
                if argument == "-static" {
                    "-static-pie".to_string()
                } else {
                    argument
                }
            })
            .chain(option.map(str::to_string))
            .collect();
        assert!(
            arguments.iter().any(|argument| argument == "-static-pie"),
            "{arguments:?}"
        );
        let program = if option.is_some() {
            "neverc-pie-packed.elf"
        } else {
            "neverc-pie.elf"
        };
        if let Err(stderr) = link_with(&case, program, arguments) {
            failures.push(format!("{name}: the link failed:\n{stderr}"));
            continue;
        }
        let header = Command::new("readelf")
            .arg("-h")
            .arg(case.join(program))
            .output()
            .unwrap();
        assert!(
            text(&header.stdout).contains("DYN (Position-Independent Executable file)"),
            "{name}"
        );
        // Packed, nothing is left for `.rela.dyn`: every relative relocation is in `.relr.dyn`.
        if option.is_some() {
            let sizes = relocation_section_sizes(&case.join(program));
            assert!(
                sizes.iter().any(|(name, size)| name == ".relr.dyn" && *size > 0)
                    && !sizes.iter().any(|(name, _)| name == ".rela.dyn"),
                "{sizes:?}"
            );
        }
        let expected = expected(&case);
        let ours = run(&case, program);
        if ours != expected {
            failures.push(format!(
                "{name}: exit {:?} (ld.bfd's build: {:?})\n{}",
                ours.2, expected.2, ours.0
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The SHA-256 of a file, by `sha256sum`.
fn sha256(path: &Path) -> String {
    let output = Command::new("sha256sum").arg(path).output().expect("sha256sum runs");
    assert!(output.status.success(), "sha256sum {}", path.display());
    text(&output.stdout).split_whitespace().next().unwrap().to_string()
}

/// Linking the same inputs twice gives the same bytes: the glibc sqlite program, the program of all four
/// workloads with --gc-sections, and the glibc sqlite program through ThinLTO.
#[test]
fn linking_twice_gives_byte_identical_programs() {
    for name in ["sqlite-glibc-plain", "all-glibc-sections-gc", "sqlite-glibc-thinlto"] {
        let case = fixtures().join(name);
        for output in ["twice-1.elf", "twice-2.elf"] {
            link(&case, output).unwrap_or_else(|stderr| panic!("{name}: the link failed:\n{stderr}"));
        }
        let (first, second) = (case.join("twice-1.elf"), case.join("twice-2.elf"));
        let (first_bytes, second_bytes) = (fs::read(&first).unwrap(), fs::read(&second).unwrap());
        assert!(first_bytes.len() > 100_000, "{name}: {} bytes", first_bytes.len());
        if let Some(at) = first_bytes.iter().zip(&second_bytes).position(|(a, b)| a != b) {
            panic!("{name}: the two links differ from byte {at} on");
        }
        assert_eq!(
            first_bytes.len(),
            second_bytes.len(),
            "{name}: the two links differ in size"
        );
        let (hash, again) = (sha256(&first), sha256(&second));
        assert_eq!(hash, again);
        println!("{name}: sha256 {hash} ({} bytes), twice", first_bytes.len());
    }
}

/// The links of `bench/link.sh` give the same bytes with one thread as with more threads than the machine
/// has cores (`--threads=1`, `--threads=5`): static against musl and glibc, `--gc-sections` against both,
/// with `-g`, gcc's default PIE against glibc and musl, sqlite3 as a shared library, and the RISC-V program
/// (relaxed). Every phase that works in parallel (relocation, the build ID) writes what it would alone.
#[test]
fn every_bench_link_gives_the_same_bytes_with_one_thread_and_with_five() {
    // (case, which of its argument files, whether to drop `-static`)
    let links = [
        ("all-musl-plain", "link.args", false),
        ("all-glibc-plain", "link.args", false),
        ("all-glibc-sections-gc", "link.args", false),
        ("all-musl-sections-gc", "link.args", false),
        ("all-glibc-debug", "link.args", false),
        ("all-glibc-plain", "link.args", true),
        ("all-musl-plain", "link.args", true),
        ("shared-sqlite", "lib.args", false),
        ("all-riscv64-plain", "link.args", false),
    ];
    for (name, arguments, dynamic) in links {
        let case = fixtures().join(name);
        let label = format!("{name}{}", if dynamic { "-dynamic" } else { "" });
        let mut outputs = Vec::new();
        for threads in [1, 5] {
            let mut arguments: Vec<String> = lines(&case, arguments)
                .into_iter()
                .filter(|argument| !(dynamic && argument == "-static"))
                .collect();
            arguments.push("-Wl,--build-id".to_string());
            arguments.push(format!("-Wl,--threads={threads}"));
            let output = format!("threads-{label}-{threads}.elf");
            link_with(&case, &output, arguments).unwrap_or_else(|stderr| panic!("{label}: the link failed:\n{stderr}"));
            outputs.push(fs::read(case.join(&output)).unwrap());
        }
        assert!(outputs[0].len() > 100_000, "{label}: {} bytes", outputs[0].len());
        if let Some(at) = outputs[0].iter().zip(&outputs[1]).position(|(a, b)| a != b) {
            panic!("{label}: the links with one thread and with five differ from byte {at} on");
        }
        assert_eq!(outputs[0].len(), outputs[1].len(), "{label}: the links differ in size");
    }
}

/// The named dynamic symbols (`binding name@version`, sorted) and the `NEEDED` and `FLAGS` entries of a
/// program; with `imports_only`, only the names it imports that are not weak, and not `FLAGS` (see below).
fn dynamic_facts(program: &Path, imports_only: bool) -> (Vec<String>, Vec<String>) {
    let readelf = |args: &[&str]| {
        let output = Command::new("readelf").args(args).arg(program).output().unwrap();
        assert!(output.status.success(), "readelf {args:?} {}", program.display());
        text(&output.stdout)
    };
    let mut symbols: Vec<String> = readelf(&["--dyn-syms", "-W"])
        .lines()
        .filter(|line| {
            line.trim_start()
                .split(':')
                .next()
                .is_some_and(|index| index.parse::<u32>().is_ok())
        })
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        // ld.bfd writes local section symbols into AArch64 programs' `.dynsym`; they name nothing.
        .filter(|fields| fields.len() >= 8 && fields[3] != "SECTION")
        .filter(|fields| !imports_only || (fields[6] == "UND" && fields[4] != "WEAK"))
        .map(|fields| format!("{} {}", fields[4], fields[7]))
        .collect();
    symbols.sort();
    let entries = readelf(&["-dW"])
        .lines()
        .filter(|line| {
            ["(NEEDED)", "(FLAGS)", "(FLAGS_1)"]
                .iter()
                .any(|tag| line.contains(tag))
                && !(imports_only && line.contains("(FLAGS)"))
        })
        .map(|line| line.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        .collect();
    (symbols, entries)
}

/// The programs built with their driver's default link instead of `-static`: a position-independent executable
/// against the shared C library (glibc's libc.so.6, musl's libc.so), started through its interpreter; the
/// program of all four built for AArch64 (gcc's default link, run under qemu-aarch64); and for RISC-V the
/// program of all four (also `-no-pie`, and from `-ffunction-sections` objects with `--gc-sections`) and the
/// C++ program throwing exceptions, against glibc's and libstdc++'s shared libraries, under qemu-riscv64.
/// Each runs as its ld.bfd build does (lazily bound, and with every function bound at start-up,
/// `LD_BIND_NOW=1`), and its dynamic symbols (with their versions) and needed libraries are those of ld.bfd's
/// dynamic link of the same command line. (For RISC-V only the symbols imported strongly, and not `FLAGS`:
/// ld.bfd's RISC-V backend also exports every global definition a GOT entry names, `main` among them, which
/// nothing needs, imports the undefined weak names of crtbegin.o into a `-no-pie` program, and with
/// `--gc-sections` keeps empty dynamic relocations of collected code, for which it marks the program
/// `TEXTREL`; neverc-spec's programs have no text relocations.)
#[test]
fn the_workloads_as_gccs_default_dynamic_pie_run_like_their_ld_bfd_builds() {
    let mut failures = Vec::new();
    // (case, an option for the driver): `-no-pie`, an executable at a fixed address importing the same.
    let cases = [
        ("all-glibc-plain", None),
        ("all-glibc-plain", Some("-no-pie")),
        ("all-glibc-plain", Some(PACKED)),
        ("all-glibc-sections-gc", None),
        ("all-musl-plain", None),
        ("all-musl-plain", Some("-no-pie")),
        ("sqlite-glibc-plain", None),
        ("lua-glibc-plain", None),
        ("zstd-glibc-plain", None),
        ("zlib-glibc-sections-gc", None),
    ];
    // The AArch64 program of all four is built as gcc's default link already, and runs under qemu.
    let aarch64: Vec<String> = read_text(&fixtures().join("aarch64-cases.txt"))
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(aarch64, ["all-aarch64-plain"]);
    let riscv64 = [
        ("all-riscv64-plain", None),
        ("all-riscv64-plain", Some("-no-pie")),
        ("all-riscv64-sections-gc", None),
        ("cxx-riscv64-sections-gc", None),
    ];
    let all = cases
        .iter()
        .copied()
        .chain(aarch64.iter().map(|name| (name.as_str(), None)))
        .chain(riscv64);
    for (name, option) in all {
        let case = fixtures().join(name);
        let under_qemu = if aarch64.iter().any(|aarch64| aarch64 == name) {
            Some(("qemu-aarch64", "/usr/aarch64-linux-gnu"))
        } else if riscv64.iter().any(|(riscv64, _)| *riscv64 == name) {
            Some(("qemu-riscv64", "/usr/riscv64-linux-gnu"))
        } else {
            None
        };
        let imports_only = name.contains("riscv64");
        let arguments: Vec<String> = option
            .into_iter()
            .map(str::to_string)
            .chain(
                lines(&case, "link.args")
                    .into_iter()
                    .filter(|argument| argument != "-static"),
            )
            .collect();
        let name = format!("{name}{}", option.map_or(String::new(), |option| format!(" {option}")));
        if let Err(stderr) = link_with(&case, "neverc-dynamic.elf", arguments.clone()) {
            failures.push(format!("{name}: the link failed:\n{stderr}"));
            continue;
        }
        let driver = read_text(&case.join("driver"));
        let bfd = Command::new(driver.trim())
            .args(&arguments)
            .args(["-o", "bfd-dynamic.elf"])
            .current_dir(&case)
            .output()
            .unwrap();
        assert!(bfd.status.success(), "{name}: {}", text(&bfd.stderr));
        let ours = case.join("neverc-dynamic.elf");
        let header = Command::new("readelf").arg("-lW").arg(&ours).output().unwrap();
        assert!(
            text(&header.stdout).contains("Requesting program interpreter"),
            "{name}: no interpreter"
        );
        let expected = expected(&case);
        for bind_now in [false, true] {
            let mut command = if let Some((qemu, root)) = under_qemu {
                let mut command = Command::new(qemu);
                command.args(["-L", root]).arg(&ours);
                command
            } else {
                Command::new(&ours)
            };
            command
                .args(lines(&case, "run.args"))
                .current_dir(work_dir(&case, "neverc-dynamic.elf"));
            if bind_now {
                command.env("LD_BIND_NOW", "1");
            }
            let result = command.output().unwrap();
            let ran = (text(&result.stdout), text(&result.stderr), result.status.code());
            if ran != expected {
                failures.push(format!(
                    "{name} (LD_BIND_NOW {bind_now}): exit {:?} (ld.bfd's build: {:?})\n{}{}",
                    ran.2, expected.2, ran.0, ran.1
                ));
            }
        }
        let (facts, reference) = (
            dynamic_facts(&ours, imports_only),
            dynamic_facts(&case.join("bfd-dynamic.elf"), imports_only),
        );
        assert!(
            facts.1.iter().any(|entry| entry.starts_with("(NEEDED)")),
            "{name}: {facts:?}"
        );
        if facts != reference {
            failures.push(format!("{name}: ours {facts:?}\nld.bfd's {reference:?}"));
        }
        // Packed, the relative relocations take what ld.bfd's take, and the rest stays in `.rela.dyn`. (Not
        // `.rela.plt`: ld.bfd calls a function it also has a GOT slot for through that slot, in `.plt.got`,
        // where neverc-spec gives it a lazily bound PLT entry as well.)
        if option == Some(PACKED) {
            let sizes = |program: &Path| {
                let mut sizes = relocation_section_sizes(program);
                sizes.retain(|(name, _)| name != ".rela.plt");
                sizes
            };
            let (ours, theirs) = (sizes(&ours), sizes(&case.join("bfd-dynamic.elf")));
            assert!(
                ours.iter().any(|(name, size)| name == ".relr.dyn" && *size > 0),
                "{ours:?}"
            );
            if ours != theirs {
                failures.push(format!("{name}: ours {ours:?}\nld.bfd's {theirs:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The option that packs relative relocations (`DT_RELR`).
const PACKED: &str = "-Wl,-z,pack-relative-relocs";

/// The names and sizes of a program's dynamic relocation sections (`.rela.dyn`, `.rela.plt`, `.relr.dyn`).
fn relocation_section_sizes(program: &Path) -> Vec<(String, u64)> {
    let output = Command::new("readelf").arg("-SW").arg(program).output().unwrap();
    text(&output.stdout)
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let at = fields.iter().position(|field| field.starts_with(".rel"))?;
            let size = u64::from_str_radix(fields.get(at + 4)?, 16).ok()?;
            Some((fields[at].to_string(), size))
        })
        .collect()
}

/// The defined `.dynsym` entries of `library` (not the section symbols ld.bfd adds on AArch64): type, binding,
/// visibility, whether absolute, and name with its version (`deflate@@ZLIB_1.2.0`), sorted.
fn exports_with_versions(library: &Path) -> Vec<String> {
    let output = Command::new("readelf")
        .args(["--dyn-syms", "-W"])
        .arg(library)
        .output()
        .unwrap();
    let mut exports: Vec<String> = text(&output.stdout)
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|fields| fields.len() >= 8 && fields[0].ends_with(':') && fields[6] != "UND" && fields[3] != "SECTION")
        .map(|fields| {
            let absolute = if fields[6] == "ABS" { " ABS" } else { "" };
            format!("{} {} {}{absolute} {}", fields[3], fields[4], fields[5], fields[7])
        })
        .collect();
    exports.sort();
    exports
}

/// Links `output` in `case` through its compiler driver with `arguments`: with neverc-spec as [`link_with`]
/// does when `ours`, else with the driver's own ld (ld.bfd); the link's stderr when it fails.
fn driver(case: &Path, ours: bool, arguments: Vec<String>, output: &str) -> Result<(), String> {
    if ours {
        return link_with(case, output, arguments);
    }
    let result = Command::new(read_text(&case.join("driver")).trim())
        .args(arguments)
        .args(["-o", output])
        .current_dir(case)
        .output()
        .unwrap();
    if result.status.success() {
        Ok(())
    } else {
        Err(text(&result.stderr))
    }
}

/// sqlite3, Lua and zlib (Debian's source, with its own `zlib.map` version script; zlib also for AArch64, run
/// under qemu) built as shared libraries by `gcc -shared` through neverc-spec export what ld.bfd's builds
/// export, in the same versions, define the same versions, and the programs linked against them, by ld.bfd
/// and by neverc-spec, run their workloads as the ld.bfd-built program against the ld.bfd-built library
/// does.
#[test]
fn sqlite_lua_and_zlib_as_shared_libraries_export_and_run_like_ld_bfds() {
    let cases: Vec<String> = read_text(&fixtures().join("shared-cases.txt"))
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        cases,
        ["shared-sqlite", "shared-lua", "shared-zlib", "shared-zlib-aarch64"]
    );
    let mut failures = Vec::new();
    for name in &cases {
        let case = fixtures().join(name);
        let soname = read_text(&case.join("soname")).trim().to_string();
        let expected = expected(&case);
        assert!(
            expected.0.lines().count() > 10,
            "{name}: ld.bfd's build wrote:\n{}",
            expected.0
        );
        let _ = fs::remove_dir_all(case.join("ours"));
        fs::create_dir_all(case.join("ours")).unwrap();
        let library = format!("ours/{soname}");
        if let Err(stderr) = driver(&case, true, lines(&case, "lib.args"), &library) {
            failures.push(format!("{name}: linking the library failed:\n{stderr}"));
            continue;
        }
        let reference = case.join("ref").join(&soname);
        let (ours, theirs) = (
            exports_with_versions(&case.join(&library)),
            exports_with_versions(&reference),
        );
        assert!(theirs.len() > 50, "{name}: ld.bfd's library exports {theirs:?}");
        if ours != theirs {
            let missing: Vec<_> = theirs.iter().filter(|entry| !ours.contains(entry)).collect();
            let extra: Vec<_> = ours.iter().filter(|entry| !theirs.contains(entry)).collect();
            failures.push(format!(
                "{name}: exports differ: ld.bfd's only {missing:?}; ours only {extra:?}"
            ));
        }
        let definitions = (
            version_definitions(&case.join(&library)),
            version_definitions(&reference),
        );
        if definitions.0 != definitions.1 {
            failures.push(format!(
                "{name}: version definitions {:?}, ld.bfd's {:?}",
                definitions.0, definitions.1
            ));
        }
        // The program, linked against our library by each linker.
        let program = lines(&case, "program.args");
        for (ours, output) in [(false, "ours/program-bfd"), (true, "ours/program")] {
            let arguments: Vec<String> = program[..1]
                .iter()
                .cloned()
                .chain([library.clone()])
                .chain(program[1..].iter().cloned())
                .collect();
            if let Err(stderr) = driver(&case, ours, arguments, output) {
                failures.push(format!("{name}: linking {output} failed:\n{stderr}"));
                continue;
            }
            let ran = run(&case, output);
            if ran != expected {
                failures.push(format!(
                    "{name}: {output}: exit {:?} (ld.bfd's: {:?})\n--- stdout\n{}--- ld.bfd's\n{}--- stderr\n{}--- ld.bfd's\n{}",
                    ran.2, expected.2, ran.0, expected.0, ran.1, expected.1
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The RISC-V programs (riscv64-linux-gnu-gcc -O2 -static against glibc, run under qemu-riscv64): sqlite3, Lua,
/// zstd and zlib each, the program of all four also with `-ffunction-sections` (with and without
/// `--gc-sections`), and a C++ program throwing exceptions across units. Each runs as its ld.bfd build does,
/// linked with relaxation (the default: calls shortened to `jal`, addresses near `__global_pointer$` formed
/// from `gp`, alignment padding trimmed), when its `.text` must be within 1 % of ld.bfd's, and with
/// `--no-relax`.
#[test]
fn riscv64_programs_run_like_their_ld_bfd_builds_with_and_without_relaxation() {
    let cases: Vec<String> = read_text(&fixtures().join("riscv64-cases.txt"))
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        cases.len(),
        10,
        "five programs with plain flags, the program of all four and the C++ one with sections, those with \
         --gc-sections too: {cases:?}"
    );
    let mut failures = Vec::new();
    let mut sizes = Vec::new();
    for name in &cases {
        let case = fixtures().join(name);
        let expected = expected(&case);
        assert!(
            expected.0.lines().count() > 5,
            "{name}: ld.bfd's build wrote:\n{}",
            expected.0
        );
        for relax in [true, false] {
            let output = if relax { "neverc.elf" } else { "neverc-no-relax.elf" };
            let mut arguments = lines(&case, "link.args");
            if !relax {
                arguments.push("-Wl,--no-relax".into());
            }
            if let Err(stderr) = link_with(&case, output, arguments) {
                failures.push(format!("{name} (relax {relax}): the link failed:\n{stderr}"));
                continue;
            }
            let ours = run(&case, output);
            if ours != expected {
                failures.push(format!(
                    "{name} (relax {relax}): exit {:?} (ld.bfd's build: {:?})\n--- our stdout\n{}--- ld.bfd's\n{}--- our stderr\n{}",
                    ours.2, expected.2, ours.0, expected.0, ours.1
                ));
            }
            if relax {
                let (ours, reference) = (text_size(&case.join(output)), text_size(&case.join("ref.elf")));
                sizes.push(format!("{name}: .text {ours:#x}, ld.bfd's {reference:#x}"));
                if ours.abs_diff(reference) * 100 > reference {
                    failures.push(format!(
                        "{name}: .text is {ours:#x} bytes, more than 1 % away from ld.bfd's {reference:#x}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}\n{}", failures.join("\n\n"), sizes.join("\n"));
}
