//! Entry points for instrumentation: what a wrapper tells the detector, in order.
//!
//! `lockscope`'s wrappers call these; a crate that wants to instrument a primitive lockscope
//! does not wrap can call them too. The life of one acquisition:
//!
//! | step | uncontended | contended |
//! |---|---|---|
//! | the primitive is granted at once | [`acquired`] | |
//! | it must wait | | [`wait_begin`] |
//! | granted after waiting | | [`acquired_after_wait`] |
//! | the acquire future is dropped | | [`wait_cancelled`] |
//! | a timed form gives up | | [`wait_timed_out`] |
//! | a `try_` form gives up | [`try_failed`] | |
//! | the guard or permit is dropped | [`released`] | [`released`] |
//!
//! The uncontended column is the hot path: no lock, no allocation, one coarse clock read on
//! each side, relaxed stores into the thread's hold table. Everything else is `#[cold]`.

use std::panic::Location;
use std::sync::atomic::Ordering;

use crate::analysis::graph;
use crate::base::clock;
use crate::base::stats::WaitTime;
use crate::rules;
use crate::state::actor::{self, ActorId};
use crate::state::held::{
    self, EntryRef, FLAG_BLOCKING_IN_TASK, FLAG_MOVABLE, FLAG_QUICK, FLAG_REENTRY, FLAG_SAMPLED,
    FLAG_SPLIT, FLAG_TRY, NewHold,
};
use crate::state::prim::Prim;
use crate::state::tls::{LOCAL, Local, local};
use crate::state::wait::WaiterRec;

mod channels;
mod hold_time;
mod joins;
mod tasks;

pub use channels::{ChanOp, ChanWait, Channel, chan_wait_begin, channel};
use hold_time::{LONG_NS, hold_time, record_hold_time, record_mutex_hold};
pub use joins::{JoinTarget, JoinWait, SetMembers, Started, join_begin, task_actor};
use tasks::{blocking_flags, blocking_held_here, blocking_released, check_blocking_neighbours};
pub use tasks::{task_ended, task_poll_ended};

pub use crate::model::acq::Acq;

pub use crate::base::config::enabled;
pub use crate::runtime::cell::PrimCell;
pub use crate::state::held::{
    FLAG_MOVABLE as MOVABLE, FLAG_REENTRY as REENTRY, FLAG_TRY as TRY, Mode,
};
pub use crate::state::prim::PrimKind;

/// A recorded hold, kept by the guard or permit and given back to [`released`]: one word,
/// the hold's entry in a hold table, which keeps everything else (start, mode, flags).
///
/// One word so that a guard stays two (the lock and this) and travels in registers: a wider
/// guard is copied through memory, and that copy, read back whole right after it was written
/// field by field, stalls on store forwarding.
#[derive(Default)]
pub struct Hold {
    /// `None`: nothing was recorded (the detector is off, or the thread is exiting).
    entry: Option<EntryRef>,
}

impl Hold {
    /// A hold that recorded nothing (detector off).
    #[inline]
    pub const fn none() -> Hold {
        Hold { entry: None }
    }

    /// Whether anything was recorded.
    #[inline]
    pub fn is_recorded(&self) -> bool {
        self.entry.is_some()
    }

    /// The hold as one pointer, null when nothing was recorded, for a wrapper that keeps it
    /// in one word with tags of its own: its low three bits are always 0 (entries are
    /// 8-aligned, asserted at compile time), so the wrapper may set them with the pointer's
    /// `map_addr` and must clear them the same way before [`from_raw`]
    /// (strict provenance: the pointer never goes through an integer).
    ///
    /// [`from_raw`]: Hold::from_raw
    #[inline]
    pub fn into_raw(self) -> *mut () {
        self.entry
            .map_or(std::ptr::null_mut(), |e| e.into_ptr().cast::<()>())
    }

    /// The hold [`into_raw`](Hold::into_raw) gave.
    ///
    /// # Safety
    ///
    /// `raw` comes from `into_raw` (tag bits cleared), and each such pointer is turned back
    /// into a hold once.
    #[inline]
    pub unsafe fn from_raw(raw: *mut ()) -> Hold {
        Hold {
            // SAFETY: as the caller promises: a pointer from `EntryRef::into_ptr`, or null.
            entry: unsafe { EntryRef::from_ptr(raw.cast()) },
        }
    }

    /// The id of the primitive held, `None` when nothing was recorded.
    pub fn prim_id(&self) -> Option<u64> {
        self.entry.as_ref().and_then(EntryRef::view).map(|v| v.prim)
    }

    /// Milliseconds since the grant (coarse clock).
    pub fn held_ms(&self) -> f64 {
        self.entry.as_ref().map_or(0.0, |e| {
            clock::ms_between(e.since_and_meta().0, clock::hold_now())
        })
    }

    /// Rewrites the permits and mode of the hold (permit `split`/`merge`, `downgrade`).
    pub fn update(&mut self, prim: &Prim, permits: u32, mode: Mode) {
        if let Some(e) = &self.entry {
            e.update(permits, mode);
        }
        let _ = prim;
    }

    /// A second hold for `permits` split off this one (same holder, site and start).
    pub fn split(&self, prim: &Prim, permits: u32) -> Hold {
        let Some(view) = self.entry.as_ref().and_then(EntryRef::view) else {
            return Hold::none();
        };
        let meta = held::pack_meta(permits, view.mode, (view.flags | FLAG_SPLIT) & !FLAG_QUICK);
        let hold = NewHold {
            prim: prim.id.0,
            actor: view.actor.as_u64(),
            site: view.site,
            since: view.since,
            meta,
            scope: view.scope,
        };
        let entry = LOCAL.try_with(|l| held::push_in(l, hold)).ok().flatten();
        Hold { entry }
    }
}

/// The coarse clock's readings with the 3 low bits cleared (a hold's start and end).
const TIME: u64 = !7;

