//! Channels are waits the detector sees (issue 28): a task that holds a lock while it
//! `send().await`s into a full bounded channel whose consumer first needs that lock is a
//! `deadlock` within an armed test's second, naming the channel; and the shapes a naive
//! detector would flag (backpressure, a `select!` with a timer, a receiver handed on, many
//! cloned senders, a closed or dropped receiver) stay silent.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lockscope::detector::FindingKind;
use lockscope::tokio::{Mutex, mpsc, task};

#[path = "common/mod.rs"]
mod common;

use common::{arm, armed_failure, until};

/// The consumer of `rx`: receives a message, then takes `m` to handle it.
fn consumer(m: Arc<Mutex<u64>>, mut rx: mpsc::Receiver<u64>) -> task::JoinHandle<()> {
    task::spawn(async move {
        while let Some(v) = rx.recv().await {
            *m.lock().await += v;
        }
    })
}

/// The test body holds the lock its consumer needs while it sends into a channel of one.
async fn hold_and_send(name: &'static str) {
    let m = Arc::new(Mutex::named(name, 0));
    let (tx, rx) = mpsc::channel_named(name, 1);
    let _consumer = consumer(m.clone(), rx);
    let _g = m.lock().await;
    loop {
        tx.send(1).await.unwrap();
    }
}

fn assert_channel_deadlock(msg: &str, took: Duration, name: &str) {
    assert!(
        msg.contains(&format!(
            "lockscope: deadlock: 1 task and 1 thread can never proceed: each waits for mutex \"{name}\" held by another of them, or to send to mpsc channel \"{name}\" (created at instrumented/tests/channels.rs:"
        )),
        "{msg}"
    );
    assert!(
        msg.contains("), full, whose receiver another of them owns"),
        "{msg}"
    );
    assert!(
        msg.contains(&format!("waits for channel \"{name}\"")),
        "the send, in the waiter's lines: {msg}"
    );
    assert!(
        msg.contains("fix: do not hold a lock across `send().await` into a bounded channel whose consumer needs it"),
        "{msg}"
    );
    assert!(took < Duration::from_secs(1), "took {took:?}: {msg}");
}

#[test]
fn a_lock_held_across_a_send_its_consumer_needs_is_a_deadlock_current_thread() {
    let (msg, took) = armed_failure("chan_ct", false, hold_and_send("chan_ct"));
    assert_channel_deadlock(&msg, took, "chan_ct");
}

#[test]
fn a_lock_held_across_a_send_its_consumer_needs_is_a_deadlock_multi_thread() {
    let (msg, took) = armed_failure("chan_mt", true, hold_and_send("chan_mt"));
    assert_channel_deadlock(&msg, took, "chan_mt");
}

/// Two spawned tasks, an unnamed channel: the report names both tasks and the channel by its
/// creation site.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actor_sending_into_its_consumers_full_channel_is_a_deadlock_between_two_tasks() {
    let scope = arm("chan_tasks", 1000, 1000);
    let m = Arc::new(Mutex::named("chan_tasks", 0));
    let (tx, rx) = mpsc::channel(2);
    let created = line!() - 1;
    let _consumer = consumer(m.clone(), rx);
    let m1 = m.clone();
    let producer = task::spawn(async move {
        let _g = m1.lock().await;
        loop {
            tx.send(1).await.unwrap();
        }
    });
    let f = until(&scope, FindingKind::Deadlock, "chan_tasks").await;
    let text = f.to_string();
    assert!(
        text.starts_with("lockscope: deadlock: 2 tasks can never proceed: each waits for mutex \"chan_tasks\" held by another of them, or to send to mpsc channel "),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "mpsc channel \"instrumented/tests/channels.rs:{created}\" (created at instrumented/tests/channels.rs:{created}:"
        )),
        "{text}"
    );
    assert_eq!(f.actors.len(), 2, "{text}");
    assert!(
        f.actors.iter().all(|a| a.name.starts_with("task ")),
        "{text}"
    );
    let sends: Vec<_> = f
        .actors
        .iter()
        .flat_map(|a| a.waits.iter())
        .filter(|w| w.primitive.kind == "channel")
        .collect();
    assert_eq!(sends.len(), 1, "{text}");
    assert_eq!(sends[0].mode, "send");
    producer.abort();
}

/// `reserve` waits as `send` does, and a thread's `blocking_send` too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reserve_and_blocking_send_are_waits_for_the_receivers_owner() {
    let scope = arm("chan_reserve", 1000, 1000);
    let m = Arc::new(Mutex::named("chan_reserve", 0));
    let (tx, rx) = mpsc::channel_named("chan_reserve", 1);
    let _consumer = consumer(m.clone(), rx);
    let m1 = m.clone();
    let producer = task::spawn(async move {
        let _g = m1.lock().await;
        loop {
            tx.reserve().await.unwrap().send(1);
        }
    });
    let f = until(&scope, FindingKind::Deadlock, "chan_reserve").await;
    assert!(
        f.to_string()
            .contains("to send to mpsc channel \"chan_reserve\""),
        "{f}"
    );
    producer.abort();

    let m = Arc::new(lockscope::parking_lot::Mutex::named("chan_blocking", 0u64));
    let (tx, mut rx) = mpsc::channel_named::<u64>("chan_blocking", 1);
    let m2 = m.clone();
    std::thread::spawn(move || {
        while let Some(v) = rx.blocking_recv() {
            *m2.lock() += v;
        }
    });
    std::thread::spawn(move || {
        let _g = m.lock();
        loop {
            tx.blocking_send(1).unwrap();
        }
    });
    let f = until(&scope, FindingKind::Deadlock, "chan_blocking").await;
    assert!(
        f.to_string()
            .starts_with("lockscope: deadlock: 2 threads can never proceed: each waits for blocking_mutex \"chan_blocking\""),
        "{f}"
    );
}

