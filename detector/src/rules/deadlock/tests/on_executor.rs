//! Deadlocks through the executor: workers blocked, holders pinned to a blocked thread.

use super::*;

pub(super) fn runtime(
    key: u64,
    multi: bool,
    workers: usize,
    block_on: Option<(u64, bool)>,
) -> RuntimeView {
    RuntimeView {
        key,
        multi,
        workers,
        block_on,
    }
}

/// Every worker of a multi-thread runtime blocked on a parking_lot mutex whose holder
/// is a task that needs a worker to resume: a deadlock through the executor, told so.
#[test]
fn every_worker_blocked_behind_a_task_that_needs_one_is_a_deadlock() {
    let scope = Scope::arm(10_000, 10_000, None);
    let m = scope.prim("dl/workers", PrimKind::BlockingMutex, 1);
    let other = scope.prim("dl/workers_other", PrimKind::Mutex, 1);
    let mut h = hold(&m, task(1), Mode::Exclusive, 1, 0);
    h.thread = 900_110;
    let on = |actor: u64, t: u64| {
        let mut w = wait(task(actor), actor, Mode::Exclusive, 1, 0);
        w.thread = t;
        w.on_worker = true;
        w
    };
    // A free task holding another primitive on a blocked worker: it needs no worker
    // (it is running there... as far as the books know, it is the one blocking it).
    let mut own = hold(&other, task(2), Mode::Exclusive, 1, 0);
    own.thread = 900_110;
    let mut s = state(
        vec![
            at(&m, vec![h], vec![on(2, 900_110), on(3, 900_111)]),
            at(&other, vec![own], vec![]),
        ],
        &scope,
        MS,
    );
    s.executors = Executors {
        runtimes: HashMap::from([(7, runtime(7, true, 2, None))]),
        threads: HashMap::from([(900_110, 7), (900_111, 7)]),
    };
    let exec = crate::rules::deadlock::executor(&s);
    assert_eq!(exec.workers, HashMap::from([(900_110, 7), (900_111, 7)]));
    assert_eq!(exec.worker_count, HashMap::from([(7, 2)]));
    assert_eq!(exec.needs_worker, HashMap::from([(task(1).as_u64(), 7)]));
    let f = confirmed(&s);
    assert_eq!(f.len(), 1);
    assert_eq!(
        f[0].summary,
        "every worker of the runtime (2 of 2, multi_thread) is blocked waiting for blocking_mutex \"dl/workers\"; its holder, task 1, needs a worker to resume: it holds the guard across an .await, and only a worker can wake it"
    );
    assert_eq!(
        f[0].details,
        [
            "blocked workers: thread #900110 by task 2 waiting for blocking_mutex \"dl/workers\"; thread #900111 by task 3 waiting for blocking_mutex \"dl/workers\""
        ]
    );
    assert!(
        f[0].fix
            .starts_with("do not hold a blocking guard across an .await")
    );
    // A task queued on the same lock off the workers waits behind the knot: the wording
    // is kept, and it is counted.
    let mut behind = wait(task(4), 4, Mode::Exclusive, 1, 0);
    behind.thread = 900_119;
    s.prims[0].waiters.push(behind);
    let f = confirmed(&s);
    assert_eq!(
        f[0].summary,
        "every worker of the runtime (2 of 2, multi_thread) is blocked waiting for blocking_mutex \"dl/workers\"; its holder, task 1, needs a worker to resume: it holds the guard across an .await, and only a worker can wake it; 1 more waits behind it"
    );
    let knot: Vec<&str> = f[0].actors.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(knot, ["task 1", "task 2", "task 3"]);
    assert_eq!(f[0].behind[0].name, "task 4");
    s.prims[0].waiters.pop();
    // A current-thread runtime's workers are not counted (its tasks are pinned instead).
    s.executors.runtimes.insert(7, runtime(7, false, 2, None));
    let exec = crate::rules::deadlock::executor(&s);
    assert!(exec.workers.is_empty() && exec.needs_worker.is_empty());
}

