//! Waiting: the [`Waiting`] an acquire future keeps, its start (in this thread's wait slots
//! for the common wait, else in the primitive's queue), and its ends: granted, cancelled,
//! timed out, failed.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::base::clock;
use crate::base::stats::WaitTime;
use crate::rules;
use crate::state::actor::{self, ActorId};
use crate::state::held::{self, FLAG_MOVABLE, FLAG_REENTRY};
use crate::state::prim::{Prim, PrimKind};
use crate::state::tls::{LOCAL, Local, local};
use crate::state::wait::WaiterRec;

use super::Acq;
use super::hold::{Hold, next_sample, quick_task_hold, record_hold};
use super::hold_time::LONG_NS;
use super::order::check_held;
use super::tasks::blocking_held_here;

/// A wait in progress, kept by the acquire future: two words, so that it comes back from
/// [`wait_begin`] in registers (a wider value was written to memory and read back whole by
/// the future, which stalled on store forwarding).
pub struct Waiting {
    /// Where the wait is recorded: its slot in its thread's table (see `state::held::waits`),
    /// or, low bit set, `seq << 1 | 1`, its number in the primitive's queue; null once the
    /// slot is cleared.
    at: *mut (),
    /// When it began, the top bit set when that is a precise reading (else the published
    /// clock's: see [`wait_begin`]).
    since: u64,
    /// The queue number whole, where a pointer is too narrow to hold it.
    #[cfg(not(target_pointer_width = "64"))]
    seq: u64,
}

// SAFETY: `at` is a `WaitRef` (Send + Sync: only atomic stores to a slot of a table that is
// never freed) or a number.
unsafe impl Send for Waiting {}
// SAFETY: as above; `&Waiting` reads the words only.
unsafe impl Sync for Waiting {}

impl Waiting {
    /// A wait recorded in its thread's slot.
    fn in_slot(slot: held::WaitRef, since_ns: u64, precise: bool) -> Waiting {
        Waiting {
            at: slot.into_ptr(),
            since: Self::since_word(since_ns, precise),
            #[cfg(not(target_pointer_width = "64"))]
            seq: 0,
        }
    }

    /// A wait recorded in the primitive's queue as `seq`.
    fn queued(seq: u64, since_ns: u64, precise: bool) -> Waiting {
        Waiting {
            at: std::ptr::without_provenance_mut((seq << 1 | 1) as usize),
            since: Self::since_word(since_ns, precise),
            #[cfg(not(target_pointer_width = "64"))]
            seq,
        }
    }

    fn since_word(since_ns: u64, precise: bool) -> u64 {
        (since_ns & !PRECISE) | if precise { PRECISE } else { 0 }
    }

    /// When the wait began.
    fn since_ns(&self) -> u64 {
        self.since & !PRECISE
    }

    /// Whether [`Waiting::since_ns`] is a precise reading.
    fn precise(&self) -> bool {
        self.since & PRECISE != 0
    }

    /// The wait's slot, taken (`None` for a queued wait, or once taken).
    fn take_slot(&mut self) -> Option<held::WaitRef> {
        if self.at.is_null() || self.at.addr() & 1 != 0 {
            return None;
        }
        // SAFETY: not null, low bit clear: a `WaitRef::into_ptr`, taken once (nulled now).
        let slot = unsafe { held::WaitRef::from_ptr(self.at) };
        self.at = std::ptr::null_mut();
        Some(slot)
    }

    /// The queued wait's number (see [`Waiting::queued`]).
    fn seq(&self) -> u64 {
        #[cfg(not(target_pointer_width = "64"))]
        return self.seq;
        #[cfg(target_pointer_width = "64")]
        return (self.at.addr() >> 1) as u64;
    }

    /// The clock this wait is timed with, read now.
    fn now(&self) -> u64 {
        if self.precise() {
            clock::precise_now()
        } else {
            clock::hold_now()
        }
    }
}

pub(super) const PRECISE: u64 = 1 << 63;

