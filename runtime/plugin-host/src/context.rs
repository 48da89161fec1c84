//! The contexts the host hands to C: tokens in a per-thread table, so that a context a plugin forges, keeps
//! past its scope or passes from another thread is found to be none of the host's.

use std::cell::RefCell;
use std::ffi::c_void;

/// What a token stands for.
pub(crate) enum Entry {
    /// A loaded plugin's host table: what it reports.
    Host(crate::load::HostState),
    /// A registration in progress.
    Registration(crate::registrar::Registration),
}

thread_local! {
    static ENTRIES: RefCell<Vec<(u64, Entry)>> = const { RefCell::new(Vec::new()) };
    static NEXT: std::cell::Cell<u64> = const { std::cell::Cell::new(0x4e43_0000_0000_0001) };
}

/// Registers `entry` and returns its token, as the context pointer C sees.
pub(crate) fn insert(entry: Entry) -> *mut c_void {
    let token = NEXT.with(|next| {
        let token = next.get();
        next.set(token.wrapping_add(0x10));
        token
    });
    ENTRIES.with(|entries| entries.borrow_mut().push((token, entry)));
    token as usize as *mut c_void
}

/// Removes the entry of `context` and returns it.
pub(crate) fn remove(context: *mut c_void) -> Option<Entry> {
    let token = context as usize as u64;
    ENTRIES.with(|entries| {
        let mut entries = entries.borrow_mut();
        let position = entries.iter().position(|(known, _)| *known == token)?;
        Some(entries.swap_remove(position).1)
    })
}

/// Runs `f` on the entry of `context`; `None` when the context is none of this thread's.
pub(crate) fn with<R>(context: *mut c_void, f: impl FnOnce(&mut Entry) -> R) -> Option<R> {
    let token = context as usize as u64;
    ENTRIES.with(|entries| {
        let mut entries = entries.try_borrow_mut().ok()?;
        let (_, entry) = entries.iter_mut().find(|(known, _)| *known == token)?;
        Some(f(entry))
    })
}
