#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Shared libraries (`-shared`, issue 28), made by `gcc -shared` through neverc-spec and checked against
//! ld.bfd's from the same objects: programs linked against either run alike, with and without an
//! `LD_PRELOAD` interposing a library function (and with `-Bsymbolic`, which binds the library's own
//! references), `dlopen`/`dlsym` find what ld.bfd's library exports, a C++ exception and RTTI cross the
//! boundary, and the exported symbols, `DT_SONAME` and `DT_NEEDED` are ld.bfd's; a version script's
//! versions (inheritance, `local:`, `extern "C++"` patterns) and `.symver` definitions version the exports
//! as ld.bfd versions them, and programs built against an older release keep binding to its versions;
//! thread-local variables (every model a library keeps, on x86-64 and AArch64) and indirect functions work as
//! in ld.bfd's libraries.

use std::path::{Path, PathBuf};

use neverc_test_support::{repo, run_in, scratch, succeeded, text, version_definitions};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

fn fixture(name: &str) -> String {
    repo().join("tests/fixtures/shared").join(name).display().to_string()
}

/// A fresh directory with `bin/ld`, neverc-spec, for `gcc -B`.
fn workspace(name: &Path) -> (PathBuf, String) {
    let bin = name.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("ld")).unwrap();
    (name.to_path_buf(), format!("-B{}", bin.display()))
}

/// What `program` prints (stdout and stderr) and its exit status, with `environment` set.
fn run_program(program: &Path, arguments: &[&str], environment: &[(&str, &str)]) -> (String, String, Option<i32>) {
    let output = std::process::Command::new(program)
        .args(arguments)
        .envs(environment.iter().copied())
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", program.display()));
    (text(&output.stdout), text(&output.stderr), output.status.code())
}

fn readelf(arguments: &[&str], file: &Path) -> String {
    let output = run_in(
        "readelf",
        Path::new("."),
        &[arguments, &[&file.display().to_string()]].concat(),
    );
    succeeded(&output, "readelf");
    text(&output.stdout)
}

/// The defined `.dynsym` entries of `library`: type, binding, visibility and name (versions included);
/// not the section symbols ld.bfd adds for AArch64.
fn exported(library: &Path) -> Vec<String> {
    let mut names: Vec<String> = readelf(&["--dyn-syms", "-W"], library)
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|fields| {
            fields.len() >= 8
                && fields[0].trim_end_matches(':').parse::<u32>().is_ok()
                && fields[6] != "UND"
                && fields[3] != "SECTION"
        })
        .map(|fields| format!("{} {} {} {}", fields[3], fields[4], fields[5], fields[7]))
        .collect();
    names.sort();
    names
}

