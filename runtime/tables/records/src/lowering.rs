//! The adapter templates of a target (`[lowering]` of `targets/*.toml`): how the instructions that move values
//! between a calling-convention plan's locations and the standard convention are spelled. `neverc-cc`'s
//! lowering composes adapters from these records only; it has no per-target code.

/// One piece of an instruction template. Templates are split into parts when the declaration is lowered, so
/// that filling one in is a walk over the parts, never a parse.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "part", content = "value"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TemplatePart<'a> {
    /// Text copied as it is.
    Text(&'a str),
    /// `{register}` (width 0: the register at the template's own width) or `{register:W}` (at W bits).
    Register(u32),
    /// `{source}`: the register a move copies from, at its full width.
    Source,
    /// `{base}`: the register holding the address of a memory operand (the stack pointer or a scratch).
    Base,
    /// `{offset}`: a byte offset from the base, in decimal.
    Offset,
    /// `{size}`: a byte count, in decimal.
    Size,
    /// `{symbol}`: a symbol name as the assembler spells it.
    Symbol,
}

/// An instruction (or directive) template: its parts in order.
pub type Template<'a> = &'a [TemplatePart<'a>];

/// The loads and stores of one register class at one width.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryTemplatesIn<'a> {
    /// Index into the target's register classes.
    pub class: usize,
    /// The width of the data moved, in bits.
    pub width: u32,
    /// A load; below 32 bits it zero-extends into the register's 32-bit view (at 32 bits, when `load_signed` is
    /// declared, into the whole register).
    pub load: Template<'a>,
    /// A sign-extending load (declared for general classes below 32 bits, and optionally at 32 bits for wider
    /// ones).
    pub load_signed: Option<Template<'a>>,
    pub store: Template<'a>,
}

/// The directives an adapter is wrapped in.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirectivesIn<'a> {
    pub section: Template<'a>,
    pub global: Template<'a>,
    pub weak: Template<'a>,
    pub hidden: Template<'a>,
    pub protected: Template<'a>,
    pub align: Template<'a>,
    pub function: Template<'a>,
    pub size: Template<'a>,
}

/// The assembler's macros (the stubs of the functions that share an adapter).
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacrosIn<'a> {
    /// Opens macro `{symbol}` of one parameter.
    pub open: Template<'a>,
    pub close: Template<'a>,
    /// The parameter in the macro's body.
    pub parameter: &'a str,
    /// Separates the parameter from text that follows it.
    pub join: &'a str,
}

/// The instructions of an adapter that are not loads or stores.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstructionsIn<'a> {
    /// Lowers the stack pointer by `{size}` bytes.
    pub allocate: Template<'a>,
    /// Raises the stack pointer by `{size}` bytes.
    pub release: Template<'a>,
    /// Copies `{source}` into `{register}` (either may be the stack pointer).
    pub move_register: Template<'a>,
    /// Rounds `{register}` down to a multiple of `{size}` (a power of two).
    pub align_down: Template<'a>,
    /// Puts the address `{base}` + `{offset}` into `{register}`.
    pub address: Template<'a>,
    /// Calls `{symbol}`.
    pub call: Template<'a>,
    /// Calls the address in `{register}`.
    pub call_register: Template<'a>,
    /// Jumps to `{symbol}`.
    pub jump: Template<'a>,
    /// Puts `{symbol}`'s address into `{register}`, one instruction per template.
    pub address_of: &'a [Template<'a>],
    /// Returns to the caller.
    pub return_: Template<'a>,
}

/// What a target declares for adapters.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoweringRecordIn<'a> {
    /// Index of the stack pointer in the target's registers.
    pub stack_pointer: usize,
    /// General registers an adapter may clobber: never callee-saved, reserved, the stack pointer or the link
    /// register. The first holds the frame's base, the others data.
    pub scratch: &'a [usize],
    /// Bytes between the stack pointer at a function's entry and its first stack argument (x86-64: the
    /// return address, 8).
    pub incoming_arguments_offset: u32,
    /// The register a standard callee returns the hidden return pointer in (x86-64: `rax`).
    pub hidden_pointer_result: Option<usize>,
    /// The register a call leaves the return address in, which an adapter saves (AArch64: `x30`).
    pub link_register: Option<usize>,
    /// IR scalar types whose standard placement differs from LLVM's (not lowered).
    pub standard_deviations: &'a [&'a str],
    /// The largest offset or frame size the templates can encode for an access whose offset is a multiple of
    /// its size.
    pub max_offset: u64,
    /// The largest offset they encode for any other access.
    pub max_unaligned_offset: u64,
    pub directives: DirectivesIn<'a>,
    pub macros: MacrosIn<'a>,
    pub instructions: InstructionsIn<'a>,
    pub memory: &'a [MemoryTemplatesIn<'a>],
}

impl<'a> LoweringRecordIn<'a> {
    /// The loads and stores of `class` at `width` bits.
    pub const fn memory(&self, class: usize, width: u32) -> Option<&MemoryTemplatesIn<'a>> {
        let mut index = 0;
        while index < self.memory.len() {
            let entry = &self.memory[index];
            if entry.class == class && entry.width == width {
                return Some(entry);
            }
            index += 1;
        }
        None
    }

    /// The loads and stores of `class` at the smallest declared width of at least `bits`.
    pub const fn memory_holding(&self, class: usize, bits: u32) -> Option<&MemoryTemplatesIn<'a>> {
        let mut best: Option<&MemoryTemplatesIn<'a>> = None;
        let mut index = 0;
        while index < self.memory.len() {
            let entry = &self.memory[index];
            if entry.class == class && entry.width >= bits {
                best = match best {
                    Some(current) if current.width <= entry.width => Some(current),
                    _ => Some(entry),
                };
            }
            index += 1;
        }
        best
    }
}
