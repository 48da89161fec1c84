//! The architecture seam: everything the linker does differently per instruction set, behind one interface
//! ([`Arch`], a `'static` table of templates and functions) picked once from the link target's declared ELF
//! machine ([`Arch::of`]). Phases ask the table; none of them names an architecture.
//!
//! What is declared data stays in the target files: which relocation numbers exist, what each computes
//! (`kind`, `relative_to`), which instruction field it writes and how it overflows. What is here is what
//! cannot be data: the code the linker writes itself (the PLT entry of an indirect function, a
//! range-extension thunk) as templates whose fields are found among the target's declared relocations by what
//! they do, and the instruction rewrites of relaxations (a GOT load that becomes an address, a TLS sequence
//! that becomes local-exec), which read and rewrite instruction bytes.
//!
//! A target without code here (a new target file, whose e_machine no module below claims) links with
//! [`GENERIC`]: every relocation by its declared kind, and an error naming what it cannot do (indirect
//! functions, TLS sequences of other models than local-exec); it never gets another architecture's rewrites.
//!
//! RISC-V added what it needs as entries of the table read by the phases that need them: relaxations that
//! change section sizes ([`Arch::relax`], run where thunks are made, with layout run again after each round
//! and `crate::shrink` moving everything that points into shortened code), the global pointer, `e_flags`
//! merging, and TLS models kept in executables. Its paired relocations (a `%pcrel_lo` whose value is its
//! `%pcrel_hi` partner's) need no table entry: the declared kind `paired_low` says so, and relocation finds
//! the partner for any architecture.

pub(crate) mod aarch64;
pub(crate) mod riscv64;
pub(crate) mod x86_64;

use std::ops::Range;

use neverc_tables::{RelocationBase, RelocationKind, TargetRecord};

use crate::graph::{Edge, InstructionField, LinkGraph, Machine};

/// The per-architecture part of a link.
pub(crate) struct Arch {
    /// The machine this table is for: the declared `[elf] machine` of its target file.
    pub(crate) machine: Machine,
    /// The PLT entry of an indirect function (`STT_GNU_IFUNC`); `None`: indirect functions are refused.
    pub(crate) iplt_entry: Option<&'static CodeTemplate>,
    /// The lazily bound PLT through which a dynamically linked output calls the functions it imports;
    /// `None`: importing functions is refused for this target.
    pub(crate) lazy_plt: Option<&'static LazyPlt>,
    /// The range-extension thunk branches that do not reach go through; `None`: branches reach the whole
    /// output, or an out-of-range branch is relocation's error.
    pub(crate) thunk: Option<&'static ThunkTemplate>,
    /// Whether the GOT load of `edge` (a relocation of kind `GotEntryRelaxable`) can become a direct
    /// reference, and how: read from the instruction and the target's definition. The link asks it only
    /// through `synth::got::relaxation`, which `--no-relax` turns off for synthesis and relocation alike.
    pub(crate) got_relaxation: fn(&LinkGraph, &Edge) -> Option<GotRelaxation>,
    /// Rewrites the instruction of a relaxable GOT load whose field is at `at`; returns where the direct
    /// PC-relative 32-bit field now is and what to add to `S + A - P` for it.
    pub(crate) relax_got_load: fn(&mut [u8], usize, GotRelaxation) -> Result<RelaxedField, String>,
    /// The bytes of the code sequence a TLS relocation of this kind at this offset begins, which relaxation
    /// rewrites whole (the relocations inside it, such as the call of `__tls_get_addr`, go with it).
    pub(crate) rewritten_sequence: fn(RelocationKind, u64) -> Option<Range<u64>>,
    /// Relaxes the TLS access a relocation of a TLS kind other than local-exec marks to local-exec.
    pub(crate) relax_tls: fn(&mut [u8], TlsAccess) -> Result<TlsRelaxed, String>,
    /// Relaxes a general-dynamic or descriptor access to an imported thread-local variable to initial-exec:
    /// the code reads the variable's offset from the thread pointer from a GOT slot the loader fills.
    pub(crate) relax_tls_to_ie: fn(&mut [u8], TlsToInitialExec) -> Result<TlsRelaxed, String>,
    /// Whether an executable keeps its general-dynamic and initial-exec TLS accesses as they are, rather than
    /// relaxing them to local-exec (`relax_tls`): they read GOT entries the link fills (`synth::tls`), as
    /// ld.bfd links RISC-V, whose psABI defines no TLS relaxation.
    pub(crate) keeps_tls_models: bool,
    /// The name of the global pointer the linker defines, from which code addresses small data (RISC-V
    /// `__global_pointer$`); `None`: the architecture has none.
    pub(crate) global_pointer: Option<&'static str>,
    /// Merges the `e_flags` of one more input into those of the inputs before it, or says why the two
    /// cannot be linked together (RISC-V: different floating-point ABIs); `None`: the output's are 0.
    pub(crate) elf_flags: Option<MergeFlags>,
    /// The edits of one round of linker relaxation over the current layout (`crate::shrink`): code that
    /// gets shorter once addresses are known; `None`: the architecture's code keeps its size.
    pub(crate) relax: Option<Relax>,
    /// What a relocation against an undefined weak symbol becomes; `None`: the symbol is 0.
    pub(crate) undefined_weak: fn(RelocationKind, RelocationBase, i128) -> Option<UndefinedWeak>,
    /// The core erratum the linker can work around in this architecture's code when asked to
    /// (`--fix-cortex-a53-843419`); `None`: the option names no erratum of this architecture.
    pub(crate) erratum: Option<&'static ErratumFix>,
}

