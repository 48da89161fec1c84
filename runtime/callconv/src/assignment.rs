//! Where each value of a call goes: the common output of the spec planner and the standard-ABI fallback.

use neverc_tables::TargetRecord;

/// Which value of a signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValueRef {
    Return,
    /// Index of the argument in IR order.
    Argument(u32),
}

/// A register (index into the target's register table, viewed at a width) or a stack slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Place {
    Register {
        register: usize,
        width: u32,
    },
    /// Offset from the start of the incoming argument area, and the slot size.
    Stack {
        offset: u64,
        size: u64,
    },
}

/// One piece of a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Piece {
    pub place: Place,
    /// Byte offset of the piece within the value.
    pub offset: u64,
    pub size: u64,
}

/// Who decided where a value goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decider {
    /// A location of the plan.
    Plan,
    /// The target's standard calling convention (values the plan does not cover).
    Standard,
}

/// Where one value goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueAssignment {
    pub value: ValueRef,
    pub pieces: Vec<Piece>,
    /// The pieces hold the value's address (sret, byval copies, values passed by reference).
    pub indirect: bool,
    pub decider: Decider,
}

impl Place {
    /// `rcx`, `ecx`, `w9`, `s5`, or `stack+16`: the register's name at the piece's width.
    pub fn describe(&self, target: &TargetRecord) -> String {
        match *self {
            Place::Register { register, width } => register_view_name(target, register, width),
            Place::Stack { offset, .. } => format!("stack+{offset}"),
        }
    }
}

/// The name of a register at a width: its own name, or the sub-register of that width if declared.
pub fn register_view_name(target: &TargetRecord, register: usize, width: u32) -> String {
    let Some(record) = target.register(register) else {
        return format!("register#{register}");
    };
    if record.width == width {
        return record.name.to_string();
    }
    record
        .subregisters
        .iter()
        .find(|sub| sub.width == width)
        .map_or_else(|| record.name.to_string(), |sub| sub.name.to_string())
}
