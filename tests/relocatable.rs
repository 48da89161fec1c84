#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Relocatable output (`neverc-spec ld -r`, the builtin `object_merge` phase) and `--whole-archive`, held to
//! GNU ld: objects merged by neverc-spec are linked into programs by the compiler drivers with ld.bfd and must
//! run as ld.bfd's own `-r` round trip (or its direct build) runs; COMDAT groups survive as `readelf -g` lists
//! them for ld.bfd's output; archive members are merged as ld.bfd merges them; a duplicate definition is
//! refused naming both files, with nothing written.
//!
//! The relocations of executables are here too, held to ld.bfd's: `--no-relax` keeps GOT loads as ld.bfd's
//! `--no-relax` keeps them, and `--emit-relocs` keeps every relocation in `.rela<section>` sections, which
//! must give the output's bytes when applied and number, type by type, what ld.bfd keeps.
//!
//! The fixtures (`tests/fixtures/relocatable/build.sh`: the sqlite3 amalgamation and its workload driver,
//! C++ with COMDATs, exceptions and DWARF for x86-64 and AArch64, an archive with a member whose constructor
//! prints, two objects defining one name, a `-fPIC` program with GOT loads and TLS for both architectures, and
//! ld.bfd's results for each) are built once per run of this test binary (sqlite3 is kept between runs while
//! its inputs are unchanged).

use std::collections::{BTreeMap, BTreeSet};
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

/// `gcc -static` (or another driver) linking the relocation program's objects in `dir` through neverc-spec
/// (`-B bin`), with `options` passed to the linker.
fn link_relocs(driver: &str, dir: &Path, output: &str, options: &[&str]) {
    let bin = fixtures().join("bin").display().to_string();
    let _ = std::fs::remove_file(dir.join(output));
    let mut args = vec!["-static", "-B", &bin, "-o", output, "relocs_main.o", "relocs_data.o"];
    let passed: Vec<String> = options.iter().map(|option| format!("-Wl,{option}")).collect();
    args.extend(passed.iter().map(String::as_str));
    let linked = run_in(driver, dir, &args);
    succeeded(&linked, &format!("{driver} -static -B (neverc-spec) {options:?}"));
}

/// The `mov ...(%rip), %reg` instructions of `function` in `program` that load from `.got` (x86-64).
fn got_loads(program: &Path, function: &str) -> usize {
    let file = std::fs::read(program).unwrap();
    let elf = Elf::parse(&file);
    let got = elf.section(".got").expect("a .got section");
    let disassembly = text(
        &run_in(
            "objdump",
            program.parent().unwrap(),
            &["-d", "--no-show-raw-insn", &program.display().to_string()],
        )
        .stdout,
    );
    let start = format!("<{function}>:");
    disassembly
        .lines()
        .skip_while(|line| !line.ends_with(&start))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter(|line| line.contains("\tmov ") && line.contains("(%rip)"))
        .filter_map(|line| {
            let comment = line.split('#').nth(1)?.split_whitespace().next()?;
            u64::from_str_radix(comment, 16).ok()
        })
        .filter(|address| (got.address..got.address + got.size).contains(address))
        .count()
}

#[test]
fn no_relax_keeps_got_loads_as_ld_bfd_does_and_relax_makes_them_direct() {
    let dir = fixtures().join("x86_64").join("relocs");
    let expected = expected(&dir);
    assert!(expected.0.contains("counter 44"), "{}", expected.0);
    link_relocs("gcc", &dir, "neverc.elf", &[]);
    link_relocs("gcc", &dir, "neverc-no-relax.elf", &["--no-relax"]);
    link_relocs("gcc", &dir, "neverc-relax.elf", &["--no-relax", "--relax"]);
    for program in ["neverc.elf", "neverc-no-relax.elf", "neverc-relax.elf"] {
        assert_eq!(run(&[], &dir.join(program)), expected, "{program}");
    }
    // ld.bfd's --no-relax build loads the data's addresses from the GOT in `main`; so does ours, load for load;
    // without --no-relax (or after --relax) neither loads any (ld.bfd's `mov $imm`, neverc-spec's `lea`). TLS
    // sequences are relaxed either way, or the programs would not run.
    let theirs = got_loads(&dir.join("ref-no-relax.elf"), "main");
    assert!(theirs >= 2, "ld.bfd's --no-relax build has {theirs} GOT loads in main");
    assert_eq!(got_loads(&dir.join("neverc-no-relax.elf"), "main"), theirs);
    assert_eq!(got_loads(&dir.join("ref.elf"), "main"), 0);
    assert_eq!(got_loads(&dir.join("neverc.elf"), "main"), 0);
    assert_eq!(got_loads(&dir.join("neverc-relax.elf"), "main"), 0);
}

