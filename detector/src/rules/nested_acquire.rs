//! `nested-acquire`: a task or thread acquires, or waits for, a primitive it already holds.
//!
//! Checked at acquire time, before any wait, against the holds of the acquiring task or
//! thread. On a tokio or parking_lot mutex, and for a write inside a read, it is a certain
//! self-deadlock; on a semaphore a latent one (N holders each waiting for one more permit),
//! and on tokio's write-preferring RwLock a read inside a read deadlocks as soon as a writer
//! queues between them. A latent one is reported even when the acquisition succeeds. Owned
//! guards are not counted (they may have moved to another task), nor `ReentrantMutex`
//! re-entries. The check (`reported`) runs inside the acquirer's critical section; the
//! finding (`sighted`) is built off it (see `report::pending`).
//!
//! A blocking (parking_lot) lock is held on the thread's own stack, so taking it again is
//! nesting. An async one is different: futures polled side by side in one task or `block_on`
//! (`join!`, `select!`, `join_all`, `for_each_concurrent`) each take and release the
//! primitive on their own, which is correct code (a semaphore limiting a `join_all` is its
//! textbook use). For the tokio primitives, then:
//! - a second acquisition at the same call site as the hold is taken for such a sibling (the
//!   same code run concurrently), not reported; a real self-deadlock there still stays
//!   blocked and is reported by `Persisting` and the deadlock rule;
//! - a wait that can never be granted while the hold lasts (a mutex, a write inside a read,
//!   more permits than remain) is reported by `Persisting` only if it is still waiting a
//!   watchdog tick later, as the watchdog's own looks saw: a sibling's hold ends and the wait
//!   is granted, while a true self-wait never is.

use std::collections::HashMap;
use std::panic::Location;

use crate::analysis::snapshot::{PrimState, State};
use crate::base::clock;
use crate::model::acq::Acq;
use crate::model::finding::{ActorReport, Finding, FindingKind};
use crate::rules::{access, noun, prim_ref};
use crate::state::actor::ActorId;
use crate::state::held::{HoldView, Mode};
use crate::state::prim::{Prim, PrimKind, site_string};
use crate::state::wait::WaiterRec;

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

/// The words that mark a latent nested acquisition in its summary: the start of both latent
/// wordings in [`build`] (stress mode directs its pauses at such a finding's site).
pub(crate) const LATENT: &str = "a latent deadlock";

/// The acquirer of a nested acquisition: its id, and its name as told when the acquisition was
/// seen (a thread is named only while it lives, and the finding may be built after it ended).
pub(crate) struct Acquirer {
    id: ActorId,
    name: String,
}

impl Acquirer {
    /// `id`, named now.
    pub(crate) fn now(id: ActorId) -> Acquirer {
        Acquirer {
            id,
            name: id.describe(),
        }
    }
}

/// The finding for `who` (of test scope `scope`) asking `acq` of `prim`, which it holds as
/// `held`, seen at `now` (coarse ns: the hold's age is told as of then).
fn build(
    prim: &Prim,
    who: &Acquirer,
    acq: Ask,
    held: Option<&HoldView>,
    wait: Option<Wait>,
    (scope, now): (u32, u64),
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
            who.name,
            if waiting { "waits for" } else { "acquires" },
            noun(&p),
            site_string(acq.site),
            what
        ),
    );
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
        id: who.id.as_u64(),
        name: who.name.clone(),
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
        PrimKind::OnceCell => "an initialiser must not wait for its own cell (tokio deadlocks there): compute the value without it, or split the cell in two".into(),
        PrimKind::Semaphore => "acquire all the permits the task needs in one `acquire_many`, or release the first permit before asking for another".into(),
        PrimKind::RwLock | PrimKind::BlockingRwLock => "pass the guard you already hold down to the code that needs it instead of locking again (or use read_recursive for parking_lot)".into(),
        _ => "pass the guard you already hold down to the code that needs it instead of locking again".into(),
    };
    f
}

/// Whether a hold `held` of `prim` acquired again as `acq` (`waiting`: it must wait) is
/// reported at the acquisition: not when it may be a sibling future's (see the module docs).
/// A cheap test, made on the acquiring thread before anything is recorded.
pub(crate) fn reported(prim: &Prim, acq: &Acq, held: &HoldView, waiting: bool) -> bool {
    let ask = Ask::from(acq);
    // A tokio primitive is acquired by a future, which may have siblings (in a task or in a
    // `block_on`); a blocking lock blocks the thread, so no sibling can run to release it.
    let sibling_may_release = !prim.kind().is_blocking();
    !(sibling_may_release && (held.site == ask.site || (waiting && certain(prim, ask, Some(held)))))
}

