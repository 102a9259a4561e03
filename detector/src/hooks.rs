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

use std::cell::Cell;
use std::panic::Location;
use std::sync::atomic::Ordering;

use crate::actor::{self, ActorId};
use crate::held::{self, EntryRef, FLAG_BLOCKING_IN_TASK, FLAG_MOVABLE, FLAG_REENTRY, FLAG_TRY};
use crate::prim::Prim;
use crate::rules;
use crate::wait::WaiterRec;
use crate::{clock, graph};

pub use crate::config::enabled;
pub use crate::held::{FLAG_MOVABLE as MOVABLE, FLAG_REENTRY as REENTRY, FLAG_TRY as TRY, Mode};
pub use crate::prim::{PrimCell, PrimKind};

/// Marks `exclusive_holder` values whose guard may have moved to another task.
const HOLDER_MOVABLE: u64 = 1 << 62;

/// One acquisition as the wrapper describes it.
#[derive(Clone, Copy, Debug)]
pub struct Acq {
    /// The caller's location.
    pub site: &'static Location<'static>,
    /// Permits requested (1 for locks; `max_readers` for a tokio write).
    pub permits: u32,
    /// Access requested.
    pub mode: Mode,
    /// `TRY`, `MOVABLE`, `REENTRY` bits.
    pub flags: u8,
}

impl Acq {
    /// An acquisition of `permits` in `mode` at `site`.
    #[inline]
    pub fn new(site: &'static Location<'static>, permits: u32, mode: Mode) -> Acq {
        Acq {
            site,
            permits,
            mode,
            flags: 0,
        }
    }

    /// With extra flag bits.
    #[inline]
    pub fn with_flags(mut self, flags: u8) -> Acq {
        self.flags |= flags;
        self
    }
}

/// A recorded hold, kept by the guard or permit and given back to [`released`].
#[derive(Default)]
pub struct Hold {
    entry: Option<EntryRef>,
    since: u64,
    exclusive: bool,
    blocking_in_task: bool,
    thread: u64,
}

impl Hold {
    /// A hold that recorded nothing (detector off).
    #[inline]
    pub const fn none() -> Hold {
        Hold {
            entry: None,
            since: 0,
            exclusive: false,
            blocking_in_task: false,
            thread: 0,
        }
    }

    /// Whether anything was recorded.
    #[inline]
    pub fn is_recorded(&self) -> bool {
        self.since != 0
    }

    /// Milliseconds since the grant (coarse clock).
    pub fn held_ms(&self) -> f64 {
        clock::ms_between(self.since, clock::coarse_now())
    }

    /// Rewrites the permits and mode of the hold (permit `split`/`merge`, `downgrade`).
    pub fn update(&mut self, prim: &Prim, permits: u32, mode: Mode) {
        if let Some(e) = &self.entry {
            e.update(permits, mode);
        }
        if self.exclusive && !mode.is_exclusive() {
            prim.exclusive_holder.store(0, Ordering::Relaxed);
            self.exclusive = false;
        }
    }

    /// A second hold for `permits` split off this one (same holder, site and start).
    pub fn split(&self, prim: &Prim, permits: u32) -> Hold {
        let Some(view) = self.entry.as_ref().and_then(EntryRef::view) else {
            return Hold::none();
        };
        let meta = held::pack_meta(permits, view.mode, view.flags, view.scope);
        Hold {
            entry: held::push(prim.id.0, view.actor.as_u64(), view.site, view.since, meta),
            since: self.since,
            exclusive: false,
            blocking_in_task: false,
            thread: self.thread,
        }
    }

    /// Merges another hold of the same primitive into this one (`merge`): the other is
    /// cleared without counting a release.
    pub fn absorb(&mut self, other: Hold) {
        if let Some(e) = other.entry {
            e.release();
        }
    }
}

/// A wait in progress, kept by the acquire future.
pub struct Waiting {
    seq: u64,
    since_ns: u64,
}

thread_local! {
    /// Blocking guards held by a task on this thread, and the last such task.
    static BLOCKING_IN_TASK: Cell<(u32, u64)> = const { Cell::new((0, 0)) };
}

#[inline]
fn holder_word(actor: ActorId, flags: u8) -> u64 {
    actor.as_u64()
        | if flags & FLAG_MOVABLE != 0 {
            HOLDER_MOVABLE
        } else {
            0
        }
}

/// The primitive was granted without waiting.
#[inline]
pub fn acquired(prim: &Prim, acq: Acq) -> Hold {
    let actor = actor::current();
    if acq.flags & (FLAG_TRY | FLAG_REENTRY) == 0 {
        check_held(prim, actor, &acq, false);
    }
    record_hold(prim, actor, acq)
}

