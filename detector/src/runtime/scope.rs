//! Test scopes: what `#[lockscope::test]` arms, so that a test fails on its own findings only.
//!
//! A scope is a small number stamped on the threads of the test's runtime (by its
//! `on_thread_start` hook) and on the test thread. Primitives record the scope that created
//! them, holds and waits the scope of the thread that made them, and a finding carries the
//! scopes of everything it involves. A finding with no scope at all (say, among plain threads
//! spawned outside any runtime) goes to every armed scope, since hiding it would be worse.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;

use parking_lot::Mutex;

use crate::base::config::{self, Config};
use crate::model::finding::Finding;
use crate::report::finding;
pub use crate::report::scopes::any_armed;
use crate::report::scopes::{self, DeadlockSignal, NEXT_SCOPE, ScopeState, TimeoutSignal};
use crate::rules;
pub use crate::runtime::test_timeout::{WithTimeout, with_timeout};
use crate::state::actor;

/// Thresholds a test may override (`#[lockscope::test(stuck_ms = .., ..)]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScopeOptions {
    /// `stuck-queue` threshold in ms (default: the test default, 1000, or `LOCKSCOPE_STUCK_MS`).
    pub stuck_ms: Option<u64>,
    /// `starvation` threshold in ms (default 1000).
    pub starvation_ms: Option<u64>,
    /// `leaked-permit` threshold in ms (default: end of test).
    pub leak_ms: Option<u64>,
    /// `blocking-in-async` worker-stall threshold in ms (default: the test default, 10, or
    /// `LOCKSCOPE_WORKER_STALL_MS`).
    pub worker_stall_ms: Option<u64>,
    /// Test timeout in ms: the test fails with a dump of its live state once it has not
    /// finished and nothing has moved in it for this long; `Some(0)`: no timeout (default:
    /// the test default, 60000, or `LOCKSCOPE_TEST_TIMEOUT_MS`). See `docs/testing.md`.
    pub timeout_ms: Option<u64>,
}

/// An armed test. Dropping it disarms; [`finish`](TestScope::finish) also checks for leaks
/// and collects the findings.
pub struct TestScope {
    state: Arc<ScopeState>,
    previous_thread_scope: u32,
}

impl TestScope {
    /// Arms a scope named `name` with the test thresholds (the `LOCKSCOPE_*_MS` variables and
    /// `options` override them) and stamps the current thread with it.
    ///
    /// # Panics
    ///
    /// When a `LOCKSCOPE_*` variable is invalid: a test should fail loudly on a bad setting.
    pub fn arm(name: &str, options: ScopeOptions) -> TestScope {
        let mut config = Config::test();
        let env = Config::from_env().unwrap_or_else(|e| panic!("lockscope: {e}"));
        let defaults = Config::production();
        // A variable set to other than its production default overrides the test default.
        fn set_away<T: PartialEq>(test: &mut T, env: T, default: T) {
            if env != default {
                *test = env;
            }
        }
        set_away(&mut config.stuck, env.stuck, defaults.stuck);
        set_away(&mut config.starvation, env.starvation, defaults.starvation);
        set_away(&mut config.leak, env.leak, defaults.leak);
        set_away(
            &mut config.worker_stall,
            env.worker_stall,
            defaults.worker_stall,
        );
        // `0` (none) is a valid value here, so whether the variable is set decides, not a
        // comparison with the production default (which is none too).
        if std::env::var_os(config::TEST_TIMEOUT_VAR).is_some() {
            config.test_timeout = env.test_timeout;
        }
        if let Some(ms) = options.stuck_ms {
            config.stuck = Duration::from_millis(ms.max(1));
        }
        if let Some(ms) = options.starvation_ms {
            config.starvation = Duration::from_millis(ms.max(1));
        }
        if let Some(ms) = options.leak_ms {
            config.leak = Some(Duration::from_millis(ms.max(1)));
        }
        if let Some(ms) = options.worker_stall_ms {
            config.worker_stall = Duration::from_millis(ms.max(1));
        }
        if let Some(ms) = options.timeout_ms {
            config.test_timeout = (ms > 0).then(|| Duration::from_millis(ms));
        }
        // The detector must be on for an armed test, whatever the process-wide mode.
        if !crate::base::config::enabled() {
            crate::runtime::configure::set_enabled(true);
        }
        crate::runtime::watchdog::ensure_started();
        let id = NEXT_SCOPE.fetch_add(1, Ordering::Relaxed);
        let state = Arc::new(ScopeState {
            id,
            name: name.to_owned(),
            thread: actor::thread_seq(),
            config,
            findings: Mutex::new(Vec::new()),
            deadlock: Mutex::new(DeadlockSignal::default()),
            timeout: Mutex::new(TimeoutSignal::new()),
        });
        config::arm_scope(id, state.config.clone());
        scopes::arm(state.clone());
        let previous_thread_scope = actor::current_scope();
        actor::set_thread_scope(id);
        TestScope {
            state,
            previous_thread_scope,
        }
    }

