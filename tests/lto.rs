#![allow(clippy::unwrap_used, clippy::expect_used)]
//! LTO: bitcode from `clang-14 -flto` and `-flto=thin` (several modules, a C++ COMDAT in two of them, a
//! bitcode archive, one ordinary gcc object, a section found through `__start_`/`__stop_`) linked by
//! neverc-spec as clang's linker (`--ld-path`, glibc) and as musl-gcc's (`-B`), held to ld.lld-14's build of
//! the same objects: the programs print the same, the symbol resolutions equal the resolution file lld writes
//! with `--save-temps`, symbol by symbol, a call across modules is inlined and an unused external dropped.
//!
//! The fixtures are `tests/fixtures/lto/` (built once per run by its `build.sh`).

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use neverc_test_support::{fresh_dir, repo, run_script, succeeded, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

/// What every linked fixture program prints (with no arguments, argc = 1).
const EXPECTED: &str = "helper 42\nobject 20\narchive 101\ncomdat 2 3\nweak 2\nitems 12\n";

/// The fixtures, built on first use: `full/`, `thin/` and `musl/` (see `build.sh`).
fn fixtures() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lto-fixtures");
        if let Err(message) = run_script(&repo().join("tests/fixtures/lto/build.sh"), &out) {
            panic!("building the LTO fixtures failed (clang-14, llvm-14, gcc and musl-tools are needed): {message}");
        }
        out
    })
}

/// A directory holding `ld`, a symbolic link to neverc-spec (what `--ld-path` and `-B` name).
fn ld_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = fresh_dir(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lto-ld"));
        symlink(BIN, dir.join("ld")).unwrap();
        dir
    })
}

fn run(program: &str, dir: &Path, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {program}: {error}"))
}

/// The link inputs, in command-line order.
const INPUTS: [&str; 6] = [
    "main.o",
    "helper.o",
    "object.o",
    "comdat_a.o",
    "comdat_b.o",
    "libbitcode.a",
];

/// Links the fixtures of `mode` with clang-14 (glibc, static) into `output` in a fresh directory, with
/// neverc-spec or ld.lld, and `--save-temps` (lld's spelling or the plugin option clang passes on).
fn link_with_clang(mode: &str, lld: bool, output: &str) -> PathBuf {
    let dir = fixtures().join(mode);
    let out = fresh_dir(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("lto-{mode}-{output}")));
    let program = out.join(output);
    let ld_path = format!("--ld-path={}", ld_dir().join("ld").display());
    let mut args: Vec<String> = vec!["-flto".into(), "-O2".into(), "-static".into()];
    if lld {
        args.extend(["-fuse-ld=lld".into(), "-Wl,--save-temps".into()]);
    } else {
        args.extend([ld_path, "-Wl,-plugin-opt=save-temps".into()]);
    }
    args.extend(INPUTS.iter().map(|input| dir.join(input).display().to_string()));
    args.extend(["-o".into(), program.display().to_string()]);
    let arguments: Vec<&str> = args.iter().map(String::as_str).collect();
    succeeded(
        &run("clang-14", &out, &arguments),
        &format!("clang-14 {}", arguments.join(" ")),
    );
    program
}

/// A resolution file (LLVM's format, as lld and neverc-spec write it) as (module, symbol) → flags, the module
/// named by its file name (an archive member by its member name: lld writes `lib.a(member.o at OFFSET)`,
/// neverc-spec `lib.a(member.o)`).
fn resolutions(path: &Path) -> BTreeMap<(String, String), String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let module_name = |file: &str| -> String {
        let member = file.rsplit_once('(').map(|(_, member)| {
            member
                .trim_end_matches(')')
                .split(" at ")
                .next()
                .unwrap_or("")
                .to_string()
        });
        member.unwrap_or_else(|| Path::new(file).file_name().unwrap().to_string_lossy().into_owned())
    };
    let mut found = BTreeMap::new();
    for line in text.lines().filter_map(|line| line.strip_prefix("-r=")) {
        let (rest, flags) = line.rsplit_once(',').unwrap();
        let (file, symbol) = rest.rsplit_once(',').unwrap();
        let previous = found.insert((module_name(file), symbol.to_string()), flags.to_string());
        assert!(previous.is_none(), "{}: {file},{symbol} twice", path.display());
    }
    assert!(!found.is_empty(), "{} lists no resolution", path.display());
    found
}

fn outcome(program: &Path) -> String {
    let output = run(program.to_str().unwrap(), program.parent().unwrap(), &[]);
    succeeded(&output, &program.display().to_string());
    text(&output.stdout)
}

