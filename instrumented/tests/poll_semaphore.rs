//! `lockscope::tokio_util::PollSemaphore` behaves as tokio-util's: the same scenario is run
//! against `tokio_util`'s semantics written down here (FIFO queueing between polls, `None`
//! once closed, a `Stream` of permits). Needs the `tokio-util` feature:
//! `cargo test -p lockscope --features tokio-util --test poll_semaphore`.
#![cfg(feature = "tokio-util")]

use std::future::poll_fn;
use std::sync::Arc;

use futures_util::StreamExt;
use lockscope::tokio::Semaphore;
use lockscope::tokio_util::PollSemaphore;
use tokio_test::task::spawn;
use tokio_test::{assert_pending, assert_ready};

#[tokio::test]
async fn a_free_permit_is_ready_at_once_and_returns_on_drop() {
    let mut sem = PollSemaphore::new(Arc::new(Semaphore::new(2)));
    let a = poll_fn(|cx| sem.poll_acquire(cx)).await.unwrap();
    let b = poll_fn(|cx| sem.poll_acquire(cx)).await.unwrap();
    assert_eq!(sem.available_permits(), 0);
    drop((a, b));
    assert_eq!(sem.available_permits(), 2);
    assert_eq!(sem.as_ref().available_permits(), 2);
}

#[tokio::test]
async fn a_pending_poll_keeps_its_place_in_the_queue() {
    let inner = Arc::new(Semaphore::new(1));
    let held = inner.clone().try_acquire_owned().unwrap();
    let mut sem = PollSemaphore::new(inner.clone());
    let mut first = spawn(poll_fn(move |cx| sem.poll_acquire(cx)));
    assert_pending!(first.poll());
    // Queued behind the PollSemaphore's acquisition.
    let mut second = spawn(inner.clone().acquire_owned());
    assert_pending!(second.poll());
    drop(held);
    assert!(first.is_woken());
    assert!(!second.is_woken());
    let p = assert_ready!(first.poll()).unwrap();
    assert_eq!(p.num_permits(), 1);
}

#[tokio::test]
async fn closed_yields_none_and_the_stream_ends() {
    let mut sem = PollSemaphore::new(Arc::new(Semaphore::new(1)));
    let p = sem.next().await.unwrap();
    let mut waiting = sem.clone();
    let mut next = spawn(async move { waiting.next().await });
    assert_pending!(next.poll());
    sem.close();
    assert!(assert_ready!(next.poll()).is_none());
    assert!(poll_fn(|cx| sem.poll_acquire(cx)).await.is_none());
    drop(p);
    assert!(sem.clone_inner().is_closed());
}

#[tokio::test]
async fn many_waits_for_enough_permits_added_through_a_clone() {
    let adder = PollSemaphore::new(Arc::new(Semaphore::new(0)));
    let mut sem = adder.clone();
    let mut want = spawn(async move {
        poll_fn(|cx| sem.poll_acquire_many(cx, 3))
            .await
            .unwrap()
            .num_permits()
    });
    assert_pending!(want.poll());
    adder.add_permits(2);
    assert_pending!(want.poll());
    adder.add_permits(1);
    assert!(want.is_woken());
    assert_eq!(assert_ready!(want.poll()), 3);
    // The permit and the follow-up acquisition are gone with the task: all 3 are back.
    assert_eq!(adder.into_inner().available_permits(), 3);
}
