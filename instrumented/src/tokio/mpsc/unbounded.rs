//! The unbounded channel: [`UnboundedSender`], [`UnboundedReceiver`], [`WeakUnboundedSender`].
//! A send never waits; a receive waiting for a message is an open wait the detector shows.

use std::future::Future;
use std::panic::Location;
use std::sync::Arc;
use std::task::{Context, Poll};

use lockscope_detector::__private::hooks::{ChanOp, Channel};
use tokio::sync::mpsc as raw;

use super::error::{SendError, TryRecvError};
use crate::tokio::chan_wait::{self, Waiting};

/// Wrapper for [`tokio::sync::mpsc::unbounded_channel`], named after the line that calls it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (tx, mut rx) = lockscope::tokio::mpsc::unbounded_channel();
/// tx.send(1).unwrap();
/// assert_eq!(rx.recv().await, Some(1));
/// # }
/// ```
#[track_caller]
pub fn unbounded_channel<T>() -> (UnboundedSender<T>, UnboundedReceiver<T>) {
    make(None, Location::caller())
}

/// [`unbounded_channel`], named `name` in reports (lockscope's).
///
/// ```
/// let (tx, _rx) = lockscope::tokio::mpsc::unbounded_channel_named::<u8>("events");
/// assert_eq!(tx.name(), "events");
/// ```
#[track_caller]
pub fn unbounded_channel_named<T>(name: &str) -> (UnboundedSender<T>, UnboundedReceiver<T>) {
    make(Some(name), Location::caller())
}

fn make<T>(
    name: Option<&str>,
    site: &'static Location<'static>,
) -> (UnboundedSender<T>, UnboundedReceiver<T>) {
    let (tx, rx) = raw::unbounded_channel();
    let chan = Channel::metered("mpsc", name, site, None);
    (
        UnboundedSender {
            inner: tx,
            chan: chan.clone(),
        },
        UnboundedReceiver { inner: rx, chan },
    )
}

/// Sends values to the associated [`UnboundedReceiver`]: wrapper for
/// [`tokio::sync::mpsc::UnboundedSender`].
pub struct UnboundedSender<T> {
    inner: raw::UnboundedSender<T>,
    chan: Arc<Channel>,
}

/// An unbounded sender that does not keep the channel open: wrapper for
/// [`tokio::sync::mpsc::WeakUnboundedSender`].
pub struct WeakUnboundedSender<T> {
    inner: raw::WeakUnboundedSender<T>,
    chan: Arc<Channel>,
}

/// Receives values from the associated [`UnboundedSender`]: wrapper for
/// [`tokio::sync::mpsc::UnboundedReceiver`].
pub struct UnboundedReceiver<T> {
    inner: raw::UnboundedReceiver<T>,
    chan: Arc<Channel>,
}

receiver_common!(UnboundedReceiver, "UnboundedReceiver");

sender_common!(
    UnboundedSender,
    "UnboundedSender",
    WeakUnboundedSender,
    "WeakUnboundedSender"
);

impl<T> UnboundedSender<T> {
    /// Wrapper for [`tokio::sync::mpsc::UnboundedSender::send`] (never waits).
    #[inline]
    pub fn send(&self, message: T) -> Result<(), SendError<T>> {
        let out = self.inner.send(message);
        if out.is_ok() {
            self.chan.sent(1);
        }
        out
    }
}
