#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Options build systems pass to `ld`, each against what ld.bfd does with the same command line (ld.lld's for
//! lld's own `--image-base`): `--print-gc-sections`, `-y`, a missing entry symbol, an entry symbol in data,
//! `-M`, `--image-base`, and options accepted with no effect on a static executable. The programs are built
//! by gcc through the driver (`-B` naming a directory whose `ld` runs neverc-spec) and without it (ld.bfd).

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use neverc_test_support::{repo, scratch, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

/// A directory for a case, with `bin/ld` running neverc-spec, for gcc's `-B`.
fn case_dir(name: &str) -> PathBuf {
    let dir = scratch!("ld-options-{name}");
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    symlink(BIN, dir.join("bin/ld")).unwrap();
    dir
}

/// `gcc -static ARGS -o DIR/OUTPUT`, linked by neverc-spec when `ours`, else by ld.bfd.
fn gcc(dir: &Path, args: &[&str], output: &str, ours: bool) -> (Output, PathBuf) {
    let program = dir.join(output);
    let mut command = Command::new("gcc");
    command
        .arg("-static")
        .args(args)
        .arg("-o")
        .arg(&program)
        .current_dir(dir);
    if ours {
        command.arg("-B").arg(dir.join("bin"));
    }
    (command.output().unwrap(), program)
}

/// The lines of `stderr` that contain `marker`, with the linker's own name before it removed.
fn lines_with(stderr: &[u8], marker: &str) -> Vec<String> {
    let mut lines: Vec<String> = text(stderr)
        .lines()
        .filter_map(|line| line.find(marker).map(|at| line[at..].to_string()))
        .collect();
    lines.sort();
    lines
}

fn squares() -> String {
    repo().join("tests/fixtures/debug/squares.c").display().to_string()
}

/// `squares.o` in `dir`, compiled from the fixture (a name that stays the same from link to link).
fn compile_squares(dir: &Path) {
    std::fs::copy(squares(), dir.join("squares.c")).unwrap();
    let compiled = Command::new("gcc")
        .args(["-c", "squares.c"])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(compiled.success());
}

fn readelf(args: &[&str], program: &Path) -> String {
    text(&Command::new("readelf").args(args).arg(program).output().unwrap().stdout)
}

/// The entry point `readelf -h` shows.
fn entry(program: &Path) -> String {
    readelf(&["-h"], program)
        .lines()
        .find_map(|line| {
            line.trim()
                .strip_prefix("Entry point address:")
                .map(|value| value.trim().to_string())
        })
        .unwrap()
}

#[test]
fn print_gc_sections_lists_what_ld_bfd_lists() {
    let dir = case_dir("print-gc");
    let args = [
        "-ffunction-sections",
        &squares(),
        "-Wl,--gc-sections,--print-gc-sections",
    ];
    let (ours, program) = gcc(&dir, &args, "ours", true);
    assert!(ours.status.success(), "{}", text(&ours.stderr));
    let (reference, _) = gcc(&dir, &args, "bfd", false);
    assert!(reference.status.success());
    let normalize = |lines: Vec<String>| -> Vec<String> {
        // The compiler's temporary object has a new name each time.
        lines
            .into_iter()
            .map(|line| match line.rsplit_once("in file '/tmp/") {
                Some((head, _)) => format!("{head}in file '/tmp/...'"),
                None => line,
            })
            .collect()
    };
    let ours_lines = normalize(lines_with(&ours.stderr, "removing unused section"));
    let reference_lines = normalize(lines_with(&reference.stderr, "removing unused section"));
    assert!(ours_lines.len() > 10, "{ours_lines:?}");
    // Every section we remove ld.bfd removes, and every one ld.bfd removes we do, but for the COMDAT group
    // copies ld.bfd lists here too (neverc-spec discards those before collection).
    for line in &ours_lines {
        assert!(reference_lines.contains(line), "not in ld.bfd's list: {line}");
    }
    for line in &reference_lines {
        let comdat = line.contains('[') || line.contains("'.group'");
        assert!(comdat || ours_lines.contains(line), "missing: {line}");
    }
    assert_eq!(text(&Command::new(&program).output().unwrap().stdout), "total 14\n");
}

#[test]
fn trace_symbol_names_every_reference_and_definition_as_ld_bfd_does() {
    let dir = case_dir("trace-symbol");
    compile_squares(&dir);
    let args = ["squares.o", "-Wl,-y,printf", "-Wl,--trace-symbol=main"];
    let (ours, _) = gcc(&dir, &args, "ours", true);
    assert!(ours.status.success(), "{}", text(&ours.stderr));
    let (reference, _) = gcc(&dir, &args, "bfd", false);
    let strip = |stderr: &[u8]| -> Vec<String> {
        let mut lines: Vec<String> = text(stderr)
            .lines()
            .filter(|line| line.contains("reference to") || line.contains("definition of"))
            .map(|line| line.split_once(": ").map_or(line, |(_, rest)| rest).to_string())
            .collect();
        lines.sort();
        lines
    };
    let ours_lines = strip(&ours.stderr);
    assert_eq!(ours_lines, strip(&reference.stderr));
    assert!(
        ours_lines.iter().any(|line| line == "squares.o: reference to printf"),
        "{ours_lines:?}"
    );
    assert!(
        ours_lines.iter().any(|line| line == "squares.o: definition of main"),
        "{ours_lines:?}"
    );
}

#[test]
fn a_missing_entry_symbol_warns_and_starts_at_the_code_and_one_in_data_is_allowed() {
    let dir = case_dir("entry");
    std::fs::write(
        dir.join("data.c"),
        "int data_entry = 1;\nint main(void) { return 0; }\n",
    )
    .unwrap();
    let compiled = Command::new("gcc")
        .args(["-c", "data.c"])
        .current_dir(&dir)
        .status()
        .unwrap();
    assert!(compiled.success());
    for (extra, name) in [(&[][..], "no-start"), (&["-e", "nosuch"][..], "nosuch")] {
        let mut args = vec!["-static".to_string(), "data.o".to_string(), "-o".to_string()];
        let link = |linker: &str, output: &str| {
            let mut args = args.clone();
            args.push(output.to_string());
            args.extend(extra.iter().map(|arg| arg.to_string()));
            let mut command = Command::new(linker);
            if linker == BIN {
                command.arg("ld");
            }
            command.args(&args).current_dir(&dir).output().unwrap()
        };
        let ours = link(BIN, &format!("ours-{name}"));
        let reference = link("ld.bfd", &format!("bfd-{name}"));
        assert!(
            ours.status.success() && reference.status.success(),
            "{}",
            text(&ours.stderr)
        );
        let warning = lines_with(&ours.stderr, "cannot find entry symbol");
        assert_eq!(warning, lines_with(&reference.stderr, "cannot find entry symbol"));
        assert_eq!(warning.len(), 1, "{}", text(&ours.stderr));
        let ours_program = dir.join(format!("ours-{name}"));
        let text_start = readelf(&["-SW"], &ours_program)
            .lines()
            .find(|line| line.contains(" .text "))
            .and_then(|line| {
                line.split_whitespace()
                    .skip_while(|word| *word != ".text")
                    .nth(2)
                    .map(str::to_string)
            })
            .unwrap();
        assert_eq!(u64::from_str_radix(&text_start, 16).unwrap(), {
            let shown = entry(&ours_program);
            u64::from_str_radix(shown.trim_start_matches("0x"), 16).unwrap()
        });
        args.clear();
    }
    // `-e` naming a data symbol: accepted, the entry is that symbol, as with ld.bfd.
    let link = |linker: &str, output: &str| {
        let mut command = Command::new(linker);
        if linker == BIN {
            command.arg("ld");
        }
        command
            .args(["-static", "-e", "data_entry", "data.o", "-o", output])
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    let ours = link(BIN, "ours-data");
    assert!(ours.status.success(), "{}", text(&ours.stderr));
    assert!(link("ld.bfd", "bfd-data").status.success());
    let symbol = |program: &str| {
        readelf(&["-sW"], &dir.join(program))
            .lines()
            .find(|line| line.ends_with(" data_entry"))
            .map(|line| format!("0x{}", line.split_whitespace().nth(1).unwrap().trim_start_matches('0')))
            .unwrap()
    };
    assert_eq!(entry(&dir.join("ours-data")), symbol("ours-data"));
    assert_eq!(entry(&dir.join("bfd-data")), symbol("bfd-data"));
}

#[test]
fn print_map_image_base_and_options_without_effect() {
    let dir = case_dir("misc");
    // -M prints the link map on standard output: the one -Map writes (of the same inputs).
    compile_squares(&dir);
    let (printed, _) = gcc(&dir, &["squares.o", "-Wl,-M"], "printed", true);
    assert!(printed.status.success(), "{}", text(&printed.stderr));
    let (mapped, _) = gcc(&dir, &["squares.o", "-Wl,-Map=squares.map"], "mapped", true);
    assert!(mapped.status.success(), "{}", text(&mapped.stderr));
    let map = std::fs::read_to_string(dir.join("squares.map")).unwrap();
    assert!(map.contains(".text") && map.contains("main"), "{map}");
    assert!(text(&printed.stdout).contains(&map), "{}", text(&printed.stdout));
    // --image-base (lld's): the first segment is there, as with ld.lld, and the program runs.
    let (based, program) = gcc(&dir, &[&squares(), "-Wl,--image-base=0x800000"], "based", true);
    assert!(based.status.success(), "{}", text(&based.stderr));
    let first_load = |program: &Path| {
        readelf(&["-lW"], program)
            .lines()
            .find(|line| line.trim_start().starts_with("LOAD"))
            .and_then(|line| line.split_whitespace().nth(2).map(str::to_string))
            .unwrap()
    };
    let (lld, lld_program) = gcc(
        &dir,
        &[&squares(), "-fuse-ld=lld", "-Wl,--image-base=0x800000"],
        "lld",
        false,
    );
    assert!(lld.status.success(), "{}", text(&lld.stderr));
    assert_eq!(first_load(&program), first_load(&lld_program));
    assert_eq!(first_load(&program), "0x0000000000800000");
    assert_eq!(text(&Command::new(&program).output().unwrap().stdout), "total 14\n");
    // Accepted: --threads, -Bsymbolic (which binds a shared library's references, nothing of a program's),
    // and with a note --exclude-libs (what an executable exports is what its libraries refer to).
    let (accepted, program) = gcc(
        &dir,
        &[&squares(), "-Wl,--threads=2,--no-threads,-Bsymbolic,--exclude-libs=ALL"],
        "accepted",
        true,
    );
    assert!(accepted.status.success(), "{}", text(&accepted.stderr));
    let notes = lines_with(&accepted.stderr, "is not applied").len();
    assert_eq!(notes, 1, "{}", text(&accepted.stderr));
    assert_eq!(text(&Command::new(&program).output().unwrap().stdout), "total 14\n");
}

#[test]
fn user_errors_name_the_input_and_not_the_internal_phase() {
    let dir = case_dir("messages");
    compile_squares(&dir);
    // Binary (not text, which would be read as a linker script), and no object, archive or bitcode.
    let junk: Vec<u8> = (0..64u32).map(|index| (index * 37 % 256) as u8).collect();
    std::fs::write(dir.join("junk.bin"), junk).unwrap();
    let (failed, program) = gcc(&dir, &["squares.o", "junk.bin"], "never", true);
    let stderr = text(&failed.stderr);
    assert!(!failed.status.success());
    assert!(stderr.contains("link failed: junk.bin: unknown file type"), "{stderr}");
    assert!(!stderr.contains("read_inputs"), "{stderr}");
    assert!(!program.exists());
}

#[test]
fn large_code_model_objects_link_and_run_like_their_ld_bfd_builds() {
    let dir = case_dir("large-model");
    std::fs::copy(squares(), dir.join("squares.c")).unwrap();
    let compiled = Command::new("gcc")
        .args(["-c", "-O2", "-mcmodel=large", "squares.c"])
        .current_dir(&dir)
        .status()
        .unwrap();
    assert!(compiled.success());
    // The large model reaches data through the GOT base and calls through PLTOFF64.
    let relocations = readelf(&["-rW"], &dir.join("squares.o"));
    for kind in ["R_X86_64_GOTPC64", "R_X86_64_GOTOFF64", "R_X86_64_PLTOFF64"] {
        assert!(relocations.contains(kind), "{kind}: {relocations}");
    }
    let (ours, program) = gcc(&dir, &["squares.o"], "ours", true);
    assert!(ours.status.success(), "{}", text(&ours.stderr));
    let (reference, reference_program) = gcc(&dir, &["squares.o"], "bfd", false);
    assert!(reference.status.success());
    let run = |program: &Path| text(&Command::new(program).output().unwrap().stdout);
    assert_eq!(run(&program), run(&reference_program));
    assert_eq!(run(&program), "total 14\n");
}

#[test]
fn fatal_warnings_fail_the_link_and_write_nothing_as_with_ld_bfd() {
    let dir = case_dir("fatal-warnings");
    std::fs::write(dir.join("main.c"), "int main(void) { return 0; }\n").unwrap();
    let compiled = Command::new("gcc")
        .args(["-c", "main.c"])
        .current_dir(&dir)
        .status()
        .unwrap();
    assert!(compiled.success());
    let link = |linker: &str, output: &str, extra: &[&str]| {
        let mut command = Command::new(linker);
        if linker == BIN {
            command.arg("ld");
        }
        command
            .args(["-static", "-e", "nosuch", "main.o", "-o", output])
            .args(extra)
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    for (linker, name) in [(BIN, "ours"), ("ld.bfd", "bfd")] {
        let failed = link(linker, name, &["--fatal-warnings"]);
        assert_eq!(failed.status.code(), Some(1), "{linker}: {}", text(&failed.stderr));
        assert!(
            text(&failed.stderr).contains("cannot find entry symbol nosuch"),
            "{}",
            text(&failed.stderr)
        );
        assert!(!dir.join(name).exists(), "{linker} wrote its output");
        // The last one wins.
        let linked = link(linker, name, &["--fatal-warnings", "--no-fatal-warnings"]);
        assert!(linked.status.success(), "{linker}: {}", text(&linked.stderr));
        assert!(dir.join(name).exists());
    }
}
