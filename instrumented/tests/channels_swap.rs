//! The channel wrappers are drop-ins: one small program, written once against `mpsc` and
//! `oneshot` paths, compiled against tokio's and against lockscope's, observes the same
//! things (issue 28: "swap the import, nothing else changes"): values, errors, capacities,
//! counts, closing, permits and their release, weak senders, timeouts, blocking forms, the
//! `Debug` output.

macro_rules! app {
    ($name:ident, mpsc = $($mpsc:ident)::+, oneshot = $($oneshot:ident)::+) => {
        mod $name {
            use $($mpsc)::+ as mpsc;
            use $($oneshot)::+ as oneshot;
            use std::time::Duration;

            pub fn run() -> Vec<String> {
                let mut log = Vec::new();
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .start_paused(true)
                    .build()
                    .unwrap();
                rt.block_on(async {
                    let (tx, mut rx) = mpsc::channel::<u32>(2);
                    log.push(format!("cap {} {} {}", tx.capacity(), tx.max_capacity(), rx.max_capacity()));
                    tx.send(1).await.unwrap();
                    log.push(format!("try_send {:?}", tx.try_send(2)));
                    log.push(format!("full {:?}", tx.try_send(3)));
                    log.push(format!("len {} empty {} cap {}", rx.len(), rx.is_empty(), rx.capacity()));
                    let r = tx.send_timeout(4, Duration::from_millis(10)).await;
                    log.push(format!("send_timeout {r:?}"));
                    log.push(format!("recv {:?} {:?}", rx.recv().await, rx.try_recv()));
                    log.push(format!("empty {:?}", rx.try_recv()));
                    let p = tx.reserve().await.unwrap();
                    log.push(format!("reserved cap {}", tx.capacity()));
                    p.send(5);
                    drop(tx.try_reserve().unwrap());
                    log.push(format!("released cap {}", tx.capacity()));
                    let mut many = tx.reserve_many(1).await.unwrap();
                    log.push(format!("many {}", many.len()));
                    many.next().unwrap().send(6);
                    drop(many);
                    log.push(format!("try_many {:?}", tx.try_reserve_many(2).map(|p| p.len())));
                    let mut buf = Vec::new();
                    log.push(format!("recv_many {} {buf:?}", rx.recv_many(&mut buf, 8).await));
                    let tx2 = tx.clone();
                    log.push(format!("same {} strong {} weak {}", tx.same_channel(&tx2), tx.strong_count(), tx.weak_count()));
                    let weak = tx2.downgrade();
                    log.push(format!("weak {} {} {}", weak.strong_count(), weak.weak_count(), rx.sender_weak_count()));
                    let owned = tx2.reserve_owned().await.unwrap();
                    log.push(format!("owned same {}", owned.same_channel_as_sender(&tx)));
                    let tx2 = owned.send(7);
                    let owned = tx2.try_reserve_owned().unwrap();
                    let tx2 = owned.release();
                    drop(tx2);
                    log.push(format!("upgrade {}", weak.upgrade().is_some()));
                    log.push(format!("senders {} {}", rx.sender_strong_count(), rx.sender_weak_count()));
                    log.push(format!("{:?}", rx.recv().await));
                    rx.close();
                    log.push(format!("closed {} {} {:?}", rx.is_closed(), tx.is_closed(), tx.send(8).await));
                    log.push(format!("try closed {:?}", tx.try_send(9)));
                    tx.closed().await;
                    drop(tx);
                    log.push(format!("end {:?} {:?}", rx.recv().await, rx.try_recv()));
                    let (tx, rx) = mpsc::channel::<u8>(1);
                    let r = tokio::task::spawn_blocking(move || {
                        let mut rx = rx;
                        rx.blocking_recv()
                    });
                    tokio::task::spawn_blocking(move || tx.blocking_send(3)).await.unwrap().unwrap();
                    log.push(format!("blocking {:?}", r.await.unwrap()));

                    let (tx, mut rx) = mpsc::unbounded_channel::<u32>();
                    tx.send(1).unwrap();
                    let weak = tx.downgrade();
                    log.push(format!("unbounded {} {} {} {}", rx.len(), rx.is_empty(), tx.strong_count(), weak.weak_count()));
                    let mut buf = Vec::new();
                    log.push(format!("u recv_many {} {:?}", rx.recv_many(&mut buf, 4).await, rx.try_recv()));
                    log.push(format!("u same {}", tx.same_channel(&weak.upgrade().unwrap())));
                    rx.close();
                    log.push(format!("u closed {} {:?}", tx.is_closed(), tx.send(2)));
                    tx.closed().await;

                    let (tx, rx) = oneshot::channel::<u32>();
                    log.push(format!("oneshot {} {}", tx.is_closed(), rx.is_empty()));
                    tx.send(1).unwrap();
                    log.push(format!("got {:?}", rx.await));
                    let (mut tx, mut rx) = oneshot::channel::<u32>();
                    log.push(format!("try {:?}", rx.try_recv()));
                    rx.close();
                    tx.closed().await;
                    log.push(format!("closed {} {:?} {}", tx.is_closed(), tx.send(2), rx.is_terminated()));
                    let (tx, rx) = oneshot::channel::<u32>();
                    drop(tx);
                    log.push(format!("dropped {:?}", rx.await));
                    let (tx, rx) = oneshot::channel::<u32>();
                    let h = tokio::task::spawn_blocking(move || rx.blocking_recv());
                    tx.send(3).unwrap();
                    log.push(format!("blocking {:?}", h.await.unwrap()));
                    let (tx, rx) = oneshot::channel::<u32>();
                    let r = tokio::time::timeout(Duration::from_millis(5), rx).await;
                    log.push(format!("timeout {} {}", r.is_err(), tx.is_closed()));
                    let (tx, rx) = mpsc::channel::<u8>(1);
                    log.push(format!("debug {} {}", format!("{tx:?}").starts_with("Sender"), format!("{rx:?}").starts_with("Receiver")));
                });
                log
            }
        }
    };
}

app!(
    with_tokio,
    mpsc = tokio::sync::mpsc,
    oneshot = tokio::sync::oneshot
);
app!(
    with_lockscope,
    mpsc = lockscope::tokio::mpsc,
    oneshot = lockscope::tokio::oneshot
);

#[test]
fn the_same_program_observes_the_same_with_either_import() {
    let raw = with_tokio::run();
    assert_eq!(raw, with_lockscope::run());
    assert!(raw.len() > 30, "{raw:?}");
}
