//! Types of a target declaration, `targets/<name>.toml`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::hex::ColonId;
use crate::lowering::LoweringDeclaration;
use neverc_records::{Overflow, RelocationBase, RelocationFormat, RelocationKind};

/// One target: identity, registers, the standard ABI and the calling-convention defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "neverc-spec target declaration")]
pub struct TargetDeclaration {
    pub identity: TargetIdentity,
    #[schemars(length(min = 1))]
    pub register_classes: Vec<RegisterClass>,
    #[schemars(length(min = 1))]
    pub registers: Vec<Register>,
    /// Registers a spec may name but never receives: the name is skipped with a note.
    #[serde(default)]
    pub reserved: Vec<String>,
    /// The default callee-saved set; sub-register names declare partial preservation (AArch64 `d8`).
    #[serde(default)]
    pub callee_saved: Vec<String>,
    pub abi: StandardAbi,
    pub conventions: ConventionDefaults,
    /// What the target's ELF files say in their headers; required when ELF relocations are declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "ElfFacts")]
    pub elf: Option<ElfFacts>,
    /// The relocation types of the target's object files: every number an input may use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relocations: Vec<RelocationDeclaration>,
    /// The instruction templates `cc lower` builds adapter thunks from; without them the target's plans
    /// cannot be lowered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "LoweringDeclaration")]
    pub lowering: Option<LoweringDeclaration>,
}

/// The ELF header facts of the target, the page sizes its executables are laid out for, where their
/// thread-local storage lies, and GNU ld's names for the target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ElfFacts {
    /// `e_machine`: `EM_X86_64` = 62, `EM_AARCH64` = 183, `EM_RISCV` = 243 (`EM_NONE`, 0, is refused).
    pub machine: u16,
    /// `EI_CLASS` in bits, 32 or 64: the target's pointer width.
    pub class: u32,
    /// The page size segments are laid out for by default (ld's `COMMONPAGESIZE`), a power of two.
    pub common_page_size: u64,
    /// The largest page size the target runs with (ld's `MAXPAGESIZE`): segments are aligned to it. A power
    /// of two, at least `common_page_size`.
    pub max_page_size: u64,
    /// Where a position-dependent executable's image starts when the command line does not say (GNU ld's
    /// `TEXT_START_ADDR`, `-Ttext-segment`): x86-64 and AArch64 0x400000, RISC-V 0x10000. Absent: 0x400000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_base: Option<u64>,
    /// Where an executable's thread-local storage lies relative to the thread pointer (the psABI's TLS
    /// variant).
    pub tls: TlsFacts,
    /// GNU ld's emulation names for the target, as `ld -V` lists them (`-m elf_x86_64`): at least one, each
    /// used by no other target.
    #[schemars(length(min = 1), inner(regex(pattern = r"^[a-z][a-z0-9_]*$")))]
    pub emulations: Vec<String>,
    /// Errata of the target's cores that the linker works around in code when asked, by the names of GNU
    /// ld's options for them (`cortex-a53-843419`: `--fix-cortex-a53-843419`). The architecture's code in
    /// the link runtime has the workaround; each listed once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(regex(pattern = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")))]
    pub errata: Vec<String>,
    /// The program interpreter (the dynamic loader) that a dynamically linked executable names in
    /// `PT_INTERP` when the command line names none (`-dynamic-linker`): the target's glibc loader, as GNU
    /// ld and gcc's specs have it. An absolute path; absent for a target without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^/[!-~]+$"))]
    pub interpreter: Option<String>,
    /// GNU ld's (BFD's) names of the target's object format, as linker scripts name it in `OUTPUT_FORMAT`
    /// (`elf64-x86-64`; `elf64-littleaarch64`): a script such as glibc's `libc.so` that names one of them is
    /// read for this target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(regex(pattern = r"^[a-z0-9][a-z0-9_.-]*$")))]
    pub output_formats: Vec<String>,
}

/// Where an executable's TLS block lies relative to the thread pointer ("ELF Handling For Thread-Local
/// Storage", §3.4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlsFacts {
    /// `I`: the thread pointer points at a thread control block and the block follows it (AArch64, RISC-V);
    /// `II`: the block ends at the thread pointer (x86-64).
    pub variant: TlsVariantName,
    /// The thread control block's size in bytes, which variant I needs and variant II has no use for
    /// (AArch64 16, RISC-V 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub tcb_size: Option<u64>,
    /// What the C library's `__tls_get_addr` adds to the offset a general-dynamic access passes it
    /// (`TLS_DTV_OFFSET`): the link stores a variable's offset in its module's block less this, in a GOT
    /// pair and in a DTP-relative relocation (RISC-V 0x800, so that a 12-bit signed immediate reaches the
    /// first 4 KiB of the block). Absent: 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtv_offset: Option<u64>,
}

/// The TLS variants, spelled as the TLS document numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum TlsVariantName {
    I,
    II,
}