#[inline]
fn record_hold(prim: &Prim, actor: ActorId, mut acq: Acq) -> Hold {
    let exclusive = acq.mode.is_exclusive();
    if exclusive {
        prim.exclusive_holder
            .store(holder_word(actor, acq.flags), Ordering::Relaxed);
    }
    let mut blocking_in_task = false;
    let mut thread = 0;
    if prim.kind.is_blocking() && actor.is_task() {
        blocking_in_task = true;
        acq.flags |= FLAG_BLOCKING_IN_TASK;
        thread = actor::thread_seq();
        note_blocking_in_task(actor, 1);
    } else if actor.is_task() {
        check_blocking_neighbours(actor);
    }
    let since = clock::coarse_now();
    let meta = held::pack_meta(acq.permits, acq.mode, acq.flags, actor::current_scope());
    let entry = held::push(prim.id.0, actor.as_u64(), acq.site, since, meta);
    Hold {
        entry,
        since,
        exclusive,
        blocking_in_task,
        thread,
    }
}

/// The guard or permit was dropped (or forgotten: see [`forgot`]).
#[inline]
pub fn released(prim: &Prim, hold: Hold) {
    if hold.since == 0 {
        return;
    }
    let ns = clock::coarse_now().saturating_sub(hold.since);
    prim.stats.hold.observe(ns, hold.exclusive);
    if hold.exclusive {
        prim.exclusive_holder.store(0, Ordering::Relaxed);
    }
    if hold.blocking_in_task {
        blocking_released(prim, &hold);
    }
    if let Some(e) = hold.entry {
        e.release();
    }
}

/// Whether `actor` already holds `prim` (acquire-time check, current thread's table and the
/// exclusive holder word); and lock-order edges from everything it holds to `prim`.
#[inline]
fn check_held(prim: &Prim, actor: ActorId, acq: &Acq, waiting: bool) {
    let h = prim.exclusive_holder.load(Ordering::Relaxed);
    if waiting && h == actor.as_u64() {
        rules::nested_acquire::report_exclusive(prim, actor, acq);
        return;
    }
    if held::any_here() {
        check_held_slow(prim, actor, acq, waiting);
    }
}

#[inline(never)]
fn check_held_slow(prim: &Prim, actor: ActorId, acq: &Acq, waiting: bool) {
    let mut nested = None;
    let mut edges: [Option<held::HoldView>; 8] = [None; 8];
    let mut n = 0;
    held::for_each_mine(actor.as_u64(), |h| {
        if h.movable() {
            return;
        }
        if h.prim == prim.id.0 {
            nested.get_or_insert(h);
        } else if n < edges.len() {
                edges[n] = Some(h);
                n += 1;
        } else {
            graph::lockorder::note_edge(&h, prim, actor, acq);
        }
    });
    for h in edges.iter().take(n).flatten() {
        graph::lockorder::note_edge(h, prim, actor, acq);
    }
    if let Some(h) = nested {
        rules::nested_acquire::report_shared(prim, actor, acq, &h, waiting);
    }
}

/// The acquisition must wait: records the waiter (and checks for a self-wait, lock-order
/// edges and blocking-in-async before the wait starts).
#[cold]
pub fn wait_begin(prim: &Prim, acq: Acq, timed: bool) -> Waiting {
    let actor = actor::current();
    if acq.flags & FLAG_REENTRY == 0 {
        check_held(prim, actor, &acq, true);
    }
    let thread = actor::thread_seq();
    if prim.kind.is_blocking() {
        rules::blocking_in_async::check_blocking_wait(prim, actor, &acq);
    } else if actor.is_task() {
        rules::blocking_in_async::check_async_wait(prim, actor, &acq, blocking_held_here(actor));
    }
    let since_ns = clock::precise_now();
    let rec = WaiterRec {
        seq: 0,
        actor,
        thread,
        site: acq.site,
        since_ns,
        permits: acq.permits,
        mode: acq.mode,
        timed,
        owned: acq.flags & FLAG_MOVABLE != 0,
        scope: actor::current_scope(),
        progress_at_start: prim.progress(),
    };
    let seq = {
        let mut q = prim.waiters.lock();
        let seq = q.push(rec);
        prim.waiting.store(q.len() as u32, Ordering::Relaxed);
        seq
    };
    Waiting { seq, since_ns }
}

fn end_wait(prim: &Prim, w: &Waiting) {
    let mut q = prim.waiters.lock();
    q.remove(w.seq);
    prim.waiting.store(q.len() as u32, Ordering::Relaxed);
}

