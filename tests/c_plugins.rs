#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `neverc-spec link --plugin PATH.so`: plugins written in C against the generated headers, on a real link (a
//! program with gcc objects and LLVM bitcode). An observer sees every transition before and after, in the
//! order the phases run; an interceptor wraps every interceptable transition through its continuation and
//! the output is byte-identical to the link without it; a continuation called twice or with a forged context
//! is refused; a skipper skips `relocate` only with the proof it was offered. A failing observer fails the
//! link naming the plugin and its status, and the previous output stays as it was. Hostile plugins (issue 23,
//! items 10 to 12): out-structures smaller than the host's get ABI_MISMATCH and no byte past their size, a
//! chain of interceptors past the bound is refused at registration, and a plugin that crashes the process is
//! named on stderr before the process dies of the signal.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use neverc_test_support::{build_c_plugin, repo, scratch, text};

const BIN: &str = env!("CARGO_BIN_EXE_neverc-spec");

fn counter(dir: &Path, defines: &[&str]) -> PathBuf {
    let output = dir.join(format!("counter{}.so", defines.join("-")));
    build_c_plugin(
        &repo().join("runtime/plugin-host/tests/fixtures/counter.c"),
        &output,
        defines,
    );
    output
}

/// The link machine's transitions, by name, with the `HIGH:LOW` id the plugin is given.
fn transitions() -> Vec<(&'static str, String)> {
    let tables = &neverc_tables::BUNDLED_PHASES;
    let machine = neverc_link::execute::link_state_machine(tables).unwrap();
    machine
        .transitions
        .iter()
        .map(|transition| {
            let phase = &tables.phases[transition.phase];
            (phase.name, format!("{:#x}:{:#x}", phase.id.high, phase.id.low))
        })
        .collect()
}

/// Links the fixture program with the counter plugin observing every transition.
fn link(plugin: &Path, output: &Path) -> Output {
    let arguments: Vec<String> = transitions()
        .into_iter()
        .map(|(_, id)| format!("org.example.counter:observe={id}"))
        .collect();
    link_with(&[plugin], &arguments, output)
}

