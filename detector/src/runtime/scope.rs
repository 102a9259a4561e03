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
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::base::actor;
use crate::base::config::Config;
use crate::report::finding::{self, Finding, FindingKind, Rec};
use crate::rules;

pub(crate) struct ScopeState {
    pub(crate) id: u32,
    pub(crate) name: String,
    /// lockscope number of the test's own thread.
    pub(crate) thread: u64,
    pub(crate) config: Config,
    findings: Mutex<Vec<Arc<Rec>>>,
    deadlock: Mutex<DeadlockSignal>,
}

impl ScopeState {
    /// Findings delivered to this scope so far.
    fn all_findings(&self) -> Vec<Finding> {
        self.findings
            .lock()
            .iter()
            .map(|r| finding::materialize(r))
            .collect()
    }
}

#[derive(Default)]
struct DeadlockSignal {
    report: Option<String>,
    at: Option<Instant>,
    acknowledged: bool,
    /// Someone awaits [`TestScope::deadlock`] (the test attribute does): only then may an
    /// unanswered deadlock end the process.
    listening: bool,
    waker: Option<Waker>,
}

static NEXT_SCOPE: AtomicU32 = AtomicU32::new(1);
static ARMED: LazyLock<Mutex<Vec<Arc<ScopeState>>>> = LazyLock::new(Mutex::default);

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
        if env.stuck != defaults.stuck {
            config.stuck = env.stuck;
        }
        if env.starvation != defaults.starvation {
            config.starvation = env.starvation;
        }
        if env.leak != defaults.leak {
            config.leak = env.leak;
        }
        if env.worker_stall != defaults.worker_stall {
            config.worker_stall = env.worker_stall;
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
        // The detector must be on for an armed test, whatever the process-wide mode.
        if !crate::base::config::enabled() {
            crate::base::config::set_enabled(true);
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
        });
        ARMED.lock().push(state.clone());
        let previous_thread_scope = actor::current_scope();
        actor::set_thread_scope(id);
        TestScope {
            state,
            previous_thread_scope,
        }
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
    pub fn listen(&self) {
        self.state.deadlock.lock().listening = true;
    }

    /// Ends the test: checks for permits still held or forgotten, disarms, and returns the
    /// findings made during the test.
    pub fn finish(self) -> Vec<Finding> {
        rules::leaked_permit::check_end_of_scope(self.state.id);
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
        ARMED.lock().retain(|s| s.id != id);
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

/// Hands a new finding to the scopes it belongs to.
pub(crate) fn deliver(rec: &Arc<Rec>) {
    deliver_to(rec, &rec.finding.scopes);
}

/// Hands a finding to the armed scopes among `scopes` (every armed scope when empty) that do
/// not have it (or another sighting of the same bug) yet.
pub(crate) fn deliver_to(rec: &Arc<Rec>, scopes: &[u32]) {
    let armed = ARMED.lock().clone();
    for s in armed {
        let mine = scopes.is_empty() || scopes.contains(&s.id);
        if !mine {
            continue;
        }
        {
            let mut list = s.findings.lock();
            if list.iter().any(|r| r.finding.key == rec.finding.key) {
                continue;
            }
            list.push(rec.clone());
        }
        // A deadlock never ends, and a stuck queue in a test means the test hangs: fail it
        // now with the report rather than at an end that may never come.
        if matches!(
            rec.finding.kind,
            FindingKind::Deadlock | FindingKind::StuckQueue
        ) {
            let mut d = s.deadlock.lock();
            if d.report.is_none() {
                d.report = Some(finding::render_all(&[finding::materialize(rec)]));
                // Only a certain deadlock may end the process when the test cannot notice.
                d.at = (rec.finding.kind == FindingKind::Deadlock).then(Instant::now);
                if let Some(w) = d.waker.take() {
                    w.wake();
                }
            }
        }
    }
}

/// Thresholds for something created or done in `scopes` (the strictest armed one applies;
/// the process-wide configuration when none is armed).
pub(crate) fn config_for(scopes: &[u32]) -> Arc<Config> {
    let armed = ARMED.lock();
    let mut best: Option<Config> = None;
    for s in armed.iter().filter(|s| scopes.contains(&s.id)) {
        best = Some(match best {
            None => s.config.clone(),
            Some(b) => Config {
                stuck: b.stuck.min(s.config.stuck),
                starvation: b.starvation.min(s.config.starvation),
                worker_stall: b.worker_stall.min(s.config.worker_stall),
                leak: match (b.leak, s.config.leak) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                },
                ..b
            },
        });
    }
    match best {
        Some(c) => Arc::new(c),
        None => crate::base::config::current(),
    }
}

