//! Drop-in for `tokio_util::sync::PollSemaphore` over lockscope's [`Semaphore`] (feature
//! `tokio-util`), for code that polls for permits by hand: tower's `ConcurrencyLimit`, for
//! one, builds after swapping `use tokio_util::sync::PollSemaphore;` for
//! `use lockscope::tokio_util::PollSemaphore;` along with its `tokio::sync` imports.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::tokio::{AcquireError, OwnedSemaphorePermit, Semaphore, TryAcquireError};

/// What the acquire future yields.
type Acquired = Result<OwnedSemaphorePermit, AcquireError>;

/// A queued acquisition, kept between polls. `Sync` as well as `Send` (lockscope's acquire
/// futures are both), so that a `PollSemaphore` is `Sync` as tokio-util's is: tower's
/// `ConcurrencyLimit` inside a `BoxCloneSyncService` needs it. tokio-util gets there with a
/// `ReusableBoxFuture` that is `Sync` by an `unsafe impl`; no `unsafe` is needed here.
type Queued = Pin<Box<dyn Future<Output = Acquired> + Send + Sync + 'static>>;

/// Wrapper for `tokio_util::sync::PollSemaphore`: a lockscope [`Semaphore`] in an `Arc`, with
/// `poll_acquire` methods for `poll`-style code, and a `Stream` of permits.
///
/// Behaves as tokio-util's: a permit free at once is taken without allocating; otherwise the
/// caller is queued (FIFO, as every acquire) by an acquire future kept between polls, and
/// after a grant the next acquire of the same size is queued right away. The acquisitions are
/// lockscope's, so they are in its books, spans and metrics like any other.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::future::poll_fn;
/// use std::sync::Arc;
/// use lockscope::tokio::Semaphore;
/// use lockscope::tokio_util::PollSemaphore;
///
/// let mut sem = PollSemaphore::new(Arc::new(Semaphore::new(1)));
/// let permit = poll_fn(|cx| sem.poll_acquire(cx)).await.unwrap();
/// assert_eq!(sem.available_permits(), 0);
/// drop(permit);
/// assert_eq!(sem.available_permits(), 1);
/// # }
/// ```
pub struct PollSemaphore {
    semaphore: Arc<Semaphore>,
    /// The queued acquisition and how many permits it asks for.
    pending: Option<(u32, Queued)>,
}

impl PollSemaphore {
    /// Wrapper for `PollSemaphore::new`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = lockscope::tokio_util::PollSemaphore::new(Arc::new(lockscope::tokio::Semaphore::new(2)));
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    pub fn new(semaphore: Arc<Semaphore>) -> Self {
        PollSemaphore {
            semaphore,
            pending: None,
        }
    }

    /// Wrapper for `PollSemaphore::close`: closes the semaphore.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = lockscope::tokio_util::PollSemaphore::new(Arc::new(lockscope::tokio::Semaphore::new(1)));
    /// sem.close();
    /// assert!(sem.clone_inner().is_closed());
    /// ```
    pub fn close(&self) {
        self.semaphore.close();
    }

    /// Wrapper for `PollSemaphore::clone_inner`: the semaphore.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let inner = Arc::new(lockscope::tokio::Semaphore::new(1));
    /// let sem = lockscope::tokio_util::PollSemaphore::new(inner.clone());
    /// assert!(Arc::ptr_eq(&sem.clone_inner(), &inner));
    /// ```
    pub fn clone_inner(&self) -> Arc<Semaphore> {
        self.semaphore.clone()
    }

    /// Wrapper for `PollSemaphore::into_inner`: the semaphore (a queued acquisition is
    /// dropped, giving up its place).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = lockscope::tokio_util::PollSemaphore::new(Arc::new(lockscope::tokio::Semaphore::new(3)));
    /// assert_eq!(sem.into_inner().available_permits(), 3);
    /// ```
    pub fn into_inner(self) -> Arc<Semaphore> {
        self.semaphore
    }

    /// Wrapper for `PollSemaphore::poll_acquire`: one permit, or `None` once the semaphore
    /// is closed. When `Pending`, the task is woken when it may have one.
    #[track_caller]
    pub fn poll_acquire(&mut self, cx: &mut Context<'_>) -> Poll<Option<OwnedSemaphorePermit>> {
        self.poll_acquire_many(cx, 1)
    }

    /// Wrapper for `PollSemaphore::poll_acquire_many`: `permits` permits, or `None` once the
    /// semaphore is closed. Asking for a different number than the queued acquisition asks
    /// for replaces it (giving up its place).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::future::poll_fn;
    /// use std::sync::Arc;
    /// let mut sem = lockscope::tokio_util::PollSemaphore::new(Arc::new(lockscope::tokio::Semaphore::new(3)));
    /// let p = poll_fn(|cx| sem.poll_acquire_many(cx, 2)).await.unwrap();
    /// assert_eq!(p.num_permits(), 2);
    /// # }
    /// ```
    #[track_caller]
    pub fn poll_acquire_many(
        &mut self,
        cx: &mut Context<'_>,
        permits: u32,
    ) -> Poll<Option<OwnedSemaphorePermit>> {
        let queued = match &mut self.pending {
            Some((n, fut)) if *n == permits => fut,
            _ => {
                if self.pending.is_none() {
                    // Nothing queued: a free permit is taken without boxing a future.
                    match self.semaphore.clone().try_acquire_many_owned(permits) {
                        Ok(p) => return Poll::Ready(Some(p)),
                        Err(TryAcquireError::Closed) => return Poll::Ready(None),
                        Err(TryAcquireError::NoPermits) => {}
                    }
                }
                let fut = Box::pin(self.semaphore.clone().acquire_many_owned(permits));
                &mut self.pending.insert((permits, fut)).1
            }
        };
        let acquired = std::task::ready!(queued.as_mut().poll(cx));
        match acquired {
            Ok(p) => {
                // The next call most likely asks for as many: queue for them now, as
                // tokio-util does, so the place in line is kept.
                *queued = Box::pin(self.semaphore.clone().acquire_many_owned(permits));
                Poll::Ready(Some(p))
            }
            Err(_closed) => {
                self.pending = None;
                Poll::Ready(None)
            }
        }
    }

    /// Wrapper for `PollSemaphore::available_permits`.
    pub fn available_permits(&self) -> usize {
        self.semaphore.available_permits()
    }

    /// Wrapper for `PollSemaphore::add_permits`.
    ///
    /// # Panics
    ///
    /// If the total would exceed [`Semaphore::MAX_PERMITS`], as tokio's.
    #[track_caller]
    pub fn add_permits(&self, n: usize) {
        self.semaphore.add_permits(n);
    }
}

/// A permit per item, as tokio-util's (`None` once the semaphore is closed).
impl futures_core::Stream for PollSemaphore {
    type Item = OwnedSemaphorePermit;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::into_inner(self).poll_acquire(cx)
    }
}

/// A new `PollSemaphore` on the same semaphore, with nothing queued.
impl Clone for PollSemaphore {
    fn clone(&self) -> Self {
        PollSemaphore::new(self.clone_inner())
    }
}

impl fmt::Debug for PollSemaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PollSemaphore")
            .field("semaphore", &self.semaphore)
            .finish()
    }
}

impl AsRef<Semaphore> for PollSemaphore {
    fn as_ref(&self) -> &Semaphore {
        &self.semaphore
    }
}
