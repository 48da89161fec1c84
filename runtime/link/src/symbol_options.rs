//! The options that change how symbols resolve, as GNU ld defines them: `-u`/`--undefined`,
//! `--require-defined`, `--defsym`, `--wrap`, `--allow-multiple-definition`, `--unresolved-symbols=` and
//! `--warn-unresolved-symbols`, `--error-limit`, `--noinhibit-exec`; and the ones that choose which symbols
//! the symbol table keeps global or at all: `--version-script` and `--retain-symbols-file`.

use std::fmt;

/// The symbol options of one link.
#[derive(Clone, Debug, Default)]
pub struct SymbolOptions {
    /// `-u SYM`: an undefined reference, which takes an archive member defining it and keeps its definition
    /// alive under `--gc-sections`.
    pub undefined: Vec<String>,
    /// `--require-defined SYM`: as `-u`, and the link fails unless something defines it.
    pub require_defined: Vec<String>,
    /// `--defsym SYM=EXPRESSION`, in order.
    pub defsyms: Vec<Defsym>,
    /// `--wrap SYM`: undefined references to SYM go to `__wrap_SYM`, and those to `__real_SYM` to SYM.
    pub wrap: Vec<String>,
    /// `--allow-multiple-definition` / `-z muldefs`: the first definition is used and later ones are not errors.
    pub allow_multiple_definition: bool,
    /// What an undefined reference is (`--unresolved-symbols=`, `--warn-unresolved-symbols`).
    pub unresolved: Unresolved,
    /// What a name a shared library of the link leaves undefined, and nothing defines, is:
    /// `--no-allow-shlib-undefined` (an error), `--allow-shlib-undefined` (nothing), or as
    /// `--unresolved-symbols=` or `--warn-unresolved-symbols` say. `None`: GNU ld's default for an
    /// executable, an error.
    pub unresolved_in_shared_libraries: Option<Unresolved>,
    /// `--error-limit=N`: at most N undefined-reference errors are listed (0: all).
    pub error_limit: usize,
    /// `--noinhibit-exec`: undefined references and multiple definitions are reported, and the executable
    /// written anyway (their references are 0) with a success exit status, as GNU ld does.
    pub noinhibit_exec: bool,
    /// `--version-script FILE`'s patterns: global symbols matching `local:` (and no `global:`) become local.
    pub version_script: Option<VersionScript>,
    /// `--retain-symbols-file FILE`: only these symbols are written to the symbol table.
    pub retain_symbols: Option<Vec<String>>,
    /// The patterns of `--dynamic-list FILE`, `--export-dynamic-symbol-list FILE` and
    /// `--export-dynamic-symbol GLOB`: a dynamically linked executable exports the global definitions they
    /// match (besides those its shared libraries refer to).
    pub dynamic_exports: Vec<String>,
}

impl SymbolOptions {
    /// The names the options refer to: `-u`, `--require-defined`, and the symbols `--defsym` expressions
    /// name. Each takes an archive member defining it and is a root of `--gc-sections`.
    pub fn references(&self) -> impl Iterator<Item = &str> {
        let defsym_targets = self.defsyms.iter().filter_map(|defsym| match &defsym.value {
            DefsymValue::Symbol { name, .. } => Some(name.as_str()),
            DefsymValue::Absolute(_) => None,
        });
        self.undefined
            .iter()
            .chain(&self.require_defined)
            .map(String::as_str)
            .chain(defsym_targets)
    }
}

/// What an undefined (not weak) reference is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Unresolved {
    /// An error (GNU ld's `report-all`, the default).
    #[default]
    Error,
    /// A warning (`--warn-unresolved-symbols`); the reference is 0.
    Warn,
    /// Nothing (`ignore-all`, `ignore-in-object-files`: a static link has only object files); the reference
    /// is 0.
    Ignore,
}

/// `--defsym NAME=EXPRESSION`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Defsym {
    pub name: String,
    pub value: DefsymValue,
}

/// The expressions of `--defsym` neverc-spec evaluates: a number, or a symbol plus or minus a number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DefsymValue {
    Absolute(u64),
    Symbol { name: String, offset: i64 },
}

