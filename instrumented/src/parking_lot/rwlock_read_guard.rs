//! [`RwLockReadGuard`] and [`MappedRwLockReadGuard`].

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::panic::Location;

use lockscope_detector::hooks::{self, Mode};
use lockscope_detector::prim::Prim;

use super::rwlock::{RwLock, shared};
use super::{blocking, books_first, bumped, holds_shared_here, unlocked};
use crate::probe::{self, Token};

/// Wrapper for [`parking_lot::RwLockReadGuard`]: shared access until it drops.
///
/// ```
/// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
/// let r = RwLock::new(1);
/// let g: RwLockReadGuard<'_, i32> = r.read();
/// assert_eq!(*g, 1);
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    // `Drop::drop` releases the books first, then drops `inner`, which unlocks, then records
    // the hold time, outside the critical section.
    lock: &'a RwLock<T>,
    inner: ManuallyDrop<parking_lot::RwLockReadGuard<'a, T>>,
    token: Token,
}

// SAFETY: as parking_lot's `RwLockReadGuard`, which is `Sync` when `T: Sync`: a shared guard
// gives `&T`, and reaches the lock only while the guard keeps writers out.
unsafe impl<T: ?Sized + Sync> Sync for RwLockReadGuard<'_, T> {}

/// Wrapper for [`parking_lot::MappedRwLockReadGuard`], made by [`RwLockReadGuard::map`].
///
/// ```
/// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
/// let r = RwLock::new((1, 2));
/// assert_eq!(*RwLockReadGuard::map(r.read(), |t| &t.1), 2);
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct MappedRwLockReadGuard<'a, T: ?Sized> {
    // Dropped as `RwLockReadGuard`.
    prim: &'a Prim,
    inner: ManuallyDrop<parking_lot::MappedRwLockReadGuard<'a, T>>,
    token: Token,
}

impl<'a, T: ?Sized> RwLockReadGuard<'a, T> {
    #[inline]
    pub(super) fn new(
        lock: &'a RwLock<T>,
        inner: parking_lot::RwLockReadGuard<'a, T>,
        token: Token,
    ) -> Self {
        RwLockReadGuard {
            lock,
            token,
            inner: ManuallyDrop::new(inner),
        }
    }

    #[inline]
    pub(super) fn into_parts(
        s: Self,
    ) -> (&'a RwLock<T>, Token, parking_lot::RwLockReadGuard<'a, T>) {
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

    /// Wrapper for [`parking_lot::RwLockReadGuard::rwlock`].
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
    /// let r = RwLock::new(());
    /// let g = r.read();
    /// assert!(std::ptr::eq(RwLockReadGuard::rwlock(&g), &r));
    /// ```
    pub fn rwlock(s: &Self) -> &'a RwLock<T> {
        s.lock
    }

