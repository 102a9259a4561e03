//! `starvation`: a waiter waiting past the starvation threshold while others keep acquiring
//! ahead of it, or a holder keeping a contended primitive past the threshold while others get
//! through. Primitives that are stuck or deadlocked are left to those rules.
//!
//! A waiter is starved when it was bypassed: the primitive granted more acquisitions since
//! this rule first saw it than there were waiters queued ahead of it then. A long FIFO queue
//! that drains in order (tokio's primitives) is queueing, not starvation; a parking_lot lock
//! taken again and again by threads that never queued, or a stream of `read_recursive`
//! readers overtaking a writer, is. `add_permits` grants nobody: it is not a bypass.

use std::collections::{HashMap, HashSet};

use crate::analysis::snapshot::State;
use crate::model::finding::{Finding, FindingKind};
use crate::rules::{Rule, Verdict, holder, noun, prim_ref, waiter};
use crate::state::prim::site_string;

/// What the rule noted when it first saw a waiter (at most a tick late).
#[derive(Clone, Copy)]
struct FirstSeen {
    /// The primitive's acquisitions granted so far.
    granted: u64,
    /// Waiters queued ahead of it.
    ahead: u64,
}

/// Waiters that two tasks start within this long (1 ms) of each other may be queued in either
/// order: the books record a wait just after the primitive queued it, on any worker.
const ORDER_SLACK_NS: u64 = 1_000_000;

/// How many of `all` may be queued ahead of `w`: those that began waiting before it, or about
/// when it did (the books and the primitive may disagree on their order).
fn ahead_of(all: &[crate::state::wait::WaiterRec], w: &crate::state::wait::WaiterRec) -> u64 {
    all.iter()
        .filter(|o| o.seq != w.seq && o.since_ns < w.since_ns.saturating_add(ORDER_SLACK_NS))
        .count() as u64
}

#[derive(Default)]
pub(crate) struct Starvation {
    pub(crate) skip_prims: HashSet<u64>,
    pub(crate) skip_waits: HashSet<(u64, u64)>,
    pub(crate) active: HashSet<String>,
    first_seen: HashMap<(u64, u64), FirstSeen>,
    /// Per primitive held or waited for: its acquisitions granted at the previous check.
    last_granted: HashMap<u64, u64>,
}

impl Rule for Starvation {
    fn kind(&self) -> FindingKind {
        FindingKind::Starvation
    }

    fn check(&mut self, state: &State) -> Vec<Verdict> {
        let mut out = Vec::new();
        self.active.clear();
        let mut seen = HashMap::new();
        for p in &state.prims {
            for w in &p.waiters {
                let key = (p.prim.id().0, w.seq);
                let first = self
                    .first_seen
                    .get(&key)
                    .copied()
                    .unwrap_or_else(|| FirstSeen {
                        granted: p.granted,
                        ahead: ahead_of(&p.waiters, w),
                    });
                seen.insert(key, first);
            }
        }
        self.first_seen = seen;
        let granted_before = std::mem::take(&mut self.last_granted);
        for p in state
            .prims
            .iter()
            .filter(|p| !(p.waiters.is_empty() && p.holds.is_empty()))
        {
            self.last_granted.insert(p.prim.id().0, p.granted);
        }
        for p in &state.prims {
            let id = p.prim.id().0;
            if p.waiters.is_empty() || p.closed || self.skip_prims.contains(&id) {
                continue;
            }
            let mut scopes: Vec<u32> = p.waiters.iter().map(|w| w.scope).collect();
            scopes.push(p.prim.scope());
            let threshold = crate::base::config::for_scopes(&scopes)
                .starvation
                .as_nanos() as u64;
            let r = prim_ref(&p.prim);
            // Whether it granted anything since the previous check.
            let served = granted_before.get(&id).is_some_and(|&g| p.granted > g);
            // Waiters bypassed past the threshold.
            for w in &p.waiters {
                if self.skip_waits.contains(&(id, w.seq)) || state.wait_age(w) < threshold {
                    continue;
                }
                let Some(first) = self.first_seen.get(&(id, w.seq)).copied() else {
                    continue;
                };
                // Grants since it was first seen: to those queued ahead of it, or bypasses.
                let granted = p.granted.saturating_sub(first.granted);
                let bypassed = granted.saturating_sub(first.ahead);
                if bypassed == 0 {
                    continue;
                }
                let mut f = Finding::new(
                    FindingKind::Starvation,
                    format!("{id}|wait|{}", site_string(w.site)),
                    format!(
                        "{} has waited {} ms for {} at {} while it was granted {} time{} to others that were not queued ahead of it",
                        w.actor.describe(),
                        state.wait_age(w) / 1_000_000,
                        noun(&r),
                        site_string(w.site),
                        bypassed,
                        if bypassed == 1 { "" } else { "s" }
                    ),
                );
                f.actors.push(waiter(&r, w, state.wait_age(w)));
                f.add_scope(w.scope);
                f.add_scope(p.prim.scope());
                f.add_prim(r.clone());
                f.fix = "shorten the critical sections of the other holders, use a fair primitive (tokio's are FIFO), or split the primitive so that this waiter does not compete with them".into();
                self.active
                    .insert(format!("{}:{}", FindingKind::Starvation, f.key()));
                out.push(Verdict::Found(Box::new(f)));
            }
            // Holders keeping a contended primitive past the threshold while others still get
            // through (a busy pool one connection short). With no grant at all the queue is
            // stuck, which is that rule's report, unless the user set starvation below the
            // stuck threshold to hear of such holds first.
            let stuck_threshold = crate::base::config::for_scopes(&scopes).stuck.as_nanos() as u64;
            if !(served || threshold < stuck_threshold) {
                continue;
            }
            for h in &p.holds {
                if state.hold_age(h) < threshold {
                    continue;
                }
                let mut f = Finding::new(
                    FindingKind::Starvation,
                    format!("{id}|hold|{}", site_string(h.site)),
                    format!(
                        "{} has held {} for {} ms (acquired at {}) while {} waiter{} for it",
                        h.actor.describe(),
                        noun(&r),
                        state.hold_age(h) / 1_000_000,
                        site_string(h.site),
                        p.waiters.len(),
                        if p.waiters.len() == 1 {
                            " queues"
                        } else {
                            "s queue"
                        }
                    ),
                );
                f.actors.push(holder(&r, h, state.hold_age(h)));
                for w in &p.waiters {
                    f.actors.push(waiter(&r, w, state.wait_age(w)));
                    f.add_scope(w.scope);
                }
                f.add_scope(h.scope);
                f.add_scope(p.prim.scope());
                f.add_prim(r.clone());
                f.fix = "do not hold the guard across slow work (I/O, sleeps, long awaits): copy what you need and release it first".into();
                self.active
                    .insert(format!("{}:{}", FindingKind::Starvation, f.key()));
                out.push(Verdict::Found(Box::new(f)));
            }
        }
        out
    }
}
