//! `lockscope::lock_api::{RawMutex, RawRwLock}` (feature `lock_api`): the same scenarios run
//! against a raw lock and against the adapter over it (parking_lot's raw locks and spin's) and
//! must give the same answers, with the books empty after each; a guard moved to another
//! thread, and a panic while holding, still balance the books; the adapter is one graph with
//! the other wrappers (an ABBA with a `lockscope::parking_lot::Mutex`), a re-lock on one thread
//! is `nested-acquire` (and, armed, ends the process as a deadlock), and locks are named after
//! their sites. `cargo test -p lockscope --features lock_api --test lock_api_adapter`.
//!
//! Tests run in parallel in one process and share the detector: each looks only at the
//! primitives it created (unique names, `la_*`), polled with `check_now()` under a deadline.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use lock_api::{
    GetThreadId as _, RawMutexFair, RawMutexTimed, RawRwLockRecursiveTimed,
    RawRwLockUpgradeDowngrade, RawRwLockUpgradeFair, RawRwLockUpgradeTimed,
};
use lockscope::detector::FindingKind;
use lockscope::lock_api::{Mutex, RawMutex, RawRwLock, RwLock};

#[macro_use]
mod support;
use support::findings::{assert_silent, findings_about, lock_named, wait_for_finding};

#[path = "common/mod.rs"]
mod common;

type PlRaw = parking_lot::RawMutex;
type PlRawRw = parking_lot::RawRwLock;
type SpinRaw = spin::Mutex<()>;
type SpinRawRw = spin::RwLock<()>;

/// Asserts that the books of the lock named `name` show no holder and no waiter.
#[track_caller]
fn assert_books_empty(name: &str) {
    let l = lock_named(name).unwrap_or_else(|| panic!("{name} is registered"));
    assert!(l.holders.is_empty(), "{name}: holders left {:?}", l.holders);
    assert!(l.waiters.is_empty(), "{name}: waiters left {:?}", l.waiters);
}

fn holders(name: &str) -> usize {
    lock_named(name).map_or(usize::MAX, |l| l.holders.len())
}

// ---------------------------------------------------------------------------------------------
// Parity: one generic scenario, the raw lock and the adapter over it
// ---------------------------------------------------------------------------------------------

/// Runs `f` while another thread holds `m` (released once `f` returns).
fn while_held_elsewhere<R: lock_api::RawMutex + Sync, T: Send, U>(
    m: &lock_api::Mutex<R, T>,
    f: impl FnOnce() -> U,
) -> U {
    let held = Barrier::new(2);
    let done = Barrier::new(2);
    thread::scope(|s| {
        s.spawn(|| {
            let _g = m.lock();
            held.wait();
            done.wait();
        });
        held.wait();
        let r = f();
        done.wait();
        r
    })
}

/// lock, try_lock, `unlocked`: what a user of any raw mutex sees.
fn mutex_basic<R: lock_api::RawMutex + Sync>(m: &lock_api::Mutex<R, i32>) -> Vec<String> {
    let mut seen = Vec::new();
    {
        let mut g = m.lock();
        *g += 1;
        seen.push(format!("locked {}", m.is_locked()));
        lock_api::MutexGuard::unlocked(&mut g, || seen.push(format!("unlocked {}", m.is_locked())));
        *g += 1;
    }
    seen.push(format!("after {}", m.is_locked()));
    seen.push(format!(
        "try while held elsewhere {}",
        while_held_elsewhere(m, || m.try_lock().is_some())
    ));
    let g = m.try_lock();
    seen.push(format!("try {:?}", g.as_deref()));
    drop(g);
    seen
}

/// Fair unlock, bump and the timed forms.
fn mutex_fair_timed<
    R: RawMutexFair + RawMutexTimed<Duration = Duration, Instant = Instant> + Sync,
