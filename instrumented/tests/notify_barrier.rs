//! `Notify`, `Barrier`, `watch` and `broadcast` are waits the detector sees (issue 28): a task
//! waiting for a notification, at a barrier for the other parties, for a change on a watch
//! channel or a message on a broadcast channel, is in the books while (and only while) it waits, as an open wait: named in a `stuck-queue`
//! report of a lock its waiter holds, never part of a proven deadlock. The ordinary uses (a
//! producer/consumer queue, a shutdown signal, a barrier of N tasks each holding its own lock,
//! a configuration reloaded through a watch channel, events fanned out to subscribers) stay
//! silent.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use lockscope::detector::__private::snapshot::State;
use lockscope::detector::FindingKind;
use lockscope::tokio::{Barrier, Mutex, Notify, broadcast, task, watch};
use tokio_test::task::spawn;
use tokio_test::{assert_pending, assert_ready};

#[path = "common/mod.rs"]
mod common;

use common::{arm, until, until_waited};

/// How many waits on the `Notify`, `Barrier` or channel named `name` are in the books now.
fn waits_on(name: &str) -> usize {
    State::capture()
        .chan_waits
        .iter()
        .filter(|w| w.chan.name() == name)
        .count()
}

#[test]
fn a_notified_is_in_the_books_only_while_it_waits() {
    let n = Notify::named("nb_books");
    n.notify_one();
    assert_ready!(spawn(n.notified()).poll());

    let mut f = spawn(n.notified());
    assert_pending!(f.poll());
    assert_eq!(waits_on("nb_books"), 1);
    n.notify_one();
    assert!(f.is_woken());
    assert_ready!(f.poll());
    assert_eq!(waits_on("nb_books"), 0, "ended when it completed");

    let mut f = spawn(n.notified());
    assert_pending!(f.poll());
    assert_eq!(waits_on("nb_books"), 1);
    drop(f);
    assert_eq!(
        waits_on("nb_books"),
        0,
        "a dropped Notified leaves no ghost"
    );

    // `enable` registers for `notify_one` without waiting: nothing enters the books.
    let mut f = Box::pin(n.notified());
    assert!(!f.as_mut().enable());
    assert_eq!(waits_on("nb_books"), 0);
    n.notify_one();
    assert_ready!(spawn(f).poll());

    let n = Arc::new(Notify::named("nb_books_owned"));
    let mut f = spawn(n.clone().notified_owned());
    assert_pending!(f.poll());
    assert_eq!(waits_on("nb_books_owned"), 1);
    n.notify_waiters();
    assert_ready!(f.poll());
    assert_eq!(waits_on("nb_books_owned"), 0);
    let mut f = spawn(n.clone().notified_owned());
    assert_pending!(f.poll());
    drop(f);
    assert_eq!(waits_on("nb_books_owned"), 0);
}

#[test]
fn a_barrier_wait_is_in_the_books_only_while_it_waits() {
    let b = Barrier::named("nb_books_barrier", 2);
    let mut first = spawn(b.wait());
    assert_pending!(first.poll());
    assert_eq!(waits_on("nb_books_barrier"), 1);
    let last = assert_ready!(spawn(b.wait()).poll());
    assert!(last.is_leader());
    assert_eq!(waits_on("nb_books_barrier"), 1, "the first has not run yet");
    assert!(!assert_ready!(first.poll()).is_leader());
    assert_eq!(waits_on("nb_books_barrier"), 0);

    let mut f = spawn(b.wait());
    assert_pending!(f.poll());
    drop(f);
    assert_eq!(
        waits_on("nb_books_barrier"),
        0,
        "a dropped wait leaves no ghost"
    );
}

#[test]
fn a_watch_receive_is_in_the_books_only_while_it_waits() {
    let (tx, mut rx) = watch::channel_named("nb_books_watch", 0);
    let mut f = spawn(rx.changed());
    assert_pending!(f.poll());
    assert_eq!(waits_on("nb_books_watch"), 1);
    tx.send(1).unwrap();
    assert_ready!(f.poll()).unwrap();
    drop(f);
    assert_eq!(waits_on("nb_books_watch"), 0);
    let mut f = spawn(rx.wait_for(|v| *v == 3));
    assert_pending!(f.poll());
    tx.send(2).unwrap();
    assert_pending!(f.poll());
    assert_eq!(waits_on("nb_books_watch"), 1);
    drop(f);
    assert_eq!(
        waits_on("nb_books_watch"),
        0,
        "a dropped wait leaves no ghost"
    );
    tx.send(3).unwrap();
    assert_eq!(
        *assert_ready!(spawn(rx.wait_for(|v| *v == 3)).poll()).unwrap(),
        3
    );
    assert_eq!(waits_on("nb_books_watch"), 0);
}

