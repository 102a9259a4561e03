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
//!
//! ## Performance considerations
//!
//! - **acquire (uncontended)**: one relaxed load of the mode, one TRACE level check, the task
//!   id (a thread-local read), a coarse clock read and a few relaxed stores into the thread's
//!   hold table. No lock, no allocation.
//! - **acquire (contended)**: the waiter is recorded under the primitive's own mutex; the
//!   wait is timed with the precise clock.
//! - **release**: one coarse clock read, one histogram increment (a plain store for exclusive
//!   locks), one store clearing the hold.
//! - **create**: one allocation and a registry insert under a sharded lock; `const`
//!   constructors register on first use.
//! - **drop**: a registry removal and, if the primitive was ever nested, a graph update.
//! - **scrape / analysis**: aggregation happens on the scraping or watchdog thread, never on
//!   the acquiring one.
#![warn(missing_docs)]

mod probe;
pub mod parking_lot;
pub mod tokio;

/// The detector: findings, live state, graphs and configuration (`lockscope-detector`).
pub use lockscope_detector as detector;

/// The exporter: `/metrics` and `/debug/*` over HTTP (`lockscope-exporter`).
#[cfg(feature = "exporter")]
pub use lockscope_exporter as exporter;
