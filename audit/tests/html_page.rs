//! The HTML page of real audits, as a browser shows it: each page is written under `CARGO_TARGET_TMPDIR`, loaded in
//! headless Chromium, and checked through the DOM after the page's script ran and through a screenshot.
//!
//! Chromium is required (scripts/test.sh installs the Debian package `chromium`): without it these tests fail.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::fs;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use neverc_audit::AuditReport;
use neverc_audit::baseline::{BaselineDiff, ChangeClass, diff_schemas};
use neverc_audit::dot::{CAPABILITY_COLOURS, SEALED_COLOUR};
use neverc_audit::html::audit_html;
use neverc_audit::manifest::{ManifestAudit, RequestVerdict};
use neverc_audit::sealing::audit_sealing;
use neverc_schema::{PhaseSchemaDocument, parse_phase_schema_for_audit};
use neverc_test_support::{read_text, repo, scratch};

const WIDTH: u32 = 1400;
const HEIGHT: u32 = 2400;
const CHROMIUM: &str = "chromium";
/// Longest a single Chromium run may take before the test gives up on it.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(180);
/// Per-channel tolerance when looking for a colour in the screenshot (antialiasing, colour management).
const TOLERANCE: u8 = 4;

/// Reads a schema relative to the workspace root and parses it for an audit.
fn load(relative: &str) -> PhaseSchemaDocument {
    let text = read_text(&repo().join(relative));
    let (document, _) = parse_phase_schema_for_audit(relative, &text)
        .unwrap_or_else(|diagnostics| panic!("{relative} does not parse: {diagnostics:?}"));
    document
}

fn report_of(relative: &str, baseline: Option<BaselineDiff>) -> (PhaseSchemaDocument, AuditReport) {
    let text = fs::read_to_string(repo().join(relative)).unwrap();
    let (document, diagnostics) = parse_phase_schema_for_audit(relative, &text).unwrap();
    let report = AuditReport {
        sealing: audit_sealing(relative, &document, &diagnostics),
        baseline,
        abi_baseline: None,
        manifest: None,
    };
    (document, report)
}

