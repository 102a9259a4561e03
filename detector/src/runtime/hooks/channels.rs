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

use crate::base::clock;
use crate::state::channels;
pub use crate::state::channels::{ChanOp, ChanWaits, Channel};

use super::recorded::Recorded;

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

/// A channel wait in progress in the books; dropping it (or [`end`](Recorded::end)) ends it
/// (the send or receive completed, or its future was dropped: no ghost wait is left).
pub type ChanWait = Recorded<ChanWaits>;

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
    ChanWait::begin(|| channels::begin(chan.clone(), op, site, blocking, clock::precise_now()))
}
