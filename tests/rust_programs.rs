#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Rust programs linked through neverc-spec with the README's recipe. rustc links through `cc`, by default
//! with its bundled rust-lld, so a recipe that only adds `-C link-arg=-B DIR` would silently bypass the
//! linker: the test takes the `RUSTFLAGS` lines from README.md itself and checks that what they build names
//! neverc-spec in `.comment` (which ld.bfd and rust-lld never write). The crate (`tests/fixtures/rust/demo`:
//! `regex` and `serde_json` from crates.io, pinned by its Cargo.lock) is built dynamically (gcc's and
//! rustc's default: a PIE against libc.so.6 and libgcc_s.so.1) and as a static PIE (`+crt-static`); each
//! binary runs and prints what it should, and `cargo test` passes with the same flags. A workspace with
//! procedural macros and a `cdylib` (`tests/fixtures/rust/macros`) is built the same way: the macros' shared
//! libraries are linked by neverc-spec too, and C calls the cdylib.

use std::path::{Path, PathBuf};
use std::process::Command;

use neverc_test_support::{read_text, repo, scratch, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

/// The `RUSTFLAGS` values of the README's recipe lines, in order.
fn readme_recipes() -> Vec<String> {
    read_text(&repo().join("README.md"))
        .lines()
        .filter_map(|line| line.strip_prefix("RUSTFLAGS=\""))
        .filter_map(|rest| rest.split_once('"').map(|(flags, _)| flags.to_string()))
        .collect()
}

/// The README's first recipe: the dynamic one.
fn dynamic_recipe() -> String {
    readme_recipes()
        .into_iter()
        .next()
        .expect("the README's dynamic recipe")
}

/// A copy of the demo crate (`tests/fixtures/rust/demo`) in `dir`/demo, where cargo may write.
fn demo_crate(dir: &Path) -> PathBuf {
    let crate_dir = dir.join("demo");
    std::fs::create_dir_all(crate_dir.join("src")).unwrap();
    let fixture = repo().join("tests/fixtures/rust/demo");
    for file in ["Cargo.toml", "Cargo.lock", "src/main.rs"] {
        std::fs::copy(fixture.join(file), crate_dir.join(file)).unwrap();
    }
    crate_dir
}

/// Runs cargo `subcommand` on the demo crate in `dir` with `rustflags`, its products in `target`.
fn cargo(dir: &Path, target: &Path, subcommand: &str, rustflags: &str) -> (String, String) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .args([subcommand, "--locked"])
        .env("RUSTFLAGS", rustflags)
        .env("CARGO_TARGET_DIR", target)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .current_dir(dir)
        .output()
        .expect("cargo runs");
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "cargo {subcommand} with RUSTFLAGS={rustflags}:\n{stdout}\n{stderr}"
    );
    (stdout, stderr)
}

/// `readelf ARGS program`'s output.
fn readelf(args: &[&str], program: &Path) -> String {
    let output = Command::new("readelf").args(args).arg(program).output().unwrap();
    assert!(output.status.success(), "readelf {args:?} {}", program.display());
    text(&output.stdout)
}

/// The test binaries cargo built in `target` (`deps/neverc_rust_demo-HASH`, executable).
fn test_binaries(target: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::read_dir(target.join("debug/deps"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("neverc_rust_demo-") && !name.contains('.'))
                && path.metadata().is_ok_and(|meta| meta.permissions().mode() & 0o111 != 0)
        })
        .collect()
}

