//! Reads the parts of LLVM IR text that calling-convention materialization needs, keeping byte offsets
//! into the original text so that edits leave everything else byte-identical.
//!
//! It understands the text clang-14 writes (`-S -emit-llvm`, typed pointers) and the text newer LLVM writes
//! (opaque `ptr`): named struct types, function definitions and declarations (their headers go through
//! the signature grammar), attribute groups, direct `call`/`invoke` sites, other references to functions,
//! and `llvm.global.annotations` entries made by `__attribute__((annotate("neverc-callconv=<spec>")))`.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::LazyLock;

use memchr::memmem;
use rustc_hash::FxHashMap;

use crate::cc::layout::TypeTable;
use crate::cc::signature::{Signature, SignatureError, parse_type_definition};

/// The function attribute holding a spec.
pub const SPEC_ATTRIBUTE: &str = "neverc-callconv";
/// The function attribute holding a plan.
pub const PLAN_ATTRIBUTE: &str = "neverc-cc-plan-v1";
/// The prefix of annotation strings that attach a spec.
pub const SPEC_ANNOTATION_PREFIX: &str = "neverc-callconv=";

/// Linkage, preemption, visibility and DLL storage keywords that precede the calling convention.
const LINKAGE_WORDS: &[&str] = &[
    "private",
    "internal",
    "available_externally",
    "linkonce",
    "weak",
    "common",
    "appending",
    "extern_weak",
    "linkonce_odr",
    "weak_odr",
    "external",
    "dso_local",
    "dso_preemptable",
    "default",
    "hidden",
    "protected",
    "dllimport",
    "dllexport",
];
const CALLING_CONVENTION_WORDS: &[&str] = &[
    "ccc",
    "fastcc",
    "coldcc",
    "tailcc",
    "swiftcc",
    "swifttailcc",
    "cfguard_checkcc",
    "webkit_jscc",
    "anyregcc",
    "preserve_mostcc",
    "preserve_allcc",
    "cxx_fast_tlscc",
    "ghccc",
    "x86_stdcallcc",
    "x86_fastcallcc",
    "x86_thiscallcc",
    "x86_vectorcallcc",
    "x86_regcallcc",
    "x86_64_sysvcc",
    "win64cc",
    "aarch64_vector_pcs",
    "aarch64_sve_vector_pcs",
];
const FAST_MATH_FLAGS: &[&str] = &["nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc", "fast"];

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ReadError {
    pub line: usize,
    pub message: String,
    pub span: Range<usize>,
}

/// A `define` or `declare`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionHeader {
    /// `@name` as written.
    pub name: String,
    pub is_definition: bool,
    pub line: usize,
    /// The whole header line.
    pub span: Range<usize>,
    /// Index into [`Module::signatures`]; functions with the same signature text share one entry.
    pub signature: usize,
    /// Where a calling convention goes (after linkage and visibility).
    pub convention_at: usize,
    /// An explicit calling convention (`fastcc`, `cc 1000`).
    pub convention: Option<Range<usize>>,
    /// `#N` attribute group reference.
    pub attribute_group: Option<(u32, Range<usize>)>,
    /// Where inline function attributes can be added (before ` {` or at the end of a declaration).
    pub attributes_at: usize,
    /// Inline `"neverc-callconv"="…"` / `"neverc-cc-plan-v1"="…"` attributes written on the header.
    pub inline_spec: Option<(Range<usize>, String)>,
    pub inline_plan: Option<(Range<usize>, String)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttributeGroup {
    pub id: u32,
    pub line: usize,
    /// The whole `attributes #N = { … }` line.
    pub span: Range<usize>,
    /// Byte range of the text between the braces.
    pub body: Range<usize>,
    /// Range (within the whole text) and value of a `"neverc-callconv"="…"` entry.
    pub spec: Option<(Range<usize>, String)>,
    pub plan: Option<(Range<usize>, String)>,
}

/// A `call` or `invoke` whose callee is a function by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallSite {
    pub callee: String,
    pub line: usize,
    pub convention_at: usize,
    /// An explicit calling convention (`fastcc`, `cc 1000`).
    pub convention: Option<Range<usize>>,
    /// Just after the closing parenthesis of the arguments.
    pub after_arguments: usize,
    pub plan: Option<(Range<usize>, String)>,
    /// `#N` attribute group reference after the arguments.
    pub attribute_group: Option<(u32, Range<usize>)>,
}

