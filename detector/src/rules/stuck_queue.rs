//! `stuck-queue`: waiters queued past the stuck threshold while the primitive granted nothing
//! in that time. Skips waits already reported as part of a deadlock.

use std::collections::{HashMap, HashSet};

use crate::analysis::snapshot::{PrimState, State};
use crate::model::finding::{ActorReport, Finding, FindingKind};
use crate::rules::{Rule, Verdict, access, nested_acquire, noun, prim_ref};

/// The report's entry for actor `a`, made on first use: one per task or thread.
fn entry(actors: &mut Vec<ActorReport>, a: crate::state::actor::ActorId) -> &mut ActorReport {
    let i = match actors.iter().position(|x| x.id == a.as_u64()) {
        Some(i) => i,
        None => {
            actors.push(ActorReport {
                id: a.as_u64(),
                name: a.describe(),
                holds: Vec::new(),
                waits: Vec::new(),
            });
            actors.len() - 1
        }
    };
    &mut actors[i]
}

/// A pool of one, checked out twice: a stuck semaphore whose every outstanding permit was
/// acquired by one of its waiters' own task (owned permits included), which asks for more than
/// remain. No other task holds one to release, so it is the task's own `nested-acquire`, not
/// a queue behind someone else. (An owned permit stays in the books as its acquirer's until
/// dropped: one handed to another task is still counted as the acquirer's, and the report
/// says where it was taken.)
fn checked_out_again(state: &State, p: &PrimState) -> Option<Finding> {
    if !p.prim.kind().is_semaphore() || p.forgotten > 0 || p.holds.is_empty() {
        return None;
    }
    let w = p
        .waiters
        .iter()
        .find(|w| p.holds.iter().all(|h| h.actor == w.actor))?;
    let held: u64 = p.holds.iter().map(|h| u64::from(h.permits)).sum();
    if held + u64::from(w.permits) <= p.capacity {
        return None;
    }
    Some(nested_acquire::checked_out_again(state, p, w))
}

#[derive(Default)]
pub(crate) struct StuckQueue {
    /// Per primitive: last progress value seen and since when (precise ns).
    last: HashMap<u64, (u64, u64)>,
    pub(crate) skip_waits: HashSet<(u64, u64)>,
    pub(crate) active: HashSet<String>,
    pub(crate) stuck_prims: HashSet<u64>,
}

impl Rule for StuckQueue {
    fn kind(&self) -> FindingKind {
        FindingKind::StuckQueue
    }

