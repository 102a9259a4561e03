//! `lockscope::tokio` behaves as `tokio::sync`: every scenario here is written once and run,
//! as the same source text, against `tokio::sync` (test `raw`) and against `lockscope::tokio`
//! (test `lockscope`), by the `parity!` macro.
//!
//! A scenario asserts tokio's documented behaviour inline (`assert_pending!`/`assert_ready!`
//! on futures polled by hand with `tokio_test::task::spawn`, no sleeps) and returns a
//! transcript of what it observed (grant order, wake-ups, errors, permit counts). The `raw`
//! test checks that the inline assertions hold for tokio itself (so the scenario is right);
//! the `lockscope` test checks they hold for lockscope too and that both transcripts are
//! identical.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_test::task::spawn;
use tokio_test::{assert_pending, assert_ready, assert_ready_err, assert_ready_ok};

/// Runs `$body` (which returns the transcript) with `$s` naming `tokio::sync` and then
/// `lockscope::tokio`.
macro_rules! parity {
    ($(#[$m:meta])* fn $name:ident($s:ident) $body:block) => {
        $(#[$m])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            fn run_raw() -> Vec<String> {
                #[allow(unused_imports)]
                use tokio::sync as $s;
                $body
            }

            fn run_lockscope() -> Vec<String> {
                #[allow(unused_imports)]
                use lockscope::tokio as $s;
                $body
            }

            #[test]
            fn raw() {
                let transcript = run_raw();
                println!("{transcript:#?}");
                assert!(!transcript.is_empty(), "a scenario must observe something");
            }

            #[test]
            fn lockscope() {
                let wrapped = run_lockscope();
                let raw = run_raw();
                assert_eq!(
                    wrapped, raw,
                    "lockscope::tokio (left) and tokio::sync (right) behaved differently"
                );
            }
        }
    };
}

/// A current-thread runtime with time, for scenarios that need one.
fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Mutex
// ---------------------------------------------------------------------------------------------

parity! {
    /// Waiters are granted in arrival order; a release hands the lock to the head waiter
    /// directly, so neither a later waiter polled first nor a `try_lock` can barge in.
    fn mutex_fifo(s) {
        let mut log = Vec::new();
        let m = Arc::new(s::Mutex::new(0u32));
        let g = m.try_lock().unwrap();
        let mut w1 = spawn(m.lock());
        let mut w2 = spawn(m.clone().lock_owned());
        let mut w3 = spawn(m.lock());
        assert_pending!(w1.poll());
        assert_pending!(w2.poll());
        assert_pending!(w3.poll());
        log.push(format!("try_lock while held and queued: {}", m.try_lock().is_ok()));
        drop(g);
        log.push(format!(
            "woken after release: {} {} {}",
            w1.is_woken(),
            w2.is_woken(),
            w3.is_woken()
        ));
        assert_pending!(w3.poll());
        assert_pending!(w2.poll());
        log.push(format!("try_lock after hand-off: {}", m.try_lock().is_ok()));
        let mut g1 = assert_ready!(w1.poll());
        *g1 += 1;
        drop(g1);
        log.push(format!("woken: w2 {} w3 {}", w2.is_woken(), w3.is_woken()));
        assert_pending!(w3.poll());
        let mut g2 = assert_ready!(w2.poll());
        *g2 += 10;
        drop(g2);
        let mut g3 = assert_ready!(w3.poll());
        *g3 += 100;
        log.push(format!("value {}", *g3));
        drop(g3);
        log.push(format!("try_lock at the end: {}", m.try_lock().is_ok()));
        log
    }
}

