#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The options that place output sections, held to GNU ld: `--section-start`, `-Ttext`, `-Tdata`, `-Tbss`,
//! `-Ttext-segment`, `-z noseparate-code`, the order of `.text` (unlikely, exit, start-up and hot code first,
//! as ld.bfd's default script has it), `-z keep-text-section-prefix` (whose output sections ld.lld's are
//! the reference for: ld.bfd ignores the option for a static executable) and `-o -`. Every program is
//! linked through the compiler driver (`gcc -static -B DIR`, DIR holding `ld`, a link to neverc-spec) and by
//! ld.bfd, and both are run; on AArch64 under qemu.
//!
//! The objects (`tests/fixtures/layout_options/*.c`) are compiled once per run of this test binary.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use neverc_test_support::cross::{AARCH64, Arch, X86_64, compile_fixtures, run_program};
use neverc_test_support::{program_headers, repo, run_in, succeeded, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

static OBJECTS: OnceLock<PathBuf> = OnceLock::new();

/// The compiled fixtures (`ARCH/sections.o`, `ARCH/code_kinds.o`) and `bin/ld`, made on first use.
fn objects() -> &'static Path {
    OBJECTS.get_or_init(|| {
        compile_fixtures(
            neverc_test_support::scratch!("layout-options"),
            BIN,
            &repo().join("tests/fixtures/layout_options"),
            &[("sections", &[][..]), ("code_kinds", &["-ffunction-sections"][..])],
        )
    })
}

/// Which linker a build uses.
#[derive(Clone, Copy, PartialEq)]
enum Linker {
    Ours,
    Bfd,
    Lld,
}

/// `ARCH-gcc -static OBJECT EXTRA -o OUTPUT` in the architecture's directory, linked by `linker`.
fn link(arch: &Arch, linker: Linker, object: &str, extra: &[&str], output: &str) -> Output {
    let dir = objects().join(arch.name);
    let bin = format!("-B{}", objects().join("bin").display());
    let chosen: &[&str] = match linker {
        Linker::Ours => &[&bin],
        Linker::Bfd => &[],
        Linker::Lld => &["-fuse-ld=lld"],
    };
    let args = [&["-static"][..], chosen, &[object], extra, &["-o", output]].concat();
    run_in(arch.gcc, &dir, &args)
}

/// Links `object` with `extra` by neverc-spec and by ld.bfd into `NAME-ours` and `NAME-bfd`, runs both and
/// checks they print the same; returns the two programs.
fn both(arch: &Arch, object: &str, extra: &[&str], name: &str) -> (PathBuf, PathBuf) {
    let dir = objects().join(arch.name);
    let ours = format!("{name}-ours");
    let bfd = format!("{name}-bfd");
    succeeded(
        &link(arch, Linker::Ours, object, extra, &ours),
        "the link by neverc-spec",
    );
    succeeded(&link(arch, Linker::Bfd, object, extra, &bfd), "the link by ld.bfd");
    let (ours, bfd) = (dir.join(ours), dir.join(bfd));
    assert_eq!(
        run_program(arch, &ours),
        run_program(arch, &bfd),
        "{name}: the programs differ"
    );
    (ours, bfd)
}

/// The address of each section of `program` (`readelf -SW`), by name.
fn section_addresses(arch: &Arch, program: &Path) -> Vec<(String, u64)> {
    let readelf = format!("{}readelf", arch.binutils);
    let output = run_in(&readelf, Path::new("."), &["-SW", &program.display().to_string()]);
    succeeded(&output, "readelf -S");
    text(&output.stdout)
        .lines()
        .filter_map(|line| {
            let (_, rest) = line.split_once(']')?;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let address = u64::from_str_radix(fields.get(2)?, 16).ok()?;
            Some((fields.first()?.to_string(), address))
        })
        .collect()
}

fn section_address(arch: &Arch, program: &Path, name: &str) -> u64 {
    section_addresses(arch, program)
        .into_iter()
        .find(|(section, _)| section == name)
        .unwrap_or_else(|| panic!("{} has no section {name}", program.display()))
        .1
}

/// The `PT_LOAD`s of `program`: (flags, virtual address).
fn loads(program: &Path) -> Vec<(String, u64)> {
    program_headers(program)
        .into_iter()
        .filter(|row| row[0] == "LOAD")
        .map(|row| {
            let flags = row[6..row.len() - 1].join(" ");
            (flags, u64::from_str_radix(row[2].trim_start_matches("0x"), 16).unwrap())
        })
        .collect()
}