/// The `.dynamic` entries with these tags, with their values.
fn dynamic_entries(library: &Path, tags: &[&str]) -> Vec<String> {
    readelf(&["-dW"], library)
        .lines()
        .filter(|line| tags.iter().any(|tag| line.contains(&format!("({tag})"))))
        .map(|line| line.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn c_shared_libraries_export_interpose_and_run_like_ld_bfds() {
    let (dir, with_ours) = workspace(&scratch!("shared-c"));
    for (source, object, extra) in [
        ("lib.c", "lib.o", &["-fPIC"][..]),
        ("main.c", "main.o", &[][..]),
        ("dlopen.c", "dlopen.o", &[][..]),
    ] {
        let compiled = run_in(
            "gcc",
            &dir,
            &[&["-O2", "-c", &fixture(source), "-o", object][..], extra].concat(),
        );
        succeeded(&compiled, source);
    }
    let preload = run_in(
        "gcc",
        &dir,
        &["-O2", "-fPIC", "-shared", &fixture("preload.c"), "-o", "libpreload.so"],
    );
    succeeded(&preload, "libpreload.so");
    let preload = dir.join("libpreload.so").display().to_string();

    // The library, by each linker (and, -Bsymbolic, and with a dynamic list naming only `greeting`, which
    // binds every other definition to the library as -Bsymbolic does, by each again), each in a directory of
    // its own under the same name; the programs are linked against them by ld.bfd (and once by neverc-spec
    // too).
    std::fs::write(dir.join("greeting.list"), "{ greeting; };\n").unwrap();
    let listed = format!("-Wl,--dynamic-list={}", dir.join("greeting.list").display());
    let mut outputs = Vec::new();
    for (name, binding) in [
        ("plain", None),
        ("symbolic", Some("-Wl,-Bsymbolic")),
        ("listed", Some(listed.as_str())),
    ] {
        let mut runs = Vec::new();
        for (linker, driver_flag) in [("ours", Some(with_ours.as_str())), ("bfd", None)] {
            let lib_dir = dir.join(format!("{name}-{linker}"));
            std::fs::create_dir_all(&lib_dir).unwrap();
            let library = lib_dir.join("libdemo.so").display().to_string();
            let mut arguments: Vec<&str> = driver_flag.into_iter().collect();
            arguments.extend(["-shared", "-Wl,-soname,libdemo.so.1", "lib.o", "-o", &library]);
            arguments.extend(binding);
            succeeded(&run_in("gcc", &dir, &arguments), &format!("gcc -shared ({linker})"));
            std::fs::copy(&library, lib_dir.join("libdemo.so.1")).unwrap();
            let search = format!("-L{}", lib_dir.display());
            let rpath = format!("-Wl,-rpath,{}", lib_dir.display());
            let program = lib_dir.join("program").display().to_string();
            let linked = run_in("gcc", &dir, &["main.o", &search, "-ldemo", &rpath, "-o", &program]);
            succeeded(&linked, "gcc main.o -ldemo");
            let program = PathBuf::from(program);
            let plain = run_program(&program, &[], &[]);
            let preloaded = run_program(&program, &[], &[("LD_PRELOAD", &preload)]);
            runs.push((lib_dir, plain, preloaded));
        }
        let (ours, theirs) = (&runs[0], &runs[1]);
        assert!(ours.1.0.lines().count() >= 6, "{name}: {:?}", ours.1);
        assert_eq!(ours.1, theirs.1, "{name}: the program against each library");
        assert_eq!(ours.2, theirs.2, "{name}: with LD_PRELOAD");
        let library = ours.0.join("libdemo.so");
        assert_eq!(exported(&library), exported(&theirs.0.join("libdemo.so")), "{name}");
        let tags = ["NEEDED", "SONAME", "SYMBOLIC", "FLAGS", "TEXTREL"];
        assert_eq!(
            dynamic_entries(&library, &tags),
            dynamic_entries(&theirs.0.join("libdemo.so"), &tags),
            "{name}"
        );
        let header = readelf(&["-hW"], &library);
        assert!(header.contains("DYN (Shared object file)"), "{header}");
        assert!(header.contains("Entry point address:               0x0"), "{header}");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&library).unwrap().permissions().mode() & 0o111, 0o111);
        outputs.push(ours.clone());
    }
    // Interposition: the preloaded functions replace the library's for the program, and (without -Bsymbolic)
    // `twice` for the library's own call and table too; the library's own reference to its protected
    // function (the table's last entry) is never replaced.
    let (plain, symbolic, listed) = (&outputs[0], &outputs[1], &outputs[2]);
    assert!(plain.1.0.contains("bump 41, counter 40"), "{:?}", plain.1);
    assert!(plain.2.0.contains("bump 82, counter 40"), "{:?}", plain.2);
    assert!(plain.2.0.contains("twice 63, protected 63"), "{:?}", plain.2);
    assert!(plain.2.0.contains("table 15 6 10"), "{:?}", plain.2);
    assert!(symbolic.2.0.contains("bump 41, counter 40"), "{:?}", symbolic.2);
    assert!(symbolic.2.0.contains("table 10 6 10"), "{:?}", symbolic.2);
    assert!(listed.2.0.contains("table 10 6 10"), "{:?}", listed.2);

    // A program linked by neverc-spec against neverc-spec's library runs alike.
    let lib_dir = &plain.0;
    let program = lib_dir.join("program-ours").display().to_string();
    let search = format!("-L{}", lib_dir.display());
    let rpath = format!("-Wl,-rpath,{}", lib_dir.display());
    succeeded(
        &run_in(
            "gcc",
            &dir,
            &[&with_ours, "main.o", &search, "-ldemo", &rpath, "-o", &program],
        ),
        "gcc -B (ours) main.o -ldemo",
    );
    assert_eq!(run_program(Path::new(&program), &[], &[]), plain.1);

    // dlopen and dlsym: what the library exports is found, the hidden function is not.
    succeeded(
        &run_in("gcc", &dir, &["dlopen.o", "-rdynamic", "-ldl", "-o", "dlopen"]),
        "gcc dlopen.o",
    );
    let opened: Vec<_> = [dir.join("plain-ours/libdemo.so"), dir.join("plain-bfd/libdemo.so")]
        .iter()
        .map(|library| run_program(&dir.join("dlopen"), &[&library.display().to_string()], &[]))
        .collect();
    assert_eq!(opened[0], opened[1]);
    assert_eq!(
        opened[0].0,
        "hello from the library, twice 8, counter 40, internal not exported\n"
    );

    // --gc-sections keeps what the library exports (and what that uses): the same exports, the same run.
    let sections = [
        "-O2",
        "-fPIC",
        "-ffunction-sections",
        "-fdata-sections",
        "-c",
        &fixture("lib.c"),
        "-o",
        "lib-sections.o",
    ];
    succeeded(&run_in("gcc", &dir, &sections), "lib.c -ffunction-sections");
    let mut collected = Vec::new();
    for (linker, flag) in [("gc-ours", Some(with_ours.as_str())), ("gc-bfd", None)] {
        let lib_dir = dir.join(linker);
        std::fs::create_dir_all(&lib_dir).unwrap();
        let library = lib_dir.join("libdemo.so").display().to_string();
        let mut arguments: Vec<&str> = flag.into_iter().collect();
        arguments.extend(["-shared", "-Wl,--gc-sections", "lib-sections.o", "-o", &library]);
        succeeded(&run_in("gcc", &dir, &arguments), &format!("--gc-sections ({linker})"));
        let program = lib_dir.join("program").display().to_string();
        let (search, rpath) = (
            format!("-L{}", lib_dir.display()),
            format!("-Wl,-rpath,{}", lib_dir.display()),
        );
        succeeded(
            &run_in("gcc", &dir, &["main.o", &search, "-ldemo", &rpath, "-o", &program]),
            "main.o",
        );
        collected.push((
            exported(Path::new(&library)),
            run_program(Path::new(&program), &[], &[]),
        ));
    }
    assert_eq!(collected[0], collected[1]);
    assert_eq!(collected[0].1, plain.1);

    // What a library asks of the loader: the same DT_FLAGS_1 as ld.bfd's.
    for request in ["nodelete", "nodlopen", "initfirst", "interpose"] {
        let option = format!("-Wl,-z,{request}");
        let mut flags = Vec::new();
        for (name, flag) in [("libz-ours.so", Some(with_ours.as_str())), ("libz-bfd.so", None)] {
            let mut arguments: Vec<&str> = flag.into_iter().collect();
            arguments.extend(["-shared", &option, "lib.o", "-o", name]);
            succeeded(&run_in("gcc", &dir, &arguments), &option);
            flags.push(dynamic_entries(&dir.join(name), &["FLAGS_1"]));
        }
        assert_eq!(flags[0], flags[1], "{request}");
        assert_eq!(flags[0].len(), 1, "{request}");
    }

    // `-z defs` (`--no-undefined`): the reference the library leaves to the program is an error, as with
    // ld.bfd; nothing is written.
    for option in ["-Wl,-z,defs", "-Wl,--no-undefined"] {
        let refused = run_in(
            "gcc",
            &dir,
            &[&with_ours, "-shared", option, "lib.o", "-o", "libnever.so"],
        );
        assert!(!refused.status.success(), "{option}");
        assert!(
            text(&refused.stderr)
                .contains("in function `ask_the_program': undefined reference to `provided_by_the_program'"),
            "{option}: {}",
            text(&refused.stderr)
        );
        assert!(!dir.join("libnever.so").exists());
        assert!(
            !run_in("gcc", &dir, &["-shared", option, "lib.o", "-o", "libbfd-never.so"])
                .status
                .success()
        );
    }
}

