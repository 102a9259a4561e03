use super::StuckQueue;
use crate::analysis::snapshot::PrimState;
use crate::model::finding::{Finding, FindingKind};
use crate::rules::Rule;
use crate::rules::testkit::{MS, Scope, at, forgot_at, found, hold, state, task, wait};
use crate::state::held::{FLAG_MOVABLE, Mode};
use crate::state::prim::{PrimKind, site_string};

/// The findings of one check of `prims` at `now_ms`.
fn check(rule: &mut StuckQueue, prims: Vec<PrimState>, scope: &Scope, now_ms: u64) -> Vec<Finding> {
    let verdicts = rule.check(&state(prims, scope, now_ms * MS));
    let n = verdicts.len();
    let f = found(verdicts);
    assert_eq!(f.len(), n, "only findings");
    f
}

/// Reported once nothing was granted for the threshold (counted from the first check
/// that saw the waiters), with each task once, holding and waiting (issue 17: nothing
/// checked how a report groups holds and waits per actor).
#[test]
fn a_queue_granting_nothing_past_the_threshold_is_reported_with_each_actor_once() {
    let scope = Scope::arm(100, 10_000, None);
    let sem = scope.prim("stuck/sem", PrimKind::Semaphore, 3);
    let prims = || {
        vec![at(
            &sem,
            vec![
                hold(&sem, task(1), Mode::Permits, 2, 0),
                hold(&sem, task(2), Mode::Permits, 1, 0),
            ],
            vec![
                wait(task(1), 1, Mode::Permits, 1, 0),
                wait(task(3), 2, Mode::Permits, 2, 10 * MS),
            ],
        )]
    };
    let mut rule = StuckQueue::default();
    assert_eq!(rule.kind(), FindingKind::StuckQueue);
    assert!(check(&mut rule, prims(), &scope, 1_000).is_empty());
    assert!(check(&mut rule, prims(), &scope, 1_099).is_empty());
    let f = check(&mut rule, prims(), &scope, 1_100);
    assert_eq!(f.len(), 1);
    let f = &f[0];
    assert_eq!(
        f.summary,
        "semaphore \"stuck/sem\" has 2 waiters queued for up to 1100 ms and granted nothing for 100 ms"
    );
    let grouped: Vec<(String, usize, usize)> = f
        .actors
        .iter()
        .map(|a| (a.name.clone(), a.holds.len(), a.waits.len()))
        .collect();
    assert_eq!(
        grouped,
        [
            ("task 1".to_owned(), 1, 1),
            ("task 2".to_owned(), 1, 0),
            ("task 3".to_owned(), 0, 1)
        ]
    );
    assert_eq!(f.actors[0].holds[0].permits, 2);
    assert_eq!(f.actors[2].waits[0].permits, 2);
    assert!(f.details.is_empty(), "{:?}", f.details);
    assert!(f.fix.starts_with("find who holds it"), "{}", f.fix);
    let id = sem.id().0;
    assert!(rule.stuck_prims.contains(&id));
    assert!(rule.active.contains(&format!("stuck-queue:{id}")));
    // A wait already reported as part of a deadlock does not count.
    let mut rule = StuckQueue::default();
    rule.skip_waits.extend([(id, 1), (id, 2)]);
    assert!(check(&mut rule, prims(), &scope, 1_000).is_empty());
    assert!(check(&mut rule, prims(), &scope, 2_000).is_empty());
}

