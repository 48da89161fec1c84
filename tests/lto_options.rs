#![allow(clippy::unwrap_used, clippy::expect_used)]
//! lld's distributed ThinLTO and cache options, held to ld.lld-14 on the same inputs:
//! `--thinlto-prefix-replace=OLD;NEW` (the indexes written under NEW, the module paths unchanged),
//! `--thinlto-object-suffix-replace=OLD;NEW` (a thin link of minimized bitcode naming the full bitcode),
//! `--thinlto-emit-imports-files`, and `--thinlto-cache-policy=` (LLVM's cache pruning policy, applied to the
//! LTO cache directory), with their `-plugin-opt=` spellings. The backends of the distributed builds are
//! compiled by `clang-14 -fthinlto-index=`, and their final links give the in-process ThinLTO link's bytes.
//!
//! The fixtures are `tests/fixtures/lto/` (built once per run by its `build.sh`, as `tests/lto.rs` builds them).

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use neverc_test_support::{fresh_dir, repo, run_script, succeeded, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

/// What every linked fixture program prints (as in `tests/lto.rs`).
const EXPECTED: &str = "helper 42\nobject 20\narchive 101\ncomdat 2 3\nweak 2\nitems 12\n";

/// The bitcode modules of a distributed link, in command-line order, and the whole link's inputs.
const BITCODE: [&str; 5] = ["main", "helper", "comdat_a", "comdat_b", "archive_one"];
const INPUTS: [&str; 6] = ["main", "helper", "object", "comdat_a", "comdat_b", "archive_one"];

fn fixtures() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lto-options-fixtures");
        if let Err(message) = run_script(&repo().join("tests/fixtures/lto/build.sh"), &out) {
            panic!("building the LTO fixtures failed (clang-14, llvm-14, gcc and musl-tools are needed): {message}");
        }
        out
    })
}

/// A directory holding `ld`, a symbolic link to neverc-spec (what `--ld-path` names).
fn ld_path() -> String {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = fresh_dir(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lto-options-ld"));
        symlink(BIN, dir.join("ld")).unwrap();
        dir
    });
    format!("--ld-path={}", dir.join("ld").display())
}

fn run(program: &str, dir: &Path, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {program}: {error}"))
}

fn fresh(name: &str) -> PathBuf {
    fresh_dir(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name))
}

/// `clang-14 -O2 -static` in `dir` with `args`, linking with neverc-spec (or ld.lld-14 when `lld`).
fn clang_link(dir: &Path, lld: bool, args: &[String]) -> Output {
    let mut all = vec!["-O2".to_string(), "-static".to_string()];
    all.push(if lld { "-fuse-ld=lld".to_string() } else { ld_path() });
    all.extend(args.iter().cloned());
    let arguments: Vec<&str> = all.iter().map(String::as_str).collect();
    run("clang-14", dir, &arguments)
}

