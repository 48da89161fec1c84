#![allow(clippy::unwrap_used, clippy::expect_used)]

//! AArch64 static executables: objects built by gcc-aarch64-linux-gnu — freestanding, against musl's aarch64
//! `libc.a` and against glibc's — linked by `neverc-spec link` (and through the `ld` driver) from the inputs the
//! compiler driver hands to ld.bfd, run under `qemu-aarch64`. Each must print what ld.bfd's build prints and
//! exit as it does, with and without `--gc-sections`. The oracles are aarch64-linux-gnu-ld (ld.bfd) and the
//! programs themselves: `relocs.s` checks every instruction relocation against what the compiler computes,
//! `far_*.s` calls across 200 MiB (range-extension thunks), the C library programs use every TLS model a
//! static executable relaxes and IFUNC, and a C++ program throws across three units.
//!
//! The fixtures (`tests/fixtures/aarch64/build.sh`) are built once per run of this test binary.

use std::collections::BTreeSet;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use neverc_test_support::{
    LinkCases, elf_section, program_header_rows, program_headers, read_text, repo, run_script, scratch, text,
};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

static FIXTURES: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// The built fixtures (on first use).
fn fixtures() -> &'static Path {
    let built = FIXTURES.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("aarch64-programs");
        run_script(&repo().join("tests/fixtures/aarch64/build.sh"), &out).map(|()| out)
    });
    match built {
        Ok(path) => path,
        Err(message) => panic!(
            "building the AArch64 fixtures failed (gcc-aarch64-linux-gnu, qemu-user and musl-dev:arm64 are needed; \
             scripts/test.sh installs them): {message}"
        ),
    }
}

/// The cases, linked by neverc-spec.
fn cases() -> LinkCases<'static> {
    LinkCases {
        dir: fixtures(),
        linker: BIN,
    }
}

/// The lines of a case's file.
fn lines(case: &Path, file: &str) -> Vec<String> {
    LinkCases::lines(case, file)
}

/// Links `case` (its inputs and link flags) with `extra` options into `output`; the link's stderr when it fails.
fn link(case: &Path, output: &Path, extra: &[&str]) -> Result<(), String> {
    cases().link(case, output, extra)
}

/// Runs an AArch64 `program` under qemu-aarch64 in its directory: (stdout, exit status).
fn run(program: &Path) -> (String, i32) {
    let result = Command::new("qemu-aarch64")
        .arg(program)
        .current_dir(program.parent().unwrap())
        .output()
        .expect("qemu-aarch64 runs (Debian: qemu-user)");
    (text(&result.stdout), result.status.code().unwrap_or(-1))
}

/// What ld.bfd's build of `case` printed and its exit status.
fn expected(case: &Path) -> (String, i32) {
    LinkCases::expected(case)
}

/// Every case with `prefix`, linked with and without `--gc-sections`, runs like its ld.bfd build.
fn check_cases(prefix: &str) {
    cases().check(prefix, run, |_, _, _, _| None);
}

#[test]
fn freestanding_programs_and_every_instruction_relocation_run_like_their_ld_bfd_builds() {
    check_cases("free-c");
    check_cases("free-relocs");
    // relocs.s checks each relocation itself: all of them passed.
    let (stdout, status) = expected(&fixtures().join("free-relocs"));
    assert_eq!(status, 0, "{stdout}");
    assert!(!stdout.contains("FAIL") && stdout.lines().count() > 20, "{stdout}");
}

#[test]
fn c_programs_against_musl_run_under_qemu_like_their_ld_bfd_builds() {
    check_cases("musl-");
}

#[test]
fn c_programs_against_glibc_with_tls_and_ifunc_run_under_qemu_like_their_ld_bfd_builds() {
    check_cases("glibc-");
}

