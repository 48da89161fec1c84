//! Reads the parts of LLVM IR text that calling-convention materialization needs, keeping byte offsets
//! into the original text so that edits leave everything else byte-identical.
//!
//! It understands the text clang-14 writes (`-S -emit-llvm`, typed pointers) and the text newer LLVM writes
//! (opaque `ptr`): named struct types, function definitions and declarations (their headers go through
//! the signature grammar), attribute groups, direct `call`/`invoke` sites, other references to functions,
//! and `llvm.global.annotations` entries made by `__attribute__((annotate("neverc-callconv=<spec>")))`.

use std::collections::HashMap;
use std::ops::Range;

use rustc_hash::FxHashMap;

use crate::layout::TypeTable;
use crate::signature::{Signature, SignatureError, parse_type_definition};

/// The function attribute holding a spec.
pub const SPEC_ATTRIBUTE: &str = "neverc-callconv";
/// The function attribute holding a plan.
pub const PLAN_ATTRIBUTE: &str = "neverc-cc-plan-v1";
/// The prefix of annotation strings that attach a spec.
pub const SPEC_ANNOTATION_PREFIX: &str = "neverc-callconv=";

/// Linkage, preemption, visibility and DLL storage keywords that precede the calling convention.
fn is_linkage_word(word: &str) -> bool {
    matches!(
        word,
        "private"
            | "internal"
            | "available_externally"
            | "linkonce"
            | "weak"
            | "common"
            | "appending"
            | "extern_weak"
            | "linkonce_odr"
            | "weak_odr"
            | "external"
            | "dso_local"
            | "dso_preemptable"
            | "default"
            | "hidden"
            | "protected"
            | "dllimport"
            | "dllexport"
    )
}
/// Calling-convention keywords (`cc N` is read separately).
fn is_calling_convention_word(word: &str) -> bool {
    matches!(
        word,
        "ccc"
            | "fastcc"
            | "coldcc"
            | "tailcc"
            | "swiftcc"
            | "swifttailcc"
            | "cfguard_checkcc"
            | "webkit_jscc"
            | "anyregcc"
            | "preserve_mostcc"
            | "preserve_allcc"
            | "cxx_fast_tlscc"
            | "ghccc"
            | "x86_stdcallcc"
            | "x86_fastcallcc"
            | "x86_thiscallcc"
            | "x86_vectorcallcc"
            | "x86_regcallcc"
            | "x86_64_sysvcc"
            | "win64cc"
            | "aarch64_vector_pcs"
            | "aarch64_sve_vector_pcs"
    )
}
/// Fast-math flags, which may precede a call's calling convention.
fn is_fast_math_flag(word: &str) -> bool {
    matches!(
        word,
        "nnan" | "ninf" | "nsz" | "arcp" | "contract" | "afn" | "reassoc" | "fast"
    )
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ReadError {
    pub line: usize,
    pub message: String,
    pub span: Range<usize>,
}

/// No attribute group, no inline attributes: the `u32::MAX` marker of the compact records below.
pub const NONE: u32 = u32::MAX;

/// A `define` or `declare`, in a compact record (offsets are `u32`: modules are limited to 4 GiB).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionHeader<'t> {
    /// `@name` as written.
    pub name: &'t str,
    /// The name's hash for the materializer's name table, computed while the name is in the cache.
    pub name_hash: u64,
    pub line: u32,
    /// Index into [`Module::signatures`]; functions with the same signature text share one entry.
    pub signature: u32,
    /// Where a calling convention goes (after linkage and visibility).
    pub convention_at: u32,
    /// The end of an explicit calling convention (`fastcc`, `cc 1000`); `convention_at` when there is none.
    pub convention_end: u32,
    /// Where inline function attributes can be added (before ` {` or at the end of a declaration).
    pub attributes_at: u32,
    /// The `#N` attribute group reference: `N` (or [`NONE`]) and the range of `#N`.
    pub group: u32,
    pub group_start: u32,
    pub group_end: u32,
    /// Index into [`Module::inline_attributes`], or [`NONE`].
    pub inline_attributes: u32,
    pub is_definition: bool,
}

