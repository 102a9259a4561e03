//! Waiter records: who waits for a primitive, since when, for how many permits.
//!
//! Waiting is the slow path (the acquisition could not be granted at once), so each primitive
//! keeps its queue in a deque behind its own (uninstrumented) mutex. Records carry a
//! per-primitive sequence number and sit in the deque in that order, which is the order in
//! which they queued and the order tokio's FIFO semaphore grants them in: the usual removal
//! (the head, granted) is O(1), any other a binary search. The queue's lock is held while a
//! contended lock changes hands, so this matters: a linear search through 64 waiters cost
//! about 100 ns per contended acquisition.

use std::collections::VecDeque;
use std::panic::Location;

use crate::actor::ActorId;
use crate::held::Mode;

/// One waiting acquisition.
#[derive(Clone, Debug)]
pub struct WaiterRec {
    /// Queue order within the primitive.
    pub seq: u64,
    /// The waiting task or thread.
    pub actor: ActorId,
    /// lockscope number of the thread it started waiting on.
    pub thread: u64,
    /// Call site of the acquisition.
    pub site: &'static Location<'static>,
    /// When the wait started (precise clock, ns).
    pub since_ns: u64,
    /// Permits requested.
    pub permits: u32,
    /// Access requested.
    pub mode: Mode,
    /// A timed form (`lock_timeout`, `try_lock_for`, ...): it gives up by itself.
    pub timed: bool,
    /// An owned form (`lock_owned`, `acquire_owned`, ...).
    pub owned: bool,
    /// Test scope of the waiting thread.
    pub scope: u32,
    /// A blocking wait on an async runtime's worker thread (the whole worker stalls while it
    /// lasts; reported as `blocking-in-async` once it passes
    /// [`WORKER_STALL_NS`](crate::rules::blocking_in_async::WORKER_STALL_NS)).
    pub on_worker: bool,
}

/// The waiters of one primitive.
#[derive(Default, Debug)]
pub struct WaitQueue {
    pub(crate) next_seq: u64,
    /// In `seq` order.
    pub(crate) list: VecDeque<WaiterRec>,
}

impl WaitQueue {
    /// Number of waiters.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether nobody waits.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Waiters in queue order.
    pub fn ordered(&self) -> Vec<WaiterRec> {
        self.list.iter().cloned().collect()
    }

    pub(crate) fn push(&mut self, mut rec: WaiterRec) -> u64 {
        self.next_seq += 1;
        rec.seq = self.next_seq;
        self.list.push_back(rec);
        self.next_seq
    }

    /// Whether the waiter numbered `seq` is still queued.
    pub(crate) fn contains(&self, seq: u64) -> bool {
        self.list.binary_search_by_key(&seq, |w| w.seq).is_ok()
    }

    pub(crate) fn remove(&mut self, seq: u64) -> Option<WaiterRec> {
        let i = self.list.binary_search_by_key(&seq, |w| w.seq).ok()?;
        self.list.remove(i)
    }

    /// The oldest wait start (precise ns), if any.
    pub fn oldest_since(&self) -> Option<u64> {
        self.list.iter().map(|w| w.since_ns).min()
    }
}
