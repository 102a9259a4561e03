//! The detector on `lockscope::std::sync`: deadlocks and lock-order inversions among threads,
//! one graph with the parking_lot and tokio locks, `blocking-in-async` both ways, and the
//! books across condvar waits, poisoning panics and condition panics.
//!
//! Tests run in parallel in one process and share the detector, so every assertion looks only
//! at findings that involve the primitives the test created (unique names, `std_*`). Threads
//! are ordered with channels and barriers; the detector is polled with `check_now()` under a
//! deadline, never slept on.

use std::rc::Rc;
use std::sync::{Arc, Barrier, mpsc};
use std::thread;

use lockscope::detector::{self, FindingKind};
use lockscope::std::sync::{Condvar, Mutex, RwLock};

mod support;
use support::findings::{
    DEADLINE, assert_silent, findings_about, lock_named, two_tasks_on_one_thread, wait_for_finding,
    wait_for_waiters,
};

// ---------------------------------------------------------------------------------------------
// Deadlocks and lock order
// ---------------------------------------------------------------------------------------------

/// Two threads, A then B and B then A, each holding its first lock when it asks for the
/// second: a live deadlock, reported once, naming both mutexes and both threads. The two
/// threads stay blocked for good (std's waits cannot be cancelled); nothing waits for them,
/// so the test binary still ends.
#[test]
fn abba_between_two_threads_is_a_deadlock() {
    let a: &'static Mutex<u32> = Box::leak(Box::new(Mutex::named("std_dl_a", 0)));
    let b: &'static Mutex<u32> = Box::leak(Box::new(Mutex::named("std_dl_b", 0)));
    let both_hold = Arc::new(Barrier::new(2));
    let spawn = |name: &str, first: &'static Mutex<u32>, second: &'static Mutex<u32>| {
        let both_hold = both_hold.clone();
        thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let _first = first.lock().unwrap();
                both_hold.wait();
                let _second = second.lock().unwrap(); // waits for the other thread: forever
            })
            .unwrap()
    };
    let _ab = spawn("std-dl-ab", a, b);
    let _ba = spawn("std-dl-ba", b, a);

    let f = wait_for_finding(FindingKind::Deadlock, &["std_dl_a", "std_dl_b"]);
    let report = f.to_string();
    assert!(report.starts_with("lockscope: deadlock"), "{report}");
    assert!(
        f.actors.iter().any(|t| t.name.contains("std-dl-ab"))
            && f.actors.iter().any(|t| t.name.contains("std-dl-ba")),
        "both threads are named: {report}"
    );
    assert!(
        f.sites.iter().any(|s| s.contains("std_detector.rs")),
        "{:?}",
        f.sites
    );
    let deadlocks = findings_about(&["std_dl_a", "std_dl_b"])
        .into_iter()
        .filter(|f| f.kind == FindingKind::Deadlock)
        .count();
    assert_eq!(deadlocks, 1, "one cycle, one report");
}

/// A then B on one thread, later B then A on another: reported although the two threads run
/// one after the other and never deadlock; the mutex and the rwlock are std's.
#[test]
fn abba_one_after_the_other_is_an_inversion_not_a_deadlock() {
    let a = Arc::new(Mutex::named("std_inv_a", 0));
    let b = Arc::new(RwLock::named("std_inv_b", 0));
    let (a1, b1) = (a.clone(), b.clone());
    thread::spawn(move || {
        let _a = a1.lock().unwrap();
        *b1.write().unwrap() += 1;
    })
    .join()
    .unwrap();
    let (a2, b2) = (a.clone(), b.clone());
    thread::spawn(move || {
        let _b = b2.read().unwrap();
        *a2.lock().unwrap() += 1;
    })
    .join()
    .unwrap();
    let f = wait_for_finding(FindingKind::LockOrderInversion, &["std_inv_a", "std_inv_b"]);
    assert!(f.to_string().starts_with("lockscope: lock-order-inversion"));
    let found = findings_about(&["std_inv_a", "std_inv_b"]);
    assert!(
        found.iter().all(|f| f.kind != FindingKind::Deadlock),
        "{found:?}"
    );
}

