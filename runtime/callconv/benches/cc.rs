#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Calling-convention throughput: materializing a module of 1,000,000 functions, and parsing plus
//! validating plan strings. Run with `cargo bench -p neverc-runtime --bench cc`.

use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use neverc_cc::lower::lower_to;
use neverc_cc::materialize::{MaterializeOptions, WriteOutput, materialize, materialize_to};
use neverc_cc::plan::Plan;
use neverc_cc::plan_validation::validate_plan;
use neverc_tables::target_by_name;

const SIGNATURES: [(&str, &str, &str); 8] = [
    (
        "i32",
        "i32 noundef %0, i32 noundef %1, i32 noundef %2",
        "i32 noundef 1, i32 noundef 2, i32 noundef 3",
    ),
    ("i64", "i64 noundef %0, i64 noundef %1", "i64 noundef 1, i64 noundef 2"),
    (
        "float",
        "float noundef %0, float noundef %1",
        "float noundef 1.0, float noundef 2.0",
    ),
    (
        "double",
        "i32 noundef %0, double noundef %1, i64 noundef %2",
        "i32 noundef 1, double noundef 2.0, i64 noundef 3",
    ),
    ("i32", "i32 noundef %0", "i32 noundef 7"),
    (
        "i64",
        "i8* noundef %0, i64 noundef %1",
        "i8* noundef null, i64 noundef 4",
    ),
    (
        "i32",
        "i32 noundef %0, i32 noundef %1, i32 noundef %2, i32 noundef %3, i32 noundef %4",
        "i32 noundef 1, i32 noundef 2, i32 noundef 3, i32 noundef 4, i32 noundef 5",
    ),
    ("void", "", ""),
];

/// The same module `bench/gen_module.py` writes: each function calls the previous one.
fn module(count: usize) -> String {
    let mut text = String::from("target triple = \"x86_64-pc-linux-gnu\"\n\n");
    for n in 0..count {
        let (ret, params, _) = SIGNATURES[n % SIGNATURES.len()];
        let _ = writeln!(text, "define dso_local {ret} @f{n}({params}) local_unnamed_addr #0 {{");
        if n > 0 {
            let (previous, _, arguments) = SIGNATURES[(n - 1) % SIGNATURES.len()];
            let result = if previous == "void" { "" } else { "%r = " };
            let _ = writeln!(text, "  {result}tail call {previous} @f{}({arguments})", n - 1);
        }
        let value = match ret {
            "void" => String::new(),
            "float" | "double" => " 0.0".to_string(),
            _ => " 0".to_string(),
        };
        let _ = writeln!(text, "  ret {ret}{value}\n}}\n");
    }
    text.push_str("attributes #0 = { nounwind \"frame-pointer\"=\"none\" }\n");
    text
}

fn materialize_million(c: &mut Criterion) {
    let x86 = target_by_name("x86_64").expect("bundled target");
    let text = module(1_000_000);
    let mut group = c.benchmark_group("materialize");
    group.sample_size(10);
    group.throughput(Throughput::Elements(1_000_000));
    for (name, options) in [
        (
            "1M functions, --cc-all",
            MaterializeOptions {
                cc_all: true,
                ..Default::default()
            },
        ),
        (
            "1M functions, --cc-all --ccshuffle",
            MaterializeOptions {
                cc_all: true,
                shuffle: true,
                ..Default::default()
            },
        ),
    ] {
        // The output goes to one buffer, reused, as a long-running compiler would reuse it.
        let mut buffer: Vec<u8> = Vec::with_capacity(text.len() * 5 / 4);
        group.bench_function(name, |b| {
            b.iter(|| {
                buffer.clear();
                let report = materialize_to(black_box(&text), x86, &options, &mut WriteOutput(&mut buffer))
                    .expect("materializes");
                assert_eq!(report.plan_count(), 1_000_000);
                buffer.len()
            })
        });
    }
    // The same into a new string every time (fresh memory for the 194 MB output).
    group.bench_function("1M functions, --cc-all, new string", |b| {
        let options = MaterializeOptions {
            cc_all: true,
            ..Default::default()
        };
        b.iter(|| {
            let result = materialize(black_box(&text), x86, &options).expect("materializes");
            assert_eq!(result.report.plan_count(), 1_000_000);
            result.text.len()
        })
    });
    group.finish();
}

