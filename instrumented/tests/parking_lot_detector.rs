//! The detector on `lockscope::parking_lot`: one graph with the tokio locks, lock-order
//! inversions, `blocking-in-async` both ways, and negative controls that must stay silent.
//!
//! Tests run in parallel in one process and share the detector, so every assertion looks only
//! at findings that involve the primitives the test created (unique names, `pl_*`). Threads are
//! ordered with channels and barriers; the detector is polled with `check_now()` under a
//! deadline, never slept on.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use lockscope::detector::{self, Finding, FindingKind};
use lockscope::parking_lot::{Condvar, Mutex, ReentrantMutex, RwLock, RwLockUpgradableReadGuard};

mod support;
use support::findings::{
    DEADLINE, assert_silent, findings_about, lock_named, two_tasks_on_one_thread, wait_for_finding,
    wait_for_waiters,
};

fn kinds(found: &[Finding]) -> Vec<FindingKind> {
    found.iter().map(|f| f.kind).collect()
}

// ---------------------------------------------------------------------------------------------
// Lock order and deadlocks
// ---------------------------------------------------------------------------------------------

/// A then B on one thread, later B then A on another: reported although the two threads run
/// one after the other and never deadlock.
#[test]
fn abba_between_two_threads_is_reported_without_deadlocking() {
    let a = Arc::new(Mutex::named("pl_abba_a", 0));
    let b = Arc::new(RwLock::named("pl_abba_b", 0));
    let (a1, b1) = (a.clone(), b.clone());
    thread::spawn(move || {
        let _a = a1.lock();
        *b1.write() += 1;
    })
    .join()
    .unwrap();
    let (a2, b2) = (a.clone(), b.clone());
    thread::spawn(move || {
        let _b = b2.read();
        *a2.lock() += 1;
    })
    .join()
    .unwrap();
    let f = wait_for_finding(FindingKind::LockOrderInversion, &["pl_abba_a", "pl_abba_b"]);
    assert!(f.to_string().starts_with("lockscope: lock-order-inversion"));
    assert!(
        f.sites
            .iter()
            .any(|s| s.contains("parking_lot_detector.rs")),
        "sites: {:?}",
        f.sites
    );
    assert!(!kinds(&findings_about(&["pl_abba_a", "pl_abba_b"])).contains(&FindingKind::Deadlock));
}

/// A task holds a parking_lot mutex P and waits for a tokio mutex M; a plain thread holds M
/// and waits for P. One deadlock, naming both primitives, the task and the thread. The task
/// is then aborted (dropping its guard of P), which frees the thread: nothing stays blocked.
#[test]
fn thread_task_cycle_is_one_deadlock() {
    let p = Arc::new(Mutex::named("pl_mix_p", ()));
    let m = Arc::new(lockscope::tokio::Mutex::named("pl_mix_m", ()));
    let (x_holds_tx, x_holds_rx) = mpsc::channel();
    let (t_holds_tx, t_holds_rx) = mpsc::channel();
    let (abort_tx, abort_rx) = mpsc::channel::<tokio::task::AbortHandle>();

    let (p1, m1) = (p.clone(), m.clone());
    let x = thread::Builder::new()
        .name("pl-mix-x".into())
        .spawn(move || {
            let _m = m1.blocking_lock();
            x_holds_tx.send(()).unwrap();
            t_holds_rx.recv().unwrap();
            let _p = p1.lock(); // waits until the task is aborted
        })
        .unwrap();

    let (p2, m2) = (p.clone(), m.clone());
    let rt_thread = thread::Builder::new()
        .name("pl-mix-rt".into())
        .spawn(move || {
            x_holds_rx.recv().unwrap();
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, async move {
                // A local task: it holds a (!Send) parking_lot guard across an .await.
                let t = tokio::task::spawn_local(async move {
                    let _p = p2.lock();
                    t_holds_tx.send(()).unwrap();
                    let _m = m2.lock().await; // waits: the thread holds M
                });
                abort_tx.send(t.abort_handle()).unwrap();
                let r = t.await;
                assert!(r.unwrap_err().is_cancelled());
            });
        })
        .unwrap();

    let f = wait_for_finding(FindingKind::Deadlock, &["pl_mix_p", "pl_mix_m"]);
    let report = f.to_string();
    assert!(report.starts_with("lockscope: deadlock"), "{report}");
    assert!(
        f.actors.iter().any(|a| a.name.starts_with("task")),
        "a task is named: {report}"
    );
    assert!(
        f.actors.iter().any(|a| a.name.contains("pl-mix-x")),
        "the thread is named: {report}"
    );
    let deadlocks = findings_about(&["pl_mix_p", "pl_mix_m"])
        .into_iter()
        .filter(|f| f.kind == FindingKind::Deadlock)
        .count();
    assert_eq!(deadlocks, 1, "one cycle, one report");

    // Clean up: the aborted task drops its guard of P; the thread gets P and ends.
    abort_rx.recv().unwrap().abort();
    x.join().unwrap();
    rt_thread.join().unwrap();
    detector::check_now();
    let still = findings_about(&["pl_mix_p", "pl_mix_m"])
        .into_iter()
        .filter(|f| f.kind == FindingKind::Deadlock && f.active)
        .count();
    assert_eq!(still, 0, "the deadlock no longer holds once broken");
}