/// A holder that waits on a channel (an open wait: it proves nothing) is said to, with
/// the channel, so that the report tells who waits for what.
#[test]
fn a_holder_waiting_on_a_channel_is_named_with_it() {
    let scope = Scope::arm(100, 10_000, None);
    let m = scope.prim("stuck/chan", PrimKind::Mutex, 1);
    let prims = || {
        vec![at(
            &m,
            vec![hold(&m, task(1), Mode::Exclusive, 1, 0)],
            vec![wait(task(2), 1, Mode::Exclusive, 1, 0)],
        )]
    };
    let here = std::panic::Location::caller();
    let recv = crate::state::channels::ChanWaitView {
        seq: 1,
        chan: std::sync::Arc::new(crate::state::channels::Channel::new(
            "oneshot",
            Some("reply"),
            here,
            None,
        )),
        op: crate::state::channels::ChanOp::Recv,
        waiter: task(1),
        thread: 1,
        blocking: false,
        owner: None,
        receiver_gone: false,
        permits_out: 0,
        site: here,
        since_ns: 0,
        scope: scope.0,
    };
    let mut rule = StuckQueue::default();
    let mut s = state(prims(), &scope, 1_000 * MS);
    s.chan_waits = vec![recv.clone()];
    assert!(found(rule.check(&s)).is_empty());
    let mut s = state(prims(), &scope, 1_100 * MS);
    s.chan_waits = vec![recv];
    let f = found(rule.check(&s));
    assert_eq!(f.len(), 1);
    assert_eq!(
        f[0].details,
        [format!(
            "its holder task 1 waits to receive from oneshot channel \"reply\" (created at {0}) for 1100 ms, at {0} (open: any holder of a sender can end it)",
            site_string(here)
        )]
    );
}

/// A queue that keeps moving is not stuck however old its waiters (issue 17: the guard
/// that restarts the clock on a grant had no negative test); once it stops, it is.
#[test]
fn a_queue_that_keeps_granting_is_not_stuck_until_it_stops() {
    let scope = Scope::arm(100, 10_000, None);
    let m = scope.prim("stuck/moving", PrimKind::Mutex, 1);
    let prims = |progress| {
        let mut p = at(
            &m,
            vec![hold(&m, task(1), Mode::Exclusive, 1, 0)],
            vec![wait(task(2), 1, Mode::Exclusive, 1, 0)],
        );
        p.progress = progress;
        vec![p]
    };
    let mut rule = StuckQueue::default();
    for step in 0..20 {
        let now = 1_000 + 50 * step;
        assert!(
            check(&mut rule, prims(step), &scope, now).is_empty(),
            "at {now} ms"
        );
    }
    // The last grant was seen at 1950 ms.
    assert!(check(&mut rule, prims(19), &scope, 2_049).is_empty());
    let f = check(&mut rule, prims(19), &scope, 2_050);
    assert_eq!(f.len(), 1);
    assert!(
        f[0].summary
            .ends_with("queued for up to 2050 ms and granted nothing for 100 ms"),
        "{}",
        f[0].summary
    );
}

/// A retry loop between two waits keeps the clock of a held primitive running, but a
/// fresh waiter is not stuck until it has waited the threshold itself; a primitive left
/// neither held nor waited for starts over.
#[test]
fn a_stall_is_timed_across_retries_but_only_old_waiters_make_it_stuck() {
    let scope = Scope::arm(100, 10_000, None);
    let held = scope.prim("stuck/held", PrimKind::Mutex, 1);
    let idle = scope.prim("stuck/idle", PrimKind::Semaphore, 1);
    let holder = || vec![hold(&held, task(1), Mode::Exclusive, 1, 0)];
    let waiter = |since_ms| vec![wait(task(2), 1, Mode::Exclusive, 1, since_ms * MS)];
    let sem_waiter = |since_ms| vec![wait(task(3), 1, Mode::Permits, 1, since_ms * MS)];
    let sem_holder = || vec![hold(&idle, task(4), Mode::Permits, 1, 0)];
    let mut rule = StuckQueue::default();
    let mut tick = |now, held_waits, idle_holds, idle_waits| {
        check(
            &mut rule,
            vec![
                at(&held, holder(), held_waits),
                at(&idle, idle_holds, idle_waits),
            ],
            &scope,
            now,
        )
    };
    assert!(tick(1_000, waiter(990), sem_holder(), sem_waiter(990)).is_empty());
    // Between two waits: `held` still held, `idle` neither held nor waited for.
    assert!(tick(1_050, vec![], vec![], vec![]).is_empty());
    // Back, fresh: 150 ms without a grant, but no waiter has waited 100 ms.
    assert!(tick(1_150, waiter(1_140), sem_holder(), sem_waiter(1_140)).is_empty());
    let f = tick(1_240, waiter(1_140), sem_holder(), sem_waiter(1_140));
    assert_eq!(f.len(), 1, "only `held`, whose clock ran on: {f:#?}");
    assert_eq!(
        f[0].summary,
        "mutex \"stuck/held\" has 1 waiter queued for up to 100 ms and granted nothing for 240 ms"
    );
}

