//! The target's standard calling convention, computed only from the `[abi]` data of its declaration.
//!
//! This is the fallback for every value a plan does not cover. It follows LLVM's lowering of IR-level
//! signatures (`CC_X86_64_C`, `CC_AArch64_AAPCS`): arguments are assigned in order, each taking the first
//! free register of its pool; what does not fit goes to the stack. The differences between targets are the
//! rule flags of `[abi.rules]`, never target-specific code.

use std::collections::HashSet;

use rustc_hash::FxHashMap;

use crate::assignment::{Decider, Piece, Place, ValueAssignment, ValueRef};
use crate::layout::{Layout, LayoutError, TypeTable, layout_of, resolve};
use crate::signature::{IrType, MAX_TYPE_NESTING, Parameter, Signature};
use neverc_tables::{AbiRecord, TargetRecord};

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StandardAbiError {
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error(
        "{target} cannot return `{ty}`: `{part}` is passed only on the stack there (`stack_only_types`), and \
         LLVM returns it in registers the target does not declare"
    )]
    UnsupportedReturn {
        target: &'static str,
        ty: String,
        part: String,
    },
    #[error("a value passed directly splits into more than {} pieces", MAX_PIECES)]
    TooManyPieces,
}

/// The most pieces one value passed directly may split into (an aggregate is split element by element; a
/// hostile `[4294967295 x i32]` would otherwise take hours and all memory).
pub const MAX_PIECES: usize = 1 << 16;

/// Register and stack allocation state while assigning one call's values in order.
#[derive(Clone, Debug)]
pub struct AbiState<'t> {
    pub target: &'t TargetRecord,
    /// Physical registers already taken (by plan locations or earlier values).
    pub used: HashSet<usize>,
    /// Size of the argument area so far.
    pub stack_size: u64,
}

fn pointer_bytes(target: &TargetRecord) -> u64 {
    u64::from(target.pointer_width / 8)
}

/// What a scalar piece needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Integer,
    Float,
}

impl<'t> AbiState<'t> {
    pub fn new(target: &'t TargetRecord) -> AbiState<'t> {
        AbiState {
            target,
            used: HashSet::new(),
            stack_size: 0,
        }
    }

    fn abi(&self) -> &'t AbiRecord {
        &self.target.abi
    }

