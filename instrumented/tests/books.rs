//! The detector's books (`lockscope::detector::locks()` and `metrics()`) follow every way a
//! guard or permit can end: a panic while holding, a dropped acquire future, a guard moved to
//! another task or thread, `forget`, `add_permits`/`forget_permits`, mapped and downgraded
//! guards, split and merged permits; and the counters move exactly as the operations did.
//!
//! Tests run in parallel and share the detector: each one looks only at primitives with its
//! own names. No sleeps: waiters are polled by hand (`tokio_test`) or, on a paused
//! current-thread runtime, observed in the books with a bounded number of yields.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use lockscope::detector::{self, LockSnapshot, SeriesMetrics};
use lockscope::tokio::{
    MappedMutexGuard, Mutex, MutexGuard, OwnedMutexGuard, OwnedRwLockWriteGuard, RwLock,
    RwLockWriteGuard, Semaphore,
};
use tokio_test::task::spawn;
use tokio_test::{assert_pending, assert_ready, assert_ready_err, assert_ready_ok};

const MAX_READS: u64 = (u32::MAX >> 3) as u64;

/// The one live primitive named `name`.
fn snap(name: &str) -> LockSnapshot {
    let mut all: Vec<_> = detector::locks()
        .into_iter()
        .filter(|l| l.name == name)
        .collect();
    assert_eq!(
        all.len(),
        1,
        "exactly one live primitive named {name}: {all:#?}"
    );
    all.pop().unwrap()
}

/// `(holders, waiters, available, capacity)` of `name`.
fn books(name: &str) -> (usize, usize, u64, u64) {
    let l = snap(name);
    (l.holders.len(), l.waiters.len(), l.available, l.capacity)
}

/// Holders as `(mode, permits)`, sorted.
fn holds(name: &str) -> Vec<(&'static str, u32)> {
    let mut h: Vec<_> = snap(name)
        .holders
        .iter()
        .map(|h| (h.mode, h.permits))
        .collect();
    h.sort();
    h
}

/// The metrics series of `name`.
fn series(name: &str) -> SeriesMetrics {
    detector::metrics()
        .series
        .into_iter()
        .find(|s| &*s.lock == name)
        .unwrap_or_else(|| panic!("no series {name}"))
}

/// `(acquisitions, contended, try_failures, timeouts, cancelled)` of `name`.
fn counters(name: &str) -> [u64; 5] {
    let s = series(name);
    [
        s.acquisitions,
        s.contended,
        s.try_failures,
        s.timeouts,
        s.cancelled,
    ]
}

/// Yields (bounded) until the books of `name` satisfy `pred`.
async fn until(name: &str, pred: impl Fn(&LockSnapshot) -> bool) {
    for _ in 0..10_000 {
        if pred(&snap(name)) {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("{name} never got there: {:#?}", snap(name));
}

/// Yields (bounded) until `name` has `n` waiters in the books.
async fn until_waiters(name: &str, n: usize) {
    until(name, |l| l.waiters.len() == n).await;
}

fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Panics
// ---------------------------------------------------------------------------------------------

#[test]
fn a_panic_while_holding_releases_in_the_books() {
    let m = Mutex::named("books_panic_m", 0);
    let l = RwLock::named("books_panic_l", 0);
    let s = Semaphore::named("books_panic_s", 3);
    let r = catch_unwind(AssertUnwindSafe(|| {
        let _g = m.try_lock().unwrap();
        let _w = l.try_write().unwrap();
        let _p = s.try_acquire_many(2).unwrap();
        assert_eq!(books("books_panic_m"), (1, 0, 0, 1));
        assert_eq!(books("books_panic_l"), (1, 0, 0, MAX_READS));
        assert_eq!(books("books_panic_s"), (1, 0, 1, 3));
        panic!("boom while holding");
    }));
    assert!(r.is_err());
    assert_eq!(books("books_panic_m"), (0, 0, 1, 1));
    assert_eq!(books("books_panic_l"), (0, 0, MAX_READS, MAX_READS));
    assert_eq!(books("books_panic_s"), (0, 0, 3, 3));
    assert!(m.try_lock().is_ok() && l.try_write().is_ok());
    assert_eq!(s.available_permits(), 3);
}

#[test]
fn a_panic_inside_map_closures_releases_in_the_books() {
    let m = Mutex::named("books_panic_map_m", (1, 2));
    let l = RwLock::named("books_panic_map_l", (1, 2));
    assert!(
        catch_unwind(AssertUnwindSafe(|| {
            MutexGuard::map(m.try_lock().unwrap(), |_| -> &mut u8 { panic!("in map") })
        }))
        .is_err()
    );
    assert!(
        catch_unwind(AssertUnwindSafe(|| {
            let g = MutexGuard::map(m.try_lock().unwrap(), |t| &mut t.0);
            MappedMutexGuard::try_map(g, |_| -> Option<&mut u8> { panic!("in try_map") })
        }))
        .is_err()
    );
    assert!(
        catch_unwind(AssertUnwindSafe(|| {
            RwLockWriteGuard::downgrade_map(l.try_write().unwrap(), |_| -> &u8 {
                panic!("in downgrade_map")
            })
        }))
        .is_err()
    );
    assert_eq!(books("books_panic_map_m"), (0, 0, 1, 1));
    assert_eq!(books("books_panic_map_l"), (0, 0, MAX_READS, MAX_READS));
    assert!(m.try_lock().is_ok() && l.try_write().is_ok());
}

#[test]
fn a_panicking_task_releases_what_it_held() {
    let rt = paused_runtime();
    rt.block_on(async {
        let m = Arc::new(Mutex::named("books_panic_task_m", 0));
        let l = Arc::new(RwLock::named("books_panic_task_l", 0));
        let s = Arc::new(Semaphore::named("books_panic_task_s", 2));
        let (m2, l2, s2) = (m.clone(), l.clone(), s.clone());
        let (go, panic_now) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _g = m2.lock().await;
            let _r = l2.clone().read_owned().await;
            let _p = s2.acquire_owned().await.unwrap();
            panic_now.await.unwrap();
            panic!("task panics while holding");
        });
        until("books_panic_task_s", |l| l.holders.len() == 1).await;
        // A waiter queued behind the holder gets the lock once the holder unwinds.
        let waiter = {
            let m = m.clone();
            tokio::spawn(async move { *m.lock().await += 1 })
        };
        until_waiters("books_panic_task_m", 1).await;
        go.send(()).unwrap();
        assert!(task.await.unwrap_err().is_panic());
        waiter.await.unwrap();
        assert_eq!(books("books_panic_task_m"), (0, 0, 1, 1));
        assert_eq!(books("books_panic_task_l"), (0, 0, MAX_READS, MAX_READS));
        assert_eq!(books("books_panic_task_s"), (0, 0, 2, 2));
        assert_eq!(*m.lock().await, 1);
    });
}

