//! parking_lot's `arc_lock` guards (feature `arc_lock`): the same scenarios against
//! `parking_lot` (whose `arc_lock` the feature turns on) and `lockscope::parking_lot`, and the
//! books and findings of the Arc guards: every acquisition and guard method is recorded as the
//! borrowed form's, at the caller's site.
#![cfg(feature = "arc_lock")]

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use lockscope::detector::FindingKind;

#[macro_use]
mod support;
use support::findings::{assert_silent, lock_named, wait_for_finding};
use support::spawn_parked;

/// Runs `$body` twice, with `$pl` naming `parking_lot` and then `lockscope::parking_lot`.
macro_rules! parity {
    ($($t:tt)*) => { parity_of!(parking_lot, lockscope::parking_lot; $($t)*); };
}

parity! {
    fn arc_mutex_guard(pl) {
        let m = Arc::new(pl::Mutex::new(vec![1]));
        let mut g: pl::ArcMutexGuard<pl::RawMutex, Vec<i32>> = m.lock_arc();
        g.push(2);
        assert!(m.try_lock_arc().is_none());
        assert!(m.try_lock_arc_for(Duration::from_millis(1)).is_none());
        assert!(m.try_lock_arc_until(Instant::now()).is_none());
        assert!(Arc::ptr_eq(pl::ArcMutexGuard::mutex(&g), &m));
        let seen = pl::ArcMutexGuard::unlocked(&mut g, || m.try_lock().map(|v| v.len()));
        assert_eq!(seen, Some(2));
        pl::ArcMutexGuard::unlocked_fair(&mut g, || assert!(!m.is_locked()));
        pl::ArcMutexGuard::bump(&mut g);
        g.push(3);
        let back = pl::ArcMutexGuard::into_arc(g);
        assert!(Arc::ptr_eq(&back, &m));
        assert!(!m.is_locked());
        pl::ArcMutexGuard::unlock_fair(m.lock_arc());
        let back = pl::ArcMutexGuard::into_arc_fair(m.try_lock_arc().unwrap());
        assert_eq!(*back.lock(), [1, 2, 3]);

        // The guard has no lifetime: it moves into a closure that outlives the borrow.
        let g = m.lock_arc();
        let h = thread::spawn({
            let m = m.clone();
            move || m.lock().len()
        });
        let keep: Box<dyn FnOnce() -> usize> = Box::new(move || g.len());
        assert_eq!(keep(), 3); // drops the guard: the thread gets in
        assert_eq!(h.join().unwrap(), 3);
    }
}

parity! {
    fn arc_rwlock_read_and_write_guards(pl) {
        let r = Arc::new(pl::RwLock::new(1));
        {
            let a = r.read_arc();
            let b = r.read_arc_recursive();
            let c = r.try_read_arc().unwrap();
            let d = r.try_read_recursive_arc().unwrap();
            let e = r.try_read_arc_for(Duration::from_millis(1)).unwrap();
            let f = r.try_read_arc_until(Instant::now()).unwrap();
            let g = r.try_read_arc_recursive_for(Duration::from_millis(1)).unwrap();
            let h = r.try_read_arc_recursive_until(Instant::now()).unwrap();
            assert_eq!(*a + *b + *c + *d + *e + *f + *g + *h, 8);
            assert!(r.try_write_arc().is_none());
            assert!(r.try_write_arc_for(Duration::from_millis(1)).is_none());
            assert!(Arc::ptr_eq(pl::ArcRwLockReadGuard::rwlock(&a), &r));
            let mut a = a;
            pl::ArcRwLockReadGuard::unlocked(&mut a, || ());
            pl::ArcRwLockReadGuard::unlocked_fair(&mut a, || ());
            pl::ArcRwLockReadGuard::bump(&mut a);
            pl::ArcRwLockReadGuard::unlock_fair(a);
            drop(pl::ArcRwLockReadGuard::into_arc_fair(b));
            drop(pl::ArcRwLockReadGuard::into_arc(c));
        }
        let mut w = r.write_arc();
        *w += 1;
        assert!(r.try_read_arc().is_none());
        assert!(r.try_write_arc_until(Instant::now()).is_none());
        pl::ArcRwLockWriteGuard::unlocked(&mut w, || assert!(r.try_read().is_some()));
        pl::ArcRwLockWriteGuard::unlocked_fair(&mut w, || ());
        pl::ArcRwLockWriteGuard::bump(&mut w);
        assert_eq!(*w, 2);
        let rd = pl::ArcRwLockWriteGuard::downgrade(w);
        assert!(r.try_read().is_some() && r.try_write().is_none());
        drop(rd);
        let u = pl::ArcRwLockWriteGuard::downgrade_to_upgradable(r.write_arc());
        assert!(r.try_upgradable_read().is_none() && r.try_read().is_some());
        drop(u);
        pl::ArcRwLockWriteGuard::unlock_fair(r.write_arc());
        let back = pl::ArcRwLockWriteGuard::into_arc(r.try_write_arc().unwrap());
        drop(pl::ArcRwLockWriteGuard::into_arc_fair(back.write_arc()));
        assert!(!r.is_locked());
    }
}

