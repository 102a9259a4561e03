//! [`Mutex`]: a drop-in `tokio::sync::Mutex`.

use std::cell::UnsafeCell;
use std::panic::Location;
use std::sync::Arc;

use lockscope_detector::__private::hooks::{self, Acq, Mode, PrimCell, PrimKind};

use super::acquire::{blocking, lock_forms, lock_traits, never_closed};
use super::guard::One;
use super::mutex_guard::{MutexGuard, OwnedMutexGuard};

/// Wrapper for [`tokio::sync::Mutex`]: an asynchronous mutual-exclusion lock whose every
/// acquisition is visible to lockscope.
///
/// Same API, same behaviour: the lock is tokio's own fair FIFO semaphore with one permit (as
/// inside `tokio::sync::Mutex`), so waiters are served in order and a dropped `lock()`
/// future gives up its place. lockscope adds a name ([`Mutex::named`], else the creation
/// site), attribution of each acquisition to its task and call site, and the timed
/// [`lock_timeout`](Mutex::lock_timeout).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use lockscope::tokio::Mutex;
///
/// let balance = Arc::new(Mutex::named("balance", 0u64));
/// let b = balance.clone();
/// tokio::spawn(async move { *b.lock().await += 10 }).await.unwrap();
/// assert_eq!(*balance.lock().await, 10);
/// # }
/// ```
pub struct Mutex<T: ?Sized> {
    pub(crate) cell: PrimCell,
    pub(crate) sem: tokio::sync::Semaphore,
    pub(crate) c: UnsafeCell<T>,
}

// SAFETY: as tokio's Mutex: the semaphore grants one holder at a time, so sharing the Mutex
// only ever hands out `&mut T` to one thread; T must be Send to move between holders.
unsafe impl<T> Send for Mutex<T> where T: ?Sized + Send {}
// SAFETY: as above.
unsafe impl<T> Sync for Mutex<T> where T: ?Sized + Send {}

#[inline]
fn acq(site: &'static Location<'static>) -> Acq {
    Acq::new(site, 1, Mode::Exclusive)
}

impl<T: ?Sized> Mutex<T> {
    /// Wrapper for [`tokio::sync::Mutex::new`]. The mutex is named after the caller's
    /// location (`path/to/file.rs:LINE`).
    ///
    /// ```
    /// let lock = lockscope::tokio::Mutex::new(5);
    /// assert!(lock.name().ends_with(".rs:2") || lock.name().contains(".rs:"));
    /// ```
    #[track_caller]
    pub fn new(t: T) -> Self
    where
        T: Sized,
    {
        Mutex {
            cell: PrimCell::new(None, PrimKind::Mutex, Location::caller(), 1),
            sem: super::untraced(|| tokio::sync::Semaphore::new(1)),
            c: UnsafeCell::new(t),
        }
    }

    /// A mutex named `name` in spans, metrics and reports (lockscope addition).
    ///
    /// A name that is empty, longer than 200 bytes or holds control characters is replaced by
    /// a cleaned-up version and a `WARN` event says so; the mutex works either way.
    ///
    /// ```
    /// let lock = lockscope::tokio::Mutex::named("accounts", ());
    /// assert_eq!(lock.name(), "accounts");
    /// ```
    #[track_caller]
    pub fn named(name: impl AsRef<str>, t: T) -> Self
    where
        T: Sized,
    {
        Mutex {
            cell: PrimCell::new(
                Some(name.as_ref().into()),
                PrimKind::Mutex,
                Location::caller(),
                1,
            ),
            sem: super::untraced(|| tokio::sync::Semaphore::new(1)),
            c: UnsafeCell::new(t),
        }
    }

    /// Wrapper for [`tokio::sync::Mutex::const_new`]: usable in `static`s; registers with
    /// the detector on first use, named after the caller's location.
    ///
    /// ```
    /// use lockscope::tokio::Mutex;
    /// static LOCK: Mutex<i32> = Mutex::const_new(5);
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() { assert_eq!(*LOCK.lock().await, 5); }
    /// ```
    #[track_caller]
    pub const fn const_new(t: T) -> Self
    where
        T: Sized,
    {
        Mutex {
            cell: PrimCell::lazy(PrimKind::Mutex, Location::caller(), 1),
            sem: tokio::sync::Semaphore::const_new(1),
            c: UnsafeCell::new(t),
        }
    }

    /// The name used in spans, metrics and reports (lockscope addition).
    pub fn name(&self) -> &str {
        self.cell.get().name()
    }

