//! Plugin manifests (TOML or JSON): parse, then check every request against the bundled tables and render the
//! verdicts. Must never panic; a parse error's line and column lie inside the input.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match neverc_audit::manifest::parse_manifest("fuzz.toml", text) {
        Ok(manifest) => {
            let audit = neverc_audit::manifest::audit_manifest("fuzz.toml", &manifest, &neverc_tables::BUNDLED_PHASES);
            let requested = manifest.providers.len()
                + manifest
                    .phases
                    .iter()
                    .map(|phase| {
                        let asked = phase.observe.len()
                            + usize::from(phase.intercept)
                            + usize::from(phase.replace)
                            + usize::from(phase.skip_with_proof);
                        // An entry that asks nothing of an unknown phase is refused once.
                        let unknown = neverc_tables::BUNDLED_PHASES.phase_by_name(&phase.name).is_none();
                        if asked == 0 && unknown { 1 } else { asked }
                    })
                    .sum::<usize>();
            assert_eq!(audit.requests.len(), requested, "every request gets one verdict");
            for verdict in &audit.requests {
                assert_eq!(verdict.allowed, verdict.message.is_none());
            }
        }
        Err(error) => {
            let lines = text.split('\n').count();
            assert!(
                error.line <= lines,
                "line {} past the input's {lines} lines: {error}",
                error.line
            );
        }
    }
});
