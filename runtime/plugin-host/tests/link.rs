#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A C observer reads the graph through `NevercLinkPhaseAPI.GetGraph` and `NevercLinkAPI.GetGraphInfo` at
//! every observer point of every transition of a real link; the counts it reports equal the ones a Rust
//! observer of the same points reads from the graph.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use neverc_link::context::{LinkContext, LinkOptions};
use neverc_link::execute::{link_state_machine, run_link};
use neverc_link::graph::EntityKind;
use neverc_link::plugin::{LinkPlugin, ObserverPoint, Registrar, Registry};
use neverc_link::status::Status;
use neverc_plugin_host::{CPlugin, PluginArgument, load};
use neverc_tables::BUNDLED_PHASES;
use neverc_test_support::{build_c_plugin, scratch};

/// A Rust plugin recording what an observer sees, as the C plugin reports it (with `paging`, also the
/// paged counts it reports after each phase, before its own line).
struct Recorder {
    phases: Vec<(&'static str, String)>,
    seen: Rc<RefCell<Vec<String>>>,
    paging: bool,
}

impl LinkPlugin for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }

    fn register(&mut self, registrar: &mut Registrar<'_>) -> Result<(), Status> {
        for (phase, id) in &self.phases {
            for (point, word) in [(ObserverPoint::Before, "before"), (ObserverPoint::After, "after")] {
                let (seen, id, paging) = (Rc::clone(&self.seen), id.clone(), self.paging);
                registrar.observe(
                    phase,
                    point,
                    Box::new(move |frame| {
                        let graph = frame.graph();
                        if paging && word == "after" {
                            let named = graph.symbols.iter().filter(|symbol| !symbol.name.is_empty()).count();
                            seen.borrow_mut().push(format!(
                                "paged {id} symbols={} sections={} named={named}",
                                graph.count(EntityKind::Symbol),
                                graph.count(EntityKind::Section)
                            ));
                        }
                        seen.borrow_mut().push(format!(
                            "{word} {id} symbols={} sections={}",
                            graph.count(EntityKind::Symbol),
                            graph.count(EntityKind::Section)
                        ));
                        Ok(())
                    }),
                )?;
            }
        }
        Ok(())
    }
}