parity! {
    /// Dropping waiting `lock()` futures (in the middle of the queue, and at its head after
    /// the lock was handed to it) keeps the order of the others and loses no permit.
    fn mutex_cancel_waiting(s) {
        let mut log = Vec::new();
        let m = Arc::new(s::Mutex::new(Vec::<u32>::new()));
        let g = m.try_lock().unwrap();
        let mut w1 = spawn(m.lock());
        let mut w2 = spawn(m.lock());
        let mut w3 = spawn(m.clone().lock_owned());
        let mut w4 = spawn(m.lock());
        assert_pending!(w1.poll());
        assert_pending!(w2.poll());
        assert_pending!(w3.poll());
        assert_pending!(w4.poll());
        // Cancel one in the middle of the queue.
        drop(w2);
        drop(g);
        log.push(format!("w1 woken {} w3 woken {}", w1.is_woken(), w3.is_woken()));
        // w1 was handed the lock; cancel it before it ever sees it: the lock moves on.
        drop(w1);
        log.push(format!("after head cancelled: w3 woken {}", w3.is_woken()));
        assert_pending!(w4.poll());
        let mut g3 = assert_ready!(w3.poll());
        g3.push(3);
        drop(g3);
        let mut g4 = assert_ready!(w4.poll());
        g4.push(4);
        drop(g4);
        let g = m.try_lock().unwrap();
        log.push(format!("data {:?}", *g));
        drop(g);
        log.push(format!("free at the end: {}", m.try_lock().is_ok()));
        log
    }
}

parity! {
    /// `try_lock`/`try_lock_owned` results and the error they give, and `Debug` of the mutex
    /// while locked and unlocked.
    fn mutex_try_lock(s) {
        let mut log = Vec::new();
        let m = Arc::new(s::Mutex::new(7u8));
        log.push(format!("{m:?}"));
        let g = m.try_lock().unwrap();
        log.push(format!("{m:?}"));
        let e = m.try_lock().unwrap_err();
        log.push(format!("try_lock: {e} / {e:?}"));
        let e = m.clone().try_lock_owned().unwrap_err();
        log.push(format!("try_lock_owned: {e}"));
        drop(g);
        let og = m.clone().try_lock_owned().unwrap();
        log.push(format!("owned guard {og:?}, try_lock {}", m.try_lock().is_ok()));
        drop(og);
        log.push(format!("after: {}", m.try_lock().is_ok()));
        log
    }
}

parity! {
    /// tokio's acquire futures spend the task's cooperative budget even when the lock is
    /// free, so a loop of uncontended `lock().await` still lets other tasks run on a
    /// current-thread runtime. The iteration at which the other task got to run must match.
    fn mutex_coop_budget(s) {
        current_thread().block_on(async {
            let m = s::Mutex::new(0u64);
            let ran = Arc::new(AtomicBool::new(false));
            let r = ran.clone();
            tokio::spawn(async move { r.store(true, Ordering::SeqCst) });
            let mut seen_at = None;
            for i in 0..10_000u32 {
                *m.lock().await += 1;
                if ran.load(Ordering::SeqCst) {
                    seen_at = Some(i);
                    break;
                }
            }
            assert!(seen_at.is_some(), "an uncontended lock loop never yielded");
            vec![format!("the other task ran during lock #{seen_at:?}")]
        })
    }
}

parity! {
    /// As above for `RwLock::read`, `RwLock::write` and `Semaphore::acquire`.
    fn rwlock_and_semaphore_coop_budget(s) {
        current_thread().block_on(async {
            let mut log = Vec::new();
            let l = s::RwLock::new(0u64);
            let sem = s::Semaphore::new(1);
            for what in ["read", "write", "acquire"] {
                let ran = Arc::new(AtomicBool::new(false));
                let r = ran.clone();
                tokio::spawn(async move { r.store(true, Ordering::SeqCst) });
                let mut seen_at = None;
                for i in 0..10_000u32 {
                    match what {
                        "read" => drop(l.read().await),
                        "write" => *l.write().await += 1,
                        _ => drop(sem.acquire().await.unwrap()),
                    }
                    if ran.load(Ordering::SeqCst) {
                        seen_at = Some(i);
                        break;
                    }
                }
                assert!(seen_at.is_some(), "an uncontended {what} loop never yielded");
                log.push(format!("{what}: the other task ran during #{seen_at:?}"));
            }
            log
        })
    }
}

// ---------------------------------------------------------------------------------------------
// RwLock
// ---------------------------------------------------------------------------------------------

