//! The upgradable side of [`RawRwLock`]: `RawRwLockUpgrade` and its fair, downgrade and timed
//! traits. The upgradable holder's token is kept in the core's slot, as the writer's: at most
//! one of them holds at a time.

use std::panic::Location;

use lockscope_detector::__private::hooks::{self, Acq, Mode};

use super::RawRwLock;
use crate::blocking_shell::acq;
use crate::lock_api::{holds_here, reentry_if};
use crate::probe::Token;

/// The upgrade: a wait for write access by the upgradable holder, which is no nested
/// acquisition (its own upgradable hold does not block it) and adds no lock-order edge.
#[inline]
fn upgrade_acq(site: &'static Location<'static>) -> Acq {
    acq(site, Mode::Exclusive).with_flags(hooks::REENTRY)
}

// SAFETY: as for `RawRwLock`.
unsafe impl<R: ::lock_api::RawRwLockUpgrade> ::lock_api::RawRwLockUpgrade for RawRwLock<R> {
    #[inline]
    #[track_caller]
    fn lock_upgradable(&self) {
        let site = Location::caller();
        let token = self.blocking(
            site,
            || acq(site, Mode::Upgradable),
            || self.inner.try_lock_upgradable(),
            || self.inner.lock_upgradable(),
        );
        // SAFETY: just locked upgradably.
        unsafe { self.core.put(token) };
    }

    #[inline]
    #[track_caller]
    fn try_lock_upgradable(&self) -> bool {
        let site = Location::caller();
        let token = self.tried(
            site,
            || acq(site, Mode::Upgradable),
            || self.inner.try_lock_upgradable(),
        );
        // SAFETY: locked upgradably when there is a token.
        token.map(|t| unsafe { self.core.put(t) }).is_some()
    }

    #[inline]
    unsafe fn unlock_upgradable(&self) {
        // SAFETY: the caller holds the upgradable lock (the trait's contract).
        unsafe { self.release_held(|| self.inner.unlock_upgradable()) };
    }

    /// `R`'s `upgrade`, recorded as a wait for write access by the upgradable holder: the
    /// write hold once `R` granted it, then the end of the upgradable one.
    #[inline]
    #[track_caller]
    unsafe fn upgrade(&self) {
        let site = Location::caller();
        let token = self.blocking(
            site,
            || upgrade_acq(site),
            // SAFETY: the caller holds the upgradable lock (the trait's contract).
            || unsafe { self.inner.try_upgrade() },
            // SAFETY: as above.
            || unsafe { self.inner.upgrade() },
        );
        // SAFETY: held exclusively now.
        unsafe { self.upgraded(token) };
    }

    #[inline]
    #[track_caller]
    unsafe fn try_upgrade(&self) -> bool {
        let site = Location::caller();
        // SAFETY: the caller holds the upgradable lock (the trait's contract).
        let token = self.tried(
            site,
            || upgrade_acq(site),
            || unsafe { self.inner.try_upgrade() },
        );
        // SAFETY: held exclusively when there is a token.
        token.map(|t| unsafe { self.upgraded(t) }).is_some()
    }
}

impl<R: ::lock_api::RawRwLock> RawRwLock<R> {
    /// The upgrade was granted, recorded in `write`: the upgradable hold ends in the books.
    ///
    /// # Safety
    ///
    /// The caller holds the lock exclusively, upgraded from its upgradable hold in the slot.
    unsafe fn upgraded(&self, write: Token) {
        // SAFETY: as the caller promises.
        let mut old = unsafe { self.core.take() };
        // SAFETY: as above (the slot is empty now).
        unsafe { self.core.put(write) };
        if !old.is_none() {
            old.release(self.core.prim_registered());
        }
    }
}

// SAFETY: as for `RawRwLock`.
unsafe impl<R: ::lock_api::RawRwLockUpgradeFair> ::lock_api::RawRwLockUpgradeFair for RawRwLock<R> {
    #[inline]
    unsafe fn unlock_upgradable_fair(&self) {
        // SAFETY: the caller holds the upgradable lock (the trait's contract).
        unsafe { self.release_held(|| self.inner.unlock_upgradable_fair()) };
    }

