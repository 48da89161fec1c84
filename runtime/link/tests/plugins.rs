#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The plugin rules of the link runtime, on real links of the fixture programs: policy checks, read-only
//! observers, interceptor chains, providers, contained panics, handles, pages, verified mutations, reruns and
//! budgets from the declared tables, proofs, and atomic output.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;
use std::sync::OnceLock;

use neverc_link::context::{LinkContext, LinkOptions};
use neverc_link::execute::{Actor, LinkError, TraceEntry, run_link};
use neverc_link::frame::{Handle, Proof};
use neverc_link::graph::EntityKind;
use neverc_link::plugin::{Capability, LinkPlugin, ObserverPoint, Registrar, Registry, check_request};
use neverc_link::status::{Status, StatusCode};
use neverc_tables::PhaseTables;
use neverc_test_support::{build_fixture_programs, repo, scratch};

fn tables() -> &'static PhaseTables {
    &neverc_tables::BUNDLED_PHASES
}

fn fixtures() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plugin-fixtures");
        build_fixture_programs(&out);
        out
    })
}

/// Link options for a fixture program, writing to `output`.
fn options(program: &str, output: &Path) -> LinkOptions {
    let dir = fixtures().join(program);
    let inputs = std::fs::read_to_string(dir.join("inputs.txt"))
        .unwrap()
        .split_whitespace()
        .map(|name| dir.join(name))
        .collect();
    let mut options = LinkOptions::new(inputs, output.to_path_buf());
    options.gc_sections = std::fs::read_to_string(dir.join("flags.txt"))
        .unwrap()
        .contains("--gc-sections");
    options
}

