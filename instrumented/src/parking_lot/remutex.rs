//! [`ReentrantMutex`]: a drop-in `parking_lot::ReentrantMutex`.

use std::panic::Location;
use std::time::{Duration, Instant};

use lockscope_detector::__private::hooks::{self, Acq, Mode};

use super::remutex_guard::ReentrantMutexGuard;
use super::{RawMutex, RawThreadId, acq};
use crate::blocking_shell::{lock_struct, lock_traits};

lock_struct! {
    /// Wrapper for [`parking_lot::ReentrantMutex`]: a mutex the thread that holds it may lock
    /// again, whose every acquisition is visible to lockscope.
    ///
    /// A re-entry by the owner thread is recorded as such (checked with
    /// [`is_owned_by_current_thread`](ReentrantMutex::is_owned_by_current_thread) before
    /// locking): it never waits, so it is never reported as a nested acquisition and adds no
    /// lock-order edge. Waits by other threads enter the detector's graphs as for a
    /// [`Mutex`](super::Mutex); the `kind` label is `blocking_mutex`.
    ///
    /// ```
    /// use lockscope::parking_lot::ReentrantMutex;
    /// use std::cell::RefCell;
    ///
    /// let m = ReentrantMutex::named("config", RefCell::new(1));
    /// let outer = m.lock();
    /// let inner = m.lock(); // same thread: fine, never reported
    /// *inner.borrow_mut() += 1;
    /// drop(inner);
    /// assert_eq!(*outer.borrow(), 2);
    /// ```
    pub struct ReentrantMutex(pub(super) parking_lot::ReentrantMutex<T>, BlockingReentrantMutex, 1, val);

    /// Wrapper for [`parking_lot::ReentrantMutex::new`]: `const`; named after the caller's
    /// location, registered with the detector on first use.
    ///
    /// ```
    /// use lockscope::parking_lot::ReentrantMutex;
    /// static R: ReentrantMutex<()> = ReentrantMutex::new(());
    /// let _g = R.lock();
    /// assert!(R.is_owned_by_current_thread());
    /// ```
    fn new;

    /// A reentrant mutex named `name` in spans, metrics and reports (lockscope addition);
    /// see [`Mutex::named`](super::Mutex::named).
    ///
    /// ```
    /// let m = lockscope::parking_lot::ReentrantMutex::named("tree", ());
    /// assert_eq!(m.name(), "tree");
    /// ```
    fn named;

    /// Wrapper for [`parking_lot::ReentrantMutex::into_inner`].
    ///
    /// ```
    /// let m = lockscope::parking_lot::ReentrantMutex::new(4);
    /// assert_eq!(m.into_inner(), 4);
    /// ```
    fn into_inner -> T;

    /// Wrapper for [`parking_lot::const_reentrant_mutex`]: usable in `static`s, named after the
    /// caller's location; it registers with the detector on first use.
    ///
    /// ```
    /// use lockscope::parking_lot::{ReentrantMutex, const_reentrant_mutex};
    /// static R: ReentrantMutex<u8> = const_reentrant_mutex(1);
    /// let _a = R.lock();
    /// assert_eq!(*R.lock(), 1);
    /// ```
    const fn const_reentrant_mutex;

    /// Wrapper for
    /// [`lock_api::ReentrantMutex::const_new`](parking_lot::lock_api::ReentrantMutex::const_new).
    ///
    /// ```
    /// use lockscope::parking_lot::{RawMutex, RawThreadId, ReentrantMutex};
    /// use parking_lot::lock_api::{GetThreadId as _, RawMutex as _};
    /// static R: ReentrantMutex<u8> = ReentrantMutex::const_new(RawMutex::INIT, RawThreadId::INIT, 2);
    /// assert_eq!(*R.lock(), 2);
    /// ```
    fn const_new(raw_mutex: RawMutex, get_thread_id: RawThreadId);

    /// Wrapper for
    /// [`lock_api::ReentrantMutex::from_raw`](parking_lot::lock_api::ReentrantMutex::from_raw).
    ///
    /// ```
    /// use lockscope::parking_lot::{RawMutex, RawThreadId, ReentrantMutex};
    /// use parking_lot::lock_api::{GetThreadId as _, RawMutex as _};
    /// let m = ReentrantMutex::from_raw(RawMutex::INIT, RawThreadId::INIT, 2);
    /// assert_eq!(m.into_inner(), 2);
    /// ```
    fn from_raw;
}

