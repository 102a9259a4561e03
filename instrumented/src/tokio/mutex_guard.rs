//! The guards of [`Mutex`]: borrowed, owned, and their mapped forms.
//!
//! Each guard is a [`shell::Guard`](crate::shell::Guard) holding the mutex's one permit: its
//! `Drop` records the release in the books first, then returns the permit to tokio's
//! semaphore, so the detector never sees two holders at once. A guard mapped, moved to
//! another task or dropped during a panic still releases in the books, because the token
//! travels with it.

use std::marker::PhantomData;
use std::sync::Arc;

use super::Mutex;
use super::guard::{One, SemRef, deref, maps, rehome};
use crate::probe::Token;
use crate::shell::Guard;

/// Wrapper for [`tokio::sync::MutexGuard`]: the lock is held until it is dropped.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let m = lockscope::tokio::Mutex::new(vec![1]);
/// let mut g = m.lock().await;
/// g.push(2);
/// assert_eq!(*g, [1, 2]);
/// # }
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MutexGuard<'a, T: ?Sized> {
    shell: Guard<&'a Mutex<T>, One>,
}

/// Wrapper for [`tokio::sync::OwnedMutexGuard`]: holds an `Arc` of the mutex, so it can
/// move into a spawned task.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// let m = Arc::new(lockscope::tokio::Mutex::new(0));
/// let mut g = m.clone().lock_owned().await;
/// *g = 7;
/// drop(g);
/// assert_eq!(*m.lock().await, 7);
/// # }
/// ```
#[clippy::has_significant_drop]
pub struct OwnedMutexGuard<T: ?Sized> {
    shell: Guard<Arc<Mutex<T>>, One>,
}

/// Wrapper for [`tokio::sync::MappedMutexGuard`]: a guard on a part of the data.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use lockscope::tokio::{Mutex, MutexGuard};
/// let m = Mutex::new((1, 2));
/// let mut second = MutexGuard::map(m.lock().await, |t| &mut t.1);
/// *second += 1;
/// drop(second);
/// assert_eq!(*m.lock().await, (1, 3));
/// # }
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MappedMutexGuard<'a, T: ?Sized> {
    shell: Guard<SemRef<'a>, One>,
    data: *mut T,
    marker: PhantomData<&'a mut T>,
}

/// Wrapper for [`tokio::sync::OwnedMappedMutexGuard`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use lockscope::tokio::{Mutex, OwnedMutexGuard};
/// let m = Arc::new(Mutex::new((1, 2)));
/// let first = OwnedMutexGuard::map(m.clone().lock_owned().await, |t| &mut t.0);
/// assert_eq!(*first, 1);
/// # }
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct OwnedMappedMutexGuard<T: ?Sized, U: ?Sized = T> {
    shell: Guard<Arc<Mutex<T>>, One>,
    data: *mut U,
}

// SAFETY: the same bounds as tokio's guards, for the same reasons: a shared guard gives &T,
// so it is Sync when T is Sync (and Send, to be in the mutex at all); mapped guards own a
// `&mut U` in effect.
unsafe impl<T> Sync for MutexGuard<'_, T> where T: ?Sized + Send + Sync {}
// SAFETY: as above.
unsafe impl<T> Sync for OwnedMutexGuard<T> where T: ?Sized + Send + Sync {}
// SAFETY: as above.
unsafe impl<'a, T> Sync for MappedMutexGuard<'a, T> where T: ?Sized + Sync + 'a {}
// SAFETY: as above.
unsafe impl<'a, T> Send for MappedMutexGuard<'a, T> where T: ?Sized + Send + 'a {}
// SAFETY: as above.
unsafe impl<T, U> Sync for OwnedMappedMutexGuard<T, U>
where
    T: ?Sized + Send + Sync,
    U: ?Sized + Send + Sync,
{
}
// SAFETY: as above.
unsafe impl<T, U> Send for OwnedMappedMutexGuard<T, U>
where
    T: ?Sized + Send,
    U: ?Sized + Send,
{
}

deref!([T: ?Sized] MutexGuard<'_, T> => T, |g| g.shell.owner().c.get(), mut);
deref!([T: ?Sized] OwnedMutexGuard<T> => T, |g| g.shell.owner().c.get(), mut);
deref!([T: ?Sized] MappedMutexGuard<'_, T> => T, |g| g.data, mut);
deref!([T: ?Sized, U: ?Sized] OwnedMappedMutexGuard<T, U> => U, |g| g.data, mut);

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    #[inline]
    pub(crate) fn new(lock: &'a Mutex<T>, token: Token) -> Self {
        MutexGuard {
            shell: Guard::new(lock, One, token),
        }
    }

    maps! {
        mut T => U [U, F] -> MappedMutexGuard<'a, U>,
        |shell, data| MappedMutexGuard {
            shell: rehome(shell, SemRef::from),
            data,
            marker: PhantomData,
        };
        /// Wrapper for [`tokio::sync::MutexGuard::map`].
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use lockscope::tokio::{Mutex, MutexGuard};
        /// let m = Mutex::new([1, 2]);
        /// let g = MutexGuard::map(m.lock().await, |a| &mut a[1]);
        /// assert_eq!(*g, 2);
        /// # }
        /// ```
        fn map;

        /// Wrapper for [`tokio::sync::MutexGuard::try_map`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back when `f` returns `None`.
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use lockscope::tokio::{Mutex, MutexGuard};
        /// let m = Mutex::new(vec![1]);
        /// assert!(MutexGuard::try_map(m.lock().await, |v| v.get_mut(5)).is_err());
        /// # }
        /// ```
        fn try_map;
    }

    /// Wrapper for [`tokio::sync::MutexGuard::mutex`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use lockscope::tokio::{Mutex, MutexGuard};
    /// let m = Mutex::new(1);
    /// let g = m.lock().await;
    /// assert!(std::ptr::eq(MutexGuard::mutex(&g), &m));
    /// # }
    /// ```
    pub fn mutex(this: &Self) -> &'a Mutex<T> {
        this.shell.owner()
    }
}

