//! Conformance cases generated from the declarations, as language-neutral JSON vectors
//! (`docs/conformance-format.md`) and as Rust tests (template `conformance_tests.rs.hbs`).
//!
//! One case set per source file: the phase schema gives the policy, observer, sealed-gate, proof, budget and
//! mutation-class cases; each target file gives its register, reserved-name, spec, ELF-fact and relocation
//! cases. Adding a phase
//! or a target file adds cases, with nothing else to edit.

use neverc_records::{Gate, NameKind, PhaseKind, PhaseRecordIn, PhaseTablesIn, StateMachineRecordIn, TargetRecordIn};
use neverc_schema::{ObserverPoint, PolicyFlag};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{CodegenError, GeneratedFile, render};

/// The format tag of every vector file.
pub const VECTOR_FORMAT: &str = "neverc-conformance-v1";

/// The signature the spec cases plan: integers, floats and a pointer, so every argument list of a spec is used.
pub const PLAN_SIGNATURE: &str = "i64 (i64, i32, double, ptr, float, i64)";

const CONFORMANCE_TEMPLATE: &str = include_str!("../templates/conformance_tests.rs.hbs");

/// What a plugin asks of a phase, as vectors spell it.
pub const REQUESTS: [&str; 6] = [
    "observe:BEFORE",
    "observe:AFTER",
    "observe:AFTER_COMMIT",
    "intercept",
    "replace",
    "skip_with_proof",
];

/// One source file's cases.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseSet {
    pub format: String,
    /// The declaration file the cases come from, relative to the declarations' root.
    pub source: String,
    pub cases: Vec<Case>,
}

/// One case: a stable id and what to check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Case {
    pub id: String,
    #[serde(flatten)]
    pub check: Check,
}

