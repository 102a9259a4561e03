//! The bounded channel: [`Sender`], [`Receiver`], the permits and [`WeakSender`].

use std::fmt;
use std::future::Future;
use std::panic::Location;
use std::sync::Arc;
use std::task::{Context, Poll};

use lockscope_detector::__private::hooks::{ChanOp, Channel};
use tokio::sync::mpsc as raw;

use super::error::{SendError, SendTimeoutError, TryRecvError, TrySendError};
use crate::tokio::chan_wait::{self, Waiting};

/// Wrapper for [`tokio::sync::mpsc::channel`]: a bounded channel of `buffer` messages, named
/// after the line that calls it.
///
/// A send that has to wait for capacity waits for the receiver's owner (the task or thread
/// that last received from it): holding a lock across it while that owner waits for the lock
/// is a `deadlock` the detector reports.
///
/// # Panics
///
/// As tokio's: if `buffer` is 0 or too large.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (tx, mut rx) = lockscope::tokio::mpsc::channel(8);
/// tx.send("job").await.unwrap();
/// assert_eq!(rx.recv().await, Some("job"));
/// # }
/// ```
#[track_caller]
pub fn channel<T>(buffer: usize) -> (Sender<T>, Receiver<T>) {
    make(None, buffer, Location::caller())
}

/// [`channel`], named `name` in reports (lockscope's; control characters are made harmless).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (tx, rx) = lockscope::tokio::mpsc::channel_named::<u8>("jobs", 8);
/// assert_eq!(tx.name(), "jobs");
/// assert_eq!(rx.name(), "jobs");
/// # }
/// ```
#[track_caller]
pub fn channel_named<T>(name: &str, buffer: usize) -> (Sender<T>, Receiver<T>) {
    make(Some(name), buffer, Location::caller())
}

/// Messages a send delivered: for the channel's metered counts.
#[inline]
fn sent<E>(out: &Result<(), E>) -> usize {
    usize::from(out.is_ok())
}

#[track_caller]
fn make<T>(
    name: Option<&str>,
    buffer: usize,
    site: &'static Location<'static>,
) -> (Sender<T>, Receiver<T>) {
    let (tx, rx) = raw::channel(buffer);
    let chan = Channel::metered("mpsc", name, site, Some(buffer));
    (
        Sender {
            inner: tx,
            chan: chan.clone(),
        },
        Receiver { inner: rx, chan },
    )
}

/// Sends values to the associated [`Receiver`]: wrapper for [`tokio::sync::mpsc::Sender`].
pub struct Sender<T> {
    inner: raw::Sender<T>,
    chan: Arc<Channel>,
}

/// A sender that does not keep the channel open: wrapper for
/// [`tokio::sync::mpsc::WeakSender`].
pub struct WeakSender<T> {
    inner: raw::WeakSender<T>,
    chan: Arc<Channel>,
}

/// Permits to send one value into the channel: wrapper for [`tokio::sync::mpsc::Permit`].
pub struct Permit<'a, T> {
    // `None` only once `send` has used it.
    inner: Option<raw::Permit<'a, T>>,
    chan: &'a Channel,
}

/// An [`Iterator`] of [`Permit`]s: wrapper for [`tokio::sync::mpsc::PermitIterator`].
pub struct PermitIterator<'a, T> {
    inner: raw::PermitIterator<'a, T>,
    chan: &'a Channel,
}

/// Owned permit to send one value into the channel: wrapper for
/// [`tokio::sync::mpsc::OwnedPermit`].
pub struct OwnedPermit<T> {
    // `None` only once `send` or `release` has used it.
    inner: Option<raw::OwnedPermit<T>>,
    chan: Arc<Channel>,
}

/// Receives values from the associated [`Sender`]: wrapper for
/// [`tokio::sync::mpsc::Receiver`].
///
/// Each receive, `try_recv` or poll makes the calling task (or thread) the receiver's owner,
/// the one a full channel's senders wait for.
pub struct Receiver<T> {
    inner: raw::Receiver<T>,
    chan: Arc<Channel>,
}

receiver_common!(Receiver, "Receiver");

impl<T> Receiver<T> {
    /// Wrapper for [`tokio::sync::mpsc::Receiver::capacity`].
    #[inline]
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// Wrapper for [`tokio::sync::mpsc::Receiver::max_capacity`].
    #[inline]
    pub fn max_capacity(&self) -> usize {
        self.inner.max_capacity()
    }
}

sender_common!(Sender, "Sender", WeakSender, "WeakSender");

