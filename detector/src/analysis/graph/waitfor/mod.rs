//! The wait-for graph and its reduction: which waiters can never be granted.
//!
//! A cycle of mutexes is a deadlock, but a cycle through a semaphore or an rwlock is not
//! proof: another holder may free the permits. So instead of looking for cycles we reduce the
//! graph (Holt's reduction for reusable resources), following each primitive's real grant
//! policy:
//!
//! 1. every actor that waits for nothing (or only in a timed form, which gives up by itself)
//!    is assumed to finish and release everything it holds;
//! 2. each primitive then grants its waiters as the real one would: tokio's semaphore strictly
//!    in FIFO order (a large `acquire_many` at the head blocks smaller requests behind it; a
//!    tokio write is "all permits", so a queued writer blocks later readers); a parking_lot
//!    mutex any waiter once free; a parking_lot rwlock task-fairly (readers wait behind a
//!    writer that has claimed the lock, except `read_recursive` while readers hold it);
//! 3. a granted actor is in turn assumed to finish and release; repeat to a fixed point.
//!
//! Whoever is still waiting then can never be granted, whatever the others do: a deadlock,
//! certainly (given the model). Holds of owned guards, which may have moved to another task,
//! count as held by someone who will release them. An actor waiting for several primitives at
//! once (`select!`) counts as granted as soon as one of them is.
//!
//! The executor counts too. A task of a current-thread runtime (or a `LocalSet`) that holds a
//! blocking guard can only run again on its thread, and a thread's own code (a `block_on`
//! future) only on itself; if that thread is blocked in a blocking wait, the holder is stuck
//! too. Such holds carry their thread ([`MHold::pinned_thread`]). A task of a multi-thread
//! runtime, or a parked `block_on` future, needs any one of the runtime's workers; when every
//! worker is blocked in a blocking wait, it is stuck ([`Executor`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::state::held::Mode;

mod model;

pub use model::{Executor, MHold, MPrim, MWait, Policy, join_prim};

/// What stays blocked after the reduction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reduction {
    /// Actors that can never be granted.
    pub blocked: BTreeSet<u64>,
    /// For each blocked actor, the blocked actors that keep it blocked at the fixed point
    /// (see [`Reduction::knot`]): the holders of what it waits for when they alone stop it,
    /// else the first waiter queued on it that does (a FIFO queue's head, a parking_lot
    /// writer that has claimed the lock); the actors whose blocking waits hold the thread or
    /// the workers it needs to run.
    pub blocked_by: BTreeMap<u64, Vec<u64>>,
}

