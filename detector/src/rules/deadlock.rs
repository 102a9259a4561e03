//! `deadlock`: tasks or threads that can never proceed.
//!
//! Builds the wait-for model from a [`State`], reduces it (see [`crate::analysis::graph::waitfor`]),
//! splits what stays blocked into connected groups, and reports a group once it has been seen
//! blocked, with the same waits and no progress on its primitives, on two consecutive ticks:
//! a snapshot is not atomic, and a torn one could show a cycle that never existed.
//!
//! A report names the group's knot (the actors whose waits close it, see
//! [`waitfor::Reduction::knot`]) and counts the rest as waiting behind it.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::analysis::graph::waitfor::{self, Executor, MHold, MPrim, MWait, Policy};
use crate::analysis::snapshot::State;
use crate::model::finding::{ActorReport, Finding, FindingKind, more_behind};
use crate::rules::{Rule, Verdict, access, noun, prim_ref};
use crate::state::actor::ActorId;
use crate::state::held::{FLAG_PINNED_THREAD, HoldView};
use crate::state::prim::PrimKind;

mod channels;
mod joins;

/// The fix line of a deadlock through a once-cell: its waiters wait for the initialiser.
const ONCE_CELL_FIX: &str = "do not wait for a once-cell while holding a lock its initialiser needs: initialise the cell before taking the lock (or where nothing is held), and never wait for a cell from inside its own initialiser";

/// Builds the reduction model of a state: its primitives, and a stand-in for the end of each
/// task or thread someone joins (see [`waitfor::join_prim`]), and one for each receiver owner
/// whom a send into a full bounded channel waits for (see `channels`).
pub fn model(state: &State) -> Vec<MPrim> {
    let mut m: Vec<MPrim> = state
        .prims
        .iter()
        .filter(|p| !p.holds.is_empty() || !p.waiters.is_empty())
        .map(|p| {
            let kind = p.prim.kind();
            MPrim {
                id: p.prim.id().0,
                policy: match kind {
                    PrimKind::Mutex
                    | PrimKind::RwLock
                    | PrimKind::Semaphore
                    | PrimKind::OnceCell => Policy::Fifo,
                    PrimKind::BlockingMutex | PrimKind::BlockingReentrantMutex => Policy::Exclusive,
                    PrimKind::BlockingRwLock => Policy::FairRwLock,
                },
                capacity: p.capacity,
                closed: p.closed,
                holds: p
                    .holds
                    .iter()
                    .map(|h| MHold {
                        actor: h.actor.as_u64(),
                        permits: h.permits,
                        mode: h.mode,
                        movable: h.movable(),
                        pinned_thread: pinned_thread(state, h),
                    })
                    .collect(),
                waiters: p
                    .waiters
                    .iter()
                    .map(|w| MWait {
                        actor: w.actor.as_u64(),
                        permits: w.permits,
                        mode: w.mode,
                        timed: w.timed,
                        blocks_thread: kind.is_blocking().then_some(w.thread),
                    })
                    .collect(),
            }
        })
        .collect();
    m.extend(joins::model(state));
    m.extend(channels::model(state));
    m
}

/// The thread a hold's holder can only run on, if any: a task of a current-thread runtime
/// (flagged when it took a blocking guard) or of a `LocalSet` on a `block_on` thread, and a
/// thread's own code (say, a `block_on` future), which runs on that thread alone.
fn pinned_thread(state: &State, h: &HoldView) -> Option<u64> {
    match h.actor.thread_seq() {
        Some(own) => Some(own),
        None if h.flags & FLAG_PINNED_THREAD != 0 => Some(h.thread),
        None => state
            .executors
            .runtimes
            .values()
            .any(|r| r.block_on.is_some_and(|(t, _)| t == h.thread))
            .then_some(h.thread),
    }
}

/// The executor side of the model (see [`waitfor::Executor`]): the known runtimes' workers
/// that are blocked in a blocking wait, and the holders that need one of them to run: a
/// task whose hold was taken on a worker now blocked by someone else (so it is not running
/// there), and a parked `block_on` future of a multi-thread runtime.
pub fn executor(state: &State) -> Executor {
    let ex = &state.executors;
    let mut out = Executor::default();
    if ex.runtimes.is_empty() {
        return out;
    }
    // Worker threads blocked now, by whom.
    let mut blocked_by: HashMap<u64, Vec<u64>> = HashMap::new();
    for p in &state.prims {
        for w in p.waiters.iter().filter(|w| w.on_worker) {
            if let Some(rt) = ex.runtime_of(w.thread).filter(|r| r.multi) {
                out.workers.insert(w.thread, rt.key);
                out.worker_count.insert(rt.key, rt.workers);
                blocked_by
                    .entry(w.thread)
                    .or_default()
                    .push(w.actor.as_u64());
            }
        }
    }
    if out.workers.is_empty() {
        return out;
    }
    for p in &state.prims {
        for h in &p.holds {
            let a = h.actor.as_u64();
            let rt = match h.actor.thread_seq() {
                Some(seq) => ex.parked_block_on(seq).map(|r| r.key),
                None => out.workers.get(&h.thread).copied().filter(|_| {
                    blocked_by
                        .get(&h.thread)
                        .is_some_and(|by| by.iter().any(|&b| b != a))
                }),
            };
            if let Some(rt) = rt {
                out.needs_worker.insert(a, rt);
            }
        }
    }
    out
}

