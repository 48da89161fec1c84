//! NeverC's status codes (PluginCore.h), as the link runtime reports them to plugins and callers.

/// A status code with NeverC's numeric value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum StatusCode {
    Ok = 0,
    InvalidArgument = 1,
    AbiMismatch = 2,
    MissingInterface = 3,
    VersionMismatch = 4,
    InvalidDescriptor = 5,
    DuplicateId = 6,
    DependencyMissing = 7,
    DependencyCycle = 8,
    Busy = 9,
    Cancelled = 10,
    ResourceExhausted = 11,
    StaleHandle = 12,
    WrongSession = 13,
    WrongScope = 14,
    WrongType = 15,
    InvalidState = 16,
    PolicyViolation = 17,
    VerificationFailed = 18,
    CapabilityUnavailable = 19,
    PluginFailure = 20,
    PluginException = 21,
    OutputPartial = 22,
    ReentrancyDenied = 23,
}

impl StatusCode {
    /// NeverC's spelling: `STALE_HANDLE`, `POLICY_VIOLATION`, ...
    pub const fn name(self) -> &'static str {
        match self {
            StatusCode::Ok => "OK",
            StatusCode::InvalidArgument => "INVALID_ARGUMENT",
            StatusCode::AbiMismatch => "ABI_MISMATCH",
            StatusCode::MissingInterface => "MISSING_INTERFACE",
            StatusCode::VersionMismatch => "VERSION_MISMATCH",
            StatusCode::InvalidDescriptor => "INVALID_DESCRIPTOR",
            StatusCode::DuplicateId => "DUPLICATE_ID",
            StatusCode::DependencyMissing => "DEPENDENCY_MISSING",
            StatusCode::DependencyCycle => "DEPENDENCY_CYCLE",
            StatusCode::Busy => "BUSY",
            StatusCode::Cancelled => "CANCELLED",
            StatusCode::ResourceExhausted => "RESOURCE_EXHAUSTED",
            StatusCode::StaleHandle => "STALE_HANDLE",
            StatusCode::WrongSession => "WRONG_SESSION",
            StatusCode::WrongScope => "WRONG_SCOPE",
            StatusCode::WrongType => "WRONG_TYPE",
            StatusCode::InvalidState => "INVALID_STATE",
            StatusCode::PolicyViolation => "POLICY_VIOLATION",
            StatusCode::VerificationFailed => "VERIFICATION_FAILED",
            StatusCode::CapabilityUnavailable => "CAPABILITY_UNAVAILABLE",
            StatusCode::PluginFailure => "PLUGIN_FAILURE",
            StatusCode::PluginException => "PLUGIN_EXCEPTION",
            StatusCode::OutputPartial => "OUTPUT_PARTIAL",
            StatusCode::ReentrancyDenied => "REENTRANCY_DENIED",
        }
    }
}

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
