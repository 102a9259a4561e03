//! Wait slots: the common wait, recorded on the thread where it began, without a lock.
//!
//! A primitive's waiter queue (`state::wait`) sits behind a mutex that every waiting task
//! takes twice, once to queue and once when granted; in a convoy of tasks on one contended
//! tokio mutex, those locks and the queue's memory bounced between the workers at every
//! acquisition. The common wait needs none of what the queue does besides recording it: a
//! task that holds nothing, waiting untimed for an async primitive. Such a wait takes a slot
//! in its thread's table instead, filled as a hold entry is (relaxed stores, a seqlock
//! generation, a release store of the key), and cleared with one store of its key from
//! whichever thread ends the wait. Every other wait (blocking, timed, by a task that holds
//! something, a retry, a thread whose slots are all taken) goes to the queue as before.
//!
//! Readers (snapshots, scrapes) add the slots' waits to the queues' (see [`waits_by_prim`]).
//! A slot's wait carries a sequence number with [`SLOT_SEQ`] set, unique per thread, so that
//! rules tell it apart from a queue's.

use std::collections::HashMap;
use std::panic::Location;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;

use crate::base::loom::{AtomicPtr, AtomicU64};
use crate::model::mode::{FLAG_MOVABLE, Meta, Mode};
use crate::state::actor::ActorId;
use crate::state::tls::Local;
use crate::state::wait::WaiterRec;

use super::{THREADS, ThreadHeld};

/// Wait slots per thread (two in the loom models): as many as the tasks of a convoy on one
/// contended mutex (64 on two workers in the yardstick) that may wait on one worker.
pub const WAITS: usize = if cfg!(loom) { 2 } else { 64 };
const WAITS_FULL: u64 = if WAITS == 64 {
    u64::MAX
} else {
    (1u64 << WAITS) - 1
};

/// Set in the sequence number of a wait recorded in a slot (a queue's count from 1 up).
pub const SLOT_SEQ: u64 = 1 << 63;

/// One wait in a thread's table: as a hold [`Entry`](super::Entry), a key (the primitive's
/// id, 0: free) and a seqlock generation around the fields (`entry::seq_fill`).
pub(crate) struct WaitSlot {
    key: AtomicU64,
    /// `generation | scope << 32`: odd while the owner fills the slot.
    tag: AtomicU64,
    actor: AtomicU64,
    site: AtomicPtr<Location<'static>>,
    since: AtomicU64,
    seq: AtomicU64,
    /// A [`Meta`]'s word: permits, mode, and [`FLAG_MOVABLE`] for an owned wait.
    meta: AtomicU64,
}

impl WaitSlot {
    pub(super) fn new() -> WaitSlot {
        WaitSlot {
            key: AtomicU64::new(0),
            tag: AtomicU64::new(0),
            actor: AtomicU64::new(0),
            site: AtomicPtr::new(std::ptr::null_mut()),
            since: AtomicU64::new(0),
            seq: AtomicU64::new(0),
            meta: AtomicU64::new(0),
        }
    }

