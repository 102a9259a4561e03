//! `nested-acquire`: a task or thread acquires, or waits for, a primitive it already holds.
//!
//! Checked at acquire time, before any wait, against the holds of the acquiring task or
//! thread. On a tokio or parking_lot mutex, and for a write inside a read, it is a certain
//! self-deadlock; on a semaphore a latent one (N holders each waiting for one more permit),
//! and on tokio's write-preferring RwLock a read inside a read deadlocks as soon as a writer
//! queues between them. A latent one is reported even when the acquisition succeeds. Owned
//! guards are not counted (they may have moved to another task), nor `ReentrantMutex`
//! re-entries.
//!
//! A blocking (parking_lot) lock is held on the thread's own stack, so taking it again is
//! nesting. An async one is different: futures polled side by side in one task or `block_on`
//! (`join!`, `select!`, `join_all`, `for_each_concurrent`) each take and release the
//! primitive on their own, which is correct code (a semaphore limiting a `join_all` is its
//! textbook use). For the tokio primitives, then:
//! - a second acquisition at the same call site as the hold is taken for such a sibling (the
//!   same code run concurrently), not reported; a real self-deadlock there still stays
//!   blocked and is reported by `check_persisting` and the deadlock rule;
//! - a wait that can never be granted while the hold lasts (a mutex, a write inside a read,
//!   more permits than remain) is reported by `check_persisting` only if it is still waiting
//!   a watchdog tick later: a sibling's hold ends and the wait is granted, while a true
//!   self-wait never is.

use std::panic::Location;

use crate::analysis::snapshot::State;
use crate::base::clock;
use crate::model::acq::Acq;
use crate::model::finding::{ActorReport, Finding, FindingKind};
use crate::rules::{access, noun, prim_ref};
use crate::state::actor::{self, ActorId};
use crate::state::held::{HoldView, Mode};
use crate::state::prim::{Prim, PrimKind, site_string};

/// The second acquisition must wait: whether it is a timed form, and for how long so far.
#[derive(Clone, Copy)]
struct Wait {
    timed: bool,
    waited_ns: u64,
}

/// What the second acquisition asks for.
#[derive(Clone, Copy)]
struct Ask {
    mode: Mode,
    permits: u32,
    site: &'static Location<'static>,
}

impl From<&Acq> for Ask {
    fn from(acq: &Acq) -> Ask {
        Ask {
            mode: acq.mode(),
            permits: acq.permits(),
            site: acq.site(),
        }
    }
}

/// Whether the two accesses exclude each other outright (or a semaphore has too few permits
/// for both): then the second can never be granted while the first is held.
fn certain(prim: &Prim, ask: Ask, held: Option<&HoldView>) -> bool {
    let held_mode = held.map(|h| h.mode);
    match prim.kind() {
        PrimKind::Semaphore => {
            held.map_or(0, |h| u64::from(h.permits)) + u64::from(ask.permits) > prim.capacity()
        }
        _ => {
            ask.mode.is_exclusive()
                || held_mode.is_none_or(Mode::is_exclusive)
                || (held_mode == Some(Mode::Upgradable) && ask.mode == Mode::Upgradable)
        }
    }
}

