#!/usr/bin/env bash
# How link time grows with the size of the link, two ways.
#
# 1. `bash bench/link_scale.sh [RUNS]` (default RUNS=10): a generated C program (bench/gen_scale.py: units of 120
#    functions calling each other through a relocated table of function pointers, string tables, snprintf from
#    glibc), compiled once by gcc -O2 into 64, 256 and 1,024 objects (1x, 4x, 16x; kept in
#    target/bench/link_scale/obj while bench/gen_scale.py is unchanged), linked as gcc links by default (a PIE
#    against glibc's libc.so.6) by ld.bfd, ld.lld, mold, wild and neverc-spec on the same ld command line
#    (recorded from gcc as bench/link.sh does). Every output must print what the ld.bfd build prints. Prints the
#    median wall time per linker and size (hyperfine -N), and the ratio 16x / 1x: at most 16 means time grows
#    at most linearly with the inputs. Results: target/bench/link_scale/summary.md.
# 2. `bash bench/link_scale.sh --criterion BASELINE [criterion args]`: the synthetic links of
#    runtime/link/benches/scale.rs (criterion) at n and 4n, saved as a criterion baseline, and a summary: for each
#    case, the median and the fastest sample (time per link) at n and 4n, and their ratio. To measure the code
#    before a change, check out the old runtime/link/src first (the benchmark itself is new):
#      git checkout COMMIT -- runtime/link/src && bash bench/link_scale.sh --criterion before; git checkout HEAD -- runtime/link/src
set -euo pipefail

if [[ ${1:-} != --criterion ]]; then
    runs="${1:-10}"
    command -v wild >/dev/null || cargo install --locked wild-linker --version 0.10.0
    # The real-world fixtures are not needed here: only the release build and the tools.
    for tool in hyperfine mold ld.lld ld.bfd gcc python3 wild; do
        command -v "$tool" >/dev/null || {
            echo "bench/link_scale.sh needs $tool (Debian: hyperfine mold lld binutils gcc python3; wild: cargo install wild-linker)" >&2
            exit 1
        }
    done
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    cd "$root"
    target="${CARGO_TARGET_DIR:-$root/target}"
    cargo build --release --locked --bin neverc-spec
    neverc="$target/release/neverc-spec"
    out="$target/bench/link_scale"
    obj="$out/obj"
    stamp="$(sha256sum bench/gen_scale.py | cut -d' ' -f1) $(gcc --version | head -n1)"
    if [[ ! -f $obj/stamp || $(cat "$obj/stamp") != "$stamp" ]]; then
        rm -rf "$obj"
        mkdir -p "$obj"
        python3 bench/gen_scale.py "$obj" 64
        python3 bench/gen_scale.py "$obj" 256
        python3 bench/gen_scale.py "$obj" 1024
        seq 0 1023 | xargs -P "$(nproc)" -I{} gcc -O2 -c -DP=u{} "$obj/unit.c" -o "$obj/u{}.o"
        for count in 64 256 1024; do
            gcc -O2 -c "$obj/main-$count.c" -o "$obj/main-$count.o"
        done
        echo "$stamp" >"$obj/stamp"
    fi
    rm -rf "$out/links"
    mkdir -p "$out/links/record"
    printf '%s\n' '#!/bin/sh' "printf '%s\\0' \"\$@\" >\"\$LD_RECORD\"" 'exec ld.bfd "$@"' >"$out/links/record/ld"
    chmod +x "$out/links/record/ld"
    linkers=(ld.bfd ld.lld mold wild neverc-spec)
    echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); git $(git rev-parse --short HEAD)"
    echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    for count in 64 256 1024; do
        work="$out/links/$count"
        mkdir -p "$work"
        objects=("$obj/main-$count.o")
        for ((unit = 0; unit < count; unit++)); do objects+=("$obj/u$unit.o"); done
        LD_RECORD="$work/recorded.args" gcc -B "$out/links/record" "${objects[@]}" -o "$work/reference" 2>/dev/null
        "$work/reference" >"$work/expected.stdout"
        # The replayed arguments: without gcc's LTO plugin options and without -o and its operand.
        mapfile -t ld_args < <(python3 -c '
import sys
args = open(sys.argv[1], "rb").read().decode().split("\0")[:-1]
skip = False
for arg in args:
    if skip:
        skip = False
    elif arg in ("-plugin", "-o"):
        skip = True
    elif not arg.startswith("-plugin-opt="):
        print(arg)' "$work/recorded.args")
        commands=()
        for linker in "${linkers[@]}"; do
            case $linker in
                neverc-spec) command=("$neverc" ld) ;;
                *) command=("$linker") ;;
            esac
            "${command[@]}" "${ld_args[@]}" -o "$work/$linker.elf" 2>"$work/$linker.stderr" || {
                echo "$linker failed on $count units:" >&2
                cat "$work/$linker.stderr" >&2
                exit 1
            }
            "$work/$linker.elf" >"$work/$linker.stdout"
            cmp -s "$work/$linker.stdout" "$work/expected.stdout" || {
                echo "$linker's program of $count units does not print what the ld.bfd build prints" >&2
                exit 1
            }
            commands+=(--command-name "$linker" "$(printf '%q ' "${command[@]}" "${ld_args[@]}" -o "$work/$linker.elf")")
        done
        hyperfine -N --warmup 2 --runs "$runs" --export-json "$work/hyperfine.json" "${commands[@]}" >"$work/hyperfine.txt"
        echo "$count units: $(stat -c %s "$work/neverc-spec.elf") bytes (neverc-spec), load $(cut -d' ' -f1-3 /proc/loadavg)"
    done
    python3 - "$out/links" "${linkers[@]}" <<'PY' | tee "$out/summary.md"
