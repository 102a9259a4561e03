//! [`RawRwLock`]: any `lock_api` raw reader-writer lock, its acquisitions recorded.
//!
//! The exclusive and the upgradable holder (at most one of them at a time) keep their token in
//! the core's slot; reads keep theirs in [`Readers`]. An upgrade records the write hold once
//! `R` granted it, then ends the upgradable one; a downgrade rewrites the hold before `R` lets
//! anyone else in, and moves it to the readers' list when it becomes a plain read.

use std::panic::Location;

use lockscope_detector::__private::hooks::{self, Acq, Mode, PrimKind};
use lockscope_detector::__private::prim::Prim;

use super::{Core, Readers, holds_here, reentry_if, release};
use crate::blocking_shell::{acq, blocking, tried};
use crate::probe::{self, Token};

mod upgrade;

const KIND: PrimKind = PrimKind::BlockingRwLock;
/// lock_api says nothing of a reader limit: the books' capacity is the widest a hold counts.
const CAPACITY: u64 = u32::MAX as u64;

/// A `lock_api` raw reader-writer lock `R` whose every acquisition is visible to lockscope: use
/// it wherever `R` was, as in `lock_api::RwLock<RawRwLock<R>, T>` (alias
/// [`RwLock<R, T>`](super::RwLock)).
///
/// It implements [`lock_api::RawRwLock`] and, when `R` does, the fair,
/// timed, downgrade, recursive and upgradable traits (with their fair, downgrade and timed
/// forms), by calling `R`'s. See the [module docs](super) for names and what is recorded.
///
/// ```
/// use lockscope::lock_api::{RawRwLock, RwLock, RwLockUpgradableReadGuard};
///
/// let r: RwLock<parking_lot::RawRwLock, Vec<u8>> =
///     RwLock::from_raw(RawRwLock::named("routes"), vec![1]);
/// {
///     let a = r.read();
///     let b = r.read_recursive(); // a re-entry: never reported
///     assert_eq!(*a, *b);
/// }
/// let u = r.upgradable_read();
/// RwLockUpgradableReadGuard::upgrade(u).push(2);
/// assert_eq!(*r.read(), [1, 2]);
/// ```
pub struct RawRwLock<R> {
    inner: R,
    core: Core,
    readers: Readers,
}

// SAFETY: the inner lock is `Sync`; `core`'s slot is touched only by the exclusive or upgradable
// holder, between the inner lock and unlock (see `Core::held`); `readers` is behind a mutex.
unsafe impl<R: Sync> Sync for RawRwLock<R> {}

impl<R: ::lock_api::RawRwLock> RawRwLock<R> {
    /// A raw rwlock named `name`, registered at once, created at the caller's location
    /// (lockscope addition); see [`RawMutex::named`](super::RawMutex::named).
    ///
    /// ```
    /// use lockscope::lock_api::{RawRwLock, RwLock};
    /// let r: RwLock<parking_lot::RawRwLock, ()> = RwLock::from_raw(RawRwLock::named("cache"), ());
    /// // SAFETY: only reads the name.
    /// assert_eq!(unsafe { r.raw() }.name(), Some("cache"));
    /// ```
    #[track_caller]
    pub fn named(name: impl AsRef<str>) -> Self {
        RawRwLock {
            inner: R::INIT,
            core: Core::registered(name.as_ref(), KIND, CAPACITY, Location::caller()),
            readers: Readers::new(),
        }
    }

    /// A raw rwlock named `name`, for `static`s: `const`, registered at its first acquisition
    /// (lockscope addition).
    ///
    /// ```
    /// use lockscope::lock_api::{RawRwLock, RwLock};
    /// static R: RwLock<parking_lot::RawRwLock, u8> = RwLock::const_new(RawRwLock::const_named("r"), 2);
    /// assert_eq!(*R.read(), 2);
    /// ```
    pub const fn const_named(name: &'static str) -> Self {
        RawRwLock {
            inner: R::INIT,
            core: Core::new(Some(name)),
            readers: Readers::new(),
        }
    }

    /// The name used in spans, metrics and reports; `None` before the first acquisition of a
    /// lock made by `INIT` or [`const_named`](RawRwLock::const_named) (lockscope addition).
    ///
    /// ```
    /// use lockscope::lock_api::RwLock;
    /// let r: RwLock<parking_lot::RawRwLock, ()> = RwLock::new(());
    /// drop(r.read());
    /// // SAFETY: only reads the name.
    /// assert!(unsafe { r.raw() }.name().unwrap().contains(".rs:"));
    /// ```
    pub fn name(&self) -> Option<&str> {
        self.core.name()
    }