parity! {
    /// Write-preferring: a reader that arrives after a queued writer waits behind it, and
    /// `try_read` fails while a writer is queued.
    fn rwlock_write_preferring(s) {
        let mut log = Vec::new();
        let l = s::RwLock::new(1u32);
        let r1 = l.try_read().unwrap();
        let mut w = spawn(l.write());
        assert_pending!(w.poll());
        let mut r2 = spawn(l.read());
        assert_pending!(r2.poll());
        log.push(format!("try_read with a queued writer: {}", l.try_read().is_ok()));
        log.push(format!("try_write with a reader: {}", l.try_write().is_ok()));
        drop(r1);
        log.push(format!("woken: writer {} reader {}", w.is_woken(), r2.is_woken()));
        assert_pending!(r2.poll());
        let mut g = assert_ready!(w.poll());
        *g = 2;
        drop(g);
        log.push(format!("reader woken after write: {}", r2.is_woken()));
        let r = assert_ready!(r2.poll());
        log.push(format!("read {}", *r));
        log
    }
}

parity! {
    /// FIFO across modes: a write release wakes every reader up to the next queued writer;
    /// readers behind that writer keep waiting for it.
    fn rwlock_fifo_mixed(s) {
        let mut log = Vec::new();
        let l = Arc::new(s::RwLock::new(String::new()));
        let g = l.try_write().unwrap();
        let mut r1 = spawn(l.read());
        let mut r2 = spawn(l.clone().read_owned());
        let mut w1 = spawn(l.write());
        let mut r3 = spawn(l.read());
        let mut w2 = spawn(l.clone().write_owned());
        assert_pending!(r1.poll());
        assert_pending!(r2.poll());
        assert_pending!(w1.poll());
        assert_pending!(r3.poll());
        assert_pending!(w2.poll());
        drop(g);
        log.push(format!(
            "woken after write: r1 {} r2 {} w1 {} r3 {} w2 {}",
            r1.is_woken(),
            r2.is_woken(),
            w1.is_woken(),
            r3.is_woken(),
            w2.is_woken()
        ));
        let g1 = assert_ready!(r1.poll());
        let g2 = assert_ready!(r2.poll());
        assert_pending!(r3.poll());
        assert_pending!(w1.poll());
        drop(g1);
        assert_pending!(w1.poll());
        drop(g2);
        let mut gw = assert_ready!(w1.poll());
        gw.push_str("w1");
        assert_pending!(r3.poll());
        drop(gw);
        let g3 = assert_ready!(r3.poll());
        log.push(format!("r3 sees {:?}", *g3));
        assert_pending!(w2.poll());
        drop(g3);
        let mut gw2 = assert_ready!(w2.poll());
        gw2.push_str("+w2");
        drop(gw2);
        log.push(format!("final {:?}", *l.try_read().unwrap()));
        log
    }
}

parity! {
    /// `with_max_readers` and `const_with_max_readers`: that many readers at once and no
    /// more; the next reader waits (and is woken by one release); a writer needs them all.
    fn rwlock_max_readers(s) {
        static LIMITED: s::RwLock<u8> = s::RwLock::const_with_max_readers(5, 2);
        let mut log = Vec::new();
        let l = s::RwLock::with_max_readers(0u8, 3);
        let a = l.try_read().unwrap();
        let b = l.try_read().unwrap();
        let mut c = spawn(l.read());
        let c = assert_ready!(c.poll());
        log.push(format!("4th try_read: {}", l.try_read().is_ok()));
        let mut d = spawn(l.read());
        assert_pending!(d.poll());
        let mut w = spawn(l.write());
        assert_pending!(w.poll());
        drop(a);
        log.push(format!("d woken {} w woken {}", d.is_woken(), w.is_woken()));
        let d = assert_ready!(d.poll());
        drop((b, c));
        assert_pending!(w.poll());
        drop(d);
        let g = assert_ready!(w.poll());
        log.push(format!("try_read while written: {}", l.try_read().is_ok()));
        drop(g);

        let x = LIMITED.try_read().unwrap();
        let y = LIMITED.try_read().unwrap();
        log.push(format!("static 3rd read: {}", LIMITED.try_read().is_ok()));
        log.push(format!("static values {} {}", *x, *y));
        drop((x, y));
        log.push(format!("static write: {}", LIMITED.try_write().is_ok()));
        log
    }
}