// ---------------------------------------------------------------------------------------------
// Dropped acquire futures
// ---------------------------------------------------------------------------------------------

#[test]
fn a_dropped_acquire_future_leaves_no_ghost_waiter() {
    let m = Arc::new(Mutex::named("books_ghost_m", ()));
    let l = Arc::new(RwLock::named("books_ghost_l", ()));
    let s = Arc::new(Semaphore::named("books_ghost_s", 2));
    let g = m.try_lock().unwrap();
    let r = l.try_read().unwrap();
    let p = s.try_acquire_many(2).unwrap();
    {
        let mut a = spawn(m.lock());
        let mut b = spawn(m.clone().lock_owned());
        let mut c = spawn(l.write());
        let mut d = spawn(l.clone().write_owned());
        let mut e = spawn(s.acquire_many(2));
        let mut f = spawn(s.clone().acquire_owned());
        assert_pending!(a.poll());
        assert_pending!(b.poll());
        assert_pending!(c.poll());
        assert_pending!(d.poll());
        assert_pending!(e.poll());
        assert_pending!(f.poll());
        assert_eq!(books("books_ghost_m").1, 2);
        assert_eq!(books("books_ghost_l").1, 2);
        assert_eq!(books("books_ghost_s").1, 2);
        // Dropped here, while waiting.
    }
    assert_eq!(books("books_ghost_m"), (1, 0, 0, 1));
    assert_eq!(books("books_ghost_l"), (1, 0, MAX_READS - 1, MAX_READS));
    assert_eq!(books("books_ghost_s"), (1, 0, 0, 2));
    // A future dropped after it was handed the lock but before it saw it.
    let mut h = spawn(m.lock());
    assert_pending!(h.poll());
    drop(g);
    assert!(h.is_woken());
    drop(h);
    assert_eq!(books("books_ghost_m"), (0, 0, 1, 1));
    assert!(
        m.try_lock().is_ok(),
        "the lock handed to the dropped future came back"
    );
    drop((r, p));
    assert_eq!(books("books_ghost_l"), (0, 0, MAX_READS, MAX_READS));
    assert_eq!(books("books_ghost_s"), (0, 0, 2, 2));
    assert_eq!(s.available_permits(), 2);
    assert_eq!(
        counters("books_ghost_m")[4],
        3,
        "three cancelled lock futures"
    );
    assert_eq!(counters("books_ghost_l")[4], 2);
    assert_eq!(counters("books_ghost_s")[4], 2);
}

#[test]
fn close_removes_the_waiters_it_fails() {
    let s = Semaphore::named("books_close", 1);
    let p = s.try_acquire().unwrap();
    let mut w = spawn(s.acquire());
    assert_pending!(w.poll());
    assert_eq!(books("books_close").1, 1);
    s.close();
    let _ = assert_ready_err!(w.poll());
    let l = snap("books_close");
    assert!(l.closed);
    assert!(
        l.waiters.is_empty(),
        "a waiter failed by close is gone: {l:#?}"
    );
    assert_eq!(l.holders.len(), 1);
    drop(p);
    assert_eq!(books("books_close"), (0, 0, 1, 1));
    assert_eq!(
        counters("books_close")[4],
        0,
        "a closed wait is not a cancellation"
    );
}

// ---------------------------------------------------------------------------------------------
// Guards and permits on the move
// ---------------------------------------------------------------------------------------------