    fn fill(&self, w: &NewWait, seq: u64) {
        super::entry::seq_fill(&self.tag, &self.key, w.prim, w.scope, || {
            self.actor.store(w.actor.as_u64(), Ordering::Relaxed);
            self.site.store(
                (w.site as *const Location<'static>).cast_mut(),
                Ordering::Relaxed,
            );
            self.since.store(w.since_ns, Ordering::Relaxed);
            self.seq.store(seq, Ordering::Relaxed);
            let meta = Meta::new(w.permits, w.mode, if w.owned { FLAG_MOVABLE } else { 0 });
            self.meta.store(meta.bits(), Ordering::Relaxed);
        });
    }

    /// A consistent copy: the primitive's id and the wait, or `None` (free, or being filled).
    fn view(&self, thread: u64) -> Option<(u64, WaiterRec)> {
        let (prim, scope, (actor, site, since_ns, seq, meta)) =
            super::entry::seq_view(&self.tag, &self.key, || {
                (
                    self.actor.load(Ordering::Relaxed),
                    self.site.load(Ordering::Relaxed),
                    self.since.load(Ordering::Relaxed),
                    self.seq.load(Ordering::Relaxed),
                    Meta::from_bits(self.meta.load(Ordering::Relaxed)),
                )
            })?;
        if site.is_null() {
            return None;
        }
        // SAFETY: `site` was stored from a `&'static Location` in `fill`; non-null checked.
        let site = unsafe { &*site };
        let wait = NewWait {
            prim,
            actor: ActorId::from_u64(actor)?,
            site,
            since_ns,
            permits: meta.permits(),
            mode: meta.mode(),
            owned: meta.any(FLAG_MOVABLE),
            scope,
        };
        Some((
            prim,
            WaiterRec {
                seq,
                ..wait.record(thread)
            },
        ))
    }
}

/// What a wait slot records.
pub(crate) struct NewWait {
    pub(crate) prim: u64,
    pub(crate) actor: ActorId,
    pub(crate) site: &'static Location<'static>,
    pub(crate) since_ns: u64,
    pub(crate) permits: u32,
    pub(crate) mode: Mode,
    pub(crate) owned: bool,
    pub(crate) scope: u32,
}

impl NewWait {
    /// The queue's record of this wait, begun on lockscope thread `thread`: not numbered yet
    /// (the queue numbers it), untimed, not on an async worker, no retry seen.
    pub(crate) fn record(&self, thread: u64) -> WaiterRec {
        WaiterRec {
            seq: 0,
            actor: self.actor,
            thread,
            site: self.site,
            since_ns: self.since_ns,
            permits: self.permits,
            mode: self.mode,
            timed: false,
            owned: self.owned,
            scope: self.scope,
            on_worker: false,
            retries: 0,
        }
    }
}

/// Where a wait lives, so that whichever thread ends it can clear it: one pointer (tables are
/// never freed).
pub struct WaitRef(NonNull<WaitSlot>);

// SAFETY: a `WaitRef` only clears its slot with atomic stores (the owner's mask, a thread-local,
// only from the owner's thread); tables are never freed.
unsafe impl Send for WaitRef {}
// SAFETY: as above.
unsafe impl Sync for WaitRef {}

impl WaitRef {
    /// The reference as a pointer (slots are 8-aligned: the low bit is 0).
    #[inline]
    pub(crate) fn into_ptr(self) -> *mut () {
        self.0.as_ptr().cast()
    }

    /// # Safety
    ///
    /// `ptr` comes from [`WaitRef::into_ptr`], turned back once.
    #[inline]
    pub(crate) unsafe fn from_ptr(ptr: *mut ()) -> WaitRef {
        // SAFETY: as the caller promises: a slot's address, not null.
        WaitRef(unsafe { NonNull::new_unchecked(ptr.cast()) })
    }

    fn slot(&self) -> &WaitSlot {
        // SAFETY: tables (so their slots) are never freed.
        unsafe { self.0.as_ref() }
    }

    /// The wait as recorded (`None` once ended).
    pub(crate) fn view(&self) -> Option<WaiterRec> {
        self.slot().view(0).map(|(_, w)| w)
    }

