//! [`RwLockUpgradableReadGuard`].
//!
//! An upgrade is modelled as what it is: a wait for write access, by the holder of the
//! upgradable read, on the same lock (parking_lot grants it once the other readers leave; the
//! detector's rwlock model knows that the upgradable hold does not block its own upgrade). The
//! write hold is recorded once parking_lot granted it, then the upgradable hold is released:
//! the books never show the lock weaker than it is.

use std::cell::Cell;
use std::panic::Location;
use std::time::{Duration, Instant};

use lockscope_detector::__private::hooks::{self, Acq, Mode};
use lockscope_detector::__private::prim::Prim;
use parking_lot::lock_api::{RawRwLockUpgrade, RawRwLockUpgradeDowngrade, RawRwLockUpgradeTimed};

use super::guard::{Real, bump_upgradable};
use super::rwlock::RwLock;
use super::rwlock_read_guard::RwLockReadGuard;
use super::rwlock_write_guard::RwLockWriteGuard;
use super::{RawRwLock, acq, blocking, tried};
use crate::probe::{self, Token};

guard_struct! {
    /// Wrapper for [`parking_lot::RwLockUpgradableReadGuard`]: shared access that may become
    /// exclusive; it excludes writers and other upgradable readers, not plain readers.
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockUpgradableReadGuard};
    /// let r = RwLock::new(vec![1]);
    /// let u = r.upgradable_read();
    /// if !u.contains(&2) {
    ///     RwLockUpgradableReadGuard::upgrade(u).push(2);
    /// }
    /// assert_eq!(*r.read(), [1, 2]);
    /// ```
    #[must_use = "if unused the RwLock will immediately unlock"]
    pub struct RwLockUpgradableReadGuard for RwLock;
}

guard_methods! {
    impl RwLockUpgradableReadGuard {
        /// Wrapper for [`parking_lot::RwLockUpgradableReadGuard::rwlock`].
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockUpgradableReadGuard};
        /// let r = RwLock::new(());
        /// let u = r.upgradable_read();
        /// assert!(std::ptr::eq(RwLockUpgradableReadGuard::rwlock(&u), &r));
        /// ```
        fn rwlock = owner(RwLock);

        /// Wrapper for [`parking_lot::RwLockUpgradableReadGuard::unlocked`]. lockscope records
        /// the release and the re-lock (an upgradable read) at this call's site.
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockUpgradableReadGuard};
        /// let r = RwLock::new(0);
        /// let mut u = r.upgradable_read();
        /// RwLockUpgradableReadGuard::unlocked(&mut u, || *r.write() += 1);
        /// assert_eq!(*u, 1);
        /// ```
        fn unlocked = unlocked(force_unlock_upgradable, upgradable_read_at);

        /// Wrapper for [`parking_lot::RwLockUpgradableReadGuard::unlock_fair`].
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockUpgradableReadGuard};
        /// let r = RwLock::new(());
        /// RwLockUpgradableReadGuard::unlock_fair(r.upgradable_read());
        /// assert!(!r.is_locked());
        /// ```
        fn unlock_fair = unlock_fair();

        /// Wrapper for [`parking_lot::RwLockUpgradableReadGuard::unlocked_fair`]; see
        /// [`unlocked`](RwLockUpgradableReadGuard::unlocked).
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockUpgradableReadGuard};
        /// let r = RwLock::new(0);
        /// let mut u = r.upgradable_read();
        /// RwLockUpgradableReadGuard::unlocked_fair(&mut u, || assert!(!r.is_locked()));
        /// ```
        fn unlocked_fair = unlocked(force_unlock_upgradable_fair, upgradable_read_at);

        /// Wrapper for [`parking_lot::RwLockUpgradableReadGuard::bump`]; lockscope records a
        /// release and a new upgradable hold at this call's site.
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockUpgradableReadGuard};
        /// let r = RwLock::new(());
        /// let mut u = r.upgradable_read();
        /// RwLockUpgradableReadGuard::bump(&mut u);
        /// ```
        fn bump = bump(bump_upgradable);

        /// Wrapper for [`parking_lot::RwLockUpgradableReadGuard::downgrade`]: lockscope rewrites
        /// the hold as a plain read (before parking_lot lets an upgradable reader in).
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockUpgradableReadGuard};
        /// let r = RwLock::new(());
        /// let g = RwLockUpgradableReadGuard::downgrade(r.upgradable_read());
        /// assert!(r.try_upgradable_read().is_some());
        /// drop(g);
        /// ```
        fn downgrade = downgrade(RwLockReadGuard, Shared);
    }
}

