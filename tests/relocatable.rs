#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Relocatable output (`neverc-spec ld -r`, the builtin `object_merge` phase) and `--whole-archive`, held to
//! GNU ld: objects merged by neverc-spec are linked into programs by the compiler drivers with ld.bfd and must
//! run as ld.bfd's own `-r` round trip (or its direct build) runs; COMDAT groups survive as `readelf -g` lists
//! them for ld.bfd's output; archive members are merged as ld.bfd merges them; a duplicate definition is
//! refused naming both files, with nothing written.
//!
//! The fixtures (`tests/fixtures/relocatable/build.sh`: the sqlite3 amalgamation and its workload driver,
//! C++ with COMDATs, exceptions and DWARF for x86-64 and AArch64, an archive with a member whose constructor
//! prints, two objects defining one name, and ld.bfd's results for each) are built once per run of this test
//! binary (sqlite3 is kept between runs while its inputs are unchanged).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use neverc_test_support::{build_fixtures_with_ld, read_text, run_in, succeeded, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

static FIXTURES: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// The built fixtures (on first use), with `bin/ld`, a symbolic link to neverc-spec, for `gcc -B`.
fn fixtures() -> &'static Path {
    let built = FIXTURES.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("relocatable-fixtures");
        build_fixtures_with_ld("tests/fixtures/relocatable/build.sh", out, BIN)
    });
    match built {
        Ok(path) => path,
        Err(message) => panic!(
            "building the relocatable fixtures failed (gcc, g++, binutils, g++-aarch64-linux-gnu, qemu-user and \
             cargo are needed): {message}"
        ),
    }
}

/// `neverc-spec ld ARGS` in `dir`.
fn ld(dir: &Path, args: &[&str]) -> Output {
    run_in(BIN, dir, &[&["ld"], args].concat())
}

/// Runs `program` in its directory, through `runner` (`qemu-aarch64 -L ...` for AArch64): (stdout, status).
fn run(runner: &[&str], program: &Path) -> (String, Option<i32>) {
    let mut command = match runner.split_first() {
        Some((first, rest)) => {
            let mut command = Command::new(first);
            command.args(rest).arg(program);
            command
        }
        None => Command::new(program),
    };
    let output = command.current_dir(program.parent().unwrap()).output().unwrap();
    (text(&output.stdout), output.status.code())
}

/// What a reference build printed and its exit status, from `expected.stdout` and `expected.status`.
fn expected(dir: &Path) -> (String, Option<i32>) {
    let status = read_text(&dir.join("expected.status")).trim().parse().unwrap();
    (read_text(&dir.join("expected.stdout")), Some(status))
}

/// The ELF type of the file at `path` (`ET_REL` is 1).
fn elf_type(path: &Path) -> u16 {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF", "{} is not ELF", path.display());
    u16::from_le_bytes([bytes[16], bytes[17]])
}

/// The global and weak symbols `object` defines (`readelf -s`), as `build.sh`'s `global_definitions` lists them.
fn global_definitions(readelf: &str, object: &Path) -> BTreeSet<String> {
    let output = run_in(
        readelf,
        object.parent().unwrap(),
        &["-sW", &object.display().to_string()],
    );
    succeeded(&output, "readelf -s");
    text(&output.stdout)
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let defined = fields.len() >= 8 && matches!(fields[4], "GLOBAL" | "WEAK") && fields[6] != "UND";
            defined.then(|| fields[7].to_string())
        })
        .collect()
}

/// The signatures of `object`'s COMDAT groups as `readelf -g` lists them, sorted (duplicates kept).
fn comdat_signatures(readelf: &str, object: &Path) -> Vec<String> {
    let output = run_in(
        readelf,
        object.parent().unwrap(),
        &["-gW", &object.display().to_string()],
    );
    succeeded(&output, "readelf -g");
    let mut signatures: Vec<String> = text(&output.stdout)
        .lines()
        .filter(|line| line.starts_with("COMDAT group section"))
        .filter_map(|line| {
            let start = line.find("' [")? + 3;
            let end = line.rfind("] contains")?;
            Some(line[start..end].to_string())
        })
        .collect();
    signatures.sort();
    signatures
}

