#![allow(clippy::unwrap_used, clippy::expect_used)]
//! LTO: bitcode from `clang-14 -flto` and `-flto=thin` (several modules, a C++ COMDAT in two of them, a
//! bitcode archive, one ordinary gcc object, a section found through `__start_`/`__stop_`) linked by
//! neverc-spec as clang's linker (`--ld-path`, glibc) and as musl-gcc's (`-B`), held to ld.lld-14's build of
//! the same objects: the programs print the same, the symbol resolutions equal the resolution file lld writes
//! with `--save-temps`, symbol by symbol, a call across modules is inlined and an unused external dropped.
//!
//! The LTO caches: a directory, a real redis-server (shared, corrupted, killed), and hostile Redis servers
//! (slow, huge, lying) that cost a link a warning and a bounded time only.
//!
//! The fixtures are `tests/fixtures/lto/` (built once per run by its `build.sh`).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use neverc_test_support::redis::{FakeRedis, RedisServer, flood, trickle};
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
    // clang passes `-plugin-opt=thinlto` for -flto=thin.
    let flto = if mode == "thin" { "-flto=thin" } else { "-flto" };
    let mut args: Vec<String> = vec![flto.into(), "-O2".into(), "-static".into()];
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
    // The generated code takes the place of the bitcode it came from: before libc's members (and the start
    // files' epilogues), where main.o was on the command line.
    let address = |name: &str| -> u64 {
        let line = symbols
            .lines()
            .find(|line| line.ends_with(&format!(" T {name}")))
            .unwrap_or_else(|| panic!("{mode}: no {name}"));
        u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap()
    };
    assert!(
        address("main") < address("__libc_start_main"),
        "{mode}: main is laid out after libc"
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
    let mut args: Vec<String> = vec!["-static".into(), b, "-Wl,-v".into()];
    args.extend(INPUTS.iter().map(|input| dir.join(input).display().to_string()));
    args.extend(["-o".into(), program.display().to_string()]);
    let arguments: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = run("musl-gcc", &out, &arguments);
    succeeded(&output, "musl-gcc -static -B");
    // neverc-spec answers `-v` with its name.
    assert!(
        text(&output.stdout).contains("neverc-spec"),
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
        ("-plugin-opt=obj-path=lto.o", "`obj-path=` is not supported"),
        (
            "-plugin-opt=cache-policy=prune_after=1d",
            "invalid cache policy: `prune_after=1d`",
        ),
        ("-plugin-opt=emit-llvm", "`emit-llvm` is not supported"),
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

/// An `llvm-lto2` that records each code generation (`run`) in `$NEVERC_TEST_LTO_LOG`, kills the process
/// `$NEVERC_TEST_KILL` names first when it is set, and then runs llvm-lto2-14.
fn counting_llvm_lto2() -> &'static Path {
    static TOOL: OnceLock<PathBuf> = OnceLock::new();
    TOOL.get_or_init(|| {
        let dir = fresh_dir(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lto-counting-tool"));
        let tool = dir.join("llvm-lto2");
        std::fs::write(
            &tool,
            "#!/bin/sh\n\
             if [ \"$1\" = run ]; then\n\
               echo run >> \"$NEVERC_TEST_LTO_LOG\"\n\
               if [ -n \"$NEVERC_TEST_KILL\" ]; then kill \"$NEVERC_TEST_KILL\"; sleep 0.2; fi\n\
             fi\n\
             exec llvm-lto2-14 \"$@\"\n",
        )
        .unwrap();
        let mut permissions = std::fs::metadata(&tool).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&tool, permissions).unwrap();
        tool
    })
}

/// A link of the `full` fixtures through clang in `dir` (inputs copied there, named relatively, so that
/// links in two directories make the same request), with `cache` options for the linker; returns the
/// program and what clang printed.
fn cached_link(dir: &Path, output: &str, cache: &[String], log: &Path, kill: Option<u32>) -> (PathBuf, Output) {
    cached_link_within(dir, output, cache, log, kill, None)
}

/// [`cached_link`], with clang and everything it runs (the linker among them) limited to `memory_kib` KiB of
/// address space (`ulimit -v`) when it is given: a linker that tries to hold more fails.
fn cached_link_within(
    dir: &Path,
    output: &str,
    cache: &[String],
    log: &Path,
    kill: Option<u32>,
    memory_kib: Option<u64>,
) -> (PathBuf, Output) {
    for input in INPUTS {
        if !dir.join(input).exists() {
            std::fs::copy(fixtures().join("full").join(input), dir.join(input)).unwrap();
        }
    }
    let mut args: Vec<String> = vec![
        "-flto".into(),
        "-O2".into(),
        "-static".into(),
        format!("--ld-path={}", ld_dir().join("ld").display()),
    ];
    args.extend(cache.iter().map(|option| format!("-Wl,{option}")));
    args.extend(INPUTS.iter().map(|input| input.to_string()));
    args.extend(["-o".into(), output.into()]);
    let output_path = dir.join(output);
    let mut command = match memory_kib {
        Some(kib) => {
            let mut shell = Command::new("sh");
            shell
                .args(["-c", &format!("ulimit -v {kib}; exec \"$0\" \"$@\"")])
                .arg("clang-14");
            shell
        }
        None => Command::new("clang-14"),
    };
    let result = command
        .args(&args)
        .current_dir(dir)
        .env("NEVERC_LLVM_LTO2", counting_llvm_lto2())
        .env("NEVERC_TEST_LTO_LOG", log)
        .env("NEVERC_TEST_KILL", kill.map(|pid| pid.to_string()).unwrap_or_default())
        .output()
        .unwrap();
    (output_path, result)
}

/// How many code generations the log records.
fn runs(log: &Path) -> usize {
    std::fs::read_to_string(log).map_or(0, |text| text.lines().count())
}

#[test]
fn a_cache_directory_skips_code_generation_and_rebuilds_a_corrupt_entry() {
    let dir = fresh_dir(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lto-cache-dir"));
    let cache = dir.join("cache");
    let log = dir.join("runs.log");
    let options = [format!("-plugin-opt=cache-dir={}", cache.display())];
    let (cold, output) = cached_link(&dir, "cold", &options, &log, None);
    succeeded(&output, "the cold link");
    assert_eq!(runs(&log), 1);
    let entries: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let (warm, output) = cached_link(&dir, "warm", &options, &log, None);
    succeeded(&output, "the warm link");
    assert_eq!(runs(&log), 1, "the warm link generated no code");
    assert_eq!(
        std::fs::read(&cold).unwrap(),
        std::fs::read(&warm).unwrap(),
        "same bytes from the cache"
    );
    assert_eq!(outcome(&warm), EXPECTED);
    // A corrupted entry is never used: it is rebuilt, with a warning, and the link's output is the same.
    let mut entry = std::fs::read(&entries[0]).unwrap();
    let middle = entry.len() / 2;
    entry[middle] ^= 0x20;
    std::fs::write(&entries[0], entry).unwrap();
    let (rebuilt, output) = cached_link(&dir, "rebuilt", &options, &log, None);
    succeeded(&output, "the link over a corrupt entry");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("LTO cache:") && stderr.contains("digest does not match") && stderr.contains("rebuilt"),
        "{stderr}"
    );
    assert_eq!(runs(&log), 2, "the corrupt entry was rebuilt");
    assert_eq!(std::fs::read(&cold).unwrap(), std::fs::read(&rebuilt).unwrap());
    let (_, output) = cached_link(&dir, "again", &options, &log, None);
    succeeded(&output, "the link after the rebuild");
    assert_eq!(runs(&log), 2, "the rebuilt entry is used");
}

#[test]
fn a_redis_cache_is_shared_between_directories_and_a_lost_server_is_only_a_warning() {
    let root = fresh_dir(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lto-cache-redis"));
    let server = RedisServer::start(&root, &[]);
    let log = root.join("runs.log");
    let options = [
        format!("--lto-cache-url={}", server.url()),
        "--lto-cache-namespace=tests".to_string(),
    ];
    let (first, second) = (root.join("one"), root.join("two"));
    std::fs::create_dir_all(&first).unwrap();
    std::fs::create_dir_all(&second).unwrap();
    let (one, output) = cached_link(&first, "prog", &options, &log, None);
    succeeded(&output, "the link in the first directory");
    assert_eq!(runs(&log), 1);
    let keys = server.cli(&["--raw", "KEYS", "neverc-lto:tests:*"]);
    assert_eq!(keys.lines().count(), 1, "{keys}");
    let (two, output) = cached_link(&second, "prog", &options, &log, None);
    succeeded(&output, "the link in the second directory");
    assert_eq!(
        runs(&log),
        1,
        "the second directory's link found the first one's objects"
    );
    assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&two).unwrap());
    assert_eq!(outcome(&two), EXPECTED);
    // A corrupted value is rebuilt with a warning.
    let key = keys.lines().next().unwrap().to_string();
    server.cli(&["SETRANGE", &key, "40", "XXXX"]);
    let (rebuilt, output) = cached_link(&second, "rebuilt", &options, &log, None);
    succeeded(&output, "the link over a corrupt value");
    assert!(text(&output.stderr).contains("rebuilt"), "{}", text(&output.stderr));
    assert_eq!(runs(&log), 2);
    assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&rebuilt).unwrap());
    // The server dies during code generation (after the lookup, before the store): the link succeeds, with
    // a warning, and the program is the same.
    let fresh = [
        format!("--lto-cache-url={}", server.url()),
        "--lto-cache-namespace=killed".to_string(),
    ];
    let (killed, output) = cached_link(&second, "killed", &fresh, &log, Some(server.child.id()));
    succeeded(&output, "the link whose Redis server died");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("LTO cache:") && stderr.contains("goes on without it"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&killed).unwrap());
    // And with no server at all.
    let (gone, output) = cached_link(&second, "gone", &options, &log, None);
    succeeded(&output, "the link with no Redis server");
    assert!(text(&output.stderr).contains("goes on without it"));
    assert_eq!(outcome(&gone), EXPECTED);
}

