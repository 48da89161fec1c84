//! `neverc-spec`: validate declarations, generate tables, inspect targets, plan calling conventions, link;
//! invoked as `ld` (or as `neverc-spec ld`), GNU ld's command line for compiler drivers.
//!
//! Exit codes: 0 success; 1 the declarations (or the request, or the link) are invalid; 2 usage error (an
//! output that is also an input or another output among them); 3 a file could not be read or written;
//! 4 internal error in code generation; 5 an audit failed; 128 + N killed by signal N (SIGINT, SIGTERM and
//! SIGHUP remove the temporary files of a write first).

/// `println!` that never panics (output to a closed pipe, `| head`, is dropped) and escapes the control
/// characters of user data (`render::print_line`).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::render::print_line(std::io::stdout().lock(), format_args!($($arg)*))
    };
}

/// `eprintln!` that never panics and escapes the control characters of user data (`render::print_line`):
/// every diagnostic line is printed through it.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::render::print_line(std::io::stderr().lock(), format_args!($($arg)*))
    };
}

mod audit;
mod cc;
mod check;
mod cli;
mod conformance;
mod gen_files;
mod ld;
mod link;
mod plugins;
mod render;
mod resolve;
mod targets;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

/// Why a command failed, mapped to the documented exit codes.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CommandError {
    /// Problems were already printed; the declarations are invalid.
    #[error("the declarations are invalid")]
    Invalid,
    #[error("{0}")]
    Request(String),
    /// The command line asks for something that cannot be done, such as an output that is also an input.
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Io(String),
    #[error("{0}")]
    Internal(String),
    /// The audit or the conformance run found what it exists to find: broken invariants, breaking changes,
    /// refused requests, failed cases.
    #[error("{0}")]
    AuditFailed(String),
}

impl CommandError {
    fn exit_code(&self) -> u8 {
        match self {
            CommandError::Invalid | CommandError::Request(_) => 1,
            CommandError::Usage(_) => 2,
            CommandError::Io(_) => 3,
            CommandError::Internal(_) => 4,
            CommandError::AuditFailed(_) => 5,
        }
    }
}

impl From<neverc_output::OutputError> for CommandError {
    fn from(error: neverc_output::OutputError) -> CommandError {
        match error {
            neverc_output::OutputError::SameFile { .. } => CommandError::Usage(error.to_string()),
            _ => CommandError::Io(error.to_string()),
        }
    }
}

fn main() -> ExitCode {
    // A run interrupted by SIGINT, SIGTERM or SIGHUP leaves no temporary file behind (SIGKILL cannot be caught:
    // the next write to the same output removes what such a run left).
    if let Err(error) = neverc_output::remove_temporaries_on_signals() {
        errln!("warning: {error}");
    }
    let mut arguments: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Invoked as `ld` (a compiler driver's linker) or as `neverc-spec ld`: GNU ld's command line, which clap
    // cannot parse, goes to the driver untouched.
    let result = if arguments.first().is_some_and(|program| ld::invoked_as_ld(program)) {
        ld::run(arguments.split_off(1))
    } else if arguments.get(1).is_some_and(|command| command == "ld") {
        ld::run(arguments.split_off(2))
    } else {
        run_command(arguments)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            if !matches!(error, CommandError::Invalid) {
                errln!("error: {error}");
            }
            ExitCode::from(error.exit_code())
        }
    }
}

/// Every command but `ld`, parsed by clap.
fn run_command(arguments: Vec<std::ffi::OsString>) -> Result<(), CommandError> {
    let cli = Cli::parse_from(link::gnu_style_arguments(arguments.into_iter()));
    match &cli.command {
        Command::Check(args) => check::run(args),
        Command::Gen(args) => gen_files::run(args),
        Command::Targets(args) => targets::run(args),
        Command::Resolve(args) => resolve::run(args),
        Command::Cc(command) => cc::run(command),
        Command::Link(args) => link::run(args),
        Command::Audit(args) => audit::run(args),
        Command::Conformance(args) => conformance::run(args),
        // Reached only through clap (`neverc-spec help ld` prints clap's help); `neverc-spec ld` is routed
        // to the driver before clap sees it.
        Command::Ld(args) => ld::run(args.arguments.clone()),
    }
}
