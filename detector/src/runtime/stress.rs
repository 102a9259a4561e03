//! Stress mode's decisions: whether an acquisition about to start is perturbed, and how
//! (`#[lockscope::test(stress)]`; see `docs/testing.md`).
//!
//! Off, an acquisition point pays [`on`]: one relaxed load of a flag. On, [`decide`] (cold)
//! draws from a xorshift generator of the calling thread, seeded from the run's seed and the
//! order in which threads first drew in this run: on a single-thread runtime, every decision
//! of a run comes from one generator, so a seed replays the same sequence of decisions. Only
//! the threads of the stressed test (its runtime's, and those it spawns through lockscope,
//! which carry its scope) are perturbed; everything else in the process, a plain
//! `#[tokio::test]` running beside it included, is left alone: perturbed or paused at a
//! shared site, a plain test's latent deadlock would become real, with nothing to end it.
//!
//! Directed pauses: once a run reported a latent deadlock, its sites ([`latent_sites`]) become
//! targets. An acquisition at a target site pauses (up to [`DIRECTED_BOUND`]) until it would
//! have to wait, that is until another actor holds what it asks for: the schedule that turns
//! the latent deadlock into a live one.

use std::cell::Cell;
use std::panic::Location;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};

use crate::model::finding::{Finding, FindingKind};
use crate::rules::nested_acquire::LATENT;
use crate::state::actor;

/// The longest a directed pause holds an acquisition back.
pub const DIRECTED_BOUND: Duration = Duration::from_millis(50);

/// The environment variable that asks every `#[lockscope::test]` to run in stress mode, its
/// value the number of runs.
pub const RUNS_VAR: &str = "LOCKSCOPE_STRESS";

/// The environment variable that replays one run: its value is the seed a failing run printed.
pub const SEED_VAR: &str = "LOCKSCOPE_STRESS_SEED";

/// Runs of a stress test when the attribute gives no number.
pub const DEFAULT_RUNS: u32 = 16;

static ON: AtomicBool = AtomicBool::new(false);
/// The run number, so that a thread's generator is reseeded when a new run begins.
static RUN: AtomicU64 = AtomicU64::new(0);
static SEED: AtomicU64 = AtomicU64::new(0);
/// Threads that drew in this run so far (each gets its own stream).
static THREADS: AtomicU64 = AtomicU64::new(0);
static SCOPE: AtomicU32 = AtomicU32::new(0);
/// Stress tests run one at a time in a process: the flag, the seed and the targets are global.
static SERIAL: Mutex<()> = Mutex::new(());
static TARGETS: Mutex<Vec<Target>> = Mutex::new(Vec::new());

thread_local! {
    /// (run number, generator state) of this thread.
    static RNG: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// A call site as `file:line:col`, parsed once from a finding's order edge.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Target {
    file: String,
    line: u32,
    col: u32,
}

impl Target {
    fn parse(site: &str) -> Option<Target> {
        let mut parts = site.rsplitn(3, ':');
        let col = parts.next()?.parse().ok()?;
        let line = parts.next()?.parse().ok()?;
        let file = parts.next()?.to_owned();
        Some(Target { file, line, col })
    }

    fn is(&self, site: &Location<'_>) -> bool {
        self.line == site.line() && self.col == site.column() && self.file == site.file()
    }
}

/// Whether stress mode is on: the one check an acquisition point makes.
#[inline]
pub fn on() -> bool {
    ON.load(Relaxed)
}

/// What an acquisition about to start should do first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Perturb {
    /// Nothing: acquire at once.
    Go,
    /// Yield this many times first (an async wait: `yield_now`; a blocking one: a short
    /// sleep).
    Yield(u32),
    /// A directed pause: hold back, yielding, until the acquisition would have to wait or
    /// [`DIRECTED_BOUND`] passes.
    Directed,
}

/// The decision for an acquisition at `site` by the calling thread (see the module docs).
/// Call it only when [`on`]: it draws from the thread's generator.
#[cold]
pub fn decide(site: &'static Location<'static>) -> Perturb {
    let scope = actor::current_scope();
    if scope != SCOPE.load(Relaxed) {
        return Perturb::Go;
    }
    if TARGETS.lock().iter().any(|t| t.is(site)) {
        return Perturb::Directed;
    }
    let r = next();
    if r & 1 == 0 {
        Perturb::Go
    } else {
        Perturb::Yield(1 + ((r >> 8) % 3) as u32)
    }
}

