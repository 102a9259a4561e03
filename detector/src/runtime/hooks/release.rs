//! Releasing a hold: one path, [`release_books`] before the inner unlock and
//! [`release_stats`] after it ([`released`] is both at once, for a caller with nothing to
//! unlock in between). Its inline half releases the common holds (the thread's own, or one
//! taken on this thread that nothing else points at); everything else goes to its `#[cold]`
//! half. A wrapper says what its guard's type knows ([`Class`], [`GuardMarker`]), never which
//! half to take.

use crate::base::clock;
use crate::state::held::{
    self, EntryRef, FLAG_BLOCKING_IN_TASK, FLAG_QUICK, FLAG_SAMPLED, FLAG_SPLIT, Meta,
};
use crate::state::prim::Prim;
use crate::state::tls::{LOCAL, Local, local};

use super::hold::{Hold, TIME};
use super::hold_time::{hold_time, record_hold_time, record_mutex_hold};
use super::tasks::blocking_released;

pub use parking_lot::lock_api::{GuardNoSend, GuardSend};

/// What a guard's type says of the thread its holds are released on: lock_api's guard
/// markers. [`GuardNoSend`]: the guard cannot leave the thread that took it, so a hold the
/// thread recorded as its own is released without a check; [`GuardSend`]: it may have moved.
pub trait GuardMarker: sealed::Sealed {
    /// Whether the guard stays on the thread that took it.
    const STAYS: bool;
}

impl GuardMarker for GuardNoSend {
    const STAYS: bool = true;
}

impl GuardMarker for GuardSend {
    const STAYS: bool = false;
}

/// What a guard's type says of the primitive it holds: a mutex ([`IsMutex`]: its holder
/// counts its hold time before the unlock, alone), not one ([`NotMutex`]: the common release
/// does not even read the primitive), or either ([`AnyPrim`]: the primitive's kind says).
pub trait Class: sealed::Sealed {
    /// `Some(is a mutex)` when the type knows it.
    const MUTEX: Option<bool>;
}

/// A mutex's guard (see [`Class`]).
pub struct IsMutex;
/// A guard of a primitive that is not a mutex: a semaphore's permit, a read-write lock's
/// (see [`Class`]).
pub struct NotMutex;
/// A guard that may be either (see [`Class`]).
pub struct AnyPrim;

impl Class for IsMutex {
    const MUTEX: Option<bool> = Some(true);
}
impl Class for NotMutex {
    const MUTEX: Option<bool> = Some(false);
}
impl Class for AnyPrim {
    const MUTEX: Option<bool> = None;
}

pub(super) mod sealed {
    pub trait Sealed {}
    impl<const T: bool> Sealed for super::super::hold::TakenBy<T> {}
    impl Sealed for super::GuardNoSend {}
    impl Sealed for super::GuardSend {}
    impl Sealed for super::IsMutex {}
    impl Sealed for super::NotMutex {}
    impl Sealed for super::AnyPrim {}
}

/// The guard or permit was dropped (or forgotten: see [`forgot`](super::forgot)), with
/// nothing to unlock between the books and the statistics: [`release_books`] then
/// [`release_stats`]. Call before releasing the inner primitive.
#[inline]
pub fn released(prim: &Prim, hold: Hold) {
    let r = release_books::<AnyPrim, GuardSend>(hold, || prim);
    release_stats(prim, r);
}

/// The first half of a release: clears the hold from the books (call before the inner
/// unlock), and returns what [`release_stats`] records after it, so that an atomic
/// read-modify-write and the precise clock stay out of the critical section. `prim` is
/// called only when the primitive itself is needed (never on the common release of a
/// [`NotMutex`] hold).
///
/// A mutex's holder is alone until the unlock, so it records its hold time here with plain
/// loads and stores, and leaves nothing for [`release_stats`]: every update of a mutex's
/// statistics is made by its holder, which the mutex itself orders, so none is lost. A hold
/// shorter than a tick of the published clock (the common case) of any other primitive is
/// counted in this thread's tally (per-thread counts that scrapes add up).
#[inline(always)]
pub fn release_books<'p, C: Class, M: GuardMarker>(
    hold: Hold,
    prim: impl Fn() -> &'p Prim,
) -> Released {
    Released::of::<C>(books::<C, M>(hold, prim))
}

