//! `starvation`: a waiter waiting past the starvation threshold while others keep acquiring
//! ahead of it, or a holder keeping a contended primitive past the threshold while others get
//! through. Primitives that are stuck or deadlocked are left to those rules.
//!
//! A waiter is starved when it was bypassed: the primitive granted more acquisitions since
//! this rule first saw it than there were waiters queued ahead of it then. A long FIFO queue
//! that drains in order (tokio's primitives) is queueing, not starvation; a parking_lot lock
//! taken again and again by threads that never queued, or a stream of `read_recursive`
//! readers overtaking a writer, is. `add_permits` grants nobody: it is not a bypass.

use std::collections::{HashMap, HashSet};

use crate::analysis::snapshot::State;
use crate::model::finding::{Finding, FindingKind};
use crate::rules::{Rule, Verdict, holder, noun, prim_ref, waiter};
use crate::state::prim::site_string;

/// What the rule noted when it first saw a waiter (at most a tick late).
#[derive(Clone, Copy)]
struct FirstSeen {
    /// The primitive's acquisitions granted so far.
    granted: u64,
    /// Waiters queued ahead of it.
    ahead: u64,
    /// The last check that saw it still waiting (see [`Starvation::check`]).
    check: u64,
}

/// Waiters that two tasks start within this long (1 ms) of each other may be queued in either
/// order: the books record a wait just after the primitive queued it, on any worker.
const ORDER_SLACK_NS: u64 = 1_000_000;

/// The wait starts of a primitive's waiters, sorted, for [`ahead_of`].
fn starts(all: &[crate::state::wait::WaiterRec]) -> Vec<u64> {
    let mut v: Vec<u64> = all.iter().map(|w| w.since_ns).collect();
    v.sort_unstable();
    v
}

/// How many of the waiters whose sorted starts are `starts` may be queued ahead of `w` (one of
/// them): those that began waiting before it, or about when it did (the books and the
/// primitive may disagree on their order). A binary search, so that a tick over a million
/// new waiters is O(n log n), not O(n^2) (which kept the watchdog busy for the whole of a
/// million-task backpressure run).
fn ahead_of(starts: &[u64], w: &crate::state::wait::WaiterRec) -> u64 {
    let bound = w.since_ns.saturating_add(ORDER_SLACK_NS);
    let n = starts.partition_point(|&s| s < bound) as u64;
    // `w` itself is among them unless its start is the bound (saturated).
    n - u64::from(w.since_ns < bound)
}

#[derive(Default)]
pub(crate) struct Starvation {
    pub(crate) skip_prims: HashSet<u64>,
    pub(crate) skip_waits: HashSet<(u64, u64)>,
    pub(crate) active: HashSet<String>,
    first_seen: HashMap<(u64, u64), FirstSeen>,
    /// Checks so far: the waiters seen by the latest are those whose `check` is this.
    checks: u64,
    /// Per primitive held or waited for: its acquisitions granted at the previous check.
    last_granted: HashMap<u64, u64>,
}

impl Rule for Starvation {
    fn kind(&self) -> FindingKind {
        FindingKind::Starvation
    }

