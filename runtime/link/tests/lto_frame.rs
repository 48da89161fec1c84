#![allow(clippy::unwrap_used, clippy::expect_used)]
//! LTO as plugins see it: the resolutions `lto_resolve` makes are paged through the frame like the link's
//! entities (caller-owned buffers, handles of the link's session and generation), and an observer of
//! `lto_generate` sees the bitcode modules before and the generated objects after.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

use neverc_link::context::{LinkContext, LinkOptions};
use neverc_link::execute::run_link;
use neverc_link::frame::Handle;
use neverc_link::graph::{EntityKind, InputKind};
use neverc_link::lto::ResolutionFlags;
use neverc_link::plugin::{LinkPlugin, ObserverPoint, Registrar, Registry};
use neverc_link::status::Status;
use neverc_test_support::scratch;

/// A freestanding program in two bitcode modules: `_start` (exits with `twice(21)`'s value) and `twice`.
fn bitcode_program(dir: &Path) -> Vec<PathBuf> {
    std::fs::write(
        dir.join("start.c"),
        "int twice(int);\nint unused_here(void) { return 7; }\n\
         void _start(void) { __asm__ volatile(\"syscall\" :: \"a\"(60), \"D\"(twice(21))); for (;;) {} }\n",
    )
    .unwrap();
    std::fs::write(dir.join("twice.c"), "int twice(int x) { return x * 2; }\n").unwrap();
    let mut objects = Vec::new();
    for name in ["start", "twice"] {
        let output = Command::new("clang-14")
            .args(["-O2", "-flto", "-ffreestanding", "-fno-stack-protector", "-c"])
            .arg(dir.join(format!("{name}.c")))
            .arg("-o")
            .arg(dir.join(format!("{name}.o")))
            .output()
            .expect("clang-14 is installed");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        objects.push(dir.join(format!("{name}.o")));
    }
    objects
}

/// A plugin made of a closure over the registrar.
struct Plugin<F: FnMut(&mut Registrar<'_>) -> Result<(), Status>>(F);

impl<F: FnMut(&mut Registrar<'_>) -> Result<(), Status>> LinkPlugin for Plugin<F> {
    fn name(&self) -> &str {
        "lto-observer"
    }

    fn register(&mut self, registrar: &mut Registrar<'_>) -> Result<(), Status> {
        (self.0)(registrar)
    }
}

#[test]
fn resolutions_are_paged_through_the_frame_and_the_modules_become_objects() {
    let dir = scratch!("lto-frame");
    let inputs = bitcode_program(&dir);
    let output = dir.join("a.out");
    let seen: Rc<RefCell<Vec<(String, String)>>> = Rc::default();
    let kinds: Rc<RefCell<Vec<(usize, usize)>>> = Rc::default();
    let (seen_by_observer, kinds_before, kinds_after) = (seen.clone(), kinds.clone(), kinds.clone());
    let mut registry = Registry::default();
    registry
        .register(
            &neverc_tables::BUNDLED_PHASES,
            &mut Plugin(move |registrar: &mut Registrar<'_>| {
                let seen = seen_by_observer.clone();
                registrar.observe(
                    "neverc.link.lto_resolve",
                    ObserverPoint::After,
                    Box::new(move |frame| {
                        let total = frame.graph().count(EntityKind::LtoResolution);
                        let mut buffer = [Handle {
                            kind: EntityKind::LtoResolution,
                            index: 0,
                            generation: 0,
                            session: 0,
                        }; 2];
                        let mut cursor = 0;
                        loop {
                            let page = frame.page(EntityKind::LtoResolution, cursor, &mut buffer)?;
                            for handle in &buffer[..page.count] {
                                let (resolution, name) = frame.lto_resolution(*handle)?;
                                seen.borrow_mut().push((name.to_string(), resolution.letters()));
                            }
                            cursor = page.next_cursor;
                            if !page.has_more {
                                break;
                            }
                        }
                        assert_eq!(seen.borrow().len(), total);
                        // A handle of another kind is refused.
                        let symbol_handle = Handle {
                            kind: EntityKind::Symbol,
                            index: 0,
                            generation: buffer[0].generation,
                            session: buffer[0].session,
                        };
                        assert!(frame.lto_resolution(symbol_handle).is_err());
                        Ok(())
                    }),
                )?;
                for (point, counts) in [
                    (ObserverPoint::Before, kinds_before.clone()),
                    (ObserverPoint::After, kinds_after.clone()),
                ] {
                    registrar.observe(
                        "neverc.link.lto_generate",
                        point,
                        Box::new(move |frame| {
                            let graph = frame.graph();
                            let objects = graph
                                .inputs
                                .iter()
                                .filter(|input| input.kind == InputKind::Object)
                                .count();
                            let generated = graph.bitcode_modules.iter().all(|module| !module.generated.is_empty());
                            assert_eq!(generated, point == ObserverPoint::After);
                            counts.borrow_mut().push((graph.bitcode_modules.len(), objects));
                            Ok(())
                        }),
                    )?;
                }
                Ok(())
            }),
        )
        .unwrap();
    let mut context = LinkContext::new(LinkOptions::new(inputs, output.clone()));
    run_link(&mut context, &neverc_tables::BUNDLED_PHASES, &mut registry).unwrap();
    let mut seen = seen.borrow().clone();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("_start".to_string(), "plx".to_string()),
            ("twice".to_string(), "l".to_string()),
            ("twice".to_string(), "pl".to_string()),
            ("unused_here".to_string(), "pl".to_string()),
        ]
    );
    assert!(
        context
            .graph
            .lto_resolutions
            .iter()
            .any(|resolution| resolution.flags.contains(ResolutionFlags::CAN_INTERNALIZE))
    );
    // Two modules and no object before; the same two modules and one object (full LTO) after.
    assert_eq!(*kinds.borrow(), [(2, 0), (2, 1)]);
    let status = neverc_test_support::status_retrying_busy(&mut Command::new(&output));
    assert_eq!(status.code(), Some(42), "the program exits with twice(21)");
}

