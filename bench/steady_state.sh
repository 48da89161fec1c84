#!/usr/bin/env bash
# Steady-state load+validate time (criterion, schema/benches/load.rs) and a summary table of its estimates.
#
# Usage (from anywhere): bash bench/steady_state.sh [extra criterion args, e.g. --measurement-time 10]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

echo "== machine"
echo "nproc: $(nproc)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

cargo bench -p neverc-schema --bench load -- "$@"

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== summary (point estimates over criterion's samples; per call)"
python3 - target/criterion <<'PY'
import json, pathlib, sys

def fmt(ns):
    return f"{ns / 1e6:.3f} ms" if ns >= 1e6 else f"{ns / 1e3:.1f} µs"

# Only the groups of schema/benches/load.rs (target/criterion is shared with other benches).
groups = ["parse_phase_schema", "parse_and_lower_phase_schema", "parse_target", "parse_and_lower_target"]
base = pathlib.Path(sys.argv[1])
for estimates in [e for g in groups for e in sorted((base / g).glob("*/new/estimates.json"))]:
    bench = estimates.parent.parent
    e = json.loads(estimates.read_text())
    mean = e["mean"]
    lo, hi = mean["confidence_interval"]["lower_bound"], mean["confidence_interval"]["upper_bound"]
    print(f"{bench.parent.name + '/' + bench.name:<46} median {fmt(e['median']['point_estimate'])}"
          f"  mean {fmt(mean['point_estimate'])} (95% CI {fmt(lo)} .. {fmt(hi)})"
          f"  std dev {fmt(e['std_dev']['point_estimate'])}  MAD {fmt(e['median_abs_dev']['point_estimate'])}")
PY
