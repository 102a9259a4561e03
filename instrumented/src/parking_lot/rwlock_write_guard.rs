//! [`RwLockWriteGuard`] and [`MappedRwLockWriteGuard`].

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::panic::Location;

use lockscope_detector::hooks::Mode;
use lockscope_detector::prim::Prim;

use super::rwlock::{RwLock, exclusive};
use super::rwlock_read_guard::RwLockReadGuard;
use super::rwlock_upgradable_guard::RwLockUpgradableReadGuard;
use super::{blocking, books_first, bumped, unlocked};
use crate::probe::{self, Token};

/// Wrapper for [`parking_lot::RwLockWriteGuard`]: exclusive access until it drops.
///
/// ```
/// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
/// let r = RwLock::new(1);
/// let mut g: RwLockWriteGuard<'_, i32> = r.write();
/// *g += 1;
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    // `Drop::drop` releases the books first, then drops `inner`, which unlocks, then records
    // the hold time, outside the critical section.
    lock: &'a RwLock<T>,
    inner: ManuallyDrop<parking_lot::RwLockWriteGuard<'a, T>>,
    token: Token,
}

// SAFETY: as parking_lot's `RwLockWriteGuard`, which is `Sync` when `T: Sync`: a shared guard
// gives `&T`, and reaches the lock only while the guard holds it.
unsafe impl<T: ?Sized + Sync> Sync for RwLockWriteGuard<'_, T> {}

/// Wrapper for [`parking_lot::MappedRwLockWriteGuard`], made by [`RwLockWriteGuard::map`].
///
/// ```
/// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
/// let r = RwLock::new((1, 2));
/// *RwLockWriteGuard::map(r.write(), |t| &mut t.0) = 5;
/// assert_eq!(*r.read(), (5, 2));
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct MappedRwLockWriteGuard<'a, T: ?Sized> {
    // Dropped as `RwLockWriteGuard`.
    prim: &'a Prim,
    inner: ManuallyDrop<parking_lot::MappedRwLockWriteGuard<'a, T>>,
    token: Token,
}

impl<'a, T: ?Sized> RwLockWriteGuard<'a, T> {
    #[inline]
    pub(super) fn new(
        lock: &'a RwLock<T>,
        inner: parking_lot::RwLockWriteGuard<'a, T>,
        token: Token,
    ) -> Self {
        RwLockWriteGuard {
            lock,
            token,
            inner: ManuallyDrop::new(inner),
        }
    }

    #[inline]
    pub(super) fn into_parts(
        s: Self,
    ) -> (&'a RwLock<T>, Token, parking_lot::RwLockWriteGuard<'a, T>) {
        let s = ManuallyDrop::new(s);
        // SAFETY: `s` is never dropped or used again, so each field is moved out exactly once.
        unsafe {
            (
                s.lock,
                std::ptr::read(&s.token),
                ManuallyDrop::into_inner(std::ptr::read(&s.inner)),
            )
        }
    }