/// `actor` holds `prim` (`held`) and acquires it again (`waiting`: it must wait), on this
/// thread now: the finding, unless it may be a sibling future's (see [`reported`]). The
/// hooks hand the sighting on instead (see `runtime::hooks::order`); this builds it at once.
#[cfg(test)]
pub(crate) fn reacquired(
    prim: &Prim,
    actor: ActorId,
    acq: &Acq,
    held: &HoldView,
    waiting: bool,
    timed: bool,
) -> Option<Finding> {
    reported(prim, acq, held, waiting).then(|| {
        let at = (crate::state::actor::current_scope(), clock::coarse_now());
        sighted(prim, &Acquirer::now(actor), acq, held, (waiting, timed), at)
    })
}

/// The finding for a reported nested acquisition (see [`reported`]), sighted by `who` in
/// test scope `scope` at `now` (coarse ns): built wherever the sighting is reported from.
#[cold]
pub(crate) fn sighted(
    prim: &Prim,
    who: &Acquirer,
    acq: &Acq,
    held: &HoldView,
    (waiting, timed): (bool, bool),
    (scope, now): (u32, u64),
) -> Finding {
    let wait = waiting.then_some(Wait {
        timed,
        waited_ns: 0,
    });
    build(prim, who, Ask::from(acq), Some(held), wait, (scope, now))
}

/// The watchdog's part: a task still waiting, a tick or more after it began, for a primitive
/// it holds in a way that excludes the wait (a true self-wait: no sibling's hold ended).
///
/// "A tick after" is what the watchdog saw, not only what the wait's start says: an untimed
/// async wait starts on the published clock, up to a publish period behind, so a sibling's
/// wait begun a millisecond before a look could look a tick old at once. A wait is reported
/// once a look a tick or more earlier saw it too (the same wait: its number).
#[derive(Default)]
pub(crate) struct Persisting {
    /// The candidate waits of the last look, `(primitive, wait number)`, with when (the
    /// analysis's precise clock, ns) a look first saw each.
    seen: HashMap<(u64, u64), u64>,
}

impl Persisting {
    /// The self-waits of `state` that have lasted `min_wait_ns` (a tick), as above.
    pub(crate) fn check(&mut self, state: &State, min_wait_ns: u64) -> Vec<Finding> {
        let mut next = HashMap::new();
        let out = persisting(state, min_wait_ns, |key| {
            let first = *self.seen.get(&key).unwrap_or(&state.now_precise);
            next.insert(key, first);
            state.now_precise.saturating_sub(first)
        });
        self.seen = next;
        out
    }
}

/// The self-waits of `state` that `watched` says the looks have seen for `min_wait_ns` or more
/// (it is told each candidate, `(primitive, wait number)`).
fn persisting(
    state: &State,
    min_wait_ns: u64,
    mut watched: impl FnMut((u64, u64)) -> u64,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in &state.prims {
        if p.prim.kind().is_blocking() {
            continue; // reported when the wait began
        }
        for w in p.waiters.iter().filter(|w| !w.owned) {
            let age = state.wait_age(w);
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
            // Watched for a tick is old by its start too: a wait's start is never after the
            // first look that saw it.
            if watched((p.prim.id().0, w.seq)) < min_wait_ns {
                continue;
            }
            // The state is read waiters first, holds after: a wait granted in between shows
            // as its own hold. Still queued now, after the hold was read, it was queued while
            // the hold existed: a real self-wait.
            if !crate::state::wait::still_waiting(&p.prim, w.seq) {
                continue;
            }
            out.push(build(
                &p.prim,
                &Acquirer::now(w.actor),
                ask,
                Some(h),
                Some(Wait {
                    timed: w.timed,
                    waited_ns: age,
                }),
                (w.scope, clock::coarse_now()),
            ));
        }
    }
    out
}