    /// The test timeout in force for this test (`None`: none): the attribute's `timeout_ms`,
    /// else `LOCKSCOPE_TEST_TIMEOUT_MS`, else the test default (60 s).
    pub fn test_timeout(&self) -> Option<Duration> {
        self.state.config.test_timeout
    }

    /// The scope number to stamp on the test runtime's threads.
    pub fn id(&self) -> u32 {
        self.state.id
    }

    /// A future that completes with the report when a live deadlock (or a stuck queue, which
    /// in a test means it hangs) of this test is found. Awaiting it acknowledges the
    /// deadlock, which stops the watchdog from ending the process (it does so only when a
    /// deadlocked test cannot even notice).
    pub fn deadlock(&self) -> DeadlockFuture {
        DeadlockFuture {
            state: self.state.clone(),
        }
    }

    /// Tells the watchdog that this test listens for its deadlocks but cannot be woken (a
    /// plain test with no runtime): a deadlock or a hang of its thread then ends the process
    /// with the report, as when [`deadlock`](TestScope::deadlock) is awaited and never answered.
    /// It also times the test: once nothing has moved in it for its test timeout, the process
    /// ends with the dump (see `docs/testing.md`). A scope that neither listens nor runs a
    /// body under [`with_timeout`] is never timed.
    pub fn listen(&self) {
        self.state.deadlock.lock().listening = true;
    }

    /// Ends the test: checks for permits still held or forgotten, disarms, and returns the
    /// findings made during the test.
    pub fn finish(self) -> Vec<Finding> {
        crate::report::finding::report_all(rules::leaked_permit::check_end_of_scope(self.state.id));
        self.findings()
    }

    /// Findings delivered to this scope so far.
    pub fn findings(&self) -> Vec<Finding> {
        self.state.all_findings()
    }
}

impl Drop for TestScope {
    fn drop(&mut self) {
        let id = self.state.id;
        scopes::disarm(id);
        config::disarm_scope(id);
        actor::set_thread_scope(self.previous_thread_scope);
    }
}

/// Completes with a deadlock report (see [`TestScope::deadlock`]).
pub struct DeadlockFuture {
    state: Arc<ScopeState>,
}

impl Future for DeadlockFuture {
    type Output = String;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<String> {
        let mut d = self.state.deadlock.lock();
        match &d.report {
            Some(r) => {
                let r = r.clone();
                d.acknowledged = true;
                Poll::Ready(r)
            }
            None => {
                d.listening = true;
                d.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Panics with the report if any finding was made.
///
/// # Panics
///
/// When [`findings`](crate::findings) is not empty; the message lists every finding, each starting
/// `lockscope: <kind>`.
#[track_caller]
pub fn assert_clean() {
    finding::report_all(rules::leaked_permit::check_end_of_scope(0));
    let all = finding::findings();
    if !all.is_empty() {
        crate::report::ci::assert_clean_failed(&all);
        panic!("{}", finding::render_all(&all));
    }
}
