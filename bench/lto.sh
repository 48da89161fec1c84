#!/usr/bin/env bash
# LTO link time of neverc-spec against ld.lld on identical bitcode: sqlite3 (the amalgamation of the
# libsqlite3-sys crate) and Lua 5.4 (lua-src) with their workload drivers, compiled by clang-14 -O2 with
# -flto (full) and with -flto=thin, linked statically against glibc through clang-14's driver: once with
# -fuse-ld=lld, once with --ld-path naming neverc-spec, the same LTO level (-O2) and thread count (every core).
#
#   cold: no LTO cache (both linkers run LLVM 14's optimizer and code generator on everything);
#   warm: the same link again with a cache directory a first link filled (neverc-spec: -plugin-opt=cache-dir=,
#         LOCAL_SHARED; lld: --thinlto-cache-dir=, which caches ThinLTO backends only).
#
# Every program is run once first and must print what the ld.lld build prints. Targets (issue 12): cold within
# 1.1x of lld, warm at most 0.1x of cold.
#
# Usage (from anywhere): bash bench/lto.sh [RUNS]     (default RUNS=5; each cold link takes seconds)
# Needs hyperfine, clang-14, llvm-14, lld, python3. Results: target/bench/lto/ (hyperfine JSON, summary.md).
set -euo pipefail
runs="${1:-5}"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bench_setup bench/lto.sh "hyperfine clang-14 llvm-14 lld python3" hyperfine clang-14 ld.lld llvm-ar-14 python3
out="$target/bench/lto"
rm -rf "$out"
mkdir -p "$out/bin"
ln -s "$neverc" "$out/bin/ld"

here="$root/tests/fixtures/realworld"
manifest="$here/fetch/Cargo.toml"
metadata=$(cargo metadata --format-version 1 --locked --offline --manifest-path "$manifest")
crate_dir() {
    grep -o '"manifest_path":"[^"]*"' <<<"$metadata" | sed 's/^"manifest_path":"//; s/"$//' |
        grep -F "/$1-" | head -n1 | xargs dirname
}
SQLITE=$(crate_dir libsqlite3-sys)/sqlite3
LUA=$(crate_dir lua-src)/lua-5.4.8

echo "== machine"
echo "nproc: $(nproc)"
echo "versions: $(ld.lld --version); $(clang-14 --version | head -n1); neverc-spec $(git rev-parse --short HEAD)"

for mode in full thin; do
    flto=-flto
    [[ $mode == thin ]] && flto=-flto=thin
    dir="$out/$mode"
    mkdir -p "$dir/obj"
    echo "== compiling ($mode)"
    jobs=()
    jobs+=("clang-14 -O2 $flto -DSQLITE_ENABLE_FTS5 -DSQLITE_ENABLE_MATH_FUNCTIONS -I$SQLITE -c $SQLITE/sqlite3.c -o $dir/obj/sqlite3.o")
    for source in "$LUA"/l*.c; do
        base=$(basename "$source" .c)
        [[ $base == lua || $base == luac ]] && continue
        jobs+=("clang-14 -O2 $flto -DLUA_USE_LINUX -I$LUA -c $source -o $dir/obj/lua_$base.o")
    done
    jobs+=("clang-14 -O2 $flto -DSQLITE_ENABLE_FTS5 -I$SQLITE -I$here -Dmain=sqlite_main -c $here/sqlite_driver.c -o $dir/obj/sqlite_driver.o")
    jobs+=("clang-14 -O2 $flto -DLUA_USE_LINUX -I$LUA -I$here -Dmain=lua_main -c $here/lua_driver.c -o $dir/obj/lua_driver.o")
    printf '%s\n' "${jobs[@]}" | xargs -d '\n' -P "$(nproc)" -I{} sh -c '{}'
    llvm-ar-14 rcD "$dir/liblua.a" "$dir"/obj/lua_l*.o
    # A main that runs the two workloads, as the real-programs fixture's all_main.c does for four.
    cat >"$dir/main.c" <<'EOF'
#include <stdio.h>
int sqlite_main(void);
int lua_main(int argc, char **argv);
int main(int argc, char **argv) {
    (void)argc;
    char *lua_args[] = {argv[0], "workload.lua", 0};
    printf("== sqlite workload: status %d\n", sqlite_main());
    fflush(stdout);
    return lua_main(2, lua_args);
}
EOF
    clang-14 -O2 "$flto" -c "$dir/main.c" -o "$dir/obj/main.o"
    cp "$here/workload.lua" "$dir/workload.lua"
    inputs=("$dir/obj/main.o" "$dir/obj/sqlite_driver.o" "$dir/obj/lua_driver.o" "$dir/obj/sqlite3.o" "$dir/liblua.a" -lm -lpthread -ldl)
    base=(clang-14 -O2 "$flto" -static "${inputs[@]}")
    lld=("${base[@]}" -fuse-ld=lld)
    ours=("${base[@]}" "--ld-path=$out/bin/ld")
    # Correctness first: both programs do the workloads alike.
    # (The Lua workload ends with os.exit(3).)
    (cd "$dir" && "${lld[@]}" -o lld.elf 2>/dev/null && { ./lld.elf >lld.stdout || true; })
    (cd "$dir" && "${ours[@]}" -o neverc.elf 2>/dev/null && { ./neverc.elf >neverc.stdout || true; })
    cmp "$dir/lld.stdout" "$dir/neverc.stdout" || {
        echo "$mode: neverc-spec's program prints something else than lld's" >&2
        exit 1
    }
    # Warm caches, filled by one link each.
    (cd "$dir" && "${lld[@]}" "-Wl,--thinlto-cache-dir=$dir/lld-cache" -o lld-warm.elf 2>/dev/null)
    (cd "$dir" && "${ours[@]}" "-Wl,-plugin-opt=cache-dir=$dir/neverc-cache" -o neverc-warm.elf 2>/dev/null)
    echo "== $mode: cold and warm links, $runs runs each"
    (cd "$dir" && hyperfine -N --warmup 1 --runs "$runs" --export-json "$dir/hyperfine.json" \
        -n "ld.lld cold" "${lld[*]} -o lld.elf" \
        -n "neverc-spec cold" "${ours[*]} -o neverc.elf" \
        -n "ld.lld warm" "${lld[*]} -Wl,--thinlto-cache-dir=$dir/lld-cache -o lld-warm.elf" \
        -n "neverc-spec warm" "${ours[*]} -Wl,-plugin-opt=cache-dir=$dir/neverc-cache -o neverc-warm.elf" \
        2>&1 | tee "$dir/hyperfine.txt")
done

python3 - "$out" >"$out/summary.md" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
print("| LTO | ld.lld cold | neverc-spec cold | cold ÷ lld | ld.lld warm | neverc-spec warm | warm ÷ our cold |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for mode in ("full", "thin"):
    results = {r["command"]: r for r in json.load(open(out / mode / "hyperfine.json"))["results"]}
    m = {name: results[name]["median"] * 1000 for name in results}
    print(f"| {mode} | {m['ld.lld cold']:.0f} ms | {m['neverc-spec cold']:.0f} ms | "
          f"{m['neverc-spec cold'] / m['ld.lld cold']:.2f}× | {m['ld.lld warm']:.0f} ms | "
          f"{m['neverc-spec warm']:.0f} ms | {m['neverc-spec warm'] / m['neverc-spec cold']:.3f}× |")
PY
cat "$out/summary.md"
