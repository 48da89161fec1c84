//! Crossing into plugins written in C: loading their shared libraries, calling the functions they export or
//! hand over, and reading and writing the memory they point at.
//!
//! Every function here trusts what a plugin passes as the plugin C ABI promises it (a function pointer of the
//! declared type, a pointer to as many bytes as it says): a plugin that breaks the ABI can crash the process,
//! as with any host of native plugins. What the host can check — null pointers, lengths beyond a limit — is
//! checked here, and the callers check everything else (sizes, versions, handles) before they trust a value.
//! Every call into a plugin's code (its library's initializers and finalizers, every function pointer) runs
//! under `crash::enter`, so that a plugin that crashes the process is named first.

use std::ffi::OsStr;
use std::fmt;

use crate::crash::{Callee, PluginName, enter};

/// A plugin's shared library, loaded for as long as the value lives.
pub struct PluginLibrary {
    /// Taken when the value is dropped, to be unloaded under `crash::enter`.
    library: Option<libloading::Library>,
    name: PluginName,
}

/// Why a library or one of its functions could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibraryError {
    /// The dynamic loader's message.
    pub message: String,
}

impl fmt::Display for LibraryError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl std::error::Error for LibraryError {}

impl PluginLibrary {
    /// Loads the shared library at `path` (with `RTLD_NOW`, through `dlopen`).
    pub fn open(path: &OsStr) -> Result<PluginLibrary, LibraryError> {
        let name = PluginName::of_library(path);
        let callee = Callee {
            plugin: &name,
            what: "library's initializers",
            subject: "",
        };
        // SAFETY: loading a library runs its initializers. The user named this library as a plugin, which
        // is their statement that it is one, as for any host of native plugins.
        let library = enter(callee, || unsafe { libloading::Library::new(path) }).map_err(|error| LibraryError {
            message: error.to_string(),
        })?;
        Ok(PluginLibrary {
            library: Some(library),
            name,
        })
    }

    /// The library's name in a crash report: its path (the plugin has not said its id yet).
    pub fn name(&self) -> &PluginName {
        &self.name
    }

    /// The exported function `name`, as the function pointer type `F` the plugin ABI declares for it.
    pub fn function<F: CFunction>(&self, name: &str) -> Result<F, LibraryError> {
        let library = self.library.as_ref().ok_or_else(|| LibraryError {
            message: "the library is being unloaded".to_string(),
        })?;
        let mut symbol = name.as_bytes().to_vec();
        symbol.push(0);
        // SAFETY: `F` is a function pointer type (`CFunction` is implemented for nothing else), and the
        // plugin ABI declares the symbol's type; a library exporting the name with another type breaks it.
        let found = unsafe { library.get::<F>(&symbol) };
        found.map(|function| *function).map_err(|error| LibraryError {
            message: error.to_string(),
        })
    }
}

impl Drop for PluginLibrary {
    fn drop(&mut self) {
        if let Some(library) = self.library.take() {
            let callee = Callee {
                plugin: &self.name,
                what: "library's finalizers",
                subject: "",
            };
            // Unloading runs the library's finalizers.
            enter(callee, || drop(library));
        }
    }
}

/// A C function pointer the host may call: `unsafe extern "C" fn(A, B, ...) -> R`.
pub trait CFunction: Copy + private::Sealed {
    /// The arguments, as a tuple.
    type Arguments;
    /// What the function returns.
    type Output;
    /// Calls the function, a plugin's, with `callee` saying whose and for what (named if the call crashes
    /// the process).
    fn call(self, callee: Callee<'_>, arguments: Self::Arguments) -> Self::Output;
}

mod private {
    pub trait Sealed {}
}

macro_rules! c_function {
    ($($argument:ident),*) => {
        impl<R, $($argument),*> private::Sealed for unsafe extern "C" fn($($argument),*) -> R {}

        impl<R, $($argument),*> CFunction for unsafe extern "C" fn($($argument),*) -> R {
            type Arguments = ($($argument,)*);
            type Output = R;

            #[allow(non_snake_case)]
            fn call(self, callee: Callee<'_>, ($($argument,)*): Self::Arguments) -> R {
                // SAFETY: the pointer is a function of this type that a plugin exported or handed over (the
                // ABI declares its type), called with arguments of the declared types; what the plugin
                // does with them is its side of the ABI.
                enter(callee, || unsafe { self($($argument),*) })
            }
        }
    };
}

c_function!();
c_function!(A);
c_function!(A, B);
c_function!(A, B, C);
c_function!(A, B, C, D);
c_function!(A, B, C, D, E);
c_function!(A, B, C, D, E, G);

/// Copies the `length` bytes at `data` a plugin handed over (a `StringView` or `ByteView`): `None` when
/// `data` is null with a non-zero length or the length is above `limit`.
// The pointers come from plugins, across the trust boundary this module documents: the functions are not
// `unsafe fn` so that the crates that call them keep forbidding `unsafe` code; the plugin ABI is the contract.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn copy_view(data: *const u8, length: u64, limit: usize) -> Option<Vec<u8>> {
    let length = usize::try_from(length).ok().filter(|length| *length <= limit)?;
    if length == 0 {
        return Some(Vec::new());
    }
    if data.is_null() {
        return None;
    }
    // SAFETY: the plugin ABI makes a view's `Data` point at `Length` readable bytes for the duration of the
    // call that handed it over; they are copied before the call returns.
    let bytes = unsafe { std::slice::from_raw_parts(data, length) };
    Some(bytes.to_vec())
}

