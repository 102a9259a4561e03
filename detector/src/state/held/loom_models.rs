//! Loom models of one hold table (`RUSTFLAGS="--cfg loom" cargo test -p lockscope-detector
//! --release --lib loom`): the owner's acquires and releases, a release from another thread,
//! a snapshot racing a refill, and the recycling of an exited thread's table. Each builds its
//! own table and the owner's thread-locals by hand (loom's threads have no `LOCAL`), and
//! asserts the books: what a snapshot sees is a hold that was taken and not yet released,
//! whole, and the table ends holding exactly what was not released.

use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::state::tls::Local;

use super::*;

/// Explores `f` with at most three preemptions (enough for these two- and three-thread
/// models, and minutes rather than hours in CI) unless `LOOM_MAX_PREEMPTIONS` says more.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

/// The thread-locals of thread number `seq`, owning `table`.
fn owner_of(table: &Arc<ThreadHeld>, seq: u64) -> Local {
    let l = Local::fresh();
    l.thread_seq.set(seq);
    l.held.set(Arc::as_ptr(table));
    l
}

/// A hold of `prim` by actor `n`, started at `n`, for `n` permits, in scope `n`: every
/// field says `n`, so a view mixing two holds shows.
fn hold(prim: u64, n: u64) -> NewHold {
    NewHold {
        prim,
        actor: n,
        site: Location::caller(),
        since: n,
        meta: Meta::new(n as u32, Mode::Permits, 0),
        scope: n as u32,
    }
}

/// Every hold the table shows, each checked whole; `(prim, n)` pairs.
fn books(table: &ThreadHeld) -> Vec<(u64, u64)> {
    let mut seen = Vec::new();
    table.for_each(|v| {
        let n = v.actor.as_u64();
        assert_eq!(v.since, n, "{v:?} mixes two holds");
        assert_eq!(u64::from(v.permits), n, "{v:?} mixes two holds");
        assert_eq!(u64::from(v.scope), n, "{v:?} mixes two holds");
        seen.push((v.prim, n));
    });
    seen.sort_unstable();
    seen
}

/// A thread that takes one snapshot of `table` while the model's owner works.
fn snapshot(table: &Arc<ThreadHeld>) -> loom::thread::JoinHandle<Vec<(u64, u64)>> {
    let table = table.clone();
    loom::thread::spawn(move || books(&table))
}

#[test]
fn loom_acquire_and_local_release_against_a_snapshot() {
    model(|| {
        let table = ThreadHeld::new(1);
        let snap = snapshot(&table);
        let l = owner_of(&table, 1);
        let a = push_in(&l, hold(10, 1)).unwrap();
        let b = push_in(&l, hold(11, 2)).unwrap();
        a.release_in(Some(&l));
        let seen = snap.join().unwrap();
        assert!(
            seen.iter().all(|h| [(10, 1), (11, 2)].contains(h)),
            "{seen:?}"
        );
        assert_eq!(books(&table), vec![(11, 2)]);
        assert_eq!(l.mask.get(), 0b10, "the owner's bitmap lost track");
        b.release_in(Some(&l));
        assert!(books(&table).is_empty());
    });
}

#[test]
fn loom_release_from_another_thread_frees_the_entry_for_the_owner() {
    model(|| {
        let table = ThreadHeld::new(1);
        let l = owner_of(&table, 1);
        let a = push_in(&l, hold(10, 1)).unwrap();
        let a_entry = a.0;
        let remote = loom::thread::spawn(move || a.release_in(None));
        let b = push_in(&l, hold(11, 2)).unwrap();
        remote.join().unwrap();
        // The bitmap still calls `a`'s entry taken; the full table re-reads the keys.
        let c = push_in(&l, hold(12, 3)).unwrap();
        assert_eq!(c.0, a_entry, "the remotely freed entry was not reused");
        assert_eq!(books(&table), vec![(11, 2), (12, 3)]);
        b.release_in(Some(&l));
        c.release_in(Some(&l));
        assert!(books(&table).is_empty());
    });
}

#[test]
fn loom_a_snapshot_never_mixes_a_hold_with_its_entry_s_next() {
    model(|| {
        let table = ThreadHeld::new(1);
        let snap = snapshot(&table);
        let l = owner_of(&table, 1);
        // Two holds of the same primitive, one after the other, in the same entry.
        push_in(&l, hold(10, 1)).unwrap().release_in(Some(&l));
        let second = push_in(&l, hold(10, 2)).unwrap();
        let seen = snap.join().unwrap();
        assert!(
            seen.iter().all(|h| [(10, 1), (10, 2)].contains(h)),
            "{seen:?}"
        );
        assert_eq!(books(&table), vec![(10, 2)]);
        second.release_in(Some(&l));
    });
}

#[test]
fn loom_an_exited_thread_s_table_is_recycled_only_once_empty() {
    model(|| {
        let table = ThreadHeld::new(1);
        let l = owner_of(&table, 1);
        // The owner takes a hold whose guard moves away, then exits.
        let moved = push_in(&l, hold(10, 1)).unwrap();
        table.orphaned.store(true, Ordering::Release);
        let releaser = loom::thread::spawn(move || moved.release_in(None));
        let newcomer = {
            let table = table.clone();
            loom::thread::spawn(move || {
                if !table.recycle(2) {
                    return None;
                }
                // Taken: it must hold nothing, and its new owner's hold is the only one.
                assert!(books(&table).is_empty(), "recycled while holding");
                let l = owner_of(&table, 2);
                let h = push_in(&l, hold(11, 2)).unwrap();
                Some((books(&table), h))
            })
        };
        releaser.join().unwrap();
        if let Some((seen, h)) = newcomer.join().unwrap() {
            assert_eq!(seen, vec![(11, 2)]);
            assert_eq!(table.thread.load(Ordering::Relaxed), 2);
            assert_eq!(books(&table), vec![(11, 2)]);
            h.release_in(None);
        } else {
            assert!(
                table.orphaned.load(Ordering::Relaxed),
                "not taken, yet not orphaned"
            );
        }
        assert!(books(&table).is_empty());
    });
}
