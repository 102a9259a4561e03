//! Drop-in replacements for `std::sync::{Mutex, RwLock, Condvar}` and `std::sync::mpsc`.
//!
//! Swap `use std::sync::{Mutex, RwLock, Condvar};` for
//! `use lockscope::std::sync::{Mutex, RwLock, Condvar};` and nothing else changes: the same
//! methods, the same `LockResult`s and poisoning (a panic while a guard is held poisons the
//! lock; `lock()` then returns a [`PoisonError`] carrying the guard; `is_poisoned`,
//! `clear_poison`, `into_inner`, `get_mut` as std's), the same `const fn new`, the same trait
//! impls (`Debug` prints what std's prints, guards are `!Send`). Each type wraps the real std
//! primitive, so fairness, parking and poisoning are std's own. The error types are std's,
//! re-exported here so that a whole `use std::sync::{..}` line swaps.
//!
//! What you gain: every acquisition emits an `acquire` span on target `lockscope` with
//! `kind = "blocking_mutex"` or `"blocking_rwlock"`, feeds per-primitive statistics, and
//! enters the same wait-for and lock-order graphs as the `lockscope::tokio` and
//! `lockscope::parking_lot` locks. A deadlock between threads is reported as `deadlock`, locks
//! taken in opposite orders as `lock-order-inversion`, and a std mutex waited for on an async
//! runtime's worker thread, or held across an `.await`, as `blocking-in-async`: the mistake
//! tokio's docs warn about when they recommend `std::sync::Mutex` for short critical sections.
//!
//! ```
//! use std::sync::Arc;
//! use lockscope::std::sync::{Condvar, Mutex}; // was: use std::sync::{Condvar, Mutex};
//!
//! let pair = Arc::new((Mutex::named("ready", false), Condvar::new()));
//! let p = pair.clone();
//! let t = std::thread::spawn(move || {
//!     *p.0.lock().unwrap() = true;
//!     p.1.notify_one();
//! });
//! let (lock, cvar) = &*pair;
//! let ready = cvar.wait_while(lock.lock().unwrap(), |ready| !*ready).unwrap();
//! assert!(*ready);
//! # drop(ready);
//! # t.join().unwrap();
//! ```
//!
//! lockscope adds `named(..)` constructors and `name()`. A [`Condvar`] wait releases the
//! hold in the books while the thread sleeps and records a new one, at the wait's call site,
//! when the mutex is re-taken.
//!
//! # What the books cannot see
//!
//! - A guard given to `std::mem::forget` keeps its hold in the books for good (std cannot
//!   unlock such a mutex either).
//! - The waits inside a [`Condvar`]'s re-lock are not recorded as waits (the re-taken hold
//!   is).
//! - std's unstable lock APIs (`MappedMutexGuard`, `Mutex::set`, ...) are not wrapped until
//!   they are stable.