impl Reduction {
    /// The knot: the blocked actors whose waits close on themselves (those on a cycle of
    /// [`Reduction::blocked_by`], or blocked by themselves). The rest of [`Reduction::blocked`]
    /// wait behind it: stuck for good, but no part of what keeps it stuck.
    ///
    /// Each actor is kept blocked by what stops it *now*: by the holders when they alone
    /// would stop it, and only otherwise by a waiter queued ahead. So six waiters queued on a
    /// lock of a two-task cycle, even ahead of the cycle's own wait, point at its holder and
    /// are not part of the knot; a writer queued between two reads of one task (which alone
    /// would get its second read) is.
    pub fn knot(&self) -> BTreeSet<u64> {
        // Tarjan's strongly connected components, iteratively (a million bystanders in a
        // queue make a deep chain).
        let index_of: HashMap<u64, usize> = self
            .blocked
            .iter()
            .enumerate()
            .map(|(i, &a)| (a, i))
            .collect();
        let ids: Vec<u64> = self.blocked.iter().copied().collect();
        let next: Vec<Vec<usize>> = ids
            .iter()
            .map(|a| {
                self.blocked_by
                    .get(a)
                    .into_iter()
                    .flatten()
                    .filter_map(|b| index_of.get(b).copied())
                    .collect()
            })
            .collect();
        let n = ids.len();
        let mut index = vec![usize::MAX; n];
        let mut low = vec![0usize; n];
        let mut on_stack = vec![false; n];
        let mut stack: Vec<usize> = Vec::new();
        let mut counter = 0usize;
        let mut knot = BTreeSet::new();
        for root in 0..n {
            if index[root] != usize::MAX {
                continue;
            }
            // (node, next edge to look at)
            let mut call: Vec<(usize, usize)> = vec![(root, 0)];
            index[root] = counter;
            low[root] = counter;
            counter += 1;
            stack.push(root);
            on_stack[root] = true;
            while let Some(top) = call.last_mut() {
                let v = top.0;
                if let Some(&w) = next[v].get(top.1) {
                    top.1 += 1;
                    if index[w] == usize::MAX {
                        index[w] = counter;
                        low[w] = counter;
                        counter += 1;
                        stack.push(w);
                        on_stack[w] = true;
                        call.push((w, 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                    continue;
                }
                call.pop();
                if let Some(&(parent, _)) = call.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut component = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        component.push(w);
                        if w == v {
                            break;
                        }
                    }
                    if component.len() > 1 || next[v].contains(&v) {
                        knot.extend(component.into_iter().map(|w| ids[w]));
                    }
                }
            }
        }
        knot
    }
}

struct Actor {
    free: bool,
    released: bool,
    /// Pending waits: (primitive, waiter index).
    waits: Vec<(usize, usize)>,
    /// Holds: (primitive, index into that primitive's live holds).
    holds: Vec<(usize, usize)>,
    /// Threads this task can only run on (current-thread runtime, blocking guard held).
    pinned: Vec<u64>,
    /// A timed wait, or a wait on a closed semaphore: the actor goes on by itself once it
    /// can run at all.
    escapes: bool,
    /// Granted a wait while it could not run: once it runs, that `select!` branch is ready.
    granted: bool,
    /// Runtime whose workers it needs to run (see [`Executor::needs_worker`]).
    needs: Option<u64>,
}

/// Reduces the model (see module docs). Linear in holds + waits, times the number of rounds
/// in which grants cascade.
///
/// Details that keep it exact:
/// - an actor that may go on (nothing to wait for, or a timed wait or a closed semaphore among
///   its `select!` branches) first stops waiting, and only releases what it holds once the
///   grants that follow have run out: releasing can also hurt (a parking_lot writer may
///   claim the lock again once an upgradable read is gone), and an actor that gave up its
///   wait still holds what it held for a while;
/// - a task pinned to a thread that another actor blocks cannot run: a grant it receives
///   becomes a hold it cannot release, and it cannot give up a timed wait, until that
///   thread runs again.
pub fn reduce(prims: &[MPrim]) -> Reduction {
    reduce_with(prims, &Executor::default())
}

/// Whether every waiter is sure to be granted or to give up, seen in one pass: every wait is
/// for a tokio primitive (none blocks a thread, so no thread, pinned task or runtime's workers
/// are stuck) and is made by an actor that holds nothing (but owned guards, which count as
/// released). Then every holder waits for nothing and releases, and each queue is granted in
/// order to the end (a request for more permits than exist counts as grantable, see
/// [`grantable`]): nothing stays blocked. This is
/// the common case at scale (a million tasks waiting for a pool's permits), where the
/// reduction's books per actor cost the watchdog hundreds of bytes per waiter at each tick.
///
/// Joins ([`Policy::Join`]) keep it so when no joiner holds anything either and no join
/// blocks a thread: then every joined task or thread that does not itself join is sure to
/// end (it waits at most for a primitive, which settles), and joins along a chain end in turn;
/// only a cycle made of joins alone would stay, which is looked for here.
fn settles(prims: &[MPrim]) -> bool {
    let holders: HashSet<u64> = prims
        .iter()
        .filter(|p| p.policy != Policy::Join)
        .flat_map(|p| p.holds.iter().filter(|h| !h.movable).map(|h| h.actor))
        .collect();
    let mut joins: HashMap<u64, Vec<u64>> = HashMap::new();
    let plain = prims.iter().all(|p| {
        p.waiters.is_empty()
            || match p.policy {
                Policy::Fifo => p
                    .waiters
                    .iter()
                    .all(|w| w.blocks_thread.is_none() && !holders.contains(&w.actor)),
                Policy::Join => p.waiters.iter().all(|w| {
                    for h in &p.holds {
                        joins.entry(w.actor).or_default().push(h.actor);
                    }
                    w.blocks_thread.is_none() && !holders.contains(&w.actor)
                }),
                Policy::Exclusive | Policy::FairRwLock => false,
            }
    });
    plain && joins_end(&joins)
}

/// Whether every joiner in `joins` (joiner -> the actors any one of which ending lets it go
/// on) is sure to go on, given that an actor that joins nobody ends.
fn joins_end(joins: &HashMap<u64, Vec<u64>>) -> bool {
    let mut left: Vec<u64> = joins.keys().copied().collect();
    let mut ended: HashSet<u64> = HashSet::new();
    loop {
        let before = left.len();
        left.retain(|j| {
            let goes = joins[j]
                .iter()
                .any(|t| !joins.contains_key(t) || ended.contains(t));
            if goes {
                ended.insert(*j);
            }
            !goes
        });
        if left.is_empty() {
            return true;
        }
        if left.len() == before {
            return false;
        }
    }
}

/// [`reduce`], with the executor in the model: actors in [`Executor::needs_worker`] cannot
/// run while every worker of their runtime is blocked.
pub fn reduce_with(prims: &[MPrim], exec: &Executor) -> Reduction {
    if settles(prims) {
        return Reduction::default();
    }
    let mut actors: HashMap<u64, Actor> = HashMap::new();
    let mut thread_blockers: HashMap<u64, usize> = HashMap::new();
    let blank = || Actor {
        free: false,
        released: false,
        waits: Vec::new(),
        holds: Vec::new(),
        pinned: Vec::new(),
        escapes: false,
        granted: false,
        needs: None,
    };
    // Live holds per primitive: (actor, permits, mode); grants to pinned actors are appended.
    let mut live: Vec<Vec<Option<(u64, u32, Mode)>>> = Vec::with_capacity(prims.len());
    // Pending waiters per primitive (queue order), dropped when their actor stops waiting.
    let mut pending: Vec<Vec<Option<usize>>> = Vec::with_capacity(prims.len());
    for (pi, p) in prims.iter().enumerate() {
        let mut l = Vec::with_capacity(p.holds.len());
        for h in &p.holds {
            let a = actors.entry(h.actor).or_insert_with(blank);
            if let Some(t) = h.pinned_thread {
                a.pinned.push(t);
            }
            if h.movable {
                l.push(None);
            } else {
                a.holds.push((pi, l.len()));
                l.push(Some((h.actor, h.permits, h.mode)));
            }
        }
        live.push(l);
        let mut q = Vec::with_capacity(p.waiters.len());
        for (wi, w) in p.waiters.iter().enumerate() {
            let a = actors.entry(w.actor).or_insert_with(blank);
            a.escapes |= w.timed || p.closed;
            a.waits.push((pi, wi));
            q.push(Some(wi));
            if let Some(t) = w.blocks_thread {
                *thread_blockers.entry(t).or_default() += 1;
            }
        }
        pending.push(q);
    }
    for (id, a) in actors.iter_mut() {
        a.pinned.sort_unstable();
        a.pinned.dedup();
        a.needs = exec.needs_worker.get(id).copied();
    }

    let pinned_blocked = |a: &Actor, me: u64, tb: &HashMap<u64, usize>| {
        a.pinned.iter().any(|t| {
            let n = tb.get(t).copied().unwrap_or(0);
            // The actor's own blocking wait on that thread does not pin it.
            let own = a
                .waits
                .iter()
                .filter(|(pi, wi)| {
                    let w = &prims[*pi].waiters[*wi];
                    w.actor == me && w.blocks_thread == Some(*t)
                })
                .count();
            n > own
        }) || a.needs.is_some_and(|rt| exec.all_blocked(rt, tb))
    };
    let can_go = |a: &Actor, me: u64, tb: &HashMap<u64, usize>| {
        !a.free && (a.waits.is_empty() || a.escapes || a.granted) && !pinned_blocked(a, me, tb)
    };

    let mut work: Vec<u64> = actors
        .iter()
        .filter(|(id, a)| can_go(a, **id, &thread_blockers))
        .map(|(id, _)| *id)
        .collect();
    let mut to_release: Vec<u64> = Vec::new();
    let mut dirty: Vec<usize> = (0..prims.len()).collect();
    // Per primitive, where its pending waiters start (see `unserved`).
    let mut heads = vec![0usize; prims.len()];
    loop {
        // Phase 1: actors that may go on stop waiting (and unblock their threads).
        while let Some(id) = work.pop() {
            let Some(a) = actors.get_mut(&id) else {
                continue;
            };
            if a.free {
                continue;
            }
            a.free = true;
            to_release.push(id);
            let waits = std::mem::take(&mut a.waits);
            let mut unblocked = Vec::new();
            for (pi, wi) in waits {
                pending[pi][wi] = None;
                dirty.push(pi);
                if let Some(t) = prims[pi].waiters[wi].blocks_thread
                    && let Some(n) = thread_blockers.get_mut(&t)
                {
                    *n -= 1;
                    if *n == 0 {
                        unblocked.push(t);
                    }
                }
            }
            // The thread runs again: tasks pinned to it (or to its runtime) may go on.
            for t in unblocked {
                for (&other, oa) in actors.iter() {
                    if runs_on(oa, t, exec) && can_go(oa, other, &thread_blockers) {
                        work.push(other);
                    }
                }
            }
        }
        // Grants, with everything still held.
        if !dirty.is_empty() {
            dirty.sort_unstable();
            dirty.dedup();
            let round = std::mem::take(&mut dirty);
            for pi in round {
                // Grant one at a time: each grant changes what the next may get.
                while let Some(wi) = grantable(
                    &prims[pi],
                    &live[pi],
                    unserved(&pending[pi], &mut heads[pi]),
                ) {
                    let w = &prims[pi].waiters[wi];
                    let actor = w.actor;
                    pending[pi][wi] = None;
                    let Some(a) = actors.get_mut(&actor) else {
                        break;
                    };
                    // Judged before the wait leaves: its own blocking wait does not pin it.
                    let blocked = pinned_blocked(a, actor, &thread_blockers);
                    a.waits.retain(|&(p, q)| !(p == pi && q == wi));
                    if let Some(t) = w.blocks_thread
                        && let Some(n) = thread_blockers.get_mut(&t)
                    {
                        // A blocking wait granted: its thread runs again.
                        *n -= 1;
                        if *n == 0 {
                            for (&other, oa) in actors.iter() {
                                if runs_on(oa, t, exec) && can_go(oa, other, &thread_blockers) {
                                    work.push(other);
                                }
                            }
                        }
                    }
                    let Some(a) = actors.get_mut(&actor) else {
                        break;
                    };
                    if blocked && w.blocks_thread.is_none() {
                        // Granted, but the task cannot run to use or release it.
                        a.holds.push((pi, live[pi].len()));
                        a.granted = true;
                        live[pi].push(Some((actor, w.permits, w.mode)));
                    } else {
                        if !a.free {
                            work.push(actor);
                        }
                        // The grantee goes on: look at this primitive again after it.
                        dirty.push(pi);
                        break;
                    }
                }
            }
            if !work.is_empty() {
                continue;
            }
        }
        // Phase 2: once grants run dry, the freed actors release what they held.
        if to_release.is_empty() {
            break;
        }
        for id in std::mem::take(&mut to_release) {
            if let Some(a) = actors.get_mut(&id)
                && !a.released
            {
                a.released = true;
                for &(pi, hi) in &a.holds {
                    live[pi][hi] = None;
                    dirty.push(pi);
                }
            }
        }
    }
    let blocked: BTreeSet<u64> = actors
        .iter()
        .filter(|(_, a)| {
            !a.free && (!a.waits.is_empty() || !a.pinned.is_empty() || a.needs.is_some())
        })
        .map(|(&id, _)| id)
        .collect();
    if blocked.is_empty() {
        return Reduction::default();
    }
    // Why each stays blocked, read off the fixed point. The threads blocked now, by whom.
    let mut blocking: HashMap<u64, Vec<u64>> = HashMap::new();
    for (pi, q) in pending.iter().enumerate() {
        for &wi in q.iter().flatten() {
            let w = &prims[pi].waiters[wi];
            if let Some(t) = w.blocks_thread {
                blocking.entry(t).or_default().push(w.actor);
            }
        }
    }
    let mut blocked_by = BTreeMap::new();
    for &id in &blocked {
        let a = &actors[&id];
        let mut by: Vec<u64> = Vec::new();
        for &(pi, wi) in &a.waits {
            by.extend(wait_blockers(&prims[pi], &live[pi], &pending[pi], wi));
        }
        // The threads it can only run on, and its runtime's workers, if someone else's
        // blocking wait holds them (its own does not pin it).
        let threads = a.pinned.iter().copied().chain(
            a.needs
                .filter(|rt| exec.all_blocked(*rt, &thread_blockers))
                .into_iter()
                .flat_map(|rt| {
                    exec.workers
                        .iter()
                        .filter(move |(_, r)| **r == rt)
                        .map(|(t, _)| *t)
                }),
        );
        for t in threads {
            by.extend(blocking.get(&t).into_iter().flatten().filter(|&&b| b != id));
        }
        by.sort_unstable();
        by.dedup();
        blocked_by.insert(id, by);
    }
    Reduction {
        blocked,
        blocked_by,
    }
}

/// Who keeps pending wait `wi` of `p` from being granted at the fixed point: its live
/// holders when they alone would stop it, else the first other pending waiter that does
/// (with it queued in its place, neither would be granted).
///
/// For a FIFO queue that is its head, found first; a parking_lot rwlock may walk the readers
/// queued ahead to its claiming writer, each of them a thread blocked in that queue.
fn wait_blockers(
    p: &MPrim,
    live: &[Option<(u64, u32, Mode)>],
    pending: &[Option<usize>],
    wi: usize,
) -> Vec<u64> {
    if grantable(p, live, &[Some(wi)]).is_none() {
        return live.iter().flatten().map(|h| h.0).collect();
    }
    pending
        .iter()
        .flatten()
        .copied()
        .filter(|&other| other != wi)
        .find(|&other| {
            // mutants: `<` -> `<=` is equivalent: `other` is never `wi` (filtered above).
            let pair = if other < wi {
                [Some(other), Some(wi)]
            } else {
                [Some(wi), Some(other)]
            };
            grantable(p, live, &pair).is_none()
        })
        .map(|other| p.waiters[other].actor)
        .into_iter()
        .collect()
}

/// Whether actor `a` can run on thread `t` once it runs again: pinned to it, or needing a
/// worker of the runtime `t` serves.
///
/// mutants: `-> true` and `&&` -> `||` are equivalent. This only picks which actors to look
/// at again when `t` runs again, and each is still let go only if `can_go` (so a wider pick
/// frees no one more); `can_go` turns true for an actor only when it is granted (handled where
/// the grant is) or when a thread it is pinned to or whose runtime it needs runs again, which
/// this exact pick already covers.
fn runs_on(a: &Actor, t: u64, exec: &Executor) -> bool {
    a.pinned.contains(&t) || a.needs.is_some() && a.needs == exec.workers.get(&t).copied()
}

/// The next waiter of one primitive that would be granted now, if any.
/// The pending waiters of a queue from its first unserved one on: a waiter only ever leaves
/// `pending`, so `head` only moves forward, and a queue of a million waiters granted one by
/// one is walked once, not once per grant (which made a tick quadratic in the waiters).
fn unserved<'a>(pending: &'a [Option<usize>], head: &mut usize) -> &'a [Option<usize>] {
    while pending.get(*head).is_some_and(Option::is_none) {
        *head += 1;
    }
    &pending[*head..]
}

