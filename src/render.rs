//! Rendering problems for people (miette snippets) and machines (JSON), and the one way text reaches the
//! terminal.
//!
//! User data (symbol, file and section names, strings from declarations and modules) may hold control
//! characters: an ESC sequence recolours or retitles a terminal, a CR overwrites what was printed. Every line
//! `errln!` and `outln!` print passes [`print_line`], which escapes the controls a terminal acts on (see
//! [`escape_controls`]); a miette snippet is printed by [`print_snippet`], which escapes every string it is
//! given before miette adds its own colours; JSON is written by [`json_text`], whose strings escape them as
//! JSON does. No other code in this crate writes to stdout or stderr (`audit` writes its rendered report
//! through [`escape_controls`] too).

use std::borrow::Cow;
use std::io::Write as _;
use std::ops::Range;

use miette::{LabeledSpan, MietteDiagnostic, NamedSource, Report, Severity as MietteSeverity};
use neverc_schema::{Diagnostic, LoadError, Severity, SourceText};
use serde::Serialize;

use crate::CommandError;

/// Whether a terminal would act on `c` rather than show it: a C0 control other than the newline and tab that
/// lay text out, DEL, or a C1 control (U+0080 to U+009F; U+009B is CSI).
fn is_escaped(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// Appends `c`, a control, as text: `\r`, `\0`, `\x1b` (C0 and DEL) or `\u{9b}` (C1).
fn push_escaped(out: &mut String, c: char) {
    use std::fmt::Write as _;
    let _ = match c {
        '\r' => out.write_str("\\r"),
        '\0' => out.write_str("\\0"),
        _ if c.is_ascii() => write!(out, "\\x{:02x}", u32::from(c)),
        _ => write!(out, "\\u{{{:x}}}", u32::from(c)),
    };
}

/// Whether `text` may hold a control [`is_escaped`] escapes (tested on bytes: C1 controls are `C2 80` to
/// `C2 9F` in UTF-8).
fn may_hold_controls(text: &str) -> bool {
    text.bytes()
        .any(|byte| (byte < 0x20 && byte != b'\n' && byte != b'\t') || byte == 0x7f || byte == 0xc2)
}

/// `text` with every control a terminal acts on escaped (`\x1b`, `\r`, `\u{9b}`); newlines and tabs, the
/// layout of the text itself, are kept.
pub(crate) fn escape_controls(text: &str) -> Cow<'_, str> {
    if !may_hold_controls(text) || !text.chars().any(is_escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_escaped(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Prints one line (`arguments` and a newline) to `out` with its controls escaped: what `outln!` and `errln!`
/// do. A closed pipe (`| head`) drops the line.
pub(crate) fn print_line(mut out: impl std::io::Write, arguments: std::fmt::Arguments<'_>) {
    let line = match arguments.as_str() {
        Some(text) => Cow::Borrowed(text),
        None => Cow::Owned(arguments.to_string()),
    };
    let mut shown = escape_controls(&line).into_owned();
    shown.push('\n');
    let _ = out.write_all(shown.as_bytes());
}

/// `value` as JSON (indented when `pretty`), with DEL and the C1 controls escaped as `\u007f` .. `\u009f`
/// (serde_json escapes the C0 controls itself but writes these raw). Outside strings JSON holds only ASCII
/// punctuation and layout, so each one found is inside a string, where the escape stands for the same value.
pub(crate) fn json_text(value: &impl Serialize, pretty: bool) -> Result<String, CommandError> {
    let text = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }
    .map_err(|error| CommandError::Internal(format!("cannot render JSON: {error}")))?;
    if !text.bytes().any(|byte| byte == 0x7f || byte == 0xc2) {
        return Ok(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c) {
            use std::fmt::Write as _;
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// Prints `diagnostic` with a snippet of `text` (named `name`) around `span`, labelled `label`, as miette
/// renders it, to stderr. Every string miette is given is escaped first ([`escape_controls`]; the snippet by
/// [`escape_snippet`], which keeps the span on the same text), so that the only control sequences printed are
/// miette's own colours.
pub(crate) fn print_snippet(mut diagnostic: MietteDiagnostic, name: &str, text: &str, span: Range<usize>, label: &str) {
    let (shown, span) = excerpt(text, span);
    let (shown, span) = escape_snippet(&shown, span);
    diagnostic.message = escape_controls(&diagnostic.message).into_owned();
    diagnostic.help = diagnostic.help.map(|help| escape_controls(&help).into_owned());
    let diagnostic = diagnostic.with_label(LabeledSpan::at(span, escape_controls(label).into_owned()));
    let report = Report::new(diagnostic).with_source_code(NamedSource::new(escape_controls(name), shown));
    let _ = writeln!(std::io::stderr().lock(), "{report:?}");
}

/// `text` (a snippet's lines) with its controls escaped, and where `span` lands in the result. A CR before a
/// newline (or at the end) is a CRLF line end, which is dropped rather than shown.
fn escape_snippet(text: &str, span: Range<usize>) -> (String, Range<usize>) {
    if !may_hold_controls(text) {
        return (text.to_string(), span);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let (mut start, mut end) = (None, None);
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if start.is_none() && at >= span.start {
            start = Some(out.len());
        }
        if end.is_none() && at >= span.end {
            end = Some(out.len());
        }
        let crlf = c == '\r' && matches!(chars.peek(), Some((_, '\n')) | None);
        if crlf {
            continue;
        }
        if is_escaped(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    let start = start.unwrap_or(out.len());
    let end = end.unwrap_or(out.len()).max(start);
    (out, start..end)
}

/// Prints every diagnostic with its source snippet to stderr.
pub(crate) fn print_diagnostics(diagnostics: &[Diagnostic], sources: &[SourceText]) {
    for diagnostic in diagnostics {
        let mut report = MietteDiagnostic::new(diagnostic.message.clone())
            .with_code(diagnostic.rule.code())
            .with_severity(match diagnostic.severity {
                Severity::Warning => MietteSeverity::Warning,
                Severity::Error => MietteSeverity::Error,
            });
        if !diagnostic.pointer.is_empty() {
            report = report.with_help(format!("at JSON pointer {}", diagnostic.pointer));
        }
        let source = sources.iter().find(|source| source.file == diagnostic.file);
        match (source, &diagnostic.span) {
            (Some(source), Some(span)) => {
                errln!("{}:{}:{}:", diagnostic.file, diagnostic.line, diagnostic.column);
                print_snippet(
                    report,
                    &diagnostic.file,
                    &source.text,
                    span.clone(),
                    diagnostic.rule.code(),
                );
            }
            _ => errln!("{diagnostic}"),
        }
    }
}

/// Turns a load error into a command error, printing diagnostics in text mode.
pub(crate) fn load_failure(error: LoadError, json: bool) -> (CommandError, Vec<Diagnostic>) {
    match error {
        LoadError::Io { .. } | LoadError::Read(_) => (CommandError::Io(error.to_string()), Vec::new()),
        LoadError::Invalid { diagnostics, sources } => {
            if !json {
                print_diagnostics(&diagnostics, &sources);
                errln!("error: {} problem(s) found", diagnostics.len());
            }
            (CommandError::Invalid, diagnostics)
        }
    }
}

/// How many characters of a source line a snippet shows on each side of the problem, and of the problem.
const EXCERPT_CONTEXT: usize = 60;
const EXCERPT_SPAN: usize = 120;

/// The part of `text` a snippet shows for `span`: the span's line and its neighbours, each cut to a window
/// around the span's column (so a minified file or a 50 MB value shows a few hundred characters, and no
/// column exceeds what the renderer can draw), preceded by as many empty lines as come before, so that the
/// snippet's line numbers are the file's. Returns the excerpt and the span within it.
fn excerpt(text: &str, span: std::ops::Range<usize>) -> (String, std::ops::Range<usize>) {
    let start = floor_boundary(text, span.start.min(text.len()));
    let end = floor_boundary(text, span.end.clamp(start, text.len()));
    let line_start = text[..start].rfind('\n').map_or(0, |at| at + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |at| start + at);
    // The window of columns (in bytes from the line start) shown on every line.
    let from = floor_boundary(text, start.saturating_sub(EXCERPT_CONTEXT).max(line_start)) - line_start;
    let shown_end = ceil_boundary(text, end.min(start + EXCERPT_SPAN).min(line_end));
    let to = ceil_boundary(text, (shown_end + EXCERPT_CONTEXT).min(line_end)) - line_start;
    let window = |line: &str| -> String {
        // A neighbour that ends before the window starts is shown from its beginning.
        let (from, to) = if from >= line.len() { (0, to - from) } else { (from, to) };
        let from = floor_boundary(line, from.min(line.len()));
        let to = ceil_boundary(line, to.min(line.len())).max(from);
        let mut shown = String::new();
        if from > 0 {
            shown.push('…');
        }
        shown.push_str(&line[from..to]);
        if to < line.len() {
            shown.push('…');
        }
        shown
    };
    let line_number = text[..line_start].matches('\n').count();
    let mut out = "\n".repeat(line_number.saturating_sub(1));
    if line_start > 0 {
        let previous_start = text[..line_start - 1].rfind('\n').map_or(0, |at| at + 1);
        out.push_str(&window(&text[previous_start..line_start - 1]));
        out.push('\n');
    }
    let current = &text[line_start..line_end];
    let marker = usize::from(floor_boundary(current, from.min(current.len())) > 0) * '…'.len_utf8();
    let span_start = out.len() + marker + (start - line_start).saturating_sub(from);
    let span_length = shown_end.saturating_sub(start);
    out.push_str(&window(current));
    if line_end < text.len() {
        let next_end = text[line_end + 1..]
            .find('\n')
            .map_or(text.len(), |at| line_end + 1 + at);
        out.push('\n');
        out.push_str(&window(&text[line_end + 1..next_end]));
    }
    (out, span_start..span_start + span_length)
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::{escape_controls, escape_snippet, excerpt, json_text};

    #[test]
    fn controls_are_escaped_and_layout_is_kept() {
        assert_eq!(escape_controls("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            escape_controls("a\u{1b}[31mb\rc\0d\u{7f}e\u{9b}f\u{a0}g"),
            "a\\x1b[31mb\\rc\\0d\\x7fe\\u{9b}f\u{a0}g"
        );
    }

    #[test]
    fn a_snippet_keeps_its_span_on_the_escaped_text_and_drops_crlf_line_ends() {
        let text = "one\r\ntwo \u{1b}[1mBAD\r\nthree\r";
        let start = text.find("\u{1b}").unwrap_or(0);
        let end = text.find("BAD").unwrap_or(0) + 3;
        let (shown, span) = escape_snippet(text, start..end);
        assert_eq!(shown, "one\ntwo \\x1b[1mBAD\nthree");
        assert_eq!(&shown[span], "\\x1b[1mBAD");
    }

    #[test]
    fn json_escapes_del_and_c1_controls_and_keeps_the_value() {
        let value = serde_json::json!({ "name": "a\u{7f}b\u{9b}c\u{1b}d\u{e9}" });
        for pretty in [false, true] {
            let text = json_text(&value, pretty).unwrap_or_default();
            assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text}");
            assert!(text.contains("\u{e9}"), "{text}");
            let read: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            assert_eq!(read, value);
        }
    }

    #[test]
    fn an_excerpt_keeps_the_span_and_cuts_long_lines() {
        let text = format!("first\n{}BAD{}\nlast", "x".repeat(100_000), "y".repeat(100_000));
        let start = text.find("BAD").unwrap_or(0);
        let (shown, span) = excerpt(&text, start..start + 3);
        assert_eq!(&shown[span.clone()], "BAD");
        assert!(shown.len() < 400, "{}", shown.len());
        assert!(shown.starts_with("first\n…"));
        assert!(shown.ends_with("\nlast"));
    }

    #[test]
    fn an_excerpt_of_a_short_file_is_the_lines_around_the_span() {
        let text = "a\nb\nc = 1\nd\ne";
        let start = text.find("c = 1").unwrap_or(0);
        let (shown, span) = excerpt(text, start..start + 5);
        assert_eq!(shown, "\nb\nc = 1\nd");
        assert_eq!(&shown[span], "c = 1");
    }
}