parity! {
    /// A waiting writer that is dropped gives back the permits it had gathered: the reader
    /// queued behind it is woken and gets in while the first reader still holds.
    fn rwlock_cancel_waiting_writer(s) {
        let mut log = Vec::new();
        let l = s::RwLock::new(0u32);
        let r1 = l.try_read().unwrap();
        let mut w = spawn(l.write());
        assert_pending!(w.poll());
        let mut r2 = spawn(l.read());
        assert_pending!(r2.poll());
        log.push(format!("try_read behind writer: {}", l.try_read().is_ok()));
        drop(w);
        log.push(format!("r2 woken by the cancellation: {}", r2.is_woken()));
        let g2 = assert_ready!(r2.poll());
        log.push(format!("try_read after: {}", l.try_read().is_ok()));
        drop((r1, g2));
        log.push(format!("try_write at the end: {}", l.try_write().is_ok()));
        log
    }
}

parity! {
    /// `downgrade`: the write becomes a read without letting a writer in; readers queued
    /// before the next writer get in, the next writer and the readers behind it wait.
    /// `try_downgrade_map` failing keeps the write lock; `downgrade_map` maps the read.
    fn rwlock_downgrade(s) {
        let mut log = Vec::new();
        let l = Arc::new(s::RwLock::new((1u32, 2u32)));
        let mut g = l.try_write().unwrap();
        g.0 = 10;
        let mut r1 = spawn(l.read());
        let mut w2 = spawn(l.write());
        let mut r3 = spawn(l.read());
        assert_pending!(r1.poll());
        assert_pending!(w2.poll());
        assert_pending!(r3.poll());
        let r = g.downgrade();
        log.push(format!(
            "after downgrade: r1 woken {} w2 woken {} r3 woken {}",
            r1.is_woken(),
            w2.is_woken(),
            r3.is_woken()
        ));
        let g1 = assert_ready!(r1.poll());
        assert_pending!(w2.poll());
        assert_pending!(r3.poll());
        log.push(format!("downgraded reads {:?}, r1 reads {:?}", *r, *g1));
        log.push(format!("try_write while downgraded: {}", l.try_write().is_ok()));
        drop(r);
        drop(g1);
        let gw = assert_ready!(w2.poll());
        // try_downgrade_map returning None keeps the write lock.
        let gw = match s::RwLockWriteGuard::try_downgrade_map(gw, |_| None::<&u32>) {
            Ok(_) => panic!("mapped to None"),
            Err(gw) => gw,
        };
        log.push(format!("after failed try_downgrade_map, try_read: {}", l.try_read().is_ok()));
        let second = s::RwLockWriteGuard::downgrade_map(gw, |t| &t.1);
        log.push(format!("downgrade_map reads {}", *second));
        let g3 = assert_ready!(r3.poll());
        log.push(format!("r3 reads {:?}", *g3));
        drop((second, g3));
        // Owned forms.
        let og = l.clone().try_write_owned().unwrap();
        let or = og.downgrade();
        log.push(format!("owned downgrade, try_read {} try_write {}", l.try_read().is_ok(), l.try_write().is_ok()));
        drop(or);
        let og = l.clone().try_write_owned().unwrap();
        let om = s::OwnedRwLockWriteGuard::downgrade_map(og, |t| &t.0);
        log.push(format!("owned downgrade_map reads {}", *om));
        drop(om);
        log.push(format!("try_write at the end: {}", l.try_write().is_ok()));
        log
    }
}

parity! {
    /// `try_read`/`try_write` and owned forms: results, errors and `Debug` of the lock.
    fn rwlock_try(s) {
        let mut log = Vec::new();
        let l = Arc::new(s::RwLock::new(vec![1u8]));
        log.push(format!("{l:?}"));
        let r = l.try_read().unwrap();
        let ro = l.clone().try_read_owned().unwrap();
        log.push(format!("two readers {:?} {:?}; debug {l:?}", *r, *ro));
        log.push(format!("try_write: {}", l.try_write().unwrap_err()));
        log.push(format!("try_write_owned: {:?}", l.clone().try_write_owned().unwrap_err()));
        drop((r, ro));
        let w = l.clone().try_write_owned().unwrap();
        log.push(format!("debug while written {l:?}"));
        log.push(format!("try_read: {}", l.try_read().unwrap_err()));
        log.push(format!("try_read_owned: {}", l.clone().try_read_owned().is_ok()));
        drop(w);
        log.push(format!("try_write at the end: {}", l.try_write().is_ok()));
        log
    }
}

// ---------------------------------------------------------------------------------------------
// Semaphore
// ---------------------------------------------------------------------------------------------

