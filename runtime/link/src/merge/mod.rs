//! Relocatable output (`-r`): the objects a relocatable link takes ([`select`]) and the one ELF relocatable
//! object written from them ([`write`]), as GNU ld's `-r` makes it. The `object_merge` phase runs both.

mod select;
mod write;

pub(crate) use select::selected_objects;
pub(crate) use write::{MergeError, MergeInput, merge_objects};
