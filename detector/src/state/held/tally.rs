//! Tallies: short holds released on a thread, counted per primitive in the thread's table.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use crate::base::stats::{Tallied, WaitTime, bump};
use crate::state::tls::Local;

use super::*;

/// Tally slots per thread table.
pub(super) const TALLIES: usize = 16;

#[inline]
pub(super) fn tally_slot(prim: u64) -> usize {
    (prim.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize & (TALLIES - 1)
}

/// Counts a release of a hold of `prim` that lasted under a tick of the published clock in
/// this thread's table, if its slot is this primitive's or free: false means the caller must
/// count it in the primitive's own statistics. This keeps the common release off the
/// primitive's cache line: no atomic RMW for shared holds, no line bouncing between threads.
///
/// `sample`: the hold was timed precisely (one in `SAMPLE_EVERY`), it lasted that many ns
/// (under the last bucket untimed holds are drawn into, see `stats::drawable`). A hold that
/// was not is one add to the slot's count; reads give it the bucket and duration of the
/// samples, apportioned (see `Stats::count_short`).
#[inline]
pub(crate) fn tally_in(l: &Local, prim: u64, sample: Option<u64>) -> bool {
    let Some(t) = claim(l, prim) else {
        return false;
    };
    count(t, sample);
    true
}

/// Counts a grant of `prim` after a wait of `time` in this thread's table (the primitive's
/// `contended` count and wait histogram, summed at scrape time), if its slot is this
/// primitive's or free: false means the caller must count it in the primitive's own
/// statistics, as it must an untimed short wait on a thread that has no sampled one yet (it
/// is counted in the bucket of the latest sample, see `Stats::observe_wait`). This keeps a
/// contended acquisition off the primitive's cache lines: plain loads and stores, where the
/// primitive's counters take atomic read-modify-writes on lines every worker writes.
#[inline]
pub(crate) fn tally_wait(l: &Local, prim: u64, time: WaitTime) -> bool {
    let Some(t) = claim(l, prim) else {
        return false;
    };
    match time {
        WaitTime::Short if t.wait_last.load(Ordering::Relaxed) == 0 => return false,
        WaitTime::Short => t.waits.observe_short(&t.wait_last, None, true),
        WaitTime::ShortSample(ns) => t.waits.observe_short(&t.wait_last, Some(ns), true),
        WaitTime::Long(ns) => t.waits.observe(ns, true),
    }
    bump(&t.contended, 1, true);
    true
}

/// `prim`'s slot in this thread's table if it is `prim`'s, or free (claimed now, its counts
/// zeroed); `None` if another primitive has it (or there is no table yet).
#[inline(always)]
fn claim(l: &Local, prim: u64) -> Option<&Tally> {
    let t = slot_in(l, prim)?;
    let owner = t.prim.load(Ordering::Relaxed);
    if owner == prim {
        return Some(t);
    }
    if owner != 0 {
        return None;
    }
    t.sampled.reset();
    t.untimed.store(0, Ordering::Relaxed);
    t.contended.store(0, Ordering::Relaxed);
    t.waits.reset();
    t.wait_last.store(0, Ordering::Relaxed);
    // Release: a scrape that sees the owner sees the zeroed counts (they only grow after).
    t.prim.store(prim, Ordering::Release);
    Some(t)
}

/// [`tally_in`] for an untimed short hold, when the slot is already `prim`'s (else false: the
/// caller takes the general path).
#[inline(always)]
pub(crate) fn tally_quick(l: &Local, prim: u64) -> bool {
    let mine = slot_in(l, prim).filter(|t| t.prim.load(Ordering::Relaxed) == prim);
    if let Some(t) = mine {
        count(t, None);
    }
    mine.is_some()
}

/// `prim`'s tally slot in this thread's table (`None`: no table yet).
#[inline(always)]
fn slot_in(l: &Local, prim: u64) -> Option<&Tally> {
    let h = l.held.get();
    // SAFETY: as in `push_in`: this thread's live table.
    (!h.is_null()).then(|| &unsafe { &*h }.tallies[tally_slot(prim)])
}

#[inline(always)]
fn count(t: &Tally, sample: Option<u64>) {
    match sample {
        Some(ns) => t.sampled.observe(ns, true),
        None => bump(&t.untimed, 1, true),
    }
}

/// What a slot has counted.
fn read(t: &Tally) -> Tallied {
    Tallied {
        sampled: t.sampled.read(),
        // Acquire: pairs with `count`'s Release.
        untimed: t.untimed.load(Ordering::Acquire),
        contended: t.contended.load(Ordering::Acquire),
        waits: t.waits.read(),
    }
}

/// Every primitive's short holds released so far (all threads): id -> their histogram.
pub(crate) fn tallies() -> HashMap<u64, Tallied> {
    let mut out: HashMap<u64, Tallied> = HashMap::new();
    for t in THREADS.lock().iter() {
        for slot in &t.tallies {
            let prim = slot.prim.load(Ordering::Acquire);
            if prim != 0 {
                out.entry(prim).or_default().merge(&read(slot));
            }
        }
    }
    out
}

/// Calls `f` with `prim`'s slot in every table that has one (under the table list's lock).
fn for_slots(prim: u64, mut f: impl FnMut(&Tally)) {
    let i = tally_slot(prim);
    for t in THREADS.lock().iter() {
        let slot = &t.tallies[i];
        if slot.prim.load(Ordering::Acquire) == prim {
            f(slot);
        }
    }
}

/// The short holds of `prim` released so far (all threads).
pub(crate) fn tally_of(prim: u64) -> Tallied {
    let mut out = Tallied::default();
    for_slots(prim, |slot| out.merge(&read(slot)));
    out
}

/// Takes `prim`'s tallies out of every table (it is being dropped): their sum.
///
/// No thread writes a dropped primitive's slot (it releases no hold of it any more), so the
/// counts read before freeing the slot are final.
pub(crate) fn claim_tallies(prim: u64) -> Tallied {
    let mut sum = Tallied::default();
    for_slots(prim, |slot| {
        sum.merge(&read(slot));
        slot.prim.store(0, Ordering::Release);
    });
    sum
}