/// Why the holders of a group that wait for nothing cannot run: the sentences of a report
/// whose deadlock goes through the executor (the first one leads the report), empty when the
/// group is a plain cycle of waits.
fn executor_details(state: &State, g: &Group, exec: &Executor) -> Vec<String> {
    let mut out = Vec::new();
    // The blocking waits on `thread`: the knot's own (a passer-by, or one stuck behind the
    // knot, is not named), else, for a group blocked by another deadlock's wait (a lone
    // pinned task), every one there.
    let blocked_waits = |thread: u64| -> Vec<(String, String)> {
        let on_thread = |ours: bool| {
            let mut v = Vec::new();
            for p in &state.prims {
                for w in p.waiters.iter().filter(|w| w.thread == thread) {
                    if p.prim.kind().is_blocking() && (!ours || g.knot.contains(&w.actor.as_u64()))
                    {
                        v.push((w.actor.describe(), noun(&prim_ref(&p.prim))));
                    }
                }
            }
            v
        };
        let ours = on_thread(true);
        if ours.is_empty() {
            on_thread(false)
        } else {
            ours
        }
    };
    for &a in &g.knot {
        let id = ActorId::from_u64(a).unwrap_or(ActorId::from_thread_seq(0));
        let waits = state
            .prims
            .iter()
            .any(|p| p.waiters.iter().any(|w| w.actor.as_u64() == a))
            || state.joins.iter().any(|j| j.waiter.as_u64() == a)
            || state.chan_waits.iter().any(|c| c.waiter.as_u64() == a);
        if waits {
            continue;
        }
        let holds: Vec<&HoldView> = state
            .prims
            .iter()
            .flat_map(|p| p.holds.iter())
            .filter(|h| h.actor.as_u64() == a)
            .collect();
        // mutants: the guard -> `true` is equivalent: `holder` is only told for a holder that
        // needs a worker (for a thread, `executor` asks exactly this guard) or that is pinned
        // to a thread other than its own (never a thread: it is pinned to itself).
        let holder = match id.thread_seq() {
            Some(seq) if state.executors.parked_block_on(seq).is_some() => {
                format!("the block_on future on {}", id.describe())
            }
            Some(_) => format!("{} (its own code)", id.describe()),
            None => id.describe(),
        };
        let what = holds
            .iter()
            .filter_map(|h| state.get(h.prim).map(|p| noun(&prim_ref(&p.prim))))
            .collect::<Vec<_>>()
            .join(", ");
        if let Some(&rt) = exec.needs_worker.get(&a) {
            let workers = exec.worker_count.get(&rt).copied().unwrap_or(0);
            let mut by: Vec<String> = Vec::new();
            for (&t, &r) in &exec.workers {
                if r == rt {
                    for (who, what) in blocked_waits(t) {
                        let name = actor_thread_name(t);
                        by.push(format!("{name} by {who} waiting for {what}"));
                    }
                }
            }
            by.sort();
            out.push(format!(
                "every worker of the runtime ({workers} of {workers}, multi_thread) is blocked waiting for {what}; its holder, {holder}, needs a worker to resume: it holds the guard across an .await, and only a worker can wake it"
            ));
            if !by.is_empty() {
                out.push(format!("blocked workers: {}", by.join("; ")));
            }
            continue;
        }
        let Some(thread) = holds.iter().find_map(|h| pinned_thread(state, h)) else {
            continue;
        };
        let flavor = match state.executors.runtime_of(thread) {
            Some(r) if r.multi => "a LocalSet on the block_on thread of a multi_thread runtime",
            Some(_) => "a current_thread runtime",
            None => "a current_thread runtime or a LocalSet",
        };
        let by = blocked_waits(thread)
            .into_iter()
            .map(|(who, what)| format!("{who} waiting for {what}"))
            .collect::<Vec<_>>()
            .join(", ");
        if id.thread_seq() == Some(thread) {
            out.push(format!(
                "{} holds {what} across an .await, and {by}, polled on that same thread ({flavor}), blocks it: the thread can never get back to the code that would release it",
                id.describe()
            ));
        } else {
            out.push(format!(
                "{holder} holds {what} across an .await and can only resume on {} ({flavor}), which {by} blocks: it can never run to release it",
                actor_thread_name(thread)
            ));
        }
    }
    out
}

/// `thread 'name' (#3)` for a lockscope thread number.
fn actor_thread_name(seq: u64) -> String {
    ActorId::from_thread_seq(seq).describe()
}

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

