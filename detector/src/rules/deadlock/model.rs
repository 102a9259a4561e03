//! The deadlock rule's model of a state: the reduction's primitives (with stand-ins for the
//! ends of joined tasks and for receiver owners) and its executor side (blocked workers).

use std::collections::HashMap;

use crate::analysis::graph::waitfor::{Executor, MHold, MPrim, MWait, Policy};
use crate::analysis::snapshot::State;
use crate::state::held::{FLAG_PINNED_THREAD, HoldView};
use crate::state::prim::PrimKind;

use super::{channels, joins};

/// Builds the reduction model of a state: its primitives, and a stand-in for the end of each
/// task or thread someone joins (see [`join_prim`](crate::analysis::graph::waitfor::join_prim)), and one for each receiver owner
/// whom a send into a full bounded channel waits for (see `channels`).
pub fn model(state: &State) -> Vec<MPrim> {
    let mut m: Vec<MPrim> = state
        .prims
        .iter()
        .filter(|p| !p.holds.is_empty() || !p.waiters.is_empty())
        .map(|p| {
            let kind = p.prim.kind();
            MPrim {
                id: p.prim.id().0,
                policy: match kind {
                    PrimKind::Mutex
                    | PrimKind::RwLock
                    | PrimKind::Semaphore
                    | PrimKind::OnceCell => Policy::Fifo,
                    PrimKind::BlockingMutex | PrimKind::BlockingReentrantMutex => Policy::Exclusive,
                    PrimKind::BlockingRwLock => Policy::FairRwLock,
                },
                capacity: p.capacity,
                closed: p.closed,
                holds: p
                    .holds
                    .iter()
                    .map(|h| MHold {
                        actor: h.actor.as_u64(),
                        permits: h.permits,
                        mode: h.mode,
                        movable: h.movable(),
                        pinned_thread: pinned_thread(state, h),
                    })
                    .collect(),
                waiters: p
                    .waiters
                    .iter()
                    .map(|w| MWait {
                        actor: w.actor.as_u64(),
                        permits: w.permits,
                        mode: w.mode,
                        timed: w.timed,
                        blocks_thread: kind.is_blocking().then_some(w.thread),
                    })
                    .collect(),
            }
        })
        .collect();
    m.extend(joins::model(state));
    m.extend(channels::model(state));
    m
}

/// The thread a hold's holder can only run on, if any: a task of a current-thread runtime
/// (flagged when it took a blocking guard) or of a `LocalSet` on a `block_on` thread, and a
/// thread's own code (say, a `block_on` future), which runs on that thread alone.
pub(super) fn pinned_thread(state: &State, h: &HoldView) -> Option<u64> {
    match h.actor.thread_seq() {
        Some(own) => Some(own),
        None if h.flags & FLAG_PINNED_THREAD != 0 => Some(h.thread),
        None => state
            .executors
            .runtimes
            .values()
            .any(|r| r.block_on.is_some_and(|(t, _)| t == h.thread))
            .then_some(h.thread),
    }
}

/// The executor side of the model (see [`Executor`]): the known runtimes' workers
/// that are blocked in a blocking wait, and the holders that need one of them to run: a
/// task whose hold was taken on a worker now blocked by someone else (so it is not running
/// there), and a parked `block_on` future of a multi-thread runtime.
pub fn executor(state: &State) -> Executor {
    let ex = &state.executors;
    let mut out = Executor::default();
    if ex.runtimes.is_empty() {
        return out;
    }
    // Worker threads blocked now, by whom.
    let mut blocked_by: HashMap<u64, Vec<u64>> = HashMap::new();
    for p in &state.prims {
        for w in p.waiters.iter().filter(|w| w.on_worker) {
            if let Some(rt) = ex.runtime_of(w.thread).filter(|r| r.multi) {
                out.workers.insert(w.thread, rt.key);
                out.worker_count.insert(rt.key, rt.workers);
                blocked_by
                    .entry(w.thread)
                    .or_default()
                    .push(w.actor.as_u64());
            }
        }
    }
    if out.workers.is_empty() {
        return out;
    }
    for p in &state.prims {
        for h in &p.holds {
            let a = h.actor.as_u64();
            let rt = match h.actor.thread_seq() {
                Some(seq) => ex.parked_block_on(seq).map(|r| r.key),
                None => out.workers.get(&h.thread).copied().filter(|_| {
                    blocked_by
                        .get(&h.thread)
                        .is_some_and(|by| by.iter().any(|&b| b != a))
                }),
            };
            if let Some(rt) = rt {
                out.needs_worker.insert(a, rt);
            }
        }
    }
    out
}
