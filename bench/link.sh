#!/usr/bin/env bash
# Link time and peak RSS of ld.bfd, ld.lld, mold, wild and neverc-spec (release build) on identical inputs and flags:
# the real-world program that runs the sqlite3, Lua 5.4, zstd and zlib workloads (tests/fixtures/realworld, the same
# objects and archives tests/real_programs.rs checks), statically linked
#   (a) against musl, (b) against glibc, (c) -ffunction-sections objects with --gc-sections, against glibc and musl,
#   (g) built with -g -O2 (debugging information: every .debug_* section relocated, .debug_str merged), glibc;
# and dynamically linked, as gcc links by default (a PIE importing from the shared C library):
#   (d) against glibc's libc.so.6, (e) against musl's libc.so;
# and (s) sqlite3 as a shared library (`gcc -shared` of its -fPIC amalgamation, tests/fixtures/realworld's
# shared-sqlite case), each linker's library run by the ld.bfd-linked program in place of ld.bfd's;
# and (h) the same program for RISC-V (riscv64-linux-gnu-gcc -O2 -static against glibc, run under qemu-riscv64),
# linked with relaxation by riscv64-linux-gnu-ld.bfd, mold and neverc-spec. Not ld.lld: Debian's lld 14
# refuses R_RISCV_ALIGN ("requires unimplemented linker relaxation"), which glibc's libc.a is full of. Not wild:
# wild 0.10 stops with "Failed to apply relocation of type R_RISCV_CALL_PLT ... outside of bounds" on this link.
# The linkers are run directly, not through the compiler driver: each case's command line is what `gcc -static`
# (`musl-gcc -static`) passes to ld, recorded once by an `ld` wrapper found through `-B`, then replayed with every
# linker with only the output path changed. Two kinds of option are dropped for every linker alike: gcc's
# `-plugin`/`-plugin-opt=` (no object uses LTO; lld and mold would reject or try the plugin's options) and
# `-dynamic-linker` in the static cases (Debian's musl-gcc passes it with -static; ld.bfd ignores it for a static
# output, lld and mold would write an interpreter the program does not have); the dynamic cases keep it. Every linker's output is run once first and must do
# what the ld.bfd build does, so no linker is timed on a link it gets wrong.
#
# Usage (from anywhere): bash bench/link.sh [RUNS]     (default RUNS=20)
# With BENCH_CASES="LABEL ..." (for example "s-sqlite-shared"), only those cases are measured.
# With NEVERC_BASELINE=PATH, the neverc-spec binary at PATH (an earlier build) is timed too, as
# `neverc-spec-before`, in the same run: a change is measured against the code before it under the same
# conditions.
# Needs hyperfine, mold, lld, GNU time (/usr/bin/time), python3, wild (installed here by
# `cargo install wild-linker --version 0.10.0` when missing: the newest this toolchain builds), and what the
# fixtures need (cargo, gcc, musl-tools, binutils). Results: target/bench/link/ (hyperfine JSON per case, summary.md, trace-phases.txt).
set -euo pipefail
runs="${1:-20}"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
command -v wild >/dev/null || cargo install --locked wild-linker --version 0.10.0
bench_setup bench/link.sh "hyperfine mold lld binutils python3 time; wild: cargo install wild-linker" hyperfine mold \
    ld.lld ld.bfd python3 /usr/bin/time wild
out="$target/bench/link"
rm -rf "$out"
mkdir -p "$out/record"

# An `ld` that records its command line (NUL-separated) and lets ld.bfd (the target's: LD_BFD) do the link.
cat >"$out/record/ld" <<'EOF'
#!/bin/sh
printf '%s\0' "$@" >"$LD_RECORD"
exec "${LD_BFD:-ld.bfd}" "$@"
EOF
chmod +x "$out/record/ld"

# LABEL:CASE, or LABEL:CASE:dynamic for the driver's default (dynamic) link of the case's objects,
# LABEL:CASE:shared for a shared-library case's library, or LABEL:rust-demo:rust for the Rust program prepared
# below.
cases=(a-musl:all-musl-plain b-glibc:all-glibc-plain c-glibc-gc:all-glibc-sections-gc c-musl-gc:all-musl-sections-gc
    g-glibc-debug:all-glibc-debug d-glibc-pie:all-glibc-plain:dynamic e-musl-pie:all-musl-plain:dynamic
    r-rust-pie:rust-demo:rust s-sqlite-shared:shared-sqlite:shared h-riscv64:all-riscv64-plain:riscv)
