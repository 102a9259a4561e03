//! [`RawMutex`]: any `lock_api` raw mutex, its acquisitions recorded.

use std::panic::Location;

use lockscope_detector::__private::hooks::{self, Mode, PrimKind};
use lockscope_detector::__private::prim::Prim;

use super::{Core, release};
use crate::blocking_shell::{acq, blocking, tried};
use crate::probe;

const KIND: PrimKind = PrimKind::BlockingMutex;

/// A `lock_api` raw mutex `R` whose every acquisition is visible to lockscope: use it wherever
/// `R` was, as in `lock_api::Mutex<RawMutex<R>, T>` (alias [`Mutex<R, T>`](super::Mutex)).
///
/// It implements [`lock_api::RawMutex`], and
/// [`RawMutexFair`](::lock_api::RawMutexFair) and [`RawMutexTimed`](::lock_api::RawMutexTimed)
/// when `R` does, by calling `R`'s: the locking, fairness, timeouts and the guard marker are
/// `R`'s own. See the [module docs](super) for names and what is recorded.
///
/// ```
/// use lockscope::lock_api::{Mutex, RawMutex};
///
/// let m: Mutex<parking_lot::RawMutex, i32> = Mutex::from_raw(RawMutex::named("counter"), 0);
/// *m.lock() += 1;
/// assert!(m.try_lock_for(std::time::Duration::from_millis(1)).is_some());
/// // SAFETY: only reads the name.
/// assert_eq!(unsafe { m.raw() }.name(), Some("counter"));
/// ```
pub struct RawMutex<R> {
    inner: R,
    core: Core,
}

// SAFETY: the inner lock is `Sync`; `core`'s slot is touched only by the lock's holder, between
// the inner lock and unlock, which order those accesses (see `Core::held`); the rest is atomic.
unsafe impl<R: Sync> Sync for RawMutex<R> {}

impl<R: ::lock_api::RawMutex> RawMutex<R> {
    /// A raw mutex named `name` in spans, metrics and reports, registered with the detector at
    /// once, created at the caller's location (lockscope addition). Give it to
    /// `lock_api::Mutex::from_raw`. A name that is empty, too long or holds control characters
    /// is cleaned up, as for [`Mutex::named`](crate::parking_lot::Mutex::named).
    ///
    /// ```
    /// use lockscope::lock_api::{Mutex, RawMutex};
    /// let m: Mutex<parking_lot::RawMutex, ()> = Mutex::from_raw(RawMutex::named("db"), ());
    /// // SAFETY: only reads the name.
    /// assert_eq!(unsafe { m.raw() }.name(), Some("db"));
    /// ```
    #[track_caller]
    pub fn named(name: impl AsRef<str>) -> Self {
        RawMutex {
            inner: R::INIT,
            core: Core::registered(name.as_ref(), KIND, 1, Location::caller()),
        }
    }

    /// A raw mutex named `name`, for `static`s: `const`, registered with the detector at its
    /// first acquisition (lockscope addition).
    ///
    /// ```
    /// use lockscope::lock_api::{Mutex, RawMutex};
    /// static M: Mutex<parking_lot::RawMutex, u8> = Mutex::const_new(RawMutex::const_named("m"), 1);
    /// assert_eq!(*M.lock(), 1);
    /// // SAFETY: only reads the name.
    /// assert_eq!(unsafe { M.raw() }.name(), Some("m"));
    /// ```
    pub const fn const_named(name: &'static str) -> Self {
        RawMutex {
            inner: R::INIT,
            core: Core::new(Some(name)),
        }
    }

    /// The name used in spans, metrics and reports; `None` before the first acquisition of a
    /// mutex made by `INIT` or [`const_named`](RawMutex::const_named), which registers it
    /// (lockscope addition).
    ///
    /// ```
    /// use lockscope::lock_api::Mutex;
    /// let m: Mutex<parking_lot::RawMutex, ()> = Mutex::new(());
    /// // SAFETY: only reads the name.
    /// assert_eq!(unsafe { m.raw() }.name(), None);
    /// drop(m.lock());
    /// assert!(unsafe { m.raw() }.name().unwrap().contains(".rs:"));
    /// ```
    pub fn name(&self) -> Option<&str> {
        self.core.name()
    }

    /// The wrapped raw mutex. Locking or unlocking through it bypasses lockscope.
    pub fn inner(&self) -> &R {
        &self.inner
    }

    /// The primitive, registered at `site` if this is the first use.
    #[inline]
    fn prim(&self, site: &'static Location<'static>) -> &Prim {
        self.core.prim(KIND, 1, site)
    }
}

