//! The watchdog: a named OS thread that analyses the live state every tick.
//!
//! It never runs on a tokio runtime (the runtime it judges may be stuck), uses only
//! uninstrumented locks, and cannot die quietly: each tick runs under `catch_unwind`, so a
//! rule that panics loses that tick (counted as `lockscope_detector_dropped_total{what="tick"}`
//! and reported once on stderr), not the thread. `lockscope_watchdog_ticks_total` counts the
//! ticks that ran: a flat line is a dead watchdog.
//!
//! It also builds and reports the findings sighted on acquiring threads (see
//! `report::pending`): woken by the first sighting after a drain, between ticks, and before
//! the rules on every tick.

use std::collections::HashSet;
use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{LazyLock, Once};
use std::time::Duration;

use parking_lot::Mutex;

use crate::analysis::snapshot::State;
use crate::base::config;
use crate::model::finding::FindingKind;
use crate::report::finding;
use crate::report::pending;
use crate::report::scopes as scope;
use crate::rules::deadlock::Deadlock;
use crate::rules::leaked_permit::LeakedPermit;
use crate::rules::nested_acquire::Persisting;
use crate::rules::starvation::Starvation;
use crate::rules::stuck_queue::StuckQueue;
use crate::rules::task_ended::TaskEnded;
use crate::rules::{Rule, Verdict};

#[derive(Default)]
struct Rules {
    deadlock: Deadlock,
    stuck: StuckQueue,
    starvation: Starvation,
    leak: LeakedPermit,
    task_ended: TaskEnded,
    /// Self-waits of tokio primitives seen on earlier looks (see [`Persisting`]).
    persisting: Persisting,
    /// Worker stalls seen on the last look, with their age then (see
    /// [`check_stalls`](crate::rules::blocking_in_async::check_stalls)).
    stalls: std::collections::HashMap<(u64, u64), u64>,
}

static RULES: LazyLock<Mutex<Rules>> = LazyLock::new(Mutex::default);
static START: Once = Once::new();
static EXIT_GUARDS: AtomicUsize = AtomicUsize::new(0);
/// Test hook: the next tick panics (see [`inject_tick_panic`]).
static INJECT_PANIC: AtomicBool = AtomicBool::new(false);

/// Makes the next watchdog analysis panic inside a rule, as a bug in a rule would: for the
/// canary test that proves the watchdog survives it. Not for production use.
#[doc(hidden)]
pub fn inject_tick_panic() {
    INJECT_PANIC.store(true, Ordering::Relaxed);
}

/// Starts the watchdog thread once (no-op when already running).
pub fn ensure_started() {
    super::ticker::start_ticker();
    START.call_once(|| {
        // Published here rather than at the thread's first tick: until then every hold would
        // read the clock itself (`clock::hold_now`), and a new thread may take a while to run.
        // Without the thread nobody would move the time on: holds read the clock again.
        crate::base::clock::publish();
        let otherwise = "; the periodic checks (deadlocks, stalls) do not run";
        if !super::start_thread("watchdog", run, otherwise) {
            crate::base::clock::unpublish();
        }
    });
}

fn run() {
    use crate::base::clock;
    // From now on sightings made on the acquiring threads wait for this thread to report them
    // (see `report::pending`); it is woken for the first one after a drain.
    pending::set_drainer();
    loop {
        // Sleeps the tick in slices, publishing the time holds read after each (and after the
        // analysis, which may take a while at scale), so that it is never staler than
        // `PUBLISH_EVERY`, whatever the tick. Woken early, it reports the pending sightings.
        let mut left = config::current().tick;
        while !left.is_zero() {
            clock::publish();
            let slice = left.min(clock::PUBLISH_EVERY);
            let start = std::time::Instant::now();
            std::thread::park_timeout(slice);
            left = left.saturating_sub(start.elapsed());
            if pending::waiting() {
                guarded(pending::drain);
            }
        }
        clock::publish();
        if config::enabled() {
            crate::base::ticks::count();
            guarded_tick();
        }
    }
}

