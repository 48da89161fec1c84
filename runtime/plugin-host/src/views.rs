//! Values the host hands to C in many places: structure headers, string views of host text, empty arrays.

use neverc_tables::plugin_abi::ffi;

/// The header of a structure the host fills: its size, version 1.0.
pub(crate) fn header<T>() -> ffi::AbiTableHeader {
    ffi::AbiTableHeader {
        struct_size: u32::try_from(std::mem::size_of::<T>()).unwrap_or(u32::MAX),
        major: 1,
        minor: 0,
        flags: 0,
    }
}

/// A view of host text, valid while the text is.
pub(crate) fn view(text: &str) -> ffi::StringView {
    ffi::StringView {
        data: text.as_ptr().cast(),
        length: text.len() as u64,
    }
}

/// An empty array (no extensions, no elements yet).
pub(crate) const NO_ELEMENTS: ffi::StructArrayView = ffi::StructArrayView {
    data: std::ptr::null(),
    count: 0,
    element_stride: 0,
};

/// No bytes.
pub(crate) const NO_BYTES: ffi::ByteView = ffi::ByteView {
    data: std::ptr::null(),
    length: 0,
};
