//! [`ReentrantMutex`]: an async mutex the task that holds it may lock again.

use std::fmt;
use std::ops::Deref;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use lockscope_detector::__private::actor;
use lockscope_detector::__private::hooks::{Acq, Mode, PrimCell, PrimKind};
use lockscope_detector::__private::prim::Prim;

use super::TryLockError;
use super::acquire::{never_closed, queue, try_take};
use super::guard::One;
use crate::probe::Token;

/// An async mutex that the task holding it may lock again (lockscope addition; tokio has
/// none): Dart's `Lock(reentrant: true)`. Another task waits, in tokio's FIFO order, as for a
/// [`Mutex`](super::Mutex). It gives `&T`, as parking_lot's `ReentrantMutex` does: use a
/// `Cell` or `RefCell` inside for mutation.
///
/// The owner is the task (outside a task, the thread), not the worker thread it runs on: a
/// guard held across an `.await` that moves the task to another worker is still the owner's,
/// and the same task may lock again after it. The depth is counted per lock; the lock is free
/// again when the owner's last guard is dropped, whichever guard that is.
///
/// For the detector, the first lock by a task is an ordinary acquisition (its wait, hold and
/// lock-order edges, at the caller's line); a re-entry by the owner is no acquisition at all,
/// so it is never a `nested-acquire`.
///
/// A guard is `Send` when `T` is `Sync`, so that a spawned task may hold it across `.await`s.
/// Do not move a guard into another task: the lock still counts its first task as the owner.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use lockscope::tokio::ReentrantMutex;
/// use std::sync::atomic::{AtomicU32, Ordering};
///
/// let tree = ReentrantMutex::named("tree", AtomicU32::new(0));
/// let outer = tree.lock().await;
/// tokio::task::yield_now().await;
/// let inner = tree.lock().await; // the same task: granted at once, never reported
/// inner.fetch_add(1, Ordering::Relaxed);
/// drop(inner);
/// assert_eq!(outer.load(Ordering::Relaxed), 1);
/// # }
/// ```
pub struct ReentrantMutex<T: ?Sized> {
    cell: PrimCell,
    sem: tokio::sync::Semaphore,
    /// The owner's actor id (`ActorId::as_u64`), 0 when free. Written by the owner only.
    owner: AtomicU64,
    /// Guards alive; the last one dropped releases the lock.
    depth: AtomicUsize,
    /// The first acquisition's record: set by the guard that took the lock, released by the
    /// one that frees it; between the two only the owner's guards touch it, and the depth
    /// count orders them.
    token: std::sync::Mutex<Token>,
    data: T,
}

// SAFETY: the value is shared as `&T` by one owner at a time (its guards), so moving the lock
// to another thread needs `T: Send`, and sharing it, as parking_lot's ReentrantMutex, too.
unsafe impl<T: ?Sized + Send> Send for ReentrantMutex<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send> Sync for ReentrantMutex<T> {}

/// A hold of a [`ReentrantMutex`]: `&T`. The owner's last guard dropped releases the lock.
#[must_use = "if unused the ReentrantMutex will immediately unlock"]
pub struct ReentrantMutexGuard<'a, T: ?Sized> {
    lock: &'a ReentrantMutex<T>,
}

// SAFETY: the guard gives `&T`: sending it (and the task holding it) to another thread is
// sharing `&T` across threads.
unsafe impl<T: ?Sized + Sync> Send for ReentrantMutexGuard<'_, T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Sync> Sync for ReentrantMutexGuard<'_, T> {}

impl<T> ReentrantMutex<T> {
    /// A reentrant mutex named after the caller's location (`path/to/file.rs:LINE`).
    ///
    /// ```
    /// let m = lockscope::tokio::ReentrantMutex::new(1);
    /// assert!(m.name().contains(".rs:"));
    /// ```
    #[track_caller]
    pub fn new(value: T) -> Self {
        Self::make(None, value)
    }

    /// A reentrant mutex named `name` in spans, metrics and reports.
    ///
    /// ```
    /// let m = lockscope::tokio::ReentrantMutex::named("config", ());
    /// assert_eq!(m.name(), "config");
    /// ```
    #[track_caller]
    pub fn named(name: impl AsRef<str>, value: T) -> Self {
        Self::make(Some(name.as_ref()), value)
    }

    #[track_caller]
    fn make(name: Option<&str>, value: T) -> Self {
        ReentrantMutex {
            cell: PrimCell::new(name.map(Into::into), PrimKind::Mutex, Location::caller(), 1),
            sem: super::untraced(|| tokio::sync::Semaphore::new(1)),
            owner: AtomicU64::new(0),
            depth: AtomicUsize::new(0),
            token: std::sync::Mutex::new(Token::none()),
            data: value,
        }
    }

