//! The executor in the model: a blocking wait that blocks the thread an async holder needs.
//!
//! Each shape below hangs for good without lockscope: a blocking (`parking_lot`) guard is held
//! across an `.await`, and the task that wants it blocks the only thread (a `current_thread`
//! runtime, a `LocalSet`) or every worker of a multi-thread runtime, so the holder can never
//! run again to release it. `#[lockscope::test]` must report each as a `deadlock` and never
//! hang silently: when the test's own thread is the one blocked, the watchdog prints the
//! report and ends the process. Each shape runs in a child process (this test binary,
//! filtered to one `#[ignore]`d test), bounded by the parent.

use std::sync::Arc;
use std::time::Duration;

use lockscope::parking_lot::Mutex;

#[path = "common/mod.rs"]
mod common;

/// Set in the child's environment only: the hanging tests do nothing without it.
const CHILD_ENV: &str = "LOCKSCOPE_EXECUTOR_CHILD";

fn child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// The test body holds the guard across a sleep; a task on the same (only) thread locks.
#[lockscope::test]
#[ignore = "deliberately hangs; run in a child process by the tests below"]
async fn ct_body_holds_across_sleep() {
    if !child() {
        return;
    }
    common::body_holds_while_a_task_locks("ct_body").await;
}

/// A local task holds the guard across a sleep; another local task on the same (only) thread
/// locks.
#[lockscope::test]
#[ignore = "deliberately hangs; run in a child process by the tests below"]
async fn ct_local_task_holds_across_sleep() {
    if !child() {
        return;
    }
    tokio::task::LocalSet::new()
        .run_until(local_holder_and_waiter("ct_local"))
        .await;
}

/// A local task takes the guard and sleeps holding it; a second local task then locks.
async fn local_holder_and_waiter(name: &'static str) {
    let m = Arc::new(Mutex::named(name, 0));
    let (m1, m2) = (m.clone(), m.clone());
    let holder = tokio::task::spawn_local(async move {
        let g = m1.lock();
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(g);
    });
    tokio::task::yield_now().await;
    let waiter = tokio::task::spawn_local(async move {
        *m2.lock() += 1;
    });
    holder.await.unwrap();
    waiter.await.unwrap();
}

/// A `LocalSet` on a multi-thread runtime's `block_on` thread: a local task holds the guard
/// across a sleep, another local task locks, and the thread driving both blocks.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "deliberately hangs; run in a child process by the tests below"]
async fn local_set_task_holds_across_sleep() {
    if !child() {
        return;
    }
    tokio::task::LocalSet::new()
        .run_until(local_holder_and_waiter("local_set"))
        .await;
}

/// Every worker of a 2-worker runtime blocks behind a guard the test body (the `block_on`
/// future) holds across a sleep: no worker is left to fire its timer.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "deliberately hangs; run in a child process by the tests below"]
async fn mt_every_worker_blocked_behind_the_body() {
    if !child() {
        return;
    }
    let m = Arc::new(Mutex::named("mt_body", 0));
    let g = m.lock();
    let tasks: Vec<_> = (0..2)
        .map(|_| {
            let m = m.clone();
            tokio::spawn(async move {
                *m.lock() += 1;
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    drop(g);
    for t in tasks {
        t.await.unwrap();
    }
}

/// A plain `#[test]` driving its own runtime with `block_on` under the exit watchdog: the
/// `block_on` future holds the guard across a sleep and a task on its thread locks.
#[test]
#[ignore = "deliberately hangs; run in a child process by the tests below"]
fn block_on_future_holds_across_sleep() {
    if !child() {
        return;
    }
    let _watchdog = lockscope::detector::watchdog();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(common::body_holds_while_a_task_locks("block_on"));
}

/// Runs one hanging shape and checks it ended, non-zero, within 3 s, with a deadlock report
/// naming the test and the lock.
fn assert_deadlock_reported(test: &str, lock: &str) -> common::ChildRun {
    common::child_deadlock(test, CHILD_ENV, lock)
}

#[test]
fn current_thread_body_holding_across_an_await() {
    let run = assert_deadlock_reported("ct_body_holds_across_sleep", "ct_body");
    assert!(
        run.stderr
            .contains("in test executor_hangs::ct_body_holds_across_sleep"),
        "the watchdog ended the process:\n{}",
        run.stderr
    );
}

#[test]
fn current_thread_local_task_holding_across_an_await() {
    assert_deadlock_reported("ct_local_task_holds_across_sleep", "ct_local");
}

#[test]
fn local_set_task_holding_across_an_await() {
    assert_deadlock_reported("local_set_task_holds_across_sleep", "local_set");
}

#[test]
fn every_worker_blocked_behind_the_block_on_future() {
    let run = assert_deadlock_reported("mt_every_worker_blocked_behind_the_body", "mt_body");
    let all = format!("{}\n{}", run.stdout, run.stderr);
    assert!(
        all.contains("every worker"),
        "the report says why the holder cannot resume:\n{all}"
    );
}

#[test]
fn block_on_future_holding_across_an_await() {
    assert_deadlock_reported("block_on_future_holds_across_sleep", "block_on");
}