#[test]
fn a_guard_moved_to_another_task_clears_the_hold_where_it_is_dropped() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    rt.block_on(async {
        let m = Arc::new(Mutex::named("books_moved_m", 0));
        let l = Arc::new(RwLock::named("books_moved_l", 0));
        let s = Arc::new(Semaphore::named("books_moved_s", 4));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (m2, l2, s2) = (m.clone(), l.clone(), s.clone());
        let taker = tokio::spawn(async move {
            let g = m2.lock_owned().await;
            let w = l2.write_owned().await;
            let p = s2.acquire_many_owned(3).await.unwrap();
            tx.send((g, w, p)).ok().unwrap();
        });
        taker.await.unwrap();
        // The task that acquired them is gone; the holds are still there, marked owned.
        let snapshot = snap("books_moved_m");
        assert_eq!(snapshot.holders.len(), 1);
        assert!(snapshot.holders[0].owned);
        assert_eq!(books("books_moved_s"), (1, 0, 1, 4));
        let dropper = tokio::spawn(async move {
            let (mut g, w, mut p) = rx.await.unwrap();
            *g += 1;
            let part = p.split(2).unwrap();
            drop(g);
            drop(w);
            drop(part);
            assert_eq!(books("books_moved_s"), (1, 0, 3, 4));
            drop(p);
        });
        dropper.await.unwrap();
        assert_eq!(books("books_moved_m"), (0, 0, 1, 1));
        assert_eq!(books("books_moved_l"), (0, 0, MAX_READS, MAX_READS));
        assert_eq!(books("books_moved_s"), (0, 0, 4, 4));
    });
}

#[test]
fn a_borrowed_guard_dropped_on_another_thread_after_its_thread_ended() {
    let m = Mutex::named("books_thread_m", 0);
    let s = Semaphore::named("books_thread_s", 2);
    std::thread::scope(|scope| {
        // Acquire on one thread, which then exits.
        let (g, p) = scope
            .spawn(|| (m.blocking_lock(), s.blocking_acquire().unwrap()))
            .join()
            .unwrap();
        assert_eq!(
            books("books_thread_m"),
            (1, 0, 0, 1),
            "held after its thread ended"
        );
        assert_eq!(books("books_thread_s"), (1, 0, 1, 2));
        // Release on another.
        scope
            .spawn(move || {
                drop(g);
                drop(p);
            })
            .join()
            .unwrap();
    });
    assert_eq!(books("books_thread_m"), (0, 0, 1, 1));
    assert_eq!(books("books_thread_s"), (0, 0, 2, 2));
}

// ---------------------------------------------------------------------------------------------
// Permits: forget, add_permits, forget_permits, split, merge
// ---------------------------------------------------------------------------------------------

#[test]
fn forget_shows_as_forgotten_and_add_permits_pays_it_back() {
    let s = Arc::new(Semaphore::named("books_forget", 5));
    let p = s.try_acquire_many(2).unwrap();
    p.forget();
    let l = snap("books_forget");
    assert_eq!((l.forgotten, l.capacity, l.available), (2, 3, 3), "{l:#?}");
    assert!(
        l.holders.is_empty(),
        "a forgotten permit is not held: {l:#?}"
    );
    assert_eq!(s.available_permits(), 3);
    // Owned, and a split-off part.
    s.clone().try_acquire_owned().unwrap().forget();
    let mut q = s.try_acquire_many(2).unwrap();
    q.split(1).unwrap().forget();
    let l = snap("books_forget");
    assert_eq!((l.forgotten, l.capacity, l.available), (4, 1, 0), "{l:#?}");
    assert_eq!(holds("books_forget"), [("acquire", 1)]);
    drop(q);
    assert_eq!(s.available_permits(), 1);
    assert_eq!(books("books_forget"), (0, 0, 1, 1));
    // Paying back, in two instalments.
    s.add_permits(3);
    let l = snap("books_forget");
    assert_eq!((l.forgotten, l.capacity, l.available), (1, 4, 4), "{l:#?}");
    s.add_permits(1);
    let l = snap("books_forget");
    assert_eq!((l.forgotten, l.capacity, l.available), (0, 5, 5), "{l:#?}");
    assert_eq!(s.available_permits(), 5);
    // More than was forgotten: capacity grows, forgotten stays at 0.
    s.add_permits(2);
    let l = snap("books_forget");
    assert_eq!((l.forgotten, l.capacity, l.available), (0, 7, 7), "{l:#?}");
    assert_eq!(s.available_permits(), 7);
}

#[test]
fn add_permits_and_forget_permits_update_capacity() {
    let s = Semaphore::named("books_capacity", 2);
    s.add_permits(3);
    assert_eq!(books("books_capacity"), (0, 0, 5, 5));
    assert_eq!(s.forget_permits(4), 4);
    assert_eq!(books("books_capacity"), (0, 0, 1, 1));
    // Only available permits can be forgotten: held ones stay.
    s.add_permits(2);
    let p = s.try_acquire_many(2).unwrap();
    assert_eq!(s.forget_permits(10), 1);
    assert_eq!(books("books_capacity"), (1, 0, 0, 2));
    assert_eq!(s.available_permits(), 0);
    drop(p);
    assert_eq!(books("books_capacity"), (0, 0, 2, 2));
    assert_eq!(s.available_permits(), 2);
    assert_eq!(
        snap("books_capacity").forgotten,
        0,
        "forget_permits is not a leak"
    );
    // add_permits waking a waiter: the waiter becomes a holder.
    let p = s.try_acquire_many(2).unwrap();
    let mut w = spawn(s.acquire_many(3));
    assert_pending!(w.poll());
    s.add_permits(1);
    assert_pending!(w.poll());
    drop(p);
    let got = assert_ready_ok!(w.poll());
    assert_eq!(books("books_capacity"), (1, 0, 0, 3));
    drop(got);
    assert_eq!(books("books_capacity"), (0, 0, 3, 3));
}