/// A wait in progress, kept by the acquire future: two words, so that it comes back from
/// [`wait_begin`] in registers (a wider value was written to memory and read back whole by
/// the future, which stalled on store forwarding).
pub struct Waiting {
    /// Where the wait is recorded: its slot in its thread's table (see `state::held::waits`),
    /// or, low bit set, `seq << 1 | 1`, its number in the primitive's queue; null once the
    /// slot is cleared.
    at: *mut (),
    /// When it began, the top bit set when that is a precise reading (else the published
    /// clock's: see [`wait_begin`]).
    since: u64,
    /// The queue number whole, where a pointer is too narrow to hold it.
    #[cfg(not(target_pointer_width = "64"))]
    seq: u64,
}

// SAFETY: `at` is a `WaitRef` (Send + Sync: only atomic stores to a slot of a table that is
// never freed) or a number.
unsafe impl Send for Waiting {}
// SAFETY: as above; `&Waiting` reads the words only.
unsafe impl Sync for Waiting {}

const PRECISE: u64 = 1 << 63;

impl Waiting {
    /// A wait recorded in its thread's slot.
    fn in_slot(slot: held::WaitRef, since_ns: u64, precise: bool) -> Waiting {
        Waiting {
            at: slot.into_ptr(),
            since: Self::since_word(since_ns, precise),
            #[cfg(not(target_pointer_width = "64"))]
            seq: 0,
        }
    }

    /// A wait recorded in the primitive's queue as `seq`.
    fn queued(seq: u64, since_ns: u64, precise: bool) -> Waiting {
        Waiting {
            at: std::ptr::without_provenance_mut((seq << 1 | 1) as usize),
            since: Self::since_word(since_ns, precise),
            #[cfg(not(target_pointer_width = "64"))]
            seq,
        }
    }

    fn since_word(since_ns: u64, precise: bool) -> u64 {
        (since_ns & !PRECISE) | if precise { PRECISE } else { 0 }
    }

    /// When the wait began.
    fn since_ns(&self) -> u64 {
        self.since & !PRECISE
    }

    /// Whether [`Waiting::since_ns`] is a precise reading.
    fn precise(&self) -> bool {
        self.since & PRECISE != 0
    }

    /// The wait's slot, taken (`None` for a queued wait, or once taken).
    fn take_slot(&mut self) -> Option<held::WaitRef> {
        if self.at.is_null() || self.at.addr() & 1 != 0 {
            return None;
        }
        // SAFETY: not null, low bit clear: a `WaitRef::into_ptr`, taken once (nulled now).
        let slot = unsafe { held::WaitRef::from_ptr(self.at) };
        self.at = std::ptr::null_mut();
        Some(slot)
    }

    /// The queued wait's number (see [`Waiting::queued`]).
    fn seq(&self) -> u64 {
        #[cfg(not(target_pointer_width = "64"))]
        return self.seq;
        #[cfg(target_pointer_width = "64")]
        return (self.at.addr() >> 1) as u64;
    }

    /// The clock this wait is timed with, read now.
    fn now(&self) -> u64 {
        if self.precise() {
            clock::precise_now()
        } else {
            clock::hold_now()
        }
    }
}

/// The current hold time ([`clock::hold_now`]), for [`acquired_at`].
#[inline]
pub fn now() -> u64 {
    clock::hold_now()
}

/// The primitive was granted without waiting.
#[inline]
pub fn acquired(prim: &Prim, acq: Acq) -> Hold {
    acquired_at(prim, acq, clock::hold_now())
}

/// The fast path of [`acquired`] for a thread (not a task), for a lock just granted without
/// waiting, with no sample due, where every other hold of the thread is on its inline entries
/// and is known to come before `prim` in the lock order (so no check has anything to report).
/// `None`: the caller takes [`acquired`], which handles everything else (a nested acquire, a
/// new lock-order edge, tasks, the first use of a thread, the sampled acquisition).
///
/// The actor is the thread and the start is the published clock; it writes the entry and
/// nothing more, all of it inside the lock's critical section: a lock taken again by the
/// thread that just released it (the common case when two threads share a short critical
/// section) is handed over the least often when little runs between release and re-take.
#[inline(always)]
pub fn acquired_quick(prim: &Prim, acq: Acq) -> Option<Hold> {
    let l = local();
    // A sample countdown above 0 means this thread has its table (see `record_hold`).
    let left = l.hold_sample.get();
    let since = clock::published_word();
    if (left == 0) | (since == 0) {
        return None;
    }
    let th = l.held.get();
    let mask = l.mask.get();
    let actor = ActorId::from_thread_seq(l.thread_seq.get());
    if mask != 0 && !quick_nested(th, mask, prim, actor, acq) {
        return None;
    }
    if tokio::task::try_id().is_some() {
        return None;
    }
    let acq = acq.with_flags(FLAG_QUICK);
    Some(quick_push(l, th, mask, prim, actor, acq, since & TIME))
}

/// Whether [`acquired_quick`] may record `prim` beside the holds `mask` (not 0) of this thread.
#[inline(always)]
fn quick_nested(
    th: *const held::ThreadHeld,
    mask: u32,
    prim: &Prim,
    actor: ActorId,
    acq: Acq,
) -> bool {
    let unchecked = acq.flags() & (FLAG_TRY | FLAG_REENTRY) != 0;
    // The key of the holds the lock-order graph sees (see `check_held_slow`).
    let (mut ctx, mut any) = (0u64, false);
    // SAFETY: `th` and `mask` are this thread's table and mask.
    let room = unsafe {
        held::quick_room(th, mask, actor.as_u64(), |held, flags| {
            if unchecked || flags & FLAG_MOVABLE != 0 {
                return true;
            }
            ctx = ctx.wrapping_add(graph::lockorder::context_part(held));
            any = true;
            held != prim.id.0
        })
    };
    room && (!any || graph::lockorder::known(prim, ctx))
}

