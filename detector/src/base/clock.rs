//! Three clocks on one timeline (nanoseconds since boot on Linux).
//!
//! [`hold_now`] times holds, twice per acquisition. By default it reads [`coarse_now`]:
//! `CLOCK_MONOTONIC_COARSE`, 6-9 ns on the reference machine against 25 ns for
//! `Instant::now()`, with the kernel tick as resolution (1-4 ms). A hold shorter than a tick
//! reads as 0 or one tick; the difference of two readings is still an unbiased estimate of
//! the duration, so sums and means stay right.
//!
//! With `LOCKSCOPE_CLOCK_TICK_MS=1` (or [`Config::clock_tick`](crate::Config::clock_tick)) a
//! `lockscope-clock` thread sets a word from `CLOCK_MONOTONIC` every tick and [`hold_now`]
//! is one load of it (about 1 ns): 10-15 ns less per acquisition, 1 ms resolution. Its cost
//! is the thread's wake-ups: 0.4 s of CPU per 10 s on the reference VM, where timer wake-ups
//! are expensive (4% of a core), so it only pays off in processes doing millions of
//! acquisitions a second, and is off by default. It pauses while the detector is off; a
//! forked child falls back to the coarse clock.
//!
//! [`precise_now`] (`CLOCK_MONOTONIC`) times waits, which are on the slow path anyway.

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

/// Starts the `lockscope-clock` thread once, if the configuration asks for it (see the module
/// docs). It reads its period from the configuration on every tick, and stops setting the
/// time (so that [`hold_now`] reads the coarse clock) while the detector is off or the
/// period is unset.
pub(crate) fn start_ticker() {
    static START: Once = Once::new();
    if crate::base::config::current().clock_tick.is_none() {
        return;
    }
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
        let cfg = crate::base::config::current();
        match cfg.clock_tick {
            Some(period) if cfg.mode != crate::base::config::Mode::Off => {
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