type InnerUpgradable<'a, T> = parking_lot::RwLockUpgradableReadGuard<'a, T>;
type InnerWrite<'a, T> = parking_lot::RwLockWriteGuard<'a, T>;

/// The upgrade: a wait for write access by the upgradable holder, which is no nested
/// acquisition (its own upgradable hold does not block it) and adds no lock-order edge.
#[inline]
fn upgrade_acq(site: &'static Location<'static>) -> Acq {
    acq(site, Mode::Exclusive).with_flags(hooks::REENTRY)
}

/// parking_lot's `try_upgrade` on the guard in `slot`, put back when it fails.
fn try_upgrade_in<'a, T: ?Sized>(
    slot: &Cell<Option<InnerUpgradable<'a, T>>>,
) -> Option<InnerWrite<'a, T>> {
    let g = slot.take()?;
    match InnerUpgradable::try_upgrade(g) {
        Ok(w) => Some(w),
        Err(g) => {
            slot.set(Some(g));
            None
        }
    }
}

/// Ends a `with_upgraded`: the write hold leaves the books first, then the lock goes back to
/// upgradable in fact (also when the closure panics).
struct Downgrade<'a> {
    prim: &'a Prim,
    token: Token,
    raw: &'a RawRwLock,
}

impl Drop for Downgrade<'_> {
    fn drop(&mut self) {
        self.token.release(self.prim);
        // SAFETY: `with_upgraded` upgraded the lock this guard holds; it is downgraded once.
        unsafe { self.raw.downgrade_to_upgradable() }
    }
}