#[test]
fn no_relax_on_aarch64_links_a_program_that_runs_as_ld_bfd_s() {
    // ld.bfd relaxes no GOT load on AArch64 and neither does neverc-spec, with or without --no-relax.
    let dir = fixtures().join("aarch64").join("relocs");
    let expected = expected(&dir);
    let runner = ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"];
    for (program, options) in [("neverc.elf", &[][..]), ("neverc-no-relax.elf", &["--no-relax"][..])] {
        link_relocs("aarch64-linux-gnu-gcc", &dir, program, options);
        assert_eq!(run(&runner, &dir.join(program)), expected, "{program}");
    }
}

/// An ELF64 little-endian file as the kept-relocation tests read it.
struct Elf<'a> {
    data: &'a [u8],
    sections: Vec<ElfSection>,
    /// (value, type, name) of every symbol of `.symtab`, by index.
    symbols: Vec<(u64, u8, String)>,
}

/// A section header, with its name.
#[derive(Clone, Debug)]
struct ElfSection {
    name: String,
    kind: u32,
    flags: u64,
    address: u64,
    offset: u64,
    size: u64,
    link: u32,
    info: u32,
    entry_size: u64,
}

/// One relocation of a `.rela` section.
#[derive(Clone, Copy, Debug)]
struct Rela {
    offset: u64,
    symbol: u32,
    kind: u32,
    addend: i64,
}