/// The quick path of [`acquired`] for a task: one that holds nothing (as the task index knows), taking a
/// primitive that is not a blocking lock, on a thread where no task holds a blocking guard.
/// `None` (also outside a task): the caller takes [`acquired`].
#[inline(always)]
pub fn acquired_quick_task(prim: &Prim, acq: Acq) -> Option<Hold> {
    quick_task_hold(local(), prim, acq, clock::published_word(), false)
}

/// A task's hold of `prim` from `since`, on the quick path when it applies (no sample due,
/// room in the table, a clock reading, not a blocking lock, no task's blocking guard on this
/// thread): one read of the task's index slot, the entry written in place. `waited`: granted
/// after a wait, whose start made the checks a nested acquisition needs, so a task that holds
/// something takes it too; else only one that holds nothing (or a `try_`/re-entry form).
/// `None`: the caller takes the general path.
#[inline(always)]
fn quick_task_hold(l: &Local, prim: &Prim, acq: Acq, since: u64, waited: bool) -> Option<Hold> {
    let th = l.held.get();
    // A sample countdown above 0 means this thread has its table (see `record_hold`).
    let left = l.hold_sample.get();
    let mask = l.mask.get();
    if (left == 0)
        | (mask == held::FULL)
        | (since == 0)
        | prim.kind.is_blocking()
        | (l.blocking_in_task.get() != 0)
    {
        return None;
    }
    let actor = ActorId::task(tokio::task::try_id()?);
    // Read once: whether the task holds anything, and where its first hold is indexed.
    let look = held::task_look(actor.as_u64());
    if !waited && acq.flags() & (FLAG_TRY | FLAG_REENTRY) == 0 && look.holds() {
        return None;
    }
    let hold = quick_push(l, th, mask, prim, actor, acq, since & TIME);
    if let Some(e) = &hold.entry {
        e.index_looked(actor.as_u64(), look);
    }
    Some(hold)
}

/// The entry of a quick acquisition, on this thread's table `th` with inline entries `mask`
/// in use (not full).
#[inline(always)]
fn quick_push(
    l: &Local,
    th: *const held::ThreadHeld,
    mask: u32,
    prim: &Prim,
    actor: ActorId,
    acq: Acq,
    since: u64,
) -> Hold {
    l.hold_sample.set(l.hold_sample.get() - 1);
    prim.resource.acquired(prim.kind, acq.mode(), acq.permits());
    let hold = NewHold {
        prim: prim.id.0,
        actor: actor.as_u64(),
        site: acq.site(),
        since,
        meta: acq.meta,
        scope: l.scope.get(),
    };
    // SAFETY: the callers read `th` and `mask` from this thread's locals, `mask` not full.
    let entry = unsafe { held::push_quick(l, th, mask, hold) };
    Hold { entry: Some(entry) }
}

/// As [`acquired`], with the grant time read by the caller from [`now`] before taking the
/// lock, which keeps the clock read out of a blocking lock's critical section.
#[inline]
pub fn acquired_at(prim: &Prim, acq: Acq, since: u64) -> Hold {
    LOCAL
        .try_with(|l| {
            let actor = actor::current_in(l);
            if acq.flags() & (FLAG_TRY | FLAG_REENTRY) == 0 && holds_any(l, actor) {
                check_held_slow(prim, actor, &acq, false, false);
            }
            record_hold(l, prim, actor, acq, since)
        })
        .unwrap_or_default()
}

#[inline]
fn record_hold(l: &Local, prim: &Prim, actor: ActorId, mut acq: Acq, mut since: u64) -> Hold {
    // One acquisition in `SAMPLE_EVERY` on this thread is timed precisely (the hold
    // histogram's samples); the others cost a decrement.
    match l.hold_sample.get() {
        0 => {
            since = clock::precise_now();
            l.hold_sample.set(next_sample(since, clock::SAMPLE_EVERY));
            acq = acq.with_flags(FLAG_SAMPLED);
        }
        n => l.hold_sample.set(n - 1),
    }
    if actor.is_task() {
        if prim.kind.is_blocking() {
            acq = acq.with_flags(blocking_flags(l, actor));
        } else if l.blocking_in_task.get() != 0 {
            check_blocking_neighbours(l, actor);
        }
    }
    let entry = held::push_in(
        l,
        NewHold {
            prim: prim.id.0,
            actor: actor.as_u64(),
            site: acq.site(),
            since: since & TIME,
            meta: acq.meta,
            scope: l.scope.get(),
        },
    );
    match &entry {
        Some(e) if actor.is_task() => e.index_task(actor.as_u64()),
        Some(_) => {}
        // No table (the thread is exiting): the quick paths must not run (see `acquired_quick`).
        None => l.hold_sample.set(0),
    }
    prim.resource.acquired(prim.kind, acq.mode(), acq.permits());
    Hold { entry }
}

/// The guard or permit was dropped (or forgotten: see [`forgot`]). Call before releasing the
/// inner primitive.
///
/// The hold's time goes to the statistics as `hold_time` says: a hold shorter than a tick of
/// the published clock (the common case) is counted in this thread's tally (per-thread counts
/// that scrapes add up); a longer one goes to the primitive's histogram, without an atomic RMW
/// when the holder is exclusive.
#[inline]
pub fn released(prim: &Prim, hold: Hold) {
    let Some(e) = hold.entry else { return };
    let (since, meta) = e.since_and_meta();
    let time = hold_time(since, meta);
    // The books first, the count after: a scrape in between sees the acquisition neither live
    // nor completed (an undercount its clamp hides), never both (an overcount that would stick).
    // The inner primitive is still held, so an exclusive holder still needs no atomic RMW.
    if LOCAL
        .try_with(|l| {
            release_entry(prim, &e, meta, Some(l));
            record_hold_time(prim, time, Some(l), meta_mode(meta).is_exclusive());
        })
        .is_err()
    {
        release_entry(prim, &e, meta, None);
        record_hold_time(prim, time, None, false);
    }
}

