#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Dynamically linked executables, held to what gcc and ld.bfd make of the same sources. So far: the program
//! interpreter each target declares (`[elf] interpreter`) is the one a default `gcc` link names in
//! `PT_INTERP`; a position-independent executable that imports nothing (`ld -pie`) starts through that
//! interpreter on x86-64 and AArch64 (under qemu) as ld.bfd's does, with the same dynamic section.

use std::path::Path;

use neverc_test_support::cross::{AARCH64, Arch, X86_64, compile_fixtures, run_program};
use neverc_test_support::{repo, run_in, scratch, succeeded, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

#[test]
fn the_declared_interpreter_is_the_one_gcc_and_ld_bfd_write() {
    let dir = scratch!("dynamic-interpreter");
    std::fs::write(
        dir.join("hello.c"),
        "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }\n",
    )
    .unwrap();
    for arch in [X86_64, AARCH64] {
        let program = format!("hello-{}", arch.name);
        succeeded(&run_in(arch.gcc, &dir, &["hello.c", "-o", &program]), arch.gcc);
        let readelf = format!("{}readelf", arch.binutils);
        let headers = text(&run_in(&readelf, &dir, &["-lW", &program]).stdout);
        let written = headers
            .lines()
            .find_map(|line| line.trim().strip_prefix("[Requesting program interpreter: "))
            .and_then(|rest| rest.strip_suffix(']'))
            .unwrap_or_else(|| panic!("{program} has no PT_INTERP: {headers}"));
        let declared = neverc_tables::target_by_name(arch.name)
            .and_then(|target| target.elf)
            .and_then(|elf| elf.interpreter);
        assert_eq!(declared, Some(written), "{}", arch.name);
    }
}

/// `ARCH-readelf ARGS program`'s output.
fn readelf(arch: &Arch, args: &[&str], program: &Path) -> String {
    let readelf = format!("{}readelf", arch.binutils);
    let output = run_in(
        &readelf,
        Path::new("."),
        &[args, &[&program.display().to_string()]].concat(),
    );
    succeeded(&output, &readelf);
    text(&output.stdout)
}

/// The types of `program`'s program headers, in the table's order.
fn program_header_types(arch: &Arch, program: &Path) -> Vec<String> {
    readelf(arch, &["-lW"], program)
        .lines()
        .skip_while(|line| !line.trim_start().starts_with("Type"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|word| !word.starts_with('['))
        .map(str::to_string)
        .collect()
}

/// The dynamic section's tags, in order, without their values.
fn dynamic_tags(arch: &Arch, program: &Path) -> Vec<String> {
    readelf(arch, &["-dW"], program)
        .lines()
        .filter_map(|line| line.split_whitespace().nth(1))
        .filter(|tag| tag.starts_with('('))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_pie_that_imports_nothing_starts_through_its_interpreter_as_ld_bfds_does() {
    let objects = compile_fixtures(
        scratch!("dynamic-freestanding"),
        BIN,
        &repo().join("tests/fixtures/dynamic"),
        &[("freestanding", &["-fPIE", "-fno-asynchronous-unwind-tables"][..])],
    );
    for arch in [X86_64, AARCH64] {
        let dir = objects.join(arch.name);
        let interpreter = neverc_tables::target_by_name(arch.name)
            .and_then(|target| target.elf)
            .and_then(|elf| elf.interpreter)
            .unwrap();
        let bfd = format!("{}ld.bfd", arch.binutils);
        succeeded(
            &run_in(
                &bfd,
                &dir,
                &["-pie", "-dynamic-linker", interpreter, "-o", "bfd", "freestanding.o"],
            ),
            &bfd,
        );
        // The interpreter is the target's when the command line names none.
        succeeded(
            &run_in(BIN, &dir, &["ld", "-pie", "-o", "ours", "freestanding.o"]),
            "ld -pie",
        );
        let (ours, theirs) = (dir.join("ours"), dir.join("bfd"));
        assert_eq!(run_program(&arch, &theirs), (String::new(), Some(42)), "{}", arch.name);
        assert_eq!(run_program(&arch, &ours), (String::new(), Some(42)), "{}", arch.name);
        assert!(readelf(&arch, &["-hW"], &ours).contains("DYN (Position-Independent Executable file)"));
        let request = format!("[Requesting program interpreter: {interpreter}]");
        assert!(readelf(&arch, &["-lW"], &ours).contains(&request), "{}", arch.name);
        // PT_PHDR, then PT_INTERP, before the loads: the loader finds the load address from PT_PHDR.
        let types = program_header_types(&arch, &ours);
        assert_eq!(types[..3], ["PHDR", "INTERP", "LOAD"], "{}: {types:?}", arch.name);
        assert_eq!(program_header_types(&arch, &theirs)[..3], types[..3], "{}", arch.name);
        assert_eq!(
            dynamic_tags(&arch, &ours),
            dynamic_tags(&arch, &theirs),
            "{}",
            arch.name
        );
        // `--hash-style` chooses the hash tables as it does for ld.bfd (both, above, is its default); the
        // loader finds the program's (empty) symbol table through either.
        for style in ["--hash-style=gnu", "--hash-style=sysv"] {
            let (ours, theirs) = (format!("ours{style}"), format!("bfd{style}"));
            succeeded(
                &run_in(
                    &bfd,
                    &dir,
                    &[
                        "-pie",
                        style,
                        "-dynamic-linker",
                        interpreter,
                        "-o",
                        &theirs,
                        "freestanding.o",
                    ],
                ),
                &bfd,
            );
            succeeded(
                &run_in(BIN, &dir, &["ld", "-pie", style, "-o", &ours, "freestanding.o"]),
                style,
            );
            let (ours, theirs) = (dir.join(ours), dir.join(theirs));
            assert_eq!(
                dynamic_tags(&arch, &ours),
                dynamic_tags(&arch, &theirs),
                "{}: {style}",
                arch.name
            );
            assert_eq!(
                run_program(&arch, &ours),
                (String::new(), Some(42)),
                "{}: {style}",
                arch.name
            );
        }
        // -dynamic-linker names another interpreter.
        succeeded(
            &run_in(
                BIN,
                &dir,
                &[
                    "ld",
                    "-pie",
                    "-dynamic-linker",
                    "/opt/loader.so",
                    "-o",
                    "other",
                    "freestanding.o",
                ],
            ),
            "ld -pie -dynamic-linker",
        );
        let other = readelf(&arch, &["-lW"], &dir.join("other"));
        assert!(
            other.contains("[Requesting program interpreter: /opt/loader.so]"),
            "{other}"
        );
    }
}