fn outcome(program: &Path) -> String {
    let output = run(program.to_str().unwrap(), program.parent().unwrap(), &[]);
    succeeded(&output, &program.display().to_string());
    text(&output.stdout)
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Every file under `dir`, relative to it, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

/// Compiles each module's backend as a distributed build would: `clang-14 -c -x ir MODULE
/// -fthinlto-index=INDEX -o NATIVE`, the module named as the index names it.
fn compile_backends(dir: &Path, backends: &[(String, String, String)]) {
    for (module, index, native) in backends {
        let output = run(
            "clang-14",
            dir,
            &[
                "-O2",
                "-fno-pie",
                "-c",
                "-x",
                "ir",
                module,
                &format!("-fthinlto-index={index}"),
                "-o",
                native,
            ],
        );
        succeeded(&output, &format!("the backend of {module}"));
    }
}

/// `--thinlto-prefix-replace=src/;native/`: the indexes, imports and the list name `native/`, nothing is
/// written beside the bitcode in `src/`, and every file is the one ld.lld-14 writes; the backends compiled
/// from them link into the in-process ThinLTO link's bytes.
/// The index-only link in `ours` listed the native objects under `native/` and wrote the same list, index
/// and imports files as ld.lld-14 in `theirs`.
fn same_index_files_as_lld(ours: &Path, theirs: &Path) {
    let list = String::from_utf8(read(&ours.join("list.txt"))).unwrap();
    assert_eq!(
        list.lines().collect::<Vec<_>>(),
        BITCODE.map(|name| format!("native/{name}.o")),
        "the list names the native objects under the new prefix"
    );
    for file in ["list.txt".to_string()]
        .into_iter()
        .chain(BITCODE.iter().flat_map(|name| {
            [
                format!("native/{name}.o.thinlto.bc"),
                format!("native/{name}.o.imports"),
            ]
        }))
    {
        assert_eq!(
            read(&ours.join(&file)),
            read(&theirs.join(&file)),
            "{file} differs from ld.lld-14's"
        );
    }
}

#[test]
fn prefix_replace_writes_the_indexes_under_the_new_prefix_as_lld_does() {
    let root = fresh("lto-options-prefix");
    let (ours, theirs) = (root.join("ours"), root.join("lld"));
    for dir in [&ours, &theirs] {
        std::fs::create_dir_all(dir.join("src")).unwrap();
        for name in INPUTS {
            std::fs::copy(
                fixtures().join(format!("thin/{name}.o")),
                dir.join(format!("src/{name}.o")),
            )
            .unwrap();
        }
    }
    let inputs: Vec<String> = INPUTS.iter().map(|name| format!("src/{name}.o")).collect();
    let index_only = |dir: &Path, lld: bool, options: &[&str]| {
        let mut args = vec!["-flto=thin".to_string()];
        args.extend(options.iter().map(|option| format!("-Wl,{option}")));
        args.extend(inputs.iter().cloned());
        args.extend(["-o".into(), "never".into()]);
        let output = clang_link(dir, lld, &args);
        succeeded(&output, &format!("the index-only link (lld: {lld})"));
        output
    };
    let output = index_only(
        &ours,
        false,
        &[
            "-plugin-opt=thinlto-index-only=list.txt",
            "-plugin-opt=thinlto-emit-imports-files",
            "-plugin-opt=thinlto-prefix-replace=src/;native/",
        ],
    );
    assert!(
        text(&output.stderr).contains("wrote 5 ThinLTO index file(s) with `src/` replaced by `native/`"),
        "{}",
        text(&output.stderr)
    );
    index_only(
        &theirs,
        true,
        &[
            "--thinlto-index-only=list.txt",
            "--thinlto-emit-imports-files",
            "--thinlto-prefix-replace=src/;native/",
        ],
    );
    let mut expected: Vec<String> = INPUTS.iter().map(|name| format!("src/{name}.o")).collect();
    for name in BITCODE {
        expected.push(format!("native/{name}.o.thinlto.bc"));
        expected.push(format!("native/{name}.o.imports"));
    }
    expected.push("list.txt".into());
    expected.sort();
    assert_eq!(
        files_under(&ours),
        expected,
        "nothing beside the bitcode, everything under native/"
    );
    assert_eq!(files_under(&theirs), expected, "what ld.lld-14 writes");
    same_index_files_as_lld(&ours, &theirs);
    // The imports name the modules by their own paths: the prefix only moves the files written.
    let imports = String::from_utf8(read(&ours.join("native/main.o.imports"))).unwrap();
    assert!(imports.lines().any(|line| line == "src/helper.o"), "{imports}");
    let backends: Vec<(String, String, String)> = BITCODE
        .iter()
        .map(|name| {
            (
                format!("src/{name}.o"),
                format!("native/{name}.o.thinlto.bc"),
                format!("native/{name}.o"),
            )
        })
        .collect();
    compile_backends(&ours, &backends);
    let mut natives: Vec<String> = INPUTS
        .iter()
        .map(|name| match *name {
            "object" => "src/object.o".to_string(),
            _ => format!("native/{name}.o"),
        })
        .collect();
    natives.extend(["-o".into(), "distributed".into()]);
    succeeded(&clang_link(&ours, false, &natives), "the final link");
    let mut in_process = vec!["-flto=thin".to_string()];
    in_process.extend(inputs.iter().cloned());
    in_process.extend(["-o".into(), "in-process".into()]);
    succeeded(&clang_link(&ours, false, &in_process), "the in-process link");
    assert_eq!(outcome(&ours.join("distributed")), EXPECTED);
    assert_eq!(
        read(&ours.join("distributed")),
        read(&ours.join("in-process")),
        "the distributed build differs from the in-process one"
    );
}

/// A thin link of minimized bitcode (`-fthin-link-bitcode=`, the `.thinlink.bc` files) with
/// `--thinlto-object-suffix-replace=.thinlink.bc;.o`: the indexes, imports and list name the full bitcode
/// `NAME.o` (as ld.lld-14's do, byte for byte), the backends compile the full bitcode, and the final link
/// (where the option changes nothing, as in lld) gives the in-process link's bytes.
#[test]
fn object_suffix_replace_names_the_full_bitcode_in_a_thin_link_of_minimized_bitcode() {
    let root = fresh("lto-options-suffix");
    let sources = repo().join("tests/fixtures/lto");
    let (ours, theirs) = (root.join("ours"), root.join("lld"));
    for dir in [&ours, &theirs] {
        std::fs::create_dir_all(dir).unwrap();
        for name in BITCODE {
            let (language, source) = if name.starts_with("comdat") {
                (vec!["-x", "c++", "-fno-exceptions"], sources.join(format!("{name}.cc")))
            } else {
                (vec![], sources.join(format!("{name}.c")))
            };
            let mut args = vec!["-O2", "-flto=thin"];
            args.extend(language);
            let minimized = format!("-fthin-link-bitcode={name}.thinlink.bc");
            let output_name = format!("{name}.o");
            args.extend([
                "-c",
                source.to_str().unwrap(),
                "-o",
                &output_name,
                "-Xclang",
                &minimized,
            ]);
            succeeded(&run("clang-14", dir, &args), &format!("compiling {name}"));
        }
        std::fs::copy(fixtures().join("thin/object.o"), dir.join("object.o")).unwrap();
    }
    // clang would compile a `.bc` input: the thin link's inputs go to the linker through -Wl.
    let thin_inputs = format!(
        "-Wl,{}",
        INPUTS
            .iter()
            .map(|name| match *name {
                "object" => "object.o".to_string(),
                _ => format!("{name}.thinlink.bc"),
            })
            .collect::<Vec<_>>()
            .join(",")
    );
    let index_only = |dir: &Path, lld: bool, options: &[&str]| {
        let mut args = vec!["-flto=thin".to_string()];
        args.extend(options.iter().map(|option| format!("-Wl,{option}")));
        args.push(thin_inputs.clone());
        args.extend(["-o".into(), "never".into()]);
        succeeded(
            &clang_link(dir, lld, &args),
            &format!("the index-only link (lld: {lld})"),
        );
    };
    index_only(
        &ours,
        false,
        &[
            "-plugin-opt=thinlto-index-only=list.txt",
            "-plugin-opt=thinlto-object-suffix-replace=.thinlink.bc;.o",
            "-plugin-opt=thinlto-prefix-replace=;native/",
        ],
    );
    index_only(
        &theirs,
        true,
        &[
            "--thinlto-index-only=list.txt",
            "--thinlto-emit-imports-files",
            "--thinlto-object-suffix-replace=.thinlink.bc;.o",
            "--thinlto-prefix-replace=;native/",
        ],
    );
    same_index_files_as_lld(&ours, &theirs);
    // The modules are the full bitcode files: main.o imports from helper.o, not from helper.thinlink.bc.
    let imports = String::from_utf8(read(&ours.join("native/main.o.imports"))).unwrap();
    assert!(imports.lines().any(|line| line == "helper.o"), "{imports}");
    assert!(!ours.join("main.thinlink.bc.thinlto.bc").exists() && !ours.join("main.o.thinlto.bc").exists());
    let backends: Vec<(String, String, String)> = BITCODE
        .iter()
        .map(|name| {
            (
                format!("{name}.o"),
                format!("native/{name}.o.thinlto.bc"),
                format!("native/{name}.o"),
            )
        })
        .collect();
    compile_backends(&ours, &backends);
    let mut natives = vec!["-Wl,--thinlto-object-suffix-replace=.thinlink.bc;.o".to_string()];
    natives.extend(INPUTS.iter().map(|name| match *name {
        "object" => "object.o".to_string(),
        _ => format!("native/{name}.o"),
    }));
    natives.extend(["-o".into(), "distributed".into()]);
    succeeded(&clang_link(&ours, false, &natives), "the final link");
    assert_eq!(outcome(&ours.join("distributed")), EXPECTED);
    let in_process = |extra: &[&str], output: &str| {
        let mut args: Vec<String> = vec!["-flto=thin".into()];
        args.extend(extra.iter().map(|option| option.to_string()));
        args.extend(INPUTS.iter().map(|name| format!("{name}.o")));
        args.extend(["-o".into(), output.into()]);
        succeeded(&clang_link(&ours, false, &args), output);
    };
    in_process(&[], "in-process");
    in_process(
        &[
            "-Wl,--thinlto-object-suffix-replace=.o;.other",
            "-Wl,--thinlto-prefix-replace=;elsewhere/",
        ],
        "in-process-with-options",
    );
    assert_eq!(read(&ours.join("distributed")), read(&ours.join("in-process")));
    assert_eq!(
        read(&ours.join("in-process")),
        read(&ours.join("in-process-with-options")),
        "outside an index-only link the options change nothing"
    );
    assert!(!ours.join("elsewhere").exists());
    // An absolute path cannot be renamed (llvm-lto2 calls each module by the path it reads it from).
    let absolute = ours.join("main.thinlink.bc");
    let output = run(
        BIN,
        &ours,
        &[
            "ld",
            "--thinlto-index-only",
            "--thinlto-object-suffix-replace=.thinlink.bc;.o",
            absolute.to_str().unwrap(),
            "-o",
            "never",
        ],
    );
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("an absolute path") && stderr.contains("main.thinlink.bc"),
        "{stderr}"
    );
}

