//! The audit as Graphviz DOT: one digraph per declared state machine, then one with the phase/policy matrix.
//! `dot -Tsvg` renders every graph of the file.

use std::fmt::Write;

use crate::AuditReport;
use crate::sealing::{MachineView, SealingAudit};

/// Colours shared with the HTML page: one per capability, red for sealed gates.
pub const SEALED_COLOUR: &str = "#d62728";
pub const CAPABILITY_COLOURS: [(&str, &str); 4] = [
    ("OBSERVABLE", "#9ecae1"),
    ("INTERCEPTABLE", "#74c476"),
    ("REPLACEABLE", "#fd8d3c"),
    ("SKIPPABLE_WITH_PROOF", "#9e9ac8"),
];

/// Renders every state machine and the matrix.
pub fn audit_dot(report: &AuditReport) -> String {
    let mut out = String::new();
    for machine in &report.sealing.state_machines {
        machine_dot(machine, &mut out);
    }
    matrix_dot(&report.sealing, &mut out);
    out
}

/// Quotes a DOT identifier or label.
fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Escapes text inside an HTML-like label.
fn html_escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn machine_dot(machine: &MachineView, out: &mut String) {
    let _ = writeln!(out, "digraph {} {{", quoted(&format!("{}_state_machine", machine.name)));
    let _ = writeln!(
        out,
        "  label={};",
        quoted(&format!("state machine `{}` (domain {})", machine.name, machine.domain))
    );
    let _ = writeln!(
        out,
        "  labelloc=t; rankdir=TB; node [shape=box, fontname=\"Helvetica\"];"
    );
    for state in &machine.states {
        let style = if *state == machine.proof_state {
            ", peripheries=2, xlabel=\"proofs from here\""
        } else {
            ""
        };
        let _ = writeln!(out, "  {} [shape=ellipse{style}];", quoted(state));
    }
    for transition in &machine.transitions {
        let short = transition.phase.rsplit('.').next().unwrap_or(&transition.phase);
        let colour = if transition.sealed { SEALED_COLOUR } else { "black" };
        let style = if transition.skippable { ", style=dashed" } else { "" };
        let _ = writeln!(
            out,
            "  {} -> {} [label={}, color={}{style}];",
            quoted(&transition.from),
            quoted(&transition.to),
            quoted(&format!("{short} (budget {})", transition.rerun_budget)),
            quoted(colour)
        );
    }
    let mut previous = machine.states.last().cloned();
    for step in &machine.finalization {
        let (colour, shape) = if step.sealed {
            (SEALED_COLOUR, "octagon")
        } else {
            ("black", "box")
        };
        let _ = writeln!(
            out,
            "  {} [shape={shape}, color={}, penwidth={}];",
            quoted(&step.phase),
            quoted(colour),
            if step.sealed { 3 } else { 1 }
        );
        if let Some(previous) = previous {
            let _ = writeln!(out, "  {} -> {};", quoted(&previous), quoted(&step.phase));
        }
        previous = Some(step.phase.clone());
    }
    for class in &machine.mutation_classes {
        if let Some(last) = machine.states.last() {
            let _ = writeln!(
                out,
                "  {} -> {} [style=dotted, color=\"gray40\", constraint=false, label={}];",
                quoted(last),
                quoted(&class.earliest_invalidated),
                quoted(&format!("{} invalidates", class.name))
            );
        }
    }
    out.push_str("}\n");
}

fn matrix_dot(audit: &SealingAudit, out: &mut String) {
    let _ = writeln!(out, "digraph \"phase_policy_matrix\" {{");
    let _ = writeln!(out, "  node [shape=plaintext, fontname=\"Helvetica\"];");
    let mut rows = String::new();
    rows.push_str("<tr><td><b>phase</b></td>");
    for (name, _) in CAPABILITY_COLOURS {
        let _ = write!(rows, "<td><b>{name}</b></td>");
    }
    rows.push_str("<td><b>SEALED_HOST_GATE</b></td></tr>");
    for phase in audit.phases() {
        let _ = write!(rows, "<tr><td align=\"left\">{}</td>", html_escaped(&phase.name));
        for ((_, colour), has) in
            CAPABILITY_COLOURS
                .iter()
                .zip([phase.observe, phase.intercept, phase.replace, phase.skip_with_proof])
        {
            if has {
                let _ = write!(rows, "<td bgcolor=\"{colour}\">yes</td>");
            } else {
                rows.push_str("<td>-</td>");
            }
        }
        if phase.sealed {
            let _ = write!(
                rows,
                "<td bgcolor=\"{SEALED_COLOUR}\"><font color=\"white\">sealed</font></td>"
            );
        } else {
            rows.push_str("<td>-</td>");
        }
        rows.push_str("</tr>");
    }
    let _ = writeln!(
        out,
        "  matrix [label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\">{rows}</table>>];"
    );
    out.push_str("}\n");
}
