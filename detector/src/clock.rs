//! Two clocks on one timeline (nanoseconds since boot on Linux).
//!
//! [`coarse_now`] is the hot-path clock: `CLOCK_MONOTONIC_COARSE`, about 5 ns to read on the
//! reference machine against 23 ns for `Instant::now()`, with the kernel tick as resolution
//! (1-4 ms). A hold shorter than a tick reads as 0 or one tick; the difference of two coarse
//! readings is still an unbiased estimate of the duration, so sums and means stay right.
//! [`precise_now`] (`CLOCK_MONOTONIC`) times waits, which are on the slow path anyway.

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