    fn pool(&self, class: Class) -> &'t [usize] {
        match class {
            Class::Integer => self.abi().integer_arguments,
            Class::Float => self.abi().float_arguments,
        }
    }

    /// The first free register of a pool.
    fn take(&mut self, class: Class) -> Option<usize> {
        let register = self
            .pool(class)
            .iter()
            .copied()
            .find(|register| !self.used.contains(register))?;
        self.used.insert(register);
        Some(register)
    }

    /// `count` registers in a row of the pool (the first of them at an even position when `even`), or none.
    /// Registers passed over to reach an even position are lost when the rules say skipped registers are
    /// not reused.
    fn take_block(&mut self, class: Class, count: usize, even: bool) -> Option<Vec<usize>> {
        let pool = self.pool(class);
        let first_free = pool.iter().position(|register| !self.used.contains(register))?;
        let mut start = first_free;
        loop {
            if even && start % 2 == 1 {
                start += 1;
            }
            if start + count > pool.len() {
                return None;
            }
            if pool[start..start + count]
                .iter()
                .all(|register| !self.used.contains(register))
            {
                break;
            }
            start += 1;
        }
        if !self.abi().reuse_skipped_registers {
            for register in &pool[first_free..start] {
                self.used.insert(*register);
            }
        }
        let block = pool[start..start + count].to_vec();
        self.used.extend(block.iter().copied());
        Some(block)
    }

    /// Marks every register of a pool as taken.
    fn exhaust(&mut self, class: Class) {
        let pool = self.pool(class);
        self.used.extend(pool.iter().copied());
    }

    /// Allocates a stack slot: at least a slot, aligned to the clamped natural alignment.
    pub fn stack_slot(&mut self, size: u64, alignment: u64) -> Place {
        let (offset, size) = self.allocate_stack(size, alignment);
        Place::Stack { offset, size }
    }

    /// The offset and size of a new stack slot for `size` bytes (see [`AbiState::stack_slot`]).
    fn allocate_stack(&mut self, size: u64, alignment: u64) -> (u64, u64) {
        let abi = self.abi();
        let slot = u64::from(abi.stack_slot_size.max(1));
        let alignment = alignment.clamp(slot, u64::from(abi.stack_max_alignment.max(abi.stack_slot_size).max(1)));
        let size = size.max(1).div_ceil(slot) * slot;
        let offset = self.stack_size.div_ceil(alignment) * alignment;
        self.stack_size = offset + size;
        (offset, size)
    }

    /// Takes the register of an indirect return's hidden pointer away from the arguments, where the
    /// target passes that pointer in an argument register (x86-64: `rdi`, so the arguments shift by one).
    pub fn withhold_hidden_pointer(&mut self, returned: &ValueAssignment) {
        if !returned.indirect || !self.abi().sret_takes_argument_register {
            return;
        }
        for piece in &returned.pieces {
            if let Place::Register { register, .. } = piece.place {
                self.used.insert(register);
            }
        }
    }

    /// Assigns argument `index` by the standard convention.
    pub fn assign_argument(
        &mut self,
        index: u32,
        parameter: &Parameter,
        types: &TypeTable,
    ) -> Result<ValueAssignment, StandardAbiError> {
        let value = ValueRef::Argument(index);
        let abi = self.abi();
        if parameter.attributes.sret.is_some() && !abi.sret_takes_argument_register {
            let register = abi.sret_register;
            self.used.insert(register);
            let piece = Piece {
                place: Place::Register {
                    register,
                    width: self.target.pointer_width,
                },
                offset: 0,
                size: pointer_bytes(self.target),
            };
            return Ok(ValueAssignment {
                value,
                pieces: vec![piece],
                indirect: true,
                decider: Decider::Standard,
            });
        }
        if let Some(byval) = &parameter.attributes.byval {
            let layout = layout_of(byval, pointer_bytes(self.target), types)?;
            let alignment = u64::from(parameter.attributes.align.unwrap_or(0))
                .max(layout.alignment.min(u64::from(abi.stack_slot_size)));
            let place = self.stack_slot(layout.alloc_size, alignment);
            let size = layout.alloc_size;
            return Ok(ValueAssignment {
                value,
                pieces: vec![Piece { place, offset: 0, size }],
                indirect: true,
                decider: Decider::Standard,
            });
        }
        let pieces = self.assign_value(&parameter.ty, types)?;
        Ok(ValueAssignment {
            value,
            pieces,
            indirect: parameter.attributes.sret.is_some(),
            decider: Decider::Standard,
        })
    }

    /// A whole argument or returned value: an array the rules pass as one block, or else every part of it
    /// by the rules of its type. Only the value itself may be a block: an array inside a struct or another
    /// array is passed element by element, as LLVM decides on the type of the whole argument.
    fn assign_value(&mut self, ty: &IrType, types: &TypeTable) -> Result<Vec<Piece>, StandardAbiError> {
        let ty = resolve(ty, types)?;
        if let IrType::Array { .. } = ty
            && let Some(pieces) = self.assign_block(ty, types)?
        {
            return Ok(pieces);
        }
        self.assign_type(ty, types)
    }

    fn assign_type(&mut self, ty: &IrType, types: &TypeTable) -> Result<Vec<Piece>, StandardAbiError> {
        let ty = resolve(ty, types)?;
        let layout = layout_of(ty, pointer_bytes(self.target), types)?;
        let abi = self.abi();
        if abi.stack_only_types.iter().any(|name| *name == ty.to_string()) {
            let place = self.stack_slot(layout.alloc_size, layout.alignment);
            return Ok(vec![Piece {
                place,
                offset: 0,
                size: layout.store_size,
            }]);
        }
        match ty {
            IrType::Integer(bits) if *bits > 64 && *bits <= 128 => Ok(self.assign_register_pair(layout)),
            IrType::Integer(bits) if *bits > 128 => self.assign_wide_integer(layout),
            IrType::Integer(_) | IrType::Pointer { .. } => Ok(vec![self.assign_scalar(
                Class::Integer,
                layout,
                value_width(ty, self.target),
            )]),
            _ if ty.is_floating_point() => Ok(vec![self.assign_float_scalar(layout, value_width(ty, self.target))]),
            IrType::Vector { .. } => Ok(self.assign_vector(layout)),
            IrType::Array { length, element } => self.assign_elements(*length, element, types),
            IrType::Struct { fields, packed } => {
                let mut pieces = Vec::new();
                let mut offset = 0u64;
                for field in fields {
                    let field_layout = layout_of(field, pointer_bytes(self.target), types)?;
                    let alignment = if *packed { 1 } else { field_layout.alignment };
                    offset = offset.div_ceil(alignment) * alignment;
                    for mut piece in self.assign_type(field, types)? {
                        piece.offset += offset;
                        pieces.push(piece);
                    }
                    if pieces.len() > MAX_PIECES {
                        return Err(StandardAbiError::TooManyPieces);
                    }
                    offset += field_layout.alloc_size;
                }
                Ok(pieces)
            }
            IrType::Void | IrType::Named(_) => Err(StandardAbiError::Layout(LayoutError::Unsized)),
            _ => Ok(vec![self.assign_scalar(
                Class::Integer,
                layout,
                value_width(ty, self.target),
            )]),
        }
    }

    fn assign_scalar(&mut self, class: Class, layout: Layout, width: u32) -> Piece {
        let size = layout.store_size;
        match self.take(class) {
            Some(register) => Piece {
                place: Place::Register { register, width },
                offset: 0,
                size,
            },
            None => Piece {
                place: self.stack_slot(size, layout.alignment),
                offset: 0,
                size,
            },
        }
    }

    fn assign_float_scalar(&mut self, layout: Layout, width: u32) -> Piece {
        let size = layout.store_size;
        if let Some(register) = self.take(Class::Float) {
            return Piece {
                place: Place::Register { register, width },
                offset: 0,
                size,
            };
        }
        if self.abi().float_falls_back_to_integer_registers
            && u64::from(self.target.pointer_width / 8) >= size
            && let Some(register) = self.take(Class::Integer)
        {
            return Piece {
                place: Place::Register {
                    register,
                    width: self.target.pointer_width,
                },
                offset: 0,
                size,
            };
        }
        Piece {
            place: self.stack_slot(size, layout.alignment),
            offset: 0,
            size,
        }
    }

    /// A 128-bit integer: a register pair, or (where allowed) a register and a stack slot, or the stack.
    fn assign_register_pair(&mut self, layout: Layout) -> Vec<Piece> {
        let half = layout.store_size / 2;
        let width = (half * 8) as u32;
        let even = self.abi().int128_even_pair;
        if let Some(block) = self.take_block(Class::Integer, 2, even) {
            return block
                .into_iter()
                .enumerate()
                .map(|(index, register)| Piece {
                    place: Place::Register { register, width },
                    offset: index as u64 * half,
                    size: half,
                })
                .collect();
        }
        if self.abi().split_between_registers_and_stack
            && let Some(register) = self.take(Class::Integer)
        {
            let low = Piece {
                place: Place::Register { register, width },
                offset: 0,
                size: half,
            };
            let high = Piece {
                place: self.stack_slot(half, half),
                offset: half,
                size: half,
            };
            return vec![low, high];
        }
        if !self.abi().reuse_skipped_registers {
            self.exhaust(Class::Integer);
        }
        vec![Piece {
            place: self.stack_slot(layout.store_size, layout.alignment),
            offset: 0,
            size: layout.store_size,
        }]
    }

    /// An integer wider than 128 bits, which LLVM splits into pointer-size parts: the first part takes the
    /// first free register (an even-positioned one where `int128_even_pair` says register pairs start
    /// there), every later part the next free register, and what does not fit goes to 8-byte stack slots.
    /// Where pairs start at even positions, a first part that finds no register goes to a stack slot aligned
    /// like the whole value and, where skipped registers are not reused, no later value gets an integer
    /// register.
    fn assign_wide_integer(&mut self, layout: Layout) -> Result<Vec<Piece>, StandardAbiError> {
        let part_bytes = pointer_bytes(self.target).max(1);
        if layout.store_size.div_ceil(part_bytes) > MAX_PIECES as u64 {
            return Err(StandardAbiError::TooManyPieces);
        }
        let width = self.target.pointer_width;
        let even = self.abi().int128_even_pair;
        let mut pieces = Vec::new();
        let mut offset = 0;
        while offset < layout.store_size {
            let size = part_bytes.min(layout.store_size - offset);
            let register = if offset == 0 {
                self.take_block(Class::Integer, 1, even)
                    .and_then(|block| block.first().copied())
            } else {
                self.take(Class::Integer)
            };
            let place = match register {
                Some(register) => Place::Register { register, width },
                // Where register pairs start at even positions (AArch64), the first part on the stack is
                // aligned like the whole value; elsewhere (x86-64) every part takes an 8-byte slot.
                None if offset == 0 && even => {
                    if !self.abi().reuse_skipped_registers {
                        self.exhaust(Class::Integer);
                    }
                    self.stack_slot(size, layout.alignment)
                }
                None => self.stack_slot(size, part_bytes),
            };
            pieces.push(Piece { place, offset, size });
            offset += size;
        }
        Ok(pieces)
    }

    /// A vector: one vector register when it fits, else pieces of the vector register size, each in a
    /// register or on the stack. Without vector registers, the general convention applies per pointer-size piece.
    fn assign_vector(&mut self, layout: Layout) -> Vec<Piece> {
        let register_bytes = u64::from(self.abi().vector_register_bytes);
        if register_bytes == 0 {
            let piece_size = u64::from(self.target.pointer_width / 8);
            return (0..layout.store_size.div_ceil(piece_size))
                .map(|index| {
                    let piece_layout = Layout {
                        store_size: piece_size,
                        alloc_size: piece_size,
                        alignment: piece_size,
                    };
                    let mut piece = self.assign_scalar(Class::Integer, piece_layout, self.target.pointer_width);
                    piece.offset = index * piece_size;
                    piece
                })
                .collect();
        }
        if layout.store_size <= register_bytes {
            // A short vector takes the view `short_vectors_widen_to_register` gives it, in the register and in
            // its stack slot alike (x86-64 widens `<2 x float>` to a 16-byte slot; AArch64 keeps 8 bytes).
            let view = self.vector_view_bytes(layout.store_size);
            let width = (view * 8) as u32;
            if let Some(register) = self.take(Class::Float) {
                let place = Place::Register { register, width };
                return vec![Piece {
                    place,
                    offset: 0,
                    size: layout.store_size,
                }];
            }
            let place = self.stack_slot(view, view);
            return vec![Piece {
                place,
                offset: 0,
                size: layout.store_size,
            }];
        }
        (0..layout.store_size.div_ceil(register_bytes))
            .map(|index| {
                let piece_layout = Layout {
                    store_size: register_bytes,
                    alloc_size: register_bytes,
                    alignment: register_bytes,
                };
                let mut piece = self.assign_scalar(Class::Float, piece_layout, (register_bytes * 8) as u32);
                piece.offset = index * register_bytes;
                piece
            })
            .collect()
    }

    /// Bytes a vector of `bytes` occupies in a register view and a stack slot: the whole vector register
    /// where short vectors are widened, else its size rounded up to a power of two.
    fn vector_view_bytes(&self, bytes: u64) -> u64 {
        let register_bytes = u64::from(self.abi().vector_register_bytes);
        if self.abi().short_vectors_widen_to_register {
            register_bytes
        } else {
            bytes.max(1).next_power_of_two().min(register_bytes)
        }
    }

    /// An array passed element by element.
    fn assign_elements(
        &mut self,
        length: u32,
        element: &IrType,
        types: &TypeTable,
    ) -> Result<Vec<Piece>, StandardAbiError> {
        let element_type = resolve(element, types)?;
        let element_layout = layout_of(element_type, pointer_bytes(self.target), types)?;
        let mut pieces = Vec::new();
        // Elements without bytes take no place, however many there are.
        if element_layout.alloc_size == 0 {
            return Ok(pieces);
        }
        for index in 0..u64::from(length) {
            for mut piece in self.assign_type(element_type, types)? {
                piece.offset += index * element_layout.alloc_size;
                pieces.push(piece);
            }
            if pieces.len() > MAX_PIECES {
                return Err(StandardAbiError::TooManyPieces);
            }
        }
        Ok(pieces)
    }

    /// An array the target passes as one block (`[abi.rules.array_blocks]`): all its scalars of one type,
    /// each splitting into register pieces of a kind the rules name. The block takes one register per piece,
    /// consecutive registers of one class; when they are not free it goes wholly to the stack, its pieces one
    /// after the other from an offset aligned like the array, and (where the rules say so) takes every
    /// register of the class left. `None` when the array is no block.
    fn assign_block(&mut self, array: &IrType, types: &TypeTable) -> Result<Option<Vec<Piece>>, StandardAbiError> {
        let Some(blocks) = self.abi().array_blocks else {
            return Ok(None);
        };
        let bytes = pointer_bytes(self.target);
        let layout = layout_of(array, bytes, types)?;
        if layout.alloc_size == 0 {
            return Ok(None);
        }
        let Scalars::Uniform(scalar, count) =
            scalars_of(array, types, self.target.pointer_width, &mut FxHashMap::default())
        else {
            return Ok(None);
        };
        let scalar_layout = layout_of(&scalar, bytes, types)?;
        let shapes = self.register_shapes(&scalar, scalar_layout);
        let scalar_name = scalar.to_string();
        let in_block = |shape: &Shape| match shape.kind {
            PieceKind::Integer => blocks.integer_bits.contains(&shape.width),
            PieceKind::Float => blocks.float_types.contains(&scalar_name.as_str()),
            PieceKind::Vector => blocks.vector_bits.contains(&shape.width),
        };
        let Some(first) = shapes.first() else {
            return Ok(None);
        };
        if !shapes.iter().all(in_block) {
            return Ok(None);
        }
        let class = match first.kind {
            PieceKind::Integer => Class::Integer,
            PieceKind::Float | PieceKind::Vector => Class::Float,
        };
        // A block of more pieces than the pool has registers goes to the stack without counting its scalars.
        let registers = usize::try_from(count)
            .ok()
            .and_then(|count| count.checked_mul(shapes.len()))
            .filter(|registers| *registers <= self.pool(class).len());
        if let Some(registers) = registers
            && let Some(block) = self.take_block(class, registers, false)
        {
            let pieces = block_pieces(array, &shapes, bytes, types)?
                .into_iter()
                .zip(block)
                .map(|((offset, shape), register)| Piece {
                    place: Place::Register {
                        register,
                        width: shape.width,
                    },
                    offset,
                    size: shape.size,
                })
                .collect();
            return Ok(Some(pieces));
        }
        if blocks.stack_exhausts_registers {
            self.exhaust(class);
        }
        // On the stack every piece takes the bytes of its register view, one after the other from an offset
        // aligned like the array. Where that is the array's own layout (no padding between its scalars), the
        // array is one piece.
        let stride: u64 = shapes.iter().map(|shape| u64::from(shape.width / 8)).sum();
        let packed = count.saturating_mul(stride);
        let (start, slot) = self.allocate_stack(packed, layout.alignment);
        if packed == layout.alloc_size {
            return Ok(Some(vec![Piece {
                place: Place::Stack {
                    offset: start,
                    size: slot,
                },
                offset: 0,
                size: layout.store_size,
            }]));
        }
        let mut at = start;
        let pieces = block_pieces(array, &shapes, bytes, types)?
            .into_iter()
            .map(|(offset, shape)| {
                let size = u64::from(shape.width / 8);
                let place = Place::Stack { offset: at, size };
                at += size;
                Piece {
                    place,
                    offset,
                    size: shape.size,
                }
            })
            .collect();
        Ok(Some(pieces))
    }

    /// The register pieces a scalar or vector value splits into, by the rules that assign them (`assign_type`):
    /// an integer wider than a pointer into pointer-size parts, a vector wider than a vector register into
    /// pieces of the register's size (into pointer-size parts where vectors take no vector registers), any
    /// other scalar or vector one piece. Empty for any other type.
    fn register_shapes(&self, ty: &IrType, layout: Layout) -> Vec<Shape> {
        let pointer = pointer_bytes(self.target).max(1);
        let whole = |kind, width| {
            vec![Shape {
                kind,
                width,
                offset: 0,
                size: layout.store_size,
            }]
        };
        let parts = |kind, part: u64| {
            let width = (part * 8) as u32;
            (0..layout.store_size.div_ceil(part))
                .map(|index| Shape {
                    kind,
                    width,
                    offset: index * part,
                    size: part.min(layout.store_size - index * part),
                })
                .collect()
        };
        let register_bytes = u64::from(self.abi().vector_register_bytes);
        match ty {
            IrType::Integer(_) if layout.store_size > pointer => parts(PieceKind::Integer, pointer),
            IrType::Integer(_) | IrType::Pointer { .. } => whole(PieceKind::Integer, value_width(ty, self.target)),
            _ if ty.is_floating_point() => whole(PieceKind::Float, value_width(ty, self.target)),
            IrType::Vector { .. } if register_bytes == 0 => parts(PieceKind::Integer, pointer),
            IrType::Vector { .. } if layout.store_size <= register_bytes => whole(
                PieceKind::Vector,
                (self.vector_view_bytes(layout.store_size) * 8) as u32,
            ),
            IrType::Vector { .. } => parts(PieceKind::Vector, register_bytes),
            _ => Vec::new(),
        }
    }
}