/// One relocation type: its number in an object format, what it computes and how the result is written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RelocationDeclaration {
    pub format: RelocationFormat,
    /// The raw number (`r_type`), unique within the format.
    pub number: u32,
    /// The ABI's name (`R_X86_64_PC32`), unique within the target.
    #[schemars(regex(pattern = r"^R_[A-Z0-9_]+$"))]
    pub name: String,
    pub kind: RelocationKind,
    /// What is subtracted from the value: nothing (absolute), the place (pc-relative), the place's page
    /// (`Page(value) - Page(P)`, ADRP), the GOT's address or the GOT's page. The kind says which are allowed.
    #[serde(default, skip_serializing_if = "is_nothing")]
    pub relative_to: RelocationBase,
    /// Bits of the place that are read and written: 0 for a marker (`none`, `tls_desc_call`), else 8, 16,
    /// 32 or 64.
    pub size: u32,
    /// When the value does not fit its field: `signed`, `unsigned`, `either` or `none` (never checked).
    pub overflow: Overflow,
    /// For an instruction: the bits of the place the value goes to, and its shift. Without it the value fills
    /// the whole place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "InstructionField")]
    pub instruction: Option<InstructionField>,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

fn is_nothing(base: &RelocationBase) -> bool {
    *base == RelocationBase::Nothing
}

/// Where a relocation's value goes in an instruction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstructionField {
    /// Right shift applied to the value first (ADRP 12, a branch 2), below 64.
    #[serde(default)]
    pub shift: u32,
    /// The bit from which the value is rounded to the nearest multiple of `2^round` before its bits are
    /// taken (`2^(round-1)` added): the high part of a pair whose low part is sign-extended (RISC-V `%hi`,
    /// `auipc`: 12). Runs that start below it take the value's exact bits. 0 (the default): no rounding.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub round: u32,
    /// The runs of bits the shifted value fills, its least significant bits first (ADRP: `immlo` at 29, 2
    /// bits, then `immhi` at 5, 19 bits). They must not overlap and must lie inside the place.
    #[schemars(length(min = 1))]
    pub bits: Vec<InstructionBits>,
}

/// A run of bits of an instruction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstructionBits {
    /// Its least significant bit (0 = the instruction's least significant bit).
    pub lsb: u32,
    /// How many bits, at least 1.
    pub width: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetIdentity {
    /// Canonical target name, used by `--target`.
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_]*$"))]
    pub name: String,
    /// Other names accepted by `--target`.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The LLVM target triple.
    #[schemars(regex(pattern = r"^[a-z0-9_]+(-[a-z0-9_.]+){1,3}$"))]
    pub triple: String,
    /// Target id written into plans as `target=HIGH:LOW`.
    pub target_id: ColonId,
    /// Calling-convention id written into plans as `cc=HIGH:LOW`.
    pub convention_id: ColonId,
    /// The `schema=` of plans: names the register numbering plans use.
    #[schemars(regex(pattern = r"^[^;\s]+$"))]
    pub schema_digest: String,
    /// Pointer width in bits.
    pub pointer_width: u32,
    pub endianness: Endianness,
    /// Stack alignment in bytes at a call boundary.
    pub stack_alignment: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Endianness {
    Little,
    Big,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterClass {
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_]*$"))]
    pub name: String,
    pub kind: RegisterClassKind,
    /// Full width of the registers of this class, in bits.
    pub width: u32,
    /// Widths in bits a value or sub-register of this class may have.
    #[schemars(length(min = 1))]
    pub widths: Vec<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RegisterClassKind {
    /// Integers and pointers (`gpr:` in specs).
    General,
    /// Scalar floating point only (`fpr:` in specs).
    Float,
    /// Floating point and vectors (`xmm:`/`fpr:` in specs).
    Vector,
}

impl RegisterClassKind {
    /// Whether values of floating-point or vector type go into this class.
    pub fn holds_floating_point(self) -> bool {
        !matches!(self, RegisterClassKind::General)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Register {
    /// Canonical name as written in specs and assembly.
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_]*$"))]
    pub name: String,
    pub class: String,
    /// Width in bits when it differs from the class width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    /// The register number written into plans (nonzero; 0 means "no register" there).
    pub plan_number: u32,
    /// DWARF register number.
    pub dwarf: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// Narrower names of the same register (x86 `ecx`, AArch64 `w9`, `s5`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subregisters: Vec<SubRegister>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<RegisterFlag>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubRegister {
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_]*$"))]
    pub name: String,
    /// Width in bits; legal for the class and at most the register's width.
    pub width: u32,
    /// Its own plan number, where the numbering has one (x86 `ECX` = 25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_number: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RegisterFlag {
    /// The frame pointer: a spec may choose it, with a warning.
    FramePointer,
    /// The stack pointer.
    StackPointer,
    /// Holds the return address.
    LinkRegister,
    /// Reads as zero.
    Zero,
    /// Reserved by the platform (thread pointer, global pointer, platform register).
    Platform,
}

impl RegisterFlag {
    pub const ALL: [RegisterFlag; 5] = [
        RegisterFlag::FramePointer,
        RegisterFlag::StackPointer,
        RegisterFlag::LinkRegister,
        RegisterFlag::Zero,
        RegisterFlag::Platform,
    ];

    pub fn bit(self) -> u32 {
        1 << (self as u32)
    }

    pub fn schema_name(self) -> &'static str {
        match self {
            RegisterFlag::FramePointer => "frame_pointer",
            RegisterFlag::StackPointer => "stack_pointer",
            RegisterFlag::LinkRegister => "link_register",
            RegisterFlag::Zero => "zero",
            RegisterFlag::Platform => "platform",
        }
    }
}