#[inline]
fn meta_flags(meta: u64) -> u8 {
    (meta >> 40) as u8
}

#[inline]
fn meta_mode(meta: u64) -> Mode {
    Mode::from_u8((meta >> 32) as u8)
}

#[inline]
fn release_entry(prim: &Prim, e: &EntryRef, meta: u64, l: Option<&Local>) {
    if meta_flags(meta) & FLAG_BLOCKING_IN_TASK != 0 {
        blocking_released(prim, e);
    }
    resource_released(prim, e);
    e.release_in(l);
}

/// The fast path of [`release_books`], for the common release: a hold taken on this thread
/// (by the thread or a task), not split, no blocking guard of a task, and for a mutex a short
/// one (under a tick of the published clock, not sampled). `raw` is the hold's
/// [`Hold::into_raw`]. It returns what to give [`release_stats`] after the unlock, or, when
/// nothing was done ([`Released::is_done`] false), the caller takes [`release_books`] with
/// the hold. (Not an `Option`: two words come back in registers, three through memory.)
///
/// A mutex's holder counts the hold before the unlock (see [`release_books`]), with plain
/// loads and stores, and leaves nothing for [`release_stats`]. `mutex` is
/// `prim.kind().is_mutex()`, which a wrapper may know from its type.
#[inline(always)]
pub fn release_quick(prim: &Prim, raw: *mut (), mutex: bool) -> Released {
    let Some((e, since, meta, short)) = quick_view(raw) else {
        return Released::UNDONE;
    };
    debug_assert_eq!(mutex, prim.kind.is_mutex());
    let l = local();
    let flags = meta_flags(meta);
    if flags & FLAG_QUICK != 0 {
        // A thread's own untimed hold on its inline entry, released as such if this is still
        // its thread (a guard may be `Send`).
        if !held::is_mine(&e, l) {
            return Released::UNDONE;
        }
        return release_own_entry(prim, &e, (since, meta, short), mutex);
    }
    if flags & (FLAG_SAMPLED | FLAG_BLOCKING_IN_TASK | FLAG_SPLIT) != 0
        || (mutex && !short)
        || !held::release_quick(&e, l)
    {
        // The caller keeps the hold when nothing was done (`EntryRef` has no drop).
        return Released::UNDONE;
    }
    // (The entry is cleared: its view is gone, its meta word still says what was held.)
    #[cfg(feature = "console")]
    prim.resource
        .released(prim.kind, meta_mode(meta), meta as u32);
    if mutex {
        // Short: counted by the holder, one add (see `Stats::count_short`).
        prim.stats.count_short(true);
        return Released::default();
    }
    released_shared(l, prim.id.0, since, meta, short)
}

/// A quick release's view of the hold `raw` (a [`Hold::into_raw`], not turned back yet): its
/// entry, start and meta word, and whether it is short (untimed and started at the published
/// time now: under a tick; a sampled start is a precise reading, not the published word, but
/// its flag sends it to the general path). `None`: nothing was recorded.
#[inline(always)]
fn quick_view(raw: *mut ()) -> Option<(EntryRef, u64, u64, bool)> {
    // SAFETY: as the callers' callers promise: a pointer from `Hold::into_raw`, or null.
    let e = unsafe { EntryRef::from_ptr(raw.cast()) }?;
    let (since, meta, short) = entry_view(&e);
    Some((e, since, meta, short))
}

/// A live hold's start and meta word, and whether it is short (see [`quick_view`]).
#[inline(always)]
fn entry_view(e: &EntryRef) -> (u64, u64, bool) {
    let (since, meta) = e.since_and_meta();
    (since, meta, since == clock::published_word() & TIME)
}

/// The end of a quick release of a hold of `prim` (an id) that is not a mutex's, its entry
/// cleared: a short hold in this thread's tally when the tally has its slot (plain loads and
/// stores on this thread's table, nothing left for after the unlock), else its start and
/// flags for [`release_stats`].
#[inline(always)]
fn released_shared(l: &Local, prim: u64, since: u64, meta: u64, short: bool) -> Released {
    if short && held::tally_quick(l, prim) {
        return Released::default();
    }
    Released {
        since: since.max(8),
        meta,
    }
}

/// [`release_quick`] for a primitive that is not a mutex, without the primitive itself: its id
/// is the hold's. A wrapper's pointer to its primitive can share a cache line with the
/// wrapped semaphore's state, which every worker writes: this release does not read it.
/// Never done with the `console` feature (the primitive's resource is updated then).
#[inline(always)]
pub fn release_quick_shared(raw: *mut ()) -> Released {
    if cfg!(feature = "console") {
        return Released::UNDONE;
    }
    let Some((e, since, meta, short)) = quick_view(raw) else {
        return Released::UNDONE;
    };
    let l = local();
    if meta_flags(meta) & (FLAG_QUICK | FLAG_SAMPLED | FLAG_BLOCKING_IN_TASK | FLAG_SPLIT) != 0 {
        return Released::UNDONE;
    }
    let prim = e.prim_id();
    if !held::release_quick(&e, l) {
        return Released::UNDONE;
    }
    released_shared(l, prim, since, meta, short)
}

/// [`release_quick`] for a hold of [`acquired_quick`] (its [`Hold::into_raw`]), on the thread
/// that took it: the books in two stores, no check; a mutex's short hold counted by its
/// holder (plain loads and stores, as in [`release_books`]). Call before the inner unlock, and
/// give what it returns to [`release_stats`] after it. `mutex` as for [`release_quick`].
///
/// # Safety
///
/// `raw` is the hold of an [`acquired_quick`] that returned it on this thread, not released
/// yet, and released once (this call).
#[inline(always)]
pub unsafe fn release_own(prim: &Prim, raw: *mut (), mutex: bool) -> Released {
    // SAFETY: as the caller promises: a live entry of this thread's table (non-null).
    let e = unsafe { EntryRef::from_ptr_unchecked(raw.cast()) };
    release_own_entry(prim, &e, entry_view(&e), mutex)
}

