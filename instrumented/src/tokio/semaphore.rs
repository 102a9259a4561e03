//! [`Semaphore`]: a drop-in `tokio::sync::Semaphore`.

use std::fmt;
use std::future::Future;
use std::panic::Location;
use std::sync::Arc;
use std::time::Duration;

use lockscope_detector::hooks::{self, Acq, Mode, PrimCell, PrimKind};
use lockscope_detector::prim::Prim;

use super::acquire::{blocking, queue, take, timed, try_take};
use super::semaphore_permit::{OwnedSemaphorePermit, SemaphorePermit};
use super::{AcquireError, TimeoutError, TryAcquireError};
use crate::probe::{self, Token};

/// Wrapper for [`tokio::sync::Semaphore`]: tokio's fair (FIFO) counting semaphore, with
/// every acquisition, `forget`, `add_permits` and `close` visible to lockscope.
///
/// The detector keeps its capacity (after `add_permits`/`forget_permits`), its holders and
/// waiters, counts forgotten permits, and reports nested acquires (a task asking for a
/// permit while it holds one), leaked permits and stuck queues.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use lockscope::tokio::Semaphore;
///
/// let pool = Arc::new(Semaphore::named("db_pool", 2));
/// let mut tasks = Vec::new();
/// for _ in 0..5 {
///     let permit = pool.clone().acquire_owned().await.unwrap();
///     tasks.push(tokio::spawn(async move { drop(permit) }));
/// }
/// for t in tasks { t.await.unwrap(); }
/// assert_eq!(pool.available_permits(), 2);
/// # }
/// ```
pub struct Semaphore {
    pub(crate) cell: PrimCell,
    pub(crate) ll: tokio::sync::Semaphore,
}

impl Semaphore {
    /// The maximum number of permits, as tokio's (`usize::MAX >> 3`).
    pub const MAX_PERMITS: usize = tokio::sync::Semaphore::MAX_PERMITS;

    #[inline]
    fn acq(site: &'static Location<'static>, n: u32) -> Acq {
        Acq::new(site, n, Mode::Permits)
    }

    #[inline]
    pub(crate) fn prim(&self) -> &Prim {
        self.cell.get()
    }

    /// Wrapper for [`tokio::sync::Semaphore::new`], named after the caller's location.
    ///
    /// # Panics
    ///
    /// If `permits` exceeds [`Semaphore::MAX_PERMITS`], as tokio's.
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(3);
    /// assert_eq!(s.available_permits(), 3);
    /// ```
    #[track_caller]
    pub fn new(permits: usize) -> Self {
        let ll = super::untraced(|| tokio::sync::Semaphore::new(permits));
        Semaphore {
            cell: PrimCell::new(
                None,
                PrimKind::Semaphore,
                Location::caller(),
                permits as u64,
            ),
            ll,
        }
    }

    /// A semaphore named `name` in spans, metrics and reports (lockscope addition).
    ///
    /// # Panics
    ///
    /// If `permits` exceeds [`Semaphore::MAX_PERMITS`].
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::named("db_writes", 4);
    /// assert_eq!(s.name(), "db_writes");
    /// ```
    #[track_caller]
    pub fn named(name: impl AsRef<str>, permits: usize) -> Self {
        let ll = super::untraced(|| tokio::sync::Semaphore::new(permits));
        Semaphore {
            cell: PrimCell::new(
                Some(name.as_ref().into()),
                PrimKind::Semaphore,
                Location::caller(),
                permits as u64,
            ),
            ll,
        }
    }

    /// Wrapper for [`tokio::sync::Semaphore::const_new`] (registers on first use).
    ///
    /// ```
    /// use lockscope::tokio::Semaphore;
    /// static PERMITS: Semaphore = Semaphore::const_new(10);
    /// assert_eq!(PERMITS.available_permits(), 10);
    /// ```
    #[track_caller]
    pub const fn const_new(permits: usize) -> Self {
        Semaphore {
            cell: PrimCell::lazy(PrimKind::Semaphore, Location::caller(), permits as u64),
            ll: tokio::sync::Semaphore::const_new(permits),
        }
    }

