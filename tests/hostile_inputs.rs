#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Hostile inputs on the command line: files that are not regular files (devices that never end, FIFOs
//! that never get a writer) wherever a file is expected, thin-archive members that are neither, and objects
//! whose section alignments are huge, zero or not powers of two. Every run is bounded in time and memory
//! (`run_bounded`), so that a hang or an unbounded read fails the test instead of blocking it.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use neverc_test_support::{Bounds, repo, run_bounded, scratch, text};

/// Runs the CLI in `dir` with the default bounds (20 seconds, 2 GiB of address space).
fn run_in(dir: &Path, args: &[&str]) -> Output {
    run_bounded(env!("CARGO_BIN_EXE_neverc-spec"), dir, args, Bounds::default())
}

/// Runs the CLI in the workspace root.
fn run(args: &[&str]) -> Output {
    run_in(&repo(), args)
}

/// Runs a tool the test needs (gcc, ar, mkfifo, ld.bfd) and fails the test when it fails.
fn tool(dir: &Path, program: &str, args: &[&str]) {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {program}: {error}"));
    assert!(
        output.status.success(),
        "{program} {}: {}",
        args.join(" "),
        text(&output.stderr)
    );
}

/// A FIFO with no writer: opening it for reading blocks forever.
fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    tool(dir, "mkfifo", &[name]);
    path
}

/// The special files every reader must refuse: two devices that never end and a FIFO without a writer.
fn special_files(dir: &Path) -> Vec<String> {
    vec![
        "/dev/zero".to_string(),
        "/dev/urandom".to_string(),
        fifo(dir, "fifo").display().to_string(),
    ]
}

/// The run exited with status 3 (I/O) and named `path` as not a regular file.
fn assert_refused(output: &Output, path: &str) {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{path}: {stderr}");
    assert!(
        stderr.contains(&format!("`{path}`")) && stderr.contains("not a regular file"),
        "{path}: {stderr}"
    );
}

/// A freestanding program (`_start` exits with status 7), compiled by gcc into `dir/name.o`.
fn exit7_object(dir: &Path, name: &str) -> PathBuf {
    let source = dir.join(format!("{name}.c"));
    std::fs::write(
        &source,
        "void _start(void) { __asm__ volatile(\"mov $60, %eax; mov $7, %edi; syscall\"); }\n",
    )
    .unwrap();
    let object = format!("{name}.o");
    tool(
        dir,
        "gcc",
        &[
            "-c",
            "-O2",
            "-fno-pie",
            "-fno-asynchronous-unwind-tables",
            &format!("{name}.c"),
            "-o",
            &object,
        ],
    );
    dir.join(object)
}

/// A copy of the ELF64 object `object` whose section `section` has `sh_addralign` = `alignment`.
fn with_alignment(object: &Path, section: &str, alignment: u64, out: &Path) -> PathBuf {
    let mut bytes = std::fs::read(object).unwrap();
    let u16_at = |bytes: &[u8], at: usize| u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap()) as usize;
    let u32_at = |bytes: &[u8], at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let u64_at = |bytes: &[u8], at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let section_headers = u64_at(&bytes, 0x28);
    let count = u16_at(&bytes, 0x3c);
    let names = u64_at(&bytes, section_headers + 64 * u16_at(&bytes, 0x3e) + 24);
    let mut patched = false;
    for index in 0..count {
        let header = section_headers + 64 * index;
        let name_start = names + u32_at(&bytes, header);
        let name_end = name_start + bytes[name_start..].iter().position(|byte| *byte == 0).unwrap();
        if &bytes[name_start..name_end] == section.as_bytes() {
            bytes[header + 48..header + 56].copy_from_slice(&alignment.to_le_bytes());
            patched = true;
        }
    }
    assert!(patched, "{} has no section {section}", object.display());
    std::fs::write(out, bytes).unwrap();
    out.to_path_buf()
}

#[test]
fn special_files_are_refused_as_phase_schemas() {
    let dir = scratch!("hostile-phase-schema");
    for path in special_files(&dir) {
        assert_refused(&run(&["check", "--phase-schema", &path]), &path);
        assert_refused(&run(&["audit", "--phase-schema", &path]), &path);
    }
}