/// The body of [`release_own`]: `e` is a live hold of [`acquired_quick`], on this thread,
/// `view` its [`entry_view`] (read before the entry is cleared).
#[inline(always)]
fn release_own_entry(
    prim: &Prim,
    e: &EntryRef,
    (since, meta, short): (u64, u64, bool),
    mutex: bool,
) -> Released {
    held::release_own(e, local());
    #[cfg(feature = "console")]
    prim.resource
        .released(prim.kind, meta_mode(meta), meta as u32);
    if mutex && short {
        prim.stats.count_short(true);
        return Released::default();
    }
    if mutex {
        record_mutex_long(prim, since, meta);
        return Released::default();
    }
    Released {
        since: since.max(8),
        meta,
    }
}

/// A mutex's hold of a tick or more: recorded by its holder, with its time. (`extern "C"`:
/// it cannot unwind, so the quick release around it needs no landing pad.)
#[cold]
#[inline(never)]
extern "C" fn record_mutex_long(prim: &Prim, since: u64, meta: u64) {
    record_mutex_hold(prim, hold_time(since, meta));
}

/// What [`release_books`] leaves for [`release_stats`]: the hold's start and flags.
#[derive(Clone, Copy, Default, Debug)]
pub struct Released {
    since: u64,
    meta: u64,
}

impl Released {
    /// [`release_quick`] did nothing (a start is never 1: its low bits are cleared).
    const UNDONE: Released = Released { since: 1, meta: 0 };

    /// Whether [`release_quick`] released the hold.
    #[inline(always)]
    pub fn is_done(&self) -> bool {
        self.since != 1
    }

    /// Whether [`release_stats`] has anything to record (else it need not be called, nor the
    /// primitive looked up for it).
    #[inline(always)]
    pub fn has_stats(&self) -> bool {
        self.since != 0
    }
}

/// The first half of a release: clears the hold from the books (call before the inner
/// unlock). [`release_stats`] (after the unlock) records the statistics, so that an atomic
/// read-modify-write and the precise clock stay out of the critical section.
///
/// A mutex's holder is alone until the unlock, so it records its hold time here with plain
/// loads and stores (the published clock; the precise one for a sampled hold only), and
/// leaves nothing for [`release_stats`]: every update of a mutex's statistics is made by its
/// holder, which the mutex itself orders, so none is lost.
#[inline]
pub fn release_books(prim: &Prim, hold: Hold) -> Released {
    let Some(e) = hold.entry else {
        return Released::default();
    };
    let (since, meta) = e.since_and_meta();
    if LOCAL
        .try_with(|l| release_entry(prim, &e, meta, Some(l)))
        .is_err()
    {
        release_entry(prim, &e, meta, None);
    }
    if prim.kind.is_mutex() {
        record_mutex_hold(prim, hold_time(since, meta));
        return Released::default();
    }
    // Never 0 for a real start (the clock counts from boot): 0 means "nothing".
    Released {
        since: since.max(8),
        meta,
    }
}

#[inline]
fn resource_released(prim: &Prim, e: &EntryRef) {
    #[cfg(feature = "console")]
    if let Some(v) = e.view() {
        prim.resource.released(prim.kind, v.mode, v.permits);
    }
    #[cfg(not(feature = "console"))]
    let _ = (prim, e);
}

/// The second half of a release: the hold time into this thread's tally (see [`released`])
/// or the statistics (an atomic RMW: the primitive is no longer held).
#[inline(always)]
pub fn release_stats(prim: &Prim, r: Released) {
    if r.has_stats() {
        record_released(prim, r);
    }
}

#[inline(never)]
fn record_released(prim: &Prim, r: Released) {
    {
        let time = hold_time(r.since, r.meta);
        if LOCAL
            .try_with(|l| record_hold_time(prim, time, Some(l), false))
            .is_err()
        {
            record_hold_time(prim, time, None, false);
        }
    }
}

/// Whether `actor` already holds `prim` (acquire-time check, current thread's table and the
/// exclusive holder word); and lock-order edges from everything it holds to `prim`.
#[inline]
fn check_held(prim: &Prim, actor: ActorId, acq: &Acq, waiting: bool, timed: bool) {
    if LOCAL.try_with(|l| holds_any(l, actor)).unwrap_or(false) {
        check_held_slow(prim, actor, acq, waiting, timed);
    }
}

/// Whether `actor` may hold anything: a task asks the task index (its holds may sit on other
/// threads' tables), a thread its own table.
#[inline]
fn holds_any(l: &Local, actor: ActorId) -> bool {
    if actor.is_task() {
        held::task_any(actor.as_u64())
    } else {
        held::any_in(l)
    }
}

