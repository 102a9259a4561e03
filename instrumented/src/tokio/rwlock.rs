//! [`RwLock`]: a drop-in `tokio::sync::RwLock`.

use std::cell::UnsafeCell;
use std::fmt;
use std::future::Future;
use std::panic::Location;
use std::sync::Arc;
use std::time::Duration;

use lockscope_detector::hooks::{self, Acq, Mode, PrimCell, PrimKind};
use lockscope_detector::prim::Prim;

use super::acquire::{blocking, never_closed, queue, take, timed, try_take};
use super::guard::SemRef;
use super::rwlock_owned_write_guard::OwnedRwLockWriteGuard;
use super::rwlock_read_guard::{OwnedRwLockReadGuard, RwLockReadGuard};
use super::rwlock_write_guard::RwLockWriteGuard;
use super::{MAX_READS, TimeoutError, TryLockError, try_lock_error};
use crate::probe::{self, Token};

/// Wrapper for [`tokio::sync::RwLock`]: an asynchronous reader-writer lock whose every
/// acquisition is visible to lockscope.
///
/// Same API and behaviour: tokio's FIFO semaphore with `max_readers` permits, a read takes
/// one and a write takes all, so the lock is write-preferring (a reader that arrives after a
/// queued writer waits behind it). That is why a read taken inside a read deadlocks as soon
/// as a writer queues between them: lockscope reports it as `nested-acquire`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let cache = lockscope::tokio::RwLock::named("cache", vec![1]);
/// {
///     let a = cache.read().await;
///     let b = cache.try_read().unwrap(); // readers share
///     assert_eq!(a.len() + b.len(), 2);
/// }
/// cache.write().await.push(2);
/// assert_eq!(*cache.read().await, [1, 2]);
/// # }
/// ```
pub struct RwLock<T: ?Sized> {
    pub(crate) cell: PrimCell,
    pub(crate) mr: u32,
    pub(crate) s: tokio::sync::Semaphore,
    pub(crate) c: UnsafeCell<T>,
}

// SAFETY: as tokio's RwLock: writers get exclusive `&mut T`, readers shared `&T`.
unsafe impl<T> Send for RwLock<T> where T: ?Sized + Send {}
// SAFETY: as above; readers on several threads need T: Sync.
unsafe impl<T> Sync for RwLock<T> where T: ?Sized + Send + Sync {}

impl<T: ?Sized> RwLock<T> {
    #[inline]
    fn read_acq(site: &'static Location<'static>) -> Acq {
        Acq::new(site, 1, Mode::Shared)
    }

    #[inline]
    fn write_acq(&self, site: &'static Location<'static>) -> Acq {
        Acq::new(site, self.mr, Mode::Exclusive)
    }

    #[inline]
    pub(crate) fn prim(&self) -> &Prim {
        self.cell.get()
    }

    /// Wrapper for [`tokio::sync::RwLock::new`], named after the caller's location.
    ///
    /// ```
    /// let lock = lockscope::tokio::RwLock::new(5);
    /// # drop(lock);
    /// ```
    #[track_caller]
    pub fn new(value: T) -> RwLock<T>
    where
        T: Sized,
    {
        Self::build(None, value, MAX_READS)
    }

    /// An rwlock named `name` in spans, metrics and reports (lockscope addition).
    ///
    /// ```
    /// let lock = lockscope::tokio::RwLock::named("config", 5);
    /// assert_eq!(lock.name(), "config");
    /// ```
    #[track_caller]
    pub fn named(name: impl AsRef<str>, value: T) -> RwLock<T>
    where
        T: Sized,
    {
        Self::build(Some(name.as_ref()), value, MAX_READS)
    }

    #[track_caller]
    fn build(name: Option<&str>, value: T, max_reads: u32) -> RwLock<T>
    where
        T: Sized,
    {
        RwLock {
            cell: PrimCell::new(
                name.map(Into::into),
                PrimKind::RwLock,
                Location::caller(),
                u64::from(max_reads),
            ),
            mr: max_reads,
            s: super::untraced(|| tokio::sync::Semaphore::new(max_reads as usize)),
            c: UnsafeCell::new(value),
        }
    }

