#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Inputs a linker can silently get wrong (issue 26): malformed section headers, a common symbol an archive
//! member defines, an inline variable defined `STB_WEAK` in one object and `STB_GNU_UNIQUE` in another, and
//! symbol names that are not valid UTF-8. Each program is linked by neverc-spec through its compiler driver
//! (`gcc -static -B DIR`, DIR/ld being neverc-spec) for x86-64 and for AArch64 (run under qemu-aarch64), and
//! must run as ld.bfd's build of the same inputs runs, or be refused with a message naming the file and the
//! section or symbol, where ld.bfd's build is broken or ld.bfd refuses.
//!
//! The fixtures (`tests/fixtures/inputs/build.sh`: objects, patched objects, archives, ld.bfd's builds and
//! what they print) are built once per run of this test binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use neverc_test_support::{build_fixtures_with_ld, read_text, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

/// The architectures, each with the command that runs its programs.
const ARCHITECTURES: [(&str, &[&str]); 2] = [
    ("x86_64", &[]),
    ("aarch64", &["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"]),
];

static FIXTURES: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// The built fixtures (on first use), with `bin/ld`, a symbolic link to neverc-spec, for `-B`.
fn fixtures() -> &'static Path {
    let built = FIXTURES.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("input-correctness");
        build_fixtures_with_ld("tests/fixtures/inputs/build.sh", out, BIN)
    });
    match built {
        Ok(path) => path,
        Err(message) => panic!(
            "building the input fixtures failed (gcc, g++, gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu, qemu-user \
             and python3 are needed): {message}"
        ),
    }
}

/// The directory of case `name` of `arch`.
fn case(arch: &str, name: &str) -> PathBuf {
    fixtures().join(arch).join(name)
}

/// Links case `name` of `arch` with neverc-spec through the case's compiler driver (`-static -B DIR`): what
/// the driver printed and how it exited, and the program's path (which exists only if the link succeeded).
fn link(arch: &str, name: &str) -> (Output, PathBuf) {
    let dir = case(arch, name);
    let lines: Vec<String> = read_text(&dir.join("link.txt")).lines().map(str::to_string).collect();
    let program = dir.join("neverc.elf");
    let _ = std::fs::remove_file(&program);
    let output = Command::new(&lines[0])
        .args(["-static", "-B"])
        .arg(fixtures().join("bin"))
        .arg("-o")
        .arg(&program)
        .args(&lines[1..])
        .current_dir(&dir)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", lines[0]));
    (output, program)
}

/// Runs `program` of `arch` in its directory: (stdout, exit status).
fn run(arch: &str, program: &Path) -> (String, i32) {
    let runner = ARCHITECTURES.iter().find(|(name, _)| *name == arch).unwrap().1;
    let mut command = match runner.split_first() {
        Some((first, rest)) => {
            let mut command = Command::new(first);
            command.args(rest).arg(program);
            command
        }
        None => Command::new(program),
    };
    let result = command.current_dir(program.parent().unwrap()).output().unwrap();
    (text(&result.stdout), result.status.code().unwrap_or(-1))
}

/// What ld.bfd's build of the case printed and its exit status.
fn expected(dir: &Path) -> (String, i32) {
    let status = read_text(&dir.join("expected.status")).trim().parse().unwrap();
    (read_text(&dir.join("expected.stdout")), status)
}

/// Every case of `names`, for every architecture, links and runs as its ld.bfd build does; returns the
/// programs.
fn runs_like_ld_bfd(names: &[&str]) -> Vec<PathBuf> {
    let mut failures = Vec::new();
    let mut programs = Vec::new();
    for (arch, _) in ARCHITECTURES {
        for name in names {
            let (output, program) = link(arch, name);
            if !output.status.success() {
                failures.push(format!("{arch} {name}: the link failed:\n{}", text(&output.stderr)));
                continue;
            }
            let ours = run(arch, &program);
            let theirs = expected(&case(arch, name));
            if ours != theirs {
                failures.push(format!(
                    "{arch} {name}: exit {} (ld.bfd's build: {})\n--- ours\n{}--- ld.bfd's\n{}",
                    ours.1, theirs.1, ours.0, theirs.0
                ));
            }
            programs.push(program);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    programs
}

/// Case `name` of every architecture is refused: the driver fails as it does when its linker fails (exit 1),
/// no program is written, and the linker's message holds every string of `needles` (`{arch}` stands for the
/// architecture).
fn refused(name: &str, needles: &[&str]) {
    let mut failures = Vec::new();
    for (arch, _) in ARCHITECTURES {
        let (output, program) = link(arch, name);
        let stderr = text(&output.stderr);
        if output.status.code() != Some(1) || program.exists() {
            failures.push(format!(
                "{arch} {name}: not refused ({}, program written: {}):\n{stderr}",
                output.status,
                program.exists()
            ));
            continue;
        }
        for needle in needles {
            if !stderr.contains(needle) {
                failures.push(format!("{arch} {name}: no `{needle}` in:\n{stderr}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_relocation_section_whose_links_are_broken_is_refused_naming_the_file_and_the_section() {
    // ld.bfd drops such relocations (its program crashes) or refuses the file without saying why; ld.lld
    // refuses the `sh_info` cases with these words.
    refused(
        "rela-link",
        &[
            "rela-link.o: relocation section `.rela.text` (index 2) has invalid sh_link (",
            "the symbol table is section",
        ],
    );
    refused(
        "rela-info-zero",
        &["rela-info-zero.o: relocation section `.rela.text` (index 2) has invalid sh_info (0)"],
    );
    refused(
        "rela-info-missing",
        &["rela-info-missing.o: relocation section `.rela.text` (index 2) has invalid sh_info (99)"],
    );
}

#[test]
fn section_addresses_in_a_relocatable_object_are_ignored_as_ld_bfd_ignores_them() {
    runs_like_ld_bfd(&["addresses", "data-address"]);
}

#[test]
fn a_common_symbol_takes_the_archive_member_that_defines_it_as_ld_bfd_does() {
    // GNU ld (and ld.lld, mold) load a member that defines a common symbol's name with initialized data, and
    // its definition wins; a member with only another common, a weak or a function definition is not loaded.
    runs_like_ld_bfd(&[
        "common-data",
        "common-bss",
        "common-common",
        "common-weak",
        "common-func",
    ]);
}

#[test]
fn an_inline_variable_defined_weak_in_one_object_and_gnu_unique_in_another_is_one_variable() {
    runs_like_ld_bfd(&["inline-ab", "inline-ba"]);
}

#[test]
fn symbol_names_that_are_not_utf_8_are_resolved_as_the_bytes_they_are() {
    runs_like_ld_bfd(&["badname-ok", "badname-archive"]);
    refused("badname-undefined", &["undefined reference to `bad\u{fffd}name'"]);
    refused(
        "badname-duplicate",
        &["bad\u{fffd}name", "bad_name_def.o", "bad_name_again.o"],
    );
}