/// The rwlock model is exact about upgrades: an upgrade waiting for a reader that itself waits
/// for the upgradable lock is a deadlock. The two threads stay blocked for good (parking_lot
/// waits cannot be cancelled); nothing waits for them, so the test binary still ends.
#[test]
fn upgrade_against_a_reader_waiting_for_the_upgradable_lock_is_a_deadlock() {
    let r: &'static RwLock<u32> = Box::leak(Box::new(RwLock::named("pl_upgrade_knot", 0)));
    let (u_holds_tx, u_holds_rx) = mpsc::channel();
    let (rd_holds_tx, rd_holds_rx) = mpsc::channel();
    thread::spawn(move || {
        let u = r.upgradable_read();
        u_holds_tx.send(()).unwrap();
        rd_holds_rx.recv().unwrap();
        let _w = RwLockUpgradableReadGuard::upgrade(u); // waits for the reader: forever
    });
    thread::spawn(move || {
        u_holds_rx.recv().unwrap();
        let _rd = r.read();
        rd_holds_tx.send(()).unwrap();
        let _u = r.upgradable_read(); // waits for the upgradable holder: forever
    });
    let f = wait_for_finding(FindingKind::Deadlock, &["pl_upgrade_knot"]);
    assert!(f.to_string().starts_with("lockscope: deadlock"));
    assert_eq!(f.actors.len(), 2, "{f}");
}

/// An upgrade waiting for readers that will leave is just a wait: no deadlock, and the
/// upgradable hold is not a nested acquisition of its own upgrade.
#[test]
fn upgrade_waiting_for_a_reader_is_a_wait_not_a_finding() {
    let r = Arc::new(RwLock::named("pl_upgrade_wait", 0));
    let reader = r.read();
    let r2 = r.clone();
    let upgrader = thread::spawn(move || {
        let mut u = r2.upgradable_read();
        u.with_upgraded(|v| *v += 1); // waits for the reader, then downgrades back
        *RwLockUpgradableReadGuard::upgrade(u) += 1;
    });
    wait_for_waiters("pl_upgrade_wait", 1);
    let snapshot = lock_named("pl_upgrade_wait").unwrap();
    assert_eq!(
        snapshot.waiters[0].mode, "write",
        "an upgrade waits for write access"
    );
    assert_eq!(
        snapshot.holders.len(),
        2,
        "the reader and the upgradable holder"
    );
    assert_silent(&["pl_upgrade_wait"]);
    drop(reader);
    upgrader.join().unwrap();
    assert_eq!(*r.read(), 2);
    let snapshot = lock_named("pl_upgrade_wait").unwrap();
    assert!(
        snapshot.holders.is_empty() && snapshot.waiters.is_empty(),
        "{snapshot:?}"
    );
    assert_silent(&["pl_upgrade_wait"]);
}

/// A thread that waits for a mutex it holds is reported before it would hang (here with a
/// timed form, which gives up).
#[test]
fn self_wait_is_reported_as_nested_acquire() {
    let m = Mutex::named("pl_self_wait", ());
    let _g = m.lock();
    assert!(m.try_lock().is_none());
    assert!(
        findings_about(&["pl_self_wait"]).is_empty(),
        "try_lock cannot deadlock"
    );
    assert!(m.try_lock_for(Duration::from_millis(5)).is_none());
    let f = wait_for_finding(FindingKind::NestedAcquire, &["pl_self_wait"]);
    // Timed, so it ends: it can only time out (not deadlock).
    assert!(f.summary.contains("so the wait can only time out"), "{f}");
}