/// Why a `--defsym` argument is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefsymError {
    #[error("`{0}` is not NAME=EXPRESSION")]
    NotAnAssignment(String),
    #[error("`{0}`: only a number, a symbol, or a symbol plus or minus a number is supported as a --defsym expression")]
    Unsupported(String),
}

/// A number as GNU ld's expressions write it: decimal, `0x` hexadecimal, `0` octal, or with a `K`/`M` suffix.
fn number(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, scale) = match text.strip_suffix(['K', 'k']) {
        Some(digits) => (digits, 1024),
        None => match text.strip_suffix(['M', 'm']) {
            Some(digits) => (digits, 1024 * 1024),
            None => (text, 1),
        },
    };
    let value = if let Some(hex) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()?
    } else if let Some(hex) = digits.strip_prefix('$') {
        u64::from_str_radix(hex, 16).ok()?
    } else if digits.len() > 1 && digits.starts_with('0') {
        u64::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse().ok()?
    };
    value.checked_mul(scale)
}

/// Whether `text` is a symbol name as a linker-script expression writes one.
fn is_symbol(text: &str) -> bool {
    let mut characters = text.chars();
    characters
        .next()
        .is_some_and(|first| first == '_' || first == '.' || first == '$' || first.is_ascii_alphabetic())
        && characters.all(|character| matches!(character, '_' | '.' | '$' | '@') || character.is_ascii_alphanumeric())
}

impl Defsym {
    /// Parses `NAME=EXPRESSION`.
    pub fn parse(argument: &str) -> Result<Defsym, DefsymError> {
        let (name, expression) = argument
            .split_once('=')
            .filter(|(name, _)| is_symbol(name.trim()))
            .ok_or_else(|| DefsymError::NotAnAssignment(argument.to_string()))?;
        let unsupported = || DefsymError::Unsupported(expression.to_string());
        let expression = expression.trim();
        let value = if let Some(value) = number(expression) {
            DefsymValue::Absolute(value)
        } else if is_symbol(expression) {
            DefsymValue::Symbol {
                name: expression.to_string(),
                offset: 0,
            }
        } else {
            let split = expression.rfind(['+', '-']).ok_or_else(unsupported)?;
            let (left, right) = (expression[..split].trim(), expression[split + 1..].trim());
            let amount = number(right)
                .and_then(|amount| i64::try_from(amount).ok())
                .ok_or_else(unsupported)?;
            let offset = if expression.as_bytes()[split] == b'-' {
                -amount
            } else {
                amount
            };
            match number(left) {
                Some(base) => DefsymValue::Absolute(base.wrapping_add_signed(offset)),
                None if is_symbol(left) => DefsymValue::Symbol {
                    name: left.to_string(),
                    offset,
                },
                None => return Err(unsupported()),
            }
        };
        Ok(Defsym {
            name: name.trim().to_string(),
            value,
        })
    }
}

/// The part of a version script a static executable uses: which global symbols stay global. Version node
/// names, dependencies and `extern "C"` blocks are read; `extern "C++"` patterns are refused (they match
/// demangled names).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionScript {
    global: Vec<String>,
    local: Vec<String>,
}

/// A version script that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("version script: {message} (at byte {offset})")]
pub struct VersionScriptError {
    pub message: String,
    pub offset: usize,
}

