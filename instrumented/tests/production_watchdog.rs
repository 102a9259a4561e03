//! A program that only swapped its imports (no `Config::install`, no `#[lockscope::test]`, no
//! `watchdog()`) still gets its live deadlocks found: the first primitive starts the watchdog.
//! Its own test binary, so that nothing else in the process has started the watchdog first.

use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn production_finds_a_live_deadlock_without_any_setup() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let a = Arc::new(lockscope::tokio::Mutex::named("prod_a", ()));
        let b = Arc::new(lockscope::tokio::Mutex::named("prod_b", ()));
        let both_hold = Arc::new(tokio::sync::Barrier::new(2));
        for (first, second) in [(a.clone(), b.clone()), (b, a)] {
            let both_hold = both_hold.clone();
            tokio::spawn(async move {
                let _g = first.lock().await;
                both_hold.wait().await;
                let _h = second.lock().await;
            });
        }
        // The watchdog confirms a deadlock over two ticks (100 ms each): bounded polling.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let found = lockscope::detector::findings()
                .iter()
                .any(|f| f.to_string().starts_with("lockscope: deadlock"));
            if found {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no deadlock finding within 10 s: {:#?}",
                lockscope::detector::findings()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    // The two deadlocked tasks stay parked; the runtime is dropped without waiting for them.
    rt.shutdown_background();
}

/// With no tracing subscriber installed (nothing to log the finding to), the report goes to
/// stderr instead of vanishing. Runs the test above in a child process, output uncaptured.
#[test]
fn without_a_subscriber_the_report_goes_to_stderr() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "production_finds_a_live_deadlock_without_any_setup",
            "--exact",
            "--nocapture",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("lockscope: deadlock: 2 tasks can never proceed")
            && stderr.contains("prod_a")
            && stderr.contains("production_watchdog.rs"),
        "stderr:\n{stderr}"
    );
}