    /// The wrapped raw lock. Locking or unlocking through it bypasses lockscope.
    pub fn inner(&self) -> &R {
        &self.inner
    }

    #[inline]
    fn prim(&self, site: &'static Location<'static>) -> &Prim {
        self.core.prim(KIND, CAPACITY, site)
    }

    /// A read at `site` (`Shared` or `SharedRecursive`): a re-entry when this thread or task
    /// holds the upgradable read (no writer can queue then), or, for a recursive read, any read.
    /// The detector is on (the caller checked).
    #[inline]
    fn read_acq(&self, site: &'static Location<'static>, mode: Mode) -> Acq {
        let lets_through = |held: Mode| match held {
            Mode::Upgradable => true,
            Mode::Shared | Mode::SharedRecursive => mode == Mode::SharedRecursive,
            Mode::Exclusive | Mode::Permits => false,
        };
        reentry_if(holds_here(self.prim(site), lets_through), acq(site, mode))
    }

    /// A blocking acquisition at `site` as `acq` (made only if the detector is on): `fast`
    /// without waiting, `block` waiting.
    #[inline]
    fn blocking(
        &self,
        site: &'static Location<'static>,
        acq: impl FnOnce() -> Acq,
        fast: impl FnMut() -> bool,
        block: impl FnOnce(),
    ) -> Token {
        if !hooks::enabled() {
            block();
            return Token::none();
        }
        let mut fast = fast;
        blocking(|| self.prim(site), acq(), || fast().then_some(()), block).1
    }

    /// A `try_` form at `site` as `acq`: `got` is `R`'s answer, asked after `acq` was made.
    #[inline]
    fn tried(
        &self,
        site: &'static Location<'static>,
        acq: impl FnOnce() -> Acq,
        got: impl FnOnce() -> bool,
    ) -> Option<Token> {
        if !hooks::enabled() {
            return got().then(Token::none);
        }
        let acq = acq();
        let got = got().then_some(());
        tried(|| self.prim(site), acq, got).map(|((), token)| token)
    }

    /// A timed form at `site` as `acq`: `fast` without waiting, `timed` is `R`'s timed form.
    #[inline]
    fn timed(
        &self,
        site: &'static Location<'static>,
        acq: impl FnOnce() -> Acq,
        fast: impl FnMut() -> bool,
        timed: impl FnOnce() -> bool,
    ) -> Option<Token> {
        if !hooks::enabled() {
            return timed().then(Token::none);
        }
        let mut fast = fast;
        let got = probe::blocking_timed(
            self.prim(site),
            acq(),
            || fast().then_some(()),
            || timed().then_some(()),
        );
        got.map(|((), token)| token)
    }

    /// Releases a read: its record (this thread's or task's), then `unlock`.
    #[inline]
    fn release_read(&self, unlock: impl FnOnce()) {
        release(&self.core, self.readers.pop(), unlock);
    }

    /// Releases the exclusive or upgradable hold, then `unlock`.
    ///
    /// # Safety
    ///
    /// The caller holds the lock exclusively or upgradably.
    #[inline]
    unsafe fn release_held(&self, unlock: impl FnOnce()) {
        // SAFETY: as the caller promises.
        release(&self.core, unsafe { self.core.take() }, unlock);
    }

    /// A `bump` of `token`'s hold by `R`'s `bump`; the hold is then recorded again as `regrant`.
    fn bump(
        &self,
        mut token: Token,
        bump: impl FnOnce(),
        regrant: impl FnOnce(&Prim) -> Acq,
    ) -> Token {
        if token.is_none() {
            bump();
            return token;
        }
        let prim = self.core.prim_registered();
        token.release(prim);
        bump();
        probe::granted::<lockscope_detector::__private::hooks::Threads>(|| prim, regrant(prim))
    }

    /// A plain read after a downgrade: the exclusive or upgradable hold in the slot becomes a
    /// read (rewritten before `R` lets anyone else in) and moves to the readers' list.
    ///
    /// # Safety
    ///
    /// The caller holds the lock exclusively or upgradably.
    unsafe fn downgrade_held(&self, downgrade: impl FnOnce()) {
        // SAFETY: as the caller promises.
        let mut token = unsafe { self.core.take() };
        if !token.is_none() {
            token.update(self.core.prim_registered(), 1, Mode::Shared);
        }
        self.readers.push(token);
        downgrade();
    }
}

