//! `lockscope::std::sync::mpsc` (issue 28): std's channels with the same behaviour, whose
//! blocking waits the detector sees. A thread that holds a lock while it sends into a full
//! `sync_channel` whose receiving thread needs that lock is a `deadlock` naming the channel;
//! backpressure and rendezvous without a lock held across the send stay silent.

use std::sync::Arc;
use std::time::Duration;

use lockscope::detector::FindingKind;
use lockscope::std::sync::mpsc;

#[path = "common/mod.rs"]
mod common;

use common::{arm, until};

/// The same calls on std's channels and on lockscope's give the same answers, `Debug` text
/// included.
#[test]
fn the_wrappers_answer_as_std_does() {
    macro_rules! transcript {
        ($m:path) => {{
            use $m as m;
            let mut out = Vec::new();
            let (tx, rx) = m::channel::<u32>();
            out.push(format!("{tx:?} {rx:?}"));
            tx.send(1).unwrap();
            tx.clone().send(2).unwrap();
            out.push(format!("{:?} {:?}", rx.recv(), rx.try_recv()));
            out.push(format!("{:?}", rx.try_recv()));
            out.push(format!("{:?}", rx.recv_timeout(Duration::from_millis(1))));
            drop(tx);
            out.push(format!("{:?} {:?}", rx.recv(), rx.try_recv()));

            let (tx, rx) = m::sync_channel::<u32>(1);
            out.push(format!("{tx:?}"));
            out.push(format!("{:?} {:?}", tx.try_send(1), tx.try_send(2)));
            out.push(format!("{:?}", rx.try_iter().collect::<Vec<_>>()));
            let t = std::thread::spawn(move || {
                for i in 0..4 {
                    tx.send(i).unwrap();
                }
            });
            out.push(format!("{:?}", rx.iter().take(4).collect::<Vec<_>>()));
            t.join().unwrap();
            out.push(format!("{:?}", rx.into_iter().next()));

            // A rendezvous: each send waits for its receive.
            let (tx, rx) = m::sync_channel::<u32>(0);
            out.push(format!("{:?}", tx.try_send(7)));
            let t = std::thread::spawn(move || (0..3).map(|i| tx.send(i)).collect::<Vec<_>>());
            let got: Vec<u32> = (&rx).into_iter().collect();
            out.push(format!("{got:?} {:?}", t.join().unwrap()));
            let (tx, rx) = m::sync_channel::<u32>(1);
            drop(rx);
            out.push(format!("{:?} {:?}", tx.send(3), tx.try_send(4)));
            out
        }};
    }
    let std_said = transcript!(std::sync::mpsc);
    let ours = transcript!(lockscope::std::sync::mpsc);
    assert_eq!(ours, std_said);
}

/// A thread holds the lock its consumer needs and sends into the consumer's full channel:
/// the send waits for the consumer, the consumer for the lock. Both threads stay blocked
/// (leaked: the test process ends with them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_across_a_full_sync_send_its_consumer_needs_is_a_deadlock() {
    let scope = arm("std_mpsc_deadlock", 1000, 1000);
    let m = Arc::new(lockscope::parking_lot::Mutex::named("std_mpsc_lock", 0u64));
    let (tx, rx) = mpsc::sync_channel_named::<u64>("std_mpsc_jobs", 1);
    let m2 = m.clone();
    std::thread::spawn(move || {
        for v in rx.iter() {
            *m2.lock() += v;
        }
    });
    std::thread::spawn(move || {
        let _g = m.lock();
        loop {
            tx.send(1).unwrap();
        }
    });
    let f = until(&scope, FindingKind::Deadlock, "std_mpsc_lock").await;
    let text = f.to_string();
    assert!(
        text.starts_with("lockscope: deadlock: 2 threads can never proceed"),
        "{text}"
    );
    assert!(
        text.contains("std::sync::mpsc channel \"std_mpsc_jobs\""),
        "{text}"
    );
    assert!(text.contains("blocking_mutex \"std_mpsc_lock\""), "{text}");
}

/// A thread holds a lock while it waits in `recv`, and the only sender needs that lock before
/// it sends: stuck for good, but through a receive, an open wait (who could send is not known
/// for sure), so it is a `stuck-queue` naming the receive, never a proven `deadlock`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_across_a_recv_is_a_stuck_queue_naming_the_receive() {
    let scope = arm("std_mpsc_open", 500, 500);
    let m = Arc::new(lockscope::parking_lot::Mutex::named(
        "std_mpsc_open_lock",
        0u64,
    ));
    let (tx, rx) = mpsc::channel_named::<u64>("std_mpsc_open");
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let m2 = m.clone();
    std::thread::spawn(move || {
        let _g = m2.lock();
        held_tx.send(()).unwrap();
        let _ = rx.recv();
    });
    held_rx.recv().unwrap();
    std::thread::spawn(move || {
        let v = *m.lock();
        let _ = tx.send(v);
    });
    let f = until(&scope, FindingKind::StuckQueue, "std_mpsc_open_lock").await;
    let text = f.to_string();
    assert!(
        text.contains("std::sync::mpsc channel \"std_mpsc_open\""),
        "{text}"
    );
    assert!(
        !scope
            .findings()
            .iter()
            .any(|f| f.kind == FindingKind::Deadlock),
        "{:#?}",
        scope.findings()
    );
}

// --- negative controls: each must stay silent in an armed test ------------------------------

/// A producer faster than its consumer fills a bounded channel again and again; both take the
/// same lock, the producer before (never across) its send.
#[lockscope::test]
fn backpressure_with_no_lock_held_across_the_send_is_silent() {
    let m = Arc::new(lockscope::parking_lot::Mutex::named("neg_std_mpsc", 0u64));
    let (tx, rx) = mpsc::sync_channel_named::<u64>("neg_std_mpsc", 1);
    let m2 = m.clone();
    let consumer = std::thread::spawn(move || {
        let mut n = 0u64;
        for v in rx.iter() {
            *m2.lock() += v;
            n += 1;
        }
        n
    });
    let producers: Vec<_> = (0..3)
        .map(|_| {
            let (m, tx) = (m.clone(), tx.clone());
            std::thread::spawn(move || {
                for _ in 0..2_000 {
                    *m.lock() += 0;
                    tx.send(1).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    for p in producers {
        p.join().unwrap();
    }
    assert_eq!(consumer.join().unwrap(), 6_000);
    assert_eq!(*m.lock(), 6_000);
}

/// Ping-pong over two rendezvous channels, each side taking a shared lock between its receive
/// and its send (never across either).
#[lockscope::test]
fn a_rendezvous_ping_pong_is_silent() {
    let m = Arc::new(lockscope::parking_lot::Mutex::named(
        "neg_std_pingpong",
        0u64,
    ));
    let (ping_tx, ping_rx) = mpsc::sync_channel_named::<u64>("neg_std_ping", 0);
    let (pong_tx, pong_rx) = mpsc::sync_channel_named::<u64>("neg_std_pong", 0);
    let m2 = m.clone();
    let other = std::thread::spawn(move || {
        for v in ping_rx.iter() {
            *m2.lock() += 1;
            pong_tx.send(v + 1).unwrap();
        }
    });
    let mut v = 0;
    for _ in 0..500 {
        ping_tx.send(v).unwrap();
        v = pong_rx.recv().unwrap();
        *m.lock() += 1;
    }
    drop(ping_tx);
    other.join().unwrap();
    assert_eq!((v, *m.lock()), (500, 1_000));
}