/// std, parking_lot and tokio locks share one lock-order graph: a std mutex taken before a
/// parking_lot one here, after it there, is one inversion naming both; a tokio mutex taken
/// inside the std one adds an edge to the same graph.
#[test]
fn std_and_parking_lot_locks_share_one_graph() {
    let s = Arc::new(Mutex::named("std_mix_std", 0));
    let p = Arc::new(lockscope::parking_lot::Mutex::named("std_mix_pl", 0));
    let t = Arc::new(lockscope::tokio::Mutex::named("std_mix_tokio", 0));
    let (s1, p1, t1) = (s.clone(), p.clone(), t.clone());
    thread::spawn(move || {
        let _s = s1.lock().unwrap();
        *p1.lock() += 1;
        *t1.blocking_lock() += 1;
    })
    .join()
    .unwrap();
    let (s2, p2) = (s.clone(), p.clone());
    thread::spawn(move || {
        let _p = p2.lock();
        *s2.lock().unwrap() += 1;
    })
    .join()
    .unwrap();
    let f = wait_for_finding(
        FindingKind::LockOrderInversion,
        &["std_mix_std", "std_mix_pl"],
    );
    assert!(!f.involves("std_mix_tokio"), "no cycle through tokio: {f}");
    // Now close a cycle through the tokio mutex: tokio, then std.
    let (s3, t3) = (s.clone(), t.clone());
    thread::spawn(move || {
        let _t = t3.blocking_lock();
        *s3.lock().unwrap() += 1;
    })
    .join()
    .unwrap();
    wait_for_finding(
        FindingKind::LockOrderInversion,
        &["std_mix_std", "std_mix_tokio"],
    );
}

/// A read inside a read of one std rwlock on one thread: a latent deadlock (std's rwlock
/// makes new readers wait behind a waiting writer), reported although nothing waited; `try_`
/// forms are never reported.
#[test]
fn read_inside_a_read_is_a_nested_acquire() {
    let ok = RwLock::named("std_nested_ok", 0);
    {
        let _a = ok.read().unwrap();
        let _b = ok.try_read().unwrap();
    }
    assert_silent(&["std_nested_ok"]);

    let bad = RwLock::named("std_nested_bad", 0);
    let _a = bad.read().unwrap();
    let _b = bad.read().unwrap();
    let f = wait_for_finding(FindingKind::NestedAcquire, &["std_nested_bad"]);
    assert!(f.summary.contains("latent deadlock"), "{f}");
}

// ---------------------------------------------------------------------------------------------
// blocking-in-async
// ---------------------------------------------------------------------------------------------

/// A contended std mutex waited for by a task on a runtime worker stalls the worker:
/// reported, with the task and the acquire site.
#[test]
fn std_mutex_wait_on_a_worker_thread_is_reported() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let m = Arc::new(Mutex::named("std_bia_worker", 0));
    let g = m.lock().unwrap();
    let m2 = m.clone();
    let task = rt.spawn(async move {
        *m2.lock().unwrap() += 1;
    });
    let f = wait_for_finding(FindingKind::BlockingInAsync, &["std_bia_worker"]);
    assert!(f.summary.contains("worker thread"), "{f}");
    assert!(f.actors.iter().any(|a| a.name.starts_with("task")), "{f}");
    assert!(f.sites.iter().any(|s| s.contains("std_detector.rs")), "{f}");
    drop(g);
    rt.block_on(task).unwrap();
    assert_eq!(*m.lock().unwrap(), 1);
}

/// The same wait in `spawn_blocking` is what tokio recommends: not reported.
#[test]
fn std_mutex_wait_in_spawn_blocking_is_not_reported() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let m = Arc::new(Mutex::named("std_bia_off", 0));
    let g = m.lock().unwrap();
    let m2 = m.clone();
    let h = rt.spawn_blocking(move || *m2.lock().unwrap() += 1);
    wait_for_waiters("std_bia_off", 1);
    drop(g);
    rt.block_on(h).unwrap();
    assert_eq!(*m.lock().unwrap(), 1);
    assert_silent(&["std_bia_off"]);
}

/// A std guard held across an `.await` while another task ran on the same thread: the
/// mistake tokio's docs warn about, reported.
#[test]
fn std_guard_held_across_an_await_is_reported() {
    let m: &'static Mutex<u32> = Box::leak(Box::new(Mutex::named("std_bia_held", 0)));
    two_tasks_on_one_thread(
        move || m.lock().unwrap(),
        Rc::new(lockscope::tokio::Mutex::named("std_bia_held_other", 0)),
        true,
    );
    let f = wait_for_finding(FindingKind::BlockingInAsync, &["std_bia_held"]);
    assert!(f.summary.contains("across an .await"), "{f}");
    assert!(f.actors.iter().any(|a| a.name.starts_with("task")), "{f}");
}

/// The short critical section tokio recommends (guard dropped before the `.await`): silent.
#[test]
fn std_guard_released_before_the_await_is_not_reported() {
    let m: &'static Mutex<u32> = Box::leak(Box::new(Mutex::named("std_bia_released", 0)));
    two_tasks_on_one_thread(
        move || m.lock().unwrap(),
        Rc::new(lockscope::tokio::Mutex::named("std_bia_released_other", 0)),
        false,
    );
    assert_silent(&["std_bia_released", "std_bia_released_other"]);
}

// ---------------------------------------------------------------------------------------------
// The books
// ---------------------------------------------------------------------------------------------

/// Kinds, as API.md names them for blocking locks.
#[test]
fn kinds_are_the_blocking_ones() {
    let _m = Mutex::named("std_kind_m", ());
    let _r = RwLock::named("std_kind_r", ());
    assert_eq!(lock_named("std_kind_m").unwrap().kind, "blocking_mutex");
    assert_eq!(lock_named("std_kind_r").unwrap().kind, "blocking_rwlock");
}

