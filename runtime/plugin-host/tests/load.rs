#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Plugins written in C against the generated headers (`include/neverc/Plugin/`), built by gcc, loaded
//! through `neverc_plugin_entry`: the handshake, the caller-buffer descriptor, interface lookup, the phase
//! registrar's answers (the runtime's policy check), and hostile plugins refused with NeverC's statuses.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use neverc_plugin_host::{PluginArgument, PluginError, load, register_dry_run};
use neverc_tables::BUNDLED_PHASES;
use neverc_tables::policy::Request;
use neverc_tables::status::StatusCode;
use neverc_test_support::build_c_plugin;

/// Builds `fixtures/SOURCE` as a shared library with `defines`, once per name.
fn plugin(source: &str, defines: &[&str]) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| neverc_test_support::scratch!("plugin-host-fixtures"));
    let name = format!(
        "{}{}.so",
        source.trim_end_matches(".c"),
        defines.iter().map(|define| format!("-{define}")).collect::<String>()
    );
    let output = dir.join(&name);
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(source);
    build_c_plugin(&source, &output, defines);
    output
}

fn id_of(phase: &str) -> String {
    let record = BUNDLED_PHASES.phase_by_name(phase).unwrap();
    format!("{:#x}:{:#x}", record.id.high, record.id.low)
}

fn argument(name: &str, value: &str) -> PluginArgument {
    PluginArgument {
        plugin: "org.example.asker".to_string(),
        name: name.to_string(),
        value: Some(value.to_string()),
    }
}

fn reports(plugin: &neverc_plugin_host::LoadedPlugin) -> Vec<String> {
    plugin.reports().into_iter().map(|(_, text)| text).collect()
}

#[test]
fn a_plugin_is_loaded_asks_for_phases_and_gets_the_runtimes_answers() {
    let path = plugin("asker.c", &[]);
    let (lto, commit) = (id_of("neverc.link.lto_resolve"), id_of("neverc.link.commit"));
    let arguments = [
        argument("observe-before", &lto),
        argument("intercept", &lto),
        argument("replace", &lto),
        argument("skip", &lto),
        // The commit gate is sealed: only observing it is allowed.
        argument("intercept", &commit),
        argument("observe-after", &commit),
        argument("observe-bits", &format!("3@{commit}")),
        argument("intercept", "0x1:0x2"),
        PluginArgument {
            plugin: "org.example.asker".to_string(),
            name: "forge".to_string(),
            value: None,
        },
        // For another plugin: not read by this one.
        PluginArgument {
            plugin: "org.example.other".to_string(),
            name: "intercept".to_string(),
            value: Some(commit.clone()),
        },
    ];
    let loaded = load(&path, &arguments).unwrap();
    assert_eq!(
        (loaded.id.as_str(), loaded.version.as_str()),
        ("org.example.asker", "1.0")
    );
    let asked = register_dry_run(&loaded, &BUNDLED_PHASES).unwrap();
    let answers: Vec<(String, Option<Request>, Option<StatusCode>)> = asked
        .iter()
        .map(|asked| {
            (
                asked.phase.clone(),
                asked.request,
                asked.answer.clone().err().map(|status| status.code),
            )
        })
        .collect();
    use neverc_tables::policy::ObserverPoint::{After, Before};
    let lto_name = "neverc.link.lto_resolve".to_string();
    let commit_name = "neverc.link.commit".to_string();
    assert_eq!(
        answers,
        [
            (lto_name.clone(), Some(Request::Observe(Before)), None),
            (lto_name.clone(), Some(Request::Intercept), None),
            (lto_name.clone(), Some(Request::Replace), None),
            (lto_name, Some(Request::SkipWithProof), None),
            (
                commit_name.clone(),
                Some(Request::Intercept),
                Some(StatusCode::PolicyViolation)
            ),
            // The sealed commit gate offers BEFORE and AFTER_COMMIT, not AFTER.
            (
                commit_name.clone(),
                Some(Request::Observe(After)),
                Some(StatusCode::PolicyViolation)
            ),
            // Two points at once are not one observer point.
            (commit_name, None, Some(StatusCode::InvalidArgument)),
            (
                "0x0000000000000001:0x0000000000000002".to_string(),
                Some(Request::Intercept),
                Some(StatusCode::InvalidArgument)
            ),
        ]
    );
    // Each answer is what the plugin saw (its reports), and the forged registrar context found nothing.
    let seen = reports(&loaded);
    let code = |code: StatusCode| code.raw().to_string();
    assert!(
        seen.contains(&format!("intercept {commit} -> {}", code(StatusCode::PolicyViolation))),
        "{seen:?}"
    );
    assert!(seen.contains(&format!("observe-before {lto} -> 0")), "{seen:?}");
    assert!(
        seen.contains(&format!("forge  -> {}", code(StatusCode::InvalidArgument))),
        "{seen:?}"
    );
    // Interface lookup: the host table itself, an unknown interface, a major the host does not speak.
    assert!(
        seen.contains(&"query host -> 0 (same table: 1)".to_string()),
        "{seen:?}"
    );
    assert!(
        seen.contains(&format!("query unknown -> {}", code(StatusCode::MissingInterface))),
        "{seen:?}"
    );
    assert!(
        seen.contains(&format!("query host 2.0 -> {}", code(StatusCode::VersionMismatch))),
        "{seen:?}"
    );
}

