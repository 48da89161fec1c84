#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The link runtime's import rules, read off its source (ARCHITECTURE.md states them):
//!
//! - a phase (`src/phases/*.rs`, one per declared phase) never imports another phase: what phases share lives
//!   in the modules beside them (`graph`, `address`, `place`, `sections`, `synth`, `arch`, `image`, `read`);
//! - nothing outside `src/arch/` names an architecture: no per-architecture module, no machine constant,
//!   no ELF machine number; phases ask the architecture's table (`graph.arch()`);
//! - the machine has one type, `graph::Machine`.

use std::path::{Path, PathBuf};

/// Every `.rs` file below `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(sources(&path));
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
    found.sort();
    found
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The code of a file without its comments (line comments and doc comments), so that prose may name anything.
fn code(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The phase modules: the files of `src/phases/` other than `mod.rs`.
fn phases() -> Vec<String> {
    sources(&src().join("phases"))
        .iter()
        .filter_map(|path| path.file_stem()?.to_str().map(str::to_string))
        .filter(|name| name != "mod")
        .collect()
}

#[test]
fn no_phase_imports_another_phase() {
    let phases = phases();
    assert!(phases.len() >= 15, "{phases:?}");
    let mut found = Vec::new();
    for path in sources(&src()) {
        let code = code(&path);
        let own = path.file_stem().unwrap().to_str().unwrap().to_string();
        for phase in &phases {
            // A phase may be named by the phase table (`phases/mod.rs`) and by itself only.
            let in_phase_table = path.ends_with("phases/mod.rs");
            if in_phase_table || *phase == own && path.parent().unwrap().ends_with("phases") {
                continue;
            }
            for spelling in [format!("phases::{phase}"), format!("super::{phase}")] {
                if code.contains(&spelling) {
                    found.push(format!("{} names the phase module `{phase}`", path.display()));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn no_architecture_is_named_outside_arch() {
    let forbidden = [
        "arch::x86_64",
        "arch::aarch64",
        "arch::riscv64",
        "Machine::X86_64",
        "Machine::AARCH64",
        "Machine(62)",
        "Machine(183)",
        "Machine(243)",
        "EM_X86_64",
        "EM_AARCH64",
        "EM_RISCV",
        "Architecture::X86_64 =>",
    ];
    let arch = src().join("arch");
    let mut found = Vec::new();
    for path in sources(&src()) {
        if path.starts_with(&arch) {
            continue;
        }
        let code = code(&path);
        for word in forbidden {
            // The reader names the `object` crate's architectures once, to find their declared targets.
            if word.starts_with("Architecture::") && path.ends_with("read/object_file.rs") {
                continue;
            }
            if code.contains(word) {
                found.push(format!("{} names an architecture: `{word}`", path.display()));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_machine_has_one_type() {
    let mut found = Vec::new();
    for path in sources(&src()) {
        let code = code(&path);
        for word in ["enum Isa", "enum Machine", "struct Isa", "fn isa("] {
            if code.contains(word) {
                found.push(format!("{}: `{word}`", path.display()));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
    assert!(code(&src().join("graph.rs")).contains("pub struct Machine(pub u16);"));
}
