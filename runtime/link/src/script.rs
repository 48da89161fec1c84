//! The linker scripts libraries ship in place of an archive or a shared library: Debian's `libm.a` is
//! `GROUP ( /usr/lib/x86_64-linux-gnu/libm-2.36.a /usr/lib/x86_64-linux-gnu/libmvec.a )`, `libc.so` a `GROUP`
//! of `libc.so.6`, `libc_nonshared.a` and `AS_NEEDED ( ld-linux-x86-64.so.2 )`.
//!
//! Supported: `GROUP(...)` and `INPUT(...)` of file names (separated by white space or commas, quoted or
//! not) and `-lNAME`, `AS_NEEDED(...)` inside them (its files are inputs like the others, marked so: a
//! shared library among them is needed only if the output imports from it),
//! `OUTPUT_FORMAT(elf64-x86-64)` (with one name or three, the first one a bundled target's declared `[elf]
//! output_formats`), `;` between commands and `/* */` comments. Any other command is refused, naming it and the script, with its position.

use std::ops::Range;
use std::path::Path;

/// A problem in a linker script: what and where (the driver renders it with a snippet of the script).
#[derive(Debug, thiserror::Error)]
#[error("in `{}` at line {line}, column {column}: {message}", file.display())]
pub struct ScriptError {
    pub file: std::path::PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
    /// The script and the byte range the message is about, for the snippet.
    pub text: String,
    pub span: Range<usize>,
}

/// Whether `name` is an object format a script may ask for: one a bundled target declares (`[elf]
/// output_formats`).
fn declared_format(name: &str) -> bool {
    neverc_tables::BUNDLED_TARGETS
        .iter()
        .any(|target| target.elf.is_some_and(|elf| elf.has_output_format(name)))
}