/// Links the fixtures with the LTO cache in the Redis server at `url` in a fresh directory `name`, within
/// `memory_kib` of address space when given; the link must succeed with the cache's warning (which must be
/// short: nothing of a reply echoed), generate its code itself and make the program it always makes.
/// Returns how long the link took and what it printed.
fn link_with_hostile_redis(name: &str, url: &str, memory_kib: Option<u64>) -> (std::time::Duration, String) {
    let dir =
        fresh_dir(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("lto-hostile-{}", name.replace(' ', "-"))));
    let log = dir.join("runs.log");
    let options = [
        format!("--lto-cache-url={url}"),
        "--lto-cache-namespace=hostile".to_string(),
    ];
    let started = std::time::Instant::now();
    let (program, output) = cached_link_within(&dir, "prog", &options, &log, None, memory_kib);
    let elapsed = started.elapsed();
    let stderr = text(&output.stderr);
    eprintln!(
        "item 7, {name}: the link took {elapsed:.2?} and printed {} bytes: {stderr:.1000}",
        stderr.len()
    );
    succeeded(&output, &format!("the link against {name}"));
    assert!(
        stderr.contains("LTO cache:") && stderr.contains("goes on without it"),
        "{stderr:.2000}"
    );
    assert!(
        stderr.len() < 1000 && !stderr.contains(&"A".repeat(64)),
        "{stderr:.2000}"
    );
    assert_eq!(runs(&log), 1, "the link generated its code");
    assert_eq!(outcome(&program), EXPECTED);
    (elapsed, stderr)
}

