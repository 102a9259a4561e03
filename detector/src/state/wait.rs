//! Waiter records: who waits for a primitive, since when, for how many permits.
//!
//! Waiting is the slow path (the acquisition could not be granted at once), so each primitive
//! keeps its queue in a deque behind its own (uninstrumented) mutex. Records carry a
//! per-primitive sequence number and sit in the deque in that order, which is the order in
//! which they queued and the order tokio's FIFO semaphore grants them in: the usual removal
//! (the head, granted) is O(1), any other a binary search. The queue's lock is held while a
//! contended lock changes hands, so this matters: a linear search through a long queue showed
//! in every contended acquisition (docs/performance.md, "A primitive's wait queue").
//!
//! The common wait (a task that holds nothing, waiting for a tokio mutex or one permit) skips
//! the queue and its lock: it takes a slot in its thread's table (`state::held::waits`), and
//! readers add those waits to the queue's.

use std::collections::VecDeque;
use std::panic::Location;

use crate::state::actor::ActorId;
use crate::state::held::Mode;

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
    /// When the wait started (ns): the precise clock, or for an untimed async wait that is
    /// not a sample the published one, behind by at most a publish period.
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
    /// [`Config::worker_stall`](crate::Config::worker_stall)).
    pub on_worker: bool,
    /// How many times this task or thread gave up waiting here (a timeout, a cancelled
    /// future) and came back within [`RETRY_GAP_NS`]: a retry loop. `since_ns` is then the
    /// start of the first of those waits.
    pub retries: u32,
}

/// Whether the wait numbered `seq` still waits for `prim`: in the queue, or in a thread's wait
/// slots (see `state::held::waits`).
pub(crate) fn still_waiting(prim: &crate::state::prim::Prim, seq: u64) -> bool {
    if seq & crate::state::held::SLOT_SEQ != 0 {
        crate::state::held::wait_live(seq)
    } else {
        prim.waiters.lock().contains(seq)
    }
}

/// A wait that ends without a grant and starts again within this long (100 ms) is one wait
/// retried, not a new one: a timeout-and-retry loop must not hide a queue that never moves.
pub const RETRY_GAP_NS: u64 = 100_000_000;

/// How many given-up waits a primitive remembers.
const GAVE_UP_MEMORY: usize = 8;

/// A wait that ended without a grant, remembered for [`RETRY_GAP_NS`].
#[derive(Clone, Copy, Debug)]
struct GaveUp {
    actor: ActorId,
    since_ns: u64,
    at_ns: u64,
    retries: u32,
}

/// The waiters of one primitive.
#[derive(Default, Debug)]
pub struct WaitQueue {
    pub(crate) next_seq: u64,
    /// In `seq` order.
    pub(crate) list: VecDeque<WaiterRec>,
    /// Recent waits that ended without a grant (at most [`GAVE_UP_MEMORY`]).
    gave_up: Vec<GaveUp>,
    /// The first queued wait of a semaphore that turned mixed (0: none): waits recorded in
    /// threads' slots all began before it (see `runtime::hooks::wait_begin`).
    pub(crate) mixed_from: u64,
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

    /// Waiters in queue order, with `slots` (waits recorded in threads' slots) where they
    /// belong: before the wait that turned the semaphore mixed, else after all the others
    /// (every wait then asks the same, so the order does not matter).
    pub(crate) fn ordered_with(&self, slots: Vec<WaiterRec>) -> Vec<WaiterRec> {
        let mut out = self.ordered();
        let at = self.slots_at();
        out.splice(at..at, slots);
        out
    }

    /// Where [`ordered_with`](Self::ordered_with) puts the slots' waits: the index in `list`.
    fn slots_at(&self) -> usize {
        match self.mixed_from {
            0 => self.list.len(),
            from => self.list.partition_point(|w| w.seq < from),
        }
    }

    /// What a listing shows of the waiters, in [`ordered_with`](Self::ordered_with)'s order
    /// without copying them all: the first `limit` and any other that `keep` asks for, how
    /// many there are in all, and when the longest wait began.
    pub(crate) fn listed(
        &self,
        slots: &[WaiterRec],
        limit: usize,
        keep: impl Fn(&WaiterRec) -> bool,
    ) -> (Vec<WaiterRec>, usize, Option<u64>) {
        let at = self.slots_at();
        let all = self
            .list
            .range(..at)
            .chain(slots)
            .chain(self.list.range(at..));
        let mut out = Vec::new();
        let mut oldest: Option<u64> = None;
        for (i, w) in all.enumerate() {
            if i < limit || keep(w) {
                out.push(w.clone());
            }
            oldest = Some(oldest.map_or(w.since_ns, |o| o.min(w.since_ns)));
        }
        (out, self.list.len() + slots.len(), oldest)
    }

    pub(crate) fn push(&mut self, mut rec: WaiterRec) -> u64 {
        if !self.gave_up.is_empty() {
            let now = rec.since_ns;
            self.gave_up
                .retain(|g| now.saturating_sub(g.at_ns) <= RETRY_GAP_NS);
            if let Some(i) = self.gave_up.iter().position(|g| g.actor == rec.actor) {
                let g = self.gave_up.swap_remove(i);
                rec.since_ns = g.since_ns;
                rec.retries = g.retries + 1;
            }
        }
        self.next_seq += 1;
        rec.seq = self.next_seq;
        self.list.push_back(rec);
        self.next_seq
    }