/// The deadlock rule, with its memory of last tick's candidates.
#[derive(Default)]
pub(crate) struct Deadlock {
    /// Candidate groups of the last tick, keyed by waits, with the progress of their prims.
    pending: HashMap<Waits, Vec<(u64, u64)>>,
    /// Waits of groups confirmed this tick (other rules skip them).
    pub(crate) confirmed_waits: HashSet<(u64, u64)>,
    /// Primitives of groups confirmed this tick (other rules skip them too).
    pub(crate) confirmed_prims: HashSet<u64>,
    /// Keys of findings that still hold.
    pub(crate) active: HashSet<String>,
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
            let confirmed = self.pending.get(&id) == Some(&progress);
            next.insert(id, progress);
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

/// The finding for one confirmed group.
pub fn report(state: &State, g: &Group) -> Finding {
    let key = g
        .waits
        .iter()
        .map(|(p, s)| format!("{p}.{s}"))
        .chain(g.joins.iter().map(|j| format!("j{j}")))
        .chain(g.chans.iter().map(|c| format!("c{c}")))
        .collect::<Vec<_>>()
        .join(",");
    let mut joined_names: Vec<String> = Vec::new();
    let mut chan_names: Vec<String> = Vec::new();
    let mut actors: Vec<ActorReport> = Vec::new();
    let mut behind: Vec<ActorReport> = Vec::new();
    let mut scopes = Vec::new();
    let mut prim_refs = Vec::new();
    let mut waited_names = Vec::new();
    for &a in &g.actors {
        let id = ActorId::from_u64(a).unwrap_or(ActorId::from_thread_seq(0));
        // The summary names what the knot waits for; those behind it are only counted.
        let in_knot = g.knot.contains(&a);
        let mut holds = Vec::new();
        let mut waits = Vec::new();
        for p in &state.prims {
            let r = prim_ref(&p.prim);
            for h in p.holds.iter().filter(|h| h.actor.as_u64() == a) {
                holds.push(access(
                    r.clone(),
                    h.mode,
                    h.permits,
                    h.site,
                    state.hold_age(h),
                ));
                scopes.push(h.scope);
            }
            for w in p.waiters.iter().filter(|w| w.actor.as_u64() == a) {
                waits.push(access(
                    r.clone(),
                    w.mode,
                    w.permits,
                    w.site,
                    state.wait_age(w),
                ));
                scopes.push(w.scope);
                if in_knot && !waited_names.contains(&noun(&r)) {
                    waited_names.push(noun(&r));
                }
            }
            if g.prims.contains(&p.prim.id().0)
                && !prim_refs
                    .iter()
                    .any(|x: &crate::model::finding::PrimRef| x.id == r.id)
            {
                scopes.push(p.prim.scope());
                prim_refs.push(r);
            }
        }
        for j in state
            .joins
            .iter()
            .filter(|j| j.waiter.as_u64() == a && g.joins.contains(&j.seq))
        {
            let Some(&(first, spawned_at)) = j.targets.first() else {
                continue;
            };
            let age = state.now_precise.saturating_sub(j.since_ns);
            let (target, name) = if let Some(set) = j.set {
                let n = j.targets.len();
                let kind = if first.is_task() { "task" } else { "thread" };
                let what = format!(
                    "any of {n} {kind}{} of a {set}",
                    if n == 1 { "" } else { "s" }
                );
                (
                    what.clone(),
                    format!(
                        "join of {what} (the first spawned at {})",
                        crate::state::prim::site_string(spawned_at)
                    ),
                )
            } else {
                (first.describe(), joins::noun(first, spawned_at))
            };
            waits.push(joins::access(j, target, spawned_at, age));
            scopes.push(j.scope);
            if in_knot && !joined_names.contains(&name) {
                joined_names.push(name);
            }
        }
        for c in state
            .chan_waits
            .iter()
            .filter(|c| c.waiter.as_u64() == a && g.chans.contains(&c.seq))
        {
            waits.push(channels::access(
                c,
                state.now_precise.saturating_sub(c.since_ns),
            ));
            scopes.push(c.scope);
            let name = c.chan.noun();
            if in_knot && !chan_names.contains(&name) {
                chan_names.push(name);
            }
        }
        let report = ActorReport {
            id: a,
            name: id.describe(),
            holds,
            waits,
        };
        if in_knot {
            actors.push(report);
        } else {
            behind.push(report);
        }
    }
    let knot = g.knot.len();
    let who = match (knot, actors.first()) {
        (1, Some(a)) => a.name.clone(),
        (n, _) => {
            let tasks = g
                .knot
                .iter()
                .filter(|a| ActorId::from_u64(**a).is_some_and(|x| x.is_task()))
                .count();
            match (tasks, n - tasks) {
                (t, 0) => format!("{t} tasks"),
                (0, th) => format!("{th} threads"),
                (t, th) => format!(
                    "{t} task{} and {th} thread{}",
                    if t == 1 { "" } else { "s" },
                    if th == 1 { "" } else { "s" }
                ),
            }
        }
    };
    let exec = executor(state);
    let stuck_on_executor = executor_details(state, g, &exec);
    // The executor's reason leads when several actors are stuck, and for one actor that waits
    // on no primitive at all (a task pinned to a thread that a separate deadlock blocks): the
    // self-wait sentence would name no primitive.
    let mut summary = if let Some(why) = stuck_on_executor
        .first()
        .filter(|_| knot > 1 || waited_names.is_empty())
    {
        why.clone()
    } else if !chan_names.is_empty() {
        channels::summary(&who, g.actors.len(), &waited_names, &chan_names)
    } else if !joined_names.is_empty() {
        joins::summary(&who, knot, &waited_names, &joined_names)
    } else if knot == 1 {
        format!(
            "{who} waits for {} and can never proceed: what it waits for is held by itself",
            waited_names.join(" and ")
        )
    } else {
        format!(
            "{who} can never proceed: each waits for {} held by another of them",
            waited_names.join(", ")
        )
    };
    if !behind.is_empty() {
        summary = format!("{summary}; {}", more_behind(behind.len()));
    }
    let mut f = Finding::new(FindingKind::Deadlock, key, summary);
    for r in prim_refs {
        f.add_prim(r);
    }
    for s in scopes {
        f.add_scope(s);
    }
    f.actors = actors;
    f.behind = behind;
    let semaphore_knot = f
        .primitives
        .iter()
        .any(|p| p.kind == PrimKind::Semaphore.as_str() || p.kind == PrimKind::RwLock.as_str());
    if semaphore_knot {
        f.details.push(
            "every holder that could free the permits these waiters need is itself waiting (a knot, not just a cycle)"
                .into(),
        );
    }
    f.details.extend(stuck_on_executor.iter().skip(1).cloned());
    f.fix = if !stuck_on_executor.is_empty() && joined_names.is_empty() && chan_names.is_empty() {
        "do not hold a blocking guard across an .await: drop it before awaiting, or use lockscope::tokio::Mutex (an async lock) for data shared across .await; run long blocking waits in tokio::task::spawn_blocking".into()
    } else if !chan_names.is_empty() {
        channels::FIX.into()
    } else if !joined_names.is_empty() {
        joins::FIX.into()
    } else if f
        .primitives
        .iter()
        .any(|p| p.kind == PrimKind::OnceCell.as_str())
    {
        ONCE_CELL_FIX.into()
    } else if knot == 1 {
        "release what you hold before waiting for it again, or pass the guard you hold down to the code that needs it".into()
    } else {
        "take primitives in one global order, never wait for a primitive while holding one its holder needs, and acquire all the permits a task needs in one call".into()
    };
    f
}

#[cfg(test)]
mod tests {
    use super::{Deadlock, Group, blocked_groups, model};
    use crate::analysis::graph::waitfor::Policy;
    use crate::analysis::snapshot::{PrimState, State};
    use crate::model::finding::{Finding, FindingKind};
    use crate::rules::testkit::{MS, Scope, at, hold, state, task, wait};
    use crate::rules::{Rule, Verdict};
    use crate::state::actor::ActorId;
    use crate::state::executor::{Executors, RuntimeView};
    use crate::state::held::{FLAG_MOVABLE, FLAG_PINNED_THREAD, Mode};
    use crate::state::prim::PrimKind;
    use std::collections::HashMap;

