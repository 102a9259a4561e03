//! The status queries (`is_locked`, `can_lock`, `held_by_current`, `holders`) of every
//! wrapper, against the detector's view: exact where the books are exact (a mutex's holder
//! asking about itself, under contention), and across `.await` points on a multi-thread
//! runtime, where a task resumes on whichever worker is free.

use std::sync::{Arc, Barrier};

fn this_file(site: &str) -> bool {
    site.starts_with("instrumented/tests/status_queries.rs:")
        || site.starts_with("tests/status_queries.rs:")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_holds_its_tokio_mutex_across_awaits_and_nobody_else_does() {
    let m = Arc::new(lockscope::tokio::Mutex::named("status_tokio", 0u32));
    assert!(!m.is_locked() && m.can_lock() && !m.held_by_current() && m.holders().is_empty());

    let held = m.clone();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let holder = tokio::spawn(async move {
        let g = held.lock().await;
        for _ in 0..50 {
            tokio::task::yield_now().await;
            assert!(
                held.held_by_current(),
                "the holder lost its hold across an await"
            );
        }
        tx.send(tokio::task::id()).unwrap();
        done_rx.await.unwrap();
        drop(g);
        assert!(!held.held_by_current());
    });
    let holder_id = rx.await.unwrap();

    // Another task (this one) does not hold it; the books name the holder and this file.
    assert!(m.is_locked() && !m.can_lock());
    assert!(!m.held_by_current());
    let holders = m.holders();
    assert_eq!(holders.len(), 1, "{holders:?}");
    assert_eq!(holders[0].actor, format!("task {holder_id}"));
    assert!(this_file(&holders[0].site), "{}", holders[0].site);
    assert_eq!((holders[0].mode, holders[0].permits), ("lock", 1));

    done_tx.send(()).unwrap();
    holder.await.unwrap();
    assert!(!m.is_locked() && m.can_lock() && m.holders().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_contention_the_holder_is_the_one_holder_in_the_books() {
    let m = Arc::new(lockscope::tokio::Mutex::named("status_contended", 0u64));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let m = m.clone();
            tokio::spawn(async move {
                for _ in 0..200 {
                    let mut g = m.lock().await;
                    // The books record a grant after tokio's and a release before it, so
                    // while this task holds the mutex it is its only holder in them.
                    let holders = m.holders();
                    assert_eq!(holders.len(), 1, "{holders:?}");
                    assert_eq!(holders[0].actor, format!("task {}", tokio::task::id()));
                    assert!(m.held_by_current() && m.is_locked() && !m.can_lock());
                    *g += 1;
                    drop(g);
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*m.lock().await, 1600);
    assert!(m.holders().is_empty());
}

#[tokio::test]
async fn tokio_rwlock_and_semaphore() {
    let l = lockscope::tokio::RwLock::named("status_rw", 1);
    let r1 = l.read().await;
    let r2 = l.read().await;
    assert!(l.is_locked() && l.can_read() && !l.can_lock());
    let holders = l.holders();
    assert_eq!(holders.len(), 2);
    assert!(holders.iter().all(|h| h.mode == "read"));
    assert!(l.held_by_current());
    drop((r1, r2));
    let w = l.write().await;
    assert!(!l.can_read() && !l.can_lock());
    assert_eq!(l.holders()[0].mode, "write");
    drop(w);
    assert!(!l.is_locked() && l.can_lock() && l.can_read());

    let s = lockscope::tokio::Semaphore::named("status_sem", 2);
    let p = s.acquire_many(2).await.unwrap();
    assert!(s.is_locked() && !s.can_lock() && s.held_by_current());
    assert_eq!(s.holders()[0].permits, 2);
    drop(p);
    assert!(!s.is_locked() && s.can_lock());
    s.close();
    assert!(!s.can_lock(), "a closed semaphore grants nothing");
}

/// A thread holds `lock` (through `take`) until told; meanwhile `check` runs on this thread.
fn held_elsewhere<L: Send + Sync + 'static>(
    lock: Arc<L>,
    take: fn(&L, &Barrier, &Barrier),
    check: impl FnOnce(&L),
) {
    let taken = Arc::new(Barrier::new(2));
    let release = Arc::new(Barrier::new(2));
    let (l, t, r) = (lock.clone(), taken.clone(), release.clone());
    let holder = std::thread::Builder::new()
        .name("status-holder".into())
        .spawn(move || take(&l, &t, &r))
        .unwrap();
    taken.wait();
    check(&lock);
    release.wait();
    holder.join().unwrap();
}

#[test]
fn parking_lot_locks_held_by_another_thread() {
    let m = Arc::new(lockscope::parking_lot::Mutex::named("status_pl", ()));
    held_elsewhere(
        m.clone(),
        |m, taken, release| {
            let _g = m.lock();
            assert!(m.held_by_current());
            taken.wait();
            release.wait();
        },
        |m| {
            assert!(m.is_locked() && !m.can_lock() && !m.held_by_current());
            let holders = m.holders();
            assert_eq!(holders.len(), 1);
            assert!(
                holders[0].actor.contains("status-holder"),
                "{}",
                holders[0].actor
            );
            assert!(this_file(&holders[0].site), "{}", holders[0].site);
        },
    );
    assert!(!m.is_locked() && m.can_lock() && m.holders().is_empty());

    let r = Arc::new(lockscope::parking_lot::ReentrantMutex::named(
        "status_re",
        (),
    ));
    {
        let _a = r.lock();
        // The owner may enter again; the books hold its one outer hold (or more).
        assert!(r.can_lock() && r.held_by_current() && r.is_locked());
    }
    held_elsewhere(
        r.clone(),
        |r, taken, release| {
            let _g = r.lock();
            taken.wait();
            release.wait();
        },
        |r| assert!(!r.can_lock() && !r.held_by_current() && r.is_locked()),
    );

    let l = Arc::new(lockscope::parking_lot::RwLock::named("status_plrw", ()));
    held_elsewhere(
        l.clone(),
        |l, taken, release| {
            let _g = l.read();
            taken.wait();
            release.wait();
        },
        |l| {
            assert!(l.is_locked() && l.can_read() && !l.can_lock() && !l.held_by_current());
            assert_eq!(l.holders()[0].mode, "read");
        },
    );
}

#[test]
fn std_locks_held_by_another_thread() {
    let m = Arc::new(lockscope::std::sync::Mutex::named("status_std", ()));
    held_elsewhere(
        m.clone(),
        |m, taken, release| {
            let _g = m.lock().unwrap();
            taken.wait();
            release.wait();
        },
        |m| {
            assert!(m.is_locked() && !m.can_lock() && !m.held_by_current());
            assert_eq!(m.holders().len(), 1);
        },
    );
    assert!(!m.is_locked() && m.can_lock());

    let l = Arc::new(lockscope::std::sync::RwLock::named("status_stdrw", ()));
    held_elsewhere(
        l.clone(),
        |l, taken, release| {
            let _g = l.write().unwrap();
            taken.wait();
            release.wait();
        },
        |l| assert!(l.is_locked() && !l.can_read() && !l.can_lock()),
    );
    let _r = l.read().unwrap();
    assert!(l.is_locked() && l.can_read() && !l.can_lock() && l.held_by_current());
}

/// A task that holds a mutex resumes on another worker: it still holds it. The task's first
/// worker is kept busy by a task spawned onto it (tokio runs a task spawned from a worker on
/// that worker next, from a slot other workers do not steal), and the holder is woken from a
/// plain thread, so the other worker takes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_by_current_follows_a_task_that_moves_to_another_worker() {
    let m = Arc::new(lockscope::tokio::Mutex::named("status_moved", ()));
    let mut moved = 0;
    for _ in 0..20 {
        let m = m.clone();
        let (wake_tx, wake_rx) = tokio::sync::oneshot::channel::<()>();
        let (blocking_tx, blocking_rx) = std::sync::mpsc::channel::<()>();
        let (unblock_tx, unblock_rx) = std::sync::mpsc::channel::<()>();
        // The waker: once the first worker is blocked, wake the holder from outside.
        let waker = std::thread::spawn(move || {
            blocking_rx.recv().unwrap();
            wake_tx.send(()).unwrap();
        });
        let holder = tokio::spawn(async move {
            let _g = m.lock().await;
            let first = std::thread::current().id();
            tokio::spawn(async move {
                blocking_tx.send(()).unwrap();
                // Blocks this worker until the holder has looked (bounded, never a hang).
                let _ = unblock_rx.recv_timeout(std::time::Duration::from_secs(10));
            });
            wake_rx.await.unwrap();
            let now = std::thread::current().id();
            let held = m.held_by_current();
            unblock_tx.send(()).unwrap();
            (first != now, held)
        });
        let (did_move, held) = holder.await.unwrap();
        waker.join().unwrap();
        assert!(held, "the holder lost its hold (moved: {did_move})");
        moved += usize::from(did_move);
    }
    assert!(
        moved > 0,
        "the holder never moved to another worker: the test proved nothing"
    );
}