impl<T> Sender<T> {
    /// Wrapper for [`tokio::sync::mpsc::Sender::send`]. A send that has to wait for capacity
    /// is a wait the detector sees, for the receiver's owner.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let (tx, mut rx) = lockscope::tokio::mpsc::channel(1);
    /// tx.send(1).await.unwrap();
    /// assert_eq!(rx.recv().await, Some(1));
    /// drop(rx);
    /// assert_eq!(tx.send(2).await.unwrap_err().0, 2);
    /// # }
    /// ```
    #[track_caller]
    pub fn send(&self, value: T) -> impl Future<Output = Result<(), SendError<T>>> + '_ {
        let site = Location::caller();
        Waiting::counting(self.inner.send(value), &self.chan, ChanOp::Send, site, sent)
    }

    /// Wrapper for [`tokio::sync::mpsc::Sender::try_send`].
    #[inline]
    pub fn try_send(&self, message: T) -> Result<(), TrySendError<T>> {
        let out = self.inner.try_send(message);
        if out.is_ok() {
            self.chan.sent(1);
        }
        out
    }

    /// Wrapper for [`tokio::sync::mpsc::Sender::send_timeout`]: a timed wait, which gives up
    /// by itself.
    #[track_caller]
    pub fn send_timeout(
        &self,
        value: T,
        timeout: std::time::Duration,
    ) -> impl Future<Output = Result<(), SendTimeoutError<T>>> + '_ {
        // A timed send ends by itself: it is no precise wait, so it is not recorded (only
        // its message is counted).
        let fut = self.inner.send_timeout(value, timeout);
        async move {
            let out = fut.await;
            if out.is_ok() {
                self.chan.sent(1);
            }
            out
        }
    }

    /// Wrapper for [`tokio::sync::mpsc::Sender::blocking_send`]: a wait that blocks the
    /// thread, seen as such.
    ///
    /// # Panics
    ///
    /// As tokio's: inside an asynchronous execution context.
    #[track_caller]
    pub fn blocking_send(&self, value: T) -> Result<(), SendError<T>> {
        crate::tokio::assert_blocking_allowed();
        let site = Location::caller();
        let out = chan_wait::block_on(self.inner.send(value), &self.chan, ChanOp::Send, site);
        self.chan.sent(sent(&out));
        out
    }

    /// Wrapper for [`tokio::sync::mpsc::Sender::reserve`]: waits as [`Self::send`] does.
    #[track_caller]
    pub fn reserve(&self) -> impl Future<Output = Result<Permit<'_, T>, SendError<()>>> + '_ {
        let site = Location::caller();
        let fut = Waiting::new(self.inner.reserve(), &self.chan, ChanOp::Send, site);
        async move { fut.await.map(|p| Permit::new(p, &self.chan)) }
    }

    /// Wrapper for [`tokio::sync::mpsc::Sender::reserve_many`]: waits as [`Self::send`] does.
    #[track_caller]
    pub fn reserve_many(
        &self,
        n: usize,
    ) -> impl Future<Output = Result<PermitIterator<'_, T>, SendError<()>>> + '_ {
        let site = Location::caller();
        let fut = Waiting::new(self.inner.reserve_many(n), &self.chan, ChanOp::Send, site);
        async move { fut.await.map(|p| PermitIterator::new(p, &self.chan)) }
    }

    /// Wrapper for [`tokio::sync::mpsc::Sender::reserve_owned`]: waits as [`Self::send`]
    /// does.
    #[track_caller]
    pub fn reserve_owned(self) -> impl Future<Output = Result<OwnedPermit<T>, SendError<()>>> {
        let site = Location::caller();
        let Sender { inner, chan } = self;
        async move {
            let p = Waiting::new(inner.reserve_owned(), &chan, ChanOp::Send, site).await?;
            Ok(OwnedPermit::new(p, chan))
        }
    }

    /// Wrapper for [`tokio::sync::mpsc::Sender::try_reserve`].
    #[inline]
    pub fn try_reserve(&self) -> Result<Permit<'_, T>, TrySendError<()>> {
        self.inner.try_reserve().map(|p| Permit::new(p, &self.chan))
    }

    /// Wrapper for [`tokio::sync::mpsc::Sender::try_reserve_many`].
    pub fn try_reserve_many(&self, n: usize) -> Result<PermitIterator<'_, T>, TrySendError<()>> {
        self.inner
            .try_reserve_many(n)
            .map(|p| PermitIterator::new(p, &self.chan))
    }

    /// Wrapper for [`tokio::sync::mpsc::Sender::try_reserve_owned`].
    pub fn try_reserve_owned(self) -> Result<OwnedPermit<T>, TrySendError<Self>> {
        let Sender { inner, chan } = self;
        match inner.try_reserve_owned() {
            Ok(p) => Ok(OwnedPermit::new(p, chan)),
            Err(TrySendError::Full(inner)) => Err(TrySendError::Full(Sender { inner, chan })),
            Err(TrySendError::Closed(inner)) => Err(TrySendError::Closed(Sender { inner, chan })),
        }
    }

    /// Wrapper for [`tokio::sync::mpsc::Sender::capacity`].
    #[inline]
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// Wrapper for [`tokio::sync::mpsc::Sender::max_capacity`].
    #[inline]
    pub fn max_capacity(&self) -> usize {
        self.inner.max_capacity()
    }
}