impl FunctionHeader<'_> {
    /// An explicit calling convention (`fastcc`, `cc 1000`).
    pub fn convention(&self) -> Option<Range<usize>> {
        (self.convention_end > self.convention_at).then_some(self.convention_at as usize..self.convention_end as usize)
    }

    /// The `#N` attribute group reference.
    pub fn attribute_group(&self) -> Option<(u32, Range<usize>)> {
        (self.group != NONE).then_some((self.group, self.group_start as usize..self.group_end as usize))
    }
}

/// Inline `"neverc-callconv"="…"` / `"neverc-cc-plan-v1"="…"` attributes written on a function header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InlineAttributes {
    pub spec: Option<(Range<usize>, String)>,
    pub plan: Option<(Range<usize>, String)>,
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

/// A `call` or `invoke` whose callee is a function by name, in a compact record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallSite<'t> {
    pub callee: &'t str,
    /// Where the callee's `@` is (a callee is not an address-taking reference).
    pub callee_at: u32,
    pub convention_at: u32,
    /// The end of an explicit calling convention (`fastcc`, `cc 1000`); `convention_at` when there is none.
    pub convention_end: u32,
    /// Just after the closing parenthesis of the arguments.
    pub after_arguments: u32,
    /// The `#N` attribute group reference after the arguments: `N` (or [`NONE`]) and the range of `#N`.
    pub group: u32,
    pub group_start: u32,
    pub group_end: u32,
    /// The call site carries its own plan attribute.
    pub has_plan: bool,
}

impl CallSite<'_> {
    /// An explicit calling convention (`fastcc`, `cc 1000`).
    pub fn convention(&self) -> Option<Range<usize>> {
        (self.convention_end > self.convention_at).then_some(self.convention_at as usize..self.convention_end as usize)
    }
}

/// A line that may use functions: a line of a function body, or a global's initializer, holding `@`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReferenceLine {
    pub start: u32,
    pub end: u32,
    pub line: u32,
    /// Where the line's first `@` is.
    pub first_at: u32,
    /// How many `@` the line holds (at most 255 are counted).
    pub at_count: u8,
    /// A body line (which may be a call); otherwise a global's line.
    pub in_function: bool,
}

/// A use of a function other than as a callee or in its own header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference<'t> {
    pub name: &'t str,
    pub offset: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Module<'t> {
    /// Distinct function signatures, parsed once each.
    pub signatures: Vec<Signature>,
    pub triple: Option<String>,
    pub types: TypeTable,
    pub functions: Vec<FunctionHeader<'t>>,
    pub inline_attributes: Vec<InlineAttributes>,
    pub attribute_groups: Vec<AttributeGroup>,
    /// Lines after the headers that name a global, in text order; materialization reads only these again.
    pub reference_lines: Vec<ReferenceLine>,
    /// Function name → spec, from `llvm.global.annotations`.
    pub annotations: HashMap<String, String>,
    /// Private string constants, decoded: `@.str` → text.
    pub strings: HashMap<String, String>,
}

fn is_name_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'$' | b'-')
}

/// The `@name` starting at `at` (which holds `@`), and where it ends.
fn global_name(text: &str, at: usize) -> Option<(&str, usize)> {
    let bytes = text.as_bytes();
    if bytes.get(at) != Some(&b'@') {
        return None;
    }
    if bytes.get(at + 1) == Some(&b'"') {
        let close = memchr::memchr(b'"', &bytes[at + 2..])? + at + 2;
        return Some((&text[at..=close], close + 1));
    }
    let mut end = at + 1;
    while end < bytes.len() && is_name_char(bytes[end]) {
        end += 1;
    }
    (end > at + 1).then(|| (&text[at..end], end))
}

/// A line of the text: 1-based number, start, end without the line break (`\n` or `\r\n`), and where
/// its first `@` is and how many it holds.
struct Line {
    number: usize,
    start: usize,
    end: usize,
    first_at: usize,
    at_count: usize,
}