fn check_mode(mode: &str) {
    let ours = link_with_clang(mode, false, "prog");
    let theirs = link_with_clang(mode, true, "prog.lld");
    assert_eq!(outcome(&theirs), EXPECTED, "the ld.lld build of the {mode} fixtures");
    assert_eq!(outcome(&ours), EXPECTED, "the neverc-spec build of the {mode} fixtures");
    let expected = resolutions(&theirs.with_file_name("prog.lld.resolution.txt"));
    let found = resolutions(&ours.with_file_name("prog.resolution.txt"));
    assert_eq!(
        found, expected,
        "{mode}: resolutions (left: neverc-spec, right: ld.lld --save-temps)"
    );
    // Cases the fixtures exist for.
    for (module, symbol, flags) in [
        ("main.o", "main", "plx"),               // referenced by crt1.o, an ordinary object
        ("helper.o", "helper", "plx"),           // referenced by the ordinary object.o
        ("helper.o", "unused_external", "pl"),   // referenced by nothing: may be internalized
        ("helper.o", "weak_default", "lx"),      // weak here, strong in object.o: not prevailing
        ("main.o", "item_one", "plx"),           // in a section whose __start_ some input uses
        ("main.o", "__start_neverc_items", ""),  // defined by the linker
        ("archive_one.o", "from_archive", "pl"), // a bitcode archive member
    ] {
        assert_eq!(
            found.get(&(module.to_string(), symbol.to_string())).map(String::as_str),
            Some(flags),
            "{mode}: {module} {symbol}"
        );
    }
    let comdat: Vec<(&String, &String)> = found
        .iter()
        .filter(|((_, symbol), _)| symbol.starts_with("_Z5twiceIiET_S0_"))
        .map(|((module, _), flags)| (module, flags))
        .collect();
    assert_eq!(comdat.len(), 2, "{mode}: twice<int> in both C++ modules: {comdat:?}");
    assert!(
        comdat[0].1.starts_with('p') && !comdat[1].1.starts_with('p'),
        "{mode}: the first copy prevails: {comdat:?}"
    );
    assert!(
        !found.keys().any(|(module, _)| module == "archive_two.o"),
        "an unneeded member is not extracted"
    );

    // The optimizer saw the resolutions: helper is inlined into main, unused_external is gone.
    let symbols = text(&run("nm", ours.parent().unwrap(), &[ours.to_str().unwrap()]).stdout);
    let defines = |name: &str| symbols.lines().any(|line| line.ends_with(&format!(" {name}")));
    assert!(defines("main") && !defines("unused_external"), "{mode}: {symbols}");
    assert!(
        !defines("never_needed"),
        "{mode}: the unneeded member's function is not linked"
    );
    let disassembly = text(
        &run(
            "objdump",
            ours.parent().unwrap(),
            &["-d", "--no-show-raw-insn", ours.to_str().unwrap()],
        )
        .stdout,
    );
    let main_body: String = disassembly
        .split("\n\n")
        .find(|block| block.contains("<main>:"))
        .unwrap_or_default()
        .to_string();
    assert!(
        !main_body.is_empty() && !main_body.contains("<helper>"),
        "{mode}: helper is not inlined into main:\n{main_body}"
    );
}

#[test]
fn full_lto_through_clang_runs_and_resolves_like_lld() {
    check_mode("full");
}

#[test]
fn thin_lto_through_clang_runs_and_resolves_like_lld() {
    check_mode("thin");
}

#[test]
fn bitcode_links_against_musl_through_musl_gcc() {
    let dir = fixtures().join("musl");
    let out = fresh_dir(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lto-musl-link"));
    let program = out.join("prog");
    let b = format!("-B{}", ld_dir().display());
    let mut args: Vec<String> = vec!["-static".into(), b];
    args.extend(INPUTS.iter().map(|input| dir.join(input).display().to_string()));
    args.extend(["-o".into(), program.display().to_string()]);
    let arguments: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = run("musl-gcc", &out, &arguments);
    succeeded(&output, "musl-gcc -static -B");
    assert!(
        text(&output.stderr).contains("note: neverc-spec ld: ignoring -plugin"),
        "neverc-spec was the linker"
    );
    assert_eq!(outcome(&program), EXPECTED);
}

#[test]
fn bitcode_for_another_machine_and_gcc_lto_objects_are_refused_by_name() {
    let out = fresh_dir(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lto-refused"));
    let source = repo().join("tests/fixtures/lto/helper.c");
    let source = source.to_str().unwrap();
    succeeded(
        &run(
            "clang-14",
            &out,
            &["--target=aarch64-linux-gnu", "-flto", "-c", source, "-o", "arm.o"],
        ),
        "clang-14 aarch64",
    );
    succeeded(
        &run("gcc", &out, &["-flto", "-c", source, "-o", "gimple.o"]),
        "gcc -flto",
    );
    let x86 = fixtures().join("full/main.o");
    for (inputs, named, says) in [
        (vec![x86.to_str().unwrap(), "arm.o"], "arm.o", "aarch64"),
        (vec!["gimple.o"], "gimple.o", "GCC's LTO is not supported"),
    ] {
        let mut args = vec!["link", "-o", "never"];
        args.extend(inputs);
        let output = run(BIN, &out, &args);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(named) && stderr.contains(says), "{stderr}");
        assert!(!out.join("never").exists(), "nothing is written");
    }
}

#[test]
fn unknown_and_unsupported_llvm_plugin_options_are_refused_by_name() {
    let out = fresh_dir(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lto-options"));
    let main = fixtures().join("full/main.o");
    for (option, says) in [
        ("-plugin-opt=frobnicate", "unknown LLVM plugin option `frobnicate`"),
        ("-plugin-opt=cache-dir=/tmp/c", "`cache-dir=` is not supported"),
        (
            "-plugin-opt=thinlto-index-only",
            "`thinlto-index-only` is not supported",
        ),
    ] {
        let output = run(
            BIN,
            &out,
            &[
                "ld",
                "-plugin",
                "/usr/lib/llvm-14/lib/LLVMgold.so",
                option,
                main.to_str().unwrap(),
                "-o",
                "never",
            ],
        );
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{option}: {stderr}");
        assert!(stderr.contains(says), "{option}: {stderr}");
        assert!(!out.join("never").exists());
    }
}
