//! Borrowed write guards of [`RwLock`]: plain and mapped.

use std::marker::PhantomData;

use super::RwLockReadGuard;
use super::guard::{Permits, SemRef, deref, downgrade, maps, write_guard};
use crate::probe::Token;
use crate::shell::Guard;

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
    shell: Guard<SemRef<'a>, Permits>,
    data: *mut T,
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
    shell: Guard<SemRef<'a>, Permits>,
    data: *mut T,
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

deref!([T: ?Sized] RwLockWriteGuard<'_, T> => T, |g| g.data, mut);
deref!([T: ?Sized] RwLockMappedWriteGuard<'_, T> => T, |g| g.data, mut);

impl<'a, T: ?Sized> RwLockWriteGuard<'a, T> {
    #[inline]
    pub(crate) fn new(owner: SemRef<'a>, permits: u32, data: *mut T, token: Token) -> Self {
        RwLockWriteGuard {
            shell: Guard::new(owner, Permits(permits as usize), token),
            data,
            marker: PhantomData,
        }
    }

    write_guard! {
        T -> RwLockMappedWriteGuard<'a, U>, RwLockMappedWriteGuard<'a, T>,
            RwLockReadGuard<'a, U>, RwLockReadGuard<'a, T>,
        |shell, data| RwLockMappedWriteGuard { shell, data, marker: PhantomData },
            RwLockReadGuard { shell, data, marker: PhantomData };
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
        fn map;

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
        fn try_map;

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
        fn downgrade_map;

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
        fn try_downgrade_map;

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
        fn into_mapped;

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
        fn downgrade;
    }
}

impl<'a, T: ?Sized> RwLockMappedWriteGuard<'a, T> {
    maps! {
        mut T => U [F, U] -> RwLockMappedWriteGuard<'a, U>,
        |shell, data| RwLockMappedWriteGuard { shell, data, marker: PhantomData };
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
        fn map;

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
        fn try_map;
    }
}
