//! The reduction's joins: a wait for the end of a task or thread.

use super::*;

// --- joins (Policy::Join: the end of a task or thread) ----------------------------------

/// A lock held across the join of a task that waits for it: both stay blocked, whether the
/// reduction runs in full or would have settled (the joiner holds the lock, so it cannot).
#[test]
fn a_lock_held_across_a_join_of_its_waiter_is_blocked() {
    let m = fifo(
        1,
        1,
        vec![hold(10, 1, Mode::Exclusive)],
        vec![wait(11, 1, Mode::Exclusive)],
    );
    let j = join_prim(u64::MAX, 11, None, [(10, None)]);
    assert!(!settles(&[m.clone(), j.clone()]));
    assert_eq!(reduce(&[m, j]).blocked, BTreeSet::from([10, 11]));
}

/// The joined task waits for a lock someone free holds: it will end, and so will the join.
/// A joiner that holds nothing: the fast path agrees with the full reduction.
#[test]
fn a_join_of_a_task_that_will_end_is_not_blocked() {
    let m = fifo(
        1,
        1,
        vec![hold(12, 1, Mode::Exclusive)],
        vec![wait(11, 1, Mode::Exclusive)],
    );
    let j = join_prim(u64::MAX, 11, None, [(10, None)]);
    assert!(settles(&[m.clone(), j.clone()]));
    let mut holding = m.clone();
    // The joiner holds an unrelated lock: the full reduction, same answer.
    holding.holds.push(hold(10, 1, Mode::Shared));
    holding.capacity = 2;
    assert!(!settles(&[holding.clone(), j.clone()]));
    assert!(
        reduce_with(&[holding, j], &Executor::default())
            .blocked
            .is_empty()
    );
}

/// Two tasks joining each other (no lock at all): a cycle of joins alone, caught by the fast
/// path's check and by the reduction; a chain of joins that ends is not.
#[test]
fn a_cycle_of_joins_is_blocked_and_a_chain_is_not() {
    let cycle = [
        join_prim(u64::MAX, 11, None, [(10, None)]),
        join_prim(u64::MAX - 1, 10, None, [(11, None)]),
    ];
    assert!(!settles(&cycle));
    assert_eq!(reduce(&cycle).blocked, BTreeSet::from([10, 11]));
    let chain = [
        join_prim(u64::MAX, 11, None, [(10, None)]),
        join_prim(u64::MAX - 1, 12, None, [(11, None)]),
    ];
    assert!(settles(&chain));
    assert!(reduce_with(&chain, &Executor::default()).blocked.is_empty());
}

/// A `JoinSet`'s joiner waits for each of its tasks and goes on when any one ends: blocked
/// only while every one of them is.
#[test]
fn a_join_of_any_task_of_a_set_is_blocked_only_if_all_are() {
    let m = fifo(
        1,
        1,
        vec![hold(10, 1, Mode::Exclusive)],
        vec![wait(11, 1, Mode::Exclusive)],
    );
    let on = |t| join_prim(u64::MAX - t, t, None, [(10, None)]);
    // Task 12 waits for nothing: it ends, and the joiner goes on, then releases the lock.
    assert!(reduce(&[m.clone(), on(11), on(12)]).blocked.is_empty());
    let mut both = m.clone();
    both.waiters.push(wait(12, 1, Mode::Exclusive));
    assert_eq!(
        reduce(&[both, on(11), on(12)]).blocked,
        BTreeSet::from([10, 11, 12])
    );
}

/// A join the joiner may leave (marked timed: it ran after the join began) never blocks it.
#[test]
fn a_join_its_waiter_may_leave_blocks_nothing() {
    let m = fifo(
        1,
        1,
        vec![hold(10, 1, Mode::Exclusive)],
        vec![wait(11, 1, Mode::Exclusive)],
    );
    let mut j = join_prim(u64::MAX, 11, None, [(10, None)]);
    j.waiters[0].timed = true;
    assert!(reduce(&[m, j]).blocked.is_empty());
}

/// A thread's join blocks the thread: a task pinned to it cannot run meanwhile.
#[test]
fn a_thread_join_blocks_its_thread() {
    // Thread 20 joins thread 21 (which waits for nothing else but a lock held by task 30,
    // pinned to thread 20's runtime thread): 30 cannot run, 21 cannot end, 20 waits.
    let m = MPrim {
        id: 1,
        policy: Policy::Exclusive,
        capacity: 1,
        closed: false,
        holds: vec![MHold {
            pinned_thread: Some(7),
            ..hold(30, 1, Mode::Exclusive)
        }],
        waiters: vec![MWait {
            blocks_thread: Some(8),
            ..wait(21, 1, Mode::Exclusive)
        }],
    };
    let j = join_prim(u64::MAX, 21, Some(8), [(20, Some(7))]);
    assert_eq!(
        reduce(&[m.clone(), j]).blocked,
        BTreeSet::from([20, 21, 30])
    );
    // The same join made by a task (it blocks no thread): task 30 runs and releases.
    let j = join_prim(u64::MAX, 21, Some(8), [(20, None)]);
    assert!(reduce(&[m, j]).blocked.is_empty());
}

