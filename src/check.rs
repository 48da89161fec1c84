//! `neverc-spec check`: validate the declarations and summarize them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use neverc_schema::{
    Declarations, Diagnostic, Gate, LoadError, LoadedAbiPart, RegisterClassKind, load_declarations, load_phase_schema,
    load_plugin_abi_with, lower_target, target_files,
};
use serde::Serialize;

use crate::CommandError;
use crate::cli::{CheckArgs, DeclarationArgs, Format};
use crate::render::load_failure;

#[derive(Serialize)]
struct Report {
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    phase_schema: Option<SchemaSummary>,
    targets: Vec<TargetSummary>,
    /// The plugin ABI files (`--abi`), one summary each.
    plugin_abi: Vec<AbiSummary>,
    /// The phase schema the ABI files were checked against (the one their values derive from).
    #[serde(skip_serializing_if = "Option::is_none")]
    plugin_abi_phase_schema: Option<String>,
    diagnostics: Vec<Diagnostic>,
}

#[derive(Serialize)]
struct AbiSummary {
    file: String,
    interfaces: Vec<String>,
    enums: Vec<String>,
    flags: Vec<String>,
}

fn summarize_abi(parts: &[LoadedAbiPart]) -> Vec<AbiSummary> {
    parts
        .iter()
        .map(|part| AbiSummary {
            file: part.path.display().to_string(),
            interfaces: part
                .declaration
                .interfaces
                .iter()
                .map(|interface| format!("{} {}.{}", interface.name, interface.major, interface.minor))
                .collect(),
            enums: part
                .declaration
                .enums
                .iter()
                .map(|item| format!("Neverc{}", item.name))
                .collect(),
            flags: part
                .declaration
                .flags
                .iter()
                .map(|item| format!("Neverc{}", item.name))
                .collect(),
        })
        .collect()
}

#[derive(Serialize)]
struct SchemaSummary {
    file: String,
    schema_version: u32,
    phases: usize,
    extension_families: usize,
    domains: BTreeMap<String, usize>,
    sealed_gates: Vec<SealedGate>,
    state_machines: Vec<MachineSummary>,
}

#[derive(Serialize)]
struct SealedGate {
    name: String,
    gate: Gate,
}

#[derive(Serialize)]
struct MachineSummary {
    name: String,
    domain: String,
    states: usize,
    proof_state: String,
    mutation_classes: usize,
    transitions: Vec<TransitionSummary>,
    finalization: Vec<String>,
}

#[derive(Serialize)]
struct TransitionSummary {
    phase: String,
    from: String,
    to: String,
    rerun_budget: u32,
}

#[derive(Serialize)]
struct TargetSummary {
    name: String,
    file: String,
    triple: String,
    schema_digest: String,
    registers: usize,
    general_registers: usize,
    vector_registers: usize,
    spellings: usize,
    reserved: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    elf: Option<ElfSummary>,
}

/// A target's `[elf]` facts, as the linker reads them.
#[derive(Serialize)]
struct ElfSummary {
    machine: u16,
    class: u32,
    common_page_size: u64,
    max_page_size: u64,
    /// `I` or `II`.
    tls_variant: &'static str,
    /// Variant I's thread control block, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    tcb_size: Option<u64>,
    emulations: Vec<String>,
}

/// The target files named by the arguments: the directory's `*.toml`, then each `--target-file`.
/// The directory generated sources name the declaration files relative to: that of the phase schema.
pub(crate) fn declarations_root(args: &DeclarationArgs) -> &std::path::Path {
    root_of(&args.phase_schema)
}

/// The directory the declarations' paths are shown relative to: the phase schema's.
pub(crate) fn root_of(phase_schema: &std::path::Path) -> &std::path::Path {
    phase_schema
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."))
}

pub(crate) fn declared_target_files(args: &DeclarationArgs) -> Result<Vec<PathBuf>, CommandError> {
    let mut files = target_files(&args.targets).map_err(|error| CommandError::Io(error.to_string()))?;
    files.extend(args.target_files.iter().cloned());
    // Declarations without a single target describe no machine: almost always a wrong directory.
    if files.is_empty() {
        return Err(CommandError::Request(format!(
            "no target files: `{}` holds no `*.toml` and no --target-file was given",
            args.targets.display()
        )));
    }
    Ok(files)
}

/// The bundled plugin ABI directory, and the phase schema its values derive from (the pair the build
/// generates `neverc_tables::plugin_abi` from).
const BUNDLED_ABI: &str = "abi";
const BUNDLED_PHASE_SCHEMA: &str = "PhaseSchema.json";

