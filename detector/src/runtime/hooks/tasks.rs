//! What the hooks do for blocking guards held by tokio tasks (`blocking-in-async`), and the
//! hooks tokio's task callbacks call (`tokio_unstable` runtimes instrumented by lockscope).

use crate::base::clock;
use crate::rules;
use crate::state::actor::{self, ActorId};
use crate::state::held::{self, EntryRef, FLAG_BLOCKING_IN_TASK, FLAG_PINNED_THREAD};
use crate::state::prim::Prim;
use crate::state::tls::{LOCAL, Local};

use super::enabled;

// --- blocking guards held by tasks ------------------------------------------------------------

/// A task takes a blocking guard on this thread: count it, and mark it pinned to the thread
/// when the runtime is a current-thread one (the task can only resume here).
#[cold]
pub(super) fn blocking_flags(l: &Local, actor: ActorId) -> u8 {
    l.blocking_in_task.set(l.blocking_in_task.get() + 1);
    l.blocking_task.set(actor.as_u64());
    // The flavor of the runtime driving this thread, cached: a thread serves one runtime.
    let mut flavor = l.flavor.get();
    if flavor == 0 {
        flavor = match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::CurrentThread) => 1,
            _ => 2,
        };
        l.flavor.set(flavor);
    }
    FLAG_BLOCKING_IN_TASK | if flavor == 1 { FLAG_PINNED_THREAD } else { 0 }
}

/// Whether `actor` holds a blocking guard acquired on this thread.
pub(super) fn blocking_held_here(actor: ActorId) -> Option<held::HoldView> {
    if LOCAL.try_with(|l| l.blocking_in_task.get()).unwrap_or(0) == 0 {
        return None;
    }
    let mut found = None;
    held::for_each_mine(actor.as_u64(), |h| {
        if h.flags & FLAG_BLOCKING_IN_TASK != 0 {
            found.get_or_insert(h);
        }
    });
    found
}

/// Another task is running on a thread where a task holds a blocking guard: that guard is
/// held across an `.await`.
#[cold]
pub(super) fn check_blocking_neighbours(l: &Local, actor: ActorId) {
    if l.blocking_task.get() != actor.as_u64() {
        crate::report::finding::report_all(rules::blocking_in_async::check_neighbours(actor));
    }
}

#[cold]
pub(super) fn blocking_released(prim: &Prim, e: &EntryRef) {
    let here = actor::thread_seq();
    let acquired_on = e.thread();
    if here == acquired_on {
        let _ = LOCAL.try_with(|l| {
            l.blocking_in_task
                .set(l.blocking_in_task.get().saturating_sub(1));
        });
    } else if let Some(v) = e.view() {
        crate::report::finding::report_all(rules::blocking_in_async::moved_holding(prim, &v, here));
    }
}

// --- task hooks (tokio_unstable runtimes instrumented by lockscope) ---------------------------

/// A task's poll ended (tokio's `on_after_task_poll`). A task that still holds a blocking
/// guard taken on this thread has yielded with it: a `blocking-in-async` at once, no
/// contention needed. One thread-local read when it holds none.
#[inline]
pub fn task_poll_ended(id: tokio::task::Id) {
    if LOCAL.try_with(|l| l.blocking_in_task.get()).unwrap_or(0) == 0 || !enabled() {
        return;
    }
    task_poll_ended_slow(ActorId::task(id));
}

#[cold]
fn task_poll_ended_slow(actor: ActorId) {
    if let Some(h) = blocking_held_here(actor) {
        crate::report::finding::report_all(rules::blocking_in_async::yielded_holding(&h));
    }
}

/// A task ended (tokio's `on_task_terminate`): whatever it still holds has outlived it (see
/// [`rules::task_ended`]).
pub fn task_ended(id: tokio::task::Id) {
    if enabled() {
        crate::state::ended::ended(ActorId::task(id), clock::coarse_now());
    }
}
