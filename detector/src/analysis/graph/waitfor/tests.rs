use super::*;

fn hold(actor: u64, permits: u32, mode: Mode) -> MHold {
    MHold {
        actor,
        permits,
        mode,
        movable: false,
        pinned_thread: None,
    }
}
fn wait(actor: u64, permits: u32, mode: Mode) -> MWait {
    MWait {
        actor,
        permits,
        mode,
        timed: false,
        blocks_thread: None,
    }
}
fn fifo(id: u64, cap: u64, holds: Vec<MHold>, waiters: Vec<MWait>) -> MPrim {
    MPrim {
        id,
        policy: Policy::Fifo,
        capacity: cap,
        closed: false,
        holds,
        waiters,
    }
}

#[test]
fn abba_is_blocked() {
    let a = fifo(
        1,
        1,
        vec![hold(10, 1, Mode::Exclusive)],
        vec![wait(11, 1, Mode::Exclusive)],
    );
    let b = fifo(
        2,
        1,
        vec![hold(11, 1, Mode::Exclusive)],
        vec![wait(10, 1, Mode::Exclusive)],
    );
    assert_eq!(reduce(&[a, b]).blocked, BTreeSet::from([10, 11]));
}

#[test]
fn semaphore_with_a_free_holder_is_not_blocked() {
    // Task 1 holds one of two permits and waits for a mutex held by task 2; task 2 waits
    // for the semaphore, but task 3 holds the other permit and waits for nothing.
    let s = fifo(
        1,
        2,
        vec![hold(1, 1, Mode::Permits), hold(3, 1, Mode::Permits)],
        vec![wait(2, 1, Mode::Permits)],
    );
    let m = fifo(
        2,
        1,
        vec![hold(2, 1, Mode::Exclusive)],
        vec![wait(1, 1, Mode::Exclusive)],
    );
    assert!(reduce(&[s, m]).blocked.is_empty());
}

#[test]
fn request_beyond_capacity_is_not_claimed_a_deadlock() {
    // Only add_permits could ever grant it: the model does not claim a deadlock.
    let s = fifo(
        1,
        1,
        vec![],
        vec![wait(1, 2, Mode::Permits), wait(2, 1, Mode::Permits)],
    );
    assert!(reduce(&[s]).blocked.is_empty());
}

#[test]
fn nested_semaphore_knot() {
    // N=3 permits, three tasks hold one each and each waits for a second.
    let s = fifo(
        1,
        3,
        (1..=3).map(|a| hold(a, 1, Mode::Permits)).collect(),
        (1..=3).map(|a| wait(a, 1, Mode::Permits)).collect(),
    );
    assert_eq!(reduce(&[s]).blocked.len(), 3);
}

#[test]
fn fifo_head_blocks_smaller_requests() {
    // 2 of 3 permits held by task 9 (waiting on m, held by task 1); task 1 waits for 1 permit
    // behind task 2 which wants 2: FIFO keeps task 1 behind task 2, so all are stuck.
    let s = fifo(
        1,
        3,
        vec![hold(9, 2, Mode::Permits)],
        vec![wait(2, 2, Mode::Permits), wait(1, 1, Mode::Permits)],
    );
    let m = fifo(
        2,
        1,
        vec![hold(1, 1, Mode::Exclusive)],
        vec![wait(9, 1, Mode::Exclusive)],
    );
    assert_eq!(reduce(&[s, m]).blocked, BTreeSet::from([1, 2, 9]));
}

#[test]
fn tokio_read_inside_read_with_queued_writer() {
    let max = 32;
    let rw = fifo(
        1,
        max,
        vec![hold(1, 1, Mode::Shared)],
        vec![
            wait(2, max as u32, Mode::Exclusive),
            wait(1, 1, Mode::Shared),
        ],
    );
    assert_eq!(reduce(&[rw]).blocked, BTreeSet::from([1, 2]));
}

#[test]
fn timed_and_closed_waiters_are_free() {
    let mut w = wait(11, 1, Mode::Exclusive);
    w.timed = true;
    let a = fifo(1, 1, vec![hold(10, 1, Mode::Exclusive)], vec![w]);
    let b = fifo(
        2,
        1,
        vec![hold(11, 1, Mode::Exclusive)],
        vec![wait(10, 1, Mode::Exclusive)],
    );
    assert!(reduce(&[a, b]).blocked.is_empty());
    let mut s = fifo(
        3,
        1,
        vec![hold(5, 1, Mode::Permits)],
        vec![wait(5, 1, Mode::Permits)],
    );
    s.closed = true;
    assert!(reduce(&[s]).blocked.is_empty());
}

