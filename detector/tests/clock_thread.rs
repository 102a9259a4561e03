//! The opt-in clock thread (`clock_tick`): it starts with the watchdog, the hold clock then
//! follows it, never ahead of the precise clock, and it stops setting the time when the
//! detector is switched off. Its own test binary: it installs a process-wide configuration.

use std::time::{Duration, Instant};

use lockscope_detector::__private::clock::{hold_now, precise_now};
use lockscope_detector::{Config, set_enabled};

fn clock_thread_running() -> bool {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks.flatten().any(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|c| c.trim() == "lockscope-clock")
            })
        })
        .unwrap_or(false)
}

#[test]
fn the_hold_clock_follows_the_clock_thread_and_is_never_ahead() {
    assert!(!clock_thread_running(), "no clock thread by default");
    Config::builder()
        .clock_tick(Some(Duration::from_millis(1)))
        .build()
        .unwrap()
        .install();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !clock_thread_running() {
        assert!(Instant::now() < deadline, "the clock thread never started");
        std::thread::yield_now();
    }
    for _ in 0..1000 {
        let h = hold_now();
        let p = precise_now();
        assert!(h <= p, "hold clock {h} ahead of precise {p}");
        assert!(
            p - h < 1_000_000_000,
            "hold clock {h} lags precise {p} by a second"
        );
    }
    let first = hold_now();
    while hold_now() == first {
        assert!(Instant::now() < deadline, "the hold clock never moved");
        std::thread::yield_now();
    }
    // Off: the hold clock falls back to the coarse clock (still moving, still not ahead).
    set_enabled(false);
    set_enabled(true);
    let h = hold_now();
    assert!(h <= precise_now());
    assert!(
        Config::builder()
            .clock_tick(Some(Duration::from_secs(1)))
            .build()
            .is_err(),
        "a period past 100 ms is refused"
    );
}