#[test]
fn split_and_merge_keep_the_permits_per_holder() {
    let s = Arc::new(Semaphore::named("books_split", 6));
    let mut p = s.try_acquire_many(4).unwrap();
    let q = p.split(1).unwrap();
    assert_eq!(holds("books_split"), [("acquire", 1), ("acquire", 3)]);
    assert_eq!(books("books_split"), (2, 0, 2, 6));
    assert!(p.split(9).is_none());
    assert_eq!(holds("books_split"), [("acquire", 1), ("acquire", 3)]);
    p.merge(q);
    assert_eq!(holds("books_split"), [("acquire", 4)]);
    let r = s.try_acquire().unwrap();
    p.merge(r);
    assert_eq!(holds("books_split"), [("acquire", 5)]);
    assert_eq!(books("books_split"), (1, 0, 1, 6));
    let zero = p.split(0).unwrap();
    assert_eq!(zero.num_permits(), 0);
    drop(zero);
    assert_eq!(books("books_split"), (1, 0, 1, 6));
    drop(p);
    assert_eq!(books("books_split"), (0, 0, 6, 6));
    // Owned permits.
    let mut o = s.clone().try_acquire_many_owned(3).unwrap();
    let o2 = o.split(2).unwrap();
    assert_eq!(holds("books_split"), [("acquire", 1), ("acquire", 2)]);
    o.merge(o2);
    assert_eq!(holds("books_split"), [("acquire", 3)]);
    drop(o);
    assert_eq!(books("books_split"), (0, 0, 6, 6));
}

// ---------------------------------------------------------------------------------------------
// Mapped and downgraded guards
// ---------------------------------------------------------------------------------------------

#[test]
fn mapped_mutex_guards_keep_the_hold() {
    let m = Arc::new(Mutex::named("books_map_m", (1u8, vec![2u8])));
    let g = MutexGuard::map(m.try_lock().unwrap(), |t| &mut t.1);
    assert_eq!(holds("books_map_m"), [("lock", 1)]);
    let g = MappedMutexGuard::map(g, |v| &mut v[0]);
    let g = MappedMutexGuard::try_map(g, |_| None::<&mut ()>).unwrap_err();
    assert_eq!(holds("books_map_m"), [("lock", 1)]);
    assert!(m.try_lock().is_err());
    drop(g);
    assert_eq!(books("books_map_m"), (0, 0, 1, 1));
    let og = OwnedMutexGuard::map(m.clone().try_lock_owned().unwrap(), |t| &mut t.0);
    let snapshot = snap("books_map_m");
    assert_eq!(snapshot.holders.len(), 1);
    assert!(snapshot.holders[0].owned);
    drop(og);
    assert_eq!(books("books_map_m"), (0, 0, 1, 1));
}

#[test]
fn mapped_and_downgraded_rwlock_guards_keep_mode_and_permits() {
    let l = Arc::new(RwLock::named("books_rw", (1u8, 2u8)));
    let w = l.try_write().unwrap();
    let write_mode = snap("books_rw").holders[0].mode;
    assert_eq!(write_mode, "write", "an rwlock write shows as a write");
    assert_eq!(holds("books_rw"), [(write_mode, MAX_READS as u32)]);
    assert_eq!(books("books_rw"), (1, 0, 0, MAX_READS));
    let w = RwLockWriteGuard::try_downgrade_map(w, |_| None::<&u8>).unwrap_err();
    assert_eq!(
        holds("books_rw"),
        [(write_mode, MAX_READS as u32)],
        "still a write"
    );
    let mapped = RwLockWriteGuard::map(w, |t| &mut t.0);
    assert_eq!(holds("books_rw"), [(write_mode, MAX_READS as u32)]);
    drop(mapped);
    assert_eq!(books("books_rw"), (0, 0, MAX_READS, MAX_READS));

    let r = l.try_write().unwrap().downgrade();
    assert_eq!(holds("books_rw"), [("read", 1)]);
    assert_eq!(books("books_rw"), (1, 0, MAX_READS - 1, MAX_READS));
    let r2 = l.try_read().unwrap();
    assert_eq!(holds("books_rw"), [("read", 1), ("read", 1)]);
    drop((r, r2));
    let r = RwLockWriteGuard::downgrade_map(l.try_write().unwrap(), |t| &t.1);
    assert_eq!(holds("books_rw"), [("read", 1)]);
    drop(r);
    let into = RwLockWriteGuard::into_mapped(l.try_write().unwrap());
    assert_eq!(holds("books_rw"), [(write_mode, MAX_READS as u32)]);
    drop(into);

    // Owned forms.
    let ow = l.clone().try_write_owned().unwrap();
    let or = OwnedRwLockWriteGuard::downgrade_map(ow, |t| &t.0);
    assert_eq!(holds("books_rw"), [("read", 1)]);
    assert!(snap("books_rw").holders[0].owned);
    drop(or);
    let ow = l.clone().try_write_owned().unwrap();
    let om = OwnedRwLockWriteGuard::into_mapped(ow);
    assert_eq!(holds("books_rw"), [(write_mode, MAX_READS as u32)]);
    drop(om);
    assert_eq!(books("books_rw"), (0, 0, MAX_READS, MAX_READS));
}

