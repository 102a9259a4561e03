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
    // mutants: `h.prim < id` -> `<=` is equivalent: `h` is never a hold of the primitive
    // acquired (the lock-order graph's holds leave it out, as a nested acquire).
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

#[cfg(test)]
mod tests {
    use std::panic::Location;

    use super::*;
    use crate::analysis::graph::lockorder::{EdgeInfo, Gate};
    use crate::rules::testkit::{Scope, hold, task};
    use crate::state::held::Mode;
    use crate::state::prim::PrimKind;

    /// `p` with `level`, in `scope`.
    fn leveled(scope: &Scope, name: &str, level: Level) -> Arc<Prim> {
        let p = scope.prim(name, PrimKind::Mutex, 1);
        assert!(p.set_level(level));
        p
    }

    /// An acquisition is checked against every held primitive with a level, told for the
    /// highest it breaks, in these words; lower levels held, or an unleveled hold, are fine;
    /// one level twice only through a `MultiLock` (one call site, ascending ids).
    #[test]
    fn an_acquisition_under_a_higher_or_equal_level_breaks_the_declared_order() {
        let scope = Scope::arm(10_000, 10_000, None);
        let one = leveled(&scope, "lvl/one", Level::new(1));
        let two = leveled(&scope, "lvl/two", Level::named(2, "Accounts"));
        let three = leveled(&scope, "lvl/three", Level::new(3));
        let twin = leveled(&scope, "lvl/twin", Level::new(3));
        let free = scope.prim("lvl/free", PrimKind::Mutex, 1);
        let pins = [one.clone(), two.clone(), three.clone(), twin.clone()];
        let here = Location::caller();
        let acq = Acq::new(here, 1, Mode::Exclusive);
        let held = |p: &Prim| hold(p, task(1), Mode::Exclusive, 1, 0);
        let check = |holds: &[HoldView], p: &Prim, acq: &Acq| {
            declared((holds, &pins), p, task(1), acq, scope.0)
        };
        assert!(check(&[held(&one), held(&free)], &two, &acq).is_none());
        assert!(
            check(&[held(&two)], &free, &acq).is_none(),
            "no level taken"
        );
        let f = check(&[held(&two), held(&one)], &one, &acq).expect("1 under 2");
        let h = site_string(held(&two).site);
        assert_eq!(
            f.summary,
            format!(
                "\"lvl/one\" (level 1) acquired at {} while holding \"lvl/two\" (level 2, Accounts) since {h}; declared order: lower levels first",
                site_string(here)
            )
        );
        assert!(f.fix.starts_with("take \"lvl/one\" before \"lvl/two\""));
        let made = |p: &Prim| prim_ref(p).created_at;
        assert_eq!(
            f.key(),
            format!("lvl/one@{}|lvl/two@{}", made(&one), made(&two)),
            "one bug, whichever way round"
        );
        assert_eq!(f.orders.len(), 1);
        // Under 2 and 3: told for 3.
        let f = check(&[held(&two), held(&three)], &one, &acq).expect("1 under 3");
        assert!(f.summary.contains("holding \"lvl/three\" (level 3)"));
        // One level twice: at another site, or at this one against the ids' order.
        let other = Acq::new(Location::caller(), 1, Mode::Exclusive);
        let f = check(&[held(&three)], &twin, &other).expect("3 under 3");
        assert!(f.fix.starts_with("take primitives of one level together"));
        let mut at_here = held(&three);
        at_here.site = here;
        assert!(check(&[at_here], &twin, &acq).is_none(), "a MultiLock");
        let mut reversed = held(&twin);
        reversed.site = here;
        assert!(check(&[reversed], &three, &acq).is_some());
    }

    /// A learned path from level 9 through an unleveled primitive to level 1 is told step by
    /// step; a path that does not start and end on levels is none.
    #[test]
    fn a_learned_path_against_the_levels_is_told_step_by_step() {
        let scope = Scope::arm(10_000, 10_000, None);
        let hi = leveled(&scope, "lvl/hi", Level::new(9));
        let mid = scope.prim("lvl/mid", PrimKind::Mutex, 1);
        let lo = leveled(&scope, "lvl/lo", Level::new(1));
        let here = Location::caller();
        let edge = |a: &Prim, b: &Prim| {
            let e = EdgeInfo {
                from_site: here,
                to_site: here,
                from_mode: Mode::Exclusive,
                to_mode: Mode::Exclusive,
                actor: task(1),
                scope: scope.0,
                gate: Gate::default(),
            };
            (a.id().0, b.id().0, e)
        };
        let pins = [hi.clone(), mid.clone(), lo.clone()];
        let path = vec![edge(&hi, &mid), edge(&mid, &lo)];
        let f = contradicted(&path, &pins).expect("9 before 1");
        let s = site_string(here);
        assert_eq!(
            f.summary,
            format!(
                "\"lvl/hi\" (level 9) is taken before \"lvl/lo\" (level 1) through \"lvl/mid\" without a level (\"lvl/hi\" then \"lvl/mid\" at {s}, \"lvl/mid\" then \"lvl/lo\" at {s}); declared order: lower levels first"
            )
        );
        assert_eq!(f.primitives.len(), 3);
        let made = |p: &Prim| prim_ref(p).created_at;
        assert_eq!(
            f.key(),
            format!(
                "lvl/hi@{}|lvl/lo@{}|lvl/mid@{}",
                made(&hi),
                made(&lo),
                made(&mid)
            )
        );
        assert!(contradicted(&vec![edge(&mid, &lo)], &pins).is_none());
        assert!(contradicted(&Vec::new(), &pins).is_none());
    }
}