    /// Wrapper for [`parking_lot::RwLockWriteGuard::rwlock`].
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
    /// let r = RwLock::new(());
    /// let g = r.write();
    /// assert!(std::ptr::eq(RwLockWriteGuard::rwlock(&g), &r));
    /// ```
    pub fn rwlock(s: &Self) -> &'a RwLock<T> {
        s.lock
    }

    /// Wrapper for [`parking_lot::RwLockWriteGuard::map`].
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
    /// let r = RwLock::new([1, 2]);
    /// *RwLockWriteGuard::map(r.write(), |a| &mut a[1]) = 3;
    /// assert_eq!(*r.read(), [1, 3]);
    /// ```
    #[inline]
    pub fn map<U: ?Sized, F>(s: Self, f: F) -> MappedRwLockWriteGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let (lock, mut token, inner) = Self::into_parts(s);
        let prim = lock.prim();
        let inner =
            parking_lot::RwLockWriteGuard::map(inner, |t| books_first(prim, &mut token, || f(t)));
        MappedRwLockWriteGuard {
            prim,
            token,
            inner: ManuallyDrop::new(inner),
        }
    }

    /// Wrapper for [`parking_lot::RwLockWriteGuard::try_map`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back when `f` returns `None`.
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
    /// let r = RwLock::new(vec![1]);
    /// assert!(RwLockWriteGuard::try_map(r.write(), |v| v.get_mut(3)).is_err());
    /// ```
    #[inline]
    pub fn try_map<U: ?Sized, F>(s: Self, f: F) -> Result<MappedRwLockWriteGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let (lock, mut token, inner) = Self::into_parts(s);
        let prim = lock.prim();
        match parking_lot::RwLockWriteGuard::try_map(inner, |t| {
            books_first(prim, &mut token, || f(t))
        }) {
            Ok(inner) => Ok(MappedRwLockWriteGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
            Err(inner) => Err(RwLockWriteGuard {
                lock,
                token,
                inner: ManuallyDrop::new(inner),
            }),
        }
    }

    /// Wrapper for [`parking_lot::RwLockWriteGuard::try_map_or_err`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back, with `f`'s error, when `f` fails.
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
    /// let r = RwLock::new(vec![1]);
    /// assert!(RwLockWriteGuard::try_map_or_err(r.write(), |v| v.get_mut(3).ok_or(())).is_err());
    /// ```
    #[inline]
    pub fn try_map_or_err<U: ?Sized, F, E>(
        s: Self,
        f: F,
    ) -> Result<MappedRwLockWriteGuard<'a, U>, (Self, E)>
    where
        F: FnOnce(&mut T) -> Result<&mut U, E>,
    {
        let (lock, mut token, inner) = Self::into_parts(s);
        let prim = lock.prim();
        match parking_lot::RwLockWriteGuard::try_map_or_err(inner, |t| {
            books_first(prim, &mut token, || f(t))
        }) {
            Ok(inner) => Ok(MappedRwLockWriteGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
            Err((inner, e)) => Err((
                RwLockWriteGuard {
                    lock,
                    token,
                    inner: ManuallyDrop::new(inner),
                },
                e,
            )),
        }
    }

    /// Wrapper for [`parking_lot::RwLockWriteGuard::unlocked`]. lockscope records the release
    /// and the re-lock (a write) at this call's site.
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
    /// let r = RwLock::new(0);
    /// let mut g = r.write();
    /// RwLockWriteGuard::unlocked(&mut g, || assert_eq!(*r.read(), 0));
    /// *g += 1;
    /// ```
    #[track_caller]
    pub fn unlocked<F, U>(s: &mut Self, f: F) -> U
    where
        F: FnOnce() -> U,
    {
        let site = Location::caller();
        let lock = s.lock;
        unlocked(
            lock.prim(),
            &mut s.token,
            // SAFETY: this guard holds the write lock, and `relock` re-takes it before the
            // guard is used again (also when `f` panics).
            || unsafe { lock.inner.force_unlock_write() },
            || relock(lock, site),
            f,
        )
    }

    /// Wrapper for [`parking_lot::RwLockWriteGuard::downgrade`]: lockscope rewrites the hold
    /// as a read (before parking_lot lets other readers in).
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
    /// let r = RwLock::new(1);
    /// let mut w = r.write();
    /// *w += 1;
    /// let g = RwLockWriteGuard::downgrade(w);
    /// assert_eq!(*r.try_read().unwrap(), 2);
    /// drop(g);
    /// ```
    pub fn downgrade(s: Self) -> RwLockReadGuard<'a, T> {
        let (lock, mut token, inner) = Self::into_parts(s);
        // Books first: weaker in the books before it is weaker in fact.
        token.update(lock.prim(), 1, Mode::Shared);
        RwLockReadGuard::new(lock, parking_lot::RwLockWriteGuard::downgrade(inner), token)
    }

    /// Wrapper for [`parking_lot::RwLockWriteGuard::downgrade_to_upgradable`]: lockscope
    /// rewrites the hold as an upgradable read.
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
    /// let r = RwLock::new(1);
    /// let u = RwLockWriteGuard::downgrade_to_upgradable(r.write());
    /// assert!(r.try_read().is_some());
    /// assert!(r.try_upgradable_read().is_none());
    /// drop(u);
    /// ```
    pub fn downgrade_to_upgradable(s: Self) -> RwLockUpgradableReadGuard<'a, T> {
        let (lock, mut token, inner) = Self::into_parts(s);
        // Books first, as in `downgrade`.
        token.update(lock.prim(), 1, Mode::Upgradable);
        let inner = parking_lot::RwLockWriteGuard::downgrade_to_upgradable(inner);
        RwLockUpgradableReadGuard::new(lock, inner, token)
    }

    /// Wrapper for [`parking_lot::RwLockWriteGuard::unlock_fair`].
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
    /// let r = RwLock::new(());
    /// RwLockWriteGuard::unlock_fair(r.write());
    /// assert!(!r.is_locked());
    /// ```
    #[inline]
    pub fn unlock_fair(s: Self) {
        let (lock, mut token, inner) = Self::into_parts(s);
        token.release(lock.prim());
        parking_lot::RwLockWriteGuard::unlock_fair(inner);
    }

    /// Wrapper for [`parking_lot::RwLockWriteGuard::unlocked_fair`]; see
    /// [`unlocked`](RwLockWriteGuard::unlocked).
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
    /// let r = RwLock::new(0);
    /// let mut g = r.write();
    /// RwLockWriteGuard::unlocked_fair(&mut g, || assert!(!r.is_locked()));
    /// ```
    #[track_caller]
    pub fn unlocked_fair<F, U>(s: &mut Self, f: F) -> U
    where
        F: FnOnce() -> U,
    {
        let site = Location::caller();
        let lock = s.lock;
        unlocked(
            lock.prim(),
            &mut s.token,
            // SAFETY: as in `unlocked`.
            || unsafe { lock.inner.force_unlock_write_fair() },
            || relock(lock, site),
            f,
        )
    }

    /// Wrapper for [`parking_lot::RwLockWriteGuard::bump`]; lockscope records a release and a
    /// new write hold at this call's site.
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
    /// let r = RwLock::new(());
    /// let mut g = r.write();
    /// RwLockWriteGuard::bump(&mut g);
    /// ```
    #[track_caller]
    pub fn bump(s: &mut Self) {
        let site = Location::caller();
        let prim = s.lock.prim();
        let inner = &mut s.inner;
        bumped(
            prim,
            &mut s.token,
            || parking_lot::RwLockWriteGuard::bump(inner),
            || exclusive(site),
        );
    }
}