/// A semaphore of no permits nobody holds is a signal, and a closed one fails its
/// waiters: neither is stuck. One whose waiter asks for more permits than exist, or whose
/// permits are all checked out, is, and the report says why.
#[test]
fn signals_and_closed_semaphores_are_not_stuck_but_impossible_asks_and_checkouts_are() {
    let scope = Scope::arm(100, 10_000, None);
    let signal = scope.prim("stuck/signal", PrimKind::Semaphore, 0);
    let closed = scope.prim("stuck/closed", PrimKind::Semaphore, 1);
    let small = scope.prim("stuck/small", PrimKind::Semaphore, 1);
    let pool = scope.prim("stuck/pool", PrimKind::Semaphore, 0);
    let lost = scope.prim("stuck/lost", PrimKind::Semaphore, 2);
    let forgot_site = std::panic::Location::caller();
    forgot_at(&pool, forgot_site);
    let prims = || {
        let w = |n: u64, permits| wait(task(n), 1, Mode::Permits, permits, 0);
        let mut c = at(
            &closed,
            vec![hold(&closed, task(20), Mode::Permits, 1, 0)],
            vec![w(21, 1)],
        );
        c.closed = true;
        let mut p = at(&pool, vec![], vec![w(31, 1), w(32, 2)]);
        p.waiters[1].seq = 2;
        p.waiters[0].retries = 2;
        p.forgotten = 2;
        vec![
            at(&signal, vec![], vec![w(10, 1)]),
            c,
            at(&small, vec![], vec![w(11, 2)]),
            p,
            at(&lost, vec![], vec![w(12, 1)]),
        ]
    };
    let mut rule = StuckQueue::default();
    assert!(check(&mut rule, prims(), &scope, 1_000).is_empty());
    let f = check(&mut rule, prims(), &scope, 1_100);
    let names: Vec<&str> = f.iter().map(|f| f.primitives[0].name.as_str()).collect();
    assert_eq!(names, ["stuck/small", "stuck/pool", "stuck/lost"]);
    let nothing_holds = "nothing holds it, so only add_permits (or a release of permits lost outside lockscope's books, e.g. by std::mem::forget) can grant the waiters: ask for no more permits than exist, or add the missing ones";
    assert_eq!(
        f[0].details,
        [
            "task 11 asks for 2 permits but only 1 exist: only add_permits can ever grant it, and everyone queued behind it waits too"
        ]
    );
    assert_eq!(f[0].fix, nothing_holds);
    let at_site = site_string(forgot_site);
    let retry_site = site_string(prims()[3].waiters[0].site);
    assert_eq!(
        f[1].details,
        [
            format!(
                "2 permits are checked out: forgotten with forget() when taken (latest at {at_site}) (as object pools do), so no guard holds them; only add_permits, when what they stood for is returned, gives them back"
            ),
            format!(
                "task 31 gave up and waited again 2 times (a timeout-and-retry loop): 1100 ms of waiting in all, at {retry_site}"
            ),
        ]
    );
    assert!(f[1].sites.contains(&at_site));
    assert!(
        f[1].fix.starts_with("the permits are checked out"),
        "{}",
        f[1].fix
    );
    // Free permits, nothing held, nothing granted: permits lost outside the books.
    assert!(f[2].details.is_empty(), "{:?}", f[2].details);
    assert_eq!(f[2].fix, nothing_holds);
}

