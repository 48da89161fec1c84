#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Outputs in hostile places: a device or a FIFO named as the output, symbolic links planted where temporaries
//! go, an output that is also an input, a signal in the middle of a write, stale temporaries of a killed run,
//! and the umask. Every command that writes a file is run: `link -o`, `link -Map`, `cc materialize -o`,
//! `audit -o` and `gen --out`.
//!
//! The device nodes are private ones made with `mknod` in scratch directories (the tests run as root); the
//! real `/dev/null` is never named.

use std::fs;
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use neverc_test_support::{repo, scratch, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

/// A pid above the kernel's largest (`PID_MAX_LIMIT`, 2^22): no process ever has it.
const DEAD_PID: u32 = 99_999_999;

/// Two freestanding objects that link into a program exiting with 42: `rt.o` (`_start`) and `lib.o`.
fn objects() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hostile-objects");
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("rt.c"),
            "int answer(void);\n__attribute__((noreturn)) void _start(void) {\n    long status = answer();\n    \
             __asm__ volatile(\"syscall\" : : \"a\"(60L), \"D\"(status) : \"rcx\", \"r11\", \"memory\");\n    \
             for (;;) {}\n}\n",
        )
        .unwrap();
        fs::write(dir.join("lib.c"), "int answer(void) { return 42; }\n").unwrap();
        for name in ["rt", "lib"] {
            let status = Command::new("gcc")
                .args([
                    "-O2",
                    "-ffreestanding",
                    "-nostdlib",
                    "-fno-stack-protector",
                    "-fcf-protection=none",
                    "-fno-pie",
                    "-fno-asynchronous-unwind-tables",
                    "-c",
                ])
                .arg(dir.join(format!("{name}.c")))
                .arg("-o")
                .arg(dir.join(format!("{name}.o")))
                .status()
                .expect("gcc is installed");
            assert!(status.success());
        }
        dir
    })
}

/// Copies the two objects into `dir` (so that a test may overwrite them) and returns their paths.
fn objects_in(dir: &Path) -> (PathBuf, PathBuf) {
    let rt = dir.join("rt.o");
    let lib = dir.join("lib.o");
    fs::copy(objects().join("rt.o"), &rt).unwrap();
    fs::copy(objects().join("lib.o"), &lib).unwrap();
    (rt, lib)
}

/// A small LLVM IR module with `functions` functions (about 70 bytes each).
fn module(path: &Path, functions: usize) {
    let mut text = String::from("target triple = \"x86_64-unknown-linux-gnu\"\n\n");
    for i in 0..functions {
        text.push_str(&format!(
            "define i32 @f{i}(i32 %a) {{\n  %b = add i32 %a, {i}\n  ret i32 %b\n}}\n\n"
        ));
    }
    fs::write(path, text).unwrap();
}

/// Runs the CLI in the workspace root (where the declarations are).
fn run(args: &[&Path]) -> Output {
    Command::new(BIN).args(args).current_dir(repo()).output().unwrap()
}

fn p(text: &str) -> &Path {
    Path::new(text)
}

fn assert_success(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what}: {}\n{}",
        output.status,
        text(&output.stderr)
    );
}

/// Makes a private character device with the numbers of `/dev/null`.
fn mknod_null(path: &Path) {
    let status = Command::new("mknod").arg(path).args(["c", "1", "3"]).status().unwrap();
    assert!(status.success(), "mknod {} (the tests run as root)", path.display());
}

fn assert_char_device(path: &Path, after: &str) {
    let kind = fs::symlink_metadata(path)
        .unwrap_or_else(|error| panic!("{} is gone after {after}: {error}", path.display()))
        .file_type();
    assert!(
        kind.is_char_device(),
        "{} is no longer a character device after {after} ({kind:?})",
        path.display()
    );
}

/// The names in `dir` that look like temporaries (`.*.tmp`).
fn temporaries(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.') && name.ends_with(".tmp"))
        .collect()
}

