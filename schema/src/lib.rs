//! Declarations of neverc-spec: the phase schema (`PhaseSchema.json`), target files (`targets/*.toml`) and
//! the plugin C ABI (`abi/*.toml`).
//!
//! Loading goes in three steps and reports every problem it finds, each with its file, JSON pointer and
//! line:column: syntax, structure (the committed JSON Schemas, checked by the `jsonschema` crate in
//! `structural`), then the semantic rules in [`phase_checks`](crate) and [`target_checks`](crate).

mod abi;
mod abi_checks;
mod abi_type_checks;
pub mod abi_types;
mod diagnostic;
mod hex;
mod json_map;
mod load;
mod lowering;
mod model;
mod phase;
mod phase_checks;
mod phase_model;
#[doc(hidden)]
pub mod probe;
mod rule;
mod spec_text;
mod structural;
mod target;
mod target_checks;
mod toml_map;

pub use abi::{
    AbiApi, AbiBitRequirement, AbiCallback, AbiConstant, AbiDescriptorRules, AbiEnum, AbiEnumValue, AbiField,
    AbiFlagBit, AbiFlags, AbiFunction, AbiHandle, AbiInterface, AbiSlot, AbiStruct, AbiTypedef, PluginAbiDeclaration,
};
pub use abi_type_checks::AbiSource;
/// The arena lowered records live in.
pub use bumpalo::Bump;
pub use diagnostic::{DIAGNOSTIC_TEXT_LIMIT, Diagnostic, Severity};
pub use hex::{ColonId, HexU64, IdPair};
pub use load::{
    Declarations, LoadError, LoadedAbiPart, LoadedTarget, SourceText, load_declarations, load_phase_schema,
    load_plugin_abi, load_plugin_abi_with, load_targets, parse_phase_schema, parse_phase_schema_for_audit,
    parse_plugin_abi, parse_target, target_files,
};
pub use lowering::{DirectiveTemplates, InstructionTemplates, LoweringDeclaration, MemoryTemplateDeclaration};
pub use model::lower_target;
pub use phase::{
    ExtensionFamily, Gate, MutationClass, ObserverPoint, Phase, PhaseKind, PhaseSchemaDocument, PolicyFlag, Stability,
    StateMachine, StateTransition, observer_point_bits, policy_bits,
};
pub use phase_checks::PHASE_SCHEMA_INVARIANTS;
pub use phase_model::lower_phase_schema;
pub use rule::Rule;
pub use spec_text::{Spec, SpecList, SpecSegment, SpecToken, is_stack_token};
pub use structural::{
    COMMITTED_PHASE_SCHEMA, COMMITTED_PLUGIN_ABI_SCHEMA, COMMITTED_TARGET_SCHEMA, generated_phase_schema,
    generated_plugin_abi_schema, generated_target_schema,
};
pub use target::{
    AbiRules, ArrayBlocks, ConventionDefaults, ElfFacts, Endianness, InstructionBits, InstructionField,
    Int128Registers, Register, RegisterClass, RegisterClassKind, RegisterFlag, RelocationDeclaration, StackRules,
    StandardAbi, SubRegister, TargetDeclaration, TargetIdentity, TlsFacts, TlsVariantName,
};
pub use target_checks::{DWARF_PLUS_ONE_DIGEST_PREFIX, LLVM_DIGEST_PREFIX};
