//! Types of an ABI declaration, `abi/<part>.toml`: the interfaces, enumerations, flag sets, typedefs, handles,
//! structures, callbacks and API tables of one part of NeverC's plugin C ABI (one C header).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::hex::ColonId;
use crate::phase::Stability;

/// One part of the plugin C ABI.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "neverc-spec ABI declaration")]
pub struct PluginAbiDeclaration {
    /// The C header generated from the file (`PluginLTO.h`), under `include/neverc/Plugin/`.
    #[schemars(regex(pattern = r"^Plugin[A-Za-z0-9]*\.h$"))]
    pub header: String,
    /// What the header is for, as its opening comment.
    pub doc: String,
    /// The interfaces the part defines: what a plugin asks the host for by id and version.
    #[serde(default)]
    pub interfaces: Vec<AbiInterface>,
    /// Closed sets of values of an unsigned integer type.
    #[serde(default)]
    pub enums: Vec<AbiEnum>,
    /// Sets of independent bits of an unsigned integer type.
    #[serde(default)]
    pub flags: Vec<AbiFlags>,
    /// Other names of a type: `Bool` for `u32`, `TargetID` for `InterfaceID`.
    #[serde(default)]
    pub typedefs: Vec<AbiTypedef>,
    /// Host-owned handles: each a typedef of the core `Handle` named `Neverc<name>Handle`.
    #[serde(default)]
    pub handles: Vec<AbiHandle>,
    /// Structures: fields in order, packed to 8 bytes.
    #[serde(default)]
    pub structs: Vec<AbiStruct>,
    /// Function pointer types.
    #[serde(default)]
    pub callbacks: Vec<AbiCallback>,
    /// API tables: a header, the table's context, then function pointer slots in order.
    #[serde(default)]
    pub apis: Vec<AbiApi>,
}

/// Another name for a type, with constants of it when the header declares some (`NEVERC_TRUE`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbiTypedef {
    /// The C type's name without `Neverc`.
    #[schemars(regex(pattern = r"^[A-Z][A-Za-z0-9]*$"))]
    pub name: String,
    /// The type it names (the ABI's type vocabulary, `docs/plugin-abi-format.md`).
    #[serde(rename = "type")]
    pub ty: String,
    pub doc: String,
    /// Constants of the type, by their full C names.
    #[serde(default)]
    pub constants: Vec<AbiConstant>,
}

/// A named constant of a typedef.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbiConstant {
    /// The full C name (`NEVERC_TRUE`).
    #[schemars(regex(pattern = r"^NEVERC_[A-Z0-9_]+$"))]
    pub name: String,
    pub value: u64,
    pub doc: String,
}

/// A host-owned handle type: `LinkSymbol` is `NevercLinkSymbolHandle`, referred to as `LinkSymbolHandle`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbiHandle {
    /// The handle's name without `Neverc` and `Handle`.
    #[schemars(regex(pattern = r"^[A-Z][A-Za-z0-9]*$"))]
    pub name: String,
    pub doc: String,
}

/// A structure of the ABI, packed to 8 bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbiStruct {
    /// The C type's name without `Neverc`.
    #[schemars(regex(pattern = r"^[A-Z][A-Za-z0-9]*$"))]
    pub name: String,
    pub doc: String,
    /// A core primitive (the header itself, ids, handles, views, status): it does not start with a `Header`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub primitive: bool,
    #[schemars(length(min = 1))]
    pub fields: Vec<AbiField>,
}

/// One field of a structure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbiField {
    /// The C field name (PascalCase), unique within the structure.
    #[schemars(regex(pattern = r"^[A-Z][A-Za-z0-9]*$"))]
    pub name: String,
    /// The field's type; `[T; N]` is a fixed array of `N` elements.
    #[serde(rename = "type")]
    pub ty: String,
    pub doc: String,
}

/// A function's signature: a callback type (`[[callbacks]]`) or a slot of an API table (whose parameters follow
/// the table's implicit `Context`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbiFunction {
    /// The C name without `Neverc` (`LTOCodegenFn`), or the slot's field name (`GetRequest`), unique within its
    /// table.
    #[schemars(regex(pattern = r"^[A-Z][A-Za-z0-9]*$"))]
    pub name: String,
    pub doc: String,
    /// The return type: `Status` unless given; `void` for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returns: Option<String>,
    /// The parameters in order, each `Name: Type`.
    #[serde(default)]
    pub params: Vec<String>,
}

/// A function pointer type.
pub type AbiCallback = AbiFunction;

/// One slot of an API table.
pub type AbiSlot = AbiFunction;

