//! Calling-convention spec strings (`gpr:rcx,rdx; xmm:xmm0; ret:rax`), parsed with the pest grammar in
//! `spec.pest` into [`Spec`], our own AST. The declaration checks and the runtime's planner share it.

use std::ops::Range;

use pest::Parser;
use pest_derive::Parser;

#[derive(Parser)]
#[grammar = "spec.pest"]
struct SpecGrammar;

/// Which list of a spec a key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecList {
    /// `args`: positional tokens, registers of either class or `stack`/`mem`.
    Positional,
    /// `gpr`/`arg_gpr`.
    IntegerArguments,
    /// `xmm`/`arg_xmm`/`fpr`.
    FloatArguments,
    /// `ret`/`ret_gpr`.
    IntegerReturn,
    /// `ret_xmm`/`ret_fpr`.
    FloatReturn,
    /// `csr`.
    CalleeSaved,
}

impl SpecList {
    /// The list a (case-insensitive) spec key names, if it is one of the known keys or aliases.
    pub fn from_key(key: &str) -> Option<SpecList> {
        const KEYS: [(&str, SpecList); 10] = [
            ("args", SpecList::Positional),
            ("gpr", SpecList::IntegerArguments),
            ("arg_gpr", SpecList::IntegerArguments),
            ("xmm", SpecList::FloatArguments),
            ("arg_xmm", SpecList::FloatArguments),
            ("fpr", SpecList::FloatArguments),
            ("ret", SpecList::IntegerReturn),
            ("ret_gpr", SpecList::IntegerReturn),
            ("ret_xmm", SpecList::FloatReturn),
            ("ret_fpr", SpecList::FloatReturn),
        ];
        if key.eq_ignore_ascii_case("csr") {
            return Some(SpecList::CalleeSaved);
        }
        KEYS.iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(key))
            .map(|(_, list)| *list)
    }
}

/// A piece of the spec text with its byte range, for diagnostics that point at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecToken<'a> {
    pub text: &'a str,
    pub start: usize,
}

impl SpecToken<'_> {
    pub fn span(&self) -> Range<usize> {
        self.start..self.start + self.text.len()
    }
}

/// One `key:list` segment as written: the trimmed key and its trimmed, non-empty items.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecSegment<'a> {
    pub key: SpecToken<'a>,
    /// The list this key names; `None` for an unknown key.
    pub list: Option<SpecList>,
    pub items: Vec<SpecToken<'a>>,
}

/// A parsed spec. Parsing never fails; unknown keys are kept so that callers can note them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spec<'a> {
    pub segments: Vec<SpecSegment<'a>>,
}

impl<'a> Spec<'a> {
    pub fn parse(text: &'a str) -> Spec<'a> {
        let mut segments = Vec::new();
        // The grammar accepts every string; an error could only come from pest's recursion guard.
        let Ok(mut pairs) = SpecGrammar::parse(Rule::spec, text) else {
            return Spec { segments };
        };
        let Some(spec) = pairs.next() else {
            return Spec { segments };
        };
        for segment in spec.into_inner().filter(|pair| pair.as_rule() == Rule::segment) {
            let mut key = None;
            let mut items = Vec::new();
            for part in segment.into_inner() {
                match part.as_rule() {
                    Rule::key => key = Some(trimmed(part.as_str(), part.as_span().start())),
                    Rule::list => {
                        for item in part.into_inner() {
                            let token = trimmed(item.as_str(), item.as_span().start());
                            if !token.text.is_empty() {
                                items.push(token);
                            }
                        }
                    }
                    _ => {}
                }
            }
            let Some(key) = key else { continue };
            if key.text.is_empty() && items.is_empty() {
                continue;
            }
            segments.push(SpecSegment {
                key,
                list: SpecList::from_key(key.text),
                items,
            });
        }
        Spec { segments }
    }

    /// Every item of every segment of `list`, in order (a repeated key appends).
    pub fn items(&self, list: SpecList) -> impl Iterator<Item = &SpecToken<'a>> {
        self.segments
            .iter()
            .filter(move |segment| segment.list == Some(list))
            .flat_map(|segment| segment.items.iter())
    }