/// Generates code with `llvm-lto2-14` and counts the requests it got.
struct Counting {
    inner: neverc_link::lto::llvm::LlvmLto2,
    calls: std::sync::atomic::AtomicUsize,
}

impl neverc_link::lto::provider::LtoProvider for Counting {
    fn id(&self) -> &str {
        "test.counting"
    }
    fn target(&self) -> &str {
        self.inner.target()
    }
    fn flags(&self) -> u64 {
        neverc_link::lto::ProviderFlags::FULL.bits()
    }
    fn codegen(
        &self,
        request: &neverc_link::lto::request::LtoRequest,
    ) -> Result<neverc_link::lto::provider::LtoCandidate, neverc_link::lto::provider::ProviderError> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.codegen(request)
    }
}

#[test]
fn a_registered_code_generator_is_asked_and_a_second_with_its_id_is_refused() {
    use neverc_link::lto::provider::SharedProvider;
    let dir = scratch!("lto-frame-provider");
    let inputs = bitcode_program(&dir);
    let output = dir.join("a.out");
    let counting = std::rc::Rc::new(Counting {
        inner: neverc_link::lto::llvm::LlvmLto2::new("x86_64-unknown-linux-gnu"),
        calls: std::sync::atomic::AtomicUsize::new(0),
    });
    let shared = SharedProvider(counting.clone());
    let mut registry = Registry::default();
    registry
        .register(
            &neverc_tables::BUNDLED_PHASES,
            &mut Plugin(move |registrar: &mut Registrar<'_>| registrar.lto_code_generator(shared.clone())),
        )
        .unwrap();
    let again = SharedProvider(counting.clone());
    let status = registry
        .register(
            &neverc_tables::BUNDLED_PHASES,
            &mut Plugin(move |registrar: &mut Registrar<'_>| registrar.lto_code_generator(again.clone())),
        )
        .unwrap_err();
    assert_eq!(
        status.code,
        neverc_link::status::StatusCode::DuplicateId,
        "{}",
        status.message
    );
    let mut context = LinkContext::new(LinkOptions::new(inputs, output.clone()));
    run_link(&mut context, &neverc_tables::BUNDLED_PHASES, &mut registry).unwrap();
    assert_eq!(counting.calls.load(std::sync::atomic::Ordering::Relaxed), 1);
    let status = neverc_test_support::status_retrying_busy(&mut Command::new(&output));
    assert_eq!(status.code(), Some(42));
}