#[test]
fn sqlite3_merged_by_minus_r_links_with_gcc_and_runs_its_workload_as_ld_bfd_builds_do() {
    let dir = fixtures().join("sqlite");
    let expected = expected(&dir);
    assert!(expected.0.contains("sqlite 3."), "{}", expected.0);
    let merged = dir.join("neverc-r.o");
    let _ = std::fs::remove_file(&merged);
    let result = ld(&dir, &["-r", "-o", "neverc-r.o", "sqlite_driver.o", "sqlite3.o"]);
    succeeded(&result, "neverc-spec ld -r");
    assert_eq!(elf_type(&merged), 1);
    // Both merged objects, ours and ld.bfd's, become programs through gcc and ld.bfd.
    for (object, program) in [("neverc-r.o", "neverc-r.elf"), ("bfd-r.o", "bfd-r.elf")] {
        let linked = run_in(
            "gcc",
            &dir,
            &[
                "-static",
                "-fuse-ld=bfd",
                "-o",
                program,
                object,
                "-lm",
                "-lpthread",
                "-ldl",
            ],
        );
        succeeded(&linked, &format!("gcc -static {object}"));
        assert_eq!(run(&[], &dir.join(program)), expected, "{program}");
    }
    // The merged object defines what the two objects define.
    let ours = global_definitions("readelf", &merged);
    assert_eq!(ours, global_definitions("readelf", &dir.join("bfd-r.o")));
    assert!(ours.contains("sqlite3_open") && ours.contains("main"), "{ours:?}");
}

/// The C++ case of `arch`: merged by neverc-spec, linked by the driver `cxx` with ld.bfd, run through `runner`.
fn cxx_round_trip(arch: &str, cxx: &str, readelf: &str, runner: &[&str]) {
    let dir = fixtures().join(arch).join("cxx");
    let merged = dir.join("neverc-r.o");
    let _ = std::fs::remove_file(&merged);
    let result = ld(&dir, &["-r", "-o", "neverc-r.o", "cxx_main.o", "cxx_a.o", "cxx_b.o"]);
    succeeded(&result, &format!("{arch}: neverc-spec ld -r"));
    assert_eq!(elf_type(&merged), 1);
    // Every COMDAT group survives once, with ld.bfd's signatures; each unit had its own copies of them.
    let groups = comdat_signatures(readelf, &merged);
    let theirs: Vec<String> = read_text(&dir.join("bfd-r.groups"))
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(groups, theirs, "{arch}");
    assert!(
        groups.iter().any(|group| group == "_ZNK6ScaledIiE5twiceEv"),
        "{groups:?}"
    );
    let copies: usize = ["cxx_main.o", "cxx_a.o", "cxx_b.o"]
        .iter()
        .map(|unit| comdat_signatures(readelf, &dir.join(unit)).len())
        .sum();
    assert!(
        copies > groups.len(),
        "{arch}: the units have no duplicate groups to drop"
    );
    let linked = run_in(
        cxx,
        &dir,
        &["-static", "-fuse-ld=bfd", "-o", "neverc-r.elf", "neverc-r.o"],
    );
    succeeded(&linked, &format!("{arch}: {cxx} -static neverc-r.o"));
    let ran = run(runner, &dir.join("neverc-r.elf"));
    assert_eq!(ran, expected(&dir), "{arch}");
    assert!(ran.0.contains("caught ShapeError: negative value -7"), "{}", ran.0);
    // The debugging information survives too: the program's DWARF (units, line tables) is what ld.bfd's round
    // trip gives it, the references of dropped COMDAT copies moved to the kept ones as ld.bfd moves them.
    for dump in ["--debug-dump=info", "--debug-dump=decodedline"] {
        let ours = text(&run_in(readelf, &dir, &["-W", dump, "neverc-r.elf"]).stdout);
        let theirs = text(&run_in(readelf, &dir, &["-W", dump, "ref.elf"]).stdout);
        assert!(theirs.contains("cxx_b.cc"), "{arch} {dump}: no debugging information");
        assert!(
            ours == theirs,
            "{arch}: `readelf {dump}` differs from ld.bfd's round trip"
        );
    }
    // neverc-spec links its own merged object into the same program too.
    let bin = fixtures().join("bin").display().to_string();
    let linked = run_in(
        cxx,
        &dir,
        &["-static", "-B", &bin, "-o", "neverc-both.elf", "neverc-r.o"],
    );
    succeeded(&linked, &format!("{arch}: {cxx} -static -B (neverc-spec) neverc-r.o"));
    assert_eq!(
        run(runner, &dir.join("neverc-both.elf")),
        expected(&dir),
        "{arch}, linked by neverc-spec"
    );
}

