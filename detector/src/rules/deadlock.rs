//! `deadlock`: tasks or threads that can never proceed.
//!
//! Builds the wait-for model from a [`State`], reduces it (see [`crate::analysis::graph::waitfor`]),
//! splits what stays blocked into connected groups, and reports a group once it has been seen
//! blocked, with the same waits and no progress on its primitives, on two consecutive looks,
//! the second a tick or more after the first look that saw it, when its youngest wait is a
//! tick old too: a snapshot is not atomic, and a torn one could show a cycle that never
//! existed; and two looks close together (a test may run the analysis as often as it likes)
//! could both see a wait that was about to end (a `select!`'s send or join, raced against a
//! short timer the detector cannot see).
//!
//! A report names the group's knot (the actors whose waits close it, see
//! [`waitfor::Reduction::knot`]) and counts the rest as waiting behind it.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::analysis::graph::waitfor;
use crate::analysis::snapshot::State;
use crate::model::finding::FindingKind;
use crate::rules::{Rule, Verdict};

mod channels;
mod joins;
mod model;
mod report;

pub use model::{executor, model};
pub use report::report;

/// A blocked group: its actors and the primitives they hold or wait for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Blocked actors (raw ids).
    pub actors: BTreeSet<u64>,
    /// Primitives involved.
    pub prims: BTreeSet<u64>,
    /// `(primitive, waiter seq)` of every blocked wait: identifies the group across ticks.
    pub waits: BTreeSet<(u64, u64)>,
    /// Numbers of its blocked joins (see `state::joins`): with `waits`, identify it.
    pub joins: BTreeSet<u64>,
    /// Numbers of its blocked channel sends (see `state::channels`): with `waits`, identify it.
    pub chans: BTreeSet<u64>,
    /// Its knot: the actors whose waits close it (see [`waitfor::Reduction::knot`]); the rest
    /// of `actors` wait behind it. All of `actors` when none of them closes it (a group kept
    /// blocked by another group's wait on the thread it needs).
    pub knot: BTreeSet<u64>,
}

/// Every blocked group in `state`.
pub fn blocked_groups(state: &State) -> Vec<Group> {
    let reduction = waitfor::reduce_with(&model(state), &executor(state));
    let blocked = &reduction.blocked;
    if blocked.is_empty() {
        return Vec::new();
    }
    // Union-find over blocked actors, linked through primitives they hold or wait for.
    let mut parent: HashMap<u64, u64> = blocked.iter().map(|&a| (a, a)).collect();
    fn find(p: &mut HashMap<u64, u64>, x: u64) -> u64 {
        let mut r = x;
        while p[&r] != r {
            r = p[&r];
        }
        let mut c = x;
        while p[&c] != r {
            let n = p[&c];
            p.insert(c, r);
            c = n;
        }
        r
    }
    let mut by_prim: HashMap<u64, Vec<u64>> = HashMap::new();
    for p in &state.prims {
        let id = p.prim.id().0;
        for w in &p.waiters {
            if blocked.contains(&w.actor.as_u64()) {
                by_prim.entry(id).or_default().push(w.actor.as_u64());
            }
        }
        for h in &p.holds {
            if blocked.contains(&h.actor.as_u64()) && !h.movable() {
                by_prim.entry(id).or_default().push(h.actor.as_u64());
            }
        }
    }
    // A blocked joiner and the blocked task or thread it joins are one group.
    let mut links: Vec<[u64; 2]> = by_prim
        .values()
        .flat_map(|actors| actors.windows(2).map(|w| [w[0], w[1]]))
        .collect();
    let live_joins = joins::live(state);
    for (j, _) in &live_joins {
        for (t, _) in &j.targets {
            if blocked.contains(&j.waiter.as_u64()) && blocked.contains(&t.as_u64()) {
                links.push([j.waiter.as_u64(), t.as_u64()]);
            }
        }
    }
    // And a blocked sender and the blocked owner of the receiver it waits for.
    let live_sends = channels::live(state);
    for (c, owner, _) in &live_sends {
        if blocked.contains(&c.waiter.as_u64()) && blocked.contains(&owner.as_u64()) {
            links.push([c.waiter.as_u64(), owner.as_u64()]);
        }
    }
    for [x, y] in links {
        let (a, b) = (find(&mut parent, x), find(&mut parent, y));
        if a != b {
            parent.insert(a, b);
        }
    }
    let mut groups: HashMap<u64, Group> = HashMap::new();
    for &a in blocked {
        let r = find(&mut parent, a);
        groups
            .entry(r)
            .or_insert_with(|| Group {
                actors: BTreeSet::new(),
                prims: BTreeSet::new(),
                waits: BTreeSet::new(),
                joins: BTreeSet::new(),
                chans: BTreeSet::new(),
                knot: BTreeSet::new(),
            })
            .actors
            .insert(a);
    }
    let knot = reduction.knot();
    for g in groups.values_mut() {
        g.knot = g.actors.intersection(&knot).copied().collect();
        if g.knot.is_empty() {
            g.knot = g.actors.clone();
        }
    }
    for (pid, actors) in &by_prim {
        if let Some(&a) = actors.first() {
            let r = find(&mut parent, a);
            if let Some(g) = groups.get_mut(&r) {
                g.prims.insert(*pid);
            }
        }
    }
    for p in &state.prims {
        for w in &p.waiters {
            let a = w.actor.as_u64();
            if blocked.contains(&a) {
                let r = find(&mut parent, a);
                if let Some(g) = groups.get_mut(&r) {
                    g.waits.insert((p.prim.id().0, w.seq));
                }
            }
        }
    }
    for (j, _) in &live_joins {
        let a = j.waiter.as_u64();
        if blocked.contains(&a) {
            let r = find(&mut parent, a);
            if let Some(g) = groups.get_mut(&r) {
                g.joins.insert(j.seq);
            }
        }
    }
    for (c, _, _) in &live_sends {
        let a = c.waiter.as_u64();
        if blocked.contains(&a) {
            let r = find(&mut parent, a);
            if let Some(g) = groups.get_mut(&r) {
                g.chans.insert(c.seq);
            }
        }
    }
    let mut out: Vec<Group> = groups.into_values().collect();
    out.sort_by_key(|g| {
        (
            g.waits.iter().next().copied(),
            g.joins.iter().next().copied(),
            g.chans.iter().next().copied(),
        )
    });
    out
}

