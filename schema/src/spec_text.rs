//! The list structure of calling-convention spec strings, as far as declaration checks need it.
//!
//! The full spec grammar (with notes for unknown keys and positional tokens) lives in the runtime; the
//! declarations only need to know which register names each list holds, and declarations are strict: an
//! unknown key there is an error rather than a note.

/// Which list of a spec a name appears in.
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
        let key = key.to_ascii_lowercase();
        Some(match key.as_str() {
            "args" => SpecList::Positional,
            "gpr" | "arg_gpr" => SpecList::IntegerArguments,
            "xmm" | "arg_xmm" | "fpr" => SpecList::FloatArguments,
            "ret" | "ret_gpr" => SpecList::IntegerReturn,
            "ret_xmm" | "ret_fpr" => SpecList::FloatReturn,
            "csr" => SpecList::CalleeSaved,
            _ => return None,
        })
    }
}

/// One `key:list` segment: the key as written and its trimmed, non-empty items.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecSegment<'a> {
    pub key: &'a str,
    pub items: Vec<&'a str>,
}

/// Splits a spec into segments the way NeverC does: `;`-separated, each split at the first `:`.
/// A segment without `:` has an empty item list.
pub fn spec_segments(spec: &str) -> Vec<SpecSegment<'_>> {
    spec.split(';')
        .map(str::trim)
        .filter(|segment| !segment.is_empty())
        .map(|segment| {
            let (key, list) = segment.split_once(':').unwrap_or((segment, ""));
            SpecSegment {
                key: key.trim(),
                items: list.split(',').map(str::trim).filter(|item| !item.is_empty()).collect(),
            }
        })
        .collect()
}

/// Whether a positional token forces a stack slot.
pub fn is_stack_token(token: &str) -> bool {
    token.eq_ignore_ascii_case("stack") || token.eq_ignore_ascii_case("mem")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_neverc() {
        let segments = spec_segments(" gpr: rcx, ,rdx ;; RET:rax;csr");
        assert_eq!(segments.len(), 3);
        assert_eq!(
            segments[0],
            SpecSegment {
                key: "gpr",
                items: vec!["rcx", "rdx"]
            }
        );
        assert_eq!(SpecList::from_key(segments[1].key), Some(SpecList::IntegerReturn));
        assert!(segments[2].items.is_empty());
        assert_eq!(SpecList::from_key("Arg_Xmm"), Some(SpecList::FloatArguments));
        assert_eq!(SpecList::from_key("bogus"), None);
    }
}