>(
    m: &lock_api::Mutex<R, i32>,
) -> Vec<String> {
    let mut seen = Vec::new();
    let mut g = m.lock();
    *g += 1;
    lock_api::MutexGuard::bump(&mut g);
    lock_api::MutexGuard::unlocked_fair(&mut g, || seen.push(format!("fair {}", m.is_locked())));
    lock_api::MutexGuard::unlock_fair(g);
    seen.push(format!("after fair {}", m.is_locked()));
    let timed_out = while_held_elsewhere(m, || m.try_lock_for(Duration::from_millis(2)).is_none());
    seen.push(format!("timed out while held {timed_out}"));
    let g = m.try_lock_for(Duration::from_millis(2));
    seen.push(format!("timed {:?}", g.as_deref()));
    drop(g);
    let until = m.try_lock_until(Instant::now() + Duration::from_millis(2));
    seen.push(format!("until {:?}", until.as_deref()));
    seen
}

/// Reads, writes and their `try_` forms.
fn rwlock_basic<R: lock_api::RawRwLock + Sync>(r: &lock_api::RwLock<R, i32>) -> Vec<String> {
    let mut seen = Vec::new();
    {
        let a = r.read();
        // A second reader as a `try_` form (a plain `read` inside a read is reported).
        let b = r.try_read();
        seen.push(format!("reads {} {:?}", *a, b.as_deref()));
        seen.push(format!("write while read {}", r.try_write().is_some()));
        seen.push(format!(
            "locked {} {}",
            r.is_locked(),
            r.is_locked_exclusive()
        ));
    }
    {
        let mut w = r.write();
        *w += 1;
        seen.push(format!("read while written {}", r.try_read().is_some()));
        seen.push(format!(
            "locked {} {}",
            r.is_locked(),
            r.is_locked_exclusive()
        ));
    }
    let w = r.try_write();
    seen.push(format!("try write {:?}", w.as_deref()));
    drop(w);
    seen.push(format!("after {}", r.is_locked()));
    seen
}

/// Upgradable reads, upgrades and both downgrades.
fn rwlock_upgrade<R: RawRwLockUpgradeDowngrade + Sync>(
    r: &lock_api::RwLock<R, i32>,
) -> Vec<String> {
    use lock_api::{RwLockUpgradableReadGuard as U, RwLockWriteGuard as W};
    let mut seen = Vec::new();
    let u = r.upgradable_read();
    let reader = r.try_read();
    seen.push(format!("reader beside upgradable {}", reader.is_some()));
    seen.push(format!(
        "second upgradable {}",
        r.try_upgradable_read().is_some()
    ));
    // spin lets no reader in beside the upgradable read, parking_lot does: the answers say.
    let u = match U::try_upgrade(u) {
        Ok(w) => {
            seen.push("upgraded at once".to_owned());
            W::downgrade_to_upgradable(w)
        }
        Err(u) => {
            seen.push("upgrade refused".to_owned());
            u
        }
    };
    drop(reader);
    let mut w = U::upgrade(u);
    *w += 1;
    let u = W::downgrade_to_upgradable(w);
    seen.push(format!("reader after downgrade {}", r.try_read().is_some()));
    let read = U::downgrade(u);
    seen.push(format!(
        "upgradable after downgrade {}",
        r.try_upgradable_read().is_some()
    ));
    seen.push(format!("value {}", *read));
    drop(read);
    let w = W::downgrade(r.write());
    seen.push(format!("write after downgrade {}", r.try_write().is_some()));
    drop(w);
    seen.push(format!("after {}", r.is_locked()));
    seen
}

/// Recursive reads, fair unlocks and bumps, and the timed forms.
fn rwlock_recursive_timed_fair<
    R: RawRwLockRecursiveTimed<Duration = Duration, Instant = Instant>
        + RawRwLockUpgradeFair
        + RawRwLockUpgradeTimed
        + Sync,