#[test]
fn fair_rwlock_recursive_read_passes_waiting_writer() {
    let mk = |mode| MPrim {
        id: 1,
        policy: Policy::FairRwLock,
        capacity: 0,
        closed: false,
        holds: vec![hold(1, 1, Mode::Shared)],
        waiters: vec![wait(2, 1, Mode::Exclusive), wait(1, 1, mode)],
    };
    assert_eq!(reduce(&[mk(Mode::Shared)]).blocked, BTreeSet::from([1, 2]));
    assert!(reduce(&[mk(Mode::SharedRecursive)]).blocked.is_empty());
}

#[test]
fn pinned_task_behind_blocked_thread() {
    // Task 7 holds a parking_lot mutex on thread 1 (current-thread runtime) across an
    // await; task 8 on the same thread blocks the thread waiting for that mutex.
    let m = MPrim {
        id: 1,
        policy: Policy::Exclusive,
        capacity: 1,
        closed: false,
        holds: vec![MHold {
            pinned_thread: Some(1),
            ..hold(7, 1, Mode::Exclusive)
        }],
        waiters: vec![MWait {
            blocks_thread: Some(1),
            ..wait(8, 1, Mode::Exclusive)
        }],
    };
    assert_eq!(reduce(&[m]).blocked, BTreeSet::from([7, 8]));
}

/// A parking_lot mutex held by actor 1, waited for by tasks 2 and 3 blocking threads 10
/// and 11, the two workers of runtime 5.
fn every_worker_behind(holder: u64) -> (MPrim, Executor) {
    let m = MPrim {
        id: 1,
        policy: Policy::Exclusive,
        capacity: 1,
        closed: false,
        holds: vec![hold(holder, 1, Mode::Exclusive)],
        waiters: vec![
            MWait {
                blocks_thread: Some(10),
                ..wait(2, 1, Mode::Exclusive)
            },
            MWait {
                blocks_thread: Some(11),
                ..wait(3, 1, Mode::Exclusive)
            },
        ],
    };
    let exec = Executor {
        needs_worker: HashMap::from([(holder, 5)]),
        workers: HashMap::from([(10, 5), (11, 5)]),
        worker_count: HashMap::from([(5, 2)]),
    };
    (m, exec)
}

#[test]
fn a_holder_needing_a_worker_when_every_worker_is_blocked() {
    let (m, exec) = every_worker_behind(1);
    assert_eq!(
        reduce_with(std::slice::from_ref(&m), &exec).blocked,
        BTreeSet::from([1, 2, 3])
    );
    // Without the executor, the holder is assumed to finish.
    assert!(reduce(std::slice::from_ref(&m)).blocked.is_empty());
    // One worker left free: the holder can run there.
    let three = Executor {
        worker_count: HashMap::from([(5, 3)]),
        ..exec.clone()
    };
    assert!(
        reduce_with(std::slice::from_ref(&m), &three)
            .blocked
            .is_empty()
    );
    // Workers of another runtime do not count.
    let other = Executor {
        needs_worker: HashMap::from([(1, 6)]),
        worker_count: HashMap::from([(5, 2), (6, 2)]),
        ..exec
    };
    assert!(reduce_with(&[m], &other).blocked.is_empty());
}

#[test]
fn a_worker_freed_by_a_timed_wait_lets_the_holder_run() {
    let (mut m, exec) = every_worker_behind(1);
    m.waiters[1].timed = true;
    assert!(reduce_with(&[m], &exec).blocked.is_empty());
}

#[test]
fn a_holder_pinned_to_its_own_thread() {
    // Thread actor 9 (a block_on future) holds; a task on its thread blocks it.
    let m = MPrim {
        id: 1,
        policy: Policy::Exclusive,
        capacity: 1,
        closed: false,
        holds: vec![MHold {
            pinned_thread: Some(9),
            ..hold(9 | 1 << 63, 1, Mode::Exclusive)
        }],
        waiters: vec![MWait {
            blocks_thread: Some(9),
            ..wait(4, 1, Mode::Exclusive)
        }],
    };
    assert_eq!(reduce(&[m]).blocked, BTreeSet::from([4, 9 | 1 << 63]));
}

