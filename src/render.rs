//! Rendering problems for people (miette snippets) and machines (JSON).

use miette::{LabeledSpan, MietteDiagnostic, NamedSource, Report, Severity as MietteSeverity};
use neverc_schema::{Diagnostic, LoadError, Severity, SourceText};

use crate::CommandError;

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
                let (text, span) = excerpt(&source.text, span.clone());
                let report = report.with_label(LabeledSpan::at(span, diagnostic.rule.code()));
                let report = Report::new(report).with_source_code(NamedSource::new(&diagnostic.file, text));
                errln!("{}:{}:{}:", diagnostic.file, diagnostic.line, diagnostic.column);
                errln!("{report:?}");
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
pub(crate) fn excerpt(text: &str, span: std::ops::Range<usize>) -> (String, std::ops::Range<usize>) {
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
    use super::excerpt;

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