/// Malformed `OLD;NEW` values and cache policies are refused by both linkers, neverc-spec with exit 2 and a
/// message naming the bad part; well-formed ones are accepted by both.
#[test]
fn bad_replacements_and_cache_policies_are_refused_as_lld_refuses_them() {
    let out = fresh("lto-options-refused");
    let main = fixtures().join("thin/main.o");
    let main = main.to_str().unwrap();
    for (option, says) in [
        ("--thinlto-prefix-replace=src/", "expects `OLD;NEW`, but got `src/`"),
        ("--thinlto-prefix-replace=src/;", "expects `OLD;NEW`, but got `src/;`"),
        (
            "--thinlto-object-suffix-replace=.bc",
            "expects `OLD;NEW`, but got `.bc`",
        ),
        ("--thinlto-cache-policy=bogus", "unknown key `bogus`"),
        (
            "--thinlto-cache-policy=prune_after=1h:frob=1",
            "unknown key `frob` in `frob=1`",
        ),
        (
            "--thinlto-cache-policy=prune_after=1d",
            "`prune_after=1d`: `1d` must end with one of s, m or h",
        ),
        (
            "--thinlto-cache-policy=prune_interval=",
            "`prune_interval=`: the duration is empty",
        ),
        (
            "--thinlto-cache-policy=cache_size=50",
            "`cache_size=50`: `50` must be a percentage",
        ),
        (
            "--thinlto-cache-policy=cache_size=101%",
            "`cache_size=101%`: `101` must be between 0 and 100",
        ),
        (
            "--thinlto-cache-policy=cache_size_bytes=1t",
            "`cache_size_bytes=1t`: `1t` is not an integer",
        ),
        (
            "--thinlto-cache-policy=cache_size_files=x",
            "`cache_size_files=x`: `x` is not an integer",
        ),
    ] {
        let output = run(BIN, &out, &["ld", option, main, "-o", "never"]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{option}: {stderr}");
        assert!(
            stderr.contains(says) && stderr.contains(option.split('=').next().unwrap()),
            "{option}: {stderr}"
        );
        let lld = run(
            "ld.lld-14",
            &out,
            &[option, "--unresolved-symbols=ignore-all", main, "-o", "/dev/null"],
        );
        assert!(!lld.status.success(), "ld.lld-14 accepts {option}");
    }
    // The -plugin-opt spellings, as clang passes them.
    for (option, says) in [
        (
            "-plugin-opt=cache-policy=cache_size=x%",
            "`cache_size=x%`: `x` is not an integer",
        ),
        ("-plugin-opt=thinlto-prefix-replace=a", "expects `OLD;NEW`"),
        ("-plugin-opt=thinlto-object-suffix-replace=a", "expects `OLD;NEW`"),
    ] {
        let output = run(
            BIN,
            &out,
            &[
                "ld",
                "-plugin",
                "/usr/lib/llvm-14/lib/LLVMgold.so",
                option,
                main,
                "-o",
                "never",
            ],
        );
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{option}: {stderr}");
        assert!(stderr.contains(says) && stderr.contains(option), "{option}: {stderr}");
    }
    for option in [
        "--thinlto-cache-policy=",
        "--thinlto-cache-policy=prune_interval=0s:prune_after=0x10m:cache_size=0%:cache_size_bytes=2G:cache_size_files=010",
        "--thinlto-prefix-replace=;new",
        "--thinlto-object-suffix-replace=a;b;c",
        "--thinlto-emit-imports-files",
    ] {
        let output = run(BIN, &out, &["ld", option, main, "-o", "never"]);
        assert_ne!(output.status.code(), Some(2), "{option}: {}", text(&output.stderr));
        let lld = run(
            "ld.lld-14",
            &out,
            &[option, "--unresolved-symbols=ignore-all", main, "-o", "/dev/null"],
        );
        succeeded(&lld, &format!("ld.lld-14 {option}"));
    }
}

/// An `llvm-lto2` that records each code generation (`run`) in `$NEVERC_TEST_LTO_LOG`, then runs llvm-lto2-14.
fn counting_llvm_lto2() -> &'static Path {
    static TOOL: OnceLock<PathBuf> = OnceLock::new();
    TOOL.get_or_init(|| {
        let dir = fresh("lto-options-counting-tool");
        let tool = dir.join("llvm-lto2");
        std::fs::write(
            &tool,
            "#!/bin/sh\nif [ \"$1\" = run ]; then echo run >> \"$NEVERC_TEST_LTO_LOG\"; fi\nexec llvm-lto2-14 \"$@\"\n",
        )
        .unwrap();
        let mut permissions = std::fs::metadata(&tool).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&tool, permissions).unwrap();
        tool
    })
}

