//! Writing output files completely or not at all, the one way every command and the linker write them.
//!
//! - A destination that is a regular file, a symbolic link or missing is written to a temporary file beside it
//!   and renamed into place when it is complete, so a failure leaves the previous file untouched and no partial
//!   file behind. The temporary is created exclusively (`O_CREAT | O_EXCL`, which never follows a symbolic
//!   link) under an unpredictable name, `.<name>.<pid>.<16 hex digits>.tmp`, in the destination's directory.
//! - Any other destination (a character device such as `/dev/null`, a FIFO) is opened for writing and written
//!   directly, without truncation and without a rename, as ld.bfd and lld do: replacing it would destroy it.
//! - A file is created with mode `0o777` (an executable, [`Mode::Executable`]) or `0o666` ([`Mode::Data`]), less
//!   the process's umask, which the kernel applies, as ld.bfd does.
//! - Temporaries of this process are recorded while they exist, and so are the private directories
//!   ([`TempDir`]) and the child processes ([`run_child`]) it makes; after [`remove_temporaries_on_signals`],
//!   SIGINT, SIGTERM and SIGHUP kill the children's process groups and remove the temporaries and directories
//!   before the process dies of the signal.
//! - A temporary is locked (`flock`) by its writer while it exists. SIGKILL cannot be caught: the next write to
//!   the same destination removes the temporaries nobody holds a lock on and whose creating process is gone
//!   (read from the pid in the name and `/proc`). The lock tells a live temporary of a process in another pid
//!   namespace (whose pid means nothing here) from a stale one.
//! - [`check_distinct`] refuses an output that is also an input or another output before anything is written,
//!   and [`Output::create`] refuses to replace any file this process has read as user input
//!   ([`neverc_userfile::read_as_input`]: a thin-archive member, a linker script, a response file), whichever
//!   command line named it and however indirectly.
//! - [`Output::replace`] is for files in directories the program manages itself (cache entries): whatever is at
//!   the destination, a symbolic link, a device or a FIFO included, is replaced by the rename, never written
//!   through.

mod live;

use std::collections::hash_map::RandomState;
use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher as _, Hasher as _};
use std::io::{self, BufWriter, Seek as _, Write};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use live::live;
pub use live::{TempDir, remove_temporaries_on_signals, run_child};

/// Why an output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The file system refused: creating, writing or renaming failed.
    #[error("cannot write `{}`: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The destination is a directory.
    #[error("cannot write `{}`: it is a directory", path.display())]
    Directory { path: PathBuf },
    /// An output names the same file as an input or as another output.
    #[error(
        "{role} `{}` is the same file as {other_role} `{}`; refusing to overwrite it (nothing was written)",
        path.display(),
        other.display()
    )]
    SameFile {
        role: String,
        path: PathBuf,
        other_role: String,
        other: PathBuf,
    },
    /// The destination is a file this process read as user input.
    #[error(
        "`{}` is `{}`, which this run read as an input; refusing to overwrite it (nothing was written)",
        path.display(),
        input.display()
    )]
    ReadInput { path: PathBuf, input: PathBuf },
    /// The signal handlers that remove temporaries could not be installed.
    #[error("cannot install the signal handlers that remove temporary files: {0}")]
    Signals(#[source] io::Error),
}

/// Why [`write_with`] failed: the producer of the contents, or the output.
#[derive(Debug)]
pub enum WriteError<E> {
    Produce(E),
    Output(OutputError),
}

/// The mode a new output file gets, less the umask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `0o777`: a linked executable.
    Executable,
    /// `0o666`: everything else (relocatable objects, maps, reports, generated text).
    Data,
    /// `0o600`: files only their owner may read or write (cache entries, as lld writes its cache's).
    Private,
}

impl Mode {
    fn bits(self) -> u32 {
        match self {
            Mode::Executable => 0o777,
            Mode::Data => 0o666,
            Mode::Private => 0o600,
        }
    }
}

/// An output being written: to a temporary beside the destination, or directly to a non-regular destination.
///
/// Dropped without [`Output::commit`], it removes its temporary and leaves the destination untouched.
#[derive(Debug)]
pub struct Output {
    destination: PathBuf,
    file: File,
    /// The temporary, while it exists; `None` for a direct write.
    temporary: Option<PathBuf>,
}

