//! Owned write guards of [`RwLock`]: plain and mapped.

use std::sync::Arc;

use super::guard::{Permits, deref, downgrade, maps, write_guard};
use super::{OwnedRwLockReadGuard, RwLock};
use crate::probe::Token;
use crate::shell::Guard;

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
    shell: Guard<Arc<RwLock<T>>, Permits>,
    data: *mut T,
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
    shell: Guard<Arc<RwLock<T>>, Permits>,
    data: *mut U,
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

deref!([T: ?Sized] OwnedRwLockWriteGuard<T> => T, |g| g.data, mut);
deref!([T: ?Sized, U: ?Sized] OwnedRwLockMappedWriteGuard<T, U> => U, |g| g.data, mut);

impl<T: ?Sized> OwnedRwLockWriteGuard<T> {
    #[inline]
    pub(crate) fn new(lock: Arc<RwLock<T>>, token: Token) -> Self {
        let (data, permits) = (lock.c.get(), Permits(lock.mr as usize));
        OwnedRwLockWriteGuard {
            shell: Guard::new(lock, permits, token),
            data,
        }
    }

    write_guard! {
        T -> OwnedRwLockMappedWriteGuard<T, U>, OwnedRwLockMappedWriteGuard<T>,
            OwnedRwLockReadGuard<T, U>, OwnedRwLockReadGuard<T>,
        |shell, data| OwnedRwLockMappedWriteGuard { shell, data },
            OwnedRwLockReadGuard { shell, data };
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
        fn map;

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
        fn try_map;

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
        fn downgrade_map;

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
        fn try_downgrade_map;

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
        fn into_mapped;

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
        fn downgrade;
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
        this.shell.owner()
    }
}

impl<T: ?Sized, U: ?Sized> OwnedRwLockMappedWriteGuard<T, U> {
    maps! {
        mut U => V [F, V] -> OwnedRwLockMappedWriteGuard<T, V>,
        |shell, data| OwnedRwLockMappedWriteGuard { shell, data };
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
        fn map;

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
        fn try_map;
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
        this.shell.owner()
    }
}