/// Whether two paths name the same file (the same text, or the same canonical path).
fn same_file(one: &Path, other: &Path) -> bool {
    one == other
        || std::fs::canonicalize(one)
            .ok()
            .is_some_and(|one| std::fs::canonicalize(other).ok() == Some(one))
}

/// Loads the ABI files with the values they take from `derived_from`: the schema just loaded when it is that
/// file, else `derived_from` itself.
fn load_abi(
    abi_files: &[PathBuf],
    derived_from: &Path,
    declarations: &Declarations,
) -> Result<Vec<LoadedAbiPart>, LoadError> {
    if same_file(derived_from, &declarations.phase_schema_path) {
        load_plugin_abi_with(abi_files, &declarations.phase_schema)
    } else {
        load_plugin_abi_with(abi_files, &load_phase_schema(derived_from)?)
    }
}

pub(crate) fn run(args: &CheckArgs) -> Result<(), CommandError> {
    let json = args.format == Format::Json;
    let files = declared_target_files(&args.declarations)?;
    // A user's schema is reported on by itself: the bundled ABI is held to the schema it derives from, and
    // an ABI directory named with --abi to the schema named with it.
    let (abi_dir, derived_from) = match &args.abi {
        Some(dir) => (dir.as_path(), args.declarations.phase_schema.as_path()),
        None => (Path::new(BUNDLED_ABI), Path::new(BUNDLED_PHASE_SCHEMA)),
    };
    let abi_files = target_files(abi_dir).map_err(|error| CommandError::Io(error.to_string()))?;
    let loaded = load_declarations(&args.declarations.phase_schema, &files)
        .and_then(|declarations| load_abi(&abi_files, derived_from, &declarations).map(|abi| (declarations, abi)));
    match loaded {
        Ok((declarations, abi)) => {
            let mut report = summarize(&declarations);
            report.plugin_abi = summarize_abi(&abi);
            report.plugin_abi_phase_schema = Some(derived_from.display().to_string());
            if json {
                print_json(&report)?;
            } else {
                print_text(&report);
            }
            Ok(())
        }
        Err(error) => {
            let (failure, diagnostics) = load_failure(error, json);
            if json && matches!(failure, CommandError::Invalid) {
                print_json(&Report {
                    ok: false,
                    phase_schema: None,
                    targets: Vec::new(),
                    plugin_abi: Vec::new(),
                    plugin_abi_phase_schema: None,
                    diagnostics,
                })?;
            }
            Err(failure)
        }
    }
}

fn print_json(report: &Report) -> Result<(), CommandError> {
    let text = crate::render::json_text(report, true)?;
    outln!("{text}");
    Ok(())
}

fn summarize(declarations: &Declarations) -> Report {
    let schema = &declarations.phase_schema;
    let mut domains = BTreeMap::new();
    for phase in &schema.phases {
        *domains.entry(phase.domain.clone()).or_insert(0) += 1;
    }
    let sealed_gates = schema
        .phases
        .iter()
        .filter(|phase| phase.gate.is_sealed())
        .map(|phase| SealedGate {
            name: phase.name.clone(),
            gate: phase.gate,
        })
        .collect();
    let state_machines = schema
        .state_machines
        .iter()
        .flatten()
        .map(|(name, machine)| MachineSummary {
            name: name.clone(),
            domain: machine.domain.clone(),
            states: machine.states.len(),
            proof_state: machine.proof_state.clone(),
            mutation_classes: machine.mutation_classes.len(),
            transitions: machine
                .transitions
                .iter()
                .map(|transition| TransitionSummary {
                    phase: transition.phase.clone(),
                    from: transition.from.clone(),
                    to: transition.to.clone(),
                    rerun_budget: transition.rerun_budget,
                })
                .collect(),
            finalization: machine.finalization.clone(),
        })
        .collect();
    let targets = declarations
        .targets
        .iter()
        .map(|target| {
            let declaration = &target.declaration;
            let kind_of = |class: &str| {
                declaration
                    .register_classes
                    .iter()
                    .find(|candidate| candidate.name == class)
                    .map(|class| class.kind)
            };
            let count = |general: bool| {
                declaration
                    .registers
                    .iter()
                    .filter(|register| {
                        kind_of(&register.class).is_some_and(|kind| (kind == RegisterClassKind::General) == general)
                    })
                    .count()
            };
            let arena = neverc_schema::Bump::new();
            let model = lower_target(declaration, &arena).ok();
            let elf = model.and_then(|model| model.elf).map(|elf| ElfSummary {
                machine: elf.machine,
                class: elf.class,
                common_page_size: elf.common_page_size,
                max_page_size: elf.max_page_size,
                tls_variant: elf.tls.name(),
                tcb_size: elf.tls.tcb_size(),
                emulations: elf.emulations.iter().map(|name| name.to_string()).collect(),
            });
            TargetSummary {
                name: declaration.identity.name.clone(),
                file: target.path.display().to_string(),
                triple: declaration.identity.triple.clone(),
                schema_digest: declaration.identity.schema_digest.clone(),
                registers: declaration.registers.len(),
                general_registers: count(true),
                vector_registers: count(false),
                spellings: model.map_or(0, |model| model.names.len()),
                reserved: declaration.reserved.clone(),
                elf,
            }
        })
        .collect();
    Report {
        ok: true,
        phase_schema: Some(SchemaSummary {
            file: declarations.phase_schema_path.display().to_string(),
            schema_version: schema.schema_version,
            phases: schema.phases.len(),
            extension_families: schema.extension_families.len(),
            domains,
            sealed_gates,
            state_machines,
        }),
        targets,
        plugin_abi: Vec::new(),
        plugin_abi_phase_schema: None,
        diagnostics: Vec::new(),
    }
}