/// The kind of register piece a scalar or vector splits into, as `[abi.rules.array_blocks]` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PieceKind {
    /// An integer or pointer (or a part of one) in a general register.
    Integer,
    /// A floating-point scalar.
    Float,
    /// A vector (or a part of one) in a vector register.
    Vector,
}

/// One register piece of a scalar or vector: its kind, the width a register holds it at, and its bytes.
#[derive(Clone, Copy, Debug)]
struct Shape {
    kind: PieceKind,
    width: u32,
    offset: u64,
    size: u64,
}

/// The scalars and vectors inside a type, as far as the array block rule cares.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Scalars {
    /// There are none (an empty struct, an array of length 0).
    None,
    /// All of them are of this type (a pointer seen as an integer of its width, as LLVM sees it), and there
    /// are this many (saturating).
    Uniform(IrType, u64),
    /// They are not all of one type.
    Mixed,
}

impl Scalars {
    /// The scalars of two parts of a value together.
    fn and(self, other: Scalars) -> Scalars {
        match (self, other) {
            (Scalars::None, other) | (other, Scalars::None) => other,
            (Scalars::Uniform(first, count), Scalars::Uniform(second, more)) if first == second => {
                Scalars::Uniform(first, count.saturating_add(more))
            }
            _ => Scalars::Mixed,
        }
    }
}

