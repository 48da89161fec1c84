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
    /// `--no-undefined-version`: a name a version script's `global:` part gives exactly (no wildcard) that
    /// the output does not define is an error (GNU ld's default, `--undefined-version`, ignores it).
    pub no_undefined_version: bool,
    /// `--retain-symbols-file FILE`: only these symbols are written to the symbol table.
    pub retain_symbols: Option<Vec<String>>,
    /// The patterns of `--dynamic-list FILE`, `--export-dynamic-symbol-list FILE` and
    /// `--export-dynamic-symbol GLOB`: a dynamically linked executable exports the global definitions they
    /// match (besides those its shared libraries refer to).
    pub dynamic_exports: Vec<String>,
    /// Whether a `--dynamic-list` was given: a shared library then binds to itself every definition the
    /// patterns do not name (they stay interposable), as GNU ld does.
    pub dynamic_list: bool,
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

/// A version script (`--version-script`, and `--dynamic-list`, which is one anonymous node): its version
/// nodes in order, and the patterns of each, which say which global symbols take which version and which
/// become local. Patterns in `extern "C++"` blocks match demangled names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionScript {
    nodes: Vec<VersionNode>,
    patterns: Vec<VersionPattern>,
    /// The literal patterns by text (matched against names, and against demangled names), and the
    /// wildcards: a name is looked up, not compared with every pattern (a script may list thousands).
    literals: [rustc_hash::FxHashMap<String, Vec<usize>>; 2],
    wildcards: Vec<usize>,
}

/// A version node: its name (none for the anonymous node) and the versions it inherits from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionNode {
    pub name: Option<String>,
    pub parents: Vec<String>,
}

/// One pattern of a node's `global:` or `local:` part.
#[derive(Clone, Debug, PartialEq, Eq)]
struct VersionPattern {
    node: usize,
    local: bool,
    /// Whether it is matched against demangled names (`extern "C++"`).
    demangled: bool,
    /// Quoted, or without wildcards: compared as it is, and preferred to any wildcard.
    literal: bool,
    text: String,
}

/// What a version script says of a global symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Versioned<'a> {
    /// A `global:` pattern matches it: it is exported in the version named (none: the anonymous node's).
    Global(Option<&'a str>),
    /// A `local:` pattern matches it, and no `global:` one prevails: it is local to the output.
    Local,
}

/// A version script that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("version script: {message} (at byte {offset})")]
pub struct VersionScriptError {
    pub message: String,
    pub offset: usize,
}

