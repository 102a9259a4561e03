//! Joins are waits the detector sees (issue 28): a task that holds a lock and awaits the
//! `JoinHandle` of a task that needs it, a thread that holds a mutex and joins a thread that
//! waits for it, are `deadlock`s within an armed test's second, naming the join; and the
//! shapes a naive detector would flag stay silent.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lockscope::detector::FindingKind;
use lockscope::tokio::{Mutex, task};

#[path = "common/mod.rs"]
mod common;

use common::{arm, armed_failure, until, until_waited};

/// The test body holds a lock and awaits a task it spawned that needs the lock.
async fn hold_and_await(lock: &'static str) {
    let m = Arc::new(Mutex::named(lock, 0));
    let _g = m.lock().await;
    let m2 = m.clone();
    let worker = task::spawn(async move {
        *m2.lock().await += 1;
    });
    let _ = worker.await;
    unreachable!("the worker waits for the lock the body holds");
}

fn assert_join_deadlock(msg: &str, took: Duration, lock: &str) {
    assert!(
        msg.contains("lockscope: deadlock: 1 task and 1 thread can never proceed"),
        "{msg}"
    );
    assert!(msg.contains(&format!("mutex \"{lock}\"")), "{msg}");
    assert!(msg.contains("waits for join of task "), "{msg}");
    assert!(
        msg.contains("(spawned at instrumented/tests/joins.rs:"),
        "{msg}"
    );
    assert!(
        msg.contains("fix: do not hold a lock while awaiting a task"),
        "{msg}"
    );
    assert!(took < Duration::from_secs(1), "took {took:?}: {msg}");
}

#[test]
fn a_lock_held_across_the_join_of_a_task_that_needs_it_is_a_deadlock_current_thread() {
    let (msg, took) = armed_failure("join_ct", false, hold_and_await("join_ct"));
    assert_join_deadlock(&msg, took, "join_ct");
}

#[test]
fn a_lock_held_across_the_join_of_a_task_that_needs_it_is_a_deadlock_multi_thread() {
    let (msg, took) = armed_failure("join_mt", true, hold_and_await("join_mt"));
    assert_join_deadlock(&msg, took, "join_mt");
}

/// Two spawned tasks: the joiner is a task too, and the report names both tasks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_joining_a_task_it_blocks_is_a_deadlock_between_two_tasks() {
    let scope = arm("join_tasks", 1000, 1000);
    let m = Arc::new(Mutex::named("join_tasks", 0));
    let m1 = m.clone();
    let joiner = task::spawn(async move {
        let _g = m1.lock().await;
        let m2 = m1.clone();
        let worker = task::spawn(async move {
            let _g = m2.lock().await;
        });
        let _ = worker.await;
    });
    let f = until(&scope, FindingKind::Deadlock, "join_tasks").await;
    let text = f.to_string();
    assert!(
        text.starts_with("lockscope: deadlock: 2 tasks can never proceed: each waits for mutex \"join_tasks\" held by another of them, or for join of task "),
        "{text}"
    );
    assert_eq!(f.actors.len(), 2, "{text}");
    let joins: Vec<_> = f
        .actors
        .iter()
        .flat_map(|a| a.waits.iter())
        .filter(|w| w.primitive.kind == "join")
        .collect();
    assert_eq!(joins.len(), 1, "{text}");
    joiner.abort();
}

/// `spawn_blocking`: the closure runs as the blocking task tokio gives it, the actor its
/// locks are attributed to, and the one the join waits for. (The runtime is shut down in
/// the background: dropping it would wait for the blocked blocking task forever.)
#[test]
fn a_lock_held_across_the_join_of_a_blocking_task_that_needs_it_is_a_deadlock() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // A failed assertion must fail the test, not hang it in the runtime's drop.
    let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async {
            let scope = arm("join_blocking", 1000, 1000);
            let m = Arc::new(lockscope::parking_lot::Mutex::named("join_blocking", 0));
            let m1 = m.clone();
            task::spawn(async move {
                // Kept across the join on purpose (the deadlocked task never ends).
                std::mem::forget(m1.lock());
                let m2 = m1.clone();
                let worker = task::spawn_blocking(move || {
                    *m2.lock() += 1;
                });
                let _ = worker.await;
            });
            let f = until(&scope, FindingKind::Deadlock, "join_blocking").await;
            assert!(f.to_string().contains("waits for join of task "), "{f}");
        })
    }));
    rt.shutdown_background();
    if let Err(panic) = checked {
        std::panic::resume_unwind(panic);
    }
}