/// Links the fixture program with the counter plugin built with `defines` observing every transition, and
/// a Rust recorder of the same points; returns what each reported.
fn counted(defines: &[&str], paging: bool) -> (Vec<String>, Vec<String>) {
    let dir = scratch!("plugin-host-link-{}", defines.join("-"));
    let plugin_path = dir.join("counter.so");
    build_c_plugin(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/counter.c"),
        &plugin_path,
        defines,
    );
    let phases = transitions();
    let arguments: Vec<PluginArgument> = phases
        .iter()
        .map(|(_, id)| PluginArgument {
            plugin: "org.example.counter".to_string(),
            name: "observe".to_string(),
            value: Some(id.clone()),
        })
        .collect();
    let mut c_plugin = CPlugin::new(load(&plugin_path, &arguments).unwrap());
    let seen = Rc::new(RefCell::new(Vec::new()));
    let mut recorder = Recorder {
        phases,
        seen: Rc::clone(&seen),
        paging,
    };
    let mut registry = Registry::default();
    registry.register(&BUNDLED_PHASES, &mut c_plugin).unwrap();
    registry.register(&BUNDLED_PHASES, &mut recorder).unwrap();
    let inputs = neverc_conformance::fixture_link_inputs(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    let mut context = LinkContext::new(LinkOptions::new(inputs, dir.join("a.out")));
    run_link(&mut context, &BUNDLED_PHASES, &mut registry).unwrap();
    let reported: Vec<String> = c_plugin.reports().into_iter().map(|(_, text)| text).collect();
    let recorded = seen.borrow().clone();
    (reported, recorded)
}

#[test]
fn a_c_observer_reads_the_graphs_counts_at_every_point() {
    let (reported, recorded) = counted(&[], false);
    assert_eq!(reported, recorded);
    // The counts change as the link goes: read_inputs fills the graph, lto_generate adds the LTO objects.
    assert!(reported.iter().any(|line| line.ends_with("symbols=0 sections=0")));
    assert!(reported.len() >= 26, "{reported:?}");
}

#[test]
fn a_c_observer_pages_every_symbol_and_section_through_caller_owned_pages() {
    // Seven elements to a page: every kind spans several pages.
    let (reported, recorded) = counted(&["MODE_PAGE"], true);
    assert_eq!(reported, recorded);
    assert!(
        reported
            .iter()
            .any(|line| line.starts_with("paged ") && !line.contains("symbols=0 "))
    );
}

#[test]
fn a_page_whose_stride_is_smaller_than_the_element_is_refused() {
    let (reported, _) = counted(&["MODE_PAGE", "ELEMENT_STRIDE_CUT=8"], true);
    let refused = format!("-> {}", neverc_tables::status::StatusCode::InvalidArgument.raw());
    let paged: Vec<&String> = reported.iter().filter(|line| line.starts_with("paged ")).collect();
    assert!(!paged.is_empty());
    assert!(paged.iter().all(|line| line.ends_with(&refused)), "{paged:?}");
}

/// The transitions of the link machine: their phase names and `HIGH:LOW` ids.
fn transitions() -> Vec<(&'static str, String)> {
    let machine = link_state_machine(&BUNDLED_PHASES).unwrap();
    machine
        .transitions
        .iter()
        .map(|transition| {
            let phase = &BUNDLED_PHASES.phases[transition.phase];
            (phase.name, format!("{:#x}:{:#x}", phase.id.high, phase.id.low))
        })
        .collect()
}

/// Builds `fixture` with `defines` as `name` in `dir`.
fn plugin(dir: &Path, fixture: &str, name: &str, defines: &[&str]) -> std::path::PathBuf {
    let path = dir.join(name);
    build_c_plugin(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(fixture),
        &path,
        defines,
    );
    path
}

/// Links the fixture program with `plugins` registered in order; returns the link's result.
fn link_fixture(dir: &Path, plugins: &mut [&mut dyn LinkPlugin]) {
    let mut registry = Registry::default();
    for plugin in plugins.iter_mut() {
        registry.register(&BUNDLED_PHASES, &mut **plugin).unwrap();
    }
    let inputs = neverc_conformance::fixture_link_inputs(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    let mut context = LinkContext::new(LinkOptions::new(inputs, dir.join("a.out")));
    run_link(&mut context, &BUNDLED_PHASES, &mut registry).unwrap();
}

/// The survey plugin's arguments: observe every transition.
fn observe_every_transition(plugin: &str) -> Vec<PluginArgument> {
    transitions()
        .into_iter()
        .map(|(_, id)| PluginArgument {
            plugin: plugin.to_string(),
            name: "observe".to_string(),
            value: Some(id),
        })
        .collect()
}

/// A Rust observer of every transition's AFTER point writing the line the survey plugin should report: the
/// graph's count of every entity kind, and as many infos read, none mismatched.
struct Census {
    seen: Rc<RefCell<Vec<String>>>,
}

impl LinkPlugin for Census {
    fn name(&self) -> &str {
        "census"
    }

    fn register(&mut self, registrar: &mut Registrar<'_>) -> Result<(), Status> {
        for (phase, id) in transitions() {
            let seen = Rc::clone(&self.seen);
            registrar.observe(
                phase,
                ObserverPoint::After,
                Box::new(move |frame| {
                    let graph = frame.graph();
                    let mut line = format!("survey {id}");
                    let mut total = 0;
                    for (kind, name) in [
                        (EntityKind::Input, "input"),
                        (EntityKind::Archive, "archive"),
                        (EntityKind::ArchiveMember, "archive_member"),
                        (EntityKind::SharedLibrary, "shared_library"),
                        (EntityKind::BitcodeModule, "bitcode_module"),
                        (EntityKind::Section, "section"),
                        (EntityKind::Atom, "atom"),
                        (EntityKind::Symbol, "symbol"),
                        (EntityKind::Edge, "edge"),
                        (EntityKind::Comdat, "comdat"),
                        (EntityKind::Import, "import"),
                        (EntityKind::Export, "export"),
                        (EntityKind::Unwind, "unwind"),
                        (EntityKind::Synthetic, "synthetic"),
                        (EntityKind::Constraint, "constraint"),
                    ] {
                        line.push_str(&format!(" {name}={}", graph.count(kind)));
                        total += graph.count(kind);
                    }
                    line.push_str(&format!(" infos={total} mismatches=0"));
                    seen.borrow_mut().push(line);
                    Ok(())
                }),
            )?;
        }
        Ok(())
    }
}

#[test]
fn a_c_observer_pages_every_entity_kind_and_reads_every_info() {
    let dir = scratch!("plugin-host-survey");
    let path = plugin(&dir, "survey.c", "survey.so", &[]);
    let mut survey = CPlugin::new(load(&path, &observe_every_transition("org.example.survey")).unwrap());
    let seen = Rc::new(RefCell::new(Vec::new()));
    let mut census = Census { seen: Rc::clone(&seen) };
    link_fixture(&dir, &mut [&mut survey, &mut census]);
    let reported: Vec<String> = survey.reports().into_iter().map(|(_, text)| text).collect();
    assert_eq!(reported, *seen.borrow());
    // The fixture has inputs, an archive with a member, bitcode modules, edges and synthetics by the end.
    let last = reported.last().unwrap();
    for kind in [
        "input",
        "archive",
        "archive_member",
        "bitcode_module",
        "atom",
        "edge",
        "synthetic",
    ] {
        assert!(!last.contains(&format!(" {kind}=0 ")), "{last}");
    }
}

/// Links with the hostile survey plugin loaded `instances` times (the loads share the library, so a handle
/// one instance keeps is tried by the next callback, of whichever instance); returns the plugin's reports.
fn hostile_reports(name: &str, instances: usize) -> Vec<String> {
    let dir = scratch!("plugin-host-hostile-{name}");
    let path = plugin(&dir, "survey.c", &format!("{name}.so"), &["MODE_HOSTILE"]);
    let arguments = observe_every_transition("org.example.survey");
    let mut plugins: Vec<CPlugin> = (0..instances)
        .map(|_| CPlugin::new(load(&path, &arguments).unwrap()))
        .collect();
    let mut registered: Vec<&mut dyn LinkPlugin> =
        plugins.iter_mut().map(|plugin| plugin as &mut dyn LinkPlugin).collect();
    link_fixture(&dir, &mut registered);
    // Each instance reports to its own host table: take them all, in instance order.
    plugins
        .iter()
        .flat_map(|plugin| plugin.reports())
        .map(|(_, text)| text)
        .collect()
}

/// The code a hostile line ends with.
fn code(line: &str) -> i32 {
    line.rsplit_once("-> ").unwrap().1.parse().unwrap()
}

/// Checks the answers every hostile callback gets, whatever the instance.
fn check_hostile_answers(reported: &[String]) {
    use neverc_tables::status::StatusCode::*;
    let expected = [
        ("kept-task", StaleHandle.raw()),
        ("cursor-at-end", 0),
        ("cursor-past-end", InvalidArgument.raw()),
        ("cursor-max", InvalidArgument.raw()),
        ("null-data", InvalidArgument.raw()),
        ("null-page", InvalidArgument.raw()),
        ("forged-graph", WrongType.raw()),
        ("forged-symbol", WrongType.raw()),
        ("forged-task", WrongType.raw()),
        ("graph-as-symbol", WrongType.raw()),
        ("symbol-as-atom", WrongType.raw()),
        ("symbol-index-past-end", StaleHandle.raw()),
        ("struct-size-8", AbiMismatch.raw()),
        ("null-out", InvalidArgument.raw()),
        ("symbol-info", 0),
        ("content-length-max", InvalidArgument.raw()),
        ("zero-fill-max", InvalidArgument.raw()),
        ("kind-length-max", InvalidArgument.raw()),
        ("observer-mutation", PolicyViolation.raw()),
        ("forged-mutation", WrongType.raw()),
        ("request", CapabilityUnavailable.raw()),
    ];
    for (what, answer) in expected {
        let lines: Vec<&String> = reported
            .iter()
            .filter(|line| line.starts_with(&format!("hostile {what} ->")))
            .collect();
        assert!(!lines.is_empty(), "no `{what}` in {reported:#?}");
        assert!(lines.iter().all(|line| code(line) == answer), "{what}: {lines:?}");
    }
    // The proof handle GetGraph hands out reads once the link issues proofs; before, it is null.
    let proofs: Vec<&String> = reported
        .iter()
        .filter(|line| line.starts_with("hostile proof "))
        .collect();
    assert!(proofs.iter().any(|line| line.starts_with("hostile proof present=1")));
    assert!(proofs.iter().any(|line| line.starts_with("hostile proof present=0")));
    for line in proofs {
        let expected = if line.contains("present=1") { 0 } else { WrongType.raw() };
        assert_eq!(code(line), expected, "{line}");
    }
    // A page of capacity 0 writes nothing, keeps the cursor and says whether there is anything.
    let empty: Vec<&String> = reported
        .iter()
        .filter(|line| line.starts_with("hostile capacity-0 "))
        .collect();
    assert!(!empty.is_empty());
    for line in empty {
        let words: Vec<&str> = line.split_whitespace().collect();
        let of: u64 = words[5].trim_start_matches("of=").parse().unwrap();
        assert_eq!(
            words[2..5],
            ["out=0", "next=0", if of > 0 { "more=1" } else { "more=0" }],
            "{line}"
        );
        assert_eq!(code(line), 0, "{line}");
    }
}

#[test]
fn hostile_calls_get_their_statuses_and_a_handle_kept_past_its_callback_is_stale() {
    let reported = hostile_reports("hostile-one", 1);
    check_hostile_answers(&reported);
    let kept: Vec<&String> = reported
        .iter()
        .filter(|line| line.starts_with("hostile kept-"))
        .collect();
    assert!(
        kept.iter()
            .any(|line| line.starts_with("hostile kept-symbol from=1 by=1")),
        "{kept:?}"
    );
    for line in kept {
        assert_eq!(
            code(line),
            neverc_tables::status::StatusCode::StaleHandle.raw(),
            "{line}"
        );
    }
}

#[test]
fn a_handle_of_another_plugin_instance_is_of_another_session() {
    let reported = hostile_reports("hostile-two", 2);
    check_hostile_answers(&reported);
    let kept: Vec<&String> = reported
        .iter()
        .filter(|line| line.starts_with("hostile kept-symbol") || line.starts_with("hostile kept-graph"))
        .collect();
    assert!(kept.len() > 2, "{kept:?}");
    for line in kept {
        let words: Vec<&str> = line.split_whitespace().collect();
        let expected = if words[2].trim_start_matches("from=") == words[3].trim_start_matches("by=") {
            neverc_tables::status::StatusCode::StaleHandle
        } else {
            neverc_tables::status::StatusCode::WrongSession
        };
        assert_eq!(code(line), expected.raw(), "{line}");
    }
}

/// The `HIGH:LOW` id of a phase.
fn phase_id(name: &str) -> String {
    let phase = BUNDLED_PHASES.phase_by_name(name).unwrap();
    format!("{:#x}:{:#x}", phase.id.high, phase.id.low)
}

/// Links `inputs` into `output` with the stager plugin given `arguments` (interceptor of layout), unless
/// `arguments` is empty; returns the plugin's reports and the link's result.
fn staged_link(
    dir: &Path,
    inputs: Vec<std::path::PathBuf>,
    output: &Path,
    arguments: &[(&str, &str)],
) -> (Vec<String>, Result<(), String>) {
    let fixture = Fixture {
        source: "stager.c",
        id: "org.example.stager",
        phase: "neverc.link.layout",
    };
    plugin_link(dir, &fixture, inputs, output, arguments)
}

/// A test plugin taking `phase=HIGH:LOW` and arguments of its own.
struct Fixture {
    source: &'static str,
    id: &'static str,
    phase: &'static str,
}

/// Links `inputs` into `output` with `fixture` given `arguments`, unless `arguments` is empty; returns the
/// plugin's reports and the link's result.
fn plugin_link(
    dir: &Path,
    fixture: &Fixture,
    inputs: Vec<std::path::PathBuf>,
    output: &Path,
    arguments: &[(&str, &str)],
) -> (Vec<String>, Result<(), String>) {
    let mut registry = Registry::default();
    let mut loaded = None;
    if !arguments.is_empty() {
        let path = plugin(dir, fixture.source, &format!("{}.so", fixture.id), &[]);
        let phase = phase_id(fixture.phase);
        let arguments: Vec<PluginArgument> = std::iter::once(("phase", phase.as_str()))
            .chain(arguments.iter().copied())
            .map(|(name, value)| PluginArgument {
                plugin: fixture.id.to_string(),
                name: name.to_string(),
                value: Some(value.to_string()),
            })
            .collect();
        let mut c_plugin = CPlugin::new(load(&path, &arguments).unwrap());
        registry.register(&BUNDLED_PHASES, &mut c_plugin).unwrap();
        loaded = Some(c_plugin);
    }
    let mut context = LinkContext::new(LinkOptions::new(inputs, output.to_path_buf()));
    let linked = run_link(&mut context, &BUNDLED_PHASES, &mut registry)
        .map(|_| ())
        .map_err(|error| error.to_string());
    let reports = loaded
        .map(|c_plugin| c_plugin.reports().into_iter().map(|(_, text)| text).collect())
        .unwrap_or_default();
    (reports, linked)
}

/// The fixture program `name` of the link tests (built with the conformance fixtures): its inputs and dir.
fn program(name: &str) -> (Vec<std::path::PathBuf>, std::path::PathBuf) {
    let inputs = neverc_conformance::fixture_link_inputs(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    let dir = inputs[0]
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("programs")
        .join(name);
    let listed = std::fs::read_to_string(dir.join("inputs.txt")).unwrap();
    (listed.split_whitespace().map(|input| dir.join(input)).collect(), dir)
}

/// The defined symbols `nm` lists in `binary`.
fn symbols(binary: &Path) -> std::collections::BTreeSet<String> {
    let listed = std::process::Command::new("nm")
        .arg("--defined-only")
        .arg(binary)
        .output()
        .unwrap();
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().nth(2).map(str::to_string))
        .collect()
}

#[test]
fn a_c_interceptor_drops_an_unreferenced_function() {
    let dir = scratch!("plugin-host-stager-dead");
    let (inputs, program_dir) = program("gc_icf");
    let (plain, staged) = (dir.join("plain"), dir.join("staged"));
    staged_link(&dir, inputs.clone(), &plain, &[]).1.unwrap();
    let (reports, linked) = staged_link(&dir, inputs, &staged, &[("dead", "live_unused")]);
    linked.unwrap();
    assert_eq!(reports, ["stage dead live_unused -> 0", "commit -> 0"]);
    // Without --gc-sections only the atom the plugin dropped is gone, and the program runs as before.
    let gone: Vec<String> = symbols(&plain).difference(&symbols(&staged)).cloned().collect();
    assert_eq!(gone, ["live_unused"]);
    assert!(symbols(&staged).contains("dead_entry"));
    let ran = neverc_test_support::output_retrying_busy(&mut std::process::Command::new(&staged));
    let expected = std::fs::read_to_string(program_dir.join("expected.stdout")).unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), expected);
}

