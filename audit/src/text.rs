//! The audit as plain text, for a terminal or a review comment.

use std::fmt::Write;

use crate::AuditReport;
use crate::baseline::{BaselineDiff, ChangeClass};
use crate::manifest::ManifestAudit;
use crate::sealing::{PhaseCapabilities, SealingAudit};
use crate::smells::SMELL_RULES;

/// Renders the whole report.
pub fn audit_text(report: &AuditReport) -> String {
    let mut out = String::new();
    sealing_text(&report.sealing, &mut out);
    if let Some(diff) = &report.baseline {
        out.push('\n');
        baseline_text("Baseline diff", diff, &mut out);
    }
    if let Some(diff) = &report.abi_baseline {
        out.push('\n');
        baseline_text("ABI baseline diff", diff, &mut out);
    }
    if let Some(manifest) = &report.manifest {
        out.push('\n');
        manifest_text(manifest, &mut out);
    }
    out
}

/// A phase's capabilities as a fixed-width cell: `O I R S` letters or dots, `G` for a sealed gate.
pub fn capability_letters(phase: &PhaseCapabilities) -> String {
    [
        (phase.observe, 'O'),
        (phase.intercept, 'I'),
        (phase.replace, 'R'),
        (phase.skip_with_proof, 'S'),
        (phase.sealed, 'G'),
    ]
    .iter()
    .map(|(has, letter)| if *has { *letter } else { '.' })
    .collect()
}

fn sealing_text(audit: &SealingAudit, out: &mut String) {
    let sealed: usize = audit.domains.iter().map(|domain| domain.sealed_gates.len()).sum();
    let _ = writeln!(
        out,
        "Sealing audit of {} (schema_version {}): {} phases in {} domains, {} sealed gates",
        audit.source,
        audit.schema_version,
        audit.phase_count,
        audit.domains.len(),
        sealed
    );
    for domain in &audit.domains {
        let _ = writeln!(out, "\nDomain `{}` ({} phases)", domain.domain, domain.phases.len());
        if domain.sealed_gates.is_empty() {
            let _ = writeln!(out, "  sealed gates: none");
        }
        for gate in &domain.sealed_gates {
            let _ = writeln!(
                out,
                "  sealed gate {} ({}): {}",
                gate.phase,
                gate.gate.schema_name(),
                gate.guards
            );
        }
        let _ = writeln!(
            out,
            "  capabilities (O observe, I intercept, R replace, S skip with proof, G sealed gate):"
        );
        let width = domain.phases.iter().map(|phase| phase.name.len()).max().unwrap_or(0);
        for phase in &domain.phases {
            let _ = writeln!(
                out,
                "    {} {:width$}  {:10} {:15} {:12} points {}{}",
                capability_letters(phase),
                phase.name,
                phase.kind.schema_name(),
                phase.gate.schema_name(),
                phase.stability.schema_name(),
                phase.observer_points.join(","),
                if phase.builtin_fallback {
                    ""
                } else {
                    "  (no builtin fallback)"
                },
            );
        }
    }
    for machine in &audit.state_machines {
        let _ = writeln!(
            out,
            "\nState machine `{}` (domain {}, proofs from {})",
            machine.name, machine.domain, machine.proof_state
        );
        for transition in &machine.transitions {
            let _ = writeln!(
                out,
                "  {} → {}  {}  budget {}{}",
                transition.from,
                transition.to,
                transition.phase,
                transition.rerun_budget,
                if transition.skippable { ", skippable" } else { "" }
            );
        }
        for (position, step) in machine.finalization.iter().enumerate() {
            let _ = writeln!(
                out,
                "  finalization {}: {}{}",
                position + 1,
                step.phase,
                if step.sealed { "  [sealed gate]" } else { "" }
            );
        }
        for class in &machine.mutation_classes {
            let _ = writeln!(
                out,
                "  mutation class {} ({}) → state drops below {}",
                class.name,
                class.operations.join(", "),
                class.earliest_invalidated
            );
        }
    }
    let broken = audit.invariants.iter().filter(|invariant| !invariant.holds()).count();
    let _ = writeln!(
        out,
        "\nInvariants of validation: {} of {} hold",
        audit.invariants.len() - broken,
        audit.invariants.len()
    );
    for invariant in &audit.invariants {
        let mark = if invariant.holds() { "ok  " } else { "FAIL" };
        let _ = writeln!(out, "  {mark} {:26} {}", invariant.rule, invariant.statement);
        for violation in &invariant.violations {
            let _ = writeln!(out, "       {violation}");
        }
    }
    let _ = writeln!(out, "\nPolicy smells: {}", audit.smells.len());
    for (rule, description) in SMELL_RULES {
        let found: Vec<_> = audit.smells.iter().filter(|smell| smell.rule == *rule).collect();
        let _ = writeln!(out, "  {rule}: {} — {description}", found.len());
        for smell in found {
            let _ = writeln!(out, "    {}", smell.message);
        }
    }
}

/// One baseline diff (of the schema or of the plugin ABI) under its `title`, breaking changes first.
fn baseline_text(title: &str, diff: &BaselineDiff, out: &mut String) {
    let _ = writeln!(
        out,
        "{title} {} → {}: {} breaking, {} warning(s), {} compatible, {} allowed (experimental)",
        diff.old,
        diff.new,
        diff.count(ChangeClass::Breaking),
        diff.count(ChangeClass::Warning),
        diff.count(ChangeClass::Compatible),
        diff.count(ChangeClass::Allowed)
    );
    for class in [
        ChangeClass::Breaking,
        ChangeClass::Warning,
        ChangeClass::Compatible,
        ChangeClass::Allowed,
    ] {
        for change in diff.changes.iter().filter(|change| change.class == class) {
            let _ = writeln!(out, "  {:10} {:24} {}", class.name(), change.rule, change.message);
        }
    }
    if !diff.is_breaking() {
        let _ = writeln!(out, "  no breaking change");
    }
}

fn manifest_text(manifest: &ManifestAudit, out: &mut String) {
    let refused = manifest.violations().count();
    let _ = writeln!(
        out,
        "Plugin manifest {} (plugin `{}`): {} request(s), {} refused",
        manifest.file,
        manifest.plugin,
        manifest.requests.len(),
        refused
    );
    for verdict in &manifest.requests {
        match (&verdict.code, &verdict.message) {
            (Some(code), Some(message)) => {
                let rule = verdict.rule.unwrap_or("policy");
                let _ = writeln!(out, "  refused  {} [{rule}]: {code}: {message}", verdict.request);
            }
            _ => {
                let _ = writeln!(out, "  allowed  {}", verdict.request);
            }
        }
    }
}
