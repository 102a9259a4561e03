//! Recording a hold: the [`Hold`] a guard or permit keeps, and the grants that make one:
//! [`acquired`], whose inline half records the common holds (a thread's own inline entry, a
//! task that holds nothing) and whose other half ([`acquired_at`]) runs the acquire-time
//! checks of `order` first.

use crate::base::clock;
use crate::state::actor::{self, ActorId};
use crate::state::held::{
    self, EntryRef, FLAG_QUICK, FLAG_REENTRY, FLAG_SAMPLED, FLAG_SPLIT, FLAG_TRY, NewHold,
};
use crate::state::prim::Prim;
use crate::state::tls::{LOCAL, Local, local};

use super::order::{check_held_slow, holds_any, quick_nested};
use super::tasks::{blocking_flags, check_blocking_neighbours};
use super::{Acq, Mode};

/// A recorded hold, kept by the guard or permit and given back to [`released`](super::released): one word,
/// the hold's entry in a hold table, which keeps everything else (start, mode, flags).
///
/// One word so that a guard stays two (the lock and this) and travels in registers: a wider
/// guard is copied through memory, and that copy, read back whole right after it was written
/// field by field, stalls on store forwarding.
#[derive(Default)]
pub struct Hold {
    /// `None`: nothing was recorded (the detector is off, or the thread is exiting).
    pub(super) entry: Option<EntryRef>,
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
        let meta = held::Meta::new(permits, view.mode, (view.flags | FLAG_SPLIT) & !FLAG_QUICK);
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
pub(super) const TIME: u64 = !7;

/// The current hold time ([`clock::hold_now`]), for [`acquired_at`].
#[inline]
pub fn now() -> u64 {
    clock::hold_now()
}

/// Who usually takes a primitive, as the wrapper's type knows: [`Threads`] (a lock that
/// blocks the thread: parking_lot's, std's) or [`Tasks`] (tokio's). It decides only which
/// grant is inline at the call site; the other kind of taker is recorded all the same, out of
/// line.
pub trait Takers: super::release::sealed::Sealed {
    /// Whether threads take it.
    const THREADS: bool;
}

/// The takers a wrapper's type names: `TakenBy<true>` is [`Threads`], `TakenBy<false>`
/// [`Tasks`].
pub struct TakenBy<const THREADS: bool>;
/// A lock that blocks the thread (see [`Takers`]).
pub type Threads = TakenBy<true>;
/// A tokio primitive, taken by tasks (see [`Takers`]).
pub type Tasks = TakenBy<false>;

impl<const T: bool> Takers for TakenBy<T> {
    const THREADS: bool = T;
}

/// The primitive was granted without waiting. Inline, the quick grant of the common cases
/// (a thread's own hold beside holds known to come before it in the lock order, a task's
/// first); everything else out of line, through [`acquired_at`].
#[inline(always)]
pub fn acquired<T: Takers>(prim: &Prim, acq: Acq) -> Hold {
    match quick_grant::<T>(prim, acq) {
        Some(hold) => hold,
        None => acquired_slow(prim, acq),
    }
}

#[inline(never)]
fn acquired_slow(prim: &Prim, acq: Acq) -> Hold {
    acquired_at(prim, acq, clock::hold_now())
}

/// The quick grant, for the kind of taker `T` says: on a thread, a hold beside holds that are
/// all on its inline entries and known to come before `prim` in the lock order (so no check
/// has anything to report); in a task, see [`quick_task_hold`]. Never when a sample is due or the thread has no table yet.
/// `None`: the caller takes the general path, which handles everything else (a nested
/// acquire, a new lock-order edge, the first use of a thread, the sampled acquisition).
///
/// A thread's hold starts at the published clock and is marked [`FLAG_QUICK`], its own
/// untimed inline hold: its release on that thread needs no other check. It writes the entry
/// and nothing more, all of it inside a lock's critical section: a lock taken again by the
/// thread that just released it (the common case when two threads share a short critical
/// section) is handed over the least often when little runs between release and re-take.
#[inline(always)]
fn quick_grant<T: Takers>(prim: &Prim, acq: Acq) -> Option<Hold> {
    let l = local();
    if !T::THREADS {
        let task = ActorId::task(tokio::task::try_id()?);
        return quick_task_hold(l, task, prim, acq, clock::published_word(), false);
    }
    // A sample countdown above 0 means this thread has its table (see `record_hold`).
    let left = l.hold_sample.get();
    let since = clock::published_word();
    if (left == 0) | (since == 0) {
        return None;
    }
    let actor = ActorId::from_thread_seq(l.thread_seq.get());
    if l.mask.get() != 0 && !quick_nested(l, prim, actor, acq) {
        return None;
    }
    if tokio::task::try_id().is_some() {
        return None;
    }
    let acq = acq.with_flags(FLAG_QUICK);
    Some(quick_push(l, prim, actor, acq, since & TIME))
}

/// Task `actor`'s hold of `prim` from `since`, on the quick path when it applies (no sample
/// due, room in the table, a clock reading, not a blocking lock, no task's blocking guard on
/// this thread): one read of the task's index slot, the entry written in place. `waited`:
/// granted after a wait, whose start made the checks a nested acquisition needs, so a task
/// that holds something takes it too; else only one that holds nothing (or a `try_`/re-entry
/// form). `None`: the caller takes the general path.
#[inline(always)]
pub(super) fn quick_task_hold(
    l: &Local,
    actor: ActorId,
    prim: &Prim,
    acq: Acq,
    since: u64,
    waited: bool,
) -> Option<Hold> {
    // A sample countdown above 0 means this thread has its table (see `record_hold`).
    let left = l.hold_sample.get();
    if (left == 0)
        | (l.mask.get() == held::FULL)
        | (since == 0)
        | prim.kind.is_blocking()
        | (l.blocking_in_task.get() != 0)
    {
        return None;
    }
    // Read once: whether the task holds anything, and where its first hold is indexed.
    let look = held::task_look(actor.as_u64());
    if !waited && acq.flags() & (FLAG_TRY | FLAG_REENTRY) == 0 && look.holds() {
        return None;
    }
    let hold = quick_push(l, prim, actor, acq, since & TIME);
    if let Some(e) = &hold.entry {
        e.index_looked(actor.as_u64(), look);
    }
    Some(hold)
}

/// The entry of a quick acquisition, on this thread's table (`l`), whose inline entries are
/// not all in use.
#[inline(always)]
fn quick_push(l: &Local, prim: &Prim, actor: ActorId, acq: Acq, since: u64) -> Hold {
    let (th, mask) = (l.held.get(), l.mask.get());
    l.hold_sample.set(l.hold_sample.get() - 1);
    prim.resource.acquired(prim.kind, acq.mode(), acq.permits());
    // SAFETY: `th` and `mask` are this thread's, and the callers checked that `mask` is not
    // full (and that the table exists: a sample countdown above 0).
    let entry = unsafe { held::push_quick(l, th, mask, new_hold(l, prim, actor, acq, since)) };
    Hold { entry: Some(entry) }
}

/// The entry of `actor`'s hold of `prim` as `acq` asked, from `since` (its low bits cleared),
/// in the thread's current test scope.
#[inline(always)]
fn new_hold(l: &Local, prim: &Prim, actor: ActorId, acq: Acq, since: u64) -> NewHold {
    NewHold {
        prim: prim.id.0,
        actor: actor.as_u64(),
        site: acq.site(),
        since,
        meta: acq.meta,
        scope: l.scope.get(),
    }
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
pub(super) fn record_hold(
    l: &Local,
    prim: &Prim,
    actor: ActorId,
    mut acq: Acq,
    mut since: u64,
) -> Hold {
    // One acquisition in `SAMPLE_EVERY` on this thread is timed precisely (the hold
    // histogram's samples); the others cost a decrement.
    match l.hold_sample.get() {
        0 => {
            since = clock::precise_now();
            l.last_precise_hold.set(since);
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
    let entry = held::push_in(l, new_hold(l, prim, actor, acq, since & TIME));
    match &entry {
        Some(e) if actor.is_task() => e.index_task(actor.as_u64()),
        Some(_) => {}
        // No table (the thread is exiting): the quick grant must not run (see `quick_grant`).
        None => l.hold_sample.set(0),
    }
    prim.resource.acquired(prim.kind, acq.mode(), acq.permits());
    Hold { entry }
}

/// The countdown to the next sample after one read at `now`: `every` on average, jittered by
/// the clock's low bits so that a periodic workload (long, short, long, ...) is not sampled in
/// step.
#[inline]
pub(super) fn next_sample(now: u64, every: u32) -> u32 {
    every / 2 + ((now >> 4) % u64::from(every)) as u32
}
