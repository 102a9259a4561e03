//! Read guards of [`RwLock`]: borrowed and owned.

use std::marker::PhantomData;
use std::sync::Arc;

use super::RwLock;
use super::guard::{One, SemRef, deref, maps};
use crate::probe::Token;
use crate::shell::Guard;

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
    pub(super) shell: Guard<SemRef<'a>, One>,
    pub(super) data: *const T,
    pub(super) marker: PhantomData<&'a T>,
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
    pub(super) shell: Guard<Arc<RwLock<T>>, One>,
    pub(super) data: *const U,
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

deref!([T: ?Sized] RwLockReadGuard<'_, T> => T, |g| g.data);
deref!([T: ?Sized, U: ?Sized] OwnedRwLockReadGuard<T, U> => U, |g| g.data);

impl<'a, T: ?Sized> RwLockReadGuard<'a, T> {
    #[inline]
    pub(crate) fn new(owner: SemRef<'a>, data: *const T, token: Token) -> Self {
        RwLockReadGuard {
            shell: Guard::new(owner, One, token),
            data,
            marker: PhantomData,
        }
    }

    maps! {
        ref T => U [F, U] -> RwLockReadGuard<'a, U>,
        |shell, data| RwLockReadGuard { shell, data, marker: PhantomData };
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
        fn map;

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
        fn try_map;
    }
}

impl<T: ?Sized> OwnedRwLockReadGuard<T> {
    #[inline]
    pub(crate) fn new(lock: Arc<RwLock<T>>, token: Token) -> Self {
        OwnedRwLockReadGuard {
            data: lock.c.get(),
            shell: Guard::new(lock, One, token),
        }
    }
}

impl<T: ?Sized, U: ?Sized> OwnedRwLockReadGuard<T, U> {
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
        this.shell.owner()
    }

    maps! {
        ref U => V [F, V] -> OwnedRwLockReadGuard<T, V>,
        |shell, data| OwnedRwLockReadGuard { shell, data };
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
        fn map;

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
        fn try_map;
    }
}
