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
                let length = span
                    .end
                    .saturating_sub(span.start)
                    .min(source.text.len().saturating_sub(span.start));
                let report =
                    report.with_label(LabeledSpan::at(span.start..span.start + length, diagnostic.rule.code()));
                let report =
                    Report::new(report).with_source_code(NamedSource::new(&diagnostic.file, source.text.clone()));
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
