//! Short worker stalls fail a test: in a test, a blocking wait that holds an async worker for
//! more than 10 ms (`worker_stall_ms`) is a `blocking-in-async`, and a rule that panics never
//! takes the watchdog down. Each failing shape runs in a child process (this binary, filtered
//! to one `#[ignore]`d test) and must fail with the expected report.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use lockscope::parking_lot::Mutex;

#[path = "common/mod.rs"]
mod common;

use common::wait_for_waiters;

const CHILD_ENV: &str = "LOCKSCOPE_WORKER_STALL_CHILD";

fn child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// The test body holds a blocking guard across a 30 ms sleep while a task blocks its worker
/// waiting for it: the worker stalls ~30 ms.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "deliberately stalls a worker; run in a child process by the tests below"]
async fn guard_across_a_30ms_await() {
    if !child() {
        return;
    }
    let m = Arc::new(Mutex::named("stall_30ms", 0));
    let g = m.lock();
    let m2 = m.clone();
    let t = tokio::spawn(async move {
        *m2.lock() += 1;
    });
    wait_for_waiters("stall_30ms", 1);
    tokio::time::sleep(Duration::from_millis(30)).await;
    drop(g);
    t.await.unwrap();
}

/// Four tasks block all four workers for 40 ms behind a lock a plain thread holds (the
/// mysql_async pattern).
#[lockscope::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "deliberately stalls every worker; run in a child process by the tests below"]
async fn every_worker_40ms_behind_a_plain_thread() {
    if !child() {
        return;
    }
    let m = Arc::new(Mutex::named("stall_40ms", 0));
    let taken = Arc::new(Barrier::new(2));
    let (m0, taken0) = (m.clone(), taken.clone());
    let holder = std::thread::spawn(move || {
        let g = m0.lock();
        taken0.wait();
        wait_for_waiters("stall_40ms", 4);
        std::thread::sleep(Duration::from_millis(40));
        drop(g);
    });
    taken.wait();
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let m = m.clone();
            tokio::spawn(async move {
                *m.lock() += 1;
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    holder.join().unwrap();
}

/// The canary: a rule panics on one tick; a deadlock made after it is still caught.
#[lockscope::test]
#[ignore = "deliberately deadlocks; run in a child process by the tests below"]
async fn deadlock_after_a_panicking_tick() {
    if !child() {
        return;
    }
    let before = lockscope::detector::watchdog_ticks();
    lockscope::detector::__private::inject_tick_panic();
    let deadline = Instant::now() + Duration::from_secs(5);
    while dropped_ticks() == 0 {
        assert!(Instant::now() < deadline, "the injected panic never ran");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The watchdog goes on ticking.
    while lockscope::detector::watchdog_ticks() < before + 3 {
        assert!(Instant::now() < deadline, "the watchdog stopped ticking");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let a = Arc::new(lockscope::tokio::Mutex::named("canary_a", ()));
    let b = Arc::new(lockscope::tokio::Mutex::named("canary_b", ()));
    let (a2, b2) = (a.clone(), b.clone());
    let _ga = a.lock().await;
    let t = tokio::spawn(async move {
        let _gb = b2.lock().await;
        let _ga = a2.lock().await;
    });
    tokio::task::yield_now().await;
    let _gb = b.lock().await;
    t.await.unwrap();
}

fn dropped_ticks() -> u64 {
    lockscope::detector::dropped_counts()
        .iter()
        .find(|(what, _)| *what == "tick")
        .map_or(0, |(_, n)| *n)
}

fn run(test: &str) -> String {
    let run = common::run_child(
        &[test, "--exact", "--ignored", "--test-threads=1"],
        CHILD_ENV,
    );
    let all = format!("{}\n{}", run.stdout, run.stderr);
    assert_ne!(run.code, Some(0), "{test} must fail:\n{all}");
    assert!(all.contains("1 failed") || run.code == Some(101), "{all}");
    all
}

#[test]
fn a_guard_held_across_a_30ms_await_fails_the_test() {
    let out = run("guard_across_a_30ms_await");
    assert!(
        out.contains("lockscope: blocking-in-async") && out.contains("stall_30ms"),
        "{out}"
    );
}

#[test]
fn every_worker_stalled_40ms_fails_the_test() {
    let out = run("every_worker_40ms_behind_a_plain_thread");
    assert!(
        out.contains("lockscope: blocking-in-async") && out.contains("stall_40ms"),
        "{out}"
    );
    assert!(
        !out.contains("lockscope: deadlock"),
        "the holder needs no worker:\n{out}"
    );
}

#[test]
fn a_panicking_rule_does_not_kill_the_watchdog() {
    let out = run("deadlock_after_a_panicking_tick");
    assert!(
        out.contains("the watchdog's analysis panicked"),
        "the panic is reported once on stderr:\n{out}"
    );
    assert_eq!(
        out.matches("the watchdog's analysis panicked").count(),
        1,
        "{out}"
    );
    assert!(
        out.contains("lockscope: deadlock") && out.contains("canary_a"),
        "{out}"
    );
}
