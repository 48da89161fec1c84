//! Phase schemas through the audit: parse for audit, audit sealing and smells, diff against the bundled
//! schema both ways, and render text, DOT and HTML. Must never panic; diagnostics lie inside the input.

#![no_main]

use libfuzzer_sys::fuzz_target;

mod check;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (document, semantic) = match neverc_schema::parse_phase_schema_for_audit("fuzz.json", text) {
        Ok(parsed) => parsed,
        Err(diagnostics) => {
            check::check_diagnostics(text, &diagnostics);
            return;
        }
    };
    check::check_diagnostics(text, &semantic);
    let sealing = neverc_audit::sealing::audit_sealing("fuzz.json", &document, &semantic);
    assert_eq!(sealing.is_valid(), semantic.is_empty());
    let bundled = include_str!("../../PhaseSchema.json");
    let Ok((ours, _)) = neverc_schema::parse_phase_schema_for_audit("PhaseSchema.json", bundled) else {
        return;
    };
    let forward = neverc_audit::baseline::diff_schemas("ours", &ours, "fuzz", &document);
    let backward = neverc_audit::baseline::diff_schemas("fuzz", &document, "ours", &ours);
    let report = neverc_audit::AuditReport {
        sealing,
        baseline: Some(forward),
        abi_baseline: None,
        manifest: None,
    };
    let _ = neverc_audit::text::audit_text(&report);
    let _ = neverc_audit::dot::audit_dot(&report);
    let page = neverc_audit::html::audit_html(&report);
    assert_eq!(
        page.matches("<script").count(),
        1,
        "fuzzed text must not open a script element"
    );
    drop(backward);
});
