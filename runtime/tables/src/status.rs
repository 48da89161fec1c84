//! NeverC's status codes (PluginCore.h, declared in `abi/core.toml`), as the link runtime reports them to plugins
//! and callers.

/// A status code with NeverC's numeric value (`NEVERC_STATUS_*`), generated from `abi/core.toml`:
/// `StatusCode::InvalidDescriptor`, its C value (`raw`) and NeverC's spelling (`name`: `INVALID_DESCRIPTOR`).
pub use crate::plugin_abi::core::StatusCode;

/// A failed operation: NeverC's code and a message naming what went wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", code.name())]
pub struct Status {
    pub code: StatusCode,
    pub message: String,
}

impl Status {
    pub fn new(code: StatusCode, message: impl Into<String>) -> Status {
        Status {
            code,
            message: message.into(),
        }
    }
}
