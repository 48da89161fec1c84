//! Helpers shared by the tests of the workspace, so that each exists once: where the workspace is, fresh
//! scratch directories, reading files and running programs with useful failure messages, building the link
//! fixture programs, NeverC's published schema history, adding a phase to a schema copy, and a deterministic
//! random number generator; Redis servers for the LTO cache's tests (`redis`).
//!
//! Crates use this crate only as a dev-dependency; it is never published. Everything here fails by panicking
//! with a message that names what went wrong, since a failing helper means a failing test.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub mod cross;
pub mod redis;

/// Returns the root of the workspace, the directory that holds `PhaseSchema.json`, `targets/` and every crate.
///
/// It is the parent of this crate's own directory, fixed when this crate is compiled.
pub fn repo() -> PathBuf {
    match Path::new(env!("CARGO_MANIFEST_DIR")).parent() {
        Some(root) => root.to_path_buf(),
        None => panic!("{} has no parent directory", env!("CARGO_MANIFEST_DIR")),
    }
}

/// Returns a fresh, empty directory for one test under the calling test's `CARGO_TARGET_TMPDIR`, named by the
/// arguments as `format!` would name it: `scratch!("plugins-{name}")`.
///
/// It is a macro because Cargo sets `CARGO_TARGET_TMPDIR` only while it compiles integration tests and
/// benchmarks, so the variable must be read where the macro is used. That directory is shared by every crate
/// of the workspace, so each test file gives its names a prefix of its own.
#[macro_export]
macro_rules! scratch {
    ($($name:tt)+) => {
        $crate::fresh_dir(::std::path::Path::new(::std::env!("CARGO_TARGET_TMPDIR")).join(::std::format!($($name)+)))
    };
}

/// Removes `dir` with whatever an earlier run left in it, creates it empty and returns it.
pub fn fresh_dir(dir: PathBuf) -> PathBuf {
    match std::fs::remove_dir_all(&dir) {
        // A directory that is not there yet is the usual case.
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            panic!("cannot empty {}: {error}", dir.display())
        }
        _ => {}
    }
    if let Err(error) = std::fs::create_dir_all(&dir) {
        panic!("cannot create {}: {error}", dir.display());
    }
    dir
}

/// Reads a text file; a failure panics with the path and the reason.
pub fn read_text(path: &Path) -> String {
    match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => panic!("cannot read {}: {error}", path.display()),
    }
}

/// Runs `command` and returns its exit status, retrying while the program is "text file busy": a program
/// the test process wrote a moment ago may still be open for writing in a child that another test thread
/// forked (the descriptor is closed only at that child's exec), and exec(2) refuses it until then.
pub fn status_retrying_busy(command: &mut Command) -> std::process::ExitStatus {
    retrying_busy(command, Command::status)
}

/// Like [`status_retrying_busy`], for what the program printed.
pub fn output_retrying_busy(command: &mut Command) -> Output {
    retrying_busy(command, Command::output)
}

fn retrying_busy<T>(command: &mut Command, run: fn(&mut Command) -> std::io::Result<T>) -> T {
    let mut tries = 0;
    loop {
        match run(command) {
            Ok(result) => return result,
            Err(error) if error.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(error) => panic!("cannot run {command:?}: {error}"),
        }
    }
}

/// Decodes what a program printed, replacing invalid UTF-8 rather than failing.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `program` with `args` in `dir` and returns how it exited and what it printed; a program that cannot be
/// started panics.
///
/// The integration tests of the root package pass `env!("CARGO_BIN_EXE_neverc-spec")`, which Cargo sets
/// only for them.
pub fn run_in(program: impl AsRef<OsStr>, dir: &Path, args: &[&str]) -> Output {
    let program = program.as_ref();
    match Command::new(program).args(args).current_dir(dir).output() {
        Ok(output) => output,
        Err(error) => panic!("cannot run {}: {error}", Path::new(program).display()),
    }
}

