#!/usr/bin/env bash
# Lowering against materialization, on the same module of N functions (default 1,000,000), in one run:
#   bash bench/lower.sh [N] [RUNS]
# times `cc materialize --cc-all`, `cc lower` of its output and `cc materialize --cc-all --lower` with
# hyperfine, and prints the ratios (the target: lowering within 2x of materialization alone).
set -euo pipefail
count=${1:-1000000}
runs=${2:-10}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
command -v hyperfine >/dev/null || {
    echo "bench/lower.sh needs hyperfine (Debian: hyperfine)" >&2
    exit 1
}
cargo build --release --locked --bin neverc-spec
neverc="${CARGO_TARGET_DIR:-$root/target}/release/neverc-spec"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 bench/gen_module.py "$count" > "$work/module.ll"
"$neverc" cc materialize "$work/module.ll" -o "$work/materialized.ll" --cc-all > /dev/null 2>&1
hyperfine --warmup 1 --runs "$runs" --export-json "$work/times.json" \
    -n materialize "$neverc cc materialize $work/module.ll -o $work/out-m.ll --cc-all" \
    -n lower "$neverc cc lower $work/materialized.ll -o $work/out-l.ll" \
    -n 'materialize --lower' "$neverc cc materialize $work/module.ll -o $work/out-ml.ll --cc-all --lower" \
    > /dev/null
python3 - "$work/times.json" "$count" <<'PY'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
base = results["materialize"]["median"]
print(f"{int(sys.argv[2]):,} functions, medians of {len(results['materialize']['times'])} runs:")
for name in ("materialize", "lower", "materialize --lower"):
    r = results[name]
    print(f"  {name:<22} {r['median']:.3f} s (min {r['min']:.3f}, max {r['max']:.3f})  {r['median'] / base:.2f}x materialize")
PY
ls -l "$work"/out-m.ll "$work"/out-l.ll | awk '{ print "  " $9 ": " $5 " bytes" }'
