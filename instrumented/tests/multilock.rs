//! `MultiLock`: lock sets listed in opposite orders never deadlock each other (the detector,
//! armed, sees every member's acquisition and finds no inversion), one timeout bounds the
//! whole set, and a failed set releases what it took.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lockscope::tokio::{MultiLock, Mutex};

/// Eight tasks, half taking `[a, b]` and half `[b, a]`, for two seconds: naive sequential
/// locking in those orders is the textbook ABBA (and an armed test's `lock-order-inversion`).
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn opposite_listings_hammered_never_deadlock_nor_invert() {
    let a = Arc::new(Mutex::named("ml_a", 0u64));
    let b = Arc::new(Mutex::named("ml_b", 0u64));
    let until = Instant::now() + Duration::from_secs(2);
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let (a, b) = (a.clone(), b.clone());
            tokio::spawn(async move {
                let mut rounds = 0u64;
                while Instant::now() < until {
                    let (first, second) = if t % 2 == 0 { (&a, &b) } else { (&b, &a) };
                    let set = MultiLock::new([&**first, &**second]).unwrap();
                    let mut g = set.lock().await;
                    *g.get_mut(0) += 1;
                    tokio::task::yield_now().await;
                    *g.get_mut(1) += 1;
                    drop(g);
                    rounds += 1;
                }
                rounds
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += tokio::time::timeout(Duration::from_secs(20), t)
            .await
            .expect("a multi-lock deadlocked")
            .unwrap();
    }
    assert!(total > 0);
    assert_eq!(*a.lock().await, total);
    assert_eq!(*b.lock().await, total);
}

/// The budget is the set's: `a` comes free after 60 ms and `b` after 120 ms; each alone fits
/// a 100 ms timeout, the set does not.
#[tokio::test(start_paused = true)]
async fn one_timeout_covers_the_whole_set() {
    let a = Arc::new(Mutex::named("ml_t_a", ()));
    let b = Arc::new(Mutex::named("ml_t_b", ()));
    let ga = a.clone().lock_owned().await;
    let gb = b.clone().lock_owned().await;
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(60)).await;
        drop(ga);
        tokio::time::sleep(Duration::from_millis(60)).await;
        drop(gb);
    });
    let set = MultiLock::new([&*b, &*a]).unwrap();
    let start = tokio::time::Instant::now();
    let err = set
        .lock_timeout(Duration::from_millis(100))
        .await
        .unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_millis(100));
    assert_eq!(err.lock(), "ml_t_b", "{err}");
    // What the set took (a, free since 60 ms) was released on the way out.
    assert!(a.try_lock().is_ok());
    // Later, the whole set is taken within its budget.
    let g = set.lock_timeout(Duration::from_millis(100)).await.unwrap();
    assert_eq!(g.len(), 2);
}

#[tokio::test]
async fn a_set_that_lists_a_lock_twice_is_refused_with_its_name() {
    let a = Mutex::named("ml_dup", ());
    let b = Mutex::named("ml_other", ());
    let err = MultiLock::new([&b, &a, &a]).unwrap_err();
    assert_eq!(err.lock(), "ml_dup");
    assert_eq!(err.positions(), (1, 2));
    assert!(
        err.to_string().contains("\"ml_dup\" is listed twice"),
        "{err}"
    );
}

#[tokio::test]
async fn try_lock_takes_all_or_none() {
    let (a, b, c) = (
        Mutex::named("ml_try_a", 1),
        Mutex::named("ml_try_b", 2),
        Mutex::named("ml_try_c", 3),
    );
    let set = MultiLock::new([&c, &a, &b]).unwrap();
    let held = b.lock().await;
    assert!(set.try_lock().is_err());
    assert!(
        a.try_lock().is_ok() && c.try_lock().is_ok(),
        "a partial set was kept"
    );
    drop(held);
    let g = set.try_lock().unwrap();
    // Values by listed position, whatever the order of taking.
    assert_eq!((*g.get(0), *g.get(1), *g.get(2)), (3, 1, 2));
}

/// The blocking form, on threads: opposite listings, an armed test, no finding.
#[lockscope::test]
fn blocking_sets_in_opposite_orders_on_threads() {
    use lockscope::parking_lot::{MultiLock, Mutex};
    let a = Arc::new(Mutex::named("ml_pl_a", 0u32));
    let b = Arc::new(Mutex::named("ml_pl_b", 0u32));
    std::thread::scope(|s| {
        for t in 0..4 {
            let (a, b) = (&a, &b);
            s.spawn(move || {
                for _ in 0..2000 {
                    let list = if t % 2 == 0 {
                        [&**a, &**b]
                    } else {
                        [&**b, &**a]
                    };
                    let set = MultiLock::new(list).unwrap();
                    let mut g = set.try_lock_for(Duration::from_secs(10)).expect("deadlock");
                    *g.get_mut(0) += 1;
                    *g.get_mut(1) += 1;
                }
            });
        }
    });
    assert_eq!((*a.lock(), *b.lock()), (8000, 8000));
}

