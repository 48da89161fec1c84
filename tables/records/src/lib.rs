//! Record types of the tables neverc-spec trusts, and their `const fn` lookups: the one definition of every
//! record. The schema crate lowers validated declarations into these types (in an arena: `...In<'a>`), the
//! code generator writes them out as `const` tables, and the runtime sees them as `'static` (the aliases
//! without `In`).
//!
//! Every table the runtime trusts has one of these types. The bundled tables are generated at build time
//! from `PhaseSchema.json` and `targets/*.toml` (`neverc-tables`' `build.rs`); tables loaded at run time from
//! other files are built by `neverc-loader` from the same lowering, so both kinds behave identically.

/// A 128-bit identifier.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Id128 {
    pub high: u64,
    pub low: u64,
}

#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PhaseKind {
    Transition,
    Event,
}

#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Gate {
    Transition,
    SealedVerifier,
    SealedCommit,
}

#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stability {
    Experimental,
    Stable,
}

/// One phase of the phase schema.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseRecordIn<'a> {
    pub name: &'a str,
    pub symbol: &'a str,
    pub id: Id128,
    pub domain: &'a str,
    pub kind: PhaseKind,
    pub verifier: &'a str,
    pub input_artifact: Id128,
    pub output_artifact: Id128,
    /// Policy bits (see the generated `POLICY_*` constants).
    pub policy: u32,
    /// Observer point bits (see the generated `POINT_*` constants).
    pub observer_points: u32,
    pub gate: Gate,
    pub stability: Stability,
    pub builtin_fallback: bool,
}

impl<'a> PhaseRecordIn<'a> {
    /// Whether every bit of `policy_bits` is in the phase's policy.
    pub const fn allows(&self, policy_bits: u32) -> bool {
        self.policy & policy_bits == policy_bits
    }

    pub const fn offers_point(&self, point_bits: u32) -> bool {
        self.observer_points & point_bits == point_bits
    }
}

#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtensionFamilyRecordIn<'a> {
    pub namespace: &'a str,
    pub id_high: u64,
    pub id_low_min: u64,
    pub id_low_max: u64,
}

/// One step of a state machine.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransitionRecord {
    /// Index of the driving phase in [`PhaseTables::phases`].
    pub phase: usize,
    pub from: u32,
    pub to: u32,
    pub rerun_budget: u32,
}

#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MutationClassRecordIn<'a> {
    pub name: &'a str,
    /// The graph state drops to `min(current, earliest_invalidated - 1)` when such a mutation commits.
    pub earliest_invalidated: u32,
    pub operations: &'a [&'a str],
}

#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateMachineRecordIn<'a> {
    pub name: &'a str,
    pub domain: &'a str,
    pub states: &'a [&'a str],
    /// Sorted by `from`; transition `i` leaves state `i`.
    pub transitions: &'a [TransitionRecord],
    pub mutation_classes: &'a [MutationClassRecordIn<'a>],
    pub proof_state: u32,
    /// Indices of the phases that run after the final state, in order.
    pub finalization: &'a [usize],
}

impl<'a> StateMachineRecordIn<'a> {
    pub const fn state_by_name(&self, name: &str) -> Option<u32> {
        let mut index = 0;
        while index < self.states.len() {
            if str_eq(self.states[index], name) {
                return Some(index as u32);
            }
            index += 1;
        }
        None
    }

    /// The transition that leaves `state`.
    pub const fn transition_from(&self, state: u32) -> Option<&TransitionRecord> {
        let mut index = 0;
        while index < self.transitions.len() {
            if self.transitions[index].from == state {
                return Some(&self.transitions[index]);
            }
            index += 1;
        }
        None
    }

    /// The mutation class a staging operation belongs to.
    pub const fn class_of_operation(&self, operation: &str) -> Option<&MutationClassRecordIn<'a>> {
        let mut class = 0;
        while class < self.mutation_classes.len() {
            let operations = self.mutation_classes[class].operations;
            let mut index = 0;
            while index < operations.len() {
                if str_eq(operations[index], operation) {
                    return Some(&self.mutation_classes[class]);
                }
                index += 1;
            }
            class += 1;
        }
        None
    }

    pub const fn final_state(&self) -> u32 {
        self.states.len().saturating_sub(1) as u32
    }
}

/// Everything generated from one phase schema.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseTablesIn<'a> {
    pub schema_version: u32,
    pub extension_families: &'a [ExtensionFamilyRecordIn<'a>],
    pub phases: &'a [PhaseRecordIn<'a>],
    pub state_machines: &'a [StateMachineRecordIn<'a>],
}