/// The cache directory's entries (the files neverc-spec names as entries), sorted.
fn entries(cache: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(cache)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| {
            name.strip_suffix(".lto").is_some_and(|digest| {
                digest.len() == 64 && digest.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
            })
        })
        .collect();
    found.sort();
    found
}

/// Dates a file's last access and modification `age` ago.
fn age_file(path: &Path, age: Duration) {
    let then = SystemTime::now() - age;
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_times(std::fs::FileTimes::new().set_accessed(then).set_modified(then))
        .unwrap();
}

/// `--thinlto-cache-policy` prunes the cache directory after the link as LLVM prunes lld's: at most once per
/// `prune_interval` (a timestamp file), the entries unused for longer than `prune_after`, then the least
/// recently used ones beyond `cache_size_files` and `cache_size_bytes`; files that are not neverc-spec's
/// entries are never touched.
#[test]
fn a_cache_policy_prunes_the_cache_directory_as_llvm_prunes_it() {
    let dir = fresh("lto-options-cache-policy");
    for name in INPUTS {
        std::fs::copy(fixtures().join(format!("full/{name}.o")), dir.join(format!("{name}.o"))).unwrap();
    }
    let cache = dir.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    // Files that are not entries: never removed, whatever the policy.
    let bystanders = [
        "notes.txt".to_string(),
        "llvmcache-0123".to_string(),
        format!("{}.lto.keep", "ab".repeat(32)),
        format!("{}.lto", "AB".repeat(32)),
    ];
    for name in &bystanders {
        std::fs::write(cache.join(name), b"not an entry").unwrap();
        age_file(&cache.join(name), Duration::from_secs(30 * 24 * 3600));
    }
    let log = dir.join("runs.log");
    let runs = || std::fs::read_to_string(&log).map_or(0, |text| text.lines().count());
    // A different optimization level is a different request, so a different entry.
    let link = |level: &str, policy: &str, output: &str| {
        let mut args: Vec<String> = vec!["-flto".into(), "-O2".into(), "-static".into(), ld_path()];
        args.push(format!("-Wl,-plugin-opt=cache-dir={}", cache.display()));
        args.push(format!("-Wl,-plugin-opt={level}"));
        args.push(format!("-Wl,-plugin-opt=cache-policy={policy}"));
        args.extend(INPUTS.iter().map(|name| format!("{name}.o")));
        args.extend(["-o".into(), output.into()]);
        let result = Command::new("clang-14")
            .args(&args)
            .current_dir(&dir)
            .env("NEVERC_LLVM_LTO2", counting_llvm_lto2())
            .env("NEVERC_TEST_LTO_LOG", &log)
            .output()
            .unwrap();
        succeeded(&result, &format!("the link at {level} with {policy}"));
        assert_eq!(outcome(&dir.join(output)), EXPECTED);
    };
    // The first pruning runs at once (there is no timestamp yet) and writes the timestamp.
    link("O1", "cache_size_files=1", "one");
    assert_eq!(entries(&cache).len(), 1);
    let first = entries(&cache);
    assert!(cache.join("neverc-lto-cache.timestamp").exists());
    // Within the default interval (20 minutes) of the last pruning, the directory is not pruned.
    link("O2", "cache_size_files=1", "two");
    assert_eq!(entries(&cache).len(), 2, "pruned within prune_interval");
    // With no interval it is: the least recently used entry goes (the O1 one, dated an hour ago).
    age_file(&cache.join(&first[0]), Duration::from_secs(3600));
    link("O3", "cache_size_files=2:prune_interval=0s", "three");
    let after = entries(&cache);
    assert_eq!(after.len(), 2);
    assert!(
        !after.contains(&first[0]),
        "the least recently used entry was removed: {after:?}"
    );
    assert_eq!(runs(), 3);
    // The entries kept are used: the O3 link finds its own (and a hit marks it used).
    link("O3", "cache_size_files=2:prune_interval=0s", "three-again");
    assert_eq!(runs(), 3, "the O3 entry was kept");
    // prune_after: an entry unused for longer is removed, a recent one kept.
    let o3 = entries(&cache);
    for name in &o3 {
        age_file(&cache.join(name), Duration::from_secs(2 * 3600));
    }
    link("O3", "prune_after=1h:prune_interval=0s", "expired");
    assert_eq!(runs(), 3, "the O3 entry was still there before the link");
    let kept = entries(&cache);
    assert_eq!(kept.len(), 1, "only the entry the link just used is left: {kept:?}");
    // The entry that was used by the link was marked accessed, so it is not expired.
    link("O3", "prune_after=1h:prune_interval=0s", "expired-again");
    assert_eq!(runs(), 3);
    // cache_size_bytes: the entries may take 1 byte: all are removed, as LLVM removes them; the link goes on.
    link("O1", "cache_size_bytes=1:prune_interval=0s", "tiny");
    assert!(entries(&cache).is_empty());
    for name in &bystanders {
        assert_eq!(read(&cache.join(name)), b"not an entry", "{name} was touched");
    }
    // ld.lld-14 with the same policy prunes its own cache the same way: one entry is left of two links'.
    let lld_cache = dir.join("lld-cache");
    for level in ["1", "2"] {
        let mut args: Vec<String> = vec![
            "-flto=thin".into(),
            "-O2".into(),
            "-static".into(),
            "-fuse-ld=lld".into(),
        ];
        args.push(format!("-Wl,--thinlto-cache-dir={}", lld_cache.display()));
        args.push("-Wl,--thinlto-cache-policy=cache_size_files=1:prune_interval=0s".into());
        args.push(format!("-Wl,--lto-O{level}"));
        args.extend(
            INPUTS
                .iter()
                .map(|name| fixtures().join(format!("thin/{name}.o")).display().to_string()),
        );
        args.extend(["-o".into(), format!("lld-{level}")]);
        let arguments: Vec<&str> = args.iter().map(String::as_str).collect();
        succeeded(&run("clang-14", &dir, &arguments), "the ld.lld-14 link");
    }
    let lld_entries = std::fs::read_dir(&lld_cache)
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("llvmcache-")
        })
        .count();
    assert_eq!(lld_entries, 1);
    assert!(lld_cache.join("llvmcache.timestamp").exists());
}
