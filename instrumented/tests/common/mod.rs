//! Shared helpers of the detector tests.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use lockscope::detector::{Finding, FindingKind, ScopeOptions, TestScope};

/// Arms a test scope on this thread (a current-thread runtime's tasks run here too).
pub fn arm(name: &str, stuck_ms: u64, starvation_ms: u64) -> TestScope {
    let mut options = ScopeOptions::default();
    options.stuck_ms = Some(stuck_ms);
    options.starvation_ms = Some(starvation_ms);
    TestScope::arm(name, options)
}

/// Polls the detector (bounded: 5 s) until a finding of `kind` naming `lock` reached
/// `scope`; returns it. The detector's clocks are real, so this waits in real time.
pub async fn until(scope: &TestScope, kind: FindingKind, lock: &str) -> Finding {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        lockscope::detector::check_now();
        if let Some(f) = scope
            .findings()
            .into_iter()
            .find(|f| f.kind == kind && f.involves(lock))
        {
            return f;
        }
        assert!(
            Instant::now() < deadline,
            "no {kind} finding naming {lock:?} within 5 s; findings: {:#?}",
            scope.findings()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every finding naming `lock`, after two more analyses.
pub fn naming(lock: &str) -> Vec<Finding> {
    lockscope::detector::check_now();
    lockscope::detector::check_now();
    lockscope::detector::findings()
        .into_iter()
        .filter(|f| f.involves(lock))
        .collect()
}

/// The line of the caller, for asserting sites.
#[track_caller]
pub fn line() -> u32 {
    std::panic::Location::caller().line()
}

/// `file:line` of a site in this test file.
pub fn site(file: &str, line: u32) -> String {
    format!("{file}:{line}:")
}

/// What a child process did: exit status, stderr, stdout, and how long it ran.
pub struct ChildRun {
    pub code: Option<i32>,
    pub stderr: String,
    pub stdout: String,
    pub took: Duration,
}

/// Runs this test binary again with `args`, `env` set to `1`, as a child (killed after 30 s:
/// a child that was meant to be ended by lockscope's watchdog must not hang the suite).
pub fn run_child(args: &[&str], env: &str) -> ChildRun {
    run_child_env(args, &[(env, "1")])
}

/// [`run_child`] with the environment variables `envs` set.
pub fn run_child_env(args: &[&str], envs: &[(&str, &str)]) -> ChildRun {
    use std::io::Read;
    use std::process::{Command, Stdio};
    use std::sync::mpsc;
    use std::thread;
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(args)
        .envs(envs.iter().copied())
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
            panic!("{args:?}: the child was still running after 30 s");
        }
    };
    ChildRun {
        code: status.code(),
        took: started.elapsed(),
        stderr: err.join().unwrap().unwrap(),
        stdout: out.join().unwrap().unwrap(),
    }
}

impl ChildRun {
    /// Asserts that the child ran a test (the filter matched) and that lockscope's watchdog
    /// ended it, status 101 with a deadlock report on stderr, within 20 s.
    pub fn assert_ended_by_the_watchdog(&self) {
        let (stdout, stderr) = (&self.stdout, &self.stderr);
        assert!(
            !stdout.contains("running 0 tests"),
            "the filter must select the deadlocking test:\n{stdout}"
        );
        assert_eq!(self.code, Some(101), "stderr:\n{stderr}\nstdout:\n{stdout}");
        assert!(stderr.contains("lockscope: deadlock"), "stderr:\n{stderr}");
        assert!(self.took < Duration::from_secs(20), "took {:?}", self.took);
    }
}

/// Waits (bounded, 5 s) until the primitive named `name` has at least `n` waiters.
pub fn wait_for_waiters(name: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let waiting = lockscope::detector::locks()
            .into_iter()
            .filter(|l| l.name == name)
            .map(|l| l.waiters.len())
            .sum::<usize>();
        if waiting >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: {waiting} waiters, want {n}"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Runs `body` as `#[lockscope::test]` does, on a runtime of `flavor`, and returns the
/// panic message it failed with and how long the whole test took.
pub fn armed_failure<F>(name: &str, multi: bool, body: F) -> (String, Duration)
where
    F: std::future::Future<Output = ()>,
{
    let mut builder = if multi {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(2);
        b
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    builder.enable_all();
    let started = Instant::now();
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        lockscope::__private::run_test(name, ScopeOptions::default(), builder, body)
    }));
    let took = started.elapsed();
    let payload = out.expect_err("the test must fail");
    let msg = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default();
    (msg, took)
}

/// Polls until `m` has a waiter (bounded), yielding so that a current-thread runtime runs it.
pub async fn until_waited<T>(m: &lockscope::tokio::Mutex<T>) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !lockscope::detector::locks()
        .iter()
        .any(|l| l.name == m.name() && l.waiters_total > 0)
    {
        assert!(Instant::now() < deadline, "no waiter on {}", m.name());
        tokio::task::yield_now().await;
    }
}