/// Panics, saying what ran and everything it printed, unless `output` is a success.
/// Compiles in `dir` with `compiler` (`gcc` as strict C11, `g++` as strict C++17: `-Wall -Wextra -Werror
/// -pedantic`) against the repository's `include/`, with `args` after the flags; fails the test when it fails.
pub fn compile_strict(compiler: &str, dir: &Path, args: &[&str]) {
    let standard = if compiler == "g++" { "-std=c++17" } else { "-std=c11" };
    let include = format!("-I{}", repo().join("include").display());
    let mut all = vec![standard, "-Wall", "-Wextra", "-Werror", "-pedantic", include.as_str()];
    all.extend_from_slice(args);
    let output = run_in(compiler, dir, &all);
    succeeded(&output, &format!("{compiler} {standard} -pedantic"));
}

/// Holds the committed generated files of `dir` to `files` (name and contents): with `NEVERC_BLESS` set
/// they are written first. Every file must be committed as generated, and `dir` must hold no other file.
pub fn check_committed_files<'a>(dir: &Path, files: impl IntoIterator<Item = (&'a str, &'a str)> + Clone) {
    if std::env::var_os("NEVERC_BLESS").is_some() {
        std::fs::create_dir_all(dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
        for (name, contents) in files.clone() {
            std::fs::write(dir.join(name), contents).unwrap_or_else(|error| panic!("{name}: {error}"));
        }
    }
    let mut expected = Vec::new();
    for (name, contents) in files {
        let path = dir.join(name);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == contents,
            "{} is stale; rerun the tests with NEVERC_BLESS=1 and commit the result",
            path.display()
        );
        expected.push(name.to_string());
    }
    let mut committed: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    committed.sort();
    expected.sort();
    assert_eq!(
        committed,
        expected,
        "a file that is not generated is committed in {}",
        dir.display()
    );
}

pub fn succeeded(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    );
}

/// Programs a fixture script built into `dir` for the linker to link and run as ld.bfd's builds ran:
/// `cases.txt` names one case a line; each case's directory holds `inputs.txt` (the linker inputs in link
/// order, one a line), maybe `flags.txt` (link options, one a line), `expected.stdout` and `expected.status`
/// (what ld.bfd's build printed and how it exited).
pub struct LinkCases<'a> {
    pub dir: &'a Path,
    /// The `neverc-spec` binary (`env!("CARGO_BIN_EXE_neverc-spec")` in the root package's tests).
    pub linker: &'a str,
}

