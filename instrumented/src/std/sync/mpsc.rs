//! Drop-in replacement for `std::sync::mpsc`: the same [`channel`] and [`sync_channel`],
//! [`Sender`], [`SyncSender`], [`Receiver`] with the same methods, iterators, `Debug`,
//! `Clone` and `Send`/`Sync`, and std's own error types.
//!
//! Swap `use std::sync::mpsc;` for `use lockscope::std::sync::mpsc;` and nothing else
//! changes: each type wraps std's, which keeps its ordering, blocking and disconnection
//! behaviour. What you gain: a `recv` that has to block and a `SyncSender::send` into a full
//! channel are waits the detector sees, on the thread that blocks.
//!
//! - A send waiting for capacity waits for the receiver's owner (the thread that last used the
//!   [`Receiver`]; it has one at a time, since it is not `Sync`): a precise wait-for edge. A
//!   thread that holds a lock while it sends into a full channel whose receiver needs that lock
//!   is a `deadlock`, naming the channel and both threads.
//! - A receive waiting for a message is an open wait (senders are cloned and moved: who could
//!   send is not known): shown in reports and the test-timeout dump, never part of a proven
//!   deadlock.
//!
//! Cost: one shared record per channel, made when it is made; a message that passes without
//! waiting costs what std's costs, a relaxed update of the channel's counts for `/metrics`
//! (kind `std::sync::mpsc`) and, on the receiving side, a relaxed load (is the receiver's owner still
//! the same?). A call that has to wait first tries without blocking, then records its wait
//! (one cold call) and blocks in std's own call.
//!
//! ```
//! use lockscope::std::sync::mpsc; // was: use std::sync::mpsc;
//!
//! let (tx, rx) = mpsc::sync_channel(1);
//! let t = std::thread::spawn(move || {
//!     for i in 0..3 {
//!         tx.send(i).unwrap();
//!     }
//! });
//! assert_eq!(rx.iter().collect::<Vec<_>>(), [0, 1, 2]);
//! t.join().unwrap();
//! ```

use std::panic::Location;
use std::sync::Arc;
use std::sync::mpsc as raw;
use std::time::Duration;

use lockscope_detector::__private::hooks::{self, ChanOp, ChanWait, Channel};

use crate::chan_handle::handle_impls;

/// std's own error types, re-exported unchanged.
pub use std::sync::mpsc::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};

/// The channels' kind in reports and metrics.
const KIND: &str = "std::sync::mpsc";

/// Wrapper for [`std::sync::mpsc::channel`], named after the line that calls it.
#[track_caller]
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    make(None, Location::caller())
}

/// [`channel`], named `name` in reports and metrics (lockscope's).
///
/// ```
/// let (tx, rx) = lockscope::std::sync::mpsc::channel_named::<u8>("jobs");
/// assert_eq!((tx.name(), rx.name()), ("jobs", "jobs"));
/// ```
#[track_caller]
pub fn channel_named<T>(name: &str) -> (Sender<T>, Receiver<T>) {
    make(Some(name), Location::caller())
}

/// Wrapper for [`std::sync::mpsc::sync_channel`], named after the line that calls it.
#[track_caller]
pub fn sync_channel<T>(bound: usize) -> (SyncSender<T>, Receiver<T>) {
    make_sync(None, bound, Location::caller())
}

/// [`sync_channel`], named `name` in reports and metrics (lockscope's).
#[track_caller]
pub fn sync_channel_named<T>(name: &str, bound: usize) -> (SyncSender<T>, Receiver<T>) {
    make_sync(Some(name), bound, Location::caller())
}

fn make<T>(name: Option<&str>, site: &'static Location<'static>) -> (Sender<T>, Receiver<T>) {
    let (tx, rx) = raw::channel();
    let chan = Channel::metered(KIND, name, site, None);
    (
        Sender {
            inner: tx,
            chan: chan.clone(),
        },
        Receiver { inner: rx, chan },
    )
}

fn make_sync<T>(
    name: Option<&str>,
    bound: usize,
    site: &'static Location<'static>,
) -> (SyncSender<T>, Receiver<T>) {
    let (tx, rx) = raw::sync_channel(bound);
    let chan = Channel::metered(KIND, name, site, Some(bound));
    (
        SyncSender {
            inner: tx,
            chan: chan.clone(),
        },
        Receiver { inner: rx, chan },
    )
}

/// The sending half of a [`channel`]: wrapper for [`std::sync::mpsc::Sender`]. Sending never
/// blocks.
pub struct Sender<T> {
    inner: raw::Sender<T>,
    chan: Arc<Channel>,
}

impl<T> Sender<T> {
    /// Wrapper for [`std::sync::mpsc::Sender::send`].
    pub fn send(&self, t: T) -> Result<(), SendError<T>> {
        let out = self.inner.send(t);
        if out.is_ok() {
            self.chan.sent(1);
        }
        out
    }

    /// The channel's name in reports (lockscope's): the one given to [`channel_named`], or
    /// the creation site's `file:line`.
    pub fn name(&self) -> &str {
        self.chan.name()
    }
}

/// The sending half of a [`sync_channel`]: wrapper for [`std::sync::mpsc::SyncSender`]. A
/// send into a full channel blocks, and that wait is seen.
pub struct SyncSender<T> {
    inner: raw::SyncSender<T>,
    chan: Arc<Channel>,
}