    /// Wrapper for [`tokio::sync::RwLock::with_max_readers`].
    ///
    /// # Panics
    ///
    /// If `max_reads` is 0 or bigger than `u32::MAX >> 3`, as tokio's.
    ///
    /// ```
    /// let lock = lockscope::tokio::RwLock::with_max_readers(5, 1024);
    /// # drop(lock);
    /// ```
    #[track_caller]
    pub fn with_max_readers(value: T, max_reads: u32) -> RwLock<T>
    where
        T: Sized,
    {
        assert_ne!(max_reads, 0, "a RwLock may not be created with 0 readers");
        assert!(
            max_reads <= MAX_READS,
            "a RwLock may not be created with more than {MAX_READS} readers"
        );
        Self::build(None, value, max_reads)
    }

    /// Wrapper for [`tokio::sync::RwLock::const_new`] (registers on first use).
    ///
    /// ```
    /// use lockscope::tokio::RwLock;
    /// static LOCK: RwLock<i32> = RwLock::const_new(5);
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() { assert_eq!(*LOCK.read().await, 5); }
    /// ```
    #[track_caller]
    pub const fn const_new(value: T) -> RwLock<T>
    where
        T: Sized,
    {
        Self::const_with_max_readers(value, MAX_READS)
    }

    /// Wrapper for [`tokio::sync::RwLock::const_with_max_readers`].
    ///
    /// # Panics
    ///
    /// If `max_reads` is 0 or bigger than `u32::MAX >> 3`.
    ///
    /// ```
    /// use lockscope::tokio::RwLock;
    /// static LOCK: RwLock<i32> = RwLock::const_with_max_readers(5, 1024);
    /// ```
    #[track_caller]
    pub const fn const_with_max_readers(value: T, max_reads: u32) -> RwLock<T>
    where
        T: Sized,
    {
        assert!(max_reads != 0, "a RwLock may not be created with 0 readers");
        assert!(max_reads <= MAX_READS);
        RwLock {
            cell: PrimCell::lazy(PrimKind::RwLock, Location::caller(), max_reads as u64),
            mr: max_reads,
            s: tokio::sync::Semaphore::const_new(max_reads as usize),
            c: UnsafeCell::new(value),
        }
    }

    /// The name used in spans, metrics and reports (lockscope addition).
    pub fn name(&self) -> &str {
        self.prim().name()
    }