/// A task pinned to a thread that another task blocks, and a thread's own code blocked by
/// a task it polls: told apart in the report.
#[test]
fn a_holder_pinned_to_a_blocked_thread_is_a_deadlock() {
    let scope = Scope::arm(10_000, 10_000, None);
    let n = scope.prim("dl/pinned", PrimKind::BlockingMutex, 1);
    let mut h = hold(&n, task(4), Mode::Exclusive, 1, 0);
    h.flags |= FLAG_PINNED_THREAD;
    h.thread = 900_120;
    let mut w = wait(task(5), 1, Mode::Exclusive, 1, 0);
    w.thread = 900_120;
    // Task 98 also blocks that thread for a while, waiting for a lock a free task holds:
    // no part of the deadlock, not named in it.
    let z = scope.prim("dl/pinned_other", PrimKind::BlockingMutex, 1);
    let mut passing = wait(task(98), 1, Mode::Exclusive, 1, 0);
    passing.thread = 900_120;
    let mut s = state(
        vec![
            at(&n, vec![h], vec![w.clone()]),
            at(
                &z,
                vec![hold(&z, task(97), Mode::Exclusive, 1, 0)],
                vec![passing],
            ),
        ],
        &scope,
        MS,
    );
    let f = confirmed(&s);
    assert_eq!(
        f[0].summary,
        "task 4 holds blocking_mutex \"dl/pinned\" across an .await and can only resume on thread #900120 (a current_thread runtime or a LocalSet), which task 5 waiting for blocking_mutex \"dl/pinned\" blocks: it can never run to release it"
    );
    s.executors = Executors {
        runtimes: HashMap::from([(8, runtime(8, false, 1, None))]),
        threads: HashMap::from([(900_120, 8)]),
    };
    assert!(
        confirmed(&s)[0]
            .summary
            .contains("thread #900120 (a current_thread runtime)")
    );
    s.executors
        .runtimes
        .insert(8, runtime(8, true, 4, Some((900_120, false))));
    assert!(
        confirmed(&s)[0]
            .summary
            .contains("(a LocalSet on the block_on thread of a multi_thread runtime)")
    );

    // The thread's own code (a block_on future) holds it.
    let q = scope.prim("dl/own", PrimKind::BlockingMutex, 1);
    let mut w = wait(task(6), 1, Mode::Exclusive, 1, 0);
    w.thread = 900_130;
    let s = state(
        vec![at(
            &q,
            vec![hold(&q, thread(900_130), Mode::Exclusive, 1, 0)],
            vec![w],
        )],
        &scope,
        MS,
    );
    assert_eq!(
        confirmed(&s)[0].summary,
        "thread #900130 holds blocking_mutex \"dl/own\" across an .await, and task 6 waiting for blocking_mutex \"dl/own\", polled on that same thread (a current_thread runtime or a LocalSet), blocks it: the thread can never get back to the code that would release it"
    );
}

/// A task that waits for nothing, pinned to a thread that a separate deadlock blocks, is a
/// group of its own, worded by the executor's reason, naming the other deadlock's wait that
/// blocks the thread: the self-wait sentence would name no primitive ("waits for  and can
/// never proceed", the wording a mutant found), and the blockers were taken from the group
/// alone ("which  blocks", found by this test).
#[test]
fn a_lone_task_stuck_only_on_the_executor_is_worded_by_it() {
    let scope = Scope::arm(10_000, 10_000, None);
    let a = scope.prim("dl/lone_a", PrimKind::BlockingMutex, 1);
    let b = scope.prim("dl/lone_b", PrimKind::BlockingMutex, 1);
    let p = scope.prim("dl/lone_pinned", PrimKind::BlockingMutex, 1);
    // Tasks 21 and 22 deadlock (ABBA); 22 waits on thread #900160, blocking it.
    let mut w21 = wait(task(21), 1, Mode::Exclusive, 1, 0);
    w21.thread = 900_161;
    let mut w22 = wait(task(22), 2, Mode::Exclusive, 1, 0);
    w22.thread = 900_160;
    // Task 23 holds a lock nobody waits for, across an .await, pinned to that thread.
    let mut pinned = hold(&p, task(23), Mode::Exclusive, 1, 0);
    pinned.flags |= FLAG_PINNED_THREAD;
    pinned.thread = 900_160;
    let s = state(
        vec![
            at(
                &a,
                vec![hold(&a, task(21), Mode::Exclusive, 1, 0)],
                vec![w22],
            ),
            at(
                &b,
                vec![hold(&b, task(22), Mode::Exclusive, 1, 0)],
                vec![w21],
            ),
            at(&p, vec![pinned], vec![]),
        ],
        &scope,
        MS,
    );
    let found = confirmed(&s);
    let lone: Vec<&Finding> = found
        .iter()
        .filter(|f| f.actors.iter().map(|a| a.id).eq([task(23).as_u64()]))
        .collect();
    assert_eq!(lone.len(), 1, "task 23 is a group of its own: {found:#?}");
    assert_eq!(
        lone[0].summary,
        "task 23 holds blocking_mutex \"dl/lone_pinned\" across an .await and can only resume on thread #900160 (a current_thread runtime or a LocalSet), which task 22 waiting for blocking_mutex \"dl/lone_a\" blocks: it can never run to release it"
    );
}