fn grantable(
    p: &MPrim,
    live: &[Option<(u64, u32, Mode)>],
    pending: &[Option<usize>],
) -> Option<usize> {
    let head = pending.iter().flatten().next().copied();
    match p.policy {
        Policy::Fifo => {
            // Strict FIFO: only the head can be granted; it blocks everyone behind it. A head
            // asking for more permits than exist can only be granted by a future
            // `add_permits` the model cannot foresee: count it as grantable (no deadlock
            // claim; the stuck-queue rule reports it if it never happens).
            let held: u64 = live.iter().flatten().map(|h| u64::from(h.1)).sum();
            let avail = p.capacity.saturating_sub(held);
            head.filter(|wi| {
                let want = u64::from(p.waiters[*wi].permits);
                want <= avail || want > p.capacity
            })
        }
        Policy::Exclusive | Policy::Join => head.filter(|_| live.iter().flatten().next().is_none()),
        Policy::FairRwLock => {
            let holders: Vec<&(u64, u32, Mode)> = live.iter().flatten().collect();
            let writer = holders.iter().any(|h| h.2 == Mode::Exclusive);
            let upgradable = holders
                .iter()
                .find(|h| h.2 == Mode::Upgradable)
                .map(|h| h.0);
            let readers = holders
                .iter()
                .filter(|h| matches!(h.2, Mode::Shared | Mode::SharedRecursive))
                .count();
            // A waiting writer (or upgrader) claims the lock (parking_lot's WRITER_BIT)
            // unless another actor holds an upgradable read; from then on plain and
            // upgradable reads queue behind it.
            let claimed = !writer
                && pending.iter().flatten().any(|wi| {
                    let w = &p.waiters[*wi];
                    w.mode == Mode::Exclusive
                        && (upgradable.is_none() || upgradable == Some(w.actor))
                });
            pending.iter().flatten().copied().find(|wi| {
                let w = &p.waiters[*wi];
                match w.mode {
                    // A plain write needs the lock empty; an upgrade needs only its own
                    // upgradable hold left.
                    Mode::Exclusive => {
                        !writer
                            && readers == 0
                            && (upgradable.is_none() || upgradable == Some(w.actor))
                    }
                    Mode::Upgradable => !writer && upgradable.is_none() && !claimed,
                    Mode::SharedRecursive => !writer && (readers > 0 || !claimed),
                    Mode::Shared | Mode::Permits => !writer && !claimed,
                }
            })
        }
    }
}

#[cfg(test)]
mod tests;