#[test]
fn a_downgrade_lets_queued_readers_in_and_the_books_show_them() {
    let l = RwLock::named("books_rw_queue", 0);
    let w = l.try_write().unwrap();
    let mut r1 = spawn(l.read());
    let mut w2 = spawn(l.write());
    assert_pending!(r1.poll());
    assert_pending!(w2.poll());
    assert_eq!(books("books_rw_queue").1, 2);
    let r = w.downgrade();
    let g1 = assert_ready!(r1.poll());
    assert_pending!(w2.poll());
    let s = snap("books_rw_queue");
    assert_eq!(s.holders.len(), 2);
    assert_eq!(s.waiters.len(), 1);
    assert_eq!(s.available, MAX_READS - 2);
    drop((r, g1));
    let g2 = assert_ready!(w2.poll());
    assert_eq!(books("books_rw_queue"), (1, 0, 0, MAX_READS));
    drop(g2);
    assert_eq!(books("books_rw_queue"), (0, 0, MAX_READS, MAX_READS));
}

// ---------------------------------------------------------------------------------------------
// Counters
// ---------------------------------------------------------------------------------------------

#[test]
fn counters_move_exactly_as_the_operations_did() {
    const NAME: &str = "books_counters";
    let rt = paused_runtime();
    rt.block_on(async {
        let m = Arc::new(Mutex::named(NAME, 0));
        // [acquisitions, contended, try_failures, timeouts, cancelled]
        assert_eq!(counters(NAME), [0, 0, 0, 0, 0]);

        // Two uncontended acquisitions.
        drop(m.lock().await);
        drop(m.try_lock().unwrap());
        assert_eq!(counters(NAME), [2, 0, 0, 0, 0]);

        let g = m.clone().lock_owned().await;
        assert_eq!(counters(NAME)[0], 3, "a live hold counts as an acquisition");
        assert_eq!(series(NAME).holders, 1);
        // Two failed tries.
        assert!(m.try_lock().is_err());
        assert!(m.clone().try_lock_owned().is_err());
        assert_eq!(counters(NAME), [3, 0, 2, 0, 0]);
        // A timed form that gives up (in another task: the holder waiting on its own lock
        // would be a nested acquire).
        let m2 = m.clone();
        let gave_up =
            tokio::spawn(async move { m2.lock_timeout(Duration::from_millis(10)).await.is_err() });
        assert!(gave_up.await.unwrap());
        assert_eq!(counters(NAME), [3, 0, 2, 1, 0]);
        // A waiter that is cancelled, and a timed waiter whose future is dropped.
        let waiter = {
            let m = m.clone();
            tokio::spawn(async move { drop(m.lock().await) })
        };
        until_waiters(NAME, 1).await;
        assert_eq!(series(NAME).waiters, 1);
        waiter.abort();
        assert!(waiter.await.unwrap_err().is_cancelled());
        let timed = {
            let m = m.clone();
            tokio::spawn(async move { drop(m.lock_timeout(Duration::from_secs(60)).await) })
        };
        until_waiters(NAME, 1).await;
        timed.abort();
        assert!(timed.await.unwrap_err().is_cancelled());
        assert_eq!(counters(NAME), [3, 0, 2, 1, 2]);
        assert_eq!(series(NAME).waiters, 0);
        // A contended acquisition that gets in, and a timed one that gets in after waiting.
        let waiter = {
            let m = m.clone();
            tokio::spawn(async move { *m.lock().await += 1 })
        };
        until_waiters(NAME, 1).await;
        drop(g);
        waiter.await.unwrap();
        assert_eq!(counters(NAME), [4, 1, 2, 1, 2]);
        let g = m.lock().await;
        let timed = {
            let m = m.clone();
            tokio::spawn(async move { m.lock_timeout(Duration::from_secs(60)).await.is_ok() })
        };
        until_waiters(NAME, 1).await;
        drop(g);
        assert!(timed.await.unwrap());
        assert_eq!(counters(NAME), [6, 2, 2, 1, 2]);
        let s = series(NAME);
        assert_eq!((s.holders, s.waiters), (0, 0));
        assert_eq!(
            s.wait.count(),
            2,
            "one wait sample per contended acquisition"
        );
        assert_eq!(s.hold.count(), 6, "one hold sample per release");
    });
}