impl<T: ?Sized> OwnedMutexGuard<T> {
    #[inline]
    pub(crate) fn new(lock: Arc<Mutex<T>>, token: Token) -> Self {
        OwnedMutexGuard {
            shell: Guard::new(lock, One, token),
        }
    }

    maps! {
        mut T => U [U, F] -> OwnedMappedMutexGuard<T, U>,
        |shell, data| OwnedMappedMutexGuard { shell, data };
        /// Wrapper for [`tokio::sync::OwnedMutexGuard::map`].
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use std::sync::Arc;
        /// use lockscope::tokio::{Mutex, OwnedMutexGuard};
        /// let m = Arc::new(Mutex::new((1, 2)));
        /// let g = OwnedMutexGuard::map(m.lock_owned().await, |t| &mut t.1);
        /// assert_eq!(*g, 2);
        /// # }
        /// ```
        fn map;

        /// Wrapper for [`tokio::sync::OwnedMutexGuard::try_map`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back when `f` returns `None`.
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use std::sync::Arc;
        /// use lockscope::tokio::{Mutex, OwnedMutexGuard};
        /// let m = Arc::new(Mutex::new(vec![1]));
        /// let g = OwnedMutexGuard::try_map(m.lock_owned().await, |v| v.get_mut(0)).unwrap();
        /// assert_eq!(*g, 1);
        /// # }
        /// ```
        fn try_map;
    }

    /// Wrapper for [`tokio::sync::OwnedMutexGuard::mutex`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use lockscope::tokio::{Mutex, OwnedMutexGuard};
    /// let m = Arc::new(Mutex::new(1));
    /// let g = m.clone().lock_owned().await;
    /// assert!(Arc::ptr_eq(OwnedMutexGuard::mutex(&g), &m));
    /// # }
    /// ```
    pub fn mutex(this: &Self) -> &Arc<Mutex<T>> {
        this.shell.owner()
    }
}

impl<'a, T: ?Sized> MappedMutexGuard<'a, T> {
    maps! {
        mut T => U [U, F] -> MappedMutexGuard<'a, U>,
        |shell, data| MappedMutexGuard { shell, data, marker: PhantomData };
        /// Wrapper for [`tokio::sync::MappedMutexGuard::map`].
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use lockscope::tokio::{MappedMutexGuard, Mutex, MutexGuard};
        /// let m = Mutex::new(((1, 2), 3));
        /// let inner = MutexGuard::map(m.lock().await, |t| &mut t.0);
        /// let g = MappedMutexGuard::map(inner, |t| &mut t.1);
        /// assert_eq!(*g, 2);
        /// # }
        /// ```
        fn map;

        /// Wrapper for [`tokio::sync::MappedMutexGuard::try_map`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back when `f` returns `None`.
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use lockscope::tokio::{MappedMutexGuard, Mutex, MutexGuard};
        /// let m = Mutex::new(vec![vec![1]]);
        /// let row = MutexGuard::map(m.lock().await, |v| &mut v[0]);
        /// assert!(MappedMutexGuard::try_map(row, |r| r.get_mut(3)).is_err());
        /// # }
        /// ```
        fn try_map;
    }
}

impl<T: ?Sized, U: ?Sized> OwnedMappedMutexGuard<T, U> {
    maps! {
        mut U => S [S, F] -> OwnedMappedMutexGuard<T, S>,
        |shell, data| OwnedMappedMutexGuard { shell, data };
        /// Wrapper for [`tokio::sync::OwnedMappedMutexGuard::map`].
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use std::sync::Arc;
        /// use lockscope::tokio::{Mutex, OwnedMappedMutexGuard, OwnedMutexGuard};
        /// let m = Arc::new(Mutex::new(((1, 2), 3)));
        /// let a = OwnedMutexGuard::map(m.lock_owned().await, |t| &mut t.0);
        /// let b = OwnedMappedMutexGuard::map(a, |t| &mut t.0);
        /// assert_eq!(*b, 1);
        /// # }
        /// ```
        fn map;

        /// Wrapper for [`tokio::sync::OwnedMappedMutexGuard::try_map`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back when `f` returns `None`.
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use std::sync::Arc;
        /// use lockscope::tokio::{Mutex, OwnedMappedMutexGuard, OwnedMutexGuard};
        /// let m = Arc::new(Mutex::new(vec![vec![1]]));
        /// let row = OwnedMutexGuard::map(m.lock_owned().await, |v| &mut v[0]);
        /// assert!(OwnedMappedMutexGuard::try_map(row, |r| r.get_mut(9)).is_err());
        /// # }
        /// ```
        fn try_map;
    }
}
