# What the benchmark scripts share; sourced by bench/*.sh with `root`, `target` and `runs` not yet set.
#
#   bench_setup SCRIPT PACKAGES TOOL...   checks that every TOOL is on PATH (naming the Debian PACKAGES that
#                                         provide them), builds the release neverc-spec and the real-world
#                                         fixtures of tests/real_programs.rs (kept when unchanged), and sets
#                                         root, target, neverc and fixtures.
bench_setup() {
    local script=$1 packages=$2 tool
    shift 2
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    cd "$root"
    target="${CARGO_TARGET_DIR:-$root/target}"
    for tool in "$@"; do
        command -v "$tool" >/dev/null || {
            echo "$script needs $tool (Debian: $packages)" >&2
            exit 1
        }
    done
    cargo build --release --locked --bin neverc-spec
    neverc="$target/release/neverc-spec"
    # The fixtures the tests build (kept when unchanged), in the same place as theirs.
    fixtures="$target/tmp/realworld"
    bash tests/fixtures/realworld/build.sh "$fixtures"
}