#[test]
fn a_cxx_exception_and_rtti_cross_the_boundary_of_a_library_we_link() {
    let (dir, with_ours) = workspace(&scratch!("shared-cxx"));
    let include = format!("-I{}", repo().join("tests/fixtures/shared").display());
    succeeded(
        &run_in(
            "g++",
            &dir,
            &["-O2", "-fPIC", &include, "-c", &fixture("cxxlib.cc"), "-o", "cxxlib.o"],
        ),
        "cxxlib.cc",
    );
    succeeded(
        &run_in(
            "g++",
            &dir,
            &["-O2", &include, "-c", &fixture("cxxmain.cc"), "-o", "cxxmain.o"],
        ),
        "cxxmain.cc",
    );
    let mut printed = Vec::new();
    for (linker, flag) in [("ours", Some(with_ours.as_str())), ("bfd", None)] {
        let lib_dir = dir.join(linker);
        std::fs::create_dir_all(&lib_dir).unwrap();
        let library = lib_dir.join("libshapes.so").display().to_string();
        let mut arguments: Vec<&str> = flag.into_iter().collect();
        arguments.extend(["-shared", "cxxlib.o", "-o", &library]);
        succeeded(&run_in("g++", &dir, &arguments), &format!("g++ -shared ({linker})"));
        let program = lib_dir.join("program").display().to_string();
        let search = format!("-L{}", lib_dir.display());
        let rpath = format!("-Wl,-rpath,{}", lib_dir.display());
        succeeded(
            &run_in("g++", &dir, &["cxxmain.o", &search, "-lshapes", &rpath, "-o", &program]),
            "g++ cxxmain.o",
        );
        printed.push(run_program(Path::new(&program), &[], &[]));
        assert_eq!(
            exported(&lib_dir.join("libshapes.so")).len(),
            exported(&dir.join("ours/libshapes.so")).len()
        );
    }
    assert_eq!(printed[0], printed[1]);
    assert_eq!(
        printed[0].0,
        "derived, a Derived: 1, typeid: 1\ncaught: the library says: thrown across the boundary\n"
    );
    assert_eq!(
        exported(&dir.join("ours/libshapes.so")),
        exported(&dir.join("bfd/libshapes.so"))
    );
}

