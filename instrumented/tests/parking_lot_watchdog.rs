//! The watchdog's exit path: a deadlock among plain threads can never wake to fail a test, so
//! under `lockscope::detector::watchdog()` the process prints the report to stderr and exits
//! non-zero. Tested in a child process: this test binary, filtered to the deliberately
//! deadlocking (and `#[ignore]`d) test below.

use std::sync::{Arc, Barrier};
use std::thread;

use lockscope::parking_lot::Mutex;

#[path = "common/mod.rs"]
mod common;

/// Set in the child's environment only: the deadlocking test does nothing without it.
const CHILD_ENV: &str = "LOCKSCOPE_PL_WATCHDOG_CHILD";
const CHILD_TEST: &str = "abba_deadlock_under_the_watchdog";

/// Deadlocks for real: two threads, A then B and B then A, meeting at a barrier once each
/// holds its first lock. Only the watchdog ends this process.
#[test]
#[ignore = "deliberately deadlocks; run in a child process by watchdog_ends_a_deadlocked_process_with_the_report"]
fn abba_deadlock_under_the_watchdog() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let _watchdog = lockscope::detector::watchdog();
    let a = Arc::new(Mutex::named("pl_watchdog_a", ()));
    let b = Arc::new(Mutex::named("pl_watchdog_b", ()));
    let barrier = Arc::new(Barrier::new(2));
    let (a1, b1, barrier1) = (a.clone(), b.clone(), barrier.clone());
    let t = thread::spawn(move || {
        let _a = a1.lock();
        barrier1.wait();
        let _b = b1.lock();
    });
    let _b = b.lock();
    barrier.wait();
    let _a = a.lock();
    t.join().unwrap();
    unreachable!("the two threads deadlock");
}

#[test]
fn watchdog_ends_a_deadlocked_process_with_the_report() {
    let run = common::run_child(
        &[
            CHILD_TEST,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ],
        CHILD_ENV,
    );
    run.assert_ended_by_the_watchdog();
    let stderr = &run.stderr;
    assert!(
        stderr.contains("pl_watchdog_a") && stderr.contains("pl_watchdog_b"),
        "the report names both mutexes:\n{stderr}"
    );
    assert!(
        stderr.contains("parking_lot_watchdog.rs"),
        "the report gives the sites:\n{stderr}"
    );
}
