//! Sizes and alignments of IR types, the way the targets' data layouts give them.
//!
//! Every bundled target uses natural alignment (the store size rounded up to a power of two, capped at 16
//! bytes for scalars), which is also what the psABIs say for `i128`. LLVM 14's x86-64 data layout gives
//! `i128` only 8-byte alignment; that known LLVM bug is documented in the oracle test, and we follow the psABI.

use std::collections::HashMap;

use crate::signature::IrType;

/// Named struct types of a module (`%struct.Q = type { ... }`), by name including the `%`.
pub type TypeTable = HashMap<String, IrType>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Bytes actually stored (`x86_fp80`: 10).
    pub store_size: u64,
    /// Bytes an array element of this type occupies (store size rounded up to the alignment).
    pub alloc_size: u64,
    pub alignment: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error("type `{0}` is not defined in the module")]
    UnknownNamedType(String),
    #[error("NeverC calling convention cannot describe an unsized IR type")]
    Unsized,
    #[error("type nesting is too deep")]
    TooDeep,
}

fn natural_alignment(store_size: u64) -> u64 {
    store_size.max(1).next_power_of_two().min(16)
}

/// Layout of `ty` for a target with `pointer_bytes`-wide pointers.
pub fn layout_of(ty: &IrType, pointer_bytes: u64, types: &TypeTable) -> Result<Layout, LayoutError> {
    layout_at_depth(ty, pointer_bytes, types, 0)
}

fn scalar(store_size: u64) -> Layout {
    let alignment = natural_alignment(store_size);
    Layout {
        store_size,
        alloc_size: store_size.div_ceil(alignment) * alignment,
        alignment,
    }
}

fn layout_at_depth(ty: &IrType, pointer_bytes: u64, types: &TypeTable, depth: usize) -> Result<Layout, LayoutError> {
    if depth > 64 {
        return Err(LayoutError::TooDeep);
    }
    Ok(match ty {
        IrType::Void => return Err(LayoutError::Unsized),
        IrType::Integer(bits) => scalar(u64::from(*bits).div_ceil(8)),
        IrType::Pointer { .. } => scalar(pointer_bytes),
        IrType::Half | IrType::BFloat => scalar(2),
        IrType::Float => scalar(4),
        IrType::Double => scalar(8),
        IrType::Fp128 | IrType::PpcFp128 => scalar(16),
        IrType::X86Fp80 => Layout {
            store_size: 10,
            alloc_size: 16,
            alignment: 16,
        },
        IrType::Vector { length, element } => {
            let element = layout_at_depth(element, pointer_bytes, types, depth + 1)?;
            let store_size = element.store_size.saturating_mul(u64::from(*length));
            let alignment = store_size.max(1).next_power_of_two();
            Layout {
                store_size,
                alloc_size: store_size.div_ceil(alignment) * alignment,
                alignment,
            }
        }
        IrType::Array { length, element } => {
            let element = layout_at_depth(element, pointer_bytes, types, depth + 1)?;
            let size = element.alloc_size.saturating_mul(u64::from(*length));
            Layout {
                store_size: size,
                alloc_size: size,
                alignment: element.alignment,
            }
        }
        IrType::Struct { packed, fields } => {
            let mut offset = 0u64;
            let mut alignment = 1u64;
            for field in fields {
                let field = layout_at_depth(field, pointer_bytes, types, depth + 1)?;
                let field_alignment = if *packed { 1 } else { field.alignment };
                offset = offset.div_ceil(field_alignment) * field_alignment;
                offset = offset.saturating_add(field.alloc_size);
                alignment = alignment.max(field_alignment);
            }
            let size = offset.div_ceil(alignment) * alignment;
            Layout {
                store_size: size,
                alloc_size: size,
                alignment,
            }
        }
        IrType::Named(name) => {
            let resolved = types
                .get(name)
                .ok_or_else(|| LayoutError::UnknownNamedType(name.clone()))?;
            layout_at_depth(resolved, pointer_bytes, types, depth + 1)?
        }
    })
}

/// Resolves a named type to its definition (other types are returned as they are).
pub fn resolve<'a>(ty: &'a IrType, types: &'a TypeTable) -> Result<&'a IrType, LayoutError> {
    let mut current = ty;
    for _ in 0..64 {
        match current {
            IrType::Named(name) => {
                current = types
                    .get(name)
                    .ok_or_else(|| LayoutError::UnknownNamedType(name.clone()))?
            }
            other => return Ok(other),
        }
    }
    Err(LayoutError::TooDeep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_layouts_of_common_types() {
        let types = TypeTable::from([(
            "%struct.Q".to_string(),
            IrType::Struct {
                packed: false,
                fields: vec![IrType::Integer(8), IrType::Integer(64), IrType::Integer(16)],
            },
        )]);
        let q = layout_of(&IrType::Named("%struct.Q".into()), 8, &types).unwrap();
        assert_eq!((q.alloc_size, q.alignment), (24, 8));
        let fp80 = layout_of(&IrType::X86Fp80, 8, &types).unwrap();
        assert_eq!((fp80.store_size, fp80.alloc_size, fp80.alignment), (10, 16, 16));
        let i128 = layout_of(&IrType::Integer(128), 8, &types).unwrap();
        assert_eq!((i128.alloc_size, i128.alignment), (16, 16));
        let v3 = layout_of(
            &IrType::Vector {
                length: 3,
                element: Box::new(IrType::Float),
            },
            8,
            &types,
        )
        .unwrap();
        assert_eq!((v3.store_size, v3.alloc_size, v3.alignment), (12, 16, 16));
        let i1 = layout_of(&IrType::Integer(1), 8, &types).unwrap();
        assert_eq!((i1.store_size, i1.alignment), (1, 1));
        assert_eq!(
            layout_of(&IrType::Named("%missing".into()), 8, &types),
            Err(LayoutError::UnknownNamedType("%missing".into()))
        );
    }
}