    /// The name used in spans, metrics and reports (lockscope addition).
    pub fn name(&self) -> &str {
        self.prim().name()
    }

    /// Wrapper for [`tokio::sync::Semaphore::available_permits`].
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(2);
    /// let _p = s.try_acquire().unwrap();
    /// assert_eq!(s.available_permits(), 1);
    /// ```
    pub fn available_permits(&self) -> usize {
        self.ll.available_permits()
    }

    /// Wrapper for [`tokio::sync::Semaphore::add_permits`]. The detector's capacity grows,
    /// and forgotten permits count as paid back first.
    ///
    /// # Panics
    ///
    /// If the total would exceed [`Semaphore::MAX_PERMITS`], as tokio's.
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(0);
    /// s.add_permits(2);
    /// assert_eq!(s.available_permits(), 2);
    /// ```
    #[track_caller]
    pub fn add_permits(&self, n: usize) {
        self.ll.add_permits(n);
        if hooks::enabled() {
            hooks::added_permits(self.prim(), n as u64);
        }
    }

    /// Wrapper for [`tokio::sync::Semaphore::forget_permits`]: the capacity shrinks on
    /// purpose (not a leak).
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(3);
    /// assert_eq!(s.forget_permits(2), 2);
    /// assert_eq!(s.available_permits(), 1);
    /// ```
    pub fn forget_permits(&self, n: usize) -> usize {
        let removed = self.ll.forget_permits(n);
        if hooks::enabled() {
            hooks::removed_permits(self.prim(), removed as u64);
        }
        removed
    }

