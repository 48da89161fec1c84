//! `neverc-spec gen`: write the generated tables into a directory for review.

use std::fs;

use std::path::Path;

use neverc_codegen::GeneratedFile;
use neverc_output::{Mode, Output};
use neverc_schema::{load_declarations, load_phase_schema, load_plugin_abi_with, target_files};

use crate::CommandError;
use crate::check::{declarations_root, declared_target_files, root_of};
use crate::cli::{GenArgs, GenCommand, GenHeadersArgs};
use crate::render::load_failure;

pub(crate) fn run(args: &GenArgs) -> Result<(), CommandError> {
    let out = match (&args.what, &args.out) {
        (Some(GenCommand::Conformance(conformance)), _) => return crate::conformance::export(conformance),
        (Some(GenCommand::Headers(headers)), _) => return write_headers(headers),
        (None, Some(out)) => out,
        (None, None) => return Err(CommandError::Request("--out DIR is required".into())),
    };
    let files = declared_target_files(&args.declarations)?;
    let declarations =
        load_declarations(&args.declarations.phase_schema, &files).map_err(|error| load_failure(error, false).0)?;
    let root = declarations_root(&args.declarations);
    let generated =
        neverc_codegen::generate(&declarations, root).map_err(|error| CommandError::Internal(error.to_string()))?;
    write_all(out, &generated)
}

/// `gen headers`: the plugin ABI's C headers, from the ABI declarations and the phase schema they refer to.
fn write_headers(args: &GenHeadersArgs) -> Result<(), CommandError> {
    let phase_schema = load_phase_schema(&args.phase_schema).map_err(|error| load_failure(error, false).0)?;
    let files = target_files(&args.abi).map_err(|error| CommandError::Io(error.to_string()))?;
    let parts = load_plugin_abi_with(&files, &phase_schema).map_err(|error| load_failure(error, false).0)?;
    let headers = neverc_codegen::plugin_headers(&parts).map_err(|error| CommandError::Internal(error.to_string()))?;
    // Everything is generated (and the target files validated) before anything is written.
    let targets = match &args.targets_out {
        Some(out) => {
            let files = target_files(&args.targets).map_err(|error| CommandError::Io(error.to_string()))?;
            let declarations =
                load_declarations(&args.phase_schema, &files).map_err(|error| load_failure(error, false).0)?;
            let generated = neverc_codegen::target_headers(&declarations, root_of(&args.phase_schema))
                .map_err(|error| CommandError::Internal(error.to_string()))?;
            Some((out, generated))
        }
        None => None,
    };
    write_all(&args.out, &headers)?;
    match targets {
        Some((out, generated)) => write_all(out, &generated),
        None => Ok(()),
    }
}

/// Writes every file into `out`, all or none.
fn write_all(out: &Path, generated: &[GeneratedFile]) -> Result<(), CommandError> {
    fs::create_dir_all(out).map_err(|error| CommandError::Io(format!("cannot create `{}`: {error}", out.display())))?;
    // Everything is generated before anything is written; each file is written beside its final name and
    // renamed into place only when all are complete, so a failure leaves no half-written file behind. A
    // non-regular file in the directory (a device, a FIFO) is written in place, like any other output.
    let mut staged = Vec::new();
    for file in generated {
        staged.push(Output::staged(
            &out.join(&file.name),
            Mode::Data,
            file.contents.as_bytes(),
        )?);
    }
    for output in staged {
        output.commit()?;
    }
    for file in generated {
        outln!(
            "wrote {} ({} bytes)",
            out.join(&file.name).display(),
            file.contents.len()
        );
    }
    Ok(())
}