if [[ -n ${BENCH_CASES:-} ]]; then
    chosen=()
    for entry in "${cases[@]}"; do
        [[ " $BENCH_CASES " == *" ${entry%%:*} "* ]] && chosen+=("$entry")
    done
    cases=("${chosen[@]}")
fi

# The Rust case: tests/fixtures/rust/demo (regex and serde_json from crates.io) built by `cargo build --release`,
# rustc linking through gcc with a recording `ld` (with `-C linker-features=-lld`; otherwise rustc links with its
# bundled rust-lld): a dynamic PIE against glibc, as rustc links by default. rustc deletes the objects of the
# link (its temporary directory with `symbols.o`, the codegen units' `.rcgu.o`) afterwards, so the recording
# `ld` keeps a copy of the `deps` directory they are in, which the replayed command line names. The case
# directory holds what the ld.bfd build prints.
rust_case="$out/rust-demo"
mkdir -p "$rust_case/kept" "$out/record-rust"
printf '%s\n' '#!/bin/sh' 'cp -R "$RUST_DEPS"/. "$RUST_KEPT"/' \
    "printf '%s\\0' \"\$@\" >\"\$LD_RECORD\"" 'exec ld.bfd "$@"' >"$out/record-rust/ld"
chmod +x "$out/record-rust/ld"
(cd tests/fixtures/rust/demo && RUST_DEPS="$rust_case/target/release/deps" RUST_KEPT="$rust_case/kept" \
    LD_RECORD="$rust_case/recorded.args" CARGO_TARGET_DIR="$rust_case/target" \
    RUSTFLAGS="-C linker-features=-lld -C link-arg=-B$out/record-rust" cargo build --release --locked --quiet)
: >"$rust_case/run.args"
status=0
"$rust_case/target/release/neverc-rust-demo" >"$rust_case/expected.stdout" || status=$?
echo "$status" >"$rust_case/expected.status"
linkers=(ld.bfd ld.lld mold wild neverc-spec)
if [[ -n ${NEVERC_BASELINE:-} ]]; then
    linkers+=(neverc-spec-before)
fi

# linker_command LINKER [MODE]: the command that runs LINKER as ld (for a RISC-V case, ld.bfd is the cross one).
linker_command() {
    case $1 in
        ld.bfd) [[ ${2:-} == riscv ]] && echo "riscv64-linux-gnu-ld.bfd" || echo "ld.bfd" ;;
        ld.lld) echo "ld.lld" ;;
        mold) echo "mold" ;;
        wild) echo "wild" ;;
        neverc-spec) echo "$neverc ld" ;;
        neverc-spec-before) echo "$NEVERC_BASELINE ld" ;;
    esac
}

echo "== machine"
echo "nproc: $(nproc)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "versions: $(ld.bfd --version | head -n1); $(ld.lld --version); $(mold --version); $(wild --version 2>/dev/null | head -n1); $("$neverc" --version 2>/dev/null || echo neverc-spec)"
echo "git: $(git rev-parse --short HEAD)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

for entry in "${cases[@]}"; do
    IFS=: read -r label name mode <<<"$entry"
    case_dir="$fixtures/$name"
    work="$out/$label"
    mkdir -p "$work"
    # The linkers of this case (RISC-V: not ld.lld nor wild, see above), and what runs its program (qemu for RISC-V).
    case_linkers=("${linkers[@]}")
    runner=()
    if [[ $mode == riscv ]]; then
        case_linkers=()
        for linker in "${linkers[@]}"; do
            [[ $linker != ld.lld && $linker != wild ]] && case_linkers+=("$linker")
        done
        read -r -a runner <"$case_dir/runner"
    fi
    printf '%s\n' "${case_linkers[@]}" >"$work/linkers"
    # Record the driver's ld command line (without -static for a dynamic case); the Rust case's is recorded
    # already, its temporary directory renamed to the kept copy.
    if [[ $mode == rust ]]; then
        case_dir="$rust_case"
        python3 -c 'import sys; b = open(sys.argv[1], "rb").read(); open(sys.argv[2], "wb").write(b.replace(sys.argv[3].encode(), sys.argv[4].encode()))' \
            "$rust_case/recorded.args" "$work/recorded.args" "$rust_case/target/release/deps" "$rust_case/kept"
    else
        if [[ $mode == dynamic ]]; then
            mapfile -t driver_args < <(grep -vx -- -static "$case_dir/link.args")
        elif [[ $mode == shared ]]; then
            mapfile -t driver_args <"$case_dir/lib.args"
        else
            mapfile -t driver_args <"$case_dir/link.args"
        fi
        (cd "$case_dir" && LD_RECORD="$work/recorded.args" LD_BFD="$(linker_command ld.bfd "$mode")" "$(cat driver)" \
            -B "$out/record" "${driver_args[@]}" -o "$work/recorded.elf" 2>/dev/null)
    fi
    # The replayed arguments, one a line: without the plugin, -dynamic-linker, and -o with its operand.
    python3 - "$work/recorded.args" "$mode" >"$work/ld.args" <<'PY'
