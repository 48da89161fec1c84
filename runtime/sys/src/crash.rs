//! Naming the plugin a fatal signal came from.
//!
//! A plugin runs inside the host's process and shares its fate: a plugin that writes through a bad pointer,
//! aborts, runs an illegal instruction, divides by zero or overflows its stack takes the host down with it,
//! and the host does not pretend otherwise. The process still dies of the signal, with the exit status it
//! would have had (139 for SIGSEGV, 134 for SIGABRT, ...). What this module adds is one line on stderr first,
//! naming the plugin that was running and what the host had asked of it:
//!
//! ```text
//! fatal: SIGSEGV in plugin `org.example.crasher` (/path/crasher.so), in its observer of neverc.link.gc
//! ```
//!
//! Every call into a plugin's code runs under [`enter`] (`plugin::CFunction::call` and the loading and
//! unloading of its library do it), which records on the calling thread which plugin is entered and for what
//! — in memory prepared before the call: the plugin's [`PluginName`], formatted when it was loaded, and the
//! description the caller borrows for the call — and puts the previous record back when the call returns.
//! Entries nest (an interceptor's continuation runs the next plugin's interceptor): the line names the
//! innermost, the plugin that was entered last. Host code a plugin's call runs on the host's behalf (the rest
//! of an interceptor chain) runs under [`outside_plugins`] and names none.
//!
//! The first entry installs a handler for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT, run on an alternate
//! signal stack (`SA_ONSTACK`; every thread that enters a plugin has one of at least [`ALTERNATE_STACK`]
//! bytes) so that a stack overflow is reported too. The handler is async-signal-safe: it reads the record,
//! copies bytes into a buffer on its own stack and calls only write(2), sigaction(2) and raise(3). It writes
//! the line once per process and only when a plugin is entered on the thread that got the signal, puts back
//! the disposition it found (the standard library's stack-overflow handler, or the default) and lets the
//! signal take its course: a fault runs the faulting instruction again, a signal sent by `abort`, `raise` or
//! `kill` is raised again.

use std::cell::Cell;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once, OnceLock};

/// The signals whose handler names the entered plugin, with their names.
const SIGNALS: [(libc::c_int, &str); 5] = [
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGABRT, "SIGABRT"),
];

/// The least size of the alternate signal stack of a thread that enters a plugin.
pub const ALTERNATE_STACK: usize = 64 * 1024;

/// The most bytes of a name or a description the line holds (the line is bounded, and built on the signal
/// stack).
const PART_LIMIT: usize = 400;

/// A plugin as the line names it: `plugin `ID` (PATH)`, or `plugin PATH` before it said its id. Formatted
/// once, before any call into the plugin; control characters become `?`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginName {
    text: Arc<[u8]>,
}

impl PluginName {
    /// A plugin known by its library's path only (while its library loads and its entry point runs).
    pub fn of_library(path: &OsStr) -> PluginName {
        let mut text = b"plugin ".to_vec();
        push_printable(&mut text, path.as_bytes());
        PluginName { text: text.into() }
    }

    /// A plugin that said its id.
    pub fn new(id: &str, path: &OsStr) -> PluginName {
        let mut text = b"plugin `".to_vec();
        push_printable(&mut text, id.as_bytes());
        text.extend_from_slice(b"` (");
        push_printable(&mut text, path.as_bytes());
        text.push(b')');
        PluginName { text: text.into() }
    }
}

/// Appends `bytes`, at most [`PART_LIMIT`] of them, with control characters as `?`.
fn push_printable(text: &mut Vec<u8>, bytes: &[u8]) {
    text.extend(
        bytes
            .iter()
            .take(PART_LIMIT)
            .map(|&byte| if byte < 0x20 || byte == 0x7f { b'?' } else { byte }),
    );
}

/// What the host asks of a plugin in one call: the line says "in its `what``subject`" (`what` = "observer
/// of ", `subject` = the phase's name; `subject` may be empty).
#[derive(Clone, Copy, Debug)]
pub struct Callee<'a> {
    /// The plugin whose code is called.
    pub plugin: &'a PluginName,
    /// What the host calls: "observer of ", "Register", "PlanCallingConvention for ".
    pub what: &'a str,
    /// What it is called about (a phase, a function), after `what`; may be empty.
    pub subject: &'a str,
}

