//! [`RwLock`]: a drop-in `std::sync::RwLock`.

use super::guard::{RwLockReadGuard, RwLockWriteGuard};
use super::{LockResult, MAX_READERS};
use crate::blocking_shell::{lock_struct, lock_traits};

lock_struct! {
    /// Wrapper for [`std::sync::RwLock`]: a reader-writer lock with poisoning, whose every
    /// acquisition is visible to lockscope.
    ///
    /// Same API, same behaviour: the lock is std's own (on Linux a waiting writer blocks new
    /// readers), poisoning included (a panic while a write guard is held poisons the lock). The
    /// detector models that policy: a `read` inside a `read` on one thread is reported as
    /// `nested-acquire` (it deadlocks as soon as a writer queues between them), a `write` inside
    /// any access as a certain self-deadlock. The `kind` label is `blocking_rwlock`.
    ///
    /// ```
    /// use lockscope::std::sync::RwLock;
    ///
    /// let config = RwLock::named("config", String::from("v1"));
    /// assert_eq!(*config.read().unwrap(), "v1");
    /// config.write().unwrap().push('!');
    /// assert_eq!(*config.read().unwrap(), "v1!");
    /// ```
    pub struct RwLock(std::sync::RwLock<T>, BlockingRwLock, MAX_READERS, t);

    /// Wrapper for [`std::sync::RwLock::new`]: `const`; named after the caller's location,
    /// registered with the detector on first use.
    ///
    /// ```
    /// use lockscope::std::sync::RwLock;
    /// static R: RwLock<u32> = RwLock::new(1);
    /// assert_eq!(*R.read().unwrap(), 1);
    /// ```
    fn new;

    /// An rwlock named `name` in spans, metrics and reports (lockscope addition); see
    /// [`Mutex::named`](super::Mutex::named).
    ///
    /// ```
    /// let r = lockscope::std::sync::RwLock::named("routes", ());
    /// assert_eq!(r.name(), "routes");
    /// ```
    fn named;

    /// Wrapper for [`std::sync::RwLock::into_inner`].
    ///
    /// # Errors
    ///
    /// As std's: the value inside a [`PoisonError`](super::PoisonError) if the lock is
    /// poisoned.
    ///
    /// ```
    /// let r = lockscope::std::sync::RwLock::new(4);
    /// assert_eq!(r.into_inner().unwrap(), 4);
    /// ```
    fn into_inner -> LockResult<T>;
}

