//! Joins in progress: a task awaiting a `JoinHandle`, a thread in `join()`. Each waits for
//! exactly one task or thread to end (or, for a `JoinSet`, for any one of its tasks).
//!
//! These are not primitives: nothing is registered when a task or thread is spawned, so a
//! spawn costs the books nothing, and a join that never has to wait (the task had already
//! ended) is never recorded. Only a join that waits takes a record here, removed when the
//! join returns or its future is dropped. Primitive-centred rules, metrics and `/debug/locks`
//! never see them; the deadlock rule reads them as precise wait-for edges from the joiner to
//! the joined actor.

use std::collections::HashMap;
use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::state::actor::ActorId;
use crate::state::wait_table::{Book, WaitTable};

/// A spawned thread's actor, published by the thread itself when it starts (it gets its
/// lockscope number then); 0 until it has started.
#[derive(Debug, Default)]
pub struct Started {
    actor: AtomicU64,
}

impl Started {
    /// Nothing published yet.
    pub const fn new() -> Started {
        Started {
            actor: AtomicU64::new(0),
        }
    }

    /// Called on the spawned thread, first thing: publishes its actor.
    pub fn here(&self) {
        let me = crate::state::actor::current().as_u64();
        // Release: pairs with the Acquire in `actor`, so a reader that sees the id sees the
        // thread's number assigned (and its name recorded) before it.
        self.actor.store(me, Ordering::Release);
    }

    /// The thread's actor, once it has started.
    pub fn actor(&self) -> Option<ActorId> {
        ActorId::from_u64(self.actor.load(Ordering::Acquire))
    }
}

/// The tasks of one `JoinSet` (raw actor id -> spawn site), or the threads of one
/// `thread::scope` still running at its end, kept by the wrapper and read by the analysis
/// when someone waits on the set.
#[derive(Debug)]
pub struct SetMembers {
    members: Mutex<HashMap<u64, &'static Location<'static>>>,
    /// What the set is, for reports: `JoinSet`, `thread::scope`.
    label: &'static str,
}

impl Default for SetMembers {
    /// An empty `JoinSet`'s members.
    fn default() -> SetMembers {
        SetMembers::named("JoinSet")
    }
}

impl SetMembers {
    /// An empty set, called `label` in reports (`JoinSet`, `thread::scope`).
    pub fn named(label: &'static str) -> SetMembers {
        SetMembers {
            members: Mutex::default(),
            label,
        }
    }

    /// A task joined the set.
    pub fn add(&self, actor: ActorId, spawned_at: &'static Location<'static>) {
        self.members.lock().insert(actor.as_u64(), spawned_at);
    }

    /// A task left the set (joined, or detached with the rest).
    pub fn remove(&self, actor: ActorId) {
        self.members.lock().remove(&actor.as_u64());
    }

    /// Every task leaves the set.
    pub fn clear(&self) {
        self.members.lock().clear();
    }

    fn snapshot(&self) -> Vec<(ActorId, &'static Location<'static>)> {
        let mut v: Vec<_> = self
            .members
            .lock()
            .iter()
            .filter_map(|(a, s)| ActorId::from_u64(*a).map(|a| (a, *s)))
            .collect();
        v.sort_by_key(|(a, _)| *a);
        v
    }
}

/// Who can end a join.
#[derive(Clone, Debug)]
pub enum JoinTarget {
    /// One task, whose id is known from its handle.
    Task(ActorId),
    /// One thread, whose actor it publishes when it starts.
    Thread(Arc<Started>),
    /// Any task of a `JoinSet`.
    AnyOf(Arc<SetMembers>),
}

/// A join in progress as the books keep it.
#[derive(Clone, Debug)]
struct JoinRec {
    waiter: ActorId,
    thread: u64,
    blocking: bool,
    target: JoinTarget,
    spawned_at: &'static Location<'static>,
    site: &'static Location<'static>,
    since_ns: u64,
    scope: u32,
}

