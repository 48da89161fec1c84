#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The options that change how symbols resolve or which the symbol table keeps (issue 26): `--wrap`,
//! `--defsym`, `-u`, `--require-defined`, `--allow-multiple-definition`, `--unresolved-symbols=`,
//! `--warn-unresolved-symbols`, `--noinhibit-exec`, `--error-limit`, `--retain-symbols-file`,
//! `--version-script` and `--cref`. Each program is linked by gcc with neverc-spec (`-B DIR`) and with ld.bfd
//! (ld.lld for `--version-script`, whose static links GNU ld leaves global) from the same objects, and both
//! builds are run and compared.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use neverc_test_support::{repo, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

/// How a program was linked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Linker {
    Ours,
    Bfd,
    Lld,
}

static OBJECTS: OnceLock<PathBuf> = OnceLock::new();

/// The fixture objects and archives (`liblib.a`, `libpulled.a`), compiled once, and `bin/ld`.
fn objects() -> &'static Path {
    OBJECTS.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("symbol-options");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        symlink(BIN, dir.join("bin/ld")).unwrap();
        let fixtures = repo().join("tests/fixtures/symbols");
        for name in ["main", "lib", "pulled", "dup", "locals"] {
            let status = Command::new("gcc")
                .args(["-O1", "-c"])
                .arg(fixtures.join(format!("{name}.c")))
                .arg("-o")
                .arg(dir.join(format!("{name}.o")))
                .status()
                .unwrap();
            assert!(status.success(), "gcc -c {name}.c");
        }
        for (archive, member) in [("liblib.a", "lib.o"), ("libpulled.a", "pulled.o")] {
            let status = Command::new("ar")
                .args(["rc", archive, member])
                .current_dir(&dir)
                .status()
                .unwrap();
            assert!(status.success(), "ar {archive}");
        }
        std::fs::write(
            dir.join("version.map"),
            "VERS_1 { global: keep_this; main; local: *; };\n",
        )
        .unwrap();
        std::fs::write(dir.join("retain.txt"), "keep_this\nmain\n").unwrap();
        dir
    })
}

/// `gcc -static ARGS -o NAME` in the fixtures' directory with `linker`.
fn link(linker: Linker, name: &str, args: &[&str]) -> (Output, PathBuf) {
    let dir = objects();
    let suffix = match linker {
        Linker::Ours => "ours",
        Linker::Bfd => "bfd",
        Linker::Lld => "lld",
    };
    let program = dir.join(format!("{name}.{suffix}"));
    let _ = std::fs::remove_file(&program);
    let mut command = Command::new("gcc");
    command
        .arg("-static")
        .args(args)
        .arg("-o")
        .arg(&program)
        .current_dir(dir);
    match linker {
        Linker::Ours => command.arg("-B").arg(dir.join("bin")),
        Linker::Bfd => command.arg("-fuse-ld=bfd"),
        Linker::Lld => command.arg("-fuse-ld=lld"),
    };
    (command.output().unwrap(), program)
}

/// Runs `program`: (stdout, exit status).
fn run(program: &Path) -> (String, Option<i32>) {
    let output = Command::new(program).output().unwrap();
    (text(&output.stdout), output.status.code())
}

/// Links with neverc-spec and with `reference`, both must succeed, and both programs run alike.
fn runs_like(reference: Linker, name: &str, args: &[&str]) -> (PathBuf, PathBuf, Output) {
    let (ours, ours_program) = link(Linker::Ours, name, args);
    assert!(
        ours.status.success(),
        "{name}: our link failed:\n{}",
        text(&ours.stderr)
    );
    let (theirs, their_program) = link(reference, name, args);
    assert!(
        theirs.status.success(),
        "{name}: the reference link failed:\n{}",
        text(&theirs.stderr)
    );
    assert_eq!(run(&ours_program), run(&their_program), "{name}");
    (ours_program, their_program, ours)
}

/// `nm`'s type letter of each of `names` in `program`.
fn nm_types(program: &Path, names: &[&str]) -> Vec<(String, String)> {
    let listing = Command::new("nm").arg(program).output().unwrap();
    let mut found: Vec<(String, String)> = text(&listing.stdout)
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.len() == 3 && names.contains(&fields[2])).then(|| (fields[2].to_string(), fields[1].to_string()))
        })
        .collect();
    found.sort();
    found
}

const BASE: [&str; 5] = [
    "-Wl,--wrap=malloc_like",
    "-Wl,--defsym=alias_of_answer=answer",
    "-Wl,--defsym=absolute_marker=0x1234",
    "-Wl,--unresolved-symbols=ignore-all",
    "main.o",
];

#[test]
fn wrap_defsym_and_undefined_resolve_as_ld_bfd_resolves_them() {
    // `-u pulled_in` brings in a member nothing refers to (its constructor prints), with and without
    // --gc-sections; `answer` comes from liblib.a because --defsym names it.
    for gc in [&[][..], &["-Wl,--gc-sections"][..]] {
        let args = [&BASE[..], gc, &["-Wl,-u,pulled_in", "liblib.a", "libpulled.a"]].concat();
        let (ours, theirs, _) = runs_like(Linker::Bfd, "wrap", &args);
        let (stdout, _) = run(&ours);
        assert!(
            stdout.contains("wrapped 1010") && stdout.contains("pulled member linked"),
            "{stdout}"
        );
        let names = ["absolute_marker", "alias_of_answer", "pulled_in", "__wrap_malloc_like"];
        assert_eq!(nm_types(&ours, &names), nm_types(&theirs, &names));
    }
}