#[test]
fn semaphore_and_rwlock_counters() {
    let rt = paused_runtime();
    rt.block_on(async {
        let s = Arc::new(Semaphore::named("books_counters_s", 2));
        let l = Arc::new(RwLock::named("books_counters_l", 0));
        let p = s.acquire_many(2).await.unwrap();
        assert!(s.try_acquire().is_err());
        assert!(s.clone().try_acquire_many_owned(1).is_err());
        // Waits happen in other tasks: the holder waiting would be a nested acquire.
        let s2 = s.clone();
        let gave_up = tokio::spawn(async move {
            s2.acquire_timeout(Duration::from_millis(1)).await.is_err()
                && s2
                    .clone()
                    .acquire_many_owned_timeout(2, Duration::from_millis(1))
                    .await
                    .is_err()
        });
        assert!(gave_up.await.unwrap());
        let cancelled = {
            let s = s.clone();
            tokio::spawn(async move { drop(s.acquire().await) })
        };
        until_waiters("books_counters_s", 1).await;
        cancelled.abort();
        assert!(cancelled.await.unwrap_err().is_cancelled());
        let waiter = {
            let s = s.clone();
            tokio::spawn(async move { drop(s.acquire_many(2).await.unwrap()) })
        };
        until_waiters("books_counters_s", 1).await;
        drop(p);
        waiter.await.unwrap();
        // [acquisitions, contended, try_failures, timeouts, cancelled]
        assert_eq!(counters("books_counters_s"), [2, 1, 2, 2, 1]);

        let r = l.read().await;
        let r2 = l.clone().read_owned().await;
        assert!(l.try_write().is_err());
        let l2 = l.clone();
        let gave_up =
            tokio::spawn(async move { l2.write_timeout(Duration::from_millis(1)).await.is_err() });
        assert!(gave_up.await.unwrap());
        let writer = {
            let l = l.clone();
            tokio::spawn(async move { *l.write().await += 1 })
        };
        until_waiters("books_counters_l", 1).await;
        assert!(
            l.try_read().is_err(),
            "write-preferring: no read past a queued writer"
        );
        drop((r, r2));
        writer.await.unwrap();
        assert_eq!(counters("books_counters_l"), [3, 1, 2, 1, 0]);
    });
}

/// A split permit is one acquisition: splitting it must not count a second one (nor a second
/// hold-time sample) in `lockscope_acquisitions_total`. Regression test: found failing
/// (acquisitions = 2), fixed in 6b02557 ("a permit split off another is not an acquisition of
/// its own").
#[test]
fn a_split_permit_counts_as_one_acquisition() {
    const NAME: &str = "books_split_count";
    let s = Semaphore::named(NAME, 3);
    let mut p = s.try_acquire_many(3).unwrap();
    let q = p.split(1).unwrap();
    drop(q);
    drop(p);
    let s = series(NAME);
    assert_eq!(
        s.acquisitions, 1,
        "one try_acquire_many, split in two: {s:?}"
    );
    assert_eq!(s.hold.count(), 1, "one hold sample: {s:?}");
}

// ---------------------------------------------------------------------------------------------
// Attribution
// ---------------------------------------------------------------------------------------------

#[test]
fn holders_and_waiters_are_attributed_to_their_task_or_thread_and_site() {
    const NAME: &str = "books_attribution";
    let rt = paused_runtime();
    rt.block_on(async {
        let m = Arc::new(Mutex::named(NAME, ()));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (go, release) = tokio::sync::oneshot::channel::<()>();
        let m2 = m.clone();
        let holder = tokio::spawn(async move {
            let line = line!() + 1;
            let g = m2.lock().await;
            tx.send((tokio::task::id(), line)).unwrap();
            release.await.unwrap();
            drop(g);
        });
        let (holder_id, holder_line) = rx.await.unwrap();
        let m3 = m.clone();
        let waiter_line = line!() + 1;
        let waiter = tokio::spawn(async move { drop(m3.lock().await) });
        until_waiters(NAME, 1).await;
        let l = snap(NAME);
        assert_eq!(l.holders.len(), 1);
        assert_eq!(l.holders[0].actor, format!("task {holder_id}"), "{l:#?}");
        let holder_site = format!("{}:{holder_line}:", file!());
        assert!(l.holders[0].site.starts_with(&holder_site), "{l:#?}");
        assert_eq!(
            l.waiters[0].actor,
            format!("task {}", waiter.id()),
            "{l:#?}"
        );
        let waiter_site = format!("{}:{waiter_line}:", file!());
        assert!(l.waiters[0].site.starts_with(&waiter_site), "{l:#?}");
        assert_eq!((l.waiters[0].mode, l.waiters[0].permits), ("lock", 1));
        go.send(()).unwrap();
        holder.await.unwrap();
        waiter.await.unwrap();
        assert_eq!(books(NAME), (0, 0, 1, 1));
    });
    // A plain thread, by name.
    let m = Mutex::named("books_attribution_thread", ());
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("books-attr".into())
            .spawn_scoped(scope, || {
                let _g = m.blocking_lock();
                let l = snap("books_attribution_thread");
                assert!(
                    l.holders[0].actor.starts_with("thread 'books-attr'"),
                    "{l:#?}"
                );
            })
            .unwrap()
            .join()
            .unwrap();
    });
}

/// Waits (bounded, 10 s) on this thread until the books of `name` satisfy `pred`.
fn until_blocking(name: &str, pred: impl Fn(&LockSnapshot) -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !pred(&snap(name)) {
        assert!(
            std::time::Instant::now() < deadline,
            "{name} never got there: {:#?}",
            snap(name)
        );
        std::thread::yield_now();
    }
}