#[test]
fn section_start_and_ttext_tdata_tbss_place_sections_where_ld_bfd_places_them() {
    for arch in [X86_64, AARCH64] {
        for (extra, section, address) in [
            (&["-Wl,-Ttext=0x600000"][..], ".text", 0x60_0000),
            // GNU ld reads the address as hexadecimal whether or not it has `0x`.
            (&["-Wl,-Ttext=600000"][..], ".text", 0x60_0000),
            (&["-Wl,-Tdata=0x800000"][..], ".data", 0x80_0000),
            (&["-Wl,-Tbss=0x900000"][..], ".bss", 0x90_0000),
            (&["-Wl,--section-start=.rodata=0x700000"][..], ".rodata", 0x70_0000),
        ] {
            let name = format!("start{}", section.replace('.', "-"));
            let (ours, bfd) = both(&arch, "sections.o", extra, &name);
            assert_eq!(
                section_address(&arch, &ours, section),
                address,
                "{}: {extra:?}",
                arch.name
            );
            assert_eq!(
                section_address(&arch, &bfd, section),
                address,
                "{}: {extra:?}",
                arch.name
            );
            // The sections after it follow it, as with ld.bfd: `.bss` after a moved `.data`, the read-only
            // data after a moved `.text`.
            let follows = match section {
                ".text" => Some(".rodata"),
                ".data" => Some(".bss"),
                _ => None,
            };
            if let Some(next) = follows {
                for program in [&ours, &bfd] {
                    let after = section_address(&arch, program, next);
                    assert!(
                        after > address && after < address + 0x10_0000,
                        "{}: {next} at {after:#x}",
                        arch.name
                    );
                }
            }
        }
    }
}

#[test]
fn ttext_segment_moves_the_image_base_as_ld_bfd_does() {
    for arch in [X86_64, AARCH64] {
        let (ours, bfd) = both(&arch, "sections.o", &["-Wl,-Ttext-segment=0x500000"], "text-segment");
        assert_eq!(loads(&ours)[0].1, 0x50_0000, "{}", arch.name);
        assert_eq!(loads(&bfd)[0].1, 0x50_0000, "{}", arch.name);
    }
}

#[test]
fn a_section_start_below_the_sections_before_it_is_refused_and_nothing_is_written() {
    let dir = objects().join("x86_64");
    let _ = std::fs::remove_file(dir.join("below"));
    let output = link(&X86_64, Linker::Ours, "sections.o", &["-Wl,-Tdata=0x401000"], "below");
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains(
            "--section-start .data=0x401000: the address lies below the end of the sections placed before it"
        ),
        "{stderr}"
    );
    assert!(!dir.join("below").exists());
    // A misaligned address is refused too, naming the alignment.
    let output = link(&X86_64, Linker::Ours, "sections.o", &["-Wl,-Tdata=0x800001"], "below");
    assert!(
        text(&output.stderr).contains("is not a multiple of the section's alignment"),
        "{}",
        text(&output.stderr)
    );
    assert!(!dir.join("below").exists());
}

#[test]
fn noseparate_code_maps_headers_code_and_read_only_data_with_one_segment_as_ld_bfd_does() {
    for arch in [X86_64, AARCH64] {
        let (ours, bfd) = both(&arch, "sections.o", &["-Wl,-z,noseparate-code"], "noseparate");
        for program in [&ours, &bfd] {
            let loads = loads(program);
            // One executable segment, the first, from the image base; the rest writable.
            assert_eq!(loads[0], ("R E".to_string(), 0x40_0000), "{}: {loads:?}", arch.name);
            assert!(
                loads[1..].iter().all(|(flags, _)| flags == "RW"),
                "{}: {loads:?}",
                arch.name
            );
            let end_of_read_only = section_address(&arch, program, ".rodata");
            assert!(section_address(&arch, program, ".text") < end_of_read_only);
        }
        // With separate code (the default) the code has segments of its own.
        let (ours, _) = both(&arch, "sections.o", &[], "separate");
        assert_eq!(loads(&ours)[0].0, "R", "{}", arch.name);
    }
}

/// The functions of `code_kinds.c`.
const FUNCTIONS: [&str; 6] = [
    "hot_function",
    "cold_function",
    "startup_function",
    "exit_function",
    "plain_function",
    "main",
];