parity! {
    /// Permits are granted in arrival order, owned and borrowed forms alike.
    fn semaphore_fifo(s) {
        let mut log = Vec::new();
        let sem = Arc::new(s::Semaphore::new(1));
        let p = sem.try_acquire().unwrap();
        let mut w1 = spawn(sem.acquire());
        let mut w2 = spawn(sem.clone().acquire_owned());
        let mut w3 = spawn(sem.acquire());
        assert_pending!(w1.poll());
        assert_pending!(w2.poll());
        assert_pending!(w3.poll());
        drop(p);
        log.push(format!("woken {} {} {}", w1.is_woken(), w2.is_woken(), w3.is_woken()));
        assert_pending!(w3.poll());
        assert_pending!(w2.poll());
        log.push(format!("available after hand-off {}", sem.available_permits()));
        let p1 = assert_ready_ok!(w1.poll());
        drop(p1);
        assert_pending!(w3.poll());
        let p2 = assert_ready_ok!(w2.poll());
        drop(p2);
        let p3 = assert_ready_ok!(w3.poll());
        log.push(format!("p3 has {}", p3.num_permits()));
        drop(p3);
        log.push(format!("available at the end {}", sem.available_permits()));
        log
    }
}

parity! {
    /// tokio is fair: a large `acquire_many` at the head takes what is free and blocks
    /// smaller requests behind it, even ones that would fit.
    fn semaphore_acquire_many_blocks_smaller(s) {
        let mut log = Vec::new();
        let sem = Arc::new(s::Semaphore::new(3));
        let p = sem.try_acquire_many(2).unwrap();
        log.push(format!("available {}", sem.available_permits()));
        let mut big = spawn(sem.acquire_many(2));
        assert_pending!(big.poll());
        log.push(format!("available with a big waiter {}", sem.available_permits()));
        let mut small = spawn(sem.acquire());
        assert_pending!(small.poll());
        let mut small_owned = spawn(sem.clone().acquire_many_owned(1));
        assert_pending!(small_owned.poll());
        log.push(format!("try_acquire: {:?}", sem.try_acquire().unwrap_err()));
        drop(p);
        log.push(format!(
            "woken: big {} small {} small_owned {}",
            big.is_woken(),
            small.is_woken(),
            small_owned.is_woken()
        ));
        let pb = assert_ready_ok!(big.poll());
        let ps = assert_ready_ok!(small.poll());
        assert_pending!(small_owned.poll());
        log.push(format!("big {} small {}, available {}", pb.num_permits(), ps.num_permits(), sem.available_permits()));
        drop(pb);
        let po = assert_ready_ok!(small_owned.poll());
        log.push(format!("available {}", sem.available_permits()));
        drop((ps, po));
        log.push(format!("available at the end {}", sem.available_permits()));
        log
    }
}

parity! {
    /// `close()` wakes every waiter with `AcquireError`; later acquires fail at once;
    /// `try_acquire` says `Closed`; permits still come back on release.
    fn semaphore_close(s) {
        let mut log = Vec::new();
        let sem = Arc::new(s::Semaphore::new(1));
        let p = sem.try_acquire().unwrap();
        let mut w1 = spawn(sem.acquire());
        let mut w2 = spawn(sem.clone().acquire_owned());
        let mut w3 = spawn(sem.acquire_many(2));
        let mut w4 = spawn(sem.clone().acquire_many_owned(1));
        assert_pending!(w1.poll());
        assert_pending!(w2.poll());
        assert_pending!(w3.poll());
        assert_pending!(w4.poll());
        log.push(format!("closed before: {}", sem.is_closed()));
        sem.close();
        log.push(format!(
            "woken {} {} {} {}, closed {}",
            w1.is_woken(),
            w2.is_woken(),
            w3.is_woken(),
            w4.is_woken(),
            sem.is_closed()
        ));
        let e = assert_ready_err!(w1.poll());
        log.push(format!("acquire: {e} / {e:?}"));
        log.push(format!("acquire_owned: {}", assert_ready_err!(w2.poll())));
        log.push(format!("acquire_many: {}", assert_ready_err!(w3.poll())));
        log.push(format!("acquire_many_owned: {}", assert_ready_err!(w4.poll())));
        let mut late = spawn(sem.acquire());
        log.push(format!("late acquire: {}", assert_ready_err!(late.poll())));
        let e = sem.try_acquire().unwrap_err();
        log.push(format!("try_acquire: {e} / {e:?}"));
        log.push(format!("try_acquire_owned: {:?}", sem.clone().try_acquire_owned().unwrap_err()));
        drop(p);
        log.push(format!("available after release {}", sem.available_permits()));
        log.push(format!("try_acquire still: {:?}", sem.try_acquire_many(1).unwrap_err()));
        log
    }
}

