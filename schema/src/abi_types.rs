//! The type vocabulary of ABI declarations: how a field, parameter or return type is written (`u32`,
//! `const LinkRequest*`, `[u8; 32]`, `void*`), what a name refers to once every ABI file is known, and the
//! size and alignment of each type on the 64-bit targets NeverC supports (pointers are 8 bytes).

use std::collections::HashMap;

use crate::abi::PluginAbiDeclaration;

/// A fixed-width integer of the vocabulary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AbiPrimitive {
    /// C's `char`, for the bytes of strings (`StringView`).
    Char,
    U8,
    U16,
    U32,
    U64,
    I32,
    I64,
}

impl AbiPrimitive {
    /// Every primitive with its spelling in declarations.
    pub const ALL: [(AbiPrimitive, &'static str); 7] = [
        (AbiPrimitive::Char, "char"),
        (AbiPrimitive::U8, "u8"),
        (AbiPrimitive::U16, "u16"),
        (AbiPrimitive::U32, "u32"),
        (AbiPrimitive::U64, "u64"),
        (AbiPrimitive::I32, "i32"),
        (AbiPrimitive::I64, "i64"),
    ];

    /// The Rust spelling (`u32`).
    pub const fn rust(self) -> &'static str {
        match self {
            AbiPrimitive::Char => "::core::ffi::c_char",
            AbiPrimitive::U8 => "u8",
            AbiPrimitive::U16 => "u16",
            AbiPrimitive::U32 => "u32",
            AbiPrimitive::U64 => "u64",
            AbiPrimitive::I32 => "i32",
            AbiPrimitive::I64 => "i64",
        }
    }

    /// The C spelling (`uint32_t`).
    pub const fn c(self) -> &'static str {
        match self {
            AbiPrimitive::Char => "char",
            AbiPrimitive::U8 => "uint8_t",
            AbiPrimitive::U16 => "uint16_t",
            AbiPrimitive::U32 => "uint32_t",
            AbiPrimitive::U64 => "uint64_t",
            AbiPrimitive::I32 => "int32_t",
            AbiPrimitive::I64 => "int64_t",
        }
    }

    /// Size in bytes, which is also the alignment.
    pub const fn size(self) -> u64 {
        match self {
            AbiPrimitive::Char | AbiPrimitive::U8 => 1,
            AbiPrimitive::U16 => 2,
            AbiPrimitive::U32 | AbiPrimitive::I32 => 4,
            AbiPrimitive::U64 | AbiPrimitive::I64 => 8,
        }
    }

    /// The unsigned or signed integer of `width` bits, when the vocabulary has one.
    pub fn of_width(width: u32, signed: bool) -> Option<AbiPrimitive> {
        match (width, signed) {
            (8, false) => Some(AbiPrimitive::U8),
            (16, false) => Some(AbiPrimitive::U16),
            (32, false) => Some(AbiPrimitive::U32),
            (64, false) => Some(AbiPrimitive::U64),
            (32, true) => Some(AbiPrimitive::I32),
            (64, true) => Some(AbiPrimitive::I64),
            _ => None,
        }
    }
}

/// A type as written in a declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbiType {
    /// `void`: only as a return type.
    Void,
    Primitive(AbiPrimitive),
    /// A declared type, by its name without `Neverc` (`LinkSymbolHandle`, `Status`).
    Named(String),
    /// `T*` or `const T*`; `void*` is untyped data (user data, a caller's buffer).
    Pointer {
        constant: bool,
        target: Box<AbiType>,
    },
    /// `[T; N]`: only as a field's type.
    Array {
        element: Box<AbiType>,
        length: u64,
    },
}

/// Why a type string is not a type of the vocabulary.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a type: {why}")]
pub struct AbiTypeError {
    pub text: String,
    pub why: String,
}

impl AbiType {
    /// Parses a type string: `u8`..`i64`, a declared name, `void`, `T*`, `const T*` (any depth) or `[T; N]`.
    pub fn parse(text: &str) -> Result<AbiType, AbiTypeError> {
        let error = |why: &str| AbiTypeError {
            text: text.to_string(),
            why: why.to_string(),
        };
        let trimmed = text.trim();
        if let Some(inner) = trimmed.strip_prefix('[') {
            let inner = inner.strip_suffix(']').ok_or_else(|| error("an array ends with `]`"))?;
            let (element, length) = inner
                .rsplit_once(';')
                .ok_or_else(|| error("an array is written `[T; N]`"))?;
            let length: u64 = length
                .trim()
                .parse()
                .map_err(|_| error("an array's length is a decimal number"))?;
            let element = AbiType::parse(element)?;
            if matches!(element, AbiType::Void | AbiType::Array { .. }) {
                return Err(error("an array's element is a primitive, a declared type or a pointer"));
            }
            return Ok(AbiType::Array {
                element: Box::new(element),
                length,
            });
        }
        if let Some(inner) = trimmed.strip_suffix('*') {
            let (constant, target) = match inner.trim().strip_prefix("const ") {
                Some(rest) => (true, rest),
                None => (false, inner),
            };
            let target = AbiType::parse(target)?;
            if matches!(target, AbiType::Array { .. }) {
                return Err(error(
                    "a pointer points to a primitive, a declared type, `void` or a pointer",
                ));
            }
            return Ok(AbiType::Pointer {
                constant,
                target: Box::new(target),
            });
        }
        if trimmed == "void" {
            return Ok(AbiType::Void);
        }
        if let Some((primitive, _)) = AbiPrimitive::ALL.iter().find(|(_, name)| *name == trimmed) {
            return Ok(AbiType::Primitive(*primitive));
        }
        let well_formed =
            trimmed.starts_with(|c: char| c.is_ascii_uppercase()) && trimmed.chars().all(|c| c.is_ascii_alphanumeric());
        if well_formed {
            Ok(AbiType::Named(trimmed.to_string()))
        } else {
            Err(error(
                "use u8, u16, u32, u64, i32, i64, void, a declared type's name (without `Neverc`), `T*`, `const T*` or `[T; N]`",
            ))
        }
    }