/// A `JoinSet` drained while holding the lock every task of the set waits for: the joiner
/// waits for any one of them, and none can end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draining_a_set_whose_every_task_needs_the_held_lock_is_a_deadlock() {
    let scope = arm("join_set_dl", 1000, 1000);
    let m = Arc::new(Mutex::named("join_set_dl", 0));
    let m1 = m.clone();
    let joiner = task::spawn(async move {
        let _g = m1.lock().await;
        let mut set = task::JoinSet::new();
        for _ in 0..2 {
            let m2 = m1.clone();
            set.spawn(async move { *m2.lock().await += 1 });
        }
        while set.join_next().await.is_some() {}
    });
    let f = until(&scope, FindingKind::Deadlock, "join_set_dl").await;
    let text = f.to_string();
    assert!(
        text.contains("3 tasks can never proceed")
            && text.contains("join of any of 2 tasks of a JoinSet"),
        "{text}"
    );
    joiner.abort();
}

/// A `JoinSet` one of whose tasks needs the held lock while another ends by itself: the
/// joiner goes on when that one ends, releases, and the other gets the lock. Silent.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_with_one_task_free_to_end_is_silent() {
    let m = Arc::new(Mutex::named("neg_join_set_one_free", 0));
    let g = m.lock().await;
    let mut set = task::JoinSet::new();
    let m2 = m.clone();
    set.spawn(async move { *m2.lock().await += 1 });
    set.spawn(async { tokio::time::sleep(Duration::from_millis(300)).await });
    set.join_next().await.unwrap().unwrap();
    drop(g);
    set.join_next().await.unwrap().unwrap();
    assert_eq!(*m.lock().await, 1);
}

fn send_sync<T: Send + Sync>() {}
fn unpin_unwind_safe<T: Unpin + std::panic::UnwindSafe + std::panic::RefUnwindSafe>() {}

/// The handles are `Send`, `Sync`, `Unpin` and unwind-safe as tokio's and std's are.
#[test]
fn handles_have_the_auto_traits_of_tokio_and_std() {
    send_sync::<task::JoinHandle<u8>>();
    unpin_unwind_safe::<task::JoinHandle<std::rc::Rc<u8>>>();
    send_sync::<task::JoinSet<u8>>();
    send_sync::<lockscope::std::thread::JoinHandle<std::rc::Rc<u8>>>();
    // As std's: Send and Sync when T is Send (a thread's JoinHandle, whatever T).
    send_sync::<lockscope::std::thread::ScopedJoinHandle<'static, u8>>();
    send_sync::<lockscope::std::thread::Builder>();
}

/// Thread `X` holds a mutex and joins thread `T`, which waits for it.
fn thread_holds_and_joins(m: Arc<lockscope::parking_lot::Mutex<i32>>) {
    use lockscope::std::thread;
    thread::Builder::new()
        .name("joiner".into())
        .spawn(move || {
            let _g = m.lock();
            let m2 = m.clone();
            let t = thread::Builder::new()
                .name("joined".into())
                .spawn(move || *m2.lock() += 1)
                .unwrap();
            let _ = t.join();
        })
        .unwrap();
}

