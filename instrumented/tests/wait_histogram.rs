//! The wait-time histogram is right in expectation although only one contended wait in
//! `WAIT_SAMPLE_EVERY` per thread reads a precise clock: a synthetic workload of known waits
//! (half about 300 µs, half released at once, alternating) must land in the right buckets,
//! with every wait counted exactly once.
//!
//! Its own process (one test): the sampling countdown is per thread, and nothing else runs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lockscope::detector;

fn spin_for(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[test]
fn sampled_wait_histogram_matches_exact_durations() {
    const N: usize = 3_200;
    const LONG: Duration = Duration::from_micros(300);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let exact = rt.block_on(async {
        let m = Arc::new(lockscope::tokio::Mutex::named(
            "wait-histogram/synthetic",
            0u64,
        ));
        let mut exact = [0u64; 14];
        for i in 0..N {
            let g = m.lock().await;
            let m2 = m.clone();
            let waiter = tokio::spawn(async move {
                let start = Instant::now();
                let g = m2.lock().await;
                let waited = start.elapsed();
                drop(g);
                waited
            });
            // The waiter runs now, finds the mutex held and queues.
            tokio::task::yield_now().await;
            if i % 2 == 0 {
                spin_for(LONG);
            }
            drop(g);
            let secs = waiter.await.expect("the waiter").as_secs_f64();
            let bucket = detector::BUCKETS_SECONDS
                .iter()
                .position(|&b| secs <= b)
                .unwrap_or(13);
            exact[bucket] += 1;
        }
        exact
    });
    let series = detector::metrics()
        .series
        .into_iter()
        .find(|s| &*s.lock == "wait-histogram/synthetic")
        .expect("the series");
    assert_eq!(
        series.contended, N as u64,
        "every waiter queued: {series:?}"
    );
    let wait = series.wait;
    assert_eq!(wait.count(), N as u64, "every wait counted once: {wait:?}");
    // Exact: half in (0, 100 µs] (bucket 0), half in (100 µs, 500 µs] (bucket 1), give or
    // take a preemption. The estimate draws each untimed wait's bucket from the latest sample:
    // about 200 samples, so each share is 0.5 +- 0.04 (one standard deviation).
    let share = |b: &[u64; 14], i: usize| b[i] as f64 / N as f64;
    eprintln!("exact {exact:?}\nsampled {:?}", wait.buckets);
    assert!(share(&exact, 1) > 0.45, "the workload itself: {exact:?}");
    for i in [0, 1] {
        let s = share(&wait.buckets, i);
        assert!(
            (0.3..=0.7).contains(&s),
            "bucket {i} holds {s:.2} of the waits, exactly {:.2}: {:?}",
            share(&exact, i),
            wait.buckets
        );
    }
    // The sum: 1,600 waits of about 300 µs and 1,600 near 0, about 0.48 s, in expectation.
    let sum = wait.sum_ns as f64 / 1e9;
    let want = N as f64 / 2.0 * LONG.as_secs_f64();
    assert!(
        (0.5 * want..=2.0 * want).contains(&sum),
        "sum {sum:.3} s, exact about {want:.3} s"
    );
}