#[test]
fn a_cxx_program_with_exceptions_rtti_and_thread_local_runs_like_its_ld_bfd_build() {
    check_cases("cxx-glibc");
    // Exceptions found their handlers through the search table (the case links with --eh-frame-hdr).
    let case = fixtures().join("cxx-glibc-sections-hdr");
    let output = case.join("neverc.elf");
    let kinds: Vec<String> = program_headers(&output)
        .into_iter()
        .map(|fields| fields[0].clone())
        .collect();
    assert!(kinds.iter().any(|kind| kind == "GNU_EH_FRAME"), "{kinds:?}");
    let theirs = program_header_rows(&read_text(&case.join("ref.segments")));
    assert!(theirs.iter().any(|fields| fields[0] == "GNU_EH_FRAME"));
}

/// The 32-bit instruction words of `image`'s section `wanted`, and its address.
fn section_words(image: &[u8], wanted: &str) -> (u64, Vec<u32>) {
    let (address, bytes) = elf_section(image, wanted);
    let words = bytes
        .chunks_exact(4)
        .map(|word| u32::from_le_bytes(word.try_into().unwrap()))
        .collect();
    (address, words)
}

/// Where the `b`/`bl` at `index` of `words` (at `address`) goes.
fn branch_target(address: u64, words: &[u32], index: usize) -> u64 {
    let word = words[index];
    assert!(matches!(word >> 26, 0b100101 | 0b000101), "{word:#010x} is no b/bl");
    let offset = (((word & 0x03ff_ffff) << 6) as i32 >> 4) as i64;
    (address as i64 + index as i64 * 4 + offset) as u64
}

#[test]
fn calls_beyond_128_mib_go_through_range_extension_thunks_near_their_callers() {
    check_cases("free-far");
    let case = fixtures().join("free-far");
    let output = case.join("neverc.elf");
    let image = std::fs::read(&output).unwrap();
    let (address, words) = section_words(&image, ".text");
    // The 200 MiB between caller and callee are a hole: neither allocated in memory nor written to the file.
    assert!(words.len() * 4 > 200 << 20);
    assert!(std::fs::metadata(&output).unwrap().blocks() * 512 < 1 << 20);
    // adrp x16, target; add x16, x16, :lo12:target; br x16 — one per target (far_function, far_tail, and
    // back_helper called from 200 MiB further on).
    let veneers: Vec<usize> = (0..words.len() - 2)
        .filter(|index| {
            words[*index] & 0x9f00_001f == 0x9000_0010
                && words[index + 1] & 0xffc0_03ff == 0x9100_0210
                && words[index + 2] == 0xd61f_0200
        })
        .collect();
    assert_eq!(veneers.len(), 3, "{veneers:?}");
    // _start's first call (`bl far_function`, the second instruction) goes to a veneer within reach.
    let call = branch_target(address, &words, 1);
    let veneer_addresses: Vec<u64> = veneers.iter().map(|index| address + *index as u64 * 4).collect();
    assert!(veneer_addresses.contains(&call), "{call:#x} {veneer_addresses:x?}");
    assert!(call - address < 1 << 20);
}

#[test]
fn segments_are_aligned_to_the_targets_64_kib_pages_as_ld_bfd_aligns_them_unless_told_otherwise() {
    let case = fixtures().join("glibc-tls-le");
    let output = case.join("segments.elf");
    link(&case, &output, &[]).unwrap();
    let ours = program_headers(&output);
    let theirs = program_header_rows(&read_text(&case.join("ref.segments")));
    let aligns = |headers: &[Vec<String>]| -> BTreeSet<String> {
        headers
            .iter()
            .filter(|fields| fields[0] == "LOAD")
            .filter_map(|fields| fields.last().cloned())
            .collect()
    };
    assert_eq!(aligns(&theirs), BTreeSet::from(["0x10000".to_string()]));
    assert_eq!(aligns(&ours), aligns(&theirs), "{ours:?}");
    for fields in ours.iter().filter(|fields| fields[0] == "LOAD") {
        let offset = u64::from_str_radix(fields[1].trim_start_matches("0x"), 16).unwrap();
        let address = u64::from_str_radix(fields[2].trim_start_matches("0x"), 16).unwrap();
        assert_eq!(offset % 0x10000, address % 0x10000, "{fields:?}");
    }
    // The TLS template as ld.bfd's: .tdata's file size, the block's size and alignment (the last field).
    let tls = |headers: &[Vec<String>]| {
        let fields = headers.iter().find(|fields| fields[0] == "TLS").unwrap().clone();
        (fields[4].clone(), fields[5].clone(), fields.last().cloned())
    };
    assert_eq!(tls(&ours), tls(&theirs));
    // `-z max-page-size` still decides when given (the `ld` driver), and the program still runs.
    let small = case.join("small-pages.elf");
    let mut command = Command::new(BIN);
    command
        .args(["ld", "-static", "-z", "max-page-size=0x1000", "-o"])
        .arg(&small);
    let result = command.args(lines(&case, "inputs.txt")).output().unwrap();
    assert!(result.status.success(), "{}", text(&result.stderr));
    let small_headers = program_headers(&small);
    assert_eq!(aligns(&small_headers), BTreeSet::from(["0x1000".to_string()]));
    assert_eq!(run(&small), expected(&case));
}