// SAFETY: every method calls `R`'s own, which keeps `R`'s guarantees; the recording around it
// never locks or unlocks anything.
unsafe impl<R: ::lock_api::RawRwLock> ::lock_api::RawRwLock for RawRwLock<R> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawRwLock {
        inner: R::INIT,
        core: Core::new(None),
        readers: Readers::new(),
    };

    type GuardMarker = R::GuardMarker;

    #[inline]
    #[track_caller]
    fn lock_shared(&self) {
        let site = Location::caller();
        let token = self.blocking(
            site,
            || self.read_acq(site, Mode::Shared),
            || self.inner.try_lock_shared(),
            || self.inner.lock_shared(),
        );
        self.readers.push(token);
    }

    #[inline]
    #[track_caller]
    fn try_lock_shared(&self) -> bool {
        let site = Location::caller();
        let token = self.tried(
            site,
            || self.read_acq(site, Mode::Shared),
            || self.inner.try_lock_shared(),
        );
        token.map(|t| self.readers.push(t)).is_some()
    }

    #[inline]
    unsafe fn unlock_shared(&self) {
        // SAFETY: the caller holds a read (the trait's contract).
        self.release_read(|| unsafe { self.inner.unlock_shared() });
    }

    #[inline]
    #[track_caller]
    fn lock_exclusive(&self) {
        let site = Location::caller();
        let token = self.blocking(
            site,
            || acq(site, Mode::Exclusive),
            || self.inner.try_lock_exclusive(),
            || self.inner.lock_exclusive(),
        );
        // SAFETY: just locked exclusively.
        unsafe { self.core.put(token) };
    }

    #[inline]
    #[track_caller]
    fn try_lock_exclusive(&self) -> bool {
        let site = Location::caller();
        let token = self.tried(
            site,
            || acq(site, Mode::Exclusive),
            || self.inner.try_lock_exclusive(),
        );
        // SAFETY: locked exclusively when there is a token.
        token.map(|t| unsafe { self.core.put(t) }).is_some()
    }

    #[inline]
    unsafe fn unlock_exclusive(&self) {
        // SAFETY: the caller holds the lock exclusively (the trait's contract).
        unsafe { self.release_held(|| self.inner.unlock_exclusive()) };
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        self.inner.is_locked_exclusive()
    }
}

// SAFETY: as for `RawRwLock`.
unsafe impl<R: ::lock_api::RawRwLockFair> ::lock_api::RawRwLockFair for RawRwLock<R> {
    #[inline]
    unsafe fn unlock_shared_fair(&self) {
        // SAFETY: the caller holds a read (the trait's contract).
        self.release_read(|| unsafe { self.inner.unlock_shared_fair() });
    }

    #[inline]
    unsafe fn unlock_exclusive_fair(&self) {
        // SAFETY: the caller holds the lock exclusively (the trait's contract).
        unsafe { self.release_held(|| self.inner.unlock_exclusive_fair()) };
    }

    /// `R`'s `bump_shared`; the read is released before it and recorded again after it (a
    /// re-entry if this thread still holds another read, which `R` does not bump past).
    #[track_caller]
    unsafe fn bump_shared(&self) {
        let site = Location::caller();
        let token = self.readers.pop();
        // SAFETY: the caller holds a read (the trait's contract).
        let token = self.bump(
            token,
            || unsafe { self.inner.bump_shared() },
            |prim| {
                let still = holds_here(prim, |m| !m.is_exclusive());
                reentry_if(still, acq(site, Mode::Shared))
            },
        );
        self.readers.push(token);
    }

    /// `R`'s `bump_exclusive`; the hold is released before it and recorded again after it.
    #[track_caller]
    unsafe fn bump_exclusive(&self) {
        let site = Location::caller();
        // SAFETY: the caller holds the lock exclusively (the trait's contract); the slot is
        // emptied before `R` may hand the lock over, and refilled once it is back.
        let token = unsafe { self.core.take() };
        // SAFETY: as above.
        let token = self.bump(
            token,
            || unsafe { self.inner.bump_exclusive() },
            |_| acq(site, Mode::Exclusive),
        );
        // SAFETY: held again.
        unsafe { self.core.put(token) };
    }
}

// SAFETY: as for `RawRwLock`.
unsafe impl<R: ::lock_api::RawRwLockDowngrade> ::lock_api::RawRwLockDowngrade for RawRwLock<R> {
    #[inline]
    unsafe fn downgrade(&self) {
        // SAFETY: the caller holds the lock exclusively (the trait's contract).
        unsafe { self.downgrade_held(|| self.inner.downgrade()) };
    }
}

// SAFETY: as for `RawRwLock`.
unsafe impl<R: ::lock_api::RawRwLockTimed> ::lock_api::RawRwLockTimed for RawRwLock<R> {
    type Duration = R::Duration;
    type Instant = R::Instant;