#[test]
fn what_a_library_cannot_have_or_without_fpic_is_refused_naming_it() {
    let (dir, with_ours) = workspace(&scratch!("shared-refused"));
    // A local-exec access (an offset from the thread pointer fixed at link time), which a library cannot
    // have: the loader places its TLS block.
    std::fs::write(
        dir.join("tls.c"),
        "__attribute__((tls_model(\"local-exec\"))) __thread int counter = 5;\nint next(void) { return ++counter; }\n",
    )
    .unwrap();
    succeeded(
        &run_in("gcc", &dir, &["-O2", "-fPIC", "-c", "tls.c", "-o", "tls.o"]),
        "tls.c",
    );
    let refused = run_in("gcc", &dir, &[&with_ours, "-shared", "tls.o", "-o", "libtls.so"]);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains(
            "tls.o(.text+0x4): relocation R_X86_64_TPOFF32 against `counter`: a local-exec access to a \
             thread-local variable cannot be used when making a shared library; recompile with -fPIC"
        ),
        "{}",
        text(&refused.stderr)
    );
    assert!(!dir.join("libtls.so").exists());

    // Code built without -fPIC: refused as a shared library's, naming the option; an address in a read-only
    // section only with -z notext, which then writes the text relocation as ld.bfd does.
    std::fs::write(
        dir.join("table.c"),
        "int f(void) { return 3; }\n__asm__(\".section .rodata.t,\\\"a\\\"\\n.globl tab\\n.p2align \
         3\\ntab: .quad f\\n.previous\\n\");\n",
    )
    .unwrap();
    succeeded(
        &run_in("gcc", &dir, &["-O2", "-fPIC", "-c", "table.c", "-o", "table.o"]),
        "table.c",
    );
    let refused = run_in("gcc", &dir, &[&with_ours, "-shared", "table.o", "-o", "libtable.so"]);
    assert!(
        text(&refused.stderr).contains("relocation R_X86_64_64 against `f`, which the library exports"),
        "{}",
        text(&refused.stderr)
    );
    assert!(text(&refused.stderr).contains("cannot be used when making a shared library; recompile with -fPIC"));
    for (output, flag) in [
        ("libtable-ours.so", Some(with_ours.as_str())),
        ("libtable-bfd.so", None),
    ] {
        let mut arguments: Vec<&str> = flag.into_iter().collect();
        arguments.extend(["-shared", "-Wl,-z,notext", "table.o", "-o", output]);
        succeeded(&run_in("gcc", &dir, &arguments), output);
    }
    let tags = ["TEXTREL", "FLAGS"];
    assert_eq!(
        dynamic_entries(&dir.join("libtable-ours.so"), &tags),
        dynamic_entries(&dir.join("libtable-bfd.so"), &tags)
    );
}

#[test]
fn an_aarch64_shared_library_runs_under_qemu_like_ld_bfds() {
    use neverc_test_support::cross::{AARCH64, run_program as run_on};
    let (dir, with_ours) = workspace(&scratch!("shared-aarch64"));
    for (source, object, extra) in [("lib.c", "lib.o", &["-fPIC"][..]), ("main.c", "main.o", &[][..])] {
        let compiled = run_in(
            AARCH64.gcc,
            &dir,
            &[&["-O2", "-c", &fixture(source), "-o", object][..], extra].concat(),
        );
        succeeded(&compiled, source);
    }
    let mut printed = Vec::new();
    for (linker, flag) in [("ours", Some(with_ours.as_str())), ("bfd", None)] {
        let lib_dir = dir.join(linker);
        std::fs::create_dir_all(&lib_dir).unwrap();
        let library = lib_dir.join("libdemo.so").display().to_string();
        let mut arguments: Vec<&str> = flag.into_iter().collect();
        arguments.extend(["-shared", "lib.o", "-o", &library]);
        succeeded(&run_in(AARCH64.gcc, &dir, &arguments), &format!("-shared ({linker})"));
        let program = lib_dir.join("program").display().to_string();
        let search = format!("-L{}", lib_dir.display());
        let rpath = format!("-Wl,-rpath,{}", lib_dir.display());
        succeeded(
            &run_in(
                AARCH64.gcc,
                &dir,
                &["main.o", &search, "-ldemo", &rpath, "-o", &program],
            ),
            "main.o -ldemo",
        );
        printed.push(run_on(&AARCH64, Path::new(&program)));
    }
    assert_eq!(printed[0], printed[1]);
    assert!(printed[0].0.contains("table 10 6 10"), "{:?}", printed[0]);
    assert_eq!(
        exported(&dir.join("ours/libdemo.so")),
        exported(&dir.join("bfd/libdemo.so"))
    );

    // C++: an exception thrown in the library and caught in the program, RTTI across the boundary.
    let include = format!("-I{}", repo().join("tests/fixtures/shared").display());
    let gxx = "aarch64-linux-gnu-g++";
    for (source, object, extra) in [
        ("cxxlib.cc", "cxxlib.o", &["-fPIC"][..]),
        ("cxxmain.cc", "cxxmain.o", &[][..]),
    ] {
        let compiled = run_in(
            gxx,
            &dir,
            &[&["-O2", &include, "-c", &fixture(source), "-o", object][..], extra].concat(),
        );
        succeeded(&compiled, source);
    }
    let mut printed = Vec::new();
    for (linker, flag) in [("ours", Some(with_ours.as_str())), ("bfd", None)] {
        let lib_dir = dir.join(format!("cxx-{linker}"));
        std::fs::create_dir_all(&lib_dir).unwrap();
        let library = lib_dir.join("libshapes.so").display().to_string();
        let mut arguments: Vec<&str> = flag.into_iter().collect();
        arguments.extend(["-shared", "cxxlib.o", "-o", &library]);
        succeeded(&run_in(gxx, &dir, &arguments), &format!("g++ -shared ({linker})"));
        let program = lib_dir.join("program").display().to_string();
        let rpath = format!("-Wl,-rpath,{}", lib_dir.display());
        let mut arguments: Vec<&str> = flag.into_iter().collect();
        arguments.extend(["cxxmain.o", &library, &rpath, "-o", &program]);
        succeeded(&run_in(gxx, &dir, &arguments), &format!("g++ cxxmain.o ({linker})"));
        printed.push(run_on(&AARCH64, Path::new(&program)));
    }
    assert_eq!(printed[0], printed[1]);
    assert_eq!(
        printed[0].0,
        "derived, a Derived: 1, typeid: 1\ncaught: the library says: thrown across the boundary\n"
    );
    assert_eq!(
        exported(&dir.join("cxx-ours/libshapes.so")),
        exported(&dir.join("cxx-bfd/libshapes.so"))
    );
}