#[test]
fn read_inside_a_read_is_nested_but_read_recursive_is_not() {
    let ok = RwLock::named("pl_recursive_ok", 0);
    {
        let _a = ok.read();
        let _b = ok.read_recursive();
        let _c = ok.try_read_recursive().unwrap();
        let _d = ok.try_read_recursive_for(Duration::from_millis(1)).unwrap();
        let _e = ok.try_read_recursive_until(Instant::now()).unwrap();
    }
    {
        // An upgradable read keeps writers from claiming the lock: reads inside it never wait.
        let _u = ok.upgradable_read();
        let _b = ok.read_recursive();
        let _c = ok.read();
        let _d = ok.try_read_for(Duration::from_millis(1)).unwrap();
    }
    assert_silent(&["pl_recursive_ok"]);

    let bad = RwLock::named("pl_recursive_bad", 0);
    let _a = bad.read();
    let _b = bad.read(); // latent: a writer queued in between deadlocks both
    let f = wait_for_finding(FindingKind::NestedAcquire, &["pl_recursive_bad"]);
    assert!(f.summary.contains("latent deadlock"), "{f}");
}

// ---------------------------------------------------------------------------------------------
// blocking-in-async
// ---------------------------------------------------------------------------------------------

/// A contended parking_lot lock waited for by a task on a runtime worker stalls the worker:
/// reported, with the task and the acquire site.
#[test]
fn blocking_wait_on_a_worker_thread_is_reported() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let p = Arc::new(Mutex::named("pl_bia_worker", 0));
    let g = p.lock();
    let p2 = p.clone();
    let task = rt.spawn(async move {
        *p2.lock() += 1;
    });
    let f = wait_for_finding(FindingKind::BlockingInAsync, &["pl_bia_worker"]);
    assert!(f.summary.contains("worker thread"), "{f}");
    assert!(f.actors.iter().any(|a| a.name.starts_with("task")), "{f}");
    assert!(
        f.sites
            .iter()
            .any(|s| s.contains("parking_lot_detector.rs")),
        "{f}"
    );
    drop(g);
    rt.block_on(task).unwrap();
    assert_eq!(*p.lock(), 1);
}

/// The same contended wait off the workers is fine: `spawn_blocking`, `block_in_place`, the
/// `block_on` thread of a multi-thread runtime, a plain thread.
#[test]
fn blocking_waits_off_the_workers_are_not_reported() {
    const NAME: &str = "pl_bia_off";
    let rt = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap(),
    );
    let p = Arc::new(Mutex::named(NAME, 0));

    // spawn_blocking
    let g = p.lock();
    let p2 = p.clone();
    let h = rt.spawn_blocking(move || *p2.lock() += 1);
    wait_for_waiters(NAME, 1);
    drop(g);
    rt.block_on(h).unwrap();

    // block_in_place inside a worker task
    let g = p.lock();
    let p2 = p.clone();
    let h = rt.spawn(async move { tokio::task::block_in_place(|| *p2.lock() += 1) });
    wait_for_waiters(NAME, 1);
    drop(g);
    rt.block_on(h).unwrap();

    // the block_on thread of a multi-thread runtime
    let g = p.lock();
    let (p2, rt2) = (p.clone(), rt.clone());
    let t = thread::spawn(move || rt2.block_on(async { *p2.lock() += 1 }));
    wait_for_waiters(NAME, 1);
    drop(g);
    t.join().unwrap();

    // a plain thread
    let g = p.lock();
    let p2 = p.clone();
    let t = thread::spawn(move || *p2.lock() += 1);
    wait_for_waiters(NAME, 1);
    drop(g);
    t.join().unwrap();

    assert_eq!(*p.lock(), 4);
    assert_silent(&[NAME]);
}

/// A blocking guard held across an `.await`: another task ran on the same thread meanwhile.
#[test]
fn blocking_guard_held_across_an_await_is_reported() {
    let p: &'static Mutex<u32> = Box::leak(Box::new(Mutex::named("pl_bia_held", 0)));
    two_tasks_on_one_thread(
        move || p.lock(),
        Rc::new(lockscope::tokio::Mutex::named("pl_bia_held_other", 0)),
        true,
    );
    let f = wait_for_finding(FindingKind::BlockingInAsync, &["pl_bia_held"]);
    assert!(f.summary.contains("across an .await"), "{f}");
    assert!(f.actors.iter().any(|a| a.name.starts_with("task")), "{f}");
}