    #[inline]
    #[track_caller]
    fn try_lock_shared_for(&self, timeout: Self::Duration) -> bool {
        let site = Location::caller();
        self.timed_read(
            site,
            Mode::Shared,
            || self.inner.try_lock_shared(),
            || self.inner.try_lock_shared_for(timeout),
        )
    }

    #[inline]
    #[track_caller]
    fn try_lock_shared_until(&self, timeout: Self::Instant) -> bool {
        let site = Location::caller();
        self.timed_read(
            site,
            Mode::Shared,
            || self.inner.try_lock_shared(),
            || self.inner.try_lock_shared_until(timeout),
        )
    }

    #[inline]
    #[track_caller]
    fn try_lock_exclusive_for(&self, timeout: Self::Duration) -> bool {
        let site = Location::caller();
        self.timed_write(site, || self.inner.try_lock_exclusive_for(timeout))
    }

    #[inline]
    #[track_caller]
    fn try_lock_exclusive_until(&self, timeout: Self::Instant) -> bool {
        let site = Location::caller();
        self.timed_write(site, || self.inner.try_lock_exclusive_until(timeout))
    }
}

impl<R: ::lock_api::RawRwLock> RawRwLock<R> {
    /// A timed read (`mode`: `Shared` or `SharedRecursive`): `fast` is `R`'s `try_` form of
    /// it, `timed` its timed form.
    fn timed_read(
        &self,
        site: &'static Location<'static>,
        mode: Mode,
        fast: impl FnMut() -> bool,
        timed: impl FnOnce() -> bool,
    ) -> bool {
        let token = self.timed(site, || self.read_acq(site, mode), fast, timed);
        token.map(|t| self.readers.push(t)).is_some()
    }

    /// A timed write by `timed`, `R`'s timed form.
    fn timed_write(&self, site: &'static Location<'static>, timed: impl FnOnce() -> bool) -> bool {
        let token = self.timed(
            site,
            || acq(site, Mode::Exclusive),
            || self.inner.try_lock_exclusive(),
            timed,
        );
        // SAFETY: locked exclusively when there is a token.
        token.map(|t| unsafe { self.core.put(t) }).is_some()
    }
}

// SAFETY: as for `RawRwLock`.
unsafe impl<R: ::lock_api::RawRwLockRecursive> ::lock_api::RawRwLockRecursive for RawRwLock<R> {
    #[inline]
    #[track_caller]
    fn lock_shared_recursive(&self) {
        let site = Location::caller();
        let token = self.blocking(
            site,
            || self.read_acq(site, Mode::SharedRecursive),
            || self.inner.try_lock_shared_recursive(),
            || self.inner.lock_shared_recursive(),
        );
        self.readers.push(token);
    }

    #[inline]
    #[track_caller]
    fn try_lock_shared_recursive(&self) -> bool {
        let site = Location::caller();
        let token = self.tried(
            site,
            || self.read_acq(site, Mode::SharedRecursive),
            || self.inner.try_lock_shared_recursive(),
        );
        token.map(|t| self.readers.push(t)).is_some()
    }
}

// SAFETY: as for `RawRwLock`.
unsafe impl<R: ::lock_api::RawRwLockRecursiveTimed> ::lock_api::RawRwLockRecursiveTimed
    for RawRwLock<R>
{
    #[inline]
    #[track_caller]
    fn try_lock_shared_recursive_for(&self, timeout: Self::Duration) -> bool {
        let site = Location::caller();
        self.timed_read(
            site,
            Mode::SharedRecursive,
            || self.inner.try_lock_shared_recursive(),
            || self.inner.try_lock_shared_recursive_for(timeout),
        )
    }

    #[inline]
    #[track_caller]
    fn try_lock_shared_recursive_until(&self, timeout: Self::Instant) -> bool {
        let site = Location::caller();
        self.timed_read(
            site,
            Mode::SharedRecursive,
            || self.inner.try_lock_shared_recursive(),
            || self.inner.try_lock_shared_recursive_until(timeout),
        )
    }
}

impl<R: ::lock_api::RawRwLock> Default for RawRwLock<R> {
    /// [`RawRwLock::INIT`](::lock_api::RawRwLock::INIT): named after its first acquisition's site.
    fn default() -> Self {
        <Self as ::lock_api::RawRwLock>::INIT
    }
}

impl<R> std::fmt::Debug for RawRwLock<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawRwLock")
            .field("name", &self.core.name())
            .finish_non_exhaustive()
    }
}