impl LinkCases<'_> {
    /// The cases whose name starts with `prefix` (at least one).
    pub fn names(&self, prefix: &str) -> Vec<String> {
        let names: Vec<String> = read_text(&self.dir.join("cases.txt"))
            .lines()
            .filter(|name| name.starts_with(prefix))
            .map(str::to_string)
            .collect();
        assert!(!names.is_empty(), "no `{prefix}` cases in {}", self.dir.display());
        names
    }

    /// The lines of a case's file (none when the file is not there).
    pub fn lines(case: &Path, file: &str) -> Vec<String> {
        let path = case.join(file);
        if !path.exists() {
            return Vec::new();
        }
        read_text(&path).lines().map(str::to_string).collect()
    }

    /// Links `case` statically (its inputs and link flags, then `extra`) into `output`; the linker's stderr
    /// when it fails.
    pub fn link(&self, case: &Path, output: &Path, extra: &[&str]) -> Result<(), String> {
        let mut flags = Self::lines(case, "flags.txt");
        flags.extend(extra.iter().map(|flag| flag.to_string()));
        flags.dedup();
        let result = match Command::new(self.linker)
            .args(["link", "-static", "-o"])
            .arg(output)
            .args(&flags)
            .args(Self::lines(case, "inputs.txt"))
            .output()
        {
            Ok(result) => result,
            Err(error) => panic!("cannot run {}: {error}", self.linker),
        };
        if result.status.success() {
            Ok(())
        } else {
            Err(text(&result.stderr))
        }
    }

    /// What ld.bfd's build of `case` printed and its exit status.
    pub fn expected(case: &Path) -> (String, i32) {
        let status = read_text(&case.join("expected.status"));
        match status.trim().parse() {
            Ok(status) => (read_text(&case.join("expected.stdout")), status),
            Err(_) => panic!("{}: `{status}` is no exit status", case.display()),
        }
    }

    /// Links every case with `prefix`, with and without `--gc-sections`, runs it with `run` (stdout, exit
    /// status) and compares that with ld.bfd's build; `also` may add failures of its own for each output
    /// (the case's name, directory, the extra options and the output). Panics listing every failure.
    pub fn check(
        &self,
        prefix: &str,
        run: impl Fn(&Path) -> (String, i32),
        mut also: impl FnMut(&str, &Path, &[&str], &Path) -> Option<String>,
    ) {
        let mut failures = Vec::new();
        for name in self.names(prefix) {
            let case = self.dir.join(&name);
            let (expected, status) = Self::expected(&case);
            for (label, extra) in [("", &[][..]), ("-gc", &["--gc-sections"][..])] {
                let output = case.join(format!("neverc{label}.elf"));
                if let Err(stderr) = self.link(&case, &output, extra) {
                    failures.push(format!("{name} {extra:?}: the link failed:\n{stderr}"));
                    continue;
                }
                let (stdout, code) = run(&output);
                if (stdout.as_str(), code) != (expected.as_str(), status) {
                    failures.push(format!(
                        "{name} {extra:?}: exit {code} (ld.bfd's build: {status})\n--- ours\n{stdout}--- ld.bfd's\n{expected}"
                    ));
                }
                failures.extend(also(&name, &case, extra, &output));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    }
}

/// The rows of the program header table in a `readelf -lW` listing, each split into its fields (type first,
/// alignment last; the flags `R E` are two fields).
pub fn program_header_rows(listing: &str) -> Vec<Vec<String>> {
    listing
        .lines()
        .skip_while(|line| !line.trim_start().starts_with("Type"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .map(|line| line.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// The version definitions of `library` as `readelf -V` lists them (`Rev: 1  Flags: BASE  Index: 1  Cnt: 1
/// Name: ...`, `Parent 1: ...`), without their offsets.
pub fn version_definitions(library: &Path) -> Vec<String> {
    text(&run_in("readelf", Path::new("."), &["-VW", &library.to_string_lossy()]).stdout)
        .lines()
        .skip_while(|line| !line.starts_with("Version definition section"))
        .skip(2)
        .take_while(|line| !line.trim().is_empty())
        .map(|line| line.split_once(": ").map_or(line, |(_, rest)| rest).trim().to_string())
        .collect()
}

/// `readelf -lW` of `program`'s program header table, as [`program_header_rows`] splits it.
pub fn program_headers(program: &Path) -> Vec<Vec<String>> {
    program_header_rows(&text(
        &run_in("readelf", Path::new("."), &["-lW", &program.to_string_lossy()]).stdout,
    ))
}

/// The address and file bytes of the section named `wanted` of the little-endian ELF64 file `image`, read from
/// its section headers; a missing section panics.
pub fn elf_section(image: &[u8], wanted: &str) -> (u64, Vec<u8>) {
    let u16_at = |at: usize| u16::from_le_bytes([image[at], image[at + 1]]) as usize;
    let u64_at = |at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&image[at..at + 8]);
        u64::from_le_bytes(bytes)
    };
    let (table, count, names) = (u64_at(0x28) as usize, u16_at(0x3c), u16_at(0x3e));
    let header = |index: usize| table + index * 64;
    let names_offset = u64_at(header(names) + 24) as usize;
    let found = (0..count).find_map(|index| {
        let at = header(index);
        let name_at =
            names_offset + u32::from_le_bytes([image[at], image[at + 1], image[at + 2], image[at + 3]]) as usize;
        let end = name_at + image[name_at..].iter().position(|byte| *byte == 0)?;
        (&image[name_at..end] == wanted.as_bytes()).then(|| {
            let (offset, size) = (u64_at(at + 24) as usize, u64_at(at + 32) as usize);
            (u64_at(at + 16), image[offset..offset + size].to_vec())
        })
    });
    match found {
        Some(section) => section,
        None => panic!("no section {wanted}"),
    }
}

/// Runs `bash script out`, the way every fixture build script is run; the error names the script and carries
/// everything it printed.
pub fn run_script(script: &Path, out: &Path) -> Result<(), String> {
    let output = Command::new("bash")
        .arg(script)
        .arg(out)
        .output()
        .map_err(|error| format!("cannot run {}: {error}", script.display()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} {} failed ({}):\n{}\n{}",
            script.display(),
            out.display(),
            output.status,
            text(&output.stdout),
            text(&output.stderr)
        ))
    }
}

/// Runs the fixture script `script` (relative to the repository) into `out`, then makes `out/bin/ld` a
/// symbolic link to `ld` (the neverc-spec binary under test), the directory the compiler drivers' `-B` names.
pub fn build_fixtures_with_ld(script: &str, out: PathBuf, ld: &str) -> Result<PathBuf, String> {
    run_script(&repo().join(script), &out)?;
    let bin = out.join("bin");
    let _ = std::fs::remove_dir_all(&bin);
    std::fs::create_dir_all(&bin).map_err(|error| error.to_string())?;
    std::os::unix::fs::symlink(ld, bin.join("ld")).map_err(|error| error.to_string())?;
    Ok(out)
}

/// Builds the link fixture programs (`runtime/link/tests/fixtures/programs/build.sh`: objects, archives, ld.bfd
/// references and expected output) into `out`; a failure panics with the script's output.
pub fn build_fixture_programs(out: &Path) {
    let script = repo().join("runtime/link/tests/fixtures/programs/build.sh");
    if let Err(message) = run_script(&script, out) {
        panic!("building the fixture programs failed (gcc, g++ and binutils are needed): {message}");
    }
}

/// NeverC's published phase schemas in `tests/fixtures/neverc/`, oldest first.
pub const NEVERC_HISTORY: [&str; 7] = [
    "PhaseSchema.c3139b3.json",
    "PhaseSchema.3b975d8.json",
    "PhaseSchema.5cb5776.json",
    "PhaseSchema.d8e95a6.json",
    "PhaseSchema.b553b6d.json",
    "PhaseSchema.7adbf41.json",
    "PhaseSchema.json",
];

/// Appends to a phase schema document a copy of the phase named `model`, renamed to `name` with `symbol` and
/// `id` as the low half of its identifier, and returns the copy for further edits.
pub fn add_phase_like<'a>(schema: &'a mut Value, model: &str, name: &str, symbol: &str, id: &str) -> &'a mut Value {
    let Some(phases) = schema["phases"].as_array_mut() else {
        panic!("the document has no `phases` array");
    };
    let Some(mut phase) = phases.iter().find(|phase| phase["name"] == model).cloned() else {
        panic!("the document has no phase `{model}`");
    };
    phase["name"] = name.into();
    phase["symbol"] = symbol.into();
    phase["id"][1] = id.into();
    phases.push(phase);
    let last = phases.len() - 1;
    &mut phases[last]
}

