//! [`RwLock`]: a drop-in `parking_lot::RwLock`.

use std::panic::Location;
use std::time::{Duration, Instant};

use lockscope_detector::__private::hooks::{self, Acq, Mode};

use super::lock_api::{RawRwLockUpgrade, RawRwLockUpgradeFair};
use super::rwlock_read_guard::RwLockReadGuard;
use super::rwlock_upgradable_guard::RwLockUpgradableReadGuard;
use super::rwlock_write_guard::RwLockWriteGuard;
use super::{MAX_READERS, RawRwLock, acq, holds_here};
use crate::blocking_shell::{lock_struct, lock_traits};

lock_struct! {
    /// Wrapper for [`parking_lot::RwLock`]: a reader-writer lock that blocks the thread, whose
    /// every acquisition is visible to lockscope.
    ///
    /// Same API, same behaviour: parking_lot's task-fair policy (a waiting writer blocks new
    /// readers, except [`read_recursive`](RwLock::read_recursive) while readers hold it),
    /// upgradable reads, timed forms. The detector models exactly that policy: a `read` inside a
    /// `read` on one thread is reported as `nested-acquire` (it deadlocks as soon as a writer
    /// queues between them), a `read_recursive` inside a read is not; an
    /// [`upgrade`](RwLockUpgradableReadGuard::upgrade) is a wait for write access by the holder
    /// of the upgradable read. The `kind` label is `blocking_rwlock`.
    ///
    /// ```
    /// use lockscope::parking_lot::RwLock;
    ///
    /// let config = RwLock::named("config", String::from("v1"));
    /// {
    ///     let a = config.read();
    ///     let b = config.read_recursive(); // never waits behind a writer
    ///     assert_eq!(*a, *b);
    /// }
    /// config.write().push('!');
    /// assert_eq!(*config.read(), "v1!");
    /// ```
    pub struct RwLock(pub(super) parking_lot::RwLock<T>, BlockingRwLock, MAX_READERS, val);

    /// Wrapper for [`parking_lot::RwLock::new`]: `const`; named after the caller's location,
    /// registered with the detector on first use.
    ///
    /// ```
    /// use lockscope::parking_lot::RwLock;
    /// static R: RwLock<u32> = RwLock::new(1);
    /// assert_eq!(*R.read(), 1);
    /// ```
    fn new;

    /// An rwlock named `name` in spans, metrics and reports (lockscope addition); see
    /// [`Mutex::named`](super::Mutex::named).
    ///
    /// ```
    /// let r = lockscope::parking_lot::RwLock::named("routes", ());
    /// assert_eq!(r.name(), "routes");
    /// ```
    fn named;

    /// Wrapper for [`parking_lot::RwLock::into_inner`].
    ///
    /// ```
    /// let r = lockscope::parking_lot::RwLock::new(4);
    /// assert_eq!(r.into_inner(), 4);
    /// ```
    fn into_inner -> T;

    /// Wrapper for [`parking_lot::const_rwlock`]: usable in `static`s, named after the caller's
    /// location; it registers with the detector on first use.
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, const_rwlock};
    /// static TABLE: RwLock<Vec<u8>> = const_rwlock(Vec::new());
    /// TABLE.write().push(1);
    /// assert_eq!(TABLE.read().len(), 1);
    /// ```
    const fn const_rwlock;

    /// Wrapper for [`lock_api::RwLock::const_new`](parking_lot::lock_api::RwLock::const_new).
    ///
    /// ```
    /// use lockscope::parking_lot::{RawRwLock, RwLock};
    /// use parking_lot::lock_api::RawRwLock as _;
    /// static R: RwLock<u8> = RwLock::const_new(RawRwLock::INIT, 3);
    /// assert_eq!(*R.read(), 3);
    /// ```
    fn const_new(raw_rwlock: RawRwLock);

    /// Wrapper for [`lock_api::RwLock::from_raw`](parking_lot::lock_api::RwLock::from_raw).
    ///
    /// ```
    /// use lockscope::parking_lot::{RawRwLock, RwLock};
    /// use parking_lot::lock_api::RawRwLock as _;
    /// let r = RwLock::from_raw(RawRwLock::INIT, 3);
    /// assert_eq!(r.into_inner(), 3);
    /// ```
    fn from_raw;
}