#[test]
fn exclude_libs_keeps_what_the_archives_named_define_in_the_library_as_ld_bfd_does() {
    let (dir, with_ours) = workspace(&scratch!("shared-exclude"));
    std::fs::write(dir.join("helper.c"), "int helper(int x) { return x + 100; }\n").unwrap();
    std::fs::write(
        dir.join("user.c"),
        "int helper(int);\nint use_helper(int x) { return helper(x); }\n",
    )
    .unwrap();
    succeeded(
        &run_in("gcc", &dir, &["-O2", "-fPIC", "-c", "helper.c", "user.c"]),
        "gcc -c",
    );
    succeeded(&run_in("ar", &dir, &["rcs", "libhelper.a", "helper.o"]), "ar");
    for (option, exported_helper) in [
        (None, true),
        (Some("-Wl,--exclude-libs=libhelper.a"), false),
        (Some("-Wl,--exclude-libs,ALL"), false),
        (Some("-Wl,--exclude-libs=libother.a:libz.a"), true),
    ] {
        let mut names = Vec::new();
        for (output, flag) in [("libours.so", Some(with_ours.as_str())), ("libbfd.so", None)] {
            let mut arguments: Vec<&str> = flag.into_iter().chain(option).collect();
            arguments.extend(["-shared", "user.o", "-L.", "-lhelper", "-o", output]);
            succeeded(&run_in("gcc", &dir, &arguments), &format!("{option:?}"));
            names.push(exported(&dir.join(output)));
        }
        assert_eq!(names[0], names[1], "{option:?}");
        assert_eq!(
            names[0].contains(&"FUNC GLOBAL DEFAULT helper".to_string()),
            exported_helper,
            "{option:?}: {:?}",
            names[0]
        );
        // Excluded, it is a local symbol of the library, as in ld.bfd's.
        let symbols = readelf(&["-sW"], &dir.join("libours.so"));
        let binding = if exported_helper { "GLOBAL" } else { "LOCAL" };
        assert!(
            symbols
                .lines()
                .any(|line| line.ends_with(" helper") && line.contains(&format!("FUNC    {binding} "))),
            "{option:?}: {symbols}"
        );
    }
}