/// The relocation names `readelf -r` lists for `object`.
fn relocation_names(object: &Path) -> BTreeSet<String> {
    let listing = Command::new("readelf").arg("-rW").arg(object).output().unwrap();
    text(&listing.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().nth(2))
        .filter(|name| name.starts_with("R_AARCH64_"))
        .map(str::to_string)
        .collect()
}

/// Declared relocations no fixture object uses, and why.
const NOT_IN_FIXTURE_OBJECTS: &[(&str, &str)] = &[
    ("R_AARCH64_NONE", "patches nothing"),
    ("R_AARCH64_NULL", "patches nothing (the withdrawn encoding of NONE)"),
    (
        "R_AARCH64_IRELATIVE",
        "dynamic: only the linker's own .rela.plt holds it (glibc-ifunc runs it)",
    ),
    (
        "R_AARCH64_RELATIVE",
        "dynamic: only the linker's own .rela.dyn holds it (tests/static_pie.rs runs an AArch64 static PIE)",
    ),
    (
        "R_AARCH64_COPY",
        "dynamic: only the linker's own .rela.dyn holds it (tests/dynamic.rs runs AArch64 programs that import)",
    ),
    (
        "R_AARCH64_GLOB_DAT",
        "dynamic: only the linker's own .rela.dyn holds it (tests/dynamic.rs)",
    ),
    (
        "R_AARCH64_JUMP_SLOT",
        "dynamic: only the linker's own .rela.plt holds it (tests/dynamic.rs)",
    ),
    (
        "R_AARCH64_TLS_DTPMOD64",
        "dynamic: only the linker's own .rela.dyn holds it, for a shared library's general-dynamic entries, \
         which gcc's traditional TLS dialect reads (its default, descriptors, does not)",
    ),
    (
        "R_AARCH64_TLS_DTPREL64",
        "dynamic: only the linker's own .rela.dyn holds it, for a shared library's general-dynamic entries, \
         which gcc's traditional TLS dialect reads (its default, descriptors, does not)",
    ),
    (
        "R_AARCH64_TLSDESC",
        "dynamic: only the linker's own .rela.dyn holds it, for a shared library's TLS descriptors \
         (tests/shared_libraries.rs: thread_local_variables_of_a_library_...)",
    ),
    (
        "R_AARCH64_TLS_TPREL64",
        "dynamic: only the linker's own .rela.dyn holds it, for an imported thread-local variable \
         (tests/dynamic.rs: std::call_once)",
    ),
];