    /// Ends the wait: frees the slot (its key, one store), and in the owner's mask when this is
    /// the owner's thread (`l`); a slot freed elsewhere is taken back by its owner when its
    /// mask fills up (`reclaim`). Nothing is read from the slot: where another thread ends the
    /// wait (a task woken on another worker), the store goes into the store buffer while the
    /// line comes, where a read, or an atomic read-modify-write of the owner's table, stalled
    /// until it came.
    pub(crate) fn clear(self, l: Option<&Local>) {
        let s = self.slot();
        // Release: a reader that sees the slot free sees no later reuse half-written.
        s.key.store(0, Ordering::Release);
        let Some(l) = l else { return };
        let th = l.held.get();
        if th.is_null() {
            return;
        }
        // Whether the slot is one of this thread's, from addresses alone.
        // SAFETY: this thread's live table; `addr_of!` reads nothing.
        let base = unsafe { std::ptr::addr_of!((*th).waits) } as usize;
        let at = (s as *const WaitSlot as usize).wrapping_sub(base);
        let size = std::mem::size_of::<WaitSlot>();
        if at < WAITS * size {
            l.wait_mask.set(l.wait_mask.get() & !(1 << (at / size)));
        }
    }
}

/// Records `w` in a free slot of this thread's table (`None`: no table yet, or every slot is
/// taken: the caller queues the wait instead).
#[inline]
pub(crate) fn wait_push(l: &Local, w: &NewWait) -> Option<(WaitRef, u64)> {
    let h = l.held.get();
    if h.is_null() {
        return None;
    }
    // SAFETY: this thread's live table (as in `push_in`).
    let th: &ThreadHeld = unsafe { &*h };
    let mut mask = l.wait_mask.get();
    if mask == WAITS_FULL {
        mask = reclaim(th, mask, l.wait_seq.get());
        if mask == WAITS_FULL {
            return None;
        }
    }
    let i = (!mask).trailing_zeros() as usize;
    let n = l.wait_seq.get().wrapping_add(1);
    l.wait_seq.set(n);
    let seq = SLOT_SEQ | (l.thread_seq.get() << 36) | (n & ((1 << 36) - 1));
    let slot = &th.waits[i];
    slot.fill(w, seq);
    l.wait_mask.set(mask | (1 << i));
    Some((WaitRef(NonNull::from(slot)), seq))
}

impl ThreadHeld {
    /// Whether a wait is still recorded here (a table is recycled only once it has none).
    pub(super) fn waits_occupied(&self) -> bool {
        self.waits
            .iter()
            .any(|s| s.key.load(Ordering::Acquire) != 0)
    }
}

/// `mask` (full) without the first slot, from a place that moves with `turn`, that another
/// thread freed: its key is clear. In use by this thread, a slot's key is never clear (only
/// this thread fills it), so a clear key is a slot free to take. One load when the other
/// threads end this thread's waits (the common case once the mask has filled): the slot's
/// line, which the next fill writes anyway.
#[inline]
fn reclaim(th: &ThreadHeld, mask: u64, turn: u64) -> u64 {
    let start = turn as usize % WAITS;
    for k in 0..WAITS {
        let i = (start + k) % WAITS;
        // Acquire: pairs with the clearer's Release.
        if th.waits[i].key.load(Ordering::Acquire) == 0 {
            return mask & !(1 << i);
        }
    }
    mask
}

/// Every wait recorded in a slot, by primitive id.
pub fn waits_by_prim() -> HashMap<u64, Vec<WaiterRec>> {
    let mut out: HashMap<u64, Vec<WaiterRec>> = HashMap::new();
    for t in THREADS.lock().iter() {
        let thread = t.thread.load(Ordering::Relaxed);
        for s in &t.waits {
            if let Some((prim, w)) = s.view(thread) {
                out.entry(prim).or_default().push(w);
            }
        }
    }
    for v in out.values_mut() {
        v.sort_by_key(|w| (w.since_ns, w.seq));
    }
    out
}

/// Whether the slot wait numbered `seq` is still recorded.
pub fn wait_live(seq: u64) -> bool {
    THREADS.lock().iter().any(|t| {
        t.waits
            .iter()
            .any(|s| s.key.load(Ordering::Acquire) != 0 && s.seq.load(Ordering::Relaxed) == seq)
    })
}

/// Loom models of the wait slots (run with the hold table's, see `held::loom_models`): a wait
/// ended on another thread while the owner records more and a reader looks, and the owner
/// taking the freed slot back.
#[cfg(all(test, loom))]
mod loom_models {
    use std::sync::Arc;

    use super::*;

    /// A wait whose every number field says `n`, so that a view mixing two waits shows.
    fn wait(prim: u64, n: u64) -> NewWait {
        NewWait {
            prim,
            actor: ActorId::from_thread_seq(n),
            site: Location::caller(),
            since_ns: n,
            permits: n as u32,
            mode: Mode::Permits,
            owned: false,
            scope: n as u32,
        }
    }

    /// Every wait the table shows, each checked whole: `(prim, n)`, sorted.
    fn books(th: &ThreadHeld) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = th
            .waits
            .iter()
            .filter_map(|s| s.view(1))
            .map(|(prim, w)| {
                assert_eq!(u64::from(w.permits), w.since_ns, "{w:?} mixes two waits");
                assert_eq!(u64::from(w.scope), w.since_ns, "{w:?} mixes two waits");
                (prim, w.since_ns)
            })
            .collect();
        out.sort_unstable();
        out
    }

