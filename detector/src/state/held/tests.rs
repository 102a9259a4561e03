use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::state::tls::LOCAL;

use super::*;

fn site() -> &'static Location<'static> {
    Location::caller()
}

#[test]
fn push_release_and_overflow() {
    let me = 77;
    let mut refs = Vec::new();
    for p in 1..=(INLINE as u64 + 40) {
        refs.push(push(1000 + p, me, site(), 5, Meta::new(1, Mode::Permits, 0)).unwrap());
    }
    let mut n = 0;
    for_each_mine(me, |_| n += 1);
    assert_eq!(n, INLINE + 40);
    // Release half from another thread: the owner's view must follow.
    let far: Vec<_> = refs.drain(..30).collect();
    std::thread::spawn(move || far.into_iter().for_each(EntryRef::release))
        .join()
        .unwrap();
    let mut n = 0;
    for_each_mine(me, |_| n += 1);
    assert_eq!(n, INLINE + 10);
    refs.into_iter().for_each(EntryRef::release);
    assert!(!holds_any_here(me));
    // Inline entries are reused after remote clears.
    let r = push(5, me, site(), 5, Meta::new(1, Mode::Exclusive, 0)).unwrap();
    assert_eq!(r.view().unwrap().prim, 5);
    r.release();
}

/// A hold's scope is kept whole (it was cut to 16 bits: issue 17).
#[test]
fn a_hold_keeps_a_scope_id_past_16_bits() {
    let scope = 0x0012_3456;
    let hold = NewHold {
        prim: 9,
        actor: 78,
        site: site(),
        since: 5,
        meta: Meta::new(1, Mode::Exclusive, 0),
        scope,
    };
    let r = LOCAL.with(|l| push_in(l, hold)).unwrap();
    assert_eq!(r.view().unwrap().scope, scope);
    r.release();
}

/// The same entry refilled over and over with holds of one primitive (so the key alone
/// cannot tell them apart) while another thread snapshots it: every view must be one
/// hold, never fields of two (issue 17).
#[test]
fn a_snapshot_never_mixes_two_holds_of_one_entry() {
    use std::sync::atomic::AtomicBool;
    const FILLS: u64 = 200_000;
    let stop = Arc::new(AtomicBool::new(false));
    // The writer's table, found by the reader through the entry pointer.
    let first = push(7, 1, site(), 1, Meta::new(1, Mode::Permits, 0)).unwrap();
    struct Shared(*const Entry);
    // SAFETY: entries are only read through shared references (atomics), and tables are
    // never freed.
    unsafe impl Send for Shared {}
    let entry = first.0.as_ptr().cast_const();
    let shared = Shared(entry);
    first.release();
    let reader = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let shared = shared;
            let mut seen = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: tables are never freed; only read through shared references.
                let e = unsafe { &*shared.0 };
                if let Some(v) = e.view(0) {
                    let n = v.actor.as_u64();
                    assert_eq!(v.since, n, "since of another hold: {v:?}");
                    assert_eq!(
                        u64::from(v.permits),
                        n & 0xffff,
                        "permits of another hold: {v:?}"
                    );
                    seen += 1;
                }
            }
            seen
        })
    };
    for n in 2..FILLS {
        let r = push(
            7,
            n,
            site(),
            n,
            Meta::new((n & 0xffff) as u32, Mode::Permits, 0),
        )
        .unwrap();
        assert!(
            std::ptr::eq(r.0.as_ptr(), entry),
            "the entry was not reused"
        );
        r.release();
    }
    stop.store(true, Ordering::Relaxed);
    let seen = reader.join().unwrap();
    println!("{seen} consistent views");
}

/// A grant after a wait is counted in the thread's tally: the first untimed short wait of a
/// thread with no sampled one is left to the primitive (it takes the latest sample's bucket),
/// the rest are counted here, in the bucket of the thread's latest sample; a primitive whose
/// slot another has is left to the primitive.
#[test]
fn waits_are_tallied_on_the_granting_thread() {
    use crate::base::stats::{Tallied, WaitTime};
    LOCAL.with(|l| {
        // This thread's table (a recycled one may have slots taken by earlier primitives: use
        // an id whose slot is free, and another id of the same slot).
        let e = push_in(
            l,
            NewHold {
                prim: 1,
                actor: 1,
                site: site(),
                since: 1,
                meta: Meta::default(),
                scope: 0,
            },
        )
        .expect("this thread's table");
        e.release();
        // SAFETY: this thread's live table.
        let th = unsafe { &*l.held.get() };
        let free = |p: u64| th.tallies[tally_slot(p)].prim.load(Ordering::Relaxed) == 0;
        let prim = (0x7a11_0000..).find(|&p| free(p)).unwrap();
        let other = (prim + 1..)
            .find(|&p| tally_slot(p) == tally_slot(prim))
            .unwrap();
        assert!(!tally_wait(l, prim, WaitTime::Short), "no sample here yet");
        assert!(tally_wait(l, prim, WaitTime::ShortSample(300_000)));
        assert!(tally_wait(l, prim, WaitTime::Short));
        assert!(tally_wait(l, prim, WaitTime::Long(2_000_000_000)));
        assert!(
            !tally_wait(l, other, WaitTime::ShortSample(5)),
            "the slot is prim's"
        );
        let t = tally_of(prim);
        assert_eq!(t.contended, 3);
        assert_eq!(t.waits.count(), 3);
        // 0.3 ms is in the 0.5 ms bucket (1): the sample and the untimed wait after it.
        assert_eq!((t.waits.buckets[1], t.waits.buckets[9]), (2, 1));
        assert_eq!(t.waits.sum_ns, 2 * 300_000 + 2_000_000_000);
        assert_eq!(claim_tallies(prim).contended, 3);
        assert_eq!(tally_of(prim), Tallied::default());
    });
}

/// The task index follows a task's holds: its first hold through the slot it just read, the
/// next ones by the general path, and each release clears its own ref's bit (found by
/// rounding the ref's address down to its slot), whichever ref it was.
#[test]
fn the_task_index_follows_a_tasks_holds() {
    // A task id no other test uses (ids are hashed onto slots).
    let task = 0x00ab_cdef_0123;
    let hold = |prim| push(prim, task, site(), 5, Meta::new(1, Mode::Exclusive, 0)).unwrap();
    assert!(!task_any(task));
    let look = task_look(task);
    assert!(!look.holds(), "a fresh task holds nothing");
    let first = hold(31);
    first.index_looked(task, look);
    assert!(task_any(task), "its first hold is indexed");
    let second = hold(32);
    second.index_task(task);
    let third = hold(33);
    third.index_task(task);
    let mut out = [(0, 0, std::ptr::null()); 8];
    let n = task_mine(task, &mut out);
    let mut prims: Vec<u64> = out[..n].iter().map(|h| h.0).collect();
    prims.sort_unstable();
    assert_eq!(prims, [31, 32, 33]);
    // Released out of order: the middle ref's bit first.
    second.release();
    assert!(task_any(task));
    assert_eq!(slot_of(task).bits.load(Ordering::Relaxed), 0b101);
    first.release();
    assert_eq!(slot_of(task).bits.load(Ordering::Relaxed), 0b100);
    third.release();
    assert!(!task_any(task), "no hold left");
    // The slot stays the task's: its next first hold takes ref 0 again.
    let look = task_look(task);
    assert!(!look.holds() && slot_of(task).task.load(Ordering::Relaxed) == task);
    let again = hold(34);
    again.index_looked(task, look);
    assert_eq!(slot_of(task).bits.load(Ordering::Relaxed), 0b1);
    again.release();
    assert!(!task_any(task));
}
