//! Drop-in replacement for `tokio::sync::watch`: the same [`channel`], a [`Sender`] and a
//! [`Receiver`] with the same methods and trait impls, `Send`/`Sync`/`Unpin`, tokio's own
//! [`Ref`] and [`error`] module. tokio's channel does all the work: the wrappers only
//! translate.
//!
//! Swap `use tokio::sync::watch;` for `use lockscope::tokio::watch;` and nothing else changes.
//! What you gain: a receiver waiting in [`changed`](Receiver::changed) or
//! [`wait_for`](Receiver::wait_for) is a wait the detector sees. It is an open wait (any
//! holder of a sender could send), so it is never part of a proven deadlock, but a test that
//! hangs on it fails after its test timeout with a dump naming the channel, its creation site
//! and the waiter. A change already there records nothing.
//!
//! In `/metrics` (kind `watch`), a channel shows its receivers' waits for a change; its depth
//! is always 0 and its capacity 1 (one value, replaced by each send: nothing queues), and
//! sending or receiving costs nothing more than tokio's.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use lockscope::tokio::watch;
//!
//! let (tx, mut rx) = watch::channel_named("config", 1);
//! tokio::spawn(async move { tx.send(2).unwrap() });
//! rx.changed().await.unwrap();
//! assert_eq!(*rx.borrow_and_update(), 2);
//! # }
//! ```

use std::future::Future;
use std::panic::Location;
use std::sync::Arc;

use lockscope_detector::__private::hooks::{ChanOp, Channel};
use tokio::sync::watch as raw;

use super::chan_wait::Waiting;
use crate::chan_handle::handle_impls;

/// tokio's own borrow of the value, re-exported unchanged.
pub use tokio::sync::watch::Ref;
/// tokio's own error types, re-exported unchanged.
pub use tokio::sync::watch::error;

use error::{RecvError, SendError};

/// Wrapper for [`tokio::sync::watch::channel`], named after the line that calls it.
#[track_caller]
pub fn channel<T>(init: T) -> (Sender<T>, Receiver<T>) {
    make(init, None)
}

/// [`channel`], named `name` in reports (lockscope's).
///
/// ```
/// let (tx, _rx) = lockscope::tokio::watch::channel_named("config", ());
/// assert_eq!(tx.name(), "config");
/// ```
#[track_caller]
pub fn channel_named<T>(name: &str, init: T) -> (Sender<T>, Receiver<T>) {
    make(init, Some(name))
}

#[track_caller]
fn make<T>(init: T, name: Option<&str>) -> (Sender<T>, Receiver<T>) {
    let (tx, rx) = raw::channel(init);
    let chan = Channel::metered_watch(name, Location::caller());
    (
        Sender {
            inner: tx,
            chan: chan.clone(),
        },
        Receiver { inner: rx, chan },
    )
}

/// Sends values to the associated [`Receiver`]s: wrapper for
/// [`tokio::sync::watch::Sender`]. Sending never waits.
pub struct Sender<T> {
    inner: raw::Sender<T>,
    chan: Arc<Channel>,
}

impl<T> Sender<T> {
    /// Wrapper for [`tokio::sync::watch::Sender::new`]: a channel with no receiver yet
    /// (see [`subscribe`](Sender::subscribe)), named after the line that calls it.
    #[track_caller]
    pub fn new(init: T) -> Self {
        Sender {
            inner: raw::Sender::new(init),
            chan: Channel::metered_watch(None, Location::caller()),
        }
    }

