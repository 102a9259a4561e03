//! Layer 1, `base`: the clock, actor ids, names, statistics and configuration values.
//! It imports nothing from the detector and starts nothing (no thread, no rule).

pub mod clock;
pub mod config;
pub(crate) mod loom;
pub mod names;
pub mod stats;
pub(crate) mod ticks;
