//! Drop-in replacements for `tokio::sync::{Mutex, RwLock, Semaphore, OnceCell, Notify, Barrier}`,
//! its `mpsc`, `oneshot`, `watch` and `broadcast` channels, and `tokio::spawn`.
//!
//! Swap `use tokio::sync::{Mutex, RwLock, Semaphore};` for
//! `use lockscope::tokio::{Mutex, RwLock, Semaphore};` and nothing else changes: every public
//! method of tokio 1.x's versions, the same guards, permits and errors, the same trait impls,
//! the same fairness (tokio's own FIFO semaphore does the queueing and waking, as inside
//! tokio's Mutex and RwLock), the same cancellation safety. What you gain: each acquisition
//! emits an `acquire` span on target `lockscope`, feeds per-primitive statistics, and enters
//! the detector's wait-for and lock-order graphs.
//!
//! [`OnceCell`] replaces `tokio::sync::OnceCell`: a caller of `get_or_init` that waits for a
//! running initialiser is then a wait for the initialiser's task (an initialiser that needs a
//! lock held by a task waiting for the cell is a `deadlock`).
//!
//! [`mpsc`], [`oneshot`], [`watch`] and [`broadcast`] replace tokio's channels: a send
//! waiting for capacity in a full bounded channel waits for the receiver's owner, a wait the
//! deadlock rule sees; a receive waiting is shown in the test-timeout dump.
//!
//! [`Notify`] and [`Barrier`] replace tokio's: a task waiting for a notification or at a
//! barrier is a wait the detector sees (an open one: who will notify or arrive is not known),
//! named in the test-timeout dump.
//!
//! [`spawn`] and the [`task`] module replace `tokio::spawn` and `tokio::task`: awaiting a
//! task's `JoinHandle` is then a wait the detector sees (a lock held while awaiting a task
//! that needs it is a `deadlock`).
//!
//! lockscope adds a few things of its own: `named(..)` constructors, timed forms
//! (`lock_timeout`, `read_timeout`, `write_timeout`, `acquire_timeout`, and owned variants)
//! whose [`TimeoutError`] says who holds the primitive, and `name()`.

mod acquire;
mod barrier;
pub mod broadcast;
mod chan_wait;
#[cfg(any(unix, windows))]
mod global;
mod guard;
mod join_set;
mod keyed;
pub mod mpsc;
mod multilock;
mod mutex;
mod mutex_guard;
mod notify;
mod once_cell;
pub mod oneshot;
mod owned;
mod remutex;
mod rwlock;
mod rwlock_owned_write_guard;
mod rwlock_read_guard;
mod rwlock_write_guard;
mod semaphore;
mod semaphore_acquire;
mod semaphore_permit;
pub mod task;
mod timeout;
pub mod watch;

pub use barrier::{Barrier, BarrierWaitResult};
#[cfg(any(unix, windows))]
pub use global::{GlobalLock, GlobalLockGuard};
pub use keyed::{KeyedMutex, KeyedMutexGuard};
pub use multilock::{Member, MemberGuard, MembersGuard, MultiLock, MultiLockError, MultiLockGuard};
pub use mutex::Mutex;
pub use mutex_guard::{MappedMutexGuard, MutexGuard, OwnedMappedMutexGuard, OwnedMutexGuard};
pub use notify::Notify;
pub use once_cell::OnceCell;
pub use remutex::{ReentrantMutex, ReentrantMutexGuard};
pub use rwlock::RwLock;
pub use rwlock_owned_write_guard::{OwnedRwLockMappedWriteGuard, OwnedRwLockWriteGuard};
pub use rwlock_read_guard::{OwnedRwLockReadGuard, RwLockReadGuard};
pub use rwlock_write_guard::{RwLockMappedWriteGuard, RwLockWriteGuard};
pub use semaphore::Semaphore;
pub use semaphore_permit::{OwnedSemaphorePermit, SemaphorePermit};
pub use task::spawn;
pub use timeout::TimeoutError;
/// tokio's own error types, passed through unchanged.
pub use tokio::sync::{AcquireError, TryAcquireError, TryLockError};
/// The rest of `tokio::sync`, passed through unchanged so that a whole `use tokio::sync::{..}`
/// line swaps. These are not instrumented: lockscope does not see a wait on a [`SetOnce`]
/// ([`mpsc`], [`oneshot`], [`watch`], [`broadcast`], [`Notify`], [`Barrier`] and
/// [`OnceCell`] are its own; [`SetError`] is [`OnceCell`]'s error).
pub use tokio::sync::{SetError, SetOnce, SetOnceError};

/// Named future types, as in `tokio::sync::futures`: [`Notify`]'s are lockscope's.
pub mod futures {
    pub use super::notify::{Notified, OwnedNotified};
}

/// Makes the tokio primitive inside a wrapper. Under `tokio_unstable`, tokio reports its own
/// primitives to tokio-console; the wrapper already is a console resource, by name, so the
/// inner one is made with tracing off rather than shown as a second, anonymous `Semaphore`.
/// Otherwise this is just `make()`.
#[cfg(tokio_unstable)]
pub(crate) fn untraced<T>(make: impl FnOnce() -> T) -> T {
    tracing::dispatcher::with_default(&tracing::Dispatch::none(), make)
}

/// Makes the tokio primitive inside a wrapper (see the `tokio_unstable` version).
#[cfg(not(tokio_unstable))]
#[inline]
pub(crate) fn untraced<T>(make: impl FnOnce() -> T) -> T {
    make()
}

/// An error value for a failed `try_lock`/`try_read`/`try_write`.
///
/// `tokio::sync::TryLockError` has no public constructor; this takes one from a tokio mutex
/// that is locked once and never released, which is exactly how tokio makes it.
#[cold]
pub(crate) fn try_lock_error() -> TryLockError {
    static LOCKED: std::sync::LazyLock<tokio::sync::Mutex<()>> = std::sync::LazyLock::new(|| {
        let m = untraced(|| tokio::sync::Mutex::new(()));
        // UNWRAP: a fresh mutex is unlocked.
        std::mem::forget(m.try_lock().expect("fresh mutex"));
        m
    });
    match LOCKED.try_lock() {
        Err(e) => e,
        // A locked-forever mutex cannot be acquired; keep the guard forgotten just in case.
        Ok(g) => {
            std::mem::forget(g);
            try_lock_error()
        }
    }
}

/// Panics exactly as tokio's `blocking_*` methods do when called from an async context.
#[track_caller]
pub(crate) fn assert_blocking_allowed() {
    let probe = tokio::sync::Mutex::new(());
    drop(probe.blocking_lock());
}

/// Blocks this thread until `f` completes, as tokio's `blocking_*` methods do (they poll the
/// async form on a parked thread). Written here rather than calling
/// `Semaphore::blocking_acquire` so that lockscope builds with tokio releases before 1.54,
/// which lack it. Callers check [`assert_blocking_allowed`] first, as tokio does.
pub(crate) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    fn fresh() -> Waker {
        Waker::from(std::sync::Arc::new(Unpark(std::thread::current())))
    }
    thread_local! {
        static WAKER: Waker = fresh();
    }
    let waker = WAKER.try_with(Waker::clone).unwrap_or_else(|_| fresh());
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(out) = f.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

/// tokio's maximum number of readers of an `RwLock` (`u32::MAX >> 3`).
pub(crate) const MAX_READS: u32 = u32::MAX >> 3;
