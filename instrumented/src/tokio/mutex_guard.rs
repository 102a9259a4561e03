//! The guards of [`Mutex`]: borrowed, owned, and their mapped forms.
//!
//! Each guard keeps the mutex (or its semaphore) and a probe [`Token`]. `Drop` records the
//! release in the books first, then returns the permit to tokio's semaphore, so the detector
//! never sees two holders at once. A guard mapped, moved to another task or dropped during a
//! panic still releases in the books, because the token travels with it.

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use lockscope_detector::prim::Prim;

use super::Mutex;
use crate::probe::Token;

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
    lock: &'a Mutex<T>,
    token: Token,
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
    lock: Arc<Mutex<T>>,
    token: Token,
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
    sem: &'a tokio::sync::Semaphore,
    prim: &'a Prim,
    data: *mut T,
    token: Token,
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
    data: *mut U,
    lock: Arc<Mutex<T>>,
    token: Token,
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

// ===== MutexGuard =====

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    #[inline]
    pub(crate) fn new(lock: &'a Mutex<T>, token: Token) -> Self {
        MutexGuard { lock, token }
    }

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
    #[inline]
    pub fn map<U, F>(mut this: Self, f: F) -> MappedMutexGuard<'a, U>
    where
        U: ?Sized,
        F: FnOnce(&mut T) -> &mut U,
    {
        // `f` runs while `this` still unlocks on unwinding.
        let data = f(&mut *this) as *mut U;
        let mut this = ManuallyDrop::new(this);
        MappedMutexGuard {
            sem: &this.lock.sem,
            prim: this.lock.prim(),
            data,
            token: std::mem::take(&mut this.token),
            marker: PhantomData,
        }
    }

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
    #[inline]
    pub fn try_map<U, F>(mut this: Self, f: F) -> Result<MappedMutexGuard<'a, U>, Self>
    where
        U: ?Sized,
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let data = match f(&mut *this) {
            Some(data) => data as *mut U,
            None => return Err(this),
        };
        let mut this = ManuallyDrop::new(this);
        Ok(MappedMutexGuard {
            sem: &this.lock.sem,
            prim: this.lock.prim(),
            data,
            token: std::mem::take(&mut this.token),
            marker: PhantomData,
        })
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
        this.lock
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // Books first, then the permit: never two holders in the books.
        self.token.release(self.lock.prim());
        self.lock.sem.add_permits(1);
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the mutex's only permit.
        unsafe { &*self.lock.c.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the mutex's only permit.
        unsafe { &mut *self.lock.c.get() }
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

// ===== OwnedMutexGuard =====

impl<T: ?Sized> OwnedMutexGuard<T> {
    #[inline]
    pub(crate) fn new(lock: Arc<Mutex<T>>, token: Token) -> Self {
        OwnedMutexGuard { lock, token }
    }

    /// Takes the fields out without running `Drop`.
    fn into_parts(this: Self) -> (Arc<Mutex<T>>, Token) {
        let mut this = ManuallyDrop::new(this);
        let token = std::mem::take(&mut this.token);
        // SAFETY: `this` is never dropped or used again, so the Arc is moved out exactly once.
        let lock = unsafe { std::ptr::read(&this.lock) };
        (lock, token)
    }

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
    #[inline]
    pub fn map<U, F>(mut this: Self, f: F) -> OwnedMappedMutexGuard<T, U>
    where
        U: ?Sized,
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = f(&mut *this) as *mut U;
        let (lock, token) = Self::into_parts(this);
        OwnedMappedMutexGuard { data, lock, token }
    }

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
    #[inline]
    pub fn try_map<U, F>(mut this: Self, f: F) -> Result<OwnedMappedMutexGuard<T, U>, Self>
    where
        U: ?Sized,
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let data = match f(&mut *this) {
            Some(data) => data as *mut U,
            None => return Err(this),
        };
        let (lock, token) = Self::into_parts(this);
        Ok(OwnedMappedMutexGuard { data, lock, token })
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
        &this.lock
    }
}

impl<T: ?Sized> Drop for OwnedMutexGuard<T> {
    fn drop(&mut self) {
        self.token.release(self.lock.prim());
        self.lock.sem.add_permits(1);
    }
}

