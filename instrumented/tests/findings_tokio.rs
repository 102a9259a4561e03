//! One test per finding kind and tokio primitive family, each with a real deadlock or misuse,
//! asserting the report: kind, primitive names and kinds, tasks and call sites.

mod common;

use std::sync::Arc;
use std::time::Duration;

use lockscope::detector::FindingKind;
use lockscope::tokio::{Mutex, RwLock, Semaphore};

use common::{arm, until};

const FILE: &str = "instrumented/tests/findings_tokio.rs";

/// Whether `f` names the call site marked `// site:<mark>` in this file.
fn has_site(f: &lockscope::detector::Finding, mark: &str) -> bool {
    let tag = format!("// site:{mark}");
    let line = include_str!("findings_tokio.rs")
        .lines()
        .position(|l| l.trim_end().ends_with(&tag))
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("no marker {tag}"));
    let want = format!("{FILE}:{line}:");
    f.sites.iter().any(|s| s.starts_with(&want))
}

#[tokio::test]
async fn deadlock_between_two_mutexes_names_both_tasks_locks_and_sites() {
    let scope = arm("deadlock_abba", 1000, 1000);
    let a = Arc::new(Mutex::named("dl_abba_a", ()));
    let b = Arc::new(Mutex::named("dl_abba_b", ()));
    let ready = Arc::new(tokio::sync::Barrier::new(2));
    let (a1, b1, r1) = (a.clone(), b.clone(), ready.clone());
    let t1 = tokio::spawn(async move {
        let _a = a1.lock().await; // site:m29
        r1.wait().await;
        let _b = b1.lock().await; // site:m31
    });
    let (a2, b2, r2) = (a.clone(), b.clone(), ready.clone());
    let t2 = tokio::spawn(async move {
        let _b = b2.lock().await; // site:m35
        r2.wait().await;
        let _a = a2.lock().await; // site:m37
    });
    let f = until(&scope, FindingKind::Deadlock, "dl_abba_a").await;
    let text = f.to_string();
    assert!(
        text.starts_with("lockscope: deadlock: 2 tasks can never proceed"),
        "{text}"
    );
    assert!(f.involves("dl_abba_b"));
    assert_eq!(f.actors.len(), 2, "{text}");
    for actor in &f.actors {
        assert!(actor.name.starts_with("task "), "{text}");
        assert_eq!(actor.holds.len(), 1, "{text}");
        assert_eq!(actor.waits.len(), 1, "{text}");
        assert_ne!(actor.holds[0].primitive.name, actor.waits[0].primitive.name);
    }
    for mark in ["m29", "m31", "m35", "m37"] {
        assert!(has_site(&f, mark), "site {mark} missing: {text}");
    }
    assert!(f.primitives.iter().all(|p| p.kind == "mutex"));
    assert!(text.contains("fix:"), "{text}");
    // Also reported as an inversion, with both orders.
    let inv = until(&scope, FindingKind::LockOrderInversion, "dl_abba_a").await;
    assert_eq!(inv.orders.len(), 2, "{inv}");
    assert!(inv.to_string().contains("*** DEADLOCK ***"), "{inv}");
    t1.abort();
    t2.abort();
}

#[tokio::test]
async fn semaphore_knot_of_nested_acquires_is_a_deadlock_and_a_nested_acquire() {
    let scope = arm("knot", 1000, 1000);
    let sem = Arc::new(Semaphore::named("knot_pool", 3));
    let ready = Arc::new(tokio::sync::Barrier::new(3));
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let (sem, ready) = (sem.clone(), ready.clone());
        tasks.push(tokio::spawn(async move {
            let _first = sem.acquire().await.unwrap();
            ready.wait().await;
            let _second = sem.acquire().await.unwrap(); // site:m74
        }));
    }
    let f = until(&scope, FindingKind::Deadlock, "knot_pool").await;
    assert_eq!(f.actors.len(), 3, "{f}");
    assert!(f.to_string().contains("a knot, not just a cycle"), "{f}");
    assert!(has_site(&f, "m74"), "{f}");
    let n = until(&scope, FindingKind::NestedAcquire, "knot_pool").await;
    assert!(n.to_string().contains("latent deadlock"), "{n}");
    tasks.into_iter().for_each(|t| t.abort());
}

