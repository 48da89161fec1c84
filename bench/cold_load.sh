#!/usr/bin/env bash
# Cold single-load time and peak RSS of the release CLI: every run is a new process, so the compiled JSON-Schema
# validators (cached in a OnceLock inside one process) are built again each time. The input files themselves are
# in the OS page cache after the warm-up runs; "cold" means a cold process, not a cold disk.
#
# Usage (from anywhere): bash bench/cold_load.sh [RUNS]     (default RUNS=100)
# Uses hyperfine when it is installed (apt-get install -y hyperfine), else (or with COLD_LOAD_NO_HYPERFINE=1) a
# `date +%s%N` loop.
# Peak RSS comes from GNU time (`/usr/bin/time -v`, Debian package `time`) when present.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
runs="${1:-100}"

cargo build --release --bin neverc-spec
bin=target/release/neverc-spec
empty_targets="$(mktemp -d)"
trap 'rm -rf "$empty_targets"' EXIT

echo "== machine"
echo "nproc: $(nproc)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "rustc: $(rustc --version)"

# name|command (run from the repository root)
commands=(
    "neverc-130+targets|$bin check --phase-schema tests/fixtures/neverc/PhaseSchema.json"
    "neverc-130-only|$bin check --phase-schema tests/fixtures/neverc/PhaseSchema.json --targets $empty_targets"
    "ours-32+targets|$bin check --phase-schema PhaseSchema.json"
    "startup-baseline|$bin check --help"
)

# Every command must succeed, or the timings would be of an error path.
for entry in "${commands[@]}"; do
    read -r -a cmd <<<"${entry#*|}"
    "${cmd[@]}" >/dev/null
done

echo "== wall time ($runs runs each)"
if [ -z "${COLD_LOAD_NO_HYPERFINE:-}" ] && command -v hyperfine >/dev/null 2>&1; then
    args=()
    for entry in "${commands[@]}"; do
        args+=(--command-name "${entry%%|*}" "${entry#*|}")
    done
    mkdir -p target/bench
    hyperfine -N --warmup 5 --runs "$runs" --export-json target/bench/cold_load.json "${args[@]}"
    echo "(raw results: target/bench/cold_load.json)"
    if command -v python3 >/dev/null 2>&1; then
        python3 - target/bench/cold_load.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    ms = lambda seconds: seconds * 1000
    print(f"{r['command']:<18} median {ms(r['median']):.2f} ms  mean {ms(r['mean']):.2f} ms ± {ms(r['stddev']):.2f} ms"
          f"  min {ms(r['min']):.2f} ms  max {ms(r['max']):.2f} ms")
PY
    fi
else
    for entry in "${commands[@]}"; do
        read -r -a cmd <<<"${entry#*|}"
        for _ in 1 2 3 4 5; do "${cmd[@]}" >/dev/null; done
        times=()
        for _ in $(seq "$runs"); do
            start=$(date +%s%N)
            "${cmd[@]}" >/dev/null
            end=$(date +%s%N)
            times+=($(((end - start) / 1000)))
        done
        printf '%s\n' "${times[@]}" | sort -n | awk -v name="${entry%%|*}" '
            { t[NR] = $1; sum += $1; sq += $1 * $1 }
            END {
                mean = sum / NR; sd = sqrt(sq / NR - mean * mean)
                median = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
                printf "%-18s median %.2f ms  mean %.2f ms ± %.2f ms  min %.2f ms  max %.2f ms\n",
                    name, median / 1000, mean / 1000, sd / 1000, t[1] / 1000, t[NR] / 1000
            }'
    done
fi

echo "== peak RSS (max resident set size over 10 runs each)"
if [ -x /usr/bin/time ]; then
    for entry in "${commands[@]}"; do
        read -r -a cmd <<<"${entry#*|}"
        values=()
        for _ in $(seq 10); do
            value=$(/usr/bin/time -v "${cmd[@]}" 2>&1 >/dev/null | awk -F': ' '/Maximum resident set size/ { print $2 }')
            values+=("$value")
        done
        printf '%s\n' "${values[@]}" | sort -n | awk -v name="${entry%%|*}" '
            { v[NR] = $1 } END { printf "%-18s min %d KiB  median %d KiB  max %d KiB\n", name, v[1], v[int((NR + 1) / 2)], v[NR] }'
    done
else
    echo "/usr/bin/time not found (apt-get install -y time); skipped"
fi
