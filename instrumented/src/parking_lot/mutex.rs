//! [`Mutex`]: a drop-in `parking_lot::Mutex`.

use std::time::{Duration, Instant};

use super::RawMutex;
use super::mutex_guard::MutexGuard;
use crate::blocking_shell::{lock_struct, lock_traits};

lock_struct! {
    /// Wrapper for [`parking_lot::Mutex`]: a mutual-exclusion lock that blocks the thread, whose
    /// every acquisition is visible to lockscope.
    ///
    /// Same API, same behaviour: the lock is parking_lot's own (eventually fair, with
    /// [`MutexGuard::unlock_fair`] for a direct hand-off), and `new` is a `const fn` usable in
    /// `static`s. lockscope adds a name ([`Mutex::named`], else the creation site), attribution of
    /// each acquisition to its thread or task and call site, and the detector's findings: a
    /// deadlock among threads (and tasks), a lock-order inversion, a wait on an async runtime's
    /// worker thread (`blocking-in-async`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use lockscope::parking_lot::Mutex;
    ///
    /// let counter = Arc::new(Mutex::named("counter", 0));
    /// let c = counter.clone();
    /// std::thread::spawn(move || *c.lock() += 1).join().unwrap();
    /// assert_eq!(*counter.lock(), 1);
    /// ```
    pub struct Mutex(pub(super) parking_lot::Mutex<T>, BlockingMutex, 1, val);

    /// Wrapper for [`parking_lot::Mutex::new`]: `const`, so usable in `static`s. The mutex is
    /// named after the caller's location (`path/to/file.rs:LINE`) and registers with the
    /// detector on first use.
    ///
    /// ```
    /// use lockscope::parking_lot::Mutex;
    /// static COUNT: Mutex<u32> = Mutex::new(0);
    /// *COUNT.lock() += 1;
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
    /// let m = lockscope::parking_lot::Mutex::named("sessions", ());
    /// assert_eq!(m.name(), "sessions");
    /// ```
    fn named;

    /// Wrapper for [`parking_lot::Mutex::into_inner`].
    ///
    /// ```
    /// let m = lockscope::parking_lot::Mutex::new(vec![1]);
    /// assert_eq!(m.into_inner(), vec![1]);
    /// ```
    fn into_inner -> T;

    /// Wrapper for [`parking_lot::const_mutex`]: a mutex usable in `static`s, named after the
    /// caller's location; it registers with the detector on first use.
    ///
    /// ```
    /// use lockscope::parking_lot::{Mutex, const_mutex};
    /// static LOG: Mutex<Vec<u32>> = const_mutex(Vec::new());
    /// LOG.lock().push(1);
    /// assert_eq!(LOG.lock().len(), 1);
    /// ```
    const fn const_mutex;

    /// Wrapper for [`lock_api::Mutex::const_new`](parking_lot::lock_api::Mutex::const_new):
    /// a mutex over a given raw mutex, named after the caller's location.
    ///
    /// ```
    /// use lockscope::parking_lot::{Mutex, RawMutex};
    /// use parking_lot::lock_api::RawMutex as _;
    /// static M: Mutex<u8> = Mutex::const_new(RawMutex::INIT, 7);
    /// assert_eq!(*M.lock(), 7);
    /// ```
    fn const_new(raw_mutex: RawMutex);

    /// Wrapper for [`lock_api::Mutex::from_raw`](parking_lot::lock_api::Mutex::from_raw).
    ///
    /// ```
    /// use lockscope::parking_lot::{Mutex, RawMutex};
    /// use parking_lot::lock_api::RawMutex as _;
    /// let m = Mutex::from_raw(RawMutex::INIT, 1);
    /// assert_eq!(m.into_inner(), 1);
    /// ```
    fn from_raw;
}