#[test]
fn version_scripts_and_symver_version_a_library_as_ld_bfd_does() {
    let (dir, with_ours) = workspace(&scratch!("shared-versions"));
    for (compiler, source, object, flags) in [
        ("gcc", "versions.c", "versions.o", &["-fPIC"][..]),
        ("g++", "versions.cc", "versions_cc.o", &["-fPIC"][..]),
        ("gcc", "versions_v1.c", "versions_v1.o", &["-fPIC"][..]),
        ("gcc", "versions_v1.c", "old_main.o", &["-DPROGRAM"][..]),
        ("gcc", "versions_main.c", "new_main.o", &[][..]),
    ] {
        let compiled = run_in(
            compiler,
            &dir,
            &[&["-O2", "-c", &fixture(source), "-o", object][..], flags].concat(),
        );
        succeeded(&compiled, source);
    }
    // The first release and the current one of libversions.so.1, and a program linked against each, by
    // each linker.
    let map = |name: &str| format!("-Wl,--version-script={}", fixture(name));
    for (linker, flag) in [("ours", Some(with_ours.as_str())), ("bfd", None)] {
        for (release, objects, script, program) in [
            ("old", &["versions_v1.o"][..], map("versions_v1.map"), "old_main.o"),
            (
                "new",
                &["versions.o", "versions_cc.o"][..],
                map("versions.map"),
                "new_main.o",
            ),
        ] {
            let lib_dir = dir.join(linker).join(release);
            std::fs::create_dir_all(&lib_dir).unwrap();
            let library = lib_dir.join("libversions.so.1").display().to_string();
            let mut arguments: Vec<&str> = flag.into_iter().collect();
            arguments.extend(["-shared", "-Wl,-soname,libversions.so.1", &script, "-o", &library]);
            arguments.extend(objects);
            succeeded(
                &run_in("gcc", &dir, &arguments),
                &format!("the {release} library ({linker})"),
            );
            let output = dir
                .join(linker)
                .join(format!("{release}-program"))
                .display()
                .to_string();
            let mut arguments: Vec<&str> = flag.into_iter().collect();
            arguments.extend([program, &library, "-o", &output]);
            succeeded(
                &run_in("gcc", &dir, &arguments),
                &format!("the {release} program ({linker})"),
            );
        }
    }
    // What each library exports, in which versions, and the versions it defines, are ld.bfd's.
    for release in ["old", "new"] {
        let library = |linker: &str| dir.join(linker).join(release).join("libversions.so.1");
        assert_eq!(exported(&library("ours")), exported(&library("bfd")), "{release}");
        assert_eq!(
            version_definitions(&library("ours")),
            version_definitions(&library("bfd")),
            "{release}"
        );
    }
    let exports = exported(&dir.join("ours/new/libversions.so.1"));
    for expected in [
        "FUNC GLOBAL DEFAULT compat@V1",
        "FUNC GLOBAL DEFAULT compat@@V2",
        "FUNC GLOBAL DEFAULT three@@V3",
        "FUNC GLOBAL DEFAULT _ZN2ns5scaleEi@@V3",
        "OBJECT GLOBAL DEFAULT data_x@@V1",
        "OBJECT GLOBAL DEFAULT V2",
    ] {
        assert!(
            exports.iter().any(|entry| entry == expected),
            "{expected} in {exports:?}"
        );
    }
    assert!(
        !exports
            .iter()
            .any(|entry| entry.contains("hidden_helper") || entry.contains("internal") || entry.contains("_compat")),
        "{exports:?}"
    );
    assert_eq!(
        version_definitions(&dir.join("ours/new/libversions.so.1")),
        [
            "Rev: 1  Flags: BASE  Index: 1  Cnt: 1  Name: libversions.so.1",
            "Rev: 1  Flags: none  Index: 2  Cnt: 1  Name: V1",
            "Rev: 1  Flags: none  Index: 3  Cnt: 2  Name: V2",
            "Parent 1: V1",
            "Rev: 1  Flags: none  Index: 4  Cnt: 2  Name: V3",
            "Parent 1: V2",
        ]
    );
    // Every program with every library of its release or later: one linked against the first release keeps
    // the first `compat` (its hidden version V1), a new one binds to the default V2.
    for program_linker in ["ours", "bfd"] {
        for library_linker in ["ours", "bfd"] {
            for (program, release, expected) in [
                ("old-program", "old", "one 1 compat 6 data 5\n"),
                ("old-program", "new", "one 1 compat 6 data 5\n"),
                ("new-program", "new", "one 1 two 2 three 3 compat 7 data 5\n"),
            ] {
                let libraries = dir.join(library_linker).join(release).display().to_string();
                let ran = run_program(
                    &dir.join(program_linker).join(program),
                    &[],
                    &[("LD_LIBRARY_PATH", &libraries)],
                );
                assert_eq!(
                    ran,
                    (expected.to_string(), String::new(), Some(0)),
                    "{program_linker}'s {program} with {library_linker}'s {release} library"
                );
            }
        }
    }
    // A `.symver` version the script does not define is an error naming the symbol, as in GNU ld.
    let refused = run_in(
        "gcc",
        &dir,
        &[
            &with_ours,
            "-shared",
            "versions.o",
            &map("versions_v1.map"),
            "-o",
            "refused.so",
        ],
    );
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("version node not found for symbol `compat@@V2`"),
        "{}",
        text(&refused.stderr)
    );
    assert!(!dir.join("refused.so").exists());
    // `--no-undefined-version` (what rustc passes): a name the script gives exactly that nothing defines is an
    // error, as in GNU ld; without it, the name is ignored.
    std::fs::write(
        dir.join("missing.map"),
        "V1 { global: one; missing_function; local: *; };\n",
    )
    .unwrap();
    let script = format!("-Wl,--version-script={}", dir.join("missing.map").display());
    let strict = run_in(
        "gcc",
        &dir,
        &[
            &with_ours,
            "-shared",
            "versions_v1.o",
            &script,
            "-Wl,--no-undefined-version",
            "-o",
            "strict.so",
        ],
    );
    assert!(!strict.status.success());
    assert!(
        text(&strict.stderr)
            .contains("version script assignment of `V1` to symbol `missing_function` failed: symbol not defined"),
        "{}",
        text(&strict.stderr)
    );
    let lenient = run_in(
        "gcc",
        &dir,
        &[&with_ours, "-shared", "versions_v1.o", &script, "-o", "lenient.so"],
    );
    assert!(lenient.status.success(), "{}", text(&lenient.stderr));
}