/// A use of a function other than as a callee or in its own header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    pub name: String,
    pub line: usize,
    pub offset: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Module {
    /// Distinct function signatures, parsed once each.
    pub signatures: Vec<Signature>,
    pub triple: Option<String>,
    pub types: TypeTable,
    pub functions: Vec<FunctionHeader>,
    pub attribute_groups: Vec<AttributeGroup>,
    /// Function name → spec, from `llvm.global.annotations`.
    pub annotations: HashMap<String, String>,
    /// Private string constants, decoded: `@.str` → text.
    pub strings: HashMap<String, String>,
}

fn is_name_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'$' | b'-')
}

/// The `@name` starting at `at` (which holds `@`), and where it ends.
fn global_name(text: &str, at: usize) -> Option<(String, usize)> {
    let bytes = text.as_bytes();
    if bytes.get(at) != Some(&b'@') {
        return None;
    }
    if bytes.get(at + 1) == Some(&b'"') {
        let close = text[at + 2..].find('"')? + at + 2;
        return Some((text[at..=close].to_string(), close + 1));
    }
    let mut end = at + 1;
    while end < bytes.len() && is_name_char(bytes[end]) {
        end += 1;
    }
    (end > at + 1).then(|| (text[at..end].to_string(), end))
}

/// Decodes LLVM's `\XX` escapes in a quoted string body.
pub fn decode_ir_string(body: &str) -> String {
    let bytes = body.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'\\' && index + 2 < bytes.len() + 1 {
            if let Some(hex) = body.get(index + 1..index + 3)
                && let Ok(value) = u8::from_str_radix(hex, 16)
            {
                out.push(value);
                index += 3;
                continue;
            }
            if bytes.get(index + 1) == Some(&b'\\') {
                out.push(b'\\');
                index += 2;
                continue;
            }
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Encodes text for an IR string attribute value.
pub fn encode_ir_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte == b'"' || byte == b'\\' || !(0x20..0x7f).contains(&byte) {
            out.push_str(&format!("\\{byte:02X}"));
        } else {
            out.push(byte as char);
        }
    }
    out
}

/// Finds `"key"="value"` in `text[range]`; returns the whole entry's range and the decoded value.
fn string_attribute(text: &str, range: Range<usize>, key: &str) -> Option<(Range<usize>, String)> {
    let slice = text.get(range.clone())?;
    // Most headers and call sites carry no string attribute at all.
    memchr::memchr(b'"', slice.as_bytes())?;
    let needle = format!("\"{key}\"=\"");
    let start = slice.find(&needle)?;
    let value_start = start + needle.len();
    let value_end = slice[value_start..].find('"')? + value_start;
    Some((
        range.start + start..range.start + value_end + 1,
        decode_ir_string(&slice[value_start..value_end]),
    ))
}

