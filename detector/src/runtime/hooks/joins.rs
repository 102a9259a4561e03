//! What the join wrappers tell the detector: a join that has to wait (a `JoinHandle` awaited
//! before its task ended, a thread's `join()` before it finished) and its end. A spawn tells
//! it nothing (a thread only publishes its own actor when it starts: [`Started::here`]).
//!
//! | step | call |
//! |---|---|
//! | the join finds its task or thread still running | [`join_begin`] |
//! | it returns, or its future is dropped | drop the [`JoinWait`] |

use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::base::clock;
use crate::state::actor::{self, ActorId};
use crate::state::joins::{self, NewJoin};
pub use crate::state::joins::{JoinTarget, SetMembers, Started};

use super::enabled;

/// A join in progress in the books; dropping it (or [`end`](JoinWait::end)) ends it (the
/// join returned, its future was dropped, its task was aborted: no ghost wait is left).
#[derive(Debug)]
#[must_use = "the join ends in the books when this is dropped"]
pub struct JoinWait {
    /// Its number in `state::joins`; 0: nothing recorded (the detector is off, or ended).
    seq: AtomicU64,
}

impl JoinWait {
    /// A wait that recorded nothing.
    pub const fn none() -> JoinWait {
        JoinWait {
            seq: AtomicU64::new(0),
        }
    }

    /// Whether a wait is recorded now.
    pub fn is_recorded(&self) -> bool {
        self.seq.load(Ordering::Relaxed) != 0
    }

    /// Ends the wait in the books now (from a shared reference: an abort through the handle).
    pub fn end(&self) {
        let seq = self.seq.swap(0, Ordering::Relaxed);
        if seq != 0 {
            joins::end(seq);
        }
    }
}

impl Drop for JoinWait {
    fn drop(&mut self) {
        self.end();
    }
}

/// The current actor starts waiting for `target` to end, at `site` (the spawn site where the
/// join's own call site is not known), `target` having been spawned at `spawned_at`.
/// `blocking`: the join blocks this thread (a thread's `join()`), rather than a task.
#[cold]
pub fn join_begin(
    target: JoinTarget,
    spawned_at: &'static Location<'static>,
    site: &'static Location<'static>,
    blocking: bool,
) -> JoinWait {
    if !enabled() {
        return JoinWait::none();
    }
    let seq = joins::begin(NewJoin {
        waiter: actor::current(),
        thread: actor::thread_seq(),
        blocking,
        target,
        spawned_at,
        site,
        since_ns: clock::precise_now(),
        scope: actor::current_scope(),
    });
    JoinWait {
        seq: AtomicU64::new(seq),
    }
}

/// The actor of the tokio task with id `id` (what a join of its handle waits for).
#[inline]
pub fn task_actor(id: tokio::task::Id) -> ActorId {
    ActorId::task(id)
}
