use super::{Deadlock, Group, blocked_groups, model};
use crate::analysis::graph::waitfor::Policy;
use crate::analysis::snapshot::{PrimState, State};
use crate::model::finding::{Finding, FindingKind};
use crate::rules::testkit::{MS, Scope, at, hold, state, task, wait};
use crate::rules::{Rule, Verdict};
use crate::state::actor::ActorId;
use crate::state::executor::{Executors, RuntimeView};
use crate::state::held::{FLAG_MOVABLE, FLAG_PINNED_THREAD, Mode};
use crate::state::prim::PrimKind;
use std::collections::HashMap;

fn thread(n: u64) -> ActorId {
    ActorId::from_thread_seq(n)
}

/// Two checks of the same state (a deadlock is confirmed on the second).
fn confirmed(s: &State) -> Vec<Finding> {
    let mut rule = Deadlock::default();
    assert_eq!(rule.kind(), FindingKind::Deadlock);
    let first = rule.check(s);
    assert!(
        !first.is_empty() && first.iter().all(|v| matches!(v, Verdict::Recheck)),
        "{first:?}"
    );
    crate::rules::testkit::found(rule.check(s))
}

/// An ABBA between two tasks: seen once it is a candidate, seen again with no progress
/// it is reported in these words; progress in between starts over.
#[test]
fn an_abba_is_confirmed_on_the_second_look_and_reported() {
    let scope = Scope::arm(10_000, 10_000, None);
    let a = scope.prim("dl/a", PrimKind::Mutex, 1);
    let b = scope.prim("dl/b", PrimKind::Mutex, 1);
    let c = scope.prim("dl/bystander", PrimKind::Mutex, 1);
    let prims = |progress| {
        let mut pa = at(
            &a,
            vec![hold(&a, task(1), Mode::Exclusive, 1, 0)],
            vec![wait(task(2), 1, Mode::Exclusive, 1, 0)],
        );
        pa.progress = progress;
        let pb = at(
            &b,
            vec![hold(&b, task(2), Mode::Exclusive, 1, 0)],
            vec![wait(task(1), 1, Mode::Exclusive, 1, 0)],
        );
        // A bystander: held by a task that waits for nothing, no part of the deadlock.
        let pc = at(&c, vec![hold(&c, task(3), Mode::Exclusive, 1, 0)], vec![]);
        vec![pc, pa, pb]
    };
    let s = state(prims(0), &scope, 1_000 * MS);
    let mut rule = Deadlock::default();
    assert!(matches!(rule.check(&s)[..], [Verdict::Recheck]));
    // Progress on `a` between the two looks: a torn snapshot, not confirmed.
    let moved = state(prims(1), &scope, 1_100 * MS);
    assert!(matches!(rule.check(&moved)[..], [Verdict::Recheck]));
    assert!(rule.confirmed_waits.is_empty() && rule.active.is_empty());
    let f = crate::rules::testkit::found(rule.check(&moved));
    assert_eq!(f.len(), 1);
    let f = &f[0];
    assert_eq!(
        f.summary,
        "2 tasks can never proceed: each waits for mutex \"dl/b\", mutex \"dl/a\" held by another of them"
    );
    let (ia, ib) = (a.id().0, b.id().0);
    assert_eq!(f.key(), format!("{ia}.1,{ib}.1"));
    assert!(f.details.is_empty(), "{:?}", f.details);
    assert!(f.fix.starts_with("take primitives in one global order"));
    let names: Vec<(&str, usize, usize)> = f
        .actors
        .iter()
        .map(|a| (a.name.as_str(), a.holds.len(), a.waits.len()))
        .collect();
    assert_eq!(names, [("task 1", 1, 1), ("task 2", 1, 1)]);
    let held: Vec<(&str, &str)> = f
        .actors
        .iter()
        .map(|a| {
            let (h, w) = (&a.holds[0].primitive.name, &a.waits[0].primitive.name);
            (h.as_str(), w.as_str())
        })
        .collect();
    assert_eq!(held, [("dl/a", "dl/b"), ("dl/b", "dl/a")]);
    assert_eq!(f.actors[0].waits[0].for_ms, 1_100);
    let mut prims: Vec<&str> = f.primitives.iter().map(|p| p.name.as_str()).collect();
    prims.sort_unstable();
    assert_eq!(prims, ["dl/a", "dl/b"]);
    assert_eq!(rule.confirmed_waits, [(ia, 1), (ib, 1)].into());
    assert_eq!(rule.confirmed_prims, [ia, ib].into());
    assert!(rule.active.contains(&format!("deadlock:{}", f.key())));
}