    fn thread(n: u64) -> ActorId {
        ActorId::from_thread_seq(n)
    }

    /// Two checks of the same state (a deadlock is confirmed on the second).
    fn confirmed(s: &State) -> Vec<Finding> {
        let mut rule = Deadlock::default();
        assert_eq!(rule.kind(), FindingKind::Deadlock);
        let first = rule.check(s);
        assert!(
            !first.is_empty() && first.iter().all(|v| matches!(v, Verdict::Recheck)),
            "{first:?}"
        );
        crate::rules::testkit::found(rule.check(s))
    }

    /// An ABBA between two tasks: seen once it is a candidate, seen again with no progress
    /// it is reported in these words; progress in between starts over.
    #[test]
    fn an_abba_is_confirmed_on_the_second_look_and_reported() {
        let scope = Scope::arm(10_000, 10_000, None);
        let a = scope.prim("dl/a", PrimKind::Mutex, 1);
        let b = scope.prim("dl/b", PrimKind::Mutex, 1);
        let c = scope.prim("dl/bystander", PrimKind::Mutex, 1);
        let prims = |progress| {
            let mut pa = at(
                &a,
                vec![hold(&a, task(1), Mode::Exclusive, 1, 0)],
                vec![wait(task(2), 1, Mode::Exclusive, 1, 0)],
            );
            pa.progress = progress;
            let pb = at(
                &b,
                vec![hold(&b, task(2), Mode::Exclusive, 1, 0)],
                vec![wait(task(1), 1, Mode::Exclusive, 1, 0)],
            );
            // A bystander: held by a task that waits for nothing, no part of the deadlock.
            let pc = at(&c, vec![hold(&c, task(3), Mode::Exclusive, 1, 0)], vec![]);
            vec![pc, pa, pb]
        };
        let s = state(prims(0), &scope, 1_000 * MS);
        let mut rule = Deadlock::default();
        assert!(matches!(rule.check(&s)[..], [Verdict::Recheck]));
        // Progress on `a` between the two looks: a torn snapshot, not confirmed.
        let moved = state(prims(1), &scope, 1_100 * MS);
        assert!(matches!(rule.check(&moved)[..], [Verdict::Recheck]));
        assert!(rule.confirmed_waits.is_empty() && rule.active.is_empty());
        let f = crate::rules::testkit::found(rule.check(&moved));
        assert_eq!(f.len(), 1);
        let f = &f[0];
        assert_eq!(
            f.summary,
            "2 tasks can never proceed: each waits for mutex \"dl/b\", mutex \"dl/a\" held by another of them"
        );
        let (ia, ib) = (a.id().0, b.id().0);
        assert_eq!(f.key(), format!("{ia}.1,{ib}.1"));
        assert!(f.details.is_empty(), "{:?}", f.details);
        assert!(f.fix.starts_with("take primitives in one global order"));
        let names: Vec<(&str, usize, usize)> = f
            .actors
            .iter()
            .map(|a| (a.name.as_str(), a.holds.len(), a.waits.len()))
            .collect();
        assert_eq!(names, [("task 1", 1, 1), ("task 2", 1, 1)]);
        let held: Vec<(&str, &str)> = f
            .actors
            .iter()
            .map(|a| {
                let (h, w) = (&a.holds[0].primitive.name, &a.waits[0].primitive.name);
                (h.as_str(), w.as_str())
            })
            .collect();
        assert_eq!(held, [("dl/a", "dl/b"), ("dl/b", "dl/a")]);
        assert_eq!(f.actors[0].waits[0].for_ms, 1_100);
        let mut prims: Vec<&str> = f.primitives.iter().map(|p| p.name.as_str()).collect();
        prims.sort_unstable();
        assert_eq!(prims, ["dl/a", "dl/b"]);
        assert_eq!(rule.confirmed_waits, [(ia, 1), (ib, 1)].into());
        assert_eq!(rule.confirmed_prims, [ia, ib].into());
        assert!(rule.active.contains(&format!("deadlock:{}", f.key())));
    }