#[test]
fn a_device_output_is_written_in_place_and_never_replaced() {
    let dir = scratch!("hostile-device");
    let (rt, lib) = objects_in(&dir);
    let null = dir.join("null");
    mknod_null(&null);
    let executable = dir.join("a.out");

    let output = run(&[p("link"), p("-o"), &null, &rt, &lib]);
    assert_success(&output, "link -o DEVICE");
    assert_char_device(&null, "link -o");

    let output = run(&[p("link"), p("-o"), &executable, p("-Map"), &null, &rt, &lib]);
    assert_success(&output, "link -Map DEVICE");
    assert_char_device(&null, "link -Map");
    assert!(executable.is_file());

    // Both outputs may name the same device: nothing is replaced.
    let output = run(&[p("link"), p("-o"), &null, p("-Map"), &null, &rt, &lib]);
    assert_success(&output, "link -o DEVICE -Map DEVICE");
    assert_char_device(&null, "link -o -Map");

    let ll = dir.join("in.ll");
    module(&ll, 3);
    let output = run(&[p("cc"), p("materialize"), &ll, p("-o"), &null]);
    assert_success(&output, "cc materialize -o DEVICE");
    assert_char_device(&null, "cc materialize -o");

    let output = run(&[p("audit"), p("-o"), &null]);
    assert_success(&output, "audit -o DEVICE");
    assert_char_device(&null, "audit -o");

    // In the directory `gen` writes, a non-regular file is written in place like any other output; the other
    // files are written as usual.
    let generated = dir.join("generated");
    fs::create_dir(&generated).unwrap();
    mknod_null(&generated.join("phases.rs"));
    let output = run(&[p("gen"), p("--out"), &generated]);
    assert_success(&output, "gen --out");
    assert_char_device(&generated.join("phases.rs"), "gen --out");
    assert!(generated.join("targets.rs").is_file());
    assert!(temporaries(&dir).is_empty() && temporaries(&generated).is_empty());
}

