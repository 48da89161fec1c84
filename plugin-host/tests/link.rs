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
    let machine = link_state_machine(&BUNDLED_PHASES).unwrap();
    let phases: Vec<(&'static str, String)> = machine
        .transitions
        .iter()
        .map(|transition| {
            let phase = &BUNDLED_PHASES.phases[transition.phase];
            (phase.name, format!("{:#x}:{:#x}", phase.id.high, phase.id.low))
        })
        .collect();
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