    /// `R`'s `bump_upgradable`; the hold is released before it and recorded again after it (a
    /// re-entry if this thread still holds a read, which `R` does not bump past).
    #[track_caller]
    unsafe fn bump_upgradable(&self) {
        let site = Location::caller();
        // SAFETY: the caller holds the upgradable lock (the trait's contract); the slot is
        // emptied before `R` may hand the lock over, and refilled once it is back.
        let token = unsafe { self.core.take() };
        // SAFETY: as above.
        let token = self.bump(
            token,
            || unsafe { self.inner.bump_upgradable() },
            |prim| {
                let reading = holds_here(prim, |m| !m.is_exclusive());
                reentry_if(reading, acq(site, Mode::Upgradable))
            },
        );
        // SAFETY: held again.
        unsafe { self.core.put(token) };
    }
}

// SAFETY: as for `RawRwLock`.
unsafe impl<R: ::lock_api::RawRwLockUpgradeDowngrade> ::lock_api::RawRwLockUpgradeDowngrade
    for RawRwLock<R>
{
    #[inline]
    unsafe fn downgrade_upgradable(&self) {
        // SAFETY: the caller holds the upgradable lock (the trait's contract).
        unsafe { self.downgrade_held(|| self.inner.downgrade_upgradable()) };
    }

    #[inline]
    unsafe fn downgrade_to_upgradable(&self) {
        // SAFETY: the caller holds the lock exclusively (the trait's contract); the hold is
        // rewritten before `R` lets readers in.
        unsafe {
            self.core.update(Mode::Upgradable);
            self.inner.downgrade_to_upgradable();
        }
    }
}

// SAFETY: as for `RawRwLock`.
unsafe impl<R: ::lock_api::RawRwLockUpgradeTimed> ::lock_api::RawRwLockUpgradeTimed
    for RawRwLock<R>
{
    #[inline]
    #[track_caller]
    fn try_lock_upgradable_for(&self, timeout: Self::Duration) -> bool {
        let site = Location::caller();
        self.timed_upgradable(site, || self.inner.try_lock_upgradable_for(timeout))
    }

    #[inline]
    #[track_caller]
    fn try_lock_upgradable_until(&self, timeout: Self::Instant) -> bool {
        let site = Location::caller();
        self.timed_upgradable(site, || self.inner.try_lock_upgradable_until(timeout))
    }

    #[inline]
    #[track_caller]
    unsafe fn try_upgrade_for(&self, timeout: Self::Duration) -> bool {
        let site = Location::caller();
        // SAFETY: the caller holds the upgradable lock (the trait's contract).
        unsafe { self.timed_upgrade(site, || self.inner.try_upgrade_for(timeout)) }
    }

    #[inline]
    #[track_caller]
    unsafe fn try_upgrade_until(&self, timeout: Self::Instant) -> bool {
        let site = Location::caller();
        // SAFETY: the caller holds the upgradable lock (the trait's contract).
        unsafe { self.timed_upgrade(site, || self.inner.try_upgrade_until(timeout)) }
    }
}

impl<R: ::lock_api::RawRwLockUpgrade> RawRwLock<R> {
    /// A timed upgradable read by `timed`, `R`'s timed form.
    fn timed_upgradable(
        &self,
        site: &'static Location<'static>,
        timed: impl FnOnce() -> bool,
    ) -> bool {
        let token = self.timed(
            site,
            || acq(site, Mode::Upgradable),
            || self.inner.try_lock_upgradable(),
            timed,
        );
        // SAFETY: locked upgradably when there is a token.
        token.map(|t| unsafe { self.core.put(t) }).is_some()
    }

    /// A timed upgrade by `timed`, `R`'s timed form.
    ///
    /// # Safety
    ///
    /// The caller holds the upgradable lock.
    unsafe fn timed_upgrade(
        &self,
        site: &'static Location<'static>,
        timed: impl FnOnce() -> bool,
    ) -> bool {
        let token = self.timed(
            site,
            || upgrade_acq(site),
            // SAFETY: as the caller promises.
            || unsafe { self.inner.try_upgrade() },
            timed,
        );
        // SAFETY: held exclusively when there is a token.
        token.map(|t| unsafe { self.upgraded(t) }).is_some()
    }
}
