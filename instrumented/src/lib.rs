//! # lockscope
//!
//! Deadlock and starvation diagnostics for async Rust: drop-in instrumented locks, a detector
//! that turns silent hangs into reports, and a Prometheus exporter.
//!
//! ## Swap the import, nothing else
//!
//! | instead of | write |
//! |---|---|
//! | `tokio::sync::{Mutex, RwLock, Semaphore, ...}` | `lockscope::tokio::{Mutex, RwLock, Semaphore, ...}` |
//! | `parking_lot::{Mutex, RwLock, ReentrantMutex, Condvar, ...}` | `lockscope::parking_lot::{...}` |
//! | `std::sync::{Mutex, RwLock, Condvar, ...}` | `lockscope::std::sync::{...}` |
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use lockscope::tokio::Mutex; // was: use tokio::sync::Mutex;
//!
//! let m = Mutex::new(0);
//! *m.lock().await += 1;
//! assert_eq!(*m.lock().await, 1);
//! # }
//! ```
//!
//! Every acquisition now emits an `acquire` span (target `lockscope`, level TRACE), feeds
//! per-primitive statistics and enters the detector's graphs; see [`detector`].
//!
//! ## Feature flags
//!
//! - `exporter`: re-exports `lockscope-exporter` as `lockscope::exporter` (`/metrics`,
//!   `/debug/*`).
//! - `arc_lock`: parking_lot's `arc_lock` guards on `lockscope::parking_lot` locks
//!   (`lock_arc`, `read_arc`, `write_arc`, `upgradable_read_arc` and their `try_`/timed forms,
//!   returning `ArcMutexGuard`, `ArcRwLockReadGuard`, `ArcRwLockWriteGuard`,
//!   `ArcRwLockUpgradableReadGuard`); turns on parking_lot's own `arc_lock`.
//! - `console`: every primitive is also a tokio-console resource, listed by name with its
//!   live lock, permit and waiter state (no `tokio_unstable` needed for these resources;
//!   console-subscriber itself wants `--cfg console_without_tokio_unstable`), and
//!   `lockscope::exporter::init_tracing` installs console-subscriber's layer.
//! - `lock_api`: `lockscope::lock_api::{RawMutex, RawRwLock}`, adapters over any
//!   `lock_api` raw lock, so `lock_api::Mutex<lockscope::lock_api::RawMutex<R>, T>` and code
//!   generic over lock_api are tracked like the other wrappers.
//!
//! ## Performance considerations
//!
//! - **acquire (uncontended)**: one relaxed load of the mode, one TRACE level check, the task
//!   id (a thread-local read), the clock word the watchdog publishes (no clock read) and a few
//!   relaxed stores into the thread's hold table. No lock, no allocation. Switched off
//!   (`LOCKSCOPE_MODE=off`), the load of the mode and a branch.
//! - **acquire (contended)**: a blocking lock first spins on `try_lock` as parking_lot does;
//!   then the waiter is recorded, in the waiting thread's own slots where its place in the
//!   queue cannot matter, else in the primitive's queue under its own short lock. One wait in
//!   16 is timed with the precise clock, the others on the published one.
//! - **release**: the hold cleared with plain stores by its thread, and its time counted (a
//!   short hold: one add into the thread's tally or the mutex's count; one in 256 or so timed
//!   precisely for the histogram).
//! - **create**: one allocation and a registry insert under a sharded lock; `const`
//!   constructors register on first use.
//! - **drop**: a registry removal and, if the primitive was ever nested, a graph update.
//! - **scrape / analysis**: aggregation happens on the scraping or watchdog thread, never on
//!   the acquiring one.
#![warn(missing_docs)]
// docs.rs builds with `--cfg docsrs` (Cargo.toml): each feature-gated item gets its feature badge.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod blocking_shell;
mod chan_handle;
#[cfg(any(unix, windows))]
mod global;
mod keyed;
mod level;
#[cfg(feature = "lock_api")]
pub mod lock_api;
pub mod multilock;
pub mod parking_lot;
mod probe;
pub mod runtime;
mod shell;
pub mod status;
pub mod std;
mod stress;
mod test_support;
pub mod tokio;
#[cfg(feature = "tokio-util")]
pub mod tokio_util;