lock_methods! {
    impl RwLock {
        /// The name used in spans, metrics and reports (lockscope addition).
        ///
        /// ```
        /// let r = lockscope::std::sync::RwLock::named("routes", ());
        /// assert_eq!(r.name(), "routes");
        /// ```
        fn name;

        /// Wrapper for [`std::sync::RwLock::is_poisoned`].
        ///
        /// ```
        /// let r = lockscope::std::sync::RwLock::new(0);
        /// let _ = std::thread::scope(|s| {
        ///     s.spawn(|| {
        ///         let _w = r.write().unwrap();
        ///         panic!("poisons the lock");
        ///     })
        ///     .join()
        /// });
        /// assert!(r.is_poisoned());
        /// ```
        fn is_poisoned;

        /// Wrapper for [`std::sync::RwLock::clear_poison`].
        ///
        /// ```
        /// let r = lockscope::std::sync::RwLock::new(0);
        /// let _ = std::thread::scope(|s| {
        ///     s.spawn(|| {
        ///         let _w = r.write().unwrap();
        ///         panic!("poisons the lock");
        ///     })
        ///     .join()
        /// });
        /// r.clear_poison();
        /// assert!(r.read().is_ok());
        /// ```
        fn clear_poison;

        /// Wrapper for [`std::sync::RwLock::get_mut`]: no locking, nothing recorded.
        ///
        /// # Errors
        ///
        /// As std's: the reference inside a [`PoisonError`](super::PoisonError) if the lock is
        /// poisoned.
        ///
        /// ```
        /// let mut r = lockscope::std::sync::RwLock::new(1);
        /// *r.get_mut().unwrap() = 2;
        /// assert_eq!(*r.read().unwrap(), 2);
        /// ```
        fn get_mut;

        /// Wrapper for [`std::sync::RwLock::read`]. A `read` by a thread that already holds a
        /// read of this lock is reported as `nested-acquire`: it deadlocks as soon as a writer
        /// queues in between.
        ///
        /// # Errors
        ///
        /// As std's: a [`PoisonError`](super::PoisonError) carrying the guard if the lock is
        /// poisoned.
        ///
        /// # Panics
        ///
        /// As std's: it might panic if the current thread already holds the lock.
        ///
        /// ```
        /// let r = lockscope::std::sync::RwLock::new(1);
        /// let a = r.read().unwrap();
        /// let b = std::thread::scope(|s| s.spawn(|| *r.read().unwrap()).join().unwrap());
        /// assert_eq!(*a, b);
        /// ```
        fn read -> RwLockReadGuard: Shared;

        /// Wrapper for [`std::sync::RwLock::try_read`].
        ///
        /// # Errors
        ///
        /// As std's: [`TryLockError::WouldBlock`](super::TryLockError::WouldBlock) when a writer
        /// holds the lock, [`TryLockError::Poisoned`](super::TryLockError::Poisoned) (with the
        /// guard) when the lock was available but poisoned.
        ///
        /// ```
        /// let r = lockscope::std::sync::RwLock::new(());
        /// let w = r.write().unwrap();
        /// assert!(r.try_read().is_err());
        /// drop(w);
        /// assert!(r.try_read().is_ok());
        /// ```
        fn try_read;

        /// Wrapper for [`std::sync::RwLock::write`]. A write by a thread that holds any access
        /// to this lock is reported as `nested-acquire` (a certain self-deadlock).
        ///
        /// # Errors
        ///
        /// As std's: a [`PoisonError`](super::PoisonError) carrying the guard if the lock is
        /// poisoned.
        ///
        /// # Panics
        ///
        /// As std's: it might panic if the current thread already holds the lock.
        ///
        /// ```
        /// let r = lockscope::std::sync::RwLock::new(1);
        /// *r.write().unwrap() += 1;
        /// assert_eq!(*r.read().unwrap(), 2);
        /// ```
        fn write -> RwLockWriteGuard: Exclusive;

        /// Wrapper for [`std::sync::RwLock::try_write`].
        ///
        /// # Errors
        ///
        /// As [`try_read`](RwLock::try_read), when any guard holds the lock.
        ///
        /// ```
        /// use lockscope::std::sync::{RwLock, TryLockError};
        /// let r = RwLock::new(());
        /// let g = r.read().unwrap();
        /// assert!(matches!(r.try_write(), Err(TryLockError::WouldBlock)));
        /// drop(g);
        /// assert!(r.try_write().is_ok());
        /// ```
        fn try_write;
    }
}

lock_traits!("std::sync", RwLock,
    /// As std's: `data` (`<locked>` while locked exclusively) and `poisoned`. Not
    /// recorded as an acquisition.
);

crate::status::status_queries! {
    impl[T: ?Sized] RwLock<T> as "lockscope::std::sync::RwLock";
    prim: |l| l.cell.get();
    // As for std's Mutex: the books while the detector is on, else a `try_write`.
    is_locked: |l| crate::status::booked(l.cell.get(), false).unwrap_or_else(|| {
        matches!(l.inner.try_write(), Err(std::sync::TryLockError::WouldBlock))
    });
    can_lock: |l| !l.is_locked();
}

crate::level::declared_levels! {
    impl[T: ?Sized] RwLock<T> as "lockscope::std::sync::RwLock";
    prim: |l| l.cell.get();
}

impl<T: ?Sized> RwLock<T> {
    /// Whether a read could be taken now: no writer holds the lock (lockscope addition). A
    /// racy snapshot: see [`status`](crate::status). It reads lockscope's books while the
    /// detector is on, else tries a read and releases it at once.
    ///
    /// ```
    /// let l = lockscope::std::sync::RwLock::new(1);
    /// let _r = l.read().unwrap();
    /// assert!(l.can_read() && !l.can_lock());
    /// ```
    pub fn can_read(&self) -> bool {
        match crate::status::booked(self.cell.get(), true) {
            Some(written) => !written,
            None => !matches!(
                self.inner.try_read(),
                Err(std::sync::TryLockError::WouldBlock)
            ),
        }
    }
}