/// The target's standard calling convention as data; the fallback planner reads only this.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StandardAbi {
    /// Name of the convention (`sysv`, `aapcs64`, `lp64d`).
    pub name: String,
    /// Integer and pointer argument registers, in order.
    pub integer_arguments: Vec<String>,
    /// Floating-point and vector argument registers, in order.
    pub float_arguments: Vec<String>,
    pub integer_returns: Vec<String>,
    pub float_returns: Vec<String>,
    /// Register that carries the address of an indirect (`sret`) return value.
    pub sret_register: String,
    /// True when the sret pointer takes the first integer argument register (x86-64), false when it has
    /// its own register (AArch64 x8).
    pub sret_takes_argument_register: bool,
    pub stack: StackRules,
    pub rules: AbiRules,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StackRules {
    /// Every stack argument occupies at least this many bytes.
    pub slot_size: u32,
    /// A stack argument is aligned to its natural alignment clamped to [slot_size, max_alignment].
    pub max_alignment: u32,
}

/// The documented rule flags of the standard ABI (see docs/target-format.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbiRules {
    /// How a 128-bit integer uses general registers.
    pub int128_registers: Int128Registers,
    /// Whether a value may start in registers and continue on the stack.
    pub split_between_registers_and_stack: bool,
    /// Whether a register skipped for alignment may be used by a later argument.
    pub reuse_skipped_registers: bool,
    /// Vectors up to this many bytes take one vector register; wider ones are split into pieces of this size.
    pub vector_register_bytes: u32,
    /// Whether a vector narrower than a vector register is widened to the whole register, so that on the
    /// stack it takes a `vector_register_bytes` slot (x86-64 `<2 x float>`), rather than a slot of its own
    /// size rounded up to a power of two (AArch64 `<2 x float>` in `d0` or 8 stack bytes).
    pub short_vectors_widen_to_register: bool,
    /// Which arrays are passed as one block of consecutive registers (AArch64); without it every array is
    /// passed element by element (x86-64, RISC-V).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "ArrayBlocks")]
    pub array_blocks: Option<ArrayBlocks>,
    /// When float registers run out, floating-point values take general registers before the stack (RISC-V).
    pub float_falls_back_to_integer_registers: bool,
    /// IR types that are always passed on the stack (x86-64 `x86_fp80`).
    #[serde(default)]
    pub stack_only_types: Vec<String>,
    /// The most registers a returned value takes, whatever their classes: a value that needs more is returned
    /// through the hidden pointer even where the return registers could hold it (LLVM's RISC-V: two, so that
    /// `[3 x float]` does not go to `fa0`, `fa1` and `a0`). Without it, as many as the return registers hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32", range(min = 1))]
    pub max_return_registers: Option<u32>,
}

/// Arrays passed as one block (LLVM's `CC_AArch64_Custom_Block`): an IR array argument or return value whose
/// scalars are all of one type, each of which splits into register pieces of the kinds listed here, takes
/// consecutive registers of one class, one per piece, however long it is; when they are not free it goes
/// wholly to the stack, packed, at its natural alignment clamped to the stack slot rules. Arrays of any
/// other element, and arrays inside a struct or another array, are passed element by element.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArrayBlocks {
    /// Widths in bits of the integer and pointer pieces that make a block, at the width a general register
    /// holds them (`i8` to `i32` are 32-bit pieces, `i64` and pointers 64-bit ones, wider integers
    /// pointer-size parts).
    #[serde(default)]
    pub integer_bits: Vec<u32>,
    /// IR floating-point types whose elements make a block (AArch64: not `bfloat`, which LLVM 14 passes one
    /// element at a time).
    #[serde(default)]
    pub float_types: Vec<String>,
    /// Widths in bits of the vector pieces that make a block, at the width a vector register holds them.
    #[serde(default)]
    pub vector_bits: Vec<u32>,
    /// When a block goes to the stack, no later value takes a register of its class (AAPCS64: NGRN or NSRN
    /// is set to 8).
    pub stack_exhausts_registers: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Int128Registers {
    /// Any two consecutive free registers.
    Consecutive,
    /// An even-numbered register and the next one (AArch64).
    EvenAlignedPair,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConventionDefaults {
    /// The spec used when a function asks for the custom convention without one of its own.
    pub default_spec: String,
    /// The four `ccshuffle` layouts, in order.
    #[schemars(length(min = 4, max = 4))]
    pub shuffle_layouts: Vec<String>,
}
