//! Sizes and alignments of IR types, the way the targets' data layouts give them.
//!
//! Every bundled target uses natural alignment (the store size rounded up to a power of two, capped at 16
//! bytes for scalars), which is also what the psABIs say for `i128`. LLVM 14's x86-64 data layout gives
//! `i128` only 8-byte alignment; that known LLVM bug is listed in `docs/standard-abi-deviations.md` (checked by
//! the oracle test), and we follow the psABI.

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use crate::signature::{IrType, MAX_TYPE_NESTING};

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
    #[error(
        "type nesting deeper than the limit of {} levels (through named types)",
        MAX_TYPE_NESTING
    )]
    TooDeep,
    #[error("type `{0}` contains itself")]
    Recursive(String),
}

fn natural_alignment(store_size: u64) -> u64 {
    store_size.max(1).next_power_of_two().min(16)
}

/// Layouts of the named types met while one layout is computed, with their nesting heights, so that a type
/// shared by many fields is computed once (without this, `%T1 = type { %T0, %T0 }`, `%T2 = type { %T1, %T1 }`,
/// ... take exponential time). `None` marks a type whose layout is being computed: meeting it again means it
/// contains itself.
type NamedLayouts<'a> = FxHashMap<&'a str, Option<(Layout, usize)>>;

/// Layout of `ty` for a target with `pointer_bytes`-wide pointers.
pub fn layout_of(ty: &IrType, pointer_bytes: u64, types: &TypeTable) -> Result<Layout, LayoutError> {
    let mut named = NamedLayouts::default();
    layout_at_depth(ty, pointer_bytes, types, 0, &mut named).map(|(layout, _)| layout)
}

fn scalar(store_size: u64) -> (Layout, usize) {
    let alignment = natural_alignment(store_size);
    let layout = Layout {
        store_size,
        alloc_size: store_size.div_ceil(alignment) * alignment,
        alignment,
    };
    (layout, 0)
}

/// The layout of `ty` met at nesting `depth`, and the height of its own nesting (which, added to `depth`,
/// must stay within [`MAX_TYPE_NESTING`]).
fn layout_at_depth<'a>(
    ty: &'a IrType,
    pointer_bytes: u64,
    types: &'a TypeTable,
    depth: usize,
    named: &mut NamedLayouts<'a>,
) -> Result<(Layout, usize), LayoutError> {
    if depth > MAX_TYPE_NESTING {
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
        IrType::X86Fp80 => (
            Layout {
                store_size: 10,
                alloc_size: 16,
                alignment: 16,
            },
            0,
        ),
        IrType::Vector { length, element } => {
            let (element, height) = layout_at_depth(element, pointer_bytes, types, depth + 1, named)?;
            let store_size = element.store_size.saturating_mul(u64::from(*length));
            let alignment = store_size.max(1).next_power_of_two();
            let layout = Layout {
                store_size,
                alloc_size: store_size.div_ceil(alignment) * alignment,
                alignment,
            };
            (layout, height + 1)
        }
        IrType::Array { length, element } => {
            let (element, height) = layout_at_depth(element, pointer_bytes, types, depth + 1, named)?;
            let size = element.alloc_size.saturating_mul(u64::from(*length));
            let layout = Layout {
                store_size: size,
                alloc_size: size,
                alignment: element.alignment,
            };
            (layout, height + 1)
        }
        IrType::Struct { packed, fields } => {
            let mut offset = 0u64;
            let mut alignment = 1u64;
            let mut height = 0;
            for field in fields {
                let (field, field_height) = layout_at_depth(field, pointer_bytes, types, depth + 1, named)?;
                height = height.max(field_height + 1);
                let field_alignment = if *packed { 1 } else { field.alignment };
                offset = offset.div_ceil(field_alignment) * field_alignment;
                offset = offset.saturating_add(field.alloc_size);
                alignment = alignment.max(field_alignment);
            }
            let size = offset.div_ceil(alignment) * alignment;
            let layout = Layout {
                store_size: size,
                alloc_size: size,
                alignment,
            };
            (layout, height)
        }
        IrType::Named(name) => match named.get(name.as_str()) {
            Some(Some((layout, height))) => {
                if depth + height > MAX_TYPE_NESTING {
                    return Err(LayoutError::TooDeep);
                }
                (*layout, *height)
            }
            Some(None) => return Err(LayoutError::Recursive(name.clone())),
            None => {
                let resolved = types
                    .get(name)
                    .ok_or_else(|| LayoutError::UnknownNamedType(name.clone()))?;
                named.insert(name, None);
                let (layout, height) = layout_at_depth(resolved, pointer_bytes, types, depth + 1, named)?;
                named.insert(name, Some((layout, height + 1)));
                (layout, height + 1)
            }
        },
    })
}

/// Resolves a named type to its definition (other types are returned as they are).
pub fn resolve<'a>(ty: &'a IrType, types: &'a TypeTable) -> Result<&'a IrType, LayoutError> {
    let mut current = ty;
    for _ in 0..=MAX_TYPE_NESTING {
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

    #[test]
    fn named_types_are_computed_once_and_may_not_contain_themselves() {
        let mut types = TypeTable::new();
        types.insert("%D0".into(), IrType::Integer(8));
        for level in 1..=100 {
            let previous = IrType::Named(format!("%D{}", level - 1));
            types.insert(
                format!("%D{level}"),
                IrType::Struct {
                    packed: false,
                    fields: vec![previous.clone(), previous],
                },
            );
        }
        let d60 = layout_of(&IrType::Named("%D60".into()), 8, &types).unwrap();
        assert_eq!(d60.store_size, 1 << 60);
        assert_eq!(
            layout_of(&IrType::Named("%D100".into()), 8, &types).unwrap().alignment,
            1
        );
        types.insert(
            "%T".into(),
            IrType::Struct {
                packed: false,
                fields: vec![IrType::Integer(8), IrType::Named("%T".into())],
            },
        );
        assert_eq!(
            layout_of(&IrType::Named("%T".into()), 8, &types),
            Err(LayoutError::Recursive("%T".into()))
        );
        // A chain of named types deeper than the limit.
        let mut chain = TypeTable::new();
        chain.insert("%C0".into(), IrType::Integer(32));
        for level in 1..=MAX_TYPE_NESTING {
            let fields = vec![IrType::Named(format!("%C{}", level - 1))];
            chain.insert(format!("%C{level}"), IrType::Struct { packed: false, fields });
        }
        let top = format!("%C{MAX_TYPE_NESTING}");
        assert_eq!(layout_of(&IrType::Named(top), 8, &chain), Err(LayoutError::TooDeep));
        assert!(layout_of(&IrType::Named("%C100".into()), 8, &chain).is_ok());
    }
}