#[test]
fn every_declared_aarch64_relocation_is_used_by_a_fixture_that_runs() {
    let declaration =
        neverc_schema::parse_target("aarch64.toml", &read_text(&repo().join("targets/aarch64.toml"))).unwrap();
    let declared: BTreeSet<String> = declaration
        .relocations
        .iter()
        .map(|relocation| relocation.name.clone())
        .collect();
    let mut used = BTreeSet::new();
    for name in read_text(&fixtures().join("cases.txt")).lines() {
        for entry in std::fs::read_dir(fixtures().join(name)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|extension| extension == "o") {
                used.extend(relocation_names(&path));
            }
        }
    }
    // Every relocation the objects use is declared (the reader refuses any other), and every declared one is
    // used by a program whose run is checked, but those that cannot appear in a relocatable input.
    assert!(
        used.is_subset(&declared),
        "undeclared: {:?}",
        used.difference(&declared)
    );
    let excused: BTreeSet<String> = NOT_IN_FIXTURE_OBJECTS
        .iter()
        .map(|(name, _)| name.to_string())
        .collect();
    let missing: Vec<&String> = declared
        .iter()
        .filter(|name| !used.contains(*name) && !excused.contains(*name))
        .collect();
    assert!(missing.is_empty(), "declared but used by no fixture: {missing:?}");
    assert!(
        excused
            .iter()
            .all(|name| declared.contains(name) && !used.contains(name))
    );
}

/// Compiles `tests/fixtures/libc/tls.c` with `aarch64-linux-gnu-gcc -static -O2 ARGS` into `DIR/tls`, linked
/// by neverc-spec as `ld` (a symbolic link in `DIR/bin`, which `-B` names): gcc's output and the program.
fn gcc_tls_through_the_driver(dir: &Path, args: &[&str]) -> (Output, PathBuf) {
    let bin = dir.join("bin");
    if !bin.exists() {
        std::fs::create_dir_all(&bin).unwrap();
        symlink(BIN, bin.join("ld")).unwrap();
    }
    let program = dir.join("tls");
    let output = Command::new("aarch64-linux-gnu-gcc")
        .args(["-static", "-O2", "-Wl,-v"])
        .args(args)
        .arg("-B")
        .arg(&bin)
        .arg(repo().join("tests/fixtures/libc/tls.c"))
        .arg("-o")
        .arg(&program)
        .output()
        .unwrap();
    (output, program)
}

/// gcc succeeded, and the driver ran: it answers the `-Wl,-v` it was given with its name.
fn linked_by_the_driver(output: &Output) {
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("neverc-spec"), "the driver did not run");
}

#[test]
fn aarch64_musl_gcc_links_a_tls_program_through_the_ld_driver_and_it_runs() {
    let dir = scratch!("aarch64-driver");
    let specs = "/usr/lib/aarch64-linux-musl/musl-gcc.specs";
    let (result, program) = gcc_tls_through_the_driver(&dir, &["-specs", specs]);
    linked_by_the_driver(&result);
    assert_eq!(run(&program), expected(&fixtures().join("musl-tls-le")));
}

#[test]
fn aarch64_gcc_against_glibc_chooses_the_target_by_its_emulation_and_gets_the_erratum_workaround_it_asks_for() {
    let dir = scratch!("aarch64-driver-glibc");
    // Debian's cross gcc is built with --enable-fix-cortex-a53-843419: it asks ld for the workaround on every
    // link, after the emulation, byte order and -X. `-maarch64linux` chooses the target, and the program runs
    // like ld.bfd's build, with the workaround and without.
    let (linked, program) = gcc_tls_through_the_driver(&dir, &["-v"]);
    linked_by_the_driver(&linked);
    let stderr = text(&linked.stderr);
    let collect2 = stderr
        .lines()
        .find(|line| line.contains("collect2") && line.contains("-plugin"))
        .unwrap_or_else(|| panic!("no collect2 line in {stderr}"));
    assert!(
        collect2.contains(" -X -EL -maarch64linux --fix-cortex-a53-843419 "),
        "{collect2}"
    );
    assert_eq!(run(&program), expected(&fixtures().join("glibc-tls-le")));
    let (linked, program) = gcc_tls_through_the_driver(&dir, &["-mno-fix-cortex-a53-843419"]);
    linked_by_the_driver(&linked);
    assert_eq!(run(&program), expected(&fixtures().join("glibc-tls-le")));
}

/// The instructions of an AArch64 program by address, and its symbols' addresses, as objdump shows them.
struct Disassembly {
    words: std::collections::BTreeMap<u64, u32>,
    symbols: std::collections::BTreeMap<String, u64>,
}

