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

/// Runs the `#[ignore]`d test `test` of this binary in a child with `env` set, and checks
/// that it ended, non-zero, within 3 s, with a deadlock report naming the test and `lock`.
pub fn child_deadlock(test: &str, env: &str, lock: &str) -> ChildRun {
    let run = run_child(&[test, "--exact", "--ignored", "--test-threads=1"], env);
    let all = format!("{}\n{}", run.stdout, run.stderr);
    assert_ne!(run.code, Some(0), "the deadlock must fail the test:\n{all}");
    assert!(
        all.contains("lockscope: deadlock"),
        "a deadlock report:\n{all}"
    );
    assert!(all.contains(lock), "the report names the lock:\n{all}");
    assert!(all.contains(test), "the report names the test:\n{all}");
    assert!(
        run.took < Duration::from_secs(3),
        "ended within 3 s, took {:?}:\n{all}",
        run.took
    );
    run
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

/// How many wait for the primitives named `name` now, by the books.
fn waiters_named(name: &str) -> usize {
    lockscope::detector::locks()
        .into_iter()
        .filter(|l| l.name == name)
        .map(|l| l.waiters_total)
        .sum()
}

/// As [`wait_for_waiters`], from async code: sleeps on the runtime's timer between looks, so
/// that the tasks that are to queue can run (on a `current_thread` runtime, this one).
pub async fn until_waiters(name: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let waiting = waiters_named(name);
        if waiting >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: {waiting} waiters, want {n}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
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

/// Threads spinning on a CPU each until dropped: a machine loaded past its cores, for the
/// controls that must stay silent under load (see [`cpu_hogs`]).
pub struct CpuHogs {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<u64>>,
}

/// Starts `n` threads that spin (never sleeping, never yielding) until the returned value is
/// dropped: beside a control, they leave its threads less than a core each on a machine with
/// `n` cores, so that the OS deschedules them for whole time slices.
pub fn cpu_hogs(n: usize) -> CpuHogs {
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let threads = (0..n)
        .map(|i| {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name(format!("cpu hog {i}"))
                .spawn(move || {
                    let mut spins = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        spins = std::hint::black_box(spins.wrapping_add(1));
                    }
                    spins
                })
                .expect("a hog thread")
        })
        .collect();
    CpuHogs { stop, threads }
}

impl Drop for CpuHogs {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Four tasks on two workers each add `rounds` times to a counter under a parking_lot mutex
/// named `name`, yielding every 1000.
pub async fn short_parking_lot_sections(name: &'static str, rounds: u64) {
    let n = std::sync::Arc::new(lockscope::parking_lot::Mutex::named(name, 0u64));
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let n = n.clone();
            tokio::spawn(async move {
                for i in 0..rounds {
                    *n.lock() += 1;
                    if i % 1000 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*n.lock(), 4 * rounds);
}

/// A deadlock through the executor: the running future takes a blocking guard named `name` and
/// sleeps holding it while a task it spawned on the same runtime locks it (on a current-thread
/// runtime, that task blocks the only thread the holder could resume on).
pub async fn body_holds_while_a_task_locks(name: &'static str) {
    let m = std::sync::Arc::new(lockscope::parking_lot::Mutex::named(name, 0));
    let g = m.lock();
    let m2 = m.clone();
    let t = tokio::spawn(async move {
        *m2.lock() += 1;
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    drop(g);
    t.await.unwrap();
}