/// The record of one entry, on the stack of the call into the plugin, for as long as the call runs.
struct Entry {
    plugin: *const [u8],
    what: *const [u8],
    subject: *const [u8],
}

thread_local! {
    /// The innermost entry of this thread, or null. Const-initialized and without a destructor, so reading it
    /// in a signal handler touches no lazy initialization.
    static ENTERED: Cell<*const Entry> = const { Cell::new(std::ptr::null()) };
}

/// Puts the previous entry back when a call returns (or unwinds).
struct Restore(*const Entry);

impl Drop for Restore {
    fn drop(&mut self) {
        ENTERED.with(|entered| entered.set(self.0));
    }
}

/// Runs `call`, which calls into a plugin's code, with `callee` recorded as the plugin entered on this thread.
pub fn enter<R>(callee: Callee<'_>, call: impl FnOnce() -> R) -> R {
    install();
    alternate_stack();
    let entry = Entry {
        plugin: &callee.plugin.text[..] as *const [u8],
        what: callee.what.as_bytes() as *const [u8],
        subject: callee.subject.as_bytes() as *const [u8],
    };
    let _restore = Restore(ENTERED.with(|entered| entered.replace(&entry)));
    call()
}

/// Runs `work`, host code that a plugin's call runs (the rest of an interceptor chain), as entered in no
/// plugin: a crash in it names none, unless `work` enters a plugin itself.
pub fn outside_plugins<R>(work: impl FnOnce() -> R) -> R {
    let _restore = Restore(ENTERED.with(|entered| entered.replace(std::ptr::null())));
    work()
}

/// The dispositions found before the handler was installed, in the order of [`SIGNALS`].
static PREVIOUS: OnceLock<[libc::sigaction; SIGNALS.len()]> = OnceLock::new();
/// Whether the line was written (it is written once per process).
static REPORTED: AtomicBool = AtomicBool::new(false);

/// Installs the handler for every signal of [`SIGNALS`], once per process.
fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = SIGNALS.map(|(signal, _)| {
            // SAFETY: an all-zero `sigaction` is a valid value of the C structure (SIG_DFL, no flags).
            let mut found: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: reading a signal's disposition into a structure of this function's; no action is set.
            unsafe { libc::sigaction(signal, std::ptr::null(), &mut found) };
            found
        });
        // Recorded before the handler can run, so that it always finds what to put back.
        let _ = PREVIOUS.set(previous);
        for (signal, _) in SIGNALS {
            // SAFETY: as above, an all-zero `sigaction` is valid; its fields are set below.
            let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
            action.sa_sigaction = on_fatal_signal as extern "C" fn(_, _, _) as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            // SAFETY: `action.sa_mask` is a signal set of this function's to initialize.
            unsafe { libc::sigemptyset(&mut action.sa_mask) };
            // SAFETY: the handler is an `extern "C"` function of the type SA_SIGINFO asks for, and it is
            // async-signal-safe (see the module's documentation).
            unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) };
        }
    });
}

/// This thread's alternate signal stack, when the host had to give it one; disabled and freed when the thread
/// ends.
struct AlternateStack {
    memory: Box<[u8]>,
}

impl Drop for AlternateStack {
    fn drop(&mut self) {
        // SAFETY: an all-zero `stack_t` is a valid value of the C structure.
        let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
        // SAFETY: reading this thread's alternate stack into a structure of this function's.
        unsafe { libc::sigaltstack(std::ptr::null(), &mut current) };
        if current.ss_sp.cast::<u8>() == self.memory.as_mut_ptr() {
            // SAFETY: as above.
            let mut disable: libc::stack_t = unsafe { std::mem::zeroed() };
            disable.ss_flags = libc::SS_DISABLE;
            // SAFETY: disabling this thread's alternate stack, which is this memory, before it is freed.
            unsafe { libc::sigaltstack(&disable, std::ptr::null_mut()) };
        }
    }
}

