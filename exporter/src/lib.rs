//! The lockscope exporter: Prometheus `/metrics` and JSON `/debug/*` endpoints over HTTP, and
//! tracing set-up in one call. Users reach it as `lockscope::exporter` (the `exporter`
//! feature of `lockscope`).
//!
//! Three steps from a program to a dashboard: swap `tokio::sync` / `parking_lot` imports for
//! `lockscope::tokio` / `lockscope::parking_lot`, call [`serve`], import
//! `dashboards/grafana/lockscope.json` into Grafana.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // In production: lockscope_exporter::serve(lockscope_exporter::DEFAULT_ADDR)
//! let server = lockscope_exporter::serve("127.0.0.1:0").await?;
//! println!("Prometheus can scrape http://{}/metrics", server.local_addr());
//! # server.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! | endpoint | answer |
//! |---|---|
//! | `GET /` | the live view: findings, locks and both graphs in a browser, refreshed every 1.5 s |
//! | `GET /metrics` | Prometheus text format: every `lockscope_*` family (see [`render`]) |
//! | `GET /debug/findings` | JSON array of the findings, each with `"kind"` and `"report"` (its text) |
//! | `GET /debug/locks` | JSON array of the live primitives with their holders and waiters; `?limit=N` lists at most `N` of each per primitive |
//! | `GET /debug/graph` | the wait-for and lock-order graphs as JSON; `?format=dot` for Graphviz; `?limit=N` as for the locks |
//! | `GET /debug/report` | the findings as plain text, as a failing test prints them |
//! | `GET /debug/status` | JSON: the detector's mode, thresholds, watchdog ticks, uptime, label cap |
//!
//! Nothing served changes state, and nothing reveals more than lock names, call sites and
//! task or thread ids. Already have an axum app? Mount [`router`] in it instead. Already have
//! a `prometheus` registry? Register a [`LockscopeCollector`] in it.
//!
//! # Metrics
//!
//! | family | type | labels |
//! |---|---|---|
//! | `lockscope_acquisitions_total` | counter | `lock`, `kind` |
//! | `lockscope_contended_acquisitions_total` | counter | `lock`, `kind` |
//! | `lockscope_try_failures_total` | counter | `lock`, `kind` |
//! | `lockscope_timeouts_total` | counter | `lock`, `kind` |
//! | `lockscope_cancelled_total` | counter | `lock`, `kind` |
//! | `lockscope_wait_seconds` | histogram | `lock`, `kind` |
//! | `lockscope_hold_seconds` | histogram | `lock`, `kind` |
//! | `lockscope_waiters` | gauge | `lock`, `kind` |
//! | `lockscope_oldest_wait_seconds` | gauge | `lock`, `kind` |
//! | `lockscope_holders` | gauge | `lock`, `kind` |
//! | `lockscope_permits_available` | gauge | `lock` (semaphores) |
//! | `lockscope_permits_capacity` | gauge | `lock` (semaphores) |
//! | `lockscope_findings_total` | counter | `kind` (finding kind) |
//! | `lockscope_active_findings` | gauge | `kind` (finding kind) |
//! | `lockscope_dropped_series_total` | counter | |
//! | `lockscope_detector_dropped_total` | counter | `what` (`findings`, `edges`, `events`) |
//! | `lockscope_live_primitives` | gauge | `kind` (primitive kind) |
//! | `lockscope_watchdog_ticks_total` | counter | |
//! | `lockscope_build_info` | gauge, always 1 | `version` |
//!
//! `lock` is the primitive's name; primitives sharing a name and kind share one series, and
//! past the detector's label cap (1,000 series by default; a name used by two kinds is two)
//! new ones are counted in `lock="other"` (a lock you name `other` shares it too). Histogram buckets are [`lockscope_detector::BUCKETS_SECONDS`]. The
//! finding and `what` families have a sample for every value from the first scrape on.
//!
//! # Feature flags
//!
//! - `console`: [`init_tracing`] also installs console-subscriber's layer, so tokio-console
//!   can connect (127.0.0.1:6669 by default).
//!
//! # Performance considerations
//!
//! - Acquire and release: the exporter adds nothing; the detector keeps plain atomics.
//! - Scrape: one pass over the live primitives and their holds, then the series (at most
//!   the label cap plus `other`), on a blocking thread, two renders at most at once. 10,000
//!   live semaphores under 10,000 names (1,001 series, 42,000 lines, 3 MiB of text) render
//!   in about 15 ms on a 2-core machine (`cargo bench -p lockscope-exporter --bench scrape`;
//!   the budget is 100 ms).
//! - Memory: the exporter keeps nothing per primitive; a scrape allocates its families and
//!   its text (about 3 KiB of text per series) and frees them when answered.
#![warn(missing_docs)]
// docs.rs builds with `--cfg docsrs` (Cargo.toml): each feature-gated item gets its feature badge.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
mod live;
mod metrics;
mod routes;
mod server;
mod stall;
mod tracing_init;

pub use error::{ServeError, ServeErrorKind, TracingInitError, TracingInitErrorKind};
pub use metrics::{CONTENT_TYPE, LockscopeCollector, render};
pub use routes::router;
pub use server::{DEFAULT_ADDR, ServeOptions, Server, serve};
pub use tracing_init::{DEFAULT_FILTER, init_tracing};

/// The `axum` crate whose [`Router`](axum::Router) [`router`] returns, re-exported so that an
/// app mounting it can name the type without depending on the same axum version itself.
pub use axum;

/// The `prometheus` crate this exporter builds on (its [`LockscopeCollector`] implements
/// [`prometheus::core::Collector`]), re-exported so that versions always match.
pub use prometheus;
