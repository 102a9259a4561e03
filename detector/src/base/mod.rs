//! Layer 1, `base`: the clock, names, statistics, the watchdog's tick count and configuration
//! values (per process and per test scope). It starts nothing: no thread, no rule.

pub mod clock;
pub mod config;
pub(crate) mod loom;
pub mod names;
pub(crate) mod sched;
pub mod stats;
pub(crate) mod ticks;