/// A core erratum worked around as ld.bfd does it: an affected instruction sequence is found in laid-out
/// code, a veneer (the sequence's last instruction, then a branch back) is placed after the code, and once
/// the code is relocated the sequence is made safe either by rewriting its first instruction (when a form
/// that cannot trigger the erratum reaches as far) or by branching to the veneer in place of the moved
/// instruction.
pub(crate) struct ErratumFix {
    /// The names of veneer atoms are this followed by the address of the sequence (of the layout that made
    /// them).
    pub(crate) veneer_prefix: &'static str,
    /// The veneer's second instruction: a branch back to the instruction after the moved one.
    pub(crate) branch: &'static CodeTemplate,
    /// Whether a local symbol of this name marks the start of code (`Some(true)`) or of data
    /// (`Some(false)`) in its section, as the ELF ABI's mapping symbols do; `None`: it marks nothing. Only
    /// code is searched.
    pub(crate) mapping_symbol: fn(&str) -> Option<bool>,
    /// Where an affected sequence that starts with the word at `address` (the first of `code`, which runs
    /// to the end of its code) has the instruction a veneer takes: its offset in `code`.
    pub(crate) find: fn(address: u64, code: &[u8]) -> Option<usize>,
    /// Makes a sequence safe in relocated code (see [`ErratumSequence`]), or leaves it when it is no
    /// longer affected where it now lies.
    pub(crate) apply: fn(&mut [u8], ErratumSequence) -> Result<(), String>,
}

/// An affected sequence in relocated code: the index in the section's bytes and the address of its first
/// instruction and of the instruction its veneer holds, and the veneer's address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ErratumSequence {
    pub(crate) first_at: usize,
    pub(crate) first_place: u64,
    pub(crate) moved_at: usize,
    pub(crate) moved_place: u64,
    pub(crate) veneer: u64,
}

/// What a round of linker relaxation does: shorten instruction sequences (unless `--no-relax`), repeated
/// until nothing more shortens, then trim alignment padding once (always).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RelaxPass {
    Shorten,
    Align,
}

/// Merges one more input's `e_flags` into those before it.
pub(crate) type MergeFlags = fn(u32, u32) -> Result<u32, String>;