    /// The declared names the type refers to (none, or one).
    pub fn named(&self) -> Option<&str> {
        match self {
            AbiType::Named(name) => Some(name),
            AbiType::Pointer { target, .. } => target.named(),
            AbiType::Array { element, .. } => element.named(),
            AbiType::Void | AbiType::Primitive(_) => None,
        }
    }
}

/// A parameter written `Name: Type`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AbiParam {
    pub name: String,
    pub ty: AbiType,
}

impl AbiParam {
    /// Parses `Name: Type`: a PascalCase name, then a type that is neither `void` nor an array.
    pub fn parse(text: &str) -> Result<AbiParam, AbiTypeError> {
        let error = |why: &str| AbiTypeError {
            text: text.to_string(),
            why: why.to_string(),
        };
        let (name, ty) = text
            .split_once(':')
            .ok_or_else(|| error("a parameter is written `Name: Type`"))?;
        let name = name.trim();
        let well_formed =
            name.starts_with(|c: char| c.is_ascii_uppercase()) && name.chars().all(|c| c.is_ascii_alphanumeric());
        if !well_formed {
            return Err(error("a parameter's name is PascalCase"));
        }
        let ty = AbiType::parse(ty)?;
        if matches!(ty, AbiType::Void | AbiType::Array { .. }) {
            return Err(error(
                "a parameter is not `void` nor an array (pass a pointer or a view)",
            ));
        }
        Ok(AbiParam {
            name: name.to_string(),
            ty,
        })
    }
}

/// What a declared name refers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbiTypeKind {
    /// An enumeration or flag set: an integer of this type.
    Integer(AbiPrimitive),
    /// A typedef of another type.
    Typedef(AbiType),
    /// A handle: a typedef of `Handle`.
    Handle,
    Struct,
    /// A function pointer type.
    Callback,
    /// An API table: only through a pointer.
    Api,
}

/// Every type name declared across the ABI files, with what it is and the index of the file declaring it.
#[derive(Clone, Debug, Default)]
pub struct AbiTypeTable<'a> {
    pub kinds: HashMap<String, (AbiTypeKind, usize)>,
    pub structs: HashMap<&'a str, &'a crate::abi::AbiStruct>,
}

/// The name a handle is referred to by: `LinkSymbol` → `LinkSymbolHandle`.
pub fn handle_type_name(name: &str) -> String {
    format!("{name}Handle")
}

/// The name of the core structure every handle is a typedef of.
pub const HANDLE_STRUCT: &str = "Handle";
/// The name of the core structure every other structure starts with, as its `Header` field.
pub const HEADER_STRUCT: &str = "ABITableHeader";

