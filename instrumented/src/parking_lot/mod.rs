//! Drop-in replacements for `parking_lot::{Mutex, RwLock, ReentrantMutex, Condvar}`
//! (parking_lot 0.12).
//!
//! Swap `use parking_lot::{Mutex, RwLock};` for `use lockscope::parking_lot::{Mutex, RwLock};`
//! and nothing else changes: the same methods (timed `try_*_for`/`try_*_until` forms,
//! `read_recursive`, upgradable reads, `unlocked`, `bump`, `unlock_fair`, `map`, ...), the same
//! guards, the same trait impls (guards stay `!Send` unless parking_lot's `send_guard` feature
//! is on), the same `const` constructors. Each type wraps the real parking_lot primitive, so
//! fairness, parking and timeouts are parking_lot's own.
//!
//! What you gain: every acquisition emits an `acquire` span on target `lockscope` with
//! `kind = "blocking_mutex"` or `"blocking_rwlock"`, feeds per-primitive statistics, and
//! enters the same wait-for and lock-order graphs as the `lockscope::tokio` locks, so a
//! deadlock that crosses a thread blocked on a parking_lot mutex and a task waiting on a
//! tokio one is found and reported as one. A contended wait on an async runtime's worker
//! thread, and a guard held across an `.await`, are reported as `blocking-in-async`.
//!
//! ```
//! use lockscope::parking_lot::{Mutex, RwLock}; // was: use parking_lot::{Mutex, RwLock};
//!
//! let cache = RwLock::named("cache", vec![1, 2]);
//! let hits = Mutex::new(0u64);
//! if cache.read().contains(&2) {
//!     *hits.lock() += 1;
//! }
//! assert_eq!(*hits.lock(), 1);
//! ```
//!
//! With the `arc_lock` feature, `lock_arc`, `read_arc`, `write_arc`, `upgradable_read_arc`
//! (and their `try_`/timed forms) return `ArcMutexGuard` and friends, recorded as the borrowed
//! forms are. (`ReentrantMutex::lock_arc` is not wrapped yet.)
//!
//! lockscope adds `named(..)` constructors and `name()`. The detector's books follow every
//! method: a [`Condvar`] wait releases the hold while the thread sleeps and records a new one
//! when the mutex is re-taken; [`MutexGuard::unlocked`] and friends release and re-take it;
//! an upgrade is a wait for write access by the holder of the upgradable read; a
//! `ReentrantMutex` re-entry by its owner thread is recorded as such and never reported.
//!
//! # What the books cannot see
//!
//! - A guard given to `std::mem::forget` keeps its hold in the books for good (a later
//!   `force_unlock` cannot find it); use the guards' `leak` instead, which releases it.
//! - Locking or unlocking through `raw()` bypasses the books entirely.
//! - The waits inside `bump` and inside a [`Condvar`]'s re-lock are not recorded as waits
//!   (the re-taken hold is).

// First: the guard and lock macros, for the modules below.
#[macro_use]
mod guard;
#[macro_use]
mod lock;

#[cfg(feature = "arc_lock")]
mod arc_guard;
#[cfg(feature = "arc_lock")]
mod arc_lock;
mod condvar;
#[cfg(any(unix, windows))]
mod global;
mod keyed;
mod multilock;
mod mutex;
mod mutex_guard;
mod remutex;
mod remutex_guard;
mod rwlock;
mod rwlock_read_guard;
mod rwlock_upgradable_guard;
mod rwlock_write_guard;

#[cfg(feature = "arc_lock")]
pub use arc_guard::{
    ArcGuard, ArcMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard, ArcRwLockWriteGuard,
    Excl, Read, Upgradable, Write,
};
pub use condvar::Condvar;
#[cfg(any(unix, windows))]
pub use global::{GlobalLock, GlobalLockGuard, global_lock_dir};
pub use keyed::{KeyedMutex, KeyedMutexGuard};
pub use multilock::{Member, MemberGuard, MembersGuard, MultiLock, MultiLockError, MultiLockGuard};
pub use mutex::{Mutex, const_mutex};
pub use mutex_guard::{MappedMutexGuard, MutexGuard};
pub use remutex::{ReentrantMutex, const_reentrant_mutex};
pub use remutex_guard::{MappedReentrantMutexGuard, ReentrantMutexGuard};
pub use rwlock::{RwLock, const_rwlock};
pub use rwlock_read_guard::{MappedRwLockReadGuard, RwLockReadGuard};
pub use rwlock_upgradable_guard::RwLockUpgradableReadGuard;
pub use rwlock_write_guard::{MappedRwLockWriteGuard, RwLockWriteGuard};

/// The rest of parking_lot, passed through unchanged so that a whole `use parking_lot::{..}`
/// line swaps: these are not instrumented (lockscope does not see a [`FairMutex`] or a
/// [`Once`]), and [`lock_api`] is there for `RawMutex::INIT` and trait methods on `raw()`.
pub use parking_lot::{
    FairMutex, FairMutexGuard, MappedFairMutexGuard, Once, OnceState, RawFairMutex,
    const_fair_mutex, lock_api,
};
/// parking_lot's own types that appear in the wrappers' signatures, passed through unchanged
/// (the raw types are not instrumented: locking through them bypasses lockscope).
pub use parking_lot::{RawMutex, RawRwLock, RawThreadId, WaitTimeoutResult};

use lockscope_detector::__private::hooks::{self, Mode};
use lockscope_detector::__private::prim::Prim;
use lockscope_detector::__private::{actor, held};

// Shared with every blocking wrapper; the submodules import them from here.
use crate::blocking_shell::{acq, blocking, tried};

/// Whether the current thread or task holds `prim` in a way `pred` accepts, by lockscope's
/// books (the current thread's table). With nothing held on this thread (the common case) it
/// costs one thread-local read.
#[inline]
fn holds_here(prim: &Prim, pred: impl Fn(Mode) -> bool) -> bool {
    hooks::enabled() && held::any_here() && holds_here_scan(prim, &pred)
}

#[inline(never)]
fn holds_here_scan(prim: &Prim, pred: &dyn Fn(Mode) -> bool) -> bool {
    let me = actor::current().as_u64();
    let id = prim.id().0;
    let mut found = false;
    held::for_each_mine(me, |h| {
        if h.prim == id && pred(h.mode) {
            found = true;
        }
    });
    found
}

/// Whether the current thread or task already holds `prim` with shared access (a read, a
/// recursive read or an upgradable read): then a `read_recursive` is a re-entry that cannot
/// wait, and must not count as a nested acquisition.
#[inline]
fn holds_shared_here(prim: &Prim) -> bool {
    holds_here(prim, |m| !m.is_exclusive())
}

/// parking_lot's reader limit (its state word counts readers from bit 5, `ONE_READER`): the
/// capacity of a blocking rwlock in the detector's books.
const MAX_READERS: u64 = (usize::MAX >> 5) as u64;
