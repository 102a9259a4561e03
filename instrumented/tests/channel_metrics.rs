//! The `lockscope_channel_*` families as the detector computes them for the exporter (issue
//! 28): depth and capacity after sends the receiver has not taken, the wait histograms after
//! a send and a receive that waited (made to wait by polling them by hand, never by timing),
//! and a dropped channel's series.
//!
//! Tests in this binary run in parallel against the one process-wide detector: each uses
//! channel names of its own.

use lockscope::detector::ChannelMetrics;
use lockscope::tokio::mpsc;
use tokio_test::{assert_pending, assert_ready, task};

/// The series of channel `name` now.
fn series(name: &str) -> ChannelMetrics {
    let all = lockscope::detector::metrics().channels;
    let mut found = all.into_iter().filter(|c| &*c.channel == name);
    let s = found.next().unwrap_or_else(|| panic!("no series {name:?}"));
    assert!(found.next().is_none(), "{name:?}: one series");
    s
}

fn depth_and_capacity(name: &str) -> (u64, Option<u64>) {
    let s = series(name);
    (s.depth, s.capacity)
}

#[tokio::test]
async fn depth_counts_what_was_sent_and_not_received_in_every_way() {
    let (tx, mut rx) = mpsc::channel_named::<u32>("metrics/depth", 8);
    assert_eq!(depth_and_capacity("metrics/depth"), (0, Some(8)));
    for i in 0..3 {
        tx.send(i).await.unwrap();
    }
    assert_eq!(depth_and_capacity("metrics/depth"), (3, Some(8)));
    tx.try_send(3).unwrap();
    tx.send_timeout(4, std::time::Duration::from_secs(60))
        .await
        .unwrap();
    tx.reserve().await.unwrap().send(5);
    // A permit reserved and not used is no message.
    let unused = tx.reserve().await.unwrap();
    tx.clone().reserve_owned().await.unwrap().send(6);
    assert_eq!(depth_and_capacity("metrics/depth"), (7, Some(8)));
    drop(unused);

    assert_eq!(rx.recv().await, Some(0));
    assert_eq!(rx.try_recv(), Ok(1));
    let mut buf = Vec::new();
    assert_eq!(rx.recv_many(&mut buf, 2).await, 2);
    assert_eq!(depth_and_capacity("metrics/depth"), (3, Some(8)));
    let polled = std::future::poll_fn(|cx| rx.poll_recv(cx)).await;
    assert_eq!(polled, Some(4));
    assert_eq!(depth_and_capacity("metrics/depth"), (2, Some(8)));

    // The receiver dropped, tokio drops what it held: nothing is queued any more.
    drop(rx);
    assert_eq!(depth_and_capacity("metrics/depth"), (0, Some(8)));
}

#[tokio::test]
async fn an_unbounded_channel_has_a_depth_and_no_capacity() {
    let (tx, mut rx) = mpsc::unbounded_channel_named::<u32>("metrics/unbounded");
    for i in 0..5 {
        tx.send(i).unwrap();
    }
    assert_eq!(depth_and_capacity("metrics/unbounded"), (5, None));
    rx.recv().await.unwrap();
    assert_eq!(depth_and_capacity("metrics/unbounded"), (4, None));
}

#[test]
fn blocking_forms_are_counted() {
    let (tx, mut rx) = mpsc::channel_named::<u32>("metrics/blocking", 4);
    tx.blocking_send(1).unwrap();
    tx.blocking_send(2).unwrap();
    assert_eq!(depth_and_capacity("metrics/blocking"), (2, Some(4)));
    assert_eq!(rx.blocking_recv(), Some(1));
    let mut buf = Vec::new();
    assert_eq!(rx.blocking_recv_many(&mut buf, 4), 1);
    assert_eq!(depth_and_capacity("metrics/blocking"), (0, Some(4)));
}

