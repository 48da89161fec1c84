//! The `[lowering]` table of a target declaration: the instruction templates `cc lower` builds adapter thunks
//! from, and the one parser of their `{placeholder}` syntax (validation and lowering both use it).

use neverc_records::TemplatePart;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the adapters between a plan's locations and the standard convention are spelled on this target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoweringDeclaration {
    /// The stack pointer, a declared register.
    pub stack_pointer: String,
    /// General registers an adapter may clobber, at least three, none callee-saved or reserved, the stack
    /// pointer or the link register. The first holds the frame's base; the others carry data. (Registers
    /// that carry values are loaded after the adapter's last use of a scratch register, so a scratch
    /// register may be one of them.)
    #[schemars(length(min = 3))]
    pub scratch: Vec<String>,
    /// Bytes between the stack pointer at a function's entry and its first stack argument: what the call
    /// instruction pushed (x86-64: the return address, 8; AArch64: 0).
    pub incoming_arguments_offset: u32,
    /// The register a callee following the standard convention returns the hidden return pointer in, if the
    /// convention says so (x86-64: `rax`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub hidden_pointer_result: Option<String>,
    /// The register a call leaves the return address in, which an adapter must save (AArch64: `x30`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub link_register: Option<String>,
    /// IR scalar types that the standard convention of this file places differently from the LLVM that compiles
    /// the lowered bodies (docs/standard-abi-deviations.md): a planned function whose signature holds one is
    /// not lowered, since its adapter would hand the body its values where the body does not look.
    #[serde(default)]
    pub standard_deviations: Vec<String>,
    /// The largest byte offset (and frame size) the templates encode for an access whose offset is a multiple
    /// of its size; an adapter that needs more is refused.
    pub max_offset: u64,
    /// The largest offset they encode for any other access, at most `max_offset`.
    pub max_unaligned_offset: u64,
    pub directives: DirectiveTemplates,
    pub macros: MacroTemplates,
    pub instructions: InstructionTemplates,
    /// Loads and stores per register class and width: every general class at 8, 16, 32 and 64 bits (those
    /// up to its width), every other class at its full width. A piece is moved at the smallest declared
    /// width that holds it.
    #[schemars(length(min = 1))]
    pub memory: Vec<MemoryTemplateDeclaration>,
}

/// The assembler directives around an adapter; `{symbol}` is the adapter's name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DirectiveTemplates {
    /// Switches to the section adapters go to (`.text`).
    pub section: String,
    /// Makes `{symbol}` global.
    pub global: String,
    /// Makes `{symbol}` weak.
    pub weak: String,
    /// Gives `{symbol}` hidden visibility.
    pub hidden: String,
    /// Gives `{symbol}` protected visibility.
    pub protected: String,
    /// Aligns the adapter's first instruction.
    pub align: String,
    /// Marks `{symbol}` as a function.
    pub function: String,
    /// Records `{symbol}`'s size, after its last instruction.
    pub size: String,
}

/// The assembler's macros: the stubs of the functions that share an adapter are one macro, invoked once per
/// function as `NAME SYMBOL`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MacroTemplates {
    /// Opens the definition of macro `{symbol}` with one parameter.
    pub open: String,
    /// Closes a macro definition.
    pub close: String,
    /// The parameter, as the macro's body names it.
    pub parameter: String,
    /// What separates the parameter from text that follows it directly.
    pub join: String,
}

/// The instructions of an adapter other than loads and stores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstructionTemplates {
    /// Lowers the stack pointer by `{size}` bytes.
    pub allocate: String,
    /// Raises the stack pointer by `{size}` bytes.
    pub release: String,
    /// Copies `{source}` into `{register}`, either of which may be the stack pointer.
    #[serde(rename = "move")]
    pub move_register: String,
    /// Rounds `{register}` down to a multiple of `{size}`.
    pub align_down: String,
    /// Puts the address `{base}` + `{offset}` into `{register}`.
    pub address: String,
    /// Calls `{symbol}` (through the PLT where the target's code model needs it).
    pub call: String,
    /// Calls the address in `{register}`.
    pub call_register: String,
    /// Jumps to `{symbol}`, leaving the stack and every other register as they are.
    pub jump: String,
    /// Puts `{symbol}`'s address into `{register}` (one or more instructions), touching no other register.
    #[schemars(length(min = 1))]
    pub address_of: Vec<String>,
    /// Returns to the caller.
    #[serde(rename = "return")]
    pub return_: String,
}