impl<T: ?Sized> ReentrantMutex<T> {
    /// The acquisition at `site` (in `mode`: `Exclusive`): a re-entry when this thread owns
    /// the mutex already.
    #[inline]
    pub(super) fn acq(&self, site: &'static Location<'static>, mode: Mode) -> Acq {
        let a = acq(site, mode);
        if hooks::enabled() && self.inner.is_owned_by_current_thread() {
            a.with_flags(hooks::REENTRY)
        } else {
            a
        }
    }
}

lock_methods! {
    impl ReentrantMutex {
        /// The name used in spans, metrics and reports (lockscope addition).
        ///
        /// ```
        /// let m = lockscope::parking_lot::ReentrantMutex::named("tree", ());
        /// assert_eq!(m.name(), "tree");
        /// ```
        fn name = name();

        /// Wrapper for [`parking_lot::ReentrantMutex::lock`]. A re-entry by the owner thread is
        /// recorded as one and never reported; see the type docs.
        ///
        /// ```
        /// let m = lockscope::parking_lot::ReentrantMutex::new(1);
        /// let a = m.lock();
        /// let b = m.lock();
        /// assert_eq!(*a + *b, 2);
        /// ```
        fn lock = blocking_at(lock_at; ReentrantMutexGuard: acq(Exclusive); try_lock);

        /// Wrapper for [`parking_lot::ReentrantMutex::try_lock`].
        ///
        /// ```
        /// let m = lockscope::parking_lot::ReentrantMutex::new(());
        /// let _a = m.lock();
        /// assert!(m.try_lock().is_some()); // re-entry
        /// assert!(std::thread::scope(|s| s.spawn(|| m.try_lock().is_none()).join().unwrap()));
        /// ```
        fn try_lock = tried(ReentrantMutexGuard: acq(Exclusive));

        /// Wrapper for [`parking_lot::ReentrantMutex::try_lock_for`]; see
        /// [`Mutex::try_lock_for`](super::Mutex::try_lock_for).
        ///
        /// ```
        /// use std::time::Duration;
        /// let m = lockscope::parking_lot::ReentrantMutex::new(());
        /// assert!(m.try_lock_for(Duration::from_millis(1)).is_some());
        /// ```
        fn try_lock_for = timed(ReentrantMutexGuard: acq(Exclusive); try_lock; timeout: Duration);

        /// Wrapper for [`parking_lot::ReentrantMutex::try_lock_until`].
        ///
        /// ```
        /// use std::time::{Duration, Instant};
        /// let m = lockscope::parking_lot::ReentrantMutex::new(());
        /// assert!(m.try_lock_until(Instant::now() + Duration::from_millis(1)).is_some());
        /// ```
        fn try_lock_until = timed(ReentrantMutexGuard: acq(Exclusive); try_lock; timeout: Instant);

        /// Wrapper for [`parking_lot::ReentrantMutex::make_guard_unchecked`]; lockscope records
        /// a hold as for a `try_` form.
        ///
        /// # Safety
        ///
        /// As parking_lot's: only when the current thread logically holds the lock.
        ///
        /// ```
        /// let m = lockscope::parking_lot::ReentrantMutex::new(5);
        /// let g = m.lock();
        /// std::mem::forget(g);
        /// // SAFETY: this thread holds the lock (its guard was forgotten above).
        /// let g = unsafe { m.make_guard_unchecked() };
        /// assert_eq!(*g, 5);
        /// ```
        unsafe fn make_guard_unchecked = unchecked(ReentrantMutexGuard: acq(Exclusive));

        /// Wrapper for [`parking_lot::ReentrantMutex::get_mut`].
        ///
        /// ```
        /// let mut m = lockscope::parking_lot::ReentrantMutex::new(1);
        /// *m.get_mut() = 3;
        /// assert_eq!(*m.lock(), 3);
        /// ```
        fn get_mut = get(&mut self -> &mut T);

        /// Wrapper for [`parking_lot::ReentrantMutex::is_locked`].
        ///
        /// ```
        /// let m = lockscope::parking_lot::ReentrantMutex::new(());
        /// assert!(!m.is_locked());
        /// ```
        fn is_locked = get(&self -> bool);

        /// Wrapper for [`parking_lot::ReentrantMutex::data_ptr`].
        ///
        /// ```
        /// let m = lockscope::parking_lot::ReentrantMutex::new(3);
        /// let _g = m.lock();
        /// // SAFETY: the guard keeps other threads out while we read.
        /// assert_eq!(unsafe { *m.data_ptr() }, 3);
        /// ```
        fn data_ptr = get(&self -> *mut T);

        /// Wrapper for [`parking_lot::ReentrantMutex::force_unlock`]; see
        /// [`Mutex::force_unlock`](super::Mutex::force_unlock).
        ///
        /// # Safety
        ///
        /// As parking_lot's: only when the current thread logically owns a guard that was
        /// discarded (use [`ReentrantMutexGuard`]s' drop, or keep the guard).
        ///
        /// ```
        /// let m = lockscope::parking_lot::ReentrantMutex::new(());
        /// let g = m.lock();
        /// std::mem::forget(g); // the hold stays in lockscope's books
        /// // SAFETY: the guard was forgotten just above.
        /// unsafe { m.force_unlock() };
        /// assert!(!m.is_locked());
        /// ```
        unsafe fn force_unlock = get(&self);

        /// Wrapper for [`parking_lot::ReentrantMutex::force_unlock_fair`].
        ///
        /// # Safety
        ///
        /// As [`force_unlock`](ReentrantMutex::force_unlock).
        ///
        /// ```
        /// let m = lockscope::parking_lot::ReentrantMutex::new(());
        /// std::mem::forget(m.lock());
        /// // SAFETY: the guard was forgotten just above.
        /// unsafe { m.force_unlock_fair() };
        /// assert!(!m.is_locked());
        /// ```
        unsafe fn force_unlock_fair = get(&self);

        /// Wrapper for [`parking_lot::ReentrantMutex::raw`]; the raw mutex bypasses lockscope.
        ///
        /// # Safety
        ///
        /// As parking_lot's.
        ///
        /// ```
        /// use parking_lot::lock_api::RawMutex as _;
        /// let m = lockscope::parking_lot::ReentrantMutex::new(());
        /// // SAFETY: only reads the state.
        /// assert!(!unsafe { m.raw() }.is_locked());
        /// ```
        unsafe fn raw = get(&self -> &RawMutex);

        /// Wrapper for [`parking_lot::ReentrantMutex::is_owned_by_current_thread`].
        ///
        /// ```
        /// let m = lockscope::parking_lot::ReentrantMutex::new(());
        /// let g = m.lock();
        /// assert!(m.is_owned_by_current_thread());
        /// drop(g);
        /// assert!(!m.is_owned_by_current_thread());
        /// ```
        fn is_owned_by_current_thread = get(&self -> bool);
    }
}

lock_traits!(
    "parking_lot",
    ReentrantMutex,
    /// As parking_lot's. Not recorded as an acquisition.
);

crate::status::status_queries! {
    impl[T: ?Sized] ReentrantMutex<T> as "lockscope::parking_lot::ReentrantMutex";
    prim: |m| m.prim();
    // The owner thread may always enter again.
    can_lock: |m| !m.inner.is_locked() || m.inner.is_owned_by_current_thread();
}

crate::level::declared_levels! {
    impl[T: ?Sized] ReentrantMutex<T> as "lockscope::parking_lot::ReentrantMutex";
    prim: |m| m.prim();
}
