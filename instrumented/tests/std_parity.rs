//! `lockscope::std::sync` behaves as `std::sync`: every scenario here runs, as the same source
//! text, once against `std::sync` and once against `lockscope::std::sync` (the `parity!`
//! macro): poisoning after a panic, `try_` errors, rwlock exclusion, condvar wake-ups and
//! timeouts, `Debug` output. The Send/Sync/UnwindSafe matrix is checked for both at compile
//! time.
//!
//! No sleeps: threads are ordered with channels and barriers; "a thread is parked on the lock"
//! is read from `/proc` (its state is `S`), never guessed from elapsed time. The only clock
//! waits are the condvar timeouts under test (a few milliseconds).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::{Duration, Instant};

#[macro_use]
mod support;
use support::spawn_parked;

/// Runs `$body` twice, with `$ss` naming `std::sync` and then `lockscope::std::sync`.
macro_rules! parity {
    ($($t:tt)*) => { parity_of!(std::sync, lockscope::std::sync; $($t)*); };
}

/// Panics on another thread while it holds a guard taken by `hold` (poisoning the lock when
/// the guard poisons); the panic message is silenced by `catch_unwind`'s join.
fn panic_while_holding<L: Send + Sync + 'static>(lock: &Arc<L>, hold: fn(&L)) {
    let l = lock.clone();
    let r = thread::spawn(move || hold(&l)).join();
    assert!(r.is_err(), "the holder panicked");
}

// ---------------------------------------------------------------------------------------------
// Mutex
// ---------------------------------------------------------------------------------------------

