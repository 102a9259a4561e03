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
    state
        .joins
        .iter()
        .filter(|j| !j.targets.is_empty())
        .map(|j| {
            let moved_on = latest
                .get(&j.waiter.as_u64())
                .is_some_and(|&t| t > j.since_ns);
            (j, moved_on)
        })
        .collect()
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