    /// A two-task cycle with six untimed waiters queued on its locks (three of them ahead of
    /// the cycle's own wait): the report names the two that close it and counts the six as
    /// waiting behind it, in the summary, the text and the JSON (a field of its own, left out
    /// when empty).
    #[test]
    fn a_cycle_with_six_waiters_behind_names_its_knot_and_counts_the_rest() {
        let scope = Scope::arm(10_000, 10_000, None);
        let a = scope.prim("dl/knot_a", PrimKind::Mutex, 1);
        let b = scope.prim("dl/knot_b", PrimKind::Mutex, 1);
        let w = |actor: u64, seq: u64| wait(task(actor), seq, Mode::Exclusive, 1, 0);
        let s = state(
            vec![
                at(
                    &a,
                    vec![hold(&a, task(1), Mode::Exclusive, 1, 0)],
                    vec![w(3, 1), w(4, 2), w(5, 3), w(2, 4), w(6, 5), w(7, 6)],
                ),
                at(
                    &b,
                    vec![hold(&b, task(2), Mode::Exclusive, 1, 0)],
                    vec![w(1, 1), w(8, 2)],
                ),
            ],
            &scope,
            MS,
        );
        let found = confirmed(&s);
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = &found[0];
        assert_eq!(
            f.summary,
            "2 tasks can never proceed: each waits for mutex \"dl/knot_b\", mutex \"dl/knot_a\" held by another of them; 6 more wait behind it"
        );
        let names = |v: &[crate::model::finding::ActorReport]| -> Vec<String> {
            v.iter().map(|a| a.name.clone()).collect()
        };
        assert_eq!(names(&f.actors), ["task 1", "task 2"]);
        assert_eq!(
            names(&f.behind),
            ["task 3", "task 4", "task 5", "task 6", "task 7", "task 8"]
        );
        assert!(
            f.behind
                .iter()
                .all(|a| a.holds.is_empty() && a.waits.len() == 1)
        );
        let text = f.to_string();
        assert!(
            text.contains("\n  6 more wait behind it:\n    task 3:\n      waits for mutex \"dl/knot_a\" (lock)"),
            "{text}"
        );
        // The key is still every wait of the group: the finding is the same one as before.
        assert_eq!(f.key().split(',').count(), 8);
        let json = serde_json::to_value(f).unwrap();
        assert_eq!(json["actors"].as_array().map(Vec::len), Some(2));
        assert_eq!(json["behind"].as_array().map(Vec::len), Some(6));
        assert_eq!(json["behind"][0]["name"], "task 3");

        // One behind: said so; none behind: no count, and no field in the JSON.
        let abba_and = |on_a: Vec<crate::state::wait::WaiterRec>| {
            state(
                vec![
                    at(&a, vec![hold(&a, task(1), Mode::Exclusive, 1, 0)], on_a),
                    at(
                        &b,
                        vec![hold(&b, task(2), Mode::Exclusive, 1, 0)],
                        vec![w(1, 1)],
                    ),
                ],
                &scope,
                MS,
            )
        };
        let s = abba_and(vec![w(2, 1), w(3, 2)]);
        assert!(
            confirmed(&s)[0]
                .summary
                .ends_with("of them; 1 more waits behind it")
        );
        let s = abba_and(vec![w(2, 1)]);
        let f = &confirmed(&s)[0];
        assert!(
            f.summary.ends_with("held by another of them"),
            "{}",
            f.summary
        );
        assert!(serde_json::to_value(f).unwrap().get("behind").is_none());
    }

    /// A three-task cycle with a chain behind it: task 4 holds a lock task 5 waits for, and
    /// waits for a lock of the cycle. The summary counts the cycle's three and names only
    /// what they wait for (not task 4's lock); the two are behind it.
    #[test]
    fn a_three_task_cycle_with_a_chain_behind_it() {
        let scope = Scope::arm(10_000, 10_000, None);
        let p: Vec<_> = (0..4)
            .map(|i| scope.prim(&format!("dl/three{i}"), PrimKind::Mutex, 1))
            .collect();
        let h = |i: usize, actor: u64| hold(&p[i], task(actor), Mode::Exclusive, 1, 0);
        let w = |actor: u64, seq: u64| wait(task(actor), seq, Mode::Exclusive, 1, 0);
        let s = state(
            vec![
                at(&p[0], vec![h(0, 1)], vec![w(3, 1), w(4, 2)]),
                at(&p[1], vec![h(1, 2)], vec![w(1, 1)]),
                at(&p[2], vec![h(2, 3)], vec![w(2, 1)]),
                at(&p[3], vec![h(3, 4)], vec![w(5, 1)]),
            ],
            &scope,
            MS,
        );
        let f = &confirmed(&s)[0];
        assert_eq!(
            f.summary,
            "3 tasks can never proceed: each waits for mutex \"dl/three1\", mutex \"dl/three2\", mutex \"dl/three0\" held by another of them; 2 more wait behind it"
        );
        let ids: Vec<u64> = f.behind.iter().map(|a| a.id).collect();
        assert_eq!(ids, [task(4).as_u64(), task(5).as_u64()]);
        assert_eq!(f.behind[0].holds[0].primitive.name, "dl/three3");
        // Every primitive of the group is still named: task 5's wait is stuck for good too.
        assert!(f.involves("dl/three3"));
    }

    /// One task waiting for what it holds; a semaphore knot between a task and a thread.
    #[test]
    fn self_waits_and_knots_are_worded_for_what_they_are() {
        let scope = Scope::arm(10_000, 10_000, None);
        let c = scope.prim("dl/c", PrimKind::Mutex, 1);
        let s = state(
            vec![at(
                &c,
                vec![hold(&c, task(3), Mode::Exclusive, 1, 0)],
                vec![wait(task(3), 1, Mode::Exclusive, 1, 0)],
            )],
            &scope,
            MS,
        );
        let f = confirmed(&s);
        assert_eq!(
            f[0].summary,
            "task 3 waits for mutex \"dl/c\" and can never proceed: what it waits for is held by itself"
        );
        assert!(
            f[0].fix
                .starts_with("release what you hold before waiting for it again")
        );

        let sem = scope.prim("dl/sem", PrimKind::Semaphore, 1);
        let m = scope.prim("dl/m", PrimKind::Mutex, 1);
        let s = state(
            vec![
                at(
                    &sem,
                    vec![hold(&sem, task(4), Mode::Permits, 1, 0)],
                    vec![wait(thread(900_005), 1, Mode::Permits, 1, 0)],
                ),
                at(
                    &m,
                    vec![hold(&m, thread(900_005), Mode::Exclusive, 1, 0)],
                    vec![wait(task(4), 1, Mode::Exclusive, 1, 0)],
                ),
            ],
            &scope,
            MS,
        );
        let f = confirmed(&s);
        assert_eq!(
            f[0].summary,
            "1 task and 1 thread can never proceed: each waits for mutex \"dl/m\", semaphore \"dl/sem\" held by another of them"
        );
        assert_eq!(
            f[0].details,
            [
                "every holder that could free the permits these waiters need is itself waiting (a knot, not just a cycle)"
            ]
        );
    }

