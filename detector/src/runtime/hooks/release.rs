//! Releasing a hold: the general [`released`] (and its two halves [`release_books`] and
//! [`release_stats`], either side of the inner unlock), and the quick releases of the common
//! cases, which a wrapper tries first and which say when they did nothing.

use crate::base::clock;
use crate::state::held::{
    self, EntryRef, FLAG_BLOCKING_IN_TASK, FLAG_QUICK, FLAG_SAMPLED, FLAG_SPLIT,
};
use crate::state::prim::Prim;
use crate::state::tls::{LOCAL, Local, local};

use super::Mode;
use super::hold::{Hold, TIME};
use super::hold_time::{hold_time, record_hold_time, record_mutex_hold};
use super::tasks::blocking_released;

/// The guard or permit was dropped (or forgotten: see [`forgot`](super::forgot)). Call before releasing the
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
pub(super) fn meta_flags(meta: u64) -> u8 {
    crate::model::mode::meta_flags(meta)
}

#[inline]
pub(super) fn meta_mode(meta: u64) -> Mode {
    crate::model::mode::meta_mode(meta)
}

#[inline]
pub(super) fn release_entry(prim: &Prim, e: &EntryRef, meta: u64, l: Option<&Local>) {
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
    console_released(prim, meta);
    if mutex {
        return mutex_released(prim, since, meta, true);
    }
    released_shared(l, prim.id.0, since, meta, short)
}

/// A quick release's view of the hold `raw` (a [`Hold::into_raw`], not turned back yet): its
/// entry, start and meta word, and whether it is short (untimed and started at the published
/// time now: under a tick; a sampled start is a precise reading, not the published word, but
/// its flag sends it to the general path). `None`: nothing was recorded.
#[inline(always)]
pub(super) fn quick_view(raw: *mut ()) -> Option<(EntryRef, u64, u64, bool)> {
    // SAFETY: as the callers' callers promise: a pointer from `Hold::into_raw`, or null.
    let e = unsafe { EntryRef::from_ptr(raw.cast()) }?;
    let (since, meta, short) = entry_view(&e);
    Some((e, since, meta, short))
}

/// A live hold's start and meta word, and whether it is short (see [`quick_view`]).
#[inline(always)]
pub(super) fn entry_view(e: &EntryRef) -> (u64, u64, bool) {
    let (since, meta) = e.since_and_meta();
    (since, meta, since == clock::published_word() & TIME)
}

/// The end of a quick release of a hold of `prim` (an id) that is not a mutex's, its entry
/// cleared: a short hold in this thread's tally when the tally has its slot (plain loads and
/// stores on this thread's table, nothing left for after the unlock), else its start and
/// flags for [`release_stats`].
#[inline(always)]
pub(super) fn released_shared(
    l: &Local,
    prim: u64,
    since: u64,
    meta: u64,
    short: bool,
) -> Released {
    if short && held::tally_quick(l, prim) {
        return Released::default();
    }
    Released::stats(since, meta)
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

/// [`release_quick`] for a hold of [`acquired_quick`](super::acquired_quick) (its [`Hold::into_raw`]), on the thread
/// that took it: the books in two stores, no check; a mutex's short hold counted by its
/// holder (plain loads and stores, as in [`release_books`]). Call before the inner unlock, and
/// give what it returns to [`release_stats`] after it. `mutex` as for [`release_quick`].
///
/// # Safety
///
/// `raw` is the hold of an [`acquired_quick`](super::acquired_quick) that returned it on this thread, not released
/// yet, and released once (this call).
#[inline(always)]
pub unsafe fn release_own(prim: &Prim, raw: *mut (), mutex: bool) -> Released {
    // SAFETY: as the caller promises: a live entry of this thread's table (non-null).
    let e = unsafe { EntryRef::from_ptr_unchecked(raw.cast()) };
    release_own_entry(prim, &e, entry_view(&e), mutex)
}

/// The body of [`release_own`]: `e` is a live hold of [`acquired_quick`](super::acquired_quick), on this thread,
/// `view` its [`entry_view`] (read before the entry is cleared).
#[inline(always)]
pub(super) fn release_own_entry(
    prim: &Prim,
    e: &EntryRef,
    (since, meta, short): (u64, u64, bool),
    mutex: bool,
) -> Released {
    held::release_own(e, local());
    console_released(prim, meta);
    if mutex {
        return mutex_released(prim, since, meta, short);
    }
    Released::stats(since, meta)
}

/// The tail of a quick release of a mutex's hold (its entry cleared, the mutex still held):
/// its holder counts it, a short one with one add (see `Stats::count_short`), a longer one
/// with its time. Nothing is left for [`release_stats`].
#[inline(always)]
fn mutex_released(prim: &Prim, since: u64, meta: u64, short: bool) -> Released {
    if short {
        prim.stats.count_short(true);
    } else {
        record_mutex_long(prim, since, meta);
    }
    Released::default()
}

/// Tells tokio-console's resource that the hold of `meta` ended (with the `console` feature).
#[inline(always)]
fn console_released(prim: &Prim, meta: u64) {
    #[cfg(feature = "console")]
    prim.resource.released(
        prim.kind,
        meta_mode(meta),
        crate::model::mode::meta_permits(meta),
    );
    #[cfg(not(feature = "console"))]
    let _ = (prim, meta);
}

/// A mutex's hold of a tick or more: recorded by its holder, with its time. (`extern "C"`:
/// it cannot unwind, so the quick release around it needs no landing pad.)
#[cold]
#[inline(never)]
pub(super) extern "C" fn record_mutex_long(prim: &Prim, since: u64, meta: u64) {
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

    /// A hold that started at `since` (packed `meta`), for [`release_stats`] to time. Never
    /// 0 for a real start (the clock counts from boot, and 0 means "nothing"), never 1
    /// ([`UNDONE`](Released::UNDONE)).
    #[inline(always)]
    fn stats(since: u64, meta: u64) -> Released {
        Released {
            since: since.max(8),
            meta,
        }
    }

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
    Released::stats(since, meta)
}

#[inline]
pub(super) fn resource_released(prim: &Prim, e: &EntryRef) {
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
pub(super) fn record_released(prim: &Prim, r: Released) {
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