/// A deterministic pseudo-random number generator (SplitMix64): the same seed gives the same sequence on every
/// machine, so a failure found with it can be reproduced.
pub struct Rng(u64);

impl Rng {
    /// Starts the sequence of `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// Returns the next number of the sequence.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Returns a number in `0..bound`; `bound` must not be zero.
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }

    /// Returns one of `items`, which must not be empty.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Makes a seed from a name (64-bit FNV-1a), so that every file or case named gets a sequence of its own.
pub fn seed_of(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3)
    })
}

/// How long and how much memory a program run by [`run_bounded`] may take.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// The run is killed (and the calling test fails) after this long.
    pub timeout: std::time::Duration,
    /// The address space the program may use, in KiB (`ulimit -v`), so that a program that reads without
    /// bound fails instead of taking the machine's memory.
    pub memory_kib: u64,
}

impl Default for Bounds {
    /// 20 seconds and 2 GiB of address space.
    fn default() -> Bounds {
        Bounds {
            timeout: std::time::Duration::from_secs(20),
            memory_kib: 2 << 20,
        }
    }
}

/// Runs `program` with `args` in `dir` under `bounds` and returns how it exited and what it printed; a program
/// that does not finish in time is killed and the call panics, naming the program and its arguments, so that a
/// hang fails the test instead of blocking it.
///
/// The program runs under `sh -c 'ulimit -v ...; exec ...'`, so a run past the memory bound ends with an
/// allocation failure (a signal or an error), never with the machine out of memory.
pub fn run_bounded(program: impl AsRef<OsStr>, dir: &Path, args: &[&str], bounds: Bounds) -> Output {
    use std::io::Read as _;
    use std::process::Stdio;
    let program = program.as_ref();
    let script = format!("ulimit -v {}; exec \"$0\" \"$@\"", bounds.memory_kib);
    let mut child = match Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(error) => panic!("cannot run {}: {error}", Path::new(program).display()),
    };
    // The pipes are drained on threads so that a chatty program cannot block on a full pipe.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|pipe| Box::new(pipe) as Box<dyn std::io::Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|pipe| Box::new(pipe) as Box<dyn std::io::Read + Send>),
    );
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < bounds.timeout => std::thread::sleep(std::time::Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{} {} did not finish within {:?} and was killed",
                    Path::new(program).display(),
                    args.join(" "),
                    bounds.timeout
                );
            }
            Err(error) => panic!("cannot wait for {}: {error}", Path::new(program).display()),
        }
    };
    let joined = |handle: std::thread::JoinHandle<Vec<u8>>| handle.join().unwrap_or_default();
    Output {
        status,
        stdout: joined(stdout),
        stderr: joined(stderr),
    }
}