    /// Wrapper for [`parking_lot::RwLockReadGuard::map`].
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
    /// let r = RwLock::new([1, 2]);
    /// assert_eq!(*RwLockReadGuard::map(r.read(), |a| &a[0]), 1);
    /// ```
    #[inline]
    pub fn map<U: ?Sized, F>(s: Self, f: F) -> MappedRwLockReadGuard<'a, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let (lock, mut token, inner) = Self::into_parts(s);
        let prim = lock.prim();
        let inner =
            parking_lot::RwLockReadGuard::map(inner, |t| books_first(prim, &mut token, || f(t)));
        MappedRwLockReadGuard {
            prim,
            token,
            inner: ManuallyDrop::new(inner),
        }
    }

    /// Wrapper for [`parking_lot::RwLockReadGuard::try_map`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back when `f` returns `None`.
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
    /// let r = RwLock::new(vec![1]);
    /// assert!(RwLockReadGuard::try_map(r.read(), |v| v.get(3)).is_err());
    /// ```
    #[inline]
    pub fn try_map<U: ?Sized, F>(s: Self, f: F) -> Result<MappedRwLockReadGuard<'a, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let (lock, mut token, inner) = Self::into_parts(s);
        let prim = lock.prim();
        match parking_lot::RwLockReadGuard::try_map(inner, |t| {
            books_first(prim, &mut token, || f(t))
        }) {
            Ok(inner) => Ok(MappedRwLockReadGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
            Err(inner) => Err(RwLockReadGuard {
                lock,
                token,
                inner: ManuallyDrop::new(inner),
            }),
        }
    }

    /// Wrapper for [`parking_lot::RwLockReadGuard::try_map_or_err`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back, with `f`'s error, when `f` fails.
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
    /// let r = RwLock::new(vec![1]);
    /// assert!(RwLockReadGuard::try_map_or_err(r.read(), |v| v.get(3).ok_or(())).is_err());
    /// ```
    #[inline]
    pub fn try_map_or_err<U: ?Sized, F, E>(
        s: Self,
        f: F,
    ) -> Result<MappedRwLockReadGuard<'a, U>, (Self, E)>
    where
        F: FnOnce(&T) -> Result<&U, E>,
    {
        let (lock, mut token, inner) = Self::into_parts(s);
        let prim = lock.prim();
        match parking_lot::RwLockReadGuard::try_map_or_err(inner, |t| {
            books_first(prim, &mut token, || f(t))
        }) {
            Ok(inner) => Ok(MappedRwLockReadGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
            Err((inner, e)) => Err((
                RwLockReadGuard {
                    lock,
                    token,
                    inner: ManuallyDrop::new(inner),
                },
                e,
            )),
        }
    }

    /// Wrapper for [`parking_lot::RwLockReadGuard::unlocked`]. lockscope records the release
    /// and the re-lock (a plain `read`, as parking_lot's) at this call's site.
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
    /// let r = RwLock::new(0);
    /// let mut g = r.read();
    /// RwLockReadGuard::unlocked(&mut g, || *r.write() += 1);
    /// assert_eq!(*g, 1);
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
            // SAFETY: this guard holds a read lock, and `relock` re-takes one before the guard
            // is used again (also when `f` panics).
            || unsafe { lock.inner.force_unlock_read() },
            || relock(lock, site),
            f,
        )
    }

    /// Wrapper for [`parking_lot::RwLockReadGuard::unlock_fair`].
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
    /// let r = RwLock::new(());
    /// RwLockReadGuard::unlock_fair(r.read());
    /// assert!(!r.is_locked());
    /// ```
    #[inline]
    pub fn unlock_fair(s: Self) {
        let (lock, mut token, inner) = Self::into_parts(s);
        token.release(lock.prim());
        parking_lot::RwLockReadGuard::unlock_fair(inner);
    }

    /// Wrapper for [`parking_lot::RwLockReadGuard::unlocked_fair`]; see
    /// [`unlocked`](RwLockReadGuard::unlocked).
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
    /// let r = RwLock::new(0);
    /// let mut g = r.read();
    /// RwLockReadGuard::unlocked_fair(&mut g, || *r.write() += 1);
    /// assert_eq!(*g, 1);
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
            || unsafe { lock.inner.force_unlock_read_fair() },
            || relock(lock, site),
            f,
        )
    }

    /// Wrapper for [`parking_lot::RwLockReadGuard::bump`]; lockscope records a release and a
    /// new read hold at this call's site.
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
    /// let r = RwLock::new(());
    /// let mut g = r.read();
    /// RwLockReadGuard::bump(&mut g);
    /// ```
    #[track_caller]
    pub fn bump(s: &mut Self) {
        let site = Location::caller();
        let prim = s.lock.prim();
        let inner = &mut s.inner;
        bumped(
            prim,
            &mut s.token,
            || parking_lot::RwLockReadGuard::bump(inner),
            // With another read of this thread still held, parking_lot did not yield (it only
            // bumps the last reader): a re-entry, not a nested read.
            || {
                if holds_shared_here(prim) {
                    shared(site).with_flags(hooks::REENTRY)
                } else {
                    shared(site)
                }
            },
        );
    }
}