impl Output {
    /// Opens `destination` for writing (see the crate documentation for how).
    pub fn create(destination: &Path, mode: Mode) -> Result<Output, OutputError> {
        match fs::metadata(destination) {
            Ok(metadata) if metadata.is_dir() => {
                return Err(OutputError::Directory {
                    path: destination.to_path_buf(),
                });
            }
            Ok(metadata) if !metadata.is_file() => {
                // A device or a FIFO: written in place, never truncated, created or replaced.
                let file = OpenOptions::new()
                    .write(true)
                    .open(destination)
                    .map_err(write_error(destination))?;
                return Ok(Output {
                    destination: destination.to_path_buf(),
                    file,
                    temporary: None,
                });
            }
            Ok(metadata) => {
                if let Some(input) = neverc_userfile::read_as_input(metadata.dev(), metadata.ino()) {
                    return Err(OutputError::ReadInput {
                        path: destination.to_path_buf(),
                        input,
                    });
                }
            }
            Err(_) => {}
        }
        Output::beside(destination, mode)
    }

    /// Opens `destination` for writing through a temporary renamed over it, whatever it is now: a symbolic
    /// link, a device or a FIFO at the destination is replaced, never written through. For files in a
    /// directory the program manages itself, such as cache entries; a directory at the destination is refused.
    pub fn replace(destination: &Path, mode: Mode) -> Result<Output, OutputError> {
        if fs::symlink_metadata(destination).is_ok_and(|metadata| metadata.is_dir()) {
            return Err(OutputError::Directory {
                path: destination.to_path_buf(),
            });
        }
        Output::beside(destination, mode)
    }

    /// A new temporary beside `destination`, to be renamed over it.
    fn beside(destination: &Path, mode: Mode) -> Result<Output, OutputError> {
        let directory = destination
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = destination
            .file_name()
            .map_or_else(|| "output".into(), |name| name.to_string_lossy().into_owned());
        remove_stale_temporaries(directory, &name);
        let (temporary, file) = create_temporary(directory, &name, mode).map_err(write_error(destination))?;
        Ok(Output {
            destination: destination.to_path_buf(),
            file,
            temporary: Some(temporary),
        })
    }

    /// Creates an output for `destination` holding `bytes`, to be committed (or dropped) later: several outputs
    /// staged first and committed together appear only when all of them could be written.
    pub fn staged(destination: &Path, mode: Mode, bytes: &[u8]) -> Result<Output, OutputError> {
        let mut output = Output::create(destination, mode)?;
        output.write_all(bytes).map_err(|source| OutputError::Write {
            path: destination.to_path_buf(),
            source,
        })?;
        Ok(output)
    }

    /// Like [`Output::staged`] for a file of `length` bytes of which only `extents` (`(offset, bytes)`, in
    /// increasing offset order, not overlapping, inside `length`) are not zero. A regular file gets the zeros
    /// as holes (the writer seeks over them and sets the length), so they cost neither memory nor disk; a
    /// device or a FIFO gets them written, a bounded chunk at a time.
    pub fn staged_extents<'b>(
        destination: &Path,
        mode: Mode,
        length: u64,
        extents: impl IntoIterator<Item = (u64, &'b [u8])>,
    ) -> Result<Output, OutputError> {
        let mut output = Output::create(destination, mode)?;
        let failed = |source| OutputError::Write {
            path: destination.to_path_buf(),
            source,
        };
        let disordered = || io::Error::new(io::ErrorKind::InvalidInput, "extents overlap or lie past the length");
        let direct = output.is_direct();
        let mut position = 0u64;
        for (offset, bytes) in extents {
            let end = offset
                .checked_add(bytes.len() as u64)
                .filter(|end| offset >= position && *end <= length)
                .ok_or_else(|| failed(disordered()))?;
            output.skip(direct, offset - position).map_err(failed)?;
            output.file.write_all(bytes).map_err(failed)?;
            position = end;
        }
        output.skip(direct, length - position).map_err(failed)?;
        if !direct {
            output.file.set_len(length).map_err(failed)?;
        }
        Ok(output)
    }

