//! Owned write guards of [`RwLock`]: plain and mapped.

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use lockscope_detector::hooks::Mode;

use super::{OwnedRwLockReadGuard, RwLock};
use crate::probe::Token;

/// Wrapper for [`tokio::sync::OwnedRwLockWriteGuard`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// let lock = Arc::new(lockscope::tokio::RwLock::new(1));
/// let mut g = lock.clone().write_owned().await;
/// *g = 2;
/// drop(g);
/// assert_eq!(*lock.read().await, 2);
/// # }
/// ```
#[clippy::has_significant_drop]
pub struct OwnedRwLockWriteGuard<T: ?Sized> {
    permits: u32,
    lock: Arc<RwLock<T>>,
    data: *mut T,
    token: Token,
}

/// Wrapper for [`tokio::sync::OwnedRwLockMappedWriteGuard`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use lockscope::tokio::{OwnedRwLockWriteGuard, RwLock};
/// let lock = Arc::new(RwLock::new((1, 2)));
/// let g = OwnedRwLockWriteGuard::map(lock.write_owned().await, |t| &mut t.1);
/// assert_eq!(*g, 2);
/// # }
/// ```
#[clippy::has_significant_drop]
pub struct OwnedRwLockMappedWriteGuard<T: ?Sized, U: ?Sized = T> {
    permits: u32,
    lock: Arc<RwLock<T>>,
    data: *mut U,
    token: Token,
}

// SAFETY: as tokio's guards.
unsafe impl<T> Sync for OwnedRwLockWriteGuard<T> where T: ?Sized + Send + Sync {}
// SAFETY: as tokio's guards.
unsafe impl<T> Send for OwnedRwLockWriteGuard<T> where T: ?Sized + Send + Sync {}
// SAFETY: as tokio's guards.
unsafe impl<T, U> Sync for OwnedRwLockMappedWriteGuard<T, U>
where
    T: ?Sized + Send + Sync,
    U: ?Sized + Send + Sync,
{
}
// SAFETY: as tokio's guards.
unsafe impl<T, U> Send for OwnedRwLockMappedWriteGuard<T, U>
where
    T: ?Sized + Send + Sync,
    U: ?Sized + Send + Sync,
{
}

struct Parts<T: ?Sized, U: ?Sized> {
    permits: u32,
    lock: Arc<RwLock<T>>,
    data: *mut U,
    token: Token,
}

impl<T: ?Sized> OwnedRwLockWriteGuard<T> {
    #[inline]
    pub(crate) fn new(permits: u32, lock: Arc<RwLock<T>>, data: *mut T, token: Token) -> Self {
        OwnedRwLockWriteGuard {
            permits,
            lock,
            data,
            token,
        }
    }

    fn skip_drop(this: Self) -> Parts<T, T> {
        let mut this = ManuallyDrop::new(this);
        Parts {
            permits: this.permits,
            // SAFETY: `this` is never dropped or used again, so the Arc moves out once.
            lock: unsafe { std::ptr::read(&this.lock) },
            data: this.data,
            token: std::mem::take(&mut this.token),
        }
    }

    fn downgrade_parts<U: ?Sized>(p: Parts<T, T>, data: *const U) -> OwnedRwLockReadGuard<T, U> {
        let mut token = p.token;
        token.update(p.lock.prim(), 1, Mode::Shared);
        let to_release = (p.permits - 1) as usize;
        let lock = p.lock;
        lock.s.add_permits(to_release);
        OwnedRwLockReadGuard::new(lock, data, token)
    }