/// Memoized answers of [`scalars_of`] for the named types met, so that a named type used many times is
/// looked at once.
type NamedScalars<'a> = FxHashMap<&'a str, Scalars>;

/// The scalars and vectors inside `ty`. `ty`'s layout must have been computed, so that its named types are
/// defined and not recursive (an undefined one is taken as mixed).
fn scalars_of<'a>(ty: &'a IrType, types: &'a TypeTable, pointer_width: u32, named: &mut NamedScalars<'a>) -> Scalars {
    match ty {
        IrType::Array { length: 0, .. } => Scalars::None,
        IrType::Array { length, element } => match scalars_of(element, types, pointer_width, named) {
            Scalars::Uniform(scalar, count) => Scalars::Uniform(scalar, count.saturating_mul(u64::from(*length))),
            other => other,
        },
        IrType::Struct { fields, .. } => fields.iter().fold(Scalars::None, |scalars, field| match scalars {
            Scalars::Mixed => Scalars::Mixed,
            scalars => scalars.and(scalars_of(field, types, pointer_width, named)),
        }),
        IrType::Named(name) => {
            if let Some(known) = named.get(name.as_str()) {
                return known.clone();
            }
            let Some(defined) = types.get(name) else {
                return Scalars::Mixed;
            };
            let answer = scalars_of(defined, types, pointer_width, named);
            named.insert(name.as_str(), answer.clone());
            answer
        }
        IrType::Pointer { .. } => Scalars::Uniform(IrType::Integer(pointer_width), 1),
        IrType::Void => Scalars::Mixed,
        other => Scalars::Uniform(other.clone(), 1),
    }
}