thread_local! {
    /// The alternate stack this thread got, if it needed one: `Some` once checked.
    static ALTERNATE: std::cell::RefCell<Option<Option<AlternateStack>>> = const { std::cell::RefCell::new(None) };
}

/// Gives this thread an alternate signal stack of at least [`ALTERNATE_STACK`] bytes unless it has one (the
/// standard library gives the threads it starts a smaller one).
fn alternate_stack() {
    let _ = ALTERNATE.try_with(|alternate| {
        let Ok(mut alternate) = alternate.try_borrow_mut() else {
            return;
        };
        if alternate.is_some() {
            return;
        }
        // SAFETY: an all-zero `stack_t` is a valid value of the C structure.
        let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
        // SAFETY: reading this thread's alternate stack into a structure of this function's.
        unsafe { libc::sigaltstack(std::ptr::null(), &mut current) };
        if current.ss_flags & libc::SS_DISABLE == 0 && current.ss_size >= ALTERNATE_STACK {
            *alternate = Some(None);
            return;
        }
        let mut memory = vec![0u8; ALTERNATE_STACK].into_boxed_slice();
        // SAFETY: as above.
        let mut stack: libc::stack_t = unsafe { std::mem::zeroed() };
        stack.ss_sp = memory.as_mut_ptr().cast();
        stack.ss_size = memory.len();
        // SAFETY: the memory lives in this thread's `ALTERNATE` until the thread ends, when it is disabled
        // before being freed (`AlternateStack::drop`).
        let installed = unsafe { libc::sigaltstack(&stack, std::ptr::null_mut()) } == 0;
        *alternate = Some(installed.then_some(AlternateStack { memory }));
    });
}

/// A line built on the signal stack: bytes copied into a fixed buffer, cut at its end.
struct Line {
    bytes: [u8; 2 * PART_LIMIT + 256],
    length: usize,
}

impl Line {
    fn push(&mut self, bytes: &[u8]) {
        for &byte in bytes.iter().take(PART_LIMIT) {
            if self.length == self.bytes.len() - 1 {
                return;
            }
            self.bytes[self.length] = if byte < 0x20 || byte == 0x7f { b'?' } else { byte };
            self.length += 1;
        }
    }
}