#[tokio::test]
async fn a_thread_holding_a_mutex_joins_a_thread_that_waits_for_it_is_a_deadlock() {
    let scope = arm("join_threads", 1000, 1000);
    thread_holds_and_joins(Arc::new(lockscope::parking_lot::Mutex::named(
        "join_threads",
        0,
    )));
    let f = until(&scope, FindingKind::Deadlock, "join_threads").await;
    let text = f.to_string();
    assert!(
        text.starts_with("lockscope: deadlock: 2 threads can never proceed: each waits for blocking_mutex \"join_threads\" held by another of them, or for join of thread 'joined'"),
        "{text}"
    );
    assert!(
        text.contains("waits for join of thread 'joined'")
            && text.contains("(spawned at instrumented/tests/joins.rs:"),
        "{text}"
    );
}

#[tokio::test]
async fn a_std_mutex_held_across_a_thread_join_is_a_deadlock() {
    use lockscope::std::thread;
    let scope = arm("join_std", 1000, 1000);
    let m = Arc::new(lockscope::std::sync::Mutex::named("join_std", 0));
    thread::spawn(move || {
        let _g = m.lock().unwrap();
        let m2 = m.clone();
        let _ = thread::spawn(move || *m2.lock().unwrap() += 1).join();
    });
    let f = until(&scope, FindingKind::Deadlock, "join_std").await;
    assert!(f.to_string().contains("waits for join of thread"), "{f}");
}

/// A scope whose owner holds a mutex that its scoped thread (never joined explicitly) waits
/// for: the scope's implicit join at its end is the wait that closes the cycle.
#[tokio::test]
async fn a_scope_ending_while_its_owner_holds_what_a_scoped_thread_needs_is_a_deadlock() {
    use lockscope::std::thread;
    let scope = arm("join_scope", 1000, 1000);
    let m = Arc::new(lockscope::parking_lot::Mutex::named("join_scope", 0));
    thread::Builder::new()
        .name("scope owner".into())
        .spawn(move || {
            let _g = m.lock();
            thread::scope(|s| {
                s.spawn(|| *m.lock() += 1);
            });
        })
        .unwrap();
    let f = until(&scope, FindingKind::Deadlock, "join_scope").await;
    let text = f.to_string();
    assert!(
        text.contains("join of any of 1 thread of a thread::scope"),
        "{text}"
    );
}

// --- negative controls: each must stay silent in an armed test ---------------------------

/// Aborted, then awaited while holding the lock the task waits for: the task ends at once.
#[lockscope::test]
async fn an_aborted_handle_awaited_while_holding_the_lock_is_silent() {
    let m = Arc::new(Mutex::named("neg_join_abort", 0));
    for _ in 0..100 {
        let g = m.lock().await;
        let m2 = m.clone();
        let h = task::spawn(async move { *m2.lock().await += 1 });
        until_waited(&m).await;
        h.abort();
        assert!(h.await.unwrap_err().is_cancelled());
        drop(g);
    }
}

/// Aborted through an `AbortHandle` by another task while the join waits: the join ends.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_ended_by_an_abort_from_elsewhere_is_silent() {
    let m = Arc::new(Mutex::named("neg_join_abort_elsewhere", 0));
    let g = m.lock().await;
    let m2 = m.clone();
    let h = task::spawn(async move { *m2.lock().await += 1 });
    until_waited(&m).await;
    let abort = h.abort_handle();
    // Aborted a few ticks later, after the detector has looked at the join several times.
    let aborter = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        abort.abort();
    });
    assert!(h.await.unwrap_err().is_cancelled());
    aborter.await.unwrap();
    drop(g);
}

/// A `JoinSet` drained while holding a lock its tasks do not need, for several ticks.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_set_drained_while_holding_a_lock_the_tasks_do_not_need_is_silent() {
    let m = Mutex::named("neg_join_set", 0);
    let _g = m.lock().await;
    let mut set = task::JoinSet::new();
    for i in 0..8u64 {
        set.spawn(async move {
            tokio::time::sleep(Duration::from_millis(40 * i)).await;
            i
        });
    }
    let mut sum = 0;
    while let Some(r) = set.join_next().await {
        sum += r.unwrap();
    }
    assert_eq!(sum, 28);
}

