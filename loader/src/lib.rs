//! Tables built at run time from declaration files, for users who cannot rebuild (`--target-file`).
//!
//! Loaded tables go through the same validation and the same lowering as generated ones, and are
//! leaked so that they have the `'static` lifetime of generated tables: load them once per process.

use std::path::Path;

use neverc_schema::{
    LoadError, NameKind as SchemaNameKind, PhaseSchemaDocument, RegisterClassKind as SchemaClassKind,
    lower_phase_schema, lower_target,
};

use neverc_tables::{
    AbiRecord, ExtensionFamilyRecord, Gate, Id128, MutationClassRecord, NameKind, PhaseKind, PhaseRecord, PhaseTables,
    RegisterClassKind, RegisterClassRecord, RegisterName, RegisterNumber, RegisterRecord, RegisterView, Stability,
    StateMachineRecord, SubRegisterRecord, TargetRecord, TransitionRecord,
};

#[derive(Debug, thiserror::Error)]
pub enum LoadTablesError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("validated declarations could not be lowered: {0}")]
    Lowering(String),
}

fn leak_str(text: &str) -> &'static str {
    Box::leak(text.to_owned().into_boxed_str())
}

fn leak_slice<T>(items: Vec<T>) -> &'static [T] {
    Box::leak(items.into_boxed_slice())
}

fn leak_strs(items: &[String]) -> &'static [&'static str] {
    leak_slice(items.iter().map(|item| leak_str(item)).collect())
}

/// Loads, validates and lowers one target file into a `TargetRecord`.
pub fn load_target_file(path: &Path) -> Result<&'static TargetRecord, LoadTablesError> {
    let mut loaded = neverc_schema::load_targets(&[path.to_path_buf()])?;
    let target = loaded
        .pop()
        .ok_or_else(|| LoadTablesError::Lowering("no target was loaded".into()))?;
    let model = lower_target(&target.declaration).map_err(LoadTablesError::Lowering)?;
    let class_kind = |kind: SchemaClassKind| match kind {
        SchemaClassKind::General => RegisterClassKind::General,
        SchemaClassKind::Float => RegisterClassKind::Float,
        SchemaClassKind::Vector => RegisterClassKind::Vector,
    };
    let name_kind = |kind: SchemaNameKind| match kind {
        SchemaNameKind::Canonical => NameKind::Canonical,
        SchemaNameKind::Alias => NameKind::Alias,
        SchemaNameKind::SubRegister => NameKind::SubRegister,
    };
    let record = TargetRecord {
        name: leak_str(&model.name),
        aliases: leak_strs(&model.aliases),
        triple: leak_str(&model.triple),
        target_id: Id128 {
            high: model.target_id.0,
            low: model.target_id.1,
        },
        convention_id: Id128 {
            high: model.convention_id.0,
            low: model.convention_id.1,
        },
        schema_digest: leak_str(&model.schema_digest),
        pointer_width: model.pointer_width,
        little_endian: model.little_endian,
        stack_alignment: model.stack_alignment,
        classes: leak_slice(
            model
                .classes
                .iter()
                .map(|class| RegisterClassRecord {
                    name: leak_str(&class.name),
                    kind: class_kind(class.kind),
                    width: class.width,
                    widths: leak_slice(class.widths.clone()),
                })
                .collect(),
        ),
        registers: leak_slice(
            model
                .registers
                .iter()
                .map(|register| RegisterRecord {
                    name: leak_str(&register.name),
                    class: register.class,
                    width: register.width,
                    plan_number: register.plan_number,
                    dwarf: register.dwarf,
                    flags: register.flags,
                    aliases: leak_strs(&register.aliases),
                    subregisters: leak_slice(
                        register
                            .subregisters
                            .iter()
                            .map(|sub| SubRegisterRecord {
                                name: leak_str(&sub.name),
                                width: sub.width,
                                plan_number: sub.plan_number,
                            })
                            .collect(),
                    ),
                })
                .collect(),
        ),
        names: leak_slice(
            model
                .names
                .iter()
                .map(|name| RegisterName {
                    name: leak_str(&name.name),
                    register: name.register,
                    width: name.width,
                    plan_number: name.plan_number,
                    kind: name_kind(name.kind),
                })
                .collect(),
        ),
        numbers: leak_slice(
            model
                .numbers
                .iter()
                .map(|entry| RegisterNumber {
                    number: entry.number,
                    register: entry.register,
                    width: entry.width,
                })
                .collect(),
        ),
        reserved: leak_slice(model.reserved.clone()),
        callee_saved: leak_slice(
            model
                .callee_saved
                .iter()
                .map(|view| RegisterView {
                    register: view.register,
                    width: view.width,
                })
                .collect(),
        ),
        abi: AbiRecord {
            name: leak_str(&model.abi.name),
            integer_arguments: leak_slice(model.abi.integer_arguments.clone()),
            float_arguments: leak_slice(model.abi.float_arguments.clone()),
            integer_returns: leak_slice(model.abi.integer_returns.clone()),
            float_returns: leak_slice(model.abi.float_returns.clone()),
            sret_register: model.abi.sret_register,
            sret_takes_argument_register: model.abi.sret_takes_argument_register,
            stack_slot_size: model.abi.stack_slot_size,
            stack_max_alignment: model.abi.stack_max_alignment,
            int128_even_pair: model.abi.int128_even_pair,
            split_between_registers_and_stack: model.abi.split_between_registers_and_stack,
            reuse_skipped_registers: model.abi.reuse_skipped_registers,
            vector_register_bytes: model.abi.vector_register_bytes,
            short_vectors_widen_to_register: model.abi.short_vectors_widen_to_register,
            homogeneous_aggregate_max_members: model.abi.homogeneous_aggregate_max_members,
            stack_aggregate_exhausts_float_registers: model.abi.stack_aggregate_exhausts_float_registers,
            float_falls_back_to_integer_registers: model.abi.float_falls_back_to_integer_registers,
            stack_only_types: leak_strs(&model.abi.stack_only_types),
        },
        default_spec: leak_str(&model.default_spec),
        shuffle_layouts: leak_strs(&model.shuffle_layouts),
    };
    Ok(Box::leak(Box::new(record)))
}