/// `nm`'s letter for the defined symbol `name` of `binary`.
fn nm_letter(binary: &Path, name: &str) -> Option<String> {
    let listed = std::process::Command::new("nm")
        .arg("--defined-only")
        .arg(binary)
        .output()
        .unwrap();
    String::from_utf8_lossy(&listed.stdout).lines().find_map(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        (words.len() == 3 && words[2] == name).then(|| words[1].to_string())
    })
}

#[test]
fn a_c_interceptor_changes_a_symbols_resolution() {
    let dir = scratch!("plugin-host-stager-resolution");
    let (inputs, program_dir) = program("gc_icf");
    let (plain, staged) = (dir.join("plain"), dir.join("staged"));
    staged_link(&dir, inputs.clone(), &plain, &[]).1.unwrap();
    let (reports, linked) = staged_link(&dir, inputs.clone(), &staged, &[("local", "live_compute")]);
    linked.unwrap();
    assert_eq!(reports, ["stage local live_compute -> 0", "commit -> 0"]);
    // The symbol table says what the update said: a global function became a local one; the code is the same.
    assert_eq!(nm_letter(&plain, "live_compute").as_deref(), Some("T"));
    assert_eq!(nm_letter(&staged, "live_compute").as_deref(), Some("t"));
    let ran = neverc_test_support::output_retrying_busy(&mut std::process::Command::new(&staged));
    let expected = std::fs::read_to_string(program_dir.join("expected.stdout")).unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), expected);
    // A binding the ABI does not declare is refused, and the link with it.
    let refused = dir.join("refused");
    let (reports, linked) = staged_link(&dir, inputs, &refused, &[("binding", "live_compute")]);
    assert!(linked.is_err());
    assert_eq!(reports, ["stage binding live_compute -> 1"]);
}