#[test]
fn a_c_observer_sees_every_transition_before_and_after_in_order() {
    let dir = scratch!("c-plugin-observer");
    let output = dir.join("a.out");
    let linked = link(&counter(&dir, &[]), &output);
    assert!(linked.status.success(), "{}", text(&linked.stderr));
    // "before ID symbols=S sections=C": the phase and point, without the counts (plugin-host's tests check those).
    let notes: Vec<String> = text(&linked.stderr)
        .lines()
        .filter_map(|line| line.strip_prefix("note: plugin `org.example.counter`: "))
        .map(|note| note.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .collect();
    // The phases in the order they ran, from the trace.
    let ids = transitions();
    let mut expected = Vec::new();
    for line in text(&linked.stdout).lines() {
        let phase = line.split_whitespace().next().unwrap_or_default();
        if let Some((_, id)) = ids.iter().find(|(name, _)| *name == phase) {
            expected.push(format!("before {id}"));
            expected.push(format!("after {id}"));
        }
    }
    assert_eq!(expected.len(), 2 * ids.len(), "{}", text(&linked.stdout));
    assert_eq!(notes, expected);
    runs_as_the_fixture(&output);
}

/// Runs a linked program: it prints what the fixture's ld.bfd build prints.
fn runs_as_the_fixture(program: &Path) {
    let inputs = neverc_conformance::fixture_link_inputs(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    let ran = Command::new(program).output().unwrap();
    let dir = inputs[0].parent().unwrap();
    assert_eq!(
        text(&ran.stdout),
        std::fs::read_to_string(dir.join("expected.stdout")).unwrap()
    );
}

#[test]
fn a_failing_c_observer_fails_the_link_and_leaves_the_old_output() {
    let dir = scratch!("c-plugin-failing");
    let output = dir.join("a.out");
    std::fs::write(&output, b"the previous output").unwrap();
    let linked = link(&counter(&dir, &["MODE_FAIL_AFTER"]), &output);
    assert_eq!(linked.status.code(), Some(1), "{}", text(&linked.stderr));
    let stderr = text(&linked.stderr);
    assert!(
        stderr.contains("plugin `org.example.counter`: its observer returned PLUGIN_FAILURE"),
        "{stderr}"
    );
    // The first transition's AFTER observer failed: the link stopped there.
    assert!(stderr.contains(transitions()[0].0), "{stderr}");
    assert_eq!(std::fs::read(&output).unwrap(), b"the previous output");
}

#[test]
fn a_c_plugin_that_crashes_the_linker_leaves_the_old_output() {
    use std::os::unix::process::ExitStatusExt as _;
    let dir = scratch!("c-plugin-crash");
    let output = dir.join("a.out");
    std::fs::write(&output, b"the previous output").unwrap();
    // The plugin aborts after the image is emitted in memory, before the sealed commit gate renames it.
    let define = format!("MODE_CRASH_AT={}", low("neverc.link.emit_image"));
    let linked = link(&counter(&dir, &[&define]), &output);
    assert_eq!(linked.status.signal(), Some(6), "{}", text(&linked.stderr));
    assert_eq!(std::fs::read(&output).unwrap(), b"the previous output");
    // Nothing half-written is left beside it: the output was not begun.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("a.out"))
        .collect();
    assert_eq!(names, ["a.out"]);
}

fn chain(dir: &Path, defines: &[&str]) -> PathBuf {
    let output = dir.join(format!("chain{}.so", defines.join("-")));
    build_c_plugin(
        &repo().join("runtime/plugin-host/tests/fixtures/chain.c"),
        &output,
        defines,
    );
    output
}

fn id(phase: &str) -> String {
    let record = neverc_tables::BUNDLED_PHASES.phase_by_name(phase).unwrap();
    format!("{:#x}:{:#x}", record.id.high, record.id.low)
}

fn low(phase: &str) -> String {
    format!(
        "{:#x}",
        neverc_tables::BUNDLED_PHASES.phase_by_name(phase).unwrap().id.low
    )
}

/// Links the fixture program (with `--trace-phases`) with `plugins` and `arguments` (`ID:NAME=VALUE`).
fn link_with(plugins: &[&Path], arguments: &[String], output: &Path) -> Output {
    let inputs = neverc_conformance::fixture_link_inputs(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    let mut command = Command::new(BIN);
    command
        .arg("link")
        .arg("-o")
        .arg(output)
        .args(&inputs)
        .arg("--trace-phases");
    for plugin in plugins {
        command.arg("--plugin").arg(plugin);
    }
    for argument in arguments {
        command.arg("--plugin-arg").arg(argument);
    }
    command.output().unwrap()
}

/// `org.example.chain` arguments.
fn chain_arguments(arguments: &[String]) -> Vec<String> {
    arguments
        .iter()
        .map(|argument| format!("org.example.chain:{argument}"))
        .collect()
}

fn notes(output: &Output) -> Vec<String> {
    text(&output.stderr)
        .lines()
        .filter_map(|line| line.strip_prefix("note: plugin `org.example.chain`: "))
        .map(str::to_string)
        .collect()
}

/// The actor column of `phase` in the trace.
fn actor(output: &Output, phase: &str) -> String {
    let stdout = text(&output.stdout);
    let line = stdout
        .lines()
        .find(|line| line.starts_with(&format!("{phase} ")))
        .unwrap_or_default();
    line.split_whitespace().nth(2).unwrap_or_default().to_string()
}

#[test]
fn a_c_interceptor_wraps_every_transition_and_changes_no_byte() {
    let dir = scratch!("c-plugin-interceptor");
    let plain = dir.join("plain.out");
    assert!(link_with(&[], &[], &plain).status.success());
    let transitions = transitions();
    let arguments: Vec<String> = transitions.iter().map(|(_, id)| format!("intercept={id}")).collect();
    let wrapped = dir.join("wrapped.out");
    let linked = link_with(&[&chain(&dir, &[])], &chain_arguments(&arguments), &wrapped);
    assert!(linked.status.success(), "{}", text(&linked.stderr));
    let seen = notes(&linked);
    for (phase, _) in &transitions {
        assert!(
            seen.contains(&format!("continued {} -> 0", low(phase))),
            "{phase}: {seen:?}"
        );
        assert_eq!(actor(&linked, phase), "builtin", "{phase}");
    }
    assert_eq!(std::fs::read(&plain).unwrap(), std::fs::read(&wrapped).unwrap());
}

#[test]
fn a_continuation_runs_once_and_only_for_its_own_context() {
    let dir = scratch!("c-plugin-continuation");
    let gc = low("neverc.link.gc");
    // Links with the interceptor compiled in `mode` on gc; the link succeeds.
    let intercept_gc = |mode: &str| {
        let linked = link_with(
            &[&chain(&dir, &[mode])],
            &chain_arguments(&[format!("intercept={}", id("neverc.link.gc"))]),
            &dir.join(format!("{mode}.out")),
        );
        assert!(linked.status.success(), "{mode}: {}", text(&linked.stderr));
        linked
    };
    use neverc_tables::status::StatusCode;
    let twice = notes(&intercept_gc("MODE_TWICE"));
    let invalid_state = StatusCode::InvalidState.raw();
    assert!(twice.contains(&format!("again {gc} -> {invalid_state}")), "{twice:?}");
    let forged = notes(&intercept_gc("MODE_FORGE"));
    let invalid_argument = StatusCode::InvalidArgument.raw();
    assert!(
        forged.contains(&format!("forged continue {gc} -> {invalid_argument}")),
        "{forged:?}"
    );
    // Without calling its continuation the interceptor takes the phase's place.
    assert_eq!(actor(&intercept_gc("MODE_TAKE_PLACE"), "neverc.link.gc"), "interceptor");
}

#[test]
fn a_c_skipper_skips_relocate_only_with_the_offered_proof() {
    let dir = scratch!("c-plugin-skipper");
    let relocate = id("neverc.link.relocate");
    // A made-up handle is not the proof: relocate runs.
    let forged = link_with(
        &[&chain(&dir, &["MODE_FORGE"])],
        &chain_arguments(&[format!("skip={relocate}")]),
        &dir.join("a.out"),
    );
    assert!(forged.status.success(), "{}", text(&forged.stderr));
    assert!(notes(&forged).contains(&format!("offered {} -> 1", low("neverc.link.relocate"))));
    assert_eq!(actor(&forged, "neverc.link.relocate"), "builtin");
    // The offered proof skips it; this skipper publishes nothing, so the image has no relocated sections.
    let skipped = link_with(
        &[&chain(&dir, &[])],
        &chain_arguments(&[format!("skip={relocate}")]),
        &dir.join("b.out"),
    );
    assert_eq!(skipped.status.code(), Some(1));
    assert!(
        text(&skipped.stderr).contains("needs the relocated sections, which neverc.link.relocate has not produced"),
        "{}",
        text(&skipped.stderr)
    );
}

#[test]
fn mutations_are_refused_to_observers_and_checked_for_interceptors() {
    use neverc_tables::status::StatusCode;
    let dir = scratch!("c-plugin-mutations");
    let observer = dir.join("counter-mutate.so");
    build_c_plugin(
        &repo().join("runtime/plugin-host/tests/fixtures/counter.c"),
        &observer,
        &["MODE_MUTATE"],
    );
    let gc = id("neverc.link.gc");
    let linked = link_with(
        &[&observer, &chain(&dir, &["MODE_MUTATE"])],
        &[
            format!("org.example.counter:observe={gc}"),
            format!("org.example.chain:intercept={gc}"),
        ],
        &dir.join("a.out"),
    );
    assert!(linked.status.success(), "{}", text(&linked.stderr));
    let stderr = text(&linked.stderr);
    let low = low("neverc.link.gc");
    let code = |code: StatusCode| code.raw();
    // An observer's frame is read-only: beginning a mutation is a policy violation, before and after.
    let refused = format!(
        "note: plugin `org.example.counter`: mutate {low} -> {}",
        code(StatusCode::PolicyViolation)
    );
    assert_eq!(stderr.matches(&refused).count(), 2, "{stderr}");
    let seen = notes(&linked);
    for expected in [
        format!("begin {low} -> 0"),
        format!("forged symbol {low} -> {}", code(StatusCode::WrongType)),
        format!("abandon {low} -> 0"),
        format!("abandon again {low} -> {}", code(StatusCode::InvalidState)),
    ] {
        assert!(seen.contains(&expected), "{expected}: {seen:?}");
    }
}

#[test]
fn a_c_image_verifier_pages_the_segments_and_can_refuse_the_image() {
    let dir = scratch!("c-plugin-verifier");
    let build = |defines: &[&str]| {
        let output = dir.join(format!("wx{}.so", defines.join("-")));
        build_c_plugin(
            &repo().join("runtime/plugin-host/tests/fixtures/verifier.c"),
            &output,
            defines,
        );
        output
    };
    let output = dir.join("a.out");
    let link = |plugin: &Path| link_with(&[plugin], &[], &output);
    // The program has no writable and executable segment: it is verified, every segment paged.
    let verified = link(&build(&[]));
    assert!(verified.status.success(), "{}", text(&verified.stderr));
    let note = text(&verified.stderr)
        .lines()
        .find_map(|line| {
            line.strip_prefix("note: plugin `org.example.wx`: verified ")
                .map(str::to_string)
        })
        .unwrap();
    let words: Vec<&str> = note.split_whitespace().collect();
    assert_eq!(words[0], words[4].trim_end_matches("),"), "{note}");
    assert!(note.ends_with("W+X 0"), "{note}");
    let written = std::fs::read(&output).unwrap();
    // A verifier that refuses executable segments refuses the image: the link fails and the output stays.
    let refused = link(&build(&["MODE_STRICT"]));
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains("plugin `org.example.wx`: its image verifier returned VERIFICATION_FAILED"),
        "{}",
        text(&refused.stderr)
    );
    assert_eq!(std::fs::read(&output).unwrap(), written);
}

#[test]
fn a_c_ordering_interceptor_gives_the_symbol_ordering_files_bytes() {
    let dir = scratch!("c-plugin-order");
    let plugin = dir.join("order.so");
    build_c_plugin(&repo().join("runtime/plugin-host/tests/fixtures/order.c"), &plugin, &[]);
    let inputs = neverc_conformance::fixture_link_inputs(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    // The functions of the gcc objects (nm reads no bitcode), in reverse order of their names: not the order
    // they would have.
    let mut names: Vec<String> = Vec::new();
    for input in &inputs {
        let listed = Command::new("nm").arg("--defined-only").arg(input).output().unwrap();
        names.extend(
            text(&listed.stdout)
                .lines()
                .filter_map(|line| line.split_once(" T ").map(|(_, name)| name.to_string())),
        );
    }
    names.sort();
    names.reverse();
    assert!(names.len() >= 2, "{names:?}");
    let order = dir.join("order.txt");
    std::fs::write(&order, names.join("\n") + "\n").unwrap();
    let link = |output: &str, extra: &[std::ffi::OsString]| {
        let linked = Command::new(BIN)
            .arg("link")
            .arg("-o")
            .arg(dir.join(output))
            .args(&inputs)
            .args(extra)
            .output()
            .unwrap();
        assert!(linked.status.success(), "{}", text(&linked.stderr));
        std::fs::read(dir.join(output)).unwrap()
    };
    let by_plugin = link(
        "plugin.out",
        &[
            "--plugin".into(),
            plugin.into_os_string(),
            "--plugin-arg".into(),
            format!("org.example.order:file={}", order.display()).into(),
            "--plugin-arg".into(),
            format!("org.example.order:layout={}", id("neverc.link.layout")).into(),
        ],
    );
    let by_option = link("option.out", &["--symbol-ordering-file".into(), order.into_os_string()]);
    let plain = link("plain.out", &[]);
    assert_eq!(by_plugin, by_option);
    assert_ne!(
        by_plugin, plain,
        "the order file changed nothing; the test would prove nothing"
    );
    // A second plugin, intercepting relocate, erases the order constraints (the layout runs again without
    // them: the plain link's bytes) or reverses their values. Atoms are whole input sections here and the
    // first constraint on an atom wins, so the order file names one function of each object for this.
    let mut firsts: Vec<String> = Vec::new();
    for input in &inputs {
        let listed = Command::new("nm").arg("--defined-only").arg(input).output().unwrap();
        firsts.extend(
            text(&listed.stdout)
                .lines()
                .find_map(|line| line.split_once(" T ").map(|(_, name)| name.to_string())),
        );
    }
    assert!(firsts.len() >= 3, "{firsts:?}");
    let write_order = |name: &str, names: &[String]| {
        let path = dir.join(name);
        std::fs::write(&path, names.join("\n") + "\n").unwrap();
        path
    };
    let forward = write_order("firsts.txt", &firsts);
    firsts.reverse();
    let backward = write_order("firsts-reversed.txt", &firsts);
    let stager = dir.join("stager.so");
    build_c_plugin(
        &repo().join("runtime/plugin-host/tests/fixtures/stager.c"),
        &stager,
        &[],
    );
    let both = |output: &str, change: &str| {
        link(
            output,
            &[
                "--plugin".into(),
                dir.join("order.so").into_os_string(),
                "--plugin-arg".into(),
                format!("org.example.order:file={}", forward.display()).into(),
                "--plugin-arg".into(),
                format!("org.example.order:layout={}", id("neverc.link.layout")).into(),
                "--plugin".into(),
                stager.clone().into_os_string(),
                "--plugin-arg".into(),
                format!("org.example.stager:phase={}", id("neverc.link.relocate")).into(),
                "--plugin-arg".into(),
                format!("org.example.stager:{change}").into(),
            ],
        )
    };
    let same = |a: &[u8], b: &[u8]| a == b;
    assert!(
        same(&both("erased.out", "erase=order"), &plain),
        "erasing the constraints is not the plain link"
    );
    let reversed = link(
        "reversed-option.out",
        &["--symbol-ordering-file".into(), backward.into_os_string()],
    );
    let forward_option = link(
        "forward-option.out",
        &["--symbol-ordering-file".into(), forward.clone().into_os_string()],
    );
    assert!(!same(&reversed, &forward_option), "reversing the order changed nothing");
    assert!(
        same(&both("reversed.out", "reverse=order"), &reversed),
        "reversed constraints are not the reversed file's layout"
    );
}

fn lto_provider(dir: &Path, defines: &[&str]) -> PathBuf {
    let output = dir.join(format!("lto2{}.so", defines.join("-")));
    build_c_plugin(
        &repo().join("runtime/plugin-host/tests/fixtures/ltoprov.c"),
        &output,
        defines,
    );
    output
}

/// The plugin's notes, without the prefix naming it.
fn lto_notes(output: &Output) -> Vec<String> {
    text(&output.stderr)
        .lines()
        .filter_map(|line| line.strip_prefix("note: plugin `org.example.lto2`: "))
        .map(str::to_string)
        .collect()
}

/// The fixture's bitcode program linked without plugins (the built-in llvm-lto2 provider): its bytes.
fn plain_lto_link(dir: &Path) -> Vec<u8> {
    let plain = dir.join("plain.out");
    let linked = link_with(&[], &[], &plain);
    assert!(linked.status.success(), "{}", text(&linked.stderr));
    std::fs::read(&plain).unwrap()
}

#[test]
fn a_c_lto_provider_running_llvm_lto2_generates_the_programs_code() {
    let dir = scratch!("c-plugin-lto-provider");
    let plain = plain_lto_link(&dir);
    let output = dir.join("a.out");
    let linked = link_with(&[&lto_provider(&dir, &[])], &[], &output);
    assert!(linked.status.success(), "{}", text(&linked.stderr));
    let notes = lto_notes(&linked);
    assert_eq!(notes[0], "registered: OK");
    // The fixture has two bitcode modules (ops.o and libdata.a's member), merged into one object.
    let codegen = notes.iter().find(|note| note.starts_with("codegen: ")).unwrap();
    assert!(codegen.starts_with("codegen: 2 modules, "), "{codegen}");
    assert!(codegen.ends_with(", 1 objects"), "{codegen}");
    // The same tool with the same arguments: the same program, byte for byte, which runs as ld.bfd's build.
    assert_eq!(std::fs::read(&output).unwrap(), plain);
    runs_as_the_fixture(&output);
}

#[test]
fn a_c_lto_providers_cache_key_is_asked_for_again_with_the_size_it_needs() {
    let dir = scratch!("c-plugin-lto-cache");
    let plugin = lto_provider(&dir, &[]);
    let cache = dir.join("cache");
    let output = dir.join("a.out");
    let arguments = |output: &Path| {
        let inputs = neverc_conformance::fixture_link_inputs(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
        Command::new(BIN)
            .arg("link")
            .arg("-o")
            .arg(output)
            .args(&inputs)
            .arg("--lto-cache-dir")
            .arg(&cache)
            .arg("--plugin")
            .arg(&plugin)
            .output()
            .unwrap()
    };
    let cold = arguments(&output);
    assert!(cold.status.success(), "{}", text(&cold.stderr));
    let notes = lto_notes(&cold);
    // The key is 81 bytes: the host's first 64-byte buffer is too small, and it asks again with 81.
    assert_eq!(
        notes[1..3],
        ["key capacity 64 size 81", "key capacity 81 size 81"],
        "{notes:?}"
    );
    assert!(notes[3].starts_with("codegen: "), "{notes:?}");
    let first = std::fs::read(&output).unwrap();
    // The second link finds the objects under the same key: the provider is not asked to generate code.
    let warm = arguments(&output);
    assert!(warm.status.success(), "{}", text(&warm.stderr));
    let notes = lto_notes(&warm);
    assert!(!notes.iter().any(|note| note.starts_with("codegen: ")), "{notes:?}");
    assert_eq!(notes.last().unwrap(), "key capacity 81 size 81");
    assert_eq!(std::fs::read(&output).unwrap(), first);
}

#[test]
fn refused_c_lto_provider_descriptors_leave_the_link_to_the_built_in_provider() {
    let dir = scratch!("c-plugin-lto-refused");
    let plain = plain_lto_link(&dir);
    let output = dir.join("a.out");
    // A flag bit the ABI does not declare: INVALID_DESCRIPTOR, and llvm-lto2 runs as without the plugin.
    let unknown = link_with(&[&lto_provider(&dir, &["MODE_UNKNOWN_FLAGS"])], &[], &output);
    assert!(unknown.status.success(), "{}", text(&unknown.stderr));
    assert_eq!(lto_notes(&unknown), ["registered: INVALID_DESCRIPTOR"]);
    assert_eq!(std::fs::read(&output).unwrap(), plain);
    // The same id twice: the second is DUPLICATE_ID, the first generates the code.
    let twice = link_with(&[&lto_provider(&dir, &["MODE_TWICE"])], &[], &output);
    assert!(twice.status.success(), "{}", text(&twice.stderr));
    let notes = lto_notes(&twice);
    assert_eq!(notes[..2], ["registered: OK", "registered again: DUPLICATE_ID"]);
    assert!(notes[2].starts_with("codegen: "), "{notes:?}");
}

#[test]
fn a_failing_or_lying_c_lto_provider_fails_the_link_and_leaves_the_old_output() {
    let dir = scratch!("c-plugin-lto-failing");
    let output = dir.join("a.out");
    std::fs::write(&output, b"previous").unwrap();
    for (mode, says) in [
        (
            "MODE_FAIL",
            "LTO provider `org.example.lto2`: its Codegen returned PLUGIN_FAILURE",
        ),
        (
            "MODE_FOREIGN_ARTIFACT",
            "LTO provider `org.example.lto2`: object 0 of its candidate names no artifact it created in this call",
        ),
    ] {
        let failed = link_with(&[&lto_provider(&dir, &[mode])], &[], &output);
        assert_eq!(failed.status.code(), Some(1), "{mode}: {}", text(&failed.stderr));
        assert!(text(&failed.stderr).contains(says), "{mode}: {}", text(&failed.stderr));
        assert_eq!(std::fs::read(&output).unwrap(), b"previous");
    }
}

#[test]
fn a_c_lto_provider_gets_statuses_for_stale_forged_and_short_requests() {
    let dir = scratch!("c-plugin-lto-probe");
    let output = dir.join("a.out");
    let inputs = neverc_conformance::fixture_link_inputs(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    // With a task cache the provider builds a key first; its task handle is stale in Codegen.
    let linked = Command::new(BIN)
        .arg("link")
        .arg("-o")
        .arg(&output)
        .args(&inputs)
        .arg("--lto-cache-task")
        .arg("--plugin")
        .arg(lto_provider(&dir, &["MODE_PROBE"]))
        .output()
        .unwrap();
    assert!(linked.status.success(), "{}", text(&linked.stderr));
    let notes = lto_notes(&linked);
    assert!(
        notes.contains(
            &"probe stale-task=STALE_HANDLE foreign-module=STALE_HANDLE wrong-kind=WRONG_TYPE \
              short-stride=INVALID_ARGUMENT past-end=INVALID_ARGUMENT"
                .to_string()
        ),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|note| note.starts_with("codegen: 2 modules")),
        "{notes:?}"
    );
}

/// Links with `plugins` given `arguments` and checks that every slot `whats` names answered the `plugin`'s
/// structure of 16 bytes (the header alone) and its structure of 8 (less than the header) with ABI_MISMATCH,
/// and wrote no byte past either (describe.h's NARROW lines).
fn assert_narrow_answers(plugins: &[&Path], arguments: &[String], output: &Path, plugin: &str, whats: &[&str]) {
    let linked = link_with(plugins, arguments, output);
    assert!(linked.status.success(), "{}", text(&linked.stderr));
    let lines: Vec<String> = text(&linked.stderr)
        .lines()
        .filter_map(|line| line.strip_prefix(&format!("note: plugin `{plugin}`: narrow ")))
        .map(str::to_string)
        .collect();
    let abi_mismatch = neverc_tables::status::StatusCode::AbiMismatch.raw();
    let expected: Vec<String> = whats
        .iter()
        .flat_map(|what| [16, 8].map(|size| format!("{what} size={size} -> {abi_mismatch} guard=intact")))
        .collect();
    assert_eq!(lines, expected);
}

/// Issue 23, item 10: the host wrote a whole structure of its own (56 bytes and more) into out-structures a
/// plugin said were 16 bytes, and read a 16-byte page as a whole page (taking the bytes after it for its
/// `Data`, capacity and stride, which crashed the link with SIGSEGV). Every slot that writes a versioned
/// structure into a plugin's memory (the phase API's graph and image, the graph's summary, an entity's info,
/// the proof's, the image's summary, a page of entities or of segments, and an LTO provider's request, module,
/// resolution and pages) now checks the `StructSize` first: ABI_MISMATCH, and not one byte written.
#[test]
fn item_10_the_host_writes_nothing_past_the_struct_size_a_plugin_declares() {
    let dir = scratch!("c-plugin-narrow");
    let narrow = dir.join("narrow.so");
    build_c_plugin(
        &repo().join("runtime/plugin-host/tests/fixtures/narrow.c"),
        &narrow,
        &[],
    );
    // After emit_image the phase has an image; the verifier's image follows in image_verify.
    assert_narrow_answers(
        &[&narrow],
        &[format!("org.example.narrow:observe={}", id("neverc.link.emit_image"))],
        &dir.join("a.out"),
        "org.example.narrow",
        &[
            "get-graph",
            "get-image",
            "graph-info",
            "proof-info",
            "image-info",
            "symbol-info",
            "symbol-page",
            "segment-page",
            "verifier-image-info",
            "verifier-segment-page",
        ],
    );
    runs_as_the_fixture(&dir.join("a.out"));
    assert_narrow_answers(
        &[&lto_provider(&dir, &["MODE_NARROW"])],
        &[],
        &dir.join("b.out"),
        "org.example.lto2",
        &[
            "get-request",
            "module-info",
            "resolution-info",
            "module-page",
            "resolution-page",
        ],
    );
}

/// Issue 23, item 11: 4,000 interceptors of one plugin on one phase nested 4,000 deep on the stack and
/// aborted the link (exit 134, "thread 'main' has overflowed its stack"). A phase takes at most
/// `MAX_INTERCEPTORS_PER_PHASE`: the next one is refused at registration with RESOURCE_EXHAUSTED, and a
/// plugin that fails its registration over it fails the link as a bad plugin request (exit 1), naming the
/// plugin, the phase and the bound. A chain as long as the bound links as the plain link does.
#[test]
fn item_11_a_phase_refuses_interceptors_past_its_bound_instead_of_overflowing_the_stack() {
    use neverc_link::plugin::MAX_INTERCEPTORS_PER_PHASE;
    let dir = scratch!("c-plugin-many-interceptors");
    let plugin = chain(&dir, &[]);
    let gc = format!("intercept={}", id("neverc.link.gc"));
    let refused = link_with(
        &[&plugin],
        &chain_arguments(&[gc.clone(), "repeat=4000".into()]),
        &dir.join("refused.out"),
    );
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    let error = stderr
        .lines()
        .find(|line| line.starts_with("error: "))
        .unwrap_or_default();
    for part in [
        "plugin `org.example.chain`",
        "RESOURCE_EXHAUSTED",
        &format!("`neverc.link.gc` already has {MAX_INTERCEPTORS_PER_PHASE} interceptors"),
        &format!("at most {MAX_INTERCEPTORS_PER_PHASE}"),
    ] {
        assert!(error.contains(part), "{part}: {stderr}");
    }
    assert!(!dir.join("refused.out").exists());
    // The longest chain a phase may have runs, each interceptor through its continuation.
    let plain = dir.join("plain.out");
    assert!(link_with(&[], &[], &plain).status.success());
    let bounded = dir.join("bounded.out");
    let linked = link_with(
        &[&plugin],
        &chain_arguments(&[gc, format!("repeat={MAX_INTERCEPTORS_PER_PHASE}")]),
        &bounded,
    );
    assert!(linked.status.success(), "{}", text(&linked.stderr));
    let continued = format!("continued {} -> 0", low("neverc.link.gc"));
    assert_eq!(
        notes(&linked).iter().filter(|note| **note == continued).count(),
        MAX_INTERCEPTORS_PER_PHASE
    );
    assert_eq!(std::fs::read(&plain).unwrap(), std::fs::read(&bounded).unwrap());
}

/// Issue 23, item 12: a plugin that crashed the linker (SIGSEGV, SIGABRT, SIGBUS, SIGILL, SIGFPE, or a stack
/// overflow) killed it without a word of which plugin. The process still dies of the signal, with the same
/// status, but first writes one line naming the plugin (id and path) and what it was doing; before the plugin
/// said its id, the line names its library's path. A stack overflow in the plugin is named too (the standard
/// library then reports the overflow and aborts, as before).
#[test]
fn item_12_a_plugin_that_crashes_the_process_is_named_before_it_dies_of_the_signal() {
    use std::os::unix::process::ExitStatusExt as _;
    let dir = scratch!("c-plugin-crasher");
    let plugin = dir.join("crasher.so");
    build_c_plugin(
        &repo().join("runtime/plugin-host/tests/fixtures/crasher.c"),
        &plugin,
        &[],
    );
    let fatal = |output: &Output| -> Vec<String> {
        text(&output.stderr)
            .lines()
            .filter(|line| line.starts_with("fatal: "))
            .map(str::to_string)
            .collect()
    };
    let output = dir.join("a.out");
    std::fs::write(&output, b"the previous output").unwrap();
    for (how, signal, name) in [
        ("segv", libc_signal::SEGV, "SIGSEGV"),
        ("abort", libc_signal::ABRT, "SIGABRT"),
        ("bus", libc_signal::BUS, "SIGBUS"),
        ("ill", libc_signal::ILL, "SIGILL"),
        ("fpe", libc_signal::FPE, "SIGFPE"),
        ("overflow", libc_signal::ABRT, "SIGSEGV"),
    ] {
        let crashed = link_with(
            &[&plugin],
            &[
                format!("org.example.crasher:crash={how}"),
                format!("org.example.crasher:observe={}", id("neverc.link.gc")),
            ],
            &output,
        );
        assert_eq!(
            crashed.status.signal(),
            Some(signal),
            "{how}: {}",
            text(&crashed.stderr)
        );
        assert_eq!(
            fatal(&crashed),
            [format!(
                "fatal: {name} in plugin `org.example.crasher` ({}), in its observer of neverc.link.gc",
                plugin.display()
            )],
            "{how}: {}",
            text(&crashed.stderr)
        );
        assert_eq!(std::fs::read(&output).unwrap(), b"the previous output");
    }
    // In its registration (`audit --plugin`), and in its entry point, before it said its id.
    for (at, callee) in [
        (
            "register",
            format!("plugin `org.example.crasher` ({}), in its Register", plugin.display()),
        ),
        (
            "entry",
            format!("plugin {}, in its neverc_plugin_entry", plugin.display()),
        ),
    ] {
        let crashed = Command::new(BIN)
            .current_dir(repo())
            .args(["audit", "--plugin"])
            .arg(&plugin)
            .args(["--plugin-arg", &format!("org.example.crasher:at={at}")])
            .output()
            .unwrap();
        assert_eq!(
            crashed.status.signal(),
            Some(libc_signal::SEGV),
            "{at}: {}",
            text(&crashed.stderr)
        );
        assert_eq!(fatal(&crashed), [format!("fatal: SIGSEGV in {callee}")], "{at}");
    }
    // A plugin that does not crash leaves no such line.
    let linked = link_with(
        &[&plugin],
        &[
            "org.example.crasher:at=nowhere".to_string(),
            format!("org.example.crasher:observe={}", id("neverc.link.gc")),
        ],
        &output,
    );
    assert!(linked.status.success(), "{}", text(&linked.stderr));
    assert!(fatal(&linked).is_empty());
}

/// The numbers of the signals item 12 expects (Linux's, as the exit status 128 + N shows them).
mod libc_signal {
    pub const ILL: i32 = 4;
    pub const ABRT: i32 = 6;
    pub const BUS: i32 = 7;
    pub const FPE: i32 = 8;
    pub const SEGV: i32 = 11;
}
