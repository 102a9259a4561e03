//! [`ReentrantMutexGuard`] and [`MappedReentrantMutexGuard`].

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::panic::Location;

use lockscope_detector::hooks::{self, Mode};
use lockscope_detector::prim::Prim;

use super::remutex::ReentrantMutex;
use super::{acq, blocking, books_first, bumped, holds_here, unlocked};
use crate::probe::{self, Token};

/// Wrapper for [`parking_lot::ReentrantMutexGuard`]: one level of a (possibly re-entered)
/// hold, released when it drops. Always `!Send`, as parking_lot's.
///
/// ```
/// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
/// let m = ReentrantMutex::new(1);
/// let g: ReentrantMutexGuard<'_, i32> = m.lock();
/// assert_eq!(*g, 1);
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the ReentrantMutex will immediately unlock"]
pub struct ReentrantMutexGuard<'a, T: ?Sized> {
    // `Drop::drop` releases the books first, then drops `inner`, which unlocks, then records
    // the hold time, outside the critical section.
    lock: &'a ReentrantMutex<T>,
    inner: ManuallyDrop<parking_lot::ReentrantMutexGuard<'a, T>>,
    token: Token,
}

// SAFETY: as parking_lot's `ReentrantMutexGuard`, which is `Sync` when `T: Sync`: a shared
// guard gives `&T`, and reaches the mutex only while the guard keeps it locked.
unsafe impl<T: ?Sized + Sync> Sync for ReentrantMutexGuard<'_, T> {}

/// Wrapper for [`parking_lot::MappedReentrantMutexGuard`], made by
/// [`ReentrantMutexGuard::map`].
///
/// ```
/// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
/// let m = ReentrantMutex::new((1, 2));
/// let g = ReentrantMutexGuard::map(m.lock(), |t| &t.1);
/// assert_eq!(*g, 2);
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the ReentrantMutex will immediately unlock"]
pub struct MappedReentrantMutexGuard<'a, T: ?Sized> {
    // Dropped as `ReentrantMutexGuard`.
    prim: &'a Prim,
    inner: ManuallyDrop<parking_lot::MappedReentrantMutexGuard<'a, T>>,
    token: Token,
}

impl<'a, T: ?Sized> ReentrantMutexGuard<'a, T> {
    #[inline]
    pub(super) fn new(
        lock: &'a ReentrantMutex<T>,
        inner: parking_lot::ReentrantMutexGuard<'a, T>,
        token: Token,
    ) -> Self {
        ReentrantMutexGuard {
            lock,
            token,
            inner: ManuallyDrop::new(inner),
        }
    }

    #[inline]
    fn into_parts(
        s: Self,
    ) -> (
        &'a ReentrantMutex<T>,
        Token,
        parking_lot::ReentrantMutexGuard<'a, T>,
    ) {
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

    /// Wrapper for [`parking_lot::ReentrantMutexGuard::remutex`].
    ///
    /// ```
    /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
    /// let m = ReentrantMutex::new(());
    /// let g = m.lock();
    /// assert!(std::ptr::eq(ReentrantMutexGuard::remutex(&g), &m));
    /// ```
    pub fn remutex(s: &Self) -> &'a ReentrantMutex<T> {
        s.lock
    }