>(
    r: &lock_api::RwLock<R, i32>,
) -> Vec<String> {
    use lock_api::{RwLockReadGuard as Rd, RwLockUpgradableReadGuard as U, RwLockWriteGuard as W};
    let ms = Duration::from_millis(2);
    let mut seen = Vec::new();
    {
        let mut a = r.read();
        let b = r.read_recursive();
        let c = r.try_read_recursive_for(ms);
        let d = r.try_read_recursive_until(Instant::now() + ms);
        seen.push(format!(
            "recursive {} {} {:?} {:?}",
            *a,
            *b,
            c.as_deref(),
            d.as_deref()
        ));
        drop((b, c, d));
        Rd::bump(&mut a);
        Rd::unlock_fair(a);
    }
    {
        let mut u = r.upgradable_read();
        U::bump(&mut u);
        let mut w = U::try_upgrade_for(u, ms).expect("no reader in");
        *w += 1;
        W::bump(&mut w);
        W::unlock_fair(w);
        let u = r.try_upgradable_read_for(ms).expect("free");
        let w = U::try_upgrade_until(u, Instant::now() + ms).expect("no reader in");
        drop(w);
    }
    let timed_out = {
        let held = Barrier::new(2);
        let done = Barrier::new(2);
        thread::scope(|s| {
            s.spawn(|| {
                let _w = r.write();
                held.wait();
                done.wait();
            });
            held.wait();
            let t = (
                r.try_read_for(ms).is_none(),
                r.try_read_until(Instant::now() + ms).is_none(),
                r.try_write_for(ms).is_none(),
                r.try_upgradable_read_until(Instant::now() + ms).is_none(),
            );
            done.wait();
            t
        })
    };
    seen.push(format!("timed out while written {timed_out:?}"));
    seen.push(format!(
        "write {:?}",
        r.try_write_until(Instant::now() + ms).as_deref()
    ));
    seen.push(format!("read {:?}", r.try_read_for(ms).as_deref()));
    seen.push(format!("after {}", r.is_locked()));
    seen
}

#[test]
fn parking_lot_mutex_parity() {
    let raw = lock_api::Mutex::<PlRaw, i32>::new(0);
    let ours: Mutex<PlRaw, i32> = Mutex::from_raw(RawMutex::named("la_pl_mutex"), 0);
    assert_eq!(mutex_basic(&raw), mutex_basic(&ours));
    assert_books_empty("la_pl_mutex");
    assert_eq!(mutex_fair_timed(&raw), mutex_fair_timed(&ours));
    assert_books_empty("la_pl_mutex");
    assert_eq!(raw.into_inner(), ours.into_inner());
    assert_silent(&["la_pl_mutex"]);
}

#[test]
fn parking_lot_rwlock_parity() {
    let raw = lock_api::RwLock::<PlRawRw, i32>::new(0);
    let ours: RwLock<PlRawRw, i32> = RwLock::from_raw(RawRwLock::named("la_pl_rwlock"), 0);
    assert_eq!(rwlock_basic(&raw), rwlock_basic(&ours));
    assert_books_empty("la_pl_rwlock");
    assert_eq!(rwlock_upgrade(&raw), rwlock_upgrade(&ours));
    assert_books_empty("la_pl_rwlock");
    assert_eq!(
        rwlock_recursive_timed_fair(&raw),
        rwlock_recursive_timed_fair(&ours)
    );
    assert_books_empty("la_pl_rwlock");
    assert_eq!(raw.into_inner(), ours.into_inner());
    assert_silent(&["la_pl_rwlock"]);
}

#[test]
fn spin_parity() {
    let raw = lock_api::Mutex::<SpinRaw, i32>::new(0);
    let ours: Mutex<SpinRaw, i32> = Mutex::from_raw(RawMutex::named("la_spin_mutex"), 0);
    assert_eq!(mutex_basic(&raw), mutex_basic(&ours));
    assert_books_empty("la_spin_mutex");

    let raw = lock_api::RwLock::<SpinRawRw, i32>::new(0);
    let ours: RwLock<SpinRawRw, i32> = RwLock::from_raw(RawRwLock::named("la_spin_rwlock"), 0);
    assert_eq!(rwlock_basic(&raw), rwlock_basic(&ours));
    assert_books_empty("la_spin_rwlock");
    assert_eq!(rwlock_upgrade(&raw), rwlock_upgrade(&ours));
    assert_books_empty("la_spin_rwlock");
    assert_silent(&["la_spin_mutex", "la_spin_rwlock"]);
}

