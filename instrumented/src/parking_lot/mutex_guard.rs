//! [`MutexGuard`] and [`MappedMutexGuard`].

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::panic::Location;

use lockscope_detector::hooks::Mode;
use lockscope_detector::prim::Prim;

use super::mutex::Mutex;
use super::{acq, blocking, books_first, bumped, unlocked};
use crate::probe::{self, Token};

/// Wrapper for [`parking_lot::MutexGuard`]: the mutex is held until it drops.
///
/// Dropping it records the release in lockscope's books, then unlocks. Like parking_lot's,
/// it is `!Send` unless parking_lot's `send_guard` feature is on.
///
/// ```
/// use lockscope::parking_lot::{Mutex, MutexGuard};
/// let m = Mutex::new(vec![1]);
/// let mut g: MutexGuard<'_, Vec<i32>> = m.lock();
/// g.push(2);
/// assert_eq!(*g, [1, 2]);
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MutexGuard<'a, T: ?Sized> {
    // `Drop::drop` releases the books first (`token.release_books`), then drops `inner`,
    // which unlocks, then records the hold time, outside the critical section. Never two
    // holders in the books.
    pub(super) lock: &'a Mutex<T>,
    pub(super) inner: ManuallyDrop<parking_lot::MutexGuard<'a, T>>,
    pub(super) token: Token,
}

// SAFETY: as parking_lot's `MutexGuard`, which is `Sync` when `T: Sync`: a shared guard gives
// `&T`, and reaches the mutex only while the guard keeps it locked. The token is `Sync`.
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

/// Wrapper for [`parking_lot::MappedMutexGuard`]: a guard for part of the locked data, made
/// by [`MutexGuard::map`].
///
/// ```
/// use lockscope::parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
/// let m = Mutex::new((1, 2));
/// let second: MappedMutexGuard<'_, i32> = MutexGuard::map(m.lock(), |t| &mut t.1);
/// assert_eq!(*second, 2);
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MappedMutexGuard<'a, T: ?Sized> {
    // Dropped as `MutexGuard`.
    prim: &'a Prim,
    inner: ManuallyDrop<parking_lot::MappedMutexGuard<'a, T>>,
    token: Token,
}

