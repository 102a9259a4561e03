//! The atomics of the hold table: std's, or loom's under `cfg(loom)`, so that the loom models
//! in `state/held/loom_models.rs` check the table's real code, not a copy of it. Run them with
//! `RUSTFLAGS="--cfg loom" cargo test -p lockscope-detector --release --lib loom`.
//!
//! Only the hold entries and their tables use these: the task index and the tallies are
//! `static` arrays, which loom's atomics (no `const` constructors) cannot build; they stay on
//! std's atomics and out of the models.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, fence};