#[tokio::test]
async fn a_send_that_waited_for_capacity_and_a_receive_that_waited_are_timed() {
    let (tx, mut rx) = mpsc::channel_named::<u32>("metrics/waits", 1);
    tx.send(1).await.unwrap();
    assert_eq!(series("metrics/waits").send_wait.count(), 0);

    // The channel is full: the first poll of a send is pending, and its wait is recorded.
    let mut send = task::spawn(tx.send(2));
    assert_pending!(send.poll());
    // Not counted while it waits: a wait is counted when it ends.
    assert_eq!(series("metrics/waits").send_wait.count(), 0);
    assert_eq!(rx.recv().await, Some(1));
    assert!(send.is_woken());
    assert_ready!(send.poll()).unwrap();
    drop(send);
    let s = series("metrics/waits");
    assert_eq!((s.send_wait.count(), s.recv_wait.count()), (1, 0));
    assert_eq!(s.depth, 1);

    // A send that waits and is then dropped (a `select!` that took another branch) waited
    // too: it is counted.
    let mut cancelled = task::spawn(tx.send(3));
    assert_pending!(cancelled.poll());
    drop(cancelled);
    assert_eq!(series("metrics/waits").send_wait.count(), 2);

    // A receive that finds the channel empty waits until a send.
    assert_eq!(rx.recv().await, Some(2));
    let mut recv = task::spawn(rx.recv());
    assert_pending!(recv.poll());
    tx.try_send(4).unwrap();
    assert_eq!(assert_ready!(recv.poll()), Some(4));
    drop(recv);
    let s = series("metrics/waits");
    assert_eq!((s.send_wait.count(), s.recv_wait.count()), (2, 1));
    assert_eq!(s.depth, 0);
    // Messages that passed without waiting added nothing to either histogram.
    tx.send(5).await.unwrap();
    rx.recv().await.unwrap();
    let s = series("metrics/waits");
    assert_eq!((s.send_wait.count(), s.recv_wait.count()), (2, 1));
}

#[tokio::test]
async fn a_dropped_channels_series_stays_with_its_histograms_and_zero_gauges() {
    let (tx, mut rx) = mpsc::channel_named::<u32>("metrics/dropped", 2);
    let mut recv = task::spawn(rx.recv());
    assert_pending!(recv.poll());
    tx.send(1).await.unwrap();
    assert_eq!(assert_ready!(recv.poll()), Some(1));
    drop(recv);
    tx.send(2).await.unwrap();
    assert_eq!(depth_and_capacity("metrics/dropped"), (1, Some(2)));
    drop((tx, rx));
    let s = series("metrics/dropped");
    assert_eq!((s.depth, s.capacity), (0, Some(0)));
    assert_eq!(s.recv_wait.count(), 1);
}

#[tokio::test]
async fn channels_made_at_one_site_are_one_series_summed() {
    let make = || mpsc::channel::<u32>(3);
    let chans: Vec<_> = (0..4).map(|_| make()).collect();
    for (tx, _) in &chans {
        tx.send(0).await.unwrap();
    }
    let name = chans[0].0.name().to_owned();
    assert!(
        name.starts_with("instrumented/tests/channel_metrics.rs:"),
        "{name}"
    );
    assert_eq!(depth_and_capacity(&name), (4, Some(12)));
    drop(chans);
    assert_eq!(depth_and_capacity(&name), (0, Some(0)));
}

#[test]
fn oneshot_channels_are_not_listed() {
    let (tx, rx) = lockscope::tokio::oneshot::channel_named::<u32>("metrics/oneshot");
    tx.send(1).unwrap();
    assert!(
        lockscope::detector::metrics()
            .channels
            .iter()
            .all(|c| &*c.channel != "metrics/oneshot")
    );
    drop(rx);
}

/// A broadcast channel's depth, beside tokio's own count of the same thing
/// (`Sender::len`: values not yet seen by every receiver alive when they were sent).
fn broadcast_depth<T>(name: &str, tx: &lockscope::tokio::broadcast::Sender<T>) -> u64 {
    let depth = series(name).depth;
    assert_eq!(depth, tx.len() as u64, "{name}: the depth is tokio's len");
    depth
}