/// Writes `value` through an out-parameter a plugin passed; `false` when the pointer is null. It writes
/// `size_of::<T>()` bytes: for a structure with a header, the caller first checks that the header's
/// `StructSize` holds that many (plugin-host's `memory` module, the one caller).
// The pointers come from plugins, across the trust boundary this module documents: the functions are not
// `unsafe fn` so that the crates that call them keep forbidding `unsafe` code; the plugin ABI is the contract.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn write_out<T: Copy>(out: *mut T, value: T) -> bool {
    if out.is_null() {
        return false;
    }
    // SAFETY: the plugin ABI makes an out-parameter point at writable memory for a `T`; it need not be
    // aligned, so it is written unaligned.
    unsafe { out.write_unaligned(value) };
    true
}

/// Reads the `T` a plugin points at (an input structure); `None` when the pointer is null.
// The pointers come from plugins, across the trust boundary this module documents: the functions are not
// `unsafe fn` so that the crates that call them keep forbidding `unsafe` code; the plugin ABI is the contract.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn read_in<T: Copy>(pointer: *const T) -> Option<T> {
    if pointer.is_null() {
        return None;
    }
    // SAFETY: the plugin ABI makes an input pointer point at a readable `T` for the duration of the call;
    // it need not be aligned, so it is read unaligned.
    Some(unsafe { pointer.read_unaligned() })
}

/// Writes `value` as element `index` of a caller-owned page (`Data`, `ElementStride` apart); `false` when
/// `data` is null, the stride is smaller than a `T` or the offset overflows. The caller checks the index
/// against the page's capacity.
// The pointers come from plugins, across the trust boundary this module documents: the functions are not
// `unsafe fn` so that the crates that call them keep forbidding `unsafe` code; the plugin ABI is the contract.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn write_element<T: Copy>(data: *mut std::ffi::c_void, stride: u64, index: u64, value: T) -> bool {
    if data.is_null() || stride < std::mem::size_of::<T>() as u64 {
        return false;
    }
    let Some(offset) = index
        .checked_mul(stride)
        .and_then(|offset| usize::try_from(offset).ok())
    else {
        return false;
    };
    let element = data.cast::<u8>().wrapping_add(offset).cast::<T>();
    // SAFETY: the plugin ABI makes a page's `Data` point at `ElementCapacity` writable elements
    // `ElementStride` bytes apart; the caller keeps `index` below the capacity, and the stride holds a `T`.
    unsafe { element.write_unaligned(value) };
    true
}

/// Reads element `index` of an array a plugin handed over (a `StructArrayView`: `Data`, `ElementStride` apart);
/// `None` when `data` is null, the stride is smaller than a `T` or the offset overflows. The caller checks
/// the index against the view's `Count` (and the count against a limit of its own).
// The pointers come from plugins, across the trust boundary this module documents: the functions are not
// `unsafe fn` so that the crates that call them keep forbidding `unsafe` code; the plugin ABI is the contract.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn read_element<T: Copy>(data: *const std::ffi::c_void, stride: u64, index: u64) -> Option<T> {
    if data.is_null() || stride < std::mem::size_of::<T>() as u64 {
        return None;
    }
    let offset = index
        .checked_mul(stride)
        .and_then(|offset| usize::try_from(offset).ok())?;
    let element = data.cast::<u8>().wrapping_add(offset).cast::<T>();
    // SAFETY: the plugin ABI makes a view's `Data` point at `Count` readable elements `ElementStride` bytes
    // apart for the duration of the call that handed it over; the caller keeps `index` below the count, and
    // the stride holds a `T`. It need not be aligned, so it is read unaligned.
    Some(unsafe { element.read_unaligned() })
}

/// Copies the `count` elements a plugin handed over in a `StructArrayView` (`data`, `stride` bytes apart):
/// `None` when `data` is null with a non-zero count, the count is above `limit`, the stride is smaller than a
/// `T`, or the array's extent overflows.
// The pointers come from plugins, across the trust boundary this module documents: the functions are not
// `unsafe fn` so that the crates that call them keep forbidding `unsafe` code; the plugin ABI is the contract.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn read_elements<T: Copy>(data: *const std::ffi::c_void, count: u64, stride: u64, limit: usize) -> Option<Vec<T>> {
    let count = usize::try_from(count).ok().filter(|count| *count <= limit)?;
    if count == 0 {
        return Some(Vec::new());
    }
    let stride = usize::try_from(stride)
        .ok()
        .filter(|stride| *stride >= std::mem::size_of::<T>())?;
    if data.is_null()
        || count
            .checked_mul(stride)
            .is_none_or(|extent| extent > isize::MAX as usize)
    {
        return None;
    }
    (0..count as u64)
        .map(|index| read_element(data, stride as u64, index))
        .collect()
}

/// Copies as much of `bytes` as fits into a caller's writable buffer (a `MutableByteView` of `capacity`
/// bytes at `data`) and returns how many bytes were written; `None` when `data` is null with a non-zero
/// capacity and something to write.
// The pointers come from plugins, across the trust boundary this module documents: the functions are not
// `unsafe fn` so that the crates that call them keep forbidding `unsafe` code; the plugin ABI is the contract.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn fill_buffer(data: *mut u8, capacity: u64, bytes: &[u8]) -> Option<usize> {
    let count = usize::try_from(capacity).map_or(bytes.len(), |capacity| capacity.min(bytes.len()));
    if count == 0 {
        return Some(0);
    }
    if data.is_null() {
        return None;
    }
    // SAFETY: the plugin ABI makes a MutableByteView's `Data` point at `Length` writable bytes for the
    // duration of the call; at most that many are written, from host memory that cannot overlap them.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), data, count) };
    Some(count)
}