/// The loads and stores of one register class at one width; `{register}` is the register at `width` bits
/// (`{register:32}` at 32), `{base}` the address register, `{offset}` the byte offset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryTemplateDeclaration {
    /// A declared register class.
    pub class: String,
    /// Bits moved: one of the class's widths.
    pub width: u32,
    /// A load. Below 32 bits it must zero-extend into the register's 32-bit view; at 32 bits, when
    /// `load_signed` is declared, into the whole register.
    pub load: String,
    /// A sign-extending load into the 32-bit view; required for a general class below 32 bits. A general class
    /// wider than 32 bits may declare one at 32 bits, sign-extending into the whole register, for a standard
    /// convention that widens 32-bit values to the register's width (RISC-V's `lw`, with `lwu` as `load`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub load_signed: Option<String>,
    pub store: String,
}

/// The placeholders of a template part, by name, for messages and checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placeholder {
    Register,
    Source,
    Base,
    Offset,
    Size,
    Symbol,
}

impl Placeholder {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Placeholder::Register => "register",
            Placeholder::Source => "source",
            Placeholder::Base => "base",
            Placeholder::Offset => "offset",
            Placeholder::Size => "size",
            Placeholder::Symbol => "symbol",
        }
    }

    pub(crate) fn of(part: &TemplatePart<'_>) -> Option<Placeholder> {
        match part {
            TemplatePart::Text(_) => None,
            TemplatePart::Register(_) => Some(Placeholder::Register),
            TemplatePart::Source => Some(Placeholder::Source),
            TemplatePart::Base => Some(Placeholder::Base),
            TemplatePart::Offset => Some(Placeholder::Offset),
            TemplatePart::Size => Some(Placeholder::Size),
            TemplatePart::Symbol => Some(Placeholder::Symbol),
        }
    }
}

/// Splits a template into text and placeholders. Braces only open placeholders; a template is one line.
pub(crate) fn parse_template(text: &str) -> Result<Vec<TemplatePart<'_>>, String> {
    if text.contains(['\n', '\r']) {
        return Err("a template is one line".to_string());
    }
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(['{', '}']) {
        if rest.as_bytes()[open] == b'}' {
            return Err(format!("`}}` without `{{` in `{text}`"));
        }
        if open > 0 {
            parts.push(TemplatePart::Text(&rest[..open]));
        }
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            return Err(format!("`{{` without `}}` in `{text}`"));
        };
        let name = &after[..close];
        let part = match name.split_once(':') {
            Some(("register", width)) => match width.parse::<u32>() {
                Ok(width) if width > 0 => TemplatePart::Register(width),
                _ => return Err(format!("`{{{name}}}` needs a width in bits, such as `{{register:32}}`")),
            },
            Some(_) => return Err(format!("unknown placeholder `{{{name}}}`")),
            None => match name {
                "register" => TemplatePart::Register(0),
                "source" => TemplatePart::Source,
                "base" => TemplatePart::Base,
                "offset" => TemplatePart::Offset,
                "size" => TemplatePart::Size,
                "symbol" => TemplatePart::Symbol,
                _ => return Err(format!("unknown placeholder `{{{name}}}`")),
            },
        };
        parts.push(part);
        rest = &after[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(TemplatePart::Text(rest));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_split_into_text_and_placeholders() {
        assert_eq!(
            parse_template("movzbl {offset}(%{base}), %{register:32}"),
            Ok(vec![
                TemplatePart::Text("movzbl "),
                TemplatePart::Offset,
                TemplatePart::Text("(%"),
                TemplatePart::Base,
                TemplatePart::Text("), %"),
                TemplatePart::Register(32),
            ])
        );
        assert_eq!(parse_template("retq"), Ok(vec![TemplatePart::Text("retq")]));
        assert!(
            parse_template("mov {regster}")
                .unwrap_err()
                .contains("unknown placeholder `{regster}`")
        );
        assert!(
            parse_template("mov {register:x}")
                .unwrap_err()
                .contains("needs a width")
        );
        assert!(parse_template("mov {register").unwrap_err().contains("without"));
        assert!(parse_template("mov }").unwrap_err().contains("without"));
        assert!(parse_template("a\nb").unwrap_err().contains("one line"));
    }
}
