//! `#[lockscope::test]` itself: what it accepts, what it fails on, and that it never fails
//! on another test's findings.

use std::sync::Arc;
use std::time::Duration;

use lockscope::tokio::{Mutex, Semaphore};

#[lockscope::test]
async fn clean_current_thread_test_passes() {
    let m = Mutex::named("attr_clean", 0);
    *m.lock().await += 1;
    assert_eq!(*m.lock().await, 1);
}

#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn clean_multi_thread_test_passes() {
    let m = Arc::new(Mutex::named("attr_clean_mt", 0));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let m = m.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..100 {
                *m.lock().await += 1;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*m.lock().await, 800);
}

#[lockscope::test(start_paused = true)]
async fn start_paused_is_passed_through() {
    let before = tokio::time::Instant::now();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(before.elapsed() >= Duration::from_secs(3600));
}

#[lockscope::test]
async fn result_returning_test() -> Result<(), String> {
    let s = Semaphore::named("attr_result", 1);
    let _p = s.acquire().await.map_err(|e| e.to_string())?;
    Ok(())
}

#[lockscope::test]
#[should_panic(expected = "lockscope: nested-acquire")]
async fn nested_acquire_fails_the_test_at_its_end() {
    let s = Semaphore::named("attr_nested", 2);
    let _a = s.acquire().await.unwrap();
    let _b = s.acquire().await.unwrap();
}

/// Re-locking at the same call site (here by recursion) is not reported when it starts, since
/// futures joined in one task do the same correctly; a real self-wait never ends, and is
/// reported a watchdog tick later, well within the second.
async fn visit(m: &Mutex<u32>, depth: u32) {
    let _g = m.lock().await;
    if depth > 0 {
        Box::pin(visit(m, depth - 1)).await;
    }
}

#[lockscope::test]
#[should_panic(
    expected = "lockscope: nested-acquire: thread 'recursive_relock_at_one_site_still_fails'"
)]
async fn recursive_relock_at_one_site_still_fails() {
    let m = Mutex::named("attr_recursive", 0);
    visit(&m, 1).await;
}

/// `std::mem::forget` on a permit (not the permit's own `forget`) keeps it held for good.
#[lockscope::test]
#[should_panic(expected = "lockscope: leaked-permit")]
async fn mem_forget_of_a_permit_fails_the_test() {
    let s = Semaphore::named("attr_mem_forget", 2);
    std::mem::forget(s.acquire().await.unwrap());
    assert_eq!(s.available_permits(), 1);
}

#[lockscope::test]
#[should_panic(expected = "lockscope: leaked-permit")]
async fn forgotten_permit_fails_the_test() {
    let s = Semaphore::named("attr_forgotten", 2);
    s.acquire().await.unwrap().forget();
}

#[lockscope::test]
#[should_panic(expected = "lockscope: deadlock")]
async fn live_deadlock_fails_within_a_second_instead_of_hanging() {
    let started = std::time::Instant::now();
    let a = Arc::new(Mutex::named("attr_dl_a", ()));
    let b = Arc::new(Mutex::named("attr_dl_b", ()));
    let ga = a.lock().await;
    let (b2, a2) = (b.clone(), a.clone());
    let other = tokio::spawn(async move {
        let _gb = b2.lock().await;
        let _ga = a2.lock().await;
    });
    // Let the other task take b and queue for a.
    while b.try_lock().is_ok() {
        tokio::task::yield_now().await;
    }
    let _gb = b.lock().await; // waits forever: deadlock
    drop(ga);
    other.await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(1));
}

/// Two tasks in opposite orders whose second lock is a timeout-and-retry loop: no wait lasts
/// more than 30 ms, so no single wait looks stuck or deadlocked, yet neither ever gets in.
/// Each retry continues the wait it gave up, and the queues that never move fail the test.
/// (The loops give up after 10 s so that a miss fails instead of hanging.)
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
#[should_panic(expected = "gave up and waited again")]
async fn deadlock_hidden_by_timeout_and_retry_fails_instead_of_hanging() {
    let a = Arc::new(Mutex::named("attr_retry_a", ()));
    let b = Arc::new(Mutex::named("attr_retry_b", ()));
    let both = Arc::new(tokio::sync::Barrier::new(2));
    let mut tasks = Vec::new();
    for (x, y) in [(a.clone(), b.clone()), (b.clone(), a.clone())] {
        let both = both.clone();
        tasks.push(tokio::spawn(async move {
            let _g = x.lock().await;
            both.wait().await;
            let started = std::time::Instant::now();
            while tokio::time::timeout(Duration::from_millis(30), y.lock())
                .await
                .is_err()
            {
                if started.elapsed() > Duration::from_secs(10) {
                    return;
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[lockscope::test(stuck_ms = 300)]
#[should_panic(expected = "lockscope: stuck-queue")]
async fn owned_guard_self_wait_fails_as_a_stuck_queue_instead_of_hanging() {
    // An owned guard may have moved to another task, so a wait for it is no proof of a
    // deadlock; but nothing is granted for `stuck_ms`, and the test fails then.
    let m = Arc::new(Mutex::named("attr_owned_stuck", ()));
    let _g = m.clone().lock_owned().await;
    let _again = m.lock().await;
}

/// `#[lockscope::test]` on a plain `fn`: armed, no runtime, fails on its findings.
#[lockscope::test]
fn a_plain_fn_runs_armed_with_no_runtime() {
    assert!(tokio::runtime::Handle::try_current().is_err(), "no runtime");
    let m = lockscope::parking_lot::Mutex::named("plain_fn", 0);
    *m.lock() += 1;
    assert_eq!(*m.lock(), 1);
}

#[lockscope::test]
fn a_plain_fn_may_return_a_result() -> Result<(), String> {
    Ok(())
}

/// A plain test that re-locks its own mutex fails with the finding, in a child process.
#[lockscope::test]
#[ignore = "deliberately fails; run in a child process by the test below"]
fn plain_fn_with_a_finding() {
    if std::env::var_os("LOCKSCOPE_PLAIN_FN_CHILD").is_none() {
        return;
    }
    let a = lockscope::parking_lot::Mutex::named("plain_a", 0);
    let b = lockscope::parking_lot::Mutex::named("plain_b", 0);
    {
        let _a = a.lock();
        let _b = b.lock();
    }
    let _b = b.lock();
    let _a = a.lock();
}

#[test]
fn a_plain_fn_fails_on_its_findings() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(["plain_fn_with_a_finding", "--exact", "--ignored"])
        .env("LOCKSCOPE_PLAIN_FN_CHILD", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("lockscope: lock-order-inversion") && text.contains("plain_a"),
        "{text}"
    );
}