impl VersionScript {
    /// Parses a version script: `{ global: a; b*; local: *; };` or nodes `NAME { ... } [PARENT];`.
    pub fn parse(text: &str) -> Result<VersionScript, VersionScriptError> {
        let tokens = tokens(text)?;
        let mut script = VersionScript::default();
        let mut position = 0;
        let error = |message: &str, at: usize| VersionScriptError {
            message: message.to_string(),
            offset: tokens.get(at).map_or(text.len(), |token: &(usize, String)| token.0),
        };
        let token = |at: usize| tokens.get(at).map(|(_, token)| token.as_str());
        while position < tokens.len() {
            // An optional node name, then the node's body.
            if token(position) != Some("{") {
                position += 1;
            }
            if token(position) != Some("{") {
                return Err(error("expected `{`", position));
            }
            position += 1;
            let mut local = false;
            loop {
                match token(position) {
                    None => return Err(error("unterminated version node", position)),
                    Some("}") => {
                        position += 1;
                        break;
                    }
                    Some("global") | Some("local") if token(position + 1) == Some(":") => {
                        local = token(position) == Some("local");
                        position += 2;
                    }
                    Some("extern") => {
                        let language = token(position + 1).unwrap_or("");
                        if language != "\"C\"" {
                            return Err(error(
                                &format!("extern {language} patterns are not supported (only extern \"C\")"),
                                position,
                            ));
                        }
                        if token(position + 2) != Some("{") {
                            return Err(error("expected `{` after extern \"C\"", position + 2));
                        }
                        position += 3;
                        while let Some(pattern) = token(position).filter(|token| *token != "}") {
                            if pattern != ";" {
                                script.add(pattern, local);
                            }
                            position += 1;
                        }
                        position += 1;
                        if token(position) == Some(";") {
                            position += 1;
                        }
                    }
                    Some(";") => position += 1,
                    Some(pattern) => {
                        script.add(pattern, local);
                        position += 1;
                        if token(position) != Some(";") && token(position) != Some("}") {
                            return Err(error("expected `;` after a pattern", position));
                        }
                    }
                }
            }
            // An optional parent node, then `;`.
            if token(position).is_some_and(|token| token != ";") {
                position += 1;
            }
            if token(position) != Some(";") {
                return Err(error("expected `;` after a version node", position));
            }
            position += 1;
        }
        Ok(script)
    }

    fn add(&mut self, pattern: &str, local: bool) {
        let pattern = pattern.trim_matches('"').to_string();
        if local {
            self.local.push(pattern);
        } else {
            self.global.push(pattern);
        }
    }

    /// The patterns of its `global:` parts (all of them in a dynamic list, which has no `local:`).
    pub fn global_patterns(&self) -> &[String] {
        &self.global
    }

    /// Whether the script makes global symbol `name` local: a `local:` pattern matches it and no `global:`
    /// pattern does (an exact `global:` name wins over any wildcard, as in GNU ld).
    pub fn makes_local(&self, name: &str) -> bool {
        if self.global.iter().any(|pattern| glob_matches(pattern, name)) {
            return false;
        }
        self.local.iter().any(|pattern| glob_matches(pattern, name))
    }
}

/// The tokens of a version script with their byte offsets: words, `{`, `}`, `;`, `:`, quoted strings;
/// comments (`/* */`, `#` to the end of the line) skipped.
fn tokens(text: &str) -> Result<Vec<(usize, String)>, VersionScriptError> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        if byte.is_ascii_whitespace() {
            at += 1;
        } else if text[at..].starts_with("/*") {
            at = text[at + 2..]
                .find("*/")
                .map(|end| at + 2 + end + 2)
                .ok_or(VersionScriptError {
                    message: "unterminated comment".into(),
                    offset: at,
                })?;
        } else if byte == b'#' {
            at = text[at..].find('\n').map_or(bytes.len(), |end| at + end);
        } else if matches!(byte, b'{' | b'}' | b';' | b':') {
            tokens.push((at, (byte as char).to_string()));
            at += 1;
        } else if byte == b'"' {
            let end = text[at + 1..]
                .find('"')
                .map(|end| at + 1 + end)
                .ok_or(VersionScriptError {
                    message: "unterminated string".into(),
                    offset: at,
                })?;
            tokens.push((at, text[at..=end].to_string()));
            at = end + 1;
        } else {
            let end = text[at..]
                .find(|character: char| character.is_ascii_whitespace() || "{};:\"".contains(character))
                .map_or(bytes.len(), |end| at + end);
            tokens.push((at, text[at..end].to_string()));
            at = end;
        }
    }
    Ok(tokens)
}