#[test]
fn a_c_interceptor_rebinds_a_symbol_to_another_atom() {
    let dir = scratch!("plugin-host-stager-rebind");
    let (inputs, program_dir) = program("gc_icf");
    let staged = dir.join("staged");
    let (reports, linked) = staged_link(&dir, inputs, &staged, &[("rebind", "twin_b:live_compute")]);
    linked.unwrap();
    assert_eq!(reports, ["stage rebind twin_b:live_compute -> 0", "commit -> 0"]);
    let ran = runs_live_compute_for_twin_b(&staged, &program_dir);
    let status = std::fs::read_to_string(program_dir.join("expected.status")).unwrap();
    assert_eq!(ran.status.code(), status.trim().parse().ok());
}

#[test]
fn a_c_interceptor_folds_an_atom_into_another() {
    let dir = scratch!("plugin-host-stager-fold");
    let (inputs, program_dir) = program("gc_icf");
    let staged = dir.join("staged");
    let (reports, linked) = staged_link(&dir, inputs, &staged, &[("fold", "twin_b:twin_a")]);
    linked.unwrap();
    assert_eq!(reports, ["stage fold twin_b:twin_a -> 0", "commit -> 0"]);
    // The twins are byte-identical: folded, twin_b is twin_a's code, and the program runs the same.
    let listed = std::process::Command::new("nm").arg(&staged).output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    let address = |name: &str| {
        listed
            .lines()
            .find(|line| line.ends_with(&format!(" {name}")))
            .map(|line| line.split_whitespace().next().unwrap_or_default().to_string())
    };
    assert!(address("twin_a").is_some());
    assert_eq!(address("twin_a"), address("twin_b"), "{listed}");
    let ran = neverc_test_support::output_retrying_busy(&mut std::process::Command::new(&staged));
    let expected = std::fs::read_to_string(program_dir.join("expected.stdout")).unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), expected);
}

