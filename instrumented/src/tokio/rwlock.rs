//! [`RwLock`]: a drop-in `tokio::sync::RwLock`.

use std::cell::UnsafeCell;
use std::panic::Location;

use lockscope_detector::__private::hooks::{Mode, PrimCell, PrimKind};
use lockscope_detector::__private::prim::Prim;

use super::MAX_READS;
use super::acquire::{lock_forms, lock_traits};
use super::guard::{One, SemRef};
use super::rwlock_owned_write_guard::OwnedRwLockWriteGuard;
use super::rwlock_read_guard::{OwnedRwLockReadGuard, RwLockReadGuard};
use super::rwlock_write_guard::RwLockWriteGuard;
use crate::probe::Token;

/// Wrapper for [`tokio::sync::RwLock`]: an asynchronous reader-writer lock whose every
/// acquisition is visible to lockscope.
///
/// Same API and behaviour: tokio's FIFO semaphore with `max_readers` permits, a read takes
/// one and a write takes all, so the lock is write-preferring (a reader that arrives after a
/// queued writer waits behind it). That is why a read taken inside a read deadlocks as soon
/// as a writer queues between them: lockscope reports it as `nested-acquire`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let cache = lockscope::tokio::RwLock::named("cache", vec![1]);
/// {
///     let a = cache.read().await;
///     let b = cache.try_read().unwrap(); // readers share
///     assert_eq!(a.len() + b.len(), 2);
/// }
/// cache.write().await.push(2);
/// assert_eq!(*cache.read().await, [1, 2]);
/// # }
/// ```
pub struct RwLock<T: ?Sized> {
    pub(crate) cell: PrimCell,
    pub(crate) mr: u32,
    pub(crate) sem: tokio::sync::Semaphore,
    pub(crate) c: UnsafeCell<T>,
}

// SAFETY: as tokio's RwLock: writers get exclusive `&mut T`, readers shared `&T`.
unsafe impl<T> Send for RwLock<T> where T: ?Sized + Send {}
// SAFETY: as above; readers on several threads need T: Sync.
unsafe impl<T> Sync for RwLock<T> where T: ?Sized + Send + Sync {}

impl<T: ?Sized> RwLock<T> {
    #[inline]
    pub(crate) fn prim(&self) -> &Prim {
        self.cell.get()
    }

    /// Wrapper for [`tokio::sync::RwLock::new`], named after the caller's location.
    ///
    /// ```
    /// let lock = lockscope::tokio::RwLock::new(5);
    /// # drop(lock);
    /// ```
    #[track_caller]
    pub fn new(value: T) -> RwLock<T>
    where
        T: Sized,
    {
        Self::build(None, value, MAX_READS)
    }

    /// An rwlock named `name` in spans, metrics and reports (lockscope addition).
    ///
    /// ```
    /// let lock = lockscope::tokio::RwLock::named("config", 5);
    /// assert_eq!(lock.name(), "config");
    /// ```
    #[track_caller]
    pub fn named(name: impl AsRef<str>, value: T) -> RwLock<T>
    where
        T: Sized,
    {
        Self::build(Some(name.as_ref()), value, MAX_READS)
    }

    #[track_caller]
    fn build(name: Option<&str>, value: T, max_reads: u32) -> RwLock<T>
    where
        T: Sized,
    {
        RwLock {
            cell: PrimCell::new(
                name.map(Into::into),
                PrimKind::RwLock,
                Location::caller(),
                u64::from(max_reads),
            ),
            mr: max_reads,
            sem: super::untraced(|| tokio::sync::Semaphore::new(max_reads as usize)),
            c: UnsafeCell::new(value),
        }
    }

    /// Wrapper for [`tokio::sync::RwLock::with_max_readers`].
    ///
    /// # Panics
    ///
    /// If `max_reads` is 0 or bigger than `u32::MAX >> 3`, as tokio's.
    ///
    /// ```
    /// let lock = lockscope::tokio::RwLock::with_max_readers(5, 1024);
    /// # drop(lock);
    /// ```
    #[track_caller]
    pub fn with_max_readers(value: T, max_reads: u32) -> RwLock<T>
    where
        T: Sized,
    {
        assert_ne!(max_reads, 0, "a RwLock may not be created with 0 readers");
        assert!(
            max_reads <= MAX_READS,
            "a RwLock may not be created with more than {MAX_READS} readers"
        );
        Self::build(None, value, max_reads)
    }

    /// Wrapper for [`tokio::sync::RwLock::const_new`] (registers on first use).
    ///
    /// ```
    /// use lockscope::tokio::RwLock;
    /// static LOCK: RwLock<i32> = RwLock::const_new(5);
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() { assert_eq!(*LOCK.read().await, 5); }
    /// ```
    #[track_caller]
    pub const fn const_new(value: T) -> RwLock<T>
    where
        T: Sized,
    {
        Self::const_with_max_readers(value, MAX_READS)
    }