/// Whether shell-style `pattern` (`*`, `?`, `[...]`) matches `name`.
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let (pattern, name) = (pattern.as_bytes(), name.as_bytes());
    // Iterative matching with one backtrack point for the last `*`: linear in practice.
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
                continue;
            }
            Some(b'?') => {
                p += 1;
                n += 1;
                continue;
            }
            Some(b'[') => {
                if let Some((matched, next)) = class_matches(&pattern[p..], name[n]) {
                    if matched {
                        p += next;
                        n += 1;
                        continue;
                    }
                } else if name[n] == b'[' {
                    p += 1;
                    n += 1;
                    continue;
                }
            }
            Some(byte) if *byte == name[n] => {
                p += 1;
                n += 1;
                continue;
            }
            _ => {}
        }
        match star {
            Some((star_p, star_n)) => {
                p = star_p + 1;
                n = star_n + 1;
                star = Some((star_p, star_n + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|byte| *byte == b'*')
}

/// Whether the class at the start of `pattern` (`[abc]`, `[a-z]`, `[!a]`) matches `byte`, and its length;
/// `None` when the class is not closed.
fn class_matches(pattern: &[u8], byte: u8) -> Option<(bool, usize)> {
    let mut at = 1;
    let negated = matches!(pattern.get(at), Some(b'!' | b'^'));
    if negated {
        at += 1;
    }
    let mut matched = false;
    let mut first = true;
    while let Some(&current) = pattern.get(at) {
        if current == b']' && !first {
            return Some((matched != negated, at + 1));
        }
        first = false;
        if pattern.get(at + 1) == Some(&b'-') && pattern.get(at + 2).is_some_and(|end| *end != b']') {
            let end = pattern[at + 2];
            matched |= (current..=end).contains(&byte);
            at += 3;
        } else {
            matched |= current == byte;
            at += 1;
        }
    }
    None
}

impl fmt::Display for DefsymValue {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DefsymValue::Absolute(value) => write!(formatter, "{value:#x}"),
            DefsymValue::Symbol { name, offset: 0 } => write!(formatter, "{name}"),
            DefsymValue::Symbol { name, offset } => write!(formatter, "{name}{offset:+}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defsym_expressions() {
        let parsed = |text: &str| Defsym::parse(text).map(|defsym| (defsym.name, defsym.value));
        assert_eq!(parsed("a=0x10"), Ok(("a".into(), DefsymValue::Absolute(16))));
        assert_eq!(parsed("a=4K"), Ok(("a".into(), DefsymValue::Absolute(4096))));
        assert_eq!(
            parsed("alias=main"),
            Ok((
                "alias".into(),
                DefsymValue::Symbol {
                    name: "main".into(),
                    offset: 0
                }
            ))
        );
        assert_eq!(
            parsed("x = table + 8"),
            Ok((
                "x".into(),
                DefsymValue::Symbol {
                    name: "table".into(),
                    offset: 8
                }
            ))
        );
        assert_eq!(parsed("y=0x100-1"), Ok(("y".into(), DefsymValue::Absolute(255))));
        assert!(matches!(parsed("=1"), Err(DefsymError::NotAnAssignment(_))));
        assert!(matches!(parsed("a=b*2"), Err(DefsymError::Unsupported(_))));
    }

    #[test]
    fn version_scripts_and_globs() {
        let script = VersionScript::parse(
            "/* c */ VERS_1 { global: keep_*; exact; extern \"C\" { also; }; local: *; }; VERS_2 { global: two; } VERS_1;",
        )
        .unwrap();
        assert!(!script.makes_local("keep_me"));
        assert!(!script.makes_local("exact"));
        assert!(!script.makes_local("also"));
        assert!(!script.makes_local("two"));
        assert!(script.makes_local("hidden"));
        assert!(VersionScript::parse("{ global: a; local: *; };").is_ok());
        assert!(VersionScript::parse("{ global: a; ").is_err());
        assert!(VersionScript::parse("{ extern \"C++\" { foo; }; };").is_err());
        assert!(glob_matches("f[a-c]?o*", "fbxoooo"));
        assert!(!glob_matches("f[!a-c]o", "fao"));
        assert!(glob_matches("*", ""));
        assert!(!glob_matches("a*b", "acd"));
    }
}