fn build(
    prim: &Prim,
    actor: ActorId,
    acq: Ask,
    held: Option<&HoldView>,
    wait: Option<Wait>,
    scope: u32,
) -> Finding {
    let waiting = wait.is_some();
    let timed = wait.is_some_and(|w| w.timed);
    let waited_ns = wait.map_or(0, |w| w.waited_ns);
    let p = prim_ref(prim);
    // Certain when the two accesses exclude each other outright (or a semaphore has too few
    // permits for both); latent when they only collide once others hold or queue.
    let what = if certain(prim, acq, held) && waiting && timed {
        "it waits for itself to release it, so the wait can only time out"
    } else if certain(prim, acq, held) {
        "a certain self-deadlock: it waits for itself to release it"
    } else if prim.kind() == PrimKind::Semaphore {
        "a latent deadlock: once every permit is held by a task waiting for one more, none is ever released"
    } else {
        "a latent deadlock: a writer queued between the two reads blocks the second read, and the writer waits for the first"
    };
    let mut f = Finding::new(
        FindingKind::NestedAcquire,
        // One finding per bug, not per instance: name, creation site and both call sites.
        format!(
            "{}|{}|{}|{}",
            prim.name(),
            site_string(prim.site()),
            held.map(|h| site_string(h.site)).unwrap_or_default(),
            site_string(acq.site)
        ),
        format!(
            "{} {} {} it already holds, at {}: {}",
            actor.describe(),
            if waiting { "waits for" } else { "acquires" },
            noun(&p),
            site_string(acq.site),
            what
        ),
    );
    let now = clock::coarse_now();
    let holds = held
        .map(|h| {
            vec![access(
                p.clone(),
                h.mode,
                h.permits,
                h.site,
                now.saturating_sub(h.since),
            )]
        })
        .unwrap_or_default();
    f.actors.push(ActorReport {
        id: actor.as_u64(),
        name: actor.describe(),
        holds,
        waits: vec![access(
            p.clone(),
            acq.mode,
            acq.permits,
            acq.site,
            waited_ns,
        )],
    });
    f.add_prim(p);
    f.add_scope(prim.scope());
    f.add_scope(scope);
    if let Some(h) = held {
        f.add_scope(h.scope);
    }
    f.fix = match prim.kind() {
        PrimKind::Semaphore => "acquire all the permits the task needs in one `acquire_many`, or release the first permit before asking for another".into(),
        PrimKind::RwLock | PrimKind::BlockingRwLock => "pass the guard you already hold down to the code that needs it instead of locking again (or use read_recursive for parking_lot)".into(),
        _ => "pass the guard you already hold down to the code that needs it instead of locking again".into(),
    };
    f
}

/// `actor` holds `prim` (`held`) and acquires it again (`waiting`: it must wait). Reported
/// now, unless it may be a sibling future's (see the module docs).
#[cold]
pub(crate) fn reacquired(
    prim: &Prim,
    actor: ActorId,
    acq: &Acq,
    held: &HoldView,
    waiting: bool,
    timed: bool,
) -> Option<Finding> {
    let ask = Ask::from(acq);
    // A tokio primitive is acquired by a future, which may have siblings (in a task or in a
    // `block_on`); a blocking lock blocks the thread, so no sibling can run to release it.
    let sibling_may_release = !prim.kind().is_blocking();
    if sibling_may_release && (held.site == ask.site || (waiting && certain(prim, ask, Some(held))))
    {
        return None;
    }
    let scope = actor::current_scope();
    let wait = waiting.then_some(Wait {
        timed,
        waited_ns: 0,
    });
    Some(build(prim, actor, ask, Some(held), wait, scope))
}

/// The watchdog's part: a task still waiting, a tick or more after it began, for a primitive
/// it holds in a way that excludes the wait (a true self-wait: no sibling's hold ended).
pub(crate) fn check_persisting(state: &State, min_wait_ns: u64) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in &state.prims {
        if p.prim.kind().is_blocking() {
            continue; // reported when the wait began
        }
        for w in p.waiters.iter().filter(|w| !w.owned) {
            let age = state.wait_age(w);
            if age < min_wait_ns {
                continue;
            }
            let ask = Ask {
                mode: w.mode,
                permits: w.permits,
                site: w.site,
            };
            let Some(h) = p
                .holds
                .iter()
                .find(|h| h.actor == w.actor && !h.movable() && certain(&p.prim, ask, Some(h)))
            else {
                continue;
            };
            // The state is read waiters first, holds after: a wait granted in between shows
            // as its own hold. Still queued now, after the hold was read, it was queued while
            // the hold existed: a real self-wait.
            if !p.prim.waiters.lock().contains(w.seq) {
                continue;
            }
            out.push(build(
                &p.prim,
                w.actor,
                ask,
                Some(h),
                Some(Wait {
                    timed: w.timed,
                    waited_ns: age,
                }),
                w.scope,
            ));
        }
    }
    out
}