impl<'a> PhaseTablesIn<'a> {
    pub const fn phase_by_id(&self, high: u64, low: u64) -> Option<&PhaseRecordIn<'a>> {
        let mut index = 0;
        while index < self.phases.len() {
            let id = self.phases[index].id;
            if id.high == high && id.low == low {
                return Some(&self.phases[index]);
            }
            index += 1;
        }
        None
    }

    pub const fn phase_index_by_name(&self, name: &str) -> Option<usize> {
        let mut index = 0;
        while index < self.phases.len() {
            if str_eq(self.phases[index].name, name) {
                return Some(index);
            }
            index += 1;
        }
        None
    }

    pub const fn phase_by_name(&self, name: &str) -> Option<&PhaseRecordIn<'a>> {
        match self.phase_index_by_name(name) {
            Some(index) => Some(&self.phases[index]),
            None => None,
        }
    }

    pub const fn state_machine(&self, name: &str) -> Option<&StateMachineRecordIn<'a>> {
        let mut index = 0;
        while index < self.state_machines.len() {
            if str_eq(self.state_machines[index].name, name) {
                return Some(&self.state_machines[index]);
            }
            index += 1;
        }
        None
    }
}

#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegisterClassKind {
    General,
    Float,
    Vector,
}

#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterClassRecordIn<'a> {
    pub name: &'a str,
    pub kind: RegisterClassKind,
    pub width: u32,
    pub widths: &'a [u32],
}

#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubRegisterRecordIn<'a> {
    pub name: &'a str,
    pub width: u32,
    pub plan_number: u32,
}

#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterRecordIn<'a> {
    pub name: &'a str,
    /// Index into [`TargetRecord::classes`].
    pub class: usize,
    pub width: u32,
    pub plan_number: u32,
    pub dwarf: u32,
    /// Flag bits (see the generated `REGISTER_FLAG_*` constants).
    pub flags: u32,
    pub aliases: &'a [&'a str],
    pub subregisters: &'a [SubRegisterRecordIn<'a>],
}

#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NameKind {
    Canonical,
    Alias,
    SubRegister,
}

/// One accepted spelling of a register, lowercase.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterNameIn<'a> {
    pub name: &'a str,
    pub register: usize,
    pub width: u32,
    pub plan_number: u32,
    pub kind: NameKind,
}

#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterNumber {
    pub number: u32,
    pub register: usize,
    pub width: u32,
}

/// A register seen at a width.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterView {
    pub register: usize,
    pub width: u32,
}

/// What a register name or number resolves to.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResolvedRegister {
    /// Index into [`TargetRecord::registers`].
    pub register: usize,
    pub width: u32,
    pub plan_number: u32,
    pub kind: NameKind,
}

#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbiRecordIn<'a> {
    pub name: &'a str,
    pub integer_arguments: &'a [usize],
    pub float_arguments: &'a [usize],
    pub integer_returns: &'a [usize],
    pub float_returns: &'a [usize],
    pub sret_register: usize,
    pub sret_takes_argument_register: bool,
    pub stack_slot_size: u32,
    pub stack_max_alignment: u32,
    pub int128_even_pair: bool,
    pub split_between_registers_and_stack: bool,
    pub reuse_skipped_registers: bool,
    pub vector_register_bytes: u32,
    pub short_vectors_widen_to_register: bool,
    pub homogeneous_aggregate_max_members: u32,
    pub stack_aggregate_exhausts_float_registers: bool,
    pub float_falls_back_to_integer_registers: bool,
    pub stack_only_types: &'a [&'a str],
}

/// One target, generated from `targets/<name>.toml` or loaded with `--target-file`.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetRecordIn<'a> {
    pub name: &'a str,
    pub aliases: &'a [&'a str],
    pub triple: &'a str,
    pub target_id: Id128,
    pub convention_id: Id128,
    pub schema_digest: &'a str,
    pub pointer_width: u32,
    pub little_endian: bool,
    pub stack_alignment: u32,
    pub classes: &'a [RegisterClassRecordIn<'a>],
    pub registers: &'a [RegisterRecordIn<'a>],
    /// Sorted by name (lowercase) for binary search.
    pub names: &'a [RegisterNameIn<'a>],
    /// Sorted by number for binary search.
    pub numbers: &'a [RegisterNumber],
    pub reserved: &'a [usize],
    pub callee_saved: &'a [RegisterView],
    pub abi: AbiRecordIn<'a>,
    pub default_spec: &'a str,
    pub shuffle_layouts: &'a [&'a str],
}