    /// Wrapper for [`tokio::sync::OwnedRwLockWriteGuard::map`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use lockscope::tokio::{OwnedRwLockWriteGuard, RwLock};
    /// let lock = Arc::new(RwLock::new((1, 2)));
    /// let g = OwnedRwLockWriteGuard::map(lock.write_owned().await, |t| &mut t.0);
    /// assert_eq!(*g, 1);
    /// # }
    /// ```
    #[inline]
    pub fn map<F, U: ?Sized>(mut this: Self, f: F) -> OwnedRwLockMappedWriteGuard<T, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = f(&mut *this) as *mut U;
        let p = Self::skip_drop(this);
        OwnedRwLockMappedWriteGuard {
            permits: p.permits,
            lock: p.lock,
            data,
            token: p.token,
        }
    }

    /// Wrapper for [`tokio::sync::OwnedRwLockWriteGuard::downgrade_map`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use lockscope::tokio::{OwnedRwLockWriteGuard, RwLock};
    /// let lock = Arc::new(RwLock::new((1, 2)));
    /// let r = OwnedRwLockWriteGuard::downgrade_map(lock.clone().write_owned().await, |t| &t.1);
    /// assert_eq!(*r, 2);
    /// assert!(lock.try_read().is_ok());
    /// # }
    /// ```
    #[inline]
    pub fn downgrade_map<F, U: ?Sized>(this: Self, f: F) -> OwnedRwLockReadGuard<T, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let data = f(&*this) as *const U;
        Self::downgrade_parts(Self::skip_drop(this), data)
    }

    /// Wrapper for [`tokio::sync::OwnedRwLockWriteGuard::try_map`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back when `f` returns `None`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use lockscope::tokio::{OwnedRwLockWriteGuard, RwLock};
    /// let lock = Arc::new(RwLock::new(vec![1]));
    /// assert!(OwnedRwLockWriteGuard::try_map(lock.write_owned().await, |v| v.get_mut(3)).is_err());
    /// # }
    /// ```
    #[inline]
    pub fn try_map<F, U: ?Sized>(
        mut this: Self,
        f: F,
    ) -> Result<OwnedRwLockMappedWriteGuard<T, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let data = match f(&mut *this) {
            Some(data) => data as *mut U,
            None => return Err(this),
        };
        let p = Self::skip_drop(this);
        Ok(OwnedRwLockMappedWriteGuard {
            permits: p.permits,
            lock: p.lock,
            data,
            token: p.token,
        })
    }

    /// Wrapper for [`tokio::sync::OwnedRwLockWriteGuard::try_downgrade_map`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back when `f` returns `None`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use lockscope::tokio::{OwnedRwLockWriteGuard, RwLock};
    /// let lock = Arc::new(RwLock::new(vec![1]));
    /// let r = OwnedRwLockWriteGuard::try_downgrade_map(lock.write_owned().await, |v| v.first());
    /// assert_eq!(*r.unwrap(), 1);
    /// # }
    /// ```
    #[inline]
    pub fn try_downgrade_map<F, U: ?Sized>(
        this: Self,
        f: F,
    ) -> Result<OwnedRwLockReadGuard<T, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let data = match f(&*this) {
            Some(data) => data as *const U,
            None => return Err(this),
        };
        Ok(Self::downgrade_parts(Self::skip_drop(this), data))
    }

    /// Wrapper for [`tokio::sync::OwnedRwLockWriteGuard::into_mapped`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use lockscope::tokio::{OwnedRwLockWriteGuard, RwLock};
    /// let lock = Arc::new(RwLock::new(1));
    /// let g = OwnedRwLockWriteGuard::into_mapped(lock.write_owned().await);
    /// assert_eq!(*g, 1);
    /// # }
    /// ```
    #[inline]
    pub fn into_mapped(this: Self) -> OwnedRwLockMappedWriteGuard<T> {
        Self::map(this, |me| me)
    }

    /// Wrapper for [`tokio::sync::OwnedRwLockWriteGuard::downgrade`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// let lock = Arc::new(lockscope::tokio::RwLock::new(1));
    /// let r = lock.clone().write_owned().await.downgrade();
    /// assert_eq!(*lock.try_read().unwrap(), *r);
    /// # }
    /// ```
    pub fn downgrade(self) -> OwnedRwLockReadGuard<T> {
        let p = Self::skip_drop(self);
        let data = p.data.cast_const();
        Self::downgrade_parts(p, data)
    }

    /// Wrapper for [`tokio::sync::OwnedRwLockWriteGuard::rwlock`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use lockscope::tokio::{OwnedRwLockWriteGuard, RwLock};
    /// let lock = Arc::new(RwLock::new(1));
    /// let g = lock.clone().write_owned().await;
    /// assert!(Arc::ptr_eq(&lock, OwnedRwLockWriteGuard::rwlock(&g)));
    /// # }
    /// ```
    pub fn rwlock(this: &Self) -> &Arc<RwLock<T>> {
        &this.lock
    }
}

impl<T: ?Sized> Deref for OwnedRwLockWriteGuard<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds every permit: it is the only access.
        unsafe { &*self.data }
    }
}

impl<T: ?Sized> DerefMut for OwnedRwLockWriteGuard<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above.
        unsafe { &mut *self.data }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for OwnedRwLockWriteGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for OwnedRwLockWriteGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<T: ?Sized> Drop for OwnedRwLockWriteGuard<T> {
    fn drop(&mut self) {
        self.token.release(self.lock.prim());
        self.lock.s.add_permits(self.permits as usize);
    }
}