/// The handler: names the entered plugin (once), puts back the disposition it found and lets the signal kill
/// the process.
extern "C" fn on_fatal_signal(signal: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    let entered = ENTERED.with(Cell::get);
    if !entered.is_null() && !REPORTED.swap(true, Ordering::SeqCst) {
        // SAFETY: the entry lives on the stack of `enter`, which has not returned: the signal came while the
        // thread ran the call it made (or code that call ran); the names it points at are borrowed for as long.
        let entry = unsafe { &*entered };
        let name = SIGNALS
            .iter()
            .find(|(known, _)| *known == signal)
            .map_or("a fatal signal", |(_, name)| name);
        let mut line = Line {
            bytes: [0; 2 * PART_LIMIT + 256],
            length: 0,
        };
        line.push(b"fatal: ");
        line.push(name.as_bytes());
        line.push(b" in ");
        // SAFETY: as for `entry`.
        line.push(unsafe { &*entry.plugin });
        line.push(b", in its ");
        // SAFETY: as for `entry`.
        line.push(unsafe { &*entry.what });
        // SAFETY: as for `entry`.
        line.push(unsafe { &*entry.subject });
        line.bytes[line.length] = b'\n';
        line.length += 1;
        // SAFETY: write(2) is async-signal-safe; the buffer is this function's.
        let _ = unsafe { libc::write(libc::STDERR_FILENO, line.bytes.as_ptr().cast(), line.length) };
    }
    let previous = PREVIOUS
        .get()
        .and_then(|previous| {
            SIGNALS
                .iter()
                .position(|(known, _)| *known == signal)
                .and_then(|index| previous.get(index))
        })
        .copied()
        // SAFETY: an all-zero `sigaction` is SIG_DFL, which is what a signal without a recorded disposition gets.
        .unwrap_or_else(|| unsafe { std::mem::zeroed() });
    // SAFETY: sigaction(2) is async-signal-safe; the disposition put back is the one this process had.
    unsafe { libc::sigaction(signal, &previous, std::ptr::null_mut()) };
    // A signal that was sent (si_code <= 0: by abort, raise or kill) is not sent again by returning: raise it,
    // to be delivered with the disposition put back once this handler returns. A fault is: returning runs the
    // faulting instruction again.
    // SAFETY: the kernel hands an SA_SIGINFO handler a valid `siginfo_t` (null only if called otherwise).
    let sent = unsafe { info.as_ref() }.is_none_or(|info| info.si_code <= 0);
    if sent {
        // SAFETY: raise(3) is async-signal-safe.
        unsafe { libc::raise(signal) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// The environment variable that makes a test binary the child of [`run_child`].
    const CHILD: &str = "NEVERC_SYS_CRASH_CHILD";

    /// Runs the test `name` of this binary again, in a child process with `CHILD=case`; returns its status and
    /// stderr.
    fn run_child(name: &str, case: &str) -> (std::process::ExitStatus, String) {
        let output = Command::new(std::env::current_exe().unwrap_or_default())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(CHILD, case)
            .output();
        let Ok(output) = output else {
            panic!("cannot run the test binary again");
        };
        (output.status, String::from_utf8_lossy(&output.stderr).into_owned())
    }

    /// The fatal lines in `stderr`.
    fn fatal_lines(stderr: &str) -> Vec<&str> {
        stderr.lines().filter(|line| line.starts_with("fatal: ")).collect()
    }

    #[test]
    fn an_abort_inside_a_plugin_names_it_and_the_process_dies_of_the_signal() {
        use std::os::unix::process::ExitStatusExt as _;
        match std::env::var(CHILD).as_deref() {
            Ok("inner") => {
                let outer = PluginName::new("org.example.outer", OsStr::new("/plugins/outer.so"));
                let inner = PluginName::of_library(OsStr::new("/plugins/inner\n.so"));
                let callee = |plugin, what, subject| Callee { plugin, what, subject };
                enter(callee(&outer, "interceptor of ", "neverc.link.gc"), || {
                    // A plugin entered and left: the outer one is entered again.
                    enter(callee(&inner, "Register", ""), || ());
                    enter(callee(&inner, "neverc_plugin_entry", ""), || std::process::abort())
                });
            }
            Ok("returned") => {
                let plugin = PluginName::new("org.example.done", OsStr::new("/plugins/done.so"));
                enter(
                    Callee {
                        plugin: &plugin,
                        what: "observer of ",
                        subject: "neverc.link.layout",
                    },
                    || (),
                );
                std::process::abort();
            }
            Ok("host") => {
                let plugin = PluginName::new("org.example.outer", OsStr::new("/plugins/outer.so"));
                let callee = Callee {
                    plugin: &plugin,
                    what: "interceptor of ",
                    subject: "neverc.link.gc",
                };
                enter(callee, || outside_plugins(|| std::process::abort()));
            }
            _ => {
                let (status, stderr) = run_child(
                    "crash::tests::an_abort_inside_a_plugin_names_it_and_the_process_dies_of_the_signal",
                    "inner",
                );
                assert_eq!(status.signal(), Some(libc::SIGABRT), "{stderr}");
                // The innermost entry is named; a newline in its path is no second line.
                assert_eq!(
                    fatal_lines(&stderr),
                    ["fatal: SIGABRT in plugin /plugins/inner?.so, in its neverc_plugin_entry"],
                    "{stderr}"
                );
                // Once every plugin call returned, or in host code a plugin's call runs, no plugin is named,
                // and the process dies of the signal all the same.
                for case in ["returned", "host"] {
                    let (status, stderr) = run_child(
                        "crash::tests::an_abort_inside_a_plugin_names_it_and_the_process_dies_of_the_signal",
                        case,
                    );
                    assert_eq!(status.signal(), Some(libc::SIGABRT), "{case}: {stderr}");
                    assert!(fatal_lines(&stderr).is_empty(), "{case}: {stderr}");
                }
            }
        }
    }
}
