//! The one way the host writes into memory a plugin handed it (and reads the structures it fills).
//!
//! A structure of the ABI that starts with a header (`ffi::Versioned`: every one but the core primitives) is
//! written only by [`write_struct`], which reads the caller's `Header.StructSize` first: a caller that says its
//! structure is smaller than the host's (or than the header itself) gets ABI_MISMATCH and not one byte is
//! written, so the host never writes past the size a caller declared. A caller's structure the host reads (a
//! page it fills and writes back, a descriptor) is read by [`read_struct`] under the same check, so that the
//! host never reads past it either. Plain out-parameters (a size, a handle, a table's address, a view) have no
//! header and go through [`write_plain`]. Nothing else in this crate calls `neverc_sys::plugin::write_out`
//! (clippy's `disallowed-methods` refuses it), so the check cannot be forgotten by a new slot.

use std::ffi::c_void;

use neverc_sys::plugin::read_in;
use neverc_tables::plugin_abi::ffi::{self, Versioned};
use neverc_tables::status::StatusCode;

/// Checks the `StructSize` of the caller's structure at `pointer` (reading only those four bytes, which every
/// versioned structure starts with): INVALID_ARGUMENT for a null pointer, ABI_MISMATCH for a structure smaller
/// than a `T`.
fn check_size<T: Versioned>(pointer: *const T) -> Result<(), StatusCode> {
    let declared = read_in(pointer.cast::<u32>()).ok_or(StatusCode::InvalidArgument)?;
    if (declared as usize) < std::mem::size_of::<T>() {
        return Err(StatusCode::AbiMismatch);
    }
    Ok(())
}

/// Reads the caller's structure at `pointer` once its `StructSize` says it holds a whole `T`.
pub(crate) fn read_struct<T: Versioned>(pointer: *const T) -> Result<T, StatusCode> {
    check_size(pointer)?;
    read_in(pointer).ok_or(StatusCode::InvalidArgument)
}

/// Writes `value` into the caller's structure at `out` once its `StructSize` says it holds a whole `T`: the
/// host writes `size_of::<T>()` bytes, never more than the caller declared.
pub(crate) fn write_struct<T: Versioned>(out: *mut T, value: T) -> Result<(), StatusCode> {
    check_size(out.cast_const())?;
    plain_write(out, value)
}

/// An out-parameter without a header: its size is its type's, which the ABI fixes.
pub(crate) trait Plain: Copy {}

impl Plain for u64 {}
impl Plain for *mut c_void {}
impl Plain for ffi::ByteView {}
impl Plain for ffi::AbiTableHeader {}
impl Plain for ffi::LinkMutationHandle {}
impl Plain for ffi::LinkConstraintHandle {}
impl Plain for ffi::LinkSyntheticHandle {}
impl Plain for ffi::ArtifactHandle {}

/// Writes a plain out-parameter: INVALID_ARGUMENT for a null pointer.
pub(crate) fn write_plain<T: Plain>(out: *mut T, value: T) -> Result<(), StatusCode> {
    plain_write(out, value)
}

#[allow(
    clippy::disallowed_methods,
    reason = "the one call: its callers check a versioned structure's size"
)]
fn plain_write<T: Copy>(out: *mut T, value: T) -> Result<(), StatusCode> {
    if neverc_sys::plugin::write_out(out, value) {
        Ok(())
    } else {
        Err(StatusCode::InvalidArgument)
    }
}