parity! {
    /// Dropping waiting acquire futures returns the permits they had gathered and keeps the
    /// others' order.
    fn semaphore_cancel_waiting(s) {
        let mut log = Vec::new();
        let sem = Arc::new(s::Semaphore::new(3));
        let p = sem.try_acquire_many(2).unwrap();
        let mut big = spawn(sem.acquire_many(3));
        assert_pending!(big.poll());
        log.push(format!("available while big waits {}", sem.available_permits()));
        let mut a = spawn(sem.acquire());
        let mut b = spawn(sem.clone().acquire_owned());
        assert_pending!(a.poll());
        assert_pending!(b.poll());
        drop(big);
        log.push(format!(
            "after cancelling big: available {} a woken {} b woken {}",
            sem.available_permits(),
            a.is_woken(),
            b.is_woken()
        ));
        let pa = assert_ready_ok!(a.poll());
        assert_pending!(b.poll());
        drop(p);
        log.push(format!("b woken {}", b.is_woken()));
        let pb = assert_ready_ok!(b.poll());
        log.push(format!("available {}", sem.available_permits()));
        let mut c = spawn(sem.acquire_many(2));
        assert_pending!(c.poll());
        drop(c);
        log.push(format!("available after cancelling c {}", sem.available_permits()));
        drop((pa, pb));
        log.push(format!("available at the end {}", sem.available_permits()));
        log
    }
}

parity! {
    /// `forget`, `add_permits`, `forget_permits`, `split`, `merge`, `num_permits`,
    /// `semaphore()` and their effect on `available_permits`, borrowed and owned.
    fn semaphore_permit_arithmetic(s) {
        let mut log = Vec::new();
        let sem = Arc::new(s::Semaphore::new(5));
        log.push(format!("MAX_PERMITS {}", s::Semaphore::MAX_PERMITS));
        let mut p = sem.try_acquire_many(3).unwrap();
        log.push(format!("acquired 3, available {}", sem.available_permits()));
        log.push(format!("split 4: {}", p.split(4).is_none()));
        let q = p.split(1).unwrap();
        log.push(format!("split: {} + {}, available {}", p.num_permits(), q.num_permits(), sem.available_permits()));
        log.push(format!("same semaphore: {}", std::ptr::eq(p.semaphore(), q.semaphore())));
        drop(q);
        log.push(format!("dropped split part, available {}", sem.available_permits()));
        let r = sem.try_acquire().unwrap();
        p.merge(r);
        log.push(format!("merged: {}, available {}", p.num_permits(), sem.available_permits()));
        p.forget();
        log.push(format!("forgot 3, available {}", sem.available_permits()));
        sem.add_permits(1);
        log.push(format!("add 1, available {}", sem.available_permits()));
        log.push(format!("forget_permits(2) -> {}, available {}", sem.forget_permits(2), sem.available_permits()));
        log.push(format!("forget_permits(10) -> {}, available {}", sem.forget_permits(10), sem.available_permits()));
        let mut w = spawn(sem.acquire_many(2));
        assert_pending!(w.poll());
        sem.add_permits(1);
        log.push(format!("add 1 with a waiter for 2: woken {} available {}", w.is_woken(), sem.available_permits()));
        assert_pending!(w.poll());
        sem.add_permits(3);
        let pw = assert_ready_ok!(w.poll());
        log.push(format!("waiter got {}, available {}", pw.num_permits(), sem.available_permits()));
        drop(pw);

        // Owned forms.
        let mut o = sem.clone().try_acquire_many_owned(3).unwrap();
        let o2 = o.split(2).unwrap();
        log.push(format!("owned split {} + {}", o.num_permits(), o2.num_permits()));
        log.push(format!("same Arc: {}", Arc::ptr_eq(o.semaphore(), &sem)));
        o.merge(o2);
        let o3 = sem.clone().try_acquire_owned().unwrap();
        o.merge(o3);
        log.push(format!("owned merged {}, available {}", o.num_permits(), sem.available_permits()));
        let part = o.split(1).unwrap();
        part.forget();
        log.push(format!("owned forgot 1, available {}", sem.available_permits()));
        drop(o);
        log.push(format!("owned dropped, available {}", sem.available_permits()));
        log.push(format!("zero permits: {:?}", sem.try_acquire_many(0).map(|p| p.num_permits())));
        log
    }
}