/// The timed `with_upgraded` forms: parking_lot's timed raw upgrade `$raw_timed`, recorded as
/// a timed wait for write access.
macro_rules! timed_with_upgraded {
    ($($(#[$doc:meta])* fn $name:ident($timeout:ty) = $raw_timed:ident;)*) => {$(
        $(#[$doc])*
        #[track_caller]
        pub fn $name<Ret, F: FnOnce(&mut T) -> Ret>(
            &mut self,
            timeout: $timeout,
            f: F,
        ) -> Option<Ret> {
            let site = Location::caller();
            let raw = self.raw();
            // SAFETY: this guard holds the upgradable lock.
            self.timed_upgraded(site, || unsafe { raw.$raw_timed(timeout) }, f)
        }
    )*};
}

impl<'a, T: ?Sized> RwLockUpgradableReadGuard<'a, T> {
    /// The raw lock, for upgrades in place.
    #[inline]
    fn raw(&self) -> &'a RawRwLock {
        // SAFETY: used only to upgrade and downgrade back the upgradable lock this guard
        // holds, never to release it.
        unsafe { Self::rwlock(self).inner.raw() }
    }

    /// Wrapper for [`parking_lot::RwLockUpgradableReadGuard::upgrade`]. lockscope records a
    /// wait for write access by this upgradable holder (when readers are still in), then the
    /// write hold, then the end of the upgradable one.
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockUpgradableReadGuard};
    /// let r = RwLock::new(1);
    /// let mut w = RwLockUpgradableReadGuard::upgrade(r.upgradable_read());
    /// *w = 2;
    /// assert!(r.try_read().is_none());
    /// ```
    #[track_caller]
    pub fn upgrade(s: Self) -> RwLockWriteGuard<'a, T> {
        let site = Location::caller();
        let (lock, mut old, inner) = s.shell.into_parts();
        // SAFETY: the parts of one guard, `inner` used once.
        let inner = unsafe { inner.real(&lock) };
        let prim = lock.prim();
        let slot = Cell::new(Some(inner));
        let (inner, token) = blocking(
            || prim,
            upgrade_acq(site),
            || try_upgrade_in(&slot),
            // UNWRAP: the guard is in `slot` unless the fast path upgraded it, and then this
            // closure is not called.
            || InnerUpgradable::upgrade(slot.take().expect("upgradable guard in its slot")),
        );
        // The write hold is in the books; now the upgradable one ends.
        old.release(prim);
        RwLockWriteGuard::new(lock, inner, token)
    }

    /// Wrapper for [`parking_lot::RwLockUpgradableReadGuard::try_upgrade`].
    ///
    /// # Errors
    ///
    /// Gives the guard back when other readers hold the lock.
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockUpgradableReadGuard};
    /// let r = RwLock::new(());
    /// let u = r.upgradable_read();
    /// let reader = r.read();
    /// let u = RwLockUpgradableReadGuard::try_upgrade(u).unwrap_err();
    /// drop(reader);
    /// assert!(RwLockUpgradableReadGuard::try_upgrade(u).is_ok());
    /// ```
    #[track_caller]
    pub fn try_upgrade(s: Self) -> Result<RwLockWriteGuard<'a, T>, Self> {
        let site = Location::caller();
        let (lock, mut old, inner) = s.shell.into_parts();
        // SAFETY: the parts of one guard, `inner` used once.
        let inner = unsafe { inner.real(&lock) };
        let prim = lock.prim();
        match InnerUpgradable::try_upgrade(inner) {
            Ok(w) => {
                let token = probe::try_acquired::<lockscope_detector::__private::hooks::Threads>(
                    || prim,
                    upgrade_acq(site),
                );
                old.release(prim);
                Ok(RwLockWriteGuard::new(lock, w, token))
            }
            Err(inner) => {
                probe::try_failed(|| prim, upgrade_acq(site));
                Err(RwLockUpgradableReadGuard::new(lock, inner, old))
            }
        }
    }

    /// Wrapper for [`parking_lot::RwLockUpgradableReadGuard::try_upgrade_for`]; see
    /// [`upgrade`](RwLockUpgradableReadGuard::upgrade). A timeout is counted in
    /// `lockscope_timeouts_total`.
    ///
    /// # Errors
    ///
    /// Gives the guard back when the timeout passes first.
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockscope::parking_lot::{RwLock, RwLockUpgradableReadGuard};
    /// let r = RwLock::new(());
    /// let u = r.upgradable_read();
    /// let reader = r.read();
    /// let u = RwLockUpgradableReadGuard::try_upgrade_for(u, Duration::from_millis(1)).unwrap_err();
    /// drop(reader);
    /// assert!(RwLockUpgradableReadGuard::try_upgrade_for(u, Duration::from_millis(1)).is_ok());
    /// ```
    #[track_caller]
    pub fn try_upgrade_for(s: Self, timeout: Duration) -> Result<RwLockWriteGuard<'a, T>, Self> {
        let site = Location::caller();
        Self::try_upgrade_with(s, site, |g| InnerUpgradable::try_upgrade_for(g, timeout))
    }

    /// Wrapper for [`parking_lot::RwLockUpgradableReadGuard::try_upgrade_until`]; see
    /// [`try_upgrade_for`](RwLockUpgradableReadGuard::try_upgrade_for).
    ///
    /// # Errors
    ///
    /// Gives the guard back when the deadline passes first.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use lockscope::parking_lot::{RwLock, RwLockUpgradableReadGuard};
    /// let r = RwLock::new(());
    /// let u = r.upgradable_read();
    /// let deadline = Instant::now() + Duration::from_millis(1);
    /// assert!(RwLockUpgradableReadGuard::try_upgrade_until(u, deadline).is_ok());
    /// ```
    #[track_caller]
    pub fn try_upgrade_until(s: Self, timeout: Instant) -> Result<RwLockWriteGuard<'a, T>, Self> {
        let site = Location::caller();
        Self::try_upgrade_with(s, site, |g| InnerUpgradable::try_upgrade_until(g, timeout))
    }

    /// A timed upgrade with parking_lot's `timed` form.
    fn try_upgrade_with(
        s: Self,
        site: &'static Location<'static>,
        timed: impl FnOnce(InnerUpgradable<'a, T>) -> Result<InnerWrite<'a, T>, InnerUpgradable<'a, T>>,
    ) -> Result<RwLockWriteGuard<'a, T>, Self> {
        let (lock, mut old, inner) = s.shell.into_parts();
        // SAFETY: the parts of one guard, `inner` used once.
        let inner = unsafe { inner.real(&lock) };
        let prim = lock.prim();
        let slot = Cell::new(Some(inner));
        let upgraded = probe::blocking_timed(
            prim,
            upgrade_acq(site),
            || try_upgrade_in(&slot),
            || {
                // UNWRAP: as in `upgrade`.
                let g = slot.take().expect("upgradable guard in its slot");
                match timed(g) {
                    Ok(w) => Some(w),
                    Err(g) => {
                        slot.set(Some(g));
                        None
                    }
                }
            },
        );
        match upgraded {
            Some((inner, token)) => {
                old.release(prim);
                Ok(RwLockWriteGuard::new(lock, inner, token))
            }
            // UNWRAP: both paths put the guard back in `slot` when they fail.
            None => Err(RwLockUpgradableReadGuard::new(
                lock,
                slot.take().expect("upgradable guard back in its slot"),
                old,
            )),
        }
    }

    /// Wrapper for [`parking_lot::RwLockUpgradableReadGuard::with_upgraded`]. lockscope
    /// records the upgrade as in [`upgrade`](RwLockUpgradableReadGuard::upgrade); the write
    /// hold ends (books first) when `f` returns or panics, and the upgradable one stays.
    ///
    /// ```
    /// use lockscope::parking_lot::RwLock;
    /// let r = RwLock::new(1);
    /// let mut u = r.upgradable_read();
    /// u.with_upgraded(|v| *v += 1);
    /// assert_eq!(*u, 2);
    /// ```
    #[track_caller]
    pub fn with_upgraded<Ret, F: FnOnce(&mut T) -> Ret>(&mut self, f: F) -> Ret {
        let site = Location::caller();
        let prim = Self::rwlock(self).prim();
        let raw = self.raw();
        let ((), token) = blocking(
            || prim,
            upgrade_acq(site),
            // SAFETY: this guard holds the upgradable lock.
            || unsafe { raw.try_upgrade() }.then_some(()),
            // SAFETY: as above.
            || unsafe { raw.upgrade() },
        );
        self.run_upgraded(Downgrade { prim, token, raw }, f)
    }

    /// Wrapper for [`parking_lot::RwLockUpgradableReadGuard::try_with_upgraded`].
    ///
    /// ```
    /// use lockscope::parking_lot::RwLock;
    /// let r = RwLock::new(1);
    /// let mut u = r.upgradable_read();
    /// let reader = r.read();
    /// assert_eq!(u.try_with_upgraded(|v| *v += 1), None);
    /// drop(reader);
    /// assert_eq!(u.try_with_upgraded(|v| *v), Some(1));
    /// ```
    #[track_caller]
    pub fn try_with_upgraded<Ret, F: FnOnce(&mut T) -> Ret>(&mut self, f: F) -> Option<Ret> {
        let site = Location::caller();
        let prim = Self::rwlock(self).prim();
        let raw = self.raw();
        // SAFETY: this guard holds the upgradable lock.
        let upgraded = unsafe { raw.try_upgrade() }.then_some(());
        let ((), token) = tried(|| prim, upgrade_acq(site), upgraded)?;
        Some(self.run_upgraded(Downgrade { prim, token, raw }, f))
    }

    timed_with_upgraded! {
        /// Wrapper for [`parking_lot::RwLockUpgradableReadGuard::try_with_upgraded_for`].
        ///
        /// ```
        /// use std::time::Duration;
        /// use lockscope::parking_lot::RwLock;
        /// let r = RwLock::new(1);
        /// let mut u = r.upgradable_read();
        /// assert_eq!(u.try_with_upgraded_for(Duration::from_millis(1), |v| *v), Some(1));
        /// ```
        fn try_with_upgraded_for(Duration) = try_upgrade_for;

        /// Wrapper for [`parking_lot::RwLockUpgradableReadGuard::try_with_upgraded_until`].
        ///
        /// ```
        /// use std::time::{Duration, Instant};
        /// use lockscope::parking_lot::RwLock;
        /// let r = RwLock::new(1);
        /// let mut u = r.upgradable_read();
        /// let deadline = Instant::now() + Duration::from_millis(1);
        /// assert_eq!(u.try_with_upgraded_until(deadline, |v| *v), Some(1));
        /// ```
        fn try_with_upgraded_until(Instant) = try_upgrade_until;
    }

    /// A timed `with_upgraded`: `timed` is parking_lot's timed raw upgrade.
    fn timed_upgraded<Ret>(
        &mut self,
        site: &'static Location<'static>,
        timed: impl FnOnce() -> bool,
        f: impl FnOnce(&mut T) -> Ret,
    ) -> Option<Ret> {
        let prim = Self::rwlock(self).prim();
        let raw = self.raw();
        let ((), token) = probe::blocking_timed(
            prim,
            upgrade_acq(site),
            // SAFETY: this guard holds the upgradable lock.
            || unsafe { raw.try_upgrade() }.then_some(()),
            || timed().then_some(()),
        )?;
        Some(self.run_upgraded(Downgrade { prim, token, raw }, f))
    }

    /// Runs `f` on the data while the lock is upgraded; `downgrade` ends the upgrade when `f`
    /// returns or panics.
    fn run_upgraded<Ret>(
        &mut self,
        downgrade: Downgrade<'_>,
        f: impl FnOnce(&mut T) -> Ret,
    ) -> Ret {
        let _downgrade = downgrade;
        // SAFETY: the lock is held exclusively until `_downgrade` drops, and `&mut self` keeps
        // this guard's own `&T` out meanwhile.
        f(unsafe { &mut *Self::rwlock(self).inner.data_ptr() })
    }
}
