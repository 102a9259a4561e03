//! The wait-time histogram is right in expectation although only one contended wait in
//! `WAIT_SAMPLE_EVERY` per thread reads a precise clock: a synthetic workload of known waits
//! (half about 300 µs, half released at once, alternating) must land in the right buckets,
//! with every wait counted exactly once.
//!
//! Its own process (one test): the sampling countdown is per thread, and nothing else runs.

use std::sync::Arc;
use std::time::Instant;

mod histogram_check;
use histogram_check::{Exact, LONG, assert_like_exact, series, spin_for};

#[test]
fn sampled_wait_histogram_matches_exact_durations() {
    const N: usize = 3_200;
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let exact = rt.block_on(async {
        let m = Arc::new(lockscope::tokio::Mutex::named(
            "wait-histogram/synthetic",
            0u64,
        ));
        let mut exact = Exact::default();
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
            exact.add(waiter.await.expect("the waiter"));
        }
        exact
    });
    let series = series("wait-histogram/synthetic");
    assert_eq!(
        series.contended, N as u64,
        "every waiter queued: {series:?}"
    );
    assert_like_exact("waits", &exact, &series.wait, N);
}
