//! Lending a borrowed closure to C code for the duration of one call: the host calls into a plugin, and the
//! plugin calls back (an interceptor's continuation, a Link API slot) with the token it was given. The
//! closure may borrow anything (a phase frame, the rest of an interceptor chain); the token is only valid
//! while [`lend`] runs, and a closure that is running cannot be entered again.

use std::any::Any;
use std::cell::RefCell;

/// A lent closure with its lifetime erased; valid only while its `lend` call runs.
type Erased = *mut (dyn FnMut(&mut dyn Any) + 'static);

struct Slot {
    token: u64,
    closure: Erased,
    busy: bool,
}

thread_local! {
    static SLOTS: RefCell<Vec<Slot>> = const { RefCell::new(Vec::new()) };
    static NEXT: std::cell::Cell<u64> = const { std::cell::Cell::new(0x4e43_5343_0000_0001) };
}

/// Why a token could not be called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallError {
    /// No closure is lent under the token on this thread (forged, stale, or from another thread).
    Unknown,
    /// The closure is running: calling it again would alias it.
    Busy,
}

/// Removes the slot when `lend` returns or unwinds.
struct Lending(u64);

impl Drop for Lending {
    fn drop(&mut self) {
        SLOTS.with(|slots| slots.borrow_mut().retain(|slot| slot.token != self.0));
    }
}

/// Lends `closure` under a fresh token while `within` runs (which hands the token to C).
pub fn lend<R>(closure: &mut dyn FnMut(&mut dyn Any), within: impl FnOnce(u64) -> R) -> R {
    let token = NEXT.with(|next| {
        let token = next.get();
        next.set(token.wrapping_add(0x10));
        token
    });
    let pointer: *mut (dyn FnMut(&mut dyn Any) + '_) = closure;
    // SAFETY: only the lifetime is erased; the slot holding the pointer is removed by `Lending` before this
    // function returns or unwinds, so the pointer is never used after the borrow of `closure` ends.
    let closure: Erased = unsafe { std::mem::transmute(pointer) };
    SLOTS.with(|slots| {
        slots.borrow_mut().push(Slot {
            token,
            closure,
            busy: false,
        })
    });
    let _lending = Lending(token);
    within(token)
}

/// Marks the slot idle again when `call` returns or unwinds.
struct Running(u64);

impl Drop for Running {
    fn drop(&mut self) {
        SLOTS.with(|slots| {
            if let Some(slot) = slots.borrow_mut().iter_mut().find(|slot| slot.token == self.0) {
                slot.busy = false;
            }
        });
    }
}

/// Calls the closure lent under `token` with `argument`.
pub fn call(token: u64, argument: &mut dyn Any) -> Result<(), CallError> {
    let closure = SLOTS.with(|slots| {
        let mut slots = slots.borrow_mut();
        let slot = slots
            .iter_mut()
            .find(|slot| slot.token == token)
            .ok_or(CallError::Unknown)?;
        if slot.busy {
            return Err(CallError::Busy);
        }
        slot.busy = true;
        Ok(slot.closure)
    })?;
    let _running = Running(token);
    // SAFETY: the slot exists, so the `lend` that made it has not returned and the closure is alive; it was
    // idle and is now marked busy, so this is the only reference to it until the call returns.
    let closure = unsafe { &mut *closure };
    closure(argument);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_lent_closure_is_called_by_its_token_only_while_lent() {
        let mut seen = Vec::new();
        let token = {
            let mut closure = |argument: &mut dyn Any| {
                if let Some(value) = argument.downcast_mut::<u32>() {
                    seen.push(*value);
                    *value += 1;
                }
            };
            lend(&mut closure, |token| {
                let mut value = 41u32;
                assert_eq!(call(token, &mut value), Ok(()));
                assert_eq!(value, 42);
                assert_eq!(call(token ^ 0x10, &mut value), Err(CallError::Unknown));
                token
            })
        };
        assert_eq!(call(token, &mut 0u32), Err(CallError::Unknown));
        assert_eq!(seen, [41]);
    }

    #[test]
    fn a_running_closure_is_busy_and_a_nested_one_is_callable() {
        let own = Cell::new(0u64);
        let answer = Cell::new(None);
        let mut closure = |_: &mut dyn Any| answer.set(Some(call(own.get(), &mut ())));
        lend(&mut closure, |token| {
            own.set(token);
            assert_eq!(call(token, &mut ()), Ok(()));
        });
        assert_eq!(answer.get(), Some(Err(CallError::Busy)));

        let inner_calls = Cell::new(0);
        let mut inner = |_: &mut dyn Any| inner_calls.set(inner_calls.get() + 1);
        lend(&mut inner, |inner_token| {
            let mut outer = |_: &mut dyn Any| answer.set(Some(call(inner_token, &mut ())));
            lend(&mut outer, |outer_token| assert_eq!(call(outer_token, &mut ()), Ok(())));
        });
        assert_eq!((answer.get(), inner_calls.get()), (Some(Ok(())), 1));
    }
}
