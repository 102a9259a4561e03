//! `OnceCell` is a drop-in: one small program, written once against a `sync` path, compiled
//! against `tokio::sync` and against `lockscope::tokio`, observes the same things (issue 28:
//! "swap the import, nothing else changes"): every method, every trait impl, `SetError`, a
//! cancelled and a failed initialiser, a panicking one, and the order in which queued
//! callers take over.

macro_rules! app {
    ($name:ident, sync = $($sync:ident)::+) => {
        mod $name {
            use std::sync::Arc;
            use std::time::Duration;

            use $($sync)::+ as sync;
            use sync::{OnceCell, SetError};

            static STATIC: OnceCell<u32> = OnceCell::const_new();
            static STATIC_WITH: OnceCell<u32> = OnceCell::const_new_with(4);

            pub fn run() -> Vec<String> {
                let mut log = Vec::new();
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .start_paused(true)
                    .build()
                    .unwrap();
                rt.block_on(async {
                    let cell: OnceCell<u32> = OnceCell::new();
                    log.push(format!("new {:?} {} {:?}", cell, cell.initialized(), cell.get()));
                    log.push(format!("default {:?}", OnceCell::<u8>::default()));
                    log.push(format!("set {:?}", cell.set(1)));
                    let e: SetError<u32> = cell.set(2).unwrap_err();
                    log.push(format!(
                        "again {e:?} {e} {} {}",
                        e.is_already_init_err(),
                        e.is_initializing_err()
                    ));
                    log.push(format!("got {:?}", cell.get_or_init(|| async { 9 }).await));
                    log.push(format!(
                        "try got {:?}",
                        cell.get_or_try_init(|| async { Err::<u32, ()>(()) }).await
                    ));
                    let copy = cell.clone();
                    log.push(format!("clone {copy:?} eq {}", copy == cell));
                    let from = OnceCell::from(7);
                    let with = OnceCell::new_with(Some(8));
                    let none: OnceCell<u32> = OnceCell::new_with(None);
                    log.push(format!("from {from:?} with {with:?} none {none:?} ne {}", from != with));
                    log.push(format!("statics {:?} {:?}", STATIC.get(), STATIC_WITH.get()));
                    log.push(format!("static init {}", STATIC.get_or_init(|| async { 3 }).await));
                    let mut m = OnceCell::from(String::from("a"));
                    m.get_mut().unwrap().push('b');
                    log.push(format!("take {:?} then {:?}", m.take(), m.get()));
                    log.push(format!("into {:?} {:?}", with.into_inner(), none.into_inner()));
                    let e = OnceCell::<u32>::new();
                    let r: Result<&u32, &str> = e.get_or_try_init(|| async { Err("no") }).await;
                    log.push(format!("try err {r:?} then {}", e.initialized()));

                    // Queued callers: the first initialises (and is cancelled), then a failing
                    // one, then one that panics, then one that succeeds; the rest get its value.
                    let shared = Arc::new(OnceCell::<u32>::new());
                    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
                    let mut tasks = Vec::new();
                    for i in 0..6u32 {
                        let (c, o) = (shared.clone(), order.clone());
                        tasks.push(tokio::spawn(async move {
                            c.get_or_try_init(|| async move {
                                o.lock().unwrap().push(i);
                                tokio::time::sleep(Duration::from_secs(1)).await;
                                match i {
                                    1 => Err(i),
                                    2 => panic!("swap: the initialiser's own panic"),
                                    _ => Ok(i * 10),
                                }
                            })
                            .await
                            .copied()
                        }));
                        tokio::task::yield_now().await;
                    }
                    let busy = shared.set(99).unwrap_err();
                    log.push(format!("while initialising {}", busy.is_initializing_err()));
                    tasks[0].abort();
                    let mut results = Vec::new();
                    for t in tasks {
                        results.push(match t.await {
                            Ok(r) => format!("{r:?}"),
                            Err(e) => format!("cancelled {} panic {}", e.is_cancelled(), e.is_panic()),
                        });
                    }
                    log.push(format!("queued {results:?} order {:?}", order.lock().unwrap()));
                    log.push(format!("final {:?}", shared.get()));
                });
                log
            }
        }
    };
}

app!(with_tokio, sync = tokio::sync);
app!(with_lockscope, sync = lockscope::tokio);

#[test]
fn the_same_program_observes_the_same_with_either_import() {
    let raw = with_tokio::run();
    assert_eq!(raw, with_lockscope::run());
    assert!(raw.len() > 15, "{raw:?}");
    // What tokio itself does, so that the comparison is of something: the queued callers
    // take over in order after a cancelled, a failed and a panicking initialiser.
    assert!(
        raw.contains(&"queued [\"cancelled true panic false\", \"Err(1)\", \"cancelled false panic true\", \"Ok(30)\", \"Ok(30)\", \"Ok(30)\"] order [0, 1, 2, 3]".to_owned()),
        "{raw:?}"
    );
}