impl<'a, T> Permit<'a, T> {
    #[inline]
    fn new(inner: raw::Permit<'a, T>, chan: &'a Channel) -> Self {
        chan.permits_taken(1);
        Permit {
            inner: Some(inner),
            chan,
        }
    }

    /// Wrapper for [`tokio::sync::mpsc::Permit::send`].
    #[inline]
    pub fn send(mut self, value: T) {
        if let Some(p) = self.inner.take() {
            p.send(value);
            self.chan.sent(1);
        }
    }
}

impl<T> Drop for Permit<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // Before the inner permit gives its capacity back (field drop follows): the books
        // never count a permit out that is not.
        self.chan.permits_returned(1);
    }
}

impl<T> fmt::Debug for Permit<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Some(p) => p.fmt(f),
            None => f.write_str("Permit"),
        }
    }
}

impl<'a, T> PermitIterator<'a, T> {
    fn new(inner: raw::PermitIterator<'a, T>, chan: &'a Channel) -> Self {
        chan.permits_taken(inner.len());
        PermitIterator { inner, chan }
    }
}

impl<'a, T> Iterator for PermitIterator<'a, T> {
    type Item = Permit<'a, T>;

    fn next(&mut self) -> Option<Permit<'a, T>> {
        // The permit yielded keeps the count it had here, until it is used or dropped.
        self.inner.next().map(|inner| Permit {
            inner: Some(inner),
            chan: self.chan,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<T> ExactSizeIterator for PermitIterator<'_, T> {}
impl<T> std::iter::FusedIterator for PermitIterator<'_, T> {}

impl<T> Drop for PermitIterator<'_, T> {
    fn drop(&mut self) {
        self.chan.permits_returned(self.inner.len());
    }
}

impl<T> fmt::Debug for PermitIterator<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl<T> OwnedPermit<T> {
    fn new(inner: raw::OwnedPermit<T>, chan: Arc<Channel>) -> Self {
        chan.permits_taken(1);
        OwnedPermit {
            inner: Some(inner),
            chan,
        }
    }

    /// Takes the inner permit and its channel record out, the count given back.
    fn take(&mut self) -> (raw::OwnedPermit<T>, Arc<Channel>) {
        // UNWRAP: `inner` is `Some` until `send` or `release`, which consume `self`.
        let p = self.inner.take().expect("an unused permit");
        (p, self.chan.clone())
    }

    /// Wrapper for [`tokio::sync::mpsc::OwnedPermit::send`].
    pub fn send(mut self, value: T) -> Sender<T> {
        let (p, chan) = self.take();
        let inner = p.send(value);
        chan.sent(1);
        Sender { inner, chan }
    }

    /// Wrapper for [`tokio::sync::mpsc::OwnedPermit::release`].
    pub fn release(mut self) -> Sender<T> {
        let (p, chan) = self.take();
        Sender {
            inner: p.release(),
            chan,
        }
    }

    /// Wrapper for [`tokio::sync::mpsc::OwnedPermit::same_channel`].
    pub fn same_channel(&self, other: &Self) -> bool {
        match (&self.inner, &other.inner) {
            (Some(a), Some(b)) => a.same_channel(b),
            _ => false,
        }
    }

    /// Wrapper for [`tokio::sync::mpsc::OwnedPermit::same_channel_as_sender`].
    pub fn same_channel_as_sender(&self, sender: &Sender<T>) -> bool {
        self.inner
            .as_ref()
            .is_some_and(|p| p.same_channel_as_sender(&sender.inner))
    }
}

impl<T> Drop for OwnedPermit<T> {
    fn drop(&mut self) {
        self.chan.permits_returned(1);
    }
}

impl<T> fmt::Debug for OwnedPermit<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Some(p) => p.fmt(f),
            None => f.write_str("OwnedPermit"),
        }
    }
}
