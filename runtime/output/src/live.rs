//! What this process has made and must not leave behind if a signal ends it: temporaries not yet renamed into
//! place, private directories ([`TempDir`]), and child processes ([`run_child`]), each recorded while it lives.
//! After [`remove_temporaries_on_signals`], SIGINT, SIGTERM and SIGHUP kill the children's process groups, then
//! remove the directories and temporaries, before the process dies of the signal.

use std::collections::hash_map::RandomState;
use std::fs;
use std::hash::{BuildHasher as _, Hasher as _};
use std::io;
use std::os::unix::fs::DirBuilderExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use crate::OutputError;

/// What this process has made and not yet finished with.
#[derive(Default)]
pub(crate) struct Live {
    /// Temporaries created and not yet renamed or removed.
    pub(crate) temporaries: Vec<PathBuf>,
    /// Private directories not yet removed.
    directories: Vec<PathBuf>,
    /// Children running, each the leader of a process group of its own.
    children: Vec<u32>,
}

/// The registry, locked. A signal's handler takes the same lock, so whatever is done under it (a creation and
/// its record, a rename and its removal from the record) is seen by the handler either wholly or not at all.
pub(crate) fn live() -> MutexGuard<'static, Live> {
    static LIVE: Mutex<Live> = Mutex::new(Live {
        temporaries: Vec::new(),
        directories: Vec::new(),
        children: Vec::new(),
    });
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A private directory (mode 0700) in the system's temporary directory, removed with everything in it when
/// dropped, or by the signal handlers of [`remove_temporaries_on_signals`].
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates `<temporary directory>/<prefix>-<pid>-<16 hex digits>`, under a name nobody can predict.
    pub fn new(prefix: &str) -> io::Result<TempDir> {
        let base = std::env::temp_dir();
        let pid = std::process::id();
        let mut last_error = io::Error::from(io::ErrorKind::AlreadyExists);
        for attempt in 0u32..64 {
            let mut hasher = RandomState::new().build_hasher();
            hasher.write_u32(attempt);
            let path = base.join(format!("{prefix}-{pid}-{:016x}", hasher.finish()));
            let mut live = live();
            match fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    live.directories.push(path.clone());
                    return Ok(TempDir { path });
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => last_error = error,
                Err(error) => return Err(error),
            }
        }
        Err(last_error)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let mut live = live();
        let _ = fs::remove_dir_all(&self.path);
        live.directories.retain(|path| *path != self.path);
    }
}

/// Runs `command` to completion with its standard input closed and its output collected, as the leader of a
/// process group of its own, recorded while it runs: a signal that ends this process kills that whole group
/// (the child and whatever it started) instead of leaving it running as an orphan.
pub fn run_child(command: &mut Command) -> io::Result<std::process::Output> {
    command
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Started and recorded under the lock, so that a signal cannot come between the two.
    let mut registry = live();
    let child = command.spawn()?;
    let pid = child.id();
    registry.children.push(pid);
    drop(registry);
    let output = child.wait_with_output();
    live().children.retain(|child| *child != pid);
    output
}

/// Whether process `pid` is still running: it exists and is not a zombie waiting to be reaped.
fn running(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command's name, which is in parentheses and may hold any byte.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// Makes SIGINT, SIGTERM and SIGHUP kill this process's children and remove its temporaries and private
/// directories before it dies of the signal (or, should re-raising it fail, exits with status 128 + the
/// signal number). Calling it again does nothing.
///
/// A process that handles these signals itself should not call it.
pub fn remove_temporaries_on_signals() -> Result<(), OutputError> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    static INSTALLED: OnceLock<()> = OnceLock::new();
    if INSTALLED.get().is_some() {
        return Ok(());
    }
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]).map_err(OutputError::Signals)?;
    std::thread::Builder::new()
        .name("neverc-output-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                // The lock is kept until the process is gone, so nothing new appears and nothing is renamed.
                let mut live = live();
                let children: Vec<u32> = live.children.drain(..).collect();
                for &pid in &children {
                    if let Some(group) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
                        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
                    }
                }
                // The children stop writing into the directories before those are removed.
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
                while children.iter().any(|&pid| running(pid)) && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                for path in live.directories.drain(..) {
                    let _ = fs::remove_dir_all(path);
                }
                for path in live.temporaries.drain(..) {
                    let _ = fs::remove_file(path);
                }
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            }
        })
        .map_err(OutputError::Signals)?;
    let _ = INSTALLED.set(());
    Ok(())
}
