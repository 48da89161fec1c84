#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Static position-independent executables (`gcc -static-pie`, `ld -static -pie --no-dynamic-linker`), held to
//! ld.bfd's builds of the same objects: the program (`tests/fixtures/static_pie/pie.c`: addresses in its data,
//! the C library's indirect functions, thread-local storage) runs and prints what ld.bfd's prints, on x86-64
//! and on AArch64 under qemu; the file is `ET_DYN` without an interpreter, with `PT_DYNAMIC`, and holds as
//! many `RELATIVE` and `IRELATIVE` relocations as ld.bfd's; its `.dynamic` has the tags glibc's
//! `_dl_relocate_static_pie` reads. Code that holds 32-bit absolute addresses is refused by name, as is a PIE
//! that imports from shared libraries. (The real programs linked `-static-pie` are in `tests/real_programs.rs`.)

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use neverc_test_support::cross::{AARCH64, Arch, X86_64, compile_fixtures, readelf, run_program};
use neverc_test_support::{program_headers, repo, run_in, succeeded, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

static OBJECTS: OnceLock<PathBuf> = OnceLock::new();

/// The compiled fixtures (`ARCH/pie.o`, `ARCH/absolute.o` with `-fno-pie`) and `bin/ld`, made on first use.
fn objects() -> &'static Path {
    OBJECTS.get_or_init(|| {
        compile_fixtures(
            neverc_test_support::scratch!("static-pie"),
            BIN,
            &repo().join("tests/fixtures/static_pie"),
            &[("pie", &["-fPIE"][..]), ("absolute", &["-fno-pie"][..])],
        )
    })
}

/// `ARCH-gcc -static-pie OBJECT -o OUTPUT`, linked by neverc-spec (`ours`) or ld.bfd.
fn link(arch: &Arch, ours: bool, object: &str, output: &str) -> Output {
    let dir = objects().join(arch.name);
    let bin = format!("-B{}", objects().join("bin").display());
    let chosen: &[&str] = if ours { &[&bin] } else { &[] };
    let args = [&["-static-pie"][..], chosen, &[object, "-o", output]].concat();
    run_in(arch.gcc, &dir, &args)
}

/// The number of relocations in section `name` (`readelf -r`: "Relocation section 'NAME' ... contains N").
fn relocation_count(arch: &Arch, program: &Path, name: &str) -> usize {
    readelf(arch, &["-rW"], program)
        .lines()
        .find(|line| line.starts_with(&format!("Relocation section '{name}'")))
        .and_then(|line| line.split_whitespace().rev().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// The tags of `.dynamic`, in order (`readelf -d`'s names).
fn dynamic_tags(arch: &Arch, program: &Path) -> Vec<String> {
    readelf(arch, &["-dW"], program)
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            line.starts_with("0x").then(|| {
                line.split_whitespace()
                    .nth(1)
                    .unwrap()
                    .trim_matches(['(', ')'])
                    .to_string()
            })
        })
        .collect()
}