    /// Wrapper for [`tokio::sync::watch::Sender::send`].
    #[inline]
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        self.inner.send(value)
    }

    /// Wrapper for [`tokio::sync::watch::Sender::send_modify`].
    #[inline]
    pub fn send_modify<F: FnOnce(&mut T)>(&self, modify: F) {
        self.inner.send_modify(modify);
    }

    /// Wrapper for [`tokio::sync::watch::Sender::send_if_modified`].
    #[inline]
    pub fn send_if_modified<F: FnOnce(&mut T) -> bool>(&self, modify: F) -> bool {
        self.inner.send_if_modified(modify)
    }

    /// Wrapper for [`tokio::sync::watch::Sender::send_replace`].
    #[inline]
    pub fn send_replace(&self, value: T) -> T {
        self.inner.send_replace(value)
    }

    /// Wrapper for [`tokio::sync::watch::Sender::borrow`].
    #[inline]
    pub fn borrow(&self) -> Ref<'_, T> {
        self.inner.borrow()
    }

    /// Wrapper for [`tokio::sync::watch::Sender::is_closed`].
    #[inline]
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Wrapper for [`tokio::sync::watch::Sender::closed`].
    pub async fn closed(&self) {
        self.inner.closed().await;
    }

    /// Wrapper for [`tokio::sync::watch::Sender::subscribe`].
    pub fn subscribe(&self) -> Receiver<T> {
        Receiver {
            inner: self.inner.subscribe(),
            chan: self.chan.clone(),
        }
    }

    /// Wrapper for [`tokio::sync::watch::Sender::receiver_count`].
    #[inline]
    pub fn receiver_count(&self) -> usize {
        self.inner.receiver_count()
    }

    /// Wrapper for [`tokio::sync::watch::Sender::sender_count`].
    #[inline]
    pub fn sender_count(&self) -> usize {
        self.inner.sender_count()
    }

    /// Wrapper for [`tokio::sync::watch::Sender::same_channel`].
    #[inline]
    pub fn same_channel(&self, other: &Self) -> bool {
        self.inner.same_channel(&other.inner)
    }

    /// The channel's name in reports (lockscope's): the one given to [`channel_named`], or
    /// the creation site's `file:line`.
    pub fn name(&self) -> &str {
        self.chan.name()
    }
}

impl<T: Default> Default for Sender<T> {
    #[track_caller]
    fn default() -> Self {
        Sender::new(T::default())
    }
}

/// Receives values from the associated [`Sender`]: wrapper for
/// [`tokio::sync::watch::Receiver`]. Waiting for a change is a wait the detector sees (an
/// open one).
pub struct Receiver<T> {
    inner: raw::Receiver<T>,
    chan: Arc<Channel>,
}

impl<T> Receiver<T> {
    /// Wrapper for [`tokio::sync::watch::Receiver::borrow`].
    #[inline]
    pub fn borrow(&self) -> Ref<'_, T> {
        self.inner.borrow()
    }

    /// Wrapper for [`tokio::sync::watch::Receiver::borrow_and_update`].
    #[inline]
    pub fn borrow_and_update(&mut self) -> Ref<'_, T> {
        self.inner.borrow_and_update()
    }

    /// Wrapper for [`tokio::sync::watch::Receiver::has_changed`].
    #[inline]
    pub fn has_changed(&self) -> Result<bool, RecvError> {
        self.inner.has_changed()
    }

    /// Wrapper for `tokio::sync::watch::Receiver::is_closed` (tokio 1.54 and later): whether
    /// every sender is gone. Answered through `has_changed`, which fails exactly then, so that
    /// it exists with every tokio lockscope accepts (from 1.47).
    #[inline]
    pub fn is_closed(&self) -> bool {
        self.inner.has_changed().is_err()
    }

    /// Wrapper for [`tokio::sync::watch::Receiver::mark_changed`].
    #[inline]
    pub fn mark_changed(&mut self) {
        self.inner.mark_changed();
    }

    /// Wrapper for [`tokio::sync::watch::Receiver::mark_unchanged`].
    #[inline]
    pub fn mark_unchanged(&mut self) {
        self.inner.mark_unchanged();
    }

    /// Wrapper for [`tokio::sync::watch::Receiver::changed`]: waiting for a change is a wait
    /// the detector sees (an open one).
    #[track_caller]
    pub fn changed(&mut self) -> impl Future<Output = Result<(), RecvError>> + '_ {
        Waiting::new(
            self.inner.changed(),
            &self.chan,
            ChanOp::Recv,
            Location::caller(),
        )
    }

    /// Wrapper for [`tokio::sync::watch::Receiver::wait_for`]: waiting for a value that
    /// satisfies `f` is a wait the detector sees (an open one).
    #[track_caller]
    pub fn wait_for(
        &mut self,
        f: impl FnMut(&T) -> bool,
    ) -> impl Future<Output = Result<Ref<'_, T>, RecvError>> {
        Waiting::new(
            self.inner.wait_for(f),
            &self.chan,
            ChanOp::Recv,
            Location::caller(),
        )
    }

    /// Wrapper for [`tokio::sync::watch::Receiver::same_channel`].
    #[inline]
    pub fn same_channel(&self, other: &Self) -> bool {
        self.inner.same_channel(&other.inner)
    }

    /// The channel's name in reports (lockscope's): the one given to [`channel_named`], or
    /// the creation site's `file:line`.
    pub fn name(&self) -> &str {
        self.chan.name()
    }
}

handle_impls!(Clone, Debug(T: Debug) for Sender, Receiver);
