//! Negative controls for the executor in the model: blocking waits that end, on the threads
//! where they are fine, must stay silent. Each test is `#[lockscope::test]`, which fails on
//! any finding: passing is the assertion.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use lockscope::parking_lot::Mutex;

#[path = "common/mod.rs"]
mod common;

use common::wait_for_waiters;

/// A plain thread takes `name`, lets `waiters` queue, holds it `hold` more, releases.
/// Returns once it holds the lock.
fn plain_holder(
    m: Arc<Mutex<u64>>,
    name: &'static str,
    waiters: usize,
    hold: Duration,
) -> std::thread::JoinHandle<()> {
    let taken = Arc::new(Barrier::new(2));
    let t = taken.clone();
    let h = std::thread::spawn(move || {
        let g = m.lock();
        t.wait();
        wait_for_waiters(name, waiters);
        std::thread::sleep(hold);
        drop(g);
    });
    taken.wait();
    h
}

/// A 1 ms critical section under contention on a worker, 100 times: never a stall.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_critical_sections_on_workers_stay_silent() {
    let m = Arc::new(Mutex::named("short_cs", 0u64));
    for _ in 0..100 {
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                tokio::spawn(async move {
                    let mut g = m.lock();
                    *g += 1;
                    // Work inside the section, not a sleep-and-hope: the other task waits.
                    let end = Instant::now() + Duration::from_millis(1);
                    while Instant::now() < end {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    }
    assert_eq!(*m.lock(), 200);
}

/// A current-thread runtime's task waits briefly for a lock a plain thread holds and
/// releases: the thread is blocked, but the holder needs nothing from it.
#[lockscope::test(worker_stall_ms = 1000, stuck_ms = 10000, starvation_ms = 10000)]
async fn current_thread_task_waits_for_a_plain_thread() {
    let m = Arc::new(Mutex::named("ct_plain", 0u64));
    let holder = plain_holder(m.clone(), "ct_plain", 1, Duration::from_millis(200));
    let m2 = m.clone();
    tokio::spawn(async move { *m2.lock() += 1 }).await.unwrap();
    holder.join().unwrap();
    assert_eq!(*m.lock(), 1);
}

/// Every worker briefly contends a lock a plain thread holds: all workers are blocked, but no
/// holder needs the runtime, so it is no deadlock (the wait is under the stall threshold
/// set here, so no blocking-in-async either; the stuck and starvation thresholds are raised
/// so that a slow machine stretching the 400 ms hold cannot make them fire: this test is
/// about the deadlock model).
#[lockscope::test(
    flavor = "multi_thread",
    worker_threads = 2,
    worker_stall_ms = 2000,
    stuck_ms = 10000,
    starvation_ms = 10000
)]
async fn every_worker_behind_a_plain_thread_is_no_deadlock() {
    let m = Arc::new(Mutex::named("mt_plain", 0u64));
    let holder = plain_holder(m.clone(), "mt_plain", 2, Duration::from_millis(400));
    let tasks: Vec<_> = (0..2)
        .map(|_| {
            let m = m.clone();
            tokio::spawn(async move { *m.lock() += 1 })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    holder.join().unwrap();
    assert_eq!(*m.lock(), 2);
}

/// Long blocking waits in `spawn_blocking` and `block_in_place` are where they belong.
#[lockscope::test(
    flavor = "multi_thread",
    worker_threads = 2,
    stuck_ms = 10000,
    starvation_ms = 10000
)]
async fn spawn_blocking_and_block_in_place_waits_stay_silent() {
    let m = Arc::new(Mutex::named("off_worker", 0u64));
    let holder = plain_holder(m.clone(), "off_worker", 1, Duration::from_millis(60));
    let m2 = m.clone();
    tokio::task::spawn_blocking(move || *m2.lock() += 1)
        .await
        .unwrap();
    holder.join().unwrap();
    let holder = plain_holder(m.clone(), "off_worker", 1, Duration::from_millis(60));
    tokio::task::block_in_place(|| *m.lock() += 1);
    holder.join().unwrap();
    assert_eq!(*m.lock(), 2);
}

/// A parked `block_on` future holding a blocking guard while a worker briefly waits for it:
/// one worker of two is blocked, the other can wake the future. Not a deadlock.
#[lockscope::test(
    flavor = "multi_thread",
    worker_threads = 2,
    worker_stall_ms = 2000,
    stuck_ms = 10000,
    starvation_ms = 10000
)]
async fn one_worker_of_two_behind_the_body_is_no_deadlock() {
    let m = Arc::new(Mutex::named("one_of_two", 0u64));
    let g = m.lock();
    let m2 = m.clone();
    let t = tokio::spawn(async move { *m2.lock() += 1 });
    wait_for_waiters("one_of_two", 1);
    // Long enough for the watchdog to judge it twice.
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(g);
    t.await.unwrap();
    assert_eq!(*m.lock(), 1);
}