/// Re-takes the write lock after `unlocked`; the new inner guard is forgotten, the outer guard
/// keeps its own.
fn relock<T: ?Sized>(lock: &RwLock<T>, site: &'static Location<'static>) -> Token {
    let (inner, token) = blocking(
        || lock.prim(),
        exclusive(site),
        || lock.inner.try_write(),
        || lock.inner.write(),
    );
    std::mem::forget(inner);
    token
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // Books first, then the unlock, then the statistics (out of the critical section).
        let prim = self.lock.prim();
        let released = self.token.release_books(prim);
        // SAFETY: `inner` is dropped once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
        probe::release_stats(prim, released);
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

// ===== MappedRwLockWriteGuard =====

impl<'a, T: ?Sized> MappedRwLockWriteGuard<'a, T> {
    #[inline]
    fn into_parts(s: Self) -> (&'a Prim, Token, parking_lot::MappedRwLockWriteGuard<'a, T>) {
        let s = ManuallyDrop::new(s);
        // SAFETY: `s` is never dropped or used again, so each field is moved out exactly once.
        unsafe {
            (
                s.prim,
                std::ptr::read(&s.token),
                ManuallyDrop::into_inner(std::ptr::read(&s.inner)),
            )
        }
    }

    /// Wrapper for [`parking_lot::MappedRwLockWriteGuard::map`].
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedRwLockWriteGuard, RwLock, RwLockWriteGuard};
    /// let r = RwLock::new(((1, 2), 3));
    /// let pair = RwLockWriteGuard::map(r.write(), |t| &mut t.0);
    /// *MappedRwLockWriteGuard::map(pair, |p| &mut p.1) = 9;
    /// assert_eq!(r.read().0 .1, 9);
    /// ```
    #[inline]
    pub fn map<U: ?Sized, F>(s: Self, f: F) -> MappedRwLockWriteGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let (prim, mut token, inner) = Self::into_parts(s);
        let inner = parking_lot::MappedRwLockWriteGuard::map(inner, |t| {
            books_first(prim, &mut token, || f(t))
        });
        MappedRwLockWriteGuard {
            prim,
            token,
            inner: ManuallyDrop::new(inner),
        }
    }

    /// Wrapper for [`parking_lot::MappedRwLockWriteGuard::try_map`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back when `f` returns `None`.
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedRwLockWriteGuard, RwLock, RwLockWriteGuard};
    /// let r = RwLock::new(vec![vec![1]]);
    /// let row = RwLockWriteGuard::map(r.write(), |v| &mut v[0]);
    /// assert!(MappedRwLockWriteGuard::try_map(row, |r| r.get_mut(5)).is_err());
    /// ```
    #[inline]
    pub fn try_map<U: ?Sized, F>(s: Self, f: F) -> Result<MappedRwLockWriteGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let (prim, mut token, inner) = Self::into_parts(s);
        match parking_lot::MappedRwLockWriteGuard::try_map(inner, |t| {
            books_first(prim, &mut token, || f(t))
        }) {
            Ok(inner) => Ok(MappedRwLockWriteGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
            Err(inner) => Err(MappedRwLockWriteGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
        }
    }

    /// Wrapper for [`parking_lot::MappedRwLockWriteGuard::try_map_or_err`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back, with `f`'s error, when `f` fails.
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedRwLockWriteGuard, RwLock, RwLockWriteGuard};
    /// let r = RwLock::new(vec![vec![1]]);
    /// let row = RwLockWriteGuard::map(r.write(), |v| &mut v[0]);
    /// assert!(MappedRwLockWriteGuard::try_map_or_err(row, |r| r.get_mut(5).ok_or(())).is_err());
    /// ```
    #[inline]
    pub fn try_map_or_err<U: ?Sized, F, E>(
        s: Self,
        f: F,
    ) -> Result<MappedRwLockWriteGuard<'a, U>, (Self, E)>
    where
        F: FnOnce(&mut T) -> Result<&mut U, E>,
    {
        let (prim, mut token, inner) = Self::into_parts(s);
        match parking_lot::MappedRwLockWriteGuard::try_map_or_err(inner, |t| {
            books_first(prim, &mut token, || f(t))
        }) {
            Ok(inner) => Ok(MappedRwLockWriteGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
            Err((inner, e)) => Err((
                MappedRwLockWriteGuard {
                    prim,
                    token,
                    inner: ManuallyDrop::new(inner),
                },
                e,
            )),
        }
    }

    /// Wrapper for [`parking_lot::MappedRwLockWriteGuard::unlock_fair`].
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedRwLockWriteGuard, RwLock, RwLockWriteGuard};
    /// let r = RwLock::new((1, 2));
    /// MappedRwLockWriteGuard::unlock_fair(RwLockWriteGuard::map(r.write(), |t| &mut t.0));
    /// assert!(!r.is_locked());
    /// ```
    #[inline]
    pub fn unlock_fair(s: Self) {
        let (prim, mut token, inner) = Self::into_parts(s);
        token.release(prim);
        parking_lot::MappedRwLockWriteGuard::unlock_fair(inner);
    }
}

impl<T: ?Sized> Drop for MappedRwLockWriteGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // Books first, then the unlock, then the statistics (out of the critical section).
        let prim = self.prim;
        let released = self.token.release_books(prim);
        // SAFETY: `inner` is dropped once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
        probe::release_stats(prim, released);
    }
}

impl<T: ?Sized> Deref for MappedRwLockWriteGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> DerefMut for MappedRwLockWriteGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MappedRwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MappedRwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}
