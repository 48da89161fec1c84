//! `neverc-spec gen`: write the generated tables into a directory for review.

use std::fs;

use neverc_schema::load_declarations;

use crate::CommandError;
use crate::check::{declarations_root, declared_target_files};
use crate::cli::{GenArgs, GenCommand};
use crate::render::load_failure;

pub(crate) fn run(args: &GenArgs) -> Result<(), CommandError> {
    let out = match (&args.what, &args.out) {
        (Some(GenCommand::Conformance(conformance)), _) => return crate::conformance::export(conformance),
        (None, Some(out)) => out,
        (None, None) => return Err(CommandError::Request("--out DIR is required".into())),
    };
    let files = declared_target_files(&args.declarations)?;
    let declarations =
        load_declarations(&args.declarations.phase_schema, &files).map_err(|error| load_failure(error, false).0)?;
    let root = declarations_root(&args.declarations);
    let generated =
        neverc_codegen::generate(&declarations, root).map_err(|error| CommandError::Internal(error.to_string()))?;
    fs::create_dir_all(out).map_err(|error| CommandError::Io(format!("cannot create `{}`: {error}", out.display())))?;
    // Everything is generated before anything is written; each file is written beside its final name
    // and renamed into place, so a failure leaves no half-written file behind.
    let mut staged = Vec::new();
    for file in &generated {
        let final_path = out.join(&file.name);
        let temporary = out.join(format!(".{}.tmp", file.name));
        if let Err(error) = fs::write(&temporary, &file.contents) {
            for (path, _) in &staged {
                let _ = fs::remove_file(path);
            }
            let _ = fs::remove_file(&temporary);
            return Err(CommandError::Io(format!(
                "cannot write `{}`: {error}",
                temporary.display()
            )));
        }
        staged.push((temporary, final_path));
    }
    for (temporary, final_path) in &staged {
        fs::rename(temporary, final_path)
            .map_err(|error| CommandError::Io(format!("cannot write `{}`: {error}", final_path.display())))?;
    }
    for file in &generated {
        outln!(
            "wrote {} ({} bytes)",
            out.join(&file.name).display(),
            file.contents.len()
        );
    }
    Ok(())
}