#[test]
fn cxx_comdats_and_exceptions_survive_minus_r_and_the_program_runs_as_ld_bfd_round_trip_does() {
    cxx_round_trip("x86_64", "g++", "readelf", &[]);
}

#[test]
fn aarch64_cxx_comdats_and_exceptions_survive_minus_r_and_the_program_runs_under_qemu() {
    cxx_round_trip(
        "aarch64",
        "aarch64-linux-gnu-g++",
        "aarch64-linux-gnu-readelf",
        &["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"],
    );
}

#[test]
fn whole_archive_merges_every_member_and_without_it_only_the_members_needed() {
    let dir = fixtures().join("archive");
    let symbols = |name: &str| -> BTreeSet<String> { read_text(&dir.join(name)).lines().map(str::to_string).collect() };
    let result = ld(
        &dir,
        &["-r", "-o", "whole.o", "--whole-archive", "lib.a", "--no-whole-archive"],
    );
    succeeded(&result, "ld -r --whole-archive");
    let whole = global_definitions("readelf", &dir.join("whole.o"));
    assert_eq!(whole, symbols("bfd-whole.syms"));
    assert!(
        whole.contains("ctor_member_marker") && whole.contains("other_member"),
        "{whole:?}"
    );
    let result = ld(&dir, &["-r", "-o", "needed.o", "ar_main.o", "lib.a"]);
    succeeded(&result, "ld -r without --whole-archive");
    let needed = global_definitions("readelf", &dir.join("needed.o"));
    assert_eq!(needed, symbols("bfd-needed.syms"));
    assert!(
        needed.contains("used_member") && !needed.contains("other_member"),
        "{needed:?}"
    );
    // Without main and without --whole-archive, nothing refers to a member: none is merged.
    let result = ld(&dir, &["-r", "-o", "none.o", "ar_used.o", "lib.a"]);
    succeeded(&result, "ld -r of an object and an archive it needs nothing from");
    let none = global_definitions("readelf", &dir.join("none.o"));
    assert_eq!(none, BTreeSet::from(["used_member".to_string()]));
}

#[test]
fn an_executable_link_with_whole_archive_runs_the_unreferenced_members_constructor_as_ld_bfd_builds_do() {
    let dir = fixtures().join("archive");
    let bin = fixtures().join("bin").display().to_string();
    let whole = read_text(&dir.join("ref-whole.stdout"));
    let needed = read_text(&dir.join("ref-needed.stdout"));
    assert!(whole.contains("ctor: the unreferenced member is linked") && !needed.contains("ctor:"));
    for (program, extra, expected) in [
        (
            "whole.elf",
            &["-Wl,--whole-archive", "lib.a", "-Wl,--no-whole-archive"][..],
            &whole,
        ),
        ("needed.elf", &["lib.a"][..], &needed),
    ] {
        let linked = run_in(
            "gcc",
            &dir,
            &[&["-static", "-B", &bin, "-o", program, "ar_main.o"][..], extra].concat(),
        );
        succeeded(&linked, &format!("gcc -B (neverc-spec) {extra:?}"));
        assert_eq!(run(&[], &dir.join(program)), (expected.clone(), Some(0)), "{program}");
    }
}