/// A line's record for the second pass (offsets fit in `u32`: `read_module` refuses larger texts).
fn reference_line(line: &Line, in_function: bool) -> ReferenceLine {
    ReferenceLine {
        start: line.start as u32,
        end: line.end as u32,
        line: line.number as u32,
        first_at: line.first_at as u32,
        at_count: line.at_count.min(255) as u8,
        in_function,
    }
}

/// The lines of `text`, found by one vectorized scan for line breaks and `@` together.
fn lines(text: &str) -> impl Iterator<Item = Line> + '_ {
    let bytes = text.as_bytes();
    let mut marks = memchr::memchr2_iter(b'\n', b'@', bytes);
    let mut start = 0;
    let mut number = 0;
    let mut first_at = 0;
    let mut at_count = 0;
    std::iter::from_fn(move || {
        loop {
            let at = match marks.next() {
                Some(at) if bytes[at] == b'@' => {
                    if at_count == 0 {
                        first_at = at;
                    }
                    at_count += 1;
                    continue;
                }
                Some(at) => at,
                // The last line may lack a line break.
                None if start < bytes.len() => bytes.len(),
                None => return None,
            };
            let line_start = start;
            start = at + 1;
            number += 1;
            let mut end = at;
            while end > line_start && bytes[end - 1] == b'\r' {
                end -= 1;
            }
            let line = Line {
                number,
                start: line_start,
                end,
                first_at,
                at_count,
            };
            at_count = 0;
            return Some(line);
        }
    })
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
    let needle = format!("\"{key}\"=\"");
    let start = slice.find(&needle)?;
    let value_start = start + needle.len();
    let value_end = slice[value_start..].find('"')? + value_start;
    Some((
        range.start + start..range.start + value_end + 1,
        decode_ir_string(&slice[value_start..value_end]),
    ))
}

/// Like [`string_attribute`], but a `"key"` in `text[range]` that does not start a well-formed `"key"="value"`
/// entry (a missing value, a value without its closing quote) is an error: such an attribute would otherwise
/// be ignored without a word.
fn checked_string_attribute(
    text: &str,
    range: Range<usize>,
    key: &str,
    line: usize,
) -> Result<Option<(Range<usize>, String)>, ReadError> {
    let found = string_attribute(text, range.clone(), key);
    if found.is_none()
        && let Some(slice) = text.get(range.clone())
        && let Some(at) = slice.find(&format!("\"{key}\""))
    {
        return Err(ReadError {
            line,
            message: format!("malformed `\"{key}\"` attribute: expected `\"{key}\"=\"…\"` with a closing quote"),
            span: range.start + at..range.end,
        });
    }
    if let Some((found, _)) = &found {
        let bytes = text.as_bytes();
        let before = (found.start > range.start).then(|| bytes[found.start - 1]);
        let after = (found.end < range.end).then(|| bytes[found.end]);
        let separates = |byte: Option<u8>, brackets: &[u8]| {
            byte.is_none_or(|byte| byte.is_ascii_whitespace() || brackets.contains(&byte))
        };
        if !separates(before, b"{)") || !separates(after, b"{}") {
            return Err(ReadError {
                line,
                message: format!(
                    "malformed `\"{key}\"` attribute: it must stand apart from its neighbours, separated by blanks"
                ),
                span: found.clone(),
            });
        }
    }
    Ok(found)
}

/// The text to remove with the string attribute at `range` so that what is left stays well formed: the
/// attribute and the blanks before it, or, when nothing but a bracket precedes it, the blanks after it.
pub(crate) fn attribute_removal(text: &str, range: &Range<usize>) -> Range<usize> {
    let bytes = text.as_bytes();
    let blanks_before = bytes[..range.start]
        .iter()
        .rev()
        .take_while(|byte| **byte == b' ' || **byte == b'\t')
        .count();
    if blanks_before > 0 {
        return range.start - blanks_before..range.end;
    }
    let blanks_after = bytes[range.end..]
        .iter()
        .take_while(|byte| **byte == b' ' || **byte == b'\t')
        .count();
    range.start..range.end + blanks_after
}