/// The detector sees the members: the set's acquisitions enter the lock-order graph like any
/// other, recorded at the caller's line (not inside lockscope).
#[tokio::test]
async fn members_enter_the_lock_order_graph_at_the_callers_line() {
    let a = Mutex::named("ml_graph_a", ());
    let b = Mutex::named("ml_graph_b", ());
    let set = MultiLock::new([&b, &a]).unwrap();
    drop(set.lock().await);
    let id = |name: &str| {
        lockscope::detector::locks()
            .into_iter()
            .find(|l| l.name == name)
            .unwrap()
            .id
    };
    let (ia, ib) = (id("ml_graph_a"), id("ml_graph_b"));
    let edges = lockscope::detector::graph().lock_order;
    let edge = edges
        .iter()
        .find(|e| (e.from, e.to) == (ia, ib) || (e.from, e.to) == (ib, ia))
        .expect("no lock-order edge between the members");
    assert!(
        edge.to_site.contains("tests/multilock.rs:"),
        "{}",
        edge.to_site
    );
    assert!(
        edge.from_site.contains("tests/multilock.rs:"),
        "{}",
        edge.from_site
    );
}

/// Issue 30, item 1's rwlock halves: eight tasks for two seconds, half taking
/// `[write a, read b]` and half `[write b, read a]`. Taken as listed, a writer of `a` waiting
/// to read `b` while a writer of `b` waits to read `a` is an ABBA; the set's global order
/// makes it none (and, armed, no lock-order inversion is found).
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_and_write_halves_in_opposite_orders_never_deadlock() {
    use lockscope::tokio::{Member, RwLock};
    let a = Arc::new(RwLock::named("ml_rw_a", 0u64));
    let b = Arc::new(RwLock::named("ml_rw_b", 0u64));
    let until = Instant::now() + Duration::from_secs(2);
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let (a, b) = (a.clone(), b.clone());
            tokio::spawn(async move {
                let mut rounds = 0u64;
                while Instant::now() < until {
                    let (written, read) = if t % 2 == 0 { (&a, &b) } else { (&b, &a) };
                    let set =
                        MultiLock::with_members([Member::Write(&**written), Member::Read(&**read)])
                            .unwrap();
                    let mut g = set.lock().await;
                    let seen = *g.get(1);
                    tokio::task::yield_now().await;
                    *g.get_mut(0) += 1;
                    assert_eq!(*g.get(1), seen, "a read half changed under its reader");
                    drop(g);
                    rounds += 1;
                }
                (t % 2, rounds)
            })
        })
        .collect();
    let (mut on_a, mut on_b) = (0, 0);
    for t in tasks {
        let (which, rounds) = tokio::time::timeout(Duration::from_secs(20), t)
            .await
            .expect("a multi-lock over rwlock halves deadlocked")
            .unwrap();
        if which == 0 {
            on_a += rounds
        } else {
            on_b += rounds
        }
    }
    assert!(on_a > 0 && on_b > 0);
    assert_eq!((*a.read().await, *b.read().await), (on_a, on_b));
}

/// The blocking form, on threads, with a mutex in the set too.
#[lockscope::test]
fn blocking_read_and_write_halves_in_opposite_orders() {
    use lockscope::parking_lot::{Member, MultiLock, Mutex, RwLock};
    let a = RwLock::named("ml_prw_a", 0u64);
    let b = RwLock::named("ml_prw_b", 0u64);
    let m = Mutex::named("ml_prw_m", 0u64);
    let rounds = 2_000;
    std::thread::scope(|s| {
        for t in 0..8 {
            let (a, b, m) = (&a, &b, &m);
            s.spawn(move || {
                for _ in 0..rounds {
                    let members = if t % 2 == 0 {
                        [Member::Write(a), Member::Read(b), Member::Lock(m)]
                    } else {
                        [Member::Lock(m), Member::Write(b), Member::Read(a)]
                    };
                    let set = MultiLock::with_members(members).unwrap();
                    let mut g = set.lock();
                    let written = if t % 2 == 0 { 0 } else { 1 };
                    *g.get_mut(written) += 1;
                    *g.get_mut(if t % 2 == 0 { 2 } else { 0 }) += 1;
                }
            });
        }
    });
    assert_eq!(
        (*a.read(), *b.read(), *m.lock()),
        (4 * rounds, 4 * rounds, 8 * rounds)
    );
}

/// Both halves of one rwlock are one lock: listed together, the set is refused; a read half
/// gives no `&mut`.
#[test]
fn both_halves_of_one_rwlock_are_refused_and_a_read_half_is_shared() {
    use lockscope::parking_lot::{Member, MultiLock, RwLock};
    let rw = RwLock::named("ml_halves", 1);
    let err = MultiLock::with_members([Member::Read(&rw), Member::Write(&rw)]).unwrap_err();
    assert_eq!((err.lock(), err.positions()), ("ml_halves", (0, 1)));
    let set = MultiLock::with_members([Member::Read(&rw)]).unwrap();
    let g = set.lock();
    assert!(rw.try_read().is_some() && rw.try_write().is_none());
    let mut g = std::panic::AssertUnwindSafe(g);
    let mutated = std::panic::catch_unwind(move || {
        *g.get_mut(0) += 1;
    });
    assert!(mutated.is_err(), "a read half gave &mut");
    assert!(
        rw.try_write().is_some(),
        "the panicking set released its read half"
    );
}

/// A set of mutexes only hands out the mutexes' own guards: its guard is `Send` when theirs
/// are (a `Send + !Sync` value included), as a task holding it across `.await` needs; only a
/// set with rwlock halves needs what their read guards need.
#[tokio::test]
async fn a_set_of_mutexes_keeps_the_mutex_guards_send() {
    fn send<T: Send>(_: &T) {}
    let m = Mutex::named("ml_send", std::cell::Cell::new(1));
    let set = MultiLock::new([&m]).unwrap();
    let g = set.lock().await;
    send(&g);
    let _: &lockscope::tokio::MultiLockGuard<'_, std::cell::Cell<i32>> = &g;
    assert_eq!(g.get(0).get(), 1);
}