/// `readelf -s`'s row of each global symbol of `object` named in `names`: value (a common's alignment; left
/// out for a definition, whose place differs between linkers), size, type, binding, visibility and section
/// (`COM`, `UND`, `ABS`, or `DEF` for a section).
fn symbol_rows(object: &Path, names: &[&str]) -> Vec<String> {
    let output = run_in(
        "readelf",
        object.parent().unwrap(),
        &["-sW", &object.display().to_string()],
    );
    succeeded(&output, "readelf -s");
    let mut rows: Vec<String> = text(&output.stdout)
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.len() >= 8 && names.contains(&fields[7])).then(|| {
                let section = match fields[6] {
                    "COM" | "UND" | "ABS" => fields[6],
                    _ => "DEF",
                };
                let value = if section == "COM" { fields[1] } else { "-" };
                format!(
                    "{} {value} {} {} {} {} {section}",
                    fields[7], fields[2], fields[3], fields[4], fields[5]
                )
            })
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn weak_and_common_symbols_merge_as_ld_bfd_merges_them_and_output_is_deterministic() {
    let dir = fixtures().join("symbols");
    for output in ["neverc-r.o", "again.o"] {
        let result = ld(&dir, &["-r", "-o", output, "sym_a.o", "sym_b.o"]);
        succeeded(&result, "ld -r");
    }
    assert_eq!(
        std::fs::read(dir.join("neverc-r.o")).unwrap(),
        std::fs::read(dir.join("again.o")).unwrap(),
        "two merges of the same objects differ"
    );
    let names = [
        "shared_common",
        "pick",
        "weak_only",
        "needed_elsewhere",
        "use_a",
        "use_b",
    ];
    let ours = symbol_rows(&dir.join("neverc-r.o"), &names);
    assert_eq!(ours, symbol_rows(&dir.join("bfd-r.o"), &names));
    // The common stays common, with the larger size and the stricter alignment; the strong definition wins.
    for row in [
        "shared_common 0000000000000020 32 OBJECT GLOBAL DEFAULT COM",
        "pick - 11 FUNC GLOBAL DEFAULT DEF",
        "needed_elsewhere - 0 NOTYPE GLOBAL DEFAULT UND",
        "weak_only - 0 NOTYPE WEAK DEFAULT UND",
    ] {
        let name = row.split(' ').next().unwrap();
        let found = ours.iter().find(|line| line.starts_with(&format!("{name} "))).unwrap();
        let (expected, actual): (Vec<&str>, Vec<&str>) = (row.split(' ').collect(), found.split(' ').collect());
        // The size of `pick` is gcc's business; everything else is the merge's.
        for (index, (expected, actual)) in expected.iter().zip(&actual).enumerate() {
            if !(name == "pick" && index == 2) {
                assert_eq!(expected, actual, "{found}");
            }
        }
    }
}

/// The program properties `readelf -n` lists for `object`.
fn properties(object: &Path) -> Vec<String> {
    let output = run_in(
        "readelf",
        object.parent().unwrap(),
        &["-nW", &object.display().to_string()],
    );
    succeeded(&output, "readelf -n");
    text(&output.stdout)
        .lines()
        .filter_map(|line| line.find("Properties:").map(|at| line[at..].trim().to_string()))
        .collect()
}