/// An x86-64 module of `count` functions, each with its own attribute group holding a calling-convention spec:
/// the shape whose materialization was once quadratic (the scale benchmark and the hostile tests use it).
pub fn spec_groups_module(count: usize) -> String {
    use std::fmt::Write as _;
    let mut module = String::from("target triple = \"x86_64-pc-linux-gnu\"\n");
    for index in 0..count {
        let _ = writeln!(module, "define i32 @f{index}(i32 %a) #{index} {{\n  ret i32 %a\n}}");
    }
    for index in 0..count {
        let _ = writeln!(
            module,
            "attributes #{index} = {{ nounwind \"neverc-callconv\"=\"gpr:rdi;ret:rax\" }}"
        );
    }
    module
}

/// An x86-64 module of one function with `count` parameters and a spec: the other once-quadratic shape.
pub fn spec_parameters_module(count: usize) -> String {
    let parameters: Vec<String> = (0..count).map(|index| format!("i64 %p{index}")).collect();
    format!(
        "target triple = \"x86_64-pc-linux-gnu\"\ndefine void @f({}) #0 {{\n  ret void\n}}\n\nattributes #0 = {{ nounwind \"neverc-callconv\"=\"gpr:rdi,rsi\" }}\n",
        parameters.join(", ")
    )
}

/// Builds a plugin written in C against the generated headers (`include/neverc/Plugin/`) as a shared library,
/// with gcc in strict C11 (`-Wall -Wextra -Werror -pedantic`) and `-D` for each of `defines`; panics with
/// gcc's messages if it does not compile.
pub fn build_c_plugin(source: &Path, output: &Path, defines: &[&str]) {
    let compiled = Command::new("gcc")
        .args([
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-shared",
            "-fPIC",
            "-I",
        ])
        .arg(repo().join("include"))
        .args(defines.iter().map(|define| format!("-D{define}")))
        .arg(source)
        .arg("-o")
        .arg(output)
        .output()
        .unwrap_or_else(|error| panic!("cannot run gcc: {error}"));
    assert!(
        compiled.status.success(),
        "gcc {}: {}",
        source.display(),
        String::from_utf8_lossy(&compiled.stderr)
    );
}
