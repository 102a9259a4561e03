//! The reduction's input: primitives with their holds and waits as the rules model them, the
//! stand-in for a joined task's end, and the executor side (blocked workers).

use super::*;

/// How a primitive grants waiters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// tokio's batch semaphore (Mutex, RwLock, Semaphore): strict FIFO over permits.
    Fifo,
    /// parking_lot mutex (reentrant or not): any waiter once it is free.
    Exclusive,
    /// parking_lot rwlock: task-fair, with upgradable reads.
    FairRwLock,
    /// Not a primitive: the end of one task or thread (see [`join_prim`]). Its one holder is
    /// that task or thread; its waiters are joining it, and are granted once it has run free
    /// and released what it held, as an exclusive lock would grant them.
    Join,
}

/// The model's stand-in for the end of task or thread `actor` (raw id), with id `id` (any
/// number apart from primitives' ids): a primitive of policy [`Policy::Join`] that `actor`
/// holds and each of `joiners` waits for (`blocks_thread`: the join blocks that thread, as
/// a thread's `join()` does). The reduction then needs nothing new: the joiners are granted
/// once `actor` has run free and released, exactly when it would have ended; a cycle through
/// a join stays blocked like any other.
///
/// The model only: nothing is registered per spawned task, and no rule but the deadlock one
/// ever sees these.
pub fn join_prim(
    id: u64,
    actor: u64,
    pinned_thread: Option<u64>,
    joiners: impl IntoIterator<Item = (u64, Option<u64>)>,
) -> MPrim {
    MPrim {
        id,
        policy: Policy::Join,
        capacity: 1,
        closed: false,
        holds: vec![MHold {
            actor,
            permits: 1,
            mode: Mode::Exclusive,
            movable: false,
            pinned_thread,
        }],
        waiters: joiners
            .into_iter()
            .map(|(waiter, blocks_thread)| MWait {
                actor: waiter,
                permits: 1,
                mode: Mode::Exclusive,
                timed: false,
                blocks_thread,
            })
            .collect(),
    }
}

/// A hold in the model.
#[derive(Clone, Debug)]
pub struct MHold {
    /// Holder.
    pub actor: u64,
    /// Permits held (FIFO policy).
    pub permits: u32,
    /// How it is held.
    pub mode: Mode,
    /// The holder may not be the one holding it now (owned guard): assume it is released.
    pub movable: bool,
    /// The holder is a task that can only run on this thread (see module docs).
    pub pinned_thread: Option<u64>,
}

/// A wait in the model.
#[derive(Clone, Debug)]
pub struct MWait {
    /// Waiter.
    pub actor: u64,
    /// Permits wanted (FIFO policy).
    pub permits: u32,
    /// Access wanted.
    pub mode: Mode,
    /// Gives up by itself.
    pub timed: bool,
    /// Thread the wait blocks, for blocking primitives.
    pub blocks_thread: Option<u64>,
}

/// A primitive in the model.
#[derive(Clone, Debug)]
pub struct MPrim {
    /// Primitive id.
    pub id: u64,
    /// Grant policy.
    pub policy: Policy,
    /// Permits in existence (FIFO policy).
    pub capacity: u64,
    /// A closed semaphore fails every waiter.
    pub closed: bool,
    /// Holds.
    pub holds: Vec<MHold>,
    /// Waiters, in queue order.
    pub waiters: Vec<MWait>,
}

/// The executor side of the model: who needs a runtime's workers, and which threads are them.
#[derive(Clone, Debug, Default)]
pub struct Executor {
    /// Actors that can only run on a worker of this runtime (by key): a multi-thread
    /// runtime's task that yielded, a parked `block_on` future.
    pub needs_worker: HashMap<u64, u64>,
    /// Worker threads: thread number -> runtime key.
    pub workers: HashMap<u64, u64>,
    /// Worker count of each runtime (by key).
    pub worker_count: HashMap<u64, usize>,
}

impl Executor {
    /// Whether every worker of runtime `rt` is blocked now (`tb`: blocking waits per thread).
    pub(super) fn all_blocked(&self, rt: u64, tb: &HashMap<u64, usize>) -> bool {
        let Some(&n) = self.worker_count.get(&rt) else {
            return false;
        };
        let blocked = self
            .workers
            .iter()
            .filter(|&(t, r)| *r == rt && tb.get(t).copied().unwrap_or(0) > 0)
            .count();
        n > 0 && blocked >= n
    }
}
