//! Timed acquisitions (the `*_timeout` forms): an [`Acquire`] raced against a deadline, and
//! the holders a timeout error names.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use lockscope_detector::__private::hooks::Acq;
use lockscope_detector::__private::prim::{Prim, site_string};
use pin_project_lite::pin_project;

use super::{Acquire, Token};

pin_project! {
    /// An [`Acquire`] with a deadline (the `*_timeout` forms).
    pub(crate) struct Timed<'p, F> {
        #[pin]
        acquire: Acquire<'p, F>,
        #[pin]
        sleep: tokio::time::Sleep,
    }
}

impl<'p, F> Timed<'p, F> {
    /// `inner` with a deadline of `timeout` from now.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime with the time driver enabled (as `tokio::time::timeout`).
    #[track_caller]
    pub(crate) fn new(prim: &'p Prim, acq: Acq, timeout: Duration, inner: F) -> Self {
        Timed {
            acquire: Acquire::new(prim, acq, inner).timed(),
            sleep: tokio::time::sleep(timeout),
        }
    }
}

/// Why a timed acquisition returned without a guard.
pub(crate) enum TimedError<E> {
    /// The inner acquisition failed (a closed semaphore).
    Inner(E),
    /// The deadline passed after waiting this long.
    Elapsed(Duration),
}

impl<P, E, F: Future<Output = Result<P, E>>> Future for Timed<'_, F> {
    type Output = Result<(P, Token), TimedError<E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Poll::Ready(r) = this.acquire.as_mut().poll(cx) {
            return Poll::Ready(r.map_err(TimedError::Inner));
        }
        match this.sleep.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(TimedError::Elapsed(this.acquire.time_out()))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The holders of `prim` now, for timeout errors: `(actor, site, held for)`.
pub(crate) fn holders_of(prim: &Prim) -> Vec<(String, String, Duration)> {
    let now = lockscope_detector::__private::clock::coarse_now();
    let mut out = Vec::new();
    lockscope_detector::__private::held::for_each_all(|h| {
        if h.prim == prim.id().0 {
            out.push((
                h.actor.describe(),
                site_string(h.site),
                Duration::from_nanos(now.saturating_sub(h.since)),
            ));
        }
    });
    out
}