/// One tick that cannot take the thread down (see [`guarded`]).
fn guarded_tick() -> usize {
    guarded(tick_once)
}

/// Runs `work` (a tick, a drain) so that it cannot take the thread down: a panic in a rule is
/// counted, reported on stderr the first time, and the next tick runs as usual.
fn guarded<T: Default>(work: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(AssertUnwindSafe(work)) {
        Ok(out) => out,
        Err(panic) => {
            let first = finding::DROPPED_TICKS.fetch_add(1, Ordering::Relaxed) == 0;
            if first {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a non-string panic".into());
                write_stderr(&format!(
                    "lockscope: the watchdog's analysis panicked ({what}); that tick is lost, the watchdog goes on (counted in lockscope_detector_dropped_total{{what=\"tick\"}}). This is a bug in lockscope: please report it.\n"
                ));
            }
            T::default()
        }
    }
}

/// Writes straight to the process's stderr, not through `eprintln!`: this thread may have
/// been spawned from a test thread, whose output the test harness captures (and drops).
fn write_stderr(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

/// Runs one analysis now, on the calling thread: deadlocks (confirmed over two calls, as over
/// two ticks, once the waits are a tick old: two calls in a row confirm only waits that began
/// a tick or more before), stuck queues, starvation and leaks. Returns how many new findings it made.
///
/// The watchdog thread does this every tick; tests and tools may call it to be deterministic.
pub fn check_now() -> usize {
    guarded_tick()
}

fn tick_once() -> usize {
    if INJECT_PANIC.swap(false, Ordering::Relaxed) {
        panic!("injected by the watchdog's inject_tick_panic");
    }
    // The sightings made on acquiring threads first: a nested acquire before the deadlock it
    // leads to, so that a test failed by a self-deadlock lists both.
    pending::drain();
    let mut state = State::capture();
    state.unscoped_stuck = crate::report::scopes::unscoped_stuck();
    let mut rules = RULES.lock();
    // Before the deadlock rule, so that a test failed by a self-deadlock lists both.
    let tick = config::current().tick;
    crate::report::finding::report_all(rules.persisting.check(&state, tick.as_nanos() as u64));
    let mut new = 0;
    let mut deadlocks = Vec::new();
    rules.deadlock.min_age_ns = tick.as_nanos() as u64;
    for v in rules.deadlock.check(&state) {
        if let Verdict::Found(mut f) = v {
            // A new deadlock only: the rule finds a standing one again on every tick.
            if !finding::known(&f) {
                crate::report::traces::attach(&mut f);
            }
            deadlocks.push((*f).clone());
            if finding::report(*f) {
                new += 1;
            }
        }
    }
    let confirmed = rules.deadlock.confirmed_waits.clone();
    rules.stuck.skip_waits = confirmed.clone();
    let mut verdicts = rules.stuck.check(&state);
    // A deadlocked or stuck primitive is not also a starving one.
    let mut skip: HashSet<u64> = rules.stuck.stuck_prims.clone();
    skip.extend(rules.deadlock.confirmed_prims.iter().copied());
    rules.starvation.skip_prims = skip;
    rules.starvation.skip_waits = confirmed;
    verdicts.extend(rules.starvation.check(&state));
    verdicts.extend(rules.leak.check(&state));
    verdicts.extend(rules.task_ended.check(&state));
    crate::report::finding::report_all(crate::rules::blocking_in_async::check_stalls(
        &state,
        &mut rules.stalls,
    ));
    for v in verdicts {
        if let Verdict::Found(f) = v
            && finding::report(*f)
        {
            new += 1;
        }
    }
    finding::retain_active(rules.deadlock.kind(), &rules.deadlock.active);
    finding::retain_active(rules.stuck.kind(), &rules.stuck.active);
    finding::retain_active(rules.starvation.kind(), &rules.starvation.active);
    let mut leaks: HashSet<String> = rules.leak.active.clone();
    leaks.extend(rules.task_ended.active.iter().cloned());
    // End-of-test leaks stay active: nothing re-checks them.
    leaks.extend(
        finding::findings()
            .into_iter()
            .filter(|f| f.kind == FindingKind::LeakedPermit && f.active && f.key.ends_with("|end"))
            .map(|f| f.key),
    );
    finding::retain_active(rules.leak.kind(), &leaks);
    drop(rules);
    exit_if_stuck(&state, &deadlocks);
    // After the findings: a test that a deadlock or stuck queue is ending is left to them.
    if let Some(report) = crate::runtime::test_timeout::check(&state) {
        end_process(
            "a test timed out with nothing moving, and cannot fail by itself",
            &report,
        );
    }
    new
}

/// Ends the process when a deadlock can be reported no other way: a blocked test thread, or
/// plain threads under [`watchdog`].
fn exit_if_stuck(state: &State, deadlocks: &[crate::model::finding::Finding]) {
    if let Some((test, report)) = scope::unacknowledged_deadlocks(Duration::from_secs(1))
        .into_iter()
        .next()
    {
        die(&format!("in test {test}:\n{report}"));
    }
    // No silent hang: a test whose own thread is blocked in a lockscope wait can never fail
    // by itself. Once a finding is known (or the wait passes the stuck threshold), end it.
    if let Some(b) = scope::blocked_test_threads(state, Duration::from_secs(1))
        .into_iter()
        .next()
    {
        die(&format!(
            "in test {}: its thread, {}, has been blocked for {} ms in a lockscope wait and can never notice a failure.\n{}\n{}",
            b.test,
            crate::state::actor::ActorId::from_thread_seq(b.thread).describe(),
            b.blocked_ns / 1_000_000,
            b.report,
            crate::report::dump::live_dump(state, b.scope, b.thread)
        ));
    }
    if EXIT_GUARDS.load(Ordering::Relaxed) > 0 && !deadlocks.is_empty() && !scope::any_armed() {
        die(&finding::render_all(deadlocks));
    }
}

fn die(report: &str) -> ! {
    end_process("a deadlock blocks threads that can never wake", report)
}

/// Prints `why` and the report to stderr and ends the process with status 101 (a failed
/// test's).
fn end_process(why: &str, report: &str) -> ! {
    // The CI reports (`LOCKSCOPE_REPORT`) first: nothing runs after the exit.
    crate::report::ci::before_exit();
    // Straight to the stderr stream: the harness would drop captured output at the exit.
    write_stderr(&format!(
        "\nlockscope watchdog: {why}; ending the process.\n{report}\n"
    ));
    std::process::exit(101);
}

/// Arms the blocking-deadlock watchdog for plain `#[test]`s and programs: while the returned
/// guard lives, a deadlock among threads (which can never wake to fail a test) makes the
/// watchdog print the full report to stderr and exit the process with status 101, within
/// about a second of the deadlock forming. `#[lockscope::test]` does this by itself.
///
/// ```no_run
/// let _watchdog = lockscope_detector::watchdog();
/// // ... threads that might deadlock on lockscope::parking_lot locks ...
/// ```
pub fn watchdog() -> WatchdogGuard {
    if !config::enabled() {
        crate::runtime::configure::set_enabled(true);
    }
    ensure_started();
    EXIT_GUARDS.fetch_add(1, Ordering::Relaxed);
    WatchdogGuard { _private: () }
}

/// Keeps the exit-on-deadlock watchdog armed (see [`watchdog`]).
#[must_use = "the watchdog is disarmed when the guard is dropped"]
pub struct WatchdogGuard {
    _private: (),
}

impl Drop for WatchdogGuard {
    fn drop(&mut self) {
        EXIT_GUARDS.fetch_sub(1, Ordering::Relaxed);
    }
}

pub(crate) fn rules_lock() -> parking_lot::MutexGuard<'static, impl Sized> {
    RULES.lock()
}

#[cfg(test)]
mod tests {
    /// Holds read the published time as soon as the watchdog is asked to start, not from its
    /// thread's first tick (which a busy machine may delay).
    #[test]
    fn the_time_is_published_as_the_watchdog_starts() {
        super::ensure_started();
        assert!(crate::base::clock::published().is_some());
    }
}