#[tokio::test]
async fn a_broadcast_channels_depth_is_what_its_slowest_receiver_has_not_taken() {
    use lockscope::tokio::broadcast::{self, error::RecvError, error::TryRecvError};
    let name = "metrics/broadcast";
    let (tx, mut fast) = broadcast::channel_named::<u32>(name, 4);
    assert_eq!(depth_and_capacity(name), (0, Some(4)));
    for i in 0..3 {
        tx.send(i).unwrap();
    }
    // A receiver that subscribes now will never see those three: it is not behind.
    let mut slow = tx.subscribe();
    assert_eq!(broadcast_depth(name, &tx), 3);
    assert_eq!(fast.recv().await, Ok(0));
    assert_eq!(fast.try_recv(), Ok(1));
    assert_eq!(broadcast_depth(name, &tx), 1);
    assert_eq!(fast.recv().await, Ok(2));
    assert_eq!(fast.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(broadcast_depth(name, &tx), 0);

    // Now `slow` falls behind: it is the one the depth follows.
    tx.send(3).unwrap();
    assert_eq!(fast.recv().await, Ok(3));
    assert_eq!(broadcast_depth(name, &tx), 1);
    for i in 4..9 {
        tx.send(i).unwrap();
        assert_eq!(fast.recv().await, Ok(i));
    }
    // Six sent past `slow`, four kept by tokio: the depth is what is kept.
    assert_eq!(broadcast_depth(name, &tx), 4);
    assert_eq!(slow.recv().await, Err(RecvError::Lagged(2)));
    assert_eq!(broadcast_depth(name, &tx), 4);
    assert_eq!(slow.recv().await, Ok(5));
    assert_eq!(broadcast_depth(name, &tx), 3);
    // A resubscribed receiver starts where the channel is, and a dropped one counts no more.
    let again = slow.resubscribe();
    drop(slow);
    assert_eq!(broadcast_depth(name, &tx), 0);
    drop((fast, again));
    // With no receiver a send fails and nothing is queued; a new receiver is not behind.
    assert!(tx.send(9).is_err());
    let mut late = tx.subscribe();
    assert_eq!(broadcast_depth(name, &tx), 0);
    tx.send(10).unwrap();
    assert_eq!(broadcast_depth(name, &tx), 1);
    assert_eq!(late.recv().await, Ok(10));
    assert_eq!(broadcast_depth(name, &tx), 0);
    drop((tx, late));
    assert_eq!(depth_and_capacity(name), (0, Some(0)));
}

#[test]
fn a_broadcast_channel_keeps_its_given_capacity_and_tokios_rounded_depth() {
    let name = "metrics/broadcast-rounded";
    let (tx, mut rx) = lockscope::tokio::broadcast::channel_named::<u32>(name, 3);
    for i in 0..6 {
        tx.send(i).unwrap();
    }
    // tokio keeps the capacity rounded up to a power of two: four values, for a capacity 3.
    assert_eq!(broadcast_depth(name, &tx), 4);
    assert_eq!(series(name).capacity, Some(3));
    assert!(rx.blocking_recv().is_err(), "lagged");
    assert_eq!(rx.blocking_recv(), Ok(2));
    assert_eq!(broadcast_depth(name, &tx), 3);
}

#[tokio::test]
async fn broadcast_and_watch_receives_that_waited_are_timed_and_no_send_waits() {
    let (btx, mut brx) = lockscope::tokio::broadcast::channel_named::<u32>("metrics/b-wait", 2);
    let mut recv = task::spawn(brx.recv());
    assert_pending!(recv.poll());
    assert_eq!(series("metrics/b-wait").recv_wait.count(), 0);
    btx.send(1).unwrap();
    assert_eq!(assert_ready!(recv.poll()), Ok(1));
    drop(recv);
    // A receive that found a value waiting did not wait.
    btx.send(2).unwrap();
    assert_eq!(brx.recv().await, Ok(2));
    let s = series("metrics/b-wait");
    assert_eq!((s.recv_wait.count(), s.send_wait.count()), (1, 0));
    assert_eq!((s.depth, s.kind), (0, "broadcast"));

    let (wtx, mut wrx) = lockscope::tokio::watch::channel_named("metrics/w-wait", 0u32);
    assert_eq!(depth_and_capacity("metrics/w-wait"), (0, Some(1)));
    let mut changed = task::spawn(wrx.changed());
    assert_pending!(changed.poll());
    wtx.send(1).unwrap();
    assert_ready!(changed.poll()).unwrap();
    drop(changed);
    let mut three = task::spawn(wrx.wait_for(|v| *v == 3));
    assert_pending!(three.poll());
    // A value the predicate refuses ends no wait.
    wtx.send(2).unwrap();
    assert_pending!(three.poll());
    wtx.send(3).unwrap();
    assert_eq!(*assert_ready!(three.poll()).unwrap(), 3);
    drop(three);
    // Sent and not seen by the receiver: a watch channel still queues nothing.
    wtx.send(4).unwrap();
    let s = series("metrics/w-wait");
    assert_eq!((s.recv_wait.count(), s.send_wait.count()), (2, 0));
    assert_eq!((s.depth, s.capacity, s.kind), (0, Some(1), "watch"));
    drop((wtx, wrx));
    assert_eq!(depth_and_capacity("metrics/w-wait"), (0, Some(0)));
}
