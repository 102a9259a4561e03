//! `Notify`, `Barrier` and `watch` are drop-ins: one small program, written once against
//! `tokio::sync`'s paths, compiled against tokio's and against lockscope's, observes the same
//! things (issue 28: "swap the import, nothing else changes"): stored permits, `enable`,
//! `notify_one`/`notify_last`/`notify_waiters` and which waiter each wakes, owned futures,
//! `const_new`/`Default`, timeouts, barrier leaders and generations; a watch channel's
//! versions, borrows, marks, `wait_for`, closing from either side, counts, subscribers; a
//! broadcast channel's lagging, resubscribing, weak senders, blocking receives, closing; the
//! `Debug` output.

macro_rules! app {
    ($name:ident, $($sync:ident)::+) => {
        mod $name {
            use $($sync)::+::{broadcast, futures::Notified, watch, Barrier, Notify};
            use std::sync::Arc;
            use std::time::Duration;
            use tokio_test::task::spawn;

            static GLOBAL: Notify = Notify::const_new();

            pub fn run() -> Vec<String> {
                let mut log = Vec::new();
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .start_paused(true)
                    .build()
                    .unwrap();
                rt.block_on(async {
                    let n = Notify::new();
                    log.push(format!("debug {n:?}"));
                    n.notify_one();
                    n.notify_one();
                    n.notified().await;
                    let r = tokio::time::timeout(Duration::from_millis(5), n.notified()).await;
                    log.push(format!("one permit stored: second times out {}", r.is_err()));

                    // notify_one wakes the first waiter, notify_last the last.
                    let mut a = spawn(n.notified());
                    let mut b = spawn(n.notified());
                    let mut c = spawn(n.notified());
                    log.push(format!("pending {} {} {}", a.poll().is_pending(), b.poll().is_pending(), c.poll().is_pending()));
                    n.notify_last();
                    log.push(format!("last woken {} {} {}", a.is_woken(), b.is_woken(), c.is_woken()));
                    log.push(format!("after last {} {} {}", a.poll().is_ready(), b.poll().is_ready(), c.poll().is_ready()));
                    n.notify_one();
                    log.push(format!("after one {} {}", a.poll().is_ready(), b.poll().is_ready()));
                    n.notify_one();
                    log.push(format!("after another {}", b.poll().is_ready()));

                    // notify_waiters wakes every future made before it, polled or not, and
                    // stores no permit.
                    let made_before = n.notified();
                    let mut polled = spawn(n.notified());
                    let _ = polled.poll();
                    n.notify_waiters();
                    log.push(format!("waiters {} {}", polled.poll().is_ready(), spawn(made_before).poll().is_ready()));
                    log.push(format!("no permit {}", spawn(n.notified()).poll().is_pending()));

                    // enable registers for notify_one without polling.
                    let mut enabled: std::pin::Pin<Box<Notified<'_>>> = Box::pin(n.notified());
                    log.push(format!("enable {}", enabled.as_mut().enable()));
                    n.notify_one();
                    log.push(format!("enabled got it {}", enabled.as_mut().enable()));
                    enabled.await;

                    let shared = Arc::new(Notify::default());
                    let owned = shared.clone().notified_owned();
                    let waiter = tokio::spawn(owned);
                    tokio::task::yield_now().await;
                    shared.notify_waiters();
                    waiter.await.unwrap();
                    let mut owned = Box::pin(shared.clone().notified_owned());
                    log.push(format!("owned enable {}", owned.as_mut().enable()));
                    shared.notify_one();
                    owned.await;
                    log.push("owned done".to_owned());

                    GLOBAL.notify_one();
                    GLOBAL.notified().await;
                    log.push("static done".to_owned());

                    let b = Barrier::new(0);
                    log.push(format!("barrier of 0 passes alone, leader {}", b.wait().await.is_leader()));
                    let b = Arc::new(Barrier::new(3));
                    for generation in 0..2 {
                        let tasks: Vec<_> = (0..3)
                            .map(|_| tokio::spawn({
                                let b = b.clone();
                                async move { b.wait().await.is_leader() }
                            }))
                            .collect();
                        let mut leaders = 0;
                        for t in tasks {
                            leaders += t.await.unwrap() as usize;
                        }
                        log.push(format!("generation {generation}: {leaders} leader"));
                    }
                    // A wait given up still counts as arrived (tokio's barrier is not
                    // cancel safe): two more complete the generation.
                    let r = tokio::time::timeout(Duration::from_millis(5), b.wait()).await;
                    log.push(format!("barrier alone times out {}", r.is_err()));
                    let (x, y) = tokio::join!(b.wait(), b.wait());
                    log.push(format!("leaders {}", [x.clone(), y].iter().filter(|r| r.is_leader()).count()));
                    log.push(format!("debug {:?}", x.clone()));
                    log.push(format!("barrier debug {}", format!("{b:?}").starts_with("Barrier")));

                    let (tx, mut rx) = watch::channel(1u32);
                    log.push(format!("watch {} {:?} {} {}", *rx.borrow(), rx.has_changed(), tx.receiver_count(), tx.sender_count()));
                    tx.send(2).unwrap();
                    log.push(format!("changed {:?} {}", rx.has_changed(), *rx.borrow()));
                    let updated = *rx.borrow_and_update();
                    log.push(format!("updated {updated} {:?}", rx.has_changed()));
                    rx.mark_changed();
                    let marked = rx.has_changed();
                    let r = rx.changed().await;
                    log.push(format!("marked {marked:?} {r:?} {:?}", rx.has_changed()));
                    tx.send_modify(|v| *v += 1);
                    rx.mark_unchanged();
                    log.push(format!("unmarked {:?} {}", rx.has_changed(), *rx.borrow()));
                    log.push(format!("if_modified {} {:?}", tx.send_if_modified(|v| { *v += 0; false }), rx.has_changed()));
                    log.push(format!("replace {} {}", tx.send_replace(5), *tx.borrow()));
                    let waiter = tokio::spawn({
                        let mut rx = rx.clone();
                        async move { *rx.wait_for(|v| *v >= 7).await.unwrap() }
                    });
                    let mut r2 = tx.subscribe();
                    log.push(format!("subscribed {} {:?} same {} {}", tx.receiver_count(), r2.has_changed(), r2.same_channel(&rx), tx.same_channel(&tx.clone())));
                    tokio::task::yield_now().await;
                    tx.send(6).unwrap();
                    tx.send(7).unwrap();
                    log.push(format!("wait_for {}", waiter.await.unwrap()));
                    log.push(format!("r2 changed {:?}", r2.changed().await));
                    let r = tokio::time::timeout(Duration::from_millis(5), r2.changed()).await;
                    log.push(format!("changed timeout {:?}", r.map(|_| ())));
                    let tx2 = tx.clone();
                    drop(tx);
                    log.push(format!("one sender left {} {:?}", tx2.sender_count(), rx.has_changed()));
                    drop(tx2);
                    let e: Result<(), watch::error::RecvError> = rx.changed().await;
                    let then = rx.changed().await;
                    log.push(format!("closed {} {e:?} {then:?} {}", rx.is_closed(), *rx.borrow()));
                    if let Err(e) = then {
                        log.push(format!("error {e}"));
                    }
                    log.push(format!("wait_for closed {:?}", rx.wait_for(|_| false).await.is_err()));
                    let tx = watch::Sender::new(0u8);
                    log.push(format!("new {} {}", tx.receiver_count(), tx.is_closed()));
                    let rx = tx.subscribe();
                    drop(rx);
                    tx.closed().await;
                    log.push(format!("send to none {:?}", tx.send(1)));
                    let tx: watch::Sender<u8> = Default::default();
                    log.push(format!("default {} {:?}", *tx.borrow(), tx));
                    let (_tx, rx) = watch::channel("x");
                    let r: watch::Ref<'_, &str> = rx.borrow();
                    log.push(format!("ref {} {:?}", r.has_changed(), r));
                    drop(r);
                    log.push(format!("rx debug {}", format!("{rx:?}").starts_with("Receiver")));

                    let (tx, mut rx) = broadcast::channel::<u32>(2);
                    let mut rx2 = tx.subscribe();
                    log.push(format!("bc {} {} {} {} {}", tx.receiver_count(), tx.len(), tx.is_empty(), tx.strong_count(), tx.weak_count()));
                    for v in 1..=3 {
                        log.push(format!("sent to {:?}", tx.send(v)));
                    }
                    log.push(format!("lens {} {} {}", tx.len(), rx.len(), rx.is_empty()));
                    log.push(format!("lagged {:?} {:?} {:?}", rx.recv().await, rx.recv().await, rx.try_recv()));
                    log.push(format!("empty {:?}", rx.try_recv()));
                    let mut fresh = rx2.resubscribe();
                    log.push(format!("resubscribed {:?} {:?} same {}", fresh.try_recv(), rx2.try_recv(), fresh.same_channel(&rx2)));
                    let weak = tx.downgrade();
                    log.push(format!("weak {} {} {} {}", weak.strong_count(), weak.weak_count(), rx.sender_strong_count(), rx.sender_weak_count()));
                    let tx2 = weak.clone().upgrade().unwrap();
                    log.push(format!("upgraded same {} {}", tx2.same_channel(&tx), tx.clone().strong_count()));
                    drop(tx2);
                    let r = tokio::time::timeout(Duration::from_millis(5), rx.recv()).await;
                    log.push(format!("recv timeout {}", r.is_err()));
                    let h = tokio::task::spawn_blocking(move || {
                        let r = rx.blocking_recv();
                        (r, rx)
                    });
                    tx.send(9).unwrap();
                    let (r, mut rx) = h.await.unwrap();
                    log.push(format!("blocking {r:?}"));
                    drop(tx);
                    log.push(format!("closed {} {:?} {:?} {}", rx.is_closed(), rx.recv().await, rx.try_recv(), weak.upgrade().is_none()));
                    let tx = broadcast::Sender::<u8>::new(4);
                    log.push(format!("new {} {:?}", tx.receiver_count(), tx.send(1)));
                    let rx = tx.subscribe();
                    drop(rx);
                    tx.closed().await;
                    log.push(format!("debug {tx:?} {:?} {:?}", tx.downgrade(), tx.subscribe()));
                    drop((rx2, fresh));
                });
                log
            }
        }
    };
}

app!(with_tokio, tokio::sync);
app!(with_lockscope, lockscope::tokio);

#[test]
fn the_same_program_observes_the_same_with_either_import() {
    let raw = with_tokio::run();
    assert_eq!(raw, with_lockscope::run());
    assert!(raw.len() > 15, "{raw:?}");
}
