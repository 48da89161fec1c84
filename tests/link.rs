#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `neverc-spec link` on real programs: the freestanding fixture programs (gcc-built objects and archives)
//! are linked by us and by ld.bfd; both executables must print the same and exit alike.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use neverc_test_support::{build_fixture_programs, repo, scratch, text};

/// Builds the fixture programs once (objects, archives, ld.bfd references and expected output).
fn fixtures() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("link-fixtures");
        build_fixture_programs(&out);
        out
    })
}

fn programs() -> Vec<String> {
    std::fs::read_to_string(fixtures().join("programs.txt"))
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Links `program` with our linker into `output`; returns the command's stdout.
fn link(program: &str, output: &Path, extra: &[&str]) -> String {
    let dir = fixtures().join(program);
    let inputs: Vec<String> = std::fs::read_to_string(dir.join("inputs.txt"))
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let flags = std::fs::read_to_string(dir.join("flags.txt")).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_neverc-spec"));
    command
        .current_dir(&dir)
        .arg("link")
        .arg("-o")
        .arg(output)
        .arg("-static");
    if flags.lines().any(|flag| flag == "--gc-sections") {
        command.arg("--gc-sections");
    }
    let result = command.args(extra).args(&inputs).output().unwrap();
    assert!(
        result.status.success(),
        "{program}: link failed: {}",
        text(&result.stderr)
    );
    text(&result.stdout)
}

fn run_program(path: &Path) -> (String, i32) {
    let output = Command::new(path).output().unwrap();
    (
        text(&output.stdout),
        output.status.code().expect("exited, not killed by a signal"),
    )
}

#[test]
fn every_fixture_program_prints_what_the_ld_bfd_build_prints() {
    let out = scratch!("link-programs");
    let programs = programs();
    assert!(programs.len() >= 6, "{programs:?}");
    for program in programs {
        let dir = fixtures().join(&program);
        let expected = std::fs::read_to_string(dir.join("expected.stdout")).unwrap();
        let expected_status: i32 = std::fs::read_to_string(dir.join("expected.status"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The reference really is ld.bfd's build, run now.
        assert_eq!(
            run_program(&dir.join("ref.elf")),
            (expected.clone(), expected_status),
            "{program}: ld.bfd"
        );
        let ours = out.join(&program);
        link(&program, &ours, &[]);
        assert_eq!(
            run_program(&ours),
            (expected, expected_status),
            "{program}: neverc-spec link"
        );
    }
}

#[test]
fn output_is_byte_identical_across_runs_and_the_trace_lists_every_phase_in_order() {
    let out = scratch!("link-determinism");
    let first = out.join("first");
    let second = out.join("second");
    let trace = link("symbols", &first, &["--trace-phases"]);
    link("symbols", &second, &[]);
    assert_eq!(std::fs::read(&first).unwrap(), std::fs::read(&second).unwrap());
    let phases: Vec<&str> = trace
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    // The order is the declared one: the transitions by state, the structural `full` and `object_merge`,
    // then the finalization chain.
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("PhaseSchema.json")).unwrap()).unwrap();
    let machine = &schema["state_machines"]["link"];
    let mut declared: Vec<String> = machine["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["phase"].as_str().unwrap().to_string())
        .collect();
    declared.push("neverc.link.full".into());
    declared.push("neverc.link.object_merge".into());
    declared.extend(
        machine["finalization"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_string()),
    );
    assert_eq!(phases, declared);
    assert_eq!(phases.len(), 20);
    for line in trace.lines() {
        assert!(line.contains(" -> "), "state before and after: {line}");
        assert!(line.ends_with(" ms"), "duration: {line}");
    }
}

#[test]
fn an_undefined_symbol_names_the_referencing_input_and_nothing_is_written() {
    let out = scratch!("link-undefined");
    let dir = fixtures().join("basics");
    let output = out.join("a.out");
    std::fs::write(&output, b"previous").unwrap();
    // Without rt.o nothing defines the runtime's functions that main.o calls.
    let result = Command::new(env!("CARGO_BIN_EXE_neverc-spec"))
        .current_dir(&dir)
        .args(["link", "-o"])
        .arg(&output)
        .args(["main.o", "ops.o", "data.o", "pic.o"])
        .output()
        .unwrap();
    assert_eq!(result.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        stderr.contains("main.o: in function `prog_main': undefined reference to `rt_"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(&output).unwrap(),
        b"previous",
        "the previous output is untouched"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "no temporary file remains: {leftovers:?}");
}

#[test]
fn a_shared_library_in_a_static_link_is_refused_in_ld_bfd_words_and_nothing_is_written() {
    let out = scratch!("link-static-shared");
    std::fs::write(out.join("f.c"), "int f(void) { return 3; }\n").unwrap();
    let built = Command::new("gcc")
        .current_dir(&out)
        .args(["-shared", "-fPIC", "f.c", "-o", "libf.so"])
        .status()
        .unwrap();
    assert!(built.success());
    let dir = fixtures().join("basics");
    let output = out.join("a.out");
    let result = Command::new(env!("CARGO_BIN_EXE_neverc-spec"))
        .current_dir(&dir)
        .args(["link", "-o"])
        .arg(&output)
        .args(["main.o", "ops.o", "data.o", "pic.o", "rt.o"])
        .arg(out.join("libf.so"))
        .output()
        .unwrap();
    let stderr = text(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    // ld.bfd: "attempted static link of dynamic object `libf.so'".
    assert!(
        stderr.contains("libf.so: attempted static link of dynamic object"),
        "{stderr}"
    );
    assert!(!output.exists());
}

fn symbols_of(path: &Path) -> Vec<(u64, String)> {
    let output = Command::new("nm").arg(path).output().unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let address = u64::from_str_radix(fields.next()?, 16).ok()?;
            let _kind = fields.next()?;
            Some((address, fields.next()?.to_string()))
        })
        .collect()
}

#[test]
fn gc_sections_drops_what_ld_bfd_drops_and_icf_folds_the_twins() {
    let out = scratch!("link-gc-icf");
    let dir = fixtures().join("gc_icf");
    let names = |file: &str| -> Vec<String> {
        std::fs::read_to_string(dir.join(file))
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    };
    // `link` passes --gc-sections for this program, as its ld.bfd reference was linked.
    let collected = out.join("gc");
    link("gc_icf", &collected, &[]);
    let symbols: Vec<String> = symbols_of(&collected).into_iter().map(|(_, name)| name).collect();
    for absent in names("absent_symbols.txt") {
        assert!(!symbols.contains(&absent), "{absent} should be collected");
    }
    for present in names("present_symbols.txt")
        .iter()
        .filter(|name| !name.starts_with("__start_"))
    {
        assert!(symbols.contains(present), "{present} should be kept");
    }
    let folded = out.join("icf");
    let map = out.join("icf.map");
    link("gc_icf", &folded, &["--icf=all", "-Map", map.to_str().unwrap()]);
    let address = |name: &str| {
        symbols_of(&folded)
            .into_iter()
            .find(|(_, symbol)| symbol == name)
            .unwrap()
            .0
    };
    assert_eq!(
        address("twin_a"),
        address("twin_b"),
        "identical, never address-taken: folded"
    );
    assert_ne!(address("twin_a"), address("live_compute"));
    let expected = std::fs::read_to_string(dir.join("expected.stdout")).unwrap();
    assert_eq!(run_program(&folded).0, expected);
    let map = std::fs::read_to_string(map).unwrap();
    assert!(
        map.lines().next().unwrap().contains("VMA") && map.contains("main.o:(.text.prog_main)"),
        "{map}"
    );
    assert!(map.contains(&format!("{:x}", address("twin_a"))));
}

#[test]
fn a_symbol_ordering_file_places_the_named_functions_first() {
    let out = scratch!("link-ordering");
    let order = out.join("order.txt");
    std::fs::write(&order, "twin_b\n# comment\nprog_main\n").unwrap();
    let ordered = out.join("ordered");
    link("gc_icf", &ordered, &["--symbol-ordering-file", order.to_str().unwrap()]);
    let mut text: Vec<(u64, String)> = symbols_of(&ordered);
    text.sort();
    let first: Vec<&str> = text.iter().take(2).map(|(_, name)| name.as_str()).collect();
    assert_eq!(first, ["twin_b", "prog_main"]);
    let expected = std::fs::read_to_string(fixtures().join("gc_icf").join("expected.stdout")).unwrap();
    assert_eq!(run_program(&ordered).0, expected);
}

#[test]
fn a_missing_input_is_an_io_error_naming_it() {
    let out = scratch!("link-missing");
    let result = Command::new(env!("CARGO_BIN_EXE_neverc-spec"))
        .args(["link", "-o"])
        .arg(out.join("a.out"))
        .arg(out.join("nothing.o"))
        .output()
        .unwrap();
    assert_eq!(result.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(stderr.contains("nothing.o: cannot read"), "{stderr}");
    assert!(!out.join("a.out").exists());
}