/// The fixture's functions in address order.
fn function_order(arch: &Arch, program: &Path) -> Vec<String> {
    let nm = format!("{}nm", arch.binutils);
    let output = run_in(&nm, Path::new("."), &["-n", &program.display().to_string()]);
    succeeded(&output, "nm -n");
    text(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().nth(2))
        .filter(|name| FUNCTIONS.contains(name))
        .map(str::to_string)
        .collect()
}

#[test]
fn text_holds_unlikely_exit_startup_and_hot_code_first_in_ld_bfds_order() {
    for arch in [X86_64, AARCH64] {
        let (ours, bfd) = both(&arch, "code_kinds.o", &[], "code-kinds");
        let order = function_order(&arch, &bfd);
        // Whatever gcc decides for `main` (it may call it unlikely), the unlikely function comes first, then
        // exit, start-up and hot code, and the plain function last, as ld.bfd's `.text` statement says.
        let at = |name: &str| order.iter().position(|found| found == name).unwrap();
        assert!(
            at("cold_function") < at("exit_function")
                && at("exit_function") < at("startup_function")
                && at("startup_function") < at("hot_function")
                && at("hot_function") < at("plain_function"),
            "{}: ld.bfd's order {order:?}",
            arch.name
        );
        assert_eq!(function_order(&arch, &ours), order, "{}", arch.name);
    }
}

/// The section each of the fixture's functions is in, by its address.
fn function_sections(arch: &Arch, program: &Path) -> Vec<(String, String)> {
    let sections = section_addresses(arch, program);
    let nm = format!("{}nm", arch.binutils);
    let output = run_in(&nm, Path::new("."), &["-n", &program.display().to_string()]);
    text(&output.stdout)
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let name = *fields.get(2)?;
            FUNCTIONS.contains(&name).then_some(())?;
            let address = u64::from_str_radix(fields[0], 16).ok()?;
            let (section, _) = sections
                .iter()
                .filter(|(section, start)| *start <= address && section.starts_with(".text"))
                .max_by_key(|(_, start)| *start)?;
            Some((name.to_string(), section.clone()))
        })
        .collect()
}

#[test]
fn keep_text_section_prefix_makes_the_output_sections_ld_lld_makes() {
    let arch = X86_64;
    let extra = ["-Wl,-z,keep-text-section-prefix"];
    let dir = objects().join(arch.name);
    succeeded(
        &link(&arch, Linker::Ours, "code_kinds.o", &extra, "prefix-ours"),
        "neverc-spec",
    );
    succeeded(
        &link(&arch, Linker::Lld, "code_kinds.o", &extra, "prefix-lld"),
        "ld.lld",
    );
    let (ours, lld) = (dir.join("prefix-ours"), dir.join("prefix-lld"));
    assert_eq!(run_program(&arch, &ours), run_program(&arch, &lld));
    let mut expected = function_sections(&arch, &lld);
    let mut found = function_sections(&arch, &ours);
    expected.sort();
    found.sort();
    assert_eq!(found, expected);
    assert!(
        found.contains(&("cold_function".to_string(), ".text.unlikely".to_string())),
        "{found:?}"
    );
    // ld.bfd ignores the option for a static executable (with a warning); the program is the same.
    let bfd = link(&arch, Linker::Bfd, "code_kinds.o", &extra, "prefix-bfd");
    succeeded(&bfd, "ld.bfd");
    assert_eq!(run_program(&arch, &dir.join("prefix-bfd")), run_program(&arch, &ours));
}

#[test]
fn output_dash_writes_a_file_named_dash_as_ld_bfd_does() {
    for linker in [Linker::Ours, Linker::Bfd] {
        let dir = objects().join(if linker == Linker::Ours {
            "dash-ours"
        } else {
            "dash-bfd"
        });
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let object = objects().join("x86_64/sections.o").display().to_string();
        let bin = format!("-B{}", objects().join("bin").display());
        let chosen: &[&str] = if linker == Linker::Ours { &[&bin] } else { &[] };
        // gcc's own `-o` comes first; the last `-o` on ld's command line counts.
        let args = [&["-static"][..], chosen, &[&object, "-o", "unused", "-Wl,-o,-"]].concat();
        let output = run_in("gcc", &dir, &args);
        succeeded(&output, "gcc -Wl,-o,-");
        assert!(dir.join("-").is_file());
        assert!(!dir.join("unused").exists());
        assert_eq!(run_program(&X86_64, &dir.join("-")).0, "read-only data 19 7\n");
    }
}