/// Every register piece of a block, in order: its offset in the array and its shape (`shapes`, the pieces of
/// one scalar). At most [`MAX_PIECES`].
fn block_pieces(
    array: &IrType,
    shapes: &[Shape],
    pointer_bytes: u64,
    types: &TypeTable,
) -> Result<Vec<(u64, Shape)>, StandardAbiError> {
    let mut offsets = Vec::new();
    scalar_offsets(
        array,
        0,
        pointer_bytes,
        types,
        &mut offsets,
        MAX_PIECES / shapes.len().max(1),
    )?;
    Ok(offsets
        .into_iter()
        .flat_map(|offset| shapes.iter().map(move |shape| (offset + shape.offset, *shape)))
        .collect())
}

/// The byte offset of every scalar and vector inside `ty`, in order, each plus `base`; more than `limit` is
/// [`StandardAbiError::TooManyPieces`]. Elements without bytes hold none and are skipped, so the walk is as
/// long as the list it makes.
fn scalar_offsets(
    ty: &IrType,
    base: u64,
    pointer_bytes: u64,
    types: &TypeTable,
    offsets: &mut Vec<u64>,
    limit: usize,
) -> Result<(), StandardAbiError> {
    match resolve(ty, types)? {
        IrType::Array { length, element } => {
            let element_layout = layout_of(element, pointer_bytes, types)?;
            if element_layout.alloc_size > 0 {
                for index in 0..u64::from(*length) {
                    let at = base + index * element_layout.alloc_size;
                    scalar_offsets(element, at, pointer_bytes, types, offsets, limit)?;
                }
            }
        }
        IrType::Struct { fields, packed } => {
            let mut offset = 0u64;
            for field in fields {
                let field_layout = layout_of(field, pointer_bytes, types)?;
                let alignment = if *packed { 1 } else { field_layout.alignment };
                offset = offset.div_ceil(alignment) * alignment;
                scalar_offsets(field, base + offset, pointer_bytes, types, offsets, limit)?;
                offset += field_layout.alloc_size;
            }
        }
        _ if offsets.len() >= limit => return Err(StandardAbiError::TooManyPieces),
        _ => offsets.push(base),
    }
    Ok(())
}