parity! {
    /// `try_acquire*` results and errors, and `Debug` of a semaphore and its permits.
    fn semaphore_try(s) {
        let mut log = Vec::new();
        let sem = Arc::new(s::Semaphore::new(2));
        log.push(format!("{sem:?}"));
        let p = sem.try_acquire().unwrap();
        log.push(format!("{p:?}"));
        let e = sem.try_acquire_many(2).unwrap_err();
        log.push(format!("try_acquire_many(2): {e} / {e:?}"));
        let op = sem.clone().try_acquire_owned().unwrap();
        log.push(format!("{op:?}"));
        log.push(format!("try_acquire_owned: {:?}", sem.clone().try_acquire_owned().unwrap_err()));
        log.push(format!("try_acquire_many_owned: {:?}", sem.clone().try_acquire_many_owned(1).unwrap_err()));
        log.push(format!("{sem:?}"));
        drop((p, op));
        log.push(format!("try_acquire_many_owned(2): {:?}", sem.clone().try_acquire_many_owned(2).map(|p| p.num_permits())));
        log.push(format!("errors compare: {}", sem.try_acquire_many(3).unwrap_err() == s::TryAcquireError::NoPermits));
        log
    }
}

// ---------------------------------------------------------------------------------------------
// lockscope's timed forms behave as `tokio::time::timeout` around tokio's own acquire
// ---------------------------------------------------------------------------------------------

fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}

const MS: std::time::Duration = std::time::Duration::from_millis(1);

/// A timed waiter keeps its FIFO place; granted before its deadline it gets the lock; past
/// its deadline it leaves the queue and the next waiter is served. `$timed(m, d)` is the
/// timed acquire under test.
macro_rules! timed_mutex_scenario {
    ($m:expr, $timed:expr) => {{
        paused().block_on(async {
            let mut log = Vec::new();
            let m = $m;
            let g = m.try_lock().unwrap();
            let mut t1 = spawn($timed(&m, 10 * MS));
            let mut w2 = spawn(m.lock());
            assert_pending!(t1.poll());
            assert_pending!(w2.poll());
            tokio::time::advance(5 * MS).await;
            assert_pending!(t1.poll());
            drop(g);
            log.push(format!("woken t1 {} w2 {}", t1.is_woken(), w2.is_woken()));
            let g1 = assert_ready_ok!(t1.poll());
            assert_pending!(w2.poll());
            drop(g1);
            let g2 = assert_ready!(w2.poll());
            let mut t3 = spawn($timed(&m, 10 * MS));
            let mut w4 = spawn(m.lock());
            assert_pending!(t3.poll());
            assert_pending!(w4.poll());
            tokio::time::advance(9 * MS).await;
            assert_pending!(t3.poll());
            tokio::time::advance(MS).await;
            log.push(format!("deadline: t3 woken {}", t3.is_woken()));
            let _ = assert_ready_err!(t3.poll());
            // As after `.await`, the finished future is dropped. (`tokio::time::timeout` keeps
            // its inner acquire queued until then; `lock_timeout` leaves the queue as it
            // returns the error.)
            drop(t3);
            assert_pending!(w4.poll());
            drop(g2);
            log.push(format!("w4 woken {}", w4.is_woken()));
            drop(assert_ready!(w4.poll()));
            // A zero timeout on a free lock still succeeds (the acquire is polled first).
            log.push(format!(
                "zero timeout, free: {}",
                $timed(&m, 0 * MS).await.is_ok()
            ));
            log
        })
    }};
}