    /// Moves `count` zero bytes forward: a seek in a regular file, written zeros in a stream.
    fn skip(&mut self, direct: bool, count: u64) -> io::Result<()> {
        if count == 0 {
            return Ok(());
        }
        if !direct {
            let step = i64::try_from(count).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
            self.file.seek(io::SeekFrom::Current(step))?;
            return Ok(());
        }
        static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];
        let mut left = count;
        while left > 0 {
            let chunk = left.min(ZEROS.len() as u64) as usize;
            self.file.write_all(&ZEROS[..chunk])?;
            left -= chunk as u64;
        }
        Ok(())
    }

    /// The destination this output replaces.
    pub fn destination(&self) -> &Path {
        &self.destination
    }

    /// Whether this output is written directly to a non-regular destination (a device, a FIFO).
    pub fn is_direct(&self) -> bool {
        self.temporary.is_none()
    }

    /// Renames the complete temporary over the destination (a direct write is complete already).
    ///
    /// The temporary is not synced to disk first: like ld.bfd, lld and mold, an output is as durable as any
    /// other file the build writes, and the rename alone already guarantees that a reader sees either the old
    /// file or the complete new one. (A sync cost 3–11 ms of wall time per link, a tenth of some links.)
    pub fn commit(mut self) -> Result<(), OutputError> {
        let failed = |source| OutputError::Write {
            path: self.destination.clone(),
            source,
        };
        self.file.flush().map_err(failed)?;
        let Some(temporary) = &self.temporary else {
            return Ok(());
        };
        // Renamed under the lock, so that a signal either finds the temporary (and removes it) or finds it gone.
        let mut live = live();
        if !exchanged_with_regular_file(temporary, &self.destination) {
            fs::rename(temporary, &self.destination).map_err(failed)?;
        }
        live.temporaries.retain(|path| path != temporary);
        drop(live);
        self.temporary = None;
        Ok(())
    }
}

/// Puts `temporary` in place of the regular file at `destination` by exchanging the two atomically
/// (`renameat2(RENAME_EXCHANGE)`), then removes the old file (now under the temporary's name); false, with
/// nothing changed, where the destination is not a regular file or the file system cannot exchange. A reader
/// sees the old file or the new one, as with a rename over it. The point is speed: ext4 writes back a file
/// renamed over another at once (its `auto_da_alloc` safeguard), which cost 2 ms of a 40 ms link, and it does
/// not for an exchange.
fn exchanged_with_regular_file(temporary: &Path, destination: &Path) -> bool {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    if !fs::symlink_metadata(destination).is_ok_and(|metadata| metadata.file_type().is_file()) {
        return false;
    }
    if renameat_with(CWD, temporary, CWD, destination, RenameFlags::EXCHANGE).is_err() {
        return false;
    }
    // Something other than a regular file replaced the destination after the check (it cannot be removed as
    // a file): exchanged back, the rename then fails or succeeds as it would have.
    if fs::remove_file(temporary).is_err() {
        return renameat_with(CWD, temporary, CWD, destination, RenameFlags::EXCHANGE).is_err();
    }
    true
}

impl Write for Output {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.file.write(bytes)
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if let Some(temporary) = self.temporary.take() {
            let mut live = live();
            let _ = fs::remove_file(&temporary);
            live.temporaries.retain(|path| *path != temporary);
        }
    }
}

/// Streams a file's contents (written by `produce`) to `destination` completely or not at all.
pub fn write_with<T, E>(
    destination: &Path,
    mode: Mode,
    produce: impl FnOnce(&mut BufWriter<&mut Output>) -> Result<T, E>,
) -> Result<T, WriteError<E>> {
    let mut output = Output::create(destination, mode).map_err(WriteError::Output)?;
    let mut writer = BufWriter::with_capacity(1 << 20, &mut output);
    let produced = produce(&mut writer).map_err(WriteError::Produce)?;
    writer.flush().map_err(|source| {
        WriteError::Output(OutputError::Write {
            path: destination.to_path_buf(),
            source,
        })
    })?;
    drop(writer);
    output.commit().map_err(WriteError::Output)?;
    Ok(produced)
}

/// Writes `bytes` to `destination` completely or not at all.
pub fn write_bytes(destination: &Path, mode: Mode, bytes: &[u8]) -> Result<(), OutputError> {
    Output::staged(destination, mode, bytes)?.commit()
}

