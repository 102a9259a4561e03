//! Every example, run as the child process a user runs (each with its own detector state),
//! and the demo: what they print, how they exit, and what the demo serves.
//!
//! `cargo test` builds the examples before the tests; their binaries sit in
//! `target/<profile>/examples/`, next to this test binary's `deps/` directory. Nothing here
//! runs cargo (the build lock), every child has a deadline and is killed past it, and the
//! waits poll for what they need instead of sleeping and hoping.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The promise: every example exits 0 within 5 s.
const EXAMPLE_BUDGET: Duration = Duration::from_secs(5);
/// Past this, a child is killed and the test fails with what it printed.
const KILL_AFTER: Duration = Duration::from_secs(30);

/// `target/<profile>/examples/<name>`, derived from this test binary's path
/// (`target/<profile>/deps/examples-<hash>`).
fn example_path(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lives in target/<profile>/deps");
    let path = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "example binary {} not found: `cargo test` and `cargo test -p lockscope-examples` build \
         the examples first, but a filtered run such as `cargo test --test examples` does not; \
         run `cargo build -p lockscope-examples --examples` and try again",
        path.display()
    );
    path
}

/// A child that is killed and reaped on every way out of the test, panics included.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads a pipe on a thread, sending each line as it comes.
fn lines_of(pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// What a finished example did.
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs example `name` to its end (killed after [`KILL_AFTER`]).
fn run_example(name: &str, args: &[&str]) -> Run {
    let start = Instant::now();
    let mut child = ChildGuard(
        Command::new(example_path(name))
            .args(args)
            .env_remove("RUST_LOG")
            .env_remove("LOCKSCOPE_MODE")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start example {name}: {e}")),
    );
    let out = lines_of(child.0.stdout.take().expect("piped stdout"));
    let err = lines_of(child.0.stderr.take().expect("piped stderr"));
    let status = loop {
        if let Some(s) = child.0.try_wait().expect("try_wait") {
            break s;
        }
        if start.elapsed() > KILL_AFTER {
            let printed: Vec<String> = out.try_iter().chain(err.try_iter()).collect();
            panic!(
                "example {name} still running after {KILL_AFTER:?}; killed. It printed:\n{}",
                printed.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = start.elapsed();
    // The pipes close when the process ends; the reader threads then finish.
    let collect = |rx: mpsc::Receiver<String>| rx.iter().collect::<Vec<_>>().join("\n");
    Run {
        status,
        stdout: collect(out),
        stderr: collect(err),
        took,
    }
}

/// Runs an example and checks that it exits 0 within the budget and prints every line of
/// `expected` (substrings).
fn check_example(name: &str, expected: &[&str]) -> Run {
    let run = run_example(name, &[]);
    let context = || format!("--- stdout:\n{}\n--- stderr:\n{}", run.stdout, run.stderr);
    assert!(
        run.status.success(),
        "example {name} exited with {}\n{}",
        run.status,
        context()
    );
    assert!(
        run.took < EXAMPLE_BUDGET,
        "example {name} took {:?}, over the {EXAMPLE_BUDGET:?} budget\n{}",
        run.took,
        context()
    );
    for line in expected {
        assert!(
            run.stdout.contains(line),
            "example {name} did not print {line:?}\n{}",
            context()
        );
    }
    run
}

#[test]
fn nested_acquire_reports_the_mutex_and_the_semaphore_versions() {
    check_example(
        "nested_acquire",
        &[
            "lockscope: nested-acquire: task 1 waits for mutex \"inventory\" it already holds, at examples/examples/nested_acquire.rs:",
            "a certain self-deadlock: it waits for itself to release it",
            "lockscope: deadlock: task 1 waits for mutex \"inventory\" and can never proceed",
            "request 0: audited",
            "acquires semaphore \"db_pool\" it already holds, at examples/examples/nested_acquire.rs:",
            "a latent deadlock: once every permit is held by a task waiting for one more",
            "lockscope: deadlock: 3 tasks can never proceed: each waits for semaphore \"db_pool\"",
            "db_pool: 0 of 3 connections available",
        ],
    );
}

#[test]
fn abba_reports_the_inversion_without_a_hang_then_the_deadlock() {
    let run = check_example(
        "abba",
        &[
            "both transfers done: alice 95, bob 105",
            "lockscope: lock-order-inversion: \"account:alice\" and \"account:bob\" are taken in opposite orders",
            "*** DEADLOCK ***",
            "lockscope: deadlock: 2 tasks can never proceed",
            "both transfers done: carol 95, dave 105; lockscope findings about them: 0",
        ],
    );
    // The inversion is reported before the deadlocking run starts.
    let inversion = run.stdout.find("lock-order-inversion").expect("checked");
    let second_run = run.stdout.find("== 2.").expect("the second step");
    assert!(inversion < second_run, "{}", run.stdout);
}

#[test]
fn join_deadlock_names_the_join_then_the_fix_is_silent() {
    check_example(
        "join_deadlock",
        &[
            "lockscope: deadlock: 2 tasks can never proceed: each waits for mutex \"cache\" held by another of them, or for join of task ",
            "(spawned at examples/examples/join_deadlock.rs:",
            "fix: do not hold a lock while awaiting a task or joining a thread that needs it",
            "refreshed: 2 entries; lockscope findings about the fresh cache: 0",
        ],
    );
}

#[test]
fn once_cell_deadlock_names_the_cell_then_the_fix_is_silent() {
    check_example(
        "once_cell_deadlock",
        &[
            "lockscope: deadlock: 2 tasks can never proceed: each waits for mutex \"auth state\", once_cell \"auth token\" held by another of them",
            "holds     once_cell \"auth token\" (init)",
            "waits for once_cell \"auth token\" (init)",
            "at examples/examples/once_cell_deadlock.rs:",
            "fix: do not wait for a once-cell while holding a lock its initialiser needs",
            "requests sent: 2, token expires in 3600 s; lockscope findings about the fresh client: 0",
        ],
    );
}

#[test]
fn actor_deadlock_names_the_channel_then_the_fix_is_silent() {
    check_example(
        "actor_deadlock",
        &[
            "lockscope: deadlock: 2 tasks can never proceed: each waits for mutex \"ledger\" held by another of them, or to send to mpsc channel \"audit\" (created at examples/examples/actor_deadlock.rs:",
            "waits for channel \"audit\"",
            "at examples/examples/actor_deadlock.rs:",
            "fix: do not hold a lock across `send().await` into a bounded channel whose consumer needs it",
            "audited: 20 events, balance 210; lockscope findings about the fresh ledger: 0",
        ],
    );
}

#[test]
fn thread_join_deadlock_names_the_join_and_its_line_then_the_fix_is_silent() {
    check_example(
        "thread_join_deadlock",
        &[
            "lockscope: deadlock: 2 threads can never proceed: each waits for blocking_mutex \"log\" held by another of them, or for join of thread 'flusher'",
            "waits for join of thread 'flusher'",
            "at examples/examples/thread_join_deadlock.rs:",
            "fix: do not hold a lock while awaiting a task or joining a thread that needs it",
            "lockscope findings about the fresh log: 0",
        ],
    );
}

#[test]
fn rwlock_reentrant_read_reports_the_latent_then_the_real_deadlock() {
    check_example(
        "rwlock_reentrant_read",
        &[
            "price: 99.00 EUR",
            "lockscope: nested-acquire: task 1 acquires rwlock \"rates\" it already holds",
            "a writer queued between the two reads blocks the second read",
            "lockscope: deadlock: 2 tasks can never proceed: each waits for rwlock \"rates\"",
        ],
    );
}

#[test]
fn dining_philosophers_deadlock_and_the_ordered_fix() {
    check_example(
        "dining_philosophers",
        &[
            "lockscope: lock-order-inversion: 5 primitives are taken in a cyclic order",
            "lockscope: deadlock: 5 threads can never proceed",
            "thread 'philosopher 0'",
            "blocking_mutex \"round fork 4\"",
            "everyone ate; fork uses [6, 6, 6, 6, 6]; lockscope findings about these forks: 0",
        ],
    );
}

#[test]
fn blocking_in_async_reports_the_guard_across_await_and_the_frozen_runtime() {
    check_example(
        "blocking_in_async",
        &[
            "lockscope: blocking-in-async: task 1 holds blocking",
            "\"settings\" (acquired at examples/examples/blocking_in_async.rs:",
            "across an .await: task 2 ran on the same thread while it was held",
            "settings saved (the guard was released after the write)",
            "waits for blocking",
            "on an async runtime worker thread: the whole worker stalls",
            "lockscope: deadlock: task 3 holds blocking_mutex \"settings\" across an .await and can only resume on thread 'runtime'",
            "the runtime is frozen for good; leaving",
        ],
    );
}

#[test]
fn leaked_permit_reports_the_leak_and_the_queue_behind_it() {
    check_example(
        "leaked_permit",
        &[
            "slots available: 0; sessions kept: 2 (done: 2, 3072 bytes in all); upload 3 waits",
            "lockscope: leaked-permit: 1 permit of semaphore \"upload_slots\" acquired at examples/examples/leaked_permit.rs:",
            "has been held past the leak threshold by whoever keeps it now",
            "it is an owned guard/permit: look for a struct, a collection or a task that keeps it",
            "lockscope: stuck-queue: semaphore \"upload_slots\" has 1 waiter queued",
        ],
    );
}

#[test]
fn select_permit_reports_the_stuck_pool_and_the_fix_shuts_down() {
    check_example(
        "select_permit",
        &[
            "no job ran; dispatcher stopped on shutdown: false",
            "lockscope: stuck-queue: semaphore \"db_pool\" has 1 waiter queued",
            "holds     semaphore \"db_pool\" (acquire 1 permit)",
            "acquired at examples/examples/select_permit.rs:",
            "job 2: done",
            "dispatcher stopped on shutdown: true; lockscope findings about db_pool_fixed: 0",
        ],
    );
}

#[test]
fn pool_exhaustion_reports_the_exhausted_pool_under_load_only() {
    check_example(
        "pool_exhaustion",
        &[
            "40 of 40 orders completed",
            "of 160 orders completed; the rest never will",
            "lockscope_permits_available{lock=\"db_pool\"} 0",
            "lockscope_waiters{lock=\"db_pool\",kind=\"semaphore\"} 16",
            "lockscope: stuck-queue: semaphore \"db_pool\" has 16 waiters queued",
            "every permit is held by an owned guard",
            "160 of 160 orders completed; lockscope findings about db_pool_fixed: 0",
        ],
    );
}

#[test]
fn recorder_shows_the_double_release_the_dropped_tap_and_the_serialised_taps() {
    check_example(
        "recorder",
        &[
            "tap 3 Stop: released the microphone",
            "lockscope_permits_capacity{lock=\"mic_unguarded\"} 2",
            "caught: a double release, 2 permits for one microphone",
            "tap 3 Stop: dropped, a transition is in progress",
            "lockscope_permits_capacity{lock=\"mic_give_up\"} 1",
            "lockscope_try_failures_total{lock=\"mic_transition\",kind=\"mutex\"} 1",
            "tap 3 Stop: already done when its turn came, nothing to do",
            "lockscope_permits_capacity{lock=\"mic_wait\"} 1",
            "lockscope_contended_acquisitions_total{lock=\"mic_state\",kind=\"mutex\"} 1",
            "lockscope findings about the guarded versions: 0",
        ],
    );
}

// --- the demo ------------------------------------------------------------------------------

/// The metric families of API.md's table.
const METRICS: [&str; 23] = [
    "lockscope_acquisitions_total",
    "lockscope_contended_acquisitions_total",
    "lockscope_try_failures_total",
    "lockscope_timeouts_total",
    "lockscope_cancelled_total",
    "lockscope_wait_seconds",
    "lockscope_hold_seconds",
    "lockscope_waiters",
    "lockscope_oldest_wait_seconds",
    "lockscope_holders",
    "lockscope_permits_available",
    "lockscope_permits_capacity",
    "lockscope_findings_total",
    "lockscope_active_findings",
    "lockscope_dropped_series_total",
    "lockscope_detector_dropped_total",
    "lockscope_live_primitives",
    "lockscope_watchdog_ticks_total",
    "lockscope_build_info",
    "lockscope_channel_depth",
    "lockscope_channel_capacity",
    "lockscope_channel_send_wait_seconds",
    "lockscope_channel_recv_wait_seconds",
];

const KINDS: [&str; 7] = [
    "deadlock",
    "nested-acquire",
    "lock-order-inversion",
    "leaked-permit",
    "stuck-queue",
    "starvation",
    "blocking-in-async",
];

/// `GET path` over a plain HTTP/1.1 connection; returns (status, body).
fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("connect to {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("send the request");
    let mut answer = String::new();
    s.read_to_string(&mut answer)
        .unwrap_or_else(|e| panic!("read the answer to {path}: {e}"));
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {head}"));
    (status, body.to_owned())
}

/// Waits for a line containing `needle` on `rx`; returns it, or panics with what came.
fn wait_for_line(
    rx: &mpsc::Receiver<String>,
    needle: &str,
    within: Duration,
    seen: &mut Vec<String>,
) -> String {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                seen.push(line.clone());
                if line.contains(needle) {
                    return line;
                }
            }
            Err(_) => panic!(
                "no line with {needle:?} within {within:?}; got:\n{}",
                seen.join("\n")
            ),
        }
    }
}

fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn demo_tour_serves_metrics_reports_every_kind_and_exits_by_itself() {
    const DURATION: u64 = 22;
    let mut child = ChildGuard(
        Command::new(example_path("demo"))
            .args(["--addr", "127.0.0.1:0", "--duration", &DURATION.to_string()])
            .env_remove("RUST_LOG")
            .env_remove("LOCKSCOPE_MODE")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the demo"),
    );
    let start = Instant::now();
    let out = lines_of(child.0.stdout.take().expect("piped stdout"));
    let err = lines_of(child.0.stderr.take().expect("piped stderr"));
    let (mut out_seen, mut log) = (Vec::new(), Vec::new());

    let line = wait_for_line(
        &out,
        "metrics on http://",
        Duration::from_secs(15),
        &mut out_seen,
    );
    let addr: SocketAddr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));

    // Healthy: every family of the contract is served.
    let (status, metrics) = http_get(addr, "/metrics");
    assert_eq!(status, 200, "{metrics}");
    for name in METRICS {
        assert!(
            metrics.contains(&format!("# TYPE {name} ")),
            "/metrics lacks {name}:\n{metrics}"
        );
    }

    // The tour: every kind reported, in the log and in the metrics.
    wait_for_line(
        &err,
        "tour complete",
        Duration::from_secs(DURATION),
        &mut log,
    );
    let log_text = log.join("\n");
    assert!(log_text.contains("7 of 7 reported"), "{log_text}");
    for kind in KINDS {
        assert!(
            log_text.contains(&format!("lockscope: {kind}: ")),
            "no {kind} report in the log:\n{log_text}"
        );
    }
    let (_, metrics) = http_get(addr, "/metrics");
    for kind in KINDS {
        let n = sample(
            &metrics,
            &format!("lockscope_findings_total{{kind=\"{kind}\"}}"),
        );
        assert!(
            n.is_some_and(|n| n >= 1.0),
            "lockscope_findings_total{{kind=\"{kind}\"}} is {n:?}:\n{metrics}"
        );
    }
    let served = sample(
        &metrics,
        "lockscope_acquisitions_total{lock=\"db_pool\",kind=\"semaphore\"}",
    );
    assert!(
        served.is_some_and(|n| n > 100.0),
        "db_pool acquisitions: {served:?}"
    );
    let (status, findings) = http_get(addr, "/debug/findings");
    assert_eq!(status, 200);
    for kind in KINDS {
        assert!(
            findings.contains(&format!("\"kind\":\"{kind}\"")),
            "/debug/findings lacks {kind}: {findings}"
        );
    }

    // It ends by itself, cleanly.
    let status = loop {
        if let Some(s) = child.0.try_wait().expect("try_wait") {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(DURATION + 15),
            "the demo did not exit by itself after --duration {DURATION}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    log.extend(err.iter());
    let log_text = log.join("\n");
    assert!(status.success(), "demo exited with {status}:\n{log_text}");
    assert!(
        log_text.contains("--duration elapsed: shutting down"),
        "{log_text}"
    );
    assert!(log_text.contains("stopped after"), "{log_text}");
    assert!(
        TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err(),
        "the exporter still listens after exit"
    );
}

#[test]
fn demo_rejects_bad_arguments_with_usage_and_exit_code_2() {
    for (args, says) in [
        (
            &["--duration", "soon"][..],
            "invalid value \"soon\" for --duration",
        ),
        (&["--bogus"][..], "unknown argument \"--bogus\""),
        (
            &["--pathology", "gremlins"][..],
            "unknown pathology \"gremlins\"",
        ),
        (&["--addr", "9464"][..], "expected HOST:PORT"),
        (&["--addr"][..], "--addr needs a value"),
    ] {
        let run = run_example("demo", args);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("usage:"), "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
    }
    let run = run_example("demo", &["--help"]);
    assert!(run.status.success());
    assert!(run.stdout.contains("--pathology NAME"), "{}", run.stdout);
}

#[test]
fn demo_with_a_busy_port_fails_with_a_message() {
    let busy = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = busy.local_addr().expect("address").to_string();
    let run = run_example("demo", &["--addr", &addr, "--duration", "5"]);
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("cannot serve /metrics on"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

#[test]
fn lock_tools_multilock_transfers_in_opposite_orders_and_status_queries() {
    check_example(
        "lock_tools",
        &[
            "both transfers done: alice 95, bob 105",
            "account:alice is_locked: true, held by the caller: true, holder: thread 'main'",
            "acquired at examples/examples/lock_tools.rs:",
            "account:bob is_locked: false, can_lock: true",
            "lockscope findings about the accounts: 0",
        ],
    );
}

#[test]
fn lock_levels_reports_the_wrong_order_on_the_first_run_and_keeps_the_right_ones_silent() {
    check_example(
        "lock_levels",
        &[
            "== 1. the ledger, then an account: the declared order\nfindings so far: 0",
            "== 2. both accounts (one level) together, through a MultiLock\nfindings so far: 0",
            "lockscope: lock-order-inversion: \"ledger\" (level 1, Ledger) acquired at examples/examples/lock_levels.rs:",
            " while holding \"account:alice\" (level 2, Account) since examples/examples/lock_levels.rs:",
            "; declared order: lower levels first",
            "balances: alice 96, bob 95; ledger entries: 2",
        ],
    );
}

#[test]
fn global_lock_names_the_holding_process_and_a_killed_holder_releases() {
    check_example(
        "global_lock",
        &[
            "held by another process: true",
            "lockscope: stuck-queue: mutex \"lockscope-example-emulator\" has 1 waiter",
            ": it is held by process ",
            "global_lock --hold`)",
            "the waiting task got the lock",
        ],
    );
}