/// Index just past the parenthesis that closes the one at `open`.
pub(crate) fn matching_paren(text: &str, open: usize) -> Option<usize> {
    let bytes = &text.as_bytes()[open..];
    let mut depth = 0usize;
    let mut in_string = false;
    for offset in memchr::memchr3_iter(b'"', b'(', b')', bytes) {
        match bytes[offset] {
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

/// Skips words for which `is_word` holds (each followed by blanks) from `at`.
fn skip_words(text: &str, mut at: usize, is_word: fn(&str) -> bool) -> usize {
    loop {
        let (word, end) = word_at(text, at);
        if is_word(word) {
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
        is_calling_convention_word(word).then(|| (at..end, skip_blanks(text, end)))
    }
}

/// The first `@name` in `text[from..to]` directly followed by `(`: where it starts, the name, and where it ends.
fn first_called_name(text: &str, from: usize, to: usize) -> Option<(usize, &str, usize)> {
    let mut search = from;
    while let Some(found) = memchr::memchr(b'@', &text.as_bytes()[search..to]) {
        let position = search + found;
        match global_name(text, position) {
            Some((name, end)) if text.as_bytes().get(end) == Some(&b'(') => return Some((position, name, end)),
            Some((_, end)) => search = end,
            None => search = position + 1,
        }
        if search >= to {
            return None;
        }
    }
    None
}

/// Reads a module once: headers, types, attribute groups, strings and annotations, and which later lines
/// name a global (materialization reads only those lines again).
pub fn read_module(text: &str) -> Result<Module<'_>, ReadError> {
    if u32::try_from(text.len()).is_err() {
        return Err(ReadError {
            line: 0,
            message: "modules larger than 4 GiB are not supported".into(),
            span: 0..0,
        });
    }
    let mut module = Module::default();
    // A generous guess (a header or a call takes more than 128 bytes of a typical module, with its body)
    // saves moving the tables while they grow; pages that stay unused cost nothing.
    module.functions.reserve(text.len() / 128);
    module.reference_lines.reserve(text.len() / 128);
    let mut annotation_lines = Vec::new();
    let mut signature_index: FxHashMap<(&str, &str), u32> = FxHashMap::default();
    let mut in_function = false;
    for scanned in lines(text) {
        let (line_number, start, end) = (scanned.number, scanned.start, scanned.end);
        let line = &text[start..end];
        let span = start..end;
        // Nothing but uses of globals is read inside a body; a top-level entity there (the body lacks its
        // closing brace) ends it.
        if in_function && !starts_top_level_entity(line) {
            if line == "}" {
                in_function = false;
            } else if scanned.at_count > 0 {
                module.reference_lines.push(reference_line(&scanned, true));
            }
            continue;
        }
        let error = |message: String, span: Range<usize>| ReadError {
            line: line_number,
            message,
            span,
        };
        if line.starts_with("define ") || line.starts_with("declare ") {
            let header = read_header(text, span, line_number, &mut module, &mut signature_index)?;
            in_function = header.is_definition && line.ends_with('{');
            module.functions.push(header);
        } else if line == "}" {
            in_function = false;
        } else if let Some(rest) = line.strip_prefix("target triple = \"") {
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
        } else if line.starts_with("attributes #") {
            module
                .attribute_groups
                .push(read_attribute_group(text, span, line_number)?);
        } else if line.starts_with("@llvm.global.annotations ") {
            annotation_lines.push(span);
        } else if line.starts_with('@') {
            module.reference_lines.push(reference_line(&scanned, false));
            if let Some((name, name_end)) = global_name(text, start)
                && let Some(body) = line.find("c\"").map(|at| start + at + 2)
                && line[name_end - start..].contains(" constant ")
                && let Some(close) = text[body..end].find('"')
            {
                module
                    .strings
                    .insert(name.to_string(), decode_ir_string(&text[body..body + close]));
            }
        }
    }
    for span in annotation_lines {
        read_annotations(text, span, &mut module);
    }
    Ok(module)
}

/// Whether `line` can only be a top-level entity, never part of a function body.
fn starts_top_level_entity(line: &str) -> bool {
    match line.as_bytes().first() {
        Some(b'd') => line.starts_with("define ") || line.starts_with("declare "),
        Some(b'a') => line.starts_with("attributes #"),
        Some(b'@') => true,
        Some(b'%') => line.contains(" = type "),
        Some(b't') => line.starts_with("target "),
        _ => false,
    }
}

fn read_header<'t>(
    text: &'t str,
    span: Range<usize>,
    line: usize,
    module: &mut Module<'t>,
    signature_index: &mut FxHashMap<(&'t str, &'t str), u32>,
) -> Result<FunctionHeader<'t>, ReadError> {
    let header = &text[span.clone()];
    let error = |message: &str, at: usize| ReadError {
        line,
        message: message.to_string(),
        span: at..at,
    };
    let is_definition = header.starts_with("define ");
    let keyword_end = span.start + if is_definition { 7 } else { 8 };
    // Linkage and visibility words come first; the calling convention (if any) follows them.
    let convention_at = skip_words(text, keyword_end, is_linkage_word);
    let (convention_end, at) = match calling_convention_at(text, convention_at) {
        Some((range, after)) => (range.end, after),
        None => (convention_at, convention_at),
    };
    // The function name is the first `@name` directly followed by `(` outside the return type.
    let (_, name, name_end) =
        first_called_name(text, at, span.end).ok_or_else(|| error("function header without a name", span.start))?;
    let return_text = text[at..name_end - name.len()].trim_ascii();
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
            let index = module.signatures.len() as u32;
            module.signatures.push(parsed);
            signature_index.insert((return_text, parameters_text), index);
            index
        }
    };
    let tail = parameters_end..span.end;
    let (group, group_start, group_end) = match group_reference(text, tail.clone()) {
        Some((id, range)) => (id, range.start as u32, range.end as u32),
        None => (NONE, 0, 0),
    };
    let attributes_at = if is_definition && header.ends_with(" {") {
        span.end - 2
    } else {
        span.end
    };
    // Most headers carry no string attribute at all.
    let quoted = memchr::memchr(b'"', &text.as_bytes()[tail.clone()]).is_some();
    let (spec, plan) = if quoted {
        (
            checked_string_attribute(text, tail.clone(), SPEC_ATTRIBUTE, line)?,
            checked_string_attribute(text, tail, PLAN_ATTRIBUTE, line)?,
        )
    } else {
        (None, None)
    };
    let inline_attributes = if spec.is_some() || plan.is_some() {
        module.inline_attributes.push(InlineAttributes { spec, plan });
        module.inline_attributes.len() as u32 - 1
    } else {
        NONE
    };
    Ok(FunctionHeader {
        name,
        name_hash: crate::name_table::hash_of(name),
        line: line as u32,
        signature,
        convention_at: convention_at as u32,
        convention_end: convention_end as u32,
        attributes_at: attributes_at as u32,
        group,
        group_start,
        group_end,
        inline_attributes,
        is_definition,
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
    let close = header[open..]
        .rfind('}')
        .map(|at| open + at)
        .ok_or_else(|| error("attribute group without `}` after its `{`"))?;
    let trailing = header[close + 1..].trim_start();
    if !trailing.is_empty() && !trailing.starts_with(';') {
        return Err(error("attribute group with text after its closing `}`"));
    }
    let body = span.start + open + 1..span.start + close;
    Ok(AttributeGroup {
        id,
        line,
        spec: checked_string_attribute(text, body.clone(), SPEC_ATTRIBUTE, line)?,
        plan: checked_string_attribute(text, body.clone(), PLAN_ATTRIBUTE, line)?,
        span,
        body,
    })
}

/// The first ` #N` attribute group reference in `text[range]` (not inside a string).
fn group_reference(text: &str, range: Range<usize>) -> Option<(u32, Range<usize>)> {
    let slice = text.get(range.clone())?.as_bytes();
    let mut in_string = false;
    for offset in memchr::memchr2_iter(b'"', b'#', slice) {
        match slice[offset] {
            b'"' => in_string = !in_string,
            b'#' if !in_string && offset > 0 && slice[offset - 1] == b' ' => {
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

/// Where ` call ` or ` invoke ` (whichever comes first) starts in `prefix`, and the keyword's length with
/// its blanks.
fn keyword_position(prefix: &[u8]) -> Option<(usize, usize)> {
    let mut at = 0;
    while let Some(blank) = memchr::memchr(b' ', &prefix[at..]) {
        let rest = &prefix[at + blank..];
        if rest.starts_with(b" call ") {
            return Some((at + blank, 6));
        }
        if rest.starts_with(b" invoke ") {
            return Some((at + blank, 8));
        }
        at += blank + 1;
    }
    None
}

/// Reads a direct `call`/`invoke` on the line `span`, whose first `@` is at `first_at`.
pub(crate) fn read_call(text: &str, span: Range<usize>, first_at: usize) -> Option<CallSite<'_>> {
    // The keyword comes before the callee, the line's first `@` (only `%result =` and call markers such
    // as `tail` precede it).
    let keyword = keyword_position(text.as_bytes().get(span.start..first_at)?)?;
    let convention_at = skip_words(text, span.start + keyword.0 + keyword.1, is_fast_math_flag);
    let convention_end = calling_convention_at(text, convention_at).map_or(convention_at, |(range, _)| range.end);
    let (position, name, end) = first_called_name(text, convention_at, span.end)?;
    let after_arguments = matching_paren(text, end).filter(|close| *close <= span.end)?;
    let has_plan = memchr::memchr(b'"', &text.as_bytes()[after_arguments..span.end]).is_some()
        && string_attribute(text, after_arguments..span.end, PLAN_ATTRIBUTE).is_some();
    let (group, group_start, group_end) = match group_reference(text, after_arguments..span.end) {
        Some((id, range)) => (id, range.start as u32, range.end as u32),
        None => (NONE, 0, 0),
    };
    // `read_module` refuses texts whose offsets do not fit in `u32`.
    Some(CallSite {
        callee: name,
        callee_at: position as u32,
        convention_at: convention_at as u32,
        convention_end: convention_end as u32,
        after_arguments: after_arguments as u32,
        group,
        group_start,
        group_end,
        has_plan,
    })
}

/// Calls `found` for every `@name` on the line `span` except `skip` (a callee's name, by its range).
pub(crate) fn for_each_reference<'t>(
    text: &'t str,
    span: Range<usize>,
    skip: Option<Range<usize>>,
    mut found: impl FnMut(Reference<'t>),
) {
    let mut search = span.start;
    while search < span.end
        && let Some(at) = memchr::memchr(b'@', &text.as_bytes()[search..span.end])
    {
        let position = search + at;
        if let Some(skip) = &skip
            && skip.start == position
        {
            search = skip.end;
            continue;
        }
        match global_name(text, position) {
            Some((name, end)) => {
                found(Reference { name, offset: position });
                search = end;
            }
            None => search = position + 1,
        }
    }
}

/// `llvm.global.annotations` entries pair a function with a string constant; those starting with
/// `neverc-callconv=` attach a spec.
fn read_annotations(text: &str, span: Range<usize>, module: &mut Module<'_>) {
    let line = &text[span.clone()];
    for entry in line.split("} {").skip(1).chain(line.split(" { ").skip(1)) {
        let names: Vec<&str> = entry
            .match_indices('@')
            .filter_map(|(at, _)| global_name(entry, at).map(|(name, _)| name))
            .collect();
        let Some(function) = names.first() else { continue };
        for name in names.iter().skip(1) {
            if let Some(annotation) = module.strings.get(*name)
                && let Some(spec) = annotation.trim_end_matches('\0').strip_prefix(SPEC_ANNOTATION_PREFIX)
            {
                module
                    .annotations
                    .entry((*function).to_string())
                    .or_insert_with(|| spec.to_string());
            }
        }
    }
}