    /// The value, taking the lock apart.
    ///
    /// ```
    /// assert_eq!(lockscope::tokio::ReentrantMutex::new(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        self.data
    }
}

impl<T: ?Sized> ReentrantMutex<T> {
    /// The name used in spans, metrics and reports.
    pub fn name(&self) -> &str {
        self.prim().name()
    }

    fn prim(&self) -> &Prim {
        self.cell.get()
    }

    /// Whether the current task (or thread) owns the lock: then it may lock again at once.
    fn owned_here(&self) -> Option<u64> {
        let me = actor::current().as_u64();
        (self.owner.load(Ordering::Acquire) == me).then_some(me)
    }

    /// A re-entry by the owner: one more guard, nothing recorded.
    fn reenter(&self) -> ReentrantMutexGuard<'_, T> {
        self.depth.fetch_add(1, Ordering::Relaxed);
        ReentrantMutexGuard { lock: self }
    }

    /// The first guard of a new owner, whose acquisition `token` records.
    fn first(&self, token: Token) -> ReentrantMutexGuard<'_, T> {
        *self.token.lock().unwrap_or_else(|e| e.into_inner()) = token;
        self.owner
            .store(actor::current().as_u64(), Ordering::Release);
        self.depth.store(1, Ordering::Relaxed);
        ReentrantMutexGuard { lock: self }
    }

    /// Locks it: at once if the current task owns it already, else waiting in FIFO order as
    /// [`Mutex::lock`](super::Mutex::lock) does.
    ///
    /// # Cancel safety
    ///
    /// As tokio's `Mutex::lock`: dropping the future gives up its place in the queue.
    #[track_caller]
    pub fn lock(&self) -> impl std::future::Future<Output = ReentrantMutexGuard<'_, T>> + '_ {
        let site = Location::caller();
        async move {
            if self.owned_here().is_some() {
                return self.reenter();
            }
            let token = never_closed(crate::probe::acquire!(
                self.prim(),
                Acq::new(site, 1, Mode::Exclusive),
                &self.sem,
                1,
                queue(&self.sem, One)
            ));
            self.first(token)
        }
    }

    /// Locks it if that needs no wait: the owner always can; another task only when free.
    ///
    /// # Errors
    ///
    /// [`TryLockError`] when another task holds it.
    ///
    /// ```
    /// let m = lockscope::tokio::ReentrantMutex::new(());
    /// let a = m.try_lock().unwrap();
    /// let b = m.try_lock().unwrap(); // the same thread (no task here): re-entry
    /// drop((a, b));
    /// ```
    #[track_caller]
    pub fn try_lock(&self) -> Result<ReentrantMutexGuard<'_, T>, TryLockError> {
        if self.owned_here().is_some() {
            return Ok(self.reenter());
        }
        let acq = Acq::new(Location::caller(), 1, Mode::Exclusive);
        match try_take(&self.sem, || self.prim(), acq, 1) {
            Ok(token) => Ok(self.first(token)),
            Err(_) => Err(super::try_lock_error()),
        }
    }

    /// A mutable reference to the value: no locking, the borrow proves no guard exists.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.data
    }
}

impl<T: ?Sized> Drop for ReentrantMutexGuard<'_, T> {
    fn drop(&mut self) {
        let lock = self.lock;
        if lock.depth.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        // The owner's last guard: the books first, then the lock, so that the detector never
        // sees two holders.
        lock.owner.store(0, Ordering::Release);
        let mut token = std::mem::take(&mut *lock.token.lock().unwrap_or_else(|e| e.into_inner()));
        token.release(lock.prim());
        lock.sem.add_permits(1);
    }
}

impl<T: ?Sized> Deref for ReentrantMutexGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.lock.data
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for ReentrantMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized> fmt::Debug for ReentrantMutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReentrantMutex")
            .field("name", &self.name())
            .field("depth", &self.depth.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

crate::status::status_queries! {
    impl[T: ?Sized] ReentrantMutex<T> as "lockscope::tokio::ReentrantMutex";
    prim: |m| m.prim();
    is_locked: |m| m.sem.available_permits() == 0;
    // The owner may always enter again.
    can_lock: |m| m.sem.available_permits() > 0 || m.owned_here().is_some();
}

crate::level::declared_levels! {
    impl[T: ?Sized] ReentrantMutex<T> as "lockscope::tokio::ReentrantMutex";
    prim: |m| m.prim();
}
