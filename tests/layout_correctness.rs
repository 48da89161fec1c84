#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Layouts that once linked into programs that did not run (issue 26): input sections aligned beyond the
//! page size, `PT_GNU_RELRO` with a maximum page size larger than the running system's page, over-aligned
//! thread-local data, and identical code folding over the C runtime's `.init` and `.fini` pieces. Each
//! program is linked by its compiler driver (`gcc -static -B DIR`, DIR's `ld` being neverc-spec), on x86-64
//! and on AArch64 (run under qemu-aarch64), and must print what ld.bfd's build prints and exit as it does;
//! the program headers are checked against ld.bfd's where the layout must agree.
//!
//! The fixtures (`tests/fixtures/layout/build.sh`: objects, ld.bfd's builds and their output) are built once
//! per run of this test binary.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use neverc_test_support::{LinkCases, program_header_rows, program_headers, read_text, repo, run_script, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

static FIXTURES: OnceLock<Result<PathBuf, String>> = OnceLock::new();
static LD_DIR: OnceLock<PathBuf> = OnceLock::new();

/// The built fixtures (on first use).
fn fixtures() -> &'static Path {
    let built = FIXTURES.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("layout-correctness");
        run_script(&repo().join("tests/fixtures/layout/build.sh"), &out).map(|()| out)
    });
    match built {
        Ok(path) => path,
        Err(message) => panic!(
            "building the layout fixtures failed (gcc, musl-tools, gcc-aarch64-linux-gnu, musl-dev:arm64 and \
             qemu-user are needed): {message}"
        ),
    }
}

/// A directory holding `ld`, a symbolic link to neverc-spec: what the compiler drivers' `-B` names.
fn ld_dir() -> &'static Path {
    LD_DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("layout-correctness-bin");
        std::fs::create_dir_all(&dir).unwrap();
        let ld = dir.join("ld");
        // A link an earlier run left may name another build of neverc-spec.
        if std::fs::symlink_metadata(&ld).is_ok() {
            std::fs::remove_file(&ld).unwrap();
        }
        symlink(BIN, &ld).unwrap();
        dir
    })
}

/// The nonempty lines of a case's file.
fn lines(case: &Path, file: &str) -> Vec<String> {
    LinkCases::lines(case, file)
        .into_iter()
        .filter(|line| !line.is_empty())
        .collect()
}

/// Runs `program` in its directory (under the case's runner, qemu-aarch64 for AArch64): (stdout, exit status).
fn run(case: &Path, program: &Path) -> (String, i32) {
    let mut command = match lines(case, "run.txt").first() {
        Some(runner) => {
            let mut command = Command::new(runner);
            command.arg(program);
            command
        }
        None => Command::new(program),
    };
    let result = command.current_dir(case).output().expect("the linked program starts");
    (text(&result.stdout), result.status.code().unwrap_or(-1))
}

/// Links case `name` through its compiler driver with neverc-spec as `ld` into `CASE/ours.elf`; the driver's
/// stderr when it fails.
fn link(name: &str) -> Result<PathBuf, String> {
    let case = fixtures().join(name);
    let driver = lines(&case, "driver.txt");
    let output = case.join("ours.elf");
    let result = Command::new(&driver[0])
        .args(&driver[1..])
        .arg("-B")
        .arg(ld_dir())
        .arg("-Wl,-v")
        .arg("-o")
        .arg(&output)
        .arg(case.join("main.o"))
        .args(lines(&case, "flags.txt"))
        .args(lines(&case, "ours.txt"))
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", driver[0]));
    if !result.status.success() {
        return Err(text(&result.stderr));
    }
    // The driver ran neverc-spec, not the system's ld: it answers `-v` with its name.
    if !text(&result.stdout).contains("neverc-spec") {
        return Err(format!("the driver did not run neverc-spec: {}", text(&result.stderr)));
    }
    Ok(output)
}

