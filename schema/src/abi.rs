//! Types of an ABI declaration, `abi/<part>.toml`: the interfaces, enumerations and flag sets of one part of
//! NeverC's plugin C ABI (one C header).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::hex::ColonId;
use crate::phase::Stability;

/// One part of the plugin C ABI.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "neverc-spec ABI declaration")]
pub struct PluginAbiDeclaration {
    /// The interfaces the part defines: what a plugin asks the host for by id and version.
    #[serde(default)]
    pub interfaces: Vec<AbiInterface>,
    /// Closed sets of values of an unsigned integer type.
    #[serde(default)]
    pub enums: Vec<AbiEnum>,
    /// Sets of independent bits of an unsigned integer type.
    #[serde(default)]
    pub flags: Vec<AbiFlags>,
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
    pub doc: String,
    #[schemars(length(min = 1))]
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
    #[schemars(length(min = 1))]
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