/// Index just past the parenthesis that closes the one at `open`.
fn matching_paren(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    for (offset, byte) in text.as_bytes()[open..].iter().enumerate() {
        match byte {
            b'"' => in_string = !in_string,
            b'(' if !in_string => depth += 1,
            b')' if !in_string => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(open + offset + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Skips blanks from `at`.
fn skip_blanks(text: &str, mut at: usize) -> usize {
    let bytes = text.as_bytes();
    while at < bytes.len() && bytes[at] == b' ' {
        at += 1;
    }
    at
}

/// The word starting at `at` and where it ends.
fn word_at(text: &str, at: usize) -> (&str, usize) {
    let bytes = text.as_bytes();
    let mut end = at;
    while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
        end += 1;
    }
    (&text[at..end], end)
}

/// Skips any of `words` (each followed by blanks) from `at`.
fn skip_words(text: &str, mut at: usize, words: &[&str]) -> usize {
    loop {
        let (word, end) = word_at(text, at);
        if words.contains(&word) {
            at = skip_blanks(text, end);
        } else {
            return at;
        }
    }
}

/// An explicit calling convention at `at` (`cc 1000`, `fastcc`, ...): its range, and where the text after it
/// starts.
fn calling_convention_at(text: &str, at: usize) -> Option<(Range<usize>, usize)> {
    let (word, end) = word_at(text, at);
    if word == "cc" {
        let number_start = skip_blanks(text, end);
        let (number, number_end) = word_at(text, number_start);
        (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
            .then(|| (at..number_end, skip_blanks(text, number_end)))
    } else {
        CALLING_CONVENTION_WORDS
            .contains(&word)
            .then(|| (at..end, skip_blanks(text, end)))
    }
}

/// The first `@name` in `text[from..to]` directly followed by `(`: where it starts, the name, and where it ends.
fn first_called_name(text: &str, from: usize, to: usize) -> Option<(usize, String, usize)> {
    let mut search = from;
    while let Some(found) = text[search..to].find('@') {
        let position = search + found;
        match global_name(text, position) {
            Some((name, end)) if text.as_bytes().get(end) == Some(&b'(') => return Some((position, name, end)),
            Some((_, end)) => search = end,
            None => search = position + 1,
        }
    }
    None
}

/// Reads everything but function bodies: headers, types, attribute groups, strings and annotations.
/// Materialization reads bodies in a second, streaming pass.
pub fn read_declarations(text: &str) -> Result<Module, ReadError> {
    let mut module = Module::default();
    // One pass of a vectorized search sizes the header table, so that it is never moved while it grows.
    let headers = memmem::find_iter(text.as_bytes(), b"\ndefine ").count()
        + memmem::find_iter(text.as_bytes(), b"\ndeclare ").count()
        + 1;
    module.functions.reserve(headers);
    let mut offset = 0;
    let mut annotation_lines = Vec::new();
    let mut signature_index: FxHashMap<(&str, &str), usize> = FxHashMap::default();
    for (index, raw_line) in text.split_inclusive('\n').enumerate() {
        let line_number = index + 1;
        let start = offset;
        offset += raw_line.len();
        let line = raw_line.trim_end_matches(['\n', '\r']);
        let span = start..start + line.len();
        let error = |message: String, span: Range<usize>| ReadError {
            line: line_number,
            message,
            span,
        };
        if let Some(rest) = line.strip_prefix("target triple = \"") {
            module.triple = rest.strip_suffix('"').map(str::to_string);
        } else if line.starts_with('%') && line.contains(" = type ") {
            let (name, ty) = parse_type_definition(line).map_err(|e: SignatureError| {
                error(
                    format!("type definition: {}", e.message),
                    start + e.span.start..start + e.span.end,
                )
            })?;
            if let Some(ty) = ty {
                module.types.insert(name, ty);
            }
        } else if line.starts_with("define ") || line.starts_with("declare ") {
            let header = read_header(
                text,
                span.clone(),
                line_number,
                &mut module.signatures,
                &mut signature_index,
            )?;
            module.functions.push(header);
        } else if line.starts_with("attributes #") {
            module
                .attribute_groups
                .push(read_attribute_group(text, span.clone(), line_number)?);
        } else if line.starts_with("@llvm.global.annotations ") {
            annotation_lines.push(span.clone());
        } else if line.starts_with('@')
            && let Some((name, end)) = global_name(text, start)
            && let Some(body) = line.find("c\"").map(|at| start + at + 2)
            && line[end - start..].contains(" constant ")
            && let Some(close) = text[body..span.end].find('"')
        {
            module.strings.insert(name, decode_ir_string(&text[body..body + close]));
        }
    }
    for span in annotation_lines {
        read_annotations(text, span, &mut module);
    }
    Ok(module)
}

fn read_header<'t>(
    text: &'t str,
    span: Range<usize>,
    line: usize,
    signatures: &mut Vec<Signature>,
    signature_index: &mut FxHashMap<(&'t str, &'t str), usize>,
) -> Result<FunctionHeader, ReadError> {
    let header = &text[span.clone()];
    let error = |message: &str, at: usize| ReadError {
        line,
        message: message.to_string(),
        span: at..at,
    };
    let is_definition = header.starts_with("define ");
    let keyword_end = span.start + if is_definition { 7 } else { 8 };
    // Linkage and visibility words come first; the calling convention (if any) follows them.
    let convention_at = skip_words(text, keyword_end, LINKAGE_WORDS);
    let (convention, at) = match calling_convention_at(text, convention_at) {
        Some((range, after)) => (Some(range), after),
        None => (None, convention_at),
    };
    // The function name is the first `@name` directly followed by `(` outside the return type.
    let (_, name, name_end) =
        first_called_name(text, at, span.end).ok_or_else(|| error("function header without a name", span.start))?;
    let return_text = text[at..name_end - name.len()].trim();
    let parameters_end = matching_paren(text, name_end)
        .filter(|end| *end <= span.end)
        .ok_or_else(|| error("unbalanced parameter list", name_end))?;
    let parameters_text = &text[name_end..parameters_end];
    let signature = match signature_index.get(&(return_text, parameters_text)) {
        Some(index) => *index,
        None => {
            let signature_text = format!("{return_text} {parameters_text}");
            let parsed = Signature::parse(&signature_text).map_err(|e| ReadError {
                line,
                message: format!("signature of {name}: {}", e.message),
                span: span.clone(),
            })?;
            signatures.push(parsed);
            signature_index.insert((return_text, parameters_text), signatures.len() - 1);
            signatures.len() - 1
        }
    };
    let tail = parameters_end..span.end;
    let attribute_group = group_reference(text, tail.clone());
    let attributes_at = if is_definition && header.ends_with(" {") {
        span.end - 2
    } else {
        span.end
    };
    Ok(FunctionHeader {
        inline_spec: string_attribute(text, tail.clone(), SPEC_ATTRIBUTE),
        inline_plan: string_attribute(text, tail, PLAN_ATTRIBUTE),
        name,
        is_definition,
        line,
        span,
        signature,
        convention_at,
        convention,
        attribute_group,
        attributes_at,
    })
}

fn read_attribute_group(text: &str, span: Range<usize>, line: usize) -> Result<AttributeGroup, ReadError> {
    let header = &text[span.clone()];
    let error = |message: &str| ReadError {
        line,
        message: message.to_string(),
        span: span.clone(),
    };
    let (number, _) = word_at(text, span.start + "attributes #".len());
    let id = number.parse().map_err(|_| error("attribute group without a number"))?;
    let open = header.find('{').ok_or_else(|| error("attribute group without `{`"))?;
    let close = header.rfind('}').ok_or_else(|| error("attribute group without `}`"))?;
    let body = span.start + open + 1..span.start + close;
    Ok(AttributeGroup {
        id,
        line,
        spec: string_attribute(text, body.clone(), SPEC_ATTRIBUTE),
        plan: string_attribute(text, body.clone(), PLAN_ATTRIBUTE),
        span,
        body,
    })
}

/// The first ` #N` attribute group reference in `text[range]` (not inside a string).
fn group_reference(text: &str, range: Range<usize>) -> Option<(u32, Range<usize>)> {
    let slice = text.get(range.clone())?;
    let mut in_string = false;
    for (offset, byte) in slice.bytes().enumerate() {
        match byte {
            b'"' => in_string = !in_string,
            b'#' if !in_string && offset > 0 && slice.as_bytes()[offset - 1] == b' ' => {
                let number_start = range.start + offset + 1;
                let (number, number_end) = word_at(text, number_start);
                if let Ok(id) = number.parse() {
                    return Some((id, number_start - 1..number_end));
                }
            }
            _ => {}
        }
    }
    None
}

/// Records a direct `call`/`invoke`; returns the offset of its callee name so that it is not counted as
/// an address-taking reference.
pub(crate) fn read_call(text: &str, span: Range<usize>, line: usize, calls: &mut Vec<CallSite>) -> Option<usize> {
    static CALL: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(" call "));
    static INVOKE: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(" invoke "));
    let body = text[span.clone()].as_bytes();
    let keyword = [(&*CALL, 6), (&*INVOKE, 8)]
        .iter()
        .filter_map(|(finder, length)| finder.find(body).map(|at| (at, *length)))
        .min()?;
    let convention_at = skip_words(text, span.start + keyword.0 + keyword.1, FAST_MATH_FLAGS);
    let convention = calling_convention_at(text, convention_at).map(|(range, _)| range);
    let (position, name, end) = first_called_name(text, convention_at, span.end)?;
    let after_arguments = matching_paren(text, end).filter(|close| *close <= span.end)?;
    let plan = string_attribute(text, after_arguments..span.end, PLAN_ATTRIBUTE);
    let attribute_group = group_reference(text, after_arguments..span.end);
    calls.push(CallSite {
        callee: name,
        line,
        convention_at,
        convention,
        after_arguments,
        plan,
        attribute_group,
    });
    Some(position)
}

pub(crate) fn collect_references(
    text: &str,
    span: Range<usize>,
    line: usize,
    references: &mut Vec<Reference>,
    skip: Option<usize>,
) {
    let mut search = span.start;
    while let Some(found) = text[search..span.end].find('@') {
        let position = search + found;
        match global_name(text, position) {
            Some((name, end)) => {
                if Some(position) != skip {
                    references.push(Reference {
                        name,
                        line,
                        offset: position,
                    });
                }
                search = end;
            }
            None => search = position + 1,
        }
    }
}

/// `llvm.global.annotations` entries pair a function with a string constant; those starting with
/// `neverc-callconv=` attach a spec.
fn read_annotations(text: &str, span: Range<usize>, module: &mut Module) {
    let line = &text[span.clone()];
    for entry in line.split("} {").skip(1).chain(line.split(" { ").skip(1)) {
        let names: Vec<String> = entry
            .match_indices('@')
            .filter_map(|(at, _)| global_name(entry, at).map(|(name, _)| name))
            .collect();
        let Some(function) = names.first() else { continue };
        for name in names.iter().skip(1) {
            if let Some(annotation) = module.strings.get(name)
                && let Some(spec) = annotation.trim_end_matches('\0').strip_prefix(SPEC_ANNOTATION_PREFIX)
            {
                module
                    .annotations
                    .entry(function.clone())
                    .or_insert_with(|| spec.to_string());
            }
        }
    }
}