/// The acquisition must wait: records the waiter (and checks for a self-wait, lock-order
/// edges and blocking-in-async before the wait starts).
///
/// One untimed wait for an async primitive in [`WAIT_SAMPLE_EVERY`] per thread is timed
/// precisely (and the first of each primitive); the others start and end on the published
/// clock, which costs a load where the precise clock costs a system call's worth (see
/// docs/performance.md, "Clocks"), twice per contended acquisition. A short untimed wait is counted in the
/// bucket of the primitive's latest sampled one, as short holds are (see `base::clock`).
/// Blocking and timed waits are always timed precisely: a worker stall is judged in
/// milliseconds, and a timeout error says how long it waited.
#[cold]
pub fn wait_begin(prim: &Prim, acq: Acq, timed: bool) -> Waiting {
    wait_begin_with(prim, acq, timed, false)
}

/// [`wait_begin`] for a wait whose length is shown (the events of an `acquire` span): timed
/// precisely, always.
#[cold]
pub fn wait_begin_timed_precisely(prim: &Prim, acq: Acq, timed: bool) -> Waiting {
    wait_begin_with(prim, acq, timed, true)
}

/// One untimed async wait in this many, per thread, is timed precisely (see [`wait_begin`]).
pub const WAIT_SAMPLE_EVERY: u32 = 16;

/// When a wait starts, and whether on the precise clock: `precise` asked, or a sample is due
/// (the thread's countdown, or a primitive with no sampled short wait yet).
#[inline]
pub(super) fn wait_start(prim: &Prim, precise: bool) -> (u64, bool) {
    let l = local();
    let due = precise
        || {
            let left = l.wait_sample.get();
            l.wait_sample.set(left.saturating_sub(1));
            left == 0
        }
        || !prim.stats.has_wait_sample();
    if !due {
        return (clock::hold_now(), false);
    }
    let now = clock::precise_now();
    if l.wait_sample.get() == 0 {
        l.wait_sample.set(next_sample(now, WAIT_SAMPLE_EVERY));
    }
    (now, true)
}

pub(super) fn wait_begin_with(prim: &Prim, acq: Acq, timed: bool, precise: bool) -> Waiting {
    if let Some(w) = wait_begin_quick(prim, acq, timed, precise) {
        return w;
    }
    let actor = actor::current();
    if acq.flags() & FLAG_REENTRY == 0 {
        check_held(prim, actor, &acq, true, timed);
    }
    let thread = actor::thread_seq();
    // A blocking wait on a worker is reported only once it has stalled the worker for long
    // (when it ends, or by the watchdog while it lasts): a short critical section under a
    // parking_lot lock is what tokio recommends for data not held across an `.await`.
    let mut on_worker = false;
    if prim.kind.is_blocking() {
        on_worker = crate::state::worker::on_async_worker();
        if on_worker {
            crate::state::worker::os_share_begin(prim);
        }
    } else if actor.is_task() {
        crate::report::finding::report_all(rules::blocking_in_async::check_async_wait(
            prim,
            actor,
            &acq,
            blocking_held_here(actor),
        ));
    }
    let (since_ns, precise) = wait_start(prim, precise || timed || prim.kind.is_blocking());
    let rec = WaiterRec {
        timed,
        on_worker,
        ..new_wait(prim, actor, &acq, since_ns, actor::current_scope()).record(thread)
    };
    let seq = {
        let mut q = prim.waiters.lock();
        let seq = q.push(rec);
        if q.mixed_from == 0 && prim.is_mixed() {
            q.mixed_from = seq;
        }
        prim.queue_changed(&q);
        seq
    };
    Waiting::queued(seq, since_ns, precise)
}

