//! The acquire-time checks, made before a grant or a wait while the acquirer holds something:
//! the same primitive held already (`nested-acquire`), and new lock-order edges (cycles and
//! declared levels). One check over the holds of the acquirer, read from its thread's inline
//! entries when they are all there, else from every table; [`quick_nested`] is its question
//! for the quick path ("is there anything to check at all?").
//!
//! What the check finds is sighted here, inside the acquirer's critical section, but not
//! built here: [`report::pending`](crate::report::pending) takes the sighting as a few owned
//! values and builds the finding on the watchdog thread, or before the next read of findings,
//! with the tracing event sent to this thread's subscriber all the same. A nested acquire
//! repeated by a loop is dropped at the door, by its occurrence.

use std::sync::Arc;

use crate::analysis::graph;
use crate::base::clock;
use crate::report::pending::{self, Occurrence};
use crate::rules;
use crate::rules::nested_acquire::Acquirer;
use crate::state::actor::{self, ActorId};
use crate::state::held::{self, FLAG_MOVABLE, FLAG_REENTRY, FLAG_TRY};
use crate::state::prim::{self as books, Prim};
use crate::state::tls::{LOCAL, Local};

use super::Acq;

/// Whether the quick grant of [`acquired`](super::acquired) may record `prim` beside the holds
/// of this thread (`l`, whose mask of inline entries in use is not 0).
#[inline(always)]
pub(super) fn quick_nested(l: &Local, prim: &Prim, actor: ActorId, acq: Acq) -> bool {
    let (th, mask) = (l.held.get(), l.mask.get());
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

/// Whether `actor` already holds `prim` (acquire-time check, current thread's table and the
/// exclusive holder word); and lock-order edges from everything it holds to `prim`.
#[inline]
pub(super) fn check_held(prim: &Prim, actor: ActorId, acq: &Acq, waiting: bool, timed: bool) {
    if LOCAL.try_with(|l| holds_any(l, actor)).unwrap_or(false) {
        check_held_slow(prim, actor, acq, waiting, timed);
    }
}

/// Whether `actor` may hold anything: a task asks the task index (its holds may sit on other
/// threads' tables), a thread its own table.
#[inline]
pub(super) fn holds_any(l: &Local, actor: ActorId) -> bool {
    if actor.is_task() {
        held::task_any(actor.as_u64())
    } else {
        held::any_in(l)
    }
}

/// The check itself, for an actor that may hold something: its holds are read from its
/// thread's inline entries, or a task's from the task index, when they fit the scan's eight
/// (no view made unless there is something to report), else in full from every table.
#[inline(never)]
pub(super) fn check_held_slow(prim: &Prim, actor: ActorId, acq: &Acq, waiting: bool, timed: bool) {
    let _ = LOCAL.try_with(|l| {
        let mut mine = [(0u64, 0u8, std::ptr::null::<held::Entry>()); 8];
        let n = if actor.is_task() {
            held::task_mine(actor.as_u64(), &mut mine)
        } else {
            let (n, more) = held::mine_inline(l, actor.as_u64(), &mut mine);
            if more {
                let mut all = Vec::new();
                held::for_each_mine(actor.as_u64(), |h| all.push((h.prim, h.flags, h)));
                return judge(prim, actor, acq, (waiting, timed), &all, |h| Some(*h));
            }
            n
        };
        judge(prim, actor, acq, (waiting, timed), &mine[..n], |&e| {
            held::view_entry(e)
        });
    });
}

/// Judges an acquisition of `prim` by `actor` against its holds `mine` (primitive id, hold
/// flags, and what `view` turns into the hold's full view): a hold of `prim` itself is a
/// nested acquisition; the others, as one key, give the lock-order graph a sighting, reported
/// when it closes a cycle or breaks a declared level. A set of holds `prim` was acquired
/// under before gives nothing new (see `graph::lockorder`). Owned guards are left out: they
/// may have moved to another task. `(waiting, timed)`: the acquisition must wait, in a timed
/// form.
fn judge<T>(
    prim: &Prim,
    actor: ActorId,
    acq: &Acq,
    (waiting, timed): (bool, bool),
    mine: &[(u64, u8, T)],
    view: impl Fn(&T) -> Option<held::HoldView>,
) {
    let counted = || {
        mine.iter()
            .filter(|&&(_, flags, _)| flags & FLAG_MOVABLE == 0)
    };
    let nested = counted()
        .filter(|&&(id, _, _)| id == prim.id.0)
        .find_map(|(_, _, h)| view(h));
    let others = || counted().filter(|&&(id, _, _)| id != prim.id.0);
    let ctx = others().fold(0u64, |k, &(id, _, _)| {
        k.wrapping_add(graph::lockorder::context_part(id))
    });
    if others().next().is_some() && !graph::lockorder::known(prim, ctx) {
        let views: Vec<held::HoldView> = others().filter_map(|(_, _, h)| view(h)).collect();
        let found = graph::lockorder::observe(&views, prim, actor, acq, ctx);
        report_order(found, &views, prim, actor, acq);
    }
    if let Some(h) = nested
        && rules::nested_acquire::reported(prim, acq, &h, waiting)
    {
        sight_nested(prim, actor, acq, h, (waiting, timed));
    }
}

/// Hands a reported nested acquisition of `prim` (held as `held`) to the pending sightings,
/// unless this thread just handed the same occurrence on (a loop repeating the bug).
#[cold]
fn sight_nested(prim: &Prim, actor: ActorId, acq: &Acq, held: held::HoldView, how: (bool, bool)) {
    let scope = actor::current_scope();
    let what = Occurrence::nested(prim, held.site, acq.site(), scope, held.scope);
    if pending::repeated(&what) {
        return;
    }
    let (acq, now) = (*acq, clock::coarse_now());
    // Named now: a thread that ends before the drain would be told by its number only.
    let who = Acquirer::now(actor);
    // Pinned, so that a primitive dropped before the drain keeps its name in the report.
    let pins: Vec<Arc<Prim>> = books::get(prim.id()).into_iter().collect();
    if pins.is_empty() {
        // Not in the registry (nothing to pin): built here, as the sighting cannot wait.
        let f = rules::nested_acquire::sighted(prim, &who, &acq, &held, how, (scope, now));
        crate::report::finding::report(f);
        return;
    }
    pending::defer(Some(what), pins, move |pins: &[Arc<Prim>]| {
        let p = &pins[0];
        vec![rules::nested_acquire::sighted(
            p,
            &who,
            &acq,
            &held,
            how,
            (scope, now),
        )]
    });
}

/// Reports what a new sighting of `prim` acquired under `held` found: the lock-order cycles
/// it closed, and the declared levels it breaks, itself or with a learned path. (Once per
/// set of holds, as the graph sees each: a sighting known before found all this then.) Handed
/// to the pending sightings with every primitive it names pinned; nothing when it found
/// nothing.
#[cold]
pub(super) fn report_order(
    found: graph::lockorder::Observed,
    held: &[held::HoldView],
    prim: &Prim,
    actor: ActorId,
    acq: &Acq,
) {
    let levels = books::levels_in_use() && prim.level().is_some();
    if !levels && found.cycles.is_empty() && found.contradictions.is_empty() {
        return;
    }
    let mut ids: Vec<u64> = held.iter().map(|h| h.prim).collect();
    ids.push(prim.id().0);
    for (a, b, _) in found.cycles.iter().chain(&found.contradictions).flatten() {
        ids.extend([*a, *b]);
    }
    ids.sort_unstable();
    ids.dedup();
    let pins: Vec<Arc<Prim>> = ids
        .iter()
        .filter_map(|&id| books::get(books::PrimitiveId(id)))
        .collect();
    let scope = actor::current_scope();
    let Some(me) = pins.iter().find(|p| p.id() == prim.id()).cloned() else {
        // Not in the registry (nothing to pin): built here, as the sighting cannot wait.
        let f = order_findings(&found, (held, prim, actor, acq, scope), &pins);
        crate::report::finding::report_all(f);
        return;
    };
    let (held, acq) = (held.to_vec(), *acq);
    pending::defer(None, pins, move |pins: &[Arc<Prim>]| {
        order_findings(&found, (&held, &me, actor, &acq, scope), pins)
    });
}

/// Who sighted what: the holds, the primitive acquired under them, the actor, its
/// acquisition and its test scope.
type Sighting<'a> = (&'a [held::HoldView], &'a Prim, ActorId, &'a Acq, u32);

/// The findings of a lock-order sighting (see [`report_order`]), with the primitives it names
/// looked up in `pins` first.
fn order_findings(
    found: &graph::lockorder::Observed,
    (held, prim, actor, acq, scope): Sighting<'_>,
    pins: &[Arc<Prim>],
) -> Vec<crate::model::finding::Finding> {
    let mut out = Vec::new();
    // The declared order first: a cycle of the same two locks is the same finding (one key),
    // and the declared one tells it at this acquisition.
    if books::levels_in_use() {
        out.extend(rules::lock_levels::declared(
            (held, pins),
            prim,
            actor,
            acq,
            scope,
        ));
    }
    for c in &found.cycles {
        out.extend(rules::lock_order_inversion::cycle(c, pins));
    }
    for p in &found.contradictions {
        out.extend(rules::lock_levels::contradicted(p, pins));
    }
    out
}
