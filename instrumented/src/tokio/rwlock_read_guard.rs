//! Read guards of [`RwLock`]: borrowed and owned.

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::sync::Arc;

use lockscope_detector::prim::Prim;

use super::RwLock;
use crate::probe::Token;

/// Wrapper for [`tokio::sync::RwLockReadGuard`]: shared read access until dropped.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let lock = lockscope::tokio::RwLock::new(String::from("hi"));
/// let g = lock.read().await;
/// assert_eq!(g.len(), 2);
/// # }
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    s: &'a tokio::sync::Semaphore,
    prim: &'a Prim,
    data: *const T,
    token: Token,
    marker: PhantomData<&'a T>,
}

/// Wrapper for [`tokio::sync::OwnedRwLockReadGuard`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// let lock = Arc::new(lockscope::tokio::RwLock::new(3));
/// let g = lock.read_owned().await;
/// assert_eq!(*g, 3);
/// # }
/// ```
#[clippy::has_significant_drop]
pub struct OwnedRwLockReadGuard<T: ?Sized, U: ?Sized = T> {
    lock: Arc<RwLock<T>>,
    data: *const U,
    token: Token,
}

// SAFETY: as tokio's guards: a read guard hands out `&T`.
unsafe impl<T> Send for RwLockReadGuard<'_, T> where T: ?Sized + Sync {}
// SAFETY: as above.
unsafe impl<T> Sync for RwLockReadGuard<'_, T> where T: ?Sized + Send + Sync {}
// SAFETY: as above.
unsafe impl<T, U> Send for OwnedRwLockReadGuard<T, U>
where
    T: ?Sized + Send + Sync,
    U: ?Sized + Sync,
{
}
// SAFETY: as above.
unsafe impl<T, U> Sync for OwnedRwLockReadGuard<T, U>
where
    T: ?Sized + Send + Sync,
    U: ?Sized + Send + Sync,
{
}

impl<'a, T: ?Sized> RwLockReadGuard<'a, T> {
    #[inline]
    pub(crate) fn new(
        s: &'a tokio::sync::Semaphore,
        prim: &'a Prim,
        data: *const T,
        token: Token,
    ) -> Self {
        RwLockReadGuard {
            s,
            prim,
            data,
            token,
            marker: PhantomData,
        }
    }

    /// Wrapper for [`tokio::sync::RwLockReadGuard::map`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use lockscope::tokio::{RwLock, RwLockReadGuard};
    /// let lock = RwLock::new((1, 2));
    /// let g = RwLockReadGuard::map(lock.read().await, |t| &t.1);
    /// assert_eq!(*g, 2);
    /// # }
    /// ```
    #[inline]
    pub fn map<F, U: ?Sized>(this: Self, f: F) -> RwLockReadGuard<'a, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let data = f(&*this) as *const U;
        let mut this = ManuallyDrop::new(this);
        RwLockReadGuard::new(this.s, this.prim, data, std::mem::take(&mut this.token))
    }

    /// Wrapper for [`tokio::sync::RwLockReadGuard::try_map`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back when `f` returns `None`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use lockscope::tokio::{RwLock, RwLockReadGuard};
    /// let lock = RwLock::new(vec![1]);
    /// assert!(RwLockReadGuard::try_map(lock.read().await, |v| v.get(4)).is_err());
    /// # }
    /// ```
    #[inline]
    pub fn try_map<F, U: ?Sized>(this: Self, f: F) -> Result<RwLockReadGuard<'a, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let data = match f(&*this) {
            Some(data) => data as *const U,
            None => return Err(this),
        };
        let mut this = ManuallyDrop::new(this);
        Ok(RwLockReadGuard::new(
            this.s,
            this.prim,
            data,
            std::mem::take(&mut this.token),
        ))
    }
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds a read permit; writers are excluded.
        unsafe { &*self.data }
    }
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.token.release(self.prim);
        self.s.add_permits(1);
    }
}

impl<'a, T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'a, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<'a, T: ?Sized + fmt::Display> fmt::Display for RwLockReadGuard<'a, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<T: ?Sized, U: ?Sized> OwnedRwLockReadGuard<T, U> {
    #[inline]
    pub(crate) fn new(lock: Arc<RwLock<T>>, data: *const U, token: Token) -> Self {
        OwnedRwLockReadGuard { lock, data, token }
    }

    fn into_parts(this: Self) -> (Arc<RwLock<T>>, Token) {
        let mut this = ManuallyDrop::new(this);
        let token = std::mem::take(&mut this.token);
        // SAFETY: `this` is never dropped or used again, so the Arc is moved out exactly once.
        let lock = unsafe { std::ptr::read(&this.lock) };
        (lock, token)
    }

    /// Wrapper for [`tokio::sync::OwnedRwLockReadGuard::map`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use lockscope::tokio::{OwnedRwLockReadGuard, RwLock};
    /// let lock = Arc::new(RwLock::new((1, 2)));
    /// let g = OwnedRwLockReadGuard::map(lock.read_owned().await, |t| &t.0);
    /// assert_eq!(*g, 1);
    /// # }
    /// ```
    #[inline]
    pub fn map<F, V: ?Sized>(this: Self, f: F) -> OwnedRwLockReadGuard<T, V>
    where
        F: FnOnce(&U) -> &V,
    {
        let data = f(&*this) as *const V;
        let (lock, token) = Self::into_parts(this);
        OwnedRwLockReadGuard { lock, data, token }
    }

    /// Wrapper for [`tokio::sync::OwnedRwLockReadGuard::try_map`].
    ///
    /// # Errors
    ///
    /// Gives the original guard back when `f` returns `None`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use lockscope::tokio::{OwnedRwLockReadGuard, RwLock};
    /// let lock = Arc::new(RwLock::new(vec![1]));
    /// let g = OwnedRwLockReadGuard::try_map(lock.read_owned().await, |v| v.first()).unwrap();
    /// assert_eq!(*g, 1);
    /// # }
    /// ```
    #[inline]
    pub fn try_map<F, V: ?Sized>(this: Self, f: F) -> Result<OwnedRwLockReadGuard<T, V>, Self>
    where
        F: FnOnce(&U) -> Option<&V>,
    {
        let data = match f(&*this) {
            Some(data) => data as *const V,
            None => return Err(this),
        };
        let (lock, token) = Self::into_parts(this);
        Ok(OwnedRwLockReadGuard { lock, data, token })
    }

    /// Wrapper for [`tokio::sync::OwnedRwLockReadGuard::rwlock`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use lockscope::tokio::{OwnedRwLockReadGuard, RwLock};
    /// let lock = Arc::new(RwLock::new(1));
    /// let g = lock.clone().read_owned().await;
    /// assert!(Arc::ptr_eq(&lock, OwnedRwLockReadGuard::rwlock(&g)));
    /// # }
    /// ```
    pub fn rwlock(this: &Self) -> &Arc<RwLock<T>> {
        &this.lock
    }
}

impl<T: ?Sized, U: ?Sized> Deref for OwnedRwLockReadGuard<T, U> {
    type Target = U;
    fn deref(&self) -> &U {
        // SAFETY: the guard holds a read permit; writers are excluded.
        unsafe { &*self.data }
    }
}

impl<T: ?Sized, U: ?Sized + fmt::Debug> fmt::Debug for OwnedRwLockReadGuard<T, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized, U: ?Sized + fmt::Display> fmt::Display for OwnedRwLockReadGuard<T, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<T: ?Sized, U: ?Sized> Drop for OwnedRwLockReadGuard<T, U> {
    fn drop(&mut self) {
        self.token.release(self.lock.prim());
        self.lock.s.add_permits(1);
    }
}