#[inline]
fn excl(site: &'static Location<'static>) -> lockscope_detector::hooks::Acq {
    acq(site, Mode::Exclusive)
}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    #[inline]
    pub(super) fn new(
        lock: &'a Mutex<T>,
        inner: parking_lot::MutexGuard<'a, T>,
        token: Token,
    ) -> Self {
        MutexGuard {
            lock,
            token,
            inner: ManuallyDrop::new(inner),
        }
    }

    /// Takes the guard apart without running its `Drop`.
    #[inline]
    pub(super) fn into_parts(s: Self) -> (&'a Mutex<T>, Token, parking_lot::MutexGuard<'a, T>) {
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

    /// Wrapper for [`parking_lot::MutexGuard::mutex`].
    ///
    /// ```
    /// use lockscope::parking_lot::{Mutex, MutexGuard};
    /// let m = Mutex::new(());
    /// let g = m.lock();
    /// assert!(std::ptr::eq(MutexGuard::mutex(&g), &m));
    /// ```
    pub fn mutex(s: &Self) -> &'a Mutex<T> {
        s.lock
    }

    /// Wrapper for [`parking_lot::MutexGuard::map`]. The hold carries over to the new guard;
    /// if `f` panics, the mutex is released as by a drop.
    ///
    /// ```
    /// use lockscope::parking_lot::{Mutex, MutexGuard};
    /// let m = Mutex::new([1, 2]);
    /// let mut g = MutexGuard::map(m.lock(), |a| &mut a[1]);
    /// *g = 5;
    /// drop(g);
    /// assert_eq!(*m.lock(), [1, 5]);
    /// ```
    #[inline]
    pub fn map<U: ?Sized, F>(s: Self, f: F) -> MappedMutexGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let (lock, mut token, inner) = Self::into_parts(s);
        let prim = lock.prim();
        let inner = parking_lot::MutexGuard::map(inner, |t| books_first(prim, &mut token, || f(t)));
        MappedMutexGuard {
            prim,
            token,
            inner: ManuallyDrop::new(inner),
        }
    }

    /// Wrapper for [`parking_lot::MutexGuard::try_map`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back when `f` returns `None`.
    ///
    /// ```
    /// use lockscope::parking_lot::{Mutex, MutexGuard};
    /// let m = Mutex::new(vec![1]);
    /// let g = MutexGuard::try_map(m.lock(), |v| v.get_mut(5));
    /// assert!(g.is_err());
    /// ```
    #[inline]
    pub fn try_map<U: ?Sized, F>(s: Self, f: F) -> Result<MappedMutexGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let (lock, mut token, inner) = Self::into_parts(s);
        let prim = lock.prim();
        match parking_lot::MutexGuard::try_map(inner, |t| books_first(prim, &mut token, || f(t))) {
            Ok(inner) => Ok(MappedMutexGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
            Err(inner) => Err(MutexGuard {
                lock,
                token,
                inner: ManuallyDrop::new(inner),
            }),
        }
    }

    /// Wrapper for [`parking_lot::MutexGuard::try_map_or_err`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back, with `f`'s error, when `f` fails.
    ///
    /// ```
    /// use lockscope::parking_lot::{Mutex, MutexGuard};
    /// let m = Mutex::new(vec![1]);
    /// let r = MutexGuard::try_map_or_err(m.lock(), |v| v.get_mut(3).ok_or("no such item"));
    /// assert_eq!(r.err().map(|(_, e)| e), Some("no such item"));
    /// ```
    #[inline]
    pub fn try_map_or_err<U: ?Sized, F, E>(
        s: Self,
        f: F,
    ) -> Result<MappedMutexGuard<'a, U>, (Self, E)>
    where
        F: FnOnce(&mut T) -> Result<&mut U, E>,
    {
        let (lock, mut token, inner) = Self::into_parts(s);
        let prim = lock.prim();
        match parking_lot::MutexGuard::try_map_or_err(inner, |t| {
            books_first(prim, &mut token, || f(t))
        }) {
            Ok(inner) => Ok(MappedMutexGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
            Err((inner, e)) => Err((
                MutexGuard {
                    lock,
                    token,
                    inner: ManuallyDrop::new(inner),
                },
                e,
            )),
        }
    }

    /// Wrapper for [`parking_lot::MutexGuard::unlocked`]. lockscope records the release, and
    /// the re-lock (at this call's site) as a new acquisition, with its wait if it waits.
    ///
    /// ```
    /// use lockscope::parking_lot::{Mutex, MutexGuard};
    /// let m = Mutex::new(0);
    /// let mut g = m.lock();
    /// MutexGuard::unlocked(&mut g, || assert!(!m.is_locked()));
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
            // SAFETY: this guard holds the lock, and `relock` re-takes it before the guard is
            // used again (also when `f` panics).
            || unsafe { lock.inner.force_unlock() },
            || relock(lock, site),
            f,
        )
    }

    /// Wrapper for [`parking_lot::MutexGuard::leak`]. lockscope records the release now: the
    /// mutex stays locked (until [`Mutex::force_unlock`]), but no longer in lockscope's books.
    ///
    /// ```
    /// use lockscope::parking_lot::{Mutex, MutexGuard};
    /// let m = Mutex::new(1);
    /// let data: &mut i32 = MutexGuard::leak(m.lock());
    /// *data = 2;
    /// assert!(m.is_locked());
    /// ```
    pub fn leak(s: Self) -> &'a mut T {
        let (lock, mut token, inner) = Self::into_parts(s);
        token.release(lock.prim());
        parking_lot::MutexGuard::leak(inner)
    }

    /// Wrapper for [`parking_lot::MutexGuard::unlock_fair`]: hands the mutex directly to a
    /// waiting thread, if there is one.
    ///
    /// ```
    /// use lockscope::parking_lot::{Mutex, MutexGuard};
    /// let m = Mutex::new(());
    /// MutexGuard::unlock_fair(m.lock());
    /// assert!(!m.is_locked());
    /// ```
    #[inline]
    pub fn unlock_fair(s: Self) {
        let (lock, mut token, inner) = Self::into_parts(s);
        token.release(lock.prim());
        parking_lot::MutexGuard::unlock_fair(inner);
    }

    /// Wrapper for [`parking_lot::MutexGuard::unlocked_fair`]; see
    /// [`unlocked`](MutexGuard::unlocked).
    ///
    /// ```
    /// use lockscope::parking_lot::{Mutex, MutexGuard};
    /// let m = Mutex::new(0);
    /// let mut g = m.lock();
    /// MutexGuard::unlocked_fair(&mut g, || assert!(m.try_lock().is_some()));
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

    /// Wrapper for [`parking_lot::MutexGuard::bump`]. lockscope records a release and a new
    /// hold at this call's site (parking_lot does not say whether it yielded).
    ///
    /// ```
    /// use lockscope::parking_lot::{Mutex, MutexGuard};
    /// let m = Mutex::new(0);
    /// let mut g = m.lock();
    /// MutexGuard::bump(&mut g);
    /// *g += 1;
    /// ```
    #[track_caller]
    pub fn bump(s: &mut Self) {
        let site = Location::caller();
        let prim = s.lock.prim();
        let inner = &mut s.inner;
        bumped(
            prim,
            &mut s.token,
            || parking_lot::MutexGuard::bump(inner),
            || excl(site),
        );
    }
}