#[test]
fn a_c_interceptor_replaces_an_atoms_content_and_only_those_bytes_change() {
    let dir = scratch!("plugin-host-stager-content");
    let inputs = neverc_conformance::fixture_link_inputs(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    let program_dir = inputs[0].parent().unwrap().to_path_buf();
    let (plain, staged) = (dir.join("plain"), dir.join("staged"));
    staged_link(&dir, inputs.clone(), &plain, &[]).1.unwrap();
    let (reports, linked) = staged_link(&dir, inputs, &staged, &[("upper", "neverc basics fixture")]);
    linked.unwrap();
    assert_eq!(reports, ["stage upper neverc basics fixture -> 0", "commit -> 0"]);
    let expected = std::fs::read_to_string(program_dir.join("expected.stdout"))
        .unwrap()
        .replace("neverc basics fixture", "NEVERC BASICS FIXTURE");
    let ran = neverc_test_support::output_retrying_busy(&mut std::process::Command::new(&staged));
    assert_eq!(String::from_utf8_lossy(&ran.stdout), expected);
    // The image differs from the one linked without the plugin in the 19 letters only.
    let (before, after) = (std::fs::read(&plain).unwrap(), std::fs::read(&staged).unwrap());
    assert_eq!(before.len(), after.len());
    let changed: Vec<(u8, u8)> = before
        .iter()
        .zip(&after)
        .filter(|(a, b)| a != b)
        .map(|(a, b)| (*a, *b))
        .collect();
    assert_eq!(changed.len(), 19, "{changed:?}");
    assert!(changed.iter().all(|(a, b)| a.to_ascii_uppercase() == *b));
}

#[test]
fn dropping_an_atom_a_live_atom_refers_to_fails_verification_and_the_link() {
    let dir = scratch!("plugin-host-stager-refused");
    let (inputs, _) = program("gc_icf");
    let (reports, linked) = staged_link(&dir, inputs, &dir.join("a.out"), &[("dead", "live_compute")]);
    let refused = neverc_tables::status::StatusCode::VerificationFailed.raw();
    assert_eq!(
        reports,
        [
            "stage dead live_compute -> 0".to_string(),
            format!("commit -> {refused}")
        ]
    );
    let error = linked.unwrap_err();
    assert!(error.contains("org.example.stager"), "{error}");
}

/// The patcher plugin: an interceptor (or observer) of `emit_image` writing the image.
const PATCHER: Fixture = Fixture {
    source: "patcher.c",
    id: "org.example.patcher",
    phase: "neverc.link.emit_image",
};

/// Links the fixture program without a plugin and with the patcher given `arguments`; returns the patcher's
/// reports, the two images and the expected output of the program.
fn patched(name: &str, arguments: &[(&str, &str)]) -> (Vec<String>, Vec<u8>, Vec<u8>, std::path::PathBuf, String) {
    let dir = scratch!("plugin-host-patcher-{name}");
    let inputs = neverc_conformance::fixture_link_inputs(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    let expected = std::fs::read_to_string(inputs[0].parent().unwrap().join("expected.stdout")).unwrap();
    let (plain, patched) = (dir.join("plain"), dir.join("patched"));
    plugin_link(&dir, &PATCHER, inputs.clone(), &plain, &[]).1.unwrap();
    let (reports, linked) = plugin_link(&dir, &PATCHER, inputs, &patched, arguments);
    linked.unwrap();
    (
        reports,
        std::fs::read(&plain).unwrap(),
        std::fs::read(&patched).unwrap(),
        patched,
        expected,
    )
}

#[test]
fn a_c_interceptor_rewrites_the_emitted_image_through_the_bounded_writer() {
    let (reports, before, after, patched, expected) = patched("upper", &[("upper", "neverc basics fixture")]);
    assert_eq!(
        reports,
        ["get-image -> 0", "image-info -> 0", "read-all -> 0", "write-at -> 0"]
    );
    let ran = neverc_test_support::output_retrying_busy(&mut std::process::Command::new(&patched));
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        expected.replace("neverc basics fixture", "NEVERC BASICS FIXTURE")
    );
    assert_eq!(before.len(), after.len());
    let changed = before.iter().zip(&after).filter(|(a, b)| a != b).count();
    assert_eq!(changed, 19);
}

#[test]
fn a_write_past_the_bound_aborts_staging_and_an_observer_may_not_write() {
    use neverc_tables::status::StatusCode::{InvalidArgument, InvalidState, PolicyViolation};
    let (reports, before, after, _, _) = patched("overflow", &[("upper", "neverc basics fixture"), ("overflow", "1")]);
    assert_eq!(
        reports,
        [
            "get-image -> 0".to_string(),
            "image-info -> 0".to_string(),
            "read-all -> 0".to_string(),
            "write-at -> 0".to_string(),
            format!("write-past-bound -> {}", InvalidArgument.raw()),
            format!("write-after-abort -> {}", InvalidState.raw()),
        ]
    );
    // Aborted staging is not published: the image is the one linked without the plugin.
    assert!(before == after);
    let (reports, before, after, _, _) = patched("observer", &[("upper", "neverc basics fixture"), ("observe", "1")]);
    assert_eq!(
        reports,
        [
            "get-image -> 0".to_string(),
            "image-info -> 0".to_string(),
            "read-all -> 0".to_string(),
            format!("write-at -> {}", PolicyViolation.raw()),
        ]
    );
    assert!(before == after);
}

#[test]
fn a_c_interceptor_retargets_the_edges_to_a_symbol() {
    let dir = scratch!("plugin-host-stager-retarget");
    let (inputs, program_dir) = program("gc_icf");
    let staged = dir.join("staged");
    let (reports, linked) = staged_link(&dir, inputs, &staged, &[("retarget", "twin_b:live_compute")]);
    linked.unwrap();
    assert_eq!(reports, ["stage retarget twin_b:live_compute -> 0", "commit -> 0"]);
    runs_live_compute_for_twin_b(&staged, &program_dir);
}

/// Runs `program` and checks it prints what the fixture prints, except that `twin_b(12)` ran live_compute(12):
/// 9 Collatz steps, weighted by live_weights[1] = 3.
fn runs_live_compute_for_twin_b(program: &Path, program_dir: &Path) -> std::process::Output {
    let expected: String = std::fs::read_to_string(program_dir.join("expected.stdout"))
        .unwrap()
        .lines()
        .map(|line| {
            if line.starts_with("twin_b(12): ") {
                "twin_b(12): 27"
            } else {
                line
            }
        })
        .map(|line| format!("{line}\n"))
        .collect();
    let ran = neverc_test_support::output_retrying_busy(&mut std::process::Command::new(program));
    assert_eq!(String::from_utf8_lossy(&ran.stdout), expected);
    ran
}

#[test]
fn a_c_interceptor_creates_replaces_and_erases_its_synthetics_only() {
    let dir = scratch!("plugin-host-stager-synthetic");
    let (inputs, program_dir) = program("gc_icf");
    let staged = dir.join("staged");
    // Layout runs again after each commit: the second time the plugin replaces (or erases) what it made the
    // first time, and each time it reports how many synthetics the graph has.
    let link = |later: (&str, &str)| {
        let (reports, linked) = staged_link(
            &dir,
            inputs.clone(),
            &staged,
            &[("synthetic", "org.example.marker"), later],
        );
        linked.unwrap();
        reports
    };
    let replaced = link(("later-replace-synthetic", "org.example.marker:org.example.renamed"));
    let base: u64 = replaced[0]
        .strip_prefix("synthetics ")
        .and_then(|rest| rest.strip_suffix(" -> 0"))
        .unwrap()
        .parse()
        .unwrap();
    let count = |n: u64| format!("synthetics {n} -> 0");
    assert_eq!(
        replaced,
        [
            count(base),
            "stage synthetic org.example.marker -> 0".to_string(),
            "commit -> 0".to_string(),
            count(base + 1),
            "stage later-replace-synthetic org.example.marker:org.example.renamed -> 0".to_string(),
            "commit -> 0".to_string(),
            count(base + 1),
        ]
    );
    let erased = link(("later-erase-synthetic", "org.example.marker"));
    assert_eq!(
        erased[3..],
        [
            count(base + 1),
            "stage later-erase-synthetic org.example.marker -> 0".to_string(),
            "commit -> 0".to_string(),
            count(base)
        ]
    );
    let ran = neverc_test_support::output_retrying_busy(&mut std::process::Command::new(&staged));
    let expected = std::fs::read_to_string(program_dir.join("expected.stdout")).unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), expected);
    // The linker's own synthetics are not the plugin's to replace.
    let (reports, linked) = staged_link(&dir, inputs.clone(), &dir.join("refused"), &[("got", "any")]);
    assert!(linked.is_err());
    assert_eq!(reports, [count(base), "stage got any -> 1".to_string()]);
}