#[test]
fn a_broadcast_receive_is_in_the_books_only_while_it_waits() {
    let (tx, mut rx) = broadcast::channel_named("nb_books_broadcast", 2);
    tx.send(1).unwrap();
    assert_eq!(assert_ready!(spawn(rx.recv()).poll()), Ok(1));
    let mut f = spawn(rx.recv());
    assert_pending!(f.poll());
    assert_eq!(waits_on("nb_books_broadcast"), 1);
    tx.send(2).unwrap();
    assert_eq!(assert_ready!(f.poll()), Ok(2));
    drop(f);
    assert_eq!(waits_on("nb_books_broadcast"), 0);
    let mut f = spawn(rx.recv());
    assert_pending!(f.poll());
    drop(f);
    assert_eq!(
        waits_on("nb_books_broadcast"),
        0,
        "a dropped receive leaves no ghost"
    );
}

/// A task holds a lock while it waits for a notification from a task that needs the lock
/// first: the notification is an open wait, so no deadlock is claimed, but the lock's
/// `stuck-queue` report says what its holder waits for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_across_a_notified_is_a_stuck_queue_naming_the_notify() {
    let scope = arm("nb_notify", 300, 10_000);
    let m = Arc::new(Mutex::named("nb_notify", 0));
    let done = Arc::new(Notify::named("nb_done"));
    let (locked, is_locked) = tokio::sync::oneshot::channel();
    let holder = task::spawn({
        let (m, done) = (m.clone(), done.clone());
        async move {
            let _g = m.lock().await;
            locked.send(()).unwrap();
            done.notified().await;
        }
    });
    is_locked.await.unwrap();
    let notifier = task::spawn({
        let m = m.clone();
        async move {
            *m.lock().await += 1;
            done.notify_one();
        }
    });
    until_waited(&m).await;
    let f = until(&scope, FindingKind::StuckQueue, "nb_notify").await;
    assert!(
        f.details.iter().any(|d| d.starts_with("its holder task ")
            && d.contains(" waits to be notified by Notify \"nb_done\" (created at instrumented/tests/notify_barrier.rs:")
            && d.ends_with("(open: any task calling notify_one or notify_waiters can end it)")),
        "{f}"
    );
    assert!(
        scope
            .findings()
            .iter()
            .all(|f| f.kind != FindingKind::Deadlock),
        "{:#?}",
        scope.findings()
    );
    holder.abort();
    let _ = holder.await;
    notifier.await.unwrap();
}

/// The same with a barrier: its holder waits at a barrier of two whose other party needs the
/// lock before it arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_across_a_barrier_is_a_stuck_queue_naming_the_barrier() {
    let scope = arm("nb_barrier", 300, 10_000);
    let m = Arc::new(Mutex::named("nb_barrier", 0));
    let start = Arc::new(Barrier::named("nb_start", 2));
    let (locked, is_locked) = tokio::sync::oneshot::channel();
    let holder = task::spawn({
        let (m, start) = (m.clone(), start.clone());
        async move {
            let _g = m.lock().await;
            locked.send(()).unwrap();
            start.wait().await;
        }
    });
    is_locked.await.unwrap();
    let other = task::spawn({
        let m = m.clone();
        async move {
            *m.lock().await += 1;
            start.wait().await;
        }
    });
    until_waited(&m).await;
    let f = until(&scope, FindingKind::StuckQueue, "nb_barrier").await;
    assert!(
        f.details.iter().any(|d| d.starts_with("its holder task ")
            && d.contains(" waits to pass Barrier \"nb_start\" (created at instrumented/tests/notify_barrier.rs:")
            && d.ends_with("(open: the parties yet to arrive end it)")),
        "{f}"
    );
    assert!(
        scope
            .findings()
            .iter()
            .all(|f| f.kind != FindingKind::Deadlock),
        "{:#?}",
        scope.findings()
    );
    holder.abort();
    let _ = holder.await;
    other.abort();
    let _ = other.await;
}

// --- negative controls: each must stay silent in an armed test ---------------------------

/// A queue behind a lock, its consumer waiting on a `Notify` whenever it is empty, its
/// producers pushing under the lock and notifying after: the consumer waits often.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_consumer_queue_with_notify_is_silent() {
    let queue = Arc::new(Mutex::named("neg_nb_queue", VecDeque::new()));
    let ready = Arc::new(Notify::named("neg_nb_ready"));
    let consumer = task::spawn({
        let (queue, ready) = (queue.clone(), ready.clone());
        async move {
            let mut sum = 0u64;
            let mut got = 0;
            while got < 400 {
                let next = queue.lock().await.pop_front();
                match next {
                    Some(v) => {
                        sum += v;
                        got += 1;
                    }
                    None => ready.notified().await,
                }
            }
            sum
        }
    });
    let producers: Vec<_> = (0..4u64)
        .map(|p| {
            let (queue, ready) = (queue.clone(), ready.clone());
            task::spawn(async move {
                for i in 0..100 {
                    queue.lock().await.push_back(p * 100 + i);
                    ready.notify_one();
                    if i % 10 == 0 {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                }
            })
        })
        .collect();
    for p in producers {
        p.await.unwrap();
    }
    assert_eq!(consumer.await.unwrap(), (0..400).sum::<u64>());
}