/// Two looks in a row (a test may run the analysis as often as it likes) do not confirm a
/// cycle whose youngest wait is younger than a tick: it may be a `select!`'s send about to
/// lose to a timer. The same waits, once a tick old, are confirmed on the next look; a group
/// made of an old wait and a young one waits for the young one.
#[test]
fn a_cycle_younger_than_a_tick_is_not_confirmed_however_often_it_is_looked_at() {
    let scope = Scope::arm(10_000, 10_000, None);
    let a = scope.prim("dl/young_a", PrimKind::Mutex, 1);
    let b = scope.prim("dl/young_b", PrimKind::Mutex, 1);
    let prims = |since_a, since_b| {
        vec![
            at(
                &a,
                vec![hold(&a, task(1), Mode::Exclusive, 1, 0)],
                vec![wait(task(2), 1, Mode::Exclusive, 1, since_a)],
            ),
            at(
                &b,
                vec![hold(&b, task(2), Mode::Exclusive, 1, 0)],
                vec![wait(task(1), 1, Mode::Exclusive, 1, since_b)],
            ),
        ]
    };
    let mut rule = Deadlock {
        min_age_ns: 100 * MS,
        ..Deadlock::default()
    };
    // Both waits began 10 ms before the first look; three looks 1 ms apart confirm nothing.
    for now in [1_000, 1_001, 1_002] {
        let s = state(prims(990 * MS, 990 * MS), &scope, now * MS);
        assert!(
            matches!(rule.check(&s)[..], [Verdict::Recheck]),
            "at {now} ms"
        );
        assert!(rule.active.is_empty());
    }
    // One wait is a tick old, the other is not: still a candidate.
    let s = state(prims(890 * MS, 990 * MS), &scope, 1_080 * MS);
    assert!(matches!(rule.check(&s)[..], [Verdict::Recheck]));
    // Both are, but the analysis first saw the group only 90 ms ago: still a candidate.
    let s = state(prims(890 * MS, 990 * MS), &scope, 1_090 * MS);
    assert!(matches!(rule.check(&s)[..], [Verdict::Recheck]));
    // Seen for a tick, and both waits a tick old: confirmed.
    let s = state(prims(890 * MS, 990 * MS), &scope, 1_100 * MS);
    assert_eq!(crate::rules::testkit::found(rule.check(&s)).len(), 1);
}

/// A wait's start may be earlier than the wait itself: a join or an untimed async wait starts
/// on the published clock (behind by up to a publish period), a retried wait at its first
/// try. A cycle whose waits say they are seconds old is still confirmed only once the
/// analysis has seen it stand for a tick, however often it looks.
#[test]
fn a_cycle_of_waits_that_say_they_are_old_is_confirmed_only_once_seen_for_a_tick() {
    let scope = Scope::arm(10_000, 10_000, None);
    let a = scope.prim("dl/stale_a", PrimKind::Mutex, 1);
    let b = scope.prim("dl/stale_b", PrimKind::Mutex, 1);
    let prims = || {
        vec![
            at(
                &a,
                vec![hold(&a, task(1), Mode::Exclusive, 1, 0)],
                vec![wait(task(2), 1, Mode::Exclusive, 1, MS)],
            ),
            at(
                &b,
                vec![hold(&b, task(2), Mode::Exclusive, 1, 0)],
                vec![wait(task(1), 1, Mode::Exclusive, 1, MS)],
            ),
        ]
    };
    let mut rule = Deadlock {
        min_age_ns: 100 * MS,
        ..Deadlock::default()
    };
    for now in [5_000, 5_001, 5_050, 5_099] {
        let s = state(prims(), &scope, now * MS);
        assert!(
            matches!(rule.check(&s)[..], [Verdict::Recheck]),
            "at {now} ms"
        );
    }
    let s = state(prims(), &scope, 5_100 * MS);
    assert_eq!(crate::rules::testkit::found(rule.check(&s)).len(), 1);
}

