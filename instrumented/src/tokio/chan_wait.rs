//! The one future every channel wrapper's waiting call goes through: it polls tokio's own
//! future and only translates. The first time that future is pending the wait enters the
//! books (one cold call), and it leaves them when the future completes or is dropped: a
//! message that passes without waiting records nothing, and a `select!` that drops the call
//! leaves no ghost wait.

use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use lockscope_detector::__private::hooks::{self, ChanOp, ChanWait, Channel};
use pin_project_lite::pin_project;

/// How many messages a finished call moved, for the channel's metered counts (see
/// [`Channel::sent`]): a closure of the call's output, or [`Uncounted`].
pub(crate) trait Count<O> {
    /// Messages `out` says were moved.
    fn count(&self, out: &O) -> usize;
}

/// A call that moves no message by itself (a `reserve`: the permit counts its send).
pub(crate) struct Uncounted;

impl<O> Count<O> for Uncounted {
    #[inline]
    fn count(&self, _: &O) -> usize {
        0
    }
}

impl<O, G: Fn(&O) -> usize> Count<O> for G {
    #[inline]
    fn count(&self, out: &O) -> usize {
        self(out)
    }
}

pin_project! {
    /// tokio's future `fut`, a `op` on `chan` called at `site`, with its wait in the books
    /// while it is pending, and the messages it moved (`count` of its output) counted when
    /// it completes.
    pub(crate) struct Waiting<'c, F, C = Uncounted> {
        #[pin]
        fut: F,
        chan: &'c Arc<Channel>,
        op: ChanOp,
        site: &'static Location<'static>,
        wait: ChanWait,
        count: C,
    }
}

impl<'c, F> Waiting<'c, F> {
    /// Wraps `fut`, a `op` on `chan` called at `site`, that moves no message by itself.
    #[inline]
    pub(crate) fn new(
        fut: F,
        chan: &'c Arc<Channel>,
        op: ChanOp,
        site: &'static Location<'static>,
    ) -> Self {
        Waiting::counting(fut, chan, op, site, Uncounted)
    }
}

impl<'c, F, C> Waiting<'c, F, C> {
    /// Wraps `fut`, a `op` on `chan` called at `site`, whose output moved `count(output)`
    /// messages (a send: sent; a receive: received).
    #[inline]
    pub(crate) fn counting(
        fut: F,
        chan: &'c Arc<Channel>,
        op: ChanOp,
        site: &'static Location<'static>,
        count: C,
    ) -> Self {
        Waiting {
            fut,
            chan,
            op,
            site,
            wait: ChanWait::none(),
            count,
        }
    }
}

impl<F: Future, C: Count<F::Output>> Future for Waiting<'_, F, C> {
    type Output = F::Output;

    // Always: a call per send and per receive (with its register saves) was most of what the
    // wrapper cost switched off.
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if *this.op == ChanOp::Recv {
            this.chan.note_receiver();
        }
        let out = this.fut.poll(cx);
        if let Poll::Ready(o) = &out {
            this.wait.end();
            let n = this.count.count(o);
            if n != 0 {
                count_moved(this.chan, *this.op, n);
            }
        } else if !this.wait.is_recorded() {
            *this.wait = hooks::chan_wait_begin(this.chan, *this.op, this.site, false);
        }
        out
    }
}

/// Runs `fut` (a `op` on `chan` called at `site`) to completion on this thread, as tokio's
/// `blocking_*` methods do, with the wait in the books as one that blocks the thread. The
/// caller has checked [`super::assert_blocking_allowed`] first, as tokio does.
pub(crate) fn block_on<F: Future>(
    fut: F,
    chan: &Arc<Channel>,
    op: ChanOp,
    site: &'static Location<'static>,
) -> F::Output {
    if op == ChanOp::Recv {
        chan.note_receiver();
    }
    let mut wait = ChanWait::none();
    let mut fut = std::pin::pin!(fut);
    super::block_on(std::future::poll_fn(|cx| {
        let out = fut.as_mut().poll(cx);
        if out.is_pending() && !wait.is_recorded() {
            wait = hooks::chan_wait_begin(chan, op, site, true);
        }
        out
    }))
}

/// `n` messages moved by a `op` on `chan`: sent, or received.
#[inline]
pub(crate) fn count_moved(chan: &Channel, op: ChanOp, n: usize) {
    if op == ChanOp::Recv {
        chan.received(n);
    } else if op == ChanOp::Send {
        chan.sent(n);
    }
}