/// A `Notify` used as a one-shot shutdown signal: workers take a shared lock in a loop,
/// racing each round against the signal, which the test sends with `notify_waiters` while
/// holding that lock.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notify_as_a_shutdown_signal_is_silent() {
    let m = Arc::new(Mutex::named("neg_nb_shutdown", 0u64));
    let shutdown = Arc::new(Notify::named("neg_nb_shutdown"));
    let started = Arc::new(Barrier::named("neg_nb_started", 5));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (m, shutdown, started) = (m.clone(), shutdown.clone(), started.clone());
            task::spawn(async move {
                let signal = shutdown.notified();
                tokio::pin!(signal);
                signal.as_mut().enable();
                started.wait().await;
                loop {
                    tokio::select! {
                        _ = &mut signal => break,
                        mut g = m.lock() => {
                            *g += 1;
                            drop(g);
                            tokio::time::sleep(Duration::from_millis(2)).await;
                        }
                    }
                }
            })
        })
        .collect();
    started.wait().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let g = m.lock().await;
    shutdown.notify_waiters();
    drop(g);
    for w in workers {
        w.await.unwrap();
    }
    assert!(*m.lock().await > 0);
}

/// N tasks, each holding a lock of its own across every wait at a shared barrier (a
/// phase-by-phase computation): the barrier keeps releasing them, 50 generations.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_barrier_of_n_tasks_holding_their_own_locks_is_silent() {
    const N: usize = 6;
    let phase = Arc::new(Barrier::named("neg_nb_phase", N));
    let tasks: Vec<_> = (0..N)
        .map(|i| {
            let phase = phase.clone();
            task::spawn(async move {
                let mine = Mutex::named(format!("neg_nb_phase_{i}"), 0u32);
                let mut leaders = 0;
                for _ in 0..50 {
                    let mut g = mine.lock().await;
                    *g += 1;
                    if phase.wait().await.is_leader() {
                        leaders += 1;
                    }
                    drop(g);
                }
                leaders
            })
        })
        .collect();
    let mut leaders = 0;
    for t in tasks {
        leaders += t.await.unwrap();
    }
    assert_eq!(leaders, 50, "one leader per generation");
}

/// A configuration reloaded through a watch channel: workers wait for a change, then take the
/// state lock to apply it; the reloader sends each new configuration while holding that lock.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_config_reload_is_silent() {
    let state = Arc::new(Mutex::named("neg_nb_config_state", 0u64));
    let (tx, rx) = watch::channel_named("neg_nb_config", 0u64);
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (state, mut rx) = (state.clone(), rx.clone());
            task::spawn(async move {
                let mut seen = 0;
                while rx.changed().await.is_ok() {
                    let v = *rx.borrow_and_update();
                    *state.lock().await += v;
                    seen = v;
                }
                seen
            })
        })
        .collect();
    drop(rx);
    for v in 1..=50 {
        let g = state.lock().await;
        tx.send(v).unwrap();
        drop(g);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    drop(tx);
    for w in workers {
        assert_eq!(
            w.await.unwrap(),
            50,
            "each worker saw the last configuration"
        );
    }
}

/// Events fanned out to subscribers that each take a shared lock per event; the publisher
/// sends while holding that lock, and a slow subscriber lags rather than blocking anyone.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broadcast_fan_out_is_silent() {
    let state = Arc::new(Mutex::named("neg_nb_events_state", 0u64));
    let (tx, _) = broadcast::channel_named::<u64>("neg_nb_events", 8);
    let subscribers: Vec<_> = (0..4)
        .map(|_| {
            let (state, mut rx) = (state.clone(), tx.subscribe());
            task::spawn(async move {
                let mut got = 0u64;
                loop {
                    match rx.recv().await {
                        Ok(_) => {
                            *state.lock().await += 1;
                            got += 1;
                        }
                        Err(broadcast::error::RecvError::Lagged(n)) => got += n,
                        Err(broadcast::error::RecvError::Closed) => return got,
                    }
                }
            })
        })
        .collect();
    for v in 0..200 {
        let g = state.lock().await;
        tx.send(v).unwrap();
        drop(g);
        if v % 20 == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    drop(tx);
    for s in subscribers {
        assert_eq!(
            s.await.unwrap(),
            200,
            "every event received or counted as lagged"
        );
    }
}