/// A two-task cycle with six untimed waiters queued on its locks (three of them ahead of
/// the cycle's own wait): the report names the two that close it and counts the six as
/// waiting behind it, in the summary, the text and the JSON (a field of its own, left out
/// when empty).
#[test]
fn a_cycle_with_six_waiters_behind_names_its_knot_and_counts_the_rest() {
    let scope = Scope::arm(10_000, 10_000, None);
    let a = scope.prim("dl/knot_a", PrimKind::Mutex, 1);
    let b = scope.prim("dl/knot_b", PrimKind::Mutex, 1);
    let w = |actor: u64, seq: u64| wait(task(actor), seq, Mode::Exclusive, 1, 0);
    let s = state(
        vec![
            at(
                &a,
                vec![hold(&a, task(1), Mode::Exclusive, 1, 0)],
                vec![w(3, 1), w(4, 2), w(5, 3), w(2, 4), w(6, 5), w(7, 6)],
            ),
            at(
                &b,
                vec![hold(&b, task(2), Mode::Exclusive, 1, 0)],
                vec![w(1, 1), w(8, 2)],
            ),
        ],
        &scope,
        MS,
    );
    let found = confirmed(&s);
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!(
        f.summary,
        "2 tasks can never proceed: each waits for mutex \"dl/knot_b\", mutex \"dl/knot_a\" held by another of them; 6 more wait behind it"
    );
    let names = |v: &[crate::model::finding::ActorReport]| -> Vec<String> {
        v.iter().map(|a| a.name.clone()).collect()
    };
    assert_eq!(names(&f.actors), ["task 1", "task 2"]);
    assert_eq!(
        names(&f.behind),
        ["task 3", "task 4", "task 5", "task 6", "task 7", "task 8"]
    );
    assert!(
        f.behind
            .iter()
            .all(|a| a.holds.is_empty() && a.waits.len() == 1)
    );
    let text = f.to_string();
    assert!(
        text.contains(
            "\n  6 more wait behind it:\n    task 3:\n      waits for mutex \"dl/knot_a\" (lock)"
        ),
        "{text}"
    );
    // The key is still every wait of the group: the finding is the same one as before.
    assert_eq!(f.key().split(',').count(), 8);
    let json = serde_json::to_value(f).unwrap();
    assert_eq!(json["actors"].as_array().map(Vec::len), Some(2));
    assert_eq!(json["behind"].as_array().map(Vec::len), Some(6));
    assert_eq!(json["behind"][0]["name"], "task 3");

    // One behind: said so; none behind: no count, and no field in the JSON.
    let abba_and = |on_a: Vec<crate::state::wait::WaiterRec>| {
        state(
            vec![
                at(&a, vec![hold(&a, task(1), Mode::Exclusive, 1, 0)], on_a),
                at(
                    &b,
                    vec![hold(&b, task(2), Mode::Exclusive, 1, 0)],
                    vec![w(1, 1)],
                ),
            ],
            &scope,
            MS,
        )
    };
    let s = abba_and(vec![w(2, 1), w(3, 2)]);
    assert!(
        confirmed(&s)[0]
            .summary
            .ends_with("of them; 1 more waits behind it")
    );
    let s = abba_and(vec![w(2, 1)]);
    let f = &confirmed(&s)[0];
    assert!(
        f.summary.ends_with("held by another of them"),
        "{}",
        f.summary
    );
    assert!(serde_json::to_value(f).unwrap().get("behind").is_none());
}

/// A three-task cycle with a chain behind it: task 4 holds a lock task 5 waits for, and
/// waits for a lock of the cycle. The summary counts the cycle's three and names only
/// what they wait for (not task 4's lock); the two are behind it.
#[test]
fn a_three_task_cycle_with_a_chain_behind_it() {
    let scope = Scope::arm(10_000, 10_000, None);
    let p: Vec<_> = (0..4)
        .map(|i| scope.prim(&format!("dl/three{i}"), PrimKind::Mutex, 1))
        .collect();
    let h = |i: usize, actor: u64| hold(&p[i], task(actor), Mode::Exclusive, 1, 0);
    let w = |actor: u64, seq: u64| wait(task(actor), seq, Mode::Exclusive, 1, 0);
    let s = state(
        vec![
            at(&p[0], vec![h(0, 1)], vec![w(3, 1), w(4, 2)]),
            at(&p[1], vec![h(1, 2)], vec![w(1, 1)]),
            at(&p[2], vec![h(2, 3)], vec![w(2, 1)]),
            at(&p[3], vec![h(3, 4)], vec![w(5, 1)]),
        ],
        &scope,
        MS,
    );
    let f = &confirmed(&s)[0];
    assert_eq!(
        f.summary,
        "3 tasks can never proceed: each waits for mutex \"dl/three1\", mutex \"dl/three2\", mutex \"dl/three0\" held by another of them; 2 more wait behind it"
    );
    let ids: Vec<u64> = f.behind.iter().map(|a| a.id).collect();
    assert_eq!(ids, [task(4).as_u64(), task(5).as_u64()]);
    assert_eq!(f.behind[0].holds[0].primitive.name, "dl/three3");
    // Every primitive of the group is still named: task 5's wait is stuck for good too.
    assert!(f.involves("dl/three3"));
}

