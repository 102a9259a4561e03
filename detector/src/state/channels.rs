//! Channels and their waits in progress: a send waiting for capacity in a bounded `mpsc`
//! channel, a receive waiting for a message (`mpsc` or `oneshot`).
//!
//! A channel is not a primitive: it has no holder, and nothing is registered when one is
//! made. Its wrapper keeps one [`Channel`] record, allocated once at creation and shared by
//! its senders and receiver: its name, creation site, capacity, and the receiver's current
//! owner (the actor that last used the receiver, written only when it changes). Only a send or
//! receive that actually waits takes a record here, removed when it completes or its future
//! is dropped, exactly like a join (see `state::joins`). The deadlock rule reads a send
//! waiting for capacity as a precise wait-for edge to the receiver's owner; a receive is an
//! open edge (who could send is not known), shown in the test-timeout dump only.
//!
//! A channel made for `/metrics` ([`Channel::metered`]) also carries a [`Meter`], listed in a
//! sharded registry until the record is dropped: see "Metrics" below.

use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::base::config;
use crate::model::prim::{clean_name, site_name, site_string};
use crate::state::actor::{self, ActorId};
use crate::state::wait_table::{Book, WaitTable};

mod meter;
use meter::observe_wait;
pub use meter::{ChannelReader, Meter, series_now};

/// One channel as the books know it: allocated once, when the channel is made, and shared by
/// its handles.
#[derive(Debug)]
pub struct Channel {
    /// `mpsc`, `oneshot`.
    kind: &'static str,
    /// The name given (cleaned of control characters), or the creation site's `file:line`.
    name: String,
    created_at: &'static Location<'static>,
    /// Capacity of a bounded channel; `None`: unbounded (a send never waits).
    capacity: Option<usize>,
    /// Raw id of the actor that last used the receiver; 0: nobody yet.
    owner: AtomicU64,
    /// Its receivers are many and equal (`broadcast`, `watch`): no one owns the receiving
    /// side, and only a send waiting for capacity reads the owner, which these never do; so
    /// none is kept (tasks receiving from one such channel would all write one line).
    many_receivers: bool,
    /// The receiver was closed or dropped: a waiting send fails at once, it waits for nobody.
    receiver_gone: AtomicBool,
    /// Permits reserved and not yet used or given back (`reserve`, `reserve_many`,
    /// `reserve_owned`): while any are out, capacity may also come back from their holders,
    /// so a waiting send does not wait for the receiver's owner alone.
    permits_out: AtomicU64,
    /// What `/metrics` keeps of it, if it was made with [`Channel::metered`].
    meter: Option<Arc<Meter>>,
}

impl Channel {
    /// A channel of kind `kind` (`mpsc`, `oneshot`), named `name` (its creation site when
    /// `None`), made at `created_at`, bounded to `capacity` messages if `Some`.
    pub fn new(
        kind: &'static str,
        name: Option<&str>,
        created_at: &'static Location<'static>,
        capacity: Option<usize>,
    ) -> Channel {
        Channel {
            kind,
            name: name.map_or_else(|| site_name(created_at), clean_name),
            created_at,
            capacity,
            owner: AtomicU64::new(0),
            many_receivers: false,
            receiver_gone: AtomicBool::new(false),
            permits_out: AtomicU64::new(0),
            meter: None,
        }
    }

    /// The current actor uses the receiver: it becomes the receiver's owner. One relaxed load
    /// when it already is (the common case); a store only when the owner changes. Nothing for
    /// a channel of many receivers (`broadcast`, `watch`), which has no owner.
    ///
    /// Switched off, the owner is forgotten instead (a load; a store only the first time), so
    /// that a receiver that changed hands while the detector was off is not taken for its old
    /// owner's when it is switched back on: until its next use, a send waiting for room
    /// waits for nobody known (an open edge), never for the wrong actor.
    #[inline]
    pub fn note_receiver(&self) {
        if self.many_receivers {
            return;
        }
        let me = if config::enabled() {
            actor::current().as_u64()
        } else {
            0
        };
        if self.owner.load(Ordering::Relaxed) != me {
            self.owner.store(me, Ordering::Relaxed);
        }
    }

    /// The receiver was closed or dropped.
    pub fn receiver_gone(&self) {
        self.receiver_gone.store(true, Ordering::Relaxed);
    }

    /// `n` permits were reserved.
    #[inline]
    pub fn permits_taken(&self, n: usize) {
        self.permits_out.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// `n` reserved permits were used or given back.
    #[inline]
    pub fn permits_returned(&self, n: usize) {
        self.permits_out.fetch_sub(n as u64, Ordering::Relaxed);
    }

    /// Its kind: `mpsc`, `oneshot`.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Its name (the creation site's `file:line` when it was given none).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where it was made.
    pub fn created_at(&self) -> &'static Location<'static> {
        self.created_at
    }

    /// Capacity of a bounded channel.
    pub fn capacity(&self) -> Option<usize> {
        self.capacity
    }

    /// `mpsc channel "jobs" (created at src/main.rs:10:17)`: the name quoted and escaped.
    pub fn noun(&self) -> String {
        format!(
            "{} channel {:?} (created at {})",
            self.kind,
            self.name,
            site_string(self.created_at)
        )
    }
}

/// What a channel wait is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChanOp {
    /// A send (or `reserve`) waiting for capacity in a bounded channel.
    Send,
    /// A receive waiting for a message.
    Recv,
    /// A wait for a notification on a `Notify` (kind `notify`): open, whoever calls
    /// `notify_one` or `notify_waiters` can end it.
    Notified,
    /// A wait at a `Barrier` (kind `barrier`) for the other parties to arrive: open.
    Barrier,
}

