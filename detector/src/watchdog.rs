//! The watchdog: a named OS thread that analyses the live state every tick.
//!
//! It never runs on a tokio runtime (the runtime it judges may be stuck), uses only
//! uninstrumented locks, and never panics: a rule that fails to build a report loses that
//! report, not the thread.

use std::collections::HashSet;
use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{LazyLock, Once};
use std::time::Duration;

use parking_lot::Mutex;

use crate::finding::{self, FindingKind};
use crate::rules::deadlock::Deadlock;
use crate::rules::leaked_permit::LeakedPermit;
use crate::rules::starvation::Starvation;
use crate::rules::stuck_queue::StuckQueue;
use crate::rules::{Rule, Verdict};
use crate::snapshot::State;
use crate::{config, scope};

#[derive(Default)]
struct Rules {
    deadlock: Deadlock,
    stuck: StuckQueue,
    starvation: Starvation,
    leak: LeakedPermit,
}

static RULES: LazyLock<Mutex<Rules>> = LazyLock::new(Mutex::default);
static START: Once = Once::new();
static EXIT_GUARDS: AtomicUsize = AtomicUsize::new(0);
static TICKS: AtomicU64 = AtomicU64::new(0);

/// Starts the watchdog thread once (no-op when already running).
pub fn ensure_started() {
    crate::clock::start_ticker();
    START.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("lockscope-watchdog".into())
            .spawn(run);
        if let Err(e) = spawned {
            eprintln!("lockscope: cannot start the watchdog thread: {e}");
        }
    });
}

fn run() {
    loop {
        let tick = config::current().tick;
        std::thread::sleep(tick);
        if config::enabled() {
            tick_once();
            TICKS.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Analyses the watchdog thread has run so far (not counting [`check_now`]). A count that
/// stops growing while the detector is on means the watchdog is dead or stuck.
///
/// ```
/// let before = lockscope_detector::watchdog_ticks();
/// assert!(lockscope_detector::watchdog_ticks() >= before);
/// ```
pub fn watchdog_ticks() -> u64 {
    TICKS.load(Ordering::Relaxed)
}

/// Runs one analysis now, on the calling thread: deadlocks (confirmed over two calls, as over
/// two ticks), stuck queues, starvation and leaks. Returns how many new findings it made.
///
/// The watchdog thread does this every tick; tests and tools may call it to be deterministic.
pub fn check_now() -> usize {
    tick_once()
}

fn tick_once() -> usize {
    let state = State::capture();
    let mut rules = RULES.lock();
    // Before the deadlock rule, so that a test failed by a self-deadlock lists both.
    let tick = config::current().tick;
    crate::rules::nested_acquire::check_persisting(&state, tick.as_nanos() as u64);
    let mut new = 0;
    let mut deadlocks = Vec::new();
    for v in rules.deadlock.check(&state) {
        if let Verdict::Found(f) = v {
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
    crate::rules::blocking_in_async::check_stalls(&state);
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
    // End-of-test leaks stay active: nothing re-checks them.
    leaks.extend(
        finding::findings()
            .into_iter()
            .filter(|f| f.kind == FindingKind::LeakedPermit && f.active && f.key.ends_with("|end"))
            .map(|f| f.key),
    );
    finding::retain_active(rules.leak.kind(), &leaks);
    drop(rules);
    exit_if_stuck(&deadlocks);
    new
}

/// Ends the process when a deadlock can be reported no other way: a blocked test thread, or
/// plain threads under [`watchdog`].
fn exit_if_stuck(deadlocks: &[finding::Finding]) {
    if let Some((test, report)) = scope::unacknowledged_deadlocks(Duration::from_secs(1))
        .into_iter()
        .next()
    {
        die(&format!("in test {test}:\n{report}"));
    }
    if EXIT_GUARDS.load(Ordering::Relaxed) > 0 && !deadlocks.is_empty() && !scope::any_armed() {
        die(&finding::render_all(deadlocks));
    }
}

fn die(report: &str) -> ! {
    // Straight to the stderr stream, not `eprintln!`: this thread may have been spawned from a
    // test thread, whose output the test harness captures (and would drop at the exit below).
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "\nlockscope watchdog: a deadlock blocks threads that can never wake; ending the process.\n{report}\n"
    );
    let _ = err.flush();
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
        config::set_enabled(true);
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