/// The stuck-queue rule's part: `w` has waited past the stuck threshold, with nothing
/// granted, for semaphore `p`, every outstanding permit of which its own task acquired (owned
/// permits included) and which can never grant it while they are held: a pool of one checked
/// out twice by one task.
pub(crate) fn checked_out_again(state: &State, p: &PrimState, w: &WaiterRec) -> Finding {
    let total: u32 = p.holds.iter().map(|h| h.permits).sum();
    let owned = p.holds.iter().any(HoldView::movable);
    // The first hold, standing for them all.
    let held = HoldView {
        permits: total,
        ..p.holds[0]
    };
    let ask = Ask {
        mode: w.mode,
        permits: w.permits,
        site: w.site,
    };
    let wait = Wait {
        timed: w.timed,
        waited_ns: state.wait_age(w),
    };
    let at = (w.scope, clock::coarse_now());
    let who = Acquirer::now(w.actor);
    let mut f = build(&p.prim, &who, ask, Some(&held), Some(wait), at);
    f.details.push(format!(
        "it acquired every permit held ({total} of {}){} and nothing was granted since it began to wait: no other task holds one to release",
        p.capacity,
        if owned {
            ", owned ones included (the books keep an owned permit as its acquirer's until it is dropped)"
        } else {
            ""
        },
    ));
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testkit::{MS, Scope, at, hold, state, task, wait};
    use crate::state::held::FLAG_MOVABLE;

    fn acq(permits: u32, mode: Mode) -> Acq {
        Acq::new(Location::caller(), permits, mode)
    }

    /// Which second accesses can never be granted while the first is held.
    #[test]
    fn certain_when_the_accesses_exclude_each_other_or_permits_run_out() {
        let scope = Scope::arm(10_000, 10_000, None);
        let rw = scope.prim("nested/rw", PrimKind::BlockingRwLock, 1);
        let sem = scope.prim("nested/sem", PrimKind::Semaphore, 3);
        let holding = |p: &Prim, mode, permits| hold(p, task(1), mode, permits, 0);
        let ask = |mode, permits| Ask::from(&acq(permits, mode));
        use Mode::*;
        let cases = [
            (Shared, Shared, false),
            (Shared, Upgradable, false),
            (Upgradable, Shared, false),
            (Upgradable, Upgradable, true),
            (Shared, Exclusive, true),
            (Exclusive, Shared, true),
            (SharedRecursive, Shared, false),
        ];
        for (held, asked, want) in cases {
            let h = holding(&rw, held, 1);
            assert_eq!(
                certain(&rw, ask(asked, 1), Some(&h)),
                want,
                "{held:?} then {asked:?}"
            );
        }
        assert!(certain(&rw, ask(Shared, 1), None));
        // A semaphore: certain only when the two asks together pass its permits.
        let h = holding(&sem, Permits, 1);
        assert!(!certain(&sem, ask(Permits, 2), Some(&h)));
        assert!(certain(&sem, ask(Permits, 3), Some(&h)));
        assert!(!certain(&sem, ask(Permits, 3), None));
        assert!(certain(&sem, ask(Permits, 4), None));
    }

    /// A blocking lock taken again by its holder is reported at once, in words that say
    /// whether it waits, and whether the wait can only time out.
    #[test]
    fn a_blocking_lock_taken_again_by_its_holder_is_reported_at_once() {
        let scope = Scope::arm(10_000, 10_000, None);
        let m = scope.prim("nested/pl", PrimKind::BlockingMutex, 1);
        let h = hold(&m, task(1), Mode::Exclusive, 1, 0);
        let again = acq(1, Mode::Exclusive);
        let site = site_string(again.site());
        let start =
            format!("task 1 waits for blocking_mutex \"nested/pl\" it already holds, at {site}: ");
        let f = reacquired(&m, task(1), &again, &h, true, false).expect("reported");
        assert_eq!(f.kind, FindingKind::NestedAcquire);
        assert_eq!(
            f.summary,
            format!("{start}a certain self-deadlock: it waits for itself to release it")
        );
        assert_eq!(
            f.fix,
            "pass the guard you already hold down to the code that needs it instead of locking again"
        );
        let holds: Vec<usize> = f.actors.iter().map(|a| a.holds.len()).collect();
        assert_eq!(holds, [1]);
        let f = reacquired(&m, task(1), &again, &h, true, true).expect("reported");
        assert_eq!(
            f.summary,
            format!("{start}it waits for itself to release it, so the wait can only time out")
        );
        // Taken at once (a try_lock that succeeded on a reentrant one, say): "acquires".
        let f = reacquired(&m, task(1), &again, &h, false, false).expect("reported");
        assert!(
            f.summary.starts_with("task 1 acquires blocking_mutex"),
            "{}",
            f.summary
        );
        // The same site counts for a blocking lock: no sibling future can release it.
        let same = Acq::new(h.site, 1, Mode::Exclusive);
        assert!(reacquired(&m, task(1), &same, &h, true, false).is_some());
    }

    /// A tokio primitive taken again may be a sibling future's: at the same site, or as a
    /// wait that can never be granted, it is left to the watchdog; a latent one is reported.
    #[test]
    fn a_tokio_primitive_taken_again_is_reported_only_when_latent() {
        let scope = Scope::arm(10_000, 10_000, None);
        let sem = scope.prim("nested/tokio_sem", PrimKind::Semaphore, 3);
        let rw = scope.prim("nested/tokio_rw", PrimKind::RwLock, 32);
        let h = hold(&sem, task(2), Mode::Permits, 1, 0);
        let same = Acq::new(h.site, 1, Mode::Permits);
        assert!(reacquired(&sem, task(2), &same, &h, false, false).is_none());
        // Two more permits while one is held: certain; waiting, it may be a sibling's.
        let two = acq(3, Mode::Permits);
        assert!(reacquired(&sem, task(2), &two, &h, true, false).is_none());
        let one = acq(1, Mode::Permits);
        let site = site_string(one.site());
        let f = reacquired(&sem, task(2), &one, &h, false, false).expect("latent");
        assert_eq!(
            f.summary,
            format!(
                "task 2 acquires semaphore \"nested/tokio_sem\" it already holds, at {site}: a latent deadlock: once every permit is held by a task waiting for one more, none is ever released"
            )
        );
        assert!(
            f.fix
                .starts_with("acquire all the permits the task needs in one `acquire_many`")
        );
        let f = reacquired(&sem, task(2), &one, &h, true, false).expect("latent, waiting");
        assert!(f.summary.starts_with("task 2 waits for semaphore"));
        let r = hold(&rw, task(3), Mode::Shared, 1, 0);
        let read = acq(1, Mode::Shared);
        let f = reacquired(&rw, task(3), &read, &r, false, false).expect("latent");
        assert!(
            f.summary.ends_with("a latent deadlock: a writer queued between the two reads blocks the second read, and the writer waits for the first"),
            "{}",
            f.summary
        );
        assert!(f.fix.ends_with("(or use read_recursive for parking_lot)"));
        // An initialiser waiting for its own cell gets the cell's fix.
        let cell = scope.prim("nested/tokio_cell", PrimKind::OnceCell, 1);
        let init = hold(&cell, task(3), Mode::Exclusive, 1, 0);
        let again = acq(1, Mode::Exclusive);
        let f = reacquired(&cell, task(3), &again, &init, false, false).expect("reported");
        assert!(
            f.fix
                .starts_with("an initialiser must not wait for its own cell"),
            "{}",
            f.fix
        );
    }

    /// The watchdog's part: a task still queued, a tick after it began, for a tokio primitive
    /// it holds in a way that excludes the wait.
    #[test]
    fn a_self_wait_still_queued_a_tick_later_is_reported() {
        let scope = Scope::arm(10_000, 10_000, None);
        let m = scope.prim("nested/persist", PrimKind::Mutex, 1);
        let pl = scope.prim("nested/persist_pl", PrimKind::BlockingMutex, 1);
        let queue = |p: &Prim, w: &mut crate::state::wait::WaiterRec| {
            w.seq = p.waiters.lock().push(w.clone());
        };
        let mut w = wait(task(4), 0, Mode::Exclusive, 1, 0);
        queue(&m, &mut w);
        let site = site_string(w.site);
        let mut owned = wait(task(4), 0, Mode::Exclusive, 1, 0);
        owned.owned = true;
        queue(&m, &mut owned);
        let mut other = wait(task(5), 0, Mode::Exclusive, 1, 0);
        queue(&m, &mut other);
        let mut pw = wait(task(6), 0, Mode::Exclusive, 1, 0);
        queue(&pl, &mut pw);
        let mut moved = hold(&m, task(5), Mode::Exclusive, 1, 0);
        moved.flags |= FLAG_MOVABLE;
        let prims = || {
            vec![
                at(
                    &m,
                    vec![hold(&m, task(4), Mode::Exclusive, 1, 0), moved],
                    vec![w.clone(), owned.clone(), other.clone()],
                ),
                at(
                    &pl,
                    vec![hold(&pl, task(6), Mode::Exclusive, 1, 0)],
                    vec![pw.clone()],
                ),
            ]
        };
        let mut rule = Persisting::default();
        // 150 ms old by its start, but the first look to see it: not watched for a tick.
        let s = state(prims(), &scope, 150 * MS);
        assert!(rule.check(&s, 150 * MS).is_empty(), "first look");
        let s = state(prims(), &scope, 299 * MS);
        assert!(rule.check(&s, 150 * MS).is_empty(), "watched for 149 ms");
        let s = state(prims(), &scope, 300 * MS);
        assert!(
            Persisting::default().check(&s, 150 * MS).is_empty(),
            "a rule that never looked before"
        );
        let f = rule.check(&s, 150 * MS);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].summary,
            format!(
                "task 4 waits for mutex \"nested/persist\" it already holds, at {site}: a certain self-deadlock: it waits for itself to release it"
            )
        );
        assert_eq!(f[0].actors[0].waits[0].for_ms, 300);
        // Granted since (no longer queued): nothing.
        m.waiters.lock().remove(w.seq);
        assert!(rule.check(&s, 150 * MS).is_empty());
    }
}
