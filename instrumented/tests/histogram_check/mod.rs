//! What the two sampled-histogram tests (`hold_histogram`, `wait_histogram`) share: a
//! workload of known durations (half about 300 µs, half about 0, alternating), each duration's
//! exact bucket, and the checks of the sampled histogram against the exact one.

use std::time::{Duration, Instant};

use lockscope::detector::{self, HistogramSnapshot, SeriesMetrics};

/// The long half of the workload.
pub const LONG: Duration = Duration::from_micros(300);

/// Busy-waits `d` (a known duration, without a sleep's wake-up latency).
pub fn spin_for(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// The bucket of `BUCKETS_SECONDS` that `d` falls in.
pub fn bucket_of(d: Duration) -> usize {
    let secs = d.as_secs_f64();
    detector::BUCKETS_SECONDS
        .iter()
        .position(|&b| secs <= b)
        .unwrap_or(13)
}

/// The metrics series of `lock`.
pub fn series(lock: &str) -> SeriesMetrics {
    detector::metrics()
        .series
        .into_iter()
        .find(|s| &*s.lock == lock)
        .expect("the series")
}

/// The exact record of a workload: each duration's bucket, and their sum.
#[derive(Default)]
pub struct Exact {
    pub buckets: [u64; 14],
    pub sum: Duration,
}

impl Exact {
    /// Records one duration.
    pub fn add(&mut self, d: Duration) {
        self.buckets[bucket_of(d)] += 1;
        self.sum += d;
    }
}

/// The sampled histogram of `n` durations (of `what`: "holds", "waits") is right: each counted
/// once; the shares of bucket 0 ((0, 100 µs]) and bucket 1 ((100 µs, 500 µs]) within 0.2 of
/// the exact ones (the estimate draws each untimed duration's bucket from the latest sample:
/// with about 100 to 200 samples, each share is off by 0.05 at one standard deviation); and
/// the sum within a factor of two of the exact sum. Compared with what happened, not with
/// the workload's design: on a loaded machine a preempted duration lands in a higher bucket,
/// exactly and in the estimate alike (a duration of two ticks or more is recorded whole).
pub fn assert_like_exact(what: &str, exact: &Exact, sampled: &HistogramSnapshot, n: usize) {
    assert_eq!(
        sampled.count(),
        n as u64,
        "every one of the {what} counted once: {sampled:?}"
    );
    let share = |b: &[u64; 14], i: usize| b[i] as f64 / n as f64;
    eprintln!("exact {:?}\nsampled {:?}", exact.buckets, sampled.buckets);
    assert!(
        share(&exact.buckets, 1) > 0.3,
        "the workload itself: {:?}",
        exact.buckets
    );
    for i in [0, 1] {
        let (s, e) = (share(&sampled.buckets, i), share(&exact.buckets, i));
        assert!(
            (s - e).abs() <= 0.2,
            "bucket {i} holds {s:.2} of the {what}, exactly {e:.2}: {:?}",
            sampled.buckets
        );
    }
    let sum = sampled.sum_ns as f64 / 1e9;
    let want = exact.sum.as_secs_f64();
    assert!(
        (0.5 * want..=2.0 * want).contains(&sum),
        "sum {sum:.3} s, exactly {want:.3} s"
    );
}