/// Whether test scope `id` is armed now.
pub(crate) fn is_armed(id: u32) -> bool {
    id != 0 && ARMED.lock().iter().any(|s| s.id == id)
}

/// Whether any test is armed now.
pub fn any_armed() -> bool {
    !ARMED.lock().is_empty()
}

/// Deadlocks delivered more than `grace` ago to a scope that never acknowledged them: the
/// test cannot notice (its thread is blocked), so the watchdog must end the process.
pub(crate) fn unacknowledged_deadlocks(grace: Duration) -> Vec<(String, String)> {
    let armed = ARMED.lock().clone();
    let mut out = Vec::new();
    for s in armed {
        let d = s.deadlock.lock();
        if let (Some(_), Some(at)) = (&d.report, d.at)
            && d.listening
            && !d.acknowledged
            && at.elapsed() >= grace
        {
            // Every finding of the test, as its failure message would list them.
            out.push((s.name.clone(), finding::render_all(&s.all_findings())));
        }
    }
    out
}

/// An armed test whose own thread is blocked in a lockscope wait (see
/// [`blocked_test_threads`]).
pub(crate) struct BlockedTest {
    /// The test's name.
    pub(crate) test: String,
    /// Its thread.
    pub(crate) thread: u64,
    /// How long the thread has been blocked (ns).
    pub(crate) blocked_ns: u64,
    /// Every finding of the test, as its failure message would list them.
    pub(crate) report: String,
}

/// Armed tests that listen for their deadlocks but whose own thread is blocked in a blocking
/// wait (their own, or a task's polled on that thread): such a test can never fail by itself.
/// Listed once the wait has lasted `grace` with a finding of the test known, or the test's
/// stuck threshold without one.
pub(crate) fn blocked_test_threads(
    state: &crate::analysis::snapshot::State,
    grace: Duration,
) -> Vec<BlockedTest> {
    let armed = ARMED.lock().clone();
    let mut out = Vec::new();
    for s in armed {
        {
            let d = s.deadlock.lock();
            if !d.listening || d.acknowledged {
                continue;
            }
        }
        let blocked_ns = state
            .prims
            .iter()
            .filter(|p| p.prim.kind().is_blocking())
            .flat_map(|p| p.waiters.iter())
            .filter(|w| w.thread == s.thread && !w.timed)
            .map(|w| state.wait_age(w))
            .max();
        let Some(blocked_ns) = blocked_ns else {
            continue;
        };
        let all = s.all_findings();
        let limit = if all.is_empty() {
            s.config.stuck
        } else {
            grace
        };
        if u128::from(blocked_ns) < limit.as_nanos() {
            continue;
        }
        let report = if all.is_empty() {
            "lockscope found no finding yet; the wait has passed the stuck threshold.".to_owned()
        } else {
            finding::render_all(&all)
        };
        out.push(BlockedTest {
            test: s.name.clone(),
            thread: s.thread,
            blocked_ns,
            report,
        });
    }
    out
}

pub(crate) fn armed_lock() -> parking_lot::MutexGuard<'static, impl Sized> {
    ARMED.lock()
}