/// Re-takes a read lock after `unlocked` (a plain read, as parking_lot does); the new inner
/// guard is forgotten, the outer guard keeps its own.
fn relock<T: ?Sized>(lock: &RwLock<T>, site: &'static Location<'static>) -> Token {
    let (inner, token) = blocking(
        || lock.prim(),
        lock.read_acq(site, Mode::Shared),
        || lock.inner.try_read(),
        || lock.inner.read(),
    );
    std::mem::forget(inner);
    token
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
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

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

// ===== MappedRwLockReadGuard =====

impl<'a, T: ?Sized> MappedRwLockReadGuard<'a, T> {
    #[inline]
    fn into_parts(s: Self) -> (&'a Prim, Token, parking_lot::MappedRwLockReadGuard<'a, T>) {
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

    /// Wrapper for [`parking_lot::MappedRwLockReadGuard::map`].
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedRwLockReadGuard, RwLock, RwLockReadGuard};
    /// let r = RwLock::new(((1, 2), 3));
    /// let pair = RwLockReadGuard::map(r.read(), |t| &t.0);
    /// assert_eq!(*MappedRwLockReadGuard::map(pair, |p| &p.0), 1);
    /// ```
    #[inline]
    pub fn map<U: ?Sized, F>(s: Self, f: F) -> MappedRwLockReadGuard<'a, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let (prim, mut token, inner) = Self::into_parts(s);
        let inner = parking_lot::MappedRwLockReadGuard::map(inner, |t| {
            books_first(prim, &mut token, || f(t))
        });
        MappedRwLockReadGuard {
            prim,
            token,
            inner: ManuallyDrop::new(inner),
        }
    }

    /// Wrapper for [`parking_lot::MappedRwLockReadGuard::try_map`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back when `f` returns `None`.
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedRwLockReadGuard, RwLock, RwLockReadGuard};
    /// let r = RwLock::new(vec![vec![1]]);
    /// let row = RwLockReadGuard::map(r.read(), |v| &v[0]);
    /// assert!(MappedRwLockReadGuard::try_map(row, |r| r.get(5)).is_err());
    /// ```
    #[inline]
    pub fn try_map<U: ?Sized, F>(s: Self, f: F) -> Result<MappedRwLockReadGuard<'a, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let (prim, mut token, inner) = Self::into_parts(s);
        match parking_lot::MappedRwLockReadGuard::try_map(inner, |t| {
            books_first(prim, &mut token, || f(t))
        }) {
            Ok(inner) => Ok(MappedRwLockReadGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
            Err(inner) => Err(MappedRwLockReadGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
        }
    }

    /// Wrapper for [`parking_lot::MappedRwLockReadGuard::try_map_or_else`] (parking_lot's
    /// name for this guard's `try_map_or_err`).
    ///
    /// # Errors
    ///
    /// Gives the original guard back, with `f`'s error, when `f` fails.
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedRwLockReadGuard, RwLock, RwLockReadGuard};
    /// let r = RwLock::new(vec![vec![1]]);
    /// let row = RwLockReadGuard::map(r.read(), |v| &v[0]);
    /// assert!(MappedRwLockReadGuard::try_map_or_else(row, |r| r.get(5).ok_or(())).is_err());
    /// ```
    #[inline]
    pub fn try_map_or_else<U: ?Sized, F, E>(
        s: Self,
        f: F,
    ) -> Result<MappedRwLockReadGuard<'a, U>, (Self, E)>
    where
        F: FnOnce(&T) -> Result<&U, E>,
    {
        let (prim, mut token, inner) = Self::into_parts(s);
        match parking_lot::MappedRwLockReadGuard::try_map_or_else(inner, |t| {
            books_first(prim, &mut token, || f(t))
        }) {
            Ok(inner) => Ok(MappedRwLockReadGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
            Err((inner, e)) => Err((
                MappedRwLockReadGuard {
                    prim,
                    token,
                    inner: ManuallyDrop::new(inner),
                },
                e,
            )),
        }
    }

    /// Wrapper for [`parking_lot::MappedRwLockReadGuard::unlock_fair`].
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedRwLockReadGuard, RwLock, RwLockReadGuard};
    /// let r = RwLock::new((1, 2));
    /// MappedRwLockReadGuard::unlock_fair(RwLockReadGuard::map(r.read(), |t| &t.0));
    /// assert!(!r.is_locked());
    /// ```
    #[inline]
    pub fn unlock_fair(s: Self) {
        let (prim, mut token, inner) = Self::into_parts(s);
        token.release(prim);
        parking_lot::MappedRwLockReadGuard::unlock_fair(inner);
    }
}

impl<T: ?Sized> Drop for MappedRwLockReadGuard<'_, T> {
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

impl<T: ?Sized> Deref for MappedRwLockReadGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MappedRwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MappedRwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}
