//! `starvation`: a waiter waiting past the starvation threshold while others keep acquiring
//! (they bypassed it, or the queue ahead of it never drains), or a holder keeping a contended
//! primitive past the threshold. Primitives that are stuck or deadlocked are left to those
//! rules.

use std::collections::{HashMap, HashSet};

use crate::finding::{ActorReport, Finding, FindingKind};
use crate::prim::site_string;
use crate::rules::{Rule, Verdict, access, noun, prim_ref};
use crate::scope;
use crate::snapshot::State;

#[derive(Default)]
pub(crate) struct Starvation {
    pub(crate) skip_prims: HashSet<u64>,
    pub(crate) skip_waits: HashSet<(u64, u64)>,
    pub(crate) active: HashSet<String>,
    /// The primitive's progress when this rule first saw each waiter (at most a tick late):
    /// grants since then were made to others while it waited.
    first_seen: HashMap<(u64, u64), u64>,
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
                seen.insert(key, *self.first_seen.get(&key).unwrap_or(&p.progress));
            }
        }
        self.first_seen = seen;
        for p in &state.prims {
            let id = p.prim.id().0;
            if p.waiters.is_empty() || p.closed || self.skip_prims.contains(&id) {
                continue;
            }
            let mut scopes: Vec<u32> = p.waiters.iter().map(|w| w.scope).collect();
            scopes.push(p.prim.scope());
            let threshold = scope::config_for(&scopes).starvation.as_nanos() as u64;
            let r = prim_ref(&p.prim);
            // Waiters bypassed past the threshold.
            for w in &p.waiters {
                if self.skip_waits.contains(&(id, w.seq)) || state.wait_age(w) < threshold {
                    continue;
                }
                let start = self
                    .first_seen
                    .get(&(id, w.seq))
                    .copied()
                    .unwrap_or(p.progress);
                let bypassed = p.progress.saturating_sub(start);
                if bypassed == 0 {
                    continue;
                }
                let mut f = Finding::new(
                    FindingKind::Starvation,
                    format!("{id}|wait|{}", site_string(w.site)),
                    format!(
                        "{} has waited {} ms for {} at {} while it was granted {} time{} to others",
                        w.actor.describe(),
                        state.wait_age(w) / 1_000_000,
                        noun(&r),
                        site_string(w.site),
                        bypassed,
                        if bypassed == 1 { "" } else { "s" }
                    ),
                );
                f.actors.push(ActorReport {
                    id: w.actor.as_u64(),
                    name: w.actor.describe(),
                    holds: Vec::new(),
                    waits: vec![access(
                        r.clone(),
                        w.mode,
                        w.permits,
                        w.site,
                        state.wait_age(w),
                    )],
                });
                f.add_scope(w.scope);
                f.add_scope(p.prim.scope());
                f.add_prim(r.clone());
                f.fix = "shorten the critical sections of the other holders, use a fair primitive (tokio's are FIFO), or split the primitive so that this waiter does not compete with them".into();
                self.active
                    .insert(format!("{}:{}", FindingKind::Starvation, f.key()));
                out.push(Verdict::Found(Box::new(f)));
            }
            // Holders keeping a contended primitive.
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
                f.actors.push(ActorReport {
                    id: h.actor.as_u64(),
                    name: h.actor.describe(),
                    holds: vec![access(
                        r.clone(),
                        h.mode,
                        h.permits,
                        h.site,
                        state.hold_age(h),
                    )],
                    waits: Vec::new(),
                });
                for w in &p.waiters {
                    f.actors.push(ActorReport {
                        id: w.actor.as_u64(),
                        name: w.actor.describe(),
                        holds: Vec::new(),
                        waits: vec![access(
                            r.clone(),
                            w.mode,
                            w.permits,
                            w.site,
                            state.wait_age(w),
                        )],
                    });
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