/// A writer queued on a parking_lot rwlock that no reader holds claims it: a `read_recursive`
/// queued ahead of it waits too (it only passes a claim while readers hold the lock), and the
/// writer goes first (issue 17: no test had this case).
#[test]
fn a_claimed_rwlock_with_no_reader_holds_back_a_recursive_read() {
    let p = MPrim {
        id: 1,
        policy: Policy::FairRwLock,
        capacity: 0,
        closed: false,
        holds: vec![],
        waiters: vec![
            wait(2, 1, Mode::SharedRecursive),
            wait(3, 1, Mode::Exclusive),
        ],
    };
    assert_eq!(grantable(&p, &[], &[Some(0), Some(1)]), Some(1));
    // With a reader holding it, the recursive read passes the claim.
    let live = [Some((4, 1, Mode::Shared))];
    assert_eq!(grantable(&p, &live, &[Some(0), Some(1)]), Some(0));
}

/// A runtime whose workers are not known yet (none counted) is not "every worker blocked":
/// a task needing it is assumed to run.
#[test]
fn a_runtime_with_no_known_worker_does_not_block_its_tasks() {
    let (m, exec) = every_worker_behind(1);
    let none = Executor {
        worker_count: HashMap::from([(5, 0)]),
        ..exec
    };
    assert!(reduce_with(&[m], &none).blocked.is_empty());
}

/// When a granted blocking wait lets its thread run again, only the tasks that can then go
/// on do: a task pinned to that thread but caught in a deadlock of its own stays blocked.
#[test]
fn a_thread_running_again_frees_only_the_tasks_that_can_go_on() {
    // Task 2 blocks thread 10 waiting for a parking_lot mutex that task 1 (free) holds.
    let m1 = MPrim {
        id: 1,
        policy: Policy::Exclusive,
        capacity: 1,
        closed: false,
        holds: vec![hold(1, 1, Mode::Exclusive)],
        waiters: vec![MWait {
            blocks_thread: Some(10),
            ..wait(2, 1, Mode::Exclusive)
        }],
    };
    // Tasks 5 (pinned to thread 10 by a blocking guard) and 6: an ABBA deadlock.
    let m2 = fifo(
        2,
        1,
        vec![hold(6, 1, Mode::Exclusive)],
        vec![wait(5, 1, Mode::Exclusive)],
    );
    let m3 = fifo(
        3,
        1,
        vec![MHold {
            pinned_thread: Some(10),
            ..hold(5, 1, Mode::Exclusive)
        }],
        vec![wait(6, 1, Mode::Exclusive)],
    );
    assert_eq!(reduce(&[m1, m2, m3]).blocked, BTreeSet::from([5, 6]));
}

/// A queue of a hundred thousand waiters drains in the model in linear time: finding each
/// next head from the start of the queue made a tick quadratic (it showed in the profile of a
/// million-task backpressure run, on a third thread beside the two workers). Generous bound: a
/// quadratic walk takes minutes here.
#[test]
fn a_long_queue_drains_in_linear_time() {
    const N: u64 = 100_000;
    let holds = (0..20).map(|a| hold(a, 1, Mode::Permits)).collect();
    let waiters = (20..20 + N).map(|a| wait(a, 1, Mode::Permits)).collect();
    let start = std::time::Instant::now();
    let r = reduce(&[fifo(1, 20, holds, waiters)]);
    assert!(r.blocked.is_empty(), "every waiter is served in turn");
    assert!(
        start.elapsed() < std::time::Duration::from_secs(10),
        "{:?} for {N} waiters",
        start.elapsed()
    );
}

/// A million-task pool's shape: many waiters that hold nothing, on a semaphore whose holders
/// wait for nothing. It settles without the reduction's books. Once a holder waits for a
/// mutex that one of the waiters holds, it takes the full path, which finds the knot.
#[test]
fn waiters_that_hold_nothing_settle_in_one_pass() {
    let waiters: Vec<MWait> = (100..10_100).map(|a| wait(a, 1, Mode::Permits)).collect();
    let pool = fifo(1, 20, vec![hold(1, 20, Mode::Permits)], waiters.clone());
    assert!(settles(std::slice::from_ref(&pool)));
    assert!(reduce(std::slice::from_ref(&pool)).blocked.is_empty());

    // Task 1 holds every permit and waits for a mutex that task 100, queued for a permit,
    // holds: a knot, and everyone queued behind task 100 waits forever too.
    let knot = fifo(1, 20, vec![hold(1, 20, Mode::Permits)], waiters);
    let mutex = fifo(
        2,
        1,
        vec![hold(100, 1, Mode::Exclusive)],
        vec![wait(1, 1, Mode::Exclusive)],
    );
    let prims = [knot, mutex];
    assert!(!settles(&prims));
    let blocked = reduce(&prims).blocked;
    assert_eq!(blocked.len(), 10_001);
    assert!(blocked.contains(&1) && blocked.contains(&100));
}

mod joins;