#[test]
fn the_readmes_rust_recipe_links_a_crate_with_dependencies_through_neverc_spec() {
    let recipes = readme_recipes();
    assert_eq!(recipes.len(), 2, "the README's RUSTFLAGS lines: {recipes:?}");
    let dir = scratch!("rust-demo");
    let bin = dir.join("neverc-bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("ld")).unwrap();
    let crate_dir = demo_crate(&dir);
    for (index, recipe) in recipes.iter().enumerate() {
        assert!(recipe.contains("$HOME/neverc-bin"), "{recipe}");
        let flags = recipe.replace("$HOME/neverc-bin", &bin.display().to_string());
        let static_pie = flags.contains("+crt-static");
        assert_eq!(static_pie, index == 1, "{recipe}");
        let target = dir.join(format!("target-{index}"));
        cargo(&crate_dir, &target, "build", &flags);
        let program = target.join("debug/neverc-rust-demo");
        let ran = Command::new(&program).output().unwrap();
        assert_eq!(
            (text(&ran.stdout), ran.status.code()),
            ("{\"from\":\"10\",\"to\":\"20\"}\n42\n".to_string(), Some(0)),
            "{recipe}"
        );
        let comment = readelf(&["-p", ".comment"], &program);
        assert!(
            comment.contains("Linker: neverc-spec"),
            "{recipe}: not linked by neverc-spec:\n{comment}"
        );
        let headers = readelf(&["-hlW"], &program);
        assert!(
            headers.contains("DYN (Position-Independent Executable file)"),
            "{recipe}"
        );
        assert_eq!(
            headers.contains("Requesting program interpreter"),
            !static_pie,
            "{recipe}"
        );
        if !static_pie {
            let dynamic = readelf(&["-dW"], &program);
            assert!(dynamic.contains("[libc.so.6]"), "{dynamic}");
        }
        // `cargo test` links the test harness the same way, and the tests (one that must panic) pass.
        let (stdout, _) = cargo(&crate_dir, &target, "test", &flags);
        assert!(stdout.contains("test result: ok. 2 passed"), "{recipe}: {stdout}");
        let harnesses = test_binaries(&target);
        assert!(!harnesses.is_empty(), "{recipe}");
        for harness in harnesses {
            let comment = readelf(&["-p", ".comment"], &harness);
            assert!(
                comment.contains("Linker: neverc-spec"),
                "{}: {comment}",
                harness.display()
            );
        }
    }
}

/// Whether `file`'s `.comment` names neverc-spec as its linker.
fn linked_by_us(file: &Path) -> bool {
    readelf(&["-p", ".comment"], file).contains("Linker: neverc-spec")
}

/// A workspace with procedural macros (serde's and clap's derives: shared libraries that rustc loads while
/// it compiles) and a `cdylib`, built and tested by cargo with the README's dynamic recipe: every link goes
/// through neverc-spec, proc-macro libraries included, the program runs, its tests pass, and a C program
/// calls the cdylib, loaded with `dlopen` and linked in.
#[test]
fn a_workspace_with_procedural_macros_and_a_cdylib_links_every_library_through_neverc_spec() {
    let recipe = dynamic_recipe();
    let dir = scratch!("rust-macros");
    let bin = dir.join("neverc-bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("ld")).unwrap();
    let workspace = dir.join("macros");
    let fixture = repo().join("tests/fixtures/rust/macros");
    for file in [
        "Cargo.toml",
        "Cargo.lock",
        "app/Cargo.toml",
        "app/src/main.rs",
        "greet/Cargo.toml",
        "greet/src/lib.rs",
        "greet/main.c",
    ] {
        let to = workspace.join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(fixture.join(file), to).unwrap();
    }
    let flags = recipe.replace("$HOME/neverc-bin", &bin.display().to_string());
    let target = dir.join("target");
    cargo(&workspace, &target, "build", &flags);
    // The procedural macros cargo built are shared libraries, linked by neverc-spec.
    let macros: Vec<PathBuf> = std::fs::read_dir(target.join("debug/deps"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name.starts_with("libserde_derive-") || name.starts_with("libclap_derive-")) && name.ends_with(".so")
        })
        .collect();
    assert_eq!(macros.len(), 2, "{macros:?}");
    for library in &macros {
        assert!(linked_by_us(library), "{}", library.display());
        assert!(readelf(&["-hW"], library).contains("DYN (Shared object file)"));
    }
    let program = target.join("debug/neverc-macros-app");
    assert!(linked_by_us(&program));
    let ran = Command::new(&program).args(["--factor", "3", "pt"]).output().unwrap();
    assert_eq!(
        (text(&ran.stdout), ran.status.code()),
        ("{\"name\":\"pt\",\"x\":9,\"y\":-12}\ntrue\n".to_string(), Some(0))
    );
    let (stdout, _) = cargo(&workspace, &target, "test", &flags);
    assert!(stdout.contains("test result: ok. 2 passed"), "{stdout}");
    // The cdylib, from C.
    let cdylib = target.join("debug/libneverc_greet.so");
    assert!(linked_by_us(&cdylib));
    let caller = dir.join("greet");
    let linked = Command::new("gcc")
        .arg(format!("-B{}", bin.display()))
        .arg(workspace.join("greet/main.c"))
        .arg(format!("-L{}", target.join("debug").display()))
        .args(["-lneverc_greet", "-o"])
        .arg(&caller)
        .arg(format!("-Wl,-rpath,{}", target.join("debug").display()))
        .output()
        .unwrap();
    assert!(linked.status.success(), "{}", text(&linked.stderr));
    let ran = Command::new(&caller).arg(&cdylib).output().unwrap();
    assert_eq!(
        (text(&ran.stdout), ran.status.code()),
        ("dlopen: 42 3\nlinked: 3 2\n".to_string(), Some(0))
    );
}

/// The Rust program's links (the demo's build scripts and the program: a PIE against glibc, as
/// `bench/link.sh`'s Rust case) give the same bytes with one thread and with five: the `ld` the README's
/// recipe finds links each command line with `--threads=1` and with `--threads=5` beside the link cargo asked
/// for, whose output the build goes on with.
#[test]
fn the_rust_programs_links_give_the_same_bytes_with_one_thread_and_with_five() {
    let recipe = dynamic_recipe();
    let dir = scratch!("rust-threads");
    let bin = dir.join("neverc-bin");
    let copies = dir.join("copies");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&copies).unwrap();
    let script = format!(
        r#"#!/bin/bash
# Links the command line with one thread and with five into {copies}, then as asked.
args=("$@")
for threads in 1 5; do
    out=()
    next_is_output=0
    for arg in "${{args[@]}}"; do
        if ((next_is_output)); then
            out+=("{copies}/$(basename "$arg").$$.threads-$threads")
            next_is_output=0
            continue
        fi
        [[ $arg == -o ]] && next_is_output=1
        out+=("$arg")
    done
    {bin} ld "${{out[@]}}" --threads=$threads || exit 1
done
exec {bin} ld "$@"
"#,
        copies = copies.display(),
        bin = BIN
    );
    std::fs::write(bin.join("ld"), script).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(bin.join("ld"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let crate_dir = demo_crate(&dir);
    let flags = recipe.replace("$HOME/neverc-bin", &bin.display().to_string());
    cargo(&crate_dir, &dir.join("target"), "build", &flags);
    let mut pairs = 0;
    let mut program = false;
    for entry in std::fs::read_dir(&copies).unwrap() {
        let one = entry.unwrap().path();
        let Some(name) = one.to_str().and_then(|name| name.strip_suffix(".threads-1")) else {
            continue;
        };
        let five = PathBuf::from(format!("{name}.threads-5"));
        let (one_bytes, five_bytes) = (std::fs::read(&one).unwrap(), std::fs::read(&five).unwrap());
        assert!(
            one_bytes == five_bytes,
            "{name}: one thread and five give different bytes"
        );
        assert!(linked_by_us(&one), "{}", one.display());
        program |= name.contains("neverc_rust_demo-") && one_bytes.len() > 1_000_000;
        pairs += 1;
    }
    assert!(program, "the program's link was not among the {pairs} compared");
}
