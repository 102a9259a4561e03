//! Layer 5, `rules`: one file per finding kind, each with its set wording: functions from the
//! state, a snapshot or one event to findings, which they return (the runtime reports them).
//!
//! Rules that judge the live state implement a rule trait and run on every watchdog tick over
//! one [`State`]; rules that judge one event (a nested acquire, a new
//! lock-order edge, a blocking wait) are called from the hooks when the event happens.

use std::panic::Location;

use crate::analysis::snapshot::State;
use crate::model::finding::{Access, ActorReport, PrimRef};
use crate::state::held::HoldView;
use crate::state::held::Mode;
use crate::state::prim::{self, Prim, PrimitiveId};
use crate::state::wait::WaiterRec;

pub mod blocking_in_async;
pub mod deadlock;
pub mod leaked_permit;
pub mod lock_levels;
pub mod lock_order_inversion;
pub mod nested_acquire;
pub(crate) mod other_waits;
pub mod starvation;
pub mod stuck_queue;
pub mod task_ended;
#[cfg(test)]
pub(crate) mod testkit;

/// What a state rule concluded about one candidate.
#[derive(Debug)]
pub enum Verdict {
    /// Nothing wrong.
    Clean,
    /// A finding to report.
    Found(Box<crate::model::finding::Finding>),
    /// Suspicious; look again next tick before reporting (confirmation).
    Recheck,
}

/// A rule over the live state.
pub(crate) trait Rule {
    /// The kind this rule reports.
    fn kind(&self) -> crate::model::finding::FindingKind;
    /// Judges the state; returns one verdict per candidate it looked at.
    fn check(&mut self, state: &State) -> Vec<Verdict>;
}

pub(crate) fn prim_ref(p: &Prim) -> PrimRef {
    PrimRef {
        id: p.id.0,
        name: p.name().to_owned(),
        kind: p.kind().as_str(),
        created_at: prim::site_string(p.site()),
        instance: p.instance(),
    }
}

pub(crate) fn prim_ref_id(id: u64) -> PrimRef {
    match prim::get(PrimitiveId(id)) {
        Some(p) => prim_ref(&p),
        None => PrimRef {
            id,
            name: format!("#{id} (dropped)"),
            kind: "unknown",
            created_at: "?".into(),
            instance: 0,
        },
    }
}

pub(crate) fn access(
    p: PrimRef,
    mode: Mode,
    permits: u32,
    site: &Location<'_>,
    for_ns: u64,
) -> Access {
    Access {
        mode: mode.verb_in(p.kind),
        primitive: p,
        permits,
        site: prim::site_string(site),
        for_ms: for_ns / 1_000_000,
    }
}

/// A report's entry for the task or thread of hold `h` on `p`, held for `for_ns`.
pub(crate) fn holder(p: &PrimRef, h: &HoldView, for_ns: u64) -> ActorReport {
    ActorReport {
        id: h.actor.as_u64(),
        name: h.actor.describe(),
        holds: vec![access(p.clone(), h.mode, h.permits, h.site, for_ns)],
        waits: Vec::new(),
    }
}

/// A report's entry for the task or thread of waiter `w` on `p`, waiting for `for_ns`.
pub(crate) fn waiter(p: &PrimRef, w: &WaiterRec, for_ns: u64) -> ActorReport {
    ActorReport {
        id: w.actor.as_u64(),
        name: w.actor.describe(),
        holds: Vec::new(),
        waits: vec![access(p.clone(), w.mode, w.permits, w.site, for_ns)],
    }
}

/// `a "x"` / `a semaphore "x"` for sentences.
pub(crate) fn noun(p: &PrimRef) -> String {
    format!("{} {:?}", p.kind, p.label())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testkit::{MS, Scope, hold, task, wait};
    use crate::state::prim::PrimKind;

    /// A primitive's reference by id, also once it is dropped; accesses and entries in ms and
    /// in the primitive's own verbs.
    #[test]
    fn references_accesses_and_entries() {
        let scope = Scope::arm(10_000, 10_000, None);
        let p = scope.prim("rules/ref", PrimKind::BlockingRwLock, 1);
        let r = prim_ref_id(p.id().0);
        assert_eq!((r.name.as_str(), r.kind), ("rules/ref", "blocking_rwlock"));
        assert_eq!(r.created_at, prim::site_string(p.site()));
        assert_eq!(noun(&r), "blocking_rwlock \"rules/ref\"");
        let gone = prim_ref_id(u64::MAX - 1);
        assert_eq!(gone.name, format!("#{} (dropped)", u64::MAX - 1));
        assert_eq!((gone.kind, gone.created_at.as_str()), ("unknown", "?"));
        let h = hold(&p, task(3), Mode::Exclusive, 1, 0);
        let e = holder(&r, &h, 2_500 * MS);
        assert_eq!((e.id, e.name.as_str()), (task(3).as_u64(), "task 3"));
        assert_eq!(e.holds[0].mode, "write");
        assert_eq!(e.holds[0].for_ms, 2_500);
        assert_eq!(e.holds[0].site, prim::site_string(h.site));
        assert!(e.waits.is_empty());
        let w = wait(task(4), 1, Mode::Shared, 2, 0);
        let e = waiter(&r, &w, 7 * MS + 999_999);
        assert_eq!(e.waits[0].for_ms, 7);
        assert_eq!((e.waits[0].mode, e.waits[0].permits), ("read", 2));
        assert!(e.holds.is_empty());
    }
}