/// Replaces whatever is at `destination` with a new file holding `bytes`, completely or not at all, never
/// writing through a symbolic link, a device or a FIFO there ([`Output::replace`]).
pub fn replace_bytes(destination: &Path, mode: Mode, bytes: &[u8]) -> Result<(), OutputError> {
    let mut output = Output::replace(destination, mode)?;
    output.write_all(bytes).map_err(write_error(destination))?;
    output.commit()
}

/// The error of a write to `path`.
fn write_error(path: &Path) -> impl Fn(io::Error) -> OutputError + '_ {
    move |source| OutputError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// How a path is compared with others: by (device, inode) where the file exists, by absolute path otherwise.
#[derive(PartialEq, Eq)]
enum Identity {
    File(u64, u64),
    Path(PathBuf),
}

fn identity(path: &Path) -> Identity {
    match fs::metadata(path) {
        Ok(metadata) => Identity::File(metadata.dev(), metadata.ino()),
        Err(_) => {
            let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
            // The parent may exist under another spelling (a symbolic link, `..`): resolve it where it can be.
            let resolved = match (absolute.parent(), absolute.file_name()) {
                (Some(parent), Some(name)) => fs::canonicalize(parent).map(|parent| parent.join(name)).ok(),
                _ => None,
            };
            Identity::Path(resolved.unwrap_or(absolute))
        }
    }
}

/// Refuses an output that is the same file as an input or as another output, before anything is written.
///
/// `outputs` and `inputs` are (role, path) pairs; the roles name the paths in the error, such as `-o` or
/// `input`. An output that exists and is not a regular file (a device, a FIFO) is written in place and never
/// replaced, so it may be shared (`-o /dev/null -Map /dev/null`).
pub fn check_distinct(outputs: &[(&str, &Path)], inputs: &[(&str, &Path)]) -> Result<(), OutputError> {
    let replaced = |path: &Path| fs::metadata(path).map_or(true, |metadata| metadata.is_file());
    let inputs: Vec<(&str, &Path, Identity)> = inputs
        .iter()
        .map(|&(role, path)| (role, path, identity(path)))
        .collect();
    let mut earlier: Vec<(&str, &Path, Identity)> = Vec::new();
    for &(role, path) in outputs.iter().filter(|(_, path)| replaced(path)) {
        let this = identity(path);
        if let Some((other_role, other, _)) = inputs.iter().chain(&earlier).find(|(_, _, other)| *other == this) {
            return Err(OutputError::SameFile {
                role: role.to_string(),
                path: path.to_path_buf(),
                other_role: other_role.to_string(),
                other: other.to_path_buf(),
            });
        }
        earlier.push((role, path, this));
    }
    Ok(())
}

/// Creates a new temporary for `name` in `directory`, exclusively, under a name nobody can predict, and locks it
/// for as long as it is open.
fn create_temporary(directory: &Path, name: &str, mode: Mode) -> io::Result<(PathBuf, File)> {
    let pid = std::process::id();
    let mut last_error = io::Error::from(io::ErrorKind::AlreadyExists);
    for attempt in 0u32..64 {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u32(attempt);
        let path = directory.join(format!(".{name}.{pid}.{:016x}.tmp", hasher.finish()));
        // Created and recorded under the lock, so that a signal cannot come between the two.
        let mut live = live();
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode.bits())
            .open(&path)
        {
            Ok(file) => {
                live.temporaries.push(path.clone());
                // The lock marks the temporary as in use to every other process, in whatever pid namespace; a
                // file system without locks only loses that mark.
                let _ = rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive);
                return Ok((path, file));
            }
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => last_error = error,
            Err(error) => return Err(error),
        }
    }
    Err(last_error)
}

/// The pid in the name of one of our temporaries for `name` (`.<name>.<pid>.<16 hex digits>.tmp`), if it is one.
fn temporary_pid(file_name: &str, name: &str) -> Option<u32> {
    let middle = file_name
        .strip_prefix('.')?
        .strip_prefix(name)?
        .strip_prefix('.')?
        .strip_suffix(".tmp")?;
    let (pid, random) = middle.split_once('.')?;
    let digits = |text: &str, radix| !text.is_empty() && text.chars().all(|c| c.is_digit(radix));
    if random.len() != 16 || !digits(random, 16) || !digits(pid, 10) {
        return None;
    }
    pid.parse().ok()
}

