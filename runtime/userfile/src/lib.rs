//! Reading a file a user named — a declaration, a target file, an LLVM module, a link input, a thin-archive
//! member, an ordering file — the one way every reader of the workspace does it.
//!
//! A path may name anything: `/dev/zero` and `/dev/urandom` never end, a FIFO blocks until someone writes
//! to it, a directory cannot be read at all. So [`read_user_file`] reads only regular files (symbolic links
//! are followed), and at most a declared number of bytes: a file larger than its reader's limit is refused
//! before a byte of it is read. Every error names the file.
//!
//! The file type is checked before the file is opened (opening a FIFO for reading blocks until it has a
//! writer) and again on the opened file, so that a path replaced in between is still refused; the read is
//! bounded too, for files whose reported size is not their contents (as in `/proc`).
//!
//! Every file read is recorded by device and inode ([`read_as_input`]), so that the writer of outputs
//! (`neverc-output`) refuses to replace any of them, however indirectly a command line named it.

use std::collections::HashMap;
use std::fs::{self, File, Metadata};
use std::io::Read as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use neverc_sys::MappedFile;

/// The limit for declaration files (phase schemas, target files, plugin manifests), ordering files and
/// other small text inputs: 64 MiB.
pub const TEXT_LIMIT: u64 = 64 << 20;

/// The limit for LLVM IR modules read by `cc materialize`: 4 GiB.
pub const MODULE_LIMIT: u64 = 4 << 30;

/// The limit for one link input (an object, an archive or a thin-archive member): 4 GiB.
pub const LINK_INPUT_LIMIT: u64 = 4 << 30;

/// Why a user file could not be read. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum UserFileError {
    /// The file system refused (no such file, permission denied, ...).
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The path names a device, a FIFO, a socket or a directory, which a reader that expects a file refuses.
    #[error("cannot read `{}`: it is {kind}, not a regular file", path.display())]
    NotRegularFile { path: PathBuf, kind: &'static str },
    /// The file is larger than the reader's declared limit.
    #[error("cannot read `{}`: it is larger than the limit of {limit} bytes for this input", path.display())]
    TooLarge { path: PathBuf, limit: u64 },
    /// A text file is not UTF-8.
    #[error("cannot read `{}`: it is not UTF-8 text", path.display())]
    NotUtf8 { path: PathBuf },
}

impl UserFileError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            UserFileError::Io { path, .. }
            | UserFileError::NotRegularFile { path, .. }
            | UserFileError::TooLarge { path, .. }
            | UserFileError::NotUtf8 { path } => path,
        }
    }
}

/// Bytes that the parts of a run share without copying: a file mapped into memory, or bytes on the heap.
#[derive(Clone)]
pub struct SharedBytes(Backing);

#[derive(Clone)]
enum Backing {
    Heap(Arc<[u8]>),
    Mapped(Arc<MappedFile>),
}

impl SharedBytes {
    /// Whether the bytes are a mapped file (rather than on the heap).
    pub fn is_mapped(&self) -> bool {
        matches!(self.0, Backing::Mapped(_))
    }