lock_methods! {
    impl Mutex {
        /// The name used in spans, metrics and reports (lockscope addition).
        ///
        /// ```
        /// let m = lockscope::parking_lot::Mutex::named("db", ());
        /// assert_eq!(m.name(), "db");
        /// ```
        fn name = name();

        /// Wrapper for [`parking_lot::Mutex::lock`].
        ///
        /// lockscope records the wait (when the mutex is contended) and the hold; waiting on an
        /// async runtime's worker thread is reported as `blocking-in-async`, and a wait by a
        /// thread that already holds this mutex as `nested-acquire` before it deadlocks.
        ///
        /// ```
        /// let m = lockscope::parking_lot::Mutex::new(1);
        /// *m.lock() += 1;
        /// assert_eq!(*m.lock(), 2);
        /// ```
        fn lock = blocking_at(lock_at; MutexGuard: plain(Exclusive); try_lock);

        /// Wrapper for [`parking_lot::Mutex::try_lock`]. A failure is counted in
        /// `lockscope_try_failures_total`; `try_` forms add no lock-order edges.
        ///
        /// ```
        /// let m = lockscope::parking_lot::Mutex::new(());
        /// let g = m.try_lock().unwrap();
        /// assert!(m.try_lock().is_none());
        /// drop(g);
        /// ```
        fn try_lock = tried(MutexGuard: plain(Exclusive));

        /// Wrapper for [`parking_lot::Mutex::try_lock_for`]. A timeout is counted in
        /// `lockscope_timeouts_total`; while it waits, the waiter is in the books (a timed wait
        /// is never part of a deadlock: it gives up by itself).
        ///
        /// ```
        /// use std::time::Duration;
        /// let m = lockscope::parking_lot::Mutex::new(());
        /// let g = m.lock();
        /// assert!(m.try_lock_for(Duration::from_millis(1)).is_none());
        /// drop(g);
        /// assert!(m.try_lock_for(Duration::from_millis(1)).is_some());
        /// ```
        fn try_lock_for = timed(MutexGuard: plain(Exclusive); try_lock; timeout: Duration);

        /// Wrapper for [`parking_lot::Mutex::try_lock_until`]; see
        /// [`try_lock_for`](Mutex::try_lock_for).
        ///
        /// ```
        /// use std::time::{Duration, Instant};
        /// let m = lockscope::parking_lot::Mutex::new(());
        /// assert!(m.try_lock_until(Instant::now() + Duration::from_millis(1)).is_some());
        /// ```
        fn try_lock_until = timed(MutexGuard: plain(Exclusive); try_lock; timeout: Instant);

        /// Wrapper for [`parking_lot::Mutex::make_guard_unchecked`]. lockscope records a hold (as
        /// for a `try_` form: no lock-order edge), released when the guard drops.
        ///
        /// # Safety
        ///
        /// As parking_lot's: only when the current thread logically holds the lock (say, after
        /// [`MutexGuard::leak`]), and no other guard for that hold exists.
        ///
        /// ```
        /// use lockscope::parking_lot::{Mutex, MutexGuard};
        /// let m = Mutex::new(5);
        /// MutexGuard::leak(m.lock());
        /// // SAFETY: this thread holds the lock (leaked above) and no guard exists for it.
        /// let g = unsafe { m.make_guard_unchecked() };
        /// assert_eq!(*g, 5);
        /// drop(g);
        /// assert!(!m.is_locked());
        /// ```
        unsafe fn make_guard_unchecked = unchecked(MutexGuard: plain(Exclusive));

        /// Wrapper for [`parking_lot::Mutex::get_mut`]: no locking, nothing recorded.
        ///
        /// ```
        /// let mut m = lockscope::parking_lot::Mutex::new(1);
        /// *m.get_mut() = 2;
        /// assert_eq!(*m.lock(), 2);
        /// ```
        fn get_mut = get(&mut self -> &mut T);

        /// Wrapper for [`parking_lot::Mutex::is_locked`].
        ///
        /// ```
        /// let m = lockscope::parking_lot::Mutex::new(());
        /// let g = m.lock();
        /// assert!(m.is_locked());
        /// drop(g);
        /// assert!(!m.is_locked());
        /// ```
        fn is_locked = get(&self -> bool);

        /// Wrapper for [`parking_lot::Mutex::data_ptr`].
        ///
        /// ```
        /// let m = lockscope::parking_lot::Mutex::new(3);
        /// let g = m.lock();
        /// // SAFETY: the guard keeps every other access out while we read.
        /// assert_eq!(unsafe { *m.data_ptr() }, 3);
        /// drop(g);
        /// ```
        fn data_ptr = get(&self -> *mut T);

        /// Wrapper for [`parking_lot::Mutex::force_unlock`].
        ///
        /// # Safety
        ///
        /// As parking_lot's: only when the current thread logically owns a guard that was
        /// discarded. Discard it with [`MutexGuard::leak`], which releases lockscope's record of
        /// the hold too; a guard given to `std::mem::forget` stays held in lockscope's books.
        ///
        /// ```
        /// use lockscope::parking_lot::{Mutex, MutexGuard};
        /// let m = Mutex::new(1);
        /// *MutexGuard::leak(m.lock()) += 1;
        /// // SAFETY: the guard was leaked just above.
        /// unsafe { m.force_unlock() };
        /// assert_eq!(*m.lock(), 2);
        /// ```
        unsafe fn force_unlock = get(&self);

        /// Wrapper for [`parking_lot::Mutex::force_unlock_fair`]; see
        /// [`force_unlock`](Mutex::force_unlock).
        ///
        /// # Safety
        ///
        /// As [`force_unlock`](Mutex::force_unlock).
        ///
        /// ```
        /// use lockscope::parking_lot::{Mutex, MutexGuard};
        /// let m = Mutex::new(());
        /// MutexGuard::leak(m.lock());
        /// // SAFETY: the guard was leaked just above.
        /// unsafe { m.force_unlock_fair() };
        /// assert!(!m.is_locked());
        /// ```
        unsafe fn force_unlock_fair = get(&self);

        /// Wrapper for [`parking_lot::Mutex::raw`]. Locking or unlocking through the raw mutex
        /// bypasses lockscope: nothing is recorded.
        ///
        /// # Safety
        ///
        /// As parking_lot's: unlocking through it while a guard exists is undefined behaviour.
        ///
        /// ```
        /// use parking_lot::lock_api::RawMutex as _;
        /// let m = lockscope::parking_lot::Mutex::new(());
        /// // SAFETY: only reads the state.
        /// assert!(!unsafe { m.raw() }.is_locked());
        /// ```
        unsafe fn raw = get(&self -> &RawMutex);
    }
}

lock_traits!(
    "parking_lot",
    Mutex,
    /// As parking_lot's: `Mutex { data: .. }`, or `<locked>`. Not recorded as an acquisition.
);

crate::status::status_queries! {
    impl[T: ?Sized] Mutex<T> as "lockscope::parking_lot::Mutex";
    prim: |m| m.prim();
    can_lock: |m| !m.inner.is_locked();
}

crate::level::declared_levels! {
    impl[T: ?Sized] Mutex<T> as "lockscope::parking_lot::Mutex";
    prim: |m| m.prim();
}

impl<T> Mutex<T> {
    /// A mutex over `value` recorded as `cell`: a `KeyedMutex` key's, named and counted by
    /// its map.
    pub(super) fn with_cell(
        cell: lockscope_detector::__private::hooks::PrimCell,
        value: T,
    ) -> Self {
        Mutex {
            cell,
            inner: parking_lot::Mutex::new(value),
        }
    }
}
