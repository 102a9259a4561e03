//! The test timeout (issue 28, deliverable 3): a `#[lockscope::test]` that has not finished
//! and in which nothing has moved for its timeout fails, naming the test, with a dump of what
//! it holds and waits for, whatever it waits on; `0` disables it. The hanging tests are
//! `#[ignore]`d and do nothing unless [`CHILD_ENV`] is set: the tests below run them in a
//! child process (this test binary, filtered to one test) and judge how it ended.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lockscope::detector::{ScopeOptions, TestScope};

#[path = "common/mod.rs"]
mod common;

/// Set in the child's environment only: the hanging tests do nothing without it.
const CHILD_ENV: &str = "LOCKSCOPE_TEST_TIMEOUT_CHILD";

fn child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// The body holds a lockscope mutex and awaits a raw tokio task that awaits a raw oneshot
/// whose sender the body keeps: nothing lockscope sees waits, so no finding can explain it.
async fn hold_and_join_a_raw_task(name: &'static str) {
    let m = lockscope::tokio::Mutex::named(name, 0);
    let _held = m.lock().await;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = rx.await;
    });
    let _ = task.await;
    drop(tx);
}

#[lockscope::test(timeout_ms = 1500)]
#[ignore = "hangs on purpose; run in a child process by the tests below"]
async fn raw_join_current_thread() {
    if child() {
        hold_and_join_a_raw_task("timeout_held_ct").await;
    }
}

#[lockscope::test(flavor = "multi_thread", worker_threads = 2, timeout_ms = 1500)]
#[ignore = "hangs on purpose; run in a child process by the tests below"]
async fn raw_join_multi_thread() {
    if child() {
        hold_and_join_a_raw_task("timeout_held_mt").await;
    }
}

/// The same hang with lockscope's `spawn` and oneshot: the body holds a lock and awaits the
/// join (a precise wait) of a task that waits on a oneshot (an open wait) whose sender the
/// body keeps. Nothing is proven, so only the timeout ends it, and its dump names the lock,
/// the join and the oneshot.
async fn hold_and_join_a_lockscope_task(name: &'static str) {
    let m = lockscope::tokio::Mutex::named(name, 0);
    let _held = m.lock().await;
    let (tx, rx) = lockscope::tokio::oneshot::channel_named::<()>(name);
    let task = lockscope::tokio::spawn(async move {
        let _ = rx.await;
    });
    let _ = task.await;
    drop(tx);
}

#[lockscope::test(timeout_ms = 1500)]
#[ignore = "hangs on purpose; run in a child process by the tests below"]
async fn lockscope_join_current_thread() {
    if child() {
        hold_and_join_a_lockscope_task("timeout_join_ct").await;
    }
}

#[lockscope::test(flavor = "multi_thread", worker_threads = 2, timeout_ms = 1500)]
#[ignore = "hangs on purpose; run in a child process by the tests below"]
async fn lockscope_join_multi_thread() {
    if child() {
        hold_and_join_a_lockscope_task("timeout_join_mt").await;
    }
}

/// The body holds a lock and waits for a notification nobody sends: an open wait, so only
/// the timeout ends it, and its dump names the `Notify`.
#[lockscope::test(timeout_ms = 1500)]
#[ignore = "hangs on purpose; run in a child process by the tests below"]
async fn notified_current_thread() {
    if child() {
        let m = lockscope::tokio::Mutex::named("timeout_notify", 0);
        let _held = m.lock().await;
        let never = lockscope::tokio::Notify::named("timeout_notify");
        never.notified().await;
    }
}

/// The body holds a lock and waits at a barrier of two that nobody else reaches.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2, timeout_ms = 1500)]
#[ignore = "hangs on purpose; run in a child process by the tests below"]
async fn barrier_multi_thread() {
    if child() {
        let m = lockscope::tokio::Mutex::named("timeout_barrier", 0);
        let _held = m.lock().await;
        let half = lockscope::tokio::Barrier::named("timeout_barrier", 2);
        half.wait().await;
    }
}