/// A plugin made of a closure over the registrar.
struct Plugin<F: FnMut(&mut Registrar<'_>) -> Result<(), Status>>(F);

impl<F: FnMut(&mut Registrar<'_>) -> Result<(), Status>> LinkPlugin for Plugin<F> {
    fn name(&self) -> &str {
        "test-plugin"
    }

    fn register(&mut self, registrar: &mut Registrar<'_>) -> Result<(), Status> {
        (self.0)(registrar)
    }
}

fn link_with(
    program: &str,
    output: &Path,
    tables: &'static PhaseTables,
    register: impl FnMut(&mut Registrar<'_>) -> Result<(), Status>,
) -> Result<Vec<TraceEntry>, LinkError> {
    let mut registry = Registry::default();
    registry.register(tables, &mut Plugin(register)).unwrap();
    let mut context = LinkContext::new(options(program, output));
    run_link(&mut context, tables, &mut registry)
}

fn runs_of(trace: &[TraceEntry], phase: &str) -> usize {
    trace.iter().filter(|entry| entry.phase == phase).count()
}

fn expected_output(program: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(program).join("expected.stdout")).unwrap()
}

/// Runs a linked program. Another test thread forking at the moment the output was written can hold its
/// descriptor for an instant (`ETXTBSY`), so that error is retried.
fn run(path: &Path) -> Vec<u8> {
    execute(path).stdout
}

fn execute(path: &Path) -> std::process::Output {
    for _ in 0..50 {
        match Command::new(path).output() {
            Ok(output) => return output,
            Err(error) if error.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(error) => panic!("cannot run {}: {error}", path.display()),
        }
    }
    panic!("{} stayed busy", path.display());
}

#[test]
fn every_phase_by_capability_is_allowed_exactly_when_its_policy_says_so() {
    let mut checked = 0;
    for phase in tables().phases.iter().filter(|phase| phase.domain == "link") {
        for capability in [
            Capability::Observe,
            Capability::Intercept,
            Capability::Replace,
            Capability::SkipWithProof,
        ] {
            let allowed = phase.allows(capability.policy().0);
            match check_request(tables(), phase.name, capability) {
                Ok(_) => assert!(allowed, "{} {capability:?}", phase.name),
                Err(status) => {
                    assert!(!allowed, "{} {capability:?}", phase.name);
                    assert_eq!(status.code, StatusCode::PolicyViolation);
                    assert!(status.message.contains(phase.name) && status.message.contains(capability.policy().1));
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 80);
}

#[test]
fn sealed_gates_can_only_be_observed_and_registration_fails_cleanly() {
    for gate in [
        "neverc.link.image_verify",
        "neverc.link.side_outputs_verify",
        "neverc.link.commit",
    ] {
        let mut registry = Registry::default();
        let status = registry
            .register(
                tables(),
                &mut Plugin(|registrar: &mut Registrar<'_>| {
                    registrar.observe(gate, ObserverPoint::Before, Box::new(|_| Ok(())))?;
                    registrar.intercept(gate, Box::new(|frame, next| next(frame)))
                }),
            )
            .unwrap_err();
        assert_eq!(status.code, StatusCode::PolicyViolation);
        assert_eq!(
            status.message,
            format!("phase `{gate}` is not INTERCEPTABLE (its declared policy is OBSERVABLE|SEALED_HOST_GATE)")
        );
        for capability in [Capability::Replace, Capability::SkipWithProof] {
            assert_eq!(
                check_request(tables(), gate, capability).unwrap_err().code,
                StatusCode::PolicyViolation
            );
        }
    }
    let unknown = check_request(tables(), "neverc.link.nothing", Capability::Observe).unwrap_err();
    assert_eq!(unknown.code, StatusCode::InvalidArgument);
}

#[test]
fn observers_see_every_phase_read_only_and_cannot_mutate() {
    let out = scratch!("plugins-observers");
    let seen = Rc::new(RefCell::new(Vec::new()));
    let record = Rc::clone(&seen);
    let trace = link_with("basics", &out.join("a.out"), tables(), move |registrar| {
        for (phase, point) in [
            ("neverc.link.resolve_symbols", ObserverPoint::After),
            ("neverc.link.gc", ObserverPoint::After),
            ("neverc.link.commit", ObserverPoint::Before),
        ] {
            let record = Rc::clone(&record);
            registrar.observe(
                phase,
                point,
                Box::new(move |frame| {
                    let attempt = frame.begin_mutation().unwrap_err();
                    assert_eq!(attempt.code, StatusCode::PolicyViolation);
                    assert!(frame.publish_section_bytes(Vec::new()).is_err());
                    record.borrow_mut().push((frame.phase(), frame.state()));
                    Ok(())
                }),
            )?;
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(trace.len(), 20);
    assert_eq!(
        *seen.borrow(),
        [
            ("neverc.link.resolve_symbols", "LTO_GENERATED"),
            ("neverc.link.gc", "COMDAT_SELECTED"),
            ("neverc.link.commit", "IMAGE_EMITTED"),
        ]
    );
    assert_eq!(run(&out.join("a.out")), expected_output("basics"));
}

#[test]
fn a_panicking_plugin_fails_the_link_cleanly_and_writes_nothing() {
    let out = scratch!("plugins-panic");
    let output = out.join("a.out");
    std::fs::write(&output, b"previous").unwrap();
    let error = link_with("basics", &output, tables(), |registrar| {
        registrar.intercept("neverc.link.layout", Box::new(|_, _| panic!("plugin bug")))
    })
    .unwrap_err();
    assert_eq!(error.code(), StatusCode::PluginFailure);
    assert!(
        error
            .to_string()
            .contains("plugin `test-plugin` panicked in neverc.link.layout: plugin bug"),
        "{error}"
    );
    assert_eq!(std::fs::read(&output).unwrap(), b"previous");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1, "no temporary file remains");
}

#[test]
fn an_image_verifier_can_reject_the_image_and_nothing_is_written() {
    let out = scratch!("plugins-verifier");
    let output = out.join("a.out");
    let error = link_with("basics", &output, tables(), |registrar| {
        registrar.image_verifier(Box::new(|image, layout| {
            assert!(image.stored(0, 4) == Some(b"\x7fELF") && !layout.segments.is_empty());
            Err(Status::new(
                StatusCode::VerificationFailed,
                "house rule: no images today",
            ))
        }))
    })
    .unwrap_err();
    assert_eq!(error.code(), StatusCode::VerificationFailed);
    assert!(!output.exists());
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
}

#[test]
fn interceptors_chain_call_their_continuation_once_and_providers_replace_the_builtin() {
    let out = scratch!("plugins-chain");
    let order = Rc::new(RefCell::new(Vec::new()));
    let (first, second) = (Rc::clone(&order), Rc::clone(&order));
    let trace = link_with("gc_icf", &out.join("a.out"), tables(), move |registrar| {
        let first = Rc::clone(&first);
        registrar.intercept(
            "neverc.link.icf",
            Box::new(move |frame, next| {
                first.borrow_mut().push("outer before");
                next(frame)?;
                let again = next(frame).unwrap_err();
                assert_eq!(again.code, StatusCode::InvalidState);
                first.borrow_mut().push("outer after");
                Ok(())
            }),
        )?;
        let second = Rc::clone(&second);
        registrar.intercept(
            "neverc.link.icf",
            Box::new(move |frame, next| {
                second.borrow_mut().push("inner");
                next(frame)
            }),
        )?;
        registrar.replace("neverc.link.icf", Box::new(|_| Ok(())))
    })
    .unwrap();
    assert_eq!(*order.borrow(), ["outer before", "inner", "outer after"]);
    let icf = trace.iter().find(|entry| entry.phase == "neverc.link.icf").unwrap();
    assert_eq!((icf.actor, icf.intercepted), (Actor::Provider, true));
    assert_eq!(run(&out.join("a.out")), expected_output("gc_icf"));
}

#[test]
fn stale_forged_and_foreign_handles_give_statuses() {
    let out = scratch!("plugins-handles");
    let saved: Rc<RefCell<Option<Handle>>> = Rc::new(RefCell::new(None));
    let keep = Rc::clone(&saved);
    link_with("basics", &out.join("first"), tables(), move |registrar| {
        let keep = Rc::clone(&keep);
        registrar.intercept(
            "neverc.link.gc",
            Box::new(move |frame, next| {
                let symbol = frame.handle(EntityKind::Symbol, 0)?;
                *keep.borrow_mut() = Some(symbol);
                // Wrong kind, forged index.
                assert_eq!(
                    frame.resolve(symbol, EntityKind::Atom).unwrap_err().code,
                    StatusCode::WrongType
                );
                let forged = Handle {
                    index: u32::MAX,
                    ..symbol
                };
                assert_eq!(
                    frame.resolve(forged, EntityKind::Symbol).unwrap_err().code,
                    StatusCode::StaleHandle
                );
                // Any commit makes every handle of the previous generation stale.
                let mutation = frame.begin_mutation()?;
                frame.set_symbol_root(mutation, symbol, false)?;
                frame.commit_mutation(mutation)?;
                let stale = frame.resolve(symbol, EntityKind::Symbol).unwrap_err();
                assert_eq!(stale.code, StatusCode::StaleHandle);
                let mutation = frame.begin_mutation()?;
                assert_eq!(
                    frame.set_symbol_root(mutation, symbol, true).unwrap_err().code,
                    StatusCode::StaleHandle
                );
                frame.abandon_mutation(mutation)?;
                next(frame)
            }),
        )
    })
    .unwrap();
    let foreign = saved.borrow().unwrap();
    link_with("basics", &out.join("second"), tables(), move |registrar| {
        registrar.observe(
            "neverc.link.gc",
            ObserverPoint::Before,
            Box::new(move |frame| {
                let status = frame.resolve(foreign, EntityKind::Symbol).unwrap_err();
                assert_eq!(status.code, StatusCode::WrongSession);
                Ok(())
            }),
        )
    })
    .unwrap();
}

#[test]
fn pages_cover_every_entity_once_with_a_caller_owned_buffer() {
    let out = scratch!("plugins-pages");
    link_with("cxx_comdat", &out.join("a.out"), tables(), |registrar| {
        registrar.observe(
            "neverc.link.layout",
            ObserverPoint::After,
            Box::new(|frame| {
                for kind in EntityKind::ALL {
                    let total = frame.graph().count(kind);
                    let mut buffer = [Handle {
                        kind,
                        index: 0,
                        generation: 0,
                        session: 0,
                    }; 7];
                    let (mut cursor, mut seen) = (0, Vec::new());
                    loop {
                        let page = frame.page(kind, cursor, &mut buffer)?;
                        for handle in &buffer[..page.count] {
                            seen.push(frame.resolve(*handle, kind)?);
                        }
                        cursor = page.next_cursor;
                        if !page.has_more {
                            break;
                        }
                    }
                    assert_eq!(seen, (0..total).collect::<Vec<_>>(), "{kind:?}");
                }
                assert!(frame.graph().count(EntityKind::Comdat) >= 18);
                assert!(frame.page(EntityKind::Symbol, u64::MAX, &mut []).is_err());
                Ok(())
            }),
        )
    })
    .unwrap();
}

#[test]
fn the_gc_verifier_rejects_a_commit_that_orphans_a_live_atom_and_nothing_changes() {
    let out = scratch!("plugins-verify");
    link_with("basics", &out.join("a.out"), tables(), |registrar| {
        registrar.intercept(
            "neverc.link.icf",
            Box::new(|frame, next| {
                // `ops.o`'s text is called from `main.o`: making it dead would orphan a live atom.
                let graph = frame.graph();
                let atom = graph
                    .symbols
                    .iter()
                    .find(|symbol| symbol.name == "op_add")
                    .and_then(|symbol| symbol.atom)
                    .unwrap();
                let handle = frame.handle(EntityKind::Atom, atom.index())?;
                let generation = frame.generation();
                let mutation = frame.begin_mutation()?;
                frame.set_atom_live(mutation, handle, false)?;
                let status = frame.commit_mutation(mutation).unwrap_err();
                assert_eq!(status.code, StatusCode::VerificationFailed);
                assert!(status.message.contains("GC_COMPLETE verifier"), "{}", status.message);
                assert!(frame.graph().atoms[atom.index()].is_live(), "nothing was written");
                assert_eq!(frame.generation(), generation);
                next(frame)
            }),
        )
    })
    .unwrap();
    assert_eq!(run(&out.join("a.out")), expected_output("basics"));
}

/// An interceptor of `relocate` that commits a layout constraint on each of its first `times` runs.
fn reorder_on_relocate(times: usize) -> impl FnMut(&mut Registrar<'_>) -> Result<(), Status> {
    move |registrar| {
        let mut remaining = times;
        registrar.intercept(
            "neverc.link.relocate",
            Box::new(move |frame, next| {
                if remaining > 0 {
                    remaining -= 1;
                    let mutation = frame.begin_mutation()?;
                    frame.create_constraint(mutation, "order", 0, 0, false)?;
                    frame.commit_mutation(mutation)?;
                    return Ok(());
                }
                next(frame)
            }),
        )
    }
}

#[test]
fn a_committed_mutation_lowers_the_state_and_earlier_transitions_run_again() {
    let out = scratch!("plugins-rerun");
    let trace = link_with("basics", &out.join("a.out"), tables(), reorder_on_relocate(2)).unwrap();
    // Constraints invalidate LAYOUT_COMPLETE: layout runs again after each commit, relocate too.
    assert_eq!(runs_of(&trace, "neverc.link.layout"), 3);
    assert_eq!(runs_of(&trace, "neverc.link.relocate"), 3);
    assert_eq!(runs_of(&trace, "neverc.link.gc"), 1);
    let lowered = trace
        .iter()
        .find(|entry| entry.phase == "neverc.link.relocate")
        .unwrap();
    assert_eq!(
        (lowered.state_before, lowered.state_after),
        ("LAYOUT_COMPLETE", "THUNKS_RELAXED")
    );
    assert_eq!(run(&out.join("a.out")), expected_output("basics"));
}

/// Commits a no-op `SetSymbolRoot` (which invalidates GC_COMPLETE, the product of `gc`).
fn commit_symbol_root(frame: &mut neverc_link::frame::PhaseFrame<'_>) -> Result<(), Status> {
    let root = frame.graph().symbols[0].root;
    let symbol = frame.handle(EntityKind::Symbol, 0)?;
    let mutation = frame.begin_mutation()?;
    frame.set_symbol_root(mutation, symbol, root)?;
    frame.commit_mutation(mutation)
}

#[test]
fn commits_before_or_during_a_transitions_work_keep_it_and_a_later_commit_reruns_it() {
    let out = scratch!("plugins-rerun-rules");
    // A commit before the work: the work sees it, gc runs once.
    let before = link_with("basics", &out.join("before"), tables(), |registrar| {
        registrar.intercept(
            "neverc.link.gc",
            Box::new(|frame, next| {
                commit_symbol_root(frame)?;
                next(frame)
            }),
        )
    })
    .unwrap();
    assert_eq!(runs_of(&before, "neverc.link.gc"), 1);
    // A provider that does its work through the mutation API: its commits are its product, gc runs once.
    let provider = link_with("basics", &out.join("provider"), tables(), |registrar| {
        registrar.replace("neverc.link.gc", Box::new(commit_symbol_root))
    })
    .unwrap();
    assert_eq!(runs_of(&provider, "neverc.link.gc"), 1);
    // A commit after the work, once: the product is stale, gc runs again, then the link goes on.
    let mut remaining = 1;
    let after = link_with("basics", &out.join("after"), tables(), move |registrar| {
        let mut remaining = std::mem::take(&mut remaining);
        registrar.intercept(
            "neverc.link.gc",
            Box::new(move |frame, next| {
                next(frame)?;
                if remaining > 0 {
                    remaining -= 1;
                    commit_symbol_root(frame)?;
                }
                Ok(())
            }),
        )
    })
    .unwrap();
    assert_eq!(runs_of(&after, "neverc.link.gc"), 2);
    assert_eq!(run(&out.join("after")), expected_output("basics"));
}

#[test]
fn a_commit_during_finalization_fails_the_link_and_nothing_is_written() {
    let out = scratch!("plugins-finalization-commit");
    let output = out.join("a.out");
    let error = link_with("basics", &output, tables(), |registrar| {
        registrar.intercept(
            "neverc.link.post_emit",
            Box::new(|frame, next| {
                next(frame)?;
                let mutation = frame.begin_mutation()?;
                frame.create_constraint(mutation, "order", 0, 0, false)?;
                frame.commit_mutation(mutation)
            }),
        )
    })
    .unwrap_err();
    assert_eq!(error.code(), StatusCode::InvalidState);
    assert!(error.to_string().contains("invalidated LAYOUT_COMPLETE"), "{error}");
    assert!(!output.exists());
}

#[test]
fn rerun_budgets_come_from_the_schema_and_a_changed_copy_changes_them() {
    let out = scratch!("plugins-budget");
    // The bundled schema gives relocate a budget of 8: nine runs, then NeverC's error.
    let error = link_with("basics", &out.join("a.out"), tables(), reorder_on_relocate(usize::MAX)).unwrap_err();
    assert!(
        error.to_string() == "Link transition did not converge within its rerun budget: neverc.link.relocate",
        "{error}"
    );
    // A copy of the schema with a budget of 2 for relocate: the runtime follows it.
    let schema = std::fs::read_to_string(repo().join("PhaseSchema.json")).unwrap();
    let mut document: serde_json::Value = serde_json::from_str(&schema).unwrap();
    for transition in document["state_machines"]["link"]["transitions"]
        .as_array_mut()
        .unwrap()
    {
        if transition["phase"] == "neverc.link.relocate" {
            transition["rerun_budget"] = 2.into();
        }
    }
    let copy = out.join("PhaseSchema.json");
    std::fs::write(&copy, serde_json::to_string_pretty(&document).unwrap()).unwrap();
    let changed = neverc_loader::load_phase_tables(&copy).unwrap();
    let runs = Rc::new(RefCell::new(0));
    let count = Rc::clone(&runs);
    let error = link_with("basics", &out.join("b.out"), changed, move |registrar| {
        let count = Rc::clone(&count);
        registrar.observe(
            "neverc.link.relocate",
            ObserverPoint::Before,
            Box::new(move |_| {
                *count.borrow_mut() += 1;
                Ok(())
            }),
        )?;
        reorder_on_relocate(usize::MAX)(registrar)
    })
    .unwrap_err();
    assert!(
        matches!(error, LinkError::DidNotConverge("neverc.link.relocate")),
        "{error}"
    );
    assert_eq!(*runs.borrow(), 3);
    // Three runs fit the copy's budget of 2 (one run plus two reruns).
    link_with("basics", &out.join("c.out"), changed, reorder_on_relocate(2)).unwrap();
}

/// A cache of relocate's product keyed by the proof of the state before it: a second link of the same
/// inputs skips relocation.
#[derive(Default)]
struct RelocationCache {
    /// The proof taken before relocation, until its product is captured.
    pending: Option<Proof>,
    proof: Option<Proof>,
    bytes: Vec<neverc_link::image::SparseBytes>,
}

fn caching(cache: Rc<RefCell<RelocationCache>>) -> impl FnMut(&mut Registrar<'_>) -> Result<(), Status> {
    move |registrar| {
        let before = Rc::clone(&cache);
        registrar.observe(
            "neverc.link.relocate",
            ObserverPoint::Before,
            Box::new(move |frame| {
                before.borrow_mut().pending = frame.proof();
                Ok(())
            }),
        )?;
        let after = Rc::clone(&cache);
        registrar.observe(
            "neverc.link.emit_image",
            ObserverPoint::Before,
            Box::new(move |frame| {
                let mut cache = after.borrow_mut();
                if let Some(proof) = cache.pending.take() {
                    cache.proof = Some(proof);
                    cache.bytes = frame.context().section_bytes().unwrap_or_default().to_vec();
                }
                Ok(())
            }),
        )?;
        let skip = Rc::clone(&cache);
        registrar.skip_with_proof(
            "neverc.link.relocate",
            Box::new(move |frame, current| {
                let cache = skip.borrow();
                if cache.proof.is_some() && cache.proof == current {
                    frame.publish_section_bytes(cache.bytes.clone()).ok()?;
                    return cache.proof;
                }
                cache.proof
            }),
        )
    }
}

#[test]
fn a_valid_proof_skips_a_phase_and_a_stale_one_makes_it_run() {
    let out = scratch!("plugins-proofs");
    let cache = Rc::new(RefCell::new(RelocationCache::default()));
    let first = link_with("basics", &out.join("first"), tables(), caching(Rc::clone(&cache))).unwrap();
    let relocate = |trace: &[TraceEntry]| {
        trace
            .iter()
            .find(|entry| entry.phase == "neverc.link.relocate")
            .unwrap()
            .actor
    };
    assert_eq!(relocate(&first), Actor::Builtin, "nothing cached yet");
    let second = link_with("basics", &out.join("second"), tables(), caching(Rc::clone(&cache))).unwrap();
    assert_eq!(relocate(&second), Actor::SkippedWithProof);
    assert_eq!(
        std::fs::read(out.join("first")).unwrap(),
        std::fs::read(out.join("second")).unwrap()
    );
    // Another program: the cached proof is stale, relocation really runs.
    let third = link_with("symbols", &out.join("third"), tables(), caching(Rc::clone(&cache))).unwrap();
    assert_eq!(relocate(&third), Actor::Builtin);
    assert_eq!(run(&out.join("third")), expected_output("symbols"));
    // The same inputs again, but a plugin commits a layout constraint first: the generation moved on, the
    // cached proof is stale, relocation really runs.
    let again = link_with("symbols", &out.join("fourth"), tables(), |registrar| {
        caching(Rc::clone(&cache))(registrar)?;
        registrar.intercept(
            "neverc.link.layout",
            Box::new(|frame, next| {
                let mutation = frame.begin_mutation()?;
                frame.create_constraint(mutation, "order", 0, 0, false)?;
                frame.commit_mutation(mutation)?;
                next(frame)
            }),
        )
    })
    .unwrap();
    assert_eq!(relocate(&again), Actor::Builtin);
    assert_eq!(run(&out.join("fourth")), expected_output("symbols"));
}

#[test]
fn a_linker_provider_replaces_the_whole_link_and_the_sealed_gates_still_run() {
    use neverc_link::image::{
        ImageLayout, SectionFlags, SectionKind, SectionLayout, SegmentFlags, SegmentLayout, elf_file_size, write_elf,
    };
    let out = scratch!("plugins-provider");
    let output = out.join("a.out");
    let trace = link_with("basics", &output, tables(), |registrar| {
        registrar.linker_provider(Box::new(|frame| {
            // exit(42): mov eax, 60; mov edi, 42; syscall.
            let code = vec![0xb8, 0x3c, 0, 0, 0, 0xbf, 0x2a, 0, 0, 0, 0x0f, 0x05];
            let layout = ImageLayout {
                output_kind: neverc_link::output_kind::OutputKind::StaticExecutable,
                entry: 0x401000,
                machine: neverc_link::graph::Machine::X86_64.0,
                flags: 0,
                // One segment maps the headers (the gate insists: `AT_PHDR` must point at them) and the code.
                segments: vec![SegmentLayout {
                    name: "RX".into(),
                    flags: SegmentFlags::READ | SegmentFlags::EXECUTE,
                    virtual_address: 0x400000,
                    file_offset: 0,
                    file_size: 0x1000 + code.len() as u64,
                    memory_size: 0x1000 + code.len() as u64,
                    alignment: 0x1000,
                }],
                program_headers: Vec::new(),
                sections: vec![SectionLayout {
                    name: ".text".into(),
                    segment: Some(0),
                    kind: SectionKind::ProgBits,
                    flags: SectionFlags::ALLOC | SectionFlags::EXECUTE,
                    address: 0x401000,
                    file_offset: 0x1000,
                    size: code.len() as u64,
                    alignment: 16,
                    contents: code.into(),
                }],
                symbols: Vec::new(),
                relocations: Vec::new(),
            };
            let bound =
                elf_file_size(&layout).map_err(|error| Status::new(StatusCode::InvalidState, error.to_string()))?;
            let bytes =
                write_elf(&layout, bound).map_err(|error| Status::new(StatusCode::InvalidState, error.to_string()))?;
            frame.publish_image(bytes, layout)
        }))
    })
    .unwrap();
    let full = trace.iter().find(|entry| entry.phase == "neverc.link.full").unwrap();
    assert_eq!(full.actor, Actor::Provider);
    assert_eq!(
        runs_of(&trace, "neverc.link.layout"),
        0,
        "the builtin transitions did not run"
    );
    for gate in [
        "neverc.link.image_verify",
        "neverc.link.side_outputs_verify",
        "neverc.link.commit",
    ] {
        assert_eq!(runs_of(&trace, gate), 1, "{gate}");
    }
    assert_eq!(execute(&output).status.code(), Some(42));
}

#[test]
fn a_relocation_that_overflows_is_an_error_naming_the_site_and_nothing_is_written() {
    let out = scratch!("plugins-overflow");
    let output = out.join("a.out");
    let mut options = options("basics", &output);
    // Above 4 GiB, the absolute 32-bit relocations gcc emits for -mcmodel=small code cannot hold addresses.
    options.image_base = 0x1_0000_0000;
    let mut context = LinkContext::new(options);
    let error = run_link(&mut context, tables(), &mut Registry::default()).unwrap_err();
    let message = error.to_string();
    assert!(message.starts_with("relocate: "), "{message}");
    assert!(
        message.contains(".o:.text") && message.contains("R_X86_64_32") && message.contains("out of range"),
        "{message}"
    );
    assert!(!output.exists());
}

#[test]
fn an_object_merge_provider_does_minus_r_links_and_none_means_the_builtin_merge() {
    let out = scratch!("plugins-merge");
    let merged = out.join("merged.o");
    let mut options = options("basics", &merged);
    options.output_kind = neverc_link::output_kind::OutputKind::Relocatable;
    // Without a provider, the builtin merges the inputs into one relocatable object (ET_REL), which links on
    // its own into the same program; no transition of a static link runs.
    let builtin = out.join("builtin.o");
    let mut context = LinkContext::new(LinkOptions {
        output: builtin.clone(),
        ..options.clone()
    });
    let trace = run_link(&mut context, tables(), &mut Registry::default()).unwrap();
    let merge = trace
        .iter()
        .find(|entry| entry.phase == "neverc.link.object_merge")
        .unwrap();
    assert_eq!(merge.actor, Actor::Builtin);
    assert_eq!(runs_of(&trace, "neverc.link.layout"), 0);
    let bytes = std::fs::read(&builtin).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF");
    assert_eq!(u16::from_le_bytes([bytes[16], bytes[17]]), 1, "e_type is not ET_REL");
    let program = out.join("builtin.out");
    let mut context = LinkContext::new(LinkOptions::new(vec![builtin.clone()], program.clone()));
    run_link(&mut context, tables(), &mut Registry::default()).unwrap();
    assert_eq!(run(&program), expected_output("basics"));
    // A provider that delegates to ld.bfd -r, as a bridge to another linker would.
    let inputs = options.inputs.clone();
    let mut registry = Registry::default();
    registry
        .register(
            tables(),
            &mut Plugin(move |registrar: &mut Registrar<'_>| {
                let inputs = inputs.clone();
                registrar.object_merge_provider(Box::new(move |frame| {
                    let scratch = std::env::temp_dir().join(format!("merge-{}.o", std::process::id()));
                    let status = Command::new("ld.bfd")
                        .arg("-r")
                        .arg("-o")
                        .arg(&scratch)
                        .args(&inputs)
                        .status();
                    if !status.is_ok_and(|status| status.success()) {
                        return Err(Status::new(StatusCode::PluginFailure, "ld.bfd -r failed"));
                    }
                    let bytes = std::fs::read(&scratch)
                        .map_err(|error| Status::new(StatusCode::PluginFailure, error.to_string()))?;
                    let _ = std::fs::remove_file(&scratch);
                    frame.publish_object(bytes)
                }))
            }),
        )
        .unwrap();
    let mut context = LinkContext::new(options);
    let trace = run_link(&mut context, tables(), &mut registry).unwrap();
    let merge = trace
        .iter()
        .find(|entry| entry.phase == "neverc.link.object_merge")
        .unwrap();
    assert_eq!(merge.actor, Actor::Provider);
    assert_eq!(runs_of(&trace, "neverc.link.layout"), 0);
    // The merged object links on its own into the same program.
    let program = out.join("a.out");
    let mut context = LinkContext::new(LinkOptions::new(vec![merged.clone()], program.clone()));
    run_link(&mut context, tables(), &mut Registry::default()).unwrap();
    assert_eq!(run(&program), expected_output("basics"));
    // As with ld, a `-r` output is not executable (0666 less the umask) and a program is (0777 less the umask).
    use std::os::unix::fs::MetadataExt as _;
    let mode = |path: &Path| std::fs::metadata(path).unwrap().mode() & 0o7777;
    assert_eq!(mode(&merged) & 0o111, 0, "{:o}", mode(&merged));
    assert_eq!(mode(&program) & 0o666, mode(&merged));
    assert_ne!(mode(&program) & 0o111, 0, "{:o}", mode(&program));
}

/// The bundled schema with its phase list reversed: the same phases and state machine, other indices.
fn reversed_phase_tables(out: &Path) -> &'static PhaseTables {
    let schema = std::fs::read_to_string(repo().join("PhaseSchema.json")).unwrap();
    let mut document: serde_json::Value = serde_json::from_str(&schema).unwrap();
    document["phases"].as_array_mut().unwrap().reverse();
    let copy = out.join("PhaseSchema.json");
    std::fs::write(&copy, serde_json::to_string_pretty(&document).unwrap()).unwrap();
    let tables = neverc_loader::load_phase_tables(&copy).unwrap();
    assert_ne!(
        tables.phase_index_by_name("neverc.link.read_inputs"),
        neverc_tables::BUNDLED_PHASES.phase_index_by_name("neverc.link.read_inputs")
    );
    tables
}

#[test]
fn origins_name_phases_of_the_tables_the_link_runs_with() {
    let out = scratch!("plugins-reordered-origins");
    let reversed = reversed_phase_tables(&out);
    let mut registry = Registry::default();
    let mut context = LinkContext::new(options("basics", &out.join("a.out")));
    run_link(&mut context, reversed, &mut registry).unwrap();
    assert_eq!(run(&out.join("a.out")), expected_output("basics"));
    let graph = &context.graph;
    let creators: Vec<&str> = graph
        .atoms
        .iter()
        .map(|atom| atom.origin)
        .chain(graph.symbols.iter().map(|symbol| symbol.origin))
        .filter_map(|origin| origin.created_by_phase())
        .map(|phase| reversed.phases[usize::from(phase)].name)
        .collect();
    // Read entities name `read_inputs`, linker-defined symbols `resolve_symbols`, and nothing else is named.
    for expected in ["neverc.link.read_inputs", "neverc.link.resolve_symbols"] {
        assert!(creators.contains(&expected), "no entity names {expected}: {creators:?}");
    }
    let allowed = [
        "neverc.link.read_inputs",
        "neverc.link.resolve_symbols",
        "neverc.link.synthesize",
        "neverc.link.layout",
    ];
    assert!(
        creators.iter().all(|name| allowed.contains(name)),
        "an origin names a phase that creates nothing: {:?}",
        creators
            .iter()
            .filter(|name| !allowed.contains(name))
            .collect::<Vec<_>>()
    );
}

/// What the liveness verifier answered, run by run of `icf`.
#[derive(Debug, Default)]
struct Verdicts {
    runs: usize,
    orphan_target_refused: Option<bool>,
    orphan_new_target_refused: Option<bool>,
}

#[test]
fn liveness_verifier_sees_edges_retargeted_by_a_rebound_symbol() {
    let out = scratch!("plugins-rebind-verifier");
    let verdicts = Rc::new(RefCell::new(Verdicts::default()));
    let seen = Rc::clone(&verdicts);
    // Atom B, chosen in the first run.
    let chosen: Rc<std::cell::Cell<Option<usize>>> = Rc::default();
    let error = link_with("basics", &out.join("a.out"), tables(), move |registrar| {
        let verdicts = Rc::clone(&seen);
        let chosen = Rc::clone(&chosen);
        registrar.intercept(
            "neverc.link.icf",
            Box::new(move |frame, next| {
                let run = {
                    let mut verdicts = verdicts.borrow_mut();
                    verdicts.runs += 1;
                    verdicts.runs
                };
                if run == 1 {
                    let graph = frame.graph();
                    let live = |atom: usize| graph.atoms[atom].is_live();
                    let (source, symbol, target) = graph
                        .edges
                        .iter()
                        .filter(|edge| live(edge.source.index()))
                        .find_map(|edge| {
                            let symbol = graph.resolved(edge.target_symbol.get()?);
                            let target = graph.symbols[symbol.index()].atom?;
                            (target != edge.source && live(target.index())).then_some((
                                edge.source.index(),
                                symbol.index(),
                                target.index(),
                            ))
                        })
                        .unwrap();
                    let other = (0..graph.atoms.len())
                        .find(|&atom| atom != source && atom != target && live(atom))
                        .unwrap();
                    chosen.set(Some(other));
                    // Orphaning X is refused (and the verifier has now indexed the edges).
                    let mutation = frame.begin_mutation()?;
                    frame.set_atom_live(mutation, frame.handle(EntityKind::Atom, target)?, false)?;
                    let refused = frame.commit_mutation(mutation);
                    verdicts.borrow_mut().orphan_target_refused =
                        Some(refused.is_err_and(|status| status.code == StatusCode::VerificationFailed));
                    // S now lives in B: A refers to B. The state drops, and icf runs again.
                    let mutation = frame.begin_mutation()?;
                    frame.rebind_symbol(
                        mutation,
                        frame.handle(EntityKind::Symbol, symbol)?,
                        frame.handle(EntityKind::Atom, other)?,
                    )?;
                    return frame.commit_mutation(mutation);
                }
                if run == 2 {
                    let other = chosen.get().unwrap();
                    let mutation = frame.begin_mutation()?;
                    frame.set_atom_live(mutation, frame.handle(EntityKind::Atom, other)?, false)?;
                    let refused = frame.commit_mutation(mutation);
                    verdicts.borrow_mut().orphan_new_target_refused =
                        Some(refused.is_err_and(|status| status.code == StatusCode::VerificationFailed));
                    return Err(Status::new(StatusCode::Cancelled, "seen enough"));
                }
                next(frame)
            }),
        )
    })
    .unwrap_err();
    assert!(error.to_string().contains("seen enough"), "{error}");
    let verdicts = verdicts.borrow();
    assert_eq!(verdicts.runs, 2, "{verdicts:?}");
    assert_eq!(verdicts.orphan_target_refused, Some(true), "{verdicts:?}");
    assert_eq!(
        verdicts.orphan_new_target_refused,
        Some(true),
        "making B dead orphans it: live atom A refers to it through the rebound symbol"
    );
}