/// Every permit held by owned guards: the report says they may live anywhere.
#[test]
fn a_queue_behind_owned_guards_says_so() {
    let scope = Scope::arm(100, 10_000, None);
    let m = scope.prim("stuck/owned", PrimKind::Mutex, 1);
    let prims = || {
        let mut h = hold(&m, task(1), Mode::Exclusive, 1, 0);
        h.flags |= FLAG_MOVABLE;
        vec![at(
            &m,
            vec![h],
            vec![wait(task(2), 1, Mode::Exclusive, 1, 0)],
        )]
    };
    let mut rule = StuckQueue::default();
    assert!(check(&mut rule, prims(), &scope, 1_000).is_empty());
    let f = check(&mut rule, prims(), &scope, 1_100);
    assert_eq!(
        f[0].details,
        [
            "every permit is held by an owned guard (it may live in a struct or another task that never drops it)"
        ]
    );
}

/// A pool of one checked out twice by one task (issue 29): every permit held by the
/// waiter's own task, owned ones included, and more asked than remain: its own
/// `nested-acquire`, past the same threshold. Another task's permit, or one more permit
/// free, or one forgotten (checked out by an object pool), keeps it a stuck queue.
#[test]
fn a_pool_of_one_checked_out_twice_by_one_task_is_a_nested_acquire() {
    let scope = Scope::arm(100, 10_000, None);
    let judge = |capacity: u64, holder: u64, forgot: bool| {
        let sem = scope.prim("stuck/pool_of_one", PrimKind::Semaphore, capacity);
        if forgot {
            forgot_at(&sem, std::panic::Location::caller());
        }
        let prims = || {
            let mut h = hold(&sem, task(holder), Mode::Permits, 1, 0);
            h.flags |= FLAG_MOVABLE;
            let mut p = at(&sem, vec![h], vec![wait(task(1), 1, Mode::Permits, 1, 0)]);
            p.forgotten = u64::from(forgot);
            vec![p]
        };
        let mut rule = StuckQueue::default();
        assert!(check(&mut rule, prims(), &scope, 1_000).is_empty());
        let f = check(&mut rule, prims(), &scope, 1_100);
        assert_eq!(f.len(), 1);
        assert!(rule.stuck_prims.contains(&sem.id().0));
        f.into_iter().next().unwrap()
    };
    let f = judge(1, 1, false);
    assert_eq!(f.kind, FindingKind::NestedAcquire, "{f}");
    assert!(
        f.summary
            .starts_with("task 1 waits for semaphore \"stuck/pool_of_one\" it already holds"),
        "{}",
        f.summary
    );
    assert_eq!(
        f.details,
        [
            "it acquired every permit held (1 of 1), owned ones included (the books keep an owned permit as its acquirer's until it is dropped) and nothing was granted since it began to wait: no other task holds one to release"
        ]
    );
    // Two permits in two holds of its own, a third asked: certain, counted together.
    let sem = scope.prim("stuck/pool_of_two", PrimKind::Semaphore, 2);
    let two = || {
        let holds = (0..2)
            .map(|_| hold(&sem, task(1), Mode::Permits, 1, 0))
            .collect();
        vec![at(&sem, holds, vec![wait(task(1), 1, Mode::Permits, 1, 0)])]
    };
    let mut rule = StuckQueue::default();
    assert!(check(&mut rule, two(), &scope, 1_000).is_empty());
    let f = check(&mut rule, two(), &scope, 1_100);
    assert!(
        f[0].summary
            .ends_with("a certain self-deadlock: it waits for itself to release it"),
        "{}",
        f[0].summary
    );
    assert_eq!(judge(1, 2, false).kind, FindingKind::StuckQueue);
    assert_eq!(judge(2, 1, false).kind, FindingKind::StuckQueue);
    assert_eq!(judge(1, 1, true).kind, FindingKind::StuckQueue);
}

