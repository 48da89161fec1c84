//! `neverc.link.commit` (a sealed gate): the image (and the map file) go to temporary files beside their
//! destinations and are renamed into place; on any failure the previous files stay untouched and no
//! temporary file remains.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::context::{LinkContext, PhaseError};
use crate::phases::LinkPhase;

const PHASE: LinkPhase = LinkPhase::Commit;

pub(crate) fn run(context: &mut LinkContext, _phase: u16) -> Result<(), PhaseError> {
    let image = context.required_image(PHASE)?;
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    let result = (|| {
        staged.push(stage(&context.options.output, image, !context.options.relocatable)?);
        if let (Some(path), Some(text)) = (&context.options.map_file, context.map_text()) {
            staged.push(stage(path, text.as_bytes(), false)?);
        }
        // The side outputs first, the image last: the image appears only when everything is in place.
        for (temporary, destination) in staged.iter().rev() {
            fs::rename(temporary, destination)
                .map_err(|error| format!("cannot write `{}`: {error}", destination.display()))?;
        }
        Ok(())
    })();
    result.map_err(|message: String| {
        for (temporary, _) in &staged {
            let _ = fs::remove_file(temporary);
        }
        PhaseError::new(PHASE, message)
    })
}

/// Writes `bytes` to a temporary file beside `path`; returns (temporary, destination).
fn stage(path: &Path, bytes: &[u8], executable: bool) -> Result<(PathBuf, PathBuf), String> {
    let directory = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |name| name.to_string_lossy().into_owned());
    let temporary = directory.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut file = fs::File::create(&temporary)?;
        file.write_all(bytes)?;
        if executable {
            use std::os::unix::fs::PermissionsExt as _;
            file.set_permissions(fs::Permissions::from_mode(0o755))?;
        }
        file.sync_all()
    })();
    written.map_err(|error| {
        let _ = fs::remove_file(&temporary);
        format!("cannot write `{}`: {error}", path.display())
    })?;
    Ok((temporary, path.to_path_buf()))
}