impl<T: ?Sized> Deref for OwnedMutexGuard<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the mutex's only permit.
        unsafe { &*self.lock.c.get() }
    }
}

impl<T: ?Sized> DerefMut for OwnedMutexGuard<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the mutex's only permit.
        unsafe { &mut *self.lock.c.get() }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for OwnedMutexGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for OwnedMutexGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

// ===== MappedMutexGuard =====

impl<'a, T: ?Sized> MappedMutexGuard<'a, T> {
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
    #[inline]
    pub fn map<U, F>(mut this: Self, f: F) -> MappedMutexGuard<'a, U>
    where
        U: ?Sized,
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = f(&mut *this) as *mut U;
        let mut this = ManuallyDrop::new(this);
        MappedMutexGuard {
            sem: this.sem,
            prim: this.prim,
            data,
            token: std::mem::take(&mut this.token),
            marker: PhantomData,
        }
    }

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
    #[inline]
    pub fn try_map<U, F>(mut this: Self, f: F) -> Result<MappedMutexGuard<'a, U>, Self>
    where
        U: ?Sized,
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let data = match f(&mut *this) {
            Some(data) => data as *mut U,
            None => return Err(this),
        };
        let mut this = ManuallyDrop::new(this);
        Ok(MappedMutexGuard {
            sem: this.sem,
            prim: this.prim,
            data,
            token: std::mem::take(&mut this.token),
            marker: PhantomData,
        })
    }
}

impl<T: ?Sized> Drop for MappedMutexGuard<'_, T> {
    fn drop(&mut self) {
        self.token.release(self.prim);
        self.sem.add_permits(1);
    }
}

impl<T: ?Sized> Deref for MappedMutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: `data` points into the locked value, which the guard keeps locked.
        unsafe { &*self.data }
    }
}

impl<T: ?Sized> DerefMut for MappedMutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above; the guard is the only access.
        unsafe { &mut *self.data }
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

// ===== OwnedMappedMutexGuard =====

impl<T: ?Sized, U: ?Sized> OwnedMappedMutexGuard<T, U> {
    fn into_parts(this: Self) -> (Arc<Mutex<T>>, Token) {
        let mut this = ManuallyDrop::new(this);
        let token = std::mem::take(&mut this.token);
        // SAFETY: `this` is never dropped or used again, so the Arc is moved out exactly once.
        let lock = unsafe { std::ptr::read(&this.lock) };
        (lock, token)
    }

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
    #[inline]
    pub fn map<S, F>(mut this: Self, f: F) -> OwnedMappedMutexGuard<T, S>
    where
        S: ?Sized,
        F: FnOnce(&mut U) -> &mut S,
    {
        let data = f(&mut *this) as *mut S;
        let (lock, token) = Self::into_parts(this);
        OwnedMappedMutexGuard { data, lock, token }
    }

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
    #[inline]
    pub fn try_map<S, F>(mut this: Self, f: F) -> Result<OwnedMappedMutexGuard<T, S>, Self>
    where
        S: ?Sized,
        F: FnOnce(&mut U) -> Option<&mut S>,
    {
        let data = match f(&mut *this) {
            Some(data) => data as *mut S,
            None => return Err(this),
        };
        let (lock, token) = Self::into_parts(this);
        Ok(OwnedMappedMutexGuard { data, lock, token })
    }
}

impl<T: ?Sized, U: ?Sized> Drop for OwnedMappedMutexGuard<T, U> {
    fn drop(&mut self) {
        self.token.release(self.lock.prim());
        self.lock.sem.add_permits(1);
    }
}

impl<T: ?Sized, U: ?Sized> Deref for OwnedMappedMutexGuard<T, U> {
    type Target = U;
    fn deref(&self) -> &U {
        // SAFETY: `data` points into the locked value, which the guard keeps locked.
        unsafe { &*self.data }
    }
}

impl<T: ?Sized, U: ?Sized> DerefMut for OwnedMappedMutexGuard<T, U> {
    fn deref_mut(&mut self) -> &mut U {
        // SAFETY: as above; the guard is the only access.
        unsafe { &mut *self.data }
    }
}

impl<T: ?Sized, U: ?Sized + fmt::Debug> fmt::Debug for OwnedMappedMutexGuard<T, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized, U: ?Sized + fmt::Display> fmt::Display for OwnedMappedMutexGuard<T, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}
