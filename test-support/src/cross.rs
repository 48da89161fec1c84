//! The architectures the tests build and run C programs for, and the per-test-binary fixture directory
//! they share: the objects compiled once for every architecture and `bin/ld`, a link to the linker that a
//! compiler driver finds through `-B`.

use std::path::{Path, PathBuf};

use crate::{run_in, succeeded, text};

/// An architecture: its compiler driver, its binutils prefix and what runs its programs.
pub struct Arch {
    pub name: &'static str,
    pub gcc: &'static str,
    pub binutils: &'static str,
    pub runner: &'static [&'static str],
}

pub const X86_64: Arch = Arch {
    name: "x86_64",
    gcc: "gcc",
    binutils: "",
    runner: &[],
};

pub const AARCH64: Arch = Arch {
    name: "aarch64",
    gcc: "aarch64-linux-gnu-gcc",
    binutils: "aarch64-linux-gnu-",
    runner: &["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"],
};

/// Fills `out` (an empty directory, from `scratch!`) with `bin/ld` (a link to `linker`) and, for each
/// architecture, `ARCH/NAME.o` compiled with `-O2` and the flags given for each `sources/NAME.c`; returns
/// `out`.
pub fn compile_fixtures(out: PathBuf, linker: &str, sources: &Path, units: &[(&str, &[&str])]) -> PathBuf {
    let bin = out.join("bin");
    std::fs::create_dir_all(&bin).unwrap_or_else(|error| panic!("cannot create {}: {error}", bin.display()));
    std::os::unix::fs::symlink(linker, bin.join("ld"))
        .unwrap_or_else(|error| panic!("cannot link {}/ld: {error}", bin.display()));
    for arch in [X86_64, AARCH64] {
        let dir = out.join(arch.name);
        std::fs::create_dir_all(&dir).unwrap_or_else(|error| panic!("cannot create {}: {error}", dir.display()));
        for (source, flags) in units {
            let input = sources.join(format!("{source}.c")).display().to_string();
            let output = format!("{source}.o");
            let args = [&["-O2", "-c", &input, "-o", &output][..], flags].concat();
            succeeded(&run_in(arch.gcc, &dir, &args), arch.gcc);
        }
    }
    out
}

/// What `program` prints and its exit status, run on `arch` (under its runner, if it has one).
pub fn run_program(arch: &Arch, program: &Path) -> (String, Option<i32>) {
    let path = program.display().to_string();
    let dir = program.parent().unwrap_or(Path::new("."));
    let output = match arch.runner.split_first() {
        Some((runner, rest)) => run_in(runner, dir, &[rest, &[&path]].concat()),
        None => run_in(&path, dir, &[]),
    };
    (text(&output.stdout), output.status.code())
}

/// `ARCH-readelf ARGS program`'s output (the architecture's binutils prefix).
pub fn readelf(arch: &Arch, args: &[&str], program: &Path) -> String {
    let readelf = format!("{}readelf", arch.binutils);
    let output = run_in(
        &readelf,
        Path::new("."),
        &[args, &[&program.display().to_string()]].concat(),
    );
    succeeded(&output, &readelf);
    text(&output.stdout)
}