#[test]
fn require_defined_and_multiple_definitions_fail_or_pass_as_with_ld_bfd() {
    let args = [&BASE[..], &["-Wl,--require-defined=not_anywhere", "liblib.a"]].concat();
    let (ours, _) = link(Linker::Ours, "required", &args);
    let (theirs, _) = link(Linker::Bfd, "required", &args);
    assert!(!theirs.status.success());
    assert_eq!(ours.status.code(), Some(1));
    assert!(
        text(&ours.stderr).contains("required symbol `not_anywhere' not defined"),
        "{}",
        text(&ours.stderr)
    );
    // With --require-defined naming a member's symbol, the member is linked.
    let args = [
        &BASE[..],
        &["-Wl,--require-defined=pulled_in", "liblib.a", "libpulled.a"],
    ]
    .concat();
    runs_like(Linker::Bfd, "required-ok", &args);

    // Two definitions of malloc_like in objects: an error naming both, unless allowed (the first wins).
    let args = [&BASE[..], &["lib.o", "dup.o"]].concat();
    let (ours, program) = link(Linker::Ours, "muldefs-refused", &args);
    let stderr = text(&ours.stderr);
    assert_eq!(ours.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("dup.o: multiple definition of `malloc_like'; lib.o: first defined here"),
        "{stderr}"
    );
    assert!(!program.exists());
    for allow in ["-Wl,--allow-multiple-definition", "-Wl,-z,muldefs"] {
        runs_like(Linker::Bfd, "muldefs", &[&args[..], &[allow]].concat());
    }
}

#[test]
fn unresolved_references_are_errors_warnings_or_nothing_as_asked() {
    let args = [
        "-Wl,--wrap=malloc_like",
        "-Wl,--defsym=alias_of_answer=answer",
        "-Wl,--defsym=absolute_marker=0x1234",
        "main.o",
        "liblib.a",
    ];
    // By default, GNU ld's words, in the function that refers.
    let (ours, program) = link(Linker::Ours, "unresolved", &args);
    let stderr = text(&ours.stderr);
    assert_eq!(ours.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("main.o: in function `main': undefined reference to `missing'"),
        "{stderr}"
    );
    assert!(!program.exists());
    // --error-limit=1 lists one (lld's option).
    let two_missing = [
        "-Wl,--defsym=absolute_marker=0x1234",
        "main.o",
        "liblib.a",
        "-Wl,--error-limit=1",
    ];
    let (ours, _) = link(Linker::Ours, "unresolved", &two_missing);
    let stderr = text(&ours.stderr);
    assert_eq!(stderr.matches("undefined reference to").count(), 1, "{stderr}");
    assert!(stderr.contains("too many errors emitted"), "{stderr}");
    // Ignored, warned about, or written anyway with --noinhibit-exec: the program runs as ld.bfd's does.
    runs_like(
        Linker::Bfd,
        "ignored",
        &[&args[..], &["-Wl,--unresolved-symbols=ignore-in-object-files"]].concat(),
    );
    let (_, _, ours) = runs_like(
        Linker::Bfd,
        "warned",
        &[&args[..], &["-Wl,--warn-unresolved-symbols"]].concat(),
    );
    assert!(text(&ours.stderr).contains("warning: main.o: in function `main': undefined reference to `missing'"));
    let (_, _, ours) = runs_like(
        Linker::Bfd,
        "noinhibit",
        &[&args[..], &["-Wl,--noinhibit-exec"]].concat(),
    );
    assert!(text(&ours.stderr).contains("undefined reference to `missing'"));
}

#[test]
fn the_symbol_table_keeps_what_retain_symbols_file_and_version_scripts_say() {
    let names = ["keep_this", "hide_this", "main"];
    let args = [
        &BASE[..],
        &["locals.o", "liblib.a", "-Wl,--retain-symbols-file=retain.txt"],
    ]
    .concat();
    let (ours, theirs, _) = runs_like(Linker::Bfd, "retain", &args);
    assert_eq!(nm_types(&ours, &names), nm_types(&theirs, &names));
    let listing = text(&Command::new("nm").arg(&ours).output().unwrap().stdout);
    assert_eq!(listing.lines().count(), 2, "{listing}");
    // GNU ld leaves a static executable's symbols global whatever the script says; ld.lld makes the `local:`
    // ones local, which is what the option asks for.
    let args = [&BASE[..], &["locals.o", "liblib.a", "-Wl,--version-script=version.map"]].concat();
    let (ours, theirs, _) = runs_like(Linker::Lld, "version", &args);
    assert_eq!(nm_types(&ours, &names), nm_types(&theirs, &names));
    assert_eq!(
        nm_types(&ours, &["hide_this"]),
        [("hide_this".to_string(), "t".to_string())]
    );
}

#[test]
fn cref_prints_the_table_ld_bfd_prints() {
    let args = [&BASE[..], &["liblib.a", "-Wl,--cref"]].concat();
    let (ours, _) = link(Linker::Ours, "cref", &args);
    let (theirs, _) = link(Linker::Bfd, "cref", &args);
    assert!(
        ours.status.success() && theirs.status.success(),
        "{}",
        text(&ours.stderr)
    );
    // The rows of the names the fixture objects define or refer to (libc's rows hold libc's paths).
    let rows = |stdout: &[u8]| -> Vec<String> {
        let listing = text(stdout);
        let mut rows = Vec::new();
        let mut keep = false;
        for line in listing.lines() {
            if !line.starts_with(' ') {
                keep = ["answer ", "malloc_like ", "__wrap_malloc_like ", "missing "]
                    .iter()
                    .any(|name| line.starts_with(name));
            }
            if keep {
                rows.push(line.to_string());
            }
        }
        rows
    };
    let ours_rows = rows(&ours.stdout);
    assert!(text(&ours.stdout).contains("Cross Reference Table"));
    assert!(!ours_rows.is_empty());
    assert_eq!(ours_rows, rows(&theirs.stdout));
}
