//! Tasks that have ended, as tokio told (`on_task_terminate`), with when: what the
//! `leaked-permit` rule for holds that outlive their task reads (see `rules::task_ended`).

use std::collections::{HashMap, HashSet, VecDeque};

use parking_lot::Mutex;

use crate::state::actor::ActorId;

/// Ended tasks remembered at most (the oldest are forgotten first).
const MEMORY: usize = 65_536;

/// Tasks that ended, with when (coarse clock), oldest first.
static ENDED: Mutex<VecDeque<(u64, u64)>> = Mutex::new(VecDeque::new());

/// Task `actor` ended at `at` (coarse ns).
pub(crate) fn ended(actor: ActorId, at: u64) {
    let mut e = ENDED.lock();
    if e.len() == MEMORY {
        e.pop_front();
    }
    e.push_back((actor.as_u64(), at));
}

/// Whether any ended task is remembered.
pub(crate) fn any() -> bool {
    !ENDED.lock().is_empty()
}

/// The ended tasks among `holding` (raw actor ids that hold something now), with when they
/// ended; the others are forgotten: a task that has ended can take nothing more.
pub(crate) fn holding(holding: &HashSet<u64>) -> HashMap<u64, u64> {
    let mut e = ENDED.lock();
    e.retain(|(a, _)| holding.contains(a));
    e.iter().copied().collect()
}
