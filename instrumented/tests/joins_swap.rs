//! The task and thread wrappers are drop-ins: one small program, written once against
//! `task`, `spawn` and `thread` paths, compiled against tokio's and std's and against
//! lockscope's, observes the same things (issue 28: "swap the import, nothing else changes").

macro_rules! app {
    ($name:ident, task = $($task:ident)::+, spawn = $($spawn:ident)::+, thread = $($thread:ident)::+) => {
        mod $name {
            use $($task)::+ as task;
            use $($spawn)::+ as spawn;
            use $($thread)::+ as thread;

            pub fn run() -> Vec<String> {
                let mut log = Vec::new();
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    let h: task::JoinHandle<u32> = spawn(async { 1 });
                    let id: task::Id = h.id();
                    let a: task::AbortHandle = h.abort_handle();
                    log.push(format!("same id {}", a.id() == id));
                    let r: Result<u32, task::JoinError> = h.await;
                    log.push(format!("spawn {:?}", r.map_err(|e| e.to_string())));
                    let p = task::spawn(async { panic!("swap: the task's own panic") });
                    let e = p.await.unwrap_err();
                    log.push(format!("panic {} {}", e.is_panic(), e.is_cancelled()));
                    let c = task::spawn(std::future::pending::<()>());
                    c.abort();
                    log.push(format!("cancelled {}", c.await.unwrap_err().is_cancelled()));
                    let f = task::spawn(async {});
                    while !f.is_finished() {
                        task::yield_now().await;
                    }
                    log.push(format!("finished {:?}", f.await.is_ok()));
                    log.push(format!("blocking {}", task::spawn_blocking(|| 2).await.unwrap()));
                    let local = task::LocalSet::new();
                    let v = local
                        .run_until(async {
                            let rc = std::rc::Rc::new(3);
                            task::spawn_local(async move { *rc }).await.unwrap()
                        })
                        .await;
                    log.push(format!("local {v}"));
                    let mut set = task::JoinSet::new();
                    for i in 0..3u32 {
                        set.spawn(async move { i });
                    }
                    log.push(format!("set len {} empty {}", set.len(), set.is_empty()));
                    let mut got = Vec::new();
                    while let Some(r) = set.join_next().await {
                        got.push(r.unwrap());
                    }
                    got.sort_unstable();
                    log.push(format!("set {got:?} then {:?}", set.try_join_next().is_none()));
                    let set: task::JoinSet<u32> = (0..2).map(|i| async move { i }).collect();
                    let mut all = set.join_all().await;
                    all.sort_unstable();
                    log.push(format!("join_all {all:?}"));
                    let mut set = task::JoinSet::new();
                    set.spawn(std::future::pending::<()>());
                    set.shutdown().await;
                    log.push(format!("shutdown {}", set.is_empty()));
                    let mut set = task::JoinSet::<()>::default();
                    set.spawn(std::future::pending::<()>());
                    set.detach_all();
                    log.push(format!("detached {} {:?}", set.len(), set));
                });
                let t = thread::Builder::new()
                    .name("swap".into())
                    .stack_size(1 << 20)
                    .spawn(|| thread::current().name().map(str::to_owned))
                    .unwrap();
                let name = t.thread().name().map(str::to_owned);
                log.push(format!("thread {name:?} {:?}", t.join().unwrap()));
                let t: thread::JoinHandle<()> = thread::spawn(|| panic!("swap: the thread's own panic"));
                log.push(format!("thread panic {}", t.join().is_err()));
                let data = [1, 2];
                let s: i32 = thread::scope(|s| {
                    let h: Vec<thread::ScopedJoinHandle<'_, i32>> =
                        data.iter().map(|x| s.spawn(move || x * 2)).collect();
                    h.into_iter().map(|h| h.join().unwrap()).sum()
                });
                log.push(format!("scope {s}"));
                let mut v = Vec::new();
                thread::scope(|s| {
                    s.spawn(|| v.push(1));
                });
                log.push(format!("implicit join {v:?}"));
                let me: thread::ThreadId = thread::current().id();
                let r: thread::Result<()> = Ok(());
                log.push(format!("ids {} {:?}", me == std::thread::current().id(), r.is_ok()));
                thread::sleep(std::time::Duration::from_millis(1));
                thread::yield_now();
                log
            }
        }
    };
}

app!(
    with_tokio,
    task = tokio::task,
    spawn = tokio::spawn,
    thread = std::thread
);
app!(
    with_lockscope,
    task = lockscope::tokio::task,
    spawn = lockscope::tokio::spawn,
    thread = lockscope::std::thread
);

#[test]
fn the_same_program_observes_the_same_with_either_import() {
    let raw = with_tokio::run();
    assert_eq!(raw, with_lockscope::run());
    assert!(raw.len() > 15, "{raw:?}");
}