/// Spawns a task that adds one under `m` (which the caller holds), waits until it queues for
/// it, and races its handle against a 5 ms timer, which wins: the handle, awaited once.
async fn outwaited_by_a_timer(m: &Arc<Mutex<u64>>) -> task::JoinHandle<()> {
    let m2 = m.clone();
    let mut h = task::spawn(async move { *m2.lock().await += 1 });
    until_waited(m).await;
    tokio::select! {
        _ = &mut h => unreachable!("the task waits for the lock"),
        _ = tokio::time::sleep(Duration::from_millis(5)) => {}
    }
    h
}

/// A handle polled once, then dropped (detached): no wait is left behind, so the lock held
/// while the task waits for it for a few ticks is no deadlock.
#[lockscope::test]
async fn a_dropped_handle_leaves_no_wait() {
    let m = Arc::new(Mutex::named("neg_join_detached", 0));
    let g = m.lock().await;
    let h = outwaited_by_a_timer(&m).await;
    drop(h);
    tokio::time::sleep(Duration::from_millis(400)).await;
    drop(g);
    // The detached task gets the lock and ends.
    let deadline = Instant::now() + Duration::from_secs(5);
    while *m.lock().await == 0 {
        assert!(Instant::now() < deadline);
        tokio::task::yield_now().await;
    }
}

/// A join raced against a short timer while holding the lock the task needs, 100 rounds, with
/// the analysis run back to back on a thread beside it (as a test waiting for a finding
/// does): each round the timer wins, the lock is released, the task ends. A join's start is
/// on the published clock, so it may look a tick old the moment it begins; the deadlock rule
/// must not take two looks a moment apart for two ticks.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_select_of_a_join_and_a_timer_is_silent_however_often_the_analysis_runs() {
    let stop = Arc::new(AtomicBool::new(false));
    let analyses = std::thread::spawn({
        let stop = stop.clone();
        move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                lockscope::detector::check_now();
                n += 1;
            }
            n
        }
    });
    let m = Arc::new(Mutex::named("neg_join_select_hammered", 0));
    for round in 0..100 {
        let g = m.lock().await;
        let h = outwaited_by_a_timer(&m).await;
        drop(g);
        h.await.unwrap();
        assert_eq!(*m.lock().await, round + 1);
    }
    stop.store(true, Ordering::Relaxed);
    // Not one per round: on a loaded machine an analysis may take longer than a round.
    let n = analyses.join().unwrap();
    assert!(n > 20, "the analyses did not run ({n})");
}

/// Joining a task that runs for several ticks and ends normally, holding a lock it does not
/// need.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_of_a_task_that_ends_while_a_lock_it_does_not_need_is_held_is_silent() {
    let m = Mutex::named("neg_join_unrelated", 0);
    let _g = m.lock().await;
    let h = task::spawn(async {
        tokio::time::sleep(Duration::from_millis(400)).await;
        5
    });
    assert_eq!(h.await.unwrap(), 5);
}

/// A task that panics, and a blocking task that sleeps, each joined over several ticks while
/// a lock neither takes is held: the joins end (one with the panic), nothing is reported.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_of_a_panicking_task_and_a_blocking_one_are_silent() {
    let m = Mutex::named("neg_join_panic", 0);
    let _g = m.lock().await;
    let h = task::spawn(async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        panic!("the task's own bug");
    });
    assert!(h.await.unwrap_err().is_panic());
    let b = task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(300)));
    b.await.unwrap();
}

/// The task needs the lock the joiner holds, but only tries it and falls back: no wait.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_only_tries_the_lock_is_silent() {
    let m = Arc::new(Mutex::named("neg_join_try", 0));
    let fell_back = Arc::new(AtomicBool::new(false));
    for _ in 0..100 {
        let g = m.lock().await;
        let (m2, f2) = (m.clone(), fell_back.clone());
        let h = task::spawn(async move {
            match m2.try_lock() {
                Ok(mut g) => *g += 1,
                Err(_) => f2.store(true, Ordering::Relaxed),
            }
        });
        h.await.unwrap();
        drop(g);
    }
    assert!(fell_back.load(Ordering::Relaxed));
}