impl Disassembly {
    fn of(program: &Path) -> Disassembly {
        let listing = Command::new("aarch64-linux-gnu-objdump")
            .arg("-d")
            .arg(program)
            .output()
            .unwrap();
        assert!(listing.status.success(), "{}", text(&listing.stderr));
        let mut words = std::collections::BTreeMap::new();
        let mut symbols = std::collections::BTreeMap::new();
        for line in text(&listing.stdout).lines() {
            // `0000000000401ff8 <erratum_far>:` or `  401ff8:\tf0001081 \tadrp\tx1, ...`.
            if let Some((address, rest)) = line.split_once(" <")
                && let Some(name) = rest.strip_suffix(">:")
            {
                symbols.insert(name.to_string(), u64::from_str_radix(address, 16).unwrap());
            } else if let Some((address, rest)) = line.trim_start().split_once(":\t")
                && let Ok(address) = u64::from_str_radix(address, 16)
                && let Some(word) = rest.split_whitespace().next()
                && let Ok(word) = u32::from_str_radix(word, 16)
            {
                words.insert(address, word);
            }
        }
        Disassembly { words, symbols }
    }

    fn word(&self, address: u64) -> u32 {
        *self
            .words
            .get(&address)
            .unwrap_or_else(|| panic!("no instruction at {address:#x}"))
    }

    fn symbol(&self, name: &str) -> u64 {
        self.symbols[name]
    }

    /// Where the `b` at `address` goes.
    fn branch_target(&self, address: u64) -> u64 {
        let word = self.word(address);
        assert_eq!(
            word & 0xfc00_0000,
            0x1400_0000,
            "not a `b` at {address:#x}: {word:#010x}"
        );
        let offset = i64::from(((word & 0x3ff_ffff) << 6) as i32 >> 6) * 4;
        address.wrapping_add_signed(offset)
    }
}

/// What ld.bfd makes of `tests/fixtures/aarch64/erratum843419.s` with `--fix-cortex-a53-843419`, and what
/// the program it is must do: `erratum_far`'s load moved to a veneer (its data is 2 MiB away, out of an
/// `adr`'s reach), `erratum_near`'s `adrp` turned into an `adr` of the same page, exit status 42.
fn erratum_workaround_as_ld_bfd_makes_it(program: &Path) {
    let code = Disassembly::of(program);
    let far = code.symbol("erratum_far");
    assert_eq!(far & 0xfff, 0xff8);
    assert_eq!(code.word(far) & 0x9f00_001f, 0x9000_0001, "adrp x1 stays");
    let veneer = code.branch_target(far + 8);
    // ldr x0, [x1, #:lo12:far_value], then back to the instruction after the one it replaces.
    assert_eq!(
        code.word(veneer) & 0xffc0_03ff,
        0xf940_0020,
        "{:#010x}",
        code.word(veneer)
    );
    assert_eq!(code.word(veneer) & 0x003f_fc00, code.word(far + 4) & 0x003f_fc00);
    assert_eq!(code.branch_target(veneer + 4), far + 12);
    let near = code.symbol("erratum_near");
    assert_eq!(near & 0xfff, 0xffc);
    let adr = code.word(near);
    assert_eq!(adr & 0x9f00_001f, 0x1000_0001, "adr x1: {adr:#010x}");
    let immediate = (((adr >> 5) & 0x7_ffff) << 2) | ((adr >> 29) & 3);
    let page = near.wrapping_add_signed(i64::from(((immediate << 11) as i32) >> 11));
    assert_eq!(page & 0xfff, 0, "the `adr` names a page: {page:#x}");
    assert_eq!(code.word(near + 12) & 0xffc0_03ff, 0xf940_0020, "the load stays");
    let status = Command::new("qemu-aarch64").arg(program).status().unwrap();
    assert_eq!(status.code(), Some(42));
}

