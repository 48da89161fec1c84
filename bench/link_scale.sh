#!/usr/bin/env bash
# How link time grows with the link (criterion, runtime/link/benches/scale.rs), saved as a criterion baseline, and a
# summary: for each case, the median and the fastest sample (time per link) at n and 4n, and their ratio.
#
# Usage (from anywhere): bash bench/link_scale.sh BASELINE [extra criterion args]
#   BASELINE   a name for the run (`before`, `after`); the summary reads what this run saved under it.
# To measure the code before a change, check out the old runtime/link/src first (the benchmark itself is new):
#   git checkout COMMIT -- runtime/link/src && bash bench/link_scale.sh before; git checkout HEAD -- runtime/link/src
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
baseline="${1:?usage: bash bench/link_scale.sh BASELINE [criterion args]}"
shift

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
