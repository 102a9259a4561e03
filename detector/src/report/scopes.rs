//! The test-scope sink: the armed tests, each with the findings delivered to it and the
//! deadlock signal its `#[lockscope::test]` awaits. `runtime::scope::TestScope` arms and
//! disarms them; [`finding::report`] delivers to them.

use std::sync::atomic::AtomicU32;
use std::sync::{Arc, LazyLock};
use std::task::Waker;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::base::config::Config;
use crate::model::finding::{Finding, FindingKind};
use crate::report::finding::{self, Rec};

pub(crate) struct ScopeState {
    pub(crate) id: u32,
    pub(crate) name: String,
    /// lockscope number of the test's own thread.
    pub(crate) thread: u64,
    pub(crate) config: Config,
    pub(crate) findings: Mutex<Vec<Arc<Rec>>>,
    pub(crate) deadlock: Mutex<DeadlockSignal>,
    /// The test timeout's idle clock and signal (see `runtime::test_timeout`).
    pub(crate) timeout: Mutex<TimeoutSignal>,
}

impl ScopeState {
    /// Findings delivered to this scope so far (sightings still pending are reported first).
    pub(crate) fn all_findings(&self) -> Vec<Finding> {
        crate::report::pending::drain();
        self.delivered()
    }

    /// Findings delivered to this scope so far, without reporting the pending sightings: for
    /// a caller that holds this scope's `deadlock` lock, which a drain may need (it delivers).
    fn delivered(&self) -> Vec<Finding> {
        self.findings
            .lock()
            .iter()
            .map(|r| finding::materialize(r))
            .collect()
    }
}

#[derive(Default)]
pub(crate) struct DeadlockSignal {
    pub(crate) report: Option<String>,
    pub(crate) at: Option<Instant>,
    pub(crate) acknowledged: bool,
    /// Someone awaits [`TestScope::deadlock`] (the test attribute does): only then may an
    /// unanswered deadlock end the process.
    pub(crate) listening: bool,
    pub(crate) waker: Option<Waker>,
}

/// The test timeout of one armed test: what moved last, and the signal its body's
/// [`WithTimeout`](crate::runtime::scope::WithTimeout) waits for.
pub(crate) struct TimeoutSignal {
    /// A digest of the test's movement counters at the last tick (`None`: not read yet).
    pub(crate) digest: Option<u64>,
    /// When the digest last changed (or the test was armed).
    pub(crate) idle_since: Instant,
    /// The dump, once the timeout has fired, and when it fired.
    pub(crate) fired: Option<(Instant, String)>,
    /// A [`WithTimeout`](crate::runtime::scope::WithTimeout) polls this test's body: the test can
    /// fail by a panic instead of ending the process.
    pub(crate) listening: bool,
    /// The body's waker, woken when the timeout fires.
    pub(crate) waker: Option<Waker>,
}

impl TimeoutSignal {
    pub(crate) fn new() -> TimeoutSignal {
        TimeoutSignal {
            digest: None,
            idle_since: Instant::now(),
            fired: None,
            listening: false,
            waker: None,
        }
    }
}

pub(crate) static NEXT_SCOPE: AtomicU32 = AtomicU32::new(1);
static ARMED: LazyLock<Mutex<Vec<Arc<ScopeState>>>> = LazyLock::new(Mutex::default);

/// Arms `state`: findings of its scope are delivered to it from now on.
pub(crate) fn arm(state: Arc<ScopeState>) {
    ARMED.lock().push(state);
    // A bug sighted before, seen again in this test, must reach it.
    crate::report::pending::forget_reported();
}

/// Disarms scope `id`.
pub(crate) fn disarm(id: u32) {
    ARMED.lock().retain(|s| s.id != id);
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
        // now with the report rather than at an end that may never come. So does a nested
        // acquire whose wait has lasted the test's stuck threshold (a pool of one checked out
        // twice: the stuck-queue rule tells it so).
        let stuck_ms = s.config.stuck.as_millis() as u64;
        let hangs = match rec.finding.kind {
            FindingKind::Deadlock | FindingKind::StuckQueue => true,
            FindingKind::NestedAcquire => rec
                .finding
                .actors
                .iter()
                .flat_map(|a| &a.waits)
                .any(|w| w.for_ms >= stuck_ms),
            _ => false,
        };
        if hangs {
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

/// Every armed scope, as they stand now.
pub(crate) fn armed() -> Vec<Arc<ScopeState>> {
    ARMED.lock().clone()
}

/// Armed scope `id`, if it is.
pub(crate) fn get(id: u32) -> Option<Arc<ScopeState>> {
    if id == 0 {
        return None;
    }
    ARMED.lock().iter().find(|s| s.id == id).cloned()
}

/// The name and findings of every armed test that has any (for the CI reports when the
/// watchdog ends the process).
pub(crate) fn armed_findings() -> Vec<(String, Vec<Finding>)> {
    let armed = ARMED.lock().clone();
    armed
        .iter()
        .map(|s| (s.name.clone(), s.all_findings()))
        .filter(|(_, f)| !f.is_empty())
        .collect()
}

/// Whether test scope `id` is armed now.
pub(crate) fn is_armed(id: u32) -> bool {
    id != 0 && ARMED.lock().iter().any(|s| s.id == id)
}

/// The stuck threshold that judges a queue belonging to no test (plain threads a test spawned
/// itself carry no scope, and a `const`-constructed primitive registers on first use, on such
/// a thread, with none): the loosest of the armed tests' thresholds, since such a finding goes
/// to every test armed at the time, and it must hold by each one's measure. `None` when no
/// test is armed (the process-wide threshold applies).
pub(crate) fn unscoped_stuck() -> Option<Duration> {
    ARMED.lock().iter().map(|s| s.config.stuck).max()
}

/// Whether any test is armed now.
pub fn any_armed() -> bool {
    !ARMED.lock().is_empty()
}

/// Deadlocks delivered more than `grace` ago to a scope that never acknowledged them: the
/// test cannot notice (its thread is blocked), so the watchdog must end the process.
pub(crate) fn unacknowledged_deadlocks(grace: Duration) -> Vec<(String, String)> {
    // Before the `deadlock` locks are taken: a drain delivers, which takes them.
    crate::report::pending::drain();
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
            out.push((s.name.clone(), finding::render_all(&s.delivered())));
        }
    }
    out
}

/// An armed test whose own thread is blocked in a lockscope wait (see
/// [`blocked_test_threads`]).
pub(crate) struct BlockedTest {
    /// The test's name.
    pub(crate) test: String,
    /// Its scope.
    pub(crate) scope: u32,
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
            scope: s.id,
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