import sys
args = open(sys.argv[1], "rb").read().decode().split("\0")[:-1]
dynamic = sys.argv[2] in ("dynamic", "rust", "shared")
dropped = ("-plugin", "-o") if dynamic else ("-plugin", "-dynamic-linker", "-o")
kept, skip = [], False
for arg in args:
    if skip:
        skip = False
        continue
    if arg in dropped:
        skip = True
        continue
    if arg.startswith("-plugin-opt=") or (not dynamic and arg.startswith("--dynamic-linker=")):
        continue
    kept.append(arg)
for arg in kept:
    assert "\n" not in arg and " " not in arg, arg
    print(arg)
PY
    mapfile -t ld_args <"$work/ld.args"
    printf '%s\n' "${ld_args[@]}" >"$work/ld.args"
    echo "== $label ($name): $(wc -l <"$work/ld.args") arguments: ${ld_args[*]}" | cut -c1-400

    # Every linker's output must run the workloads as the ld.bfd build through the driver does.
    mapfile -t run_args <"$case_dir/run.args"
    commands=()
    for linker in "${case_linkers[@]}"; do
        output="$work/$linker.elf"
        read -r -a command <<<"$(linker_command "$linker" "$mode")"
        "${command[@]}" "${ld_args[@]}" -o "$output" 2>"$work/$linker.stderr" || {
            echo "$linker failed on $label:" >&2
            cat "$work/$linker.stderr" >&2
            exit 1
        }
        status=0
        if [[ $mode == shared ]]; then
            # The ld.bfd-linked program finds the library beside it (its RUNPATH is $ORIGIN).
            mkdir -p "$work/run-$linker"
            cp "$case_dir/ref/program" "$work/run-$linker/program"
            cp "$output" "$work/run-$linker/$(cat "$case_dir/soname")"
            (cd "$case_dir" && "$work/run-$linker/program" "${run_args[@]}" >"$work/$linker.stdout" 2>/dev/null) ||
                status=$?
        else
            (cd "$case_dir" && "${runner[@]}" "$output" "${run_args[@]}" >"$work/$linker.stdout" 2>/dev/null) ||
                status=$?
        fi
        if [[ $status != "$(cat "$case_dir/expected.status")" ]] || ! cmp -s "$work/$linker.stdout" "$case_dir/expected.stdout"; then
            echo "$linker's output on $label does not run as the ld.bfd build does (exit $status)" >&2
            exit 1
        fi
        # The command line hyperfine runs (no shell: -N), quoted for it.
        commands+=(--command-name "$linker" "$(printf '%q ' "${command[@]}" "${ld_args[@]}" -o "$output")")
    done
    echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    hyperfine -N --warmup 3 --runs "$runs" --export-json "$work/hyperfine.json" "${commands[@]}" >"$work/hyperfine.txt"
    echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$work/load.txt"
    # Peak RSS: the median of 5 runs of each linker under GNU time. mold and wild fork and their parent returns
    # when the output is written, so GNU time would measure the parent only: --no-fork here (not for the timings).
    for linker in "${case_linkers[@]}"; do
        read -r -a command <<<"$(linker_command "$linker" "$mode")"
        [[ $linker == mold || $linker == wild ]] && command+=(--no-fork)
        for _ in 1 2 3 4 5; do
            /usr/bin/time -f '%M' -o "$work/rss.tmp" "${command[@]}" "${ld_args[@]}" -o "$work/$linker.elf" 2>/dev/null
            cat "$work/rss.tmp"
        done | sort -n | sed -n 3p >"$work/$linker.rss"
    done
    ls -l "$work"/*.elf | awk '{print $5, $NF}' >"$work/sizes.txt"
done

# Where neverc-spec's time goes on the biggest link: --trace-phases, 11 runs, the median of each phase.
biggest="$out/b-glibc"
if [[ -f $biggest/ld.args ]]; then
    mapfile -t ld_args <"$biggest/ld.args"
    for run in $(seq 1 11); do
        "$neverc" ld --trace-phases "${ld_args[@]}" -o "$biggest/traced.elf" >"$out/trace-phases-$run.txt" 2>&1
    done
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out" "${cases[@]}" <<'PY' | tee "$out/summary.md"
import json, pathlib, sys

out = pathlib.Path(sys.argv[1])
linkers = ["ld.bfd", "ld.lld", "mold", "wild", "neverc-spec"]
before = (out / sys.argv[2].split(":")[0] / "neverc-spec-before.rss").exists()
if before:
    linkers.append("neverc-spec-before")
print("| case | output | " + " | ".join(f"{l} median (RSS)" for l in linkers)
      + " | neverc-spec vs ld.bfd | vs ld.lld | vs mold | vs wild |" + (" vs before |" if before else ""))
print("| --- | --- | " + " | ".join("---" for _ in linkers) + " | --- | --- | --- | --- |" + (" --- |" if before else ""))
for entry in sys.argv[2:]:
    label, name = entry.split(":")[:2]
    work = out / label
    results = {r["command"]: r for r in json.loads((work / "hyperfine.json").read_text())["results"]}
    # A case may leave a linker out (RISC-V: ld.lld): its cells are dashes.
    median = {l: results[l]["median"] * 1000 for l in linkers if l in results}
    rss = {l: int((work / f"{l}.rss").read_text()) / 1024 for l in linkers if l in results}
    size = (work / "neverc-spec.elf").stat().st_size / 1e6
    cells = [f"{median[l]:.1f} ms ({rss[l]:.0f} MiB)" if l in median else "—" for l in linkers]
    ours = median["neverc-spec"]
    ratios = [f"{ours / median[l]:.2f}×" if l in median else "—" for l in ["ld.bfd", "ld.lld", "mold", "wild"]]
    if before:
        ratios.append(f"{ours / median['neverc-spec-before']:.3f}×")
    print(f"| {label} `{name}` | {size:.2f} MB | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")

# CPU time (user + system, mean per link): less sensitive than wall time to other work on the machine, and it
# counts every thread of lld. Not mold's or wild's: their work is done in a forked child that hyperfine does not
# reap.
cpu_linkers = ["ld.bfd", "ld.lld", "neverc-spec"]
print()
print("| case | " + " | ".join(f"{l} CPU" for l in cpu_linkers) + " | neverc-spec vs ld.bfd | vs ld.lld |")
print("| --- | " + " | ".join("---" for _ in cpu_linkers) + " | --- | --- |")
for entry in sys.argv[2:]:
    label, name = entry.split(":")[:2]
    results = {r["command"]: r for r in json.loads((out / label / "hyperfine.json").read_text())["results"]}
    cpu = {l: (results[l]["user"] + results[l]["system"]) * 1000 for l in cpu_linkers if l in results}
    ratios = [f"{cpu['neverc-spec'] / cpu[l]:.2f}×" if l in cpu else "—" for l in ["ld.bfd", "ld.lld"]]
    print(f"| {label} | " + " | ".join(f"{cpu[l]:.1f} ms" if l in cpu else "—" for l in cpu_linkers) + " | "
          + " | ".join(ratios) + " |")

# The phases of the biggest link: the median of each over the traced runs.
phases = {}
for trace in sorted(out.glob("trace-phases-*.txt")):
    for line in trace.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[-1] == "ms" and fields[0].startswith("neverc.link."):
            phases.setdefault(fields[0], []).append(float(fields[-2]))
def median(values):
    values = sorted(values)
    return values[len(values) // 2]
total = median(phases.pop("neverc.link.full", [0.0])) + sum(
    median(phases[p]) for p in phases if p in ("neverc.link.image_verify", "neverc.link.side_outputs_verify",
                                              "neverc.link.commit", "neverc.link.post_emit", "neverc.link.after_commit"))
# (Only when b-glibc was measured: BENCH_CASES may leave it out.)
if phases:
    print()
    print(f"phases of b-glibc, median of {len(list(out.glob('trace-phases-*.txt')))} runs with --trace-phases:")
    print()
    print("| phase | median | share |")
    print("| --- | --- | --- |")
    for phase, values in sorted(phases.items(), key=lambda item: -median(item[1])):
        if median(values) >= 0.05:
            print(f"| `{phase.removeprefix('neverc.link.')}` | {median(values):.2f} ms | {100 * median(values) / total:.0f} % |")
    print(f"| all phases | {total:.2f} ms | |")
PY
echo "(hyperfine output: $out/*/hyperfine.txt; phases: $out/trace-phases-*.txt)"
