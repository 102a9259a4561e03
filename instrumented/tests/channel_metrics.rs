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