impl<T: ?Sized> RwLock<T> {
    /// The acquisition of a read (`mode`: `Shared` or `SharedRecursive`) at `site`. It is a
    /// re-entry (it cannot wait, so it is neither a nested acquisition nor a lock-order edge)
    /// when this thread already holds the lock in a way that lets it through: an upgradable
    /// read lets any read through (parking_lot's writers cannot claim the lock while it is
    /// held, so no writer can queue in between), and a read lets a recursive read through.
    #[inline]
    pub(super) fn read_acq(&self, site: &'static Location<'static>, mode: Mode) -> Acq {
        let a = acq(site, mode);
        let lets_through = |held: Mode| match held {
            Mode::Upgradable => true,
            Mode::Shared | Mode::SharedRecursive => mode == Mode::SharedRecursive,
            Mode::Exclusive | Mode::Permits => false,
        };
        if holds_here(self.prim(), lets_through) {
            a.with_flags(hooks::REENTRY)
        } else {
            a
        }
    }

    /// Unlocks an upgradable read (`unlocked` of its guard).
    ///
    /// # Safety
    ///
    /// As [`force_unlock_read`](RwLock::force_unlock_read), for an upgradable read.
    #[inline]
    pub(super) unsafe fn force_unlock_upgradable(&self) {
        // SAFETY: the caller's contract.
        unsafe { self.inner.raw().unlock_upgradable() }
    }

    /// As [`force_unlock_upgradable`](RwLock::force_unlock_upgradable), fair.
    ///
    /// # Safety
    ///
    /// As [`force_unlock_upgradable`](RwLock::force_unlock_upgradable).
    #[inline]
    pub(super) unsafe fn force_unlock_upgradable_fair(&self) {
        // SAFETY: the caller's contract.
        unsafe { self.inner.raw().unlock_upgradable_fair() }
    }
}