#[inline(never)]
fn check_held_slow(prim: &Prim, actor: ActorId, acq: &Acq, waiting: bool, timed: bool) {
    let _ = LOCAL.try_with(|l| {
        let mut mine = [(0u64, 0u8, std::ptr::null::<held::Entry>()); 8];
        let n = if actor.is_task() {
            held::task_mine(actor.as_u64(), &mut mine)
        } else {
            let (n, more) = held::mine_inline(l, actor.as_u64(), &mut mine);
            if more {
                return check_held_all(prim, actor, acq, waiting, timed);
            }
            n
        };
        let mut nested = None;
        // The holds the lock-order graph sees (not `prim` itself, not an owned guard that may
        // have moved), as one key: a set of holds `prim` was acquired under before gives
        // nothing new (see `graph::lockorder`).
        let (mut ctx, mut others) = (0u64, 0usize);
        for &(id, flags, e) in &mine[..n] {
            if flags & FLAG_MOVABLE != 0 {
                continue;
            }
            if id == prim.id.0 {
                nested = nested.or_else(|| held::view_entry(e));
            } else {
                ctx = ctx.wrapping_add(graph::lockorder::context_part(id));
                others += 1;
            }
        }
        if others > 0 && !graph::lockorder::known(prim, ctx) {
            let views: Vec<held::HoldView> = mine[..n]
                .iter()
                .filter(|&&(id, flags, _)| flags & FLAG_MOVABLE == 0 && id != prim.id.0)
                .filter_map(|&(_, _, e)| held::view_entry(e))
                .collect();
            let found = graph::lockorder::observe(&views, prim, actor, acq, ctx);
            report_order(found, &views, prim, actor, acq);
        }
        if let Some(h) = nested {
            crate::report::finding::report_all(rules::nested_acquire::reacquired(
                prim, actor, acq, &h, waiting, timed,
            ));
        }
    });
}

/// The general case (more holds than fit the quick scan): full views.
#[cold]
fn check_held_all(prim: &Prim, actor: ActorId, acq: &Acq, waiting: bool, timed: bool) {
    let mut nested = None;
    let mut others = Vec::new();
    held::for_each_mine(actor.as_u64(), |h| {
        if h.movable() {
            return;
        }
        if h.prim == prim.id.0 {
            nested.get_or_insert(h);
        } else {
            others.push(h);
        }
    });
    let ctx = others.iter().fold(0u64, |k, h| {
        k.wrapping_add(graph::lockorder::context_part(h.prim))
    });
    if !others.is_empty() && !graph::lockorder::known(prim, ctx) {
        let found = graph::lockorder::observe(&others, prim, actor, acq, ctx);
        report_order(found, &others, prim, actor, acq);
    }
    if let Some(h) = nested {
        crate::report::finding::report_all(rules::nested_acquire::reacquired(
            prim, actor, acq, &h, waiting, timed,
        ));
    }
}

/// The acquisition must wait: records the waiter (and checks for a self-wait, lock-order
/// edges and blocking-in-async before the wait starts).
///
/// One untimed wait for an async primitive in [`WAIT_SAMPLE_EVERY`] per thread is timed
/// precisely (and the first of each primitive); the others start and end on the published
/// clock, which costs a load where the precise clock costs a system call's worth (26 ns on
/// the reference VM), twice per contended acquisition. A short untimed wait is counted in the
/// bucket of the primitive's latest sampled one, as short holds are (see `base::clock`).
/// Blocking and timed waits are always timed precisely: a worker stall is judged in
/// milliseconds, and a timeout error says how long it waited.
#[cold]
pub fn wait_begin(prim: &Prim, acq: Acq, timed: bool) -> Waiting {
    wait_begin_with(prim, acq, timed, false)
}

/// [`wait_begin`] for a wait whose length is shown (the events of an `acquire` span): timed
/// precisely, always.
#[cold]
pub fn wait_begin_timed_precisely(prim: &Prim, acq: Acq, timed: bool) -> Waiting {
    wait_begin_with(prim, acq, timed, true)
}

/// One untimed async wait in this many, per thread, is timed precisely (see [`wait_begin`]).
pub const WAIT_SAMPLE_EVERY: u32 = 16;

/// When a wait starts, and whether on the precise clock: `precise` asked, or a sample is due
/// (the thread's countdown, or a primitive with no sampled short wait yet).
#[inline]
fn wait_start(prim: &Prim, precise: bool) -> (u64, bool) {
    let l = local();
    let due = precise
        || {
            let left = l.wait_sample.get();
            l.wait_sample.set(left.saturating_sub(1));
            left == 0
        }
        || !prim.stats.has_wait_sample();
    if !due {
        return (clock::hold_now(), false);
    }
    let now = clock::precise_now();
    if l.wait_sample.get() == 0 {
        l.wait_sample.set(next_sample(now, WAIT_SAMPLE_EVERY));
    }
    (now, true)
}

/// The countdown to the next sample after one read at `now`: `every` on average, jittered by
/// the clock's low bits so that a periodic workload (long, short, long, ...) is not sampled in
/// step.
#[inline]
fn next_sample(now: u64, every: u32) -> u32 {
    every / 2 + ((now >> 4) % u64::from(every)) as u32
}

fn wait_begin_with(prim: &Prim, acq: Acq, timed: bool, precise: bool) -> Waiting {
    if let Some(w) = wait_begin_quick(prim, acq, timed, precise) {
        return w;
    }
    let actor = actor::current();
    if acq.flags() & FLAG_REENTRY == 0 {
        check_held(prim, actor, &acq, true, timed);
    }
    let thread = actor::thread_seq();
    // A blocking wait on a worker is reported only once it has stalled the worker for long
    // (when it ends, or by the watchdog while it lasts): a short critical section under a
    // parking_lot lock is what tokio recommends for data not held across an `.await`.
    let mut on_worker = false;
    if prim.kind.is_blocking() {
        on_worker = rules::blocking_in_async::on_async_worker();
        if on_worker {
            rules::blocking_in_async::os_share_begin(prim);
        }
    } else if actor.is_task() {
        crate::report::finding::report_all(rules::blocking_in_async::check_async_wait(
            prim,
            actor,
            &acq,
            blocking_held_here(actor),
        ));
    }
    let (since_ns, precise) = wait_start(prim, precise || timed || prim.kind.is_blocking());
    let rec = WaiterRec {
        seq: 0,
        actor,
        thread,
        site: acq.site(),
        since_ns,
        permits: acq.permits(),
        mode: acq.mode(),
        timed,
        owned: acq.flags() & FLAG_MOVABLE != 0,
        scope: actor::current_scope(),
        on_worker,
        retries: 0,
    };
    let seq = {
        let mut q = prim.waiters.lock();
        let seq = q.push(rec);
        if q.mixed_from == 0 && prim.mixed.load(Ordering::Relaxed) {
            q.mixed_from = seq;
        }
        prim.retrying.store(q.retrying(), Ordering::Relaxed);
        prim.waiting.store(q.len() as u32, Ordering::Relaxed);
        prim.resource.waiters(q.len());
        seq
    };
    Waiting::queued(seq, since_ns, precise)
}