/// An API table the host hands out for an interface.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbiApi {
    /// The C type's name without `Neverc` (`LinkAPI`).
    #[schemars(regex(pattern = r"^[A-Z][A-Za-z0-9]*$"))]
    pub name: String,
    /// The interface (declared in any ABI file) whose id gives this table; none for a table the host hands
    /// out through a pointer only (`MutableBinaryAPI`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Z][A-Z0-9_]*$"))]
    pub interface: Option<String>,
    pub doc: String,
    /// The function pointer slots after `Header` and `Context`, in order; each is called with the table's
    /// `Context` first.
    #[schemars(length(min = 1))]
    pub slots: Vec<AbiSlot>,
}

/// An interface: its 128-bit id and version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbiInterface {
    /// UPPER_SNAKE: the C macros are `NEVERC_INTERFACE_<name>_{HIGH,LOW}` and `NEVERC_<name>_API_{MAJOR,MINOR}`.
    #[schemars(regex(pattern = r"^[A-Z][A-Z0-9_]*$"))]
    pub name: String,
    pub id: ColonId,
    pub major: u16,
    pub minor: u16,
    /// `stable` interfaces may only grow; `experimental` ones may change.
    pub stability: Stability,
    pub doc: String,
}

/// An enumeration: named values of a `width`-bit unsigned type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbiEnum {
    /// The C type's name without the `Neverc` prefix (`LTOType` is `NevercLTOType`).
    #[schemars(regex(pattern = r"^[A-Z][A-Za-z0-9]*$"))]
    pub name: String,
    /// Other C type names for the same type.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// What every value's C constant starts with (`NEVERC_LTO_` makes `NEVERC_LTO_FULL`).
    #[schemars(regex(pattern = r"^NEVERC_[A-Z0-9_]*_$"))]
    pub c_prefix: String,
    /// Bits of the C type: 8, 16, 32 or 64.
    pub width: u32,
    /// Whether the C type is signed (`int32_t`); the values stay non-negative.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub signed: bool,
    pub doc: String,
    /// Where the values come from instead of `values`: `phase_schema:state_machines/<domain>/states`, ...
    /// (`docs/plugin-abi-format.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The values, unless `from` names them.
    #[serde(default)]
    pub values: Vec<AbiEnumValue>,
}

/// One value of an enumeration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbiEnumValue {
    /// UPPER_SNAKE, unique within the enumeration.
    #[schemars(regex(pattern = r"^[A-Z][A-Z0-9_]*$"))]
    pub name: String,
    /// Unique within the enumeration and representable in its width.
    pub value: u64,
    pub doc: String,
}

/// A flag set: named bits of a `width`-bit unsigned type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbiFlags {
    /// The C type's name without the `Neverc` prefix.
    #[schemars(regex(pattern = r"^[A-Z][A-Za-z0-9]*$"))]
    pub name: String,
    /// What every bit's C constant starts with.
    #[schemars(regex(pattern = r"^NEVERC_[A-Z0-9_]*_$"))]
    pub c_prefix: String,
    /// Bits of the C type: 8, 16, 32 or 64.
    pub width: u32,
    /// The name (after `c_prefix`) of the constant for the empty set, when the header declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Z][A-Z0-9_]*$"))]
    pub none: Option<String>,
    pub doc: String,
    /// Where the bits come from instead of `bits`: `phase_schema:policy` or `phase_schema:observer_points`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The bits, unless `from` names them.
    #[serde(default)]
    pub bits: Vec<AbiFlagBit>,
    /// When the set is the `Flags` of a descriptor the host checks at registration: what the check refuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "AbiDescriptorRules")]
    pub descriptor: Option<AbiDescriptorRules>,
}

/// The registration rules of a descriptor whose `Flags` are a flag set (`NevercLTOProviderDescriptor`): the
/// host refuses a descriptor with a bit the set does not declare, and one that breaks a rule here. The
/// conformance cases of the file are generated from these rules.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbiDescriptorRules {
    /// The C struct without `Neverc` (`LTOProviderDescriptor`).
    #[schemars(regex(pattern = r"^[A-Z][A-Za-z0-9]*$"))]
    pub name: String,
    /// The descriptor's callbacks, by their C field names.
    #[schemars(length(min = 1))]
    pub callbacks: Vec<String>,
    /// The callbacks every descriptor must have.
    #[serde(default)]
    pub required_callbacks: Vec<String>,
    /// Bits of which a descriptor must set at least one.
    #[serde(default)]
    pub one_of: Vec<String>,
    /// Bits that need a callback.
    #[serde(default)]
    pub bit_requires: Vec<AbiBitRequirement>,
    /// Whether two registered descriptors may not share an id (refused with `DUPLICATE_ID`).
    pub unique_id: bool,
}

/// A bit that may be set only when the descriptor has a callback.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbiBitRequirement {
    pub bit: String,
    pub callback: String,
}

/// One bit of a flag set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbiFlagBit {
    /// UPPER_SNAKE, unique within the set (and different from its `none`).
    #[schemars(regex(pattern = r"^[A-Z][A-Z0-9_]*$"))]
    pub name: String,
    /// The bit's position, below the set's width and unique within it.
    pub bit: u32,
    pub doc: String,
}