    /// Whether `a` and `b` share one buffer (not merely equal bytes).
    pub fn ptr_eq(a: &SharedBytes, b: &SharedBytes) -> bool {
        match (&a.0, &b.0) {
            (Backing::Heap(a), Backing::Heap(b)) => Arc::ptr_eq(a, b),
            (Backing::Mapped(a), Backing::Mapped(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl std::ops::Deref for SharedBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            Backing::Heap(bytes) => bytes,
            Backing::Mapped(map) => map,
        }
    }
}

impl AsRef<[u8]> for SharedBytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl From<Vec<u8>> for SharedBytes {
    fn from(bytes: Vec<u8>) -> SharedBytes {
        SharedBytes(Backing::Heap(bytes.into()))
    }
}

impl From<Arc<[u8]>> for SharedBytes {
    fn from(bytes: Arc<[u8]>) -> SharedBytes {
        SharedBytes(Backing::Heap(bytes))
    }
}

impl From<&[u8]> for SharedBytes {
    fn from(bytes: &[u8]) -> SharedBytes {
        SharedBytes(Backing::Heap(bytes.into()))
    }
}

impl Default for SharedBytes {
    fn default() -> SharedBytes {
        SharedBytes(Backing::Heap(Arc::from(&[][..])))
    }
}

impl std::fmt::Debug for SharedBytes {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = if self.is_mapped() { "mapped" } else { "on the heap" };
        write!(formatter, "SharedBytes({} bytes, {how})", self.len())
    }
}

/// Like [`read_user_file`], for readers that keep the bytes for a whole run (link inputs): the file is
/// mapped into memory (see [`neverc_sys::MappedFile`] for the contract), so that it is neither zeroed nor
/// copied and the pages the run never looks at are never read. A file that cannot be mapped (an empty file,
/// one whose reported size is not its contents, as in `/proc`) is read the ordinary way.
pub fn read_user_file_shared(path: &Path, limit: u64) -> Result<SharedBytes, UserFileError> {
    let (file, metadata) = open_regular(path, limit)?;
    if metadata.len() > 0
        && MappedFile::live_count() < map_budget()
        && let Ok(map) = MappedFile::map(&file)
    {
        // The length is the file's when it was mapped, which may have grown since it was checked.
        if map.len() as u64 > limit {
            return Err(UserFileError::TooLarge {
                path: path.to_path_buf(),
                limit,
            });
        }
        return Ok(SharedBytes(Backing::Mapped(Arc::new(map))));
    }
    read_opened(path, file, &metadata, limit).map(SharedBytes::from)
}

/// How many files [`read_user_file_shared`] keeps mapped at most; the files read after that are read onto the
/// heap. A process may have only `vm.max_map_count` memory maps (65,530 by default) and needs many of them for
/// itself (libraries, thread stacks, the allocator's arenas): a link of tens of thousands of inputs must not
/// take them all. A quarter of the limit, read once.
fn map_budget() -> usize {
    static BUDGET: LazyLock<usize> = LazyLock::new(|| {
        let limit = fs::read_to_string("/proc/sys/vm/max_map_count")
            .ok()
            .and_then(|text| text.trim().parse::<usize>().ok())
            .unwrap_or(65_530);
        (limit / 4).max(256)
    });
    *BUDGET
}

/// The files read as user input so far, by (device, inode), each with the path it was first read as.
fn read_files() -> std::sync::MutexGuard<'static, HashMap<(u64, u64), PathBuf>> {
    static READ: LazyLock<Mutex<HashMap<(u64, u64), PathBuf>>> = LazyLock::new(Mutex::default);
    READ.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The path of the file with `device` and `inode`, if this process has opened it as user input (through any
/// reader of this crate): a file an output must never replace.
pub fn read_as_input(device: u64, inode: u64) -> Option<PathBuf> {
    read_files().get(&(device, inode)).cloned()
}

/// The bytes of the regular file at `path`, which may be at most `limit` bytes long.
pub fn read_user_file(path: &Path, limit: u64) -> Result<Vec<u8>, UserFileError> {
    let (file, metadata) = open_regular(path, limit)?;
    read_opened(path, file, &metadata, limit)
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> UserFileError + '_ {
    move |source| UserFileError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Opens the regular file at `path` of at most `limit` bytes: its type is checked before it is opened and
/// again on the opened file (see the module's documentation).
fn open_regular(path: &Path, limit: u64) -> Result<(File, Metadata), UserFileError> {
    let io = io_error(path);
    check_regular(path, &fs::metadata(path).map_err(&io)?, limit)?;
    let file = File::open(path).map_err(&io)?;
    let metadata = file.metadata().map_err(&io)?;
    check_regular(path, &metadata, limit)?;
    read_files()
        .entry((metadata.dev(), metadata.ino()))
        .or_insert_with(|| path.to_path_buf());
    Ok((file, metadata))
}

/// Reads an opened file (`metadata` is its), refusing more than `limit` bytes.
fn read_opened(path: &Path, file: File, metadata: &Metadata, limit: u64) -> Result<Vec<u8>, UserFileError> {
    let mut bytes = Vec::new();
    // The size is a hint only; reading one byte past the limit tells a file that grew from one that fits.
    let hint = usize::try_from(metadata.len()).unwrap_or(0);
    bytes.try_reserve_exact(hint).map_err(|_| UserFileError::TooLarge {
        path: path.to_path_buf(),
        limit,
    })?;
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io_error(path))?;
    if bytes.len() as u64 > limit {
        return Err(UserFileError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(bytes)
}

/// The text of the regular file at `path` (UTF-8), which may be at most `limit` bytes long.
pub fn read_user_text(path: &Path, limit: u64) -> Result<String, UserFileError> {
    String::from_utf8(read_user_file(path, limit)?).map_err(|_| UserFileError::NotUtf8 {
        path: path.to_path_buf(),
    })
}

/// Refuses anything but a regular file of at most `limit` bytes.
fn check_regular(path: &Path, metadata: &Metadata, limit: u64) -> Result<(), UserFileError> {
    if !metadata.is_file() {
        return Err(UserFileError::NotRegularFile {
            path: path.to_path_buf(),
            kind: file_kind(metadata),
        });
    }
    if metadata.len() > limit {
        return Err(UserFileError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(())
}

/// What a non-regular file is, for the error message.
fn file_kind(metadata: &Metadata) -> &'static str {
    let file_type = metadata.file_type();
    if file_type.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    "a special file"
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn devices_and_directories_are_refused_with_their_kind() {
        let error = read_user_file(Path::new("/dev/zero"), TEXT_LIMIT).unwrap_err();
        assert!(
            matches!(
                error,
                UserFileError::NotRegularFile {
                    kind: "a character device",
                    ..
                }
            ),
            "{error}"
        );
        assert!(error.to_string().contains("`/dev/zero`"), "{error}");
        let error = read_user_file(Path::new("/"), TEXT_LIMIT).unwrap_err();
        assert!(
            matches!(
                error,
                UserFileError::NotRegularFile {
                    kind: "a directory",
                    ..
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn a_file_over_the_limit_is_refused_and_one_at_the_limit_is_read() {
        let path = std::env::temp_dir().join(format!("neverc-userfile-{}", std::process::id()));
        fs::write(&path, b"12345").unwrap();
        assert_eq!(read_user_file(&path, 5).unwrap(), b"12345");
        let error = read_user_file(&path, 4).unwrap_err();
        assert!(matches!(error, UserFileError::TooLarge { limit: 4, .. }), "{error}");
        fs::write(&path, [0xff, 0xfe]).unwrap();
        assert!(matches!(read_user_text(&path, 5), Err(UserFileError::NotUtf8 { .. })));
        fs::remove_file(&path).unwrap();
    }

    #[test]
    fn the_shared_reader_reads_the_same_bytes_under_the_same_rules() {
        let path = std::env::temp_dir().join(format!("neverc-userfile-shared-{}", std::process::id()));
        let bytes: Vec<u8> = (0..100_000u32).map(|index| (index % 251) as u8).collect();
        fs::write(&path, &bytes).unwrap();
        let shared = read_user_file_shared(&path, 100_000).unwrap();
        assert!(shared.is_mapped(), "{shared:?}");
        assert_eq!(&*shared, &bytes[..]);
        // A file replaced by a rename (as compilers and `ar` replace theirs) leaves the mapping as it was.
        let replacement = path.with_extension("new");
        fs::write(&replacement, b"other").unwrap();
        fs::rename(&replacement, &path).unwrap();
        assert_eq!(&*shared, &bytes[..]);
        fs::write(&path, &bytes).unwrap();
        let error = read_user_file_shared(&path, 99_999).unwrap_err();
        assert!(matches!(error, UserFileError::TooLarge { .. }), "{error}");
        fs::write(&path, b"").unwrap();
        let empty = read_user_file_shared(&path, 0).unwrap();
        assert!(empty.is_empty() && !empty.is_mapped(), "{empty:?}");
        // What cannot be mapped is read: a file whose reported size is not its contents.
        let proc_file = read_user_file_shared(Path::new("/proc/self/stat"), TEXT_LIMIT).unwrap();
        assert!(!proc_file.is_empty() && !proc_file.is_mapped(), "{proc_file:?}");
        fs::remove_file(&path).unwrap();
        let error = read_user_file_shared(Path::new("/dev/zero"), TEXT_LIMIT).unwrap_err();
        assert!(matches!(error, UserFileError::NotRegularFile { .. }), "{error}");
    }
}