/// Granted after waiting.
#[cold]
pub fn acquired_after_wait(prim: &Prim, acq: Acq, w: Waiting) -> Hold {
    end_wait(prim, &w);
    let waited = clock::precise_now().saturating_sub(w.since_ns);
    let exclusive = acq.mode.is_exclusive();
    // An exclusive holder is alone, so it may update these without an atomic RMW.
    prim.stats.wait.observe(waited, exclusive);
    if exclusive {
        prim.stats.contended.store(
            prim.stats.contended.load(Ordering::Relaxed) + 1,
            Ordering::Relaxed,
        );
    } else {
        prim.stats.contended.fetch_add(1, Ordering::Relaxed);
    }
    record_hold(prim, actor::current(), acq)
}

/// The acquire future was dropped while waiting.
#[cold]
pub fn wait_cancelled(prim: &Prim, w: Waiting) {
    end_wait(prim, &w);
    prim.stats.cancelled.fetch_add(1, Ordering::Relaxed);
}

/// A timed acquisition gave up.
#[cold]
pub fn wait_timed_out(prim: &Prim, w: Waiting) {
    end_wait(prim, &w);
    prim.stats.timeouts.fetch_add(1, Ordering::Relaxed);
}

/// The wait ended without a grant for another reason (the semaphore was closed).
#[cold]
pub fn wait_failed(prim: &Prim, w: Waiting) {
    end_wait(prim, &w);
}

/// A timed form gave up without ever queueing (deadline already past).
#[cold]
pub fn timed_out_at_once(prim: &Prim) {
    prim.stats.timeouts.fetch_add(1, Ordering::Relaxed);
}

/// Milliseconds a wait has lasted.
pub fn waited_ms(w: &Waiting) -> f64 {
    clock::ms_between(w.since_ns, clock::precise_now())
}

/// A `try_` form found the primitive unavailable.
#[cold]
pub fn try_failed(prim: &Prim) {
    prim.stats.try_failures.fetch_add(1, Ordering::Relaxed);
}

/// A permit was `forget`-ed: it leaves the books as held and is counted as forgotten (a
/// later `add_permits` pays it back).
pub fn forgot(prim: &Prim, hold: Hold, permits: u32) {
    prim.forgotten
        .fetch_add(u64::from(permits), Ordering::Relaxed);
    let _ = prim.capacity.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
        Some(c.saturating_sub(u64::from(permits)))
    });
    prim.epoch.fetch_add(1, Ordering::Relaxed);
    released(prim, hold);
}

/// `add_permits(n)`: capacity grows; forgotten permits are paid back first.
pub fn added_permits(prim: &Prim, n: u64) {
    prim.capacity.fetch_add(n, Ordering::Relaxed);
    let _ = prim.forgotten.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |f| {
        Some(f.saturating_sub(n))
    });
    prim.epoch.fetch_add(1, Ordering::Relaxed);
}

/// `forget_permits(n)` removed `n` available permits: capacity shrinks on purpose.
pub fn removed_permits(prim: &Prim, n: u64) {
    let _ = prim.capacity.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
        Some(c.saturating_sub(n))
    });
    prim.epoch.fetch_add(1, Ordering::Relaxed);
}

/// The semaphore was closed.
pub fn closed(prim: &Prim) {
    prim.closed.store(true, Ordering::Relaxed);
    prim.epoch.fetch_add(1, Ordering::Relaxed);
}

// --- blocking guards held by tasks ------------------------------------------------------------

#[inline]
fn note_blocking_in_task(actor: ActorId, delta: i32) {
    let _ = BLOCKING_IN_TASK.try_with(|c| {
        let (n, _) = c.get();
        let n = (n as i32 + delta).max(0) as u32;
        c.set((n, if delta > 0 { actor.as_u64() } else { c.get().1 }));
    });
}

/// Whether `actor` holds a blocking guard acquired on this thread.
fn blocking_held_here(actor: ActorId) -> Option<held::HoldView> {
    let (n, _) = BLOCKING_IN_TASK.try_with(Cell::get).unwrap_or((0, 0));
    if n == 0 {
        return None;
    }
    let mut found = None;
    held::for_each_mine(actor.as_u64(), |h| {
        if h.flags & FLAG_BLOCKING_IN_TASK != 0 {
            found.get_or_insert(h);
        }
    });
    found
}

/// Another task is running on a thread where a task holds a blocking guard: that guard is
/// held across an `.await`.
#[inline]
fn check_blocking_neighbours(actor: ActorId) {
    let (n, last) = BLOCKING_IN_TASK.try_with(Cell::get).unwrap_or((0, 0));
    if n != 0 && last != actor.as_u64() {
        rules::blocking_in_async::check_neighbours(actor);
    }
}

#[cold]
fn blocking_released(prim: &Prim, hold: &Hold) {
    let here = actor::thread_seq();
    if here == hold.thread {
        note_blocking_in_task(actor::current(), -1);
    } else if let Some(view) = hold.entry.as_ref().and_then(EntryRef::view) {
        rules::blocking_in_async::report_moved(prim, &view, here);
    }
}