#[test]
fn indirect_functions_of_a_library_resolve_and_keep_one_address_as_ld_bfds_do() {
    let (dir, with_ours) = workspace(&scratch!("shared-ifunc"));
    succeeded(
        &run_in(
            "gcc",
            &dir,
            &["-O2", "-fPIC", "-c", &fixture("ifunc.c"), "-o", "ifunc.o"],
        ),
        "ifunc.c",
    );
    succeeded(
        &run_in("gcc", &dir, &["-O2", "-c", &fixture("ifunc_main.c"), "-o", "main.o"]),
        "ifunc_main.c",
    );
    for (linker, flag) in [("ours", Some(with_ours.as_str())), ("bfd", None)] {
        let lib_dir = dir.join(linker);
        std::fs::create_dir_all(&lib_dir).unwrap();
        let library = lib_dir.join("libifunc.so").display().to_string();
        let mut arguments: Vec<&str> = flag.into_iter().collect();
        arguments.extend(["-shared", "ifunc.o", "-o", &library]);
        succeeded(&run_in("gcc", &dir, &arguments), &format!("gcc -shared ({linker})"));
        let program = lib_dir.join("program").display().to_string();
        let rpath = format!("-Wl,-rpath,{}", lib_dir.display());
        let mut arguments: Vec<&str> = flag.into_iter().collect();
        arguments.extend(["main.o", &library, &rpath, "-o", &program]);
        succeeded(&run_in("gcc", &dir, &arguments), &format!("the program ({linker})"));
        for environment in [&[][..], &[("LD_BIND_NOW", "1")][..]] {
            assert_eq!(
                run_program(Path::new(&program), &[], environment),
                ("add 2 both 23 same 1 hidden 7\n".to_string(), String::new(), Some(0)),
                "{linker} {environment:?}"
            );
        }
    }
    // `add` is exported as an indirect function; the library marks itself as following the GNU ABI.
    let ours = dir.join("ours/libifunc.so");
    assert_eq!(exported(&ours), exported(&dir.join("bfd/libifunc.so")));
    assert!(exported(&ours).contains(&"IFUNC GLOBAL DEFAULT add".to_string()));
    assert!(readelf(&["-h"], &ours).contains("UNIX - GNU"));
}

