#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The `ld` driver: neverc-spec invoked as `ld` by compiler drivers (`gcc -static -B DIR`, `musl-gcc -static
//! -B DIR`, `clang-14 --ld-path`) and as `neverc-spec ld`, with GNU ld's command line. The oracles are ld.bfd
//! (what a program linked by it prints, which archive orders it refuses), ld.lld (which orders it accepts)
//! and running the programs.
//!
//! The freestanding fixtures are in `tests/fixtures/ld/` (no libc: `start.c` is `_start` and `say`).

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use neverc_test_support::{repo, scratch, succeeded, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

/// Flags for every freestanding translation unit (as the link fixture programs use).
const FREESTANDING: [&str; 6] = [
    "-O2",
    "-ffreestanding",
    "-fno-stack-protector",
    "-fcf-protection=none",
    "-fno-asynchronous-unwind-tables",
    "-fno-builtin",
];

fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures/ld").join(name)
}

/// Runs `program` with `args` in `dir`; a program that cannot be started panics naming it.
fn run(program: impl AsRef<std::ffi::OsStr>, dir: &Path, args: &[&str]) -> Output {
    let program = program.as_ref();
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", program.to_string_lossy()))
}

/// What a program prints and its exit status.
fn outcome(program: &Path, args: &[&str]) -> (String, Option<i32>) {
    let output = run(program, program.parent().unwrap(), args);
    (text(&output.stdout), output.status.code())
}

/// The freestanding objects and archives, built once: `start.o main.o a.o a2.o b.o pick_main.o libm_main.o`,
/// `liba.a` (a.o a2.o), `libb.a` (b.o), and `one/libpick.a`, `two/libpick.a` (saying "one" and "two"),
/// `three/libpick.so` (a shared library only).
fn objects() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ld-driver-objects");
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let compile = |source: &str, object: &str, extra: &[&str]| {
            let output = Command::new("gcc")
                .args(FREESTANDING)
                .args(extra)
                .arg("-c")
                .arg(fixture(source))
                .arg("-o")
                .arg(object)
                .current_dir(&dir)
                .output()
                .expect("gcc is installed");
            succeeded(&output, &format!("gcc -c {source}"));
        };
        for name in ["start", "main", "a", "a2", "b", "pick_main", "libm_main"] {
            compile(&format!("{name}.c"), &format!("{name}.o"), &[]);
        }
        let archive = |name: &str, members: &[&str]| {
            let output = run("ar", &dir, &[&["rcD", name][..], members].concat());
            succeeded(&output, &format!("ar {name}"));
        };
        archive("liba.a", &["a.o", "a2.o"]);
        archive("libb.a", &["b.o"]);
        for which in ["one", "two"] {
            fs::create_dir_all(dir.join(which)).unwrap();
            compile(
                "pick.c",
                &format!("{which}/pick.o"),
                &[&format!("-DPICK=\"{which}\\n\"")],
            );
            archive(&format!("{which}/libpick.a"), &[&format!("{which}/pick.o")]);
        }
        fs::create_dir_all(dir.join("three")).unwrap();
        let output = Command::new("gcc")
            .args([
                "-shared",
                "-fPIC",
                "-nostdlib",
                "-DPICK=\"three\\n\"",
                "-o",
                "three/libpick.so",
            ])
            .arg(fixture("pick.c"))
            .current_dir(&dir)
            .output()
            .unwrap();
        succeeded(&output, "gcc -shared libpick.so");
        dir
    })
}

/// A fresh directory holding `ld`, a symbolic link to neverc-spec: what `gcc -B` is pointed at.
fn ld_dir(name: &str) -> PathBuf {
    let dir = fresh(name).join("bin");
    fs::create_dir_all(&dir).unwrap();
    symlink(BIN, dir.join("ld")).unwrap();
    dir
}

fn fresh(name: &str) -> PathBuf {
    scratch!("ld-driver-{name}")
}

/// `neverc-spec ld ARGS` in the objects directory.
fn ld(args: &[&str]) -> Output {
    run(BIN, objects(), &[&["ld"], args].concat())
}

/// The driver ran: the link was given `-Wl,-v`, to which neverc-spec answers with its name (GNU ld's `-v`
/// prints its version and links), and, there being no GCC LTO bytecode among the inputs, nothing was said
/// about gcc's LTO plugin, which gcc passes on every link.
fn driver_ran(output: &Output) -> bool {
    text(&output.stdout).contains("neverc-spec") && !text(&output.stderr).contains("note: neverc-spec ld: ignoring")
}

#[test]
fn gcc_dash_b_links_freestanding_objects_through_the_driver_and_they_run_as_ld_bfd_links_them() {
    let dir = ld_dir("gcc-freestanding");
    let out = dir.parent().unwrap();
    let sources: Vec<String> = ["start.c", "main.c", "a.c", "a2.c", "b.c"]
        .iter()
        .map(|name| fixture(name).display().to_string())
        .collect();
    let gcc = |linker: &[&str], extra: &[&str], output: &str| {
        let mut args: Vec<&str> = FREESTANDING.to_vec();
        args.extend(["-nostdlib", "-static", "-o", output]);
        args.extend(linker);
        args.extend(extra);
        args.extend(sources.iter().map(String::as_str));
        run("gcc", out, &args)
    };
    let reference = gcc(&["-fuse-ld=bfd"], &[], "ref");
    succeeded(&reference, "gcc -fuse-ld=bfd");
    let expected = outcome(&out.join("ref"), &[]);
    assert_eq!(expected, ("main\na\nb\na2\n".to_string(), Some(7)));
    let dash_b = dir.display().to_string();
    for extra in [
        &[][..],
        &["-Wl,--gc-sections"],
        &["-Wl,--gc-sections,--icf=all,-O1,-z,relro"],
    ] {
        let linked = gcc(&["-B", &dash_b, "-Wl,-v"], extra, "prog");
        succeeded(&linked, &format!("gcc -B {dash_b} {extra:?}"));
        assert!(driver_ran(&linked), "{}", text(&linked.stderr));
        assert_eq!(outcome(&out.join("prog"), &[]), expected, "{extra:?}");
    }
    // clang-14 names the linker by path.
    let ld_path = format!("--ld-path={}", dir.join("ld").display());
    let mut args: Vec<&str> = FREESTANDING.to_vec();
    args.extend(["-nostdlib", "-static", "-o", "clang-prog", &ld_path]);
    args.extend(sources.iter().map(String::as_str));
    let linked = run("clang-14", out, &args);
    succeeded(&linked, "clang-14 --ld-path");
    assert_eq!(outcome(&out.join("clang-prog"), &[]), expected);
}

