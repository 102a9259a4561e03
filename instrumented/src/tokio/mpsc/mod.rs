//! Drop-in replacement for `tokio::sync::mpsc`: the same functions, types, methods, trait
//! impls, `Send`/`Sync` and errors (tokio's own [`error`] module, re-exported).
//!
//! Swap `use tokio::sync::mpsc;` for `use lockscope::tokio::mpsc;` and nothing else changes.
//! What you gain:
//!
//! - a send (or `reserve`) into a full bounded channel that has to wait is a wait the
//!   detector sees, for the receiver's owner: the task or thread that last received from it
//!   (or polled it). A task that holds a lock across such a send, while that owner waits for
//!   the lock, is a `deadlock`, reported within the usual second, naming the channel;
//! - a receive waiting for a message is shown in the test-timeout dump (an open wait: who
//!   could send is not known, so it is never part of a proven deadlock);
//! - each channel has a name in reports: its creation site, or the one given to
//!   [`channel_named`] / [`unbounded_channel_named`];
//! - `/metrics` shows each channel's depth and capacity, and how long sends waited for
//!   capacity and receives for a message (`lockscope_channel_*`, by name: channels made at one
//!   line are one series).
//!
//! Cost: one record per channel, allocated when it is made, and an entry in the metrics
//! registry (one sharded lock when it is made, one when it is dropped). A message that passes
//! without waiting costs a relaxed add on the sending side and a relaxed load and store on
//! the receiving side (the metrics' counts, each side on a cache line of its own), and a
//! relaxed load on the receiving side (is the receiver's owner still the same?). A channel
//! made while the detector is off counts nothing.
//!
//! # What the books cannot see
//!
//! - A send raced in a `select!` against a timer (or anything lockscope does not see) that
//!   is longer than the detector's confirmation (about two watchdog ticks) may be reported
//!   while the timer has not fired yet. A send raced against another lockscope wait (a
//!   lock, a receive) is not.
//! - A receiver handed to another task is known to have moved only once that task uses it;
//!   until then the senders wait for its last user. A receiver last used by the sender
//!   itself, or never used, makes no precise wait (a miss, never a false deadlock).
//! - `poll_recv` marks the receiver's owner but records no wait.

#[macro_use]
mod common;

mod bounded;
mod unbounded;

pub use bounded::{
    OwnedPermit, Permit, PermitIterator, Receiver, Sender, WeakSender, channel, channel_named,
};
/// tokio's own error types, re-exported unchanged.
pub use tokio::sync::mpsc::error;
pub use unbounded::{
    UnboundedReceiver, UnboundedSender, WeakUnboundedSender, unbounded_channel,
    unbounded_channel_named,
};
