//! Borrowed write guards of [`RwLock`]: plain and mapped.

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

use lockscope_detector::hooks::Mode;
use lockscope_detector::prim::Prim;

use super::RwLockReadGuard;
use crate::probe::Token;

/// Wrapper for [`tokio::sync::RwLockWriteGuard`]: exclusive access until dropped.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let lock = lockscope::tokio::RwLock::new(1);
/// let mut g = lock.write().await;
/// *g += 1;
/// assert_eq!(*g, 2);
/// # }
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    permits: u32,
    s: &'a tokio::sync::Semaphore,
    prim: &'a Prim,
    data: *mut T,
    token: Token,
    marker: PhantomData<&'a mut T>,
}

/// Wrapper for [`tokio::sync::RwLockMappedWriteGuard`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use lockscope::tokio::{RwLock, RwLockWriteGuard};
/// let lock = RwLock::new((1, 2));
/// let mut g = RwLockWriteGuard::map(lock.write().await, |t| &mut t.0);
/// *g = 5;
/// drop(g);
/// assert_eq!(*lock.read().await, (5, 2));
/// # }
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockMappedWriteGuard<'a, T: ?Sized> {
    permits: u32,
    s: &'a tokio::sync::Semaphore,
    prim: &'a Prim,
    data: *mut T,
    token: Token,
    marker: PhantomData<&'a mut T>,
}

// SAFETY: as tokio's guards: a write guard hands out `&mut T` (Send) and `&T` (Sync).
unsafe impl<T> Sync for RwLockWriteGuard<'_, T> where T: ?Sized + Send + Sync {}
// SAFETY: as above.
unsafe impl<T> Sync for RwLockMappedWriteGuard<'_, T> where T: ?Sized + Send + Sync {}
// SAFETY: as above.
unsafe impl<T> Send for RwLockWriteGuard<'_, T> where T: ?Sized + Send + Sync {}
// SAFETY: as above.
unsafe impl<T> Send for RwLockMappedWriteGuard<'_, T> where T: ?Sized + Send + Sync {}

/// The parts of a write guard taken out without running its `Drop`.
struct Parts<'a, T: ?Sized> {
    permits: u32,
    s: &'a tokio::sync::Semaphore,
    prim: &'a Prim,
    data: *mut T,
    token: Token,
}

impl<'a, T: ?Sized> RwLockWriteGuard<'a, T> {
    #[inline]
    pub(crate) fn new(
        permits: u32,
        s: &'a tokio::sync::Semaphore,
        prim: &'a Prim,
        data: *mut T,
        token: Token,
    ) -> Self {
        RwLockWriteGuard {
            permits,
            s,
            prim,
            data,
            token,
            marker: PhantomData,
        }
    }

    fn skip_drop(this: Self) -> Parts<'a, T> {
        let mut this = ManuallyDrop::new(this);
        Parts {
            permits: this.permits,
            s: this.s,
            prim: this.prim,
            data: this.data,
            token: std::mem::take(&mut this.token),
        }
    }

    /// Turns the write hold into a one-permit read hold, books first.
    fn downgrade_parts<U: ?Sized>(p: Parts<'a, T>, data: *const U) -> RwLockReadGuard<'a, U> {
        let mut token = p.token;
        token.update(p.prim, 1, Mode::Shared);
        let guard = RwLockReadGuard::new(p.s, p.prim, data, token);
        // Release all but one of the permits held by the write guard.
        p.s.add_permits((p.permits - 1) as usize);
        guard
    }

    /// Wrapper for [`tokio::sync::RwLockWriteGuard::map`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use lockscope::tokio::{RwLock, RwLockWriteGuard};
    /// let lock = RwLock::new((1, 2));
    /// let g = RwLockWriteGuard::map(lock.write().await, |t| &mut t.1);
    /// assert_eq!(*g, 2);
    /// # }
    /// ```
    #[inline]
    pub fn map<F, U: ?Sized>(mut this: Self, f: F) -> RwLockMappedWriteGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = f(&mut *this) as *mut U;
        let p = Self::skip_drop(this);
        RwLockMappedWriteGuard {
            permits: p.permits,
            s: p.s,
            prim: p.prim,
            data,
            token: p.token,
            marker: PhantomData,
        }
    }

    /// Wrapper for [`tokio::sync::RwLockWriteGuard::downgrade_map`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use lockscope::tokio::{RwLock, RwLockWriteGuard};
    /// let lock = RwLock::new((1, 2));
    /// let r = RwLockWriteGuard::downgrade_map(lock.write().await, |t| &t.0);
    /// assert_eq!(*r, *lock.try_read().map(|g| g.0).as_ref().unwrap());
    /// # }
    /// ```
    #[inline]
    pub fn downgrade_map<F, U: ?Sized>(this: Self, f: F) -> RwLockReadGuard<'a, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let data = f(&*this) as *const U;
        Self::downgrade_parts(Self::skip_drop(this), data)
    }

    /// Wrapper for [`tokio::sync::RwLockWriteGuard::try_map`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back when `f` returns `None`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use lockscope::tokio::{RwLock, RwLockWriteGuard};
    /// let lock = RwLock::new(vec![1]);
    /// assert!(RwLockWriteGuard::try_map(lock.write().await, |v| v.get_mut(0)).is_ok());
    /// # }
    /// ```
    #[inline]
    pub fn try_map<F, U: ?Sized>(
        mut this: Self,
        f: F,
    ) -> Result<RwLockMappedWriteGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let data = match f(&mut *this) {
            Some(data) => data as *mut U,
            None => return Err(this),
        };
        let p = Self::skip_drop(this);
        Ok(RwLockMappedWriteGuard {
            permits: p.permits,
            s: p.s,
            prim: p.prim,
            data,
            token: p.token,
            marker: PhantomData,
        })
    }

    /// Wrapper for [`tokio::sync::RwLockWriteGuard::try_downgrade_map`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back when `f` returns `None`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use lockscope::tokio::{RwLock, RwLockWriteGuard};
    /// let lock = RwLock::new(vec![1]);
    /// let r = RwLockWriteGuard::try_downgrade_map(lock.write().await, |v| v.first()).unwrap();
    /// assert_eq!(*r, 1);
    /// # }
    /// ```
    #[inline]
    pub fn try_downgrade_map<F, U: ?Sized>(this: Self, f: F) -> Result<RwLockReadGuard<'a, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let data = match f(&*this) {
            Some(data) => data as *const U,
            None => return Err(this),
        };
        Ok(Self::downgrade_parts(Self::skip_drop(this), data))
    }

    /// Wrapper for [`tokio::sync::RwLockWriteGuard::into_mapped`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use lockscope::tokio::{RwLock, RwLockWriteGuard};
    /// let lock = RwLock::new(1);
    /// let g = RwLockWriteGuard::into_mapped(lock.write().await);
    /// assert_eq!(*g, 1);
    /// # }
    /// ```
    #[inline]
    pub fn into_mapped(this: Self) -> RwLockMappedWriteGuard<'a, T> {
        RwLockWriteGuard::map(this, |me| me)
    }

    /// Wrapper for [`tokio::sync::RwLockWriteGuard::downgrade`]: the write becomes a read
    /// without letting another writer in (the books follow: one read permit held).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let lock = lockscope::tokio::RwLock::new(1);
    /// let r = lock.write().await.downgrade();
    /// assert_eq!(*lock.try_read().unwrap(), *r);
    /// # }
    /// ```
    pub fn downgrade(self) -> RwLockReadGuard<'a, T> {
        let p = Self::skip_drop(self);
        let data = p.data.cast_const();
        Self::downgrade_parts(p, data)
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds every permit: it is the only access.
        unsafe { &*self.data }
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above.
        unsafe { &mut *self.data }
    }
}