/// The width in bits a register holding a value of this scalar type is viewed at (i1/i8/i16 promoted to 32).
pub fn value_width(ty: &IrType, target: &TargetRecord) -> u32 {
    match ty {
        IrType::Integer(bits) if *bits <= 32 => 32,
        IrType::Integer(bits) => (*bits).next_power_of_two().min(64),
        IrType::Pointer { .. } => target.pointer_width,
        IrType::Half | IrType::BFloat => 16,
        IrType::Float => 32,
        IrType::Double => 64,
        IrType::Fp128 | IrType::PpcFp128 => 128,
        IrType::X86Fp80 => 80,
        IrType::Vector { .. } => 128,
        _ => target.pointer_width,
    }
}

/// Where every argument and the return value of `signature` go under the target's standard convention.
pub fn standard_assignments(
    target: &TargetRecord,
    signature: &Signature,
    types: &TypeTable,
) -> Result<Vec<ValueAssignment>, StandardAbiError> {
    let mut state = AbiState::new(target);
    let mut assignments = Vec::new();
    if let Some(assignment) = standard_return(target, &signature.return_type, types)? {
        state.withhold_hidden_pointer(&assignment);
        assignments.push(assignment);
    }
    for (index, parameter) in signature.parameters.iter().enumerate() {
        assignments.push(state.assign_argument(index as u32, parameter, types)?);
    }
    Ok(assignments)
}