/// The edits of one relaxation round.
pub(crate) type Relax = fn(&crate::context::LinkContext, RelaxPass) -> Result<Vec<RelaxEdit>, String>;

/// An edit of one atom's code, at its current offsets.
pub(crate) type RelaxEdit = (crate::graph::AtomId, crate::shrink::AtomEdit);

/// Code the linker writes itself, and the fields in it that address what it reaches.
pub(crate) struct CodeTemplate {
    pub(crate) code: &'static [u8],
    pub(crate) fields: &'static [CodeField],
}

impl CodeTemplate {
    /// The size of one copy of the code.
    pub(crate) const fn size(&self) -> u64 {
        self.code.len() as u64
    }
}

/// A field of linker-made code: at `offset`, the target's address plus `bias` relative to `base`, written as
/// `field` says (the relocation the target declares for it is found by what it does:
/// `LinkGraph::declared_field`, among those of kind `kind`).
pub(crate) struct CodeField {
    pub(crate) offset: u64,
    pub(crate) kind: RelocationKind,
    pub(crate) base: RelocationBase,
    pub(crate) field: InstructionField,
    pub(crate) bias: i64,
}

/// The PLT of imported functions, bound lazily as the System V psABIs describe it: `.got.plt` starts with
/// [`LazyPlt::reserved_slots`] words (on x86-64 and AArch64 the address of `.dynamic`, then two the dynamic
/// loader fills with its own link map and resolver; on RISC-V only the loader's two); each function has a
/// slot after them, which initially sends its entry's jump to code that asks the resolver for the function
/// (and, once bound, holds the function's address).
pub(crate) struct LazyPlt {
    /// The first entry, which enters the loader's resolver: its fields reach the start of `.got.plt` (their
    /// biases hold the offsets of the reserved words they read).
    pub(crate) header: CodeTemplate,
    /// One function's entry: its fields reach the function's slot.
    pub(crate) entry: CodeTemplate,
    /// The fields of an entry that reach the first entry (an empty `code`: the entry's bytes are `entry`'s).
    pub(crate) entry_to_header: CodeTemplate,
    /// Where an entry holds the index of its `JUMP_SLOT` relocation in `.rela.plt` (32 bits), if it does.
    pub(crate) index_at: Option<u64>,
    /// What a function's slot holds until the function is bound.
    pub(crate) unbound: Unbound,
    /// The words at the start of `.got.plt` before the functions' slots.
    pub(crate) reserved_slots: u64,
    /// Whether the first of them holds the address of `.dynamic` (else the loader fills them all).
    pub(crate) dynamic_in_first_slot: bool,
}

/// Where an unbound slot of a lazily bound PLT sends its entry's jump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unbound {
    /// Back into the entry, at this offset (x86-64: the `push` after the jump).
    IntoEntry(u64),
    /// To the first entry (AArch64).
    Header,
}

/// A range-extension thunk.
pub(crate) struct ThunkTemplate {
    /// The thunk atom's name is this followed by the target's name.
    pub(crate) name_prefix: &'static str,
    pub(crate) alignment: u64,
    pub(crate) code: CodeTemplate,
}

/// Where the direct PC-relative 32-bit field of a relaxed GOT load is, and what to add to `S + A - P` for it.
pub(crate) type RelaxedField = (usize, i128);

/// How an architecture rewrites one relaxable GOT load (its meaning is the architecture's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GotRelaxation(pub(crate) u8);

/// A TLS access to relax: the relocation's kind, the index of its field in the section's bytes, and the
/// offset of `S + A` from the thread pointer with the relocation's addend `A`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TlsAccess {
    pub(crate) kind: RelocationKind,
    pub(crate) at: usize,
    pub(crate) tp_offset: i128,
    pub(crate) addend: i64,
}