/// The body holds a lock and waits for a change on a watch channel whose sender it keeps.
#[lockscope::test(timeout_ms = 1500)]
#[ignore = "hangs on purpose; run in a child process by the tests below"]
async fn watch_changed_current_thread() {
    if child() {
        let m = lockscope::tokio::Mutex::named("timeout_watch", 0);
        let _held = m.lock().await;
        let (tx, mut rx) = lockscope::tokio::watch::channel_named("timeout_watch", 0);
        let _ = rx.changed().await;
        drop(tx);
    }
}

/// The body holds a lock and waits on a broadcast receiver whose sender it keeps.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2, timeout_ms = 1500)]
#[ignore = "hangs on purpose; run in a child process by the tests below"]
async fn broadcast_recv_multi_thread() {
    if child() {
        let m = lockscope::tokio::Mutex::named("timeout_broadcast", 0);
        let _held = m.lock().await;
        let (tx, mut rx) = lockscope::tokio::broadcast::channel_named::<u8>("timeout_broadcast", 4);
        let _ = rx.recv().await;
        drop(tx);
    }
}

/// A plain `fn`: blocked on a std channel (which lockscope does not see) while it holds a
/// lockscope parking_lot mutex.
#[lockscope::test(timeout_ms = 1500)]
#[ignore = "hangs on purpose; run in a child process by the tests below"]
fn plain_recv_holding_a_guard() {
    if child() {
        let m = lockscope::parking_lot::Mutex::named("timeout_held_plain", 0);
        let _held = m.lock();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let _ = rx.recv();
        drop(tx);
    }
}

/// An async body that blocks its own thread (a std channel, never yielding): it cannot be
/// polled to panic, so the watchdog ends the process.
#[lockscope::test(timeout_ms = 1000)]
#[ignore = "hangs on purpose; run in a child process by the tests below"]
async fn async_body_blocking_its_thread() {
    if child() {
        let m = lockscope::tokio::Mutex::named("timeout_held_blocking", 0);
        let _held = m.lock().await;
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let _ = rx.recv();
        drop(tx);
    }
}

/// A lock-order deadlock between two tasks, with a test timeout set: it is the deadlock that
/// ends the test, within its own bound, not the timeout.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2, timeout_ms = 4000)]
#[ignore = "deadlocks on purpose; run in a child process by the tests below"]
async fn deadlock_under_a_timeout() {
    if child() {
        use std::sync::Arc;
        let a = Arc::new(lockscope::tokio::Mutex::named("timeout_dl_a", 0));
        let b = Arc::new(lockscope::tokio::Mutex::named("timeout_dl_b", 0));
        let both = Arc::new(tokio::sync::Barrier::new(2));
        let t1 = tokio::spawn({
            let (a, b, both) = (a.clone(), b.clone(), both.clone());
            async move {
                let _a = a.lock().await;
                both.wait().await;
                let _b = b.lock().await;
            }
        });
        let t2 = tokio::spawn(async move {
            let _b = b.lock().await;
            both.wait().await;
            let _a = a.lock().await;
        });
        let _ = (t1.await, t2.await);
    }
}

/// No `timeout_ms`: the environment decides.
#[lockscope::test]
#[ignore = "hangs on purpose; run in a child process by the tests below"]
async fn hang_timed_by_the_environment() {
    if child() {
        hold_and_join_a_raw_task("timeout_held_env").await;
    }
}

/// `timeout_ms = 0`: no timeout, whatever the environment says.
#[lockscope::test(timeout_ms = 0)]
#[ignore = "hangs on purpose; run in a child process by the tests below"]
async fn hang_with_no_timeout() {
    if child() {
        hold_and_join_a_raw_task("timeout_held_none").await;
    }
}

/// Reports the test timeout its scope gets from the environment, for the parent to read.
#[test]
#[ignore = "run in a child process by the tests below"]
fn print_the_armed_timeout() {
    if child() {
        let mut attr = ScopeOptions::default();
        attr.timeout_ms = Some(250);
        println!(
            "armed: {:?}; with timeout_ms = 250: {:?}",
            TestScope::arm("env_only", ScopeOptions::default()).test_timeout(),
            TestScope::arm("with_attr", attr).test_timeout(),
        );
    }
}

/// A scope armed by hand (not by the attribute, not listening) is never timed.
#[test]
#[ignore = "run in a child process by the tests below"]
fn hand_armed_scope_idle_past_the_timeout() {
    if child() {
        let scope = TestScope::arm("by_hand", ScopeOptions::default());
        assert_eq!(scope.test_timeout(), Some(Duration::from_millis(300)));
        let m = lockscope::parking_lot::Mutex::named("timeout_by_hand", 0);
        let _held = m.lock();
        std::thread::sleep(Duration::from_millis(1300));
    }
}