/// Refuses a return type that holds a type the target passes only on the stack (`[abi.rules]
/// stack_only_types`, x86-64 `x86_fp80`): LLVM returns such values in registers the target does not declare
/// (the x87 stack), so neither the standard convention nor any plan can say where the value is. The one rule
/// for returns, applied to the standard return and to every plan read over a signature ([`crate::planner::assign`]).
pub fn check_returnable(target: &TargetRecord, ty: &IrType, types: &TypeTable) -> Result<(), StandardAbiError> {
    if target.abi.stack_only_types.is_empty() {
        return Ok(());
    }
    match stack_only_part(target, ty, types, 0, &mut HashSet::new()) {
        Some(part) => Err(StandardAbiError::UnsupportedReturn {
            target: target.name,
            ty: ty.to_string(),
            part,
        }),
        None => Ok(()),
    }
}

/// The first stack-only scalar type inside `ty`, if any; each named type is looked into once (`seen`), and no
/// deeper than types nest.
fn stack_only_part<'a>(
    target: &TargetRecord,
    ty: &'a IrType,
    types: &'a TypeTable,
    depth: usize,
    seen: &mut HashSet<&'a str>,
) -> Option<String> {
    if depth > MAX_TYPE_NESTING {
        return None;
    }
    match ty {
        IrType::Vector { element, .. } | IrType::Array { element, .. } => {
            stack_only_part(target, element, types, depth + 1, seen)
        }
        IrType::Struct { fields, .. } => fields
            .iter()
            .find_map(|field| stack_only_part(target, field, types, depth + 1, seen)),
        IrType::Named(name) => {
            if !seen.insert(name.as_str()) {
                return None;
            }
            stack_only_part(target, types.get(name)?, types, depth + 1, seen)
        }
        scalar => {
            let spelled = scalar.to_string();
            target
                .abi
                .stack_only_types
                .contains(&spelled.as_str())
                .then_some(spelled)
        }
    }
}