impl<T> SyncSender<T> {
    /// Wrapper for [`std::sync::mpsc::SyncSender::send`]: when the channel is full (or, with a
    /// bound of 0, no receive is waiting), the wait for the receiver's owner is in the books
    /// until the message is taken or the receiver is gone.
    #[track_caller]
    pub fn send(&self, t: T) -> Result<(), SendError<T>> {
        match self.inner.try_send(t) {
            Ok(()) => {
                self.chan.sent(1);
                Ok(())
            }
            Err(TrySendError::Disconnected(t)) => Err(SendError(t)),
            Err(TrySendError::Full(t)) => {
                let _wait = begin(&self.chan, ChanOp::Send, Location::caller());
                let out = self.inner.send(t);
                if out.is_ok() {
                    self.chan.sent(1);
                }
                out
            }
        }
    }

    /// Wrapper for [`std::sync::mpsc::SyncSender::try_send`].
    pub fn try_send(&self, t: T) -> Result<(), TrySendError<T>> {
        let out = self.inner.try_send(t);
        if out.is_ok() {
            self.chan.sent(1);
        }
        out
    }

    /// The channel's name in reports (lockscope's); see [`Sender::name`].
    pub fn name(&self) -> &str {
        self.chan.name()
    }
}

/// The receiving half of a [`channel`] or [`sync_channel`]: wrapper for
/// [`std::sync::mpsc::Receiver`]. The thread that uses it is its owner, which a send waiting
/// for capacity waits for.
pub struct Receiver<T> {
    inner: raw::Receiver<T>,
    chan: Arc<Channel>,
}

impl<T> Receiver<T> {
    /// Wrapper for [`std::sync::mpsc::Receiver::recv`]: a receive that has to block is an
    /// open wait in the books until a message comes or every sender is gone.
    #[track_caller]
    pub fn recv(&self) -> Result<T, RecvError> {
        self.recv_at(Location::caller())
    }

    fn recv_at(&self, site: &'static Location<'static>) -> Result<T, RecvError> {
        self.chan.note_receiver();
        let out = match self.inner.try_recv() {
            Ok(t) => Ok(t),
            Err(TryRecvError::Disconnected) => Err(RecvError),
            Err(TryRecvError::Empty) => {
                let _wait = begin(&self.chan, ChanOp::Recv, site);
                self.inner.recv()
            }
        };
        self.counted(out)
    }

    /// Wrapper for [`std::sync::mpsc::Receiver::try_recv`].
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.chan.note_receiver();
        self.counted(self.inner.try_recv())
    }

    /// Wrapper for [`std::sync::mpsc::Receiver::recv_timeout`]: a wait, as [`recv`]'s, that
    /// ends at the timeout at the latest.
    ///
    /// [`recv`]: Receiver::recv
    #[track_caller]
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        self.chan.note_receiver();
        let out = match self.inner.try_recv() {
            Ok(t) => Ok(t),
            Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
            Err(TryRecvError::Empty) => {
                let _wait = begin(&self.chan, ChanOp::Recv, Location::caller());
                self.inner.recv_timeout(timeout)
            }
        };
        self.counted(out)
    }

    /// Wrapper for [`std::sync::mpsc::Receiver::iter`]: each step is a [`recv`], its wait
    /// attributed to the line that called `iter`.
    ///
    /// [`recv`]: Receiver::recv
    #[track_caller]
    pub fn iter(&self) -> Iter<'_, T> {
        Iter {
            rx: self,
            site: Location::caller(),
        }
    }

    /// Wrapper for [`std::sync::mpsc::Receiver::try_iter`]: never waits.
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { rx: self }
    }

    /// The channel's name in reports (lockscope's); see [`Sender::name`].
    pub fn name(&self) -> &str {
        self.chan.name()
    }

    /// Counts a message the receive returned.
    fn counted<E>(&self, out: Result<T, E>) -> Result<T, E> {
        if out.is_ok() {
            self.chan.received(1);
        }
        out
    }
}

/// A wait of `op` on `chan` at `site`, blocking this thread, in the books until dropped.
#[cold]
fn begin(chan: &Arc<Channel>, op: ChanOp, site: &'static Location<'static>) -> ChanWait {
    hooks::chan_wait_begin(chan, op, site, true)
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        // No send waits for this receiver any more, and what it had queued goes with it.
        self.chan.receiver_gone();
        self.chan.receiver_dropped();
    }
}

handle_impls!(Clone, Debug for Sender, SyncSender);
handle_impls!(Debug for Receiver);

/// Wrapper for [`std::sync::mpsc::Iter`]: the messages of a [`Receiver`], waiting for each.
#[derive(Debug)]
pub struct Iter<'a, T: 'a> {
    rx: &'a Receiver<T>,
    site: &'static Location<'static>,
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.recv_at(self.site).ok()
    }
}

/// Wrapper for [`std::sync::mpsc::TryIter`]: the messages queued now, without waiting.
#[derive(Debug)]
pub struct TryIter<'a, T: 'a> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for TryIter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

/// Wrapper for [`std::sync::mpsc::IntoIter`]: the messages of a [`Receiver`] taken by value.
#[derive(Debug)]
pub struct IntoIter<T> {
    rx: Receiver<T>,
    site: &'static Location<'static>,
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.recv_at(self.site).ok()
    }
}

impl<'a, T> IntoIterator for &'a Receiver<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;

    #[track_caller]
    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T> IntoIterator for Receiver<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;

    #[track_caller]
    fn into_iter(self) -> IntoIter<T> {
        IntoIter {
            rx: self,
            site: Location::caller(),
        }
    }
}