#[test]
fn musl_gcc_static_hello_world_with_lm_runs_and_prints_what_the_ld_bfd_build_prints() {
    let dir = ld_dir("musl");
    let out = dir.parent().unwrap();
    let hello = fixture("hello.c").display().to_string();
    let reference = run(
        "musl-gcc",
        out,
        &["-static", "-O2", "-fuse-ld=bfd", "-o", "ref", &hello, "-lm"],
    );
    succeeded(&reference, "musl-gcc -fuse-ld=bfd");
    let dash_b = dir.display().to_string();
    // musl-gcc passes -dynamic-linker with -static; as ld.bfd does, the driver ignores it for a static output.
    for extra in [&[][..], &["-Wl,--gc-sections"]] {
        let args = [
            &["-static", "-O2", "-B", &dash_b, "-Wl,-v", "-o", "prog", &hello, "-lm"][..],
            extra,
        ]
        .concat();
        let linked = run("musl-gcc", out, &args);
        succeeded(&linked, &format!("musl-gcc -B {extra:?}"));
        assert!(driver_ran(&linked), "{}", text(&linked.stderr));
        for args in [&[][..], &["world"]] {
            let expected = outcome(&out.join("ref"), args);
            assert!(expected.0.starts_with("hello, "), "{expected:?}");
            assert_eq!(outcome(&out.join("prog"), args), expected, "{extra:?} {args:?}");
        }
    }
}

#[test]
fn gcc_and_gxx_static_against_glibc_link_through_the_driver_and_run_like_the_ld_bfd_builds() {
    let dir = ld_dir("glibc");
    let out = dir.parent().unwrap();
    let dash_b = dir.display().to_string();
    let hello = fixture("hello.c").display().to_string();
    let cxx: Vec<String> = ["cxx_main.cc", "cxx_shapes.cc", "cxx_area.cc", "cxx_validate.cc"]
        .iter()
        .map(|name| repo().join("tests/fixtures/libc").join(name).display().to_string())
        .collect();
    let cxx: Vec<&str> = cxx.iter().map(String::as_str).collect();
    for (driver, name, sources, extra) in [
        ("gcc", "hello", vec![hello.as_str()], vec!["-lm"]),
        ("g++", "cxx", cxx.clone(), vec![]),
        ("g++", "cxx-gc", cxx, vec!["-ffunction-sections", "-Wl,--gc-sections"]),
    ] {
        let ours = format!("{name}-neverc");
        let linked = run(
            driver,
            out,
            &[
                &["-static", "-O2", "-B", &dash_b, "-Wl,-v", "-o", &ours][..],
                &sources,
                &extra,
            ]
            .concat(),
        );
        assert!(driver_ran(&linked), "{}", text(&linked.stderr));
        succeeded(&linked, &format!("{driver} -B (neverc-spec)"));
        let theirs = format!("{name}-bfd");
        let reference = run(
            driver,
            out,
            &[&["-static", "-O2", "-fuse-ld=bfd", "-o", &theirs][..], &sources, &extra].concat(),
        );
        succeeded(&reference, &format!("{driver} -fuse-ld=bfd"));
        assert_eq!(
            outcome(&out.join(&ours), &["glibc"]),
            outcome(&out.join(&theirs), &["glibc"]),
            "{name}"
        );
    }
}

/// The file offset and size of `section` in `program`, from `readelf -SW`.
fn section_range(program: &Path, section: &str) -> Option<(usize, usize)> {
    let listing = run(
        "readelf",
        program.parent().unwrap(),
        &["-SW", &program.display().to_string()],
    );
    text(&listing.stdout).lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let at = fields.iter().position(|field| *field == section)?;
        let hex = |field: &str| usize::from_str_radix(field, 16).ok();
        Some((hex(fields.get(at + 3)?)?, hex(fields.get(at + 4)?)?))
    })
}

#[test]
fn the_build_id_gcc_asks_for_is_a_sha1_of_the_image_and_links_are_deterministic() {
    let dir = ld_dir("build-id");
    let out = dir.parent().unwrap();
    let dash_b = dir.display().to_string();
    let hello = fixture("hello.c").display().to_string();
    // Debian's gcc passes --build-id to every link. Relocation is spread over the threads `--threads`
    // allows (every core by default): the output is the same with one thread or with more than the cores.
    for (name, optimization, threads) in [
        ("first", "-O2", "-Wl,--threads"),
        ("again", "-O2", "-Wl,--threads"),
        ("one-thread", "-O2", "-Wl,--no-threads"),
        ("five-threads", "-O2", "-Wl,--threads=5"),
        ("other", "-O0", "-Wl,--threads"),
    ] {
        let linked = run(
            "gcc",
            out,
            &[
                "-static",
                optimization,
                threads,
                "-B",
                &dash_b,
                "-o",
                name,
                &hello,
                "-lm",
            ],
        );
        succeeded(&linked, name);
    }
    let first = fs::read(out.join("first")).unwrap();
    for name in ["again", "one-thread", "five-threads"] {
        assert!(
            first == fs::read(out.join(name)).unwrap(),
            "{name}: two links of the same inputs differ"
        );
    }
    let (offset, size) = section_range(&out.join("first"), ".note.gnu.build-id").expect("a build-id note");
    assert_eq!(size, 36);
    let id = &first[offset + 16..offset + 36];
    // The ID is the SHA-1 of the image with the ID itself still zero (sha1sum is the oracle).
    let mut zeroed = first.clone();
    zeroed[offset + 16..offset + 36].fill(0);
    fs::write(out.join("zeroed"), &zeroed).unwrap();
    let sum = text(&run("sha1sum", out, &["zeroed"]).stdout);
    let hex: String = id.iter().map(|byte| format!("{byte:02x}")).collect();
    assert_eq!(sum.split_whitespace().next(), Some(hex.as_str()));
    let other = fs::read(out.join("other")).unwrap();
    let (other_offset, _) = section_range(&out.join("other"), ".note.gnu.build-id").unwrap();
    assert_ne!(&other[other_offset + 16..other_offset + 36], id);

    // An image larger than 1 MiB is hashed in 1 MiB pieces by the link's threads: its ID is the SHA-1 of the
    // pieces' SHA-1s (Python's hashlib is the oracle), the same with one thread and with five.
    let big = out.join("big.c");
    fs::write(
        &big,
        "#include <stdio.h>\nchar table[3 << 20] = {1};\nint main(void) { printf(\"%d\\n\", table[0]); return 0; }\n",
    )
    .unwrap();
    let big = big.display().to_string();
    for (name, threads) in [("big-1", "-Wl,--threads=1"), ("big-5", "-Wl,--threads=5")] {
        let linked = run(
            "gcc",
            out,
            &["-static", "-O2", threads, "-B", &dash_b, "-o", name, &big],
        );
        succeeded(&linked, name);
    }
    let image = fs::read(out.join("big-1")).unwrap();
    assert!(image.len() > 3 << 20, "{} bytes", image.len());
    assert!(
        image == fs::read(out.join("big-5")).unwrap(),
        "one thread and five give different images"
    );
    let (offset, _) = section_range(&out.join("big-1"), ".note.gnu.build-id").expect("a build-id note");
    let mut zeroed = image.clone();
    zeroed[offset + 16..offset + 36].fill(0);
    fs::write(out.join("big-zeroed"), &zeroed).unwrap();
    let oracle = "import hashlib, sys\ndata = open(sys.argv[1], 'rb').read()\nprint(hashlib.sha1(b''.join(\
                  hashlib.sha1(data[i:i + (1 << 20)]).digest() for i in range(0, len(data), 1 << 20))).hexdigest())";
    let sum = text(&run("python3", out, &["-c", oracle, "big-zeroed"]).stdout);
    let hex: String = image[offset + 16..offset + 36]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    assert_eq!(sum.trim(), hex);
}

