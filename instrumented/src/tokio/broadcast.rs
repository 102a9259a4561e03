//! Drop-in replacement for `tokio::sync::broadcast`: the same [`channel`], [`Sender`],
//! [`WeakSender`] and [`Receiver`] with the same methods and trait impls,
//! `Send`/`Sync`/`Unpin`, tokio's own [`error`] module. tokio's channel does all the work: the
//! wrappers only translate.
//!
//! Swap `use tokio::sync::broadcast;` for `use lockscope::tokio::broadcast;` and nothing else
//! changes. What you gain: a receive that has to wait for a message is a wait the detector
//! sees. It is an open wait (any holder of a sender could send), so it is never part of a
//! proven deadlock, but a test that hangs on it fails after its test timeout with a dump
//! naming the channel, its creation site and the waiter. Sending never waits (a slow receiver
//! lags instead), so nothing is recorded on the sending side.
//!
//! In `/metrics` (kind `broadcast`), a channel's depth is the values its slowest live
//! receiver has not taken yet, its capacity the one given, and its receivers' waits are
//! timed: each message costs its sender a relaxed add on the channel's sent count and its
//! receiver a store on a line of its own (see `docs/api.md`, "Channel metrics").
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use lockscope::tokio::broadcast;
//!
//! let (tx, mut rx) = broadcast::channel_named("events", 16);
//! let mut rx2 = tx.subscribe();
//! tx.send(1).unwrap();
//! assert_eq!((rx.recv().await, rx2.recv().await), (Ok(1), Ok(1)));
//! # }
//! ```

use std::future::Future;
use std::panic::Location;
use std::sync::Arc;

use lockscope_detector::__private::hooks::{ChanOp, Channel};
use lockscope_detector::ChannelReader;
use tokio::sync::broadcast as raw;

use super::chan_wait::{self, Waiting};
use crate::chan_handle::handle_impls;

/// tokio's own error types, re-exported unchanged.
pub use tokio::sync::broadcast::error;

use error::{RecvError, SendError, TryRecvError};

/// Wrapper for [`tokio::sync::broadcast::channel`], named after the line that calls it.
///
/// # Panics
///
/// As tokio's: if `capacity` is 0 or larger than `usize::MAX / 2`.
#[track_caller]
pub fn channel<T: Clone>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    make(capacity, None)
}

/// [`channel`], named `name` in reports (lockscope's).
///
/// ```
/// let (tx, _rx) = lockscope::tokio::broadcast::channel_named::<u8>("events", 4);
/// assert_eq!(tx.name(), "events");
/// ```
#[track_caller]
pub fn channel_named<T: Clone>(name: &str, capacity: usize) -> (Sender<T>, Receiver<T>) {
    make(capacity, Some(name))
}

#[track_caller]
fn make<T: Clone>(capacity: usize, name: Option<&str>) -> (Sender<T>, Receiver<T>) {
    let (tx, rx) = raw::channel(capacity);
    let chan = Channel::metered_broadcast(name, Location::caller(), capacity);
    let rx = Receiver::new(rx, chan.clone());
    (Sender { inner: tx, chan }, rx)
}

/// The values a receive's output says its receiver took: one, or those a lagging receiver
/// skipped.
fn taken<T>(out: &Result<T, RecvError>) -> u64 {
    match out {
        Ok(_) => 1,
        Err(RecvError::Lagged(n)) => *n,
        Err(RecvError::Closed) => 0,
    }
}

/// Sending half of a broadcast channel: wrapper for [`tokio::sync::broadcast::Sender`].
/// Sending never waits.
pub struct Sender<T> {
    inner: raw::Sender<T>,
    chan: Arc<Channel>,
}

impl<T> Sender<T> {
    /// Wrapper for [`tokio::sync::broadcast::Sender::new`]: a channel with no receiver yet
    /// (see [`subscribe`](Sender::subscribe)), named after the line that calls it.
    ///
    /// # Panics
    ///
    /// As tokio's: if `capacity` is 0 or larger than `usize::MAX / 2`.
    #[track_caller]
    pub fn new(capacity: usize) -> Self {
        Sender {
            inner: raw::Sender::new(capacity),
            chan: Channel::metered_broadcast(None, Location::caller(), capacity),
        }
    }

    /// Wrapper for [`tokio::sync::broadcast::Sender::send`].
    #[inline]
    pub fn send(&self, value: T) -> Result<usize, SendError<T>> {
        // Counted before tokio's send, so that a receiver subscribing meanwhile starts at a
        // count that includes it if it will not see it (see `Channel::metered_broadcast`).
        self.chan.sent(1);
        let out = self.inner.send(value);
        if out.is_err() {
            self.chan.unsent(1);
        }
        out
    }

    /// Wrapper for [`tokio::sync::broadcast::Sender::subscribe`].
    pub fn subscribe(&self) -> Receiver<T> {
        Receiver::new(self.inner.subscribe(), self.chan.clone())
    }

    /// Wrapper for [`tokio::sync::broadcast::Sender::downgrade`].
    pub fn downgrade(&self) -> WeakSender<T> {
        WeakSender {
            inner: self.inner.downgrade(),
            chan: self.chan.clone(),
        }
    }

    /// Wrapper for [`tokio::sync::broadcast::Sender::len`].
    #[inline]
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Wrapper for [`tokio::sync::broadcast::Sender::is_empty`].
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Wrapper for [`tokio::sync::broadcast::Sender::receiver_count`].
    #[inline]
    pub fn receiver_count(&self) -> usize {
        self.inner.receiver_count()
    }

