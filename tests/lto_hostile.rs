#![allow(clippy::unwrap_used, clippy::expect_used)]
//! LTO attacked as a hostile user or a hostile co-user of a cache would: cache entries that are symbolic
//! links, FIFOs or huge files, a pruning timestamp that is a link, forged entries in a shared cache, side
//! outputs named like inputs, a signal while `llvm-lto2` runs, and a symbol whose name `llvm-lto2`'s command
//! line cannot carry. The links are the `full` fixtures of `tests/fixtures/lto/` through clang-14 with
//! neverc-spec as its linker; every program that links is run.

use std::fs;
use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use neverc_link::lto::cache::{Integrity, decode_entry, encode_entry};
use neverc_test_support::{fresh_dir, repo, run_script, succeeded, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

/// What the fixture program prints.
const EXPECTED: &str = "helper 42\nobject 20\narchive 101\ncomdat 2 3\nweak 2\nitems 12\n";

/// The link inputs, in command-line order.
const INPUTS: [&str; 6] = [
    "main.o",
    "helper.o",
    "object.o",
    "comdat_a.o",
    "comdat_b.o",
    "libbitcode.a",
];

fn fixtures() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lto-hostile-fixtures");
        if let Err(message) = run_script(&repo().join("tests/fixtures/lto/build.sh"), &out) {
            panic!("building the LTO fixtures failed (clang-14, llvm-14, gcc and musl-tools are needed): {message}");
        }
        out
    })
}

/// A directory holding `ld`, a symbolic link to neverc-spec.
fn ld_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = fresh_dir(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lto-hostile-ld"));
        symlink(BIN, dir.join("ld")).unwrap();
        dir
    })
}

fn scratch(name: &str) -> PathBuf {
    fresh_dir(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("lto-hostile-{name}")))
}

