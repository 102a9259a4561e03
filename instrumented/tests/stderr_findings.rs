//! Findings reach the user in a plain `#[tokio::test]` suite, run without `--nocapture`:
//! the watchdog thread starts in whichever test creates the first lockscope primitive and
//! inherits that test's output capture, so what it reports later must go to the process's
//! stderr itself. The two `child_` tests are the user's suite (run only as a child process).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

const CHILD: &str = "LOCKSCOPE_STDERR_CHILD";

fn in_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// The user's first test: creates a lockscope semaphore, so the watchdog starts here.
#[tokio::test]
async fn child_a_creates_the_first_primitive() {
    if !in_child() {
        return;
    }
    let s = lockscope::tokio::Semaphore::new(1);
    drop(s.acquire().await.unwrap());
}

/// The user's second test: leaves a waiter stuck past `LOCKSCOPE_STUCK_MS`, and returns once
/// the detector has made its finding (bounded: 10 s). It passes: nothing is armed.
#[tokio::test]
async fn child_b_leaves_a_waiter_stuck() {
    if !in_child() {
        return;
    }
    let pool = Arc::new(lockscope::tokio::Semaphore::named("stderr_pool", 1));
    let held = pool.clone().acquire_owned().await.unwrap();
    let p = pool.clone();
    let waiter = tokio::spawn(async move { drop(p.acquire().await) });
    let deadline = Instant::now() + Duration::from_secs(10);
    while !lockscope::detector::findings().iter().any(|f| {
        f.kind == lockscope::detector::FindingKind::StuckQueue && f.involves("stderr_pool")
    }) {
        assert!(
            Instant::now() < deadline,
            "no stuck-queue finding within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    waiter.abort();
    drop(held);
}

#[test]
fn a_plain_tokio_test_suite_shows_findings_on_stderr_without_nocapture() {
    if in_child() {
        return;
    }
    let run = common::run_child_env(
        &["child_", "--test-threads=1"],
        &[(CHILD, "1"), ("LOCKSCOPE_STUCK_MS", "500")],
    );
    assert!(
        run.stdout.contains("running 2 tests") && run.stdout.contains("test result: ok. 2 passed"),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    assert!(
        run.stderr.contains("lockscope: stuck-queue") && run.stderr.contains("stderr_pool"),
        "stderr:\n{}",
        run.stderr
    );
}
