//! `#[lockscope::test]` when the deadlock blocks the test's own thread: the test can never
//! notice, so the watchdog ends the process with the report. Two things must hold that a
//! `--nocapture` run would hide: the report reaches stderr although the test harness captures
//! the output of the test (and of threads spawned from it, the watchdog included), and a body
//! that blocks in its very first poll, before any `.await`, is caught too. Tested in a child
//! process: this test binary, filtered to one deliberately deadlocking (`#[ignore]`d) test.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use lockscope::parking_lot::Mutex;

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

/// Runs `test` alone in a child (output captured, as a plain `cargo test` does); its exit
/// status, stderr and stdout, and how long it took.
fn run_child(test: &str) -> (Option<i32>, String, String, Duration) {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args([test, "--exact", "--ignored", "--test-threads=1"])
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
            panic!("{test}: the deadlocked child was still running after 30 s");
        }
    };
    let took = started.elapsed();
    (
        status.code(),
        err.join().unwrap().unwrap(),
        out.join().unwrap().unwrap(),
        took,
    )
}

fn assert_reported(test: &str, mutex: &str) {
    let (code, stderr, stdout, took) = run_child(test);
    assert!(
        !stdout.contains("running 0 tests"),
        "the filter must select {test}:\n{stdout}"
    );
    assert_eq!(code, Some(101), "stderr:\n{stderr}\nstdout:\n{stdout}");
    assert!(
        stderr.contains("lockscope: deadlock") && stderr.contains(mutex),
        "the report reaches stderr under output capture:\n{stderr}"
    );
    assert!(
        stderr.contains(&format!("in test {test}")) || stderr.contains(test),
        "the report names the test:\n{stderr}"
    );
    assert!(
        stderr.contains("test_attribute_exit.rs"),
        "the report gives the sites:\n{stderr}"
    );
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn a_body_blocked_before_its_first_await_ends_the_process_with_the_report() {
    assert_reported("relock_before_the_first_await", "exit_cfg");
}

#[test]
fn a_blocked_test_thread_reports_under_output_capture() {
    assert_reported("relock_after_an_await", "exit_cfg_mt");
}