#[test]
fn a_static_pie_runs_as_ld_bfds_and_has_its_dynamic_relocations() {
    for arch in [X86_64, AARCH64] {
        let dir = objects().join(arch.name);
        succeeded(&link(&arch, true, "pie.o", "ours"), "gcc -static-pie (neverc-spec)");
        succeeded(&link(&arch, false, "pie.o", "bfd"), "gcc -static-pie (ld.bfd)");
        let (ours, bfd) = (dir.join("ours"), dir.join("bfd"));
        let expected = run_program(&arch, &bfd);
        assert_eq!(
            expected,
            (
                "position-independent 42 29 1\nloaded away from 0: 1\n".to_string(),
                Some(0)
            )
        );
        assert_eq!(run_program(&arch, &ours), expected, "{}", arch.name);

        let header = readelf(&arch, &["-hW"], &ours);
        assert!(
            header.contains("DYN (Position-Independent Executable file)"),
            "{header}"
        );
        let kinds: Vec<String> = program_headers(&ours).into_iter().map(|row| row[0].clone()).collect();
        assert!(kinds.contains(&"DYNAMIC".to_string()), "{kinds:?}");
        assert!(!kinds.contains(&"INTERP".to_string()), "{kinds:?}");
        assert_eq!(kinds.iter().find(|kind| *kind == "LOAD"), Some(&"LOAD".to_string()));
        let first_load = program_headers(&ours).into_iter().find(|row| row[0] == "LOAD").unwrap();
        assert_eq!(first_load[2], "0x0000000000000000", "{first_load:?}");

        // As many relocations as ld.bfd writes: every address in the data, and the indirect functions. On
        // AArch64 ld.bfd's GOT has slots of its own layout (two of them `R_AARCH64_NONE`): the `RELATIVE`
        // counts agree to within those few.
        assert_eq!(
            relocation_count(&arch, &ours, ".rela.plt"),
            relocation_count(&arch, &bfd, ".rela.plt"),
            "{}",
            arch.name
        );
        let (dynamic_ours, dynamic_bfd) = (
            relocation_count(&arch, &ours, ".rela.dyn"),
            relocation_count(&arch, &bfd, ".rela.dyn"),
        );
        if arch.name == "x86_64" {
            assert_eq!(dynamic_ours, dynamic_bfd);
        } else {
            assert!(
                dynamic_ours.abs_diff(dynamic_bfd) <= 4,
                "{dynamic_ours} vs ld.bfd's {dynamic_bfd}"
            );
        }
        let relocations = readelf(&arch, &["-rW"], &ours);
        let relative = if arch.name == "x86_64" {
            "R_X86_64_RELATIVE"
        } else {
            "R_AARCH64_RELATIVE"
        };
        assert!(relocations.contains(relative), "{relocations}");
        // The tags glibc's start-up code reads, each also in ld.bfd's `.dynamic` (which has INIT, FINI and the
        // array tags besides, which a static C library does not read).
        let (tags, reference) = (dynamic_tags(&arch, &ours), dynamic_tags(&arch, &bfd));
        for tag in [
            "SYMTAB",
            "STRTAB",
            "RELA",
            "RELASZ",
            "RELAENT",
            "RELACOUNT",
            "JMPREL",
            "PLTREL",
            "FLAGS_1",
        ] {
            assert!(
                tags.iter().any(|found| found == tag),
                "{}: {tag} missing from {tags:?}",
                arch.name
            );
        }
        for tag in &tags {
            assert!(
                reference.contains(tag),
                "{}: {tag} is not in ld.bfd's {reference:?}",
                arch.name
            );
        }
        assert_eq!(tags.last().map(String::as_str), Some("NULL"));
        let dynamic = readelf(&arch, &["-dW"], &ours);
        assert!(dynamic.contains("Flags: PIE"), "{dynamic}");
    }
}

#[test]
fn code_with_32_bit_absolute_addresses_is_refused_and_nothing_is_written() {
    let dir = objects().join("x86_64");
    let _ = std::fs::remove_file(dir.join("absolute"));
    let output = link(&X86_64, true, "absolute.o", "absolute");
    let stderr = text(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("absolute.o(.text+0x1): relocation R_X86_64_32 against `counter`")
            && stderr.contains("recompile with -fPIE"),
        "{stderr}"
    );
    assert!(!dir.join("absolute").exists());
    // ld.bfd refuses it too.
    let bfd = link(&X86_64, false, "absolute.o", "absolute");
    assert!(!bfd.status.success());
    assert!(
        text(&bfd.stderr).contains("recompile with -fPIE"),
        "{}",
        text(&bfd.stderr)
    );
}

#[test]
fn a_shared_object_after_static_is_refused_by_name() {
    // After -static (-Bstatic) no shared object can be linked, as GNU ld refuses it ("attempted static link
    // of dynamic object"): it is named, with the ways out, and nothing is written. (gcc's default link, a PIE,
    // imports from shared libraries: tests/dynamic.rs.)
    let dir = objects().join("x86_64");
    let bin = format!("-B{}", objects().join("bin").display());
    let libc = text(&run_in("gcc", &dir, &["-print-file-name=libc.so.6"]).stdout);
    let output = run_in("gcc", &dir, &[&bin, "-static", "pie.o", libc.trim(), "-o", "dynamic"]);
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("libc.so.6") && stderr.contains("is a shared object") && stderr.contains("-Bdynamic"),
        "{stderr}"
    );
    assert!(!dir.join("dynamic").exists());
}