lock_methods! {
    impl RwLock {
        /// The name used in spans, metrics and reports (lockscope addition).
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::named("routes", ());
        /// assert_eq!(r.name(), "routes");
        /// ```
        fn name = name();

        /// Wrapper for [`parking_lot::RwLock::read`]. A `read` by a thread that already holds a
        /// read of this lock is reported as `nested-acquire`: with parking_lot's task-fair policy
        /// it deadlocks as soon as a writer queues in between (use
        /// [`read_recursive`](RwLock::read_recursive) there). Inside an upgradable read of the
        /// same thread it cannot wait, and is not reported.
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(1);
        /// let (a, b) = (r.read(), std::thread::scope(|s| s.spawn(|| *r.read()).join().unwrap()));
        /// assert_eq!(*a, b);
        /// ```
        fn read = blocking_at(read_at; RwLockReadGuard: read_acq(Shared); try_read);

        /// Wrapper for [`parking_lot::RwLock::try_read`].
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// let w = r.write();
        /// assert!(r.try_read().is_none());
        /// drop(w);
        /// assert!(r.try_read().is_some());
        /// ```
        fn try_read = tried(RwLockReadGuard: plain(Shared));

        /// Wrapper for [`parking_lot::RwLock::try_read_for`]; a timeout is counted in
        /// `lockscope_timeouts_total`.
        ///
        /// ```
        /// use std::time::Duration;
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// let w = r.write();
        /// assert!(r.try_read_for(Duration::from_millis(1)).is_none());
        /// ```
        fn try_read_for = timed(RwLockReadGuard: read_acq(Shared); try_read; timeout: Duration);

        /// Wrapper for [`parking_lot::RwLock::try_read_until`].
        ///
        /// ```
        /// use std::time::{Duration, Instant};
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// assert!(r.try_read_until(Instant::now() + Duration::from_millis(1)).is_some());
        /// ```
        fn try_read_until = timed(RwLockReadGuard: read_acq(Shared); try_read; timeout: Instant);

        /// Wrapper for [`parking_lot::RwLock::write`]. A write by a thread that holds any access
        /// to this lock is reported as `nested-acquire` (a certain self-deadlock).
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(1);
        /// *r.write() += 1;
        /// assert_eq!(*r.read(), 2);
        /// ```
        fn write = blocking_at(write_at; RwLockWriteGuard: plain(Exclusive); try_write);

        /// Wrapper for [`parking_lot::RwLock::try_write`].
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// let g = r.read();
        /// assert!(r.try_write().is_none());
        /// drop(g);
        /// assert!(r.try_write().is_some());
        /// ```
        fn try_write = tried(RwLockWriteGuard: plain(Exclusive));

        /// Wrapper for [`parking_lot::RwLock::try_write_for`].
        ///
        /// ```
        /// use std::time::Duration;
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// let g = r.read();
        /// assert!(r.try_write_for(Duration::from_millis(1)).is_none());
        /// ```
        fn try_write_for = timed(RwLockWriteGuard: plain(Exclusive); try_write; timeout: Duration);

        /// Wrapper for [`parking_lot::RwLock::try_write_until`].
        ///
        /// ```
        /// use std::time::{Duration, Instant};
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// assert!(r.try_write_until(Instant::now() + Duration::from_millis(1)).is_some());
        /// ```
        fn try_write_until = timed(RwLockWriteGuard: plain(Exclusive); try_write; timeout: Instant);

        /// Wrapper for [`parking_lot::RwLock::read_recursive`]. Recorded as a recursive read:
        /// inside a read of the same lock on the same thread it is legal and never reported;
        /// inside a write it is a self-deadlock and is reported.
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(1);
        /// let a = r.read();
        /// let b = r.read_recursive();
        /// assert_eq!(*a + *b, 2);
        /// ```
        fn read_recursive = blocking(RwLockReadGuard: read_acq(SharedRecursive); try_read_recursive);

        /// Wrapper for [`parking_lot::RwLock::try_read_recursive`].
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// let _a = r.read();
        /// assert!(r.try_read_recursive().is_some());
        /// ```
        fn try_read_recursive = tried(RwLockReadGuard: plain(SharedRecursive));

        /// Wrapper for [`parking_lot::RwLock::try_read_recursive_for`].
        ///
        /// ```
        /// use std::time::Duration;
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// let _a = r.read();
        /// assert!(r.try_read_recursive_for(Duration::from_millis(1)).is_some());
        /// ```
        fn try_read_recursive_for = timed(RwLockReadGuard: read_acq(SharedRecursive); try_read_recursive; timeout: Duration);

        /// Wrapper for [`parking_lot::RwLock::try_read_recursive_until`].
        ///
        /// ```
        /// use std::time::{Duration, Instant};
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// assert!(r.try_read_recursive_until(Instant::now() + Duration::from_millis(1)).is_some());
        /// ```
        fn try_read_recursive_until = timed(RwLockReadGuard: read_acq(SharedRecursive); try_read_recursive; timeout: Instant);

        /// Wrapper for [`parking_lot::RwLock::upgradable_read`]. Recorded as an upgradable read:
        /// it shares the lock with plain readers, excludes writers and other upgradable readers.
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockUpgradableReadGuard};
        /// let r = RwLock::new(1);
        /// let u = r.upgradable_read();
        /// assert!(r.try_read().is_some());
        /// let mut w = RwLockUpgradableReadGuard::upgrade(u);
        /// *w += 1;
        /// ```
        fn upgradable_read = blocking_at(upgradable_read_at; RwLockUpgradableReadGuard: plain(Upgradable); try_upgradable_read);

        /// Wrapper for [`parking_lot::RwLock::try_upgradable_read`].
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// let _u = r.upgradable_read();
        /// assert!(r.try_upgradable_read().is_none());
        /// ```
        fn try_upgradable_read = tried(RwLockUpgradableReadGuard: plain(Upgradable));

        /// Wrapper for [`parking_lot::RwLock::try_upgradable_read_for`].
        ///
        /// ```
        /// use std::time::Duration;
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// let _u = r.upgradable_read();
        /// assert!(r.try_upgradable_read_for(Duration::from_millis(1)).is_none());
        /// ```
        fn try_upgradable_read_for = timed(RwLockUpgradableReadGuard: plain(Upgradable); try_upgradable_read; timeout: Duration);

        /// Wrapper for [`parking_lot::RwLock::try_upgradable_read_until`].
        ///
        /// ```
        /// use std::time::{Duration, Instant};
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// assert!(r.try_upgradable_read_until(Instant::now() + Duration::from_millis(1)).is_some());
        /// ```
        fn try_upgradable_read_until = timed(RwLockUpgradableReadGuard: plain(Upgradable); try_upgradable_read; timeout: Instant);

        /// Wrapper for [`parking_lot::RwLock::make_read_guard_unchecked`]; lockscope records a
        /// read hold as for a `try_` form.
        ///
        /// # Safety
        ///
        /// As parking_lot's: only when the current thread logically holds a read lock.
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(1);
        /// std::mem::forget(r.read());
        /// // SAFETY: this thread holds a read lock (its guard was forgotten above).
        /// let g = unsafe { r.make_read_guard_unchecked() };
        /// assert_eq!(*g, 1);
        /// ```
        unsafe fn make_read_guard_unchecked = unchecked(RwLockReadGuard: plain(Shared));

        /// Wrapper for [`parking_lot::RwLock::make_write_guard_unchecked`]; lockscope records a
        /// write hold as for a `try_` form.
        ///
        /// # Safety
        ///
        /// As parking_lot's: only when the current thread logically holds the write lock.
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(1);
        /// std::mem::forget(r.write());
        /// // SAFETY: this thread holds the write lock (its guard was forgotten above).
        /// let mut g = unsafe { r.make_write_guard_unchecked() };
        /// *g = 2;
        /// ```
        unsafe fn make_write_guard_unchecked = unchecked(RwLockWriteGuard: plain(Exclusive));

        /// Wrapper for [`parking_lot::RwLock::make_upgradable_guard_unchecked`]; lockscope
        /// records an upgradable hold as for a `try_` form.
        ///
        /// # Safety
        ///
        /// As parking_lot's: only when the current thread logically holds an upgradable lock.
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(1);
        /// std::mem::forget(r.upgradable_read());
        /// // SAFETY: this thread holds the upgradable lock (its guard was forgotten above).
        /// let g = unsafe { r.make_upgradable_guard_unchecked() };
        /// assert_eq!(*g, 1);
        /// ```
        unsafe fn make_upgradable_guard_unchecked = unchecked(RwLockUpgradableReadGuard: plain(Upgradable));

        /// Wrapper for [`parking_lot::RwLock::get_mut`].
        ///
        /// ```
        /// let mut r = lockscope::parking_lot::RwLock::new(1);
        /// *r.get_mut() = 2;
        /// assert_eq!(*r.read(), 2);
        /// ```
        fn get_mut = get(&mut self -> &mut T);

        /// Wrapper for [`parking_lot::RwLock::is_locked`].
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// let g = r.read();
        /// assert!(r.is_locked());
        /// ```
        fn is_locked = get(&self -> bool);

        /// Wrapper for [`parking_lot::RwLock::is_locked_exclusive`].
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// let g = r.read();
        /// assert!(!r.is_locked_exclusive());
        /// ```
        fn is_locked_exclusive = get(&self -> bool);

        /// Wrapper for [`parking_lot::RwLock::data_ptr`].
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(3);
        /// let _g = r.read();
        /// // SAFETY: the read guard keeps writers out while we read.
        /// assert_eq!(unsafe { *r.data_ptr() }, 3);
        /// ```
        fn data_ptr = get(&self -> *mut T);

        /// Wrapper for [`parking_lot::RwLock::force_unlock_read`]; see
        /// [`Mutex::force_unlock`](super::Mutex::force_unlock) for lockscope's books.
        ///
        /// # Safety
        ///
        /// As parking_lot's: only when the current thread logically owns a read guard that was
        /// discarded.
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// std::mem::forget(r.read()); // the hold stays in lockscope's books
        /// // SAFETY: the guard was forgotten just above.
        /// unsafe { r.force_unlock_read() };
        /// assert!(!r.is_locked());
        /// ```
        unsafe fn force_unlock_read = get(&self);

        /// Wrapper for [`parking_lot::RwLock::force_unlock_write`].
        ///
        /// # Safety
        ///
        /// As parking_lot's: only when the current thread logically owns a write guard that was
        /// discarded.
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// std::mem::forget(r.write());
        /// // SAFETY: the guard was forgotten just above.
        /// unsafe { r.force_unlock_write() };
        /// assert!(!r.is_locked());
        /// ```
        unsafe fn force_unlock_write = get(&self);

        /// Wrapper for [`parking_lot::RwLock::force_unlock_read_fair`].
        ///
        /// # Safety
        ///
        /// As [`force_unlock_read`](RwLock::force_unlock_read).
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// std::mem::forget(r.read());
        /// // SAFETY: the guard was forgotten just above.
        /// unsafe { r.force_unlock_read_fair() };
        /// ```
        unsafe fn force_unlock_read_fair = get(&self);

        /// Wrapper for [`parking_lot::RwLock::force_unlock_write_fair`].
        ///
        /// # Safety
        ///
        /// As [`force_unlock_write`](RwLock::force_unlock_write).
        ///
        /// ```
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// std::mem::forget(r.write());
        /// // SAFETY: the guard was forgotten just above.
        /// unsafe { r.force_unlock_write_fair() };
        /// ```
        unsafe fn force_unlock_write_fair = get(&self);

        /// Wrapper for [`parking_lot::RwLock::raw`]; the raw lock bypasses lockscope.
        ///
        /// # Safety
        ///
        /// As parking_lot's.
        ///
        /// ```
        /// use parking_lot::lock_api::RawRwLock as _;
        /// let r = lockscope::parking_lot::RwLock::new(());
        /// // SAFETY: only reads the state.
        /// assert!(!unsafe { r.raw() }.is_locked());
        /// ```
        unsafe fn raw = get(&self -> &RawRwLock);
    }
}

lock_traits!(
    "parking_lot",
    RwLock,
    /// As parking_lot's. Not recorded as an acquisition.
);

crate::status::status_queries! {
    impl[T: ?Sized] RwLock<T> as "lockscope::parking_lot::RwLock";
    prim: |l| l.prim();
    can_lock: |l| !l.inner.is_locked();
}

crate::level::declared_levels! {
    impl[T: ?Sized] RwLock<T> as "lockscope::parking_lot::RwLock";
    prim: |l| l.prim();
}

impl<T: ?Sized> RwLock<T> {
    /// Whether a read could be taken now: no writer holds the lock (lockscope addition). A
    /// racy snapshot (see [`status`](crate::status)); a writer parked in the queue can still
    /// make [`try_read`](RwLock::try_read) fail, as parking_lot favours it.
    ///
    /// ```
    /// let l = lockscope::parking_lot::RwLock::new(1);
    /// let _r = l.read();
    /// assert!(l.can_read() && !l.can_lock());
    /// ```
    pub fn can_read(&self) -> bool {
        !self.inner.is_locked_exclusive()
    }
}
