//! `lock-order-inversion` against declared levels: the order a user declared with
//! [`Level`]s, checked at each acquisition, on the first run.
//!
//! A primitive with a level may be acquired only while every primitive with a level that its
//! task or thread holds has a strictly lower one (lower levels first; shared holds count like
//! exclusive ones). Two of one level are taken together only through a `MultiLock`, which takes
//! its members in one global order at one call: a held primitive of the same level acquired at
//! the same site, with a smaller id, is that. Primitives without a level keep the learned order
//! (see [`crate::analysis::graph::lockorder`]), and a learned path from one level through them
//! to a lower level is reported too, when the edge that completes it is first seen.
//!
//! A declared order is checked as declared: a mutex held around both acquisitions (a gate,
//! which excuses a learned cycle) does not excuse it. `try_` forms and the re-entry of a
//! reentrant lock by its owner are no acquisitions here, as for the learned order; nor is a
//! hold of an owned guard (`lock_owned`), which may have moved to another task.

use std::sync::Arc;

use crate::analysis::graph::lockorder::Path;
use crate::model::acq::Acq;
use crate::model::finding::{Finding, FindingKind, OrderEdge, PrimRef};
use crate::model::level::Level;
use crate::rules::lock_order_inversion::{pinned, pinned_ref};
use crate::rules::prim_ref;
use crate::state::actor::ActorId;
use crate::state::held::HoldView;
use crate::state::prim::{Prim, site_string};

/// How every such report ends.
const DECLARED_ORDER: &str = "declared order: lower levels first";

/// The level of the primitive `id` (looked up in `pins` first, see [`pinned`]), if it has one.
fn level_of(pins: &[Arc<Prim>], id: u64) -> Option<Level> {
    pinned(pins, id)?.level()
}

/// `level 2` or `level 2, Accounts`: inside the parentheses after a name.
fn told(l: Level) -> String {
    match l.name() {
        Some(name) => format!("level {}, {}", l.rank(), name.escape_debug()),
        None => format!("level {}", l.rank()),
    }
}

/// Whether acquiring a primitive of level `level` (id `id`, at `site`) while holding `h`, of
/// level `held`, breaks the declared order. Equal levels do, unless both are members of one
/// `MultiLock` taken at one call (same site, in ascending id: see the module docs).
fn breaks(held: Level, h: &HoldView, level: Level, id: u64, acq: &Acq) -> bool {
    held.rank() > level.rank()
        || (held.rank() == level.rank() && !(h.site == acq.site() && h.prim < id))
}

/// The key of one bug: the (name, creation site) of each primitive, sorted (as the learned
/// cycles' rule keys them, so that one pair found both ways is one finding).
fn key(refs: &[PrimRef]) -> String {
    let mut parts: Vec<String> = refs
        .iter()
        .map(|r| format!("{}@{}", r.name, r.created_at))
        .collect();
    parts.sort();
    parts.join("|")
}

