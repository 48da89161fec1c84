//! Why the `ld` driver refused a command line, a response file, a linker script or an input, before any link
//! ran (so nothing was written).

use std::path::PathBuf;

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
    /// `@file` response files nest too deeply (a file that names itself, directly or not).
    #[error("response files nest deeper than {limit} levels: {chain}")]
    ResponseDepth { limit: usize, chain: String },
    /// Linker scripts that name each other too deeply (a script that names itself, directly or not).
    #[error(
        "linker scripts nest deeper than {limit} levels at `{}`{} (does a script name itself?)",
        path.display(),
        Via(via)
    )]
    ScriptDepth { limit: usize, path: PathBuf, via: String },
    #[error("a linker script {0}")]
    Script(#[from] ScriptError),
    /// A `-l` that matches no archive in the search path.
    #[error("cannot find {namespec}{}; searched {searched}", Via(via))]
    LibraryNotFound {
        namespec: String,
        via: String,
        searched: String,
    },
    /// A `-l` in a static search that finds only a shared library.
    #[error(
        "cannot find {namespec}{}: only the shared library `{}` exists, and a static link cannot use it",
        Via(via),
        shared.display()
    )]
    OnlyShared {
        namespec: String,
        via: String,
        shared: PathBuf,
    },
    /// An input that is a shared object (`libc.so.6`, or a `.so` found by `-l` without `-static`).
    #[error(
        "`{}`{} is a shared object, and neverc-spec links static executables only (link with -static, so \
         that -l finds archives, or name the archive)",
        path.display(),
        Via(via)
    )]
    SharedObject { path: PathBuf, via: String },
    /// A file named in a linker script that exists nowhere it is looked for.
    #[error("cannot find `{name}`{}; looked for {searched}", Via(via))]
    ScriptInputNotFound {
        name: String,
        via: String,
        searched: String,
    },
    #[error("{0}")]
    Read(#[from] UserFileError),
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// How an input was found (`found for -lm`, `named by the script ...`), shown in parentheses when known.
struct Via<'a>(&'a str);

impl std::fmt::Display for Via<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(formatter, " ({})", self.0)
        }
    }
}

pub(crate) use neverc_link::script::ScriptError;

impl From<LdError> for CommandError {
    fn from(error: LdError) -> CommandError {
        match error {
            // A file that cannot be read: exit 3, as for `neverc-spec link`.
            LdError::Read(_) | LdError::Io { .. } => CommandError::Io(error.to_string()),
            // The link cannot be done with what is installed: exit 1, as for an undefined symbol.
            LdError::LibraryNotFound { .. }
            | LdError::OnlyShared { .. }
            | LdError::SharedObject { .. }
            | LdError::ScriptInputNotFound { .. } => CommandError::Request(error.to_string()),
            // The command line, a response file or a linker script asks for what is not supported: exit 2.
            LdError::UnknownOption(_)
            | LdError::Unsupported { .. }
            | LdError::MissingArgument(_)
            | LdError::UnexpectedArgument(_)
            | LdError::BadValue { .. }
            | LdError::NoInputs
            | LdError::Group(_)
            | LdError::ResponseDepth { .. }
            | LdError::ScriptDepth { .. }
            | LdError::Script(_) => CommandError::Usage(error.to_string()),
        }
    }
}