#[test]
fn strip_all_leaves_no_symbol_table_and_the_program_runs() {
    let dir = ld_dir("strip");
    let out = dir.parent().unwrap();
    let dash_b = dir.display().to_string();
    let hello = fixture("hello.c").display().to_string();
    for (name, strip) in [("full", None), ("stripped", Some("-s"))] {
        let mut args = vec!["-static", "-O2", "-B", &dash_b, "-o", name, &hello, "-lm"];
        args.extend(strip);
        succeeded(&run("gcc", out, &args), name);
    }
    assert!(section_range(&out.join("full"), ".symtab").is_some());
    assert!(section_range(&out.join("stripped"), ".symtab").is_none());
    assert_eq!(outcome(&out.join("stripped"), &[]), outcome(&out.join("full"), &[]));
}

#[test]
fn a_gnu_warning_section_warns_where_its_symbol_is_used() {
    let dir = ld_dir("warning");
    let out = dir.parent().unwrap();
    fs::write(
        out.join("gets.c"),
        "#include <stdio.h>\nchar *use(char *b) { return gets(b); }\nint main(void) { return 0; }\n",
    )
    .unwrap();
    let dash_b = dir.display().to_string();
    let linked = run(
        "gcc",
        out,
        &["-static", "-O2", "-w", "-B", &dash_b, "-o", "prog", "gets.c"],
    );
    succeeded(&linked, "gcc gets.c");
    let stderr = text(&linked.stderr);
    // glibc's `.gnu.warning.gets`, reported at the reference as ld.bfd reports it.
    assert!(
        stderr.contains("warning: ") && stderr.contains("the `gets' function is dangerous and should not be used."),
        "{stderr}"
    );
    assert!(stderr.contains(".o:.text"), "{stderr}");
    // A warning section the compiler made allocated is still only a message: it is not in the image.
    fs::write(
        out.join("lib.c"),
        "int old_api(void) { return 42; }\n\
         static const char w[] __attribute__((used, section(\".gnu.warning.old_api\"))) = \"old_api is obsolete\";\n",
    )
    .unwrap();
    fs::write(
        out.join("main.c"),
        "int old_api(void);\nint main(void) { return old_api(); }\n",
    )
    .unwrap();
    succeeded(&run("gcc", out, &["-O2", "-c", "lib.c", "main.c"]), "gcc -c");
    succeeded(&run("ar", out, &["rc", "libold.a", "lib.o"]), "ar");
    let linked = run(
        "gcc",
        out,
        &["-static", "-B", &dash_b, "-o", "old", "main.o", "-L.", "-lold"],
    );
    succeeded(&linked, "gcc main.o -lold");
    let stderr = text(&linked.stderr);
    assert!(
        stderr.contains("main.o:.text.startup+0x1: old_api is obsolete"),
        "{stderr}"
    );
    assert!(section_range(&out.join("old"), ".gnu.warning.old_api").is_none());
    assert_eq!(outcome(&out.join("old"), &[]).1, Some(42));
}

#[test]
fn archives_are_searched_as_lld_searches_them_whatever_their_order() {
    let dir = objects();
    let out = fresh("archive-order");
    let program = |name: &str| out.join(name).display().to_string();
    let grouped = program("grouped");
    // The reference: GNU ld with the archives grouped.
    let bfd = run(
        "ld.bfd",
        dir,
        &[
            "-static",
            "-o",
            &grouped,
            "start.o",
            "main.o",
            "--start-group",
            "liba.a",
            "libb.a",
            "--end-group",
        ],
    );
    succeeded(&bfd, "ld.bfd --start-group");
    let expected = outcome(&out.join("grouped"), &[]);
    assert_eq!(expected, ("main\na\nb\na2\n".to_string(), Some(7)));
    let orders: [&[&str]; 3] = [
        // b.o needs a2 from liba.a, which GNU ld has passed: it needs the group.
        &["start.o", "main.o", "liba.a", "libb.a"],
        // Archives before the objects that need them: GNU ld pulls nothing from them.
        &["liba.a", "libb.a", "start.o", "main.o"],
        &["libb.a", "start.o", "liba.a", "main.o"],
    ];
    for (index, order) in orders.iter().enumerate() {
        let bfd_output = program(&format!("bfd{index}"));
        let refused = run("ld.bfd", dir, &[&["-static", "-o", &bfd_output][..], order].concat());
        assert!(!refused.status.success(), "ld.bfd links {order:?}");
        assert!(
            text(&refused.stderr).contains("undefined reference"),
            "{}",
            text(&refused.stderr)
        );
        let lld_output = program(&format!("lld{index}"));
        succeeded(
            &run("ld.lld", dir, &[&["-static", "-o", &lld_output][..], order].concat()),
            &format!("ld.lld {order:?}"),
        );
        assert_eq!(outcome(&out.join(format!("lld{index}")), &[]), expected);
        let ours = program(&format!("ours{index}"));
        succeeded(
            &ld(&[&["-static", "-o", &ours][..], order].concat()),
            &format!("{order:?}"),
        );
        assert_eq!(outcome(&out.join(format!("ours{index}")), &[]), expected, "{order:?}");
    }
    // Groups are accepted, in both spellings, and change nothing.
    for (start, end) in [("--start-group", "--end-group"), ("-(", "-)")] {
        let ours = program("ours-grouped");
        let args = [
            "-static", "-o", &ours, "start.o", "main.o", start, "liba.a", "libb.a", end,
        ];
        succeeded(&ld(&args), start);
        assert_eq!(outcome(&out.join("ours-grouped"), &[]), expected);
    }
}

