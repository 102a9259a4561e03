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

// Internal modules: `pub` only because lockscope's own crates (the wrappers, the exporter,
// the tests) reach into them, and hidden from the documentation: they are not part of the
// API and change without notice. Their one sanctioned path is `__private` below; everything
// a user needs is re-exported at the crate root or lives in `config` and `names`.
#[doc(hidden)]
pub mod actor;
#[doc(hidden)]
pub mod clock;
pub mod config;
mod console;
pub mod executor;
#[doc(hidden)]
pub mod finding;
#[doc(hidden)]
pub mod graph;
mod graph_snapshot;
#[doc(hidden)]
pub mod held;
#[doc(hidden)]
pub mod hooks;
mod loom;
#[doc(hidden)]
pub mod metrics;
pub mod names;
#[doc(hidden)]
pub mod prim;
#[doc(hidden)]
pub mod rules;
#[doc(hidden)]
pub mod scope;
#[doc(hidden)]
pub mod snapshot;
#[doc(hidden)]
pub mod stats;
#[doc(hidden)]
pub mod testing;
mod ticks;
mod tls;
#[doc(hidden)]
pub mod wait;
mod watchdog;

/// Not part of the API: the detector's internals, for lockscope's own crates (the wrappers
/// feed the detector through `hooks`). Anything here may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::{
        actor, clock, finding, graph, held, hooks, metrics, prim, rules, scope, snapshot, stats,
        testing, wait,
    };
}

pub use actor::ActorId;
pub use config::{Config, ConfigError, Mode, enabled, set_enabled};
pub use finding::{
    Access, ActorReport, Finding, FindingKind, OrderEdge, PrimRef, active_counts, assert_clean,
    clear_findings, dropped_counts, findings, render_all, totals,
};
pub use graph_snapshot::{GraphSnapshot, WaitEdge, WaitNode, graph};
pub use metrics::{MetricsSnapshot, SeriesMetrics, metrics};
pub use prim::{NameError, Prim, PrimKind, PrimitiveId, validate_name};
pub use scope::{ScopeOptions, TestScope};
pub use snapshot::{HolderSnapshot, LockSnapshot, WaiterSnapshot, locks};
pub use stats::{BUCKETS_SECONDS, HistogramSnapshot, StatsSnapshot};
pub use ticks::watchdog_ticks;
#[doc(hidden)]
pub use watchdog::inject_tick_panic;
pub use watchdog::{WatchdogGuard, check_now, watchdog};