/// What a case checks. Every field an implementation needs is in the case; nothing refers back to the
/// declarations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Check {
    /// Registering `request` on `phase` succeeds if and only if `allowed`; a refusal is `POLICY_VIOLATION`.
    Registration {
        phase: String,
        request: String,
        allowed: bool,
    },
    /// An observer of `phase` at `point` gets a read-only frame: beginning a mutation and publishing a product
    /// are both `POLICY_VIOLATION`.
    ObserverReadOnly { phase: String, point: String },
    /// A sealed gate: observing is allowed, intercepting, replacing and skipping are refused; when it is a
    /// step of `machine`, it runs (built in) in every link.
    SealedGate { phase: String, machine: Option<String> },
    /// `phase` is skipped only with a fresh proof. A stale proof never skips it; when `proof_available` (the
    /// transition leaves a state at or after the machine's proof state), the current proof does.
    SkipNeedsFreshProof {
        phase: String,
        machine: String,
        from: String,
        proof_available: bool,
    },
    /// An interceptor of `phase` wraps the built-in work: it is called once, in state `from`, with a frame
    /// it may mutate (a mutation it begins and abandons changes nothing); when it calls its continuation, the
    /// built-in work runs, the machine moves on to `to`, and the link writes the same bytes as without it.
    InterceptWraps {
        phase: String,
        machine: String,
        from: String,
        to: String,
    },
    /// A replacement of `phase` runs instead of the built-in work: it is called once, in state `from`, with a
    /// frame it may mutate; the built-in work does not run (observers before and after the phase see the
    /// same number of entities of every kind when the replacement does nothing), and the machine moves on to
    /// `to`. What the link does after a replacement that publishes nothing is not part of the case.
    ReplaceRuns {
        phase: String,
        machine: String,
        from: String,
        to: String,
    },
    /// An interceptor of `phase` that commits a mutation of one of the `choices` (the first the
    /// implementation can stage) on every run sends the machine back each time, so every transition from the
    /// class's invalidated state to `phase` runs again: `phase` runs `runs` times, then `fails_at` (the first
    /// of those transitions to exhaust its budget; `phase` itself when its `budget` is the smallest) fails to
    /// converge.
    RerunBudget {
        phase: String,
        machine: String,
        budget: u32,
        choices: Vec<BudgetChoice>,
    },
    /// Committing a mutation of `class` (one of `operations`) during `at_phase` lowers the state to
    /// `expected_state`, the state before `earliest_invalidated`, and execution continues from there.
    MutationLowersState {
        machine: String,
        class: String,
        operations: Vec<String>,
        earliest_invalidated: String,
        expected_state: String,
        at_phase: String,
    },
    /// Registering a `descriptor` whose `Flags` are `flags` (raw bits) and that has `callbacks` (C field
    /// names) — twice, with the same id, when `twice` — gives `expected`: `ACCEPTED`, or the status of the
    /// (last) registration's refusal (`INVALID_DESCRIPTOR`, `DUPLICATE_ID`), whose message names each of
    /// `mentions`.
    DescriptorRegistration {
        descriptor: String,
        flags: u64,
        callbacks: Vec<String>,
        twice: bool,
        expected: String,
        mentions: Vec<String>,
    },
    /// `name` resolves on `target` to plan number `number` at `width` bits; `name_kind` is canonical, alias or
    /// sub_register.
    RegisterResolves {
        target: String,
        name: String,
        name_kind: String,
        number: u32,
        width: u32,
    },
    /// A reserved register named in a spec is skipped: planning `signature` under `spec` succeeds, notes that
    /// `name` is reserved, and puts the first argument in `expected_register`.
    ReservedSkipped {
        target: String,
        name: String,
        spec: String,
        signature: String,
        expected_register: String,
    },
    /// Planning `signature` under `spec` (a shuffle layout, or the default spec) succeeds and the plan
    /// validates.
    SpecPlans {
        target: String,
        spec: String,
        signature: String,
        origin: String,
    },
    /// The target's ELF files have e_machine `machine` and class `class` (bits), its executables are laid
    /// out for `common_page_size` and aligned to `max_page_size`, their TLS is variant `tls_variant` (`I`,
    /// with a thread control block of `tcb_size` bytes, or `II`), and GNU ld's `-m` names it by each of
    /// `emulations`.
    ElfFacts {
        target: String,
        machine: u16,
        class: u32,
        common_page_size: u64,
        max_page_size: u64,
        tls_variant: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tcb_size: Option<u64>,
        emulations: Vec<String>,
    },
    /// Relocation `number` of `format` on `target` is `name`, and `name` is it: of kind `relocation_kind`,
    /// relative to `relative_to`, patching `size` bits (the value rounded at bit `round` when it is not 0, shifted right by `shift` into `bits`, each
    /// `[lsb, width]`, least significant first; the whole place when empty) under overflow rule `overflow`.
    RelocationResolves {
        target: String,
        format: String,
        number: u32,
        name: String,
        relocation_kind: String,
        relative_to: String,
        size: u32,
        overflow: String,
        shift: u32,
        #[serde(default, skip_serializing_if = "is_zero")]
        round: u32,
        bits: Vec<[u32; 2]>,
    },
}

/// One way to make a transition rerun: a mutation class and what then happens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetChoice {
    pub class: String,
    pub operations: Vec<String>,
    pub fails_at: String,
    pub runs: u32,
}

impl Check {
    /// Whether running the case means linking a program (through the declared state machine).
    pub fn runs_link(&self) -> bool {
        match self {
            Check::ObserverReadOnly { .. }
            | Check::InterceptWraps { .. }
            | Check::ReplaceRuns { .. }
            | Check::SkipNeedsFreshProof { .. }
            | Check::RerunBudget { .. }
            | Check::MutationLowersState { .. } => true,
            Check::SealedGate { machine, .. } => machine.is_some(),
            Check::Registration { .. }
            | Check::DescriptorRegistration { .. }
            | Check::RegisterResolves { .. }
            | Check::ReservedSkipped { .. }
            | Check::SpecPlans { .. }
            | Check::ElfFacts { .. }
            | Check::RelocationResolves { .. } => false,
        }
    }
}

fn point_name(point: ObserverPoint) -> &'static str {
    point.schema_name()
}

/// Whether the phase's policy has `flag`.
fn has(phase: &PhaseRecordIn<'_>, flag: PolicyFlag) -> bool {
    phase.policy & flag.bit() != 0
}

/// Whether the phase offers observer point `point`.
fn offers(phase: &PhaseRecordIn<'_>, point: ObserverPoint) -> bool {
    phase.observer_points & point.bit() != 0
}

/// A case id segment: the phase name with its dots kept (ids are strings, not identifiers).
fn id(parts: &[&str]) -> String {
    parts.join("/")
}