    /// The first key or item that cannot be a key, a register name or a stack token: one holding a character
    /// other than ASCII letters, digits, `_`, `.`, `$` and `-` (such as the `(` of `gpr:(`). NeverC's parser
    /// accepts such specs and skips the token; a spec that says something no target can mean is refused
    /// instead, on every path that plans.
    pub fn malformed_token(&self) -> Option<&SpecToken<'a>> {
        let well_formed = |token: &SpecToken<'_>| {
            token
                .text
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'$' | b'-'))
        };
        self.segments
            .iter()
            .flat_map(|segment| std::iter::once(&segment.key).chain(&segment.items))
            .find(|token| !well_formed(token))
    }

    /// Segments whose key is not a known key or alias.
    pub fn unknown_segments(&self) -> impl Iterator<Item = &SpecSegment<'a>> {
        self.segments.iter().filter(|segment| segment.list.is_none())
    }

    /// NeverC's emptiness: no argument registers, no positional tokens and no return registers
    /// (a spec holding only `csr` is empty).
    pub fn is_empty(&self) -> bool {
        [
            SpecList::Positional,
            SpecList::IntegerArguments,
            SpecList::FloatArguments,
            SpecList::IntegerReturn,
            SpecList::FloatReturn,
        ]
        .into_iter()
        .all(|list| self.items(list).next().is_none())
    }
}

fn trimmed(text: &str, start: usize) -> SpecToken<'_> {
    let leading = text.len() - text.trim_start().len();
    SpecToken {
        text: text.trim(),
        start: start + leading,
    }
}

/// Whether a positional token forces a stack slot.
pub fn is_stack_token(token: &str) -> bool {
    token.eq_ignore_ascii_case("stack") || token.eq_ignore_ascii_case("mem")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(spec: &Spec<'_>, list: SpecList) -> Vec<String> {
        spec.items(list).map(|token| token.text.to_string()).collect()
    }

    #[test]
    fn rule_segment_splits_at_the_first_colon_and_trims() {
        let spec = Spec::parse(" gpr: rcx, ,rdx ;; RET:rax;csr");
        assert_eq!(texts(&spec, SpecList::IntegerArguments), ["rcx", "rdx"]);
        assert_eq!(texts(&spec, SpecList::IntegerReturn), ["rax"]);
        assert_eq!(spec.segments.len(), 3);
        assert_eq!(spec.segments[2].list, Some(SpecList::CalleeSaved));
        let rdx = spec.items(SpecList::IntegerArguments).nth(1).unwrap();
        assert_eq!(&" gpr: rcx, ,rdx ;; RET:rax;csr"[rdx.span()], "rdx");
    }

    #[test]
    fn rule_keys_are_case_insensitive_with_aliases_and_repeats_append() {
        let spec = Spec::parse("ARG_GPR:r8;Fpr:xmm1;arg_xmm:xmm2;gpr:r9;RET_FPR:xmm0;args:rcx,STACK,mem");
        assert_eq!(texts(&spec, SpecList::IntegerArguments), ["r8", "r9"]);
        assert_eq!(texts(&spec, SpecList::FloatArguments), ["xmm1", "xmm2"]);
        assert_eq!(texts(&spec, SpecList::FloatReturn), ["xmm0"]);
        assert_eq!(texts(&spec, SpecList::Positional), ["rcx", "STACK", "mem"]);
        assert!(is_stack_token("STACK") && is_stack_token("mem") && !is_stack_token("rcx"));
    }

    #[test]
    fn rule_unknown_keys_are_kept_and_anything_parses() {
        let spec = Spec::parse("bogus:rcx;gpr:rdx");
        assert_eq!(
            spec.unknown_segments().map(|s| s.key.text).collect::<Vec<_>>(),
            ["bogus"]
        );
        for text in ["", ";;;", ":", "a:b:c", ",,,", "gpr", "\u{1F600}:x", "gpr:;ret:"] {
            let spec = Spec::parse(text);
            assert!(spec.is_empty(), "{text:?}");
        }
        assert_eq!(
            texts(&Spec::parse("a:b:c"), SpecList::IntegerArguments),
            Vec::<String>::new()
        );
        assert_eq!(Spec::parse("a:b:c").segments[0].items[0].text, "b:c");
    }

    #[test]
    fn rule_tokens_that_no_target_can_mean_are_malformed() {
        assert_eq!(Spec::parse("gpr:(").malformed_token().map(|t| t.text), Some("("));
        assert_eq!(
            Spec::parse("gpr:rcx rdx").malformed_token().map(|t| t.text),
            Some("rcx rdx")
        );
        assert_eq!(Spec::parse("g(pr:rcx").malformed_token().map(|t| t.start), Some(0));
        assert!(
            Spec::parse(" gpr: rcx, ,rdx ;; RET:rax;csr:r12;args:STACK,x0")
                .malformed_token()
                .is_none()
        );
    }

    #[test]
    fn rule_a_spec_with_only_csr_is_empty() {
        assert!(Spec::parse("csr:r12").is_empty());
        assert!(!Spec::parse("ret:rax").is_empty());
        assert!(!Spec::parse("args:stack").is_empty());
    }
}
