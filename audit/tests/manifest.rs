#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Plugin manifests and the runtime agree: every request a manifest can make is accepted or refused exactly as
//! the link runtime accepts or refuses the same registration, with the same status and message.

use neverc_audit::manifest::{audit_manifest, parse_manifest};
use neverc_link::plugin::{LinkPlugin, ObserverPoint, ProviderKind, Registrar, Registry, Request};
use neverc_link::status::Status;
use neverc_tables::PhaseTables;

fn tables() -> &'static PhaseTables {
    &neverc_tables::BUNDLED_PHASES
}

/// A Rust plugin that registers one request the way a plugin author would write it.
struct OneRequest {
    phase: String,
    request: Request,
}

impl LinkPlugin for OneRequest {
    fn name(&self) -> &str {
        "one-request"
    }

    fn register(&mut self, registrar: &mut Registrar<'_>) -> Result<(), Status> {
        let phase = self.phase.as_str();
        match self.request {
            Request::Observe(point) => registrar.observe(phase, point, Box::new(|_| Ok(()))),
            Request::Intercept => registrar.intercept(phase, Box::new(|frame, next| next(frame))),
            Request::Replace => registrar.replace(phase, Box::new(|_| Ok(()))),
            Request::SkipWithProof => registrar.skip_with_proof(phase, Box::new(|_, _| None)),
        }
    }
}

fn runtime_verdict(phase: &str, request: Request) -> Result<(), Status> {
    Registry::default().register(
        tables(),
        &mut OneRequest {
            phase: phase.to_string(),
            request,
        },
    )
}

#[test]
fn intercepting_the_commit_gate_is_refused_by_the_manifest_audit_and_the_runtime_with_the_same_message() {
    let manifest = parse_manifest(
        "commit-hook.toml",
        r#"
plugin = "commit-hook"

[[phases]]
name = "neverc.link.commit"
observe = ["BEFORE", "AFTER_COMMIT"]
intercept = true
"#,
    )
    .unwrap();
    let audit = audit_manifest("commit-hook.toml", &manifest, tables());
    let refused: Vec<_> = audit.violations().collect();
    assert_eq!(refused.len(), 1, "{:#?}", audit.requests);
    assert_eq!(refused[0].request, "intercept neverc.link.commit");
    assert_eq!(refused[0].rule, Some("sealed-gate"));
    let status = runtime_verdict("neverc.link.commit", Request::Intercept).unwrap_err();
    assert_eq!(refused[0].code, Some(status.code.name()));
    assert_eq!(refused[0].message.as_deref(), Some(status.message.as_str()));
    assert_eq!(
        status.message,
        "phase `neverc.link.commit` is not INTERCEPTABLE (its declared policy is OBSERVABLE|SEALED_HOST_GATE)"
    );
    // The observations it also asks for are allowed by both.
    assert!(runtime_verdict("neverc.link.commit", Request::Observe(ObserverPoint::Before)).is_ok());
    assert!(runtime_verdict("neverc.link.commit", Request::Observe(ObserverPoint::AfterCommit)).is_ok());
}

#[test]
fn every_request_on_every_phase_gets_the_same_verdict_from_a_manifest_and_from_the_runtime() {
    let points = [ObserverPoint::Before, ObserverPoint::After, ObserverPoint::AfterCommit];
    let mut compared = 0;
    for phase in tables()
        .phases
        .iter()
        .map(|phase| phase.name)
        .chain(["neverc.link.no_such_phase"])
    {
        let mut requests: Vec<(String, Request)> = points
            .iter()
            .map(|point| {
                let name = match point {
                    ObserverPoint::Before => "BEFORE",
                    ObserverPoint::After => "AFTER",
                    ObserverPoint::AfterCommit => "AFTER_COMMIT",
                };
                (format!("observe = [\"{name}\"]"), Request::Observe(*point))
            })
            .collect();
        requests.push(("intercept = true".into(), Request::Intercept));
        requests.push(("replace = true".into(), Request::Replace));
        requests.push(("skip_with_proof = true".into(), Request::SkipWithProof));
        for (line, request) in requests {
            let text = format!("plugin = \"p\"\n[[phases]]\nname = \"{phase}\"\n{line}\n");
            let audit = audit_manifest("m.toml", &parse_manifest("m.toml", &text).unwrap(), tables());
            assert_eq!(audit.requests.len(), 1);
            let verdict = &audit.requests[0];
            match runtime_verdict(phase, request) {
                Ok(()) => assert!(verdict.allowed, "{phase} {request:?}: {verdict:?}"),
                Err(status) => {
                    assert!(!verdict.allowed, "{phase} {request:?}");
                    assert_eq!(verdict.code, Some(status.code.name()));
                    assert_eq!(verdict.message.as_deref(), Some(status.message.as_str()));
                }
            }
            compared += 1;
        }
    }
    assert_eq!(compared, (tables().phases.len() + 1) * 6);
}

#[test]
fn providers_are_checked_against_the_phases_they_take_over() {
    let manifest = parse_manifest(
        "providers.json",
        r#"{"plugin": "providers", "providers": ["linker", "object-merge", "image-verifier", "lto", "debugger"]}"#,
    )
    .unwrap();
    let audit = audit_manifest("providers.json", &manifest, tables());
    let verdicts: Vec<_> = audit
        .requests
        .iter()
        .map(|verdict| (verdict.request.as_str(), verdict.allowed))
        .collect();
    assert_eq!(
        verdicts,
        vec![
            ("provider linker", true),
            ("provider object-merge", true),
            ("provider image-verifier", true),
            ("provider lto", true),
            ("provider debugger", false),
        ]
    );
    for kind in ProviderKind::ALL {
        let (phase, request) = kind.request();
        assert!(runtime_verdict(phase, request).is_ok(), "{kind:?}");
    }
    assert!(
        audit.requests[4]
            .message
            .as_ref()
            .unwrap()
            .contains("unknown provider `debugger`")
    );
}

#[test]
fn manifests_with_unknown_keys_or_bad_syntax_are_errors_naming_the_place() {
    let error = parse_manifest(
        "m.toml",
        "plugin = \"p\"\n[[phases]]\nname = \"neverc.link.gc\"\nintercepts = true\n",
    )
    .unwrap_err();
    assert_eq!((error.file.as_str(), error.line), ("m.toml", 4));
    assert!(error.message.contains("intercepts"), "{error}");
    let error = parse_manifest("m.json", "{\"plugin\": \"p\",\n \"phases\": [}").unwrap_err();
    assert_eq!(error.line, 2);
}