#[test]
fn item_7_redis_a_trickling_server_costs_a_link_its_deadline_and_a_warning() {
    // A byte of the reply to GET every 4 s (the reply is complete after 108 s); the rest is answered at once.
    let server = FakeRedis::start(|command, stream| {
        if command.first().is_some_and(|word| word.as_slice() == b"GET") {
            trickle(
                stream,
                b"$20\r\nAAAAAAAAAAAAAAAAAAAA\r\n",
                std::time::Duration::from_secs(4),
            )
        } else {
            stream.write_all(b"+OK\r\n")
        }
    });
    let (elapsed, stderr) = link_with_hostile_redis("a trickling server", &server.url(), None);
    assert!(stderr.contains("deadline"), "{stderr}");
    // The lookup's 10 s and the link's own few seconds.
    assert!(elapsed < std::time::Duration::from_secs(30), "{elapsed:?}");
}

#[test]
fn item_7_redis_a_50_mb_reply_is_neither_slow_nor_echoed() {
    const SIZE: u64 = 50 << 20;
    let server = FakeRedis::start(|_, stream| {
        flood(stream, b"+", b'A', SIZE)?;
        stream.write_all(b"\r\n")
    });
    let (elapsed, stderr) = link_with_hostile_redis("a 50 MB reply", &server.url(), None);
    assert!(stderr.contains("line is longer than 65536 bytes"), "{stderr}");
    assert!(elapsed < std::time::Duration::from_secs(20), "{elapsed:?}");
}