/// The common wait, in this thread's wait slots instead of the primitive's queue: a task that
/// holds nothing (so no self-wait, no lock-order edge, no guard across an `.await` to find),
/// on a thread where no task holds a blocking guard, waiting untimed for a tokio mutex or for
/// one permit of a semaphore whose waits all asked for one, whose queue remembers no given-up
/// wait. `None`: the caller queues it.
///
/// Why only those: readers cannot tell the slots' waits apart in tokio's FIFO order (they are
/// placed among the queue's by [`WaitQueue::ordered_with`](crate::state::wait::WaitQueue)), and the
/// order matters to the wait-for graph only where waits ask for different amounts (a large
/// `acquire_many` blocks later small ones; a queued writer blocks later readers). A semaphore
/// turns "mixed" at its first wait for more than one permit, and its waits queue from then on.
#[inline]
pub(super) fn wait_begin_quick(
    prim: &Prim,
    acq: Acq,
    timed: bool,
    precise: bool,
) -> Option<Waiting> {
    let alike = match prim.kind {
        PrimKind::Mutex => true,
        PrimKind::Semaphore => prim.waits_alike(acq.permits()),
        _ => false,
    };
    if !alike
        || timed
        || prim.resource.followed()
        || acq.flags() & FLAG_REENTRY != 0
        || prim.is_retrying()
    {
        return None;
    }
    let l = local();
    if l.held.get().is_null() || l.blocking_in_task.get() != 0 {
        return None;
    }
    let actor = ActorId::task(tokio::task::try_id()?);
    if held::task_any(actor.as_u64()) {
        return None;
    }
    let (since_ns, precise) = wait_start(prim, precise);
    let w = new_wait(prim, actor, &acq, since_ns, l.scope.get());
    let (slot, _) = held::wait_push(l, &w)?;
    Some(Waiting::in_slot(slot, since_ns, precise))
}

/// `actor`'s wait for `prim` as `acq` asks, from `since_ns`, in test scope `scope`: what a wait
/// slot records, and what the primitive's queue records with a few more fields.
fn new_wait(prim: &Prim, actor: ActorId, acq: &Acq, since_ns: u64, scope: u32) -> held::NewWait {
    held::NewWait {
        prim: prim.id.0,
        actor,
        site: acq.site(),
        since_ns,
        permits: acq.permits(),
        mode: acq.mode(),
        owned: acq.flags() & FLAG_MOVABLE != 0,
        scope,
    }
}

/// Takes the waiter off the books; `gave_up`: it ends without a grant (a timeout, a cancelled
/// future), so a wait by the same task or thread soon after is a retry of this one.
pub(super) fn end_wait(prim: &Prim, w: &mut Waiting, gave_up: bool) {
    if let Some(slot) = w.take_slot() {
        // A slot's wait: one store. One that gave up is remembered by the queue, so that the
        // same task waiting again soon is seen as retrying it.
        let rec = gave_up.then(|| slot.view()).flatten();
        slot.clear(Some(local()));
        if let Some(rec) = rec {
            let mut q = prim.waiters.lock();
            q.gave_up(&rec, clock::precise_now());
            prim.gave_up_remembered();
        }
        return;
    }
    let mut now = None;
    let rec = {
        let mut q = prim.waiters.lock();
        let rec = q.remove(w.seq());
        if gave_up && let Some(rec) = &rec {
            let t = *now.insert(clock::precise_now());
            q.gave_up(rec, t);
        }
        prim.queue_changed(&q);
        rec
    };
    if let Some(rec) = rec
        && rec.on_worker
    {
        let now = now.unwrap_or_else(clock::precise_now);
        crate::report::finding::report_all(rules::blocking_in_async::wait_ended(
            prim,
            &rec,
            now.saturating_sub(rec.since_ns),
        ));
    }
}

/// Granted after waiting.
#[cold]
pub fn acquired_after_wait(prim: &Prim, acq: Acq, w: Waiting) -> Hold {
    acquired_after_wait_ns(prim, acq, w).0
}

