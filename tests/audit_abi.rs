#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `neverc-spec audit --abi DIR --abi-baseline OLD_DIR` as a user runs it: copies of the bundled `abi/` with one
//! change each, the classified change at its item, and exit 5 for breaking changes, 0 otherwise.

use std::path::{Path, PathBuf};
use std::process::Output;

use neverc_test_support::{repo, run_in, scratch, text};

fn run(args: &[&str]) -> Output {
    run_in(env!("CARGO_BIN_EXE_neverc-spec"), &repo(), args)
}

/// A copy of the bundled `abi/` in `dir`, with `from` replaced by `to` (once, and it must be there) in `file`.
fn copy_with(dir: &Path, file: &str, from: &str, to: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for entry in std::fs::read_dir(repo().join("abi")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches(from).count(), 1, "`{from}` in {file}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    dir.to_path_buf()
}

/// The ABI diff's lines of the text report, without its summary.
fn abi_lines(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .skip_while(|line| !line.starts_with("ABI baseline diff"))
        .skip(1)
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// Runs the ABI audit of `new` against `old`, with `extra` arguments.
fn audit_with(old: &Path, new: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "audit",
        "--abi",
        new.to_str().unwrap(),
        "--abi-baseline",
        old.to_str().unwrap(),
    ];
    args.extend(extra);
    run(&args)
}

/// Runs the ABI audit of `new` against `old` and returns the exit code and the ABI diff's lines.
fn audit(old: &Path, new: &Path) -> (Option<i32>, Vec<String>, String) {
    let output = audit_with(old, new, &[]);
    let stdout = text(&output.stdout);
    (output.status.code(), abi_lines(&stdout), text(&output.stderr))
}

const OPTIMIZATION_LEVELS: &str = "    { name = \"OptimizationLevel\", type = \"u32\", doc = \"The optimization level (0 to 3).\" },\n    { name = \"CodeGenOptimizationLevel\", type = \"u32\", doc = \"The code generation optimization level.\" },\n";
const GET_MODULE_PAGE: &str = "    { name = \"GetModulePage\", params = [\"Task: TaskHandle\", \"Request: LTORequestHandle\", \"Cursor: u64\", \"Page: LinkEntityPage*\"], doc = \"Pages the request's LTOInputModuleInfo entries.\" },\n";
const REGISTER_PROVIDER: &str = "    { name = \"RegisterProvider\", params = [\"RegistrarContext: void*\", \"Descriptor: const LTOProviderDescriptor*\"], doc = \"Registers a provider.\" },\n";

#[test]
fn the_unchanged_abi_has_no_change() {
    let (code, lines, stderr) = audit(&repo().join("abi"), Path::new("abi"));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(lines, ["no breaking change"]);
    let output = run(&["audit", "--abi-baseline", "abi"]);
    assert!(
        text(&output.stdout).contains("ABI baseline diff abi → abi: 0 breaking, 0 warning(s), 0 compatible, 0 allowed"),
        "{}",
        text(&output.stdout)
    );
}

#[test]
fn one_change_each_is_classified_at_its_item() {
    let dir = scratch!("audit-abi-cli");
    let bundled = repo().join("abi");
    let swapped = OPTIMIZATION_LEVELS
        .lines()
        .rev()
        .map(|line| format!("{line}\n"))
        .collect::<String>();
    // Each case: its name, the file changed, the text replaced and its replacement, the exit code, and the
    // start of each line of the diff.
    type Case<'a> = (&'a str, &'a str, &'a str, &'a str, i32, &'a [&'a str]);
    let cases: [Case; 5] = [
        (
            "field-reordered",
            "lto.toml",
            OPTIMIZATION_LEVELS,
            &swapped,
            5,
            &["breaking field-reordered field `LTOOptions."],
        ),
        (
            "slot-removed",
            "lto.toml",
            GET_MODULE_PAGE,
            "",
            5,
            &["breaking slot-removed slot `LTOAPI.GetModulePage` (position 2) was removed"],
        ),
        (
            "slot-appended",
            "lto.toml",
            REGISTER_PROVIDER,
            &format!(
                "{REGISTER_PROVIDER}    {{ name = \"UnregisterProvider\", params = [\"RegistrarContext: void*\", \"ID: u64\"], doc = \"Unregisters a provider.\" }},\n"
            ),
            0,
            &[
                "warning minor-not-bumped `LTORegistrarAPI` gained slots",
                "compatible slot-appended slot `LTORegistrarAPI.UnregisterProvider` was appended (position 2)",
            ],
        ),
        (
            "value-renumbered",
            "lto.toml",
            "{ name = \"TASK\", value = 1,",
            "{ name = \"TASK\", value = 9,",
            5,
            &["breaking value-renumbered value `LTOCacheScope.TASK` changed 1 → 9"],
        ),
        (
            "type-changed",
            "lto.toml",
            "{ name = \"ThreadBudget\", type = \"u32\"",
            "{ name = \"ThreadBudget\", type = \"i32\"",
            5,
            &["breaking field-type field `LTOOptions.ThreadBudget` changed type `u32` → `i32`"],
        ),
    ];
    for (name, file, from, to, expected, wanted) in cases {
        let new = copy_with(&dir.join(name), file, from, to);
        let (code, lines, stderr) = audit(&bundled, &new);
        println!("{name}: {lines:?}");
        assert_eq!(code, Some(expected), "{name}: {lines:?} {stderr}");
        assert_eq!(
            lines.len(),
            wanted.len() + usize::from(expected == 0),
            "{name}: {lines:?}"
        );
        for (line, want) in lines.iter().zip(wanted) {
            assert!(line.starts_with(want), "{name}: `{line}` does not start with `{want}`");
        }
        if expected == 5 {
            assert!(
                stderr.contains("audit failed: 1 breaking ABI change(s) against"),
                "{name}: {stderr}"
            );
        }
    }
}

#[test]
fn an_interface_made_experimental_may_then_change() {
    let dir = scratch!("audit-abi-experimental");
    let stable =
        "name = \"LTO\"\nid = \"0x4e43504c544f0001:0x0000000000000001\"\nmajor = 1\nminor = 0\nstability = \"stable\"";
    let experimental = stable.replace("\"stable\"", "\"experimental\"");
    let old = copy_with(&dir.join("old"), "lto.toml", stable, &experimental);
    let new = copy_with(&dir.join("new"), "lto.toml", stable, &experimental);
    let text = std::fs::read_to_string(new.join("lto.toml")).unwrap();
    std::fs::write(new.join("lto.toml"), text.replacen(GET_MODULE_PAGE, "", 1)).unwrap();
    let (code, lines, stderr) = audit(&old, &new);
    assert_eq!(code, Some(0), "{lines:?} {stderr}");
    assert_eq!(
        lines,
        [
            "allowed slot-removed slot `LTOAPI.GetModulePage` (position 2) was removed",
            "no breaking change"
        ]
    );

    // Making it experimental is itself breaking against the stable baseline.
    let (code, lines, _) = audit(&repo().join("abi"), &old);
    assert_eq!(code, Some(5));
    assert_eq!(
        lines,
        ["breaking stability-downgrade stable interface `LTO` was downgraded to experimental"]
    );
}

#[test]
fn json_and_html_carry_the_abi_changes_and_usage_errors_exit_2() {
    let dir = scratch!("audit-abi-formats");
    let new = copy_with(&dir.join("new"), "lto.toml", GET_MODULE_PAGE, "");
    let output = audit_with(Path::new("abi"), &new, &["--format", "json"]);
    assert_eq!(output.status.code(), Some(5));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let changes = value["abi_baseline"]["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0]["class"], "breaking");
    assert_eq!(changes[0]["rule"], "slot-removed");
    assert_eq!(changes[0]["subject"], "LTOAPI.GetModulePage");
    assert_eq!(value["abi_baseline"]["old"], "abi");
    assert!(value.get("baseline").is_none());

    let page = dir.join("audit.html");
    let output = audit_with(
        Path::new("abi"),
        &new,
        &["--format", "html", "-o", page.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(5));
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(page.contains("<section id=\"abi-baseline\">"));
    assert!(page.contains("<a href=\"#abi-baseline\">ABI baseline diff</a>"));
    assert!(page.contains("<code>LTOAPI.GetModulePage</code>"));

    // Both diffs at once: the schema's and the ABI's, each in its own section.
    let output = run(&["audit", "--baseline", "PhaseSchema.json", "--abi-baseline", "abi"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("\nBaseline diff PhaseSchema.json → PhaseSchema.json: 0 breaking"));
    assert!(stdout.contains("\nABI baseline diff abi → abi: 0 breaking"));

    // --abi alone has nothing to diff against; a directory without declarations is refused.
    assert_eq!(run(&["audit", "--abi", "abi"]).status.code(), Some(2));
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let output = run(&["audit", "--abi-baseline", empty.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("holds no `*.toml`"),
        "{}",
        text(&output.stderr)
    );
}