#[test]
fn a_fifo_output_is_written_through_and_never_replaced() {
    let dir = scratch!("hostile-fifo");
    let fifo = dir.join("report.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let (sender, receiver) = std::sync::mpsc::channel();
    let reader = fifo.clone();
    // The reader opens the FIFO before or while the writer does; on failure it is left blocked, which does not
    // keep the test process alive.
    std::thread::spawn(move || {
        let _ = sender.send(fs::read(&reader));
    });
    let output = run(&[p("audit"), p("-o"), &fifo]);
    assert_success(&output, "audit -o FIFO");
    assert!(
        fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(),
        "the FIFO was replaced"
    );
    let read = receiver
        .recv_timeout(Duration::from_secs(30))
        .expect("the reader of the FIFO got nothing: the report went elsewhere")
        .unwrap();
    let expected = run(&[p("audit")]);
    assert_eq!(text(&read), text(&expected.stdout));
}

/// Starts the CLI stopped (`sh` stops itself, then `exec`s the CLI under the same pid), calls `plant` with its
/// pid, lets it run and returns how it ended.
fn run_stopped(dir: &Path, args: &[&Path], plant: impl FnOnce(u32)) -> Output {
    let child = Command::new("sh")
        .arg("-c")
        .arg("kill -STOP $$; exec \"$0\" \"$@\"")
        .arg(BIN)
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
        if state == Some(Some('T')) {
            break;
        }
        assert!(Instant::now() < deadline, "the child never stopped: {stat}");
        std::thread::sleep(Duration::from_millis(2));
    }
    plant(pid);
    assert!(
        Command::new("kill")
            .args(["-CONT", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    child.wait_with_output().unwrap()
}

#[test]
fn a_symlink_planted_at_a_temporary_name_is_never_followed() {
    let dir = scratch!("hostile-symlink");
    let (rt, lib) = objects_in(&dir);
    let victim = dir.join("victim");
    fs::write(&victim, "precious\n").unwrap();
    fs::set_permissions(&victim, fs::Permissions::from_mode(0o600)).unwrap();
    // The name the temporary had (`.<name>.<pid>.tmp`) and, for good measure, names in the pattern it has now.
    let plant = |name: &str, pid: u32| {
        std::os::unix::fs::symlink(&victim, dir.join(format!(".{name}.{pid}.tmp"))).unwrap();
        for suffix in ["0000000000000000", "0123456789abcdef"] {
            std::os::unix::fs::symlink(&victim, dir.join(format!(".{name}.{pid}.{suffix}.tmp"))).unwrap();
        }
    };
    let report = dir.join("report.txt");
    let workspace = repo();
    let schema = workspace.join("PhaseSchema.json");
    let output = run_stopped(
        &dir,
        &[p("audit"), p("--phase-schema"), &schema, p("-o"), &report],
        |pid| plant("report.txt", pid),
    );
    assert_success(&output, "audit -o");
    let executable = dir.join("a.out");
    let map = dir.join("a.map");
    let output = run_stopped(
        &dir,
        &[p("link"), p("-o"), &executable, p("-Map"), &map, &rt, &lib],
        |pid| {
            plant("a.out", pid);
            plant("a.map", pid);
        },
    );
    assert_success(&output, "link -o -Map");
    assert_eq!(
        fs::read_to_string(&victim).unwrap(),
        "precious\n",
        "a planted symlink was followed"
    );
    assert_eq!(fs::metadata(&victim).unwrap().permissions().mode() & 0o7777, 0o600);
    for written in [&report, &executable, &map] {
        let kind = fs::symlink_metadata(written).unwrap().file_type();
        assert!(kind.is_file(), "{} is not a regular file: {kind:?}", written.display());
    }
    assert_eq!(Command::new(&executable).status().unwrap().code(), Some(42));
}

#[test]
fn an_output_that_is_an_input_or_another_output_is_refused_and_nothing_is_written() {
    let dir = scratch!("hostile-same-file");
    let (rt, lib) = objects_in(&dir);
    let original = fs::read(&rt).unwrap();
    let alias = dir.join("alias.o");
    fs::hard_link(&rt, &alias).unwrap();
    let executable = dir.join("a.out");
    let refused = |args: &[&Path], names: [&str; 2]| {
        let output = run(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output.stderr));
        let stderr = text(&output.stderr);
        for name in names {
            assert!(stderr.contains(name), "{args:?}: the error names {name}: {stderr}");
        }
        assert!(stderr.contains("same file"), "{stderr}");
        assert_eq!(fs::read(&rt).unwrap(), original, "{args:?} overwrote an input");
        assert!(!executable.exists(), "{args:?} wrote the executable");
        assert!(temporaries(&dir).is_empty());
    };
    refused(&[p("link"), p("-o"), &rt, &rt, &lib], ["-o", "rt.o"]);
    // The same file under another name (a hard link) is the same file.
    refused(&[p("link"), p("-o"), &alias, &rt, &lib], ["alias.o", "rt.o"]);
    refused(
        &[p("link"), p("-o"), &executable, p("-Map"), &rt, &rt, &lib],
        ["-Map", "rt.o"],
    );
    let order = dir.join("order.txt");
    fs::write(&order, "answer\n").unwrap();
    refused(
        &[
            p("link"),
            p("-o"),
            &executable,
            p("-Map"),
            &order,
            p("--symbol-ordering-file"),
            &order,
            &rt,
            &lib,
        ],
        ["-Map", "--symbol-ordering-file"],
    );
    assert_eq!(fs::read_to_string(&order).unwrap(), "answer\n");
    let map = dir.join("same");
    refused(&[p("link"), p("-o"), &map, p("-Map"), &map, &rt, &lib], ["-o", "-Map"]);
    assert!(!map.exists());

    let ll = dir.join("in.ll");
    module(&ll, 3);
    let before = fs::read(&ll).unwrap();
    let output = run(&[p("cc"), p("materialize"), &ll, p("-o"), &ll]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("in.ll"));
    assert_eq!(fs::read(&ll).unwrap(), before);
}

/// Starts `cc materialize` of a module of `functions` functions, sends `signal` once its temporary appears and
/// returns how it ended, or `None` if it finished before the temporary was seen.
fn materialize_and_signal(dir: &Path, functions: usize, signal: &str) -> Option<std::process::ExitStatus> {
    let ll = dir.join("big.ll");
    module(&ll, functions);
    let out = dir.join("out.ll");
    let mut child: Child = Command::new(BIN)
        .args([p("cc"), p("materialize"), &ll, p("-o"), &out])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    loop {
        if temporaries(dir).iter().any(|name| name.starts_with(".out.ll.")) {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            return None;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    assert!(
        Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .unwrap()
            .success()
    );
    Some(child.wait().unwrap())
}

#[test]
fn a_signal_during_a_write_removes_the_temporary() {
    for (signal, number) in [("TERM", 15), ("INT", 2)] {
        let dir = scratch!("hostile-signal-{signal}");
        // A larger module if the write was too quick to catch.
        let status = [200_000, 800_000, 3_200_000]
            .into_iter()
            .find_map(|functions| materialize_and_signal(&dir, functions, signal))
            .expect("the temporary was never seen");
        assert!(
            status.signal() == Some(number) || status.code() == Some(128 + number),
            "SIG{signal}: {status}"
        );
        assert_eq!(temporaries(&dir), Vec::<String>::new(), "SIG{signal} left a temporary");
        // The signal came in the middle of the write: the output never appeared.
        assert!(!dir.join("out.ll").exists(), "SIG{signal} came after the write");
    }
}

#[test]
fn a_stale_temporary_of_a_dead_process_is_removed_by_the_next_write() {
    let dir = scratch!("hostile-stale");
    let stale = format!(".report.txt.{DEAD_PID}.0123456789abcdef.tmp");
    // Ours, but its process (this test) is alive; and files that only look like temporaries.
    let alive = format!(".report.txt.{}.0123456789abcdef.tmp", std::process::id());
    let kept = [
        alive.as_str(),
        ".report.txt.notes.tmp",
        ".other.txt.99999999.0123456789abcdef.tmp",
    ];
    for name in std::iter::once(stale.as_str()).chain(kept) {
        fs::write(dir.join(name), "left over\n").unwrap();
    }
    let output = run(&[p("audit"), p("-o"), &dir.join("report.txt")]);
    assert_success(&output, "audit -o");
    let mut left = temporaries(&dir);
    left.sort();
    let mut expected: Vec<String> = kept.iter().map(|name| name.to_string()).collect();
    expected.sort();
    assert_eq!(left, expected, "the stale temporary {stale} must go and nothing else");
}

/// Runs the CLI under `sh` with `umask` set.
fn run_with_umask(umask: &str, args: &[&Path]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask}; exec \"$0\" \"$@\""))
        .arg(BIN)
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap()
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().mode() & 0o7777
}

#[test]
fn output_modes_follow_the_umask_as_ld_does() {
    let dir = scratch!("hostile-umask");
    let (rt, lib) = objects_in(&dir);
    let ll = dir.join("in.ll");
    module(&ll, 3);
    for (umask, executable_mode, data_mode) in [("027", 0o750, 0o640), ("002", 0o775, 0o664), ("0", 0o777, 0o666)] {
        let executable = dir.join(format!("a.{umask}.out"));
        let map = dir.join(format!("a.{umask}.map"));
        let output = run_with_umask(umask, &[p("link"), p("-o"), &executable, p("-Map"), &map, &rt, &lib]);
        assert_success(&output, "link");
        assert_eq!(mode(&executable), executable_mode, "link -o under umask {umask}");
        assert_eq!(mode(&map), data_mode, "link -Map under umask {umask}");

        let materialized = dir.join(format!("out.{umask}.ll"));
        let output = run_with_umask(umask, &[p("cc"), p("materialize"), &ll, p("-o"), &materialized]);
        assert_success(&output, "cc materialize");
        assert_eq!(mode(&materialized), data_mode, "cc materialize -o under umask {umask}");

        let report = dir.join(format!("report.{umask}.txt"));
        let output = run_with_umask(umask, &[p("audit"), p("-o"), &report]);
        assert_success(&output, "audit");
        assert_eq!(mode(&report), data_mode, "audit -o under umask {umask}");

        let generated = dir.join(format!("generated.{umask}"));
        let output = run_with_umask(umask, &[p("gen"), p("--out"), &generated]);
        assert_success(&output, "gen");
        assert_eq!(
            mode(&generated.join("phases.rs")),
            data_mode,
            "gen --out under umask {umask}"
        );
    }
}

#[test]
fn item_2_an_output_never_replaces_a_file_the_link_read_however_it_was_named() {
    let dir = scratch!("hostile-read-inputs");
    let (rt, lib) = objects_in(&dir);
    let refused = |args: &[&Path], victim: &Path| {
        let before = fs::read(victim).unwrap();
        let output = run(args);
        let stderr = text(&output.stderr);
        assert!(!output.status.success(), "{args:?} succeeded: {stderr}");
        assert!(
            stderr.contains("which this run read as an input") && stderr.contains(&*victim.to_string_lossy()),
            "{args:?}: {stderr}"
        );
        assert_eq!(
            fs::read(victim).unwrap(),
            before,
            "{args:?} overwrote {}",
            victim.display()
        );
        assert!(temporaries(&dir).is_empty(), "{:?}", temporaries(&dir));
    };
    // A member of a thin archive: only the archive is on the command line.
    let member = dir.join("x_alpha.o");
    fs::copy(&lib, &member).unwrap();
    let thin = dir.join("libx_thin.a");
    let status = Command::new("ar").arg("rcT").arg(&thin).arg(&member).status().unwrap();
    assert!(status.success());
    refused(&[p("link"), p("-o"), &member, &rt, &thin], &member);
    // A linker script named by another script.
    let inner = dir.join("inner.ld");
    let outer = dir.join("outer.ld");
    fs::write(&inner, format!("INPUT({})\n", lib.display())).unwrap();
    fs::write(&outer, format!("INPUT({})\n", inner.display())).unwrap();
    refused(&[p("ld"), p("-o"), &inner, &rt, &outer], &inner);
    // The response file the command line came from.
    let response = dir.join("args.rsp");
    fs::write(
        &response,
        format!("-o {} {} {}\n", response.display(), rt.display(), lib.display()),
    )
    .unwrap();
    let at = PathBuf::from(format!("@{}", response.display()));
    refused(&[p("ld"), &at], &response);
    // The same links with an output nobody read write it and run.
    let program = dir.join("prog");
    assert_success(&run(&[p("ld"), p("-o"), &program, &rt, &outer]), "ld with the scripts");
    assert_eq!(Command::new(&program).status().unwrap().code(), Some(42));
    assert_success(
        &run(&[p("link"), p("-o"), &program, &rt, &thin]),
        "link with the thin archive",
    );
    assert_eq!(Command::new(&program).status().unwrap().code(), Some(42));
}

#[test]
fn item_9_a_locked_temporary_of_a_process_this_one_cannot_see_is_left_alone() {
    let dir = scratch!("hostile-locked-temporary");
    // A temporary of a link in another pid namespace: its pid means nothing here, and its writer holds a
    // lock on it (here a `flock` process, standing in for that writer).
    let live = dir.join(format!(".report.txt.{DEAD_PID}.0123456789abcdef.tmp"));
    fs::write(&live, "being written\n").unwrap();
    // `-o`: the lock is held by `flock` itself, not by the `sleep` it runs, so killing `flock` releases it.
    let mut holder = Command::new("flock")
        .arg("-o")
        .arg(&live)
        .args(["sleep", "600"])
        .spawn()
        .expect("flock (util-linux) is installed");
    // The lock is taken once `flock` runs `sleep`.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !fs::read_to_string("/proc/locks")
        .unwrap()
        .contains(&format!(":{} ", fs::metadata(&live).unwrap().ino()))
    {
        assert!(Instant::now() < deadline, "flock did not lock {}", live.display());
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = run(&[p("audit"), p("-o"), &dir.join("report.txt")]);
    assert_success(&output, "audit -o");
    assert!(live.exists(), "the sweep removed a live temporary of another link");
    assert_eq!(fs::read_to_string(&live).unwrap(), "being written\n");
    // Once its writer is gone (and with it the lock), the next write sweeps it.
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_success(&run(&[p("audit"), p("-o"), &dir.join("report.txt")]), "audit -o");
    assert!(!live.exists(), "a stale temporary stayed");
}
