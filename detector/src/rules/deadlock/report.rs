//! A confirmed deadlock's finding: its summary (the knot, what it waits for, and how many
//! wait behind it), each actor's holds and waits, the executor's part when threads are what
//! the group waits for, and the fix line that fits what closes it.

use crate::analysis::graph::waitfor::Executor;
use crate::analysis::snapshot::State;
use crate::model::finding::{ActorReport, Finding, FindingKind, more_behind};
use crate::rules::{access, noun, prim_ref};
use crate::state::actor::ActorId;
use crate::state::held::HoldView;
use crate::state::prim::PrimKind;

use super::model::pinned_thread;
use super::{Group, channels, executor, joins};

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
