#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Dynamically linked executables, held to what gcc and ld.bfd make of the same sources: the program
//! interpreter each target declares (`[elf] interpreter`) is the one a default `gcc` link names in
//! `PT_INTERP`; a position-independent executable that imports nothing (`ld -pie`) starts through that
//! interpreter on x86-64 and AArch64 (under qemu) as ld.bfd's does, with the same dynamic section; and
//! gcc's and g++'s default links of programs against the shared C and C++ libraries (PIEs importing through
//! the PLT, the GOT, copies and symbolic relocations; on x86-64 also `-no-pie` on code compiled without
//! -fPIE) run as ld.bfd's do, lazily bound and with `LD_BIND_NOW=1`, with ld.bfd's needed libraries, flags
//! and dynamic symbols.

use std::path::Path;

use neverc_test_support::cross::{AARCH64, Arch, X86_64, compile_fixtures, readelf, run_program};
use neverc_test_support::{repo, run_in, scratch, succeeded, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

#[test]
fn the_declared_interpreter_is_the_one_gcc_and_ld_bfd_write() {
    let dir = scratch!("dynamic-interpreter");
    std::fs::write(
        dir.join("hello.c"),
        "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }\n",
    )
    .unwrap();
    for arch in [X86_64, AARCH64] {
        let program = format!("hello-{}", arch.name);
        succeeded(&run_in(arch.gcc, &dir, &["hello.c", "-o", &program]), arch.gcc);
        let readelf = format!("{}readelf", arch.binutils);
        let headers = text(&run_in(&readelf, &dir, &["-lW", &program]).stdout);
        let written = headers
            .lines()
            .find_map(|line| line.trim().strip_prefix("[Requesting program interpreter: "))
            .and_then(|rest| rest.strip_suffix(']'))
            .unwrap_or_else(|| panic!("{program} has no PT_INTERP: {headers}"));
        let declared = neverc_tables::target_by_name(arch.name)
            .and_then(|target| target.elf)
            .and_then(|elf| elf.interpreter);
        assert_eq!(declared, Some(written), "{}", arch.name);
    }
}

/// The types of `program`'s program headers, in the table's order.
fn program_header_types(arch: &Arch, program: &Path) -> Vec<String> {
    readelf(arch, &["-lW"], program)
        .lines()
        .skip_while(|line| !line.trim_start().starts_with("Type"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|word| !word.starts_with('['))
        .map(str::to_string)
        .collect()
}

/// The dynamic section's tags, in order, without their values.
fn dynamic_tags(arch: &Arch, program: &Path) -> Vec<String> {
    readelf(arch, &["-dW"], program)
        .lines()
        .filter_map(|line| line.split_whitespace().nth(1))
        .filter(|tag| tag.starts_with('('))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_pie_that_imports_nothing_starts_through_its_interpreter_as_ld_bfds_does() {
    let objects = compile_fixtures(
        scratch!("dynamic-freestanding"),
        BIN,
        &repo().join("tests/fixtures/dynamic"),
        &[("freestanding", &["-fPIE", "-fno-asynchronous-unwind-tables"][..])],
    );
    for arch in [X86_64, AARCH64] {
        let dir = objects.join(arch.name);
        let interpreter = neverc_tables::target_by_name(arch.name)
            .and_then(|target| target.elf)
            .and_then(|elf| elf.interpreter)
            .unwrap();
        let bfd = format!("{}ld.bfd", arch.binutils);
        succeeded(
            &run_in(
                &bfd,
                &dir,
                &["-pie", "-dynamic-linker", interpreter, "-o", "bfd", "freestanding.o"],
            ),
            &bfd,
        );
        // The interpreter is the target's when the command line names none.
        succeeded(
            &run_in(BIN, &dir, &["ld", "-pie", "-o", "ours", "freestanding.o"]),
            "ld -pie",
        );
        let (ours, theirs) = (dir.join("ours"), dir.join("bfd"));
        assert_eq!(run_program(&arch, &theirs), (String::new(), Some(42)), "{}", arch.name);
        assert_eq!(run_program(&arch, &ours), (String::new(), Some(42)), "{}", arch.name);
        assert!(readelf(&arch, &["-hW"], &ours).contains("DYN (Position-Independent Executable file)"));
        let request = format!("[Requesting program interpreter: {interpreter}]");
        assert!(readelf(&arch, &["-lW"], &ours).contains(&request), "{}", arch.name);
        // PT_PHDR, then PT_INTERP, before the loads: the loader finds the load address from PT_PHDR.
        let types = program_header_types(&arch, &ours);
        assert_eq!(types[..3], ["PHDR", "INTERP", "LOAD"], "{}: {types:?}", arch.name);
        assert_eq!(program_header_types(&arch, &theirs)[..3], types[..3], "{}", arch.name);
        assert_eq!(
            dynamic_tags(&arch, &ours),
            dynamic_tags(&arch, &theirs),
            "{}",
            arch.name
        );
        // `--hash-style` chooses the hash tables as it does for ld.bfd (both, above, is its default); the
        // loader finds the program's (empty) symbol table through either.
        for style in ["--hash-style=gnu", "--hash-style=sysv"] {
            let (ours, theirs) = (format!("ours{style}"), format!("bfd{style}"));
            succeeded(
                &run_in(
                    &bfd,
                    &dir,
                    &[
                        "-pie",
                        style,
                        "-dynamic-linker",
                        interpreter,
                        "-o",
                        &theirs,
                        "freestanding.o",
                    ],
                ),
                &bfd,
            );
            succeeded(
                &run_in(BIN, &dir, &["ld", "-pie", style, "-o", &ours, "freestanding.o"]),
                style,
            );
            let (ours, theirs) = (dir.join(ours), dir.join(theirs));
            assert_eq!(
                dynamic_tags(&arch, &ours),
                dynamic_tags(&arch, &theirs),
                "{}: {style}",
                arch.name
            );
            assert_eq!(
                run_program(&arch, &ours),
                (String::new(), Some(42)),
                "{}: {style}",
                arch.name
            );
        }
        // -dynamic-linker names another interpreter.
        succeeded(
            &run_in(
                BIN,
                &dir,
                &[
                    "ld",
                    "-pie",
                    "-dynamic-linker",
                    "/opt/loader.so",
                    "-o",
                    "other",
                    "freestanding.o",
                ],
            ),
            "ld -pie -dynamic-linker",
        );
        let other = readelf(&arch, &["-lW"], &dir.join("other"));
        assert!(
            other.contains("[Requesting program interpreter: /opt/loader.so]"),
            "{other}"
        );
    }
}

/// The named dynamic symbols of `program` (`binding name@version`, `readelf --dyn-syms`), sorted. (ld.bfd
/// writes local section symbols into AArch64 programs' `.dynsym`; they name nothing and are left out.)
fn dynamic_symbols(arch: &Arch, program: &Path) -> Vec<String> {
    let mut names: Vec<String> = readelf(arch, &["--dyn-syms", "-W"], program)
        .lines()
        .filter(|line| {
            line.trim_start()
                .split(':')
                .next()
                .is_some_and(|index| index.parse::<u32>().is_ok())
        })
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|fields| fields.len() >= 8 && fields[3] != "SECTION")
        .map(|fields| format!("{} {}", fields[4], fields[7]))
        .collect();
    names.sort();
    names
}

/// The `.dynamic` entries of `program` with these tags (`readelf -d`'s names), with their values.
fn dynamic_entries(arch: &Arch, program: &Path, tags: &[&str]) -> Vec<String> {
    readelf(arch, &["-dW"], program)
        .lines()
        .filter(|line| tags.iter().any(|tag| line.contains(&format!("({tag})"))))
        .map(|line| line.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        .collect()
}

/// The libraries the dynamic loader maps for `program`, without their load addresses: `ldd`'s list, or for
/// another architecture its loader's `--list` under the runner.
fn ldd(arch: &Arch, program: &Path) -> Vec<String> {
    let path = program.display().to_string();
    let output = match arch.runner.split_first() {
        None => run_in("ldd", Path::new("."), &[&path]),
        Some((runner, rest)) => {
            let interpreter = neverc_tables::target_by_name(arch.name)
                .and_then(|target| target.elf)
                .and_then(|elf| elf.interpreter)
                .unwrap();
            // The loader itself is opened on the host: under the runner's `-L` root.
            let root = rest
                .iter()
                .position(|argument| *argument == "-L")
                .and_then(|at| rest.get(at + 1))
                .copied()
                .unwrap_or("");
            let interpreter = format!("{root}{interpreter}");
            run_in(
                runner,
                Path::new("."),
                &[rest, &[&interpreter, "--list", &path]].concat(),
            )
        }
    };
    succeeded(&output, "ldd");
    text(&output.stdout)
        .lines()
        .map(|line| line.split(" (0x").next().unwrap_or(line).trim().to_string())
        .filter(|line| !line.is_empty() && !line.starts_with("linux-vdso"))
        .collect()
}

/// What `program` does on `arch` (under its runner, which passes the environment on), run with
/// `environment` set: (stdout, stderr, exit status).
fn run_with(arch: &Arch, program: &Path, environment: &[(&str, &str)]) -> (String, String, Option<i32>) {
    let mut command = match arch.runner.split_first() {
        Some((runner, rest)) => {
            let mut command = std::process::Command::new(runner);
            command.args(rest).arg(program);
            command
        }
        None => std::process::Command::new(program),
    };
    let output = command
        .envs(environment.iter().copied())
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", program.display()));
    (text(&output.stdout), text(&output.stderr), output.status.code())
}

/// Links `objects` in `dir` through `driver` (gcc's default: a PIE against the shared C library; `-no-pie`
/// among them: an executable at a fixed address) for `arch` with neverc-spec (`bin` holds its `ld`) into
/// `NAME-ours` and with ld.bfd into `NAME-bfd`; checks that ours runs as ld.bfd's does, lazily and with
/// `LD_BIND_NOW=1`, and that its needed libraries, flags, dynamic symbols (with their bindings and versions)
/// and the libraries the loader maps are ld.bfd's.
fn check_against_ld_bfd(arch: &Arch, driver: &str, dir: &Path, bin: &Path, objects: &[&str], name: &str) {
    let ours = format!("{name}-ours");
    let theirs = format!("{name}-bfd");
    let position_independent = !objects.contains(&"-no-pie");
    let mut arguments = objects.to_vec();
    arguments.extend(["-o", theirs.as_str()]);
    succeeded(&run_in(driver, dir, &arguments), &format!("{driver} (ld.bfd)"));
    let with_bin = format!("-B{}", bin.display());
    let mut arguments = vec![with_bin.as_str(), "-Wl,-v"];
    arguments.extend(objects);
    arguments.extend(["-o", ours.as_str()]);
    let linked = run_in(driver, dir, &arguments);
    succeeded(&linked, &format!("{driver} (neverc-spec)"));
    assert!(
        text(&linked.stdout).contains("neverc-spec"),
        "{name}: neverc-spec did not run as ld"
    );
    let (ours, theirs) = (dir.join(ours), dir.join(theirs));
    let header = readelf(arch, &["-hW"], &ours);
    if position_independent {
        assert!(
            header.contains("DYN (Position-Independent Executable file)"),
            "{name}: {header}"
        );
    } else {
        assert!(header.contains("EXEC (Executable file)"), "{name}: {header}");
    }
    assert!(
        readelf(arch, &["-lW"], &ours).contains("Requesting program interpreter"),
        "{name}"
    );
    let expected = run_with(arch, &theirs, &[]);
    assert!(
        expected.0.lines().count() >= 4,
        "{name}: ld.bfd's build printed {expected:?}"
    );
    assert_eq!(run_with(arch, &ours, &[]), expected, "{name}: lazily bound");
    assert_eq!(
        run_with(arch, &ours, &[("LD_BIND_NOW", "1")]),
        expected,
        "{name}: LD_BIND_NOW=1"
    );
    let tags = ["NEEDED", "RUNPATH", "RPATH", "FLAGS", "FLAGS_1", "VERNEEDNUM"];
    assert_eq!(
        dynamic_entries(arch, &ours, &tags),
        dynamic_entries(arch, &theirs, &tags),
        "{name}"
    );
    let symbols = dynamic_symbols(arch, &ours);
    assert!(
        symbols.iter().any(|symbol| symbol.contains("@GLIBC_")),
        "{name}: {symbols:?}"
    );
    assert_eq!(symbols, dynamic_symbols(arch, &theirs), "{name}");
    // Every symbol the program defines for the libraries has its address.
    for line in readelf(arch, &["--dyn-syms", "-W"], &ours).lines().skip(4) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() >= 8 && fields[6] != "UND" {
            assert!(fields[1].chars().any(|digit| digit != '0'), "{name}: {line}");
        }
    }
    assert_eq!(ldd(arch, &ours), ldd(arch, &theirs), "{name}");
}

#[test]
fn gccs_default_link_of_a_c_program_against_the_shared_c_library_runs_like_ld_bfds() {
    let objects = compile_fixtures(
        scratch!("dynamic-imports"),
        BIN,
        &repo().join("tests/fixtures/dynamic"),
        &[("imports", &[][..])],
    );
    for arch in [X86_64, AARCH64] {
        let dir = objects.join(arch.name);
        check_against_ld_bfd(&arch, arch.gcc, &dir, &objects.join("bin"), &["imports.o"], "imports");
        let relocations = readelf(&arch, &["-rW"], &dir.join("imports-ours"));
        let prefix = if arch.name == "x86_64" { "R_X86_64" } else { "R_AARCH64" };
        for kind in ["GLOB_DAT", "JUMP_SLOT", "RELATIVE"] {
            assert!(
                relocations.contains(&format!("{prefix}_{kind}")),
                "{kind}: {relocations}"
            );
        }
    }
    let dir = objects.join(X86_64.name);
    // `-z now` binds every function at start-up (BIND_NOW, NOW) and `-rpath` names where the libraries are
    // (RUNPATH), as ld.bfd writes them; `.got.plt` is then read-only after start-up, inside PT_GNU_RELRO.
    check_against_ld_bfd(
        &X86_64,
        "gcc",
        &dir,
        &objects.join("bin"),
        &["-Wl,-z,now", "-Wl,-rpath,/opt/neverc/lib:/opt/other", "imports.o"],
        "now",
    );
    let sections = readelf(&X86_64, &["-SW"], &dir.join("now-ours"));
    let got_plt = sections
        .lines()
        .find(|line| line.contains(" .got.plt "))
        .and_then(|line| line.split_whitespace().find(|word| word.len() == 16))
        .map(|address| u64::from_str_radix(address, 16).unwrap())
        .unwrap();
    let relro = readelf(&X86_64, &["-lW"], &dir.join("now-ours"));
    let relro: Vec<u64> = relro
        .lines()
        .find(|line| line.trim_start().starts_with("GNU_RELRO"))
        .unwrap()
        .split_whitespace()
        .filter_map(|word| word.strip_prefix("0x"))
        .map(|number| u64::from_str_radix(number, 16).unwrap())
        .collect();
    assert!(
        relro[1] <= got_plt && got_plt < relro[1] + relro[4],
        "{relro:?} {got_plt:#x}"
    );
    // The variable and its other name are defined by the copy, as ld.bfd defines them.
    let symbols = dynamic_symbols(&X86_64, &dir.join("imports-ours"));
    for copied in [
        "GLOBAL stdout@GLIBC_2.2.5",
        "WEAK environ@GLIBC_2.2.5",
        "GLOBAL __environ@GLIBC_2.2.5",
    ] {
        assert!(symbols.iter().any(|symbol| symbol == copied), "{copied}: {symbols:?}");
    }
    let relocations = readelf(&X86_64, &["-rW"], &dir.join("imports-ours"));
    for kind in [
        "R_X86_64_COPY",
        "R_X86_64_GLOB_DAT",
        "R_X86_64_JUMP_SLOT",
        "R_X86_64_64 ",
        "R_X86_64_RELATIVE",
    ] {
        assert!(relocations.contains(kind), "{kind}: {relocations}");
    }
    // `gcc -no-pie` on code compiled without -fPIE: an executable at a fixed address, whose code takes
    // `malloc`'s address directly, so that its PLT entry is malloc's address for the whole program (the
    // value of its undefined `.dynsym` entry), as ld.bfd makes it.
    let source = repo().join("tests/fixtures/dynamic/imports.c").display().to_string();
    succeeded(
        &run_in(
            "gcc",
            &dir,
            &["-O2", "-fno-pie", "-c", &source, "-o", "imports-fixed.o"],
        ),
        "gcc -fno-pie",
    );
    check_against_ld_bfd(
        &X86_64,
        "gcc",
        &dir,
        &objects.join("bin"),
        &["-no-pie", "imports-fixed.o"],
        "fixed",
    );
    let symbols = readelf(&X86_64, &["--dyn-syms", "-W"], &dir.join("fixed-ours"));
    let malloc = symbols.lines().find(|line| line.contains(" malloc@")).unwrap();
    assert!(
        !malloc
            .split_whitespace()
            .nth(1)
            .unwrap()
            .chars()
            .all(|digit| digit == '0'),
        "{malloc}"
    );
    assert!(readelf(&X86_64, &["-rW"], &dir.join("fixed-ours")).contains("R_X86_64_COPY"));
}

#[test]
fn gpps_default_link_of_a_cxx_program_against_libstdcxx_runs_like_ld_bfds() {
    let dir = scratch!("dynamic-classes");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("ld")).unwrap();
    let source = repo().join("tests/fixtures/dynamic/classes.cc").display().to_string();
    for (arch, compiler) in [(X86_64, "g++"), (AARCH64, "aarch64-linux-gnu-g++")] {
        let dir = dir.join(arch.name);
        std::fs::create_dir_all(&dir).unwrap();
        succeeded(
            &run_in(compiler, &dir, &["-O2", "-c", &source, "-o", "classes.o"]),
            compiler,
        );
        check_against_ld_bfd(&arch, compiler, &dir, &bin, &["classes.o"], "classes");
        // libstdc++'s thread-local variables std::call_once reads are reached through GOT slots the loader
        // fills with their offsets from the thread pointer.
        let relocations = readelf(&arch, &["-rW"], &dir.join("classes-ours"));
        let thread_pointer_offset = if arch.name == "x86_64" {
            "R_X86_64_TPOFF64"
        } else {
            "R_AARCH64_TLS_TPREL64"
        };
        assert!(
            relocations.contains(thread_pointer_offset) && relocations.contains("__once_call"),
            "{relocations}"
        );
    }
}

/// Code compiled with -fPIC reaches the thread-local variables of a shared library through general-dynamic
/// sequences (x86-64; with `-fno-plt`, calling `__tls_get_addr` through the GOT) or TLS descriptors (AArch64's
/// default, x86-64's `-mtls-dialect=gnu2`). In an executable they are relaxed to initial-exec accesses
/// reading a GOT slot the loader fills (`R_X86_64_TPOFF64`, `R_AARCH64_TLS_TPREL64`), as ld.bfd relaxes
/// them: the programs (a second thread with its own copies) run as ld.bfd's builds do.
#[test]
fn general_dynamic_and_descriptor_accesses_to_imported_tls_run_like_ld_bfds() {
    let variants: [(&str, &[&str]); 3] = [
        ("tls-gd", &["-fPIC"]),
        ("tls-desc", &["-fPIC", "-mtls-dialect=gnu2"]),
        ("tls-noplt", &["-fPIC", "-fno-plt"]),
    ];
    let objects = compile_fixtures(
        scratch!("dynamic-tls"),
        BIN,
        &repo().join("tests/fixtures/dynamic"),
        &[("tls_library", &["-fPIC"][..])],
    );
    let source = repo()
        .join("tests/fixtures/dynamic/tls_imports.c")
        .display()
        .to_string();
    for arch in [X86_64, AARCH64] {
        let dir = objects.join(arch.name);
        succeeded(
            &run_in(arch.gcc, &dir, &["-shared", "tls_library.o", "-o", "libtlsdemo.so"]),
            "gcc -shared",
        );
        let rpath = format!("-Wl,-rpath,{}", dir.display());
        // AArch64 knows one dialect: descriptors.
        let variants = if arch.name == "x86_64" {
            &variants[..]
        } else {
            &variants[..1]
        };
        for (name, flags) in variants {
            let object = format!("{name}.o");
            let arguments = [&["-O2", "-c", &source, "-o", &object][..], flags].concat();
            succeeded(&run_in(arch.gcc, &dir, &arguments), arch.gcc);
            check_against_ld_bfd(
                &arch,
                arch.gcc,
                &dir,
                &objects.join("bin"),
                &[&object, "-L.", "-ltlsdemo", &rpath, "-pthread"],
                name,
            );
            let relocations = readelf(&arch, &["-rW"], &dir.join(format!("{name}-ours")));
            let tpoff = if arch.name == "x86_64" {
                "R_X86_64_TPOFF64"
            } else {
                "R_AARCH64_TLS_TPREL64"
            };
            assert!(relocations.contains(tpoff), "{name}: {relocations}");
        }
    }
}

/// An object may name the version of a shared library's function it refers to (`.symver`, as programs
/// built to run on older glibc releases do): `memcpy@GLIBC_2.2.5` binds to that hidden version, not to the
/// default `memcpy@@GLIBC_2.14`, and `puts@GLIBC_2.2.5` to the default version it names; `.dynsym` has
/// the same names and versions as ld.bfd's, and the program runs as its build does.
#[test]
fn references_to_named_versions_bind_to_those_versions_as_with_ld_bfd() {
    let objects = compile_fixtures(
        scratch!("dynamic-versioned"),
        BIN,
        &repo().join("tests/fixtures/dynamic"),
        &[("versioned", &["-fno-builtin"][..])],
    );
    let dir = objects.join(X86_64.name);
    check_against_ld_bfd(
        &X86_64,
        "gcc",
        &dir,
        &objects.join("bin"),
        &["versioned.o"],
        "versioned",
    );
    let symbols = dynamic_symbols(&X86_64, &dir.join("versioned-ours"));
    for expected in ["GLOBAL memcpy@GLIBC_2.2.5", "GLOBAL puts@GLIBC_2.2.5"] {
        assert!(
            symbols.iter().any(|symbol| symbol == expected),
            "{expected}: {symbols:?}"
        );
    }
}

#[test]
fn z_notext_lets_the_loader_relocate_read_only_words_as_with_ld_bfd() {
    let objects = compile_fixtures(
        scratch!("dynamic-textrel"),
        BIN,
        &repo().join("tests/fixtures/dynamic"),
        &[("textrel", &[][..])],
    );
    let dir = objects.join(X86_64.name);
    let bin = objects.join("bin");
    // Same run, same flags (TEXTREL among them), same dynamic symbols as ld.bfd's, lazily and bound now.
    check_against_ld_bfd(&X86_64, "gcc", &dir, &bin, &["textrel.o", "-Wl,-z,notext"], "textrel");
    let ours = dir.join("textrel-ours");
    assert_eq!(
        dynamic_entries(&X86_64, &ours, &["TEXTREL"]),
        dynamic_entries(&X86_64, &dir.join("textrel-bfd"), &["TEXTREL"])
    );
    assert_eq!(dynamic_entries(&X86_64, &ours, &["TEXTREL"]), ["(TEXTREL) 0x0"]);
    // The table's words are relocated in place: `.rela.dyn` names them, none goes to `.relr.dyn` (packed
    // relative relocations are for writable words).
    let with_bin = format!("-B{}", bin.display());
    let packed = run_in(
        "gcc",
        &dir,
        &[
            &with_bin,
            "-Wl,-z,notext",
            "-Wl,-z,pack-relative-relocs",
            "textrel.o",
            "-o",
            "textrel-packed",
        ],
    );
    succeeded(&packed, "gcc -z pack-relative-relocs -z notext");
    let packed = dir.join("textrel-packed");
    let table = text(&run_in("nm", &dir, &["textrel-packed"]).stdout)
        .lines()
        .find(|line| line.ends_with(" R table"))
        .and_then(|line| u64::from_str_radix(line.split_whitespace().next()?, 16).ok())
        .expect("the table's address");
    let relocations = readelf(&X86_64, &["-rW"], &packed);
    let rela_dyn = relocations
        .split("Relocation section")
        .find(|section| section.contains("'.rela.dyn'"))
        .expect(".rela.dyn");
    assert!(relocations.contains("'.relr.dyn'"), "{relocations}");
    for word in 0..3 {
        assert!(
            rela_dyn.contains(&format!("{:016x}", table + 8 * word)),
            "{relocations}"
        );
    }
    assert_eq!(
        run_with(&X86_64, &packed, &[]),
        run_with(&X86_64, &dir.join("textrel-bfd"), &[])
    );
    // Without -z notext (or with -z text, the last one given) they are refused, naming each word and the
    // option, as ld.lld refuses them (ld.bfd writes them with a warning), and nothing is written.
    for extra in [&[][..], &["-Wl,-z,notext", "-Wl,-z,text"][..]] {
        let arguments = [&[with_bin.as_str()][..], extra, &["textrel.o", "-o", "textrel-refused"]].concat();
        let refused = run_in("gcc", &dir, &arguments);
        assert!(!refused.status.success(), "{extra:?}");
        let message = text(&refused.stderr);
        assert_eq!(message.matches("which `-z notext` allows").count(), 3, "{message}");
        assert!(
            message.contains("textrel.o(.rodata.table+0x10): relocation R_X86_64_64 against `puts`"),
            "{message}"
        );
        assert!(!dir.join("textrel-refused").exists());
    }
    // A static PIE relocates itself, its pages as mapped: ld.bfd's build crashes; ours is refused.
    let arguments = ["-static-pie", "-Wl,-z,notext", "textrel.o", "-o"];
    succeeded(
        &run_in("gcc", &dir, &[&arguments[..], &["textrel-static-bfd"]].concat()),
        "gcc -static-pie",
    );
    assert_eq!(
        run_with(&X86_64, &dir.join("textrel-static-bfd"), &[]).2,
        None,
        "killed by SIGSEGV"
    );
    let refused = run_in(
        "gcc",
        &dir,
        &[&[with_bin.as_str()][..], &arguments, &["textrel-refused"]].concat(),
    );
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("a text relocation, which a static PIE cannot have"),
        "{}",
        text(&refused.stderr)
    );
    assert!(!dir.join("textrel-refused").exists());
}
