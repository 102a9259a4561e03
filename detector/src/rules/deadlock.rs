//! `deadlock`: tasks or threads that can never proceed.
//!
//! Builds the wait-for model from a [`State`], reduces it (see [`crate::analysis::graph::waitfor`]),
//! splits what stays blocked into connected groups, and reports a group once it has been seen
//! blocked, with the same waits and no progress on its primitives, on two consecutive looks,
//! the second when its youngest wait is at least a tick old: a snapshot is not atomic, and a
//! torn one could show a cycle that never existed; and two looks close together (a test may
//! run the analysis as often as it likes) could both see a wait that was about to end (a
//! `select!`'s send, raced against a short timer the detector cannot see).
//!
//! A report names the group's knot (the actors whose waits close it, see
//! [`waitfor::Reduction::knot`]) and counts the rest as waiting behind it.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::analysis::graph::waitfor::{self, Executor};
use crate::analysis::snapshot::State;
use crate::model::finding::{ActorReport, Finding, FindingKind, more_behind};
use crate::rules::{Rule, Verdict, access, noun, prim_ref};
use crate::state::actor::ActorId;
use crate::state::held::HoldView;
use crate::state::prim::PrimKind;

mod channels;
mod joins;
mod model;

use model::pinned_thread;
pub use model::{executor, model};

/// The fix line of a deadlock through a once-cell: its waiters wait for the initialiser.
const ONCE_CELL_FIX: &str = "do not wait for a once-cell while holding a lock its initialiser needs: initialise the cell before taking the lock (or where nothing is held), and never wait for a cell from inside its own initialiser";

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
    /// How old (precise ns) a group's youngest wait must be to confirm it: the watchdog's
    /// tick, so that a wait is confirmed only once it has outlasted a tick however often the
    /// analysis runs. Zero in unit tests that build their own states.
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
            let confirmed = self.pending.get(&id) == Some(&progress)
                && youngest_wait(state, &g) >= self.min_age_ns;
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
    // mutants: `knot > 1` -> `knot >= 1` is equivalent: a knot is never empty, and a knot of
    // one with a reason from the executor is an actor that waits for nothing (the only kind
    // `executor_details` tells), so `waited_names` is empty then anyway.
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
    f.traceable = stuck_on_executor.is_empty();
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
mod tests;