    fn check(&mut self, state: &State) -> Vec<Verdict> {
        let mut out = Vec::new();
        let mut seen = HashMap::new();
        self.active.clear();
        self.stuck_prims.clear();
        for p in &state.prims {
            let id = p.prim.id().0;
            if p.waiters.is_empty() && !p.holds.is_empty() {
                // Held, nobody queued at this instant (a retry loop between two waits): keep
                // counting from the last grant.
                if let Some(&(v, t)) = self.last.get(&id)
                    && v == p.progress
                {
                    seen.insert(id, (v, t));
                }
            }
            // A once-cell's waiters wait for its initialiser's work, however long it takes: a
            // cycle through it is a deadlock, and whatever the initialiser waits for has its
            // own queue to be judged by.
            if p.waiters.is_empty() || p.closed || p.prim.kind().is_once_cell() {
                continue;
            }
            // A semaphore with no permits at all, nothing held and nothing forgotten is a
            // signal (`Semaphore::new(0)`, released by `add_permits`): its waiters wait for
            // an event, not behind anyone, and an idle worker waiting for work is not stuck.
            if p.prim.kind().is_semaphore()
                && p.capacity == 0
                && p.holds.is_empty()
                && p.forgotten == 0
            {
                continue;
            }
            // Since when has progress been at its current value?
            let oldest = p
                .waiters
                .iter()
                .map(|w| w.since_ns)
                .min()
                .unwrap_or(state.now_precise);
            // Since when has progress been at its current value? (Counted from the first tick
            // that saw this primitive with waiters: at most one tick late.)
            let since = match self.last.get(&id) {
                Some(&(v, t)) if v == p.progress => t,
                _ => state.now_precise.max(oldest),
            };
            seen.insert(id, (p.progress, since));
            let mut scopes: Vec<u32> = p.waiters.iter().map(|w| w.scope).collect();
            scopes.push(p.prim.scope());
            // A queue that belongs to no test is judged by the armed tests' thresholds, as it
            // is reported to them (issue 29: else the process's production threshold applied,
            // and a test's spawned threads stuck on a `Mutex::new` were never reported in time).
            let stuck = match state.unscoped_stuck {
                Some(armed) if scopes.iter().all(|&s| s == 0) => armed,
                _ => crate::base::config::for_scopes(&scopes).stuck,
            };
            let threshold = stuck.as_nanos() as u64;
            let still = state.now_precise.saturating_sub(since);
            let old = p
                .waiters
                .iter()
                .filter(|w| state.wait_age(w) >= threshold)
                .filter(|w| !self.skip_waits.contains(&(id, w.seq)))
                .count();
            if old == 0 || still < threshold {
                continue;
            }
            self.stuck_prims.insert(id);
            if let Some(f) = checked_out_again(state, p) {
                out.push(Verdict::Found(Box::new(f)));
                continue;
            }
            let r = prim_ref(&p.prim);
            // A cross-process lock that no one here holds: its wrapper says who holds it in
            // another process (see `state::elsewhere`).
            let elsewhere = if p.holds.is_empty() {
                crate::state::elsewhere::of(id)
            } else {
                None
            };
            let mut f = Finding::new(
                FindingKind::StuckQueue,
                format!("{id}"),
                format!(
                    "{} has {} waiter{} queued for up to {} ms and granted nothing for {} ms{}",
                    noun(&r),
                    p.waiters.len(),
                    if p.waiters.len() == 1 { "" } else { "s" },
                    state.wait_age(&p.waiters[0]) / 1_000_000,
                    still / 1_000_000,
                    elsewhere
                        .as_deref()
                        .map(|who| format!(": it is held by {who}"))
                        .unwrap_or_default()
                ),
            );
            // One entry per task or thread, with what it holds and what it waits for.
            let mut actors: Vec<ActorReport> = Vec::new();
            let holds = p.holds.iter().map(|h| {
                let a = access(r.clone(), h.mode, h.permits, h.site, state.hold_age(h));
                (h.actor, h.scope, a, true)
            });
            let waits = p.waiters.iter().map(|w| {
                let a = access(r.clone(), w.mode, w.permits, w.site, state.wait_age(w));
                (w.actor, w.scope, a, false)
            });
            for (actor, scope, a, held) in holds.chain(waits) {
                let e = entry(&mut actors, actor);
                if held {
                    e.holds.push(a)
                } else {
                    e.waits.push(a)
                }
                f.add_scope(scope);
            }
            // Permits forgotten (a pool's checkout: `forget`, then `add_permits` at return)
            // still exist for the program, only outside the books of holds.
            let checked_out = p.forgotten > 0;
            let forgot_site = p.prim.forgot_site().map(crate::state::prim::site_string);
            if let Some(w) = p
                .waiters
                .iter()
                .find(|w| u64::from(w.permits) > p.capacity.saturating_add(p.forgotten))
            {
                f.details.push(format!(
                    "{} asks for {} permits but only {} exist: only add_permits can ever grant it, and everyone queued behind it waits too",
                    w.actor.describe(),
                    w.permits,
                    p.capacity.saturating_add(p.forgotten)
                ));
            } else if checked_out {
                f.details.push(format!(
                    "{} permit{} checked out: forgotten with forget() when taken{} (as object pools do), so no guard holds {}; only add_permits, when what {} stood for is returned, gives {} back",
                    p.forgotten,
                    if p.forgotten == 1 { " is" } else { "s are" },
                    forgot_site
                        .as_deref()
                        .map(|s| format!(" (latest at {s})"))
                        .unwrap_or_default(),
                    if p.forgotten == 1 { "it" } else { "them" },
                    if p.forgotten == 1 { "it" } else { "they" },
                    if p.forgotten == 1 { "it" } else { "them" },
                ));
            } else if p.holds.iter().all(|h| h.movable()) && !p.holds.is_empty() {
                f.details.push("every permit is held by an owned guard (it may live in a struct or another task that never drops it)".into());
            }
            // What each holder waits for beyond primitives: a join, a channel (who could
            // end that wait, when it is known).
            let mut told = Vec::new();
            for h in &p.holds {
                if !told.contains(&h.actor) {
                    told.push(h.actor);
                    for line in crate::rules::other_waits::of_actor(state, h.actor) {
                        f.details
                            .push(format!("its holder {} {line}", h.actor.describe()));
                    }
                }
            }
            for w in p.waiters.iter().filter(|w| w.retries > 0) {
                f.details.push(format!(
                    "{} gave up and waited again {} time{} (a timeout-and-retry loop): {} ms of waiting in all, at {}",
                    w.actor.describe(),
                    w.retries,
                    if w.retries == 1 { "" } else { "s" },
                    state.wait_age(w) / 1_000_000,
                    crate::state::prim::site_string(w.site)
                ));
            }
            f.actors = actors;
            f.add_scope(p.prim.scope());
            f.add_prim(r);
            f.collect_sites();
            if let Some(site) = &forgot_site {
                f.add_site(site);
            }
            f.fix = if elsewhere.is_some() {
                "another process holds it (named above): find why that process keeps it so long (a hung or very long job), or end it; a killed holder releases it at once".into()
            } else if p.holds.is_empty() && checked_out {
                "the permits are checked out (forgotten at checkout, added back at return): find who keeps the checked-out objects without returning them (a task that never ends, a struct that lives on), or make the pool larger if the load needs more".into()
            } else if p.holds.is_empty() {
                "nothing holds it, so only add_permits (or a release of permits lost outside lockscope's books, e.g. by std::mem::forget) can grant the waiters: ask for no more permits than exist, or add the missing ones".into()
            } else {
                "find who holds it (see holders above) and why they never release: a guard stored in a long-lived struct, a permit moved into a task that never ends, or a holder waiting for something that needs this primitive".into()
            };
            self.active
                .insert(format!("{}:{}", FindingKind::StuckQueue, f.key()));
            out.push(Verdict::Found(Box::new(f)));
        }
        self.last = seen;
        out
    }
}

#[cfg(test)]
mod tests;