/// Marks a test, like `#[tokio::test]` (on an `async fn`) or `#[test]` (on a plain `fn`,
/// which runs with no runtime), with lockscope's detector armed for it.
///
/// It accepts everything `#[tokio::test]` does (`flavor = "current_thread" | "multi_thread"`,
/// `worker_threads = N`, `start_paused = true`, `crate = "path"`) plus the detector's
/// thresholds for this test: `stuck_ms`, `starvation_ms`, `leak_ms`, `worker_stall_ms`,
/// `timeout_ms` (defaults: 1000, 1000, "end of test", 10 and 60000, `0` meaning no timeout;
/// the `LOCKSCOPE_*_MS` variables override the defaults). The runtime it builds is
/// instrumented (see [`runtime`]), so a blocking guard held across an `.await` that blocks the thread its holder needs is a `deadlock`.
///
/// - No silent hang: when the test's own thread is blocked inside a lockscope wait (it can
///   never panic), the watchdog prints the test's name, its findings and the live state to
///   stderr and ends the process with status 101, once a finding is known or the wait passes
///   the stuck threshold.
/// - No test hangs: a test that has not finished, with nothing moving in it (no acquisition,
///   release or other change on the primitives it uses) for `timeout_ms`, fails with a dump of
///   what it holds and waits for (a pending body panics; a blocked thread ends the process).
///
/// - A live `deadlock` among the test's tasks and threads fails the test within about a
///   second with the report, instead of hanging. If even that is impossible (the test's own
///   thread is blocked on a parking_lot or std lock), the watchdog prints the report and
///   ends the process with status 101.
/// - Any other finding made during the test (`nested-acquire`, `lock-order-inversion`,
///   `leaked-permit` for permits still held or forgotten when the body returns,
///   `stuck-queue`, `starvation`, `blocking-in-async`) fails it at its end.
/// - The panic message lists every finding, each starting `lockscope: <kind>`.
/// - `stress` (or `stress = N`; `LOCKSCOPE_STRESS=N` for every async test of a run): the body
///   runs N times (default 16) with seeded perturbation before each acquisition and directed
///   pauses at the sites of a reported inversion or latent nested acquire, so that a latent
///   deadlock happens: it fails
///   the test as a `deadlock` "confirmed in run k of N (seed S)", and
///   `LOCKSCOPE_STRESS_SEED=S` replays that run (see `docs/testing.md`).
/// - Tests run in parallel never fail on each other's findings: the test's runtime threads,
///   tasks and the primitives they create are stamped with the test's scope. A finding that
///   belongs to no test (say, among plain threads spawned outside any runtime) fails every
///   test armed at the time.
///
/// ```no_run
/// use lockscope::tokio::Mutex;
///
/// #[lockscope::test]
/// async fn transfers_do_not_deadlock() {
///     let a = Mutex::named("a", 0);
///     let b = Mutex::named("b", 0);
///     let _ga = a.lock().await;
///     let _gb = b.lock().await; // always a then b: fine
/// }
///
/// #[lockscope::test(flavor = "multi_thread", worker_threads = 2, stuck_ms = 500)]
/// async fn busy_pool() { /* ... */ }
///
/// #[lockscope::test(stress)]
/// async fn transfers_both_ways() { /* a latent deadlock fails here as a confirmed one */ }
///
/// #[lockscope::test]
/// fn plain_threads() {
///     let m = lockscope::parking_lot::Mutex::named("counter", 0);
///     *m.lock() += 1;
/// }
/// ```
pub use lockscope_macros::test;

/// A declared lock level and what can be one: see [`tokio::Mutex::with_level`] and
/// `docs/lock-tools.md`.
pub use lockscope_detector::{Level, LockLevel};

#[doc(hidden)]
pub mod __private {
    pub use crate::test_support::*;
    pub use lockscope_detector::__private::scope::with_timeout;
}

/// The detector: findings, live state, graphs and configuration (`lockscope-detector`).
pub use lockscope_detector as detector;

/// The exporter: `/metrics` and `/debug/*` over HTTP (`lockscope-exporter`).
#[cfg(feature = "exporter")]
pub use lockscope_exporter as exporter;

/// The README's code blocks, compiled (and run, unless marked `no_run`) by `cargo test` as
/// doctests of this crate, so the README cannot drift from the API.
#[cfg(all(doctest, feature = "exporter"))]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
