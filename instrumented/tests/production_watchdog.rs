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
    // Run by the test below: the report reaches stderr from the watchdog thread a moment after
    // the finding is visible here, so the process stays until the parent has read it (it
    // closes this end then).
    if std::env::var_os(CHILD_ENV).is_some() {
        use std::io::Read;
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
    }
}

/// Set in the child's environment by [`without_a_subscriber_the_report_goes_to_stderr`].
const CHILD_ENV: &str = "LOCKSCOPE_PRODUCTION_CHILD";

/// With no tracing subscriber installed (nothing to log the finding to), the report goes to
/// stderr instead of vanishing. Runs the test above in a child process, output uncaptured.
#[test]
fn without_a_subscriber_the_report_goes_to_stderr() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "production_finds_a_live_deadlock_without_any_setup",
            "--exact",
            "--nocapture",
        ])
        .env(CHILD_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its stderr, read on a thread of its own, a chunk at a time.
    let mut err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = err.read(&mut buf) {
            if n == 0
                || tx
                    .send(String::from_utf8_lossy(&buf[..n]).into_owned())
                    .is_err()
            {
                break;
            }
        }
    });
    let reported = |s: &str| {
        s.contains("lockscope: deadlock: 2 tasks can never proceed")
            && s.contains("prod_a")
            && s.contains("production_watchdog.rs")
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut stderr = String::new();
    while !reported(&stderr) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(chunk) => stderr.push_str(&chunk),
            Err(_) => {
                let _ = child.kill();
                panic!("no deadlock report on stderr within 10 s; stderr:\n{stderr}");
            }
        }
    }
    // Read: the child may go (closing its stdin ends its wait).
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    reader.join().unwrap();
    while let Ok(chunk) = rx.try_recv() {
        stderr.push_str(&chunk);
    }
    assert!(status.success(), "{stderr}");
}
