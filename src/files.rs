//! Writing output files completely or not at all.

use std::fs;
use std::io::BufWriter;
use std::path::Path;

/// Why an atomic write failed: the producer of the contents, or the file system.
pub(crate) enum AtomicWriteError<E> {
    Produce(E),
    Io(String),
}

/// Streams a file's contents (written by `produce`) to a temporary file beside `path` and renames it into
/// place, so that a failure (of `produce` or of the file system) leaves the previous file untouched and no
/// partial file behind.
pub(crate) fn write_atomically_with<T, E>(
    path: &Path,
    produce: impl FnOnce(&mut BufWriter<fs::File>) -> Result<T, E>,
) -> Result<T, AtomicWriteError<E>> {
    let directory = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    let temporary = directory.join(format!(".{name}.{}.tmp", std::process::id()));
    let io_error = |error: std::io::Error| {
        let _ = fs::remove_file(&temporary);
        AtomicWriteError::Io(format!("cannot write `{}`: {error}", path.display()))
    };
    let file = fs::File::create(&temporary).map_err(io_error)?;
    let mut writer = BufWriter::with_capacity(1 << 20, file);
    let produced = match produce(&mut writer) {
        Ok(produced) => produced,
        Err(error) => {
            drop(writer);
            let _ = fs::remove_file(&temporary);
            return Err(AtomicWriteError::Produce(error));
        }
    };
    let file = writer.into_inner().map_err(|error| io_error(error.into_error()))?;
    file.sync_all().map_err(io_error)?;
    fs::rename(&temporary, path).map_err(io_error)?;
    Ok(produced)
}

/// Writes `bytes` to `path` completely or not at all (see [`write_atomically_with`]).
pub(crate) fn write_bytes_atomically(path: &Path, bytes: &[u8]) -> Result<(), crate::CommandError> {
    use std::io::Write as _;
    write_atomically_with(path, |writer| writer.write_all(bytes)).map_err(|error| match error {
        AtomicWriteError::Produce(error) => {
            crate::CommandError::Io(format!("cannot write `{}`: {error}", path.display()))
        }
        AtomicWriteError::Io(message) => crate::CommandError::Io(message),
    })
}