    /// Two deadlocks in one state are two groups, each with its own actors, primitives and
    /// waits; a chain behind a free holder is none; an owned guard links nobody.
    #[test]
    fn each_deadlock_is_its_own_group() {
        let scope = Scope::arm(10_000, 10_000, None);
        let p: Vec<_> = (0..5)
            .map(|i| scope.prim(&format!("dl/group{i}"), PrimKind::Mutex, 1))
            .collect();
        let x = |i: usize, holder, waiter| {
            at(
                &p[i],
                vec![hold(&p[i], task(holder), Mode::Exclusive, 1, 0)],
                vec![wait(task(waiter), 1, Mode::Exclusive, 1, 0)],
            )
        };
        // 10 <-> 11 on p0/p1, 20 <-> 21 on p2/p3; 30 holds p4 (waits for nothing), 31 waits.
        let mut prims = vec![
            x(0, 10, 11),
            x(1, 11, 10),
            x(2, 20, 21),
            x(3, 21, 20),
            x(4, 30, 31),
        ];
        // 20 also holds an owned guard of p4: it links nothing.
        let mut owned = hold(&p[4], task(20), Mode::Exclusive, 1, 0);
        owned.flags |= FLAG_MOVABLE;
        prims[4].holds.push(owned);
        let s = state(prims, &scope, MS);
        let groups = blocked_groups(&s);
        let ids = |i: usize| p[i].id().0;
        let group = |actors: [u64; 2], i: usize, j: usize| Group {
            actors: actors.into(),
            prims: [ids(i), ids(j)].into(),
            waits: [(ids(i), 1), (ids(j), 1)].into(),
            joins: Default::default(),
            chans: Default::default(),
            knot: actors.into(),
        };
        assert_eq!(groups, [group([10, 11], 0, 1), group([20, 21], 2, 3)]);
    }

    /// The model: each kind's grant policy, only primitives held or waited for, threads
    /// blocked only by blocking waits, and where each holder can run.
    #[test]
    fn the_model_follows_each_primitives_policy_and_pins() {
        let scope = Scope::arm(10_000, 10_000, None);
        let kinds = [
            (PrimKind::Mutex, Policy::Fifo),
            (PrimKind::RwLock, Policy::Fifo),
            (PrimKind::Semaphore, Policy::Fifo),
            (PrimKind::BlockingMutex, Policy::Exclusive),
            (PrimKind::BlockingReentrantMutex, Policy::Exclusive),
            (PrimKind::BlockingRwLock, Policy::FairRwLock),
        ];
        let mut prims: Vec<PrimState> = Vec::new();
        for (i, (kind, _)) in kinds.iter().enumerate() {
            let p = scope.prim(&format!("dl/model{i}"), *kind, 2);
            let mut w = wait(task(50), 1, Mode::Exclusive, 1, 0);
            w.thread = 900_040;
            w.timed = i == 0;
            let mut pinned = hold(&p, task(51), Mode::Exclusive, 1, 0);
            pinned.flags |= FLAG_PINNED_THREAD;
            pinned.thread = 900_041;
            let mut owned = hold(&p, task(52), Mode::Exclusive, 1, 0);
            owned.flags |= FLAG_MOVABLE;
            prims.push(at(
                &p,
                vec![pinned, owned, hold(&p, thread(900_042), Mode::Shared, 1, 0)],
                vec![w],
            ));
        }
        let idle = scope.prim("dl/model_idle", PrimKind::Mutex, 1);
        prims.push(at(&idle, vec![], vec![]));
        let mut closed = at(
            &idle,
            vec![],
            vec![wait(task(53), 1, Mode::Exclusive, 1, 0)],
        );
        closed.closed = true;
        closed.capacity = 5;
        let s = state(prims, &scope, MS);
        let m = model(&s);
        assert_eq!(m.len(), kinds.len(), "the idle primitive is left out");
        for (mp, (kind, policy)) in m.iter().zip(kinds) {
            assert_eq!(mp.policy, policy, "{kind:?}");
            assert_eq!(mp.capacity, 2);
            assert!(!mp.closed);
            let blocks = if kind.is_blocking() {
                Some(900_040)
            } else {
                None
            };
            assert_eq!(mp.waiters[0].blocks_thread, blocks, "{kind:?}");
            let pins: Vec<(u64, bool, Option<u64>)> = mp
                .holds
                .iter()
                .map(|h| (h.actor, h.movable, h.pinned_thread))
                .collect();
            assert_eq!(
                pins,
                [
                    (task(51).as_u64(), false, Some(900_041)),
                    (task(52).as_u64(), true, None),
                    (thread(900_042).as_u64(), false, Some(900_042)),
                ]
            );
        }
        assert!(m[0].waiters[0].timed && !m[1].waiters[0].timed);
        let s = state(vec![closed], &scope, MS);
        let m = model(&s);
        assert!(m[0].closed);
        assert_eq!(m[0].capacity, 5);
    }