fn print_text(report: &Report) {
    if let Some(schema) = &report.phase_schema {
        outln!(
            "phase schema {} (schema_version {}): valid",
            schema.file,
            schema.schema_version
        );
        outln!(
            "  {} phases in {} domains, {} extension families",
            schema.phases,
            schema.domains.len(),
            schema.extension_families
        );
        let domains: Vec<String> = schema
            .domains
            .iter()
            .map(|(domain, count)| format!("{domain} {count}"))
            .collect();
        outln!("  phases per domain: {}", domains.join(", "));
        outln!("  sealed gates ({}):", schema.sealed_gates.len());
        for gate in &schema.sealed_gates {
            outln!("    {:<40} {}", gate.name, gate.gate.schema_name());
        }
        if schema.state_machines.is_empty() {
            outln!("  state machines: none declared");
        }
        for machine in &schema.state_machines {
            outln!(
                "  state machine `{}` ({} domain): {} states, {} transitions, {} mutation classes, proofs from {}",
                machine.name,
                machine.domain,
                machine.states,
                machine.transitions.len(),
                machine.mutation_classes,
                machine.proof_state
            );
            for transition in &machine.transitions {
                outln!(
                    "    {:<32} {:>22} -> {:<22} rerun budget {}",
                    transition.phase,
                    transition.from,
                    transition.to,
                    transition.rerun_budget
                );
            }
            if !machine.finalization.is_empty() {
                outln!("    then: {}", machine.finalization.join(" -> "));
            }
        }
    }
    outln!("targets ({}): valid", report.targets.len());
    for target in &report.targets {
        outln!(
            "  {:<8} {:<28} {} registers ({} general, {} vector/float), {} spellings, reserved [{}], plans `{}`  ({})",
            target.name,
            target.triple,
            target.registers,
            target.general_registers,
            target.vector_registers,
            target.spellings,
            target.reserved.join(", "),
            target.schema_digest,
            target.file
        );
        if let Some(elf) = &target.elf {
            let tls = match elf.tcb_size {
                Some(tcb_size) => format!("{} (a {tcb_size}-byte TCB at the thread pointer)", elf.tls_variant),
                None => format!("{} (the block ends at the thread pointer)", elf.tls_variant),
            };
            outln!(
                "           ELF machine {}, {}-bit, pages {} (max {}), TLS variant {tls}, emulations (ld -m) {}",
                elf.machine,
                elf.class,
                elf.common_page_size,
                elf.max_page_size,
                elf.emulations.join(", ")
            );
        }
    }
    // Said when the ABI was checked against another schema than the one reported on above.
    let derived_from = report
        .plugin_abi_phase_schema
        .as_deref()
        .zip(report.phase_schema.as_ref())
        .filter(|(abi_schema, schema)| !same_file(Path::new(abi_schema), Path::new(&schema.file)))
        .map_or_else(String::new, |(abi_schema, _)| format!(", derived from {abi_schema}"));
    outln!("plugin ABI ({} file(s)){derived_from}: valid", report.plugin_abi.len());
    for part in &report.plugin_abi {
        let listed: Vec<String> = [
            ("interfaces", &part.interfaces),
            ("enumerations", &part.enums),
            ("flag sets", &part.flags),
        ]
        .into_iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(kind, names)| format!("{kind} {}", names.join(", ")))
        .collect();
        outln!("  {}: {}", part.file, listed.join("; "));
    }
}