    /// Wrapper for [`tokio::sync::RwLock::const_with_max_readers`].
    ///
    /// # Panics
    ///
    /// If `max_reads` is 0 or bigger than `u32::MAX >> 3`.
    ///
    /// ```
    /// use lockscope::tokio::RwLock;
    /// static LOCK: RwLock<i32> = RwLock::const_with_max_readers(5, 1024);
    /// ```
    #[track_caller]
    pub const fn const_with_max_readers(value: T, max_reads: u32) -> RwLock<T>
    where
        T: Sized,
    {
        assert!(max_reads != 0, "a RwLock may not be created with 0 readers");
        assert!(max_reads <= MAX_READS);
        RwLock {
            cell: PrimCell::lazy(PrimKind::RwLock, Location::caller(), max_reads as u64),
            mr: max_reads,
            sem: tokio::sync::Semaphore::const_new(max_reads as usize),
            c: UnsafeCell::new(value),
        }
    }

    /// The name used in spans, metrics and reports (lockscope addition).
    pub fn name(&self) -> &str {
        self.prim().name()
    }

    /// The semaphore and the primitive: a borrowed guard's owner.
    #[inline]
    fn sem_ref(&self) -> SemRef<'_> {
        SemRef {
            sem: &self.sem,
            cell: &self.cell,
        }
    }

    fn read_guard(&self, token: Token) -> RwLockReadGuard<'_, T> {
        RwLockReadGuard::new(self.sem_ref(), self.c.get(), token)
    }

    fn write_guard(&self, token: Token) -> RwLockWriteGuard<'_, T> {
        RwLockWriteGuard::new(self.sem_ref(), self.mr, self.c.get(), token)
    }

    lock_forms! {
        |lock, token| Mode::Shared, One,
        lock.read_guard(token) => RwLockReadGuard<'_, T>,
        OwnedRwLockReadGuard::new(lock, token) => OwnedRwLockReadGuard<T>;

        /// Wrapper for [`tokio::sync::RwLock::read`].
        ///
        /// # Cancel safety
        ///
        /// As tokio's: FIFO order; a dropped future gives up its place (lockscope records
        /// `cancelled`).
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// let lock = lockscope::tokio::RwLock::new(1);
        /// assert_eq!(*lock.read().await, 1);
        /// # }
        /// ```
        fn read = async;

        /// Like [`read`](RwLock::read), but gives up after `timeout` (lockscope addition).
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
        /// use std::time::Duration;
        /// let lock = lockscope::tokio::RwLock::new(1);
        /// let _w = lock.write().await;
        /// assert!(lock.read_timeout(Duration::from_millis(5)).await.is_err());
        /// # }
        /// ```
        fn read_timeout = timed;

        /// Wrapper for [`tokio::sync::RwLock::blocking_read`].
        ///
        /// # Panics
        ///
        /// When called within an asynchronous execution context, as tokio's.
        ///
        /// ```
        /// let lock = lockscope::tokio::RwLock::new(1);
        /// assert_eq!(*lock.blocking_read(), 1);
        /// ```
        fn blocking_read = blocking;

        /// Wrapper for [`tokio::sync::RwLock::read_owned`].
        ///
        /// # Cancel safety
        ///
        /// As [`read`](RwLock::read).
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use std::sync::Arc;
        /// let lock = Arc::new(lockscope::tokio::RwLock::new(1));
        /// let g = lock.clone().read_owned().await;
        /// tokio::spawn(async move { assert_eq!(*g, 1) }).await.unwrap();
        /// # }
        /// ```
        fn read_owned = owned;

        /// Like [`read_owned`](RwLock::read_owned), but gives up after `timeout` (lockscope
        /// addition).
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
        /// let lock = Arc::new(lockscope::tokio::RwLock::new(1));
        /// let g = lock.clone().read_owned_timeout(Duration::from_millis(5)).await.unwrap();
        /// assert_eq!(*g, 1);
        /// # }
        /// ```
        fn read_owned_timeout = owned_timed;

        /// Wrapper for [`tokio::sync::RwLock::try_read`].
        ///
        /// # Errors
        ///
        /// [`TryLockError`](crate::tokio::TryLockError) if a writer holds the lock or is
        /// queued.
        ///
        /// ```
        /// let lock = lockscope::tokio::RwLock::new(1);
        /// assert_eq!(*lock.try_read().unwrap(), 1);
        /// ```
        fn try_read = try;

        /// Wrapper for [`tokio::sync::RwLock::try_read_owned`].
        ///
        /// # Errors
        ///
        /// [`TryLockError`](crate::tokio::TryLockError) if a writer holds the lock or is
        /// queued.
        ///
        /// ```
        /// use std::sync::Arc;
        /// let lock = Arc::new(lockscope::tokio::RwLock::new(1));
        /// assert_eq!(*lock.try_read_owned().unwrap(), 1);
        /// ```
        fn try_read_owned = try_owned;
    }

    lock_forms! {
        |lock, token| Mode::Exclusive, lock.mr,
        lock.write_guard(token) => RwLockWriteGuard<'_, T>,
        OwnedRwLockWriteGuard::new(lock, token) => OwnedRwLockWriteGuard<T>;

        /// Wrapper for [`tokio::sync::RwLock::write`].
        ///
        /// # Cancel safety
        ///
        /// As tokio's: FIFO order; a dropped future gives up its place.
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// let lock = lockscope::tokio::RwLock::new(1);
        /// *lock.write().await += 1;
        /// assert_eq!(*lock.read().await, 2);
        /// # }
        /// ```
        fn write = async;

        /// Like [`write`](RwLock::write), but gives up after `timeout` (lockscope addition).
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
        /// use std::time::Duration;
        /// let lock = lockscope::tokio::RwLock::new(1);
        /// let _r = lock.read().await;
        /// let err = lock.write_timeout(Duration::from_millis(5)).await.unwrap_err();
        /// assert!(err.to_string().contains("held by"));
        /// # }
        /// ```
        fn write_timeout = timed;

        /// Wrapper for [`tokio::sync::RwLock::blocking_write`].
        ///
        /// # Panics
        ///
        /// When called within an asynchronous execution context, as tokio's.
        ///
        /// ```
        /// let lock = lockscope::tokio::RwLock::new(1);
        /// *lock.blocking_write() = 2;
        /// assert_eq!(*lock.blocking_read(), 2);
        /// ```
        fn blocking_write = blocking;

        /// Wrapper for [`tokio::sync::RwLock::write_owned`].
        ///
        /// # Cancel safety
        ///
        /// As [`write`](RwLock::write).
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use std::sync::Arc;
        /// let lock = Arc::new(lockscope::tokio::RwLock::new(1));
        /// let mut g = lock.clone().write_owned().await;
        /// *g = 2;
        /// # }
        /// ```
        fn write_owned = owned;

        /// Like [`write_owned`](RwLock::write_owned), but gives up after `timeout` (lockscope
        /// addition).
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
        /// let lock = Arc::new(lockscope::tokio::RwLock::new(1));
        /// let g = lock.clone().write_owned_timeout(Duration::from_millis(5)).await.unwrap();
        /// assert_eq!(*g, 1);
        /// # }
        /// ```
        fn write_owned_timeout = owned_timed;

        /// Wrapper for [`tokio::sync::RwLock::try_write`].
        ///
        /// # Errors
        ///
        /// [`TryLockError`](crate::tokio::TryLockError) if anyone holds the lock.
        ///
        /// ```
        /// let lock = lockscope::tokio::RwLock::new(1);
        /// let r = lock.try_read().unwrap();
        /// assert!(lock.try_write().is_err());
        /// drop(r);
        /// ```
        fn try_write = try;

        /// Wrapper for [`tokio::sync::RwLock::try_write_owned`].
        ///
        /// # Errors
        ///
        /// [`TryLockError`](crate::tokio::TryLockError) if anyone holds the lock.
        ///
        /// ```
        /// use std::sync::Arc;
        /// let lock = Arc::new(lockscope::tokio::RwLock::new(1));
        /// let g = lock.clone().try_write_owned().unwrap();
        /// assert!(lock.try_write_owned().is_err());
        /// drop(g);
        /// ```
        fn try_write_owned = try_owned;
    }
}