impl<'a, T: ?Sized + fmt::Debug> fmt::Debug for RwLockWriteGuard<'a, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<'a, T: ?Sized + fmt::Display> fmt::Display for RwLockWriteGuard<'a, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.token.release(self.prim);
        self.s.add_permits(self.permits as usize);
    }
}

impl<'a, T: ?Sized> RwLockMappedWriteGuard<'a, T> {
    fn skip_drop(this: Self) -> Parts<'a, T> {
        let mut this = ManuallyDrop::new(this);
        Parts {
            permits: this.permits,
            s: this.s,
            prim: this.prim,
            data: this.data,
            token: std::mem::take(&mut this.token),
        }
    }

    /// Wrapper for [`tokio::sync::RwLockMappedWriteGuard::map`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use lockscope::tokio::{RwLock, RwLockMappedWriteGuard, RwLockWriteGuard};
    /// let lock = RwLock::new(((1, 2), 3));
    /// let a = RwLockWriteGuard::map(lock.write().await, |t| &mut t.0);
    /// let b = RwLockMappedWriteGuard::map(a, |t| &mut t.1);
    /// assert_eq!(*b, 2);
    /// # }
    /// ```
    #[inline]
    pub fn map<F, U: ?Sized>(mut this: Self, f: F) -> RwLockMappedWriteGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = f(&mut *this) as *mut U;
        let p = Self::skip_drop(this);
        RwLockMappedWriteGuard {
            permits: p.permits,
            s: p.s,
            prim: p.prim,
            data,
            token: p.token,
            marker: PhantomData,
        }
    }

    /// Wrapper for [`tokio::sync::RwLockMappedWriteGuard::try_map`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back when `f` returns `None`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use lockscope::tokio::{RwLock, RwLockMappedWriteGuard, RwLockWriteGuard};
    /// let lock = RwLock::new(vec![vec![1]]);
    /// let row = RwLockWriteGuard::map(lock.write().await, |v| &mut v[0]);
    /// assert!(RwLockMappedWriteGuard::try_map(row, |r| r.get_mut(7)).is_err());
    /// # }
    /// ```
    #[inline]
    pub fn try_map<F, U: ?Sized>(
        mut this: Self,
        f: F,
    ) -> Result<RwLockMappedWriteGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let data = match f(&mut *this) {
            Some(data) => data as *mut U,
            None => return Err(this),
        };
        let p = Self::skip_drop(this);
        Ok(RwLockMappedWriteGuard {
            permits: p.permits,
            s: p.s,
            prim: p.prim,
            data,
            token: p.token,
            marker: PhantomData,
        })
    }
}

impl<T: ?Sized> Deref for RwLockMappedWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds every permit: it is the only access.
        unsafe { &*self.data }
    }
}

impl<T: ?Sized> DerefMut for RwLockMappedWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above.
        unsafe { &mut *self.data }
    }
}

impl<'a, T: ?Sized + fmt::Debug> fmt::Debug for RwLockMappedWriteGuard<'a, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<'a, T: ?Sized + fmt::Display> fmt::Display for RwLockMappedWriteGuard<'a, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<T: ?Sized> Drop for RwLockMappedWriteGuard<'_, T> {
    fn drop(&mut self) {
        self.token.release(self.prim);
        self.s.add_permits(self.permits as usize);
    }
}