/// A queue that belongs to no test (no scope on the primitive, its holders or waiters:
/// threads a test spawned, a `const` primitive they registered) is judged by the armed
/// tests' threshold, not the process's (issue 29, the condvar shapes); a test's own queue
/// keeps its own.
#[test]
fn a_queue_of_no_test_is_judged_by_the_armed_tests_threshold() {
    use crate::analysis::snapshot::State;
    let unscoped = crate::state::prim::register(
        Some("stuck/unscoped".into()),
        PrimKind::BlockingMutex,
        std::panic::Location::caller(),
        1,
    );
    let own = Scope::arm(10_000, 10_000, None);
    let scoped = own.prim("stuck/scoped", PrimKind::BlockingMutex, 1);
    // An armed test with a 100 ms threshold, as the watchdog hands it to the rule.
    let at_ms = |p: &std::sync::Arc<crate::state::prim::Prim>, now_ms: u64| {
        let mut s = State::from_parts(vec![at(
            p,
            vec![hold(p, task(1), Mode::Exclusive, 1, 0)],
            vec![wait(task(2), 1, Mode::Exclusive, 1, 0)],
        )]);
        s.now_coarse = now_ms * MS;
        s.now_precise = now_ms * MS;
        s.unscoped_stuck = Some(std::time::Duration::from_millis(100));
        s
    };
    for (p, want) in [(&unscoped, 1), (&scoped, 0)] {
        let mut rule = StuckQueue::default();
        assert!(found(rule.check(&at_ms(p, 1_000))).is_empty());
        let f = found(rule.check(&at_ms(p, 1_150)));
        assert_eq!(f.len(), want, "{}: {f:?}", p.name());
    }
}

/// A cross-process lock that nobody here holds, whose wrapper described the process holding
/// it: the report names that process, and its fix says another process holds it. The same
/// description on a lock held here is not shown (the books name the holder).
#[test]
fn a_queue_held_by_another_process_names_it() {
    let scope = Scope::arm(100, 10_000, None);
    let global = scope.prim("stuck/global", PrimKind::BlockingMutex, 1);
    crate::state::elsewhere::set(&global, Some("process 4121 (`cargo test`)"));
    let waiting = || {
        vec![at(
            &global,
            vec![],
            vec![wait(task(1), 1, Mode::Exclusive, 1, 0)],
        )]
    };
    let mut rule = StuckQueue::default();
    assert!(check(&mut rule, waiting(), &scope, 1_000).is_empty());
    let f = check(&mut rule, waiting(), &scope, 1_100);
    assert_eq!(f.len(), 1);
    assert_eq!(
        f[0].summary,
        "blocking_mutex \"stuck/global\" has 1 waiter queued for up to 1100 ms and granted nothing for 100 ms: it is held by process 4121 (`cargo test`)"
    );
    assert!(
        f[0].fix.starts_with("another process holds it"),
        "{}",
        f[0].fix
    );
    // Negative control: a holder in this process is the one named, not the description.
    let held_here = || {
        vec![at(
            &global,
            vec![hold(&global, task(2), Mode::Exclusive, 1, 0)],
            vec![wait(task(1), 1, Mode::Exclusive, 1, 0)],
        )]
    };
    let mut rule = StuckQueue::default();
    assert!(check(&mut rule, held_here(), &scope, 1_000).is_empty());
    let f = check(&mut rule, held_here(), &scope, 1_100);
    assert_eq!(f.len(), 1);
    assert!(!f[0].summary.contains("process 4121"), "{}", f[0].summary);
    assert!(f[0].fix.starts_with("find who holds it"), "{}", f[0].fix);
    crate::state::elsewhere::set(&global, None);
    assert!(crate::state::elsewhere::of(global.id().0).is_none());
}