/// As [`acquired_after_wait`], also returning how long it waited in nanoseconds (for the
/// `acquired` event; one clock reading serves both). Nanoseconds, not the event's
/// milliseconds: the caller converts only when it emits the event (a conversion and a
/// division ended every contended acquisition otherwise).
#[cold]
pub fn acquired_after_wait_ns(prim: &Prim, acq: Acq, mut w: Waiting) -> (Hold, u64) {
    end_wait(prim, &mut w, false);
    let now = w.now();
    let waited = now.saturating_sub(w.since_ns());
    let exclusive = acq.mode().is_exclusive();
    let time = match (waited < LONG_NS, w.precise()) {
        (true, true) => WaitTime::ShortSample(waited),
        (true, false) => WaitTime::Short,
        (false, _) => WaitTime::Long(waited),
    };
    // The reading doubles as the hold's start: both clocks share one timeline (a published
    // reading lags by under a tick, so a release within the tick reads 0).
    let hold = LOCAL
        .try_with(|l| {
            count_wait(prim, time, exclusive, Some(l));
            if w.precise() {
                l.last_precise_hold.set(now);
            }
            let actor = actor::current_in(l);
            let quick = if actor.is_task() {
                quick_task_hold(l, actor, prim, acq, now, true)
            } else {
                None
            };
            quick.unwrap_or_else(|| record_hold(l, prim, actor, acq, now))
        })
        .unwrap_or_else(|_| {
            count_wait(prim, time, exclusive, None);
            Hold::default()
        });
    (hold, waited)
}

/// Counts a grant after a wait of `time`: in this thread's tally when it can (see
/// `held::tally_wait`), else in the primitive's statistics (an exclusive holder is alone, so
/// it updates them without an atomic RMW).
#[inline]
pub(super) fn count_wait(prim: &Prim, time: WaitTime, exclusive: bool, l: Option<&Local>) {
    if l.is_some_and(|l| held::tally_wait(l, prim.id.0, time)) {
        if let WaitTime::ShortSample(ns) = time {
            prim.stats.note_wait_sample(ns);
        }
        return;
    }
    prim.stats.observe_wait(time, exclusive);
    prim.stats.count_contended(exclusive);
}

/// The acquire future was dropped while waiting.
#[cold]
pub fn wait_cancelled(prim: &Prim, w: Waiting) {
    gave_up(prim, w, &prim.stats.cancelled);
}

/// A timed acquisition gave up.
#[cold]
pub fn wait_timed_out(prim: &Prim, w: Waiting) {
    gave_up(prim, w, &prim.stats.timeouts);
}

/// The wait ended without a grant, counted in `counter`.
fn gave_up(prim: &Prim, mut w: Waiting, counter: &AtomicU64) {
    end_wait(prim, &mut w, true);
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The wait ended without a grant for another reason (the semaphore was closed).
#[cold]
pub fn wait_failed(prim: &Prim, mut w: Waiting) {
    end_wait(prim, &mut w, false);
}

/// A timed form gave up without ever queueing (deadline already past).
#[cold]
pub fn timed_out_at_once(prim: &Prim) {
    prim.stats.timeouts.fetch_add(1, Ordering::Relaxed);
}

/// Milliseconds a wait has lasted.
pub fn waited_ms(w: &Waiting) -> f64 {
    clock::ms_between(w.since_ns(), w.now())
}

/// A `try_` form found the primitive unavailable.
#[cold]
pub fn try_failed(prim: &Prim) {
    prim.stats.try_failures.fetch_add(1, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::Location;

    use super::super::{Mode, released};
    use crate::runtime::cell::PrimCell;

    /// A task granted after a wait is in the task index at once (`quick_task_hold`, or
    /// `record_hold` when a sample is due), as after a grant without a wait: a check made on
    /// another worker, where its entry is not, finds the hold through the index. Each of the
    /// grants below runs with a different sample countdown, so both paths are taken.
    #[test]
    fn a_grant_after_a_wait_is_in_the_task_index() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        rt.block_on(async {
            tokio::spawn(async {
                let cell = PrimCell::new(None, PrimKind::Mutex, Location::caller(), 1);
                let prim = cell.get();
                let acq = Acq::new(Location::caller(), 1, Mode::Exclusive);
                let task = ActorId::task(tokio::task::id()).as_u64();
                for _ in 0..2 * clock::SAMPLE_EVERY {
                    assert!(!held::task_any(task));
                    let w = wait_begin(prim, acq, false);
                    let hold = acquired_after_wait(prim, acq, w);
                    assert!(held::task_any(task), "the grant is indexed");
                    released(prim, hold);
                }
                assert!(!held::task_any(task));
            })
            .await
            .expect("no panic");
        });
    }
}
