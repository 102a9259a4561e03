//! `lockscope::parking_lot` behaves as parking_lot 0.12: every scenario here runs, as the same
//! source text, once against `parking_lot` and once against `lockscope::parking_lot` (the
//! `parity!` macro), and the Send/Sync matrix is checked for both at compile time.
//!
//! No sleeps: threads are ordered with channels and barriers; "a thread is parked on the lock"
//! is read from `/proc` (its state is `S`), never guessed from elapsed time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::{Duration, Instant};

#[macro_use]
mod support;
use support::{eventually, sleeping, tid};

/// Runs `$body` twice, with `$pl` naming `parking_lot` and then `lockscope::parking_lot`.
macro_rules! parity {
    ($($t:tt)*) => { parity_of!(parking_lot, lockscope::parking_lot; $($t)*); };
}

// ---------------------------------------------------------------------------------------------
// Mutex
// ---------------------------------------------------------------------------------------------

parity! {
    fn mutex_basics(pl) {
        static GLOBAL: pl::Mutex<u32> = pl::const_mutex(1);
        static NEW: pl::Mutex<u32> = pl::Mutex::new(2);
        *GLOBAL.lock() += 1;
        assert_eq!(*GLOBAL.lock() + *NEW.lock(), 4);

        let m = pl::Mutex::new(vec![1]);
        assert_eq!(format!("{m:?}"), "Mutex { data: [1] }");
        let g = m.lock();
        assert!(m.is_locked());
        assert!(m.try_lock().is_none());
        assert_eq!(format!("{m:?}"), "Mutex { data: <locked> }");
        assert_eq!(format!("{g:?}"), "[1]");
        drop(g);
        assert!(!m.is_locked());

        let mut m = m;
        m.get_mut().push(2);
        assert_eq!(m.into_inner(), vec![1, 2]);

        let d: pl::Mutex<String> = Default::default();
        assert!(d.lock().is_empty());
        let f: pl::Mutex<u8> = 7.into();
        assert_eq!(*f.lock(), 7);
        let unsized_: &pl::Mutex<[u8]> = &pl::Mutex::new([1u8, 2]);
        assert_eq!(unsized_.lock().len(), 2);
    }
}

parity! {
    fn mutex_guard_mapping_and_unlocking(pl) {
        let m = pl::Mutex::new((1, vec![2]));
        {
            let mut second = pl::MutexGuard::map(m.lock(), |t| &mut t.1);
            second.push(3);
            let first = pl::MappedMutexGuard::try_map(second, |v| v.get_mut(9));
            let second = first.unwrap_err();
            let x = pl::MappedMutexGuard::map(second, |v| &mut v[0]);
            assert_eq!(*x, 2);
            assert!(m.is_locked());
        }
        assert!(!m.is_locked());
        let g = pl::MutexGuard::try_map(m.lock(), |t| t.1.get_mut(7));
        let g = g.unwrap_err();
        let r = pl::MutexGuard::try_map_or_err(g, |t| t.1.get_mut(7).ok_or("none"));
        let (g, e) = r.err().unwrap();
        assert_eq!(e, "none");
        assert!(std::ptr::eq(pl::MutexGuard::mutex(&g), &m));
        let mut g = g;
        let seen = pl::MutexGuard::unlocked(&mut g, || m.try_lock().map(|g| g.0));
        assert_eq!(seen, Some(1));
        pl::MutexGuard::unlocked_fair(&mut g, || assert!(!m.is_locked()));
        pl::MutexGuard::bump(&mut g);
        g.0 += 1;
        pl::MutexGuard::unlock_fair(g);
        assert_eq!(m.lock().0, 2);

        let data = pl::MutexGuard::leak(m.lock());
        data.0 = 10;
        assert!(m.is_locked());
        // SAFETY: the guard was leaked just above and nothing else holds the lock.
        unsafe { m.force_unlock() };
        assert_eq!(m.lock().0, 10);
        pl::MutexGuard::leak(m.lock());
        // SAFETY: as above.
        let g = unsafe { m.make_guard_unchecked() };
        assert_eq!(g.0, 10);
        drop(g);
        assert!(!m.is_locked());
    }
}