/// The common wait, in this thread's wait slots instead of the primitive's queue: a task that
/// holds nothing (so no self-wait, no lock-order edge, no guard across an `.await` to find),
/// on a thread where no task holds a blocking guard, waiting untimed for a tokio mutex or for
/// one permit of a semaphore whose waits all asked for one, whose queue remembers no given-up
/// wait. `None`: the caller queues it.
///
/// Why only those: readers cannot tell the slots' waits apart in tokio's FIFO order (they are
/// placed among the queue's by [`WaitQueue::ordered_with`](crate::wait::WaitQueue)), and the
/// order matters to the wait-for graph only where waits ask for different amounts (a large
/// `acquire_many` blocks later small ones; a queued writer blocks later readers). A semaphore
/// turns "mixed" at its first wait for more than one permit, and its waits queue from then on.
#[inline]
fn wait_begin_quick(prim: &Prim, acq: Acq, timed: bool, precise: bool) -> Option<Waiting> {
    let alike = match prim.kind {
        PrimKind::Mutex => true,
        PrimKind::Semaphore => {
            if acq.permits() != 1 {
                prim.mixed.store(true, Ordering::Relaxed);
            }
            !prim.mixed.load(Ordering::Relaxed)
        }
        _ => false,
    };
    if !alike
        || timed
        || prim.resource.followed()
        || acq.flags() & FLAG_REENTRY != 0
        || prim.retrying.load(Ordering::Relaxed)
    {
        return None;
    }
    let l = local();
    if l.held.get().is_null() || l.blocking_in_task.get() != 0 {
        return None;
    }
    let actor = ActorId::task(tokio::task::try_id()?);
    if held::task_any(actor.as_u64()) {
        return None;
    }
    let (since_ns, precise) = wait_start(prim, precise);
    let w = held::NewWait {
        prim: prim.id.0,
        actor,
        site: acq.site(),
        since_ns,
        permits: acq.permits(),
        mode: acq.mode(),
        owned: acq.flags() & FLAG_MOVABLE != 0,
        scope: l.scope.get(),
    };
    let (slot, _) = held::wait_push(l, &w)?;
    Some(Waiting::in_slot(slot, since_ns, precise))
}

/// Takes the waiter off the books; `gave_up`: it ends without a grant (a timeout, a cancelled
/// future), so a wait by the same task or thread soon after is a retry of this one.
fn end_wait(prim: &Prim, w: &mut Waiting, gave_up: bool) {
    if let Some(slot) = w.take_slot() {
        // A slot's wait: one store. One that gave up is remembered by the queue, so that the
        // same task waiting again soon is seen as retrying it.
        let rec = gave_up.then(|| slot.view()).flatten();
        slot.clear(Some(local()));
        if let Some(rec) = rec {
            let mut q = prim.waiters.lock();
            q.gave_up(&rec, clock::precise_now());
            prim.retrying.store(true, Ordering::Relaxed);
        }
        return;
    }
    let mut now = None;
    let rec = {
        let mut q = prim.waiters.lock();
        let rec = q.remove(w.seq());
        if gave_up && let Some(rec) = &rec {
            let t = *now.insert(clock::precise_now());
            q.gave_up(rec, t);
        }
        prim.retrying.store(q.retrying(), Ordering::Relaxed);
        prim.waiting.store(q.len() as u32, Ordering::Relaxed);
        prim.resource.waiters(q.len());
        rec
    };
    if let Some(rec) = rec
        && rec.on_worker
    {
        let now = now.unwrap_or_else(clock::precise_now);
        crate::report::finding::report_all(rules::blocking_in_async::wait_ended(
            prim,
            &rec,
            now.saturating_sub(rec.since_ns),
        ));
    }
}

/// Granted after waiting.
#[cold]
pub fn acquired_after_wait(prim: &Prim, acq: Acq, w: Waiting) -> Hold {
    acquired_after_wait_ns(prim, acq, w).0
}

/// As [`acquired_after_wait`], also returning how long it waited in nanoseconds (for the
/// `acquired` event; one clock reading serves both). Nanoseconds, not the event's
/// milliseconds: the caller converts only when it emits the event (a conversion and a
/// division ended every contended acquisition otherwise).
#[cold]
pub fn acquired_after_wait_ns(prim: &Prim, acq: Acq, mut w: Waiting) -> (Hold, u64) {
    end_wait(prim, &mut w, false);
    let now = w.now();
    let waited = now.saturating_sub(w.since_ns());
    let exclusive = acq.mode().is_exclusive();
    let time = match (waited < LONG_NS, w.precise()) {
        (true, true) => WaitTime::ShortSample(waited),
        (true, false) => WaitTime::Short,
        (false, _) => WaitTime::Long(waited),
    };
    // The reading doubles as the hold's start: both clocks share one timeline (a published
    // reading lags by under a tick, so a release within the tick reads 0).
    let hold = LOCAL
        .try_with(|l| {
            count_wait(prim, time, exclusive, Some(l));
            quick_task_hold(l, prim, acq, now, true)
                .unwrap_or_else(|| record_hold(l, prim, actor::current_in(l), acq, now))
        })
        .unwrap_or_else(|_| {
            count_wait(prim, time, exclusive, None);
            Hold::default()
        });
    (hold, waited)
}

