//! [`Mutex`]: a drop-in `std::sync::Mutex`.

use super::LockResult;
use super::guard::MutexGuard;
use crate::blocking_shell::{lock_struct, lock_traits};

lock_struct! {
    /// Wrapper for [`std::sync::Mutex`]: a mutual-exclusion lock with poisoning, whose every
    /// acquisition is visible to lockscope.
    ///
    /// Same API, same behaviour: the lock is std's own, poisoning included (a thread that panics
    /// while holding the guard poisons the mutex; later `lock` calls return a
    /// [`PoisonError`](super::PoisonError) that still carries a guard), and `new` is a `const fn`
    /// usable in `static`s. lockscope adds a name ([`Mutex::named`], else the creation site),
    /// attribution of each acquisition to its thread or task and call site, and the detector's
    /// findings: a deadlock among threads (and tasks), a lock-order inversion, a wait on an async
    /// runtime's worker thread or a guard held across an `.await` (`blocking-in-async`). The
    /// `kind` label is `blocking_mutex`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use lockscope::std::sync::Mutex;
    ///
    /// let counter = Arc::new(Mutex::named("counter", 0));
    /// let c = counter.clone();
    /// std::thread::spawn(move || *c.lock().unwrap() += 1).join().unwrap();
    /// assert_eq!(*counter.lock().unwrap(), 1);
    /// ```
    pub struct Mutex(std::sync::Mutex<T>, BlockingMutex, 1, t);

    /// Wrapper for [`std::sync::Mutex::new`]: `const`, so usable in `static`s. The mutex is
    /// named after the caller's location (`path/to/file.rs:LINE`) and registers with the
    /// detector on first use.
    ///
    /// ```
    /// use lockscope::std::sync::Mutex;
    /// static COUNT: Mutex<u32> = Mutex::new(0);
    /// *COUNT.lock().unwrap() += 1;
    /// assert!(COUNT.name().contains(".rs:"));
    /// ```
    fn new;

    /// A mutex named `name` in spans, metrics and reports (lockscope addition). Registers with
    /// the detector at once.
    ///
    /// A name that is empty, longer than 200 bytes or holds control characters is replaced by
    /// a cleaned-up version and a `WARN` event says so; the mutex works either way.
    ///
    /// ```
    /// let m = lockscope::std::sync::Mutex::named("sessions", ());
    /// assert_eq!(m.name(), "sessions");
    /// ```
    fn named;

    /// Wrapper for [`std::sync::Mutex::into_inner`].
    ///
    /// # Errors
    ///
    /// As std's: the value inside a [`PoisonError`](super::PoisonError) if the mutex is
    /// poisoned.
    ///
    /// ```
    /// let m = lockscope::std::sync::Mutex::new(vec![1]);
    /// assert_eq!(m.into_inner().unwrap(), vec![1]);
    /// ```
    fn into_inner -> LockResult<T>;
}

lock_methods! {
    impl Mutex {
        /// The name used in spans, metrics and reports (lockscope addition).
        ///
        /// ```
        /// let m = lockscope::std::sync::Mutex::named("db", ());
        /// assert_eq!(m.name(), "db");
        /// ```
        fn name;

        /// Wrapper for [`std::sync::Mutex::is_poisoned`].
        ///
        /// ```
        /// use std::sync::Arc;
        /// let m = Arc::new(lockscope::std::sync::Mutex::new(0));
        /// let m2 = m.clone();
        /// let _ = std::thread::spawn(move || {
        ///     let _g = m2.lock().unwrap();
        ///     panic!("poisons the mutex");
        /// })
        /// .join();
        /// assert!(m.is_poisoned());
        /// ```
        fn is_poisoned;

        /// Wrapper for [`std::sync::Mutex::clear_poison`].
        ///
        /// ```
        /// use std::sync::Arc;
        /// let m = Arc::new(lockscope::std::sync::Mutex::new(0));
        /// let m2 = m.clone();
        /// let _ = std::thread::spawn(move || {
        ///     let _g = m2.lock().unwrap();
        ///     panic!("poisons the mutex");
        /// })
        /// .join();
        /// let mut g = m.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        /// *g = 1;
        /// drop(g);
        /// m.clear_poison();
        /// assert!(!m.is_poisoned());
        /// assert_eq!(*m.lock().unwrap(), 1);
        /// ```
        fn clear_poison;

        /// Wrapper for [`std::sync::Mutex::get_mut`]: no locking, nothing recorded.
        ///
        /// # Errors
        ///
        /// As std's: the reference inside a [`PoisonError`](super::PoisonError) if the mutex
        /// is poisoned.
        ///
        /// ```
        /// let mut m = lockscope::std::sync::Mutex::new(1);
        /// *m.get_mut().unwrap() = 2;
        /// assert_eq!(*m.lock().unwrap(), 2);
        /// ```
        fn get_mut;

        /// Wrapper for [`std::sync::Mutex::lock`].
        ///
        /// lockscope records the wait (when the mutex is contended) and the hold; waiting on an
        /// async runtime's worker thread is reported as `blocking-in-async`, and a wait by a
        /// thread that already holds this mutex as `nested-acquire` before it deadlocks.
        ///
        /// # Errors
        ///
        /// As std's: if the mutex is poisoned, a [`PoisonError`](super::PoisonError) carrying
        /// the guard (the mutex is held either way).
        ///
        /// # Panics
        ///
        /// As std's: it might panic if the current thread already holds the mutex.
        ///
        /// ```
        /// let m = lockscope::std::sync::Mutex::new(1);
        /// *m.lock().unwrap() += 1;
        /// assert_eq!(*m.lock().unwrap(), 2);
        /// ```
        fn lock -> MutexGuard: Exclusive;

        /// Wrapper for [`std::sync::Mutex::try_lock`]. A failure is counted in
        /// `lockscope_try_failures_total`; `try_` forms add no lock-order edges.
        ///
        /// # Errors
        ///
        /// As std's: [`TryLockError::WouldBlock`](super::TryLockError::WouldBlock) when the mutex
        /// is held, [`TryLockError::Poisoned`](super::TryLockError::Poisoned) (with the guard)
        /// when it was free but poisoned.
        ///
        /// ```
        /// use lockscope::std::sync::{Mutex, TryLockError};
        /// let m = Mutex::new(());
        /// let g = m.try_lock().unwrap();
        /// assert!(matches!(m.try_lock(), Err(TryLockError::WouldBlock)));
        /// drop(g);
        /// ```
        fn try_lock;
    }
}

lock_traits!("std::sync", Mutex,
    /// As std's: `data` (`<locked>` while locked exclusively) and `poisoned`. Not
    /// recorded as an acquisition.
);

crate::status::status_queries! {
    impl[T: ?Sized] Mutex<T> as "lockscope::std::sync::Mutex";
    prim: |m| m.cell.get();
    // std's mutex cannot be asked without locking it: the books answer while the detector is
    // on; off, a `try_lock` does (and unlocks at once).
    is_locked: |m| crate::status::booked(m.cell.get(), true).unwrap_or_else(|| {
        matches!(m.inner.try_lock(), Err(std::sync::TryLockError::WouldBlock))
    });
    can_lock: |m| !m.is_locked();
}

crate::level::declared_levels! {
    impl[T: ?Sized] Mutex<T> as "lockscope::std::sync::Mutex";
    prim: |m| m.cell.get();
}