parity! {
    fn mutex_basics(ss) {
        static GLOBAL: ss::Mutex<u32> = ss::Mutex::new(1);
        *GLOBAL.lock().unwrap() += 1;
        assert_eq!(*GLOBAL.lock().unwrap(), 2);

        let m = ss::Mutex::new(vec![1]);
        assert_eq!(format!("{m:?}"), "Mutex { data: [1], poisoned: false, .. }");
        let g = m.lock().unwrap();
        assert!(matches!(m.try_lock(), Err(ss::TryLockError::WouldBlock)));
        assert_eq!(format!("{m:?}"), r#"Mutex { data: "<locked>", poisoned: false, .. }"#);
        assert_eq!(format!("{g:?}"), "[1]");
        drop(g);
        assert!(m.try_lock().is_ok());

        let mut m = m;
        m.get_mut().unwrap().push(2);
        assert_eq!(m.into_inner().unwrap(), vec![1, 2]);

        let d: ss::Mutex<String> = Default::default();
        assert!(d.lock().unwrap().is_empty());
        let f: ss::Mutex<u8> = 7.into();
        let g: ss::MutexGuard<'_, u8> = f.lock().unwrap();
        assert_eq!(format!("{g}"), "7");
        drop(g);
        let unsized_: &ss::Mutex<[u8]> = &ss::Mutex::new([1u8, 2]);
        assert_eq!(unsized_.lock().unwrap().len(), 2);
        let e = unsized_.lock().unwrap();
        let err = unsized_.try_lock().err().unwrap();
        assert_eq!(format!("{err} / {err:?}"), r#"try_lock failed because the operation would block / "WouldBlock""#);
        drop(e);
    }
}

parity! {
    fn mutex_poisoning_after_a_panic(ss) {
        let m = Arc::new(ss::Mutex::new(1));
        // A panic while not holding the guard does not poison.
        let m2 = m.clone();
        let r = thread::spawn(move || {
            drop(m2.lock().unwrap());
            panic!("after the guard");
        })
        .join();
        assert!(r.is_err());
        assert!(!m.is_poisoned());

        panic_while_holding(&m, |m| {
            let mut g = m.lock().unwrap();
            *g = 2;
            panic!("while holding");
        });
        assert!(m.is_poisoned());
        assert_eq!(format!("{m:?}"), "Mutex { data: 2, poisoned: true, .. }");

        // lock: the error carries a guard that holds the mutex.
        let err = m.lock().unwrap_err();
        assert_eq!(format!("{err} / {err:?}"), "poisoned lock: another task failed inside / PoisonError { .. }");
        let mut g = err.into_inner();
        assert_eq!(*g, 2);
        *g = 3;
        assert!(matches!(m.try_lock(), Err(ss::TryLockError::WouldBlock)));
        drop(g);
        assert!(m.is_poisoned(), "a clean drop does not clear the poison");

        // try_lock: Poisoned, with a guard; get_ref/get_mut/into_inner on the error.
        match m.try_lock() {
            Err(ss::TryLockError::Poisoned(mut p)) => {
                assert_eq!(**p.get_ref(), 3);
                **p.get_mut() = 4;
                let g = p.into_inner();
                assert_eq!(*g, 4);
            }
            other => panic!("expected Poisoned, got {:?}", other.map(|g| *g)),
        }
        let err = m.try_lock().err().unwrap();
        assert_eq!(format!("{err} / {err:?}"), r#"poisoned lock: another task failed inside / "Poisoned(..)""#);
        drop(err);

        m.clear_poison();
        assert!(!m.is_poisoned());
        assert_eq!(*m.lock().unwrap(), 4);

        // get_mut and into_inner report the poison too.
        let mut owned = Arc::try_unwrap(m).ok().unwrap();
        let m = Arc::new(ss::Mutex::new(0));
        panic_while_holding(&m, |m| {
            let _g = m.lock().unwrap();
            panic!("again");
        });
        let mut m = Arc::try_unwrap(m).ok().unwrap();
        assert_eq!(*m.get_mut().unwrap_err().into_inner(), 0);
        assert_eq!(m.into_inner().unwrap_err().into_inner(), 0);
        assert_eq!(*owned.get_mut().unwrap(), 4);
    }
}

parity! {
    fn mutex_excludes_and_wakes_a_parked_thread(ss) {
        warm_up!(ss);
        let m = Arc::new(ss::Mutex::new(0));
        let g = m.lock().unwrap();
        let m2 = m.clone();
        let waiter = spawn_parked(|| warm_up!(ss), move || *m2.lock().unwrap() += 1);
        assert_eq!(*g, 0, "the waiter did not get in");
        drop(g);
        waiter.join().unwrap();
        assert_eq!(*m.lock().unwrap(), 1);
    }
}

parity! {
    fn mutex_counts_right_under_contention(ss) {
        const THREADS: usize = 4;
        const ROUNDS: usize = 500;
        let m = Arc::new(ss::Mutex::new(0usize));
        let start = Arc::new(Barrier::new(THREADS));
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let (m, start) = (m.clone(), start.clone());
                thread::spawn(move || {
                    start.wait();
                    for _ in 0..ROUNDS {
                        *m.lock().unwrap() += 1;
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*m.lock().unwrap(), THREADS * ROUNDS);
    }
}

// ---------------------------------------------------------------------------------------------
// RwLock
// ---------------------------------------------------------------------------------------------

parity! {
    fn rwlock_basics_and_try_errors(ss) {
        static GLOBAL: ss::RwLock<u32> = ss::RwLock::new(1);
        *GLOBAL.write().unwrap() += 1;
        assert_eq!(*GLOBAL.read().unwrap(), 2);

        let r = ss::RwLock::new(vec![1]);
        assert_eq!(format!("{r:?}"), "RwLock { data: [1], poisoned: false, .. }");
        {
            let a = r.read().unwrap();
            let b = r.try_read().unwrap();
            assert_eq!(*a, *b);
            assert!(matches!(r.try_write(), Err(ss::TryLockError::WouldBlock)));
            assert_eq!(format!("{r:?}"), "RwLock { data: [1], poisoned: false, .. }");
            assert_eq!(format!("{a:?} {b:?}"), "[1] [1]");
        }
        {
            let mut w = r.write().unwrap();
            w.push(2);
            assert!(matches!(r.try_read(), Err(ss::TryLockError::WouldBlock)));
            assert!(matches!(r.try_write(), Err(ss::TryLockError::WouldBlock)));
            assert_eq!(format!("{r:?}"), "RwLock { data: <locked>, poisoned: false, .. }");
            assert_eq!(format!("{w:?}"), "[1, 2]");
        }
        let mut r = r;
        r.get_mut().unwrap().push(3);
        assert_eq!(r.into_inner().unwrap(), vec![1, 2, 3]);

        let d: ss::RwLock<String> = Default::default();
        assert!(d.read().unwrap().is_empty());
        let f: ss::RwLock<u8> = 7.into();
        assert_eq!(format!("{}", f.read().unwrap()), "7");
        assert_eq!(format!("{}", f.write().unwrap()), "7");
        let unsized_: &ss::RwLock<[u8]> = &ss::RwLock::new([1u8, 2]);
        assert_eq!(unsized_.read().unwrap().len(), 2);
    }
}

parity! {
    fn rwlock_readers_share_and_writers_exclude(ss) {
        warm_up!(ss);
        let r = Arc::new(ss::RwLock::new(0));
        // Two readers on two threads hold it at once.
        let both = Arc::new(Barrier::new(2));
        let (r2, both2) = (r.clone(), both.clone());
        let other = thread::spawn(move || {
            let g = r2.read().unwrap();
            both2.wait();
            *g
        });
        let g = r.read().unwrap();
        both.wait();
        assert_eq!(other.join().unwrap(), *g);

        // A writer waits for the reader, then gets in.
        let r2 = r.clone();
        let writer = spawn_parked(|| warm_up!(ss), move || *r2.write().unwrap() += 1);
        assert_eq!(*g, 0, "the writer did not get in while the read is held");
        drop(g);
        writer.join().unwrap();

        // A reader waits for the writer.
        let w = r.write().unwrap();
        let r2 = r.clone();
        let reader = spawn_parked(|| warm_up!(ss), move || *r2.read().unwrap());
        let mut w = w;
        *w += 1;
        drop(w);
        assert_eq!(reader.join().unwrap(), 2);
    }
}

parity! {
    fn rwlock_poisoning_after_a_panic(ss) {
        let r = Arc::new(ss::RwLock::new(1));
        // A panic while reading does not poison.
        panic_while_holding(&r, |r| {
            let _g = r.read().unwrap();
            panic!("while reading");
        });
        assert!(!r.is_poisoned());

        panic_while_holding(&r, |r| {
            *r.write().unwrap() = 2;
            let _g = r.write().unwrap();
            panic!("while writing");
        });
        assert!(r.is_poisoned());
        assert_eq!(format!("{r:?}"), "RwLock { data: 2, poisoned: true, .. }");
        assert_eq!(*r.read().unwrap_err().into_inner(), 2);
        *r.write().unwrap_err().into_inner() = 3;
        match r.try_read() {
            Err(ss::TryLockError::Poisoned(p)) => assert_eq!(*p.into_inner(), 3),
            _ => panic!("expected Poisoned"),
        }
        match r.try_write() {
            Err(ss::TryLockError::Poisoned(p)) => assert_eq!(*p.into_inner(), 3),
            _ => panic!("expected Poisoned"),
        }
        r.clear_poison();
        assert!(!r.is_poisoned());
        assert_eq!(*r.read().unwrap(), 3);

        panic_while_holding(&r, |r| {
            let _g = r.write().unwrap();
            panic!("again");
        });
        let mut r = Arc::try_unwrap(r).ok().unwrap();
        assert_eq!(*r.get_mut().unwrap_err().into_inner(), 3);
        assert_eq!(r.into_inner().unwrap_err().into_inner(), 3);
    }
}

// ---------------------------------------------------------------------------------------------
// Condvar
// ---------------------------------------------------------------------------------------------

parity! {
    fn condvar_wait_is_woken_by_notify_one(ss) {
        static CV: ss::Condvar = ss::Condvar::new();
        CV.notify_one();
        CV.notify_all();
        assert_eq!(format!("{:?}", ss::Condvar::new()), "Condvar { .. }");

        let pair = Arc::new((ss::Mutex::new(false), ss::Condvar::default()));
        let p = pair.clone();
        let (waiting_tx, waiting_rx) = mpsc::channel();
        let waiter = thread::spawn(move || {
            let (m, cv) = &*p;
            let mut ready = m.lock().unwrap();
            waiting_tx.send(()).unwrap(); // the notifier can lock only once we wait
            let mut wakeups = 0;
            while !*ready {
                ready = cv.wait(ready).unwrap();
                wakeups += 1;
            }
            assert!(wakeups >= 1);
            *ready = false;
        });
        waiting_rx.recv().unwrap();
        let (m, cv) = &*pair;
        *m.lock().unwrap() = true;
        cv.notify_one();
        waiter.join().unwrap();
        assert!(!*m.lock().unwrap(), "the waiter ran with the mutex after its wake-up");
    }
}

parity! {
    fn condvar_notify_all_wakes_every_waiter(ss) {
        const WAITERS: usize = 3;
        let state = Arc::new((ss::Mutex::new((0usize, false)), ss::Condvar::new()));
        let handles: Vec<_> = (0..WAITERS)
            .map(|_| {
                let s = state.clone();
                thread::spawn(move || {
                    let (m, cv) = &*s;
                    let mut g = m.lock().unwrap();
                    g.0 += 1;
                    cv.notify_all(); // tells the main thread one more waits
                    let mut g = cv.wait_while(g, |(_, go)| !*go).unwrap();
                    g.0 -= 1;
                })
            })
            .collect();
        let (m, cv) = &*state;
        let mut g = cv.wait_while(m.lock().unwrap(), |(n, _)| *n < WAITERS).unwrap();
        g.1 = true;
        drop(g);
        cv.notify_all();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*m.lock().unwrap(), (0, true));
    }
}

parity! {
    fn condvar_timeouts(ss) {
        let (m, cv) = (ss::Mutex::new(0), ss::Condvar::new());
        let dur = Duration::from_millis(5);
        let start = Instant::now();
        let (g, r) = cv.wait_timeout(m.lock().unwrap(), dur).unwrap();
        assert!(r.timed_out());
        assert!(start.elapsed() >= dur);
        assert_eq!(*g, 0);
        assert!(matches!(m.try_lock(), Err(ss::TryLockError::WouldBlock)), "held again");
        let (g, r) = cv.wait_timeout_while(g, dur, |n| *n == 0).unwrap();
        assert!(r.timed_out());
        // A condition already false returns at once, not timed out.
        let (mut g, r) = cv.wait_timeout_while(g, Duration::from_secs(60), |n| *n != 0).unwrap();
        assert!(!r.timed_out());
        *g += 1;
        #[allow(deprecated)]
        let (g, notified) = cv.wait_timeout_ms(g, 1).unwrap();
        assert!(!notified);
        assert_eq!(*g, 1);
        assert_eq!(format!("{r:?}"), "WaitTimeoutResult(false)");
    }
}

parity! {
    fn condvar_timed_wait_is_woken_before_its_deadline(ss) {
        let pair = Arc::new((ss::Mutex::new(false), ss::Condvar::new()));
        let p = pair.clone();
        let (waiting_tx, waiting_rx) = mpsc::channel();
        let waiter = thread::spawn(move || {
            let (m, cv) = &*p;
            let g = m.lock().unwrap();
            waiting_tx.send(()).unwrap();
            let (g, r) = cv.wait_timeout_while(g, Duration::from_secs(60), |go| !*go).unwrap();
            (*g, r.timed_out())
        });
        waiting_rx.recv().unwrap();
        *pair.0.lock().unwrap() = true;
        pair.1.notify_one();
        assert_eq!(waiter.join().unwrap(), (true, false));
    }
}

parity! {
    fn condvar_wait_returns_the_poison_of_a_panicking_notifier(ss) {
        let pair = Arc::new((ss::Mutex::new(false), ss::Condvar::new()));
        let p = pair.clone();
        let (waiting_tx, waiting_rx) = mpsc::channel();
        let waiter = thread::spawn(move || {
            let (m, cv) = &*p;
            let g = m.lock().unwrap();
            waiting_tx.send(()).unwrap();
            let err = cv.wait_while(g, |go| !*go).unwrap_err();
            let g = err.into_inner();
            assert!(*g);
            // Still held: the guard in the error is a real one.
            assert!(matches!(m.try_lock(), Err(ss::TryLockError::WouldBlock)));
        });
        waiting_rx.recv().unwrap();
        panic_while_holding(&pair, |(m, cv)| {
            let mut g = m.lock().unwrap();
            *g = true;
            cv.notify_all();
            panic!("the notifier panics while holding the mutex");
        });
        waiter.join().unwrap();
        let (m, cv) = &*pair;
        assert!(m.is_poisoned());
        // Every later wait reports the poison too, with the guard.
        let err = cv.wait_timeout(m.lock().unwrap_err().into_inner(), Duration::from_millis(1)).unwrap_err();
        let (g, r) = err.into_inner();
        assert!(*g && r.timed_out());
    }
}

parity! {
    fn condvar_condition_panic_poisons_and_unlocks(ss) {
        let (m, cv) = (ss::Mutex::new(0), ss::Condvar::new());
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _g = cv.wait_while(m.lock().unwrap(), |_| panic!("inside the condition"));
        }));
        assert!(r.is_err());
        assert!(m.is_poisoned());
        assert!(matches!(m.try_lock(), Err(ss::TryLockError::Poisoned(_))), "unlocked");
    }
}

parity! {
    fn many_threads_handing_off_through_a_condvar(ss) {
        // A bounded queue of one slot: producers and consumers hand items over without loss.
        const ITEMS: usize = 200;
        let state = Arc::new((ss::Mutex::new(None::<usize>), ss::Condvar::new()));
        let sum = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let s = state.clone();
        let producer = thread::spawn(move || {
            let (m, cv) = &*s;
            for i in 1..=ITEMS {
                let mut slot = cv.wait_while(m.lock().unwrap(), |s| s.is_some()).unwrap();
                *slot = Some(i);
                cv.notify_all();
            }
        });
        let (s, total, d) = (state.clone(), sum.clone(), done.clone());
        let consumer = thread::spawn(move || {
            let (m, cv) = &*s;
            for _ in 1..=ITEMS {
                let mut slot = cv.wait_while(m.lock().unwrap(), |s| s.is_none()).unwrap();
                total.fetch_add(slot.take().unwrap(), Ordering::Relaxed);
                cv.notify_all();
            }
            d.store(true, Ordering::Release);
        });
        producer.join().unwrap();
        consumer.join().unwrap();
        assert!(done.load(Ordering::Acquire));
        assert_eq!(sum.load(Ordering::Relaxed), ITEMS * (ITEMS + 1) / 2);
    }
}

// ---------------------------------------------------------------------------------------------
// Send / Sync / UnwindSafe
// ---------------------------------------------------------------------------------------------

/// The matrix, for one implementation `$ss`, with std's expectations. `SS`: Send + Sync data,
/// `SN`: Send + !Sync, `NS`: !Send + Sync, `NN`: neither.
macro_rules! send_sync_matrix {
    ($ss:path) => {{
        use $ss as ss;
        type SS = u32;
        type SN = std::cell::Cell<u32>;
        type NS = std::sync::MutexGuard<'static, u32>;
        type NN = std::rc::Rc<u32>;

        assert_traits!(ss::Mutex<SS>: Send, Sync);
        assert_traits!(ss::Mutex<SN>: Send, Sync);
        assert_traits!(ss::Mutex<NS>: !Send, !Sync);
        assert_traits!(ss::Mutex<NN>: !Send, !Sync);
        assert_traits!(ss::MutexGuard<'static, SS>: !Send, Sync);
        assert_traits!(ss::MutexGuard<'static, SN>: !Send, !Sync);
        assert_traits!(ss::MutexGuard<'static, NS>: !Send, Sync);
        assert_traits!(ss::MutexGuard<'static, NN>: !Send, !Sync);

        assert_traits!(ss::RwLock<SS>: Send, Sync);
        assert_traits!(ss::RwLock<SN>: Send, !Sync);
        assert_traits!(ss::RwLock<NS>: !Send, !Sync);
        assert_traits!(ss::RwLock<NN>: !Send, !Sync);
        assert_traits!(ss::RwLockReadGuard<'static, SS>: !Send, Sync);
        assert_traits!(ss::RwLockReadGuard<'static, SN>: !Send, !Sync);
        assert_traits!(ss::RwLockReadGuard<'static, NS>: !Send, Sync);
        assert_traits!(ss::RwLockWriteGuard<'static, SS>: !Send, Sync);
        assert_traits!(ss::RwLockWriteGuard<'static, SN>: !Send, !Sync);
        assert_traits!(ss::RwLockWriteGuard<'static, NS>: !Send, Sync);
        assert_traits!(ss::RwLockWriteGuard<'static, NN>: !Send, !Sync);

        assert_traits!(ss::Condvar: Send, Sync);
        assert_traits!(ss::WaitTimeoutResult: Send, Sync);
        assert_traits!(ss::PoisonError<ss::MutexGuard<'static, SS>>: !Send, Sync);
        assert_traits!(ss::TryLockError<ss::RwLockReadGuard<'static, SS>>: !Send, Sync);
    }};
}

#[test]
fn send_sync_matrix_matches() {
    send_sync_matrix!(std::sync);
    send_sync_matrix!(lockscope::std::sync);
}

/// std's locks are `UnwindSafe` and `RefUnwindSafe` whatever their data (poisoning is their
/// answer to unwinding), so code moving one into `catch_unwind` compiles against it: the
/// wrappers must be too (checked at compile time, side by side).
#[test]
fn unwind_safety_matches_std() {
    use std::panic::{RefUnwindSafe, UnwindSafe};
    fn both<T: UnwindSafe + RefUnwindSafe>() {}
    type Cell = std::cell::Cell<i32>;
    both::<std::sync::Mutex<Cell>>();
    both::<lockscope::std::sync::Mutex<Cell>>();
    both::<std::sync::RwLock<Cell>>();
    both::<lockscope::std::sync::RwLock<Cell>>();
    both::<std::sync::Condvar>();
    both::<lockscope::std::sync::Condvar>();

    let m = lockscope::std::sync::Mutex::named("std_unwind_safe", std::cell::Cell::new(5));
    assert!(std::panic::catch_unwind(|| m.lock().unwrap().get() == 5).unwrap());
}
