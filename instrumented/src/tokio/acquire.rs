//! How every tokio wrapper takes permits from its raw `tokio::sync::Semaphore`, written once:
//! the fast `take` and the queued `queue` of an async acquisition (for `probe::acquire!`),
//! and the timed, blocking and `try_` forms. The permits are forgotten on the way: the guard
//! or permit made from the returned [`Token`] gives them back.

use std::future::Future;
use std::time::Duration;

use lockscope_detector::hooks::Acq;
use lockscope_detector::prim::Prim;
use tokio::sync::{AcquireError, Semaphore, SemaphorePermit, TryAcquireError};

use super::{TimeoutError, assert_blocking_allowed, block_on};
use crate::probe::{self, Timed, TimedError, Token};

/// Takes `n` permits if they are free, without queueing.
#[inline]
pub(crate) fn take(sem: &Semaphore, n: u32) -> bool {
    sem.try_acquire_many(n).map(SemaphorePermit::forget).is_ok()
}

/// Queues for `n` permits (tokio's FIFO acquire future).
pub(crate) async fn queue(sem: &Semaphore, n: u32) -> Result<(), AcquireError> {
    sem.acquire_many(n).await.map(SemaphorePermit::forget)
}

/// `n` permits, or a [`TimeoutError`] after `timeout` (or when the semaphore is closed). The
/// deadline is set now, at the call (so that a runtime without time panics here, as tokio's
/// `timeout` does), not at the first poll.
#[track_caller]
pub(crate) fn timed<'a>(
    sem: &'a Semaphore,
    prim: &'a Prim,
    acq: Acq,
    n: u32,
    timeout: Duration,
) -> impl Future<Output = Result<Token, TimeoutError>> + 'a {
    let timed = Timed::new(prim, acq, timeout, sem.acquire_many(n));
    async move {
        match timed.await {
            Ok((permit, token)) => {
                permit.forget();
                Ok(token)
            }
            Err(TimedError::Elapsed(waited)) => Err(TimeoutError::elapsed(prim, waited)),
            Err(TimedError::Inner(_)) => Err(TimeoutError::closed(prim)),
        }
    }
}

/// `n` permits, blocking this thread as tokio's `blocking_*` methods do.
///
/// # Panics
///
/// Within an asynchronous execution context, as tokio's.
#[track_caller]
pub(crate) fn blocking(
    sem: &Semaphore,
    prim: &Prim,
    acq: Acq,
    n: u32,
) -> Result<Token, AcquireError> {
    assert_blocking_allowed();
    let (permit, token) = probe::blocking(
        prim,
        acq,
        || sem.try_acquire_many(n).ok(),
        || block_on(sem.acquire_many(n)),
    )?;
    permit.forget();
    Ok(token)
}

/// `n` permits if they are free now (a `try_` form; a failure is counted).
pub(crate) fn try_take(
    sem: &Semaphore,
    prim: &Prim,
    acq: Acq,
    n: u32,
) -> Result<Token, TryAcquireError> {
    match sem.try_acquire_many(n) {
        Ok(permit) => {
            permit.forget();
            Ok(probe::try_acquired(prim, acq))
        }
        Err(e) => {
            probe::try_failed(prim, acq);
            Err(e)
        }
    }
}

/// The value of a lock's acquisition, whose semaphore is never closed.
#[inline]
pub(crate) fn never_closed<T, E>(r: Result<T, E>) -> T {
    match r {
        Ok(t) => t,
        Err(_) => unreachable!("a lock's semaphore is never closed"),
    }
}