parity! {
    fn arc_rwlock_upgradable_guard(pl) {
        let r = Arc::new(pl::RwLock::new(1));
        let mut u = r.upgradable_read_arc();
        assert!(r.try_upgradable_read_arc().is_none());
        assert!(r.try_upgradable_read_arc_for(Duration::from_millis(1)).is_none());
        assert!(r.try_upgradable_read_arc_until(Instant::now()).is_none());
        u.with_upgraded(|v| *v += 1);
        assert_eq!(u.try_with_upgraded(|v| *v), Some(2));
        assert_eq!(u.try_with_upgraded_for(Duration::from_millis(1), |v| *v), Some(2));
        assert_eq!(u.try_with_upgraded_until(Instant::now(), |v| *v), Some(2));
        let reader = r.read_arc();
        let u = pl::ArcRwLockUpgradableReadGuard::try_upgrade(u).unwrap_err();
        let u = pl::ArcRwLockUpgradableReadGuard::try_upgrade_for(u, Duration::from_millis(1))
            .unwrap_err();
        let mut u = pl::ArcRwLockUpgradableReadGuard::try_upgrade_until(u, Instant::now())
            .unwrap_err();
        assert_eq!(u.try_with_upgraded(|v| *v), None);
        pl::ArcRwLockUpgradableReadGuard::unlocked(&mut u, || ());
        pl::ArcRwLockUpgradableReadGuard::unlocked_fair(&mut u, || ());
        pl::ArcRwLockUpgradableReadGuard::bump(&mut u);
        drop(reader);
        let w = pl::ArcRwLockUpgradableReadGuard::try_upgrade(u).ok().unwrap();
        let u = pl::ArcRwLockWriteGuard::downgrade_to_upgradable(w);
        let rd = pl::ArcRwLockUpgradableReadGuard::downgrade(u);
        assert!(r.try_upgradable_read().is_some());
        drop(rd);
        let w = pl::ArcRwLockUpgradableReadGuard::upgrade(r.upgradable_read_arc());
        assert!(r.try_read().is_none());
        drop(w);
        let u = r.try_upgradable_read_arc().unwrap();
        let back = pl::ArcRwLockUpgradableReadGuard::into_arc(u);
        pl::ArcRwLockUpgradableReadGuard::unlock_fair(back.upgradable_read_arc());
        drop(pl::ArcRwLockUpgradableReadGuard::into_arc_fair(r.upgradable_read_arc()));
        assert!(!r.is_locked());
    }
}

parity! {
    fn arc_guard_waits_for_the_holder(pl) {
        let m = Arc::new(pl::Mutex::new(0));
        let g = m.lock_arc();
        let m2 = m.clone();
        let waiter = spawn_parked(|| warm_up!(pl), move || *m2.lock_arc() += 1);
        drop(g);
        waiter.join().unwrap();
        assert_eq!(*m.lock(), 1);
    }
}

