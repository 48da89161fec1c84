//! Properties shared by the fuzz targets: what every returned diagnostic must satisfy.

use neverc_schema::Diagnostic;

/// Panics (so libFuzzer records a crash) when a diagnostic is misplaced in `text`.
pub fn check_diagnostics(text: &str, diagnostics: &[Diagnostic]) {
    for diagnostic in diagnostics {
        if let Some(span) = &diagnostic.span {
            assert!(diagnostic.line >= 1, "diagnostic has a span but line 0: {diagnostic:?}");
            assert!(span.start <= span.end, "diagnostic span is reversed: {diagnostic:?}");
            assert!(
                span.end <= text.len(),
                "diagnostic span ends past the input ({} bytes): {diagnostic:?}",
                text.len()
            );
        }
    }
}
