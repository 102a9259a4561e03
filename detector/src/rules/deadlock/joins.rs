//! Joins in the deadlock rule: the model's stand-ins for "the end of this task or thread"
//! (see [`waitfor::join_prim`]), the links they make between blocked actors, and their words
//! in a report.

use std::collections::{BTreeMap, HashMap};

use crate::analysis::graph::waitfor::{self, MPrim};
use crate::analysis::snapshot::State;
use crate::base::names;
use crate::model::finding::{Access, PrimRef};
use crate::state::actor::ActorId;
use crate::state::joins::JoinView;
use crate::state::prim;

/// Ids of the model's join stand-ins count down from here, far from primitives' ids (which
/// count up from 1).
const FIRST_ID: u64 = u64::MAX;

/// The joins of `state` that the model may count on: those whose target is known. A join
/// whose waiter has taken a hold or begun another wait since the join began is still in the
/// list, but marked as one its waiter may leave (`true`): the waiter ran after the join began,
/// so it is not parked on it alone (a `select!` or `join!` with other branches, or a handle
/// polled once by reference and left behind); counting it as a wait that can end by itself
/// may miss a deadlock, never invent one.
pub(super) fn live(state: &State) -> Vec<(&JoinView, bool)> {
    // Most analyses see no join: skip the walk over every hold and waiter.
    if state.joins.is_empty() {
        return Vec::new();
    }
    let latest = latest_activity(state);
    state
        .joins
        .iter()
        .filter(|j| !j.targets.is_empty())
        .map(|j| (j, moved_on(&latest, j.waiter, j.since_ns)))
        .collect()
}

/// When each actor last began a hold or a wait (precise clock, ns): raw actor id -> time. An
/// actor with an open wait in progress (a receive, a `Notify`, a `Barrier`: whose end the
/// model cannot tell) counts as active at every moment: whatever precise wait it has beside
/// it, it may leave by the open one (a `select!` of a join or a send and a receive).
pub(super) fn latest_activity(state: &State) -> HashMap<u64, u64> {
    let mut latest: HashMap<u64, u64> = HashMap::new();
    let mut note = |actor: ActorId, at: u64| {
        let e = latest.entry(actor.as_u64()).or_default();
        *e = (*e).max(at);
    };
    for p in &state.prims {
        for h in p.holds.iter().filter(|h| !h.movable()) {
            note(h.actor, h.since);
        }
        for w in &p.waiters {
            note(w.actor, w.since_ns);
        }
    }
    for j in &state.joins {
        note(j.waiter, j.since_ns);
    }
    for c in &state.chan_waits {
        let open = c.op != crate::state::channels::ChanOp::Send;
        note(c.waiter, if open { u64::MAX } else { c.since_ns });
    }
    latest
}

/// Whether `waiter`, whose precise wait began at `since_ns`, has done anything since (see
/// [`latest_activity`]): a wait it may leave.
pub(super) fn moved_on(latest: &HashMap<u64, u64>, waiter: ActorId, since_ns: u64) -> bool {
    latest.get(&waiter.as_u64()).is_some_and(|&t| t > since_ns)
}

/// The model's stand-ins for the joins of `state`: one per joined task or thread, held by it,
/// waited for by its joiners (a `JoinSet`'s joiner waits for each of its tasks at once, and
/// goes on when any one ends).
pub(super) fn model(state: &State) -> Vec<MPrim> {
    let mut by_target: BTreeMap<u64, Vec<(u64, Option<u64>, bool)>> = BTreeMap::new();
    for (j, moved_on) in live(state) {
        let blocks = j.blocking.then_some(j.thread);
        for (t, _) in &j.targets {
            by_target
                .entry(t.as_u64())
                .or_default()
                .push((j.waiter.as_u64(), blocks, moved_on));
        }
    }
    by_target
        .into_iter()
        .enumerate()
        .map(|(i, (target, joiners))| {
            let pinned = ActorId::from_u64(target).and_then(ActorId::thread_seq);
            let mut p = waitfor::join_prim(
                FIRST_ID - i as u64,
                target,
                pinned,
                joiners.iter().map(|(w, b, _)| (*w, *b)),
            );
            for (w, (_, _, moved_on)) in p.waiters.iter_mut().zip(&joiners) {
                w.timed = *moved_on;
            }
            p
        })
        .collect()
}

/// `join of task 7 (spawned at src/main.rs:10:17)`.
pub(super) fn noun(target: ActorId, spawned_at: &std::panic::Location<'_>) -> String {
    format!(
        "join of {} (spawned at {})",
        target.describe(),
        prim::site_string(spawned_at)
    )
}

/// The fix of a deadlock through a join.
pub(super) const FIX: &str = "do not hold a lock while awaiting a task or joining a thread that needs it: release the guard before the join, or move the work that needs the lock out of the task";