/// The cases of a phase schema.
pub fn phase_schema_cases(model: &PhaseTablesIn<'_>, source: &str) -> CaseSet {
    let mut cases = Vec::new();
    for phase in model.phases {
        for request in REQUESTS {
            let allowed = match request.split_once(':') {
                Some((_, point)) => {
                    has(phase, PolicyFlag::Observable)
                        && ObserverPoint::ALL
                            .iter()
                            .any(|offered| offers(phase, *offered) && point_name(*offered) == point)
                }
                None => match request {
                    "intercept" => has(phase, PolicyFlag::Interceptable),
                    "replace" => has(phase, PolicyFlag::Replaceable),
                    _ => has(phase, PolicyFlag::SkippableWithProof),
                },
            };
            cases.push(Case {
                id: id(&["registration", phase.name, request]),
                check: Check::Registration {
                    phase: phase.name.to_string(),
                    request: request.to_string(),
                    allowed,
                },
            });
        }
    }
    for phase in model.phases.iter().filter(|phase| phase.gate != Gate::Transition) {
        let index = model.phases.iter().position(|candidate| candidate.name == phase.name);
        let machine = model
            .state_machines
            .iter()
            .find(|machine| index.is_some_and(|index| steps(machine).any(|step| step == index)));
        cases.push(Case {
            id: id(&["sealed_gate", phase.name]),
            check: Check::SealedGate {
                phase: phase.name.to_string(),
                machine: machine.map(|machine| machine.name.to_string()),
            },
        });
    }
    for machine in model.state_machines {
        machine_cases(model, machine, &mut cases);
    }
    CaseSet {
        format: VECTOR_FORMAT.to_string(),
        source: source.to_string(),
        cases,
    }
}

/// The phases a run of the machine executes: its transitions, then its finalization.
fn steps<'m>(machine: &'m StateMachineRecordIn<'_>) -> impl Iterator<Item = usize> + 'm {
    machine
        .transitions
        .iter()
        .map(|transition| transition.phase)
        .chain(machine.finalization.iter().copied())
}