#[tokio::test]
async fn semaphore_with_a_free_permit_holder_is_not_a_deadlock() {
    // Three tasks each hold one of four permits and wait for a second: the fourth permit lets
    // one through, which frees two more: no deadlock (but nested acquires, reported).
    let scope = arm("no_knot", 1000, 1000);
    let sem = Arc::new(Semaphore::named("no_knot_pool", 4));
    let ready = Arc::new(tokio::sync::Barrier::new(3));
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let (sem, ready) = (sem.clone(), ready.clone());
        tasks.push(tokio::spawn(async move {
            let _first = sem.acquire().await.unwrap();
            ready.wait().await;
            let _second = sem.acquire().await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    until(&scope, FindingKind::NestedAcquire, "no_knot_pool").await;
    assert!(
        !scope
            .findings()
            .iter()
            .any(|f| f.kind == FindingKind::Deadlock),
        "{:#?}",
        scope.findings()
    );
}

#[tokio::test]
async fn read_inside_read_with_a_queued_writer_deadlocks_tokio_rwlock() {
    let scope = arm("rr", 1000, 1000);
    let lock = Arc::new(RwLock::named("rr_lock", 0));
    let first = lock.clone().read_owned().await; // the test holds a read
    let (l2, reader_ready) = (lock.clone(), Arc::new(tokio::sync::Notify::new()));
    let rr = reader_ready.clone();
    let reader = tokio::spawn(async move {
        let _a = l2.read().await; // site:m121
        rr.notify_one();
        // The writer queues now; this second read waits behind it.
        tokio::task::yield_now().await;
        tokio::task::yield_now().await;
        let _b = l2.read().await; // site:m126
    });
    reader_ready.notified().await;
    let l3 = lock.clone();
    let writer = tokio::spawn(async move {
        *l3.write().await += 1; // site:m131
    });
    drop(first);
    let f = until(&scope, FindingKind::Deadlock, "rr_lock").await;
    assert_eq!(f.actors.len(), 2, "{f}");
    assert!(has_site(&f, "m126") && has_site(&f, "m131"), "{f}");
    let n = until(&scope, FindingKind::NestedAcquire, "rr_lock").await;
    assert!(
        n.to_string()
            .contains("writer queued between the two reads"),
        "{n}"
    );
    reader.abort();
    writer.abort();
}

#[tokio::test]
async fn relocking_a_held_mutex_is_a_nested_acquire_reported_before_the_wait() {
    let scope = arm("relock", 1000, 1000);
    let m = Arc::new(Mutex::named("relock_m", 0));
    let m2 = m.clone();
    let t = tokio::spawn(async move {
        let _g = m2.lock().await; // site:m149
        let _again = m2.lock().await; // site:m150
    });
    let n = until(&scope, FindingKind::NestedAcquire, "relock_m").await;
    let text = n.to_string();
    assert!(
        text.contains("waits for mutex \"relock_m\" it already holds"),
        "{text}"
    );
    assert!(text.contains("certain self-deadlock"), "{text}");
    assert!(has_site(&n, "m149") && has_site(&n, "m150"), "{text}");
    let d = until(&scope, FindingKind::Deadlock, "relock_m").await;
    assert_eq!(d.actors.len(), 1, "{d}");
    assert!(d.to_string().contains("held by itself"), "{d}");
    t.abort();
}

/// A mutex granted after a wait is in the task's books as one taken at once is: locking it
/// again is a nested acquire too.
#[tokio::test]
async fn relocking_a_mutex_granted_after_a_wait_is_a_nested_acquire() {
    let scope = arm("relock_waited", 1000, 1000);
    let m = Arc::new(Mutex::named("relock_waited_m", 0));
    let held = m.lock().await;
    let m2 = m.clone();
    let t = tokio::spawn(async move {
        let _g = m2.lock().await; // site:m_waited
        let _again = m2.lock().await; // site:m_again
    });
    let queued = || {
        lockscope::detector::locks()
            .into_iter()
            .any(|l| l.name == "relock_waited_m" && !l.waiters.is_empty())
    };
    for _ in 0..1000 {
        if queued() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(queued(), "the task queued for the mutex");
    drop(held);
    let n = until(&scope, FindingKind::NestedAcquire, "relock_waited_m").await;
    let text = n.to_string();
    assert!(
        text.contains("waits for mutex \"relock_waited_m\" it already holds"),
        "{text}"
    );
    assert!(
        has_site(&n, "m_waited") && has_site(&n, "m_again"),
        "{text}"
    );
    t.abort();
}

#[tokio::test]
async fn write_inside_read_is_a_certain_self_deadlock() {
    let scope = arm("wr", 1000, 1000);
    let lock = Arc::new(RwLock::named("wr_lock", 0));
    let l = lock.clone();
    let t = tokio::spawn(async move {
        let _r = l.read().await;
        let _w = l.write().await;
    });
    let n = until(&scope, FindingKind::NestedAcquire, "wr_lock").await;
    assert!(n.to_string().contains("certain self-deadlock"), "{n}");
    until(&scope, FindingKind::Deadlock, "wr_lock").await;
    t.abort();
}

#[tokio::test]
async fn opposite_orders_are_an_inversion_even_without_a_deadlock() {
    let scope = arm("inv", 1000, 1000);
    let a = Mutex::named("inv_a", ());
    let b = Mutex::named("inv_b", ());
    {
        let _a = a.lock().await;
        let _b = b.lock().await; // site:m185
    }
    {
        let _b = b.lock().await;
        let _a = a.lock().await; // site:m189
    }
    let f = until(&scope, FindingKind::LockOrderInversion, "inv_a").await;
    let text = f.to_string();
    assert!(
        text.starts_with("lockscope: lock-order-inversion: \"inv_a\" and \"inv_b\""),
        "{text}"
    );
    assert!(has_site(&f, "m185") && has_site(&f, "m189"), "{text}");
    assert!(text.contains("possible unsafe locking scenario"), "{text}");
    assert!(
        !scope
            .findings()
            .iter()
            .any(|f| f.kind == FindingKind::Deadlock)
    );
}

#[tokio::test]
async fn three_locks_in_a_cycle_are_one_inversion_with_every_order() {
    let scope = arm("inv3", 1000, 1000);
    let (a, b, c) = (
        Mutex::named("inv3_a", ()),
        Mutex::named("inv3_b", ()),
        Mutex::named("inv3_c", ()),
    );
    for (x, y) in [(&a, &b), (&b, &c), (&c, &a)] {
        let _x = x.lock().await;
        let _y = y.lock().await;
    }
    let f = until(&scope, FindingKind::LockOrderInversion, "inv3_a").await;
    assert_eq!(f.orders.len(), 3, "{f}");
    assert!(f.involves("inv3_b") && f.involves("inv3_c"));
    assert!(f.summary.contains("cyclic order"), "{f}");
}

#[tokio::test]
async fn semaphore_and_rwlock_inversions_are_reported_too() {
    let scope = arm("inv_mixed", 1000, 1000);
    let pool = Semaphore::named("invm_pool", 2);
    let cache = RwLock::named("invm_cache", 0);
    {
        let _p = pool.acquire().await.unwrap();
        let _w = cache.write().await;
    }
    {
        let _r = cache.read().await;
        let _p = pool.acquire().await.unwrap();
    }
    until(&scope, FindingKind::LockOrderInversion, "invm_pool").await;
}

#[tokio::test]
async fn forgotten_permit_not_added_back_leaks_at_the_end() {
    let scope = arm("forget", 1000, 1000);
    let sem = Semaphore::named("forget_pool", 2);
    sem.acquire().await.unwrap().forget();
    let findings = scope.finish();
    let f = findings
        .iter()
        .find(|f| f.kind == FindingKind::LeakedPermit && f.involves("forget_pool"))
        .unwrap_or_else(|| panic!("{findings:#?}"));
    assert!(
        f.to_string()
            .contains("1 permit of semaphore \"forget_pool\" was forgotten"),
        "{f}"
    );
    drop(sem);
}

#[tokio::test]
async fn forgotten_permit_added_back_is_not_a_leak() {
    let scope = arm("forget_ok", 1000, 1000);
    let sem = Semaphore::named("forget_ok_pool", 2);
    sem.acquire().await.unwrap().forget();
    sem.add_permits(1);
    let findings = scope.finish();
    assert!(
        !findings.iter().any(|f| f.involves("forget_ok_pool")),
        "{findings:#?}"
    );
}

struct Connection {
    _permit: lockscope::tokio::OwnedSemaphorePermit,
}

#[tokio::test]
async fn owned_permit_kept_in_a_long_lived_struct_leaks_and_sticks_the_queue() {
    let scope = arm("owned_leak", 300, 1000);
    let pool = Arc::new(Semaphore::named("owned_leak_pool", 1));
    // The permit moves into a struct that lives on (here: forever).
    let kept = Box::leak(Box::new(Connection {
        _permit: pool.clone().acquire_owned().await.unwrap(), // site:m270
    }));
    let p = pool.clone();
    let waiter = tokio::spawn(async move {
        let _p = p.acquire().await.unwrap(); // site:m274
    });
    let stuck = until(&scope, FindingKind::StuckQueue, "owned_leak_pool").await;
    let text = stuck.to_string();
    assert!(text.contains("granted nothing"), "{text}");
    assert!(text.contains("owned guard"), "{text}");
    assert!(
        has_site(&stuck, "m270") && has_site(&stuck, "m274"),
        "{text}"
    );
    waiter.abort();
    let findings = scope.finish();
    assert!(
        findings
            .iter()
            .any(|f| f.kind == FindingKind::LeakedPermit && f.involves("owned_leak_pool")),
        "{findings:#?}"
    );
    let _ = kept;
}

#[tokio::test]
async fn a_fifo_queue_that_drains_in_order_is_not_starvation() {
    // tokio's semaphore is FIFO: 30 tasks, one permit, each holds it 20 ms, so the last waits
    // about 600 ms, twice the threshold, while the others are served. Each of them was
    // queued ahead of it: that is queueing, and nobody was bypassed.
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;
    let scope = arm("fifo", 60_000, 300);
    let sem = Arc::new(Semaphore::named("fifo_pool", 1));
    // All 30 queue before anyone is served: the first permit is the test's until then.
    let first = sem.clone().acquire_owned().await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..30 {
        let sem = sem.clone();
        tasks.push(tokio::spawn(async move {
            let asked = Instant::now();
            let _p = sem.acquire().await.unwrap();
            let waited = asked.elapsed();
            tokio::time::sleep(Duration::from_millis(20)).await;
            waited
        }));
    }
    common::until_waiters("fifo_pool", 30).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    // The detector looks every 10 ms on a thread of its own: on this runtime's thread, its
    // analyses held up the holders' wake-ups (the queue drained on the test's schedule, not
    // tokio's).
    let stop = Arc::new(AtomicBool::new(false));
    let looker = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                lockscope::detector::check_now();
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    drop(first);
    let mut longest = Duration::ZERO;
    for t in tasks {
        let left = deadline.saturating_duration_since(Instant::now());
        let waited = tokio::time::timeout(left, t)
            .await
            .expect("the queue drains within 30 s")
            .unwrap();
        longest = longest.max(waited);
    }
    // One more look at the drained queue, then none.
    lockscope::detector::check_now();
    stop.store(true, Ordering::Relaxed);
    looker.join().unwrap();
    // What makes it a test: a wait did pass the starvation threshold, and was not reported.
    assert!(
        longest >= Duration::from_millis(300),
        "the longest wait was {longest:?}, under the threshold: nothing was tested"
    );
    // (Only this test's primitive: an unarmed test in this binary may report to every scope.)
    let findings: Vec<_> = scope
        .findings()
        .into_iter()
        .filter(|f| f.involves("fifo_pool"))
        .collect();
    assert!(findings.is_empty(), "{findings:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_overtaken_by_recursive_readers_is_starvation() {
    // parking_lot's read_recursive ignores a queued writer: a reader that always takes its
    // next read before dropping the last keeps the writer out for as long as it likes.
    use std::sync::atomic::{AtomicBool, Ordering};
    let scope = arm("bypass", 60_000, 300);
    let rw = Arc::new(lockscope::parking_lot::RwLock::named("bypass_rw", 0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready) = std::sync::mpsc::channel();
    let reader = {
        let (rw, stop) = (rw.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut g = rw.read_recursive();
            ready_tx.send(()).unwrap();
            while !stop.load(Ordering::Relaxed) {
                let next = rw.read_recursive();
                drop(g);
                g = next;
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    // The reader's chain of reads has begun: the writer can only queue behind it.
    ready.recv().unwrap();
    let writer = {
        let rw = rw.clone();
        std::thread::spawn(move || *rw.write() += 1)
    };
    let f = until(&scope, FindingKind::Starvation, "bypass_rw").await;
    assert!(
        f.to_string()
            .contains("to others that were not queued ahead of it"),
        "{f}"
    );
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    writer.join().unwrap();
    assert_eq!(*rw.read(), 1);
}

#[tokio::test]
async fn request_for_more_permits_than_exist_is_a_stuck_queue_not_a_deadlock() {
    let scope = arm("overask", 300, 60_000);
    let sem = Arc::new(Semaphore::named("overask_pool", 1));
    let s = sem.clone();
    let big = tokio::spawn(async move {
        let _p = s.acquire_many(2).await.unwrap();
    });
    let f = until(&scope, FindingKind::StuckQueue, "overask_pool").await;
    assert!(
        f.to_string()
            .contains("asks for 2 permits but only 1 exist"),
        "{f}"
    );
    assert!(
        !scope
            .findings()
            .iter()
            .any(|f| f.kind == FindingKind::Deadlock)
    );
    sem.add_permits(1);
    big.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_hogging_a_busy_pool_is_starvation_not_a_stuck_queue() {
    // A pool of 2: one connection held for long, 8 clients sharing the other. The queue keeps
    // moving (not stuck), but the hog keeps half the pool from it.
    use std::sync::atomic::{AtomicBool, Ordering};
    let scope = arm("hog_pool", 500, 500);
    let pool = Arc::new(Semaphore::named("hog_pool", 2));
    let hog = pool.clone().acquire_owned().await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let (pool, stop) = (pool.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let _c = pool.acquire().await.unwrap();
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            })
        })
        .collect();
    let f = until(&scope, FindingKind::Starvation, "hog_pool").await;
    assert!(
        f.to_string().contains("has held semaphore \"hog_pool\""),
        "{f}"
    );
    stop.store(true, Ordering::Relaxed);
    drop(hog);
    for c in clients {
        c.await.unwrap();
    }
    assert!(
        !scope
            .findings()
            .iter()
            .any(|f| f.kind == FindingKind::StuckQueue && f.involves("hog_pool")),
        "{:#?}",
        scope.findings()
    );
}

#[tokio::test]
async fn holder_keeping_a_contended_mutex_is_starvation() {
    let scope = arm("hog", 60_000, 300);
    let m = Arc::new(Mutex::named("hog_m", ()));
    let g = m.clone().lock_owned().await;
    let m2 = m.clone();
    let waiter = tokio::spawn(async move {
        let _g = m2.lock().await;
    });
    let f = until(&scope, FindingKind::Starvation, "hog_m").await;
    assert!(f.to_string().contains("while 1 waiter queue"), "{f}");
    drop(g);
    waiter.await.unwrap();
}

#[test]
fn inversions_are_found_when_tasks_move_between_workers() {
    // On a multi-thread runtime a task resumes on any worker after an `.await`: the holds it
    // took before must still count. Twenty runs, each with fresh locks and awaits between the
    // two acquisitions; every run must report its inversion.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let scope = arm("inv_mt", 60_000, 60_000);
    let id = scope.id();
    for run in 0..20 {
        let a = Arc::new(Mutex::named(format!("inv_mt_a{run}"), ()));
        let b = Arc::new(Mutex::named(format!("inv_mt_b{run}"), ()));
        rt.block_on(async {
            let (a1, b1) = (a.clone(), b.clone());
            tokio::spawn(async move {
                lockscope::detector::__private::actor::set_thread_scope(id);
                let _a = a1.lock().await;
                tokio::time::sleep(Duration::from_millis(2)).await;
                tokio::task::yield_now().await;
                let _b = b1.lock().await;
            })
            .await
            .unwrap();
            let (a2, b2) = (a.clone(), b.clone());
            tokio::spawn(async move {
                let _b = b2.lock().await;
                tokio::time::sleep(Duration::from_millis(2)).await;
                tokio::task::yield_now().await;
                let _a = a2.lock().await;
            })
            .await
            .unwrap();
        });
        let name = format!("inv_mt_a{run}");
        assert!(
            lockscope::detector::findings()
                .iter()
                .any(|f| f.kind == FindingKind::LockOrderInversion && f.involves(&name)),
            "run {run}: no inversion reported for {name}"
        );
    }
    drop(scope);
}
