#!/usr/bin/env bash
# Runs every test of neverc-spec, installing what the tests need first.
# Usage: scripts/test.sh   (from anywhere; needs Rust and network access for crates)
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests need: clang-14 (C to LLVM IR; COFF and Mach-O objects; -flto bitcode), llvm-14
# (llc-14 oracle, llvm-as-14; llvm-lto2-14, the default LTO provider; llvm-nm-14 and llvm-ar-14 for bitcode), g++ and binutils (C++ COMDAT fixtures, ld.bfd reference links, readelf; with glibc's elf.h and
# GNU as, the oracles of the declared relocations), gcc-aarch64-linux-gnu (AArch64 objects; its as and ld are
# the AArch64 relocation oracles), musl-tools (static programs against musl, and musl-gcc through the `ld`
# driver), lld (ld.lld: the oracle for the driver's lld-style archive search and for LTO resolutions), chromium (headless rendering of
# the audit's HTML page), graphviz (renders `audit --format dot`), qemu-user (runs the AArch64 programs:
# qemu-aarch64), g++-aarch64-linux-gnu (AArch64 C++ and its libstdc++.a), musl-dev:arm64 (musl's AArch64
# libc.a and start files, from Debian's arm64 archive through multiarch; its aarch64-linux-musl-gcc specs drive
# gcc-aarch64-linux-gnu), redis-server (the LTO cache of scope REMOTE_SHARED: tests/lto.rs starts its own
# server on a loopback port and stops it), gdb (debugs the programs of tests/debug_info.rs by file and line),
# python3-dev, python3-setuptools and python3-pip (tests/shared_libraries.rs builds a CPython extension module
# from a PyPI package's C source with our linker; for a python3 without its headers), gcc-riscv64-linux-gnu and
# g++-riscv64-linux-gnu (RISC-V objects, glibc's and libstdc++'s archives; their as and ld are the RISC-V
# relocation oracles and reference linker; the programs run under qemu-riscv64).
PACKAGES=(clang-14 llvm-14 g++ binutils gcc-aarch64-linux-gnu musl-tools lld chromium graphviz qemu-user redis-server gdb
    g++-aarch64-linux-gnu musl-dev:arm64 python3-dev python3-setuptools python3-pip gcc-riscv64-linux-gnu
    g++-riscv64-linux-gnu)
if ((${#PACKAGES[@]})); then
    missing=()
    for package in "${PACKAGES[@]}"; do
        dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
    done
    if ((${#missing[@]})); then
        SUDO=$([ "$(id -u)" -eq 0 ] && echo "" || echo sudo)
        # Packages of another architecture (NAME:arm64) need it added to dpkg before the lists are updated.
        for package in "${missing[@]}"; do
            if [[ $package == *:* ]] && ! dpkg --print-foreign-architectures | grep -qx "${package##*:}"; then
                $SUDO dpkg --add-architecture "${package##*:}"
            fi
        done
        $SUDO apt-get update -q
        $SUDO apt-get install -y -q "${missing[@]}"
    fi
fi

rustup component add rustfmt clippy >/dev/null 2>&1 || true

# The tests write their fixtures and outputs under target/: a failed run tells how much disk was left, so that
# a full disk is not mistaken for a failing test.
echo "== disk where the tests write: $(df -h --output=avail,iavail . | tail -1 | xargs) (bytes, inodes) free"
trap 'status=$?; if ((status)); then echo "== failed with exit status $status; disk and memory:"; df -h .; df -i .; free -m; dmesg 2>/dev/null | tail -5 || true; fi' EXIT

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test"
# Snapshot tests must fail, not rewrite, on a mismatch.
INSTA_UPDATE=no cargo test --workspace --locked
echo "== conformance tests generated from the declarations, per source"
cargo test --locked -p neverc-conformance --test generated -- --nocapture --exact generated_tests_per_source 2>&1 |
    grep '^conformance:'
echo "== all tests passed"