impl VersionScript {
    /// Parses a version script: `{ global: a; b*; local: *; };` or nodes `NAME { ... } [PARENT ...];`, with
    /// `extern "C"` and `extern "C++"` blocks of patterns.
    pub fn parse(text: &str) -> Result<VersionScript, VersionScriptError> {
        let tokens = tokens(text)?;
        let mut script = VersionScript::default();
        let mut position = 0;
        let error = |message: &str, at: usize| VersionScriptError {
            message: message.to_string(),
            offset: tokens.get(at).map_or(text.len(), |token: &(usize, String)| token.0),
        };
        let token = |at: usize| tokens.get(at).map(|(_, token)| token.as_str());
        let is_word = |token: &str| !matches!(token, "{" | "}" | ";" | ":") && !token.starts_with('"');
        while position < tokens.len() {
            // An optional node name, then the node's body.
            let name = match token(position) {
                Some("{") => None,
                Some(name) if is_word(name) => {
                    position += 1;
                    Some(name.to_string())
                }
                _ => return Err(error("expected a version name or `{`", position)),
            };
            if token(position) != Some("{") {
                return Err(error("expected `{`", position));
            }
            if script.nodes.iter().any(|node| node.name.is_none()) || (name.is_none() && !script.nodes.is_empty()) {
                return Err(error(
                    "an anonymous version node cannot be combined with other version nodes",
                    position,
                ));
            }
            if let Some(name) = &name
                && script.nodes.iter().any(|node| node.name.as_ref() == Some(name))
            {
                return Err(error(&format!("duplicate version `{name}`"), position - 1));
            }
            let node = script.nodes.len();
            script.nodes.push(VersionNode {
                name,
                parents: Vec::new(),
            });
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
                    Some("extern") if token(position + 1).is_some_and(|token| token.starts_with('"')) => {
                        let language = token(position + 1).unwrap_or("");
                        let demangled = match language {
                            "\"C\"" => false,
                            "\"C++\"" => true,
                            _ => {
                                return Err(error(
                                    &format!("extern {language} patterns are not supported (only \"C\" and \"C++\")"),
                                    position + 1,
                                ));
                            }
                        };
                        if token(position + 2) != Some("{") {
                            return Err(error(&format!("expected `{{` after extern {language}"), position + 2));
                        }
                        position += 3;
                        loop {
                            match token(position) {
                                None => return Err(error("unterminated extern block", position)),
                                Some("}") => break,
                                Some(";") => position += 1,
                                Some(pattern) if is_word(pattern) || pattern.starts_with('"') => {
                                    script.add(node, local, demangled, pattern);
                                    position += 1;
                                }
                                Some(_) => return Err(error("expected a pattern", position)),
                            }
                        }
                        position += 1;
                        if token(position) == Some(";") {
                            position += 1;
                        }
                    }
                    Some(";") => position += 1,
                    Some(pattern) if is_word(pattern) || pattern.starts_with('"') => {
                        script.add(node, local, false, pattern);
                        position += 1;
                        if token(position) != Some(";") && token(position) != Some("}") {
                            return Err(error("expected `;` after a pattern", position));
                        }
                    }
                    Some(_) => return Err(error("expected a pattern", position)),
                }
            }
            // The versions the node inherits from, then `;`.
            while let Some(parent) = token(position).filter(|token| is_word(token)) {
                script.nodes[node].parents.push(parent.to_string());
                position += 1;
            }
            if token(position) != Some(";") {
                return Err(error("expected `;` after a version node", position));
            }
            position += 1;
        }
        script.index();
        // A node inherits from nodes the script defines.
        for node in &script.nodes {
            for parent in &node.parents {
                if !script.nodes.iter().any(|other| other.name.as_ref() == Some(parent)) {
                    return Err(VersionScriptError {
                        message: format!(
                            "version `{}` inherits from `{parent}`, which the script does not define",
                            node.name.as_deref().unwrap_or("")
                        ),
                        offset: text.len(),
                    });
                }
            }
        }
        Ok(script)
    }

    fn add(&mut self, node: usize, local: bool, demangled: bool, pattern: &str) {
        let quoted = pattern.len() >= 2 && pattern.starts_with('"') && pattern.ends_with('"');
        let text = if quoted {
            &pattern[1..pattern.len() - 1]
        } else {
            pattern
        };
        self.patterns.push(VersionPattern {
            node,
            local,
            demangled,
            literal: quoted || !text.contains(['*', '?', '[']),
            text: text.to_string(),
        });
    }

    /// Adds the nodes of `other` (a second `--version-script`) after its own.
    pub fn merge(&mut self, other: VersionScript) {
        let base = self.nodes.len();
        self.nodes.extend(other.nodes);
        self.patterns
            .extend(other.patterns.into_iter().map(|pattern| VersionPattern {
                node: pattern.node + base,
                ..pattern
            }));
        self.index();
    }

    /// Makes the lookup tables of its patterns.
    fn index(&mut self) {
        self.literals = Default::default();
        self.wildcards.clear();
        for (position, pattern) in self.patterns.iter().enumerate() {
            if pattern.literal {
                self.literals[usize::from(pattern.demangled)]
                    .entry(pattern.text.clone())
                    .or_default()
                    .push(position);
            } else {
                self.wildcards.push(position);
            }
        }
    }

    /// The patterns of its `global:` parts (all of them in a dynamic list, which has no `local:`).
    pub fn global_patterns(&self) -> impl Iterator<Item = &str> {
        self.patterns
            .iter()
            .filter(|pattern| !pattern.local)
            .map(|pattern| pattern.text.as_str())
    }

    /// Its named version nodes in order (an output defines each, numbered from 2).
    pub fn named_nodes(&self) -> impl Iterator<Item = &VersionNode> {
        self.nodes.iter().filter(|node| node.name.is_some())
    }

    /// Whether a version of this name is one of its nodes.
    pub fn defines_version(&self, version: &str) -> bool {
        self.nodes.iter().any(|node| node.name.as_deref() == Some(version))
    }

    /// Whether some pattern matches demangled names: then [`VersionScript::version_of`] wants them.
    pub fn matches_demangled_names(&self) -> bool {
        self.patterns.iter().any(|pattern| pattern.demangled)
    }

    /// What the script says of global symbol `name` (`demangled`: its demangled name, if it is a C++ one),
    /// as GNU ld decides it: the first node a literal pattern of which matches wins (a `global:` one before
    /// the same node's `local:` ones); otherwise the last node a wildcard of which matches, `global:` before
    /// `local:`, and a lone `*` only where nothing more specific matches. `None`: no pattern matches.
    pub fn version_of(&self, name: &str, demangled: Option<&str>) -> Option<Versioned<'_>> {
        // A literal match decides alone: the first node with one, its `global:` part before its `local:` one
        // (earlier wildcard matches are overridden by it).
        let subject = demangled.unwrap_or(name);
        let literal = [name, subject]
            .into_iter()
            .zip(&self.literals)
            .filter_map(|(text, literals)| literals.get(text))
            .flatten()
            .map(|position| &self.patterns[*position])
            .min_by_key(|pattern| (pattern.node, pattern.local));
        if let Some(pattern) = literal {
            return Some(if pattern.local {
                Versioned::Local
            } else {
                Versioned::Global(self.nodes[pattern.node].name.as_deref())
            });
        }
        // Otherwise the last node a wildcard of which matches, a lone `*` only where nothing else does.
        let (mut global, mut star_global, mut local, mut star_local) = (None, None, None, None);
        for pattern in self.wildcards.iter().map(|position| &self.patterns[*position]) {
            let text = if pattern.demangled { subject } else { name };
            if !glob_matches(&pattern.text, text) {
                continue;
            }
            let slot = match (pattern.local, pattern.text == "*") {
                (false, false) => &mut global,
                (false, true) => &mut star_global,
                (true, false) => &mut local,
                (true, true) => &mut star_local,
            };
            *slot = (*slot).max(Some(pattern.node));
        }
        if global.is_none() && local.is_none() {
            global = star_global;
        }
        if let Some(node) = global {
            return Some(Versioned::Global(self.nodes[node].name.as_deref()));
        }
        local.or(star_local).map(|_| Versioned::Local)
    }

    /// The exact names (no wildcard) of its `global:` parts, with their node's name and whether they are
    /// demangled C++ names.
    pub fn exact_global_names(&self) -> impl Iterator<Item = (Option<&str>, &str, bool)> {
        self.patterns
            .iter()
            .filter(|pattern| !pattern.local && pattern.literal)
            .map(|pattern| {
                (
                    self.nodes[pattern.node].name.as_deref(),
                    pattern.text.as_str(),
                    pattern.demangled,
                )
            })
    }

    /// Whether the script makes global symbol `name` local.
    pub fn makes_local(&self, name: &str) -> bool {
        self.version_of(name, None) == Some(Versioned::Local)
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
            // A word ends at a space, a brace, `;`, a quote, or a `:` that is not half of C++'s `::`.
            let mut end = at;
            while end < bytes.len() {
                let byte = bytes[end];
                if byte.is_ascii_whitespace() || matches!(byte, b'{' | b'}' | b';' | b'"') {
                    break;
                }
                if byte == b':' {
                    if bytes.get(end + 1) == Some(&b':') {
                        end += 2;
                        continue;
                    }
                    break;
                }
                end += 1;
            }
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
        assert!(VersionScript::parse("{ extern \"Java\" { foo; }; };").is_err());
        assert!(VersionScript::parse("V1 { a; }; V2 { b; } V9;").is_err());
        assert!(VersionScript::parse("{ a; }; V2 { b; };").is_err());
        // GNU ld's precedence: a literal match in the first node that has one, else the last wildcard; a lone
        // `*` only where nothing more specific matches; `extern "C++"` patterns match demangled names.
        let script = VersionScript::parse(
            "V1 { global: a*; ab; local: *; }; V2 { global: *; local: abc; x*; }; V3 { extern \"C++\" { \"ns::f(int)\"; ns::g*; }; } V2 V1;",
        )
        .unwrap();
        let version = |name: &str, demangled: Option<&str>| script.version_of(name, demangled);
        assert_eq!(version("ab", None), Some(Versioned::Global(Some("V1"))));
        assert_eq!(version("abc", None), Some(Versioned::Local));
        assert_eq!(version("axe", None), Some(Versioned::Global(Some("V1"))));
        assert_eq!(version("xy", None), Some(Versioned::Local));
        assert_eq!(version("other", None), Some(Versioned::Global(Some("V2"))));
        assert_eq!(
            version("_ZN2ns1fEi", Some("ns::f(int)")),
            Some(Versioned::Global(Some("V3")))
        );
        assert_eq!(
            version("_ZN2ns1gEv", Some("ns::g()")),
            Some(Versioned::Global(Some("V3")))
        );
        let named: Vec<_> = script
            .named_nodes()
            .map(|node| (node.name.clone(), node.parents.clone()))
            .collect();
        assert_eq!(named[2], (Some("V3".into()), vec!["V2".into(), "V1".into()]));
        assert!(glob_matches("f[a-c]?o*", "fbxoooo"));
        assert!(!glob_matches("f[!a-c]o", "fao"));
        assert!(glob_matches("*", ""));
        assert!(!glob_matches("a*b", "acd"));
    }
}
