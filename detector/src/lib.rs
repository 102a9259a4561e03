// How the detector is built (for its maintainers; the public docs follow below).
//
// Seven layers, read top-down. A file under `src/<layer>/` imports only from its own layer and
// the ones above it; `tests/layers.rs` fails, naming file and line, on an import that runs up
// the list. This file (the public API and the old flat paths) is the only one outside them.
//
//   base      the clock, configuration values (storing one starts nothing), names, stats
//   model     Acq, Mode and the hold flags, primitive ids/kinds/names, Finding and its parts
//   state     the books: hold tables (held/), thread locals, actors, waiter queues, the
//             primitive and executor registries; changing them returns what happened
//   analysis  State snapshots, the wait-for reduction, the lock-order graph (adding an edge
//             returns the cycle it closes)
//   rules     one file per finding kind: from a state or one event to findings, returned
//   report    the finding store, rendering, and the sinks: tracing, stderr, test scopes, metrics
//   runtime   the entry points (hooks, PrimCell), the watchdog, TestScope, Config::install:
//             the one layer that starts threads, runs rules and hands findings to report
//
// The life of one contended acquisition, say of a `lockscope::tokio::Mutex`:
//   1. entry point: the wrapper calls `runtime::hooks::wait_begin(prim, acq)`.
//   2. state: hooks reads the actor's holds in `state::held`, notes each lock-order edge in
//      `analysis::graph::lockorder` (which returns the cycle a new edge closes, if any), and
//      queues a `state::wait::WaiterRec` on the primitive (the common wait of a task that
//      holds nothing takes a slot of its thread's table instead: `state::held::waits`).
//   3. rule: hooks records the sighting (a cycle, a hold of the same primitive) with
//      `report::pending::defer`; the watchdog thread, or the next read of findings, hands it to
//      `rules::lock_order_inversion` (or `rules::nested_acquire`), which returns a
//      `model::finding::Finding`. Rules that need time (deadlock, stuck queue, starvation,
//      leaks) run on the watchdog thread over an `analysis::snapshot::State`.
//   4. report: the finding goes to `report::finding::report`, which keeps it once, logs it,
//      counts it and delivers it to the armed test scopes.
//   Granted, `acquired_after_wait` turns the waiter into an entry of the thread's hold table;
//   dropping the guard calls `release_books`, which clears that entry, and after the inner
//   unlock `release_stats`, which counts the hold's time.

//! The lockscope detector: the live state of every instrumented primitive, the wait-for and
//! lock-order graphs built from it, and the findings they produce.
//!
//! Users reach it as `lockscope::detector`. It is fed through typed hooks by the
//! wrappers of the `lockscope` crate (never by parsing tracing output, so user filters cannot
//! blind it), analyses the state on a watchdog thread, and reports each finding once: as a
//! tracing `WARN` (`ERROR` for deadlocks) on target `lockscope::detector`, in [`findings`],
//! in metrics, and to the tests armed with `#[lockscope::test]`.
//!
//! | finding | when |
//! |---|---|
//! | `deadlock` | tasks or threads that can never proceed (a reduction of the wait-for graph) |
//! | `nested-acquire` | a primitive acquired or waited for by its own holder |
//! | `lock-order-inversion` | a cycle in the lock-order graph |
//! | `leaked-permit` | permits forgotten, or held past the leak threshold / the end of a test |
//! | `stuck-queue` | waiters queued past the stuck threshold while nothing was granted |
//! | `starvation` | a waiter bypassed, or a contended primitive held, past the threshold |
//! | `blocking-in-async` | a blocking lock waited for, or held across `.await`, on a worker |
//!
//! ```
//! // A plain test using the detector directly: no findings so far.
//! lockscope_detector::assert_clean();
//! assert!(lockscope_detector::findings().is_empty());
//! ```
#![warn(missing_docs)]
// docs.rs builds with `--cfg docsrs` (Cargo.toml): each feature-gated item gets its feature badge.
#![cfg_attr(docsrs, feature(doc_cfg))]

// The layers, top to bottom (see the map at the top of this file). Internal: `pub(crate)`,
// reached by lockscope's own crates through `__private` only.
// 1.
pub(crate) mod base;
// 2.
pub(crate) mod model;
// 3.
pub(crate) mod state;
// 4.
pub(crate) mod analysis;
// 5.
pub(crate) mod rules;
// 6.
pub(crate) mod report;
// 7.
pub(crate) mod runtime;