/// Lowers a validated phase schema into `PhaseTables` (for a schema other than the bundled one).
pub fn phase_tables_from_document(document: &PhaseSchemaDocument) -> Result<&'static PhaseTables, LoadTablesError> {
    let model = lower_phase_schema(document).map_err(LoadTablesError::Lowering)?;
    let phases = model
        .phases
        .iter()
        .map(|phase| PhaseRecord {
            name: leak_str(&phase.name),
            symbol: leak_str(&phase.symbol),
            id: Id128 {
                high: phase.id.0,
                low: phase.id.1,
            },
            domain: leak_str(&phase.domain),
            kind: match phase.kind {
                neverc_schema::PhaseKind::Transition => PhaseKind::Transition,
                neverc_schema::PhaseKind::Event => PhaseKind::Event,
            },
            verifier: leak_str(&phase.verifier),
            input_artifact: Id128 {
                high: phase.input_artifact.0,
                low: phase.input_artifact.1,
            },
            output_artifact: Id128 {
                high: phase.output_artifact.0,
                low: phase.output_artifact.1,
            },
            policy: phase.policy,
            observer_points: phase.observer_points,
            gate: match phase.gate {
                neverc_schema::Gate::Transition => Gate::Transition,
                neverc_schema::Gate::SealedVerifier => Gate::SealedVerifier,
                neverc_schema::Gate::SealedCommit => Gate::SealedCommit,
            },
            stability: match phase.stability {
                neverc_schema::Stability::Experimental => Stability::Experimental,
                neverc_schema::Stability::Stable => Stability::Stable,
            },
            builtin_fallback: phase.builtin_fallback,
        })
        .collect();
    let state_machines = model
        .state_machines
        .iter()
        .map(|machine| StateMachineRecord {
            name: leak_str(&machine.name),
            domain: leak_str(&machine.domain),
            states: leak_strs(&machine.states),
            transitions: leak_slice(
                machine
                    .transitions
                    .iter()
                    .map(|transition| TransitionRecord {
                        phase: transition.phase,
                        from: index32(transition.from),
                        to: index32(transition.to),
                        rerun_budget: transition.rerun_budget,
                    })
                    .collect(),
            ),
            mutation_classes: leak_slice(
                machine
                    .mutation_classes
                    .iter()
                    .map(|class| MutationClassRecord {
                        name: leak_str(&class.name),
                        earliest_invalidated: index32(class.earliest_invalidated),
                        operations: leak_strs(&class.operations),
                    })
                    .collect(),
            ),
            proof_state: index32(machine.proof_state),
            finalization: leak_slice(machine.finalization.clone()),
        })
        .collect();
    let tables = PhaseTables {
        schema_version: model.schema_version,
        extension_families: leak_slice(
            model
                .extension_families
                .iter()
                .map(|family| ExtensionFamilyRecord {
                    namespace: leak_str(&family.namespace),
                    id_high: family.id_high,
                    id_low_min: family.id_low_min,
                    id_low_max: family.id_low_max,
                })
                .collect(),
        ),
        phases: leak_slice(phases),
        state_machines: leak_slice(state_machines),
    };
    Ok(Box::leak(Box::new(tables)))
}

/// Loads and validates a phase schema file and lowers it into `PhaseTables`.
pub fn load_phase_tables(path: &Path) -> Result<&'static PhaseTables, LoadTablesError> {
    let document = neverc_schema::load_phase_schema(path)?;
    phase_tables_from_document(&document)
}

fn index32(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}