// SAFETY: every method calls `R`'s own, which keeps `R`'s guarantees; the recording around it
// never locks or unlocks anything.
unsafe impl<R: ::lock_api::RawMutex> ::lock_api::RawMutex for RawMutex<R> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawMutex {
        inner: R::INIT,
        core: Core::new(None),
    };

    type GuardMarker = R::GuardMarker;

    /// `R`'s `lock`, recorded as a blocking acquisition at the caller's site.
    #[inline]
    #[track_caller]
    fn lock(&self) {
        let site = Location::caller();
        let ((), token) = blocking(
            || self.prim(site),
            acq(site, Mode::Exclusive),
            || self.inner.try_lock().then_some(()),
            || self.inner.lock(),
        );
        // SAFETY: just locked.
        unsafe { self.core.put(token) };
    }

    /// `R`'s `try_lock`: a `try_` form (no lock-order edge); a failure is counted.
    #[inline]
    #[track_caller]
    fn try_lock(&self) -> bool {
        if !hooks::enabled() {
            return self.inner.try_lock();
        }
        let site = Location::caller();
        let got = self.inner.try_lock().then_some(());
        match tried(|| self.prim(site), acq(site, Mode::Exclusive), got) {
            Some(((), token)) => {
                // SAFETY: just locked.
                unsafe { self.core.put(token) };
                true
            }
            None => false,
        }
    }

    /// Records the release, then `R`'s `unlock`.
    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: the caller holds the lock (the trait's contract).
        let token = unsafe { self.core.take() };
        // SAFETY: as above.
        release(&self.core, token, || unsafe { self.inner.unlock() });
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }
}

// SAFETY: as for `RawMutex`.
unsafe impl<R: ::lock_api::RawMutexFair> ::lock_api::RawMutexFair for RawMutex<R> {
    /// Records the release, then `R`'s `unlock_fair`.
    #[inline]
    unsafe fn unlock_fair(&self) {
        // SAFETY: the caller holds the lock (the trait's contract).
        let token = unsafe { self.core.take() };
        // SAFETY: as above.
        release(&self.core, token, || unsafe { self.inner.unlock_fair() });
    }

    /// `R`'s `bump`: the hold is released before it and recorded again (at the caller's site)
    /// after it; the wait inside is not recorded as a wait.
    #[inline]
    #[track_caller]
    unsafe fn bump(&self) {
        let site = Location::caller();
        // SAFETY: the caller holds the lock (the trait's contract); the slot is emptied before
        // `R` may hand the lock over, and refilled once it is back.
        let mut token = unsafe { self.core.take() };
        if token.is_none() {
            // SAFETY: as above.
            return unsafe { self.inner.bump() };
        }
        let prim = self.core.prim_registered();
        token.release(prim);
        // SAFETY: as above.
        unsafe { self.inner.bump() };
        // SAFETY: held again.
        unsafe {
            self.core.put(probe::granted::<
                lockscope_detector::__private::hooks::Threads,
            >(|| prim, acq(site, Mode::Exclusive)))
        };
    }
}

// SAFETY: as for `RawMutex`.
unsafe impl<R: ::lock_api::RawMutexTimed> ::lock_api::RawMutexTimed for RawMutex<R> {
    type Duration = R::Duration;
    type Instant = R::Instant;

    /// `R`'s `try_lock_for`, recorded as a timed wait (a timeout is counted).
    #[inline]
    #[track_caller]
    fn try_lock_for(&self, timeout: Self::Duration) -> bool {
        let site = Location::caller();
        self.timed(site, || self.inner.try_lock_for(timeout))
    }

    /// `R`'s `try_lock_until`, recorded as a timed wait (a timeout is counted).
    #[inline]
    #[track_caller]
    fn try_lock_until(&self, timeout: Self::Instant) -> bool {
        let site = Location::caller();
        self.timed(site, || self.inner.try_lock_until(timeout))
    }
}

impl<R: ::lock_api::RawMutex> RawMutex<R> {
    /// A timed acquisition at `site` by `timed`, `R`'s timed form.
    #[inline]
    fn timed(&self, site: &'static Location<'static>, timed: impl FnOnce() -> bool) -> bool {
        if !hooks::enabled() {
            return timed();
        }
        let got = probe::blocking_timed(
            self.prim(site),
            acq(site, Mode::Exclusive),
            || self.inner.try_lock().then_some(()),
            || timed().then_some(()),
        );
        match got {
            Some(((), token)) => {
                // SAFETY: just locked.
                unsafe { self.core.put(token) };
                true
            }
            None => false,
        }
    }
}

impl<R: ::lock_api::RawMutex> Default for RawMutex<R> {
    /// [`RawMutex::INIT`](::lock_api::RawMutex::INIT): named after its first acquisition's site.
    fn default() -> Self {
        <Self as ::lock_api::RawMutex>::INIT
    }
}

impl<R> std::fmt::Debug for RawMutex<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawMutex")
            .field("name", &self.core.name())
            .finish_non_exhaustive()
    }
}
