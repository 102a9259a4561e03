//! `#[lockscope::test]` when the deadlock blocks the test's own thread: the test can never
//! notice, so the watchdog ends the process with the report. Two things must hold that a
//! `--nocapture` run would hide: the report reaches stderr although the test harness captures
//! the output of the test (and of threads spawned from it, the watchdog included), and a body
//! that blocks in its very first poll, before any `.await`, is caught too. Tested in a child
//! process: this test binary, filtered to one deliberately deadlocking (`#[ignore]`d) test.

use lockscope::parking_lot::Mutex;

#[path = "common/mod.rs"]
mod common;

/// Set in the child's environment only: the deadlocking tests do nothing without it.
const CHILD_ENV: &str = "LOCKSCOPE_TEST_EXIT_CHILD";

/// A helper re-locks what its caller holds, before the body's first `.await`.
#[lockscope::test]
#[ignore = "deliberately deadlocks; run in a child process by the tests below"]
async fn relock_before_the_first_await() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let m = Mutex::named("exit_cfg", 0);
    let _g = m.lock();
    let _h = m.lock();
    unreachable!("a parking_lot mutex is not reentrant");
}

/// The same after an `.await`, on a multi-thread runtime.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "deliberately deadlocks; run in a child process by the tests below"]
async fn relock_after_an_await() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    tokio::task::yield_now().await;
    let m = Mutex::named("exit_cfg_mt", 0);
    let _g = m.lock();
    let _h = m.lock();
    unreachable!("a parking_lot mutex is not reentrant");
}

fn assert_reported(test: &str, mutex: &str) {
    // Output captured, as a plain `cargo test` does.
    let run = common::run_child(
        &[test, "--exact", "--ignored", "--test-threads=1"],
        CHILD_ENV,
    );
    run.assert_ended_by_the_watchdog();
    let stderr = &run.stderr;
    assert!(
        stderr.contains(mutex),
        "the report reaches stderr under output capture:\n{stderr}"
    );
    assert!(
        stderr.contains(&format!("in test test_attribute_exit::{test}:")),
        "the report names the test:\n{stderr}"
    );
    assert!(
        stderr.contains("test_attribute_exit.rs"),
        "the report gives the sites:\n{stderr}"
    );
    // The nested acquire is sighted just before the thread blocks for good: the watchdog
    // reports it all the same (the thread never gets to), and the test's report lists it.
    assert!(
        stderr.contains("lockscope: nested-acquire:"),
        "the report lists the nested acquire:\n{stderr}"
    );
}

#[test]
fn a_body_blocked_before_its_first_await_ends_the_process_with_the_report() {
    assert_reported("relock_before_the_first_await", "exit_cfg");
}

#[test]
fn a_blocked_test_thread_reports_under_output_capture() {
    assert_reported("relock_after_an_await", "exit_cfg_mt");
}