// ---------------------------------------------------------------------------------------------
// The knot: who closes a deadlock, and who only waits behind it (issue 29, item 4)
// ---------------------------------------------------------------------------------------------

fn excl(id: u64, holds: Vec<MHold>, waiters: Vec<MWait>) -> MPrim {
    MPrim {
        policy: Policy::Exclusive,
        ..fifo(id, 1, holds, waiters)
    }
}

/// A two-task cycle on tokio mutexes with six untimed waiters queued on its first lock,
/// three of them ahead of the cycle's own wait there: all eight are blocked, two close it.
/// (The waiters ahead point at the holder, who alone stops them, not at each other: read
/// off the queue instead, they would join the cycle through the wait behind them.)
#[test]
fn six_waiters_queued_on_a_cycle_are_behind_its_knot() {
    let m = |i: u64| wait(i, 1, Mode::Exclusive);
    let a = fifo(
        1,
        1,
        vec![hold(10, 1, Mode::Exclusive)],
        vec![m(20), m(21), m(22), m(11), m(23), m(24), m(25)],
    );
    let b = fifo(2, 1, vec![hold(11, 1, Mode::Exclusive)], vec![m(10)]);
    let r = reduce(&[a, b]);
    assert_eq!(r.blocked.len(), 8);
    assert_eq!(r.knot(), BTreeSet::from([10, 11]));
    assert_eq!(r.blocked_by[&11], [10]);
    assert_eq!(r.blocked_by[&20], [10]);
    assert_eq!(r.blocked_by[&25], [10]);
}

/// A writer queued between two reads of one task (tokio's FIFO rwlock, parking_lot's
/// task-fair one): the writer waits for the first read, the second read for the writer.
/// Both close the knot, although the writer holds nothing; readers queued behind the
/// writer wait behind the knot, each kept by the writer at the head.
#[test]
fn a_writer_between_two_reads_of_one_task_is_in_the_knot() {
    const MAX: u32 = 1 << 20;
    let tokio = fifo(
        1,
        u64::from(MAX),
        vec![hold(1, 1, Mode::Shared)],
        vec![
            wait(2, MAX, Mode::Exclusive),
            wait(3, 1, Mode::Shared),
            wait(1, 1, Mode::Shared),
            wait(4, 1, Mode::Shared),
        ],
    );
    let r = reduce(&[tokio]);
    assert_eq!(r.blocked, BTreeSet::from([1, 2, 3, 4]));
    assert_eq!(r.knot(), BTreeSet::from([1, 2]));
    // The second read would be granted alone: it is kept by the head, not by the holder.
    assert_eq!(r.blocked_by[&1], [2]);
    assert_eq!(r.blocked_by[&2], [1]);
    assert_eq!(r.blocked_by[&4], [2]);

    let parking_lot = MPrim {
        policy: Policy::FairRwLock,
        ..fifo(
            1,
            0,
            vec![hold(1, 1, Mode::Shared)],
            vec![
                wait(3, 1, Mode::Shared),
                wait(2, 1, Mode::Exclusive),
                wait(1, 1, Mode::Shared),
            ],
        )
    };
    let r = reduce(&[parking_lot]);
    assert_eq!(r.blocked, BTreeSet::from([1, 2, 3]));
    // The read queued ahead of the writer is passed over: the claiming writer stops it.
    assert_eq!(r.blocked_by[&3], [2]);
    assert_eq!(r.knot(), BTreeSet::from([1, 2]));
}

/// A semaphore whose head asks for more than is left holds back a small request behind it
/// that alone would be granted: the small one waits behind, the head is in the knot.
#[test]
fn a_request_held_back_by_the_queue_head_waits_behind_the_knot() {
    let sem = fifo(
        1,
        2,
        vec![hold(1, 1, Mode::Permits)],
        vec![wait(2, 2, Mode::Permits), wait(3, 1, Mode::Permits)],
    );
    let m = fifo(
        2,
        1,
        vec![hold(2, 1, Mode::Exclusive)],
        vec![wait(1, 1, Mode::Exclusive)],
    );
    let r = reduce(&[sem, m]);
    assert_eq!(r.blocked, BTreeSet::from([1, 2, 3]));
    assert_eq!(r.blocked_by[&3], [2]);
    assert_eq!(r.knot(), BTreeSet::from([1, 2]));
}

