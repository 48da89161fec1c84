//! Lowering of a validated phase schema into the records of `neverc-records`: bits instead of flag lists,
//! indices instead of names. The code generator and the run-time loader both build their tables with this
//! one function, so generated and loaded tables cannot disagree.

use bumpalo::Bump;
use neverc_records::{
    ExtensionFamilyRecordIn, Gate as GateRecord, Id128, MutationClassRecordIn, PhaseKind as PhaseKindRecord,
    PhaseRecordIn, PhaseTablesIn, Stability as StabilityRecord, StateMachineRecordIn, TransitionRecord,
};

use crate::phase::{Gate, PhaseKind, PhaseSchemaDocument, Stability, observer_point_bits, policy_bits};

/// Copies `items` into the arena.
pub(crate) fn slice<'a, T: Copy>(arena: &'a Bump, items: &[T]) -> &'a [T] {
    arena.alloc_slice_copy(items)
}

/// Copies each string into the arena.
pub(crate) fn strs<'a>(arena: &'a Bump, items: &[String]) -> &'a [&'a str] {
    arena.alloc_slice_fill_iter(items.iter().map(|item| &*arena.alloc_str(item)))
}

fn index32(index: usize) -> Result<u32, String> {
    u32::try_from(index).map_err(|_| format!("index {index} does not fit in 32 bits"))
}

/// Lowers a document that passed validation into records allocated in `arena`. Fails only if it did not (a
/// name that does not resolve).
pub fn lower_phase_schema<'a>(document: &PhaseSchemaDocument, arena: &'a Bump) -> Result<PhaseTablesIn<'a>, String> {
    let phase_index = |name: &str| {
        document
            .phases
            .iter()
            .position(|phase| phase.name == name)
            .ok_or_else(|| format!("phase `{name}` is not declared"))
    };
    let mut state_machines = Vec::new();
    for (name, machine) in document.state_machines.iter().flatten() {
        let state = |state: &str| {
            machine
                .states
                .iter()
                .position(|candidate| candidate == state)
                .ok_or_else(|| format!("state `{state}` is not declared"))
                .and_then(index32)
        };
        let mut transitions = machine
            .transitions
            .iter()
            .map(|transition| {
                Ok(TransitionRecord {
                    phase: phase_index(&transition.phase)?,
                    from: state(&transition.from)?,
                    to: state(&transition.to)?,
                    rerun_budget: transition.rerun_budget,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        transitions.sort_by_key(|transition| transition.from);
        let mutation_classes = machine
            .mutation_classes
            .iter()
            .map(|class| {
                Ok(MutationClassRecordIn {
                    name: arena.alloc_str(&class.name),
                    earliest_invalidated: state(&class.earliest_invalidated)?,
                    operations: strs(arena, &class.operations),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let finalization = machine
            .finalization
            .iter()
            .map(|name| phase_index(name))
            .collect::<Result<Vec<_>, _>>()?;
        state_machines.push(StateMachineRecordIn {
            name: arena.alloc_str(name),
            domain: arena.alloc_str(&machine.domain),
            states: strs(arena, &machine.states),
            transitions: slice(arena, &transitions),
            mutation_classes: slice(arena, &mutation_classes),
            proof_state: state(&machine.proof_state)?,
            finalization: slice(arena, &finalization),
        });
    }
    let extension_families: Vec<ExtensionFamilyRecordIn<'a>> = document
        .extension_families
        .iter()
        .map(|family| ExtensionFamilyRecordIn {
            namespace: arena.alloc_str(&family.namespace),
            id_high: family.id_high.0,
            id_low_min: family.id_low_min.0,
            id_low_max: family.id_low_max.0,
        })
        .collect();
    let phases: Vec<PhaseRecordIn<'a>> = document
        .phases
        .iter()
        .map(|phase| PhaseRecordIn {
            name: arena.alloc_str(&phase.name),
            symbol: arena.alloc_str(&phase.symbol),
            id: Id128 {
                high: phase.id.high(),
                low: phase.id.low(),
            },
            domain: arena.alloc_str(&phase.domain),
            kind: match phase.kind {
                PhaseKind::Transition => PhaseKindRecord::Transition,
                PhaseKind::Event => PhaseKindRecord::Event,
            },
            verifier: arena.alloc_str(&phase.verifier),
            input_artifact: Id128 {
                high: phase.input_artifact.high(),
                low: phase.input_artifact.low(),
            },
            output_artifact: Id128 {
                high: phase.output_artifact.high(),
                low: phase.output_artifact.low(),
            },
            policy: policy_bits(&phase.policy),
            observer_points: observer_point_bits(&phase.observer_points),
            gate: match phase.gate {
                Gate::Transition => GateRecord::Transition,
                Gate::SealedVerifier => GateRecord::SealedVerifier,
                Gate::SealedCommit => GateRecord::SealedCommit,
            },
            stability: match phase.stability {
                Stability::Experimental => StabilityRecord::Experimental,
                Stability::Stable => StabilityRecord::Stable,
            },
            builtin_fallback: phase.builtin_fallback,
        })
        .collect();
    Ok(PhaseTablesIn {
        schema_version: document.schema_version,
        extension_families: slice(arena, &extension_families),
        phases: slice(arena, &phases),
        state_machines: slice(arena, &state_machines),
    })
}