/// Links and runs every case named, comparing each with ld.bfd's build; `also` may add failures of its own
/// for each program (the case's name, its directory and our program). Panics listing every failure.
fn check(names: &[String], also: impl Fn(&str, &Path, &Path) -> Option<String>) {
    let mut failures = Vec::new();
    for name in names {
        let case = fixtures().join(name);
        let program = match link(name) {
            Ok(program) => program,
            Err(stderr) => {
                failures.push(format!("{name}: the link failed:\n{stderr}"));
                continue;
            }
        };
        let (expected, status) = LinkCases::expected(&case);
        let (stdout, code) = run(&case, &program);
        if (stdout.as_str(), code) != (expected.as_str(), status) {
            failures.push(format!(
                "{name}: exit {code} (ld.bfd's build: {status})\n--- ours\n{stdout}--- ld.bfd's\n{expected}"
            ));
        }
        failures.extend(also(name, &case, &program));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A number of a `readelf -lW` row.
fn number(field: &str) -> u64 {
    u64::from_str_radix(field.trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("`{field}` is no number"))
}

/// The program headers of a `readelf -lW` listing as (type, address, file size, memory size, alignment).
fn headers(rows: &[Vec<String>]) -> Vec<(String, u64, u64, u64, u64)> {
    rows.iter()
        .filter(|row| row.len() >= 7 && row[1].starts_with("0x"))
        .map(|row| {
            (
                row[0].clone(),
                number(&row[2]),
                number(&row[4]),
                number(&row[5]),
                number(row.last().unwrap()),
            )
        })
        .collect()
}

/// A failure unless `PT_GNU_RELRO` lies in memory that `PT_LOAD`s map: inside one, or a run of them each
/// beginning where the one before ends.
fn relro_inside_loads(name: &str, program: &Path) -> Option<String> {
    let headers = headers(&program_headers(program));
    let (_, start, _, size, _) = headers.iter().find(|header| header.0 == "GNU_RELRO")?;
    let end = start + size;
    let mut loads: Vec<(u64, u64)> = headers
        .iter()
        .filter(|header| header.0 == "LOAD")
        .map(|header| (header.1, header.1 + header.3))
        .collect();
    loads.sort();
    let mut covered = *start;
    for (load_start, load_end) in loads {
        if load_start <= covered && covered < load_end {
            covered = load_end;
        }
    }
    (covered < end).then(|| {
        format!("{name}: PT_GNU_RELRO [{start:#x}, {end:#x}) is mapped only up to {covered:#x}:\n{headers:#x?}")
    })
}

/// The cases of `prefix` for both architectures.
fn both(prefix: &str) -> Vec<String> {
    ["x86", "a64"].iter().map(|arch| format!("{prefix}-{arch}")).collect()
}

#[test]
fn sections_aligned_beyond_the_page_size_link_and_run_like_ld_bfds_builds() {
    // .data, .bss and .tdata aligned to 64 KiB and 2 MiB.
    let names = [both("aligned-64k"), both("aligned-2m")].concat();
    check(&names, |name, _, program| relro_inside_loads(name, program));
}

#[test]
fn relro_with_a_large_maximum_page_size_lies_in_mapped_memory_and_the_program_runs() {
    // `-z max-page-size=0x10000` and `0x200000`; AArch64's default is 64 KiB already.
    let names = [both("relro-64k"), both("relro-2m")].concat();
    check(&names, |name, _, program| relro_inside_loads(name, program));
}

/// The address of symbol `name` in `program` (`nm`).
fn symbol_address(program: &Path, name: &str) -> Option<u64> {
    let listing = Command::new("nm").arg(program).output().expect("nm runs");
    text(&listing.stdout).lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.len() == 3 && fields[2] == name)
            .then(|| u64::from_str_radix(fields[0], 16).ok())
            .flatten()
    })
}

#[test]
fn identical_code_folding_keeps_the_init_and_fini_pieces_and_the_programs_run() {
    // `--icf=all` (ld.bfd's build has no folding): the program runs its constructors, atexit handler and
    // destructor and exits as ld.bfd's build does, and the identical functions it calls directly still fold.
    check(&both("icf"), |name, _, program| {
        let twins = (symbol_address(program, "twin_a"), symbol_address(program, "twin_b"));
        let taken = symbol_address(program, "twin_c");
        match twins {
            (Some(a), Some(b)) if a == b && taken.is_some_and(|c| c != a) => None,
            _ => Some(format!(
                "{name}: twin_a and twin_b at {twins:x?} should fold, twin_c (address taken) at {taken:x?} not"
            )),
        }
    });
}

/// `PT_TLS` of a `readelf -lW` listing: (address, file size, memory size, alignment).
fn tls_header(rows: &[Vec<String>]) -> Option<(u64, u64, u64, u64)> {
    headers(rows)
        .into_iter()
        .find(|header| header.0 == "TLS")
        .map(|(_, address, file_size, memory_size, alignment)| (address, file_size, memory_size, alignment))
}

#[test]
fn over_aligned_thread_local_data_links_and_runs_like_ld_bfds_builds() {
    // Each thread prints its variables' offsets from the thread pointer, so the TPOFF values the link wrote
    // are compared with ld.bfd's; `PT_TLS` must be aligned as ld.bfd aligns it, at an aligned start.
    let names = [both("tls-glibc"), both("tls-musl")].concat();
    check(&names, |name, case, program| {
        let theirs = tls_header(&program_header_rows(&read_text(&case.join("ref.segments"))));
        let ours = tls_header(&program_headers(program));
        match (ours, theirs) {
            (
                Some((address, file_size, memory_size, alignment)),
                Some((_, their_file, their_memory, their_alignment)),
            ) => {
                let fields = (file_size, memory_size, alignment);
                let their_fields = (their_file, their_memory, their_alignment);
                if fields != their_fields || address % alignment != 0 {
                    Some(format!(
                        "{name}: PT_TLS at {address:#x} (file size, memory size, alignment) {fields:#x?}, ld.bfd's \
                         {their_fields:#x?}"
                    ))
                } else {
                    relro_inside_loads(name, program)
                }
            }
            _ => Some(format!("{name}: PT_TLS: ours {ours:x?}, ld.bfd's {theirs:x?}")),
        }
    });
}