/// The body of [`release_books`].
#[inline(always)]
fn books<'p, C: Class, M: GuardMarker>(hold: Hold, prim: impl Fn() -> &'p Prim) -> Released {
    let Some(e) = hold.entry else {
        return Released::default();
    };
    let (since, meta) = e.since_and_meta();
    let short = since == clock::published_word() & TIME;
    let l = local();
    let flags = meta.flags();
    if flags & FLAG_QUICK != 0 && (M::STAYS || held::is_mine(&e, l)) {
        // The thread's own untimed hold, on its thread: the books in two stores.
        held::release_own(&e, l);
        return own_released::<C>(prim(), since, meta, short);
    }
    if M::STAYS {
        // A guard that stays on its thread and did not take the quick grant: rare (a sample,
        // a nested acquisition, a `try_`), and kept out of the caller's inline code.
        return release_rest(prim(), e, C::MUTEX);
    }
    if flags & (FLAG_SAMPLED | FLAG_BLOCKING_IN_TASK | FLAG_SPLIT | FLAG_QUICK) == 0 {
        // Most often a task's hold, taken on this thread, that nothing else points at.
        if C::MUTEX == Some(false) && !cfg!(feature = "console") {
            // A semaphore's or read-write lock's: its id is the hold's, and the wrapper's
            // pointer to the primitive, which may share a cache line with the wrapped
            // semaphore's state (written by every worker), is not read.
            let id = e.prim_id();
            if held::release_quick(&e, l) {
                return released_shared(l, id, since, meta, short);
            }
        } else if let Some(r) = release_in_place(prim(), &e, l, (since, meta, short), C::MUTEX) {
            return r;
        }
    }
    // The release in place was tried, or cannot apply.
    let prim = prim();
    release_general(prim, e, since, meta, is_mutex(C::MUTEX, prim))
}

/// The end of a release of the thread's own hold (its entry cleared): a mutex's hold counted
/// by its holder, else its start and flags for [`release_stats`].
#[inline(always)]
fn own_released<C: Class>(prim: &Prim, since: u64, meta: Meta, short: bool) -> Released {
    console_released(prim, meta);
    if is_mutex(C::MUTEX, prim) {
        return mutex_released(prim, since, meta, short);
    }
    Released::stats(since, meta)
}

/// The release of a hold taken on this thread that nothing else points at, without a sample,
/// a split or a task's blocking guard (the caller checked the flags), and for a mutex a short
/// one: cleared in place. `None`: nothing was done.
#[inline(always)]
fn release_in_place(
    prim: &Prim,
    e: &EntryRef,
    l: &Local,
    (since, meta, short): (u64, Meta, bool),
    mutex: Option<bool>,
) -> Option<Released> {
    let mutex = is_mutex(mutex, prim);
    if (mutex && !short) || !held::release_quick(e, l) {
        return None;
    }
    // (The entry is cleared: its view is gone, its meta word still says what was held.)
    console_released(prim, meta);
    if mutex {
        return Some(mutex_released(prim, since, meta, true));
    }
    Some(released_shared(l, prim.id.0, since, meta, short))
}

/// Whether `prim` is a mutex: `known` from the guard's type ([`Class::MUTEX`]), or read.
#[inline(always)]
fn is_mutex(known: Option<bool>, prim: &Prim) -> bool {
    known.unwrap_or_else(|| prim.kind.is_mutex())
}

/// The rest of [`release_books`] for a guard that stays on its thread, from the hold alone
/// (the fewer words the inline half keeps alive for this call, the smaller it is): a hold
/// taken on this thread that nothing else points at is released in place, anything else
/// (any thread's entry, a task's indexed or blocking hold, a sampled or split one, a mutex's
/// long hold) by the general release.
#[inline(never)]
fn release_rest(prim: &Prim, e: EntryRef, mutex: Option<bool>) -> Released {
    let (since, meta) = e.since_and_meta();
    let short = since == clock::published_word() & TIME;
    let view = (since, meta, short);
    if meta.flags() & (FLAG_SAMPLED | FLAG_BLOCKING_IN_TASK | FLAG_SPLIT | FLAG_QUICK) == 0
        && let Some(r) = release_in_place(prim, &e, local(), view, mutex)
    {
        return r;
    }
    release_general(prim, e, since, meta, is_mutex(mutex, prim))
}