    #[test]
    fn loom_a_wait_ended_elsewhere_frees_its_slot_for_the_owner() {
        let mut b = loom::model::Builder::new();
        if b.preemption_bound.is_none() {
            b.preemption_bound = Some(3);
        }
        b.check(|| {
            let th = ThreadHeld::new(1);
            let l = Local::fresh();
            l.thread_seq.set(1);
            l.held.set(Arc::as_ptr(&th));
            let (a, _) = wait_push(&l, &wait(7, 1)).expect("a free slot");
            let remote = loom::thread::spawn(move || a.clear(None));
            let reader = {
                let th = th.clone();
                loom::thread::spawn(move || books(&th))
            };
            let (b, _) = wait_push(&l, &wait(8, 2)).expect("the second slot");
            // Both slots taken in the owner's view: the third takes the first back if its
            // wait has ended, else it queues.
            let c = wait_push(&l, &wait(9, 3));
            remote.join().unwrap();
            let seen = reader.join().unwrap();
            assert!(
                seen.iter().all(|w| [(7, 1), (8, 2), (9, 3)].contains(w)),
                "{seen:?}"
            );
            let c = c
                .or_else(|| wait_push(&l, &wait(9, 3)))
                .expect("the freed slot");
            assert_eq!(books(&th), [(8, 2), (9, 3)]);
            b.clear(Some(&l));
            c.0.clear(Some(&l));
            assert_eq!(books(&th), []);
            assert_eq!(
                l.wait_mask.get(),
                0,
                "the owner's own clears free its slots"
            );
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tls::LOCAL;

    fn wait(prim: u64) -> NewWait {
        NewWait {
            prim,
            actor: ActorId::from_thread_seq(1),
            site: Location::caller(),
            since_ns: 5,
            permits: 2,
            mode: Mode::Permits,
            owned: true,
            scope: 0,
        }
    }

    /// A slot wait is seen by readers until it is cleared, from any thread; when every slot
    /// is taken the caller is told to queue instead, and slots cleared remotely are reused.
    #[test]
    fn slots_record_clear_and_refill() {
        // A hold first, so that this thread has its table.
        let h = super::super::push(1, 1, Location::caller(), 0, Meta::default()).expect("a table");
        let w = wait(0xfeed_0001);
        let mut refs = Vec::new();
        LOCAL.with(|l| {
            for _ in 0..WAITS {
                refs.push(wait_push(l, &w).expect("a free slot"));
            }
            assert!(
                wait_push(l, &w).is_none(),
                "every slot taken: queue instead"
            );
        });
        let seen = waits_by_prim();
        let mine = &seen[&0xfeed_0001];
        assert_eq!(mine.len(), WAITS);
        assert!(
            mine.iter()
                .all(|r| r.seq & SLOT_SEQ != 0 && r.permits == 2 && r.owned)
        );
        let (first, seq) = refs.remove(0);
        assert!(wait_live(seq));
        // Cleared from another thread, as a task granted on another worker does.
        std::thread::spawn(move || first.clear(None))
            .join()
            .unwrap();
        assert!(!wait_live(seq));
        let again = LOCAL
            .with(|l| wait_push(l, &w))
            .expect("the cleared slot is reused");
        LOCAL.with(|l| refs.into_iter().for_each(|(r, _)| r.clear(Some(l))));
        assert_eq!(waits_by_prim()[&0xfeed_0001].len(), 1);
        LOCAL.with(|l| again.0.clear(Some(l)));
        assert!(!waits_by_prim().contains_key(&0xfeed_0001));
        h.release();
    }

    /// Waits ended by another thread that has a table of its own (a task granted on another
    /// worker): that thread's mask is not touched, and the owner takes every slot back as
    /// it needs them, whichever they were.
    #[test]
    fn slots_ended_on_other_workers_are_taken_back_one_by_one() {
        let h = super::super::push(1, 1, Location::caller(), 0, Meta::default()).expect("a table");
        let w = wait(0xfeed_0002);
        let refs: Vec<_> = LOCAL.with(|l| {
            (0..WAITS)
                .map(|_| wait_push(l, &w).expect("a free slot"))
                .collect()
        });
        let (ended, kept): (Vec<_>, Vec<_>) =
            refs.into_iter().enumerate().partition(|(i, _)| i % 3 == 0);
        let n = ended.len();
        std::thread::spawn(move || {
            // This worker has a table, and a wait of its own.
            let mine =
                super::super::push(2, 2, Location::caller(), 0, Meta::default()).expect("a table");
            let own = LOCAL.with(|l| wait_push(l, &wait(0xfeed_0003)).expect("a slot"));
            let before = LOCAL.with(|l| l.wait_mask.get());
            LOCAL.with(|l| ended.into_iter().for_each(|(_, (r, _))| r.clear(Some(l))));
            assert_eq!(
                LOCAL.with(|l| l.wait_mask.get()),
                before,
                "another table's slots"
            );
            LOCAL.with(|l| own.0.clear(Some(l)));
            assert_eq!(LOCAL.with(|l| l.wait_mask.get()), 0, "its own slot");
            mine.release();
        })
        .join()
        .unwrap();
        assert_eq!(waits_by_prim()[&0xfeed_0002].len(), WAITS - n);
        let again: Vec<_> = LOCAL.with(|l| {
            (0..n)
                .map(|_| wait_push(l, &w).expect("a slot ended elsewhere"))
                .collect()
        });
        assert!(
            LOCAL.with(|l| wait_push(l, &w)).is_none(),
            "all taken again"
        );
        assert_eq!(waits_by_prim()[&0xfeed_0002].len(), WAITS);
        LOCAL.with(|l| {
            kept.into_iter().for_each(|(_, (r, _))| r.clear(Some(l)));
            again.into_iter().for_each(|(r, _)| r.clear(Some(l)));
            assert_eq!(l.wait_mask.get(), 0, "every slot free in the owner's view");
        });
        assert!(!waits_by_prim().contains_key(&0xfeed_0002));
        h.release();
    }
}