/// A channel wait as the books keep it.
#[derive(Clone, Debug)]
struct ChanWaitRec {
    chan: Arc<Channel>,
    op: ChanOp,
    waiter: ActorId,
    thread: u64,
    blocking: bool,
    site: &'static Location<'static>,
    since_ns: u64,
    scope: u32,
}

/// One channel wait in progress, as the analysis reads it.
#[derive(Clone, Debug)]
pub struct ChanWaitView {
    /// Its number (never reused): identifies the wait across snapshots.
    pub seq: u64,
    /// The channel.
    pub chan: Arc<Channel>,
    /// A send or a receive.
    pub op: ChanOp,
    /// Who waits.
    pub waiter: ActorId,
    /// lockscope number of the thread the wait was begun on.
    pub thread: u64,
    /// The wait blocks that thread (`blocking_send`, `blocking_recv`), rather than a task.
    pub blocking: bool,
    /// The receiver's owner now (the actor that last used it), if anyone has.
    pub owner: Option<ActorId>,
    /// The receiver was closed or dropped.
    pub receiver_gone: bool,
    /// Reserved permits outstanding now.
    pub permits_out: u64,
    /// Where the wait was called.
    pub site: &'static Location<'static>,
    /// When it began (precise clock, ns).
    pub since_ns: u64,
    /// Test scope of the waiting thread.
    pub scope: u32,
}

impl ChanWaitView {
    /// `send to` / `receive from`, for reports.
    pub fn verb(&self) -> &'static str {
        match self.op {
            ChanOp::Send => "send to",
            ChanOp::Recv => "receive from",
            ChanOp::Notified => "be notified by",
            ChanOp::Barrier => "pass",
        }
    }
}

static WAITS: WaitTable<ChanWaitRec> = WaitTable::new();

/// Records a channel wait of the current actor; returns its number, for [`end`].
pub fn begin(
    chan: Arc<Channel>,
    op: ChanOp,
    site: &'static Location<'static>,
    blocking: bool,
    since_ns: u64,
) -> u64 {
    let (waiter, thread, scope) = actor::here();
    WAITS.insert(ChanWaitRec {
        chan,
        op,
        waiter,
        thread,
        blocking,
        site,
        since_ns,
        scope,
    })
}

/// The books of channel waits, for the wait handle `hooks::ChanWait`.
#[derive(Debug)]
pub enum ChanWaits {}

impl Book for ChanWaits {
    /// The wait numbered `seq` completed, or its future was dropped: it leaves the books,
    /// and its time is counted in its channel's wait histogram if the channel is metered.
    fn end(seq: u64) {
        let rec = WAITS.remove(seq);
        // Outside the shard's lock: the record may hold the channel's last reference.
        if let Some(rec) = rec {
            observe_wait(&rec.chan, rec.op, rec.since_ns);
        }
    }
}

/// Every channel wait in progress, by number.
pub fn snapshot() -> Vec<ChanWaitView> {
    let mut out = Vec::new();
    for (seq, r) in WAITS.snapshot() {
        {
            out.push(ChanWaitView {
                seq,
                owner: ActorId::from_u64(r.chan.owner.load(Ordering::Relaxed)),
                receiver_gone: r.chan.receiver_gone.load(Ordering::Relaxed),
                permits_out: r.chan.permits_out.load(Ordering::Relaxed),
                chan: r.chan,
                op: r.op,
                waiter: r.waiter,
                thread: r.thread,
                blocking: r.blocking,
                site: r.site,
                since_ns: r.since_ns,
                scope: r.scope,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_listed_until_it_ends_with_the_receivers_owner_of_the_moment() {
        let chan = Arc::new(Channel::new(
            "mpsc",
            Some("jobs\n"),
            Location::caller(),
            Some(1),
        ));
        assert!(
            chan.noun()
                .starts_with("mpsc channel \"jobs?\" (created at ")
        );
        let seq = begin(chan.clone(), ChanOp::Send, Location::caller(), false, 1);
        let find = || snapshot().into_iter().find(|w| w.seq == seq);
        assert_eq!(find().expect("listed").owner, None);
        chan.note_receiver();
        assert_eq!(find().expect("listed").owner, Some(actor::current()));
        chan.permits_taken(2);
        chan.permits_returned(1);
        chan.receiver_gone();
        let w = find().expect("listed");
        assert_eq!((w.permits_out, w.receiver_gone), (1, true));
        ChanWaits::end(seq);
        assert!(find().is_none());
        let unnamed = Channel::new("oneshot", None, Location::caller(), None);
        assert!(
            unnamed
                .name()
                .starts_with("detector/src/state/channels.rs:")
        );
    }
}