/// The joined thread takes the lock only after the joiner released it.
#[lockscope::test]
fn a_thread_join_after_the_lock_is_released_is_silent() {
    use lockscope::std::thread;
    let m = Arc::new(lockscope::parking_lot::Mutex::named("neg_join_thread", 0));
    for _ in 0..100 {
        let g = m.lock();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let m2 = m.clone();
        let t = thread::spawn(move || {
            rx.recv().unwrap();
            *m2.lock() += 1;
        });
        drop(g);
        tx.send(()).unwrap();
        t.join().unwrap();
    }
    assert_eq!(*m.lock(), 100);
}

/// A thread that had finished before its join: no wait at all; scoped threads joined (one
/// explicitly, one by the scope's end) while a lock they never take is held.
#[lockscope::test]
fn finished_and_scoped_joins_are_silent() {
    use lockscope::std::thread;
    let m = lockscope::parking_lot::Mutex::named("neg_join_scoped", 0);
    let g = m.lock();
    let t = thread::spawn(|| 1);
    while !t.is_finished() {
        thread::yield_now();
    }
    assert_eq!(t.join().unwrap(), 1);
    let n = thread::scope(|s| {
        // Left to the scope's implicit join, while the lock it never takes is held.
        s.spawn(|| thread::sleep(Duration::from_millis(300)));
        let h = s.spawn(|| {
            thread::sleep(Duration::from_millis(300));
            2
        });
        h.join().unwrap()
    });
    assert_eq!(n, 2);
    drop(g);
}

// --- the actor a join waits for -----------------------------------------------------------

/// A task's locks are attributed to the actor its handle's join waits for: `spawn`,
/// `spawn_blocking` and `spawn_local` alike.
#[tokio::test]
async fn the_joined_actor_is_the_one_locks_are_attributed_to() {
    use lockscope::detector::ActorId;
    let h = task::spawn(async { lockscope::detector::__private::actor::current() });
    let id = h.id();
    assert_eq!(h.await.unwrap(), ActorId::task(id));
    let h = task::spawn_blocking(lockscope::detector::__private::actor::current);
    let id = h.id();
    assert_eq!(h.await.unwrap(), ActorId::task(id));
    let local = task::LocalSet::new();
    local
        .run_until(async {
            let h = task::spawn_local(async { lockscope::detector::__private::actor::current() });
            let id = h.id();
            assert_eq!(h.await.unwrap(), ActorId::task(id));
        })
        .await;
}

// --- a plain test whose own thread joins: the watchdog ends the process -----------------

const CHILD_ENV: &str = "LOCKSCOPE_JOINS_CHILD";

#[lockscope::test]
#[ignore = "deliberately deadlocks; run in a child process by the test below"]
fn plain_test_thread_joins_a_thread_it_blocks() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let m = Arc::new(lockscope::parking_lot::Mutex::named("join_plain", 0));
    let _g = m.lock();
    let m2 = m.clone();
    let t = lockscope::std::thread::spawn(move || *m2.lock() += 1);
    let _ = t.join();
    unreachable!("the thread waits for the lock the test holds");
}

#[test]
fn a_plain_test_blocked_in_a_join_ends_with_the_report() {
    let run = common::run_child(
        &[
            "plain_test_thread_joins_a_thread_it_blocks",
            "--exact",
            "--ignored",
            "--test-threads=1",
        ],
        CHILD_ENV,
    );
    run.assert_ended_by_the_watchdog();
    let stderr = &run.stderr;
    assert!(stderr.contains("join_plain"), "{stderr}");
    assert!(stderr.contains("waits for join of thread"), "{stderr}");
    assert!(
        stderr.contains("in test joins::plain_test_thread_joins_a_thread_it_blocks:"),
        "{stderr}"
    );
}