#[test]
fn blocking_guard_released_before_the_await_is_not_reported() {
    let p: &'static Mutex<u32> = Box::leak(Box::new(Mutex::named("pl_bia_released", 0)));
    two_tasks_on_one_thread(
        move || p.lock(),
        Rc::new(lockscope::tokio::Mutex::named("pl_bia_released_other", 0)),
        false,
    );
    assert_silent(&["pl_bia_released", "pl_bia_released_other"]);
}

// ---------------------------------------------------------------------------------------------
// Negative controls and the books
// ---------------------------------------------------------------------------------------------

/// While a thread sleeps in `Condvar::wait`, the books show the mutex free (so the notifier
/// holding it is its only holder); after the wake-up, the waiter holds it again. A whole
/// producer/consumer run stays silent.
#[test]
fn condvar_wait_releases_the_hold_and_producer_consumer_is_silent() {
    const NAME: &str = "pl_cv_queue";
    let state = Arc::new((
        Mutex::named(NAME, (Vec::<u32>::new(), false)),
        Condvar::new(),
    ));
    let s = state.clone();
    let (started_tx, started_rx) = mpsc::channel();
    let consumer = thread::Builder::new()
        .name("pl-cv-consumer".into())
        .spawn(move || {
            let (m, cv) = &*s;
            let mut g = m.lock();
            started_tx.send(()).unwrap();
            cv.wait_while(&mut g, |(_, go)| !*go);
            let me = lock_named(NAME).unwrap();
            assert_eq!(me.holders.len(), 1);
            assert!(me.holders[0].actor.contains("pl-cv-consumer"), "{me:?}");
            // Then a real producer/consumer exchange.
            let mut got = Vec::new();
            while got.len() < 500 {
                match g.0.pop() {
                    Some(x) => got.push(x),
                    None => {
                        let r = cv.wait_for(&mut g, DEADLINE);
                        assert!(!r.timed_out(), "lost wake-up");
                    }
                }
            }
            got
        })
        .unwrap();
    started_rx.recv().unwrap();
    let (m, cv) = &*state;
    {
        // The consumer held the mutex when it signalled; we get it once it is in `wait`.
        let mut g = m.lock();
        let books = lock_named(NAME).unwrap();
        assert_eq!(
            books.holders.len(),
            1,
            "only this thread holds it: {books:?}"
        );
        let me = detector::__private::snapshot::current_actor_name();
        assert_eq!(books.holders[0].actor, me, "{books:?}");
        g.1 = true;
        cv.notify_one();
    }
    for i in 0..500 {
        m.lock().0.push(i);
        cv.notify_one();
    }
    let mut got = consumer.join().unwrap();
    got.sort_unstable();
    assert_eq!(got, (0..500).collect::<Vec<_>>());
    assert!(lock_named(NAME).unwrap().holders.is_empty());
    assert_silent(&[NAME]);
}