    fn check(&mut self, state: &State) -> Vec<Verdict> {
        let mut out = Vec::new();
        self.active.clear();
        // Updated in place (new waiters added, gone ones dropped), not rebuilt: with a million
        // tasks queued, a second map of them all was tens of megabytes at each tick.
        self.checks += 1;
        let check = self.checks;
        for p in &state.prims {
            // Sorted once per primitive, and only if a waiter is new.
            let mut sorted = None;
            for w in &p.waiters {
                let first = self
                    .first_seen
                    .entry((p.prim.id().0, w.seq))
                    .or_insert_with(|| {
                        let starts = sorted.get_or_insert_with(|| starts(&p.waiters));
                        FirstSeen {
                            granted: p.granted,
                            ahead: ahead_of(starts, w),
                            check,
                        }
                    });
                first.check = check;
            }
        }
        self.first_seen.retain(|_, f| f.check == check);
        let granted_before = std::mem::take(&mut self.last_granted);
        for p in state
            .prims
            .iter()
            .filter(|p| !(p.waiters.is_empty() && p.holds.is_empty()))
        {
            self.last_granted.insert(p.prim.id().0, p.granted);
        }
        for p in &state.prims {
            let id = p.prim.id().0;
            // A once-cell grants once: its waiters are never bypassed, and its initialiser's
            // hold is the initialisation itself (see `PrimKind::is_once_cell`).
            if p.waiters.is_empty()
                || p.closed
                || p.prim.kind().is_once_cell()
                || self.skip_prims.contains(&id)
            {
                continue;
            }
            let mut scopes: Vec<u32> = p.waiters.iter().map(|w| w.scope).collect();
            scopes.push(p.prim.scope());
            let threshold = crate::base::config::for_scopes(&scopes)
                .starvation
                .as_nanos() as u64;
            let r = prim_ref(&p.prim);
            // Whether it granted anything since the previous check.
            let served = granted_before.get(&id).is_some_and(|&g| p.granted > g);
            // Waiters bypassed past the threshold.
            for w in &p.waiters {
                if self.skip_waits.contains(&(id, w.seq)) || state.wait_age(w) < threshold {
                    continue;
                }
                let Some(first) = self.first_seen.get(&(id, w.seq)).copied() else {
                    continue;
                };
                // Grants since it was first seen: to those queued ahead of it, or bypasses.
                let granted = p.granted.saturating_sub(first.granted);
                let bypassed = granted.saturating_sub(first.ahead);
                if bypassed == 0 {
                    continue;
                }
                let mut f = Finding::new(
                    FindingKind::Starvation,
                    format!("{id}|wait|{}", site_string(w.site)),
                    format!(
                        "{} has waited {} ms for {} at {} while it was granted {} time{} to others that were not queued ahead of it",
                        w.actor.describe(),
                        state.wait_age(w) / 1_000_000,
                        noun(&r),
                        site_string(w.site),
                        bypassed,
                        if bypassed == 1 { "" } else { "s" }
                    ),
                );
                f.actors.push(waiter(&r, w, state.wait_age(w)));
                f.add_scope(w.scope);
                f.add_scope(p.prim.scope());
                f.add_prim(r.clone());
                f.fix = "shorten the critical sections of the other holders, use a fair primitive (tokio's are FIFO), or split the primitive so that this waiter does not compete with them".into();
                self.active
                    .insert(format!("{}:{}", FindingKind::Starvation, f.key()));
                out.push(Verdict::Found(Box::new(f)));
            }
            // Holders keeping a contended primitive past the threshold while others still get
            // through (a busy pool one connection short). With no grant at all the queue is
            // stuck, which is that rule's report, unless the user set starvation below the
            // stuck threshold to hear of such holds first.
            let stuck_threshold = crate::base::config::for_scopes(&scopes).stuck.as_nanos() as u64;
            if !(served || threshold < stuck_threshold) {
                continue;
            }
            for h in &p.holds {
                if state.hold_age(h) < threshold {
                    continue;
                }
                let mut f = Finding::new(
                    FindingKind::Starvation,
                    format!("{id}|hold|{}", site_string(h.site)),
                    format!(
                        "{} has held {} for {} ms (acquired at {}) while {} waiter{} for it",
                        h.actor.describe(),
                        noun(&r),
                        state.hold_age(h) / 1_000_000,
                        site_string(h.site),
                        p.waiters.len(),
                        if p.waiters.len() == 1 {
                            " queues"
                        } else {
                            "s queue"
                        }
                    ),
                );
                f.actors.push(holder(&r, h, state.hold_age(h)));
                for w in &p.waiters {
                    f.actors.push(waiter(&r, w, state.wait_age(w)));
                    f.add_scope(w.scope);
                }
                f.add_scope(h.scope);
                f.add_scope(p.prim.scope());
                f.add_prim(r.clone());
                f.fix = "do not hold the guard across slow work (I/O, sleeps, long awaits): copy what you need and release it first".into();
                self.active
                    .insert(format!("{}:{}", FindingKind::Starvation, f.key()));
                out.push(Verdict::Found(Box::new(f)));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{ORDER_SLACK_NS, Starvation, ahead_of, starts};
    use crate::analysis::snapshot::PrimState;
    use crate::model::finding::{Finding, FindingKind};
    use crate::rules::Rule;
    use crate::rules::testkit::{MS, Scope, at, found, hold, state, task, wait};
    use crate::state::held::Mode;
    use crate::state::prim::{PrimKind, site_string};

    fn check(
        rule: &mut Starvation,
        prims: Vec<PrimState>,
        scope: &Scope,
        now_ms: u64,
    ) -> Vec<Finding> {
        let v = rule.check(&state(prims, scope, now_ms * MS));
        let n = v.len();
        let f = found(v);
        assert_eq!(f.len(), n);
        f
    }

    /// Waiters that began within the slack of each other may be queued in either order.
    #[test]
    fn waiters_ahead_are_the_earlier_ones_and_those_about_as_early() {
        let all = [
            wait(task(1), 1, Mode::Exclusive, 1, 0),
            wait(task(2), 2, Mode::Exclusive, 1, 5 * MS),
            wait(task(3), 3, Mode::Exclusive, 1, 5 * MS + ORDER_SLACK_NS - 1),
            wait(task(4), 4, Mode::Exclusive, 1, 5 * MS + ORDER_SLACK_NS),
        ];
        let sorted = starts(&all);
        let ahead: Vec<u64> = all.iter().map(|w| ahead_of(&sorted, w)).collect();
        assert_eq!(ahead, [0, 2, 3, 3]);
        // A start so late that the bound saturates: the bound is its own start, so it is not
        // counted among those before it (nor taken off them).
        let last = wait(task(5), 5, Mode::Exclusive, 1, u64::MAX);
        let sorted = starts(&[all[0].clone(), last.clone()]);
        assert_eq!(ahead_of(&sorted, &last), 1);
    }

    /// A waiter seen once and gone at the next check is forgotten (its note of what was
    /// ahead of it is dropped), and one still there is kept.
    #[test]
    fn a_waiter_gone_is_forgotten() {
        let scope = Scope::arm(10_000, 100, None);
        let p = scope.prim("starve/gone", PrimKind::BlockingMutex, 1);
        let w = |n| wait(task(n), n, Mode::Exclusive, 1, 0);
        let mut rule = Starvation::default();
        check(&mut rule, vec![at(&p, vec![], vec![w(1), w(2)])], &scope, 1);
        assert_eq!(rule.first_seen.len(), 2);
        check(&mut rule, vec![at(&p, vec![], vec![w(2)])], &scope, 2);
        assert_eq!(rule.first_seen.keys().collect::<Vec<_>>(), [&(p.id().0, 2)]);
    }

    /// A tick over a hundred thousand new waiters counts those ahead of each in O(n log n):
    /// a scan per waiter took minutes here, and kept the watchdog busy for the whole of a
    /// million-task backpressure run. Generous bound.
    #[test]
    fn a_tick_over_many_new_waiters_is_not_quadratic() {
        const N: u64 = 100_000;
        let scope = Scope::arm(10_000, 100, None);
        let p = scope.prim("starve/many", PrimKind::Semaphore, 20);
        let waiters = (1..=N)
            .map(|i| wait(task(i), i, Mode::Permits, 1, i * 1_000))
            .collect();
        let start = std::time::Instant::now();
        let f = check(
            &mut Starvation::default(),
            vec![at(&p, vec![], waiters)],
            &scope,
            1,
        );
        assert!(
            f.is_empty(),
            "a queue that just formed starves nobody: {f:?}"
        );
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{:?} for {N} waiters",
            start.elapsed()
        );
    }

    /// A waiter bypassed past the threshold by more grants than there were waiters ahead of
    /// it is starved; one only behind its queue is not, nor one not yet old enough.
    #[test]
    fn a_waiter_bypassed_past_the_threshold_is_starved() {
        let scope = Scope::arm(10_000, 100, None);
        let p = scope.prim("starve/bypassed", PrimKind::BlockingMutex, 1);
        let first = wait(task(1), 1, Mode::Exclusive, 1, 0);
        let site = site_string(first.site);
        let prims = |granted, young_since| {
            let mut s = at(
                &p,
                vec![],
                vec![
                    first.clone(),
                    wait(task(2), 2, Mode::Exclusive, 1, 500 * MS),
                    wait(task(3), 3, Mode::Exclusive, 1, young_since * MS),
                ],
            );
            s.granted = granted;
            vec![s]
        };
        let mut rule = Starvation::default();
        assert_eq!(rule.kind(), FindingKind::Starvation);
        assert!(check(&mut rule, prims(10, 1_000), &scope, 1_000).is_empty());
        // One grant while task 1, first in the queue, still waits: a bypass of task 1; task
        // 2 had task 1 ahead of it, so one grant may have been its turn coming closer.
        let f = check(&mut rule, prims(11, 1_000), &scope, 1_050);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].summary,
            format!(
                "task 1 has waited 1050 ms for blocking_mutex \"starve/bypassed\" at {site} while it was granted 1 time to others that were not queued ahead of it"
            )
        );
        assert_eq!(f[0].actors[0].name, "task 1");
        assert!(rule.active.contains(&format!("starvation:{}", f[0].key())));
        // Two more: task 1 bypassed 3 times, task 2 twice; task 3 too young.
        let f = check(&mut rule, prims(13, 1_000), &scope, 1_090);
        let said: Vec<&str> = f.iter().map(|f| f.summary.as_str()).collect();
        assert_eq!(said.len(), 2, "{said:#?}");
        assert!(said[0].ends_with("granted 3 times to others that were not queued ahead of it"));
        assert!(
            said[1].starts_with("task 2 has waited 590 ms"),
            "{}",
            said[1]
        );
        // Skipped waits and primitives (reported as a deadlock) are left alone.
        rule.skip_waits.insert((p.id().0, 1));
        let f = check(&mut rule, prims(13, 1_000), &scope, 1_090);
        assert_eq!(f.len(), 1);
        // Task 3, just the threshold old now, bypassed twice (4 grants, 2 ahead of it).
        let f = check(&mut rule, prims(14, 1_000), &scope, 1_100);
        let said: Vec<&str> = f.iter().map(|f| f.summary.as_str()).collect();
        assert_eq!(said.len(), 2, "{said:#?}");
        assert!(
            said[1].starts_with("task 3 has waited 100 ms"),
            "{}",
            said[1]
        );
        assert!(said[1].contains("granted 2 times"), "{}", said[1]);
        rule.skip_prims.insert(p.id().0);
        assert!(check(&mut rule, prims(14, 1_000), &scope, 1_100).is_empty());
    }

