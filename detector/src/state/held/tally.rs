//! Tallies: short holds released on a thread, counted per primitive in the thread's table.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use crate::base::stats::Tallied;
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
    let Some(t) = slot_in(l, prim) else {
        return false;
    };
    let owner = t.prim.load(Ordering::Relaxed);
    if owner == prim {
        count(t, sample);
        true
    } else if owner == 0 {
        t.sampled.reset();
        t.untimed.store(0, Ordering::Relaxed);
        count(t, sample);
        // Release: a scrape that sees the owner sees the counts that go with it.
        t.prim.store(prim, Ordering::Release);
        true
    } else {
        false
    }
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
        // Release: visible only after the hold it counts has left the books (as `bump`).
        None => t
            .untimed
            .store(t.untimed.load(Ordering::Relaxed) + 1, Ordering::Release),
    }
}

/// What a slot has counted.
fn read(t: &Tally) -> Tallied {
    Tallied {
        sampled: t.sampled.read(),
        // Acquire: pairs with `count`'s Release.
        untimed: t.untimed.load(Ordering::Acquire),
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