/// The adapters keep the raw lock's auto traits, and so its guards' (`GuardMarker` is `R`'s):
/// parking_lot's guards stay `!Send`, spin's are `Send`.
#[test]
fn send_sync_match_the_raw_locks() {
    type L<'a> = lockscope::lock_api::MutexGuard<'a, PlRaw, u32>;
    type Rc = std::rc::Rc<u32>;
    assert_traits!(lock_api::Mutex<PlRaw, u32>: Send, Sync);
    assert_traits!(Mutex<PlRaw, u32>: Send, Sync);
    assert_traits!(lock_api::Mutex<PlRaw, Rc>: !Send, !Sync);
    assert_traits!(Mutex<PlRaw, Rc>: !Send, !Sync);
    assert_traits!(lock_api::MutexGuard<'static, PlRaw, u32>: !Send, Sync);
    assert_traits!(L<'static>: !Send, Sync);
    assert_traits!(lock_api::RwLockReadGuard<'static, PlRawRw, u32>: !Send, Sync);
    assert_traits!(lockscope::lock_api::RwLockReadGuard<'static, PlRawRw, u32>: !Send, Sync);
    assert_traits!(lock_api::MutexGuard<'static, SpinRaw, u32>: Send, Sync);
    assert_traits!(lockscope::lock_api::MutexGuard<'static, SpinRaw, u32>: Send, Sync);
    assert_traits!(lock_api::RwLockUpgradableReadGuard<'static, SpinRawRw, u32>: Send, Sync);
    assert_traits!(
        lockscope::lock_api::RwLockUpgradableReadGuard<'static, SpinRawRw, u32>: Send, Sync
    );
    assert_traits!(RawMutex<PlRaw>: Send, Sync);
    assert_traits!(RawRwLock<SpinRawRw>: Send, Sync);
}

/// The books follow each step, not only the end: a hold per guard, with its mode.
#[test]
fn the_books_follow_each_step() {
    use lock_api::{RwLockUpgradableReadGuard as U, RwLockWriteGuard as W};
    let r: RwLock<PlRawRw, ()> = RwLock::from_raw(RawRwLock::named("la_steps"), ());
    let modes = || -> Vec<&'static str> {
        let l = lock_named("la_steps").unwrap();
        let mut m: Vec<_> = l.holders.iter().map(|h| h.mode).collect();
        m.sort_unstable();
        m
    };
    let a = r.read();
    let b = r.read_recursive();
    assert_eq!(modes(), ["read", "read_recursive"]);
    drop(a);
    drop(b);
    assert!(modes().is_empty());
    let u = r.upgradable_read();
    assert_eq!(modes(), ["upgradable_read"]);
    let w = U::upgrade(u);
    assert_eq!(modes(), ["write"]);
    let u = W::downgrade_to_upgradable(w);
    assert_eq!(modes(), ["upgradable_read"]);
    let read = U::downgrade(u);
    assert_eq!(modes(), ["read"]);
    // The slot is free again once downgraded (a `try_` form: an upgradable read inside a read
    // waits behind a queued writer, which is reported).
    let other = r.try_upgradable_read().unwrap();
    assert_eq!(modes(), ["read", "upgradable_read"]);
    drop((read, other));
    assert!(modes().is_empty());
    assert_silent(&["la_steps"]);
}

// ---------------------------------------------------------------------------------------------
// Guards that move, panics
// ---------------------------------------------------------------------------------------------

/// spin's guards are `Send` (`GuardSend`): dropped on another thread, they still leave the
/// books balanced.
#[test]
fn send_guards_released_on_another_thread_balance_the_books() {
    let m: Mutex<SpinRaw, i32> = Mutex::from_raw(RawMutex::named("la_send_mutex"), 0);
    let g = m.lock();
    assert_eq!(holders("la_send_mutex"), 1);
    thread::scope(|s| s.spawn(move || drop(g)).join().unwrap());
    assert_books_empty("la_send_mutex");
    assert!(m.try_lock().is_some());

    let r: RwLock<SpinRawRw, i32> = RwLock::from_raw(RawRwLock::named("la_send_rwlock"), 0);
    let a = r.read();
    let b = r.try_read().unwrap();
    let main_actor = lock_named("la_send_rwlock").unwrap().holders[0].actor_id;
    assert_eq!(holders("la_send_rwlock"), 2);
    thread::scope(|s| s.spawn(move || drop(b)).join().unwrap());
    let l = lock_named("la_send_rwlock").unwrap();
    assert_eq!(l.holders.len(), 1, "{:?}", l.holders);
    assert_eq!(l.holders[0].actor_id, main_actor);
    drop(a);
    assert_books_empty("la_send_rwlock");

    // A read taken on another thread and released here: that thread's record is taken back.
    let (tx, rx) = mpsc::channel();
    thread::scope(|s| {
        s.spawn(|| tx.send(r.read()).unwrap());
    });
    let moved = rx.recv().unwrap();
    let mine = r.try_read().unwrap();
    assert_eq!(holders("la_send_rwlock"), 2);
    drop(moved); // this thread holds one too: its own record goes first
    assert_eq!(holders("la_send_rwlock"), 1);
    drop(mine);
    assert_books_empty("la_send_rwlock");
    let u = r.upgradable_read();
    thread::scope(|s| s.spawn(move || drop(u)).join().unwrap());
    assert_books_empty("la_send_rwlock");
    assert!(r.try_write().is_some());
}

/// A release takes back the record of the thread that releases, not the latest one: here the
/// other thread's read came last, and stays in the books after this thread's read ends.
#[test]
fn a_release_takes_back_its_own_threads_record() {
    let r: RwLock<PlRawRw, ()> = RwLock::from_raw(RawRwLock::named("la_own_record"), ());
    let mine = r.read();
    let me = lock_named("la_own_record").unwrap().holders[0].actor_id;
    let (held, done) = (Barrier::new(2), Barrier::new(2));
    let after = thread::scope(|s| {
        s.spawn(|| {
            let _theirs = r.read();
            held.wait();
            done.wait();
        });
        held.wait();
        drop(mine);
        let after = lock_named("la_own_record").unwrap().holders;
        done.wait(); // before asserting: a failed assertion must not leave the thread waiting
        after
    });
    assert_eq!(after.len(), 1, "{after:?}");
    assert_ne!(
        after[0].actor_id, me,
        "the other thread still holds its read"
    );
    assert_books_empty("la_own_record");
}

#[test]
fn a_panic_while_holding_releases_the_books() {
    let m: Mutex<PlRaw, i32> = Mutex::from_raw(RawMutex::named("la_panic_mutex"), 0);
    let r: RwLock<PlRawRw, i32> = RwLock::from_raw(RawRwLock::named("la_panic_rwlock"), 0);
    let caught = catch_unwind(AssertUnwindSafe(|| {
        let _g = m.lock();
        let _w = r.read();
        assert_eq!(holders("la_panic_mutex"), 1);
        panic!("while holding");
    }));
    assert!(caught.is_err());
    assert_books_empty("la_panic_mutex");
    assert_books_empty("la_panic_rwlock");
    assert!(m.try_lock().is_some(), "the lock itself is free too");
    assert!(r.try_write().is_some());
}

// ---------------------------------------------------------------------------------------------
// One graph with the other wrappers
// ---------------------------------------------------------------------------------------------

/// An adapter mutex then a `lockscope::parking_lot::Mutex` on one thread, the other order on
/// another: one `lock-order-inversion` naming both, though nothing deadlocked.
#[test]
fn abba_with_a_parking_lot_wrapper_is_one_inversion() {
    let a: Arc<Mutex<PlRaw, i32>> = Arc::new(Mutex::from_raw(RawMutex::named("la_abba_a"), 0));
    let b = Arc::new(lockscope::parking_lot::Mutex::named("la_abba_b", 0));
    let (a1, b1) = (a.clone(), b.clone());
    thread::spawn(move || {
        let _a = a1.lock();
        *b1.lock() += 1;
    })
    .join()
    .unwrap();
    let (a2, b2) = (a.clone(), b.clone());
    thread::spawn(move || {
        let _b = b2.lock();
        *a2.lock() += 1;
    })
    .join()
    .unwrap();
    let f = wait_for_finding(FindingKind::LockOrderInversion, &["la_abba_a", "la_abba_b"]);
    assert!(f.to_string().starts_with("lockscope: lock-order-inversion"));
    assert!(
        f.sites.iter().any(|s| s.contains("lock_api_adapter.rs")),
        "the user's sites, not lock_api's: {:?}",
        f.sites
    );
    assert!(
        !f.sites.iter().any(|s| s.contains("lock_api-0.4")),
        "{:?}",
        f.sites
    );
}

/// `try_` forms add no lock-order edge: the same two orders with one `try_lock` are silent.
#[test]
fn try_lock_adds_no_edge() {
    let a: Mutex<PlRaw, ()> = Mutex::from_raw(RawMutex::named("la_try_a"), ());
    let b = lockscope::parking_lot::Mutex::named("la_try_b", ());
    {
        let _a = a.lock();
        let _b = b.lock();
    }
    {
        let _b = b.lock();
        let _a = a.try_lock().unwrap();
    }
    assert_silent(&["la_try_a", "la_try_b"]);
}

/// A re-lock on one thread (timed, so it gives up) is `nested-acquire`, as for the wrappers.
#[test]
fn a_relock_on_one_thread_is_nested_acquire() {
    let m: Mutex<PlRaw, ()> = Mutex::from_raw(RawMutex::named("la_self_wait"), ());
    let _g = m.lock();
    assert!(m.try_lock().is_none());
    assert!(
        findings_about(&["la_self_wait"]).is_empty(),
        "try_lock cannot deadlock"
    );
    assert!(m.try_lock_for(Duration::from_millis(5)).is_none());
    let f = wait_for_finding(FindingKind::NestedAcquire, &["la_self_wait"]);
    assert!(f.summary.contains("so the wait can only time out"), "{f}");
}

/// A read inside a read is `nested-acquire` (lock_api promises no re-entry of a plain read); a
/// recursive read, or a read inside the upgradable read, is not.
#[test]
fn read_inside_a_read_is_nested_but_read_recursive_is_not() {
    let ok: RwLock<PlRawRw, ()> = RwLock::from_raw(RawRwLock::named("la_recursive_ok"), ());
    {
        let _a = ok.read();
        let _b = ok.read_recursive();
        let _c = ok.try_read_recursive_for(Duration::from_millis(1)).unwrap();
    }
    {
        let _u = ok.upgradable_read();
        let _b = ok.read();
    }
    assert_silent(&["la_recursive_ok"]);

    let bad: RwLock<PlRawRw, ()> = RwLock::from_raw(RawRwLock::named("la_recursive_bad"), ());
    let _a = bad.read();
    let _b = bad.read();
    let f = wait_for_finding(FindingKind::NestedAcquire, &["la_recursive_bad"]);
    assert!(f.summary.contains("latent deadlock"), "{f}");
}

/// lock_api's `ReentrantMutex` over the adapter: the owner's re-entries never reach the raw
/// mutex, so they are neither recorded nor reported; the outer hold is, and is released.
#[test]
fn a_reentrant_mutex_over_the_adapter_is_not_a_nested_acquire() {
    let m: lock_api::ReentrantMutex<RawMutex<PlRaw>, parking_lot::RawThreadId, u32> =
        lock_api::ReentrantMutex::from_raw(
            RawMutex::named("la_reentrant"),
            parking_lot::RawThreadId::INIT,
            1,
        );
    {
        let a = m.lock();
        let b = m.lock();
        assert_eq!(*a + *b, 2);
        assert_eq!(holders("la_reentrant"), 1);
    }
    assert_books_empty("la_reentrant");
    assert_silent(&["la_reentrant"]);
}

/// Set in the child's environment only: the deadlocking test does nothing without it.
const CHILD_ENV: &str = "LOCKSCOPE_LOCK_API_CHILD";

/// An armed test that re-locks a spin mutex (no timed form: it spins for good).
#[lockscope::test]
#[ignore = "deliberately deadlocks; run in a child process by the test below"]
fn relock_of_a_spin_mutex() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let m: Mutex<SpinRaw, ()> = Mutex::from_raw(RawMutex::named("la_exit_spin"), ());
    let _g = m.lock();
    let _h = m.lock();
    unreachable!("a spin mutex is not reentrant");
}

#[test]
fn an_armed_relock_ends_the_process_with_the_report() {
    let run = common::run_child(
        &[
            "relock_of_a_spin_mutex",
            "--exact",
            "--ignored",
            "--test-threads=1",
        ],
        CHILD_ENV,
    );
    run.assert_ended_by_the_watchdog();
    assert!(run.stderr.contains("la_exit_spin"), "{}", run.stderr);
    assert!(run.stderr.contains("lock_api_adapter.rs"), "{}", run.stderr);
}

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

#[test]
fn unnamed_locks_are_named_after_their_first_acquisition_site() {
    let m: Mutex<PlRaw, ()> = Mutex::new(());
    // SAFETY: only reads the name.
    assert_eq!(unsafe { m.raw() }.name(), None, "registered at first use");
    let line = line!() + 1;
    drop(m.lock());
    // SAFETY: as above.
    let name = unsafe { m.raw() }.name().unwrap().to_owned();
    assert!(
        name.ends_with(&format!("lock_api_adapter.rs:{line}")),
        "{name}"
    );

    let r: RwLock<SpinRawRw, ()> = RwLock::new(());
    let line = line!() + 1;
    let g = r.read();
    // SAFETY: as above.
    let name = unsafe { r.raw() }.name().unwrap().to_owned();
    assert!(
        name.ends_with(&format!("lock_api_adapter.rs:{line}")),
        "{name}"
    );
    let l = lock_named(&name).unwrap();
    assert_eq!(l.kind, "blocking_rwlock");
    assert!(
        l.holders[0]
            .site
            .contains(&format!("lock_api_adapter.rs:{line}:")),
        "the hold's site is the caller's: {:?}",
        l.holders
    );
    drop(g);
}

static STATIC: Mutex<PlRaw, u32> = Mutex::const_new(RawMutex::const_named("la_static"), 0);

#[test]
fn explicit_names_and_statics() {
    *STATIC.lock() += 1;
    let l = lock_named("la_static").unwrap();
    assert_eq!(l.kind, "blocking_mutex");
    assert!(
        l.created_at.contains("lock_api_adapter.rs"),
        "{}",
        l.created_at
    );

    let line = line!() + 1;
    let raw = RawRwLock::<PlRawRw>::named("la_named_at_once");
    let l = lock_named("la_named_at_once").expect("registered at once");
    assert!(
        l.created_at
            .contains(&format!("lock_api_adapter.rs:{line}")),
        "{}",
        l.created_at
    );
    drop(raw);
    assert!(
        lock_named("la_named_at_once").is_none(),
        "unregistered on drop"
    );
}
