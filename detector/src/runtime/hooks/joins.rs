//! What the join wrappers tell the detector: a join that has to wait (a `JoinHandle` awaited
//! before its task ended, a thread's `join()` before it finished) and its end. A spawn tells
//! it nothing (a thread only publishes its own actor when it starts: [`Started::here`]).
//!
//! | step | call |
//! |---|---|
//! | the join finds its task or thread still running | [`join_begin`] |
//! | it returns, or its future is dropped | drop the [`JoinWait`] |

use std::panic::Location;

use crate::base::clock;
use crate::state::actor::{self, ActorId};
use crate::state::joins::{self, NewJoin};
pub use crate::state::joins::{JoinTarget, Joins, SetMembers, Started};
use crate::state::tls::local;

use super::recorded::Recorded;

/// A join in progress in the books; dropping it (or [`end`](Recorded::end)) ends it (the
/// join returned, its future was dropped, its task was aborted: no ghost wait is left).
pub type JoinWait = Recorded<Joins>;

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
    JoinWait::begin(|| {
        let l = local();
        let (waiter, thread, scope) = actor::here_in(l);
        joins::begin(NewJoin {
            waiter,
            thread,
            blocking,
            target,
            spawned_at,
            site,
            // The published clock, as most holds' starts, not a precise reading: a join is
            // on the path of every spawn and join. The deadlock rule asks whether the joiner
            // took a hold after the join began (`t > since`), so a hold taken before must not
            // look later: a published start is never later than this one, and one read
            // precisely (a sampled acquisition, a grant after a timed wait) is at most the
            // thread's latest, taken here too. (A task that took such a hold on another
            // worker and moved here within the publish period may have its join taken for
            // one it can leave: a deadlock missed, never one invented.) How long the group
            // has stood before it is confirmed is the rule's own reading, not this start
            // (see `rules::deadlock`).
            since_ns: clock::hold_now().max(l.last_precise_hold.get()),
            scope,
        })
    })
}

/// The actor of the tokio task with id `id` (what a join of its handle waits for).
#[inline]
pub fn task_actor(id: tokio::task::Id) -> ActorId {
    ActorId::task(id)
}
