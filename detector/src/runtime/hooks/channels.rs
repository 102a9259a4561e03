//! What the channel wrappers tell the detector: a channel made (one shared record), who uses
//! its receiver, and a send or receive that has to wait, and its end. A message that passes
//! without waiting tells it nothing but, on the receiving side, who received it.
//!
//! | step | call |
//! |---|---|
//! | the channel is made | [`channel`]; [`Channel::metered`] to list it in `/metrics` ([`Channel::metered_broadcast`], [`Channel::metered_watch`] for those kinds) |
//! | a `broadcast` receiver is made | [`Channel::reader`], kept by the receiver (its depth counts from it) |
//! | a message passes (metered channels) | [`Channel::sent`] (taken back with [`Channel::unsent`] when it fails after), [`Channel::received`] |
//! | the receiver is used (a receive, a poll) | [`Channel::note_receiver`] |
//! | the receiver is closed or dropped | [`Channel::receiver_gone`] (dropped: also [`Channel::receiver_dropped`]) |
//! | a send or receive finds it must wait | [`chan_wait_begin`] |
//! | it completes, or its future is dropped | drop the [`ChanWait`] |

use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::base::clock;
use crate::state::channels;
pub use crate::state::channels::{ChanOp, Channel};

use super::enabled;

/// The shared record of a channel of kind `kind` (`mpsc`, `oneshot`, `watch`, `broadcast`; a
/// `Notify` or a `Barrier` takes one too, of kind `notify` or `barrier`) made at `created_at`,
/// named `name` (its creation site when `None`), bounded to `capacity` if `Some`. Allocated
/// once per channel, whether the detector is on or not (a wait is recorded only when it is).
pub fn channel(
    kind: &'static str,
    name: Option<&str>,
    created_at: &'static Location<'static>,
    capacity: Option<usize>,
) -> Arc<Channel> {
    Arc::new(Channel::new(kind, name, created_at, capacity))
}

/// A channel wait in progress in the books; dropping it (or [`end`](ChanWait::end)) ends it
/// (the send or receive completed, or its future was dropped: no ghost wait is left).
#[derive(Debug)]
#[must_use = "the wait ends in the books when this is dropped"]
pub struct ChanWait {
    /// Its number in `state::channels`; 0: nothing recorded (the detector is off, or ended).
    seq: AtomicU64,
}

impl ChanWait {
    /// A wait that recorded nothing.
    pub const fn none() -> ChanWait {
        ChanWait {
            seq: AtomicU64::new(0),
        }
    }

    /// Whether a wait is recorded now.
    #[inline]
    pub fn is_recorded(&self) -> bool {
        self.seq.load(Ordering::Relaxed) != 0
    }

    /// Ends the wait in the books now.
    #[inline]
    pub fn end(&self) {
        if self.is_recorded() {
            channels::end(self.seq.swap(0, Ordering::Relaxed));
        }
    }
}

impl Drop for ChanWait {
    // Inline: every send, receive or join that completes drops one (across crates, a
    // function not marked so is a call), and most have nothing recorded.
    #[inline]
    fn drop(&mut self) {
        self.end();
    }
}

/// The current actor starts waiting on `chan` (`op`: to send, to receive, to be notified, to
/// pass a barrier) at `site`;
/// `blocking`: the wait blocks this thread (`blocking_send`, `blocking_recv`).
#[cold]
#[inline(never)]
pub fn chan_wait_begin(
    chan: &Arc<Channel>,
    op: ChanOp,
    site: &'static Location<'static>,
    blocking: bool,
) -> ChanWait {
    if !enabled() {
        return ChanWait::none();
    }
    let seq = channels::begin(chan.clone(), op, site, blocking, clock::precise_now());
    ChanWait {
        seq: AtomicU64::new(seq),
    }
}