/// The summary of a deadlock through joins: `who` (`n` actors) wait for the primitives
/// `locks` (nouns) and the joins `joined` (nouns).
pub(super) fn summary(who: &str, n: usize, locks: &[String], joined: &[String]) -> String {
    let joined = joined.join(", ");
    match (n, locks.is_empty()) {
        (1, _) => format!("{who} waits for {joined}, its own end, and can never proceed"),
        (_, true) => {
            format!("{who} can never proceed: each waits for {joined}, the end of another of them")
        }
        (_, false) => format!(
            "{who} can never proceed: each waits for {} held by another of them, or for {joined}, the end of another of them",
            locks.join(", ")
        ),
    }
}

/// A join as a report's wait: kind `join`, named after what it joins (`target`), "created"
/// at its spawn site, at the join's call site.
pub(super) fn access(
    j: &JoinView,
    target: String,
    spawned_at: &'static std::panic::Location<'static>,
    for_ns: u64,
) -> Access {
    Access {
        primitive: PrimRef {
            id: 0,
            name: target,
            kind: names::KIND_JOIN,
            created_at: prim::site_string(spawned_at),
            instance: 0,
        },
        mode: names::KIND_JOIN,
        permits: 1,
        site: prim::site_string(j.site),
        for_ms: for_ns / 1_000_000,
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::Rule;
    use crate::rules::deadlock::Deadlock;
    use crate::rules::testkit::{
        MS, Scope, at, behind_a_lock_cycle, deadlocks_confirmed, hold, join, state, task, wait,
    };
    use crate::state::held::Mode;
    use crate::state::prim::PrimKind;

    /// Task 1 holds `m` and joins task 2, which waits for `m`: a deadlock, worded with the
    /// join, its spawn site, and the fix for it.
    #[test]
    fn a_lock_held_across_a_join_is_reported_naming_the_join() {
        let scope = Scope::arm(10_000, 10_000, None);
        let m = scope.prim("dlj/m", PrimKind::Mutex, 1);
        let mut s = state(
            vec![at(
                &m,
                vec![hold(&m, task(1), Mode::Exclusive, 1, 10 * MS)],
                vec![wait(task(2), 1, Mode::Exclusive, 1, 30 * MS)],
            )],
            &scope,
            1_000 * MS,
        );
        s.joins = vec![join(7, task(1), vec![task(2)], 20 * MS)];
        let f = deadlocks_confirmed(&s);
        assert_eq!(f.len(), 1, "{f:#?}");
        let here = crate::state::prim::site_string(s.joins[0].site);
        assert_eq!(
            f[0].summary,
            format!(
                "2 tasks can never proceed: each waits for mutex \"dlj/m\" held by another of them, or for join of task 2 (spawned at {here}), the end of another of them"
            )
        );
        assert!(f[0].key().ends_with(",j7"), "{}", f[0].key());
        assert_eq!(f[0].fix, super::FIX);
        let text = f[0].to_string();
        assert!(
            text.contains(&format!(
                "    waits for join of task 2 (spawned at {here}) for 980 ms, at {here}"
            )),
            "{text}"
        );
        // The join is no primitive of the finding.
        assert_eq!(f[0].primitives.len(), 1);
    }

    /// A task joining one of a lock cycle's tasks is stuck behind it, but no part of it:
    /// counted, and its join is not named among what the knot waits for (nor is the fix the
    /// join's). A joiner that ran since its join began (it took a hold since: a `select!`)
    /// may leave the join: it is not even behind.
    #[test]
    fn a_join_behind_a_lock_cycle_is_counted_not_named() {
        behind_a_lock_cycle("dlj", 'j', |s, seq| {
            s.joins = vec![join(seq, task(3), vec![task(1)], 20 * MS)];
        });
    }

    /// The same books, but the joiner took its hold after the join began (it ran since: a
    /// `select!` or `join!`), or the joined thread has not started (no target yet), or the
    /// joined task waits for nothing: no deadlock.
    #[test]
    fn a_join_left_behind_an_unknown_target_or_a_free_one_is_no_deadlock() {
        let scope = Scope::arm(10_000, 10_000, None);
        let m = scope.prim("dlj/n", PrimKind::Mutex, 1);
        let books = |hold_since: u64, waiter: bool| {
            let waits = if waiter {
                vec![wait(task(2), 1, Mode::Exclusive, 1, 30 * MS)]
            } else {
                vec![]
            };
            state(
                vec![at(
                    &m,
                    vec![hold(&m, task(1), Mode::Exclusive, 1, hold_since)],
                    waits,
                )],
                &scope,
                1_000 * MS,
            )
        };
        let mut later = books(40 * MS, true);
        later.joins = vec![join(8, task(1), vec![task(2)], 20 * MS)];
        assert!(deadlocks_confirmed(&later).is_empty());
        let mut unknown = books(10 * MS, true);
        unknown.joins = vec![join(9, task(1), vec![], 20 * MS)];
        assert!(Deadlock::default().check(&unknown).is_empty());
        let mut free = books(10 * MS, false);
        free.joins = vec![join(10, task(1), vec![task(2)], 20 * MS)];
        assert!(Deadlock::default().check(&free).is_empty());
    }
}