/// One task waiting for what it holds; a semaphore knot between a task and a thread.
#[test]
fn self_waits_and_knots_are_worded_for_what_they_are() {
    let scope = Scope::arm(10_000, 10_000, None);
    let c = scope.prim("dl/c", PrimKind::Mutex, 1);
    let s = state(
        vec![at(
            &c,
            vec![hold(&c, task(3), Mode::Exclusive, 1, 0)],
            vec![wait(task(3), 1, Mode::Exclusive, 1, 0)],
        )],
        &scope,
        MS,
    );
    let f = confirmed(&s);
    assert_eq!(
        f[0].summary,
        "task 3 waits for mutex \"dl/c\" and can never proceed: what it waits for is held by itself"
    );
    assert!(
        f[0].fix
            .starts_with("release what you hold before waiting for it again")
    );

    let sem = scope.prim("dl/sem", PrimKind::Semaphore, 1);
    let m = scope.prim("dl/m", PrimKind::Mutex, 1);
    let s = state(
        vec![
            at(
                &sem,
                vec![hold(&sem, task(4), Mode::Permits, 1, 0)],
                vec![wait(thread(900_005), 1, Mode::Permits, 1, 0)],
            ),
            at(
                &m,
                vec![hold(&m, thread(900_005), Mode::Exclusive, 1, 0)],
                vec![wait(task(4), 1, Mode::Exclusive, 1, 0)],
            ),
        ],
        &scope,
        MS,
    );
    let f = confirmed(&s);
    assert_eq!(
        f[0].summary,
        "1 task and 1 thread can never proceed: each waits for mutex \"dl/m\", semaphore \"dl/sem\" held by another of them"
    );
    assert_eq!(
        f[0].details,
        [
            "every holder that could free the permits these waiters need is itself waiting (a knot, not just a cycle)"
        ]
    );
}

/// Two deadlocks in one state are two groups, each with its own actors, primitives and
/// waits; a chain behind a free holder is none; an owned guard links nobody.
#[test]
fn each_deadlock_is_its_own_group() {
    let scope = Scope::arm(10_000, 10_000, None);
    let p: Vec<_> = (0..5)
        .map(|i| scope.prim(&format!("dl/group{i}"), PrimKind::Mutex, 1))
        .collect();
    let x = |i: usize, holder, waiter| {
        at(
            &p[i],
            vec![hold(&p[i], task(holder), Mode::Exclusive, 1, 0)],
            vec![wait(task(waiter), 1, Mode::Exclusive, 1, 0)],
        )
    };
    // 10 <-> 11 on p0/p1, 20 <-> 21 on p2/p3; 30 holds p4 (waits for nothing), 31 waits.
    let mut prims = vec![
        x(0, 10, 11),
        x(1, 11, 10),
        x(2, 20, 21),
        x(3, 21, 20),
        x(4, 30, 31),
    ];
    // 20 also holds an owned guard of p4: it links nothing.
    let mut owned = hold(&p[4], task(20), Mode::Exclusive, 1, 0);
    owned.flags |= FLAG_MOVABLE;
    prims[4].holds.push(owned);
    let s = state(prims, &scope, MS);
    let groups = blocked_groups(&s);
    let ids = |i: usize| p[i].id().0;
    let group = |actors: [u64; 2], i: usize, j: usize| Group {
        actors: actors.into(),
        prims: [ids(i), ids(j)].into(),
        waits: [(ids(i), 1), (ids(j), 1)].into(),
        joins: Default::default(),
        chans: Default::default(),
        knot: actors.into(),
    };
    assert_eq!(groups, [group([10, 11], 0, 1), group([20, 21], 2, 3)]);
}