impl<'a> AbiTypeTable<'a> {
    /// The table of every declaration's type names; the first declaration of a name wins (duplicates are
    /// reported elsewhere).
    pub fn new(declarations: &[&'a PluginAbiDeclaration]) -> AbiTypeTable<'a> {
        let mut table = AbiTypeTable::default();
        for (file, declaration) in declarations.iter().enumerate() {
            let mut add = |name: String, kind: AbiTypeKind| {
                table.kinds.entry(name).or_insert((kind, file));
            };
            for item in &declaration.enums {
                let primitive = AbiPrimitive::of_width(item.width, item.signed).unwrap_or(AbiPrimitive::U32);
                add(item.name.clone(), AbiTypeKind::Integer(primitive));
                for alias in &item.aliases {
                    add(alias.clone(), AbiTypeKind::Integer(primitive));
                }
            }
            for item in &declaration.flags {
                let primitive = AbiPrimitive::of_width(item.width, false).unwrap_or(AbiPrimitive::U64);
                add(item.name.clone(), AbiTypeKind::Integer(primitive));
            }
            for item in &declaration.typedefs {
                if let Ok(ty) = AbiType::parse(&item.ty) {
                    add(item.name.clone(), AbiTypeKind::Typedef(ty));
                }
            }
            for item in &declaration.handles {
                add(handle_type_name(&item.name), AbiTypeKind::Handle);
            }
            for item in &declaration.structs {
                add(item.name.clone(), AbiTypeKind::Struct);
                table.structs.entry(item.name.as_str()).or_insert(item);
            }
            for item in &declaration.callbacks {
                add(item.name.clone(), AbiTypeKind::Callback);
            }
            for item in &declaration.apis {
                add(item.name.clone(), AbiTypeKind::Api);
            }
        }
        table
    }

    /// Size and alignment of a type, in bytes; `None` when some name does not resolve, a structure contains
    /// itself, or the type has no size (`void`, an API table by value).
    pub fn layout(&self, ty: &AbiType) -> Option<(u64, u64)> {
        self.layout_within(ty, &mut Vec::new())
    }

    fn layout_within(&self, ty: &AbiType, open: &mut Vec<String>) -> Option<(u64, u64)> {
        match ty {
            AbiType::Void => None,
            AbiType::Primitive(primitive) => Some((primitive.size(), primitive.size())),
            AbiType::Pointer { .. } => Some((8, 8)),
            AbiType::Array { element, length } => {
                let (size, align) = self.layout_within(element, open)?;
                Some((size.checked_mul(*length)?, align))
            }
            AbiType::Named(name) => match &self.kinds.get(name)?.0 {
                AbiTypeKind::Integer(primitive) => Some((primitive.size(), primitive.size())),
                AbiTypeKind::Callback => Some((8, 8)),
                AbiTypeKind::Api => None,
                AbiTypeKind::Handle => self.layout_within(&AbiType::Named(HANDLE_STRUCT.to_string()), open),
                AbiTypeKind::Typedef(target) => {
                    if open.contains(name) {
                        return None;
                    }
                    open.push(name.clone());
                    let layout = self.layout_within(target, open);
                    open.pop();
                    layout
                }
                AbiTypeKind::Struct => {
                    if open.contains(name) {
                        return None;
                    }
                    let item = self.structs.get(name.as_str())?;
                    open.push(name.clone());
                    let layout = self
                        .struct_layout_within(item, open)
                        .map(|layout| (layout.size, layout.align));
                    open.pop();
                    layout
                }
            },
        }
    }

    /// The offsets of a structure's fields as a C compiler lays them out with `#pragma pack(8)`.
    pub fn struct_layout(&self, item: &crate::abi::AbiStruct) -> Option<StructLayout> {
        let mut open = vec![item.name.clone()];
        self.struct_layout_within(item, &mut open)
    }

    fn struct_layout_within(&self, item: &crate::abi::AbiStruct, open: &mut Vec<String>) -> Option<StructLayout> {
        let mut offset = 0u64;
        let mut align = 1u64;
        let mut fields = Vec::new();
        for field in &item.fields {
            let ty = AbiType::parse(&field.ty).ok()?;
            let (size, field_align) = self.layout_within(&ty, open)?;
            let field_align = field_align.min(PACK);
            let aligned = offset.div_ceil(field_align) * field_align;
            fields.push(FieldLayout {
                offset: aligned,
                size,
                padding_before: aligned - offset,
            });
            offset = aligned.checked_add(size)?;
            align = align.max(field_align);
        }
        let size = offset.div_ceil(align) * align;
        Some(StructLayout {
            size,
            align,
            tail_padding: size - offset,
            fields,
        })
    }
}

/// The `#pragma pack` of every ABI header.
pub const PACK: u64 = 8;

/// Where a structure's fields are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructLayout {
    pub size: u64,
    pub align: u64,
    /// Bytes after the last field up to the size.
    pub tail_padding: u64,
    pub fields: Vec<FieldLayout>,
}

/// Where one field is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldLayout {
    pub offset: u64,
    pub size: u64,
    /// Bytes the compiler inserts before the field.
    pub padding_before: u64,
}

#[cfg(test)]
mod tests {
    use super::{AbiParam, AbiPrimitive, AbiType};

    #[test]
    fn type_strings_parse() {
        assert_eq!(AbiType::parse("u32"), Ok(AbiType::Primitive(AbiPrimitive::U32)));
        assert_eq!(
            AbiType::parse("const LinkRequest*"),
            Ok(AbiType::Pointer {
                constant: true,
                target: Box::new(AbiType::Named("LinkRequest".into()))
            })
        );
        assert_eq!(
            AbiType::parse("[u8; 32]"),
            Ok(AbiType::Array {
                element: Box::new(AbiType::Primitive(AbiPrimitive::U8)),
                length: 32
            })
        );
        assert!(AbiType::parse("void*").is_ok());
        assert!(AbiType::parse("bool").is_err());
        assert!(AbiType::parse("[u8; x]").is_err());
        assert!(AbiType::parse("[u8; 4]*").is_err());
        assert!(AbiParam::parse("Task: TaskHandle").is_ok());
        assert!(AbiParam::parse("Task TaskHandle").is_err());
        assert!(AbiParam::parse("Out: void").is_err());
    }
}