/// Counts a grant after a wait of `time`: in this thread's tally when it can (see
/// `held::tally_wait`), else in the primitive's statistics (an exclusive holder is alone, so
/// it updates them without an atomic RMW).
#[inline]
fn count_wait(prim: &Prim, time: WaitTime, exclusive: bool, l: Option<&Local>) {
    if l.is_some_and(|l| held::tally_wait(l, prim.id.0, time)) {
        if let WaitTime::ShortSample(ns) = time {
            prim.stats.note_wait_sample(ns);
        }
        return;
    }
    prim.stats.observe_wait(time, exclusive);
    prim.stats.count_contended(exclusive);
}

/// The acquire future was dropped while waiting.
#[cold]
pub fn wait_cancelled(prim: &Prim, mut w: Waiting) {
    end_wait(prim, &mut w, true);
    prim.stats.cancelled.fetch_add(1, Ordering::Relaxed);
}

/// A timed acquisition gave up.
#[cold]
pub fn wait_timed_out(prim: &Prim, mut w: Waiting) {
    end_wait(prim, &mut w, true);
    prim.stats.timeouts.fetch_add(1, Ordering::Relaxed);
}

/// The wait ended without a grant for another reason (the semaphore was closed).
#[cold]
pub fn wait_failed(prim: &Prim, mut w: Waiting) {
    end_wait(prim, &mut w, false);
}

/// A timed form gave up without ever queueing (deadline already past).
#[cold]
pub fn timed_out_at_once(prim: &Prim) {
    prim.stats.timeouts.fetch_add(1, Ordering::Relaxed);
}

/// Milliseconds a wait has lasted.
pub fn waited_ms(w: &Waiting) -> f64 {
    clock::ms_between(w.since_ns(), w.now())
}

/// A `try_` form found the primitive unavailable.
#[cold]
pub fn try_failed(prim: &Prim) {
    prim.stats.try_failures.fetch_add(1, Ordering::Relaxed);
}

/// A permit was `forget`-ed: it leaves the books as held and is counted as forgotten (a
/// later `add_permits` pays it back).
pub fn forgot(prim: &Prim, hold: Hold, permits: u64) {
    if let Some(v) = hold.entry.as_ref().and_then(EntryRef::view) {
        let site = v.site as *const Location<'static> as *mut Location<'static>;
        if prim.forgot_site.load(Ordering::Relaxed) != site {
            prim.forgot_site.store(site, Ordering::Relaxed);
        }
    }
    prim.forgot_total.fetch_add(permits, Ordering::Relaxed);
    prim.forgotten.fetch_add(permits, Ordering::Relaxed);
    // Wrapping (two's complement): racing changes land in any order and must sum exactly; a
    // saturating update would lose one that raced ahead of its counterpart.
    prim.capacity.fetch_sub(permits, Ordering::Relaxed);
    prim.epoch.fetch_add(1, Ordering::Relaxed);
    released(prim, hold);
}

/// `add_permits(n)`: capacity grows; it makes up for forgotten permits, earlier or later ones
/// (the forgotten balance goes below zero, read as none: see [`Prim::forgotten`]).
pub fn added_permits(prim: &Prim, n: u64) {
    prim.added_total.fetch_add(n, Ordering::Relaxed);
    prim.capacity.fetch_add(n, Ordering::Relaxed);
    // Wrapping, as in `forgot`.
    prim.forgotten.fetch_sub(n, Ordering::Relaxed);
    prim.epoch.fetch_add(1, Ordering::Relaxed);
}

/// `forget_permits(n)` removed `n` available permits: capacity shrinks on purpose.
pub fn removed_permits(prim: &Prim, n: u64) {
    // Wrapping, as in `forgot`.
    prim.capacity.fetch_sub(n, Ordering::Relaxed);
    prim.epoch.fetch_add(1, Ordering::Relaxed);
}

/// The semaphore was closed.
pub fn closed(prim: &Prim) {
    prim.closed.store(true, Ordering::Relaxed);
    prim.epoch.fetch_add(1, Ordering::Relaxed);
}

/// Reports what a new sighting of `prim` acquired under `held` found: the lock-order cycles
/// it closed, and the declared levels it breaks, itself or with a learned path. (Once per
/// set of holds, as the graph sees each: a sighting known before found all this then.)
#[cold]
fn report_order(
    found: graph::lockorder::Observed,
    held: &[held::HoldView],
    prim: &Prim,
    actor: ActorId,
    acq: &Acq,
) {
    use crate::report::finding::report_all;
    // The declared order first: a cycle of the same two locks is the same finding (one key),
    // and the declared one tells it at this acquisition.
    if crate::state::prim::levels_in_use() {
        report_all(rules::lock_levels::declared(held, prim, actor, acq));
    }
    for c in &found.cycles {
        report_all(rules::lock_order_inversion::cycle(c));
    }
    for p in &found.contradictions {
        report_all(rules::lock_levels::contradicted(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::cell::PrimCell;

    /// A task granted after a wait is in the task index at once (`quick_task_hold`, or
    /// `record_hold` when a sample is due), as after a grant without a wait: a check made on
    /// another worker, where its entry is not, finds the hold through the index. Each of the
    /// grants below runs with a different sample countdown, so both paths are taken.
    #[test]
    fn a_grant_after_a_wait_is_in_the_task_index() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        rt.block_on(async {
            tokio::spawn(async {
                let cell = PrimCell::new(None, PrimKind::Mutex, Location::caller(), 1);
                let prim = cell.get();
                let acq = Acq::new(Location::caller(), 1, Mode::Exclusive);
                let task = ActorId::task(tokio::task::id()).as_u64();
                for _ in 0..2 * clock::SAMPLE_EVERY {
                    assert!(!held::task_any(task));
                    let w = wait_begin(prim, acq, false);
                    let hold = acquired_after_wait(prim, acq, w);
                    assert!(held::task_any(task), "the grant is indexed");
                    released(prim, hold);
                }
                assert!(!held::task_any(task));
            })
            .await
            .expect("no panic");
        });
    }
}