#[test]
fn thread_local_variables_of_a_library_keep_their_models_and_run_like_ld_bfds() {
    use neverc_test_support::cross::{AARCH64, Arch, X86_64};
    let (dir, with_ours) = workspace(&scratch!("shared-tls-models"));
    // x86-64 with GNU's dialect (general- and local-dynamic through __tls_get_addr) and with descriptors
    // (-mtls-dialect=gnu2); AArch64 with its default, descriptors.
    let cases: [(&Arch, &str, &[&str]); 3] = [
        (&X86_64, "x86_64", &[]),
        (&X86_64, "x86_64-gnu2", &["-mtls-dialect=gnu2"]),
        (&AARCH64, "aarch64", &[]),
    ];
    for (arch, name, flags) in cases {
        let case = dir.join(name);
        std::fs::create_dir_all(&case).unwrap();
        let source = fixture("tls.c");
        let library_object = [&["-O2", "-fPIC", "-c", &source, "-o", "tls.o"][..], flags].concat();
        succeeded(&run_in(arch.gcc, &case, &library_object), "tls.c");
        succeeded(
            &run_in(arch.gcc, &case, &["-O2", "-c", &fixture("tls_main.c"), "-o", "main.o"]),
            "tls_main.c",
        );
        let mut printed = Vec::new();
        for (linker, flag) in [("ours", Some(with_ours.as_str())), ("bfd", None)] {
            let lib_dir = case.join(linker);
            std::fs::create_dir_all(&lib_dir).unwrap();
            let library = lib_dir.join("libtls.so").display().to_string();
            let mut arguments: Vec<&str> = flag.into_iter().collect();
            arguments.extend(["-shared", "tls.o", "-o", &library]);
            succeeded(
                &run_in(arch.gcc, &case, &arguments),
                &format!("{name}: gcc -shared ({linker})"),
            );
            let program = lib_dir.join("program").display().to_string();
            let rpath = format!("-Wl,-rpath,{}", lib_dir.display());
            let mut arguments: Vec<&str> = flag.into_iter().collect();
            arguments.extend(["main.o", &library, &rpath, "-lpthread", "-o", &program]);
            succeeded(
                &run_in(arch.gcc, &case, &arguments),
                &format!("{name}: the program ({linker})"),
            );
            for bind_now in [false, true] {
                let environment: &[(&str, &str)] = if bind_now { &[("LD_BIND_NOW", "1")] } else { &[] };
                // The runner (qemu-aarch64) passes the environment on to the program.
                let ran = match arch.runner.split_first() {
                    Some((runner, rest)) => {
                        let arguments: Vec<&str> = rest.iter().copied().chain([program.as_str()]).collect();
                        run_program(Path::new(runner), &arguments, environment)
                    }
                    None => run_program(Path::new(&program), &[], environment),
                };
                printed.push((linker, bind_now, ran));
            }
        }
        let (_, _, expected) = &printed[printed.len() - 1];
        assert!(
            expected.0.contains("main again: 7 11"),
            "{name}: ld.bfd's build printed {expected:?}"
        );
        for (linker, bind_now, ran) in &printed {
            assert_eq!(ran, expected, "{name}: {linker}'s, LD_BIND_NOW={bind_now}");
        }
        // The initial-exec access makes the library need static TLS (ld.bfd marks it so on x86-64 only, as
        // ld.lld does on both); the libraries export the same variables.
        let library = |linker: &str| case.join(linker).join("libtls.so");
        let readelf = format!("{}readelf", arch.binutils);
        let flags = |linker: &str| {
            text(&run_in(&readelf, &case, &["-dW", &library(linker).display().to_string()]).stdout)
                .lines()
                .filter(|line| line.contains("(FLAGS)"))
                .map(|line| line.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
                .collect::<Vec<_>>()
        };
        assert_eq!(flags("ours"), ["(FLAGS) STATIC_TLS"], "{name}");
        if arch.name == "x86_64" {
            assert_eq!(flags("ours"), flags("bfd"), "{name}");
            assert_eq!(exported(&library("ours")), exported(&library("bfd")), "{name}");
        }
    }
    // A program that loads the library with dlopen (its TLS block allocated then) runs as with ld.bfd's.
    let loader = dir.join("dlopen.c");
    std::fs::write(
        &loader,
        "#include <dlfcn.h>\n#include <stdio.h>\n__thread int program_tls = 21;\nint main(int argc, char **argv) {\n\
         void *library = dlopen(argv[1], RTLD_NOW);\n  if (!library) { puts(dlerror()); return 1; }\n\
         int (*next)(void) = (int (*)(void))dlsym(library, \"next\");\n\
         int (*locals)(void) = (int (*)(void))dlsym(library, \"locals\");\n\
         printf(\"%d %d %d\\n\", next(), next(), locals());\n  return argc - 2;\n}\n",
    )
    .unwrap();
    succeeded(
        &run_in("gcc", &dir, &["dlopen.c", "-rdynamic", "-o", "loader"]),
        "dlopen.c",
    );
    for case in ["x86_64", "x86_64-gnu2"] {
        let library = dir.join(case).join("ours/libtls.so").display().to_string();
        assert_eq!(
            run_program(&dir.join("loader"), &[&library], &[]),
            ("7 6 112\n".to_string(), String::new(), Some(0)),
            "{case}"
        );
    }
}

/// A CPython extension module from a real package: markupsafe's `_speedups` (its C source, from PyPI),
/// built by `python3 setup.py build_ext` with neverc-spec as the linker of `LDSHARED`, is imported by python3,
/// and markupsafe's own tests pass with it (they run each test with the native module and with the
/// extension).
#[test]
fn a_cpython_extension_module_we_link_passes_its_packages_tests() {
    let (dir, with_ours) = workspace(&scratch!("shared-cpython"));
    let package = "markupsafe-3.0.2";
    let fetched = run_in(
        "python3",
        &dir,
        &[
            "-m",
            "pip",
            "download",
            "--no-binary",
            ":all:",
            "--no-deps",
            "markupsafe==3.0.2",
            "-d",
            ".",
        ],
    );
    succeeded(&fetched, "pip download markupsafe (PyPI)");
    succeeded(&run_in("tar", &dir, &["xzf", &format!("{package}.tar.gz")]), "tar");
    let installed = run_in(
        "python3",
        &dir,
        &["-m", "pip", "install", "--quiet", "--target", "site", "pytest==8.3.4"],
    );
    succeeded(&installed, "pip install pytest (PyPI)");
    let source = dir.join(package);
    let built = std::process::Command::new("python3")
        .args(["setup.py", "build_ext", "--inplace"])
        .env("LDSHARED", format!("gcc {with_ours} -shared -Wl,-v"))
        .current_dir(&source)
        .output()
        .unwrap();
    let log = format!("{}{}", text(&built.stdout), text(&built.stderr));
    assert!(built.status.success(), "{log}");
    assert!(
        log.contains("neverc-spec"),
        "the extension was not linked by neverc-spec:\n{log}"
    );
    let python_path = format!("{}:{}", dir.join("site").display(), source.join("src").display());
    let python = |arguments: &[&str]| {
        std::process::Command::new("python3")
            .args(arguments)
            .env("PYTHONPATH", &python_path)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .current_dir(&source)
            .output()
            .unwrap()
    };
    let imported = python(&[
        "-c",
        "from markupsafe import _speedups, escape; print(_speedups.__file__); print(escape('<a href=\"x\">&</a>'))",
    ]);
    assert!(imported.status.success(), "{}", text(&imported.stderr));
    let printed = text(&imported.stdout);
    assert!(
        printed.contains(&source.join("src/markupsafe/_speedups").display().to_string())
            && printed.contains("&lt;a href=&#34;x&#34;&gt;&amp;&lt;/a&gt;"),
        "{printed}"
    );
    let tests = python(&["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]);
    let report = text(&tests.stdout);
    assert!(tests.status.success(), "{report}{}", text(&tests.stderr));
    assert!(
        report.contains(" passed") && !report.contains("failed") && !report.contains("skipped"),
        "{report}"
    );
}