    /// A task's hold taken on a runtime's `block_on` thread (a LocalSet there) can only be
    /// released on that thread; one taken elsewhere can run anywhere.
    #[test]
    fn a_hold_taken_on_a_block_on_thread_is_pinned_there() {
        let scope = Scope::arm(10_000, 10_000, None);
        let m = scope.prim("dl/local_set", PrimKind::Mutex, 1);
        let mut on_block_on = hold(&m, task(61), Mode::Exclusive, 1, 0);
        on_block_on.thread = 900_150;
        let mut elsewhere = hold(&m, task(62), Mode::Exclusive, 1, 0);
        elsewhere.thread = 900_151;
        let mut s = state(
            vec![at(&m, vec![on_block_on, elsewhere], vec![])],
            &scope,
            MS,
        );
        s.executors = Executors {
            runtimes: HashMap::from([(10, runtime(10, true, 2, Some((900_150, false))))]),
            threads: HashMap::new(),
        };
        let pins: Vec<Option<u64>> = model(&s)[0].holds.iter().map(|h| h.pinned_thread).collect();
        assert_eq!(pins, [Some(900_150), None]);
    }

    fn runtime(
        key: u64,
        multi: bool,
        workers: usize,
        block_on: Option<(u64, bool)>,
    ) -> RuntimeView {
        RuntimeView {
            key,
            multi,
            workers,
            block_on,
        }
    }