    /// A holder keeping a contended primitive past the threshold while others still get
    /// through is reported; with no grant at all it is the stuck-queue rule's, unless the
    /// starvation threshold is below the stuck one.
    #[test]
    fn a_long_hold_of_a_contended_primitive_is_reported_only_while_others_get_through() {
        let scope = Scope::arm(100, 100, None);
        let p = scope.prim("starve/held", PrimKind::Semaphore, 2);
        let h = hold(&p, task(5), Mode::Permits, 1, 0);
        let site = site_string(h.site);
        // Task 12's hold is exactly the threshold old at 1020 ms, task 6's younger.
        let prims = |granted, waiting: bool| {
            let holds = vec![
                h,
                hold(&p, task(6), Mode::Permits, 1, 950 * MS),
                hold(&p, task(12), Mode::Permits, 1, 920 * MS),
            ];
            // A waiter too young to be starved itself.
            let waiters = if waiting {
                vec![wait(task(7), 1, Mode::Permits, 1, 990 * MS)]
            } else {
                vec![]
            };
            let mut s = at(&p, holds, waiters);
            s.granted = granted;
            vec![s]
        };
        let mut rule = Starvation::default();
        assert!(check(&mut rule, prims(4, true), &scope, 1_000).is_empty());
        assert!(
            check(&mut rule, prims(4, true), &scope, 1_005).is_empty(),
            "nothing served"
        );
        // Between two waits, the grants are still counted: one since then is a grant to
        // others.
        assert!(check(&mut rule, prims(4, false), &scope, 1_010).is_empty());
        let f = check(&mut rule, prims(5, true), &scope, 1_020);
        assert_eq!(f.len(), 2, "the old holds only: {f:#?}");
        assert!(
            f[1].summary
                .starts_with("task 12 has held semaphore \"starve/held\" for 100 ms")
        );
        assert_eq!(
            f[0].summary,
            format!(
                "task 5 has held semaphore \"starve/held\" for 1020 ms (acquired at {site}) while 1 waiter queues for it"
            )
        );
        let names: Vec<&str> = f[0].actors.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["task 5", "task 7"]);
        assert!(
            f[0].fix
                .starts_with("do not hold the guard across slow work")
        );
        // Starvation below the stuck threshold: reported without a grant.
        let early = Scope::arm(10_000, 100, None);
        let q = early.prim("starve/early", PrimKind::Mutex, 1);
        let prims = || {
            vec![at(
                &q,
                vec![hold(&q, task(8), Mode::Exclusive, 1, 0)],
                vec![
                    wait(task(9), 1, Mode::Exclusive, 1, 950 * MS),
                    wait(task(10), 2, Mode::Exclusive, 1, 960 * MS),
                ],
            )]
        };
        let mut rule = Starvation::default();
        let f = check(&mut rule, prims(), &early, 1_000);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].summary.ends_with("while 2 waiters queue for it"),
            "{}",
            f[0].summary
        );
        // Closed: its waiters fail, nobody starves.
        let mut closed = prims();
        closed[0].closed = true;
        assert!(check(&mut rule, closed, &early, 1_100).is_empty());
    }
}
