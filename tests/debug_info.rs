#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Debugging information in static executables, against ld.bfd's: programs built with `gcc -g -O0 -static`
//! (and g++, with COMDAT groups of which one copy is discarded, and `--gc-sections`) are linked through the
//! compiler driver by neverc-spec (`-B` naming a directory whose `ld` runs it) and by ld.bfd. The oracles:
//! `readelf --debug-dump=info` and `--debug-dump=line` of both outputs hold the same entries, attributes and
//! strings (addresses may differ, since the layouts do, but what ld.bfd resolves to 0 — code that is not in
//! the output — is 0 in ours too, and nothing else is); `.debug_str` is merged to within 2 % of ld.bfd's
//! size; gdb stops at a breakpoint set by file and line and shows the source lines of the backtrace;
//! `--compress-debug-sections=zlib` compresses the sections ld.bfd compresses, to the same content; `-S`
//! drops the debugging sections and keeps `.comment`. An AArch64 program is compared the same way.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use neverc_test_support::{repo, scratch, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

/// A directory for a case, with `bin/ld` running neverc-spec, for the compiler driver's `-B`.
fn case_dir(name: &str) -> PathBuf {
    let dir = scratch!("debug-info-{name}");
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    symlink(BIN, dir.join("bin/ld")).unwrap();
    dir
}

fn source(name: &str) -> PathBuf {
    repo().join("tests/fixtures/debug").join(name)
}

/// Builds `sources` with `compiler -g -O0 -static FLAGS` into `output`, by neverc-spec when `ours`.
fn build(compiler: &str, dir: &Path, sources: &[&str], flags: &[&str], output: &str, ours: bool) -> PathBuf {
    let program = dir.join(output);
    let mut command = Command::new(compiler);
    command.args(["-g", "-O0", "-static"]).args(flags);
    if ours {
        command.arg("-B").arg(dir.join("bin"));
    }
    let built = command
        .args(sources.iter().map(|name| source(name)))
        .arg("-o")
        .arg(&program)
        .output()
        .unwrap();
    assert!(built.status.success(), "{compiler} {output}: {}", text(&built.stderr));
    program
}

fn readelf(readelf: &str, args: &[&str], program: &Path) -> String {
    let listing = Command::new(readelf).args(args).arg(program).output().unwrap();
    assert!(listing.status.success(), "{}", text(&listing.stderr));
    text(&listing.stdout)
}

/// A debug dump with what depends on the layout masked: addresses (`0` kept as itself: ld.bfd's tombstone
/// for code that is not in the output) and offsets into the merged string tables (the strings are kept).
fn normalized(dump: &str) -> Vec<String> {
    let address = |value: &str| {
        let value = value.trim();
        if value == "0" || value == "0x0" {
            "0".to_string()
        } else {
            "ADDRESS".to_string()
        }
    };
    dump.lines()
        .skip_while(|line| !line.contains("Compilation Unit") && !line.contains("Raw dump"))
        .map(|line| {
            let mut line = line.to_string();
            for attribute in ["DW_AT_low_pc      :", "DW_AT_entry_pc    :"] {
                if let Some((head, value)) = line.split_once(attribute) {
                    line = format!("{head}{attribute} {}", address(value));
                }
            }
            if let Some((head, value)) = line.split_once("DW_OP_addr: ") {
                let value = value.split(|c: char| !c.is_ascii_hexdigit()).next().unwrap_or("");
                line = format!("{head}DW_OP_addr: {}", address(value));
            }
            for marker in ["(indirect string, offset: ", "(indirect line string, offset: "] {
                if let Some((head, rest)) = line.split_once(marker)
                    && let Some((_, string)) = rest.split_once("): ")
                {
                    line = format!("{head}{marker}_): {string}");
                }
            }
            // The line program's addresses: `set Address to 0x401615`, `advance Address by 7 to 0x40161c`.
            if let Some((head, value)) = line.split_once("set Address to ") {
                line = format!("{head}set Address to {}", address(value));
            }
            if line.contains("PC") || line.contains("Address") {
                if let Some((head, value)) = line.rsplit_once(" to 0x") {
                    let tail = value.trim_start_matches(|c: char| c.is_ascii_hexdigit());
                    line = format!("{head} to ADDRESS{tail}");
                }
            }
            line
        })
        .collect()
}

