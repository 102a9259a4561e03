//! Self-monitoring of the watchdog: how many analyses its thread has run
//! (`lockscope_watchdog_ticks_total`; a flat line is a dead or disabled watchdog).

use std::sync::atomic::{AtomicU64, Ordering};

static TICKS: AtomicU64 = AtomicU64::new(0);

/// Counts one analysis of the watchdog thread (not [`check_now`](crate::check_now) calls).
pub(crate) fn count() {
    TICKS.fetch_add(1, Ordering::Relaxed);
}

/// Analyses the watchdog thread has run since the process started: the value of
/// `lockscope_watchdog_ticks_total`. It grows by one per tick (100 ms by default) while the
/// detector is enabled; [`check_now`](crate::check_now) does not count.
///
/// ```
/// let before = lockscope_detector::watchdog_ticks();
/// assert!(lockscope_detector::watchdog_ticks() >= before);
/// ```
pub fn watchdog_ticks() -> u64 {
    TICKS.load(Ordering::Relaxed)
}
