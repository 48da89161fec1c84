//! `neverc-spec`: validate declarations, generate tables, inspect targets, plan calling conventions, link.
//!
//! Exit codes: 0 success; 1 the declarations (or the request, or the link) are invalid; 2 usage error;
//! 3 a file could not be read or written; 4 internal error in code generation; 5 an audit failed.

/// `println!` that never panics: output to a closed pipe (`| head`) is dropped.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `eprintln!` that never panics.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

mod audit;
mod cc;
mod check;
mod cli;
mod conformance;
mod files;
mod gen_files;
mod link;
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
            CommandError::Io(_) => 3,
            CommandError::Internal(_) => 4,
            CommandError::AuditFailed(_) => 5,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse_from(link::gnu_style_arguments(std::env::args_os()));
    let result = match &cli.command {
        Command::Check(args) => check::run(args),
        Command::Gen(args) => gen_files::run(args),
        Command::Targets(args) => targets::run(args),
        Command::Resolve(args) => resolve::run(args),
        Command::Cc(command) => cc::run(command),
        Command::Link(args) => link::run(args),
        Command::Audit(args) => audit::run(args),
        Command::Conformance(args) => conformance::run(args),
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
