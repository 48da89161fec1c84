//! Writing output files completely or not at all.

use std::fs;
use std::io::Write as _;
use std::path::Path;

/// Writes `bytes` to a temporary file beside `path` and renames it into place, so that a failure leaves
/// the previous file untouched and no partial file behind.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let directory = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    let temporary = directory.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = fs::File::create(&temporary)
        .and_then(|mut file| file.write_all(bytes).and_then(|()| file.sync_all()))
        .and_then(|()| fs::rename(&temporary, path));
    result.map_err(|error| {
        let _ = fs::remove_file(&temporary);
        format!("cannot write `{}`: {error}", path.display())
    })
}