impl<'a> TargetRecordIn<'a> {
    /// Case-insensitive lookup of a register name, alias or sub-register name.
    pub const fn resolve_register(&self, name: &str) -> Option<ResolvedRegister> {
        let mut low = 0;
        let mut high = self.names.len();
        while low < high {
            let middle = low + (high - low) / 2;
            let entry = &self.names[middle];
            match compare_ignoring_ascii_case(entry.name, name) {
                Ordering::Less => low = middle + 1,
                Ordering::Greater => high = middle,
                Ordering::Equal => {
                    return Some(ResolvedRegister {
                        register: entry.register,
                        width: entry.width,
                        plan_number: entry.plan_number,
                        kind: entry.kind,
                    });
                }
            }
        }
        None
    }

    /// The register (at its width) that a plan number names.
    pub const fn register_by_number(&self, number: u32) -> Option<ResolvedRegister> {
        let mut low = 0;
        let mut high = self.numbers.len();
        while low < high {
            let middle = low + (high - low) / 2;
            let entry = &self.numbers[middle];
            if entry.number < number {
                low = middle + 1;
            } else if entry.number > number {
                high = middle;
            } else {
                let register = &self.registers[entry.register];
                let kind = if entry.width == register.width {
                    NameKind::Canonical
                } else {
                    NameKind::SubRegister
                };
                return Some(ResolvedRegister {
                    register: entry.register,
                    width: entry.width,
                    plan_number: number,
                    kind,
                });
            }
        }
        None
    }

    pub const fn is_reserved(&self, register: usize) -> bool {
        let mut index = 0;
        while index < self.reserved.len() {
            if self.reserved[index] == register {
                return true;
            }
            index += 1;
        }
        false
    }

    pub const fn register(&self, index: usize) -> Option<&RegisterRecordIn<'a>> {
        if index < self.registers.len() {
            Some(&self.registers[index])
        } else {
            None
        }
    }

    pub const fn class_of(&self, register: usize) -> Option<&RegisterClassRecordIn<'a>> {
        match self.register(register) {
            Some(record) if record.class < self.classes.len() => Some(&self.classes[record.class]),
            _ => None,
        }
    }

    /// Whether `name` is the target's name or one of its aliases (case-insensitive).
    pub const fn answers_to(&self, name: &str) -> bool {
        if str_eq_ignoring_ascii_case(self.name, name) {
            return true;
        }
        let mut index = 0;
        while index < self.aliases.len() {
            if str_eq_ignoring_ascii_case(self.aliases[index], name) {
                return true;
            }
            index += 1;
        }
        false
    }
}

/// Finds a target by name or alias in a registry.
pub const fn find_target<'a>(targets: &[&'a TargetRecordIn<'a>], name: &str) -> Option<&'a TargetRecordIn<'a>> {
    let mut index = 0;
    while index < targets.len() {
        if targets[index].answers_to(name) {
            return Some(targets[index]);
        }
        index += 1;
    }
    None
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ordering {
    Less,
    Equal,
    Greater,
}

/// Compares `stored` (already lowercase) with `query` lowercased.
const fn compare_ignoring_ascii_case(stored: &str, query: &str) -> Ordering {
    let (a, b) = (stored.as_bytes(), query.as_bytes());
    let mut index = 0;
    while index < a.len() && index < b.len() {
        let (x, y) = (a[index].to_ascii_lowercase(), b[index].to_ascii_lowercase());
        if x < y {
            return Ordering::Less;
        }
        if x > y {
            return Ordering::Greater;
        }
        index += 1;
    }
    if a.len() < b.len() {
        Ordering::Less
    } else if a.len() > b.len() {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

const fn str_eq_ignoring_ascii_case(a: &str, b: &str) -> bool {
    matches!(compare_ignoring_ascii_case(a, b), Ordering::Equal) && a.len() == b.len()
}

/// `const` string equality.
pub const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut index = 0;
    while index < a.len() {
        if a[index] != b[index] {
            return false;
        }
        index += 1;
    }
    true
}

// The records as the runtime sees them: generated, or loaded once and kept for the whole process.
pub type PhaseRecord = PhaseRecordIn<'static>;
pub type ExtensionFamilyRecord = ExtensionFamilyRecordIn<'static>;
pub type MutationClassRecord = MutationClassRecordIn<'static>;
pub type StateMachineRecord = StateMachineRecordIn<'static>;
pub type PhaseTables = PhaseTablesIn<'static>;
pub type RegisterClassRecord = RegisterClassRecordIn<'static>;
pub type SubRegisterRecord = SubRegisterRecordIn<'static>;
pub type RegisterRecord = RegisterRecordIn<'static>;
pub type RegisterName = RegisterNameIn<'static>;
pub type AbiRecord = AbiRecordIn<'static>;
pub type TargetRecord = TargetRecordIn<'static>;