lock_traits! {
    RwLock;
    /// Wrapper for [`tokio::sync::RwLock::get_mut`].
    ///
    /// ```
    /// let mut lock = lockscope::tokio::RwLock::new(1);
    /// *lock.get_mut() = 2;
    /// assert_eq!(lock.into_inner(), 2);
    /// ```
    fn get_mut;

    /// Wrapper for [`tokio::sync::RwLock::into_inner`].
    ///
    /// ```
    /// let lock = lockscope::tokio::RwLock::new(1);
    /// assert_eq!(lock.into_inner(), 1);
    /// ```
    fn into_inner;
}

crate::status::status_queries! {
    impl[T: ?Sized] RwLock<T> as "lockscope::tokio::RwLock";
    prim: |l| l.prim();
    is_locked: |l| l.sem.available_permits() < l.mr as usize;
    can_lock: |l| l.sem.available_permits() == l.mr as usize;
}

crate::level::declared_levels! {
    impl[T: ?Sized] RwLock<T> as "lockscope::tokio::RwLock";
    prim: |l| l.prim();
}

impl<T: ?Sized> RwLock<T> {
    /// Whether [`try_read`](RwLock::try_read) would succeed now: no writer holds the lock and
    /// a read permit is free (lockscope addition). A racy snapshot: see
    /// [`status`](crate::status).
    ///
    /// ```
    /// let l = lockscope::tokio::RwLock::new(1);
    /// let _r = l.try_read().unwrap();
    /// assert!(l.can_read() && !l.can_lock());
    /// ```
    pub fn can_read(&self) -> bool {
        self.sem.available_permits() > 0
    }
}