/// A general-dynamic or descriptor access to an imported thread-local variable: the relocation's kind, the
/// index of its field in the section's bytes, the field's address and the address of the variable's GOT
/// slot, which holds its offset from the thread pointer at run time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TlsToInitialExec {
    pub(crate) kind: RelocationKind,
    pub(crate) at: usize,
    pub(crate) place: i128,
    pub(crate) slot: i128,
    pub(crate) addend: i64,
}

/// What is left to write after a TLS relaxation: a 32-bit signed field the relaxed code reads, the
/// relocation's own declared field (with `total` taken relative to its declared base), or nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TlsRelaxed {
    Done,
    Signed32 { at: usize, value: i128 },
    Declared { total: i128 },
}

/// What a relocation against an undefined weak symbol becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UndefinedWeak {
    /// The instruction becomes this one (a `nop`).
    Instruction(u32),
    /// `S + A` is this value.
    Value(i128),
}

/// Little-endian bytes of 32-bit instructions, for an architecture's templates.
pub(crate) const fn code<const N: usize, const B: usize>(instructions: [u32; N]) -> [u8; B] {
    let mut bytes = [0u8; B];
    let mut index = 0;
    while index < N {
        let word = instructions[index].to_le_bytes();
        bytes[index * 4] = word[0];
        bytes[index * 4 + 1] = word[1];
        bytes[index * 4 + 2] = word[2];
        bytes[index * 4 + 3] = word[3];
        index += 1;
    }
    bytes
}

/// The architecture's merge of the `e_flags` of the graph's relocatable objects; an error names the input
/// that does not go with the ones before it.
pub(crate) fn merged_elf_flags(graph: &crate::graph::LinkGraph) -> Result<u32, (String, String)> {
    let Some(merge) = graph.arch().elf_flags else {
        return Ok(0);
    };
    let mut merged = None;
    for input in &graph.inputs {
        if input.kind != crate::graph::InputKind::Object {
            continue;
        }
        let Some(flags) = crate::read::elf_flags(&input.data, input.object_range.clone()) else {
            continue;
        };
        merged = Some(match merged {
            None => flags,
            Some(merged) => merge(merged, flags).map_err(|message| (input.logical_name.clone(), message))?,
        });
    }
    Ok(merged.unwrap_or(0))
}

/// The table of an architecture without code of its own: every relocation by its declared kind.
pub(crate) static GENERIC: Arch = Arch {
    machine: Machine(0),
    iplt_entry: None,
    lazy_plt: None,
    thunk: None,
    got_relaxation: |_, _| None,
    relax_got_load: |_, _, _| Err("this target relaxes no GOT load".to_string()),
    rewritten_sequence: |_, _| None,
    relax_tls: |_, _| Err("relaxing this TLS model is not supported for this target yet".to_string()),
    relax_tls_to_ie: |_, _| {
        Err("reaching thread-local variables of shared libraries is not supported for this target yet".to_string())
    },
    keeps_tls_models: false,
    global_pointer: None,
    elf_flags: None,
    relax: None,
    undefined_weak: |_, _, _| None,
    erratum: None,
};

/// The architectures with code of their own.
static ARCHES: [&Arch; 3] = [&x86_64::ARCH, &aarch64::ARCH, &riscv64::ARCH];

impl Arch {
    /// The table of the architecture of `target` (its declared ELF machine), or [`GENERIC`].
    pub(crate) fn of(target: Option<&TargetRecord>) -> &'static Arch {
        let machine = target.and_then(|target| target.elf).map(|elf| Machine(elf.machine));
        ARCHES
            .iter()
            .copied()
            .find(|arch| Some(arch.machine) == machine)
            .unwrap_or(&GENERIC)
    }
}

/// The declared ELF machine of a bundled target (for the tables above, which bind code to the target files).
pub(crate) const fn declared_machine(target: &TargetRecord) -> Machine {
    match target.elf {
        Some(elf) => Machine(elf.machine),
        None => Machine(0),
    }
}