    lock_forms! {
        |lock, token| Mode::Exclusive, One,
        MutexGuard::new(lock, token) => MutexGuard<'_, T>,
        OwnedMutexGuard::new(lock, token) => OwnedMutexGuard<T>;

        /// Wrapper for [`tokio::sync::Mutex::lock`].
        ///
        /// # Cancel safety
        ///
        /// As tokio's: FIFO order; dropping the future gives up its place in the queue (and
        /// lockscope records a `cancelled` event and removes the waiter from its books).
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// let m = lockscope::tokio::Mutex::new(1);
        /// *m.lock().await += 1;
        /// assert_eq!(*m.lock().await, 2);
        /// # }
        /// ```
        fn lock = async;

        /// Like [`lock`](Mutex::lock), but gives up after `timeout` (lockscope addition). The
        /// error names the mutex, how long it waited and who holds it. Counted in
        /// `lockscope_timeouts_total`.
        ///
        /// # Errors
        ///
        /// [`TimeoutError`](crate::tokio::TimeoutError) when the deadline passes first.
        ///
        /// # Panics
        ///
        /// Outside a tokio runtime with time enabled, like `tokio::time::timeout`.
        ///
        /// # Cancel safety
        ///
        /// As [`lock`](Mutex::lock).
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use std::time::Duration;
        /// let m = lockscope::tokio::Mutex::new(());
        /// assert!(m.lock_timeout(Duration::from_millis(5)).await.is_ok());
        /// # }
        /// ```
        fn lock_timeout = timed;

        /// Wrapper for [`tokio::sync::Mutex::blocking_lock`].
        ///
        /// # Panics
        ///
        /// When called within an asynchronous execution context, exactly as tokio's.
        ///
        /// ```
        /// let m = lockscope::tokio::Mutex::new(1);
        /// *m.blocking_lock() += 1;
        /// assert_eq!(*m.blocking_lock(), 2);
        /// ```
        fn blocking_lock = blocking;

        /// Wrapper for [`tokio::sync::Mutex::lock_owned`].
        ///
        /// # Cancel safety
        ///
        /// As [`lock`](Mutex::lock).
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use std::sync::Arc;
        /// let m = Arc::new(lockscope::tokio::Mutex::new(1));
        /// let mut g = m.clone().lock_owned().await;
        /// tokio::spawn(async move { *g += 1 }).await.unwrap();
        /// assert_eq!(*m.lock().await, 2);
        /// # }
        /// ```
        fn lock_owned = owned;

        /// Like [`lock_owned`](Mutex::lock_owned), but gives up after `timeout` (lockscope
        /// addition; see [`lock_timeout`](Mutex::lock_timeout)).
        ///
        /// # Errors
        ///
        /// [`TimeoutError`](crate::tokio::TimeoutError) when the deadline passes first.
        ///
        /// # Panics
        ///
        /// Outside a tokio runtime with time enabled.
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use std::{sync::Arc, time::Duration};
        /// let m = Arc::new(lockscope::tokio::Mutex::new(()));
        /// let _g = m.clone().lock_owned_timeout(Duration::from_millis(5)).await.unwrap();
        /// # }
        /// ```
        fn lock_owned_timeout = owned_timed;

        /// Wrapper for [`tokio::sync::Mutex::try_lock`].
        ///
        /// # Errors
        ///
        /// [`TryLockError`](crate::tokio::TryLockError) if the lock is held (counted in
        /// `lockscope_try_failures_total`).
        ///
        /// ```
        /// let m = lockscope::tokio::Mutex::new(1);
        /// let g = m.try_lock().unwrap();
        /// assert!(m.try_lock().is_err());
        /// drop(g);
        /// ```
        fn try_lock = try;

        /// Wrapper for [`tokio::sync::Mutex::try_lock_owned`].
        ///
        /// # Errors
        ///
        /// [`TryLockError`](crate::tokio::TryLockError) if the lock is held.
        ///
        /// ```
        /// use std::sync::Arc;
        /// let m = Arc::new(lockscope::tokio::Mutex::new(1));
        /// let g = m.clone().try_lock_owned().unwrap();
        /// assert!(m.clone().try_lock_owned().is_err());
        /// drop(g);
        /// ```
        fn try_lock_owned = try_owned;
    }

    /// Wrapper for [`tokio::sync::Mutex::blocking_lock_owned`].
    ///
    /// # Panics
    ///
    /// When called within an asynchronous execution context, exactly as tokio's.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let m = Arc::new(lockscope::tokio::Mutex::new(1));
    /// let g = m.clone().blocking_lock_owned();
    /// assert_eq!(*g, 1);
    /// ```
    #[track_caller]
    pub fn blocking_lock_owned(self: Arc<Self>) -> OwnedMutexGuard<T> {
        let acq = acq(Location::caller()).with_flags(hooks::MOVABLE);
        let token = never_closed(blocking(&self.sem, self.prim(), acq, 1));
        OwnedMutexGuard::new(self, token)
    }
}

lock_traits! {
    Mutex;
    /// Wrapper for [`tokio::sync::Mutex::get_mut`].
    ///
    /// ```
    /// let mut m = lockscope::tokio::Mutex::new(1);
    /// *m.get_mut() = 2;
    /// assert_eq!(*m.blocking_lock(), 2);
    /// ```
    fn get_mut;

    /// Wrapper for [`tokio::sync::Mutex::into_inner`].
    ///
    /// ```
    /// let m = lockscope::tokio::Mutex::new(1);
    /// assert_eq!(m.into_inner(), 1);
    /// ```
    fn into_inner;
}

impl<T: ?Sized> Mutex<T> {
    /// The detector's record (for guards).
    #[inline]
    pub(crate) fn prim(&self) -> &lockscope_detector::__private::prim::Prim {
        self.cell.get()
    }
}

crate::status::status_queries! {
    impl[T: ?Sized] Mutex<T> as "lockscope::tokio::Mutex";
    prim: |m| m.cell.get();
    is_locked: |m| m.sem.available_permits() == 0;
    can_lock: |m| m.sem.available_permits() > 0;
}

crate::level::declared_levels! {
    impl[T: ?Sized] Mutex<T> as "lockscope::tokio::Mutex";
    prim: |m| m.cell.get();
}