#[test]
fn a_larger_descriptor_is_asked_for_and_given_room() {
    let loaded = load(&plugin("asker.c", &["MODE_BIG_DESCRIPTOR"]), &[]).unwrap();
    let seen = reports(&loaded);
    // The first call asked for room; the second, with a buffer that large, filled the descriptor.
    assert!(seen.contains(&"entry call 2".to_string()), "{seen:?}");
    assert_eq!(loaded.id, "org.example.asker");
}

#[test]
fn hostile_plugins_are_refused_with_neverc_statuses() {
    let cases: [(&[&str], StatusCode, &str); 5] = [
        (
            &["MODE_SMALL_DESCRIPTOR"],
            StatusCode::AbiMismatch,
            "its descriptor is 16 bytes",
        ),
        (&["MODE_MAJOR_2"], StatusCode::VersionMismatch, "plugin ABI 2.0"),
        (&["MODE_BAD_ID"], StatusCode::InvalidDescriptor, "PluginID is not UTF-8"),
        (
            &["MODE_NO_REGISTER"],
            StatusCode::InvalidDescriptor,
            "has no Register callback",
        ),
        (
            &["MODE_ENTRY_FAILS"],
            StatusCode::PluginFailure,
            "failed with PLUGIN_FAILURE",
        ),
    ];
    for (defines, code, text) in cases {
        let error = load(&plugin("asker.c", defines), &[]).err().unwrap();
        assert_eq!(error.code(), code, "{defines:?}: {error}");
        assert!(error.to_string().contains(text), "{defines:?}: {error}");
    }
    let error = load(&plugin("no_entry.c", &[]), &[]).err().unwrap();
    assert!(matches!(error, PluginError::NoEntry { .. }), "{error}");
    assert!(
        error.to_string().contains("exports no `neverc_plugin_entry`"),
        "{error}"
    );
    let error = load(Path::new("/nonexistent/plugin.so"), &[]).err().unwrap();
    assert!(matches!(error, PluginError::Library { .. }), "{error}");

    let loaded = load(&plugin("asker.c", &["MODE_REGISTER_FAILS"]), &[]).unwrap();
    let error = register_dry_run(&loaded, &BUNDLED_PHASES).err().unwrap();
    assert_eq!(error.code(), StatusCode::PluginFailure);
    assert!(error.to_string().contains("org.example.asker"), "{error}");
}