/// Re-entries by the owner thread, in recursion, with another lock taken inside, while a
/// second thread competes: never reported.
#[test]
fn reentrant_recursion_is_silent() {
    fn recurse(m: &ReentrantMutex<RefCell<Vec<u32>>>, inner: &Mutex<u32>, depth: u32) {
        let g = m.lock();
        g.borrow_mut().push(depth);
        if depth.is_multiple_of(2) {
            *inner.lock() += 1;
        }
        if depth > 0 {
            if depth.is_multiple_of(3) {
                let _again = m.try_lock().expect("a re-entry never fails");
            }
            recurse(m, inner, depth - 1);
        }
    }
    let m = Arc::new(ReentrantMutex::named(
        "pl_reentrant",
        RefCell::new(Vec::new()),
    ));
    let inner = Arc::new(Mutex::named("pl_reentrant_inner", 0));
    let barrier = Arc::new(Barrier::new(2));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (m, inner, barrier) = (m.clone(), inner.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                for _ in 0..100 {
                    recurse(&m, &inner, 6);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(m.lock().borrow().len(), 2 * 100 * 7);
    assert_eq!(*inner.lock(), 2 * 100 * 4);
    assert_silent(&["pl_reentrant", "pl_reentrant_inner"]);
}

/// Eight threads, always in the order a < r < b < c (any subset, any form): silent.
#[test]
fn consistent_order_across_eight_threads_is_silent() {
    let names = ["pl_order_a", "pl_order_r", "pl_order_b", "pl_order_c"];
    let a = Arc::new(Mutex::named(names[0], 0u64));
    let r = Arc::new(RwLock::named(names[1], 0u64));
    let b = Arc::new(Mutex::named(names[2], 0u64));
    let c = Arc::new(ReentrantMutex::named(names[3], ()));
    let barrier = Arc::new(Barrier::new(8));
    let threads: Vec<_> = (0..8u64)
        .map(|i| {
            let (a, r, b, c, barrier) =
                (a.clone(), r.clone(), b.clone(), c.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                for j in 0..200u64 {
                    let ga = ((i + j) % 2 == 0).then(|| a.lock());
                    let gr = if j % 3 == 0 {
                        None
                    } else if j % 5 == 0 {
                        Some(Err(r.write()))
                    } else {
                        Some(Ok(r.read_recursive()))
                    };
                    let mut gb = b.try_lock_for(DEADLINE).expect("b within the deadline");
                    *gb += 1;
                    let _gc = c.lock();
                    drop((gr, ga));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(*b.lock(), 1600);
    assert_silent(&names);
}

/// A lock-order inversion among plain threads that a test spawned on locks it created goes to
/// that test only, not to every test armed at the time.
#[test]
fn an_inversion_in_threads_a_test_spawned_reaches_that_test_only() {
    use lockscope::detector::{ScopeOptions, TestScope};
    let (armed_tx, armed) = mpsc::channel();
    let (done_tx, done) = mpsc::channel::<()>();
    let bystander = thread::spawn(move || {
        let scope = TestScope::arm("bystander", ScopeOptions::default());
        armed_tx.send(()).unwrap();
        done.recv().unwrap();
        scope.finish()
    });
    armed.recv().unwrap();

    let scope = TestScope::arm("spawner", ScopeOptions::default());
    let x = Arc::new(Mutex::named("pl_scoped_inv_x", 0));
    let y = Arc::new(Mutex::named("pl_scoped_inv_y", 0));
    let (x2, y2) = (x.clone(), y.clone());
    thread::spawn(move || {
        let _a = x2.lock();
        let _b = y2.lock();
    })
    .join()
    .unwrap();
    thread::spawn(move || {
        let _b = y.lock();
        let _a = x.lock();
    })
    .join()
    .unwrap();
    let mine = scope.finish();
    assert!(
        mine.iter()
            .any(|f| f.kind == FindingKind::LockOrderInversion && f.involves("pl_scoped_inv_x")),
        "{mine:#?}"
    );
    done_tx.send(()).unwrap();
    let theirs = bystander.join().unwrap();
    assert!(
        !theirs.iter().any(|f| f.involves("pl_scoped_inv_x")),
        "{theirs:#?}"
    );
}

/// The same bug in two tests (one key, so one entry in the global list): each test's failure
/// names its own thread, not the first test's.
#[test]
fn the_same_bug_in_two_tests_reports_each_tests_own_thread() {
    use lockscope::detector::{ScopeOptions, TestScope};
    fn relock_read(rw: &RwLock<u32>) {
        let _a = rw.read();
        let _b = rw.read(); // latent: a writer queued in between deadlocks both
    }
    let rw = Arc::new(RwLock::named("pl_same_bug_twice", 0));
    let mut names = Vec::new();
    for test in ["same_bug_first", "same_bug_second"] {
        let rw = rw.clone();
        let findings = thread::Builder::new()
            .name(test.into())
            .spawn(move || {
                let scope = TestScope::arm(test, ScopeOptions::default());
                relock_read(&rw);
                scope.finish()
            })
            .unwrap()
            .join()
            .unwrap();
        let f = findings
            .iter()
            .find(|f| f.kind == FindingKind::NestedAcquire && f.involves("pl_same_bug_twice"))
            .unwrap_or_else(|| panic!("{test}: {findings:#?}"))
            .to_string();
        names.push((test, f));
    }
    for (test, f) in names {
        assert!(f.contains(&format!("thread '{test}'")), "{f}");
    }
}