    /// Wrapper for [`parking_lot::ReentrantMutexGuard::map`].
    ///
    /// ```
    /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
    /// let m = ReentrantMutex::new([1, 2]);
    /// assert_eq!(*ReentrantMutexGuard::map(m.lock(), |a| &a[0]), 1);
    /// ```
    #[inline]
    pub fn map<U: ?Sized, F>(s: Self, f: F) -> MappedReentrantMutexGuard<'a, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let (lock, mut token, inner) = Self::into_parts(s);
        let prim = lock.prim();
        let inner = parking_lot::ReentrantMutexGuard::map(inner, |t| {
            books_first(prim, &mut token, || f(t))
        });
        MappedReentrantMutexGuard {
            prim,
            token,
            inner: ManuallyDrop::new(inner),
        }
    }

    /// Wrapper for [`parking_lot::ReentrantMutexGuard::try_map`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back when `f` returns `None`.
    ///
    /// ```
    /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
    /// let m = ReentrantMutex::new(vec![1]);
    /// assert!(ReentrantMutexGuard::try_map(m.lock(), |v| v.get(4)).is_err());
    /// ```
    #[inline]
    pub fn try_map<U: ?Sized, F>(s: Self, f: F) -> Result<MappedReentrantMutexGuard<'a, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let (lock, mut token, inner) = Self::into_parts(s);
        let prim = lock.prim();
        match parking_lot::ReentrantMutexGuard::try_map(inner, |t| {
            books_first(prim, &mut token, || f(t))
        }) {
            Ok(inner) => Ok(MappedReentrantMutexGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
            Err(inner) => Err(ReentrantMutexGuard {
                lock,
                token,
                inner: ManuallyDrop::new(inner),
            }),
        }
    }

    /// Wrapper for [`parking_lot::ReentrantMutexGuard::try_map_or_err`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back, with `f`'s error, when `f` fails.
    ///
    /// ```
    /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
    /// let m = ReentrantMutex::new(vec![1]);
    /// let r = ReentrantMutexGuard::try_map_or_err(m.lock(), |v| v.first().ok_or(()));
    /// assert_eq!(*r.ok().unwrap(), 1);
    /// ```
    #[inline]
    pub fn try_map_or_err<U: ?Sized, F, E>(
        s: Self,
        f: F,
    ) -> Result<MappedReentrantMutexGuard<'a, U>, (Self, E)>
    where
        F: FnOnce(&T) -> Result<&U, E>,
    {
        let (lock, mut token, inner) = Self::into_parts(s);
        let prim = lock.prim();
        match parking_lot::ReentrantMutexGuard::try_map_or_err(inner, |t| {
            books_first(prim, &mut token, || f(t))
        }) {
            Ok(inner) => Ok(MappedReentrantMutexGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
            Err((inner, e)) => Err((
                ReentrantMutexGuard {
                    lock,
                    token,
                    inner: ManuallyDrop::new(inner),
                },
                e,
            )),
        }
    }

    /// Wrapper for [`parking_lot::ReentrantMutexGuard::unlocked`]: releases this level of the
    /// hold (the mutex itself only if it was the last), and records the re-lock as a new
    /// acquisition at this call's site.
    ///
    /// ```
    /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
    /// let m = ReentrantMutex::new(());
    /// let mut g = m.lock();
    /// ReentrantMutexGuard::unlocked(&mut g, || assert!(!m.is_locked()));
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
            // SAFETY: this guard holds one level of the lock, and `relock` re-takes it before
            // the guard is used again (also when `f` panics).
            || unsafe { lock.inner.force_unlock() },
            || relock(lock, site),
            f,
        )
    }

    /// Wrapper for [`parking_lot::ReentrantMutexGuard::unlock_fair`].
    ///
    /// ```
    /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
    /// let m = ReentrantMutex::new(());
    /// ReentrantMutexGuard::unlock_fair(m.lock());
    /// assert!(!m.is_locked());
    /// ```
    #[inline]
    pub fn unlock_fair(s: Self) {
        let (lock, mut token, inner) = Self::into_parts(s);
        token.release(lock.prim());
        parking_lot::ReentrantMutexGuard::unlock_fair(inner);
    }

    /// Wrapper for [`parking_lot::ReentrantMutexGuard::unlocked_fair`]; see
    /// [`unlocked`](ReentrantMutexGuard::unlocked).
    ///
    /// ```
    /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
    /// let m = ReentrantMutex::new(());
    /// let mut g = m.lock();
    /// ReentrantMutexGuard::unlocked_fair(&mut g, || assert!(!m.is_locked()));
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
            || unsafe { lock.inner.force_unlock_fair() },
            || relock(lock, site),
            f,
        )
    }

    /// Wrapper for [`parking_lot::ReentrantMutexGuard::bump`]; lockscope records a release
    /// and a new hold at this call's site.
    ///
    /// ```
    /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
    /// let m = ReentrantMutex::new(());
    /// let mut g = m.lock();
    /// ReentrantMutexGuard::bump(&mut g);
    /// ```
    #[track_caller]
    pub fn bump(s: &mut Self) {
        let site = Location::caller();
        let prim = s.lock.prim();
        let inner = &mut s.inner;
        bumped(
            prim,
            &mut s.token,
            || parking_lot::ReentrantMutexGuard::bump(inner),
            // Other levels of this thread's hold still in the books: parking_lot did not yield
            // (it only bumps the last level), so this is a re-entry.
            || {
                let a = acq(site, Mode::Exclusive);
                if holds_here(prim, |_| true) {
                    a.with_flags(hooks::REENTRY)
                } else {
                    a
                }
            },
        );
    }
}

/// Re-takes one level of `lock` after `unlocked`; the new inner guard is forgotten (the outer
/// guard keeps its own).
fn relock<T: ?Sized>(lock: &ReentrantMutex<T>, site: &'static Location<'static>) -> Token {
    let (inner, token) = blocking(
        || lock.prim(),
        lock.acq(site),
        || lock.inner.try_lock(),
        || lock.inner.lock(),
    );
    std::mem::forget(inner);
    token
}