/// The standard return location of a type; values that do not fit the return registers are returned
/// through a hidden pointer, which the caller passes like an sret argument.
pub fn standard_return(
    target: &TargetRecord,
    ty: &IrType,
    types: &TypeTable,
) -> Result<Option<ValueAssignment>, StandardAbiError> {
    let ty = resolve(ty, types)?;
    if *ty == IrType::Void {
        return Ok(None);
    }
    check_returnable(target, ty, types)?;
    let abi = &target.abi;
    let mut returns = AbiState::new(target);
    // Return registers play the part of argument registers for the assignment rules. LLVM starts no register
    // pair of a return value at an even position (`RetCC_AArch64_AAPCS` has no such rule): a `{ i64, i128 }`
    // is returned in x0, x1 and x2.
    let return_abi = AbiRecord {
        integer_arguments: abi.integer_returns,
        float_arguments: abi.float_returns,
        int128_even_pair: false,
        ..*abi
    };
    let return_target = TargetRecord {
        abi: return_abi,
        ..*target
    };
    returns.target = &return_target;
    let pieces = returns.assign_value(ty, types)?;
    let value = ValueRef::Return;
    let too_many = abi
        .max_return_registers
        .is_some_and(|most| pieces.len() > most as usize);
    if too_many || pieces.iter().any(|piece| matches!(piece.place, Place::Stack { .. })) {
        let register = abi.sret_register;
        let piece = Piece {
            place: Place::Register {
                register,
                width: target.pointer_width,
            },
            offset: 0,
            size: u64::from(target.pointer_width / 8),
        };
        return Ok(Some(ValueAssignment {
            value,
            pieces: vec![piece],
            indirect: true,
            decider: Decider::Standard,
        }));
    }
    Ok(Some(ValueAssignment {
        value,
        pieces,
        indirect: false,
        decider: Decider::Standard,
    }))
}