impl<'a> Elf<'a> {
    fn parse(data: &'a [u8]) -> Elf<'a> {
        use object::LittleEndian as LE;
        use object::read::elf::{FileHeader as _, SectionHeader as _, Sym as _};
        let header = object::elf::FileHeader64::<LE>::parse(data).unwrap();
        let table = header.sections(LE, data).unwrap();
        let sections = table
            .iter()
            .map(|section| ElfSection {
                name: String::from_utf8_lossy(table.section_name(LE, section).unwrap()).into_owned(),
                kind: section.sh_type(LE),
                flags: section.sh_flags(LE),
                address: section.sh_addr(LE),
                offset: section.sh_offset(LE),
                size: section.sh_size(LE),
                link: section.sh_link(LE),
                info: section.sh_info(LE),
                entry_size: section.sh_entsize(LE),
            })
            .collect();
        let symbols = table.symbols(LE, data, object::elf::SHT_SYMTAB).unwrap();
        let symbols = symbols
            .iter()
            .map(|symbol| {
                let name = String::from_utf8_lossy(symbol.name(LE, symbols.strings()).unwrap()).into_owned();
                (symbol.st_value(LE), symbol.st_type(), name)
            })
            .collect();
        Elf {
            data,
            sections,
            symbols,
        }
    }

    fn section(&self, name: &str) -> Option<&ElfSection> {
        self.sections.iter().find(|section| section.name == name)
    }

    /// The relocations of the `SHT_RELA` section `section`.
    fn relocations(&self, section: &ElfSection) -> Vec<Rela> {
        let bytes = &self.data[section.offset as usize..(section.offset + section.size) as usize];
        bytes
            .chunks_exact(24)
            .map(|entry| {
                let word = |at: usize| u64::from_le_bytes(entry[at..at + 8].try_into().unwrap());
                Rela {
                    offset: word(0),
                    symbol: (word(8) >> 32) as u32,
                    kind: word(8) as u32,
                    addend: word(16) as i64,
                }
            })
            .collect()
    }

    /// The non-allocated `SHT_RELA` sections (`--emit-relocs`'s), each with its relocations.
    fn kept_relocations(&self) -> Vec<(&ElfSection, Vec<Rela>)> {
        self.sections
            .iter()
            .filter(|section| section.kind == object::elf::SHT_RELA && section.flags & 2 == 0)
            .map(|section| (section, self.relocations(section)))
            .collect()
    }

    /// `size` bytes at virtual address `address` of an allocated section with file bytes.
    fn bytes_at(&self, address: u64, size: u64) -> Option<&[u8]> {
        let section = self.sections.iter().find(|section| {
            section.flags & 2 != 0
                && section.kind != object::elf::SHT_NOBITS
                && section.address <= address
                && address + size <= section.address + section.size
        })?;
        let start = (section.offset + address - section.address) as usize;
        self.data.get(start..start + size as usize)
    }
}

/// How a relocation type is checked against the bytes it applies to: its field's size in bytes, whether it
/// is relative to the place, and whether its field is signed.
type Formula = (u64, bool, bool);

/// Checks every kept relocation of `file` whose type `formula` knows (S + A, or S + A - P) against the bytes at
/// its address, with the symbol values of the file's own symbol table. Relocations of indirect functions (whose
/// references mean their PLT entries), of thread-local symbols and of the call in a TLS sequence (rewritten
/// by its relaxation) are left out. Returns how many were checked, and the mismatches.
fn check_kept_relocations(file: &[u8], formula: &dyn Fn(u32) -> Option<Formula>) -> (usize, Vec<String>) {
    let elf = Elf::parse(file);
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (section, relocations) in elf.kept_relocations() {
        let target = &elf.sections[section.info as usize];
        if target.flags & 2 == 0 {
            continue;
        }
        for relocation in relocations {
            let Some((size, relative, signed)) = formula(relocation.kind) else {
                continue;
            };
            let (value, kind, name) = &elf.symbols[relocation.symbol as usize];
            if *kind == object::elf::STT_GNU_IFUNC || *kind == object::elf::STT_TLS || name == "__tls_get_addr" {
                continue;
            }
            let mut expected = i128::from(*value) + i128::from(relocation.addend);
            if relative {
                expected -= i128::from(relocation.offset);
            }
            let Some(bytes) = elf.bytes_at(relocation.offset, size) else {
                wrong.push(format!("{}: {:#x} lies in no section", section.name, relocation.offset));
                continue;
            };
            let mut word = [0u8; 8];
            word[..size as usize].copy_from_slice(bytes);
            let found = u64::from_le_bytes(word);
            let bits = 8 * size as u32;
            let found = if signed && bits < 64 {
                i128::from(((found << (64 - bits)) as i64) >> (64 - bits))
            } else if signed {
                i128::from(found as i64)
            } else {
                i128::from(found)
            };
            let truncated = if bits < 128 && !signed {
                expected & ((1i128 << bits) - 1)
            } else {
                expected
            };
            let agrees = found == truncated || (bits == 64 && found as u64 == expected as u64);
            checked += 1;
            if !agrees {
                wrong.push(format!(
                    "{} {:#x}: type {} against `{name}` ({value:#x}) {:+#x}: the bytes hold {found:#x}, not {expected:#x}",
                    section.name, relocation.offset, relocation.kind, relocation.addend
                ));
            }
        }
    }
    (checked, wrong)
}

/// The x86-64 types the self-consistency check applies: 64, PC64, 32, 32S, PC32 and PLT32 (a static
/// executable's calls go straight to their targets).
fn x86_64_formula(kind: u32) -> Option<Formula> {
    use object::elf::*;
    match kind {
        R_X86_64_64 => Some((8, false, false)),
        R_X86_64_PC64 => Some((8, true, true)),
        R_X86_64_32 => Some((4, false, false)),
        R_X86_64_32S => Some((4, false, true)),
        R_X86_64_PC32 | R_X86_64_PLT32 => Some((4, true, true)),
        _ => None,
    }
}

/// The AArch64 types the self-consistency check applies: ABS64, ABS32, PREL64 and PREL32.
fn aarch64_formula(kind: u32) -> Option<Formula> {
    use object::elf::*;
    match kind {
        R_AARCH64_ABS64 => Some((8, false, false)),
        R_AARCH64_ABS32 => Some((4, false, false)),
        R_AARCH64_PREL64 => Some((8, true, true)),
        R_AARCH64_PREL32 => Some((4, true, true)),
        _ => None,
    }
}

/// The number of kept relocations of each type in each `.rela` section of `file`.
fn kept_counts(file: &[u8]) -> BTreeMap<(String, u32), usize> {
    let elf = Elf::parse(file);
    let mut counts = BTreeMap::new();
    for (section, relocations) in elf.kept_relocations() {
        for relocation in relocations {
            *counts.entry((section.name.clone(), relocation.kind)).or_default() += 1;
        }
    }
    counts
}

/// Every kept relocation section of `file` is as ld.bfd writes one (`readelf -S`): `.rela` and the name of
/// the section `sh_info` names, `sh_link` the symbol table, `SHF_INFO_LINK`, not allocated, 24-byte entries.
/// Returns their names.
fn check_relocation_sections(file: &[u8]) -> BTreeSet<String> {
    let elf = Elf::parse(file);
    let symtab = elf
        .sections
        .iter()
        .position(|section| section.kind == object::elf::SHT_SYMTAB)
        .expect("a symbol table");
    let mut names = BTreeSet::new();
    for (section, _) in elf.kept_relocations() {
        let target = &elf.sections[section.info as usize];
        assert_eq!(section.name, format!(".rela{}", target.name));
        assert_eq!(section.link as usize, symtab, "{}", section.name);
        assert_eq!(section.flags, u64::from(object::elf::SHF_INFO_LINK), "{}", section.name);
        assert_eq!(section.entry_size, 24, "{}", section.name);
        assert_eq!(section.size % 24, 0, "{}", section.name);
        names.insert(section.name.clone());
    }
    names
}

/// The section symbols of `file` have their sections' addresses (relocations against them add offsets).
fn check_section_symbols(file: &[u8]) {
    let elf = Elf::parse(file);
    let data = elf.data;
    use object::LittleEndian as LE;
    use object::read::elf::{FileHeader as _, Sym as _};
    let header = object::elf::FileHeader64::<LE>::parse(data).unwrap();
    let table = header.sections(LE, data).unwrap();
    let symbols = table.symbols(LE, data, object::elf::SHT_SYMTAB).unwrap();
    for symbol in symbols
        .iter()
        .filter(|symbol| symbol.st_type() == object::elf::STT_SECTION)
    {
        let section = &elf.sections[usize::from(symbol.st_shndx(LE))];
        assert_eq!(
            symbol.st_value(LE),
            section.address,
            "the section symbol of {}",
            section.name
        );
    }
}

/// Where ld.bfd's kept relocations of the x86-64 program differ from neverc-spec's, each section's total
/// being the same: (1) ld.bfd relaxes a GOT load of `mov` to `mov $imm` (`R_X86_64_32S`) where neverc-spec
/// makes `lea` (`R_X86_64_PC32`), and also relaxes loads of weak undefined symbols (`__gmon_start__` in
/// `.init`) and `test`/arithmetic instructions, which neverc-spec keeps as GOT loads
/// (`R_X86_64_REX_GOTPCRELX`); (2) ld.bfd merges identical CIEs in `.eh_frame` and writes `R_X86_64_NONE` for
/// the relocations of those it dropped, where neverc-spec keeps every CIE and its `R_X86_64_PC32`. Every
/// other type is kept in the same number in every section. For AArch64 only (2) applies (ld.bfd relaxes no GOT
/// load there either), with `R_AARCH64_NONE` and `R_AARCH64_PREL32`.
fn compare_kept_counts(ours: &[u8], theirs: &[u8], none: u32, relaxed: &[u32], pc32: u32) {
    let ours = kept_counts(ours);
    let theirs = kept_counts(theirs);
    let totals = |counts: &BTreeMap<(String, u32), usize>| {
        let mut totals: BTreeMap<String, usize> = BTreeMap::new();
        for ((section, _), count) in counts {
            *totals.entry(section.clone()).or_default() += count;
        }
        totals
    };
    assert_eq!(totals(&ours), totals(&theirs), "relocations per section");
    let count = |counts: &BTreeMap<(String, u32), usize>, section: &str, kind: u32| {
        counts.get(&(section.to_string(), kind)).copied().unwrap_or(0)
    };
    let sections: BTreeSet<&String> = theirs.keys().map(|(section, _)| section).collect();
    for section in sections {
        let kinds: BTreeSet<u32> = ours
            .keys()
            .chain(theirs.keys())
            .filter(|(name, _)| name == section)
            .map(|(_, kind)| *kind)
            .collect();
        for kind in kinds {
            let (mine, bfd) = (count(&ours, section, kind), count(&theirs, section, kind));
            if kind == none && section == ".rela.eh_frame" {
                assert_eq!(mine, 0, "{section}: neverc-spec drops no CIE");
                assert_eq!(
                    count(&ours, section, pc32),
                    count(&theirs, section, pc32) + bfd,
                    "{section}: every CIE and FDE kept"
                );
            } else if relaxed.contains(&kind) || (kind == pc32 && !relaxed.is_empty()) {
                // (1): compared as a group, whose total the section totals already hold equal.
            } else if kind != pc32 || section != ".rela.eh_frame" {
                assert_eq!(mine, bfd, "{section}: relocations of type {kind}");
            }
        }
    }
}

/// The x86-64 relocations of a relaxed GOT load ld.bfd writes in other types than neverc-spec (see
/// [`compare_kept_counts`]).
const X86_64_RELAXED: [u32; 3] = [
    object::elf::R_X86_64_32S,
    object::elf::R_X86_64_GOTPCRELX,
    object::elf::R_X86_64_REX_GOTPCRELX,
];

/// What the kept-relocation checks need to know of an architecture (see [`compare_kept_counts`]).
struct KeptTypes {
    formula: fn(u32) -> Option<Formula>,
    none: u32,
    relaxed: &'static [u32],
    pc32: u32,
}

const X86_64_TYPES: KeptTypes = KeptTypes {
    formula: x86_64_formula,
    none: object::elf::R_X86_64_NONE,
    relaxed: &X86_64_RELAXED,
    pc32: object::elf::R_X86_64_PC32,
};

const AARCH64_TYPES: KeptTypes = KeptTypes {
    formula: aarch64_formula,
    none: object::elf::R_AARCH64_NONE,
    relaxed: &[],
    pc32: object::elf::R_AARCH64_PREL32,
};

/// Holds the kept relocations of `ours` to ld.bfd's (`theirs`): (d) the same `.rela` sections, as `readelf -S`
/// lists them, with section symbols at their sections; (b) applied with each output's own symbols they give
/// its bytes (at least `minimum` of them checked; ld.bfd's output passes the same check); (c) type by type
/// what ld.bfd keeps, but for the differences [`compare_kept_counts`] explains. Returns the sections' names.
fn held_to_ld_bfd(ours: &[u8], theirs: &[u8], types: &KeptTypes, minimum: usize) -> BTreeSet<String> {
    let names = check_relocation_sections(ours);
    assert_eq!(names, check_relocation_sections(theirs));
    check_section_symbols(ours);
    for file in [ours, theirs] {
        let (checked, wrong) = check_kept_relocations(file, &types.formula);
        assert!(checked > minimum, "only {checked} relocations checked");
        assert!(
            wrong.is_empty(),
            "{} of {checked} wrong:\n{}",
            wrong.len(),
            wrong[..wrong.len().min(20)].join("\n")
        );
    }
    compare_kept_counts(ours, theirs, types.none, types.relaxed, types.pc32);
    names
}

#[test]
fn emit_relocs_keeps_the_relocations_of_every_section_as_ld_bfd_does_on_x86_64() {
    let dir = fixtures().join("x86_64").join("relocs");
    let expected = expected(&dir);
    link_relocs("gcc", &dir, "neverc-emit-relocs.elf", &["--emit-relocs"]);
    link_relocs("gcc", &dir, "neverc-q.elf", &["-q"]);
    assert_eq!(run(&[], &dir.join("neverc-emit-relocs.elf")), expected);
    let ours = std::fs::read(dir.join("neverc-emit-relocs.elf")).unwrap();
    assert_eq!(
        ours,
        std::fs::read(dir.join("neverc-q.elf")).unwrap(),
        "-q is --emit-relocs"
    );
    let theirs = std::fs::read(dir.join("ref-emit-relocs.elf")).unwrap();
    let names = held_to_ld_bfd(&ours, &theirs, &X86_64_TYPES, 5000);
    for name in [".rela.text", ".rela.data", ".rela.eh_frame", ".rela.tdata"] {
        assert!(names.contains(name), "{names:?}");
    }
    let readelf = run_in("readelf", &dir, &["-SrsW", "neverc-emit-relocs.elf"]);
    succeeded(&readelf, "readelf -SrsW");
    assert!(!text(&readelf.stderr).contains("Warning"), "{}", text(&readelf.stderr));
    // Without --emit-relocs nothing is kept, and --no-relax keeps the GOT loads' types.
    link_relocs("gcc", &dir, "neverc-plain.elf", &[]);
    let plain = Elf::parse(&std::fs::read(dir.join("neverc-plain.elf")).unwrap())
        .sections
        .iter()
        .filter(|section| section.name.starts_with(".rela.text"))
        .count();
    assert_eq!(plain, 0);
    link_relocs(
        "gcc",
        &dir,
        "neverc-emit-no-relax.elf",
        &["--emit-relocs", "--no-relax"],
    );
    let unrelaxed = kept_counts(&std::fs::read(dir.join("neverc-emit-no-relax.elf")).unwrap());
    let relaxed = kept_counts(&ours);
    let gotpcrelx = |counts: &BTreeMap<(String, u32), usize>| {
        counts
            .get(&(".rela.text".to_string(), object::elf::R_X86_64_REX_GOTPCRELX))
            .copied()
            .unwrap_or(0)
    };
    assert!(gotpcrelx(&unrelaxed) > gotpcrelx(&relaxed), "{unrelaxed:?}");
}

#[test]
fn emit_relocs_keeps_the_relocations_of_every_section_as_ld_bfd_does_on_aarch64() {
    let dir = fixtures().join("aarch64").join("relocs");
    let expected = expected(&dir);
    link_relocs(
        "aarch64-linux-gnu-gcc",
        &dir,
        "neverc-emit-relocs.elf",
        &["--emit-relocs"],
    );
    let runner = ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"];
    assert_eq!(run(&runner, &dir.join("neverc-emit-relocs.elf")), expected);
    let ours = std::fs::read(dir.join("neverc-emit-relocs.elf")).unwrap();
    let theirs = std::fs::read(dir.join("ref-emit-relocs.elf")).unwrap();
    held_to_ld_bfd(&ours, &theirs, &AARCH64_TYPES, 1000);
}

#[test]
fn emit_relocs_on_sqlite3_keeps_relocations_that_give_its_bytes_and_it_runs_as_ld_bfd_s() {
    let dir = fixtures().join("sqlite");
    let expected = expected(&dir);
    let bin = fixtures().join("bin").display().to_string();
    let linked = run_in(
        "gcc",
        &dir,
        &[
            "-static",
            "-B",
            &bin,
            "-Wl,--emit-relocs",
            "-o",
            "neverc-emit-relocs.elf",
            "sqlite_driver.o",
            "sqlite3.o",
            "-lm",
            "-lpthread",
            "-ldl",
        ],
    );
    succeeded(&linked, "gcc -static -B (neverc-spec) -Wl,--emit-relocs sqlite3");
    assert_eq!(run(&[], &dir.join("neverc-emit-relocs.elf")), expected);
    let ours = std::fs::read(dir.join("neverc-emit-relocs.elf")).unwrap();
    let theirs = std::fs::read(dir.join("ref-emit-relocs.elf")).unwrap();
    held_to_ld_bfd(&ours, &theirs, &X86_64_TYPES, 20_000);
}

#[test]
fn emit_relocs_is_refused_with_strip_all_and_ignored_by_a_relocatable_link_as_by_ld_bfd() {
    let dir = fixtures().join("x86_64").join("relocs");
    for strip in ["-s", "--strip-all"] {
        let _ = std::fs::remove_file(dir.join("refused.elf"));
        let result = ld(&dir, &["--emit-relocs", strip, "-o", "refused.elf", "relocs_data.o"]);
        let stderr = text(&result.stderr);
        assert_eq!(result.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("--emit-relocs with -s/--strip-all"), "{stderr}");
        assert!(!dir.join("refused.elf").exists());
    }
    // ld.bfd's -r writes the same object with or without --emit-relocs; so does neverc-spec's.
    for (output, extra) in [("r-plain.o", &[][..]), ("r-emit.o", &["--emit-relocs"][..])] {
        let result = ld(
            &dir,
            &[&["-r", "-o", output][..], extra, &["relocs_main.o", "relocs_data.o"]].concat(),
        );
        succeeded(&result, &format!("neverc-spec ld -r {extra:?}"));
    }
    assert_eq!(
        std::fs::read(dir.join("r-plain.o")).unwrap(),
        std::fs::read(dir.join("r-emit.o")).unwrap()
    );
}