impl<T: ?Sized> Drop for ReentrantMutexGuard<'_, T> {
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

impl<T: ?Sized> Deref for ReentrantMutexGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for ReentrantMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for ReentrantMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

// ===== MappedReentrantMutexGuard =====

impl<'a, T: ?Sized> MappedReentrantMutexGuard<'a, T> {
    #[inline]
    fn into_parts(
        s: Self,
    ) -> (
        &'a Prim,
        Token,
        parking_lot::MappedReentrantMutexGuard<'a, T>,
    ) {
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

    /// Wrapper for [`parking_lot::MappedReentrantMutexGuard::map`].
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedReentrantMutexGuard, ReentrantMutex, ReentrantMutexGuard};
    /// let m = ReentrantMutex::new(((1, 2), 3));
    /// let pair = ReentrantMutexGuard::map(m.lock(), |t| &t.0);
    /// assert_eq!(*MappedReentrantMutexGuard::map(pair, |p| &p.1), 2);
    /// ```
    #[inline]
    pub fn map<U: ?Sized, F>(s: Self, f: F) -> MappedReentrantMutexGuard<'a, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let (prim, mut token, inner) = Self::into_parts(s);
        let inner = parking_lot::MappedReentrantMutexGuard::map(inner, |t| {
            books_first(prim, &mut token, || f(t))
        });
        MappedReentrantMutexGuard {
            prim,
            token,
            inner: ManuallyDrop::new(inner),
        }
    }

    /// Wrapper for [`parking_lot::MappedReentrantMutexGuard::try_map`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back when `f` returns `None`.
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedReentrantMutexGuard, ReentrantMutex, ReentrantMutexGuard};
    /// let m = ReentrantMutex::new(vec![vec![1]]);
    /// let row = ReentrantMutexGuard::map(m.lock(), |v| &v[0]);
    /// assert!(MappedReentrantMutexGuard::try_map(row, |r| r.get(9)).is_err());
    /// ```
    #[inline]
    pub fn try_map<U: ?Sized, F>(s: Self, f: F) -> Result<MappedReentrantMutexGuard<'a, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let (prim, mut token, inner) = Self::into_parts(s);
        match parking_lot::MappedReentrantMutexGuard::try_map(inner, |t| {
            books_first(prim, &mut token, || f(t))
        }) {
            Ok(inner) => Ok(MappedReentrantMutexGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
            Err(inner) => Err(MappedReentrantMutexGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
        }
    }

    /// Wrapper for [`parking_lot::MappedReentrantMutexGuard::try_map_or_err`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back, with `f`'s error, when `f` fails.
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedReentrantMutexGuard, ReentrantMutex, ReentrantMutexGuard};
    /// let m = ReentrantMutex::new(vec![vec![1]]);
    /// let row = ReentrantMutexGuard::map(m.lock(), |v| &v[0]);
    /// assert!(MappedReentrantMutexGuard::try_map_or_err(row, |r| r.get(9).ok_or(())).is_err());
    /// ```
    #[inline]
    pub fn try_map_or_err<U: ?Sized, F, E>(
        s: Self,
        f: F,
    ) -> Result<MappedReentrantMutexGuard<'a, U>, (Self, E)>
    where
        F: FnOnce(&T) -> Result<&U, E>,
    {
        let (prim, mut token, inner) = Self::into_parts(s);
        match parking_lot::MappedReentrantMutexGuard::try_map_or_err(inner, |t| {
            books_first(prim, &mut token, || f(t))
        }) {
            Ok(inner) => Ok(MappedReentrantMutexGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
            Err((inner, e)) => Err((
                MappedReentrantMutexGuard {
                    prim,
                    token,
                    inner: ManuallyDrop::new(inner),
                },
                e,
            )),
        }
    }

    /// Wrapper for [`parking_lot::MappedReentrantMutexGuard::unlock_fair`].
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedReentrantMutexGuard, ReentrantMutex, ReentrantMutexGuard};
    /// let m = ReentrantMutex::new((1, 2));
    /// MappedReentrantMutexGuard::unlock_fair(ReentrantMutexGuard::map(m.lock(), |t| &t.0));
    /// assert!(!m.is_locked());
    /// ```
    #[inline]
    pub fn unlock_fair(s: Self) {
        let (prim, mut token, inner) = Self::into_parts(s);
        token.release(prim);
        parking_lot::MappedReentrantMutexGuard::unlock_fair(inner);
    }
}

impl<T: ?Sized> Drop for MappedReentrantMutexGuard<'_, T> {
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

impl<T: ?Sized> Deref for MappedReentrantMutexGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MappedReentrantMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MappedReentrantMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}
