#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Link-graph loading throughput: every fixture object of `tests/fixtures/programs` (built with gcc by
//! `build.sh` into the target directory), then the same objects repeated under different names (a larger
//! link of the same shape), then both archives with all their members extracted. Each case reports bytes/s
//! (`load_bytes`) and objects/s (`load_objects`). Run with `cargo bench -p neverc-link --bench load`.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{BatchSize, BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use neverc_link::read::{extract_all_members, graph_from_inputs, graph_from_inputs_in_parallel};
use neverc_test_support::build_fixture_programs;

/// How often the fixture objects are repeated for the larger sets.
const REPEATS: [usize; 3] = [1, 16, 128];

struct Fixtures {
    objects: Vec<(String, Vec<u8>)>,
    archives: Vec<(String, Vec<u8>)>,
}

/// Builds the fixture programs (once per `cargo bench`) and reads every object and archive.
fn fixtures() -> Fixtures {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("link-bench");
    build_fixture_programs(&out);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&out)
        .expect("fixture directory")
        .filter_map(Result::ok)
        .filter(|entry| entry.path().is_dir())
        .flat_map(|dir| {
            std::fs::read_dir(dir.path())
                .expect("program directory")
                .filter_map(Result::ok)
        })
        .map(|entry| entry.path())
        .collect();
    files.sort();
    let mut fixtures = Fixtures {
        objects: Vec::new(),
        archives: Vec::new(),
    };
    for path in files {
        let name = path.display().to_string();
        if name.ends_with(".o") {
            fixtures
                .objects
                .push((name, std::fs::read(&path).expect("read object")));
        } else if name.ends_with(".a") {
            fixtures
                .archives
                .push((name, std::fs::read(&path).expect("read archive")));
        }
    }
    assert!(!fixtures.objects.is_empty() && !fixtures.archives.is_empty());
    fixtures
}

/// The fixture objects `repeats` times, each copy under its own name.
fn repeated(objects: &[(String, Vec<u8>)], repeats: usize) -> Vec<(String, Vec<u8>)> {
    (0..repeats)
        .flat_map(|copy| {
            objects
                .iter()
                .map(move |(name, data)| (format!("copy{copy}/{name}"), data.clone()))
        })
        .collect()
}

fn bytes_of(inputs: &[(String, Vec<u8>)]) -> u64 {
    inputs.iter().map(|(_, data)| data.len() as u64).sum()
}

fn load_cases(group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>, fixtures: &Fixtures, by_bytes: bool) {
    for repeats in REPEATS {
        let inputs = repeated(&fixtures.objects, repeats);
        let throughput = if by_bytes {
            Throughput::Bytes(bytes_of(&inputs))
        } else {
            Throughput::Elements(inputs.len() as u64)
        };
        group.throughput(throughput);
        group.bench_function(format!("objects_x{repeats}"), |bencher| {
            bencher.iter_batched(
                || inputs.clone(),
                |inputs| black_box(graph_from_inputs(inputs).expect("fixtures read")),
                BatchSize::LargeInput,
            )
        });
    }
    // The largest set again, read the way `read_inputs` reads it: on every core.
    if let Some(repeats) = REPEATS.last() {
        let inputs = repeated(&fixtures.objects, *repeats);
        let workers = std::thread::available_parallelism().map_or(1, usize::from);
        group.throughput(if by_bytes {
            Throughput::Bytes(bytes_of(&inputs))
        } else {
            Throughput::Elements(inputs.len() as u64)
        });
        group.bench_function(format!("objects_x{repeats}_on_{workers}_threads"), |bencher| {
            bencher.iter_batched(
                || inputs.clone(),
                |inputs| black_box(graph_from_inputs_in_parallel(inputs, workers).expect("fixtures read")),
                BatchSize::LargeInput,
            )
        });
    }
    // Both archives, every member extracted and read.
    let members: u64 = {
        let mut graph = graph_from_inputs(fixtures.archives.clone()).expect("archives read");
        extract_all_members(&mut graph).expect("members read");
        graph.archive_members.len() as u64
    };
    group.throughput(if by_bytes {
        Throughput::Bytes(bytes_of(&fixtures.archives))
    } else {
        Throughput::Elements(members)
    });
    group.bench_function("archives_extract_all", |bencher| {
        bencher.iter_batched(
            || fixtures.archives.clone(),
            |inputs| {
                let mut graph = graph_from_inputs(inputs).expect("archives read");
                extract_all_members(&mut graph).expect("members read");
                black_box(graph)
            },
            BatchSize::LargeInput,
        )
    });
}

fn load(criterion: &mut Criterion) {
    let fixtures = fixtures();
    let mut group = criterion.benchmark_group("load_bytes");
    load_cases(&mut group, &fixtures, true);
    group.finish();
    let mut group = criterion.benchmark_group("load_objects");
    load_cases(&mut group, &fixtures, false);
    group.finish();
}

criterion_group!(benches, load);
criterion_main!(benches);
