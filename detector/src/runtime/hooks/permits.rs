//! A semaphore's capacity changing outside acquisitions: permits forgotten, added, removed,
//! and the semaphore closed.

use crate::state::held::EntryRef;
use crate::state::prim::Prim;

use super::hold::Hold;
use super::release::released;

/// A permit was `forget`-ed: it leaves the books as held and is counted as forgotten (a
/// later `add_permits` pays it back).
pub fn forgot(prim: &Prim, hold: Hold, permits: u64) {
    let site = hold.entry.as_ref().and_then(EntryRef::view).map(|v| v.site);
    prim.forgot_permits(site, permits);
    released(prim, hold);
}

/// `add_permits(n)`: capacity grows; it makes up for forgotten permits, earlier or later ones
/// (the forgotten balance goes below zero, read as none).
pub fn added_permits(prim: &Prim, n: u64) {
    prim.added_permits(n);
}

/// `forget_permits(n)` removed `n` available permits: capacity shrinks on purpose.
pub fn removed_permits(prim: &Prim, n: u64) {
    prim.removed_permits(n);
}

/// The semaphore was closed.
pub fn closed(prim: &Prim) {
    prim.close();
}