/// The size of section `name` of `program`, uncompressed (from `readelf -tW`: a compressed section's
/// compression header follows its flags, `ZLIB, SIZE, ALIGNMENT`).
fn section_size(program: &Path, name: &str) -> u64 {
    let listing = readelf("readelf", &["-tW"], program);
    let lines: Vec<&str> = listing.lines().collect();
    let at = lines
        .iter()
        .position(|line| line.split_whitespace().nth(1) == Some(name) && line.trim_start().starts_with('['))
        .unwrap_or_else(|| panic!("{} has no {name}", program.display()));
    // The line after the name: type, address, offset, size, ...
    let size = |line: &str| u64::from_str_radix(line.split_whitespace().nth(3).unwrap(), 16).unwrap();
    let header = lines[at + 3..lines.len().min(at + 4)]
        .iter()
        .find(|line| line.trim_start().starts_with("ZLIB, ") || line.trim_start().starts_with("ZSTD, "));
    match header {
        Some(line) => u64::from_str_radix(line.split(',').nth(1).unwrap().trim(), 16).unwrap(),
        None => size(lines[at + 1]),
    }
}

/// Our build and ld.bfd's hold the same debugging information.
fn same_debug_information(tool: &str, ours: &Path, reference: &Path) {
    for dump in ["--debug-dump=info", "--debug-dump=line"] {
        let (ours_dump, reference_dump) = (readelf(tool, &[dump], ours), readelf(tool, &[dump], reference));
        let (ours_lines, reference_lines) = (normalized(&ours_dump), normalized(&reference_dump));
        assert!(
            reference_lines.len() > 20,
            "{dump} of ld.bfd's build is empty: {reference_dump}"
        );
        let first_difference = ours_lines
            .iter()
            .zip(&reference_lines)
            .position(|(ours, reference)| ours != reference);
        assert!(
            first_difference.is_none() && ours_lines.len() == reference_lines.len(),
            "{dump} of {} differs from ld.bfd's at line {first_difference:?}: {:?} vs {:?}",
            ours.display(),
            first_difference.map(|line| &ours_lines[line]),
            first_difference.map(|line| &reference_lines[line]),
        );
    }
    let (ours_size, reference_size) = (section_size(ours, ".debug_str"), section_size(reference, ".debug_str"));
    assert!(
        ours_size.abs_diff(reference_size) * 50 <= reference_size,
        ".debug_str: {ours_size} bytes, ld.bfd {reference_size}"
    );
}