import json, pathlib, statistics, sys
base, linkers = pathlib.Path(sys.argv[1]), sys.argv[2:]
sizes = [64, 256, 1024]
median = {}
for size in sizes:
    for result in json.loads((base / str(size) / "hyperfine.json").read_text())["results"]:
        median[(result["command"], size)] = statistics.median(result["times"]) * 1000
print("| linker | 1x (64 objects) | 4x (256) | 16x (1,024) | 4x / 1x | 16x / 1x |")
print("| --- | --- | --- | --- | --- | --- |")
for linker in linkers:
    times = [median[(linker, size)] for size in sizes]
    print(f"| {linker} | " + " | ".join(f"{time:.1f} ms" for time in times)
          + f" | {times[1] / times[0]:.2f} | {times[2] / times[0]:.2f} |")
PY
    exit 0
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
baseline="${2:?usage: bash bench/link_scale.sh --criterion BASELINE [criterion args]}"
shift 2

echo "== machine"
echo "nproc: $(nproc)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

cargo bench -p neverc-link --bench scale -- --save-baseline "$baseline" "$@"

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== summary ($baseline): median and fastest sample, per link; ratio of 4n to n"
python3 - "${CARGO_TARGET_DIR:-target}/criterion" "$baseline" <<'PY'
import json, pathlib, sys

base, baseline = pathlib.Path(sys.argv[1]), sys.argv[2]

def fmt(ns):
    return f"{ns / 1e6:.2f} ms" if ns >= 1e6 else f"{ns / 1e3:.0f} µs"

def measure(directory):
    estimates = json.loads((directory / "estimates.json").read_text())
    sample = json.loads((directory / "sample.json").read_text())
    fastest = min(time / iters for time, iters in zip(sample["times"], sample["iters"]))
    return estimates["median"]["point_estimate"], fastest

# Only the groups of runtime/link/benches/scale.rs (target/criterion is shared with other benches).
for group in ["got", "archive_chain", "proof"]:
    for case in sorted(path for path in (base / group).glob("*") if path.is_dir()):
        sizes = [path for path in case.glob("*") if (path / baseline / "sample.json").exists()]
        if len(sizes) != 2:
            continue
        sizes.sort(key=lambda path: int("".join(ch for ch in path.name if ch.isdigit())))
        (small_median, small_fastest), (large_median, large_fastest) = (measure(s / baseline) for s in sizes)
        print(f"{group}/{case.name:<12} {sizes[0].name:>6} median {fmt(small_median):>10} fastest {fmt(small_fastest):>10}"
              f" | {sizes[1].name:>6} median {fmt(large_median):>10} fastest {fmt(large_fastest):>10}"
              f" | ratio {large_median / small_median:5.1f}x median, {large_fastest / small_fastest:5.1f}x fastest")
PY
