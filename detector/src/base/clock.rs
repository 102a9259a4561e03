//! Three clocks on one timeline (nanoseconds since boot on Linux).
//!
//! [`hold_now`] times holds, twice per acquisition, so it must cost next to nothing: it is
//! one load of a word that the watchdog sets from `CLOCK_MONOTONIC` at every tick and at
//! least every [`PUBLISH_EVERY`] (`publish`), so its resolution is that period (100 ms by
//! default). That is plenty for what reads a hold's start (the detector's thresholds are
//! seconds); the hold-time histogram gets its precision from sampling instead: one
//! acquisition in [`SAMPLE_EVERY`] per thread is timed with [`precise_now`] at both ends (see
//! `runtime::hooks`), and the holds shorter than a tick, which the coarse word cannot time,
//! are counted (one add) and given the buckets and durations of the primitive's sampled short
//! holds when the statistics are read (`Stats::count_short`), so that the buckets are right
//! in expectation and every count is exact.
//! Before the watchdog starts (it publishes as it starts), in a forked child (which has no
//! watchdog) and when its thread could not start, it reads [`coarse_now`]
//! (`CLOCK_MONOTONIC_COARSE`: a vDSO read, no system call).
//!
//! With `LOCKSCOPE_CLOCK_TICK_MS=1` (or [`Config::clock_tick`](crate::Config::clock_tick)) a
//! `lockscope-clock` thread sets the same word every tick instead, for 1 ms resolution, at
//! the price of its wake-ups (a thousand a second; their cost is in docs/performance.md, "Clocks"). It pauses while the
//! detector is off.
//!
//! [`precise_now`] (`CLOCK_MONOTONIC`) times the sampled holds, blocking and timed waits, and
//! one untimed async wait in `WAIT_SAMPLE_EVERY` per thread (the others read the published
//! word: in a convoy of tasks on a contended mutex, two precise readings per acquisition were
//! a tenth of the CPU; see `runtime::hooks::wait_begin`).

use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[cfg(target_os = "linux")]
mod imp {
    #[inline]
    fn read(clock: libc::clockid_t) -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec and both clock ids exist on every Linux
        // since 2.6.32; clock_gettime writes only into `ts`.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        (ts.tv_sec as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(ts.tv_nsec as u64)
    }

    #[inline]
    pub fn coarse() -> u64 {
        read(libc::CLOCK_MONOTONIC_COARSE)
    }

    #[inline]
    pub fn precise() -> u64 {
        read(libc::CLOCK_MONOTONIC)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::sync::OnceLock;
    use std::time::Instant;

    fn epoch() -> Instant {
        static EPOCH: OnceLock<Instant> = OnceLock::new();
        *EPOCH.get_or_init(Instant::now)
    }

    #[inline]
    pub fn coarse() -> u64 {
        precise()
    }

    #[inline]
    pub fn precise() -> u64 {
        // +1 so that 0 never means "now" (0 is "unset" in the books).
        epoch().elapsed().as_nanos() as u64 + 1
    }
}

/// The last published reading (0: none yet; read the coarse clock), alone on its cache line:
/// every acquisition reads it, only the watchdog (or the clock thread) writes it.
#[repr(align(128))]
struct Published(AtomicU64);

static TICKED: Published = Published(AtomicU64::new(0));

/// The longest the published time may go stale while the watchdog runs: it publishes at least
/// this often whatever its tick.
pub const PUBLISH_EVERY: Duration = Duration::from_millis(100);

/// One acquisition in this many, per thread, is timed precisely for the hold histogram.
pub const SAMPLE_EVERY: u32 = 256;

/// Publishes the time for [`hold_now`] (the watchdog, at every tick).
pub(crate) fn publish() {
    static FORK: Once = Once::new();
    FORK.call_once(|| {
        #[cfg(unix)]
        {
            extern "C" fn in_child() {
                // Only the forking thread survives a fork: nobody publishes in the child.
                TICKED.0.store(0, Ordering::Relaxed);
            }
            // SAFETY: registers a handler that only does an atomic store (async-signal-safe).
            unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
        }
    });
    TICKED.0.store(precise_now().max(8), Ordering::Relaxed);
}

/// Withdraws the published time (nobody will publish it again): holds read the clock.
pub(crate) fn unpublish() {
    TICKED.0.store(0, Ordering::Relaxed);
}

/// The time for a hold's start and end: the clock thread's last reading, else
/// [`coarse_now`]. Never ahead of [`precise_now`]; behind it by at most [`PUBLISH_EVERY`]
/// while the watchdog runs (1 ms with the clock thread).
#[inline]
pub fn hold_now() -> u64 {
    match TICKED.0.load(Ordering::Relaxed) {
        0 => coarse_now(),
        t => t,
    }
}

/// The published time as [`hold_now`] reads it, 3 low bits cleared (a hold's start and end);
/// `None` before the watchdog first publishes it.
#[inline(always)]
pub fn published() -> Option<u64> {
    match TICKED.0.load(Ordering::Relaxed) {
        0 => None,
        t => Some(t & !7),
    }
}

/// The published word itself: 0 before the watchdog first publishes it (else a time whose
/// 3 low bits the caller clears).
#[inline(always)]
pub(crate) fn published_word() -> u64 {
    TICKED.0.load(Ordering::Relaxed)
}

/// Coarse monotonic time in nanoseconds (cheap; resolution of the kernel tick).
#[inline]
pub fn coarse_now() -> u64 {
    imp::coarse()
}

/// Precise monotonic time in nanoseconds, on the same timeline as [`coarse_now`].
#[inline]
pub fn precise_now() -> u64 {
    imp::precise()
}

/// Milliseconds between two readings, saturating at 0.
#[inline]
pub fn ms_between(earlier: u64, later: u64) -> f64 {
    later.saturating_sub(earlier) as f64 / 1e6
}

/// Wall-clock milliseconds since the Unix epoch (for reports; never on a hot path).
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_share_a_timeline() {
        let c = coarse_now();
        let p = precise_now();
        // The coarse clock lags by at most a tick (allow 50 ms for a loaded VM).
        assert!(p + 1_000_000 >= c, "coarse {c} ahead of precise {p}");
        assert!(
            p - c < 50_000_000,
            "coarse {c} lags precise {p} by more than 50 ms"
        );
    }
}
