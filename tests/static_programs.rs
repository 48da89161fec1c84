#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Real programs against real C libraries: C programs against musl and glibc, C++ against glibc and
//! libstdc++, linked statically by `neverc-spec link` from the same inputs `gcc -static` hands to ld.bfd,
//! with and without `--gc-sections`. Each must print what the ld.bfd build prints and exit as it does.
//!
//! The fixtures (`tests/fixtures/libc/build.sh`: objects, input lists, ld.bfd builds and their output) are
//! built once per run of this test binary.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use neverc_test_support::{LinkCases, elf_section, program_headers, read_text, repo, run_script, text};

static FIXTURES: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// The built fixtures (on first use).
fn fixtures() -> &'static Path {
    let built = FIXTURES.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("libc-programs");
        run_script(&repo().join("tests/fixtures/libc/build.sh"), &out).map(|()| out)
    });
    match built {
        Ok(path) => path,
        Err(message) => panic!("building the C library fixtures failed (gcc, g++, musl-tools needed): {message}"),
    }
}

/// The cases, linked by neverc-spec.
fn cases() -> LinkCases<'static> {
    LinkCases {
        dir: fixtures(),
        linker: env!("CARGO_BIN_EXE_neverc-spec"),
    }
}

/// Links `case` with `extra` options into `output`; the link's stderr when it fails.
fn link(case: &Path, output: &Path, extra: &[&str]) -> Result<(), String> {
    cases().link(case, output, extra)
}

/// Runs `program` in its case directory: (stdout, exit status).
fn run(program: &Path) -> (String, i32) {
    let result = Command::new(program)
        .current_dir(program.parent().unwrap())
        .output()
        .expect("the linked program starts");
    (text(&result.stdout), result.status.code().unwrap_or(-1))
}

/// The program properties `readelf -n` shows for `program`.
fn properties(program: &Path) -> Vec<String> {
    let listing = Command::new("readelf").arg("-n").arg(program).output().unwrap();
    text(&listing.stdout)
        .lines()
        .filter(|line| line.contains("Properties:"))
        .map(|line| line.trim().to_string())
        .collect()
}

/// Every case with `prefix`, linked with and without `--gc-sections`, runs like its ld.bfd build, and the
/// inputs' program properties merge as ld.bfd merges them.
fn check_cases(prefix: &str) {
    cases().check(prefix, run, |name, case, extra, output| {
        let (ours, theirs) = (properties(output), properties(&case.join("ref.elf")));
        (ours != theirs).then(|| format!("{name} {extra:?}: properties {ours:?}, ld.bfd's {theirs:?}"))
    });
}

#[test]
fn c_programs_against_musl_run_like_their_ld_bfd_builds() {
    check_cases("hello-musl");
    check_cases("init-musl");
    check_cases("tls-musl");
    check_cases("tbss-musl");
}

#[test]
fn c_programs_against_glibc_run_like_their_ld_bfd_builds() {
    check_cases("hello-glibc");
    check_cases("init-glibc");
    check_cases("tls-glibc");
    check_cases("tbss-glibc");
}

#[test]
fn indirect_functions_run_like_their_ld_bfd_builds() {
    check_cases("ifunc-glibc");
}

#[test]
fn a_cxx_program_with_exceptions_across_three_units_runs_like_its_ld_bfd_build() {
    check_cases("cxx-glibc");
}