/// Runs `test` in a child with `envs`, to its end (bounded by `run_child_env`).
fn run(test: &str, envs: &[(&str, &str)]) -> common::ChildRun {
    let mut all = vec![(CHILD_ENV, "1")];
    all.extend_from_slice(envs);
    let run = common::run_child_env(&[test, "--exact", "--ignored", "--test-threads=1"], &all);
    assert!(
        !run.stdout.contains("running 0 tests"),
        "the filter must select {test}:\n{}",
        run.stdout
    );
    run
}

/// Asserts that `test` failed on its own panic soon after its 1500 ms timeout, naming itself
/// and the lock it holds, with the site it took it at.
fn assert_failed_by_the_timeout(test: &str, lock: &str) -> common::ChildRun {
    let run = run(test, &[]);
    let (out, err) = (&run.stdout, &run.stderr);
    assert_eq!(run.code, Some(101), "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        out.contains(&format!("test {test} ... FAILED")),
        "a test failure:\n{out}"
    );
    assert!(
        !err.contains("ending the process"),
        "a panic, not the watchdog's exit:\n{err}"
    );
    assert!(
        out.contains(&format!(
            "lockscope test timeout: test `test_timeout::{test}` has not finished"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("mutex \"{lock}\" (created at ")),
        "{out}"
    );
    assert!(
        out.contains("acquired at instrumented/tests/test_timeout.rs:"),
        "the site of the hold:\n{out}"
    );
    assert!(
        out.contains("is parked in the runtime's block_on: its body is pending"),
        "{out}"
    );
    assert!(
        run.took >= Duration::from_millis(1500),
        "took {:?}",
        run.took
    );
    assert!(run.took < Duration::from_secs(6), "took {:?}", run.took);
    run
}

#[test]
fn a_pending_body_fails_after_its_timeout_current_thread() {
    assert_failed_by_the_timeout("raw_join_current_thread", "timeout_held_ct");
}

#[test]
fn a_pending_body_fails_after_its_timeout_multi_thread() {
    assert_failed_by_the_timeout("raw_join_multi_thread", "timeout_held_mt");
}

/// Asserts what [`assert_failed_by_the_timeout`] does, and that the dump names the join
/// and the oneshot the task waits on.
fn assert_failed_naming_the_join_and_the_oneshot(test: &str, name: &str) {
    let run = assert_failed_by_the_timeout(test, name);
    let out = &run.stdout;
    assert!(
        out.contains("joins and channel waits of this test: 2"),
        "{out}"
    );
    assert!(
        out.contains("waits for the join of task ")
            && out.contains("(spawned at instrumented/tests/test_timeout.rs:"),
        "the join:\n{out}"
    );
    assert!(
        out.contains(&format!(
            "waits to receive from oneshot channel \"{name}\" (created at instrumented/tests/test_timeout.rs:"
        )),
        "the oneshot:\n{out}"
    );
    assert!(
        out.contains("(open: any holder of a sender can end it)"),
        "{out}"
    );
    assert!(
        !out.contains("lockscope: deadlock"),
        "nothing is proven:\n{out}"
    );
}

#[test]
fn a_lock_held_across_a_join_of_a_task_on_a_oneshot_fails_after_its_timeout_current_thread() {
    assert_failed_naming_the_join_and_the_oneshot(
        "lockscope_join_current_thread",
        "timeout_join_ct",
    );
}

#[test]
fn a_lock_held_across_a_join_of_a_task_on_a_oneshot_fails_after_its_timeout_multi_thread() {
    assert_failed_naming_the_join_and_the_oneshot("lockscope_join_multi_thread", "timeout_join_mt");
}

/// Asserts what [`assert_failed_by_the_timeout`] does, and that the dump names the one
/// other wait of the test: `wait`, with its `(who can end it)`.
fn assert_failed_naming_the_wait(test: &str, name: &str, wait: &str, who: &str) {
    let run = assert_failed_by_the_timeout(test, name);
    let out = &run.stdout;
    assert!(
        out.contains("joins and channel waits of this test: 1"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "{wait} \"{name}\" (created at instrumented/tests/test_timeout.rs:"
        )),
        "{out}"
    );
    assert!(out.contains(who), "{out}");
    assert!(
        !out.contains("lockscope: deadlock"),
        "nothing is proven:\n{out}"
    );
}