    /// Every worker of a multi-thread runtime blocked on a parking_lot mutex whose holder
    /// is a task that needs a worker to resume: a deadlock through the executor, told so.
    #[test]
    fn every_worker_blocked_behind_a_task_that_needs_one_is_a_deadlock() {
        let scope = Scope::arm(10_000, 10_000, None);
        let m = scope.prim("dl/workers", PrimKind::BlockingMutex, 1);
        let other = scope.prim("dl/workers_other", PrimKind::Mutex, 1);
        let mut h = hold(&m, task(1), Mode::Exclusive, 1, 0);
        h.thread = 900_110;
        let on = |actor: u64, t: u64| {
            let mut w = wait(task(actor), actor, Mode::Exclusive, 1, 0);
            w.thread = t;
            w.on_worker = true;
            w
        };
        // A free task holding another primitive on a blocked worker: it needs no worker
        // (it is running there... as far as the books know, it is the one blocking it).
        let mut own = hold(&other, task(2), Mode::Exclusive, 1, 0);
        own.thread = 900_110;
        let mut s = state(
            vec![
                at(&m, vec![h], vec![on(2, 900_110), on(3, 900_111)]),
                at(&other, vec![own], vec![]),
            ],
            &scope,
            MS,
        );
        s.executors = Executors {
            runtimes: HashMap::from([(7, runtime(7, true, 2, None))]),
            threads: HashMap::from([(900_110, 7), (900_111, 7)]),
        };
        let exec = super::executor(&s);
        assert_eq!(exec.workers, HashMap::from([(900_110, 7), (900_111, 7)]));
        assert_eq!(exec.worker_count, HashMap::from([(7, 2)]));
        assert_eq!(exec.needs_worker, HashMap::from([(task(1).as_u64(), 7)]));
        let f = confirmed(&s);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].summary,
            "every worker of the runtime (2 of 2, multi_thread) is blocked waiting for blocking_mutex \"dl/workers\"; its holder, task 1, needs a worker to resume: it holds the guard across an .await, and only a worker can wake it"
        );
        assert_eq!(
            f[0].details,
            [
                "blocked workers: thread #900110 by task 2 waiting for blocking_mutex \"dl/workers\"; thread #900111 by task 3 waiting for blocking_mutex \"dl/workers\""
            ]
        );
        assert!(
            f[0].fix
                .starts_with("do not hold a blocking guard across an .await")
        );
        // A task queued on the same lock off the workers waits behind the knot: the wording
        // is kept, and it is counted.
        let mut behind = wait(task(4), 4, Mode::Exclusive, 1, 0);
        behind.thread = 900_119;
        s.prims[0].waiters.push(behind);
        let f = confirmed(&s);
        assert_eq!(
            f[0].summary,
            "every worker of the runtime (2 of 2, multi_thread) is blocked waiting for blocking_mutex \"dl/workers\"; its holder, task 1, needs a worker to resume: it holds the guard across an .await, and only a worker can wake it; 1 more waits behind it"
        );
        let knot: Vec<&str> = f[0].actors.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(knot, ["task 1", "task 2", "task 3"]);
        assert_eq!(f[0].behind[0].name, "task 4");
        s.prims[0].waiters.pop();
        // A current-thread runtime's workers are not counted (its tasks are pinned instead).
        s.executors.runtimes.insert(7, runtime(7, false, 2, None));
        let exec = super::executor(&s);
        assert!(exec.workers.is_empty() && exec.needs_worker.is_empty());
    }

    /// A task pinned to a thread that another task blocks, and a thread's own code blocked by
    /// a task it polls: told apart in the report.
    #[test]
    fn a_holder_pinned_to_a_blocked_thread_is_a_deadlock() {
        let scope = Scope::arm(10_000, 10_000, None);
        let n = scope.prim("dl/pinned", PrimKind::BlockingMutex, 1);
        let mut h = hold(&n, task(4), Mode::Exclusive, 1, 0);
        h.flags |= FLAG_PINNED_THREAD;
        h.thread = 900_120;
        let mut w = wait(task(5), 1, Mode::Exclusive, 1, 0);
        w.thread = 900_120;
        // Task 98 also blocks that thread for a while, waiting for a lock a free task holds:
        // no part of the deadlock, not named in it.
        let z = scope.prim("dl/pinned_other", PrimKind::BlockingMutex, 1);
        let mut passing = wait(task(98), 1, Mode::Exclusive, 1, 0);
        passing.thread = 900_120;
        let mut s = state(
            vec![
                at(&n, vec![h], vec![w.clone()]),
                at(
                    &z,
                    vec![hold(&z, task(97), Mode::Exclusive, 1, 0)],
                    vec![passing],
                ),
            ],
            &scope,
            MS,
        );
        let f = confirmed(&s);
        assert_eq!(
            f[0].summary,
            "task 4 holds blocking_mutex \"dl/pinned\" across an .await and can only resume on thread #900120 (a current_thread runtime or a LocalSet), which task 5 waiting for blocking_mutex \"dl/pinned\" blocks: it can never run to release it"
        );
        s.executors = Executors {
            runtimes: HashMap::from([(8, runtime(8, false, 1, None))]),
            threads: HashMap::from([(900_120, 8)]),
        };
        assert!(
            confirmed(&s)[0]
                .summary
                .contains("thread #900120 (a current_thread runtime)")
        );
        s.executors
            .runtimes
            .insert(8, runtime(8, true, 4, Some((900_120, false))));
        assert!(
            confirmed(&s)[0]
                .summary
                .contains("(a LocalSet on the block_on thread of a multi_thread runtime)")
        );

        // The thread's own code (a block_on future) holds it.
        let q = scope.prim("dl/own", PrimKind::BlockingMutex, 1);
        let mut w = wait(task(6), 1, Mode::Exclusive, 1, 0);
        w.thread = 900_130;
        let s = state(
            vec![at(
                &q,
                vec![hold(&q, thread(900_130), Mode::Exclusive, 1, 0)],
                vec![w],
            )],
            &scope,
            MS,
        );
        assert_eq!(
            confirmed(&s)[0].summary,
            "thread #900130 holds blocking_mutex \"dl/own\" across an .await, and task 6 waiting for blocking_mutex \"dl/own\", polled on that same thread (a current_thread runtime or a LocalSet), blocks it: the thread can never get back to the code that would release it"
        );
    }

    /// A task that waits for nothing, pinned to a thread that a separate deadlock blocks, is a
    /// group of its own, worded by the executor's reason, naming the other deadlock's wait that
    /// blocks the thread: the self-wait sentence would name no primitive ("waits for  and can
    /// never proceed", the wording a mutant found), and the blockers were taken from the group
    /// alone ("which  blocks", found by this test).
    #[test]
    fn a_lone_task_stuck_only_on_the_executor_is_worded_by_it() {
        let scope = Scope::arm(10_000, 10_000, None);
        let a = scope.prim("dl/lone_a", PrimKind::BlockingMutex, 1);
        let b = scope.prim("dl/lone_b", PrimKind::BlockingMutex, 1);
        let p = scope.prim("dl/lone_pinned", PrimKind::BlockingMutex, 1);
        // Tasks 21 and 22 deadlock (ABBA); 22 waits on thread #900160, blocking it.
        let mut w21 = wait(task(21), 1, Mode::Exclusive, 1, 0);
        w21.thread = 900_161;
        let mut w22 = wait(task(22), 2, Mode::Exclusive, 1, 0);
        w22.thread = 900_160;
        // Task 23 holds a lock nobody waits for, across an .await, pinned to that thread.
        let mut pinned = hold(&p, task(23), Mode::Exclusive, 1, 0);
        pinned.flags |= FLAG_PINNED_THREAD;
        pinned.thread = 900_160;
        let s = state(
            vec![
                at(
                    &a,
                    vec![hold(&a, task(21), Mode::Exclusive, 1, 0)],
                    vec![w22],
                ),
                at(
                    &b,
                    vec![hold(&b, task(22), Mode::Exclusive, 1, 0)],
                    vec![w21],
                ),
                at(&p, vec![pinned], vec![]),
            ],
            &scope,
            MS,
        );
        let found = confirmed(&s);
        let lone: Vec<&Finding> = found
            .iter()
            .filter(|f| f.actors.iter().map(|a| a.id).eq([task(23).as_u64()]))
            .collect();
        assert_eq!(lone.len(), 1, "task 23 is a group of its own: {found:#?}");
        assert_eq!(
            lone[0].summary,
            "task 23 holds blocking_mutex \"dl/lone_pinned\" across an .await and can only resume on thread #900160 (a current_thread runtime or a LocalSet), which task 22 waiting for blocking_mutex \"dl/lone_a\" blocks: it can never run to release it"
        );
    }

    /// A parked `block_on` future of a multi-thread runtime needs a worker to wake it.
    #[test]
    fn a_parked_block_on_future_needs_a_worker() {
        let scope = Scope::arm(10_000, 10_000, None);
        let m = scope.prim("dl/block_on", PrimKind::BlockingMutex, 1);
        let on = |actor: u64, t: u64| {
            let mut w = wait(task(actor), actor, Mode::Exclusive, 1, 0);
            w.thread = t;
            w.on_worker = true;
            w
        };
        let mut s = state(
            vec![at(
                &m,
                vec![hold(&m, thread(900_140), Mode::Exclusive, 1, 0)],
                vec![on(2, 900_141)],
            )],
            &scope,
            MS,
        );
        s.executors = Executors {
            runtimes: HashMap::from([(9, runtime(9, true, 1, Some((900_140, true))))]),
            threads: HashMap::from([(900_141, 9)]),
        };
        let exec = super::executor(&s);
        assert_eq!(
            exec.needs_worker,
            HashMap::from([(thread(900_140).as_u64(), 9)])
        );
        let f = confirmed(&s);
        assert!(
            f[0].summary
                .contains("its holder, the block_on future on thread #900140, needs a worker"),
            "{}",
            f[0].summary
        );
    }
}