/// The model: each kind's grant policy, only primitives held or waited for, threads
/// blocked only by blocking waits, and where each holder can run.
#[test]
fn the_model_follows_each_primitives_policy_and_pins() {
    let scope = Scope::arm(10_000, 10_000, None);
    let kinds = [
        (PrimKind::Mutex, Policy::Fifo),
        (PrimKind::RwLock, Policy::Fifo),
        (PrimKind::Semaphore, Policy::Fifo),
        (PrimKind::BlockingMutex, Policy::Exclusive),
        (PrimKind::BlockingReentrantMutex, Policy::Exclusive),
        (PrimKind::BlockingRwLock, Policy::FairRwLock),
    ];
    let mut prims: Vec<PrimState> = Vec::new();
    for (i, (kind, _)) in kinds.iter().enumerate() {
        let p = scope.prim(&format!("dl/model{i}"), *kind, 2);
        let mut w = wait(task(50), 1, Mode::Exclusive, 1, 0);
        w.thread = 900_040;
        w.timed = i == 0;
        let mut pinned = hold(&p, task(51), Mode::Exclusive, 1, 0);
        pinned.flags |= FLAG_PINNED_THREAD;
        pinned.thread = 900_041;
        let mut owned = hold(&p, task(52), Mode::Exclusive, 1, 0);
        owned.flags |= FLAG_MOVABLE;
        prims.push(at(
            &p,
            vec![pinned, owned, hold(&p, thread(900_042), Mode::Shared, 1, 0)],
            vec![w],
        ));
    }
    let idle = scope.prim("dl/model_idle", PrimKind::Mutex, 1);
    prims.push(at(&idle, vec![], vec![]));
    let mut closed = at(
        &idle,
        vec![],
        vec![wait(task(53), 1, Mode::Exclusive, 1, 0)],
    );
    closed.closed = true;
    closed.capacity = 5;
    let s = state(prims, &scope, MS);
    let m = model(&s);
    assert_eq!(m.len(), kinds.len(), "the idle primitive is left out");
    for (mp, (kind, policy)) in m.iter().zip(kinds) {
        assert_eq!(mp.policy, policy, "{kind:?}");
        assert_eq!(mp.capacity, 2);
        assert!(!mp.closed);
        let blocks = if kind.is_blocking() {
            Some(900_040)
        } else {
            None
        };
        assert_eq!(mp.waiters[0].blocks_thread, blocks, "{kind:?}");
        let pins: Vec<(u64, bool, Option<u64>)> = mp
            .holds
            .iter()
            .map(|h| (h.actor, h.movable, h.pinned_thread))
            .collect();
        assert_eq!(
            pins,
            [
                (task(51).as_u64(), false, Some(900_041)),
                (task(52).as_u64(), true, None),
                (thread(900_042).as_u64(), false, Some(900_042)),
            ]
        );
    }
    assert!(m[0].waiters[0].timed && !m[1].waiters[0].timed);
    let s = state(vec![closed], &scope, MS);
    let m = model(&s);
    assert!(m[0].closed);
    assert_eq!(m[0].capacity, 5);
}

/// A task's hold taken on a runtime's `block_on` thread (a LocalSet there) can only be
/// released on that thread; one taken elsewhere can run anywhere.
#[test]
fn a_hold_taken_on_a_block_on_thread_is_pinned_there() {
    let scope = Scope::arm(10_000, 10_000, None);
    let m = scope.prim("dl/local_set", PrimKind::Mutex, 1);
    let mut on_block_on = hold(&m, task(61), Mode::Exclusive, 1, 0);
    on_block_on.thread = 900_150;
    let mut elsewhere = hold(&m, task(62), Mode::Exclusive, 1, 0);
    elsewhere.thread = 900_151;
    let mut s = state(
        vec![at(&m, vec![on_block_on, elsewhere], vec![])],
        &scope,
        MS,
    );
    s.executors = Executors {
        runtimes: HashMap::from([(10, runtime(10, true, 2, Some((900_150, false))))]),
        threads: HashMap::new(),
    };
    let pins: Vec<Option<u64>> = model(&s)[0].holds.iter().map(|h| h.pinned_thread).collect();
    assert_eq!(pins, [Some(900_150), None]);
}

mod on_executor;

use on_executor::runtime;