/// A three-thread cycle of parking_lot mutexes, with a thread behind it that holds a lock
/// (its own code, pinned to itself) which a fourth thread waits for: a chain behind the knot.
/// A thread's own blocking wait does not keep it blocked (else it would close on itself).
#[test]
fn a_chain_behind_a_three_thread_cycle_is_not_in_its_knot() {
    let th = |n: u64| n | 1 << 63;
    let pinned = |n: u64| MHold {
        pinned_thread: Some(n),
        ..hold(th(n), 1, Mode::Exclusive)
    };
    let on = |n: u64| MWait {
        blocks_thread: Some(n),
        ..wait(th(n), 1, Mode::Exclusive)
    };
    let prims = [
        excl(1, vec![pinned(1)], vec![on(3), on(4)]),
        excl(2, vec![pinned(2)], vec![on(1)]),
        excl(3, vec![pinned(3)], vec![on(2)]),
        excl(4, vec![pinned(4)], vec![on(5)]),
    ];
    let r = reduce(&prims);
    assert_eq!(r.blocked, (1..=5).map(th).collect());
    assert_eq!(r.knot(), (1..=3).map(th).collect());
    assert_eq!(r.blocked_by[&th(4)], [th(1)]);
    assert_eq!(r.blocked_by[&th(5)], [th(4)]);
}

/// One task waiting for what it holds closes a knot on itself; one waiting behind it
/// does not.
#[test]
fn a_self_wait_is_a_knot_of_one() {
    let m = fifo(
        1,
        1,
        vec![hold(1, 1, Mode::Exclusive)],
        vec![wait(1, 1, Mode::Exclusive), wait(2, 1, Mode::Exclusive)],
    );
    let r = reduce(&[m]);
    assert_eq!(r.blocked, BTreeSet::from([1, 2]));
    assert_eq!(r.knot(), BTreeSet::from([1]));
}

/// Every worker blocked behind a holder that needs one: the holder and the workers'
/// waiters close the knot; an async waiter on the same lock waits behind it.
#[test]
fn an_executor_knot_holds_the_workers_blockers_and_the_holder() {
    let (mut m, exec) = every_worker_behind(1);
    m.waiters.push(wait(4, 1, Mode::Exclusive));
    let r = reduce_with(&[m], &exec);
    assert_eq!(r.blocked, BTreeSet::from([1, 2, 3, 4]));
    assert_eq!(r.blocked_by[&1], [2, 3]);
    assert_eq!(r.knot(), BTreeSet::from([1, 2, 3]));
}

/// A task that needs a worker while one of two is free is not kept by the other worker's
/// blocker: here it is stuck behind a separate cycle, and the task blocking one worker waits
/// for its lock; neither closes anything.
#[test]
fn a_free_worker_keeps_a_task_out_of_the_knot() {
    let exec = Executor {
        needs_worker: HashMap::from([(1, 5)]),
        workers: HashMap::from([(10, 5), (11, 5)]),
        worker_count: HashMap::from([(5, 2)]),
    };
    let held_by_1 = excl(
        1,
        vec![hold(1, 1, Mode::Exclusive)],
        vec![MWait {
            blocks_thread: Some(10),
            ..wait(2, 1, Mode::Exclusive)
        }],
    );
    // Task 1 waits for what task 6 holds; 6 and 7 deadlock.
    let prims = [
        held_by_1,
        fifo(
            2,
            1,
            vec![hold(6, 1, Mode::Exclusive)],
            vec![wait(1, 1, Mode::Exclusive), wait(7, 1, Mode::Exclusive)],
        ),
        fifo(
            3,
            1,
            vec![hold(7, 1, Mode::Exclusive)],
            vec![wait(6, 1, Mode::Exclusive)],
        ),
    ];
    let r = reduce_with(&prims, &exec);
    assert_eq!(r.blocked, BTreeSet::from([1, 2, 6, 7]));
    assert_eq!(r.blocked_by[&1], [6]);
    assert_eq!(r.knot(), BTreeSet::from([6, 7]));
}

/// Nothing blocked: no knot, and no books kept.
#[test]
fn nothing_blocked_has_no_knot() {
    let m = fifo(
        1,
        1,
        vec![hold(1, 1, Mode::Exclusive)],
        vec![wait(2, 1, Mode::Exclusive)],
    );
    let r = reduce(&[m]);
    assert!(r.blocked.is_empty() && r.blocked_by.is_empty() && r.knot().is_empty());
}
