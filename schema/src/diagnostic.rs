//! Problems found in a declaration file, each with the place it was found.

use std::fmt;
use std::ops::Range;

use serde::Serialize;

use crate::rule::Rule;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Warning,
    Error,
}

/// One problem: which rule, where (file, JSON pointer, line and column), and what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Short stable name of the violated rule, such as `duplicate-id` or `unknown-key`.
    pub rule: Rule,
    pub message: String,
    /// The file as it was named to the loader.
    pub file: String,
    /// JSON pointer into the document (also for TOML files, over their table structure).
    pub pointer: String,
    /// 1-based line; 0 when the place could not be found in the text.
    pub line: usize,
    /// 1-based column in characters; 0 when unknown.
    pub column: usize,
    /// Byte range in the file.
    #[serde(skip)]
    pub span: Option<Range<usize>>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(
            f,
            "{}:{}:{}: {severity}[{}]: {}",
            self.file, self.line, self.column, self.rule, self.message
        )?;
        if !self.pointer.is_empty() {
            write!(f, " (at {})", self.pointer)?;
        }
        Ok(())
    }
}

/// A problem before it is placed in a file: a pointer, a rule and a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Finding {
    pub(crate) rule: Rule,
    pub(crate) pointer: String,
    pub(crate) message: String,
    /// Point at the key of the member rather than at its value.
    pub(crate) at_key: bool,
    pub(crate) severity: Severity,
}

impl Finding {
    pub(crate) fn error(rule: Rule, pointer: impl Into<String>, message: impl Into<String>) -> Finding {
        Finding {
            rule,
            pointer: pointer.into(),
            message: message.into(),
            at_key: false,
            severity: Severity::Error,
        }
    }

    pub(crate) fn at_key(mut self) -> Finding {
        self.at_key = true;
        self
    }
}

/// Where the values of a parsed document sit in its text.
pub(crate) trait SourceMap {
    /// Byte range of the value at `pointer`, or of its key when `key` is set.
    fn span_of(&self, pointer: &str, key: bool) -> Option<Range<usize>>;
}

/// Line starts of a text, for turning byte offsets into line and column.
pub(crate) struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub(crate) fn new(text: &'a str) -> LineIndex<'a> {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(offset, _)| offset + 1));
        LineIndex { text, starts }
    }

    /// 1-based line and character column of a byte offset.
    pub(crate) fn line_column(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|start| *start <= offset).max(1);
        let start = self.starts[line - 1];
        let column = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count())
            + 1;
        (line, column)
    }

    /// Byte offset of a 1-based line and column (as serde_json reports them).
    pub(crate) fn offset(&self, line: usize, column: usize) -> usize {
        let start = self
            .starts
            .get(line.saturating_sub(1))
            .copied()
            .unwrap_or(self.text.len());
        let rest = self.text.get(start..).unwrap_or("");
        let within = rest
            .char_indices()
            .nth(column.saturating_sub(1))
            .map_or(rest.len(), |(i, _)| i);
        start + within
    }
}

/// Places findings in a file.
pub(crate) fn place(file: &str, text: &str, map: &dyn SourceMap, findings: Vec<Finding>) -> Vec<Diagnostic> {
    let lines = LineIndex::new(text);
    findings
        .into_iter()
        .map(|finding| {
            let span = map
                .span_of(&finding.pointer, finding.at_key)
                .or_else(|| nearest_ancestor_span(map, &finding.pointer));
            let (line, column) = span.as_ref().map_or((0, 0), |span| lines.line_column(span.start));
            Diagnostic {
                severity: finding.severity,
                rule: finding.rule,
                message: clip(finding.message),
                file: file.to_string(),
                pointer: clip(finding.pointer),
                line,
                column,
                span,
            }
        })
        .collect()
}

fn nearest_ancestor_span(map: &dyn SourceMap, pointer: &str) -> Option<Range<usize>> {
    let mut current = pointer;
    while let Some(cut) = current.rfind('/') {
        current = &current[..cut];
        if let Some(span) = map.span_of(current, false) {
            return Some(span);
        }
    }
    None
}

/// A diagnostic for a whole-file problem at a byte offset (syntax errors).
pub(crate) fn at_offset(file: &str, text: &str, rule: Rule, message: String, span: Range<usize>) -> Diagnostic {
    let (line, column) = LineIndex::new(text).line_column(span.start);
    Diagnostic {
        severity: Severity::Error,
        rule,
        message: clip(message),
        file: file.to_string(),
        pointer: String::new(),
        line,
        column,
        span: Some(span),
    }
}

/// The most of a message or pointer a diagnostic keeps: values a declaration echoes into messages can be
/// megabytes long, and a diagnostic should stay readable (and its output bounded).
pub const DIAGNOSTIC_TEXT_LIMIT: usize = 1000;

/// `text` cut to [`DIAGNOSTIC_TEXT_LIMIT`] bytes at a character boundary, saying how much was left out.
pub(crate) fn clip(mut text: String) -> String {
    if text.len() <= DIAGNOSTIC_TEXT_LIMIT {
        return text;
    }
    let mut at = DIAGNOSTIC_TEXT_LIMIT;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let omitted = text.len() - at;
    text.truncate(at);
    text.push_str(&format!("… ({omitted} more bytes)"));
    text
}

/// Escapes one JSON pointer reference token.
pub(crate) fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_characters_from_one() {
        let index = LineIndex::new("ab\ncdé\nf");
        assert_eq!(index.line_column(0), (1, 1));
        assert_eq!(index.line_column(3), (2, 1));
        assert_eq!(index.line_column(7), (2, 4));
        assert_eq!(index.line_column(8), (3, 1));
        assert_eq!(index.offset(3, 1), 8);
        assert_eq!(index.offset(2, 3), 5);
    }
}