/// A parked `block_on` future of a multi-thread runtime needs a worker to wake it.
#[test]
fn a_parked_block_on_future_needs_a_worker() {
    let scope = Scope::arm(10_000, 10_000, None);
    let m = scope.prim("dl/block_on", PrimKind::BlockingMutex, 1);
    let on = |actor: u64, t: u64| {
        let mut w = wait(task(actor), actor, Mode::Exclusive, 1, 0);
        w.thread = t;
        w.on_worker = true;
        w
    };
    let mut s = state(
        vec![at(
            &m,
            vec![hold(&m, thread(900_140), Mode::Exclusive, 1, 0)],
            vec![on(2, 900_141)],
        )],
        &scope,
        MS,
    );
    s.executors = Executors {
        runtimes: HashMap::from([(9, runtime(9, true, 1, Some((900_140, true))))]),
        threads: HashMap::from([(900_141, 9)]),
    };
    let exec = crate::rules::deadlock::executor(&s);
    assert_eq!(
        exec.needs_worker,
        HashMap::from([(thread(900_140).as_u64(), 9)])
    );
    let f = confirmed(&s);
    assert!(
        f[0].summary
            .contains("its holder, the block_on future on thread #900140, needs a worker"),
        "{}",
        f[0].summary
    );
}

/// A holder pinned to a blocked thread is told by the executor's reason only when it waits
/// for nothing: another actor's join or receive leaves the sentence as it is, and a holder
/// that itself joins the task blocking its thread is in a plain cycle (worded by the join).
#[test]
fn only_a_pinned_holder_that_waits_for_nothing_is_worded_by_the_executor() {
    use crate::rules::testkit::{join, send};
    use crate::state::channels::ChanOp;
    let scope = Scope::arm(10_000, 10_000, None);
    let n = scope.prim("dl/pinned_waits", PrimKind::BlockingMutex, 1);
    let mut h = hold(&n, task(4), Mode::Exclusive, 1, 0);
    h.flags |= FLAG_PINNED_THREAD;
    h.thread = 900_170;
    let mut w = wait(task(5), 1, Mode::Exclusive, 1, 0);
    w.thread = 900_170;
    let pinned = "task 4 holds blocking_mutex \"dl/pinned_waits\" across an .await and can only resume on thread #900170 (a current_thread runtime or a LocalSet), which task 5 waiting for blocking_mutex \"dl/pinned_waits\" blocks: it can never run to release it";
    let books = || state(vec![at(&n, vec![h], vec![w.clone()])], &scope, MS);
    // Someone else joins a free task, or receives: no part of it.
    let mut s = books();
    s.joins = vec![join(1, task(60), vec![task(61)], 0)];
    assert_eq!(confirmed(&s)[0].summary, pinned);
    let mut s = books();
    let mut recv = send(2, task(62), None, 0);
    recv.op = ChanOp::Recv;
    s.chan_waits = vec![recv];
    assert_eq!(confirmed(&s)[0].summary, pinned);
    // Task 4 joins task 5: a lock and a join closing on each other.
    let mut s = books();
    s.joins = vec![join(3, task(4), vec![task(5)], 0)];
    let f = confirmed(&s);
    assert!(
        f[0].summary.starts_with("2 tasks can never proceed: each waits for blocking_mutex \"dl/pinned_waits\" held by another of them, or for join of task 5"),
        "{}",
        f[0].summary
    );
    assert!(f[0].traceable);
}
