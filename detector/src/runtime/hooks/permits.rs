//! A semaphore's capacity changing outside acquisitions: permits forgotten, added, removed,
//! and the semaphore closed.

use std::panic::Location;
use std::sync::atomic::Ordering;

use crate::state::held::EntryRef;
use crate::state::prim::Prim;

use super::hold::Hold;
use super::release::released;

/// A permit was `forget`-ed: it leaves the books as held and is counted as forgotten (a
/// later `add_permits` pays it back).
pub fn forgot(prim: &Prim, hold: Hold, permits: u64) {
    if let Some(v) = hold.entry.as_ref().and_then(EntryRef::view) {
        let site = v.site as *const Location<'static> as *mut Location<'static>;
        if prim.forgot_site.load(Ordering::Relaxed) != site {
            prim.forgot_site.store(site, Ordering::Relaxed);
        }
    }
    prim.forgot_total.fetch_add(permits, Ordering::Relaxed);
    prim.forgotten.fetch_add(permits, Ordering::Relaxed);
    removed_permits(prim, permits);
    released(prim, hold);
}

/// `add_permits(n)`: capacity grows; it makes up for forgotten permits, earlier or later ones
/// (the forgotten balance goes below zero, read as none: see [`Prim::forgotten`]).
pub fn added_permits(prim: &Prim, n: u64) {
    prim.added_total.fetch_add(n, Ordering::Relaxed);
    prim.capacity.fetch_add(n, Ordering::Relaxed);
    // Wrapping, as in `removed_permits`.
    prim.forgotten.fetch_sub(n, Ordering::Relaxed);
    prim.epoch.fetch_add(1, Ordering::Relaxed);
}

/// `forget_permits(n)` removed `n` available permits: capacity shrinks on purpose.
pub fn removed_permits(prim: &Prim, n: u64) {
    // Wrapping (two's complement): racing changes land in any order and must sum exactly; a
    // saturating update would lose one that raced ahead of its counterpart.
    prim.capacity.fetch_sub(n, Ordering::Relaxed);
    prim.epoch.fetch_add(1, Ordering::Relaxed);
}

/// The semaphore was closed.
pub fn closed(prim: &Prim) {
    prim.closed.store(true, Ordering::Relaxed);
    prim.epoch.fetch_add(1, Ordering::Relaxed);
}