#[test]
fn the_program_headers_are_loaded_and_thread_local_storage_has_its_segment() {
    let case = fixtures().join("tls-glibc-plain");
    let output = case.join("headers.elf");
    link(&case, &output, &[]).unwrap();
    let headers = program_headers(&output);
    let kinds: Vec<&str> = headers.iter().map(|fields| fields[0].as_str()).collect();
    // The first load maps the file from offset 0: the ELF header and the program headers (AT_PHDR).
    let first_load = headers.iter().find(|fields| fields[0] == "LOAD").unwrap();
    assert_eq!(first_load[1], "0x000000", "{headers:?}");
    for kind in ["TLS", "GNU_STACK", "NOTE", "GNU_RELRO", "GNU_PROPERTY"] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }
    // RELRO covers the TLS template, the constructor arrays and the GOT, and ends on a page boundary.
    let relro = headers.iter().find(|fields| fields[0] == "GNU_RELRO").unwrap();
    let hex = |field: &str| u64::from_str_radix(field.trim_start_matches("0x"), 16).unwrap();
    assert_eq!((hex(&relro[2]) + hex(&relro[5])) % 0x1000, 0, "{relro:?}");
    // ld.bfd's build has the same template: .tdata's file size and the whole block's size and alignment.
    let reference = program_headers(&case.join("ref.elf"));
    let tls = |headers: &[Vec<String>]| {
        let fields = headers.iter().find(|fields| fields[0] == "TLS").unwrap().clone();
        (fields[4].clone(), fields[5].clone(), fields[7].clone())
    };
    assert_eq!(tls(&headers), tls(&reference));
}

/// The FDEs of a program's `.eh_frame` (as `readelf --debug-dump=frames` lists them).
fn fde_count(program: &Path) -> usize {
    let listing = Command::new("readelf")
        .arg("--debug-dump=frames")
        .arg(program)
        .output()
        .unwrap();
    text(&listing.stdout)
        .lines()
        .filter(|line| line.contains(" FDE "))
        .count()
}

#[test]
fn the_unwind_search_table_lists_every_kept_fde_in_order_and_exceptions_use_it() {
    let case = fixtures().join("cxx-glibc-plain");
    let expected = read_text(&case.join("expected.stdout"));
    for (label, extra, reference) in [
        ("hdr", &["--eh-frame-hdr"][..], "ref-hdr.elf"),
        ("hdr-gc", &["--eh-frame-hdr", "--gc-sections"][..], "ref-hdr-gc.elf"),
    ] {
        let output = case.join(format!("{label}.elf"));
        link(&case, &output, extra).unwrap();
        assert_eq!(run(&output), (expected.clone(), 0), "{label}");
        // The FDEs of discarded functions are gone, as from ld.bfd's build of the same objects.
        let fdes = fde_count(&output);
        assert_eq!(fdes, fde_count(&case.join(reference)), "{label}");
        let headers = program_headers(&output);
        assert!(headers.iter().any(|fields| fields[0] == "GNU_EH_FRAME"), "{label}");
        // Version 1, pcrel|sdata4 pointer to .eh_frame, udata4 count, datarel|sdata4 pairs.
        let image = std::fs::read(&output).unwrap();
        let (header, table) = elf_section(&image, ".eh_frame_hdr");
        let (frames, frame_bytes) = elf_section(&image, ".eh_frame");
        assert_eq!(table[..4], [1, 0x1b, 0x03, 0x3b], "{label}");
        let i32_at = |bytes: &[u8], at: usize| i32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        assert_eq!(header as i64 + 4 + i64::from(i32_at(&table, 4)), frames as i64);
        let count = u32::from_le_bytes(table[8..12].try_into().unwrap()) as usize;
        assert_eq!(count, fdes, "{label}");
        let mut previous = i64::MIN;
        for entry in 0..count {
            let location = header as i64 + i64::from(i32_at(&table, 12 + entry * 8));
            let fde = header as i64 + i64::from(i32_at(&table, 16 + entry * 8));
            assert!(location > previous, "{label}: entry {entry} out of order");
            previous = location;
            // Every FDE of these objects encodes its start pc-relative (augmentation "zR", 0x1b).
            let at = (fde - frames as i64) as usize;
            assert_eq!(
                fde + 8 + i64::from(i32_at(&frame_bytes, at + 8)),
                location,
                "{label}: entry {entry}"
            );
        }
    }
}