    fn permit(&self, permits: u32, token: Token) -> SemaphorePermit<'_> {
        SemaphorePermit::new(self, permits, token)
    }

    /// Wrapper for [`tokio::sync::Semaphore::acquire`].
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed.
    ///
    /// # Cancel safety
    ///
    /// As tokio's: FIFO; a dropped future gives up its place (recorded as `cancelled`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let s = lockscope::tokio::Semaphore::new(1);
    /// let p = s.acquire().await.unwrap();
    /// assert_eq!(p.num_permits(), 1);
    /// # }
    /// ```
    #[track_caller]
    pub fn acquire(&self) -> impl Future<Output = Result<SemaphorePermit<'_>, AcquireError>> + '_ {
        self.acquire_n(Location::caller(), 1)
    }

    /// Wrapper for [`tokio::sync::Semaphore::acquire_many`].
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed.
    ///
    /// # Cancel safety
    ///
    /// As tokio's: FIFO, and a large request at the head blocks smaller ones behind it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let s = lockscope::tokio::Semaphore::new(5);
    /// let p = s.acquire_many(3).await.unwrap();
    /// assert_eq!(s.available_permits(), 2);
    /// # drop(p);
    /// # }
    /// ```
    #[track_caller]
    pub fn acquire_many(
        &self,
        n: u32,
    ) -> impl Future<Output = Result<SemaphorePermit<'_>, AcquireError>> + '_ {
        self.acquire_n(Location::caller(), n)
    }

    async fn acquire_n(
        &self,
        site: &'static Location<'static>,
        n: u32,
    ) -> Result<SemaphorePermit<'_>, AcquireError> {
        let token = probe::acquire!(
            self.prim(),
            Self::acq(site, n),
            take(&self.ll, n),
            queue(&self.ll, n)
        )?;
        Ok(self.permit(n, token))
    }

    /// Like [`acquire`](Semaphore::acquire), but gives up after `timeout` (lockscope
    /// addition). The error names the semaphore, how long it waited and who holds permits.
    ///
    /// # Errors
    ///
    /// [`TimeoutError`] when the deadline passes first or the semaphore is closed
    /// ([`TimeoutError::is_closed`]).
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime with time enabled.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// let s = lockscope::tokio::Semaphore::named("pool", 1);
    /// let _p = s.acquire().await.unwrap();
    /// let err = s.acquire_timeout(Duration::from_millis(5)).await.unwrap_err();
    /// assert!(err.to_string().contains("semaphore \"pool\""));
    /// # }
    /// ```
    #[track_caller]
    pub fn acquire_timeout(
        &self,
        timeout: Duration,
    ) -> impl Future<Output = Result<SemaphorePermit<'_>, TimeoutError>> + '_ {
        self.acquire_n_timeout(Location::caller(), 1, timeout)
    }

    /// Like [`acquire_many`](Semaphore::acquire_many) with a deadline (lockscope addition).
    ///
    /// # Errors
    ///
    /// [`TimeoutError`] when the deadline passes first or the semaphore is closed.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime with time enabled.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// let s = lockscope::tokio::Semaphore::new(1);
    /// assert!(s.acquire_many_timeout(2, Duration::from_millis(5)).await.is_err());
    /// # }
    /// ```
    #[track_caller]
    pub fn acquire_many_timeout(
        &self,
        n: u32,
        timeout: Duration,
    ) -> impl Future<Output = Result<SemaphorePermit<'_>, TimeoutError>> + '_ {
        self.acquire_n_timeout(Location::caller(), n, timeout)
    }

    #[track_caller]
    fn acquire_n_timeout(
        &self,
        site: &'static Location<'static>,
        n: u32,
        timeout: Duration,
    ) -> impl Future<Output = Result<SemaphorePermit<'_>, TimeoutError>> + '_ {
        let timed = timed(&self.ll, self.prim(), Self::acq(site, n), n, timeout);
        async move { Ok(self.permit(n, timed.await?)) }
    }

    /// Wrapper for [`tokio::sync::Semaphore::try_acquire`].
    ///
    /// # Errors
    ///
    /// [`TryAcquireError::NoPermits`] or [`TryAcquireError::Closed`] (counted in
    /// `lockscope_try_failures_total`).
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(1);
    /// let p = s.try_acquire().unwrap();
    /// assert!(s.try_acquire().is_err());
    /// drop(p);
    /// ```
    #[track_caller]
    pub fn try_acquire(&self) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        self.try_acquire_n(Location::caller(), 1)
    }

    /// Wrapper for [`tokio::sync::Semaphore::try_acquire_many`].
    ///
    /// # Errors
    ///
    /// [`TryAcquireError::NoPermits`] or [`TryAcquireError::Closed`].
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(2);
    /// assert!(s.try_acquire_many(3).is_err());
    /// assert!(s.try_acquire_many(2).is_ok());
    /// ```
    #[track_caller]
    pub fn try_acquire_many(&self, n: u32) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        self.try_acquire_n(Location::caller(), n)
    }

    fn try_acquire_n(
        &self,
        site: &'static Location<'static>,
        n: u32,
    ) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        let token = try_take(&self.ll, self.prim(), Self::acq(site, n), n)?;
        Ok(self.permit(n, token))
    }

    /// Wrapper for [`tokio::sync::Semaphore::blocking_acquire`].
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed.
    ///
    /// # Panics
    ///
    /// When called within an asynchronous execution context, as tokio's.
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(1);
    /// let p = s.blocking_acquire().unwrap();
    /// assert_eq!(p.num_permits(), 1);
    /// ```
    #[track_caller]
    pub fn blocking_acquire(&self) -> Result<SemaphorePermit<'_>, AcquireError> {
        self.blocking_n(Location::caller(), 1)
    }

    /// Wrapper for [`tokio::sync::Semaphore::blocking_acquire_many`].
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed.
    ///
    /// # Panics
    ///
    /// When called within an asynchronous execution context, as tokio's.
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(3);
    /// let p = s.blocking_acquire_many(2).unwrap();
    /// assert_eq!(p.num_permits(), 2);
    /// ```
    #[track_caller]
    pub fn blocking_acquire_many(&self, n: u32) -> Result<SemaphorePermit<'_>, AcquireError> {
        self.blocking_n(Location::caller(), n)
    }

    #[track_caller]
    fn blocking_n(
        &self,
        site: &'static Location<'static>,
        n: u32,
    ) -> Result<SemaphorePermit<'_>, AcquireError> {
        let token = blocking(&self.ll, self.prim(), Self::acq(site, n), n)?;
        Ok(self.permit(n, token))
    }

    /// Wrapper for [`tokio::sync::Semaphore::acquire_owned`].
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed.
    ///
    /// # Cancel safety
    ///
    /// As [`acquire`](Semaphore::acquire).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
    /// let p = s.clone().acquire_owned().await.unwrap();
    /// tokio::spawn(async move { drop(p) }).await.unwrap();
    /// assert_eq!(s.available_permits(), 1);
    /// # }
    /// ```
    #[track_caller]
    pub fn acquire_owned(
        self: Arc<Self>,
    ) -> impl Future<Output = Result<OwnedSemaphorePermit, AcquireError>> {
        Self::acquire_n_owned(self, Location::caller(), 1)
    }

    /// Wrapper for [`tokio::sync::Semaphore::acquire_many_owned`].
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed.
    ///
    /// # Cancel safety
    ///
    /// As [`acquire_many`](Semaphore::acquire_many).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(4));
    /// let p = s.clone().acquire_many_owned(3).await.unwrap();
    /// assert_eq!(p.num_permits(), 3);
    /// # }
    /// ```
    #[track_caller]
    pub fn acquire_many_owned(
        self: Arc<Self>,
        n: u32,
    ) -> impl Future<Output = Result<OwnedSemaphorePermit, AcquireError>> {
        Self::acquire_n_owned(self, Location::caller(), n)
    }

    async fn acquire_n_owned(
        this: Arc<Self>,
        site: &'static Location<'static>,
        n: u32,
    ) -> Result<OwnedSemaphorePermit, AcquireError> {
        let acq = Self::acq(site, n).with_flags(hooks::MOVABLE);
        let token = probe::acquire!(this.prim(), acq, take(&this.ll, n), queue(&this.ll, n))?;
        Ok(OwnedSemaphorePermit::new(this, n, token))
    }

    /// Like [`acquire_owned`](Semaphore::acquire_owned) with a deadline (lockscope addition).
    ///
    /// # Errors
    ///
    /// [`TimeoutError`] when the deadline passes first or the semaphore is closed.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime with time enabled.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::{sync::Arc, time::Duration};
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
    /// let p = s.clone().acquire_owned_timeout(Duration::from_millis(5)).await.unwrap();
    /// assert_eq!(p.num_permits(), 1);
    /// # }
    /// ```
    #[track_caller]
    pub fn acquire_owned_timeout(
        self: Arc<Self>,
        timeout: Duration,
    ) -> impl Future<Output = Result<OwnedSemaphorePermit, TimeoutError>> {
        Self::acquire_n_owned_timeout(self, Location::caller(), 1, timeout)
    }

    /// Like [`acquire_many_owned`](Semaphore::acquire_many_owned) with a deadline
    /// (lockscope addition).
    ///
    /// # Errors
    ///
    /// [`TimeoutError`] when the deadline passes first or the semaphore is closed.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime with time enabled.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::{sync::Arc, time::Duration};
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
    /// assert!(s.acquire_many_owned_timeout(2, Duration::from_millis(5)).await.is_err());
    /// # }
    /// ```
    #[track_caller]
    pub fn acquire_many_owned_timeout(
        self: Arc<Self>,
        n: u32,
        timeout: Duration,
    ) -> impl Future<Output = Result<OwnedSemaphorePermit, TimeoutError>> {
        Self::acquire_n_owned_timeout(self, Location::caller(), n, timeout)
    }

    async fn acquire_n_owned_timeout(
        this: Arc<Self>,
        site: &'static Location<'static>,
        n: u32,
        timeout: Duration,
    ) -> Result<OwnedSemaphorePermit, TimeoutError> {
        let acq = Self::acq(site, n).with_flags(hooks::MOVABLE);
        let token = timed(&this.ll, this.prim(), acq, n, timeout).await?;
        Ok(OwnedSemaphorePermit::new(this, n, token))
    }

    /// Wrapper for [`tokio::sync::Semaphore::try_acquire_owned`].
    ///
    /// # Errors
    ///
    /// [`TryAcquireError::NoPermits`] or [`TryAcquireError::Closed`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
    /// let p = s.clone().try_acquire_owned().unwrap();
    /// assert!(s.clone().try_acquire_owned().is_err());
    /// drop(p);
    /// ```
    #[track_caller]
    pub fn try_acquire_owned(self: Arc<Self>) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        Self::try_acquire_n_owned(self, Location::caller(), 1)
    }

    /// Wrapper for [`tokio::sync::Semaphore::try_acquire_many_owned`].
    ///
    /// # Errors
    ///
    /// [`TryAcquireError::NoPermits`] or [`TryAcquireError::Closed`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(2));
    /// assert_eq!(s.try_acquire_many_owned(2).unwrap().num_permits(), 2);
    /// ```
    #[track_caller]
    pub fn try_acquire_many_owned(
        self: Arc<Self>,
        n: u32,
    ) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        Self::try_acquire_n_owned(self, Location::caller(), n)
    }

    fn try_acquire_n_owned(
        this: Arc<Self>,
        site: &'static Location<'static>,
        n: u32,
    ) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        let acq = Self::acq(site, n).with_flags(hooks::MOVABLE);
        let token = try_take(&this.ll, this.prim(), acq, n)?;
        Ok(OwnedSemaphorePermit::new(this, n, token))
    }

    /// Wrapper for [`tokio::sync::Semaphore::blocking_acquire_owned`].
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed.
    ///
    /// # Panics
    ///
    /// When called within an asynchronous execution context, as tokio's.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
    /// assert_eq!(s.blocking_acquire_owned().unwrap().num_permits(), 1);
    /// ```
    #[track_caller]
    pub fn blocking_acquire_owned(self: Arc<Self>) -> Result<OwnedSemaphorePermit, AcquireError> {
        Self::blocking_n_owned(self, Location::caller(), 1)
    }

    /// Wrapper for [`tokio::sync::Semaphore::blocking_acquire_many_owned`].
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed.
    ///
    /// # Panics
    ///
    /// When called within an asynchronous execution context, as tokio's.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(3));
    /// assert_eq!(s.blocking_acquire_many_owned(3).unwrap().num_permits(), 3);
    /// ```
    #[track_caller]
    pub fn blocking_acquire_many_owned(
        self: Arc<Self>,
        n: u32,
    ) -> Result<OwnedSemaphorePermit, AcquireError> {
        Self::blocking_n_owned(self, Location::caller(), n)
    }

    #[track_caller]
    fn blocking_n_owned(
        this: Arc<Self>,
        site: &'static Location<'static>,
        n: u32,
    ) -> Result<OwnedSemaphorePermit, AcquireError> {
        let acq = Self::acq(site, n).with_flags(hooks::MOVABLE);
        let token = blocking(&this.ll, this.prim(), acq, n)?;
        Ok(OwnedSemaphorePermit::new(this, n, token))
    }

    /// Wrapper for [`tokio::sync::Semaphore::close`]: waiters get [`AcquireError`], and the
    /// detector stops expecting them to be granted.
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(1);
    /// s.close();
    /// assert!(s.try_acquire().is_err());
    /// assert!(s.is_closed());
    /// ```
    pub fn close(&self) {
        self.ll.close();
        if hooks::enabled() {
            hooks::closed(self.prim());
        }
    }

    /// Wrapper for [`tokio::sync::Semaphore::is_closed`].
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(1);
    /// assert!(!s.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.ll.is_closed()
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.ll, f)
    }
}
