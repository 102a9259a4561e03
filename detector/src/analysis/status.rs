//! Status queries on one primitive: who holds it now, and whether the current actor does.
//!
//! The wrappers' `holders()` and `held_by_current()` answer from here. Both read lockscope's
//! books (every thread's hold table), so they are racy snapshots, as tokio's
//! `available_permits` is: the answer may be stale by the time the caller reads it. They take
//! the registry's lock of hold tables, never a lock of the program's, and are meant for
//! diagnostics and test assertions, not for the hot path.

use crate::base::clock;
use crate::state::actor;
use crate::state::held;
use crate::state::prim::Prim;

use super::snapshot::HolderSnapshot;

/// The holders of `prim` now, oldest first: who (task or thread), where it acquired, for how
/// long, how many permits and in which mode. Empty while the detector is off (nothing is
/// recorded then).
pub fn holders_of(prim: &Prim) -> Vec<HolderSnapshot> {
    let id = prim.id().0;
    let kind = prim.kind();
    let mut holds = Vec::new();
    held::for_each_all(|h| {
        if h.prim == id {
            holds.push(h);
        }
    });
    holds.sort_by_key(|h| h.since);
    let now = clock::coarse_now();
    holds
        .into_iter()
        .map(|h| HolderSnapshot::of(&h, kind, now.saturating_sub(h.since)))
        .collect()
}

/// Whether the actor running now (the current tokio task, else this thread) holds `prim`:
/// Kotlin's `Mutex.holdsLock`. A task's holds are its own wherever it runs, so the answer
/// stays right across `.await` points that move the task to another worker. Always `false`
/// while the detector is off.
pub fn held_by_current(prim: &Prim) -> bool {
    let id = prim.id().0;
    let me = actor::current();
    let mut mine = false;
    // The current thread's table first: a thread's holds, and a task's that did not move,
    // are there, without the registry's lock.
    held::for_each_mine(me.as_u64(), |h| mine |= h.prim == id);
    if !mine && me.is_task() {
        held::for_each_all(|h| mine |= h.prim == id && h.actor == me);
    }
    mine
}

/// Whether anyone holds `prim` now by the books; `exclusive`: anyone in exclusive mode (a
/// writer, a mutex's holder). `false` while the detector is off.
pub fn is_held(prim: &Prim, exclusive: bool) -> bool {
    let id = prim.id().0;
    let mut held = false;
    held::for_each_all(|h| held |= h.prim == id && (!exclusive || h.mode.is_exclusive()));
    held
}
