//! The hold-time histogram is right in expectation although only one acquisition in
//! `SAMPLE_EVERY` reads a precise clock: a synthetic workload of known hold times (half held
//! for 300 µs, half released at once, alternating) must land in the right buckets, with every
//! hold counted exactly once.
//!
//! Its own process (one test): the sampling countdown is per thread, and nothing else runs.

use std::time::Instant;

mod histogram_check;
use histogram_check::{Exact, LONG, assert_like_exact, series, spin_for};

#[test]
fn sampled_hold_histogram_matches_exact_durations() {
    // About 100 samples, whatever the sampling rate.
    const N: usize = 100 * lockscope::detector::__private::clock::SAMPLE_EVERY as usize;
    let m = lockscope::parking_lot::Mutex::named("hold-histogram/synthetic", 0u64);
    let mut exact = Exact::default();
    for i in 0..N {
        let g = m.lock();
        let start = Instant::now();
        if i % 2 == 0 {
            spin_for(LONG);
        }
        let held = start.elapsed();
        drop(g);
        exact.add(held);
    }
    let hold = series("hold-histogram/synthetic").hold;
    assert_like_exact("holds", &exact, &hold, N);
}
