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

// The layers, top to bottom: each imports only from the ones above it (`tests/layers.rs`
// keeps it so). Internal: `pub(crate)`; the old flat paths below stay for lockscope's crates.
pub(crate) mod analysis;
pub(crate) mod base;
pub(crate) mod model;
pub(crate) mod report;
#[doc(hidden)]
pub mod rules;
pub(crate) mod runtime;
pub(crate) mod state;

// The public modules, where users have always found them.
pub use base::{config, names};
pub use state::executor;

// Internal modules under their old flat paths: `pub` only because lockscope's own crates (the
// wrappers, the exporter, the tests) reach into them, and hidden from the documentation: they
// are not part of the API and change without notice. Their one sanctioned path is `__private`.
#[doc(hidden)]
pub use analysis::{graph, snapshot};
#[doc(hidden)]
pub use base::{actor, clock, stats};
#[doc(hidden)]
pub use report::{finding, metrics};
#[doc(hidden)]
pub use runtime::{hooks, scope, testing};
#[doc(hidden)]
pub use state::{held, prim, wait};

/// Not part of the API: the detector's internals, for lockscope's own crates (the wrappers
/// feed the detector through `hooks`). Anything here may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::{
        actor, clock, finding, graph, held, hooks, metrics, prim, rules, scope, snapshot, stats,
        testing, wait,
    };
}

pub use analysis::graph_snapshot::{GraphSnapshot, WaitEdge, WaitNode, graph};
pub use base::actor::ActorId;
pub use base::stats::{BUCKETS_SECONDS, HistogramSnapshot, StatsSnapshot};
pub use base::ticks::watchdog_ticks;
pub use config::{Config, ConfigError, Mode, enabled, set_enabled};
pub use finding::{
    Access, ActorReport, Finding, FindingKind, OrderEdge, PrimRef, active_counts, assert_clean,
    clear_findings, dropped_counts, findings, render_all, totals,
};
pub use metrics::{MetricsSnapshot, SeriesMetrics, metrics};
pub use prim::{NameError, Prim, PrimKind, PrimitiveId, validate_name};
#[doc(hidden)]
pub use runtime::watchdog::inject_tick_panic;
pub use runtime::watchdog::{WatchdogGuard, check_now, watchdog};
pub use scope::{ScopeOptions, TestScope};
pub use snapshot::{HolderSnapshot, LockSnapshot, WaiterSnapshot, locks};
