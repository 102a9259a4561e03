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

/// The sampled histogram of `n` durations (of `what`: "holds", "waits") is right: each counted
/// once; half in (0, 100 µs] (bucket 0) and half in (100 µs, 500 µs] (bucket 1) as `exact`
/// says, give or take a preemption (the estimate draws each untimed duration's bucket from
/// the latest sample: with about 100 to 200 samples, each share is 0.5 +- 0.05 at one
/// standard deviation); and the sum, about `n / 2` times [`LONG`], right in expectation.
pub fn assert_like_exact(what: &str, exact: &[u64; 14], sampled: &HistogramSnapshot, n: usize) {
    assert_eq!(
        sampled.count(),
        n as u64,
        "every one of the {what} counted once: {sampled:?}"
    );
    let share = |b: &[u64; 14], i: usize| b[i] as f64 / n as f64;
    eprintln!("exact {exact:?}\nsampled {:?}", sampled.buckets);
    assert!(share(exact, 1) > 0.45, "the workload itself: {exact:?}");
    for i in [0, 1] {
        let s = share(&sampled.buckets, i);
        assert!(
            (0.3..=0.7).contains(&s),
            "bucket {i} holds {s:.2} of the {what}, exactly {:.2}: {:?}",
            share(exact, i),
            sampled.buckets
        );
    }
    let sum = sampled.sum_ns as f64 / 1e9;
    let want = n as f64 / 2.0 * LONG.as_secs_f64();
    assert!(
        (0.5 * want..=2.0 * want).contains(&sum),
        "sum {sum:.3} s, exact about {want:.3} s"
    );
}