#[test]
fn item_7_redis_a_2_gb_reply_is_refused_and_the_link_stays_small() {
    // The header claims 2 GiB and the bytes follow as fast as the linker takes them; the link runs in 1 GiB
    // of address space, which holding the reply would exceed.
    let server = FakeRedis::start(|_, stream| flood(stream, b"$2147483648\r\n", b'A', 2 << 30));
    let (elapsed, stderr) = link_with_hostile_redis("a 2 GB reply", &server.url(), Some(1 << 20));
    assert!(
        stderr.contains("a bulk string of 2147483648 bytes is more than"),
        "{stderr}"
    );
    assert!(elapsed < std::time::Duration::from_secs(20), "{elapsed:?}");
}

/// Distributed ThinLTO as LLVM does it: `--thinlto-index-only=FILE` writes each bitcode file's index and
/// imports beside it and links nothing; the backends are compiled by `clang-14 -fthinlto-index=` two at a
/// time (`xargs -P2`, as a build system's remote execution would); the final link of their objects gives the
/// same bytes as the in-process ThinLTO link.
#[test]
fn distributed_thinlto_gives_the_in_process_links_bytes() {
    let dir = fresh_dir(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lto-distributed"));
    let bitcode = ["main.o", "helper.o", "comdat_a.o", "comdat_b.o", "archive_one.o"];
    for input in bitcode.iter().chain(&["object.o"]) {
        std::fs::copy(fixtures().join("thin").join(input), dir.join(input)).unwrap();
    }
    let ld_path = format!("--ld-path={}", ld_dir().join("ld").display());
    let link = |extra: &[&str], inputs: &[&str], output: &str| -> Output {
        let mut args = vec!["-O2", "-static", ld_path.as_str()];
        args.extend(extra);
        args.extend(inputs);
        args.extend(["-o", output]);
        run("clang-14", &dir, &args)
    };
    let inputs = [
        "main.o",
        "helper.o",
        "object.o",
        "comdat_a.o",
        "comdat_b.o",
        "archive_one.o",
    ];
    let output = link(
        &["-flto=thin", "-Wl,-plugin-opt=thinlto-index-only=list.txt"],
        &inputs,
        "never",
    );
    succeeded(&output, "the index-only link");
    assert!(
        text(&output.stderr).contains("wrote 5 ThinLTO index file(s)"),
        "{}",
        text(&output.stderr)
    );
    assert!(!dir.join("never").exists(), "an index-only link writes no program");
    let list = std::fs::read_to_string(dir.join("list.txt")).unwrap();
    assert_eq!(
        list.lines().collect::<Vec<_>>(),
        ["main.o", "helper.o", "comdat_a.o", "comdat_b.o", "archive_one.o"]
    );
    for module in bitcode {
        assert!(
            dir.join(format!("{module}.thinlto.bc")).exists() && dir.join(format!("{module}.imports")).exists(),
            "{module}"
        );
    }
    // main.o imports from helper.o (helper is inlined across modules).
    let imports = std::fs::read_to_string(dir.join("main.o.imports")).unwrap();
    assert!(imports.contains("helper.o"), "{imports}");
    let backends = run(
        "sh",
        &dir,
        &[
            "-c",
            "xargs -P2 -I{} clang-14 -O2 -fno-pie -c -x ir {} -fthinlto-index={}.thinlto.bc -o {}.native.o <list.txt",
        ],
    );
    succeeded(&backends, "the backends");
    let natives = [
        "main.o.native.o",
        "helper.o.native.o",
        "object.o",
        "comdat_a.o.native.o",
        "comdat_b.o.native.o",
        "archive_one.o.native.o",
    ];
    succeeded(&link(&[], &natives, "distributed"), "the final link");
    succeeded(&link(&["-flto=thin"], &inputs, "in-process"), "the in-process link");
    assert_eq!(outcome(&dir.join("distributed")), EXPECTED);
    // The symbol table names each symbol's own section, not an empty one at the same address (here
    // `.tm_clone_table` ends where `neverc_items` starts: `item_one` used to show as `B`).
    let symbols = text(&run("nm", &dir, &["distributed"]).stdout);
    assert!(symbols.lines().any(|line| line.ends_with(" D item_one")), "{symbols}");
    assert_eq!(
        std::fs::read(dir.join("distributed")).unwrap(),
        std::fs::read(dir.join("in-process")).unwrap(),
        "the distributed build differs from the in-process one"
    );
    // An archive member has no file of its own to put an index beside: refused by name.
    std::fs::copy(fixtures().join("thin/libbitcode.a"), dir.join("libbitcode.a")).unwrap();
    let output = link(&["-flto=thin", "-Wl,--thinlto-index-only"], &INPUTS, "never");
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("libbitcode.a(archive_one.o)") && text(&output.stderr).contains("archive member"),
        "{}",
        text(&output.stderr)
    );
}