/// Lowering a materialized module of 1,000,000 functions, next to materializing it, in the same run (the issue's
/// target: lowering within 2x of materialization alone), both into a reused buffer.
fn lower_million(c: &mut Criterion) {
    let x86 = target_by_name("x86_64").expect("bundled target");
    let text = module(1_000_000);
    let options = MaterializeOptions {
        cc_all: true,
        ..Default::default()
    };
    let materialized = materialize(&text, x86, &options).expect("materializes").text;
    let mut group = c.benchmark_group("lower");
    group.sample_size(10);
    group.throughput(Throughput::Elements(1_000_000));
    let mut buffer: Vec<u8> = Vec::with_capacity(materialized.len() * 3 / 2);
    group.bench_function("materialize 1M functions, --cc-all", |b| {
        b.iter(|| {
            buffer.clear();
            let report =
                materialize_to(black_box(&text), x86, &options, &mut WriteOutput(&mut buffer)).expect("materializes");
            assert_eq!(report.plan_count(), 1_000_000);
            buffer.len()
        })
    });
    group.bench_function("lower the materialized module", |b| {
        b.iter(|| {
            buffer.clear();
            let report = lower_to(black_box(&materialized), x86, &mut WriteOutput(&mut buffer)).expect("lowers");
            assert_eq!(report.incoming.len(), 1_000_000);
            buffer.len()
        })
    });
    group.finish();
}

fn plan_parsing(c: &mut Criterion) {
    let x86 = target_by_name("x86_64").expect("bundled target");
    let plans = [
        "neverc-cc-plan-v1;schema=llvm-x86_64-unknown-linux-gnu;target=0:0;cc=0:0;stack=16;returns=r,0,0,4,4,51,0,0;arguments=r,0,0,4,4,54,0,0|r,1,0,4,4,56,0,0|r,2,0,4,4,119,0,0;callee-saved=",
        "neverc-cc-plan-v1;schema=llvm-x86_64-unknown-linux-gnu;target=0:0;cc=0:0;stack=16;returns=r,0,0,8,8,56,0,0;arguments=r,0,0,8,8,54,0,0|r,1,0,8,8,56,0,0|r,2,0,8,8,119,0,0|r,3,0,8,8,120,0,0|s,4,0,8,8,0,0,0|s,5,0,16,16,0,16,0|r,6,0,4,4,140,0,0;callee-saved=123,124,125",
        "neverc-cc-plan-v1;schema=llvm-x86_64-unknown-linux-gnu;target=0:0;cc=0:0;stack=16;returns=;arguments=s,0,0,8,8,0,0,0|s,1,0,8,8,0,8,0|s,2,0,8,8,0,16,0;callee-saved=",
    ];
    let corpus: Vec<&str> = plans.iter().cycle().take(30_000).copied().collect();
    let bytes: usize = corpus.iter().map(|plan| plan.len()).sum();
    let mut group = c.benchmark_group("plan");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("parse+validate", |b| {
        b.iter(|| {
            for text in &corpus {
                let plan = Plan::parse(black_box(text)).expect("valid plan");
                validate_plan(&plan, x86, None).expect("valid for x86_64");
            }
        })
    });
    group.bench_function("parse", |b| {
        b.iter(|| {
            for text in &corpus {
                black_box(Plan::parse(black_box(text)).expect("valid plan"));
            }
        })
    });
    group.finish();
}

/// The first pass alone, and a bare line scan of the same text as a floor.
fn read_only(c: &mut Criterion) {
    let text = module(1_000_000);
    let mut group = c.benchmark_group("read");
    group.sample_size(10);
    group.bench_function("read_module 1M", |b| {
        b.iter(|| {
            neverc_cc::ll_reader::read_module(black_box(&text))
                .unwrap()
                .functions
                .len()
        })
    });
    group.bench_function("line scan 1M (floor)", |b| {
        b.iter(|| {
            black_box(&text)
                .split_inclusive('\n')
                .filter(|l| l.as_bytes().first() == Some(&b'@'))
                .count()
        })
    });
    group.finish();
}

/// Attribute groups and parameters at `n` and `4n` (`NEVERC_CC_SCALE_N`, 25,000 by default): linear work
/// takes 4 times as long at `4n`.
fn scale(c: &mut Criterion) {
    let x86 = target_by_name("x86_64").expect("bundled target");
    let n: usize = std::env::var("NEVERC_CC_SCALE_N")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(25_000);
    let mut group = c.benchmark_group("scale");
    group.sample_size(10);
    for (what, make) in [
        ("groups", neverc_test_support::spec_groups_module as fn(usize) -> String),
        (
            "parameters",
            neverc_test_support::spec_parameters_module as fn(usize) -> String,
        ),
    ] {
        for count in [n, 4 * n] {
            let text = make(count);
            group.bench_function(format!("{what}/{count}"), |b| {
                b.iter(|| {
                    let result =
                        materialize(black_box(&text), x86, &MaterializeOptions::default()).expect("materializes");
                    assert_eq!(result.report.plan_count(), if what == "groups" { count } else { 1 });
                    result.text.len()
                })
            });
        }
    }
    group.finish();
}

criterion_group!(
    benches,
    plan_parsing,
    materialize_million,
    lower_million,
    read_only,
    scale
);
criterion_main!(benches);