fn raw_timed(
    m: &tokio::sync::Mutex<i32>,
    d: std::time::Duration,
) -> impl Future<Output = Result<tokio::sync::MutexGuard<'_, i32>, tokio::time::error::Elapsed>> + '_
{
    tokio::time::timeout(d, m.lock())
}

fn wrapped_timed(
    m: &lockscope::tokio::Mutex<i32>,
    d: std::time::Duration,
) -> impl Future<Output = Result<lockscope::tokio::MutexGuard<'_, i32>, lockscope::tokio::TimeoutError>>
+ '_ {
    m.lock_timeout(d)
}

#[test]
fn lock_timeout_behaves_as_tokio_time_timeout() {
    let raw = timed_mutex_scenario!(tokio::sync::Mutex::new(0), raw_timed);
    let wrapped = timed_mutex_scenario!(lockscope::tokio::Mutex::new(0), wrapped_timed);
    println!("{raw:#?}");
    assert_eq!(wrapped, raw);
}

/// A large timed request at the head gathers the free permits while it waits; when it times
/// out they go to the next waiter.
macro_rules! timed_semaphore_scenario {
    ($s:expr, $timed:expr) => {{
        paused().block_on(async {
            let mut log = Vec::new();
            let sem = $s;
            let p = sem.try_acquire_many(2).unwrap();
            let mut t1 = spawn($timed(&sem, 3, 10 * MS));
            assert_pending!(t1.poll());
            let mut w2 = spawn(sem.acquire());
            assert_pending!(w2.poll());
            log.push(format!(
                "available while t1 waits {}",
                sem.available_permits()
            ));
            tokio::time::advance(10 * MS).await;
            let _ = assert_ready_err!(t1.poll());
            drop(t1);
            log.push(format!("w2 woken by the timeout {}", w2.is_woken()));
            let q = assert_ready_ok!(w2.poll());
            log.push(format!("available {}", sem.available_permits()));
            drop((p, q));
            let got = $timed(&sem, 3, 0 * MS).await.map(|p| p.num_permits()).ok();
            log.push(format!("zero timeout, free: {got:?}"));
            log.push(format!("available at the end {}", sem.available_permits()));
            log
        })
    }};
}

fn raw_sem_timed(
    s: &tokio::sync::Semaphore,
    n: u32,
    d: std::time::Duration,
) -> impl Future<
    Output = Result<
        Result<tokio::sync::SemaphorePermit<'_>, tokio::sync::AcquireError>,
        tokio::time::error::Elapsed,
    >,
> + '_ {
    tokio::time::timeout(d, s.acquire_many(n))
}

fn wrapped_sem_timed(
    s: &lockscope::tokio::Semaphore,
    n: u32,
    d: std::time::Duration,
) -> impl Future<Output = Result<lockscope::tokio::SemaphorePermit<'_>, lockscope::tokio::TimeoutError>>
+ '_ {
    s.acquire_many_timeout(n, d)
}

#[test]
fn acquire_many_timeout_behaves_as_tokio_time_timeout() {
    let raw = timed_semaphore_scenario!(tokio::sync::Semaphore::new(3), |s, n, d| async move {
        raw_sem_timed(s, n, d).await.map(|r| r.unwrap())
    });
    let wrapped = timed_semaphore_scenario!(lockscope::tokio::Semaphore::new(3), wrapped_sem_timed);
    println!("{raw:#?}");
    assert_eq!(wrapped, raw);
}

/// The rest of `tokio::sync` passes through, so a whole `use tokio::sync::{..}` line swaps.
#[tokio::test]
async fn the_rest_of_tokio_sync_passes_through() {
    use lockscope::tokio::{Mutex, Notify, OnceCell, mpsc, oneshot, watch};
    let m = Mutex::new(0);
    let notify = Notify::new();
    let (tx, mut rx) = mpsc::channel(1);
    tx.send(1).await.unwrap();
    *m.lock().await += rx.recv().await.unwrap();
    let (otx, orx) = oneshot::channel();
    otx.send(2).unwrap();
    *m.lock().await += orx.await.unwrap();
    let (wtx, wrx) = watch::channel(3);
    wtx.send(4).unwrap();
    *m.lock().await += *wrx.borrow();
    notify.notify_one();
    notify.notified().await;
    let cell = OnceCell::new();
    assert_eq!(*cell.get_or_init(|| async { *m.lock().await }).await, 7);
}
