//! Drop-in replacement for `tokio::sync::oneshot`: the same [`channel`], [`Sender`] (tokio's
//! own, re-exported: sending never waits), a [`Receiver`] with the same methods, `Future`
//! impl, `Send`/`Sync`/`Unpin`, and tokio's own [`error`] module.
//!
//! Swap `use tokio::sync::oneshot;` for `use lockscope::tokio::oneshot;` and nothing else
//! changes. What you gain: awaiting a [`Receiver`] before the value was sent is a wait the
//! detector sees. It is an open wait (whoever holds the sender could answer, and senders
//! move), so it is never part of a proven deadlock, but a test that hangs on it fails after
//! its test timeout with a dump naming the channel, its creation site and the waiter.
//!
//! Cost: nothing is allocated beside tokio's channel for an unnamed one; the record of a wait
//! is made only when a receive has to wait.
//!
//! Not in `/metrics`' channel families: a oneshot's depth is 0 or 1, most are made per
//! request, and its sender is tokio's own, so there is nothing a gauge per channel would add.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use lockscope::tokio::oneshot;
//!
//! let (tx, rx) = oneshot::channel();
//! tokio::spawn(async move { tx.send("reply").unwrap() });
//! assert_eq!(rx.await, Ok("reply"));
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::task::{Context, Poll};

use lockscope_detector::__private::hooks::{self, ChanOp, ChanWait};
use tokio::sync::oneshot as raw;

/// tokio's own sender, re-exported unchanged: sending never waits.
pub use tokio::sync::oneshot::Sender;
/// tokio's own error types, re-exported unchanged.
pub use tokio::sync::oneshot::error;

use error::{RecvError, TryRecvError};

/// Wrapper for [`tokio::sync::oneshot::channel`], named after the line that calls it.
#[track_caller]
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    make(None, Location::caller())
}

/// [`channel`], named `name` in reports (lockscope's).
///
/// ```
/// let (_tx, rx) = lockscope::tokio::oneshot::channel_named::<u8>("reply");
/// assert_eq!(rx.name(), "reply");
/// ```
#[track_caller]
pub fn channel_named<T>(name: &str) -> (Sender<T>, Receiver<T>) {
    make(Some(name.into()), Location::caller())
}

fn make<T>(name: Option<Box<str>>, site: &'static Location<'static>) -> (Sender<T>, Receiver<T>) {
    let (tx, rx) = raw::channel();
    (
        tx,
        Receiver {
            inner: rx,
            site,
            name,
            wait: ChanWait::none(),
        },
    )
}

/// Receives a value from the associated [`Sender`]: wrapper for
/// [`tokio::sync::oneshot::Receiver`]. Awaiting it is a wait the detector sees (an open one).
pub struct Receiver<T> {
    inner: raw::Receiver<T>,
    site: &'static Location<'static>,
    name: Option<Box<str>>,
    /// The receive in the books while it waits.
    wait: ChanWait,
}

impl<T> Receiver<T> {
    /// Wrapper for [`tokio::sync::oneshot::Receiver::close`].
    pub fn close(&mut self) {
        self.wait.end();
        self.inner.close();
    }

    /// Wrapper for [`tokio::sync::oneshot::Receiver::is_terminated`].
    #[inline]
    pub fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }

    /// Wrapper for [`tokio::sync::oneshot::Receiver::is_empty`].
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Wrapper for [`tokio::sync::oneshot::Receiver::try_recv`].
    #[inline]
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.inner.try_recv()
    }

    /// Wrapper for [`tokio::sync::oneshot::Receiver::blocking_recv`]: a wait that blocks the
    /// thread, seen as such.
    ///
    /// # Panics
    ///
    /// As tokio's: inside an asynchronous execution context.
    #[track_caller]
    pub fn blocking_recv(self) -> Result<T, RecvError> {
        crate::tokio::assert_blocking_allowed();
        let chan = hooks::channel("oneshot", self.name.as_deref(), self.site, None);
        crate::tokio::chan_wait::block_on(self.inner, &chan, ChanOp::Recv, Location::caller())
    }

    /// The channel's name in reports (lockscope's): the one given to [`channel_named`], or
    /// the creation site's `file:line`.
    pub fn name(&self) -> String {
        match &self.name {
            Some(n) => n.to_string(),
            None => format!("{}:{}", self.site.file(), self.site.line()),
        }
    }

    /// The receive begins to wait (cold: only a receive that waits gets here).
    #[cold]
    #[inline(never)]
    fn begin_wait(&mut self) {
        if hooks::enabled() {
            let chan = hooks::channel("oneshot", self.name.as_deref(), self.site, None);
            self.wait = hooks::chan_wait_begin(&chan, ChanOp::Recv, self.site, false);
        }
    }
}

impl<T> Future for Receiver<T> {
    type Output = Result<T, RecvError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let out = Pin::new(&mut this.inner).poll(cx);
        if out.is_ready() {
            this.wait.end();
        } else if !this.wait.is_recorded() {
            this.begin_wait();
        }
        out
    }
}

impl<T: fmt::Debug> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}