#[test]
fn a_lock_held_across_a_notified_fails_after_its_timeout_naming_the_notify() {
    assert_failed_naming_the_wait(
        "notified_current_thread",
        "timeout_notify",
        "waits to be notified by Notify",
        "(open: any task calling notify_one or notify_waiters can end it)",
    );
}

#[test]
fn a_lock_held_across_a_barrier_fails_after_its_timeout_naming_the_barrier() {
    assert_failed_naming_the_wait(
        "barrier_multi_thread",
        "timeout_barrier",
        "waits to pass Barrier",
        "(open: the parties yet to arrive end it)",
    );
}

#[test]
fn a_lock_held_across_a_watch_change_fails_after_its_timeout_naming_the_channel() {
    assert_failed_naming_the_wait(
        "watch_changed_current_thread",
        "timeout_watch",
        "waits to receive from watch channel",
        "(open: any holder of a sender can end it)",
    );
}

#[test]
fn a_lock_held_across_a_broadcast_recv_fails_after_its_timeout_naming_the_channel() {
    assert_failed_naming_the_wait(
        "broadcast_recv_multi_thread",
        "timeout_broadcast",
        "waits to receive from broadcast channel",
        "(open: any holder of a sender can end it)",
    );
}

#[test]
fn a_blocked_plain_test_ends_the_process_with_the_dump() {
    let run = run("plain_recv_holding_a_guard", &[]);
    let err = &run.stderr;
    assert_eq!(
        run.code,
        Some(101),
        "stderr:\n{err}\nstdout:\n{}",
        run.stdout
    );
    assert!(
        err.contains("lockscope watchdog: a test timed out with nothing moving"),
        "{err}"
    );
    assert!(
        err.contains("in test test_timeout::plain_recv_holding_a_guard:"),
        "{err}"
    );
    assert!(
        err.contains(
            "mutex \"timeout_held_plain\" (created at instrumented/tests/test_timeout.rs:"
        ),
        "{err}"
    );
    assert!(
        err.contains("acquired at instrumented/tests/test_timeout.rs:"),
        "{err}"
    );
    assert!(
        run.took >= Duration::from_millis(1500),
        "took {:?}",
        run.took
    );
    assert!(run.took < Duration::from_secs(6), "took {:?}", run.took);
}

#[test]
fn an_async_body_blocking_its_thread_ends_the_process_after_a_grace() {
    let run = run("async_body_blocking_its_thread", &[]);
    let err = &run.stderr;
    assert_eq!(
        run.code,
        Some(101),
        "stderr:\n{err}\nstdout:\n{}",
        run.stdout
    );
    assert!(
        err.contains("lockscope watchdog: a test timed out with nothing moving"),
        "{err}"
    );
    assert!(
        err.contains("test `test_timeout::async_body_blocking_its_thread` has not finished"),
        "{err}"
    );
    assert!(err.contains("mutex \"timeout_held_blocking\""), "{err}");
    assert!(
        err.contains("is inside its body's poll: blocked or busy"),
        "{err}"
    );
    // The timeout, then up to a grace of 1 s for the body to answer.
    assert!(
        run.took >= Duration::from_millis(1900),
        "took {:?}",
        run.took
    );
    assert!(run.took < Duration::from_secs(6), "took {:?}", run.took);
}

#[test]
fn a_deadlock_still_ends_the_test_before_the_timeout() {
    let run = run("deadlock_under_a_timeout", &[]);
    let out = &run.stdout;
    assert_eq!(
        run.code,
        Some(101),
        "stdout:\n{out}\nstderr:\n{}",
        run.stderr
    );
    assert!(out.contains("lockscope: deadlock"), "{out}");
    assert!(
        out.contains("timeout_dl_a") && out.contains("timeout_dl_b"),
        "{out}"
    );
    assert!(!out.contains("lockscope test timeout"), "{out}");
    assert!(
        run.took < Duration::from_millis(3500),
        "took {:?}",
        run.took
    );
}