fn machine_cases(model: &PhaseTablesIn<'_>, machine: &StateMachineRecordIn<'_>, cases: &mut Vec<Case>) {
    for index in steps(machine) {
        let phase = &model.phases[index];
        let point = [ObserverPoint::Before, ObserverPoint::After]
            .into_iter()
            .find(|point| offers(phase, *point));
        if let (true, Some(point)) = (has(phase, PolicyFlag::Observable), point) {
            cases.push(Case {
                id: id(&["observer_read_only", phase.name]),
                check: Check::ObserverReadOnly {
                    phase: phase.name.to_string(),
                    point: point_name(point).to_string(),
                },
            });
        }
    }
    for transition in machine.transitions {
        let phase = &model.phases[transition.phase];
        let (from, to) = (
            machine.states[transition.from as usize].to_string(),
            machine.states[transition.to as usize].to_string(),
        );
        if has(phase, PolicyFlag::Interceptable) {
            cases.push(Case {
                id: id(&["intercept_wraps", phase.name]),
                check: Check::InterceptWraps {
                    phase: phase.name.to_string(),
                    machine: machine.name.to_string(),
                    from: from.clone(),
                    to: to.clone(),
                },
            });
        }
        if has(phase, PolicyFlag::Replaceable) {
            cases.push(Case {
                id: id(&["replace_runs", phase.name]),
                check: Check::ReplaceRuns {
                    phase: phase.name.to_string(),
                    machine: machine.name.to_string(),
                    from,
                    to,
                },
            });
        }
    }
    for transition in machine.transitions {
        let phase = &model.phases[transition.phase];
        if has(phase, PolicyFlag::SkippableWithProof) && phase.kind == PhaseKind::Transition {
            cases.push(Case {
                id: id(&["skip_needs_fresh_proof", phase.name]),
                check: Check::SkipNeedsFreshProof {
                    phase: phase.name.to_string(),
                    machine: machine.name.to_string(),
                    from: machine.states[transition.from as usize].to_string(),
                    proof_available: transition.from >= machine.proof_state,
                },
            });
        }
    }
    for transition in machine.transitions {
        let phase = &model.phases[transition.phase];
        if !has(phase, PolicyFlag::Interceptable) {
            continue;
        }
        // The mutation must send the machine back to (or before) the transition's own start state. Every
        // class that can is a choice, the one that invalidates least first (what a careful plugin would use):
        // every transition from the state the commit returns to up to this one reruns once per cycle, and the
        // one with the smallest budget (the earliest among equals) runs out first.
        let mut classes: Vec<_> = machine
            .mutation_classes
            .iter()
            .filter(|class| class.earliest_invalidated <= transition.from + 1)
            .collect();
        classes.sort_by_key(|class| std::cmp::Reverse(class.earliest_invalidated));
        let choices: Vec<BudgetChoice> = classes
            .into_iter()
            .filter_map(|class| {
                let back_to = class.earliest_invalidated.saturating_sub(1);
                let exhausted = machine
                    .transitions
                    .iter()
                    .filter(|other| other.from >= back_to && other.from <= transition.from)
                    .min_by_key(|other| (other.rerun_budget, other.from))?;
                Some(BudgetChoice {
                    class: class.name.to_string(),
                    operations: class.operations.iter().map(|operation| operation.to_string()).collect(),
                    fails_at: model.phases[exhausted.phase].name.to_string(),
                    runs: exhausted.rerun_budget.saturating_add(1),
                })
            })
            .collect();
        if !choices.is_empty() {
            cases.push(Case {
                id: id(&["rerun_budget", phase.name]),
                check: Check::RerunBudget {
                    phase: phase.name.to_string(),
                    machine: machine.name.to_string(),
                    budget: transition.rerun_budget,
                    choices,
                },
            });
        }
    }
    // Mutations are committed during the last transition, which every class can send back.
    if let Some(last) = machine.transitions.iter().max_by_key(|transition| transition.from) {
        let at_phase = &model.phases[last.phase];
        if has(at_phase, PolicyFlag::Interceptable) {
            for class in machine.mutation_classes {
                let expected = class.earliest_invalidated.saturating_sub(1).min(last.from);
                cases.push(Case {
                    id: id(&["mutation_lowers_state", machine.name, class.name]),
                    check: Check::MutationLowersState {
                        machine: machine.name.to_string(),
                        class: class.name.to_string(),
                        operations: class.operations.iter().map(|operation| operation.to_string()).collect(),
                        earliest_invalidated: machine.states[class.earliest_invalidated as usize].to_string(),
                        expected_state: machine.states[expected as usize].to_string(),
                        at_phase: at_phase.name.to_string(),
                    },
                });
            }
        }
    }
}

fn name_kind(kind: NameKind) -> &'static str {
    match kind {
        NameKind::Canonical => "canonical",
        NameKind::Alias => "alias",
        NameKind::SubRegister => "sub_register",
    }
}