/// Re-takes `lock` after `unlocked`: the inner guard stays in the outer guard, so the new one
/// is forgotten.
fn relock<T: ?Sized>(lock: &Mutex<T>, site: &'static Location<'static>) -> Token {
    let (inner, token) = blocking(
        || lock.prim(),
        excl(site),
        || lock.inner.try_lock(),
        || lock.inner.lock(),
    );
    std::mem::forget(inner);
    token
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
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

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

// ===== MappedMutexGuard =====

impl<'a, T: ?Sized> MappedMutexGuard<'a, T> {
    #[inline]
    fn into_parts(s: Self) -> (&'a Prim, Token, parking_lot::MappedMutexGuard<'a, T>) {
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

    /// Wrapper for [`parking_lot::MappedMutexGuard::map`].
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
    /// let m = Mutex::new(((1, 2), 3));
    /// let pair = MutexGuard::map(m.lock(), |t| &mut t.0);
    /// let one = MappedMutexGuard::map(pair, |p| &mut p.0);
    /// assert_eq!(*one, 1);
    /// ```
    #[inline]
    pub fn map<U: ?Sized, F>(s: Self, f: F) -> MappedMutexGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let (prim, mut token, inner) = Self::into_parts(s);
        let inner =
            parking_lot::MappedMutexGuard::map(inner, |t| books_first(prim, &mut token, || f(t)));
        MappedMutexGuard {
            prim,
            token,
            inner: ManuallyDrop::new(inner),
        }
    }

    /// Wrapper for [`parking_lot::MappedMutexGuard::try_map`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back when `f` returns `None`.
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
    /// let m = Mutex::new(vec![vec![1]]);
    /// let row = MutexGuard::map(m.lock(), |v| &mut v[0]);
    /// assert!(MappedMutexGuard::try_map(row, |r| r.get_mut(3)).is_err());
    /// ```
    #[inline]
    pub fn try_map<U: ?Sized, F>(s: Self, f: F) -> Result<MappedMutexGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let (prim, mut token, inner) = Self::into_parts(s);
        match parking_lot::MappedMutexGuard::try_map(inner, |t| {
            books_first(prim, &mut token, || f(t))
        }) {
            Ok(inner) => Ok(MappedMutexGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
            Err(inner) => Err(MappedMutexGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
        }
    }

    /// Wrapper for [`parking_lot::MappedMutexGuard::try_map_or_err`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back, with `f`'s error, when `f` fails.
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
    /// let m = Mutex::new(vec![vec![1]]);
    /// let row = MutexGuard::map(m.lock(), |v| &mut v[0]);
    /// let r = MappedMutexGuard::try_map_or_err(row, |r| r.get_mut(0).ok_or(()));
    /// assert_eq!(*r.ok().unwrap(), 1);
    /// ```
    #[inline]
    pub fn try_map_or_err<U: ?Sized, F, E>(
        s: Self,
        f: F,
    ) -> Result<MappedMutexGuard<'a, U>, (Self, E)>
    where
        F: FnOnce(&mut T) -> Result<&mut U, E>,
    {
        let (prim, mut token, inner) = Self::into_parts(s);
        match parking_lot::MappedMutexGuard::try_map_or_err(inner, |t| {
            books_first(prim, &mut token, || f(t))
        }) {
            Ok(inner) => Ok(MappedMutexGuard {
                prim,
                token,
                inner: ManuallyDrop::new(inner),
            }),
            Err((inner, e)) => Err((
                MappedMutexGuard {
                    prim,
                    token,
                    inner: ManuallyDrop::new(inner),
                },
                e,
            )),
        }
    }

    /// Wrapper for [`parking_lot::MappedMutexGuard::unlock_fair`].
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
    /// let m = Mutex::new((1, 2));
    /// MappedMutexGuard::unlock_fair(MutexGuard::map(m.lock(), |t| &mut t.0));
    /// assert!(!m.is_locked());
    /// ```
    #[inline]
    pub fn unlock_fair(s: Self) {
        let (prim, mut token, inner) = Self::into_parts(s);
        token.release(prim);
        parking_lot::MappedMutexGuard::unlock_fair(inner);
    }
}

impl<T: ?Sized> Drop for MappedMutexGuard<'_, T> {
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

impl<T: ?Sized> Deref for MappedMutexGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> DerefMut for MappedMutexGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MappedMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MappedMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}
