//! Statuses across the ABI: the C structure `NevercStatus` and the runtime's `Status`.

use neverc_tables::plugin_abi::ffi;
use neverc_tables::status::{Status, StatusCode};

/// The C status of a successful call.
pub(crate) const OK: ffi::Status = ffi::Status {
    code: 0,
    flags: 0,
    detail: 0,
};

/// The C status for `code`.
pub(crate) fn c_status(code: StatusCode) -> ffi::Status {
    ffi::Status {
        code: code.raw(),
        flags: 0,
        detail: 0,
    }
}

/// The C status of a runtime result.
pub(crate) fn c_result(result: &Result<(), Status>) -> ffi::Status {
    match result {
        Ok(()) => OK,
        Err(status) => c_status(status.code),
    }
}

/// The C status of a host answer that is a code or nothing.
pub(crate) fn c_answer(result: Result<(), StatusCode>) -> ffi::Status {
    match result {
        Ok(()) => OK,
        Err(code) => c_status(code),
    }
}

/// The code a plugin returned: one the ABI declares, or `None`.
pub(crate) fn code_of(status: ffi::Status) -> Option<StatusCode> {
    StatusCode::from_raw(status.code)
}

/// A plugin's status, in words.
pub(crate) fn describe(status: ffi::Status) -> String {
    match code_of(status) {
        Some(code) => code.name().to_string(),
        None => format!("undeclared status code {}", status.code),
    }
}

/// Runs a host function that C called: a panic in it becomes PLUGIN_FAILURE instead of unwinding into C.
pub(crate) fn guarded(call: impl FnOnce() -> ffi::Status) -> ffi::Status {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)).unwrap_or_else(|_| c_status(StatusCode::PluginFailure))
}
