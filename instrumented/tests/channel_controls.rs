//! The negative controls of `channels.rs`, each an armed `#[lockscope::test]` that must stay
//! silent: backpressure, a `select!` with a timer or a lock, a receiver handed on, many cloned
//! senders, a closed or dropped receiver. In a binary of their own, so that no other test's
//! analyses run beside them but those they start themselves.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lockscope::tokio::{Mutex, mpsc, task};

#[path = "common/mod.rs"]
mod common;

use common::until_waited;

/// The consumer of `rx`: receives a message, then takes `m` to handle it.
fn consumer(m: Arc<Mutex<u64>>, mut rx: mpsc::Receiver<u64>) -> task::JoinHandle<()> {
    task::spawn(async move {
        while let Some(v) = rx.recv().await {
            *m.lock().await += v;
        }
    })
}

// --- negative controls: each must stay silent in an armed test ---------------------------

/// A consumer slower than its producers, each producer taking the consumer's lock before
/// (never across) its send: the channel stays full for a second and more.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn backpressure_with_no_lock_held_across_send_is_silent() {
    let m = Arc::new(Mutex::named("neg_chan_backpressure", 0));
    let (tx, mut rx) = mpsc::channel_named::<u64>("neg_chan_backpressure", 1);
    let m1 = m.clone();
    let consumer = task::spawn(async move {
        let started = Instant::now();
        let mut n = 0;
        while let Some(v) = rx.recv().await {
            *m1.lock().await += v;
            n += 1;
            if started.elapsed() > Duration::from_millis(1200) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        n
    });
    let producers: Vec<_> = (0..4)
        .map(|_| {
            let (m, tx) = (m.clone(), tx.clone());
            task::spawn(async move {
                loop {
                    *m.lock().await += 0;
                    if tx.send(1).await.is_err() {
                        break;
                    }
                }
            })
        })
        .collect();
    drop(tx);
    assert!(consumer.await.unwrap() > 10);
    for p in producers {
        p.await.unwrap();
    }
}

/// A send raced against a short timer while holding the lock the consumer needs: the timer
/// wins, the lock is released, the consumer drains. 100 rounds, each sending until the timer
/// wins; it must within three sends, since the consumer can take at most one value before it
/// waits for the held lock and the channel holds one more.
async fn select_send_against_a_timer(name: &str) {
    let m = Arc::new(Mutex::named(name, 0));
    let (tx, rx) = mpsc::channel_named(name, 1);
    let consumer = consumer(m.clone(), rx);
    for _ in 0..100 {
        let g = m.lock().await;
        let mut sent = 0;
        loop {
            tokio::select! {
                r = tx.send(1) => { r.unwrap(); sent += 1; }
                _ = tokio::time::sleep(Duration::from_millis(5)) => break,
            }
        }
        assert!(
            sent <= 2,
            "{sent} sends went through while the consumer's lock was held"
        );
        drop(g);
    }
    // The consumer drains and ends, its guard dropped before the test ends (a guard still
    // held by a task at the end of an armed test is a leak).
    drop(tx);
    consumer.await.unwrap();
}

#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_select_of_send_and_a_timer_while_holding_a_lock_is_silent() {
    select_send_against_a_timer("neg_chan_select").await;
}

/// The same, with the analysis run back to back on a thread beside it (as a test waiting for
/// a finding does): two looks a moment apart both see one send wait about to lose to its
/// timer, and the deadlock rule must not take them for two ticks.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_select_of_send_and_a_timer_is_silent_however_often_the_analysis_runs() {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let analyses = std::thread::spawn({
        let stop = stop.clone();
        move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                lockscope::detector::check_now();
                n += 1;
            }
            n
        }
    });
    select_send_against_a_timer("neg_chan_select_hammered").await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(analyses.join().unwrap() > 100, "the analyses did not run");
}

/// A send raced against a lockscope lock wait (which the detector sees) for longer than its
/// confirmation: the task may be granted that lock, so it is no deadlock.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_select_of_send_and_a_lock_while_holding_a_lock_is_silent() {
    let m = Arc::new(Mutex::named("neg_chan_select_lock", 0));
    let other = Arc::new(Mutex::named("neg_chan_select_other", 0));
    let (tx, rx) = mpsc::channel_named("neg_chan_select_lock", 1);
    let consumer = consumer(m.clone(), rx);
    let g = m.lock().await;
    tx.send(1).await.unwrap();
    tx.send(1).await.unwrap();
    let held = other.clone().lock_owned().await;
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        drop(held);
    });
    tokio::select! {
        r = tx.send(1) => r.unwrap(),
        _ = other.lock() => {}
    }
    drop(g);
    release.await.unwrap();
    drop(tx);
    consumer.await.unwrap();
}

/// The receiver, last used by one task that then waits for the held lock, is handed to a new
/// task that drains it: the senders wait for the new owner. 100 rounds.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_handed_to_a_new_task_is_silent() {
    for round in 0..100u64 {
        let m = Arc::new(Mutex::named("neg_chan_handed", 0));
        let (tx, mut rx) = mpsc::channel_named::<u64>("neg_chan_handed", 1);
        tx.send(0).await.unwrap();
        let (m1, tx1) = (m.clone(), tx.clone());
        let g = m.lock().await;
        // The first owner receives once, hands the receiver on, then waits for the lock.
        #[allow(clippy::async_yields_async)] // hands the draining task's handle back, awaited below
        let first = task::spawn(async move {
            rx.recv().await.unwrap();
            let drain = task::spawn(async move {
                tokio::task::yield_now().await;
                while rx.recv().await.is_some() {}
            });
            *m1.lock().await += 1;
            drain
        });
        until_waited(&m).await;
        for i in 0..5 {
            tx1.send(round + i).await.unwrap();
        }
        drop(g);
        drop((tx, tx1));
        first.await.unwrap().await.unwrap();
    }
}

/// 100 senders cloned into 100 tasks, each taking the consumer's lock between sends.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_cloned_senders_are_silent() {
    let m = Arc::new(Mutex::named("neg_chan_senders", 0));
    let (tx, rx) = mpsc::channel_named("neg_chan_senders", 4);
    let consumer = consumer(m.clone(), rx);
    let senders: Vec<_> = (0..100)
        .map(|_| {
            let (m, tx) = (m.clone(), tx.clone());
            task::spawn(async move {
                for _ in 0..10 {
                    *m.lock().await += 0;
                    tx.send(1).await.unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    for s in senders {
        s.await.unwrap();
    }
    consumer.await.unwrap();
    assert_eq!(*m.lock().await, 1000);
}

/// The consumer receives once, then closes (or drops) its receiver and waits for the lock the
/// sender holds: the sender's waiting send fails, and it lets the lock go. 100 rounds each.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_or_dropped_receiver_is_silent() {
    for close in [true, false] {
        for _ in 0..100 {
            let m = Arc::new(Mutex::named("neg_chan_closed", 0));
            let (tx, mut rx) = mpsc::channel_named::<u64>("neg_chan_closed", 1);
            let m1 = m.clone();
            let g = m.lock().await;
            let c = task::spawn(async move {
                rx.recv().await;
                if close {
                    rx.close();
                } else {
                    drop(rx);
                }
                *m1.lock().await += 1;
            });
            while tx.send(1).await.is_ok() {}
            drop(g);
            c.await.unwrap();
        }
    }
}
