//! Tallies: short holds released on a thread, counted per primitive instead of recorded.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use crate::state::tls::Local;

use super::*;

/// Tally slots per thread table.
pub(super) const TALLIES: usize = 16;

#[inline]
pub(super) fn tally_slot(prim: u64) -> usize {
    (prim.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize & (TALLIES - 1)
}

/// Counts a release of a hold of `prim` that lasted under a clock tick in this thread's
/// table, if its slot is this primitive's or free: false means the caller must record the
/// hold in the primitive's own histogram. This keeps the common release off the primitive's
/// cache line: no atomic RMW for shared holds, no line bouncing between threads for any.
#[inline]
pub(crate) fn tally_in(l: &Local, prim: u64) -> bool {
    let h = l.held.get();
    if h.is_null() {
        return false;
    }
    // SAFETY: as in `push_in`: this thread's live table.
    let t = &unsafe { &*h }.tallies[tally_slot(prim)];
    let owner = t.prim.load(Ordering::Relaxed);
    if owner == prim {
        // Release: visible only after the hold it counts has left the books (as `bump`).
        t.count
            .store(t.count.load(Ordering::Relaxed) + 1, Ordering::Release);
        true
    } else if owner == 0 {
        t.count.store(1, Ordering::Relaxed);
        // Release: a scrape that sees the owner sees the count that goes with it.
        t.prim.store(prim, Ordering::Release);
        true
    } else {
        false
    }
}

/// Every primitive's short holds released so far (all threads): id -> count.
pub(crate) fn tallies() -> HashMap<u64, u64> {
    let mut out = HashMap::new();
    for t in THREADS.lock().iter() {
        for slot in &t.tallies {
            let prim = slot.prim.load(Ordering::Acquire);
            if prim != 0 {
                *out.entry(prim).or_default() += slot.count.load(Ordering::Acquire);
            }
        }
    }
    out
}

/// The short holds of `prim` released so far (all threads).
pub(crate) fn tally_of(prim: u64) -> u64 {
    let i = tally_slot(prim);
    THREADS
        .lock()
        .iter()
        .map(|t| &t.tallies[i])
        .filter(|slot| slot.prim.load(Ordering::Acquire) == prim)
        .map(|slot| slot.count.load(Ordering::Acquire))
        .sum()
}

/// Takes `prim`'s tallies out of every table (it is being dropped): their sum.
///
/// No thread writes a dropped primitive's slot (it releases no hold of it any more), so the
/// count read before freeing the slot is final.
pub(crate) fn claim_tallies(prim: u64) -> u64 {
    let i = tally_slot(prim);
    let mut sum = 0;
    for t in THREADS.lock().iter() {
        let slot = &t.tallies[i];
        if slot.prim.load(Ordering::Acquire) == prim {
            sum += slot.count.load(Ordering::Relaxed);
            slot.prim.store(0, Ordering::Release);
        }
    }
    sum
}