/// The next number of this thread's generator for this run.
fn next() -> u64 {
    let run = RUN.load(Relaxed);
    RNG.with(|c| {
        let (seen, mut x) = c.get();
        if seen != run || x == 0 {
            let nth = THREADS.fetch_add(1, Relaxed);
            x = mix(SEED.load(Relaxed) ^ nth.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.set((run, x));
        x
    })
}

/// splitmix64's finaliser: spreads a seed over all bits.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A stress test in progress: only one at a time per process (others wait for it). Each run
/// is begun with [`Stress::begin_run`]; dropping it turns stress mode off.
pub struct Stress {
    _serial: MutexGuard<'static, ()>,
}

impl Stress {
    /// Waits for any other stress test of the process to end, then starts this one (off
    /// until its first run begins).
    pub fn start() -> Stress {
        let serial = SERIAL.lock();
        TARGETS.lock().clear();
        Stress { _serial: serial }
    }

    /// Begins a run with `seed` for the test scope `scope`: perturbation on, every thread's
    /// generator reseeded at its next draw.
    pub fn begin_run(&self, seed: u64, scope: u32) {
        SEED.store(seed, Relaxed);
        THREADS.store(0, Relaxed);
        SCOPE.store(scope, Relaxed);
        RUN.fetch_add(1, Relaxed);
        ON.store(true, Relaxed);
    }

    /// Ends the current run: perturbation off until the next begins.
    pub fn end_run(&self) {
        ON.store(false, Relaxed);
    }

    /// Makes `sites` (`file:line:col`, as in a finding's order edges) directed-pause targets
    /// for the runs that follow. Returns how many sites were new.
    pub fn direct(&self, sites: impl IntoIterator<Item = String>) -> usize {
        let mut targets = TARGETS.lock();
        let before = targets.len();
        for t in sites.into_iter().filter_map(|s| Target::parse(&s)) {
            if !targets.contains(&t) {
                targets.push(t);
            }
        }
        targets.len() - before
    }

    /// Whether any directed target is set.
    pub fn directed(&self) -> bool {
        !TARGETS.lock().is_empty()
    }
}

impl Drop for Stress {
    fn drop(&mut self) {
        ON.store(false, Relaxed);
        SCOPE.store(0, Relaxed);
        TARGETS.lock().clear();
    }
}

/// The sites where directed pauses can make `finding` real, when it is a latent deadlock: a
/// `lock-order-inversion` (where each order took its second primitive) or a latent
/// `nested-acquire` (where the holder asked again: on a semaphore, once every permit is held
/// by a task waiting for one more, none is released). `None` for any other finding.
pub fn latent_sites(finding: &Finding) -> Option<Vec<String>> {
    match finding.kind {
        FindingKind::LockOrderInversion => {
            Some(finding.orders.iter().map(|o| o.to_site.clone()).collect())
        }
        FindingKind::NestedAcquire if finding.summary.contains(LATENT) => Some(
            finding
                .actors
                .iter()
                .flat_map(|a| a.waits.iter().map(|w| w.site.clone()))
                .collect(),
        ),
        _ => None,
    }
}

/// A random number from `seed`'s stream, independent of the per-thread decisions: the run's
/// runtime shape (say, its worker count) is drawn from it.
pub fn draw(seed: u64, what: u64) -> u64 {
    mix(seed ^ mix(what))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_parse_and_match_their_location() {
        let here = Location::caller();
        let t = Target::parse(&crate::model::prim::site_string(here)).unwrap();
        assert!(t.is(here));
        assert!(!t.is(Location::caller()), "another column or line");
        assert_eq!(Target::parse("no-colons"), None);
    }

    #[test]
    fn one_seed_gives_one_sequence_of_decisions() {
        let stress = Stress::start();
        let site = Location::caller();
        let run = |seed| {
            stress.begin_run(seed, actor::current_scope());
            let v: Vec<Perturb> = (0..64).map(|_| decide(site)).collect();
            stress.end_run();
            v
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
        assert!(a.contains(&Perturb::Go) && a.iter().any(|p| matches!(p, Perturb::Yield(_))));
        drop(stress);
        assert!(!on());
    }

    #[test]
    fn a_target_site_is_directed() {
        let (stress, site) = (Stress::start(), Location::caller());
        stress.begin_run(1, actor::current_scope());
        assert_eq!(stress.direct([crate::model::prim::site_string(site)]), 1);
        assert_eq!(decide(site), Perturb::Directed);
        assert_ne!(decide(Location::caller()), Perturb::Directed);
    }
}
