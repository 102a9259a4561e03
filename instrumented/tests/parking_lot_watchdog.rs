//! The watchdog's exit path: a deadlock among plain threads can never wake to fail a test, so
//! under `lockscope::detector::watchdog()` the process prints the report to stderr and exits
//! non-zero. Tested in a child process: this test binary, filtered to the deliberately
//! deadlocking (and `#[ignore]`d) test below.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use lockscope::parking_lot::Mutex;

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
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args([
            CHILD_TEST,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Drain both pipes on their own threads so a full pipe can never stall the child.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).map(|_| s)
    });
    let err = thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).map(|_| s)
    });

    let started = Instant::now();
    let pid = child.id();
    let (status_tx, status_rx) = mpsc::channel();
    thread::spawn(move || status_tx.send(child.wait()));
    let status = match status_rx.recv_timeout(Duration::from_secs(30)) {
        Ok(status) => status.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("the deadlocked child was still running after 30 s");
        }
    };
    let took = started.elapsed();
    let stdout = out.join().unwrap().unwrap();
    let stderr = err.join().unwrap().unwrap();
    assert!(
        !stdout.contains("running 0 tests"),
        "the filter must select the deadlocking test:\n{stdout}"
    );
    assert_eq!(
        status.code(),
        Some(101),
        "stderr:\n{stderr}\nstdout:\n{stdout}"
    );
    assert!(stderr.contains("lockscope: deadlock"), "stderr:\n{stderr}");
    assert!(
        stderr.contains("pl_watchdog_a") && stderr.contains("pl_watchdog_b"),
        "the report names both mutexes:\n{stderr}"
    );
    assert!(
        stderr.contains("parking_lot_watchdog.rs"),
        "the report gives the sites:\n{stderr}"
    );
    assert!(took < Duration::from_secs(20), "took {took:?}");
}