#[test]
fn blocking_waiters_are_in_the_books_until_granted() {
    const NAME: &str = "books_blocking";
    let m = Mutex::named(NAME, 0);
    let s = Semaphore::named("books_blocking_s", 1);
    let g = m.try_lock().unwrap();
    let p = s.try_acquire().unwrap();
    std::thread::scope(|scope| {
        let t = scope.spawn(|| {
            *m.blocking_lock() += 1;
            drop(s.blocking_acquire().unwrap());
        });
        until_blocking(NAME, |l| l.waiters.len() == 1);
        let w = &snap(NAME).waiters[0];
        assert!(w.actor.starts_with("thread"), "{w:#?}");
        drop(g);
        until_blocking("books_blocking_s", |l| l.waiters.len() == 1);
        drop(p);
        t.join().unwrap();
    });
    assert_eq!(books(NAME), (0, 0, 1, 1));
    assert_eq!(books("books_blocking_s"), (0, 0, 1, 1));
    // [acquisitions, contended, try_failures, timeouts, cancelled]
    assert_eq!(counters(NAME), [2, 1, 0, 0, 0]);
    assert_eq!(counters("books_blocking_s"), [2, 1, 0, 0, 0]);
}

#[test]
fn a_timeout_error_names_the_holder() {
    let rt = paused_runtime();
    rt.block_on(async {
        let m = Arc::new(Mutex::named("books_timeout_holder", ()));
        let line = line!() + 1;
        let g = m.clone().lock_owned().await;
        let m2 = m.clone();
        let err =
            tokio::spawn(async move { m2.lock_timeout(Duration::from_millis(20)).await.err() })
                .await
                .unwrap()
                .expect("timed out");
        assert_eq!(err.lock(), "books_timeout_holder");
        assert_eq!(err.holders().len(), 1, "{err}");
        let (_who, site, _for) = &err.holders()[0];
        assert!(site.starts_with(&format!("{}:{line}:", file!())), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("\"books_timeout_holder\"") && text.contains(site.as_str()),
            "{text}"
        );
        drop(g);
    });
}

// ---------------------------------------------------------------------------------------------
// Short holds are tallied per thread; the counts must stay exact
// ---------------------------------------------------------------------------------------------

