//! Three clocks on one timeline (nanoseconds since boot on Linux).
//!
//! [`hold_now`] is the hot-path clock that times holds: one relaxed load of a word that the
//! `lockscope-clock` thread sets from `CLOCK_MONOTONIC` every millisecond (about 1 ns to read,
//! against 6-9 ns for the coarse clock and 25 ns for `Instant::now()` on the reference
//! machine; two readings per acquisition made the clock the largest part of the hot path).
//! Resolution 1 ms: a hold shorter than that reads as 0 or one tick, and the difference of two
//! readings is still an unbiased estimate of the duration, so sums and means stay right.
//! Without the thread (not started yet, `LOCKSCOPE_CLOCK_TICK_MS=0`, detector off, or in a
//! child after `fork`) it reads [`coarse_now`]: `CLOCK_MONOTONIC_COARSE`, the kernel tick as
//! resolution (1-4 ms). [`precise_now`] (`CLOCK_MONOTONIC`) times waits, which are on the
//! slow path anyway.

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

/// The clock thread's last reading (0: no clock thread; read the coarse clock).
static TICKED: AtomicU64 = AtomicU64::new(0);

/// The time for a hold's start and end: the clock thread's last reading, else
/// [`coarse_now`]. Never ahead of [`precise_now`]; behind it by at most a tick of the clock
/// thread (1 ms by default) while that thread runs.
#[inline]
pub fn hold_now() -> u64 {
    match TICKED.load(Ordering::Relaxed) {
        0 => coarse_now(),
        t => t,
    }
}

/// Starts the `lockscope-clock` thread once (see the module docs). It reads its period from
/// the configuration on every tick, and stops setting the time (so that [`hold_now`] reads
/// the coarse clock) while the detector is off or the period is 0.
pub(crate) fn start_ticker() {
    static START: Once = Once::new();
    START.call_once(|| {
        #[cfg(unix)]
        {
            extern "C" fn in_child() {
                // Only the forking thread survives a fork: no clock thread in the child.
                TICKED.store(0, Ordering::Relaxed);
            }
            // SAFETY: registers a handler that only does an atomic store (async-signal-safe).
            unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
        }
        let spawned = std::thread::Builder::new()
            .name("lockscope-clock".into())
            .spawn(tick_forever);
        if let Err(e) = spawned {
            eprintln!("lockscope: cannot start the clock thread ({e}); holds are timed with the coarse clock");
        }
    });
}

fn tick_forever() {
    loop {
        let cfg = crate::config::current();
        match cfg.clock_tick {
            Some(period) if cfg.mode != crate::config::Mode::Off => {
                TICKED.store(precise_now().max(1), Ordering::Relaxed);
                std::thread::sleep(period);
            }
            _ => {
                TICKED.store(0, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
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
    fn the_hold_clock_is_never_ahead_and_follows_the_clock_thread() {
        start_ticker();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while TICKED.load(Ordering::Relaxed) == 0 && crate::config::enabled() {
            assert!(
                std::time::Instant::now() < deadline,
                "the clock thread never ticked"
            );
            std::thread::yield_now();
        }
        let h = hold_now();
        let p = precise_now();
        assert!(h <= p, "hold clock {h} ahead of precise {p}");
        assert!(
            p - h < 1_000_000_000,
            "hold clock {h} lags precise {p} by a second"
        );
        // It moves.
        let first = hold_now();
        while hold_now() == first {
            assert!(
                std::time::Instant::now() < deadline,
                "the hold clock never moved"
            );
            std::thread::yield_now();
        }
    }

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