#[test]
fn program_property_notes_merge_into_one_as_ld_bfd_merges_them() {
    let dir = fixtures().join("symbols");
    for (output, inputs, reference) in [
        ("cf.o", &["cf_used.o", "cf_other.o"][..], "bfd-cf.o"),
        (
            "cf-mixed.o",
            &["cf_used.o", "cf_other.o", "sym_a.o"][..],
            "bfd-cf-mixed.o",
        ),
    ] {
        let result = ld(&dir, &[&["-r", "-o", output][..], inputs].concat());
        succeeded(&result, &format!("ld -r {inputs:?}"));
        assert_eq!(
            properties(&dir.join(output)),
            properties(&dir.join(reference)),
            "{inputs:?}"
        );
    }
    // Both objects have IBT and SHSTK, so the merge keeps them; with an object that lacks them, nothing is left.
    assert_eq!(properties(&dir.join("cf.o")), ["Properties: x86 feature: IBT, SHSTK"]);
    assert!(properties(&dir.join("cf-mixed.o")).is_empty());
}

#[test]
fn a_duplicate_strong_definition_is_an_error_naming_both_files_and_nothing_is_written() {
    let dir = fixtures().join("dup");
    let output = dir.join("merged.o");
    let _ = std::fs::remove_file(&output);
    let result = ld(&dir, &["-r", "-o", "merged.o", "dup_a.o", "dup_b.o"]);
    let stderr = text(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("dup_b.o: multiple definition of `clash'; ") && stderr.contains("dup_a.o: first defined here"),
        "{stderr}"
    );
    assert!(!output.exists());
    // No temporary is left beside it either.
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

#[test]
fn allow_multiple_definition_keeps_the_first_definition_in_a_relocatable_link_as_ld_bfd() {
    let dup = fixtures().join("dup");
    let dir = fixtures().join("dup-muldefs");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let inputs = [dup.join("dup_a.o"), dup.join("dup_b.o")].map(|path| path.display().to_string());
    for (linker, output) in [(BIN, "ours.o"), ("ld.bfd", "bfd.o")] {
        let mut args = vec!["-r", "--allow-multiple-definition", "-o", output];
        args.extend(inputs.iter().map(String::as_str));
        let result = if linker == BIN {
            ld(&dir, &args)
        } else {
            run_in(linker, &dir, &args)
        };
        succeeded(&result, linker);
    }
    // The kept `clash` is the first file's: its value and size equal ld.bfd's, and only one is defined.
    let clash = |object: &str| -> Vec<String> {
        let output = run_in("readelf", &dir, &["-sW", object]);
        succeeded(&output, "readelf -s");
        text(&output.stdout)
            .lines()
            .filter(|line| line.split_whitespace().nth(7) == Some("clash"))
            .map(|line| line.split_whitespace().skip(1).take(6).collect::<Vec<_>>().join(" "))
            .collect()
    };
    let ours = clash("ours.o");
    assert_eq!(ours.len(), 1, "{ours:?}");
    assert_eq!(ours, clash("bfd.o"));
}

#[test]
fn options_a_relocatable_link_does_not_apply_are_refused_naming_them_and_nothing_is_written() {
    let dir = fixtures().join("archive");
    for (option, named) in [
        (&["--gc-sections"][..], "--gc-sections"),
        (&["-Map", "refused.map"][..], "-Map/-M"),
        (&["-s"][..], "-s/-S"),
        (&["--icf=all"][..], "--icf"),
        (&["--defsym", "x=1"][..], "--defsym"),
        (&["--wrap", "main"][..], "--wrap"),
    ] {
        let _ = std::fs::remove_file(dir.join("refused.o"));
        let result = ld(&dir, &[&["-r", "-o", "refused.o"][..], option, &["ar_used.o"]].concat());
        let stderr = text(&result.stderr);
        assert_eq!(result.status.code(), Some(1), "{option:?}: {stderr}");
        assert!(
            stderr.contains(named) && stderr.contains("is not supported with -r"),
            "{option:?}: {stderr}"
        );
        assert!(
            !dir.join("refused.o").exists() && !dir.join("refused.map").exists(),
            "{option:?}"
        );
    }
}