/// The cases of one target file.
pub fn target_cases(model: &TargetRecordIn<'_>, source: &str) -> CaseSet {
    let mut cases = Vec::new();
    for name in model.names {
        cases.push(Case {
            id: id(&["register_resolves", model.name, name.name]),
            check: Check::RegisterResolves {
                target: model.name.to_string(),
                name: name.name.to_string(),
                name_kind: name_kind(name.kind).to_string(),
                number: name.plan_number,
                width: name.width,
            },
        });
    }
    let first_argument = model
        .abi
        .integer_arguments
        .first()
        .and_then(|index| model.registers.get(*index))
        .map(|register| register.name.to_string());
    if let Some(first_argument) = first_argument {
        for reserved in model.reserved {
            let Some(register) = model.registers.get(*reserved) else {
                continue;
            };
            cases.push(Case {
                id: id(&["reserved_skipped", model.name, register.name]),
                check: Check::ReservedSkipped {
                    target: model.name.to_string(),
                    name: register.name.to_string(),
                    spec: format!("gpr:{},{first_argument}", register.name),
                    signature: "void (i64)".to_string(),
                    expected_register: first_argument.clone(),
                },
            });
        }
    }
    for (index, layout) in model.shuffle_layouts.iter().enumerate() {
        cases.push(Case {
            id: id(&["spec_plans", model.name, &format!("shuffle{index}")]),
            check: Check::SpecPlans {
                target: model.name.to_string(),
                spec: layout.to_string(),
                signature: PLAN_SIGNATURE.to_string(),
                origin: format!("shuffle layout {index}"),
            },
        });
    }
    cases.push(Case {
        id: id(&["spec_plans", model.name, "default"]),
        check: Check::SpecPlans {
            target: model.name.to_string(),
            spec: model.default_spec.to_string(),
            signature: PLAN_SIGNATURE.to_string(),
            origin: "default spec".to_string(),
        },
    });
    if let Some(elf) = model.elf {
        cases.push(Case {
            id: id(&["elf_facts", model.name]),
            check: Check::ElfFacts {
                target: model.name.to_string(),
                machine: elf.machine,
                class: elf.class,
                common_page_size: elf.common_page_size,
                max_page_size: elf.max_page_size,
                tls_variant: elf.tls.name().to_string(),
                tcb_size: elf.tls.tcb_size(),
                emulations: elf.emulations.iter().map(|name| name.to_string()).collect(),
            },
        });
    }
    for relocation in model.relocations {
        cases.push(Case {
            id: id(&[
                "relocation_resolves",
                model.name,
                relocation.format.name(),
                relocation.name,
            ]),
            check: Check::RelocationResolves {
                target: model.name.to_string(),
                format: relocation.format.name().to_string(),
                number: relocation.number,
                name: relocation.name.to_string(),
                relocation_kind: relocation.kind.name().to_string(),
                relative_to: relocation.relative_to.name().to_string(),
                size: relocation.size,
                overflow: relocation.overflow.name().to_string(),
                shift: relocation.shift,
                round: relocation.round,
                bits: relocation.bits.iter().map(|bits| [bits.lsb, bits.width]).collect(),
            },
        });
    }
    CaseSet {
        format: VECTOR_FORMAT.to_string(),
        source: source.to_string(),
        cases,
    }
}

/// What a descriptor registration case expects when the host accepts.
pub const ACCEPTED: &str = "ACCEPTED";

/// The cases of one ABI file: for every flag set with descriptor rules, registrations that each rule accepts
/// or refuses. `None` when the file declares no descriptor rules.
pub fn plugin_abi_cases(declaration: &neverc_schema::PluginAbiDeclaration, source: &str) -> Option<CaseSet> {
    let mut cases = Vec::new();
    for item in &declaration.flags {
        let Some(rules) = &item.descriptor else {
            continue;
        };
        let bit = |name: &str| {
            item.bits
                .iter()
                .find(|bit| bit.name == name)
                .map_or(0, |bit| 1u64.checked_shl(bit.bit).unwrap_or(0))
        };
        let declared = item.bits.iter().fold(0u64, |mask, declared| mask | bit(&declared.name));
        let one_of = rules.one_of.iter().fold(0u64, |mask, name| mask | bit(name));
        let base = rules.one_of.first().map_or(0, |name| bit(name));
        let without = |left_out: &str| -> Vec<String> {
            rules
                .callbacks
                .iter()
                .filter(|callback| *callback != left_out)
                .cloned()
                .collect()
        };
        let mut push =
            |detail: String, flags: u64, callbacks: Vec<String>, twice: bool, expected: &str, mentions: Vec<String>| {
                cases.push(Case {
                    id: id(&["descriptor_registration", &rules.name, &detail]),
                    check: Check::DescriptorRegistration {
                        descriptor: rules.name.clone(),
                        flags,
                        callbacks,
                        twice,
                        expected: expected.to_string(),
                        mentions,
                    },
                });
            };
        for name in &rules.one_of {
            push(
                format!("accepted/{name}"),
                bit(name),
                rules.required_callbacks.clone(),
                false,
                ACCEPTED,
                Vec::new(),
            );
        }
        push(
            "accepted/every_bit".into(),
            declared,
            rules.callbacks.clone(),
            false,
            ACCEPTED,
            Vec::new(),
        );
        if let Some(undeclared) = (0..item.width.min(64))
            .map(|bit| 1u64 << bit)
            .find(|bit| declared & bit == 0)
        {
            push(
                "refused/undeclared_bit".into(),
                base | undeclared,
                rules.callbacks.clone(),
                false,
                INVALID_DESCRIPTOR,
                Vec::new(),
            );
        }
        if one_of != 0 {
            push(
                "refused/one_of".into(),
                declared & !one_of,
                rules.callbacks.clone(),
                false,
                INVALID_DESCRIPTOR,
                rules.one_of.clone(),
            );
        }
        for callback in &rules.required_callbacks {
            push(
                format!("refused/required/{callback}"),
                base,
                without(callback),
                false,
                INVALID_DESCRIPTOR,
                vec![callback.clone()],
            );
        }
        for requirement in &rules.bit_requires {
            push(
                format!("refused/bit_requires/{}/{}", requirement.bit, requirement.callback),
                base | bit(&requirement.bit),
                without(&requirement.callback),
                false,
                INVALID_DESCRIPTOR,
                vec![requirement.callback.clone()],
            );
        }
        let (expected, detail) = if rules.unique_id {
            (DUPLICATE_ID, "refused/duplicate_id")
        } else {
            (ACCEPTED, "accepted/twice")
        };
        push(detail.into(), base, rules.callbacks.clone(), true, expected, Vec::new());
    }
    (!cases.is_empty()).then(|| CaseSet {
        format: VECTOR_FORMAT.to_string(),
        source: source.to_string(),
        cases,
    })
}