    /// Remembers a wait that ended at `at_ns` without a grant, so that the same task or thread
    /// waiting again soon continues it (see [`RETRY_GAP_NS`]).
    pub(crate) fn gave_up(&mut self, rec: &WaiterRec, at_ns: u64) {
        if self.gave_up.len() >= GAVE_UP_MEMORY {
            self.gave_up.remove(0);
        }
        self.gave_up.push(GaveUp {
            actor: rec.actor,
            since_ns: rec.since_ns,
            at_ns,
            retries: rec.retries,
        });
    }

    /// Whether it remembers waits that gave up (see [`RETRY_GAP_NS`]).
    pub(crate) fn retrying(&self) -> bool {
        !self.gave_up.is_empty()
    }

    /// Whether the waiter numbered `seq` is still queued.
    pub(crate) fn contains(&self, seq: u64) -> bool {
        self.list.binary_search_by_key(&seq, |w| w.seq).is_ok()
    }

    pub(crate) fn remove(&mut self, seq: u64) -> Option<WaiterRec> {
        // The usual cases first, without the search: a FIFO grant removes the head, or one of
        // the first few (two workers may record their waits in the other order than tokio
        // queued them); a search reads a record per step, each a cache miss when another
        // thread wrote it, twenty of them in a queue of a million.
        if self.list.front().is_some_and(|w| w.seq == seq) {
            return self.list.pop_front();
        }
        if let Some(i) = self.list.iter().take(4).position(|w| w.seq == seq) {
            return self.list.remove(i);
        }
        let i = self.list.binary_search_by_key(&seq, |w| w.seq).ok()?;
        self.list.remove(i)
    }

    /// The oldest wait start (precise ns), if any.
    pub fn oldest_since(&self) -> Option<u64> {
        self.list.iter().map(|w| w.since_ns).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(n: u64) -> WaiterRec {
        WaiterRec {
            seq: 0,
            actor: ActorId::from_thread_seq(n),
            thread: n,
            site: Location::caller(),
            since_ns: n,
            permits: 1,
            mode: Mode::Exclusive,
            timed: false,
            owned: false,
            scope: 0,
            on_worker: false,
            retries: 0,
        }
    }

    /// Removal finds a waiter at the head, among the first few and deep in the queue, leaves
    /// the others in order, and misses one that is gone.
    #[test]
    fn remove_finds_waiters_anywhere_and_keeps_the_order() {
        let mut q = WaitQueue::default();
        let seqs: Vec<u64> = (1..=10).map(|n| q.push(rec(n))).collect();
        assert_eq!(seqs, (1..=10).collect::<Vec<_>>());
        assert_eq!(
            q.remove(3).map(|w| w.since_ns),
            Some(3),
            "among the first few"
        );
        assert_eq!(q.remove(8).map(|w| w.since_ns), Some(8), "deep: the search");
        assert_eq!(q.remove(1).map(|w| w.since_ns), Some(1), "the head");
        assert!(q.remove(3).is_none(), "gone already");
        let left: Vec<u64> = q.ordered().iter().map(|w| w.seq).collect();
        assert_eq!(left, [2, 4, 5, 6, 7, 9, 10]);
        assert!(q.contains(9) && !q.contains(8));
    }

    /// A listing is `ordered_with`'s order cut at the limit, plus what it keeps past it; the
    /// total and the oldest start count every wait, the slots' too.
    #[test]
    fn a_listing_is_the_ordered_queue_cut_short_with_whole_counts() {
        let ids = |ws: &[WaiterRec]| ws.iter().map(|w| w.thread).collect::<Vec<_>>();
        let mut q = WaitQueue::default();
        for n in [20, 21, 22, 23] {
            q.push(rec(n));
        }
        // A queue that turned mixed at its third wait: the slots' waits go before it.
        q.mixed_from = 3;
        let slots = [rec(5), rec(30)];
        let whole = q.ordered_with(slots.to_vec());
        assert_eq!(ids(&whole), [20, 21, 5, 30, 22, 23]);
        for limit in 0..=7 {
            let (listed, total, oldest) = q.listed(&slots, limit, |_| false);
            assert_eq!(ids(&listed), ids(&whole[..limit.min(6)]), "limit {limit}");
            assert_eq!((total, oldest), (6, Some(5)), "limit {limit}");
        }
        let (listed, _, _) = q.listed(&slots, 1, |w| w.thread == 23);
        assert_eq!(ids(&listed), [20, 23], "kept past the limit, in order");
        q.mixed_from = 0;
        assert_eq!(
            ids(&q.listed(&slots, 9, |_| false).0),
            [20, 21, 22, 23, 5, 30]
        );
        let empty = WaitQueue::default();
        let (listed, total, oldest) = empty.listed(&[], 3, |_| true);
        assert!(listed.is_empty() && total == 0 && oldest.is_none());
    }
}