impl<T: ?Sized, U: ?Sized> OwnedRwLockMappedWriteGuard<T, U> {
    fn skip_drop(this: Self) -> Parts<T, U> {
        let mut this = ManuallyDrop::new(this);
        Parts {
            permits: this.permits,
            // SAFETY: `this` is never dropped or used again, so the Arc moves out once.
            lock: unsafe { std::ptr::read(&this.lock) },
            data: this.data,
            token: std::mem::take(&mut this.token),
        }
    }

    /// Wrapper for [`tokio::sync::OwnedRwLockMappedWriteGuard::map`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use lockscope::tokio::{OwnedRwLockMappedWriteGuard, OwnedRwLockWriteGuard, RwLock};
    /// let lock = Arc::new(RwLock::new(((1, 2), 3)));
    /// let a = OwnedRwLockWriteGuard::map(lock.write_owned().await, |t| &mut t.0);
    /// let b = OwnedRwLockMappedWriteGuard::map(a, |t| &mut t.0);
    /// assert_eq!(*b, 1);
    /// # }
    /// ```
    #[inline]
    pub fn map<F, V: ?Sized>(mut this: Self, f: F) -> OwnedRwLockMappedWriteGuard<T, V>
    where
        F: FnOnce(&mut U) -> &mut V,
    {
        let data = f(&mut *this) as *mut V;
        let p = Self::skip_drop(this);
        OwnedRwLockMappedWriteGuard {
            permits: p.permits,
            lock: p.lock,
            data,
            token: p.token,
        }
    }

    /// Wrapper for [`tokio::sync::OwnedRwLockMappedWriteGuard::try_map`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back when `f` returns `None`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use lockscope::tokio::{OwnedRwLockMappedWriteGuard, OwnedRwLockWriteGuard, RwLock};
    /// let lock = Arc::new(RwLock::new(vec![vec![1]]));
    /// let row = OwnedRwLockWriteGuard::map(lock.write_owned().await, |v| &mut v[0]);
    /// assert!(OwnedRwLockMappedWriteGuard::try_map(row, |r| r.get_mut(2)).is_err());
    /// # }
    /// ```
    #[inline]
    pub fn try_map<F, V: ?Sized>(
        mut this: Self,
        f: F,
    ) -> Result<OwnedRwLockMappedWriteGuard<T, V>, Self>
    where
        F: FnOnce(&mut U) -> Option<&mut V>,
    {
        let data = match f(&mut *this) {
            Some(data) => data as *mut V,
            None => return Err(this),
        };
        let p = Self::skip_drop(this);
        Ok(OwnedRwLockMappedWriteGuard {
            permits: p.permits,
            lock: p.lock,
            data,
            token: p.token,
        })
    }

    /// Wrapper for [`tokio::sync::OwnedRwLockMappedWriteGuard::rwlock`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use lockscope::tokio::{OwnedRwLockMappedWriteGuard, OwnedRwLockWriteGuard, RwLock};
    /// let lock = Arc::new(RwLock::new(1));
    /// let g = OwnedRwLockWriteGuard::into_mapped(lock.clone().write_owned().await);
    /// assert!(Arc::ptr_eq(&lock, OwnedRwLockMappedWriteGuard::rwlock(&g)));
    /// # }
    /// ```
    pub fn rwlock(this: &Self) -> &Arc<RwLock<T>> {
        &this.lock
    }
}

impl<T: ?Sized, U: ?Sized> Deref for OwnedRwLockMappedWriteGuard<T, U> {
    type Target = U;
    fn deref(&self) -> &U {
        // SAFETY: the guard holds every permit: it is the only access.
        unsafe { &*self.data }
    }
}

impl<T: ?Sized, U: ?Sized> DerefMut for OwnedRwLockMappedWriteGuard<T, U> {
    fn deref_mut(&mut self) -> &mut U {
        // SAFETY: as above.
        unsafe { &mut *self.data }
    }
}

impl<T: ?Sized, U: ?Sized + fmt::Debug> fmt::Debug for OwnedRwLockMappedWriteGuard<T, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized, U: ?Sized + fmt::Display> fmt::Display for OwnedRwLockMappedWriteGuard<T, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<T: ?Sized, U: ?Sized> Drop for OwnedRwLockMappedWriteGuard<T, U> {
    fn drop(&mut self) {
        self.token.release(self.lock.prim());
        self.lock.s.add_permits(self.permits as usize);
    }
}