/// NeverC's status for a descriptor that breaks a rule.
const INVALID_DESCRIPTOR: &str = "INVALID_DESCRIPTOR";
/// NeverC's status for a second descriptor with a registered id.
const DUPLICATE_ID: &str = "DUPLICATE_ID";

/// A Rust function name for a case id: lowercase, `_` for everything else, unique within the file.
fn test_name(case_id: &str, used: &mut std::collections::BTreeSet<String>) -> String {
    let mut name: String = case_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    while name.contains("__") {
        name = name.replace("__", "_");
    }
    let base = name.trim_matches('_').to_string();
    let mut name = base.clone();
    let mut suffix = 2;
    while !used.insert(name.clone()) {
        name = format!("{base}_{suffix}");
        suffix += 1;
    }
    name
}

/// Rust tests, one `#[test]` per case, each running the case through `neverc_conformance::check_case`.
pub fn conformance_tests(sets: &[CaseSet]) -> Result<GeneratedFile, CodegenError> {
    let mut used = std::collections::BTreeSet::new();
    let mut tests = Vec::new();
    for set in sets {
        for case in &set.cases {
            let case_json = serde_json::to_string(case).map_err(|error| CodegenError::Template {
                template: "conformance_tests.rs.hbs",
                message: error.to_string(),
            })?;
            tests.push(json!({
                "name": test_name(&case.id, &mut used),
                "id": case.id,
                "source": set.source,
                "case_json": case_json,
            }));
        }
    }
    let sources: Vec<_> = sets
        .iter()
        .map(|set| json!({ "source": set.source, "count": set.cases.len() }))
        .collect();
    let source_list = sets
        .iter()
        .map(|set| set.source.as_str())
        .collect::<Vec<_>>()
        .join("`, `");
    render(
        "conformance_tests.rs.hbs",
        CONFORMANCE_TEMPLATE,
        &json!({ "tests": tests, "sources": sources, "total": tests.len() }),
        "conformance_tests.rs",
        &source_list,
    )
}

/// Every case set of validated declarations: the phase schema first, then the targets in file order.
pub fn conformance_case_sets(
    declarations: &neverc_schema::Declarations,
    root: &std::path::Path,
) -> Result<Vec<CaseSet>, CodegenError> {
    let arena = neverc_schema::Bump::new();
    let model =
        neverc_schema::lower_phase_schema(&declarations.phase_schema, &arena).map_err(CodegenError::Lowering)?;
    let mut sets = vec![phase_schema_cases(
        &model,
        &crate::display_source(root, &declarations.phase_schema_path),
    )];
    for target in &declarations.targets {
        let model = neverc_schema::lower_target(&target.declaration, &arena).map_err(CodegenError::Lowering)?;
        sets.push(target_cases(&model, &crate::display_source(root, &target.path)));
    }
    Ok(sets)
}

/// The case sets of validated ABI files, in file order (files without descriptor rules have none).
pub fn plugin_abi_case_sets(parts: &[neverc_schema::LoadedAbiPart], root: &std::path::Path) -> Vec<CaseSet> {
    parts
        .iter()
        .filter_map(|part| plugin_abi_cases(&part.declaration, &crate::display_source(root, &part.path)))
        .collect()
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}
