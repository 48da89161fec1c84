//! Steady-state load+validate time of the declaration files: syntax, JSON-Schema structure and semantic checks.
//!
//! The compiled JSON-Schema validators are built once per process and cached (`OnceLock`), so every group warms them
//! up first and measures the steady state; `bench/cold_load.sh` measures a cold single load through the CLI.
//!
//! Run with `cargo bench -p neverc-schema --bench load`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use neverc_schema::{lower_phase_schema, lower_target, parse_phase_schema, parse_target};

/// NeverC's newest published phase schema (130 phases).
const NEVERC_SCHEMA: &str = include_str!("../../tests/fixtures/neverc/PhaseSchema.json");
/// This repository's phase schema (32 phases).
const OUR_SCHEMA: &str = include_str!("../../PhaseSchema.json");
const TARGETS: [(&str, &str); 3] = [
    ("x86_64", include_str!("../../targets/x86_64.toml")),
    ("aarch64", include_str!("../../targets/aarch64.toml")),
    ("riscv64", include_str!("../../targets/riscv64.toml")),
];

/// Loads once outside the measurement: builds the cached validator and checks that the input is valid, so that
/// the numbers are for the success path.
fn warm_phase_schema(file: &str, text: &str) {
    if let Err(diagnostics) = parse_phase_schema(file, text) {
        panic!("{file} does not validate: {diagnostics:#?}");
    }
}

fn warm_target(file: &str, text: &str) {
    if let Err(diagnostics) = parse_target(file, text) {
        panic!("{file} does not validate: {diagnostics:#?}");
    }
}

fn phase_schemas(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse_phase_schema");
    for (name, text) in [("neverc_130_phases", NEVERC_SCHEMA), ("ours_32_phases", OUR_SCHEMA)] {
        warm_phase_schema(name, text);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| parse_phase_schema(black_box("PhaseSchema.json"), black_box(text)))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("parse_and_lower_phase_schema");
    group.throughput(Throughput::Bytes(NEVERC_SCHEMA.len() as u64));
    group.bench_function("neverc_130_phases", |b| {
        b.iter(|| {
            parse_phase_schema(black_box("PhaseSchema.json"), black_box(NEVERC_SCHEMA)).map(|document| {
                lower_phase_schema(&document, &neverc_schema::Bump::new()).map(|tables| tables.phases.len())
            })
        })
    });
    group.finish();
}

fn targets(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse_target");
    for (name, text) in TARGETS {
        warm_target(name, text);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| parse_target(black_box("target.toml"), black_box(text)))
        });
    }
    group.finish();

    let (name, text) = TARGETS[0];
    let mut group = c.benchmark_group("parse_and_lower_target");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function(name, |b| {
        b.iter(|| {
            parse_target(black_box("target.toml"), black_box(text)).map(|declaration| {
                lower_target(&declaration, &neverc_schema::Bump::new()).map(|target| target.names.len())
            })
        })
    });
    group.finish();
}

criterion_group!(benches, phase_schemas, targets);
criterion_main!(benches);