/// Runs Chromium headless with `arguments` and a profile of its own; fails the test if Chromium is missing, fails,
/// or hangs.
fn chromium(dir: &Path, profile: &str, arguments: &[String]) -> Output {
    let profile = dir.join(profile);
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(arguments)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run `{CHROMIUM}` ({error}); install it, e.g. `apt-get install chromium` (scripts/test.sh does)"
            )
        });
    // Read the pipes on threads so that a chatty Chromium cannot block on a full pipe while we wait.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let stdout = thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut bytes);
        bytes
    });
    let stderr = thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stderr, &mut bytes);
        bytes
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > CHROMIUM_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`{CHROMIUM} {}` did not finish within {CHROMIUM_TIMEOUT:?}",
                arguments.join(" ")
            );
        }
        thread::sleep(Duration::from_millis(50));
    };
    let output = Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    assert!(
        output.status.success(),
        "`{CHROMIUM} {}` failed with {}:\n{}",
        arguments.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// What the browser made of one page.
struct Rendered {
    dom: String,
    png: PathBuf,
}

/// Writes the page, dumps its DOM after load and takes a screenshot of the window.
fn render(name: &str, page: &str) -> Rendered {
    let dir = scratch!("html_page/{name}");
    let html = dir.join("audit.html");
    fs::write(&html, page).unwrap();
    let url = format!("file://{}", html.display());
    let png = dir.join("screenshot.png");
    chromium(
        &dir,
        "profile-screenshot",
        &[
            "--hide-scrollbars".to_string(),
            format!("--window-size={WIDTH},{HEIGHT}"),
            format!("--screenshot={}", png.display()),
            url.clone(),
        ],
    );
    assert!(png.is_file(), "Chromium wrote no screenshot at {}", png.display());
    let output = chromium(&dir, "profile-dom", &["--dump-dom".to_string(), url]);
    let dom = String::from_utf8(output.stdout).unwrap();
    fs::write(dir.join("dom.html"), &dom).unwrap();
    println!("page: {}", html.display());
    println!("screenshot: {}", png.display());
    Rendered { dom, png }
}

/// The page's script ran without errors and counted every phase row; every phase is shown.
fn check_dom(dom: &str, document: &PhaseSchemaDocument) {
    assert!(
        dom.contains("data-errors=\"0\""),
        "the page reported script errors:\n{}",
        body_tag(dom)
    );
    let shown = format!("data-phases-shown=\"{}\"", document.phases.len());
    assert!(
        dom.contains(&shown),
        "expected {shown} on <body>, got {}",
        body_tag(dom)
    );
    for phase in &document.phases {
        assert!(
            dom.contains(&format!("data-phase=\"{}\"", phase.name)),
            "no row for phase {}",
            phase.name
        );
    }
}

fn body_tag(dom: &str) -> &str {
    let start = dom.find("<body").unwrap_or(0);
    let end = dom[start..].find('>').map_or(dom.len(), |end| start + end + 1);
    &dom[start..end]
}

/// `#rrggbb` as bytes.
fn rgb(hex: &str) -> [u8; 3] {
    let hex = hex.strip_prefix('#').unwrap();
    assert_eq!(hex.len(), 6, "colour {hex}");
    let channel = |at: usize| u8::from_str_radix(&hex[at..at + 2], 16).unwrap();
    [channel(0), channel(2), channel(4)]
}

/// Decodes the screenshot and checks its size, that it is not blank, and that every policy colour shows on
/// at least `minimum(name)` pixels.
fn check_screenshot(path: &Path, minimum: impl Fn(&str) -> usize) {
    let bytes = fs::read(path).unwrap();
    let mut decoder = png::Decoder::new(Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buffer).unwrap();
    assert_eq!(
        (info.width, info.height),
        (WIDTH, HEIGHT),
        "screenshot size of {}",
        path.display()
    );
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected colour type {other:?} in {}", path.display()),
    };
    let pixels: Vec<[u8; 3]> = (0..info.height as usize)
        .flat_map(|row| {
            let line = &buffer[row * info.line_size..row * info.line_size + info.width as usize * channels];
            line.chunks_exact(channels)
                .map(|pixel| [pixel[0], pixel[1], pixel[2]])
                .collect::<Vec<_>>()
        })
        .collect();
    let distinct: HashSet<[u8; 3]> = pixels.iter().copied().collect();
    assert!(
        distinct.len() >= 64,
        "{} looks blank: only {} distinct colours",
        path.display(),
        distinct.len()
    );
    let white = pixels.iter().filter(|pixel| **pixel == [255, 255, 255]).count();
    assert!(white < pixels.len() * 9 / 10, "{} is mostly white", path.display());
    let expected = CAPABILITY_COLOURS
        .iter()
        .copied()
        .chain([("SEALED_HOST_GATE", SEALED_COLOUR)]);
    for (name, hex) in expected {
        let colour = rgb(hex);
        let near = |pixel: &&[u8; 3]| {
            pixel
                .iter()
                .zip(colour)
                .all(|(have, want)| have.abs_diff(want) <= TOLERANCE)
        };
        let count = pixels.iter().filter(near).count();
        assert!(
            count >= minimum(name),
            "{}: only {count} pixels of {name} ({hex}) within ±{TOLERANCE} per channel",
            path.display()
        );
    }
}

#[test]
fn our_schema_page_shows_matrix_and_state_machine() {
    let (document, report) = report_of("PhaseSchema.json", None);
    assert!(
        !report.sealing.state_machines.is_empty(),
        "our schema declares the link state machine"
    );
    let page = audit_html(&report);
    let rendered = render("our-schema", &page);
    check_dom(&rendered.dom, &document);
    assert!(rendered.dom.contains("<svg"), "no state machine picture");
    for machine in &report.sealing.state_machines {
        for state in &machine.states {
            assert!(rendered.dom.contains(state.as_str()), "state {state} not drawn");
        }
    }
    for domain in &report.sealing.domains {
        for gate in &domain.sealed_gates {
            assert!(
                rendered.dom.contains(&gate.phase),
                "sealed gate {} not listed",
                gate.phase
            );
        }
    }
    // All 32 rows fit the window: each coloured matrix cell is far larger than the legend's swatch, so a page
    // whose matrix did not render (only the legend) fails this.
    check_screenshot(&rendered.png, |name| {
        let cells = report
            .sealing
            .phases()
            .filter(|phase| match name {
                "OBSERVABLE" => phase.observe,
                "INTERCEPTABLE" => phase.intercept,
                "REPLACEABLE" => phase.replace,
                "SKIPPABLE_WITH_PROOF" => phase.skip_with_proof,
                _ => phase.sealed,
            })
            .count();
        cells * 1000
    });
}