/// The finding for acquiring `prim` (as `acq`, by `actor` in test scope `scope`) while
/// holding `held` (the actor's holds the lock-order graph sees), if the acquisition breaks the
/// declared levels: told for the held primitive of the highest level it breaks. The held
/// primitives are looked up in `pins` first (see [`pinned`]).
#[cold]
pub(crate) fn declared(
    (held, pins): (&[HoldView], &[Arc<Prim>]),
    prim: &Prim,
    actor: ActorId,
    acq: &Acq,
    scope: u32,
) -> Option<Finding> {
    let level = prim.level()?;
    let (h, hl) = held
        .iter()
        .filter_map(|h| Some((h, level_of(pins, h.prim)?)))
        .filter(|(h, hl)| breaks(*hl, h, level, prim.id.0, acq))
        .max_by_key(|(_, hl)| hl.rank())?;
    let (taken, holding) = (prim_ref(prim), pinned_ref(pins, h.prim));
    let (tn, hn) = (
        format!("{:?}", taken.label()),
        format!("{:?}", holding.label()),
    );
    let summary = format!(
        "{tn} ({}) acquired at {} while holding {hn} ({}) since {}; {DECLARED_ORDER}",
        told(level),
        site_string(acq.site()),
        told(hl),
        site_string(h.site),
    );
    let mut f = Finding::new(
        FindingKind::LockOrderInversion,
        key(&[taken.clone(), holding.clone()]),
        summary,
    );
    f.details.push(format!(
        "order: {hn} held ({} at {}) while acquiring {tn} ({} at {}) by {}",
        h.mode.verb(),
        site_string(h.site),
        acq.mode().verb(),
        site_string(acq.site()),
        actor.describe()
    ));
    if hl.rank() == level.rank() {
        f.details.push(format!(
            "{hn} and {tn} are both {level}: primitives of one level are never nested, only taken together through a MultiLock"
        ));
        f.fix = "take primitives of one level together through a MultiLock (one global order), or give them distinct levels".into();
    } else {
        f.details.push(format!(
            "declared: {tn} is {level}, {hn} is {hl}: {tn} must be taken before {hn}, or after it is released"
        ));
        f.fix = format!(
            "take {tn} before {hn} (lower levels first), or release {hn} first; if this order is the intended one, change the declared levels"
        );
    }
    f.orders.push(OrderEdge {
        from: holding.clone(),
        to: taken.clone(),
        from_site: site_string(h.site),
        to_site: site_string(acq.site()),
        actor: actor.describe(),
    });
    f.add_scope(scope);
    f.add_scope(prim.scope());
    if let Some(p) = pinned(pins, h.prim) {
        f.add_scope(p.scope());
    }
    f.add_prim(holding);
    f.add_prim(taken);
    Some(f)
}

/// The finding for a learned path from a primitive of a declared level, through primitives
/// without one, to one of a lower level (see
/// [`Observed::contradictions`](crate::analysis::graph::lockorder::Observed)): with the
/// declared order, a cycle. Its primitives are looked up in `pins` first (see [`pinned`]).
#[cold]
pub(crate) fn contradicted(path: &Path, pins: &[Arc<Prim>]) -> Option<Finding> {
    let (first, last) = (path.first()?, path.last()?);
    let (hi, lo) = (level_of(pins, first.0)?, level_of(pins, last.1)?);
    let mut nodes: Vec<u64> = path.iter().map(|(a, _, _)| *a).collect();
    nodes.push(last.1);
    let refs: Vec<PrimRef> = nodes.iter().map(|&id| pinned_ref(pins, id)).collect();
    let name = |i: usize| format!("{:?}", refs[i].label());
    let between: Vec<String> = (1..refs.len() - 1).map(name).collect();
    let steps: Vec<String> = path
        .iter()
        .enumerate()
        .map(|(i, (_, _, e))| {
            format!(
                "{} then {} at {}",
                name(i),
                name(i + 1),
                site_string(e.to_site)
            )
        })
        .collect();
    let summary = format!(
        "{} ({}) is taken before {} ({}) through {} without a level ({}); {DECLARED_ORDER}",
        name(0),
        told(hi),
        name(refs.len() - 1),
        told(lo),
        between.join(", "),
        steps.join(", "),
    );
    let mut f = Finding::new(FindingKind::LockOrderInversion, key(&refs), summary);
    for (i, (a, b, e)) in path.iter().enumerate() {
        f.details.push(format!(
            "order: {} held ({} at {}) while acquiring {} ({} at {}) by {}",
            name(i),
            e.from_mode.verb(),
            site_string(e.from_site),
            name(i + 1),
            e.to_mode.verb(),
            site_string(e.to_site),
            e.actor.describe()
        ));
        super::lock_order_inversion::add_order(&mut f, *a, *b, e, pins);
    }
    f.details.push(format!(
        "declared: {} is {hi}, {} is {lo}: anything that takes {} while holding {} (as the levels allow) closes a cycle with this path",
        name(0),
        name(refs.len() - 1),
        name(0),
        name(refs.len() - 1),
    ));
    f.fix = format!(
        "do not take {} (or a lock that leads to it) while holding {}; if this path is intended, the declared levels are wrong",
        name(refs.len() - 1),
        name(0),
    );
    for r in refs {
        f.add_prim(r);
    }
    Some(f)
}