/// A `static` lock (`const fn new`) registers on first use, named after its line.
#[test]
fn static_locks_register_on_first_use() {
    static M: Mutex<u32> = Mutex::new(0);
    *M.lock().unwrap() += 1;
    assert!(M.name().contains("std_detector.rs:"), "{}", M.name());
    let books = lock_named(M.name()).unwrap();
    assert_eq!(books.kind, "blocking_mutex");
}

/// While a thread sleeps in `Condvar::wait_while`, the books show the mutex free (so the
/// notifier is its only holder); after the wake-up, the waiter holds it again; a whole
/// producer/consumer run stays silent and leaves no holder.
#[test]
fn condvar_wait_releases_the_hold_and_producer_consumer_is_silent() {
    const NAME: &str = "std_cv_queue";
    let state = Arc::new((
        Mutex::named(NAME, (Vec::<u32>::new(), false)),
        Condvar::new(),
    ));
    let s = state.clone();
    let (started_tx, started_rx) = mpsc::channel();
    let consumer = thread::Builder::new()
        .name("std-cv-consumer".into())
        .spawn(move || {
            let (m, cv) = &*s;
            let g = m.lock().unwrap();
            started_tx.send(()).unwrap();
            let mut g = cv.wait_while(g, |(_, go)| !*go).unwrap();
            let me = lock_named(NAME).unwrap();
            assert_eq!(me.holders.len(), 1);
            assert!(me.holders[0].actor.contains("std-cv-consumer"), "{me:?}");
            let mut got = Vec::new();
            while got.len() < 500 {
                match g.0.pop() {
                    Some(x) => got.push(x),
                    None => {
                        let (g2, r) = cv.wait_timeout(g, DEADLINE).unwrap();
                        assert!(!r.timed_out(), "lost wake-up");
                        g = g2;
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
        let mut g = m.lock().unwrap();
        let books = lock_named(NAME).unwrap();
        assert_eq!(
            books.holders.len(),
            1,
            "only this thread holds it: {books:?}"
        );
        assert_eq!(
            books.holders[0].actor,
            detector::__private::snapshot::current_actor_name()
        );
        g.1 = true;
        cv.notify_one();
    }
    for i in 0..500 {
        m.lock().unwrap().0.push(i);
        cv.notify_one();
    }
    let mut got = consumer.join().unwrap();
    got.sort_unstable();
    assert_eq!(got, (0..500).collect::<Vec<_>>());
    assert!(lock_named(NAME).unwrap().holders.is_empty());
    assert_silent(&[NAME]);
}

/// Poisoning panics never leave a hold in the books: a holder that panics releases it, a
/// guard taken out of a `PoisonError` is a hold like any other, and a condvar condition that
/// panics (std drops its guard, unlocking) releases it too.
#[test]
fn panics_leave_no_hold_in_the_books() {
    const NAME: &str = "std_poison_books";
    let m = Arc::new(Mutex::named(NAME, 0));
    let m2 = m.clone();
    let r = thread::spawn(move || {
        let _g = m2.lock().unwrap();
        panic!("poisons the mutex");
    })
    .join();
    assert!(r.is_err());
    assert!(m.is_poisoned());
    assert!(lock_named(NAME).unwrap().holders.is_empty());

    let g = m.lock().unwrap_err().into_inner();
    assert_eq!(lock_named(NAME).unwrap().holders.len(), 1);
    drop(g);
    assert!(lock_named(NAME).unwrap().holders.is_empty());

    let cv = Condvar::new();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let g = m.lock().unwrap_or_else(|p| p.into_inner());
        let _g = cv.wait_while(g, |_| panic!("inside the condition"));
    }));
    assert!(r.is_err());
    assert!(
        lock_named(NAME).unwrap().holders.is_empty(),
        "{:?}",
        lock_named(NAME)
    );
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let g = m.lock().unwrap_or_else(|p| p.into_inner());
        let _g = cv.wait_timeout_while(g, DEADLINE, |_| panic!("inside the condition"));
    }));
    assert!(r.is_err());
    assert!(lock_named(NAME).unwrap().holders.is_empty());
    assert_silent(&[NAME]);
}

/// `try_lock` on a held mutex gives up (counted, no waiter); on a poisoned free one it holds.
#[test]
fn try_forms_are_recorded() {
    const NAME: &str = "std_try";
    let m = Mutex::named(NAME, 0);
    let g = m.try_lock().unwrap();
    assert_eq!(lock_named(NAME).unwrap().holders.len(), 1);
    assert!(m.try_lock().is_err());
    assert!(lock_named(NAME).unwrap().waiters.is_empty());
    drop(g);
    assert!(lock_named(NAME).unwrap().holders.is_empty());
    assert_silent(&[NAME]);
}