parity! {
    fn mutex_unlocked_relocks_when_the_closure_panics(pl) {
        let m = pl::Mutex::new(0);
        let mut g = m.lock();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pl::MutexGuard::unlocked(&mut g, || panic!("inside unlocked"))
        }));
        assert!(r.is_err());
        assert!(m.is_locked(), "the guard holds the lock again after the panic");
        *g += 1;
        drop(g);
        assert_eq!(*m.lock(), 1);
        // A panic inside `map` unlocks, as a drop would.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _g = pl::MutexGuard::map(m.lock(), |_| -> &mut u8 { panic!("inside map") });
        }));
        assert!(r.is_err());
        assert!(!m.is_locked());
    }
}

parity! {
    fn mutex_timed_forms(pl) {
        let m = Arc::new(pl::Mutex::new(0));
        let (held_tx, held_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let m2 = m.clone();
        let holder = thread::spawn(move || {
            let _g = m2.lock();
            held_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        });
        held_rx.recv().unwrap();
        let timeout = Duration::from_millis(20);
        let start = Instant::now();
        assert!(m.try_lock_for(timeout).is_none());
        assert!(start.elapsed() >= timeout);
        assert!(m.try_lock_until(Instant::now() + timeout).is_none());
        assert!(m.try_lock_until(Instant::now()).is_none());
        release_tx.send(()).unwrap();
        holder.join().unwrap();
        assert!(m.try_lock_for(timeout).is_some());
        assert!(m.try_lock_until(Instant::now() + timeout).is_some());
    }
}

parity! {
    fn mutex_timed_wait_is_granted_when_released(pl) {
        let m = Arc::new(pl::Mutex::new(0));
        let g = m.lock();
        let (tx, rx) = mpsc::channel();
        let m2 = m.clone();
        let waiter = thread::spawn(move || {
            warm_up!(pl);
            tx.send(tid()).unwrap();
            *m2.try_lock_for(Duration::from_secs(30)).expect("granted before the deadline") += 1;
        });
        let t = rx.recv().unwrap();
        eventually("the timed waiter is parked", || sleeping(t));
        drop(g);
        waiter.join().unwrap();
        assert_eq!(*m.lock(), 1);
    }
}

parity! {
    /// `unlock_fair` hands the mutex to the parked waiter: it is never free in between, so
    /// the unlocking thread cannot take it back.
    fn unlock_fair_hands_off_to_the_parked_waiter(pl) {
        let m = Arc::new(pl::Mutex::new(Vec::<&str>::new()));
        let g = m.lock();
        let (tid_tx, tid_rx) = mpsc::channel();
        let (got_tx, got_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let m2 = m.clone();
        let waiter = thread::spawn(move || {
            warm_up!(pl);
            tid_tx.send(tid()).unwrap();
            let mut g = m2.lock();
            g.push("waiter");
            got_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        });
        let t = tid_rx.recv().unwrap();
        eventually("the waiter is parked on the mutex", || sleeping(t));
        pl::MutexGuard::unlock_fair(g);
        // Handed off: still locked, by the waiter, before it even ran.
        assert!(m.is_locked());
        assert!(m.try_lock().is_none());
        got_rx.recv().unwrap();
        release_tx.send(()).unwrap();
        waiter.join().unwrap();
        assert_eq!(*m.lock(), ["waiter"]);
    }
}

// ---------------------------------------------------------------------------------------------
// RwLock
// ---------------------------------------------------------------------------------------------

parity! {
    fn rwlock_basics(pl) {
        static R: pl::RwLock<u32> = pl::const_rwlock(1);
        static N: pl::RwLock<u32> = pl::RwLock::new(1);
        *R.write() += *N.read();
        assert_eq!(*R.read(), 2);

        let r = pl::RwLock::new(vec![1]);
        assert_eq!(format!("{r:?}"), "RwLock { data: [1] }");
        let a = r.read();
        let b = r.read();
        assert!(r.is_locked() && !r.is_locked_exclusive());
        assert!(r.try_write().is_none());
        assert!(r.try_read().is_some());
        drop((a, b));
        let w = r.write();
        assert!(r.is_locked_exclusive());
        assert!(r.try_read().is_none());
        assert!(r.try_read_recursive().is_none());
        assert!(r.try_upgradable_read().is_none());
        assert_eq!(format!("{r:?}"), "RwLock { data: <locked> }");
        drop(w);
        let mut r = r;
        r.get_mut().push(2);
        assert_eq!(r.into_inner(), [1, 2]);
        let d: pl::RwLock<u8> = Default::default();
        let f: pl::RwLock<u8> = 3.into();
        assert_eq!(*d.read() + *f.read(), 3);
    }
}

parity! {
    fn rwlock_guards(pl) {
        let r = pl::RwLock::new((1, vec![2]));
        {
            let first = pl::RwLockReadGuard::map(r.read(), |t| &t.0);
            assert_eq!(*first, 1);
            let again = pl::MappedRwLockReadGuard::map(first, |x| x);
            let back = pl::MappedRwLockReadGuard::try_map(again, |_| None::<&u8>).unwrap_err();
            let (_back, e) = pl::MappedRwLockReadGuard::try_map_or_else(back, |_| Err::<&u8, _>(5))
                .err()
                .unwrap();
            assert_eq!(e, 5);
        }
        let g = pl::RwLockReadGuard::try_map(r.read(), |t| t.1.get(3)).unwrap_err();
        let mut g = pl::RwLockReadGuard::try_map_or_err(g, |t| t.1.get(3).ok_or(()))
            .err()
            .unwrap()
            .0;
        assert!(std::ptr::eq(pl::RwLockReadGuard::rwlock(&g), &r));
        pl::RwLockReadGuard::unlocked(&mut g, || r.write().0 = 5);
        assert_eq!(g.0, 5);
        pl::RwLockReadGuard::unlocked_fair(&mut g, || assert!(!r.is_locked()));
        pl::RwLockReadGuard::bump(&mut g);
        pl::RwLockReadGuard::unlock_fair(g);

        let mut w = pl::RwLockWriteGuard::map(r.write(), |t| &mut t.1);
        w.push(3);
        let w = pl::MappedRwLockWriteGuard::try_map(w, |v| v.get_mut(9)).unwrap_err();
        let w = pl::MappedRwLockWriteGuard::try_map_or_err(w, |v| v.get_mut(9).ok_or(()))
            .err()
            .unwrap()
            .0;
        pl::MappedRwLockWriteGuard::unlock_fair(pl::MappedRwLockWriteGuard::map(w, |v| v));
        assert!(!r.is_locked());

        let w = pl::RwLockWriteGuard::try_map(r.write(), |t| t.1.get_mut(9)).unwrap_err();
        let mut w = pl::RwLockWriteGuard::try_map_or_err(w, |t| t.1.get_mut(9).ok_or(()))
            .err()
            .unwrap()
            .0;
        assert!(std::ptr::eq(pl::RwLockWriteGuard::rwlock(&w), &r));
        pl::RwLockWriteGuard::unlocked(&mut w, || assert_eq!(r.read().0, 5));
        pl::RwLockWriteGuard::unlocked_fair(&mut w, || assert!(!r.is_locked()));
        pl::RwLockWriteGuard::bump(&mut w);
        w.0 = 6;
        let rd = pl::RwLockWriteGuard::downgrade(w);
        assert!(r.try_read().is_some() && r.try_write().is_none());
        drop(rd);
        pl::RwLockWriteGuard::unlock_fair(r.write());
        assert!(!r.is_locked());
        std::mem::forget(r.read());
        // SAFETY: the read guard was forgotten just above.
        unsafe { r.force_unlock_read() };
        std::mem::forget(r.write());
        // SAFETY: as above, for the write guard.
        unsafe { r.force_unlock_write_fair() };
        assert!(!r.is_locked());
    }
}

parity! {
    fn upgradable_semantics(pl) {
        let r = pl::RwLock::new(1);
        let u = r.upgradable_read();
        // Shares with readers, excludes writers and a second upgradable reader.
        assert!(r.try_read().is_some());
        assert!(r.try_upgradable_read().is_none());
        assert!(r.try_write().is_none());
        // An upgrade waits for readers.
        let reader = r.read();
        let u = pl::RwLockUpgradableReadGuard::try_upgrade(u).unwrap_err();
        let u = pl::RwLockUpgradableReadGuard::try_upgrade_for(u, Duration::from_millis(5))
            .unwrap_err();
        let mut u = u;
        assert_eq!(u.try_with_upgraded(|v| *v), None);
        assert_eq!(u.try_with_upgraded_for(Duration::from_millis(5), |v| *v), None);
        drop(reader);
        let mut w = pl::RwLockUpgradableReadGuard::try_upgrade(u).unwrap();
        *w = 2;
        assert!(r.try_read().is_none());
        let u = pl::RwLockWriteGuard::downgrade_to_upgradable(w);
        assert!(r.try_read().is_some());
        assert!(r.try_upgradable_read().is_none());
        let rd = pl::RwLockUpgradableReadGuard::downgrade(u);
        assert!(r.try_upgradable_read().is_some());
        drop(rd);

        let mut u = r.upgradable_read();
        u.with_upgraded(|v| *v += 1);
        assert_eq!(*u, 3);
        assert!(r.try_read().is_some(), "back to upgradable after with_upgraded");
        assert_eq!(u.try_with_upgraded_until(Instant::now() + Duration::from_millis(5), |v| *v), Some(3));
        pl::RwLockUpgradableReadGuard::unlocked(&mut u, || *r.write() += 1);
        pl::RwLockUpgradableReadGuard::unlocked_fair(&mut u, || assert!(!r.is_locked()));
        pl::RwLockUpgradableReadGuard::bump(&mut u);
        assert!(std::ptr::eq(pl::RwLockUpgradableReadGuard::rwlock(&u), &r));
        let w = pl::RwLockUpgradableReadGuard::try_upgrade_until(u, Instant::now() + Duration::from_millis(5));
        let u = pl::RwLockWriteGuard::downgrade_to_upgradable(w.unwrap());
        let w = pl::RwLockUpgradableReadGuard::upgrade(u);
        assert_eq!(*w, 4);
        drop(w);
        pl::RwLockUpgradableReadGuard::unlock_fair(r.upgradable_read());
        assert!(!r.is_locked());
        // SAFETY: make_*_unchecked only after forgetting the matching guard.
        unsafe {
            std::mem::forget(r.upgradable_read());
            drop(r.make_upgradable_guard_unchecked());
            std::mem::forget(r.read());
            drop(r.make_read_guard_unchecked());
            std::mem::forget(r.write());
            drop(r.make_write_guard_unchecked());
        }
        assert!(!r.is_locked());
    }
}

parity! {
    /// `upgrade` blocks until the other readers leave, then holds the lock exclusively.
    fn upgrade_waits_for_readers(pl) {
        let r = Arc::new(pl::RwLock::new(0));
        let (tid_tx, tid_rx) = mpsc::channel();
        let reader = r.read();
        let r2 = r.clone();
        let upgrader = thread::spawn(move || {
            warm_up!(pl);
            let u = r2.upgradable_read();
            tid_tx.send(tid()).unwrap();
            let mut w = pl::RwLockUpgradableReadGuard::upgrade(u);
            *w += 1;
        });
        let t = tid_rx.recv().unwrap();
        eventually("the upgrade is parked behind the reader", || sleeping(t));
        assert_eq!(*reader, 0);
        drop(reader);
        upgrader.join().unwrap();
        assert_eq!(*r.read(), 1);
    }
}

parity! {
    /// Task-fair: a parked writer blocks new `read`s, not `read_recursive` while readers hold.
    fn read_recursive_passes_a_waiting_writer(pl) {
        let r = Arc::new(pl::RwLock::new(0));
        let first = r.read();
        let (tid_tx, tid_rx) = mpsc::channel();
        let r2 = r.clone();
        let writer = thread::spawn(move || {
            warm_up!(pl);
            tid_tx.send(tid()).unwrap();
            *r2.write() += 1;
        });
        let t = tid_rx.recv().unwrap();
        eventually("the writer is parked", || sleeping(t));
        assert!(r.try_read().is_none(), "a plain read waits behind the writer");
        let second = r.try_read_recursive().expect("a recursive read passes it");
        assert!(r.try_read_recursive_for(Duration::from_millis(1)).is_some());
        assert!(r.try_read_recursive_until(Instant::now()).is_some());
        assert_eq!(*r.read_recursive(), 0);
        drop((first, second));
        writer.join().unwrap();
        assert_eq!(*r.read(), 1);
    }
}

parity! {
    fn rwlock_timed_forms(pl) {
        let r = Arc::new(pl::RwLock::new(0));
        let (held_tx, held_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let r2 = r.clone();
        let holder = thread::spawn(move || {
            let _w = r2.write();
            held_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        });
        held_rx.recv().unwrap();
        let d = Duration::from_millis(10);
        assert!(r.try_read_for(d).is_none());
        assert!(r.try_read_until(Instant::now() + d).is_none());
        assert!(r.try_write_for(d).is_none());
        assert!(r.try_write_until(Instant::now() + d).is_none());
        assert!(r.try_upgradable_read_for(d).is_none());
        assert!(r.try_upgradable_read_until(Instant::now() + d).is_none());
        assert!(r.try_read_recursive_for(d).is_none());
        assert!(r.try_read_recursive_until(Instant::now() + d).is_none());
        release_tx.send(()).unwrap();
        holder.join().unwrap();
        assert!(r.try_read_for(d).is_some());
        assert!(r.try_write_for(d).is_some());
        assert!(r.try_upgradable_read_for(d).is_some());
        assert!(r.try_write_until(Instant::now() + d).is_some());
    }
}

// ---------------------------------------------------------------------------------------------
// ReentrantMutex
// ---------------------------------------------------------------------------------------------

parity! {
    fn reentrancy(pl) {
        static R: pl::ReentrantMutex<u8> = pl::const_reentrant_mutex(1);
        assert_eq!(*R.lock(), 1);
        let m = pl::ReentrantMutex::new(std::cell::Cell::new(0));
        assert_eq!(format!("{:?}", pl::ReentrantMutex::new(1)), "ReentrantMutex { data: 1 }");
        let a = m.lock();
        let b = m.lock();
        let c = m.try_lock().expect("re-entry never fails");
        let d = m.try_lock_for(Duration::from_millis(1)).expect("nor a timed one");
        c.set(c.get() + 1);
        assert!(m.is_owned_by_current_thread());
        thread::scope(|s| {
            s.spawn(|| {
                assert!(!m.is_owned_by_current_thread());
                assert!(m.try_lock().is_none());
                assert!(m.try_lock_for(Duration::from_millis(5)).is_none());
                assert!(m.try_lock_until(Instant::now()).is_none());
            });
        });
        drop((d, c, b));
        assert!(m.is_locked());
        // One level left: `unlocked` frees the mutex for other threads.
        let mut a = a;
        pl::ReentrantMutexGuard::unlocked(&mut a, || {
            thread::scope(|s| {
                s.spawn(|| m.lock().set(10));
            });
        });
        assert_eq!(a.get(), 10);
        let x = pl::ReentrantMutexGuard::map(m.lock(), |c| c);
        let x = pl::MappedReentrantMutexGuard::try_map(x, |_| None::<&u8>).unwrap_err();
        let x = pl::MappedReentrantMutexGuard::try_map_or_err(x, |_| Err::<&u8, _>(()))
            .err()
            .unwrap()
            .0;
        pl::MappedReentrantMutexGuard::unlock_fair(pl::MappedReentrantMutexGuard::map(x, |c| c));
        let y = pl::ReentrantMutexGuard::try_map(m.lock(), |_| None::<&u8>).unwrap_err();
        let mut y = pl::ReentrantMutexGuard::try_map_or_err(y, |_| Err::<&u8, _>(()))
            .err()
            .unwrap()
            .0;
        assert!(std::ptr::eq(pl::ReentrantMutexGuard::remutex(&y), &m));
        pl::ReentrantMutexGuard::bump(&mut y);
        pl::ReentrantMutexGuard::unlocked_fair(&mut y, || assert!(m.is_locked()));
        pl::ReentrantMutexGuard::unlock_fair(y);
        drop(a);
        assert!(!m.is_locked());
        let mut m = m;
        m.get_mut().set(3);
        assert_eq!(m.into_inner().get(), 3);
        let d: pl::ReentrantMutex<u8> = Default::default();
        let f: pl::ReentrantMutex<u8> = 2.into();
        assert_eq!(*d.lock() + *f.lock(), 2);
    }
}

// ---------------------------------------------------------------------------------------------
// Condvar
// ---------------------------------------------------------------------------------------------

parity! {
    /// A bounded one-slot queue: every item goes through, in order; a lost wake-up would hang
    /// a side, which the 10 s timed waits turn into a failure.
    fn condvar_producer_consumer_loses_no_wakeup(pl) {
        struct Slot {
            item: pl::Mutex<Option<u32>>,
            filled: pl::Condvar,
            emptied: pl::Condvar,
        }
        const N: u32 = 2000;
        let slot = Arc::new(Slot {
            item: pl::Mutex::new(None),
            filled: pl::Condvar::new(),
            emptied: pl::Condvar::default(),
        });
        let s = slot.clone();
        let producer = thread::spawn(move || {
            for i in 0..N {
                let mut g = s.item.lock();
                let r = s.emptied.wait_while_for(&mut g, |it| it.is_some(), Duration::from_secs(10));
                assert!(!r.timed_out(), "producer lost a wake-up at {i}");
                *g = Some(i);
                s.filled.notify_one();
            }
        });
        for i in 0..N {
            let mut g = slot.item.lock();
            let deadline = Instant::now() + Duration::from_secs(10);
            match i % 3 {
                0 => {
                    while g.is_none() {
                        assert!(!slot.filled.wait_until(&mut g, deadline).timed_out(), "lost at {i}");
                    }
                }
                1 => {
                    while g.is_none() {
                        assert!(!slot.filled.wait_for(&mut g, Duration::from_secs(10)).timed_out());
                    }
                }
                _ => {
                    let r = slot.filled.wait_while_until(&mut g, |it| it.is_none(), deadline);
                    assert!(!r.timed_out(), "lost at {i}");
                }
            }
            assert_eq!(g.take(), Some(i));
            slot.emptied.notify_one();
        }
        producer.join().unwrap();
        assert_eq!(format!("{:?}", slot.filled), "Condvar { .. }");
    }
}

parity! {
    /// `notify_all` wakes every waiter; `wait` and `wait_while` re-take the mutex.
    fn condvar_notify_all_wakes_every_waiter(pl) {
        const K: usize = 4;
        let state = Arc::new((pl::Mutex::new((0usize, false)), pl::Condvar::new()));
        let woken = Arc::new(AtomicUsize::new(0));
        let mut threads = Vec::new();
        for i in 0..K {
            let (state, woken) = (state.clone(), woken.clone());
            threads.push(thread::spawn(move || {
                let (m, cv) = &*state;
                let mut g = m.lock();
                g.0 += 1;
                if i % 2 == 0 {
                    while !g.1 {
                        cv.wait(&mut g);
                    }
                } else {
                    cv.wait_while(&mut g, |s| !s.1);
                }
                woken.fetch_add(1, Ordering::Relaxed);
            }));
        }
        let (m, cv) = &*state;
        eventually("every waiter waits", || {
            let mut g = m.lock();
            if g.0 == K {
                // Each waiter counted itself under the lock and released it only inside
                // `wait`: all K are queued on the condvar now.
                g.1 = true;
                assert_eq!(cv.notify_all(), K);
                true
            } else {
                false
            }
        });
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(woken.load(Ordering::Relaxed), K);
        assert!(!cv.notify_one());
        assert_eq!(cv.notify_all(), 0);
    }
}

parity! {
    fn condvar_timeouts(pl) {
        let (m, cv) = (pl::Mutex::new(0), pl::Condvar::new());
        let mut g = m.lock();
        let d = Duration::from_millis(5);
        let start = Instant::now();
        assert!(cv.wait_for(&mut g, d).timed_out());
        assert!(start.elapsed() >= d);
        assert!(cv.wait_until(&mut g, Instant::now() + d).timed_out());
        assert!(cv.wait_while_for(&mut g, |n| *n == 0, d).timed_out());
        assert!(!cv.wait_while_for(&mut g, |n| *n != 0, d).timed_out());
        assert!(cv.wait_while_until(&mut g, |n| *n == 0, Instant::now() + d).timed_out());
        *g += 1;
        drop(g);
        assert_eq!(*m.lock(), 1);
    }
}

parity! {
    /// Many threads, one mutex, plain counting: nothing lost, every form of acquisition.
    fn contended_counting(pl) {
        let m = Arc::new(pl::Mutex::new(0u64));
        let r = Arc::new(pl::RwLock::new(0u64));
        let barrier = Arc::new(Barrier::new(4));
        let threads: Vec<_> = (0..4)
            .map(|i| {
                let (m, r, barrier) = (m.clone(), r.clone(), barrier.clone());
                thread::spawn(move || {
                    barrier.wait();
                    for j in 0..2000u64 {
                        match (i + j) % 4 {
                            0 => *m.lock() += 1,
                            1 => loop {
                                if let Some(mut g) = m.try_lock() {
                                    *g += 1;
                                    break;
                                }
                            },
                            2 => *m.try_lock_for(Duration::from_secs(10)).unwrap() += 1,
                            _ => {
                                let mut g = m.lock();
                                pl::MutexGuard::bump(&mut g);
                                *g += 1;
                            }
                        }
                        if j % 2 == 0 {
                            *r.write() += 1;
                        } else {
                            let _ = *r.read();
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*m.lock(), 8000);
        assert_eq!(*r.read(), 4000);
    }
}

// ---------------------------------------------------------------------------------------------
// Send / Sync: the same matrix for parking_lot and lockscope::parking_lot (compile time)
// ---------------------------------------------------------------------------------------------

/// The matrix, for one implementation `$pl`. `SS`: Send + Sync data, `SN`: Send + !Sync,
/// `NS`: !Send + Sync, `NN`: neither.
macro_rules! send_sync_matrix {
    ($pl:path) => {{
        use $pl as pl;
        type SS = u32;
        type SN = std::cell::Cell<u32>;
        type NS = std::sync::MutexGuard<'static, u32>;
        type NN = std::rc::Rc<u32>;

        assert_traits!(pl::Mutex<SS>: Send, Sync);
        assert_traits!(pl::Mutex<SN>: Send, Sync);
        assert_traits!(pl::Mutex<NS>: !Send, !Sync);
        assert_traits!(pl::Mutex<NN>: !Send, !Sync);
        assert_traits!(pl::MutexGuard<'static, SS>: !Send, Sync);
        assert_traits!(pl::MutexGuard<'static, SN>: !Send, !Sync);
        assert_traits!(pl::MutexGuard<'static, NS>: !Send, Sync);
        assert_traits!(pl::MutexGuard<'static, NN>: !Send, !Sync);
        assert_traits!(pl::MappedMutexGuard<'static, SS>: !Send, Sync);
        assert_traits!(pl::MappedMutexGuard<'static, SN>: !Send, !Sync);
        assert_traits!(pl::MappedMutexGuard<'static, NS>: !Send, Sync);

        assert_traits!(pl::RwLock<SS>: Send, Sync);
        assert_traits!(pl::RwLock<SN>: Send, !Sync);
        assert_traits!(pl::RwLock<NS>: !Send, !Sync);
        assert_traits!(pl::RwLockReadGuard<'static, SS>: !Send, Sync);
        assert_traits!(pl::RwLockReadGuard<'static, SN>: !Send, !Sync);
        assert_traits!(pl::RwLockReadGuard<'static, NS>: !Send, Sync);
        assert_traits!(pl::RwLockWriteGuard<'static, SS>: !Send, Sync);
        assert_traits!(pl::RwLockWriteGuard<'static, NS>: !Send, Sync);
        assert_traits!(pl::RwLockUpgradableReadGuard<'static, SS>: !Send, Sync);
        assert_traits!(pl::RwLockUpgradableReadGuard<'static, SN>: !Send, !Sync);
        assert_traits!(pl::RwLockUpgradableReadGuard<'static, NS>: !Send, Sync);
        assert_traits!(pl::MappedRwLockReadGuard<'static, SS>: !Send, Sync);
        assert_traits!(pl::MappedRwLockReadGuard<'static, SN>: !Send, !Sync);
        assert_traits!(pl::MappedRwLockWriteGuard<'static, SS>: !Send, Sync);
        assert_traits!(pl::MappedRwLockWriteGuard<'static, NN>: !Send, !Sync);

        assert_traits!(pl::ReentrantMutex<SS>: Send, Sync);
        assert_traits!(pl::ReentrantMutex<SN>: Send, Sync);
        assert_traits!(pl::ReentrantMutex<NN>: !Send, !Sync);
        assert_traits!(pl::ReentrantMutexGuard<'static, SS>: !Send, Sync);
        assert_traits!(pl::ReentrantMutexGuard<'static, SN>: !Send, !Sync);
        assert_traits!(pl::ReentrantMutexGuard<'static, NS>: !Send, Sync);
        assert_traits!(pl::MappedReentrantMutexGuard<'static, SS>: !Send, Sync);
        assert_traits!(pl::MappedReentrantMutexGuard<'static, SN>: !Send, !Sync);

        assert_traits!(pl::Condvar: Send, Sync);
        assert_traits!(pl::WaitTimeoutResult: Send, Sync);
    }};
}

#[test]
fn send_sync_matrix_matches() {
    send_sync_matrix!(parking_lot);
    send_sync_matrix!(lockscope::parking_lot);
}

/// parking_lot's locks are `UnwindSafe` when their data is (and its mapped guards
/// `RefUnwindSafe`), so code moving one into `catch_unwind` compiles against it: the wrappers
/// must be too (checked at compile time, against parking_lot's own types side by side).
#[test]
fn unwind_safety_matches_parking_lot() {
    use std::panic::{RefUnwindSafe, UnwindSafe};
    fn unwind_safe<T: UnwindSafe>() {}
    fn ref_unwind_safe<T: RefUnwindSafe>() {}
    unwind_safe::<parking_lot::Mutex<i32>>();
    unwind_safe::<lockscope::parking_lot::Mutex<i32>>();
    unwind_safe::<parking_lot::RwLock<i32>>();
    unwind_safe::<lockscope::parking_lot::RwLock<i32>>();
    unwind_safe::<parking_lot::ReentrantMutex<i32>>();
    unwind_safe::<lockscope::parking_lot::ReentrantMutex<i32>>();
    ref_unwind_safe::<parking_lot::MappedMutexGuard<'static, i32>>();
    ref_unwind_safe::<lockscope::parking_lot::MappedMutexGuard<'static, i32>>();
    ref_unwind_safe::<parking_lot::MappedRwLockWriteGuard<'static, i32>>();
    ref_unwind_safe::<lockscope::parking_lot::MappedRwLockWriteGuard<'static, i32>>();
    unwind_safe::<parking_lot::MappedRwLockReadGuard<'static, i32>>();
    unwind_safe::<lockscope::parking_lot::MappedRwLockReadGuard<'static, i32>>();
    ref_unwind_safe::<lockscope::parking_lot::MappedRwLockReadGuard<'static, i32>>();

    let m = lockscope::parking_lot::Mutex::named("pl_unwind_safe", 5);
    assert!(std::panic::catch_unwind(move || *m.lock() == 5).unwrap());
}

/// The rest of parking_lot passes through, so a whole `use parking_lot::{..}` line swaps.
#[test]
fn the_rest_of_parking_lot_passes_through() {
    use lockscope::parking_lot::lock_api::RawMutex as _;
    use lockscope::parking_lot::{FairMutex, Once, RawMutex};
    let fair = FairMutex::new(1);
    *fair.lock() += 1;
    let once = Once::new();
    once.call_once(|| *fair.lock() += 1);
    assert_eq!(*fair.lock(), 3);
    let m = lockscope::parking_lot::Mutex::new(0);
    // SAFETY: nothing holds the mutex; the raw lock taken here is released at once.
    unsafe {
        assert!(m.raw().try_lock());
        m.raw().unlock();
    }
    let _init = <RawMutex as lockscope::parking_lot::lock_api::RawMutex>::INIT;
}