#[test]
fn a_scope_armed_by_hand_is_not_timed() {
    let run = run(
        "hand_armed_scope_idle_past_the_timeout",
        &[("LOCKSCOPE_TEST_TIMEOUT_MS", "300")],
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.took >= Duration::from_millis(1300),
        "took {:?}",
        run.took
    );
}

#[test]
fn the_environment_sets_the_timeout() {
    let run = run(
        "hang_timed_by_the_environment",
        &[("LOCKSCOPE_TEST_TIMEOUT_MS", "700")],
    );
    assert_eq!(run.code, Some(101), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("test `test_timeout::hang_timed_by_the_environment` has not finished"),
        "{}",
        run.stdout
    );
    assert!(run.took < Duration::from_secs(5), "took {:?}", run.took);
}

/// Starts `test` as a child, waits `for_`, asserts it is still running, and kills it.
fn assert_still_running_after(test: &str, envs: &[(&str, &str)], for_: Duration) {
    let mut child: Child = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--ignored", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + for_;
    while Instant::now() < until {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("{test} ended ({status}) although its timeout is disabled");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let still = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    assert!(still, "{test} was still running after {for_:?}");
}

#[test]
fn timeout_ms_0_disables_it_whatever_the_environment() {
    // With the environment's 500 ms in force it would have failed within about a second.
    assert_still_running_after(
        "hang_with_no_timeout",
        &[("LOCKSCOPE_TEST_TIMEOUT_MS", "500")],
        Duration::from_millis(2000),
    );
}

#[test]
fn the_variable_at_0_disables_it() {
    // The same test fails after 700 ms with the variable at 700 (see above).
    assert_still_running_after(
        "hang_timed_by_the_environment",
        &[("LOCKSCOPE_TEST_TIMEOUT_MS", "0")],
        Duration::from_millis(2000),
    );
}

#[test]
fn precedence_attribute_then_environment_then_default() {
    let armed = |env: Option<&str>| {
        let envs: Vec<(&str, &str)> = env
            .map(|v| vec![("LOCKSCOPE_TEST_TIMEOUT_MS", v)])
            .unwrap_or_default();
        let mut all = vec![(CHILD_ENV, "1")];
        all.extend(envs);
        // `--nocapture`: the line is printed by a passing test.
        let run = common::run_child_env(
            &[
                "print_the_armed_timeout",
                "--exact",
                "--ignored",
                "--nocapture",
            ],
            &all,
        );
        assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
        run.stdout
    };
    let expect = |env, line: &str| {
        let out = armed(env);
        assert!(out.contains(line), "{env:?}: want {line:?} in\n{out}");
    };
    expect(None, "armed: Some(60s); with timeout_ms = 250: Some(250ms)");
    expect(Some("0"), "armed: None; with timeout_ms = 250: Some(250ms)");
    expect(
        Some("1200"),
        "armed: Some(1.2s); with timeout_ms = 250: Some(250ms)",
    );
}

#[test]
fn a_bad_variable_fails_the_test_with_a_clear_error() {
    let run = run(
        "print_the_armed_timeout",
        &[("LOCKSCOPE_TEST_TIMEOUT_MS", "soon")],
    );
    assert_eq!(run.code, Some(101), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(
            "lockscope: invalid LOCKSCOPE_TEST_TIMEOUT_MS value \"soon\": expected a whole number of milliseconds (0: no timeout)"
        ),
        "{}",
        run.stdout
    );
}

/// A test that keeps acquiring for well over its timeout is moving: it passes.
#[lockscope::test(timeout_ms = 800)]
async fn a_test_that_keeps_moving_is_not_timed_out() {
    let m = lockscope::tokio::Mutex::named("timeout_moving", 0u32);
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(2000) {
        *m.lock().await += 1;
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    assert!(*m.lock().await > 10);
}

/// The same with a plain `fn` and a blocking lock.
#[lockscope::test(timeout_ms = 800)]
fn a_plain_test_that_keeps_moving_is_not_timed_out() {
    let m = lockscope::parking_lot::Mutex::named("timeout_moving_plain", 0u32);
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(2000) {
        *m.lock() += 1;
        std::thread::sleep(Duration::from_millis(40));
    }
    assert!(*m.lock() > 10);
}
