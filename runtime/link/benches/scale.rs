#![allow(clippy::unwrap_used, clippy::expect_used)]
//! How link time grows with the size of the link, on synthetic inputs built in memory
//! (`tests/support/synthetic.rs`), each at two sizes n and 4n:
//!
//! - `got`: n data symbols, each loaded through the GOT 4 times from n / 250 objects (4n `GOTPCREL`
//!   relocations, n GOT slots);
//! - `archive_chain`: an archive of n members in which member i is needed by member i - 1, so that symbol
//!   resolution extracts one member per round (n rounds);
//! - `proof`: n MiB of input bytes (in 16 objects, in a section the link does not place), linked without
//!   plugins and with a plugin that asks to skip `relocate` and `emit_image` with a proof (and never has one).
//!
//! Each case measures a whole `run_link` over a graph read beforehand (`link`), and for `got` and
//! `archive_chain` also the phases the case is about, from the trace (`phases`). Run with
//! `cargo bench -p neverc-link --bench scale`.

#[path = "../tests/support/synthetic.rs"]
mod synthetic;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{BenchmarkGroup, BenchmarkId, Criterion, criterion_group, criterion_main};
use neverc_link::context::{LinkContext, LinkOptions};
use neverc_link::execute::{TraceEntry, run_link};
use neverc_link::plugin::{LinkPlugin, Registrar, Registry};
use neverc_link::read::graph_from_inputs;
use neverc_link::status::Status;
use neverc_tables::PhaseTables;

fn tables() -> &'static PhaseTables {
    &neverc_tables::BUNDLED_PHASES
}

fn output(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("link-scale");
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir.join(name)
}

/// A plugin that asks to skip `relocate` and `emit_image` with a proof and never has one.
struct NeverSkips;

impl LinkPlugin for NeverSkips {
    fn name(&self) -> &str {
        "never-skips"
    }

    fn register(&mut self, registrar: &mut Registrar<'_>) -> Result<(), Status> {
        for phase in ["neverc.link.relocate", "neverc.link.emit_image"] {
            registrar.skip_with_proof(
                phase,
                Box::new(|frame, current| {
                    black_box((frame.phase(), current));
                    None
                }),
            )?;
        }
        Ok(())
    }
}

/// Links `inputs` (read into the graph before the clock starts) `iterations` times; the time is that of
/// `run_link`, or with `phases` only that of the named phases as the trace reports them.
fn link_time(
    inputs: &[(String, Vec<u8>)],
    output: &Path,
    skip_plugin: bool,
    phases: Option<&[&str]>,
    iterations: u64,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iterations {
        let mut context = LinkContext::new(LinkOptions::new(Vec::new(), output.to_path_buf()));
        context.graph = graph_from_inputs(inputs.to_vec()).expect("synthetic inputs read");
        let mut registry = Registry::default();
        if skip_plugin {
            registry
                .register(tables(), &mut NeverSkips)
                .expect("skip requests allowed");
        }
        let started = Instant::now();
        let trace: Vec<TraceEntry> = run_link(&mut context, tables(), &mut registry).expect("synthetic link");
        let elapsed = started.elapsed();
        total += match phases {
            None => elapsed,
            Some(phases) => trace
                .iter()
                .filter(|entry| phases.contains(&entry.phase))
                .map(|entry| entry.duration)
                .sum(),
        };
        black_box((trace, context));
    }
    total
}

fn configure(group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
}

fn got(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("got");
    configure(&mut group);
    for symbols in [5_000usize, 20_000] {
        let (inputs, _) = synthetic::got_link(symbols, 4);
        let path = output("got");
        group.bench_function(BenchmarkId::new("link", symbols), |bencher| {
            bencher.iter_custom(|iterations| link_time(&inputs, &path, false, None, iterations))
        });
        let phases: &[&str] = &["neverc.link.synthesize", "neverc.link.relocate"];
        group.bench_function(BenchmarkId::new("phases", symbols), |bencher| {
            bencher.iter_custom(|iterations| link_time(&inputs, &path, false, Some(phases), iterations))
        });
    }
    group.finish();
}

fn archive_chain(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("archive_chain");
    configure(&mut group);
    for members in [2_000usize, 8_000] {
        let inputs = synthetic::archive_chain(members);
        let path = output("chain");
        group.bench_function(BenchmarkId::new("link", members), |bencher| {
            bencher.iter_custom(|iterations| link_time(&inputs, &path, false, None, iterations))
        });
        let phases: &[&str] = &["neverc.link.resolve_symbols"];
        group.bench_function(BenchmarkId::new("phases", members), |bencher| {
            bencher.iter_custom(|iterations| link_time(&inputs, &path, false, Some(phases), iterations))
        });
    }
    group.finish();
}

fn proof(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("proof");
    configure(&mut group);
    for mebibytes in [16usize, 64] {
        let inputs = synthetic::bulky_link(16, mebibytes << 20);
        let path = output("bulky");
        group.bench_function(BenchmarkId::new("no_plugin", format!("{mebibytes}MiB")), |bencher| {
            bencher.iter_custom(|iterations| link_time(&inputs, &path, false, None, iterations))
        });
        group.bench_function(BenchmarkId::new("skip_plugin", format!("{mebibytes}MiB")), |bencher| {
            bencher.iter_custom(|iterations| link_time(&inputs, &path, true, None, iterations))
        });
    }
    group.finish();
}

criterion_group!(benches, got, archive_chain, proof);
criterion_main!(benches);