/// A caller holds a lock and awaits a oneshot reply from an actor that needs the lock to
/// answer: the reply is an open wait (the sender could be anywhere), so no deadlock is
/// claimed, but the lock's `stuck-queue` report says what its holder waits for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_across_a_oneshot_reply_is_a_stuck_queue_naming_the_reply() {
    let scope = arm("chan_reply", 300, 10_000);
    let m = Arc::new(Mutex::named("chan_reply", 0));
    let (requests, mut inbox) =
        mpsc::channel_named::<lockscope::tokio::oneshot::Sender<u64>>("chan_reply", 4);
    let m1 = m.clone();
    task::spawn(async move {
        while let Some(reply) = inbox.recv().await {
            let _ = reply.send(*m1.lock().await);
        }
    });
    let caller = task::spawn(async move {
        let _g = m.lock().await;
        let (tx, rx) = lockscope::tokio::oneshot::channel_named("reply");
        requests.send(tx).await.unwrap();
        let _ = rx.await;
    });
    let f = until(&scope, FindingKind::StuckQueue, "chan_reply").await;
    assert!(
        f.details.iter().any(|d| d.starts_with("its holder task ")
            && d.contains(" waits to receive from oneshot channel \"reply\" (created at instrumented/tests/channels.rs:")
            && d.ends_with("(open: any holder of a sender can end it)")),
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
    caller.abort();
}

/// The wait-for graph (`/debug/graph`, the live view) shows the waits that are not for a
/// primitive: a send waiting on a full channel, which its receiver's owner drains, and a
/// join. (Other tests of this binary may run beside this one, with waits of their own: only
/// this test's channel and tasks are looked for.)
#[tokio::test(flavor = "current_thread")]
async fn the_graph_shows_channel_waits_and_joins() {
    let _scope = arm("chan_graph", 60_000, 60_000);
    let (tx, mut rx) = mpsc::channel_named::<u64>("graph_chan", 1);
    tx.send(0).await.unwrap();
    // This thread uses the receiver: it is the owner a waiting send waits for.
    assert_eq!(rx.try_recv().unwrap(), 0);
    tx.send(1).await.unwrap();
    let sender = task::spawn(async move { tx.send(2).await.unwrap() });
    let sleeper = task::spawn(std::future::pending::<()>());
    let sleeper_label = format!("task {}", sleeper.id());
    let joiner = task::spawn(async move {
        let _ = sleeper.await;
    });
    let joiner_label = format!("task {}", joiner.id());
    let label = |g: &lockscope::detector::GraphSnapshot, id: &str| {
        g.wait_for_nodes
            .iter()
            .find(|n| n.id == id)
            .map(|n| n.label.clone())
            .unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let (g, chan, drained, join) = loop {
        tokio::task::yield_now().await;
        let g = lockscope::detector::graph();
        let chan = g
            .wait_for_nodes
            .iter()
            .find(|n| n.kind == "channel" && n.label.contains("\"graph_chan\""))
            .cloned();
        let drained = chan.as_ref().and_then(|c| {
            g.wait_for_edges
                .iter()
                .find(|e| e.from == c.id && e.relation == "drained_by")
                .cloned()
        });
        let join = g
            .wait_for_edges
            .iter()
            .find(|e| e.relation == "joins" && label(&g, &e.to) == sleeper_label)
            .cloned();
        if let (Some(c), Some(d), Some(j)) = (chan, drained, join) {
            break (g, c, d, j);
        }
        assert!(Instant::now() < deadline, "{g:#?}");
    };
    assert!(
        chan.label
            .starts_with("mpsc channel \"graph_chan\" (created at instrumented/tests/channels.rs:"),
        "{}",
        chan.label
    );
    assert_eq!(chan.waiters_total, Some(1));
    let waits: Vec<_> = g
        .wait_for_edges
        .iter()
        .filter(|e| e.to == chan.id)
        .collect();
    assert_eq!(waits.len(), 1, "{g:#?}");
    assert_eq!(waits[0].relation, "waits");
    assert!(label(&g, &drained.to).starts_with("thread "), "{g:#?}");
    assert_eq!(label(&g, &join.from), joiner_label);
    let dot = g.to_dot();
    assert!(dot.contains("shape=parallelogram"), "{dot}");
    for t in [sender, joiner] {
        t.abort();
    }
    drop(rx);
}