/// Any hold, wherever it was recorded: off its thread's inline entries, in the task index,
/// a task's blocking guard, a sampled or split hold; also while the thread's locals are
/// being torn down.
#[cold]
#[inline(never)]
fn release_general(prim: &Prim, e: EntryRef, since: u64, meta: Meta, mutex: bool) -> Released {
    if LOCAL
        .try_with(|l| release_entry(prim, &e, meta, Some(l)))
        .is_err()
    {
        release_entry(prim, &e, meta, None);
    }
    if mutex {
        record_mutex_hold(prim, hold_time(since, meta));
        return Released::default();
    }
    Released::stats(since, meta)
}

#[inline]
pub(super) fn release_entry(prim: &Prim, e: &EntryRef, meta: Meta, l: Option<&Local>) {
    if meta.any(FLAG_BLOCKING_IN_TASK) {
        blocking_released(prim, e);
    }
    resource_released(prim, e);
    e.release_in(l);
}

/// The end of a release of a hold of `prim` (an id) that is not a mutex's, its entry
/// cleared: a short hold in this thread's tally when the tally has its slot (plain loads and
/// stores on this thread's table, nothing left for after the unlock), else its start and
/// flags for [`release_stats`].
#[inline(always)]
fn released_shared(l: &Local, prim: u64, since: u64, meta: Meta, short: bool) -> Released {
    if short && held::tally_quick(l, prim) {
        return Released::default();
    }
    Released::stats(since, meta)
}

/// The tail of a release of a mutex's hold (its entry cleared, the mutex still held): its
/// holder counts it, a short one with one add (see `Stats::count_short`), a longer one with
/// its time. Nothing is left for [`release_stats`].
#[inline(always)]
fn mutex_released(prim: &Prim, since: u64, meta: Meta, short: bool) -> Released {
    if short {
        prim.stats.count_short(true);
    } else {
        record_mutex_long(prim, since, meta);
    }
    Released::default()
}

/// Tells tokio-console's resource that the hold of `meta` ended (with the `console` feature).
#[inline(always)]
fn console_released(prim: &Prim, meta: Meta) {
    #[cfg(feature = "console")]
    prim.resource
        .released(prim.kind, meta.mode(), meta.permits());
    #[cfg(not(feature = "console"))]
    let _ = (prim, meta);
}

/// A mutex's hold of a tick or more: recorded by its holder, with its time. (`extern "C"`:
/// it cannot unwind, so the inline release around it needs no landing pad.)
#[cold]
#[inline(never)]
pub(super) extern "C" fn record_mutex_long(prim: &Prim, since: u64, meta: Meta) {
    record_mutex_hold(prim, hold_time(since, meta));
}

/// What [`release_books`] leaves for [`release_stats`]: the hold's start and flags, or
/// nothing (a start of 0).
#[derive(Clone, Copy, Default, Debug)]
pub struct Released {
    since: u64,
    meta: Meta,
}

impl Released {
    /// A hold that started at `since` (described by `meta`), for [`release_stats`] to time: never
    /// 0, which means "nothing" (the coarse clock counts from the process's start, so a
    /// start in its first nanoseconds is moved to 8, the first reading with its low bits
    /// cleared).
    #[inline(always)]
    fn stats(since: u64, meta: Meta) -> Released {
        Released {
            since: since.max(8),
            meta,
        }
    }

    /// `r`, or nothing for a mutex's guard: a mutex's holder records its own hold time before
    /// the unlock, on every path, so saying so to the compiler takes the statistics' code out
    /// of a mutex guard's drop.
    #[inline(always)]
    pub fn of<C: Class>(r: Released) -> Released {
        if C::MUTEX == Some(true) {
            Released::default()
        } else {
            r
        }
    }

    /// Whether [`release_stats`] has anything to record (else it need not be called, nor the
    /// primitive looked up for it).
    #[inline(always)]
    pub fn has_stats(&self) -> bool {
        self.since != 0
    }
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