/// How long an empty, unlocked temporary of a process this one cannot see is presumed to be in the instant
/// between its creation and its locking (by a process in another pid namespace) before it counts as stale.
const UNLOCKED_GRACE: Duration = Duration::from_secs(10);

/// Removes the temporaries for `name` in `directory` left by processes that are gone (killed by SIGKILL, say).
///
/// Only regular files named by our pattern are removed, and only when nobody holds a lock on them, `/proc`
/// shows that their pid is not running, and they are not an empty file younger than [`UNLOCKED_GRACE`] (a
/// writer elsewhere locks its temporary right after creating it, before writing a byte). Without `/proc`
/// nothing is removed.
fn remove_stale_temporaries(directory: &Path, name: &str) {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(directory) else {
        return;
    };
    let own = std::process::id();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name.to_str().and_then(|file_name| temporary_pid(file_name, name)) else {
            continue;
        };
        let is_file = entry.file_type().is_ok_and(|kind| kind.is_file());
        if pid == own || !is_file || proc.join(pid.to_string()).exists() {
            continue;
        }
        // Opened without following a link planted in the meantime, and without blocking on anything else.
        let Ok(file) = OpenOptions::new()
            .read(true)
            .custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32)
            .open(entry.path())
        else {
            continue;
        };
        if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
            continue;
        }
        let Ok(metadata) = file.metadata() else { continue };
        let young = metadata
            .modified()
            .ok()
            .and_then(|modified| SystemTime::now().duration_since(modified).ok())
            .is_none_or(|age| age < UNLOCKED_GRACE);
        if metadata.is_file() && !(metadata.len() == 0 && young) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use std::sync::{Mutex, PoisonError};

    /// The tests that write outputs run one at a time: the registry of live temporaries is the process's.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn temporary_names_are_recognized_exactly() {
        assert_eq!(temporary_pid(".a.out.12.0123456789abcdef.tmp", "a.out"), Some(12));
        assert_eq!(temporary_pid(".a.out.12.0123456789abcdef.tmp", "a"), None);
        assert_eq!(temporary_pid(".a.out.12.tmp", "a.out"), None);
        assert_eq!(temporary_pid(".a.out.x.0123456789abcdef.tmp", "a.out"), None);
        assert_eq!(temporary_pid(".a.out.12.0123456789abcdeg.tmp", "a.out"), None);
    }

    #[test]
    fn a_dropped_output_leaves_no_temporary_and_a_committed_one_replaces_the_file() {
        let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        let dir = std::env::temp_dir().join(format!("neverc-output-unit-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let destination = dir.join("out");
        fs::write(&destination, "old").unwrap();
        let mut output = Output::create(&destination, Mode::Data).unwrap();
        output.write_all(b"new").unwrap();
        drop(output);
        assert_eq!(fs::read_to_string(&destination).unwrap(), "old");
        write_bytes(&destination, Mode::Data, b"new").unwrap();
        assert_eq!(fs::read_to_string(&destination).unwrap(), "new");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        assert!(live().temporaries.is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn extents_are_written_around_holes_and_disordered_ones_are_refused() {
        let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        let dir = std::env::temp_dir().join(format!("neverc-output-extents-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let destination = dir.join("out");
        let length = 3 << 20;
        let extents: [(u64, &[u8]); 2] = [(1, b"ab"), (2 << 20, b"cd")];
        Output::staged_extents(&destination, Mode::Data, length, extents)
            .unwrap()
            .commit()
            .unwrap();
        let written = fs::read(&destination).unwrap();
        let mut expected = vec![0u8; length as usize];
        expected[1..3].copy_from_slice(b"ab");
        expected[2 << 20..(2 << 20) + 2].copy_from_slice(b"cd");
        assert!(written == expected);
        // The megabytes between the extents are a hole (file systems allocate in blocks of at most 64 KiB).
        assert!(fs::metadata(&destination).unwrap().blocks() * 512 < 1 << 20);
        let overlapping: [(u64, &[u8]); 2] = [(4, b"ab"), (5, b"cd")];
        assert!(Output::staged_extents(&destination, Mode::Data, 16, overlapping).is_err());
        let past_the_end: [(u64, &[u8]); 1] = [(15, b"cd")];
        assert!(Output::staged_extents(&destination, Mode::Data, 16, past_the_end).is_err());
        assert_eq!(fs::read(&destination).unwrap(), written);
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }
}