// The public modules, where users have always found them.
pub use base::names;
pub use state::executor;

pub mod config {
    //! Modes and thresholds: one [`Config`], its documented defaults, a builder and the
    //! environment.
    //!
    //! | variable | meaning | default |
    //! |---|---|---|
    //! | `LOCKSCOPE_MODE` | `off`, `production` or `test` | `production` |
    //! | `LOCKSCOPE_STUCK_MS` | waiters queued this long while nothing is granted: `stuck-queue` | 10000 (test: 1000) |
    //! | `LOCKSCOPE_STARVATION_MS` | a waiter bypassed, or a contended primitive held, this long: `starvation` | 10000 (test: 1000) |
    //! | `LOCKSCOPE_LEAK_MS` | a permit held this long by a holder gone quiet: `leaked-permit` | 60000 (test: end of test) |
    //! | `LOCKSCOPE_WORKER_STALL_MS` | a blocking wait stalls an async worker this long: `blocking-in-async` | 50 (test: 10) |
    //! | `LOCKSCOPE_TEST_TIMEOUT_MS` | an armed test with nothing moving this long fails with a dump of its live state (`docs/testing.md`); `0`: none | none (test: 60000) |
    //! | `LOCKSCOPE_CLOCK_TICK_MS` | period of a `lockscope-clock` thread that times holds (docs/performance.md, "Clocks"); `0`: none, holds read the coarse clock | 0 |
    //!
    //! The environment is read once, when the first primitive is created or the detector is first
    //! asked anything; an invalid value is reported on stderr and as an `ERROR` event, and the
    //! default is used (instrumentation never stops a program). [`Config::from_env`] returns the
    //! error itself for programs that prefer to fail at start-up.

    pub use crate::base::config::*;
    pub use crate::runtime::configure::set_enabled;
}

/// Not part of the API: the detector's internals, for lockscope's own crates (the wrappers
/// feed the detector through `hooks`; the exporter reads `snapshot`, `status` and `metrics`;
/// the tests reach into the books). This is their one path; anything here may change in any
/// release.
#[doc(hidden)]
pub mod __private {
    pub use crate::analysis::{graph, snapshot, status};
    pub use crate::base::{clock, stats};
    pub use crate::report::{ci, metrics};
    pub use crate::runtime::cell as prim;
    pub use crate::runtime::watchdog::inject_tick_panic;
    pub use crate::runtime::{hooks, scope, stress, testing};
    pub use crate::state::{actor, held, wait};

    /// The rules (pure: state in, findings out), for the detector's benches and tests.
    pub mod rules {
        pub use crate::rules::*;
    }

    /// Findings: the model's types, the store's functions, the end-of-test check.
    pub mod finding {
        pub use crate::model::finding::*;
        pub use crate::report::finding::*;
        pub use crate::runtime::scope::assert_clean;
    }
}

pub use analysis::graph_snapshot::{GraphSnapshot, WaitEdge, WaitNode, graph, graph_limited};
pub use analysis::snapshot::{HolderSnapshot, LockSnapshot, WaiterSnapshot, locks, locks_limited};
pub use base::stats::{BUCKETS_SECONDS, HistogramSnapshot, StatsSnapshot};
pub use base::ticks::watchdog_ticks;
pub use config::{Config, ConfigError, Mode, enabled, set_enabled};
pub use model::finding::{
    Access, ActorReport, AwaitTrace, Finding, FindingKind, OrderEdge, PrimRef,
};
pub use model::level::{Level, LockLevel};
pub use model::prim::{NameError, PrimKind, PrimitiveId, validate_name};
pub use report::finding::{
    active_counts, clear_findings, dropped_counts, findings, render_all, totals,
};
pub use report::metrics::{ChannelMetrics, MetricsSnapshot, SeriesMetrics, metrics};
pub use runtime::scope::assert_clean;
pub use runtime::scope::{ScopeOptions, TestScope};
pub use runtime::watchdog::{WatchdogGuard, check_now, watchdog};
pub use state::actor::ActorId;
pub use state::channels::ChannelReader;
pub use state::prim::Prim;