#[test]
fn l_options_search_the_l_directories_in_order_as_ld_bfd_does() {
    let dir = objects();
    let out = fresh("search");
    let cases: [(&[&str], &str); 5] = [
        (&["-L", "one", "-L", "two", "-lpick"], "one\n"),
        (&["-Ltwo", "-Lone", "-l", "pick"], "two\n"),
        // Every -L applies to every -l, wherever it appears.
        (&["-lpick", "-Ltwo"], "two\n"),
        (&["-Lone", "-l:libpick.a"], "one\n"),
        (&["--library-path=two", "--library=pick"], "two\n"),
    ];
    for (index, (search, expected)) in cases.iter().enumerate() {
        let base = ["-static", "-nostdlib", "-o"];
        let bfd_output = out.join(format!("bfd{index}")).display().to_string();
        let args = [&base[..], &[bfd_output.as_str(), "start.o", "pick_main.o"], search].concat();
        succeeded(&run("ld.bfd", dir, &args), &format!("ld.bfd {search:?}"));
        let ours = out.join(format!("ours{index}")).display().to_string();
        let args = [&base[..], &[ours.as_str(), "start.o", "pick_main.o"], search].concat();
        succeeded(&ld(&args), &format!("{search:?}"));
        let bfd_result = outcome(&out.join(format!("bfd{index}")), &[]);
        assert_eq!(bfd_result.0, *expected, "ld.bfd {search:?}");
        assert_eq!(
            outcome(&out.join(format!("ours{index}")), &[]),
            bfd_result,
            "{search:?}"
        );
    }
    // A static link never takes a shared library: with only libpick.so in the path, the error names it.
    let missing = out.join("never").display().to_string();
    let refused = ld(&["-static", "-o", &missing, "start.o", "pick_main.o", "-Lthree", "-lpick"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains("cannot find -lpick") && stderr.contains("three/libpick.so"),
        "{stderr}"
    );
    // Without -static, GNU ld takes libpick.so before libpick.a in the same directory, and the program is
    // dynamically linked: it needs libpick.so, exports `say` (which libpick.so calls) and runs as ld.bfd's.
    fs::copy(dir.join("one/libpick.a"), out.join("libpick.a")).unwrap();
    fs::copy(dir.join("three/libpick.so"), out.join("libpick.so")).unwrap();
    let search = format!("-L{}", out.display());
    let library_path = [("LD_LIBRARY_PATH", out.display().to_string())];
    let mut facts = Vec::new();
    for (name, linker) in [("dynamic-bfd", "ld.bfd"), ("dynamic-ours", "")] {
        let output = out.join(name).display().to_string();
        // ld.bfd's own default interpreter is /lib/ld64.so.1, which Debian does not have.
        let args = [
            "-Bdynamic",
            "-dynamic-linker",
            "/lib64/ld-linux-x86-64.so.2",
            "-o",
            &output,
            "start.o",
            "pick_main.o",
            &search,
            "-lpick",
        ];
        let linked = if linker.is_empty() {
            ld(&args)
        } else {
            run(linker, dir, &args)
        };
        succeeded(&linked, name);
        let ran = Command::new(&output).envs(library_path.clone()).output().unwrap();
        assert_eq!(
            (text(&ran.stdout), ran.status.code()),
            ("three\n".to_string(), Some(0)),
            "{name}"
        );
        let needed = text(&run("readelf", dir, &["-dW", &output]).stdout)
            .lines()
            .filter(|line| line.contains("(NEEDED)") || line.contains("(RUNPATH)"))
            .map(|line| line.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>();
        let mut symbols = text(&run("readelf", dir, &["--dyn-syms", "-W", &output]).stdout)
            .lines()
            .filter_map(|line| line.split_whitespace().nth(7).map(str::to_string))
            .collect::<Vec<_>>();
        symbols.sort();
        facts.push((needed, symbols));
    }
    assert!(facts[0].0.iter().any(|entry| entry.contains("libpick.so")), "{facts:?}");
    assert!(facts[0].1.iter().any(|symbol| symbol == "say"), "{facts:?}");
    assert_eq!(facts[0], facts[1]);
    // ... and -Bstatic before the -l takes the archive from the same directory.
    let ours = out.join("bstatic").display().to_string();
    succeeded(
        &ld(&[
            "-Bdynamic",
            "-o",
            &ours,
            "start.o",
            "pick_main.o",
            &search,
            "-Bstatic",
            "-lpick",
        ]),
        "-Bstatic",
    );
    assert_eq!(outcome(&out.join("bstatic"), &[]).0, "one\n");
    assert!(!out.join("never").exists());
}

#[test]
fn glibc_libm_a_is_a_group_script_whose_archives_the_link_reads() {
    let libm = Path::new("/usr/lib/x86_64-linux-gnu/libm.a");
    let script = fs::read_to_string(libm).expect("Debian's libm.a is a text file");
    assert!(script.contains("GNU ld script") && script.contains("GROUP"), "{script}");
    let members: Vec<&str> = script
        .split_whitespace()
        .filter(|word| word.starts_with('/') && word.ends_with(".a"))
        .collect();
    assert!(members.len() >= 2, "{script}");
    let dir = objects();
    let out = fresh("libm");
    let reference = out.join("ref").display().to_string();
    let args = [
        "-static",
        "-o",
        &reference,
        "start.o",
        "libm_main.o",
        "-L/usr/lib/x86_64-linux-gnu",
        "-lm",
    ];
    succeeded(&run("ld.bfd", dir, &args), "ld.bfd -lm");
    let expected = outcome(&out.join("ref"), &[]);
    assert_eq!(expected.0, "libm ok\n");
    let ours = out.join("prog").display().to_string();
    let linked = ld(&[
        "-static",
        "-t",
        "-o",
        &ours,
        "start.o",
        "libm_main.o",
        "-L/usr/lib/x86_64-linux-gnu",
        "-lm",
    ]);
    succeeded(&linked, "-lm");
    // -t lists the inputs after expansion: the script's archives, not libm.a.
    let listed: Vec<String> = text(&linked.stdout).lines().map(str::to_string).collect();
    assert_eq!(listed[..2], ["start.o", "libm_main.o"]);
    assert_eq!(listed[2..], members, "{script}");
    assert_eq!(outcome(&out.join("prog"), &[]), expected);
}

#[test]
fn a_script_inside_the_sysroot_finds_its_absolute_names_there_as_with_ld_bfd() {
    let dir = objects();
    let out = fresh("sysroot");
    let lib = out.join("root/usr/lib/neverc");
    fs::create_dir_all(&lib).unwrap();
    for name in ["liba.a", "libb.a"] {
        fs::copy(dir.join(name), lib.join(name)).unwrap();
    }
    // An absolute name, -l inside AS_NEEDED, and a comment; `-L=DIR` is DIR under the sysroot.
    fs::write(
        lib.join("libboth.a"),
        "/* both archives */\nGROUP ( /usr/lib/neverc/liba.a AS_NEEDED ( -lb ) )\n",
    )
    .unwrap();
    let sysroot = format!("--sysroot={}", out.join("root").display());
    for (linker, output) in [("ld.bfd", "ref"), (BIN, "prog")] {
        let output = out.join(output).display().to_string();
        let mut args = vec!["-static", "-nostdlib", &sysroot, "-L=/usr/lib/neverc", "-o", &output];
        args.extend(["start.o", "main.o", "-lboth"]);
        if linker == BIN {
            args.insert(0, "ld");
        }
        succeeded(&run(linker, dir, &args), &format!("{linker} --sysroot"));
    }
    let expected = outcome(&out.join("ref"), &[]);
    assert_eq!(expected, ("main\na\nb\na2\n".to_string(), Some(7)));
    assert_eq!(outcome(&out.join("prog"), &[]), expected);
    // Without the sysroot, the absolute name is looked for where it says, and the error names the script.
    let never = out.join("never").display().to_string();
    let search = format!("-L{}", lib.display());
    let refused = ld(&[
        "-static",
        "-nostdlib",
        &search,
        "-o",
        &never,
        "start.o",
        "main.o",
        "-lboth",
    ]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains("cannot find `/usr/lib/neverc/liba.a` (named by the script")
            && stderr.contains("libboth.a`, found for -lboth)"),
        "{stderr}"
    );
    assert!(!out.join("never").exists());
}

#[test]
fn response_files_expand_with_gnu_quoting_and_may_nest() {
    let dir = objects();
    let out = fresh("response");
    let spaced = out.join("my objects");
    fs::create_dir_all(&spaced).unwrap();
    for name in ["start.o", "main.o", "liba.a", "libb.a"] {
        fs::copy(dir.join(name), spaced.join(name)).unwrap();
    }
    // `--` ends the options: a file whose name starts with a dash is an input after it.
    fs::copy(dir.join("main.o"), out.join("-main.o")).unwrap();
    fs::write(
        out.join("inner.rsp"),
        "'my objects/liba.a'\n\"my objects/libb.a\" --end-group\n",
    )
    .unwrap();
    fs::write(
        out.join("outer.rsp"),
        "-static -o 'the program'\n  my\\ objects/start.o --start-group @inner.rsp -- -main.o\n",
    )
    .unwrap();
    let linked = run(BIN, &out, &["ld", "@outer.rsp"]);
    succeeded(&linked, "ld @outer.rsp");
    assert_eq!(
        outcome(&out.join("the program"), &[]),
        ("main\na\nb\na2\n".to_string(), Some(7))
    );
    // Through the `ld` link as well, as a compiler driver calls it.
    let bin = ld_dir("response-bin");
    let linked = run(bin.join("ld"), &out, &["@outer.rsp"]);
    succeeded(&linked, "ld @outer.rsp through the link");
    // A response file that names itself is refused at the depth limit, naming it; nothing is written.
    fs::write(out.join("loop.rsp"), "-o looped start.o @loop.rsp\n").unwrap();
    let refused = run(BIN, &out, &["ld", "@loop.rsp"]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains("response files nest deeper than 32 levels") && stderr.contains("@loop.rsp -> @loop.rsp"),
        "{stderr}"
    );
    assert!(!out.join("looped").exists());
}

#[test]
fn unsupported_options_values_and_script_commands_are_refused_naming_them_and_nothing_is_written() {
    let out = fresh("refused");
    let output = out.join("never").display().to_string();
    let refused = |extra: &[&str], named: &str| {
        let args = [
            &["-static", "-o", &output, "start.o", "main.o", "liba.a", "libb.a"][..],
            extra,
        ]
        .concat();
        let result = ld(&args);
        let stderr = text(&result.stderr);
        assert_eq!(result.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(named), "{extra:?} should name {named}: {stderr}");
        assert!(!out.join("never").exists(), "{extra:?}");
    };
    refused(&["--frobnicate"], "unrecognized option `--frobnicate`");
    refused(&["-soname"], "option `-soname` needs an argument");
    refused(&["-N"], "`-N` is not supported");
    refused(&["-T", "x.ld"], "`-T` is not supported");
    refused(&["-m", "armelf"], "emulation `armelf` is not declared by any target");
    refused(&["-EB"], "`-EB`: no declared target is big-endian");
    refused(&["-x"], "`-x` is not supported");
    refused(&["--fix-cortex-a53-843419=adrp"], "mode `adrp` is not supported");
    refused(&["--build-id=md5"], "build-id style `md5` is not supported");
    refused(&["-z", "execstack"], "`-z execstack` is not supported");
    refused(&["-zfrobnicate"], "`-z frobnicate` is not supported");
    refused(&["--icf=safe"], "`--icf`: `safe` is not supported");
    refused(&["--gc-sections=yes"], "option `--gc-sections` takes no argument");
    refused(&["-e"], "option `-e` needs an argument");
    refused(&["--end-group"], "--end-group without --start-group");
    refused(&["--threads=0"], "`0` is not a number of threads");
    // Linker scripts: a command other than GROUP/INPUT/AS_NEEDED/OUTPUT_FORMAT, named with the script and
    // the line; another output format.
    let sections = fixture("sections.ld").display().to_string();
    refused(&[&sections], "the command `SECTIONS` is not supported");
    refused(&[&sections], &format!("`{sections}` at line 3, column 1"));
    refused(
        &[&fixture("i386.ld").display().to_string()],
        "output format `elf32-i386` is not supported",
    );
    // The same script found by -l, as a library that is a script.
    fs::copy(fixture("sections.ld"), out.join("libsections.a")).unwrap();
    refused(
        &[&format!("-L{}", out.display()), "-lsections"],
        "libsections.a` at line 3",
    );
    // Without inputs.
    let result = ld(&["-static"]);
    assert_eq!(result.status.code(), Some(2));
    assert!(text(&result.stderr).contains("no input files"));
}

#[test]
fn m_chooses_the_links_target_by_a_declared_emulation() {
    let out = fresh("emulation");
    let inputs = ["start.o", "main.o", "liba.a", "libb.a"];
    // The x86-64 objects link for `-m elf_x86_64` (joined or not), with gcc's -EL and -X, and run.
    for emulation in [&["-m", "elf_x86_64"][..], &["-melf_x86_64"]] {
        let program = out.join("prog");
        let program_name = program.display().to_string();
        let args = [
            &["-static", "-EL", "-X", "--discard-locals", "-o", &program_name][..],
            emulation,
            &inputs,
        ]
        .concat();
        succeeded(&ld(&args), &format!("ld {args:?}"));
        assert_eq!(outcome(&program, &[]), ("main\na\nb\na2\n".to_string(), Some(7)));
        fs::remove_file(&program).unwrap();
    }
    // `-m aarch64linux` (as gcc's AArch64 cross driver joins it, or not) makes AArch64 the link's target
    // before any object is read: the first x86-64 object is refused, naming it and the option, and nothing
    // is written.
    let never = out.join("never").display().to_string();
    for emulation in [&["-maarch64linux"][..], &["-m", "aarch64linux"], &["-m", "aarch64elf"]] {
        let args = [&["-static", "-o", &never][..], emulation, &inputs].concat();
        let result = ld(&args);
        let stderr = text(&result.stderr);
        assert_eq!(result.status.code(), Some(1), "{args:?}: {stderr}");
        let spelled = if emulation.len() == 2 {
            emulation[1]
        } else {
            &emulation[0][2..]
        };
        assert!(
            stderr.contains(&format!(
                "start.o: an object for x86_64 (ELF machine 62, 64-bit, little-endian) cannot be linked: the \
                 link's target is aarch64 (ELF machine 183, 64-bit, little-endian), set by `-m {spelled}`"
            )),
            "{args:?}: {stderr}"
        );
        assert!(!out.join("never").exists());
    }
    // An emulation no target declares is refused, listing the declared ones with their targets.
    let result = ld(&["-static", "-o", &never, "-m", "elf_i386", "start.o"]);
    let stderr = text(&result.stderr);
    assert_eq!(result.status.code(), Some(2), "{stderr}");
    for listed in [
        "emulation `elf_i386` is not declared by any target; the declared ones are",
        "aarch64linux, aarch64elf (aarch64)",
        "elf64lriscv (riscv64)",
        "elf_x86_64 (x86_64)",
    ] {
        assert!(stderr.contains(listed), "{stderr} lacks {listed}");
    }
    // So is the other byte order for the chosen target.
    let result = ld(&["-static", "-o", &never, "-EB", "-m", "elf_x86_64", "start.o"]);
    assert_eq!(result.status.code(), Some(2));
    assert!(
        text(&result.stderr).contains("`-EB`: the target of `-m elf_x86_64`, x86_64, is not big-endian"),
        "{}",
        text(&result.stderr)
    );
}

#[test]
fn minus_r_merges_the_inputs_into_one_object_that_links_and_runs_as_they_do() {
    // `-r` maps to a relocatable link, which the builtin object merge makes: archive members are pulled as a
    // link pulls them, and the merged object links on its own into the program the inputs make.
    let out = fresh("relocatable");
    let merged = out.join("merged.o").display().to_string();
    let result = ld(&["-r", "-o", &merged, "start.o", "main.o", "liba.a", "libb.a"]);
    succeeded(&result, "ld -r");
    let bytes = fs::read(&merged).unwrap();
    assert_eq!(u16::from_le_bytes([bytes[16], bytes[17]]), 1, "not ET_REL");
    let program = out.join("prog").display().to_string();
    succeeded(&ld(&["-static", "-o", &program, &merged]), "ld merged.o");
    assert_eq!(
        outcome(&out.join("prog"), &[]),
        ("main\na\nb\na2\n".to_string(), Some(7))
    );
}

#[test]
fn a_relocation_that_patches_past_its_input_section_is_an_error_as_with_ld_bfd() {
    let out = fresh("patches-past");
    // `movabs $x, %rax` (R_X86_64_64 at .text+2), moved to .text+14: its 8 bytes end past the 17 of `.text`,
    // in the bytes of the object linked after it.
    fs::write(
        out.join("past.s"),
        ".text\n.globl _start\n_start:\n movabs $x, %rax\n mov $60, %eax\n syscall\n.data\n.globl x\nx: .quad 7\n",
    )
    .unwrap();
    fs::write(
        out.join("next.s"),
        ".text\n.globl next\nnext: .quad 0x1111111111111111\n",
    )
    .unwrap();
    for name in ["past", "next"] {
        succeeded(
            &run("as", &out, &[&format!("{name}.s"), "-o", &format!("{name}.o")]),
            name,
        );
    }
    let mut bytes = fs::read(out.join("past.o")).unwrap();
    use object::read::elf::{FileHeader as _, SectionHeader as _};
    let header = object::elf::FileHeader64::<object::Endianness>::parse(&*bytes).unwrap();
    let endian = header.endian().unwrap();
    let sections = header.sections(endian, &*bytes).unwrap();
    let rela = sections.section_by_name(endian, b".rela.text").unwrap().1;
    let entry = rela.sh_offset(endian) as usize;
    assert_eq!(bytes[entry..entry + 8], 2u64.to_le_bytes());
    bytes[entry..entry + 8].copy_from_slice(&14u64.to_le_bytes());
    fs::write(out.join("past.o"), bytes).unwrap();

    let bfd = run("ld.bfd", &out, &["-static", "-o", "bfd", "past.o", "next.o"]);
    assert!(!bfd.status.success(), "ld.bfd refuses it too");
    let output = out.join("never").display().to_string();
    for threads in ["--no-threads", "--threads=4"] {
        let linked = run(
            BIN,
            &out,
            &["ld", threads, "-static", "-o", &output, "past.o", "next.o"],
        );
        assert_eq!(linked.status.code(), Some(1), "{}", text(&linked.stderr));
        assert!(
            text(&linked.stderr)
                .contains("past.o:.text+0xe: R_X86_64_64 against `x` patches past the end of its section"),
            "{}",
            text(&linked.stderr)
        );
        assert!(!out.join("never").exists());
    }
}

#[test]
fn version_and_help_as_ld_and_as_neverc_spec_ld() {
    let dir = ld_dir("version");
    for name in ["ld.neverc", "x86_64-linux-gnu-ld"] {
        symlink(BIN, dir.join(name)).unwrap();
    }
    let version = format!("neverc-spec {} (compatible with GNU ld)", env!("CARGO_PKG_VERSION"));
    let mut invocations: Vec<(PathBuf, Vec<&str>)> = vec![(PathBuf::from(BIN), vec!["ld", "--version"])];
    for name in ["ld", "ld.neverc", "x86_64-linux-gnu-ld"] {
        invocations.push((dir.join(name), vec!["--version"]));
        invocations.push((dir.join(name), vec!["-v"]));
    }
    for (program, args) in invocations {
        let output = run(&program, &dir, &args);
        succeeded(&output, &format!("{} {args:?}", program.display()));
        // libtool and Meson look for "GNU" in the first line.
        assert_eq!(text(&output.stdout).lines().next(), Some(version.as_str()), "{args:?}");
    }
    // What configure scripts run to identify the linker: gcc passes --version after its usual options.
    let output = run("gcc", &dir, &["-B", &dir.display().to_string(), "-Wl,--version"]);
    succeeded(&output, "gcc -Wl,--version");
    assert!(text(&output.stdout).contains(&version), "{}", text(&output.stdout));
    let help = run(BIN, &dir, &["ld", "--help"]);
    succeeded(&help, "ld --help");
    let help = text(&help.stdout);
    for needle in [
        "--start-group",
        "-plugin FILE",
        "Archives: neverc-spec searches archives as lld does",
        "GROUP(...)",
        "@FILE",
        "-m EMULATION, -mEMULATION",
        "Declared:\n                        aarch64linux, aarch64elf (aarch64); elf64lriscv (riscv64); elf_x86_64 (x86_64)\n",
        "--fix-cortex-a53-843419",
        "Exit status:",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}: {help}");
    }
    let help = run(BIN, &dir, &["--help"]);
    assert!(text(&help.stdout).contains("ld "), "{}", text(&help.stdout));
}

#[test]
fn gccs_lto_plugin_is_named_only_when_an_input_holds_gcc_lto_bytecode() {
    let dir = ld_dir("gcc-lto-note");
    let out = dir.parent().unwrap();
    let dash_b = dir.display().to_string();
    let hello = fixture("hello.c").display().to_string();
    succeeded(
        &run(
            "gcc",
            out,
            &["-O2", "-flto", "-ffat-lto-objects", "-c", &hello, "-o", "fat.o"],
        ),
        "gcc -flto -ffat-lto-objects -c",
    );
    // ld.bfd runs gcc's plugin; neverc-spec links the machine code of the fat object, and says so once.
    succeeded(
        &run(
            "gcc",
            out,
            &["-flto", "-static", "-fuse-ld=bfd", "fat.o", "-lm", "-o", "ref"],
        ),
        "gcc -flto (ld.bfd)",
    );
    let linked = run(
        "gcc",
        out,
        &["-flto", "-static", "-B", &dash_b, "fat.o", "-lm", "-o", "prog"],
    );
    succeeded(&linked, "gcc -flto -B (neverc-spec)");
    let stderr = text(&linked.stderr);
    assert_eq!(
        stderr.matches("note: neverc-spec ld: ignoring -plugin").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("liblto_plugin.so") && stderr.contains("fat.o holds GCC LTO bytecode"),
        "{stderr}"
    );
    assert_eq!(outcome(&out.join("prog"), &[]), outcome(&out.join("ref"), &[]));
    // The same program without LTO: no note.
    let linked = run(
        "gcc",
        out,
        &["-O2", "-static", "-B", &dash_b, &hello, "-lm", "-o", "plain"],
    );
    succeeded(&linked, "gcc -B (neverc-spec)");
    assert!(!text(&linked.stderr).contains("plugin"), "{}", text(&linked.stderr));
}

#[test]
fn a_text_file_that_is_not_an_object_is_reported_once_as_a_script_that_does_not_parse() {
    let out = fresh("not-an-object");
    fs::write(out.join("notes.o"), "hello, this is not an object\n").unwrap();
    let output = run(BIN, &out, &["ld", "-static", "-o", "never", "notes.o"]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.matches("the command `hello` is not supported").count(),
        1,
        "{stderr}"
    );
    assert_eq!(stderr.matches("read as a linker script").count(), 1, "{stderr}");
    assert!(!out.join("never").exists());
}

/// What a shared library of the link leaves undefined is checked as GNU ld checks it for an executable
/// (`--no-allow-shlib-undefined`, its default): `libouter.so` calls `inner_value` (defined by `libinner.so`,
/// which it needs, in a directory only `-rpath-link` names) and `missing_function` (defined nowhere). gcc's
/// default link through ld.bfd and through neverc-spec, with the same options, succeeds or fails alike,
/// naming the same undefined references and the same needed library not found; the programs that link run.
#[test]
fn the_undefined_symbols_of_shared_libraries_are_checked_as_ld_bfd_checks_them() {
    let dir = ld_dir("shlib-undefined");
    let out = dir.parent().unwrap();
    fs::create_dir_all(out.join("lib")).unwrap();
    let gcc = |args: &[&str]| {
        let output = Command::new("gcc").args(args).current_dir(out).output().unwrap();
        succeeded(&output, &format!("gcc {args:?}"));
    };
    let source = |name: &str| fixture(name).display().to_string();
    gcc(&["-shared", "-fPIC", "-o", "lib/libinner.so", &source("shlib_inner.c")]);
    gcc(&[
        "-shared",
        "-fPIC",
        "-o",
        "libouter.so",
        &source("shlib_outer.c"),
        "-Llib",
        "-linner",
    ]);
    gcc(&["-c", "-o", "main.o", &source("shlib_main.c")]);
    // (options, whether the link succeeds)
    let cases: [(&[&str], bool); 6] = [
        (&["-Wl,-rpath-link=lib"], false),
        (&["-Wl,-rpath-link", "-Wl,lib", "-Wl,--allow-shlib-undefined"], true),
        (&["-Wl,--allow-shlib-undefined"], true),
        (&[], false),
        (
            &["-Wl,-rpath-link=lib", "-Wl,--unresolved-symbols=ignore-in-shared-libs"],
            true,
        ),
        (&["-Wl,-rpath-link=lib", "-Wl,--warn-unresolved-symbols"], true),
    ];
    // The lines that name a symbol or a library: the linkers' prefixes differ.
    let diagnostics = |stderr: &str| -> Vec<String> {
        let mut lines: Vec<String> = stderr
            .lines()
            .filter_map(|line| {
                [
                    "./libouter.so: undefined reference",
                    "./libouter.so: warning: undefined reference",
                    "libinner.so, needed by",
                ]
                .iter()
                .find_map(|start| line.find(start).map(|at| line[at..].to_string()))
            })
            .collect();
        lines.sort();
        lines
    };
    for (options, links) in cases {
        let mut outcomes = Vec::new();
        for (name, bin) in [("bfd", None), ("ours", Some(&dir))] {
            let program = format!("{name}.elf");
            let mut command = Command::new("gcc");
            if let Some(bin) = bin {
                command.arg("-B").arg(bin).arg("-Wl,-v");
            }
            let output = command
                .args(["main.o", "-o", &program, "-L.", "-louter"])
                .args(options)
                .current_dir(out)
                .output()
                .unwrap();
            let stderr = text(&output.stderr);
            assert_eq!(output.status.success(), links, "{name} {options:?}:\n{stderr}");
            if bin.is_some() {
                assert!(text(&output.stdout).contains("neverc-spec"), "{options:?}");
            }
            if links {
                let ran = Command::new(out.join(&program))
                    .env(
                        "LD_LIBRARY_PATH",
                        format!("{}:{}", out.display(), out.join("lib").display()),
                    )
                    .output()
                    .unwrap();
                assert_eq!(
                    (text(&ran.stdout), ran.status.code()),
                    ("42\n".to_string(), Some(0)),
                    "{name} {options:?}"
                );
            }
            outcomes.push(diagnostics(&stderr));
        }
        assert_eq!(outcomes[0], outcomes[1], "{options:?}");
        if !links {
            assert!(
                outcomes[0].iter().any(|line| line.contains("`missing_function'")),
                "{options:?}: {outcomes:?}"
            );
        }
    }
}

/// `--dynamic-list`, `--export-dynamic-symbol` and `--export-dynamic-symbol-list` add the global definitions
/// they name (exactly or by a pattern) to a dynamically linked executable's `.dynsym`: the same names as
/// ld.bfd's for the same gcc command line, and the programs run.
#[test]
fn dynamic_lists_export_what_ld_bfd_exports() {
    let dir = ld_dir("dynamic-list");
    let out = dir.parent().unwrap();
    let list = fixture("exports.list").display().to_string();
    let source = fixture("exports_main.c").display().to_string();
    let cases: [&[&str]; 4] = [
        &[],
        &["-Wl,--dynamic-list", &list],
        &["-Wl,--export-dynamic-symbol=plugin_*"],
        &[
            "-Wl,--export-dynamic-symbol-list",
            &list,
            "-Wl,--export-dynamic-symbol=main",
        ],
    ];
    for options in cases {
        let mut exported = Vec::new();
        for (name, bin) in [("bfd", None), ("ours", Some(&dir))] {
            let program = out.join(format!("{name}.elf"));
            let mut command = Command::new("gcc");
            if let Some(bin) = bin {
                command.arg("-B").arg(bin).arg("-Wl,-v");
            }
            let output = command
                .arg(&source)
                .arg("-o")
                .arg(&program)
                .args(options)
                .output()
                .unwrap();
            succeeded(&output, &format!("{name} {options:?}"));
            if bin.is_some() {
                assert!(text(&output.stdout).contains("neverc-spec"), "{options:?}");
            }
            assert_eq!(
                outcome(&program, &[]),
                ("7\n".to_string(), Some(0)),
                "{name} {options:?}"
            );
            let symbols = Command::new("readelf")
                .args(["--dyn-syms", "-W"])
                .arg(&program)
                .output()
                .unwrap();
            // The names defined in `.dynsym`.
            let mut names: Vec<String> = text(&symbols.stdout)
                .lines()
                .filter_map(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    (fields.len() >= 8 && fields[6] != "UND").then(|| fields[7].to_string())
                })
                .collect();
            names.sort();
            exported.push(names);
        }
        assert_eq!(exported[0], exported[1], "{options:?}");
        // Without a list nothing of the program's is exported; each list exports `plugin_api`.
        assert_eq!(
            exported[0].iter().any(|name| name == "plugin_api"),
            !options.is_empty(),
            "{options:?}: {exported:?}"
        );
    }
}