#[test]
fn special_files_are_refused_as_target_files() {
    let dir = scratch!("hostile-target-file");
    for path in special_files(&dir) {
        assert_refused(&run(&["check", "--target-file", &path]), &path);
        assert_refused(
            &run(&["cc", "plan", "--target-file", &path, "--sig", "i32 (i32)"]),
            &path,
        );
    }
    // A FIFO among the `*.toml` files of a target directory.
    let targets = dir.join("targets");
    std::fs::create_dir(&targets).unwrap();
    std::fs::copy(repo().join("targets/x86_64.toml"), targets.join("x86_64.toml")).unwrap();
    let fifo = fifo(&targets, "x.toml").display().to_string();
    assert_refused(&run(&["check", "--targets", &targets.display().to_string()]), &fifo);
}

#[test]
fn special_files_are_refused_as_llvm_modules() {
    let dir = scratch!("hostile-ll");
    let out = dir.join("out.ll").display().to_string();
    for path in special_files(&dir) {
        assert_refused(
            &run(&["cc", "materialize", &path, "-o", &out, "--target", "x86_64"]),
            &path,
        );
    }
}

#[test]
fn special_files_are_refused_as_link_inputs_and_ordering_files() {
    let dir = scratch!("hostile-link-input");
    let object = exit7_object(&dir, "p").display().to_string();
    let out = dir.join("a.out").display().to_string();
    for path in special_files(&dir) {
        assert_refused(&run(&["link", "-static", "-o", &out, &path]), &path);
        assert_refused(&run(&["link", "-o", &out, &object, &path]), &path);
        assert_refused(
            &run(&["link", "--symbol-ordering-file", &path, "-o", &out, &object]),
            &path,
        );
    }
    assert!(!Path::new(&out).exists(), "a refused link wrote {out}");
}

#[test]
fn thin_archive_members_that_are_special_files_are_refused() {
    let dir = scratch!("hostile-thin-special");
    let object = exit7_object(&dir, "p");
    // `ar` records the member by name; the member is then replaced by a FIFO and by a link to a device.
    std::fs::copy(&object, dir.join("pipe.o")).unwrap();
    std::fs::copy(&object, dir.join("device.o")).unwrap();
    tool(&dir, "ar", &["rcsT", "pipe.a", "pipe.o"]);
    tool(&dir, "ar", &["rcsT", "device.a", "device.o"]);
    std::fs::remove_file(dir.join("pipe.o")).unwrap();
    fifo(&dir, "pipe.o");
    std::fs::remove_file(dir.join("device.o")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("device.o")).unwrap();
    let out = dir.join("a.out").display().to_string();
    for (archive, member) in [("pipe.a", "pipe.o"), ("device.a", "device.o")] {
        let archive = dir.join(archive).display().to_string();
        let output = run(&["link", "-o", &out, "-e", "_start", &archive]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(3), "{archive}: {stderr}");
        assert!(
            stderr.contains(&format!("{archive}({member})")) && stderr.contains("not a regular file"),
            "{archive}: {stderr}"
        );
    }
}

#[test]
fn thin_archive_members_that_are_not_objects_are_refused() {
    let dir = scratch!("hostile-thin-text");
    let object = exit7_object(&dir, "p").display().to_string();
    std::fs::write(dir.join("notes.txt"), "not an object\n").unwrap();
    tool(&dir, "ar", &["rcsT", "mixed.a", "notes.txt"]);
    let archive = dir.join("mixed.a").display().to_string();
    let out = dir.join("a.out").display().to_string();
    let output = run(&["link", "-o", &out, &object, &archive]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{archive}(notes.txt)")) && stderr.contains("file format not recognized"),
        "{stderr}"
    );
}

/// The size ld.bfd gives the executable it links from `object`, if ld.bfd is installed and succeeds.
fn ld_bfd_size(dir: &Path, object: &Path) -> Option<u64> {
    let out = dir.join("bfd.out");
    let status = Command::new("ld.bfd")
        .args(["-static", "-o"])
        .arg(&out)
        .arg(object)
        .status()
        .ok()?;
    let size = status
        .success()
        .then(|| std::fs::metadata(&out).ok().map(|metadata| metadata.len()));
    let _ = std::fs::remove_file(&out);
    size.flatten()
}