#[test]
fn a_c_program_has_the_debugging_information_of_its_ld_bfd_build_and_gdb_shows_its_lines() {
    let dir = case_dir("c");
    let ours = build("gcc", &dir, &["squares.c"], &[], "ours", true);
    let reference = build("gcc", &dir, &["squares.c"], &[], "bfd", false);
    same_debug_information("readelf", &ours, &reference);
    let run = Command::new(&ours).output().unwrap();
    assert_eq!(text(&run.stdout), "total 14\n");
    let session = Command::new("gdb")
        .args(["-batch", "-nx", "-ex", "break squares.c:4", "-ex", "run", "-ex", "bt"])
        .arg(&ours)
        .current_dir(&dir)
        .output()
        .expect("gdb runs (Debian: gdb; scripts/test.sh installs it)");
    let transcript = text(&session.stdout);
    assert!(
        transcript.contains("Breakpoint 1, square (x=0) at ") && transcript.contains("squares.c:4"),
        "{transcript}"
    );
    assert!(transcript.contains("4\t    int y = x * x;"), "{transcript}");
    assert!(
        transcript.contains("in main () at ") && transcript.contains("squares.c:10"),
        "{transcript}"
    );
    // Compressed as ld.bfd compresses them, with zlib and with zstd: the sections that get smaller are
    // SHF_COMPRESSED in the same format, and what they hold is the same (readelf and gdb read them).
    for (how, kind) in [("zlib", "ZLIB"), ("zstd", "ZSTD")] {
        let option = format!("-Wl,--compress-debug-sections={how}");
        let compressed = build("gcc", &dir, &["squares.c"], &[&option], how, true);
        let reference = format!("bfd-{how}");
        let compressed_reference = build("gcc", &dir, &["squares.c"], &[&option], &reference, false);
        same_debug_information("readelf", &compressed, &compressed_reference);
        let flags = |program: &Path| -> Vec<String> {
            readelf("readelf", &["-SW"], program)
                .lines()
                .filter(|line| line.contains(".debug_"))
                .map(|line| {
                    let name = line
                        .split_whitespace()
                        .find(|word| word.starts_with(".debug_"))
                        .unwrap()
                        .to_string();
                    format!(
                        "{name} compressed: {}",
                        line.contains(" C ") || line.contains("SC ") || line.contains("MSC")
                    )
                })
                .collect()
        };
        assert_eq!(flags(&compressed), flags(&compressed_reference), "{how}");
        assert!(
            flags(&compressed)
                .iter()
                .any(|row| row == ".debug_info compressed: true"),
            "{how}"
        );
        // The compression header names the format (`readelf -t`: `ZLIB, SIZE, ALIGNMENT` or `ZSTD, ...`).
        let details = readelf("readelf", &["-tW"], &compressed);
        assert!(details.contains(&format!("       {kind}, ")), "{how}: {details}");
        assert_eq!(text(&Command::new(&compressed).output().unwrap().stdout), "total 14\n");
        let gdb = Command::new("gdb")
            .args(["-batch", "-nx", "-ex", "info line squares.c:4"])
            .arg(&compressed)
            .output()
            .unwrap();
        let answer = text(&gdb.stdout);
        assert!(
            answer.contains("Line 4 of \"") && answer.contains("starts at address"),
            "{how}: {answer}"
        );
    }
    // -S drops the debugging information and keeps the comment.
    let stripped = build("gcc", &dir, &["squares.c"], &["-Wl,-S"], "stripped", true);
    let sections = readelf("readelf", &["-SW"], &stripped);
    assert!(!sections.contains(".debug_"), "{sections}");
    assert!(sections.contains(".comment"), "{sections}");
}

#[test]
fn cxx_units_with_discarded_comdat_copies_and_collected_code_have_ld_bfds_debugging_information() {
    let dir = case_dir("cxx");
    for (name, flags) in [
        ("plain", &[][..]),
        ("gc", &["-ffunction-sections", "-Wl,--gc-sections"][..]),
    ] {
        let sources = ["units_a.cpp", "units_b.cpp"];
        let ours = build("g++", &dir, &sources, flags, &format!("ours-{name}"), true);
        let reference = build("g++", &dir, &sources, flags, &format!("bfd-{name}"), false);
        same_debug_information("readelf", &ours, &reference);
        assert_eq!(text(&Command::new(&ours).output().unwrap().stdout), "12 8\n");
    }
}

#[test]
fn an_aarch64_program_has_the_debugging_information_of_its_ld_bfd_build() {
    let dir = case_dir("aarch64");
    let ours = build("aarch64-linux-gnu-gcc", &dir, &["squares.c"], &[], "ours", true);
    let reference = build("aarch64-linux-gnu-gcc", &dir, &["squares.c"], &[], "bfd", false);
    same_debug_information("aarch64-linux-gnu-readelf", &ours, &reference);
    let run = Command::new("qemu-aarch64").arg(&ours).output().unwrap();
    assert_eq!(text(&run.stdout), "total 14\n");
}