/// The clang-14 link of the `full` fixtures in `dir` (inputs copied there) into `output`, with `options` for
/// the linker and `env` for it.
fn clang_link(dir: &Path, output: &str, options: &[String], env: &[(&str, &Path)]) -> Command {
    for input in INPUTS {
        if !dir.join(input).exists() {
            fs::copy(fixtures().join("full").join(input), dir.join(input)).unwrap();
        }
    }
    let mut command = Command::new("clang-14");
    command
        .args(["-flto", "-O2", "-static"])
        .arg(format!("--ld-path={}", ld_dir().join("ld").display()))
        .args(options.iter().map(|option| format!("-Wl,{option}")))
        .args(INPUTS)
        .args(["-o", output])
        .current_dir(dir);
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

fn link(dir: &Path, output: &str, options: &[String]) -> Output {
    clang_link(dir, output, options, &[]).output().unwrap()
}

/// Runs a link that must finish within `seconds` (a hang fails the test instead of blocking it).
fn link_within(dir: &Path, output: &str, options: &[String], seconds: u64) -> Output {
    let mut child = clang_link(dir, output, options, &[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = Command::new("pkill").args(["-KILL", "-f", "neverc"]).status();
            let _ = child.kill();
            panic!("the link in {} did not finish within {seconds} s", dir.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn outcome(program: &Path) -> String {
    let output = Command::new(program).output().unwrap();
    succeeded(&output, &program.display().to_string());
    text(&output.stdout)
}

/// The entries of a cache directory (`<64 hex digits>.lto`).
fn entries(cache: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(cache)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "lto"))
        .collect();
    found.sort();
    found
}

fn cache_options(cache: &Path) -> Vec<String> {
    vec![format!("-plugin-opt=cache-dir={}", cache.display())]
}

/// A cold link into `cache` that leaves one entry; returns it.
fn cold_entry(dir: &Path, cache: &Path, extra: &[String]) -> PathBuf {
    let mut options = cache_options(cache);
    options.extend_from_slice(extra);
    let output = link(dir, "cold", &options);
    succeeded(&output, "the cold link");
    assert_eq!(outcome(&dir.join("cold")), EXPECTED);
    let found = entries(cache);
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

#[test]
fn item_1_cache_entries_that_are_links_or_devices_are_replaced_never_written_through() {
    let dir = scratch("links");
    let cache = dir.join("cache");
    let entry = cold_entry(&dir, &cache, &[]);
    assert_eq!(
        fs::metadata(&entry).unwrap().permissions().mode() & 0o777,
        0o600,
        "entries are written 0600"
    );
    // The entry becomes a symbolic link to somebody's file, then to a device node (a private one, with the
    // numbers of /dev/null, standing in for a disk).
    let victim = dir.join("victim.txt");
    fs::write(&victim, "precious\n").unwrap();
    let device = dir.join("disk");
    assert!(
        Command::new("mknod")
            .arg(&device)
            .args(["c", "1", "3"])
            .status()
            .unwrap()
            .success()
    );
    for target in [&victim, &device] {
        fs::remove_file(&entry).unwrap();
        symlink(target, &entry).unwrap();
        let output = link(&dir, "prog", &cache_options(&cache));
        succeeded(&output, "the link over a linked entry");
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains("not a regular file (a symbolic link); ignored"),
            "{stderr}"
        );
        assert_eq!(outcome(&dir.join("prog")), EXPECTED);
        assert_eq!(
            fs::read_to_string(&victim).unwrap(),
            "precious\n",
            "the link wrote through the entry"
        );
        assert!(fs::symlink_metadata(&device).unwrap().file_type().is_char_device());
        // The entry was replaced by a regular file, which the next link uses.
        let kind = fs::symlink_metadata(&entry).unwrap();
        assert!(kind.is_file() && kind.permissions().mode() & 0o777 == 0o600, "{kind:?}");
    }
    // Pruning removes what lookups ignore (a link under an entry's name: the link, not its target), and a
    // timestamp file that is a link is replaced, not written through.
    let planted = cache.join(format!("{}.lto", "ab".repeat(32)));
    symlink(&victim, &planted).unwrap();
    let timestamp = cache.join("neverc-lto-cache.timestamp");
    let _ = fs::remove_file(&timestamp);
    symlink(&victim, &timestamp).unwrap();
    let mut options = cache_options(&cache);
    options.push("--thinlto-cache-policy=prune_interval=0s:prune_after=1h".into());
    let output = link(&dir, "pruned", &options);
    succeeded(&output, "the link that prunes");
    assert!(fs::symlink_metadata(&planted).is_err(), "pruning left the planted link");
    assert!(fs::symlink_metadata(&timestamp).unwrap().is_file());
    assert_eq!(
        fs::read_to_string(&victim).unwrap(),
        "precious\n",
        "pruning wrote through the timestamp"
    );
    assert_eq!(entries(&cache), vec![entry]);
}

#[test]
fn item_6_a_fifo_or_a_huge_file_in_the_cache_is_ignored_and_pruned() {
    let dir = scratch("fifo");
    let cache = dir.join("cache");
    let entry = cold_entry(&dir, &cache, &[]);
    fs::remove_file(&entry).unwrap();
    assert!(Command::new("mkfifo").arg(&entry).status().unwrap().success());
    // A FIFO nobody writes to: opening it for reading would wait forever.
    let output = link_within(&dir, "prog", &cache_options(&cache), 60);
    succeeded(&output, "the link over a FIFO entry");
    let stderr = text(&output.stderr);
    assert!(stderr.contains("not a regular file (a FIFO); ignored"), "{stderr}");
    assert_eq!(outcome(&dir.join("prog")), EXPECTED);
    // A 5 GiB entry (sparse: it takes no disk) is not read.
    fs::remove_file(&entry).unwrap();
    let huge = fs::File::create(&entry).unwrap();
    huge.set_len(5 << 30).unwrap();
    drop(huge);
    let mut options = cache_options(&cache);
    options.push("--thinlto-cache-policy=prune_interval=0s:prune_after=1h".into());
    let started = Instant::now();
    let output = link_within(&dir, "prog", &options, 60);
    succeeded(&output, "the link over a huge entry");
    let stderr = text(&output.stderr);
    assert!(stderr.contains("more than the largest entry read"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    // The link stored its own entry under the name (the rename replaced the huge file) ...
    assert!(fs::metadata(&entry).unwrap().len() < 1 << 30);
    // ... and pruning removes huge entries and FIFOs under entry names.
    let other = cache.join(format!("{}.lto", "cd".repeat(32)));
    fs::File::create(&other).unwrap().set_len(5 << 30).unwrap();
    let fifo = cache.join(format!("{}.lto", "ef".repeat(32)));
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    succeeded(&link_within(&dir, "again", &options, 60), "the link that prunes");
    assert!(
        !other.exists() && fs::symlink_metadata(&fifo).is_err(),
        "{:?}",
        entries(&cache)
    );
    assert_eq!(entries(&cache), vec![entry]);
}

/// The objects of the (digest-sealed) entry `source` with every `helper %d` changed to `HELPER %d`, sealed as
/// `integrity` says under the name of `entry`: what someone who can write the cache would plant to make the
/// next program run other code.
fn forged(source: &Path, entry: &Path, integrity: &Integrity) -> Vec<u8> {
    let name = entry.file_stem().unwrap().to_str().unwrap();
    let source_name = source.file_stem().unwrap().to_str().unwrap();
    let bytes = fs::read(source).unwrap();
    // The pristine copy was renamed: its seal covers the name it had in its cache, the same as `entry`'s.
    let mut candidate = decode_entry(&bytes, name, &Integrity::Digest)
        .or_else(|_| decode_entry(&bytes, source_name, &Integrity::Digest))
        .unwrap();
    let mut changed = 0;
    for object in &mut candidate.objects {
        for at in 0..object.bytes.len().saturating_sub(9) {
            if &object.bytes[at..at + 9] == b"helper %d" {
                object.bytes[at..at + 6].copy_from_slice(b"HELPER");
                changed += 1;
            }
        }
    }
    assert!(changed > 0, "the entry holds the format string");
    encode_entry(&candidate, name, integrity)
}

#[test]
fn item_3_a_keyed_cache_refuses_forged_entries_an_unkeyed_one_cannot() {
    let dir = scratch("forged");
    // What an unkeyed cache does not protect against (docs/lto.md says so): anyone who can write it replaces
    // an entry with other objects and a fresh digest, and the next link runs them.
    let open = dir.join("open");
    let entry = cold_entry(&dir, &open, &[]);
    let pristine = dir.join("pristine.lto");
    fs::copy(&entry, &pristine).unwrap();
    fs::write(&entry, forged(&pristine, &entry, &Integrity::Digest)).unwrap();
    succeeded(
        &link(&dir, "fooled", &cache_options(&open)),
        "the link over a forged entry",
    );
    assert!(outcome(&dir.join("fooled")).starts_with("HELPER 42\n"));
    // With a key, entries carry an HMAC: the same forgery is refused with a warning and rebuilt, and so is
    // one sealed under somebody else's key. (The request, and so the entry's name, is the same.)
    let key = dir.join("cache.key");
    fs::write(&key, "a key of thirty-two random bytes").unwrap();
    let keyed_options = vec![format!("--lto-cache-hmac-key-file={}", key.display())];
    let keyed = dir.join("keyed");
    let entry = cold_entry(&dir, &keyed, &keyed_options);
    assert_eq!(entry.file_name(), pristine_name(&open).as_deref());
    let mut options = cache_options(&keyed);
    options.extend_from_slice(&keyed_options);
    let someone_elses = neverc_link::lto::cache::MacKey::new(b"somebody else's key".to_vec()).unwrap();
    for (integrity, says) in [
        (Integrity::Digest, "carries no HMAC"),
        (
            Integrity::Keyed(someone_elses),
            "HMAC does not verify under the given key",
        ),
    ] {
        fs::write(&entry, forged(&pristine, &entry, &integrity)).unwrap();
        let output = link(&dir, "prog", &options);
        succeeded(&output, "the keyed link over a forged entry");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(says) && stderr.contains("rebuilt"), "{stderr}");
        assert_eq!(outcome(&dir.join("prog")), EXPECTED);
    }
    // The rebuilt entry is keyed again and used.
    let output = link(&dir, "warm", &options);
    succeeded(&output, "the warm keyed link");
    assert!(!text(&output.stderr).contains("LTO cache:"), "{}", text(&output.stderr));
    assert_eq!(outcome(&dir.join("warm")), EXPECTED);
    // The key may come from the environment; a key too short to be one is refused before anything runs.
    let output = clang_link(&dir, "env", &cache_options(&keyed), &[])
        .env("NEVERC_LTO_CACHE_HMAC_KEY", "a key of thirty-two random bytes")
        .output()
        .unwrap();
    succeeded(&output, "the link keyed from the environment");
    assert!(!text(&output.stderr).contains("LTO cache:"), "{}", text(&output.stderr));
    fs::write(&key, "short").unwrap();
    let output = link(&dir, "short", &options);
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("must have at least 16"),
        "{}",
        text(&output.stderr)
    );
}

/// The file name of the one entry of `cache`.
fn pristine_name(cache: &Path) -> Option<std::ffi::OsString> {
    entries(cache)
        .first()
        .and_then(|entry| entry.file_name())
        .map(ToOwned::to_owned)
}

#[test]
fn item_2_lto_side_outputs_never_replace_an_input() {
    let dir = scratch("side-outputs");
    // `--save-temps` writes OUTPUT.resolution.txt: here that is the name of an input (an object).
    for input in INPUTS {
        fs::copy(fixtures().join("full").join(input), dir.join(input)).unwrap();
    }
    fs::rename(dir.join("object.o"), dir.join("prog.resolution.txt")).unwrap();
    let original = fs::read(dir.join("prog.resolution.txt")).unwrap();
    let inputs = INPUTS.map(|input| {
        if input == "object.o" {
            "prog.resolution.txt"
        } else {
            input
        }
    });
    let ld_path = format!("--ld-path={}", ld_dir().join("ld").display());
    let output = Command::new("clang-14")
        .args(["-flto", "-O2", "-static", &ld_path, "-Wl,-plugin-opt=save-temps"])
        .args(inputs)
        .args(["-o", "prog"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("prog.resolution.txt") && stderr.contains("read as an input"),
        "{stderr}"
    );
    assert_eq!(fs::read(dir.join("prog.resolution.txt")).unwrap(), original);
    assert!(!dir.join("prog").exists());
    // `--thinlto-index-only=FILE` (the list of native objects) naming an input.
    for input in ["main.o", "helper.o"] {
        fs::copy(fixtures().join("thin").join(input), dir.join(format!("thin_{input}"))).unwrap();
    }
    let original = fs::read(dir.join("thin_helper.o")).unwrap();
    let output = Command::new("clang-14")
        .args([
            "-flto=thin",
            "-O2",
            "-static",
            &ld_path,
            "-Wl,-plugin-opt=thinlto-index-only=thin_helper.o",
        ])
        .args(["thin_main.o", "thin_helper.o", "-o", "index"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("thin_helper.o") && stderr.contains("read as an input"),
        "{stderr}"
    );
    assert_eq!(fs::read(dir.join("thin_helper.o")).unwrap(), original);
}

/// The pids a fake `llvm-lto2` writes to `pids` (its own, then its child's), once both are there.
fn pids_of(pids: &Path) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found: Vec<u32> = fs::read_to_string(pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.trim().parse().ok())
            .collect();
        if found.len() >= 3 {
            return found;
        }
        assert!(Instant::now() < deadline, "the fake llvm-lto2 did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` runs (exists and is not a zombie).
fn running(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

#[test]
fn item_8_a_signal_during_lto_ends_the_tool_and_removes_its_directory() {
    for signal in ["TERM", "INT"] {
        let dir = scratch(&format!("signal-{signal}"));
        let tmp = dir.join("tmp");
        fs::create_dir_all(&tmp).unwrap();
        let pids = dir.join("pids");
        // A tool that takes its time, and starts a process of its own that would outlive it.
        let tool = dir.join("llvm-lto2");
        fs::write(
            &tool,
            "#!/bin/sh\necho $PPID >> \"$PIDS\"\necho $$ >> \"$PIDS\"\nsleep 600 &\necho $! >> \"$PIDS\"\nwait\n",
        )
        .unwrap();
        fs::set_permissions(&tool, fs::Permissions::from_mode(0o755)).unwrap();
        let mut child = clang_link(
            &dir,
            "prog",
            &[],
            &[("NEVERC_LLVM_LTO2", &tool), ("PIDS", &pids), ("TMPDIR", &tmp)],
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
        let found = pids_of(&pids);
        let (linker, tool_pid, grandchild) = (found[0], found[1], found[2]);
        let lto_dirs = || -> Vec<String> {
            fs::read_dir(&tmp)
                .unwrap()
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with("neverc-lto"))
                .collect()
        };
        assert_eq!(
            lto_dirs().len(),
            1,
            "the provider's directory exists while the tool runs"
        );
        assert!(
            Command::new("kill")
                .arg(format!("-{signal}"))
                .arg(linker.to_string())
                .status()
                .unwrap()
                .success()
        );
        let status = child.wait().unwrap();
        assert!(!status.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        while (running(tool_pid) || running(grandchild)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!running(tool_pid), "SIG{signal} left llvm-lto2 running");
        assert!(!running(grandchild), "SIG{signal} left the tool's child running");
        assert!(!running(linker));
        assert_eq!(
            lto_dirs(),
            Vec::<String>::new(),
            "SIG{signal} left the provider's directory"
        );
        assert!(!dir.join("prog").exists());
    }
}

#[test]
fn item_13_a_symbol_with_a_comma_links_through_lto_as_with_ld_lld() {
    let dir = scratch("comma");
    fs::write(
        dir.join("a.c"),
        "int weird(int) __asm__(\"weird,name\");\nint main(int argc, char **argv) { (void)argv; return weird(argc * 20) + 1; }\n",
    )
    .unwrap();
    fs::write(
        dir.join("b.c"),
        "int weird(int) __asm__(\"weird,name\");\n__attribute__((noinline)) int weird(int x) { return x * 2; }\n",
    )
    .unwrap();
    for mode in ["-flto", "-flto=thin"] {
        let compiled = Command::new("clang-14")
            .args([mode, "-O1", "-fno-inline", "-c", "a.c", "b.c"])
            .current_dir(&dir)
            .output()
            .unwrap();
        succeeded(&compiled, "clang-14 -c");
        for (linker, program) in [
            (format!("--ld-path={}", ld_dir().join("ld").display()), "ours"),
            ("-fuse-ld=lld".to_string(), "lld"),
        ] {
            let output = Command::new("clang-14")
                .args([mode, "-static", &linker, "a.o", "b.o", "-o", program])
                .current_dir(&dir)
                .output()
                .unwrap();
            succeeded(&output, &format!("clang-14 {mode} {linker}"));
            let status = Command::new(dir.join(program)).status().unwrap();
            assert_eq!(status.code(), Some(41), "{mode} {program}");
        }
        // The symbol keeps its name in the program (global, or local once LTO internalized it).
        let symbols = Command::new("nm").arg(dir.join("ours")).output().unwrap();
        assert!(
            text(&symbols.stdout)
                .lines()
                .any(|line| line.ends_with(" T weird,name") || line.ends_with(" t weird,name")),
            "{}",
            text(&symbols.stdout)
        );
    }
}