/// `(primitive, waiter seq)` of a group's blocked waits, and the numbers of its blocked joins
/// and channel sends.
type Waits = (BTreeSet<(u64, u64)>, BTreeSet<u64>, BTreeSet<u64>);

/// A candidate group as the last analysis left it: the progress of its prims, and when (the
/// analysis's precise clock, ns) it was first seen with that progress.
#[derive(Debug)]
struct Candidate {
    progress: Vec<(u64, u64)>,
    first_seen_ns: u64,
}

/// The deadlock rule, with its memory of last tick's candidates.
#[derive(Default)]
pub(crate) struct Deadlock {
    /// Candidate groups of the last tick, keyed by waits.
    pending: HashMap<Waits, Candidate>,
    /// Waits of groups confirmed this tick (other rules skip them).
    pub(crate) confirmed_waits: HashSet<(u64, u64)>,
    /// Primitives of groups confirmed this tick (other rules skip them too).
    pub(crate) confirmed_prims: HashSet<u64>,
    /// Keys of findings that still hold.
    pub(crate) active: HashSet<String>,
    /// How long (precise ns) a group must stand to be confirmed: the watchdog's tick, so that
    /// a wait is confirmed only once it has outlasted a tick however often the analysis runs
    /// (`check_now` in a loop). Both the youngest wait's own age and the time since the
    /// analysis first saw the group must reach it: the first is not enough, as some waits
    /// start on the published clock (joins, untimed async waits), which may be a publish
    /// period behind, and a retried wait counts from its first try. Zero in unit tests that
    /// build their own states.
    pub(crate) min_age_ns: u64,
}

/// The age (precise ns) of the youngest of `g`'s waits in `state`: its prim waits, joins and
/// channel sends. `u64::MAX` for a group with none (kept blocked by the executor alone).
fn youngest_wait(state: &State, g: &Group) -> u64 {
    let prim_waits = state.prims.iter().flat_map(|p| {
        let id = p.prim.id().0;
        p.waiters
            .iter()
            .filter(move |w| g.waits.contains(&(id, w.seq)))
            .map(|w| w.since_ns)
    });
    let joins = state
        .joins
        .iter()
        .filter(|j| g.joins.contains(&j.seq))
        .map(|j| j.since_ns);
    let chans = state
        .chan_waits
        .iter()
        .filter(|c| g.chans.contains(&c.seq))
        .map(|c| c.since_ns);
    prim_waits
        .chain(joins)
        .chain(chans)
        .map(|since| state.now_precise.saturating_sub(since))
        .min()
        .unwrap_or(u64::MAX)
}

impl Rule for Deadlock {
    fn kind(&self) -> FindingKind {
        FindingKind::Deadlock
    }

    fn check(&mut self, state: &State) -> Vec<Verdict> {
        let groups = blocked_groups(state);
        let mut next = HashMap::new();
        let mut out = Vec::new();
        self.confirmed_waits.clear();
        self.confirmed_prims.clear();
        self.active.clear();
        for g in groups {
            let progress: Vec<(u64, u64)> = g
                .prims
                .iter()
                .filter_map(|id| state.get(*id).map(|p| (*id, p.progress)))
                .collect();
            let id = (g.waits.clone(), g.joins.clone(), g.chans.clone());
            let seen = self
                .pending
                .get(&id)
                .filter(|c| c.progress == progress)
                .map(|c| c.first_seen_ns);
            let confirmed = seen.is_some_and(|first| {
                state.now_precise.saturating_sub(first) >= self.min_age_ns
                    && youngest_wait(state, &g) >= self.min_age_ns
            });
            let first_seen_ns = seen.unwrap_or(state.now_precise);
            next.insert(
                id,
                Candidate {
                    progress,
                    first_seen_ns,
                },
            );
            if confirmed {
                self.confirmed_waits.extend(g.waits.iter().copied());
                self.confirmed_prims.extend(g.prims.iter().copied());
                let f = report(state, &g);
                self.active
                    .insert(format!("{}:{}", FindingKind::Deadlock, f.key()));
                out.push(Verdict::Found(Box::new(f)));
            } else {
                out.push(Verdict::Recheck);
            }
        }
        self.pending = next;
        out
    }
}

#[cfg(test)]
mod tests;