#[test]
fn send_sync_matches_parking_lot() {
    assert_traits!(parking_lot::ArcMutexGuard<parking_lot::RawMutex, u32>: !Send, Sync);
    assert_traits!(lockscope::parking_lot::ArcMutexGuard<parking_lot::RawMutex, u32>: !Send, Sync);
    type Cell = std::cell::Cell<u32>;
    assert_traits!(parking_lot::ArcRwLockReadGuard<parking_lot::RawRwLock, Cell>: !Send, !Sync);
    assert_traits!(lockscope::parking_lot::ArcRwLockReadGuard<parking_lot::RawRwLock, Cell>: !Send, !Sync);
    assert_traits!(parking_lot::ArcRwLockWriteGuard<parking_lot::RawRwLock, u32>: !Send, Sync);
    assert_traits!(lockscope::parking_lot::ArcRwLockWriteGuard<parking_lot::RawRwLock, u32>: !Send, Sync);
    assert_traits!(parking_lot::ArcRwLockUpgradableReadGuard<parking_lot::RawRwLock, u32>: !Send, Sync);
    assert_traits!(lockscope::parking_lot::ArcRwLockUpgradableReadGuard<parking_lot::RawRwLock, u32>: !Send, Sync);
}

// ---------------------------------------------------------------------------------------------
// The books and findings
// ---------------------------------------------------------------------------------------------

/// Holds are in the books while an Arc guard lives, at the caller's site, with the mode of
/// the access; upgrades, downgrades, `unlocked` and `into_arc` keep them right.
#[test]
fn arc_guards_keep_the_books() {
    use lockscope::parking_lot::{ArcRwLockUpgradableReadGuard, ArcRwLockWriteGuard, RwLock};
    const NAME: &str = "pl_arc_books";
    let r = Arc::new(RwLock::named(NAME, 0));
    let holders = || lock_named(NAME).unwrap().holders;

    let u = r.upgradable_read_arc();
    let h = holders();
    assert_eq!(h.len(), 1);
    assert!(h[0].site.contains("parking_lot_arc_lock.rs"), "{h:?}");
    assert_eq!(h[0].mode, "upgradable_read");
    let w = ArcRwLockUpgradableReadGuard::upgrade(u);
    assert_eq!(holders().len(), 1);
    assert_eq!(holders()[0].mode, "write");
    let mut rd = ArcRwLockWriteGuard::downgrade(w);
    assert_eq!(holders()[0].mode, "read");
    lockscope::parking_lot::ArcRwLockReadGuard::unlocked(&mut rd, || {
        assert!(holders().is_empty(), "released while unlocked");
    });
    assert_eq!(holders().len(), 1, "held again after unlocked");
    let arc = lockscope::parking_lot::ArcRwLockReadGuard::into_arc(rd);
    assert!(holders().is_empty());
    let r2 = arc.read_arc();
    let r3 = arc.read_arc_recursive();
    assert_eq!(holders().len(), 2);
    drop((r2, r3));
    assert!(holders().is_empty());
    assert_silent(&[NAME]);
}

/// `lock_arc` then `write_arc` here, the other order there: a lock-order inversion, as for
/// the borrowed forms.
#[test]
fn arc_acquisitions_enter_the_lock_order_graph() {
    let a = Arc::new(lockscope::parking_lot::Mutex::named("pl_arc_inv_a", 0));
    let b = Arc::new(lockscope::parking_lot::RwLock::named("pl_arc_inv_b", 0));
    let (a1, b1) = (a.clone(), b.clone());
    thread::spawn(move || {
        let _a = a1.lock_arc();
        *b1.write_arc() += 1;
    })
    .join()
    .unwrap();
    let (a2, b2) = (a.clone(), b.clone());
    thread::spawn(move || {
        let _b = b2.read_arc();
        *a2.lock_arc() += 1;
    })
    .join()
    .unwrap();
    wait_for_finding(
        FindingKind::LockOrderInversion,
        &["pl_arc_inv_a", "pl_arc_inv_b"],
    );
}

/// A panic inside `with_upgraded` leaves the Arc guard holding its upgradable read, in fact
/// and in the books, as parking_lot's does.
#[test]
fn a_panic_in_with_upgraded_leaves_the_guard_whole() {
    const NAME: &str = "pl_arc_unwind";
    let r = Arc::new(lockscope::parking_lot::RwLock::named(NAME, 0));
    let mut u = r.upgradable_read_arc();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        u.with_upgraded(|_| panic!("inside with_upgraded"));
    }));
    assert!(caught.is_err());
    assert!(r.try_upgradable_read().is_none(), "still held");
    assert!(r.try_read().is_some(), "as an upgradable read");
    let h = lock_named(NAME).unwrap().holders;
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!(h[0].mode, "upgradable_read");
    drop(u);
    assert!(lock_named(NAME).unwrap().holders.is_empty());
    assert!(!r.is_locked());
}