/// Short holds are counted on each thread's table rather than on the primitive (see
/// `held::tally_in`), with a fixed number of slots per thread and no eviction: the counts must
/// stay exact across threads, with more primitives than slots (the rest go to the primitive's
/// own histogram), and when a primitive is dropped (its tallies move to the retired series).
#[test]
fn short_holds_are_counted_exactly_across_threads_slot_collisions_and_drops() {
    const PRIMS: usize = 40; // more than a thread's tally slots
    const ROUNDS: u64 = 50;
    let names: Vec<String> = (0..PRIMS).map(|i| format!("books_tally_{i}")).collect();
    let sems: Arc<Vec<Semaphore>> =
        Arc::new(names.iter().map(|n| Semaphore::named(n, 4)).collect());
    let locks: Arc<Vec<parking_lot_free::Lock>> = Arc::new(
        names
            .iter()
            .map(|n| parking_lot_free::Lock::named(&format!("{n}_rw")))
            .collect(),
    );
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let (sems, locks) = (sems.clone(), locks.clone());
            std::thread::spawn(move || {
                for _ in 0..ROUNDS {
                    for (s, l) in sems.iter().zip(locks.iter()) {
                        drop(s.try_acquire().unwrap());
                        l.read_once();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let want = 3 * ROUNDS;
    for n in &names {
        assert_eq!(series(n).acquisitions, want, "{n}");
        assert_eq!(
            series(n).hold.count(),
            want,
            "{n}: every hold observed once"
        );
        assert_eq!(series(&format!("{n}_rw")).acquisitions, want, "{n}_rw");
    }
    // Dropped: the tallies move into the retired statistics of the series, exactly.
    drop(sems);
    drop(locks);
    for n in &names {
        // (`acquisitions` is clamped never to go back; the histogram count is not.)
        assert_eq!(series(n).acquisitions, want, "{n} after drop");
        assert_eq!(series(n).hold.count(), want, "{n} after drop");
        assert_eq!(
            series(&format!("{n}_rw")).acquisitions,
            want,
            "{n}_rw after drop"
        );
    }
    // And a new primitive of the same name starts from there, not from a stale tally.
    let again = Semaphore::named(&names[0], 1);
    drop(again.try_acquire().unwrap());
    assert_eq!(series(&names[0]).acquisitions, want + 1);
}

/// A blocking-free shared lock for the tally test: a tokio RwLock read taken with
/// `try_read` from plain threads.
mod parking_lot_free {
    pub struct Lock(lockscope::tokio::RwLock<()>);

    impl Lock {
        pub fn named(name: &str) -> Lock {
            Lock(lockscope::tokio::RwLock::named(name, ()))
        }

        pub fn read_once(&self) {
            drop(self.0.try_read().unwrap());
        }
    }
}

/// A task holding more locks at once than its slot in the task index has room for: the holds
/// past the room go unindexed, and `lockscope_detector_dropped_total{what="events"}` says so
/// (a nested-acquire check asking the index about that task may miss them).
#[tokio::test(flavor = "current_thread")]
async fn unindexed_task_holds_are_counted_as_dropped_events() {
    fn events() -> u64 {
        detector::dropped_counts()
            .into_iter()
            .find(|(what, _)| *what == "events")
            .map(|(_, n)| n)
            .expect("an events count")
    }
    let before = events();
    let locks: Vec<Mutex<()>> = (0..12)
        .map(|i| Mutex::named(format!("books/unindexed/{i}"), ()))
        .collect();
    let task = tokio::spawn(async move {
        let mut guards = Vec::new();
        for m in &locks {
            guards.push(m.lock().await);
        }
        drop(guards);
    });
    task.await.unwrap();
    assert!(
        events() > before,
        "12 holds at once by one task: some went unindexed (before {before}, now {})",
        events()
    );
}

// ---------------------------------------------------------------------------------------------
// Wait slots
// ---------------------------------------------------------------------------------------------

/// The waits of tasks that hold nothing take slots of their thread's table (64 per thread),
/// and past those they queue: either way the books show each waiter once, with its own task;
/// a waiter whose task is aborted leaves no ghost; and they all drain.
#[test]
fn many_task_waiters_are_in_the_books_once_and_drain() {
    const N: usize = 100;
    paused_runtime().block_on(async {
        const NAME: &str = "books_slots_m";
        let m = Arc::new(Mutex::named(NAME, 0u64));
        let g = m.lock().await;
        let hs: Vec<_> = (0..N)
            .map(|_| {
                let m = m.clone();
                tokio::spawn(async move { *m.lock().await += 1 })
            })
            .collect();
        until_waiters(NAME, N).await;
        assert_eq!(series(NAME).waiters, N as u64);
        let in_slots = detector::__private::held::waits_by_prim()
            .get(&snap(NAME).id)
            .map_or(0, Vec::len);
        assert_eq!(
            in_slots,
            detector::__private::held::WAITS,
            "the slots full, the rest queued"
        );
        let mut tasks: Vec<u64> = snap(NAME).waiters.iter().map(|w| w.actor_id).collect();
        tasks.sort_unstable();
        tasks.dedup();
        assert_eq!(tasks.len(), N, "each waiter once, with its own task");
        hs[0].abort();
        until_waiters(NAME, N - 1).await;
        assert_eq!(series(NAME).waiters, (N - 1) as u64);
        drop(g);
        for h in hs.into_iter().skip(1) {
            h.await.unwrap();
        }
        assert_eq!(*m.lock().await, (N - 1) as u64);
        assert_eq!(books(NAME), (0, 0, 1, 1));
        assert_eq!(series(NAME).waiters, 0);
        assert_eq!(
            counters(NAME)[1],
            (N - 1) as u64,
            "every grant after a wait counted"
        );
        assert_eq!(
            counters(NAME)[4],
            1,
            "the aborted wait counted as cancelled"
        );
    });
}

/// The first wait for more than one permit turns a semaphore mixed, and is queued itself: a
/// later wait that is queued anyway (its task holds something) is listed after it, as tokio
/// serves them, even though the slots' waits are listed after the queue's.
#[test]
fn the_first_wait_for_many_keeps_its_place_before_later_queued_waits() {
    paused_runtime().block_on(async {
        const NAME: &str = "books_first_many_s";
        let s = Arc::new(Semaphore::named(NAME, 3));
        let m = Arc::new(Mutex::named("books_first_many_m", ()));
        let two = s.clone().acquire_many_owned(2).await.unwrap();
        let many = {
            let s = s.clone();
            tokio::spawn(async move { drop(s.acquire_many(3).await.unwrap()) })
        };
        until_waiters(NAME, 1).await;
        // One permit is free, but tokio's FIFO queues this wait behind the one for three.
        let holder = {
            let (s, m) = (s.clone(), m.clone());
            tokio::spawn(async move {
                let _g = m.lock().await;
                drop(s.acquire().await.unwrap());
            })
        };
        until_waiters(NAME, 2).await;
        let permits: Vec<u32> = snap(NAME).waiters.iter().map(|w| w.permits).collect();
        assert_eq!(permits, [3, 1], "tokio's order: {:#?}", snap(NAME));
        drop(two);
        many.await.unwrap();
        holder.await.unwrap();
        assert_eq!(books(NAME), (0, 0, 3, 3));
    });
}

/// A semaphore's one-permit waits take slots until a wait asks for more; from then on its
/// waits queue, so that the books keep their FIFO order where it matters (a large
/// `acquire_many` blocks the small ones behind it). The books show them all.
#[test]
fn a_semaphore_with_mixed_waits_keeps_them_all_in_the_books() {
    paused_runtime().block_on(async {
        const NAME: &str = "books_slots_s";
        let s = Arc::new(Semaphore::named(NAME, 3));
        let all = s.clone().acquire_many_owned(3).await.unwrap();
        let wait = |n: u32| {
            let s = s.clone();
            tokio::spawn(async move { drop(s.acquire_many(n).await.unwrap()) })
        };
        let one = wait(1);
        until_waiters(NAME, 1).await;
        let three = wait(3);
        until_waiters(NAME, 2).await;
        let after = wait(1);
        until_waiters(NAME, 3).await;
        let l = snap(NAME);
        let permits: Vec<u32> = l.waiters.iter().map(|w| w.permits).collect();
        assert_eq!(permits, [1, 3, 1], "queue order kept once mixed: {l:#?}");
        drop(all);
        for h in [one, three, after] {
            h.await.unwrap();
        }
        assert_eq!(books(NAME), (0, 0, 3, 3));
    });
}