#[test]
fn neverc_schema_page_shows_breaking_changes_of_reversed_baseline() {
    // Reversed on purpose: from the newest schema back to 7adbf41, so that stable phases lose their promises.
    let newest = load("tests/fixtures/neverc/PhaseSchema.json");
    let older = load("tests/fixtures/neverc/PhaseSchema.7adbf41.json");
    let diff = diff_schemas(
        "tests/fixtures/neverc/PhaseSchema.json",
        &newest,
        "tests/fixtures/neverc/PhaseSchema.7adbf41.json",
        &older,
    );
    let breaking = diff.count(ChangeClass::Breaking);
    let downgrades = diff
        .changes
        .iter()
        .filter(|change| change.rule == "stability-downgrade")
        .count();
    assert_eq!(
        downgrades, 34,
        "stability downgrades from the newest schema back to 7adbf41"
    );
    let (document, report) = report_of("tests/fixtures/neverc/PhaseSchema.json", Some(diff));
    assert!(
        report.sealing.state_machines.is_empty(),
        "NeverC's schema declares no state machine"
    );
    assert!(report.fails(), "a breaking baseline fails the audit");
    let page = audit_html(&report);
    let rendered = render("neverc-reversed-baseline", &page);
    check_dom(&rendered.dom, &document);
    assert!(
        rendered.dom.contains("declares no state machine"),
        "the page must say there is no state machine"
    );
    let rows = rendered.dom.matches("data-class=\"breaking\"").count();
    assert_eq!(rows, breaking, "one highlighted row per breaking change");
    assert!(
        rendered.dom.contains(&format!("{breaking} breaking")),
        "count of breaking changes shown"
    );
    assert!(rendered.dom.contains("stability-downgrade"));
    // Only part of the 130-row matrix fits the window; the colours must still show.
    check_screenshot(&rendered.png, |_| 200);
}

#[test]
fn page_is_deterministic_and_escapes_text() {
    let text = fs::read_to_string(repo().join("PhaseSchema.json")).unwrap();
    let source = "<script>alert(\"x\")</script> & 'co'.json";
    let (document, diagnostics) = parse_phase_schema_for_audit(source, &text).unwrap();
    let manifest = ManifestAudit {
        file: "plugin.toml".to_string(),
        plugin: "ordering & <more>".to_string(),
        requests: vec![
            RequestVerdict {
                request: "observe neverc.link.layout AFTER".to_string(),
                phase: "neverc.link.layout".to_string(),
                allowed: true,
                rule: None,
                code: None,
                message: None,
            },
            RequestVerdict {
                request: "intercept neverc.link.commit".to_string(),
                phase: "neverc.link.commit".to_string(),
                allowed: false,
                rule: Some("sealed-gate"),
                code: Some("POLICY_VIOLATION"),
                message: Some("phase `neverc.link.commit` is not <INTERCEPTABLE>".to_string()),
            },
        ],
    };
    let report = AuditReport {
        sealing: audit_sealing(source, &document, &diagnostics),
        baseline: None,
        abi_baseline: None,
        manifest: Some(manifest),
    };
    let page = audit_html(&report);
    assert_eq!(page, audit_html(&report), "the same report gives the same page");
    assert_eq!(page.matches("class=\"request allowed\"").count(), 1);
    assert_eq!(page.matches("class=\"request refused\"").count(), 1);
    assert!(page.contains("POLICY_VIOLATION"));
    assert!(page.contains("phase <code>neverc.link.commit</code> is not &lt;INTERCEPTABLE&gt;"));
    assert!(page.contains("ordering &amp; &lt;more&gt;"));
    assert!(!page.contains(source), "the source name must be escaped");
    assert!(page.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39;.json"));
    assert_eq!(page.matches("<script>").count(), 1, "only the page's own script");
    let namespaces = page.matches("http://www.w3.org/2000/svg").count();
    assert_eq!(page.matches("http://").count(), namespaces, "the page loads nothing");
    assert!(!page.contains("https://"), "the page loads nothing");
}
