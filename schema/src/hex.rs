//! Hexadecimal identifiers as NeverC writes them: `"0x"` followed by sixteen hex digits.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A 64-bit value written as a `0x`-prefixed, zero-padded, sixteen-digit hex string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HexU64(pub u64);

impl HexU64 {
    /// Parses the canonical spelling; any other spelling is rejected.
    pub fn parse(text: &str) -> Option<HexU64> {
        let digits = text.strip_prefix("0x")?;
        if digits.len() != 16 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u64::from_str_radix(digits, 16).ok().map(HexU64)
    }
}

impl fmt::Display for HexU64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:016x}", self.0)
    }
}

impl Serialize for HexU64 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HexU64 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(deserializer)?;
        HexU64::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("`{text}` is not a 0x-prefixed sixteen-digit hex number")))
    }
}

impl JsonSchema for HexU64 {
    fn schema_name() -> Cow<'static, str> {
        "HexU64".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A 64-bit value as `0x` followed by exactly sixteen hex digits.",
            "type": "string",
            "pattern": "^0x[0-9a-fA-F]{16}$"
        })
    }
}

/// A 128-bit identifier written as `[high, low]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct IdPair(pub HexU64, pub HexU64);

impl IdPair {
    pub fn high(&self) -> u64 {
        self.0.0
    }

    pub fn low(&self) -> u64 {
        self.1.0
    }
}

impl fmt::Display for IdPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:x}:{:x}", self.high(), self.low())
    }
}

impl JsonSchema for IdPair {
    fn schema_name() -> Cow<'static, str> {
        "IdPair".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let part = generator.subschema_for::<HexU64>();
        json_schema!({
            "description": "A 128-bit identifier as `[high, low]`.",
            "type": "array",
            "prefixItems": [part, part],
            "items": false,
            "minItems": 2,
            "maxItems": 2
        })
    }
}

/// A 128-bit identifier in target files, written `"high:low"`, each half decimal or `0x` hex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ColonId {
    pub high: u64,
    pub low: u64,
}

impl ColonId {
    pub fn parse(text: &str) -> Option<ColonId> {
        let (high, low) = text.split_once(':')?;
        Some(ColonId {
            high: parse_u64_half(high)?,
            low: parse_u64_half(low)?,
        })
    }
}

fn parse_u64_half(text: &str) -> Option<u64> {
    match text.strip_prefix("0x") {
        Some(hex) if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) => u64::from_str_radix(hex, 16).ok(),
        Some(_) => None,
        None if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => text.parse().ok(),
        None => None,
    }
}

impl fmt::Display for ColonId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:x}:0x{:x}", self.high, self.low)
    }
}

impl Serialize for ColonId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ColonId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(deserializer)?;
        ColonId::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("`{text}` is not an identifier of the form HIGH:LOW")))
    }
}

impl JsonSchema for ColonId {
    fn schema_name() -> Cow<'static, str> {
        "ColonId".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A 128-bit identifier `HIGH:LOW`; each half is decimal or `0x` hex and fits in 64 bits.",
            "type": "string",
            "pattern": "^(0x[0-9a-fA-F]{1,16}|[0-9]{1,20}):(0x[0-9a-fA-F]{1,16}|[0-9]{1,20})$"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_u64_accepts_only_the_canonical_spelling() {
        assert_eq!(HexU64::parse("0x4e4350485a4c4b01"), Some(HexU64(0x4e4350485a4c4b01)));
        assert_eq!(HexU64::parse("0x4e4350485a4c4b0"), None);
        assert_eq!(HexU64::parse("4e4350485a4c4b011"), None);
        assert_eq!(HexU64::parse("0x4e4350485a4c4bzz"), None);
    }

    #[test]
    fn colon_id_accepts_decimal_and_hex_halves() {
        assert_eq!(ColonId::parse("0:0"), Some(ColonId { high: 0, low: 0 }));
        assert_eq!(ColonId::parse("0x10:17"), Some(ColonId { high: 16, low: 17 }));
        assert_eq!(ColonId::parse("18446744073709551616:0"), None);
        assert_eq!(ColonId::parse("1:2:3"), None);
        assert_eq!(ColonId::parse("0x:1"), None);
    }
}