/// One join in progress, as the analysis reads it.
#[derive(Clone, Debug)]
pub struct JoinView {
    /// Its number (never reused): identifies the wait across snapshots.
    pub seq: u64,
    /// Who waits.
    pub waiter: ActorId,
    /// lockscope number of the thread the join was begun on.
    pub thread: u64,
    /// The join blocks that thread (a thread's `join()`), rather than a task.
    pub blocking: bool,
    /// Who can end it, each with its spawn site: one task or thread, or any task of a set.
    /// Empty when that is not known yet (a thread that has not started): then the join is
    /// assumed to end.
    pub targets: Vec<(ActorId, &'static Location<'static>)>,
    /// The wait is for any one of `targets`, the members of this set (`JoinSet`,
    /// `thread::scope`), not for a single handle.
    pub set: Option<&'static str>,
    /// Where the join was called (a thread's `join()`), or the spawn site when the call site
    /// is not known (an `.await` gives a future no caller location).
    pub site: &'static Location<'static>,
    /// When it began (ns): the published clock (see `runtime::hooks::join_begin`), behind
    /// the real start by up to a publish period.
    pub since_ns: u64,
    /// Test scope of the joining thread.
    pub scope: u32,
}

static JOINS: WaitTable<JoinRec> = WaitTable::new();

/// What a join was: whom it waited for and where it was spawned, kept for
/// [`begin`]'s caller.
pub struct NewJoin {
    /// Who waits.
    pub waiter: ActorId,
    /// lockscope number of the joining thread.
    pub thread: u64,
    /// The join blocks the thread.
    pub blocking: bool,
    /// Who can end it.
    pub target: JoinTarget,
    /// Where the joined task or thread was spawned.
    pub spawned_at: &'static Location<'static>,
    /// Where the join was called (or the spawn site, see [`JoinView::site`]).
    pub site: &'static Location<'static>,
    /// When it began (ns, see [`JoinView::since_ns`]).
    pub since_ns: u64,
    /// Test scope of the joining thread.
    pub scope: u32,
}

/// Records a join that has to wait; returns its number, for [`end`].
pub fn begin(j: NewJoin) -> u64 {
    JOINS.insert(JoinRec {
        waiter: j.waiter,
        thread: j.thread,
        blocking: j.blocking,
        target: j.target,
        spawned_at: j.spawned_at,
        site: j.site,
        since_ns: j.since_ns,
        scope: j.scope,
    })
}

/// The books of joins, for the wait handle `hooks::JoinWait`.
#[derive(Debug)]
pub enum Joins {}

impl Book for Joins {
    /// The join numbered `seq` returned, or its future was dropped.
    fn end(seq: u64) {
        JOINS.remove(seq);
    }
}

/// Every join in progress, by number.
pub fn snapshot() -> Vec<JoinView> {
    let mut out = Vec::new();
    for (seq, r) in JOINS.snapshot() {
        {
            let (targets, set) = match &r.target {
                JoinTarget::Task(a) => (vec![(*a, r.spawned_at)], None),
                JoinTarget::Thread(s) => (
                    s.actor().map(|a| (a, r.spawned_at)).into_iter().collect(),
                    None,
                ),
                JoinTarget::AnyOf(set) => (set.snapshot(), Some(set.label)),
            };
            out.push(JoinView {
                seq,
                waiter: r.waiter,
                thread: r.thread,
                blocking: r.blocking,
                targets,
                set,
                site: r.site,
                since_ns: r.since_ns,
                scope: r.scope,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_join_is_listed_until_it_ends_and_a_thread_is_known_once_started() {
        let started = Arc::new(Started::new());
        let seq = begin(NewJoin {
            waiter: ActorId::from_thread_seq(900_900),
            thread: 900_900,
            blocking: true,
            target: JoinTarget::Thread(started.clone()),
            spawned_at: Location::caller(),
            site: Location::caller(),
            since_ns: 1,
            scope: 0,
        });
        let find = || snapshot().into_iter().find(|j| j.seq == seq);
        assert!(find().expect("listed").targets.is_empty(), "not started");
        let me = crate::state::actor::current();
        started.here();
        assert_eq!(find().expect("listed").targets[0].0, me);
        Joins::end(seq);
        assert!(find().is_none());
    }
}