    /// The semaphore and the primitive: a borrowed guard's owner.
    #[inline]
    fn sem_ref(&self) -> SemRef<'_> {
        SemRef {
            sem: &self.s,
            prim: self.prim(),
        }
    }

    fn read_guard(&self, token: Token) -> RwLockReadGuard<'_, T> {
        RwLockReadGuard::new(self.sem_ref(), self.c.get(), token)
    }

    fn write_guard(&self, token: Token) -> RwLockWriteGuard<'_, T> {
        RwLockWriteGuard::new(self.sem_ref(), self.mr, self.c.get(), token)
    }

    /// Wrapper for [`tokio::sync::RwLock::read`].
    ///
    /// # Cancel safety
    ///
    /// As tokio's: FIFO order; a dropped future gives up its place (lockscope records
    /// `cancelled`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let lock = lockscope::tokio::RwLock::new(1);
    /// assert_eq!(*lock.read().await, 1);
    /// # }
    /// ```
    #[track_caller]
    pub fn read(&self) -> impl Future<Output = RwLockReadGuard<'_, T>> + '_ {
        let site = Location::caller();
        async move {
            let token = probe::acquire!(
                self.prim(),
                Self::read_acq(site),
                take(&self.s, 1),
                queue(&self.s, 1)
            );
            self.read_guard(never_closed(token))
        }
    }

    /// Like [`read`](RwLock::read), but gives up after `timeout` (lockscope addition).
    ///
    /// # Errors
    ///
    /// [`TimeoutError`] when the deadline passes first.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime with time enabled.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// let lock = lockscope::tokio::RwLock::new(1);
    /// let _w = lock.write().await;
    /// assert!(lock.read_timeout(Duration::from_millis(5)).await.is_err());
    /// # }
    /// ```
    #[track_caller]
    pub fn read_timeout(
        &self,
        timeout: Duration,
    ) -> impl Future<Output = Result<RwLockReadGuard<'_, T>, TimeoutError>> + '_ {
        let timed = timed(
            &self.s,
            self.prim(),
            Self::read_acq(Location::caller()),
            1,
            timeout,
        );
        async move { Ok(self.read_guard(timed.await?)) }
    }

    /// Wrapper for [`tokio::sync::RwLock::blocking_read`].
    ///
    /// # Panics
    ///
    /// When called within an asynchronous execution context, as tokio's.
    ///
    /// ```
    /// let lock = lockscope::tokio::RwLock::new(1);
    /// assert_eq!(*lock.blocking_read(), 1);
    /// ```
    #[track_caller]
    pub fn blocking_read(&self) -> RwLockReadGuard<'_, T> {
        let token = blocking(&self.s, self.prim(), Self::read_acq(Location::caller()), 1);
        self.read_guard(never_closed(token))
    }

    /// Wrapper for [`tokio::sync::RwLock::read_owned`].
    ///
    /// # Cancel safety
    ///
    /// As [`read`](RwLock::read).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// let lock = Arc::new(lockscope::tokio::RwLock::new(1));
    /// let g = lock.clone().read_owned().await;
    /// tokio::spawn(async move { assert_eq!(*g, 1) }).await.unwrap();
    /// # }
    /// ```
    #[track_caller]
    pub fn read_owned(self: Arc<Self>) -> impl Future<Output = OwnedRwLockReadGuard<T>> {
        let site = Location::caller();
        async move {
            let acq = Self::read_acq(site).with_flags(hooks::MOVABLE);
            let token = probe::acquire!(self.prim(), acq, take(&self.s, 1), queue(&self.s, 1));
            OwnedRwLockReadGuard::new(self, never_closed(token))
        }
    }

    /// Like [`read_owned`](RwLock::read_owned), but gives up after `timeout` (lockscope
    /// addition).
    ///
    /// # Errors
    ///
    /// [`TimeoutError`] when the deadline passes first.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime with time enabled.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::{sync::Arc, time::Duration};
    /// let lock = Arc::new(lockscope::tokio::RwLock::new(1));
    /// let g = lock.clone().read_owned_timeout(Duration::from_millis(5)).await.unwrap();
    /// assert_eq!(*g, 1);
    /// # }
    /// ```
    #[track_caller]
    pub fn read_owned_timeout(
        self: Arc<Self>,
        timeout: Duration,
    ) -> impl Future<Output = Result<OwnedRwLockReadGuard<T>, TimeoutError>> {
        let site = Location::caller();
        async move {
            let acq = Self::read_acq(site).with_flags(hooks::MOVABLE);
            let token = timed(&self.s, self.prim(), acq, 1, timeout).await?;
            Ok(OwnedRwLockReadGuard::new(self, token))
        }
    }

    /// Wrapper for [`tokio::sync::RwLock::try_read`].
    ///
    /// # Errors
    ///
    /// [`TryLockError`] if a writer holds the lock or is queued.
    ///
    /// ```
    /// let lock = lockscope::tokio::RwLock::new(1);
    /// assert_eq!(*lock.try_read().unwrap(), 1);
    /// ```
    #[track_caller]
    pub fn try_read(&self) -> Result<RwLockReadGuard<'_, T>, TryLockError> {
        let token = try_take(&self.s, self.prim(), Self::read_acq(Location::caller()), 1);
        Ok(self.read_guard(token.map_err(|_| try_lock_error())?))
    }

    /// Wrapper for [`tokio::sync::RwLock::try_read_owned`].
    ///
    /// # Errors
    ///
    /// [`TryLockError`] if a writer holds the lock or is queued.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let lock = Arc::new(lockscope::tokio::RwLock::new(1));
    /// assert_eq!(*lock.try_read_owned().unwrap(), 1);
    /// ```
    #[track_caller]
    pub fn try_read_owned(self: Arc<Self>) -> Result<OwnedRwLockReadGuard<T>, TryLockError> {
        let acq = Self::read_acq(Location::caller()).with_flags(hooks::MOVABLE);
        let token = try_take(&self.s, self.prim(), acq, 1).map_err(|_| try_lock_error())?;
        Ok(OwnedRwLockReadGuard::new(self, token))
    }

    /// Wrapper for [`tokio::sync::RwLock::write`].
    ///
    /// # Cancel safety
    ///
    /// As tokio's: FIFO order; a dropped future gives up its place.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let lock = lockscope::tokio::RwLock::new(1);
    /// *lock.write().await += 1;
    /// assert_eq!(*lock.read().await, 2);
    /// # }
    /// ```
    #[track_caller]
    pub fn write(&self) -> impl Future<Output = RwLockWriteGuard<'_, T>> + '_ {
        let site = Location::caller();
        async move {
            let token = probe::acquire!(
                self.prim(),
                self.write_acq(site),
                take(&self.s, self.mr),
                queue(&self.s, self.mr)
            );
            self.write_guard(never_closed(token))
        }
    }

    /// Like [`write`](RwLock::write), but gives up after `timeout` (lockscope addition).
    ///
    /// # Errors
    ///
    /// [`TimeoutError`] when the deadline passes first.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime with time enabled.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// let lock = lockscope::tokio::RwLock::new(1);
    /// let _r = lock.read().await;
    /// let err = lock.write_timeout(Duration::from_millis(5)).await.unwrap_err();
    /// assert!(err.to_string().contains("held by"));
    /// # }
    /// ```
    #[track_caller]
    pub fn write_timeout(
        &self,
        timeout: Duration,
    ) -> impl Future<Output = Result<RwLockWriteGuard<'_, T>, TimeoutError>> + '_ {
        let timed = timed(
            &self.s,
            self.prim(),
            self.write_acq(Location::caller()),
            self.mr,
            timeout,
        );
        async move { Ok(self.write_guard(timed.await?)) }
    }

    /// Wrapper for [`tokio::sync::RwLock::blocking_write`].
    ///
    /// # Panics
    ///
    /// When called within an asynchronous execution context, as tokio's.
    ///
    /// ```
    /// let lock = lockscope::tokio::RwLock::new(1);
    /// *lock.blocking_write() = 2;
    /// assert_eq!(*lock.blocking_read(), 2);
    /// ```
    #[track_caller]
    pub fn blocking_write(&self) -> RwLockWriteGuard<'_, T> {
        let token = blocking(
            &self.s,
            self.prim(),
            self.write_acq(Location::caller()),
            self.mr,
        );
        self.write_guard(never_closed(token))
    }

    /// Wrapper for [`tokio::sync::RwLock::write_owned`].
    ///
    /// # Cancel safety
    ///
    /// As [`write`](RwLock::write).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// let lock = Arc::new(lockscope::tokio::RwLock::new(1));
    /// let mut g = lock.clone().write_owned().await;
    /// *g = 2;
    /// # }
    /// ```
    #[track_caller]
    pub fn write_owned(self: Arc<Self>) -> impl Future<Output = OwnedRwLockWriteGuard<T>> {
        let site = Location::caller();
        async move {
            let acq = self.write_acq(site).with_flags(hooks::MOVABLE);
            let token = probe::acquire!(
                self.prim(),
                acq,
                take(&self.s, self.mr),
                queue(&self.s, self.mr)
            );
            OwnedRwLockWriteGuard::new(self, never_closed(token))
        }
    }

    /// Like [`write_owned`](RwLock::write_owned), but gives up after `timeout` (lockscope
    /// addition).
    ///
    /// # Errors
    ///
    /// [`TimeoutError`] when the deadline passes first.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime with time enabled.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::{sync::Arc, time::Duration};
    /// let lock = Arc::new(lockscope::tokio::RwLock::new(1));
    /// let g = lock.clone().write_owned_timeout(Duration::from_millis(5)).await.unwrap();
    /// assert_eq!(*g, 1);
    /// # }
    /// ```
    #[track_caller]
    pub fn write_owned_timeout(
        self: Arc<Self>,
        timeout: Duration,
    ) -> impl Future<Output = Result<OwnedRwLockWriteGuard<T>, TimeoutError>> {
        let site = Location::caller();
        async move {
            let acq = self.write_acq(site).with_flags(hooks::MOVABLE);
            let token = timed(&self.s, self.prim(), acq, self.mr, timeout).await?;
            Ok(OwnedRwLockWriteGuard::new(self, token))
        }
    }

    /// Wrapper for [`tokio::sync::RwLock::try_write`].
    ///
    /// # Errors
    ///
    /// [`TryLockError`] if anyone holds the lock.
    ///
    /// ```
    /// let lock = lockscope::tokio::RwLock::new(1);
    /// let r = lock.try_read().unwrap();
    /// assert!(lock.try_write().is_err());
    /// drop(r);
    /// ```
    #[track_caller]
    pub fn try_write(&self) -> Result<RwLockWriteGuard<'_, T>, TryLockError> {
        let token = try_take(
            &self.s,
            self.prim(),
            self.write_acq(Location::caller()),
            self.mr,
        );
        Ok(self.write_guard(token.map_err(|_| try_lock_error())?))
    }

    /// Wrapper for [`tokio::sync::RwLock::try_write_owned`].
    ///
    /// # Errors
    ///
    /// [`TryLockError`] if anyone holds the lock.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let lock = Arc::new(lockscope::tokio::RwLock::new(1));
    /// let g = lock.clone().try_write_owned().unwrap();
    /// assert!(lock.try_write_owned().is_err());
    /// drop(g);
    /// ```
    #[track_caller]
    pub fn try_write_owned(self: Arc<Self>) -> Result<OwnedRwLockWriteGuard<T>, TryLockError> {
        let acq = self
            .write_acq(Location::caller())
            .with_flags(hooks::MOVABLE);
        let token = try_take(&self.s, self.prim(), acq, self.mr).map_err(|_| try_lock_error())?;
        Ok(OwnedRwLockWriteGuard::new(self, token))
    }

    /// Wrapper for [`tokio::sync::RwLock::get_mut`].
    ///
    /// ```
    /// let mut lock = lockscope::tokio::RwLock::new(1);
    /// *lock.get_mut() = 2;
    /// assert_eq!(lock.into_inner(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.c.get_mut()
    }

    /// Wrapper for [`tokio::sync::RwLock::into_inner`].
    ///
    /// ```
    /// let lock = lockscope::tokio::RwLock::new(1);
    /// assert_eq!(lock.into_inner(), 1);
    /// ```
    pub fn into_inner(self) -> T
    where
        T: Sized,
    {
        self.c.into_inner()
    }
}

impl<T> From<T> for RwLock<T> {
    #[track_caller]
    fn from(s: T) -> Self {
        Self::new(s)
    }
}

impl<T> Default for RwLock<T>
where
    T: Default,
{
    #[track_caller]
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T: ?Sized> fmt::Debug for RwLock<T>
where
    T: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwLock");
        match self.s.try_acquire() {
            // SAFETY: a read permit keeps writers out while we read.
            Ok(_permit) => d.field("data", &unsafe { &*self.c.get() }),
            Err(_) => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}