/// A std lock's methods, listed inside `impl Lock { .. }`, each with its docs: `name`,
/// `is_poisoned`, `clear_poison` and `get_mut` (pass-throughs, but for `name`, lockscope's),
/// then each blocking acquisition, with the guard and the mode recorded
/// (`fn lock -> Guard: Mode;`), followed by its `try_` form (`fn try_lock;`).
macro_rules! lock_methods {
    (impl $lock:ident {
        $(#[$name_doc:meta])* fn name;
        $(#[$is_poisoned_doc:meta])* fn is_poisoned;
        $(#[$clear_poison_doc:meta])* fn clear_poison;
        $(#[$get_mut_doc:meta])* fn get_mut;
        $($(#[$doc:meta])* fn $name:ident -> $guard:ident: $mode:ident;
        $(#[$try_doc:meta])* fn $try_name:ident;)*
    }) => {
        impl<T: ?Sized> $lock<T> {
            $(#[$name_doc])*
            pub fn name(&self) -> &str {
                self.cell.get().name()
            }

            $(#[$is_poisoned_doc])*
            #[inline]
            pub fn is_poisoned(&self) -> bool {
                self.inner.is_poisoned()
            }

            $(#[$clear_poison_doc])*
            #[inline]
            pub fn clear_poison(&self) {
                self.inner.clear_poison()
            }

            $(#[$get_mut_doc])*
            #[inline]
            pub fn get_mut(&mut self) -> $crate::std::sync::LockResult<&mut T> {
                self.inner.get_mut()
            }

            $(
                $(#[$doc])*
                #[inline]
                #[track_caller]
                pub fn $name(&self) -> $crate::std::sync::LockResult<$guard<'_, T>> {
                    let acq = $crate::std::sync::acq_here(::lockscope_detector::__private::hooks::Mode::$mode);
                    $crate::std::sync::locked(
                        &self.cell,
                        acq,
                        || self.inner.$try_name(),
                        || self.inner.$name(),
                        $guard::new,
                    )
                }

                $(#[$try_doc])*
                #[inline]
                #[track_caller]
                pub fn $try_name(&self) -> $crate::std::sync::TryLockResult<$guard<'_, T>> {
                    let acq = $crate::std::sync::acq_here(::lockscope_detector::__private::hooks::Mode::$mode);
                    $crate::std::sync::tried(&self.cell, acq, self.inner.$try_name(), $guard::new)
                }
            )*
        }
    };
}

mod condvar;
mod guard;
mod mutex;
mod rwlock;

pub mod mpsc;

pub use condvar::Condvar;
pub use guard::{MutexGuard, RwLockReadGuard, RwLockWriteGuard};
pub use mutex::Mutex;
pub use rwlock::RwLock;

/// std's own types that appear in the wrappers' signatures, passed through unchanged.
pub use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult, WaitTimeoutResult};

use std::panic::Location;

use lockscope_detector::__private::hooks::{Acq, Mode, PrimCell};
use lockscope_detector::__private::prim::Prim;

use crate::blocking_shell::{acq, blocking};
use crate::probe::{self, Token};

/// An acquisition in `mode` at the caller's location.
#[inline]
#[track_caller]
fn acq_here(mode: Mode) -> Acq {
    acq(Location::caller(), mode)
}

/// std's blocking lock result as the probe's fast path wants it: `None` means "would block";
/// a poisoned lock was still acquired.
#[inline]
fn fast<G>(r: TryLockResult<G>) -> Option<LockResult<G>> {
    match r {
        Ok(g) => Some(Ok(g)),
        Err(TryLockError::Poisoned(p)) => Some(Err(p)),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// A `LockResult` of std's guard as one of lockscope's guard, built by `wrap`: the poisoned
/// case carries lockscope's guard, as std's carries its own.
#[inline]
fn wrap_lock<G, W>(r: LockResult<G>, wrap: impl FnOnce(G) -> W) -> LockResult<W> {
    match r {
        Ok(g) => Ok(wrap(g)),
        Err(p) => Err(PoisonError::new(wrap(p.into_inner()))),
    }
}

/// A blocking acquisition of std's lock: `try_` is its `try_*` form (the probe's fast path),
/// `lock` its blocking form, `wrap` builds lockscope's guard from std's (poisoned or not).
#[inline(always)]
fn locked<'a, G, W>(
    cell: &'a PrimCell,
    acq: Acq,
    try_: impl FnMut() -> TryLockResult<G>,
    lock: impl FnOnce() -> LockResult<G>,
    wrap: impl FnOnce(&'a Prim, G, Token) -> W,
) -> LockResult<W> {
    let mut try_ = try_;
    let (r, token) = blocking(|| cell.get(), acq, || fast(try_()), lock);
    wrap_lock(r, |g| wrap(cell.get(), g, token))
}

/// A `try_` form of std's: records the hold (poisoned or not) or the give-up, and wraps the
/// guard with `wrap`.
#[inline]
fn tried<'a, G, W>(
    cell: &'a PrimCell,
    acq: Acq,
    r: TryLockResult<G>,
    wrap: impl FnOnce(&'a Prim, G, Token) -> W,
) -> TryLockResult<W> {
    let prim = cell.get();
    match fast(r) {
        Some(r) => Ok(wrap_lock(r, |g| {
            wrap(
                prim,
                g,
                probe::try_acquired::<lockscope_detector::__private::hooks::Threads>(|| prim, acq),
            )
        })?),
        None => {
            probe::try_failed(|| prim, acq);
            Err(TryLockError::WouldBlock)
        }
    }
}

/// std's reader limit on Linux (its futex rwlock counts readers in 30 bits, `MAX_READERS`):
/// the capacity of a std rwlock in the detector's books, where a write takes it all.
const MAX_READERS: u64 = (1 << 30) - 2;