#[test]
fn the_cortex_a53_erratum_843419_workaround_makes_the_veneer_and_the_adr_ld_bfd_makes() {
    let dir = scratch!("aarch64-erratum-843419");
    let object = dir.join("erratum843419.o");
    let assembled = Command::new("aarch64-linux-gnu-as")
        .arg(repo().join("tests/fixtures/aarch64/erratum843419.s"))
        .arg("-o")
        .arg(&object)
        .output()
        .unwrap();
    assert!(assembled.status.success(), "{}", text(&assembled.stderr));
    // The oracle: ld.bfd's output has the shape the checks expect.
    let reference = dir.join("bfd");
    let linked = Command::new("aarch64-linux-gnu-ld")
        .args(["-static", "--fix-cortex-a53-843419", "-o"])
        .arg(&reference)
        .arg(&object)
        .output()
        .unwrap();
    assert!(linked.status.success(), "{}", text(&linked.stderr));
    erratum_workaround_as_ld_bfd_makes_it(&reference);
    let program = dir.join("ours");
    let linked = Command::new(BIN)
        .args(["ld", "-static", "--fix-cortex-a53-843419", "-o"])
        .arg(&program)
        .arg(&object)
        .output()
        .unwrap();
    assert!(linked.status.success(), "{}", text(&linked.stderr));
    erratum_workaround_as_ld_bfd_makes_it(&program);
    // Without the option neither sequence is touched.
    let untouched = dir.join("untouched");
    let linked = Command::new(BIN)
        .args(["ld", "-static", "-o"])
        .arg(&untouched)
        .arg(&object)
        .output()
        .unwrap();
    assert!(linked.status.success(), "{}", text(&linked.stderr));
    let code = Disassembly::of(&untouched);
    assert_eq!(code.word(code.symbol("erratum_far") + 8) & 0xffc0_03ff, 0xf940_0020);
    assert_eq!(code.word(code.symbol("erratum_near")) & 0x9f00_0000, 0x9000_0000);
}

#[test]
fn an_x86_64_object_among_aarch64_objects_is_refused_naming_it_and_nothing_is_written() {
    let dir = scratch!("aarch64-mixed");
    let source = dir.join("x86.c");
    std::fs::write(&source, "int x86_function(void) { return 1; }\n").unwrap();
    let object = dir.join("x86.o");
    let compiled = Command::new("gcc")
        .arg("-c")
        .arg(&source)
        .arg("-o")
        .arg(&object)
        .output()
        .unwrap();
    assert!(compiled.status.success());
    let case = fixtures().join("free-c");
    let output = dir.join("mixed.elf");
    let result = Command::new(BIN)
        .args(["link", "-static", "-o"])
        .arg(&output)
        .args(lines(&case, "inputs.txt"))
        .arg(&object)
        .output()
        .unwrap();
    assert!(!result.status.success());
    let stderr = text(&result.stderr);
    assert!(stderr.contains("x86.o"), "{stderr}");
    assert!(!output.exists());
}

/// `e_machine` of an ELF file's header (little-endian).
fn e_machine(path: &Path) -> u16 {
    let bytes = std::fs::read(path).unwrap();
    u16::from_le_bytes([bytes[18], bytes[19]])
}

#[test]
fn the_image_is_for_the_links_target_whatever_its_first_input_is() {
    // The freestanding C case's code in an archive named first, its start file after it: the first input
    // names no machine, and the image still is the link target's (aarch64's declared machine).
    let case = fixtures().join("free-c");
    let dir = scratch!("aarch64-archive-first");
    let inputs = lines(&case, "inputs.txt");
    let (start, rest): (Vec<&String>, Vec<&String>) = inputs.iter().partition(|input| input.ends_with("start.o"));
    let archive = dir.join("libcode.a");
    let status = Command::new("aarch64-linux-gnu-ar")
        .arg("rcs")
        .arg(&archive)
        .args(&rest)
        .status()
        .unwrap();
    assert!(status.success());
    let program = dir.join("prog");
    let output = Command::new(BIN)
        .args(["link", "-static", "-o"])
        .arg(&program)
        .args(lines(&case, "flags.txt"))
        .arg(&archive)
        .args(start)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let aarch64 = neverc_tables::generated::targets::aarch64::TARGET.elf.unwrap().machine;
    assert_eq!(e_machine(&program), aarch64);
    assert_eq!(run(&program), expected(&case));
}