    /// Wrapper for [`tokio::sync::broadcast::Sender::same_channel`].
    #[inline]
    pub fn same_channel(&self, other: &Self) -> bool {
        self.inner.same_channel(&other.inner)
    }

    /// Wrapper for [`tokio::sync::broadcast::Sender::closed`].
    pub async fn closed(&self) {
        self.inner.closed().await;
    }

    /// Wrapper for [`tokio::sync::broadcast::Sender::strong_count`].
    #[inline]
    pub fn strong_count(&self) -> usize {
        self.inner.strong_count()
    }

    /// Wrapper for [`tokio::sync::broadcast::Sender::weak_count`].
    #[inline]
    pub fn weak_count(&self) -> usize {
        self.inner.weak_count()
    }

    /// The channel's name in reports (lockscope's): the one given to [`channel_named`], or
    /// the creation site's `file:line`.
    pub fn name(&self) -> &str {
        self.chan.name()
    }
}

/// A sender that does not keep the channel open: wrapper for
/// [`tokio::sync::broadcast::WeakSender`].
pub struct WeakSender<T> {
    inner: raw::WeakSender<T>,
    chan: Arc<Channel>,
}

impl<T> WeakSender<T> {
    /// Wrapper for [`tokio::sync::broadcast::WeakSender::upgrade`].
    pub fn upgrade(&self) -> Option<Sender<T>> {
        self.inner.upgrade().map(|inner| Sender {
            inner,
            chan: self.chan.clone(),
        })
    }

    /// Wrapper for [`tokio::sync::broadcast::WeakSender::strong_count`].
    #[inline]
    pub fn strong_count(&self) -> usize {
        self.inner.strong_count()
    }

    /// Wrapper for [`tokio::sync::broadcast::WeakSender::weak_count`].
    #[inline]
    pub fn weak_count(&self) -> usize {
        self.inner.weak_count()
    }
}

/// Receiving half of a broadcast channel: wrapper for
/// [`tokio::sync::broadcast::Receiver`]. A receive that has to wait is a wait the detector
/// sees (an open one).
pub struct Receiver<T> {
    inner: raw::Receiver<T>,
    chan: Arc<Channel>,
    /// What this receiver took, for the channel's depth (made after tokio's receiver, so it
    /// starts past what that one will never see).
    reader: ChannelReader,
}

impl<T> Receiver<T> {
    fn new(inner: raw::Receiver<T>, chan: Arc<Channel>) -> Self {
        let reader = chan.reader();
        Receiver {
            inner,
            chan,
            reader,
        }
    }

    /// Wrapper for [`tokio::sync::broadcast::Receiver::len`].
    #[inline]
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Wrapper for [`tokio::sync::broadcast::Receiver::is_empty`].
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Wrapper for [`tokio::sync::broadcast::Receiver::same_channel`].
    #[inline]
    pub fn same_channel(&self, other: &Self) -> bool {
        self.inner.same_channel(&other.inner)
    }

    /// Wrapper for [`tokio::sync::broadcast::Receiver::sender_strong_count`].
    #[inline]
    pub fn sender_strong_count(&self) -> usize {
        self.inner.sender_strong_count()
    }

    /// Wrapper for [`tokio::sync::broadcast::Receiver::sender_weak_count`].
    #[inline]
    pub fn sender_weak_count(&self) -> usize {
        self.inner.sender_weak_count()
    }

    /// Wrapper for [`tokio::sync::broadcast::Receiver::is_closed`].
    #[inline]
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// The channel's name in reports (lockscope's): the one given to [`channel_named`], or
    /// the creation site's `file:line`.
    pub fn name(&self) -> &str {
        self.chan.name()
    }
}

impl<T: Clone> Receiver<T> {
    /// Wrapper for [`tokio::sync::broadcast::Receiver::resubscribe`].
    pub fn resubscribe(&self) -> Self {
        Receiver::new(self.inner.resubscribe(), self.chan.clone())
    }

    /// Wrapper for [`tokio::sync::broadcast::Receiver::recv`]: a receive that has to wait is
    /// a wait the detector sees (an open one).
    #[track_caller]
    pub fn recv(&mut self) -> impl Future<Output = Result<T, RecvError>> + '_ {
        let reader = &self.reader;
        // Counted on this receiver's own line, not the channel's shared received count
        // (which is an `mpsc` receiver's alone): nothing for `Waiting` to count there.
        let count = move |out: &Result<T, RecvError>| {
            reader.received(taken(out));
            0
        };
        Waiting::counting(
            self.inner.recv(),
            &self.chan,
            ChanOp::Recv,
            Location::caller(),
            count,
        )
    }

    /// Wrapper for [`tokio::sync::broadcast::Receiver::try_recv`].
    #[inline]
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let out = self.inner.try_recv();
        match &out {
            Ok(_) => self.reader.received(1),
            Err(TryRecvError::Lagged(n)) => self.reader.received(*n),
            Err(_) => {}
        }
        out
    }

    /// Wrapper for [`tokio::sync::broadcast::Receiver::blocking_recv`]: a wait that blocks
    /// the thread, seen as such.
    ///
    /// # Panics
    ///
    /// As tokio's: inside an asynchronous execution context.
    #[track_caller]
    pub fn blocking_recv(&mut self) -> Result<T, RecvError> {
        crate::tokio::assert_blocking_allowed();
        let out = chan_wait::block_on(
            self.inner.recv(),
            &self.chan,
            ChanOp::Recv,
            Location::caller(),
        );
        self.reader.received(taken(&out));
        out
    }
}

handle_impls!(Clone, Debug for Sender, WeakSender);
handle_impls!(Debug for Receiver);