#[test]
fn a_section_alignment_of_2_pow_32_gives_a_small_executable_that_runs() {
    let dir = scratch!("hostile-align-32");
    let object = exit7_object(&dir, "p");
    let patched = with_alignment(&object, ".text", 1 << 32, &dir.join("p32.o"));
    let out = dir.join("a.out");
    let output = run_in(
        &dir,
        &[
            "link",
            "-static",
            "-o",
            &out.display().to_string(),
            &patched.display().to_string(),
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let metadata = std::fs::metadata(&out).unwrap();
    let allocated = metadata.blocks() * 512;
    eprintln!(
        "2^32: size {} bytes, {allocated} bytes allocated; ld.bfd: {:?}",
        metadata.len(),
        ld_bfd_size(&dir, &patched)
    );
    // ld.bfd writes a sparse file of 4.29 GB; a segment's file offset only has to be congruent with its
    // address modulo the page size, so ours is as small as its contents.
    assert!(metadata.len() < 1 << 20, "size {}", metadata.len());
    assert!(allocated < 1 << 20, "{allocated} bytes allocated");
    let status = Command::new(&out).status().unwrap();
    assert_eq!(status.code(), Some(7));
}

#[test]
fn an_alignment_gap_between_sections_costs_nothing_in_the_file() {
    let dir = scratch!("hostile-align-gap");
    std::fs::write(
        dir.join("gap.c"),
        "int data = 3;\n__attribute__((section(\"mydata\"), aligned(1 << 24))) int other = 4;\n\
         void _start(void) { long r = data + other; __asm__ volatile(\"mov $60, %%eax; syscall\" :: \"D\"(r)); }\n",
    )
    .unwrap();
    tool(
        &dir,
        "gcc",
        &[
            "-c",
            "-O1",
            "-fno-pie",
            "-fno-asynchronous-unwind-tables",
            "gap.c",
            "-o",
            "gap.o",
        ],
    );
    let out = dir.join("a.out").display().to_string();
    let output = run_in(&dir, &["link", "-static", "-o", &out, "gap.o"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    // ld.bfd writes the 16 MiB gap between `.data` and `mydata` into the file; a second writable PT_LOAD
    // (file offset congruent with its address modulo the page size) makes it cost nothing.
    let size = std::fs::metadata(&out).unwrap().len();
    assert!(size < 1 << 16, "size {size}");
    let status = Command::new(&out).status().unwrap();
    assert_eq!(status.code(), Some(7));
}

#[test]
fn an_alignment_gap_inside_a_section_is_a_hole_neither_allocated_nor_written() {
    let dir = scratch!("hostile-align-inside");
    let main = exit7_object(&dir, "p");
    std::fs::write(dir.join("q.c"), "int q(void) { return 3; }\n").unwrap();
    tool(
        &dir,
        "gcc",
        &["-c", "-O2", "-fno-asynchronous-unwind-tables", "q.c", "-o", "q.o"],
    );
    // `q.o`'s `.text` aligned to 1 GiB lands 1 GiB after `p.o`'s in the same output `.text`.
    let q = with_alignment(&dir.join("q.o"), ".text", 1 << 30, &dir.join("q30.o"));
    let (main, q) = (main.display().to_string(), q.display().to_string());
    let out = dir.join("a.out").display().to_string();
    // One GiB of address space: a dense section buffer (or image) could not even be allocated.
    let bounds = Bounds {
        memory_kib: 1 << 20,
        ..Bounds::default()
    };
    let output = run_bounded(
        env!("CARGO_BIN_EXE_neverc-spec"),
        &dir,
        &["link", "-static", "-o", &out, &main, &q],
        bounds,
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let metadata = std::fs::metadata(&out).unwrap();
    assert!(metadata.len() > 1 << 30, "apparent size {}", metadata.len());
    assert!(
        metadata.blocks() * 512 < 1 << 20,
        "{} bytes on disk",
        metadata.blocks() * 512
    );
    assert_eq!(Command::new(&out).status().unwrap().code(), Some(7));
    // ld.bfd, the reference, puts `q` at the same address. Its output would be a GiB of zeros on the disk
    // (enough to fill a small CI disk while other tests run), so it writes to /dev/null and its link map
    // (`-M`) tells where `q` is.
    let map = Command::new("ld")
        .args(["-static", "-o", "/dev/null", "-M", &main, &q])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(map.status.success(), "ld: {}", text(&map.stderr));
    let theirs = text(&map.stdout)
        .lines()
        .find_map(|line| match line.split_whitespace().collect::<Vec<_>>()[..] {
            [address, "q"] => u64::from_str_radix(address.trim_start_matches("0x"), 16).ok(),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no q in ld.bfd's map"));
    let listing = Command::new("nm").arg(&out).output().unwrap();
    let ours = text(&listing.stdout)
        .lines()
        .find_map(|line| line.strip_suffix(" T q"))
        .and_then(|address| u64::from_str_radix(address, 16).ok())
        .unwrap_or_else(|| panic!("no q in {out}"));
    assert_eq!(ours, theirs);
}

#[test]
fn section_alignments_past_the_output_limit_are_refused_naming_the_section() {
    let dir = scratch!("hostile-align-huge");
    let object = exit7_object(&dir, "p");
    for (power, alignment) in [(36, 1u64 << 36), (63, 1u64 << 63)] {
        let patched = with_alignment(&object, ".text", alignment, &dir.join(format!("p{power}.o")));
        let out = dir.join("a.out").display().to_string();
        let output = run_in(&dir, &["link", "-static", "-o", &out, &patched.display().to_string()]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "2^{power}: {stderr}");
        assert!(
            stderr.contains(&format!("p{power}.o")) && stderr.contains("`.text`") && stderr.contains("limit"),
            "2^{power}: {stderr}"
        );
        assert!(!Path::new(&out).exists(), "2^{power}: a refused link wrote {out}");
    }
}

/// `q.c` (`int q(void) { return 3; }`) compiled by gcc into `dir/q.o`.
fn q_object(dir: &Path) -> PathBuf {
    std::fs::write(dir.join("q.c"), "int q(void) { return 3; }\n").unwrap();
    tool(
        dir,
        "gcc",
        &["-c", "-O2", "-fno-asynchronous-unwind-tables", "q.c", "-o", "q.o"],
    );
    dir.join("q.o")
}

#[test]
fn a_zero_alignment_is_read_as_1() {
    let dir = scratch!("hostile-align-zero");
    let main = exit7_object(&dir, "p");
    // ELF reads `sh_addralign` 0 as no constraint: `q` follows `_start`'s 13 bytes directly.
    let q = with_alignment(&q_object(&dir), ".text", 0, &dir.join("q0.o"));
    let out = dir.join("a0.out");
    let map = dir.join("a0.map");
    let output = run_in(
        &dir,
        &[
            "link",
            "-static",
            "-o",
            &out.display().to_string(),
            "-Map",
            &map.display().to_string(),
            &main.display().to_string(),
            &q.display().to_string(),
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let map = std::fs::read_to_string(&map).unwrap();
    assert!(
        map.lines().any(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.first() == Some(&"40100d") && fields.last() == Some(&"q")
        }),
        "q not at 0x40100d:\n{map}"
    );
    assert_eq!(Command::new(&out).status().unwrap().code(), Some(7));
}

/// Item 13 of issue 23: an input section whose `sh_addralign` is neither 0 nor a power of two is refused, as
/// ld.lld-14 refuses it (the oracle: it runs on the same objects), with an error naming the file and the
/// section, through `link` and through the `ld` driver; nothing is written.
#[test]
fn item_13_section_alignments_that_are_not_powers_of_two_are_refused_as_ld_lld_refuses_them() {
    let dir = scratch!("hostile-align-odd");
    let main = exit7_object(&dir, "p");
    let q = q_object(&dir);
    for alignment in [3u64, 24, 48, (1 << 20) + 1] {
        let odd = with_alignment(&q, ".text", alignment, &dir.join(format!("q{alignment}.o")));
        let name = format!("q{alignment}.o");
        let lld = Command::new("ld.lld")
            .args(["-static", "-o", "lld.out", "p.o", &name])
            .current_dir(&dir)
            .output()
            .expect("ld.lld is missing: run scripts/test.sh, which installs lld");
        assert!(!lld.status.success(), "ld.lld took sh_addralign {alignment}");
        assert!(
            text(&lld.stderr).contains(&format!("{name}:(.text): sh_addralign is not a power of 2")),
            "{}",
            text(&lld.stderr)
        );
        let out = dir.join(format!("a{alignment}.out"));
        let link = run_in(
            &dir,
            &["link", "-static", "-o", &out.display().to_string(), "p.o", &name],
        );
        let ld = run_in(
            &dir,
            &[
                "ld",
                "-static",
                "-o",
                &out.display().to_string(),
                &main.display().to_string(),
                &odd.display().to_string(),
            ],
        );
        for (how, output) in [("link", &link), ("ld", &ld)] {
            let stderr = text(&output.stderr);
            assert_eq!(
                output.status.code(),
                Some(1),
                "{how}, sh_addralign {alignment}: {stderr}"
            );
            assert!(
                stderr.contains(&name)
                    && stderr.contains("section `.text`")
                    && stderr.contains(&format!("sh_addralign {alignment} is not a power of 2")),
                "{how}, sh_addralign {alignment}: {stderr}"
            );
            assert!(!out.exists(), "{how}: a refused link wrote {}", out.display());
        }
    }
}

/// The `ld` driver refused the command line (exit 2) within the bounds, saying `says`.
fn assert_expansion_refused(output: &Output, says: &str) {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(says), "{stderr}");
}

#[test]
fn item_4_response_files_and_scripts_that_fan_out_are_refused_within_bounds() {
    let dir = scratch!("hostile-fan-out");
    exit7_object(&dir, "start");
    // Thirty-two response files, each naming the next twice: 2^31 expansions (a hang before the bound).
    for index in 0..31 {
        std::fs::write(
            dir.join(format!("r{index}")),
            format!("@r{0} @r{0} start.o\n", index + 1),
        )
        .unwrap();
    }
    std::fs::write(dir.join("r31"), "-o prog\n").unwrap();
    let output = run_in(&dir, &["ld", "@r0"]);
    assert_expansion_refused(&output, "more than 2000 response files named, at `r");
    // Two files, the first naming the second 1,500 times: millions of arguments from 40 KB.
    std::fs::write(dir.join("m0"), "@m1 ".repeat(1500)).unwrap();
    std::fs::write(dir.join("m1"), "start.o ".repeat(3000)).unwrap();
    let output = run_in(&dir, &["ld", "-o", "prog", "@m0"]);
    assert_expansion_refused(&output, "response files expand to more than");
    // Linker scripts naming the next one four times over, fifteen deep: 4^15 expansions.
    for index in 0..15 {
        std::fs::write(
            dir.join(format!("s{index}.ld")),
            format!("INPUT(s{0}.ld s{0}.ld s{0}.ld s{0}.ld)\n", index + 1),
        )
        .unwrap();
    }
    std::fs::write(dir.join("s15.ld"), "INPUT(start.o)\n").unwrap();
    let output = run_in(&dir, &["ld", "-o", "prog", "s0.ld"]);
    assert_expansion_refused(
        &output,
        "more than 1000 linker scripts or 256 MiB of them expanded, at `s",
    );
    assert!(!dir.join("prog").exists());
    // Within the bounds, the same shapes link: a response file naming another, a script naming a script.
    std::fs::write(dir.join("inner.rsp"), "-o prog\n").unwrap();
    std::fs::write(dir.join("outer.rsp"), "@inner.rsp outer.ld\n").unwrap();
    std::fs::write(dir.join("outer.ld"), "INPUT(s15.ld)\n").unwrap();
    let output = run_in(&dir, &["ld", "@outer.rsp"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let status = Command::new(dir.join("prog")).status().unwrap();
    assert_eq!(status.code(), Some(7));
}