/// The declared output formats, for messages.
fn declared_formats() -> String {
    neverc_tables::BUNDLED_TARGETS
        .iter()
        .filter_map(|target| target.elf)
        .flat_map(|elf| elf.output_formats.iter().copied())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One input a script names: a file name or `-lNAME`, with where it is in the script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptInput {
    pub name: String,
    pub span: Range<usize>,
    /// Named inside `AS_NEEDED(...)`: a shared library is needed only if the output imports from it.
    pub as_needed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token<'a> {
    Word(&'a str),
    Quoted(&'a str),
    Open,
    Close,
    Comma,
    Semicolon,
    Other(char),
}

struct Lexer<'a> {
    file: &'a Path,
    text: &'a str,
    at: usize,
}

/// Parses `text`, the script `file`, into the inputs it names, in order.
pub fn parse(file: &Path, text: &str) -> Result<Vec<ScriptInput>, ScriptError> {
    let mut lexer = Lexer { file, text, at: 0 };
    let mut inputs = Vec::new();
    while let Some((token, span)) = lexer.next()? {
        match token {
            Token::Semicolon => {}
            Token::Word("GROUP" | "INPUT") => {
                lexer.expect_open(&span)?;
                lexer.input_list(&mut inputs, false)?;
            }
            Token::Word("OUTPUT_FORMAT") => {
                lexer.expect_open(&span)?;
                lexer.output_format()?;
            }
            Token::Word(command) => {
                return Err(lexer.error(
                    span,
                    format!(
                        "the command `{command}` is not supported (neverc-spec reads GROUP, INPUT, AS_NEEDED and \
                         OUTPUT_FORMAT)"
                    ),
                ));
            }
            other => return Err(lexer.error(span, format!("expected a command, found {}", describe(other)))),
        }
    }
    Ok(inputs)
}

impl<'a> Lexer<'a> {
    /// The next token and its byte range; `None` at the end.
    fn next(&mut self) -> Result<Option<(Token<'a>, Range<usize>)>, ScriptError> {
        let bytes = self.text.as_bytes();
        loop {
            while self.at < bytes.len() && bytes[self.at].is_ascii_whitespace() {
                self.at += 1;
            }
            if bytes[self.at..].starts_with(b"/*") {
                let start = self.at;
                match self.text[start + 2..].find("*/") {
                    Some(end) => self.at = start + 2 + end + 2,
                    None => return Err(self.error(start..start + 2, "this comment is never closed".into())),
                }
                continue;
            }
            break;
        }
        let start = self.at;
        let Some(&first) = bytes.get(start) else {
            return Ok(None);
        };
        let single = |token| (token, start..start + 1);
        let token = match first {
            b'(' => single(Token::Open),
            b')' => single(Token::Close),
            b',' => single(Token::Comma),
            b';' => single(Token::Semicolon),
            b'"' => match self.text[start + 1..].find('"') {
                Some(length) => (
                    Token::Quoted(&self.text[start + 1..start + 1 + length]),
                    start..start + length + 2,
                ),
                None => return Err(self.error(start..start + 1, "this quoted name is never closed".into())),
            },
            b'{' | b'}' => single(Token::Other(char::from(first))),
            _ => {
                let mut end = start;
                while end < bytes.len()
                    && !bytes[end].is_ascii_whitespace()
                    && !matches!(bytes[end], b'(' | b')' | b',' | b';' | b'"' | b'{' | b'}')
                    && !bytes[end..].starts_with(b"/*")
                {
                    end += 1;
                }
                // `end` stops before an ASCII byte or at the end, so it is a character boundary.
                (Token::Word(&self.text[start..end]), start..end)
            }
        };
        self.at = token.1.end;
        Ok(Some(token))
    }

    fn expect_open(&mut self, command: &Range<usize>) -> Result<(), ScriptError> {
        match self.next()? {
            Some((Token::Open, _)) => Ok(()),
            Some((other, span)) => Err(self.error(span, format!("expected `(`, found {}", describe(other)))),
            None => Err(self.error(command.clone(), "expected `(` after the command".into())),
        }
    }

    /// The names of `GROUP(...)`, `INPUT(...)` or `AS_NEEDED(...)` (inside one of the others), up to `)`.
    fn input_list(&mut self, inputs: &mut Vec<ScriptInput>, as_needed: bool) -> Result<(), ScriptError> {
        loop {
            let Some((token, span)) = self.next()? else {
                return Err(self.error(
                    self.text.len()..self.text.len(),
                    "the list is never closed with `)`".into(),
                ));
            };
            match token {
                Token::Close => return Ok(()),
                Token::Comma => {}
                Token::Word("AS_NEEDED") if !as_needed => {
                    self.expect_open(&span)?;
                    self.input_list(inputs, true)?;
                }
                Token::Word(name) | Token::Quoted(name) => inputs.push(ScriptInput {
                    name: name.to_string(),
                    span,
                    as_needed,
                }),
                other => return Err(self.error(span, format!("expected a file name, found {}", describe(other)))),
            }
        }
    }

    /// `OUTPUT_FORMAT(name)` or `OUTPUT_FORMAT(default, big, little)`: the default must be ours.
    fn output_format(&mut self) -> Result<(), ScriptError> {
        let mut names = Vec::new();
        loop {
            let Some((token, span)) = self.next()? else {
                return Err(self.error(self.text.len()..self.text.len(), "OUTPUT_FORMAT is never closed".into()));
            };
            match token {
                Token::Close => break,
                Token::Comma => {}
                Token::Word(name) | Token::Quoted(name) => names.push((name, span)),
                other => return Err(self.error(span, format!("expected a format name, found {}", describe(other)))),
            }
        }
        match names.first() {
            Some((name, _)) if declared_format(name) => Ok(()),
            Some((name, span)) => Err(self.error(
                span.clone(),
                format!(
                    "output format `{name}` is not supported (the targets declare {})",
                    declared_formats()
                ),
            )),
            None => Err(self.error(
                self.at.saturating_sub(1)..self.at,
                "OUTPUT_FORMAT names no format".into(),
            )),
        }
    }

    fn error(&self, span: Range<usize>, message: String) -> ScriptError {
        let before = &self.text[..span.start.min(self.text.len())];
        let line_start = before.rfind('\n').map_or(0, |at| at + 1);
        ScriptError {
            file: self.file.to_path_buf(),
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
            message,
            text: self.text.to_string(),
            span,
        }
    }
}

fn describe(token: Token<'_>) -> String {
    match token {
        Token::Word(word) => format!("`{word}`"),
        Token::Quoted(name) => format!("\"{name}\""),
        Token::Open => "`(`".into(),
        Token::Close => "`)`".into(),
        Token::Comma => "`,`".into(),
        Token::Semicolon => "`;`".into(),
        Token::Other(character) => format!("`{character}`"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn names(text: &str) -> Vec<String> {
        parse(Path::new("t.ld"), text)
            .unwrap()
            .into_iter()
            .map(|input| input.name)
            .collect()
    }

    fn error(text: &str) -> ScriptError {
        parse(Path::new("t.ld"), text).unwrap_err()
    }

    #[test]
    fn debian_libm_and_libc_scripts() {
        let libm = "/* GNU ld script\n*/\nOUTPUT_FORMAT(elf64-x86-64)\nGROUP ( /usr/lib/x86_64-linux-gnu/libm-2.36.a \
                    /usr/lib/x86_64-linux-gnu/libmvec.a )\n";
        assert_eq!(
            names(libm),
            [
                "/usr/lib/x86_64-linux-gnu/libm-2.36.a",
                "/usr/lib/x86_64-linux-gnu/libmvec.a"
            ]
        );
        let libc = "/* GNU ld script\n   Use the shared library, but some functions are only in\n   the static \
                    library, so try that secondarily.  */\nOUTPUT_FORMAT(elf64-x86-64)\nGROUP ( \
                    /lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libc_nonshared.a  AS_NEEDED ( \
                    /lib64/ld-linux-x86-64.so.2 ) )\n";
        assert_eq!(
            names(libc),
            [
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/usr/lib/x86_64-linux-gnu/libc_nonshared.a",
                "/lib64/ld-linux-x86-64.so.2"
            ]
        );
    }

    #[test]
    fn commas_quotes_libraries_and_several_commands() {
        assert_eq!(
            names(
                "INPUT(a.o, \"b c.o\",-lfoo);GROUP(x.a,AS_NEEDED(-lbar y.a))\nOUTPUT_FORMAT(elf64-x86-64, \
                   elf64-x86-64, elf64-x86-64)"
            ),
            ["a.o", "b c.o", "-lfoo", "x.a", "-lbar", "y.a"]
        );
        assert!(names("/* only a comment */").is_empty());
    }

    #[test]
    fn unsupported_commands_and_formats_are_named_with_their_position() {
        let problem = error("/* x */\n  SECTIONS { .text : { *(.text) } }");
        assert!(problem.message.contains("`SECTIONS`"), "{problem}");
        assert_eq!((problem.line, problem.column), (2, 3));
        assert_eq!(&problem.text[problem.span.clone()], "SECTIONS");
        let problem = error("OUTPUT_FORMAT(elf32-i386)");
        assert!(problem.message.contains("`elf32-i386`"), "{problem}");
        assert!(error("GROUP(a.a").message.contains("never closed"));
        assert!(error("/* open").message.contains("never closed"));
        assert!(error("GROUP a.a").message.contains("expected `(`"));
        assert!(
            error("GROUP(AS_NEEDED(AS_NEEDED(x)))")
                .message
                .contains("expected a file name")
        );
        assert!(error("ENTRY(main)").to_string().contains("`ENTRY`"));
    }
}
