//! Why the `ld` driver refused a command line, a response file, a linker script or an input, before any link
//! ran (so nothing was written).

use neverc_userfile::UserFileError;

use crate::CommandError;

/// Everything the driver can refuse. Every variant names the option, file or command it is about.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LdError {
    /// An option GNU ld does not have, or one neverc-spec does not know.
    #[error("unrecognized option `{0}` (`neverc-spec ld --help` lists the options this driver supports)")]
    UnknownOption(String),
    /// A GNU ld option that would change the output in a way neverc-spec does not implement.
    #[error("`{option}` is not supported: {reason}")]
    Unsupported { option: String, reason: &'static str },
    #[error("option `{0}` needs an argument")]
    MissingArgument(String),
    #[error("option `{0}` takes no argument")]
    UnexpectedArgument(String),
    /// A known option with a value it cannot take.
    #[error("`{option}`: {reason}")]
    BadValue { option: String, reason: String },
    #[error("no input files")]
    NoInputs,
    #[error("{0}")]
    Group(&'static str),
    /// `@file` response files expand beyond a bound: too deep, too many, too large.
    #[error("{0}")]
    Response(#[from] ResponseError),
    /// The inputs could not be resolved to files (`-l` not found, a linker script refused, ...).
    #[error("{0}")]
    Search(#[from] SearchError),
    #[error("{0}")]
    Read(#[from] UserFileError),
}

/// A response file's expansion error: a bound the files broke, or a file that could not be read.
pub(crate) type ResponseError = neverc_link::response_file::ExpandError<UserFileError>;

pub(crate) use neverc_link::script::ScriptError;
use neverc_link::search::SearchError;

impl From<LdError> for CommandError {
    fn from(error: LdError) -> CommandError {
        let unreadable = CommandError::Io;
        let not_installed = CommandError::Request;
        let unsupported = CommandError::Usage;
        let kind = match &error {
            // A file that cannot be read: exit 3, as for `neverc-spec link`.
            LdError::Read(_)
            | LdError::Response(neverc_link::response_file::ExpandError::Read(_))
            | LdError::Search(SearchError::Read(_) | SearchError::Io { .. }) => unreadable,
            // The link cannot be done with what is installed: exit 1, as for an undefined symbol.
            LdError::Search(
                SearchError::LibraryNotFound { .. }
                | SearchError::OnlyShared { .. }
                | SearchError::SharedObject { .. }
                | SearchError::ScriptInputNotFound { .. },
            ) => not_installed,
            // The command line, a response file or a linker script asks for what is not supported, or for
            // more than the driver expands: exit 2.
            LdError::UnknownOption(_)
            | LdError::Unsupported { .. }
            | LdError::MissingArgument(_)
            | LdError::UnexpectedArgument(_)
            | LdError::BadValue { .. }
            | LdError::NoInputs
            | LdError::Group(_)
            | LdError::Response(_)
            | LdError::Search(
                SearchError::ScriptDepth { .. }
                | SearchError::TooManyScripts { .. }
                | SearchError::TooManyInputs { .. }
                | SearchError::Script(_),
            ) => unsupported,
        };
        kind(error.to_string())
    }
}
