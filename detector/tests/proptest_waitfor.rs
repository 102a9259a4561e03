//! Property tests of the wait-for graph reduction, `graph::waitfor::reduce` (issue 3,
//! "Property tests").
//!
//! `reduce` is compared with an oracle written from the primitives' semantics alone, without
//! looking at how `reduce` works: an exhaustive search over every order in which the actors of
//! a small state can be granted, give up, or finish and release what they hold. An actor is
//! deadlocked iff it finishes in no reachable state. The grant rules the oracle follows:
//!
//! | primitive | a waiter can be granted when |
//! |---|---|
//! | tokio Mutex, RwLock, Semaphore (batch semaphore) | it is the first waiter still queued, the semaphore is open, and `capacity - held >= permits` (a write is all `max_readers` permits) |
//! | parking_lot Mutex | nobody holds it (no queue order) |
//! | parking_lot RwLock, write | nobody else holds it (an upgrade: only its own upgradable read) |
//! | parking_lot RwLock, read / upgradable read | no writer holds it, and no waiting writer owns `WRITER_BIT` (and, upgradable, no other upgradable holder) |
//! | parking_lot RwLock, `read_recursive` | no writer holds it, and if a waiting writer owns `WRITER_BIT`, readers still hold it |
//!
//! parking_lot's rwlock is task-fair: a waiting writer takes `WRITER_BIT` as soon as no
//! writer and no other upgradable reader holds the lock, and from then on readers park behind
//! it (an unlock wakes parked readers only up to the first parked writer). So the oracle lets
//! any waiting writer own `WRITER_BIT` whenever no upgradable read of another actor prevents
//! it; an upgrading reader trades its upgradable read for it.
//!
//! Events, in any order: a grantable waiter is granted (it now holds, and runs); an actor
//! that runs finishes and releases everything, dropping its other waits (`select!`); a timed
//! wait gives up and a wait on a closed semaphore fails, and the actor runs on. Holds of owned
//! guards (movable) are released by whoever has them. A task pinned to a current-thread
//! runtime's thread (it holds a blocking guard there) can do none of this while another actor
//! blocks that thread waiting for a parking_lot lock: not even give up or drop its queued
//! waits, which stay in their queues.
//!
//! States are generated consistent with what the real primitives could show: holds within
//! capacity and compatible with each other, every waiter unable to be granted now (a
//! queue's head lacks permits), one blocking wait per thread, a thread actor waits for one
//! primitive, a task for one parking_lot lock or up to two tokio primitives (`select!`).
//! They keep to what the model can know: it learns that a task is pinned to a current-thread
//! runtime's thread only from the blocking guards the task holds there, so a thread is
//! blocked only when every other actor living on it holds one. The regression tests at the
//! end are the disagreements this property found (each fixed in `reduce`).
//!
//! The seed is fixed so that CI is deterministic; explore more with `PROPTEST_RNG_SEED=<n>`
//! and `PROPTEST_CASES=<n>`.

use std::collections::{BTreeSet, HashSet};
use std::fmt;

use lockscope_detector::__private::graph::waitfor::{MHold, MPrim, MWait, Policy, reduce};
use lockscope_detector::__private::held::Mode;
use proptest::prelude::*;
use proptest::sample::Index;

#[path = "common/proptest_config.rs"]
mod proptest_config;

// ---------------------------------------------------------------------------------------------
// States
// ---------------------------------------------------------------------------------------------

/// Who an actor is: it decides which thread its blocking waits block and whether its blocking
/// guards pin it to a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Who {
    /// A task of a multi-thread runtime.
    Task,
    /// A plain thread.
    Thread,
    /// A task of current-thread runtime `r` (its thread is thread `r`).
    CtTask(u8),
    /// The thread running current-thread runtime `r`'s `block_on`.
    Driver(u8),
}

impl Who {
    /// The OS thread blocked when actor number `index` waits for a parking_lot lock.
    fn thread(self, index: usize) -> u64 {
        match self {
            Who::CtTask(r) | Who::Driver(r) => u64::from(r),
            Who::Thread => 100 + index as u64,
            Who::Task => 200 + index as u64,
        }
    }
}

/// A primitive kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `tokio::sync::Mutex`.
    Mutex,
    /// `tokio::sync::RwLock::with_max_readers(n)`.
    RwLock(u32),
    /// `tokio::sync::Semaphore::new(n)`.
    Semaphore(u32),
    /// `parking_lot::Mutex`.
    PlMutex,
    /// `parking_lot::RwLock`.
    PlRwLock,
}

impl Kind {
    fn blocking(self) -> bool {
        matches!(self, Kind::PlMutex | Kind::PlRwLock)
    }

    /// Permits in existence, as the detector records them.
    fn capacity(self) -> u64 {
        match self {
            Kind::Mutex | Kind::PlMutex => 1,
            Kind::RwLock(n) | Kind::Semaphore(n) => u64::from(n),
            Kind::PlRwLock => (usize::MAX >> 5) as u64,
        }
    }
}

/// An access, in the oracle's own words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Acc {
    /// Mutex lock, rwlock write.
    Lock,
    /// Rwlock read.
    Read,
    /// Semaphore permits.
    Permits,
    /// parking_lot upgradable read.
    Upgradable,
    /// parking_lot `read_recursive`.
    ReadRecursive,
}

impl Acc {
    fn mode(self) -> Mode {
        match self {
            Acc::Lock => Mode::Exclusive,
            Acc::Read => Mode::Shared,
            Acc::Permits => Mode::Permits,
            Acc::Upgradable => Mode::Upgradable,
            Acc::ReadRecursive => Mode::SharedRecursive,
        }
    }

    fn is_reader(self) -> bool {
        matches!(self, Acc::Read | Acc::ReadRecursive | Acc::Upgradable)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Hold {
    actor: usize,
    permits: u32,
    acc: Acc,
    /// An owned guard or permit: whoever has it now will release it.
    movable: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Wait {
    actor: usize,
    permits: u32,
    acc: Acc,
    timed: bool,
}

#[derive(Clone, PartialEq, Eq)]
struct PrimDef {
    kind: Kind,
    closed: bool,
    holds: Vec<Hold>,
    /// In queue order.
    waits: Vec<Wait>,
}

#[derive(Clone, PartialEq, Eq)]
struct Scenario {
    actors: Vec<Who>,
    prims: Vec<PrimDef>,
}

impl Scenario {
    /// Threads a hold of actor `a` pins it to (the model's `pinned_thread`).
    fn pinned_thread(&self, p: usize, a: usize) -> Option<u64> {
        match self.actors[a] {
            Who::CtTask(r) if self.prims[p].kind.blocking() => Some(u64::from(r)),
            _ => None,
        }
    }

    /// The thread a wait blocks (the model's `blocks_thread`).
    fn blocks_thread(&self, p: usize, a: usize) -> Option<u64> {
        self.prims[p]
            .kind
            .blocking()
            .then(|| self.actors[a].thread(a))
    }

    fn holds_blocking(&self, a: usize) -> bool {
        self.prims
            .iter()
            .any(|p| p.kind.blocking() && p.holds.iter().any(|h| h.actor == a))
    }
}

// A counterexample must read at a glance: one line per actor kind and per primitive.
impl fmt::Debug for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f)?;
        for (i, w) in self.actors.iter().enumerate() {
            let what = match w {
                Who::Task => "task".to_string(),
                Who::Thread => "thread".to_string(),
                Who::CtTask(r) => format!("task on current-thread runtime of thread {r}"),
                Who::Driver(r) => format!("thread {r}, running its runtime's block_on"),
            };
            writeln!(f, "  a{i}: {what}")?;
        }
        for (i, p) in self.prims.iter().enumerate() {
            let kind = match p.kind {
                Kind::Mutex => "tokio Mutex".to_string(),
                Kind::RwLock(n) => format!("tokio RwLock (max_readers {n})"),
                Kind::Semaphore(n) => format!("tokio Semaphore ({n} permits)"),
                Kind::PlMutex => "parking_lot Mutex".to_string(),
                Kind::PlRwLock => "parking_lot RwLock".to_string(),
            };
            let closed = if p.closed { ", closed" } else { "" };
            let access = |acc: Acc, permits: u32| match acc {
                Acc::Lock if matches!(p.kind, Kind::RwLock(_) | Kind::PlRwLock) => {
                    "write".to_string()
                }
                Acc::Lock => "lock".to_string(),
                Acc::Read => "read".to_string(),
                Acc::Permits => format!("{permits} permit(s)"),
                Acc::Upgradable => "upgradable read".to_string(),
                Acc::ReadRecursive => "read_recursive".to_string(),
            };
            let holds: Vec<String> = p
                .holds
                .iter()
                .map(|h| {
                    let owned = if h.movable { " (owned guard)" } else { "" };
                    format!("a{} {}{owned}", h.actor, access(h.acc, h.permits))
                })
                .collect();
            let waits: Vec<String> = p
                .waits
                .iter()
                .map(|w| {
                    let timed = if w.timed { " (timed)" } else { "" };
                    format!("a{} {}{timed}", w.actor, access(w.acc, w.permits))
                })
                .collect();
            writeln!(
                f,
                "  p{i}: {kind}{closed}; held by [{}]; waiting [{}]",
                holds.join(", "),
                waits.join(", ")
            )?;
        }
        Ok(())
    }
}

/// Actor number `a` as the model sees it.
fn actor_id(a: usize) -> u64 {
    a as u64 + 1
}

/// The model `reduce` takes (what `rules::deadlock::model` builds from a live state).
fn to_model(s: &Scenario) -> Vec<MPrim> {
    s.prims
        .iter()
        .enumerate()
        .map(|(p, d)| MPrim {
            id: p as u64 + 1,
            policy: match d.kind {
                Kind::Mutex | Kind::RwLock(_) | Kind::Semaphore(_) => Policy::Fifo,
                Kind::PlMutex => Policy::Exclusive,
                Kind::PlRwLock => Policy::FairRwLock,
            },
            capacity: d.kind.capacity(),
            closed: d.closed,
            holds: d
                .holds
                .iter()
                .map(|h| MHold {
                    actor: actor_id(h.actor),
                    permits: h.permits,
                    mode: h.acc.mode(),
                    movable: h.movable,
                    pinned_thread: s.pinned_thread(p, h.actor),
                })
                .collect(),
            waiters: d
                .waits
                .iter()
                .map(|w| MWait {
                    actor: actor_id(w.actor),
                    permits: w.permits,
                    mode: w.acc.mode(),
                    timed: w.timed,
                    blocks_thread: s.blocks_thread(p, w.actor),
                })
                .collect(),
        })
        .collect()
}

/// `reduce`'s answer, as actor numbers.
fn reduced(s: &Scenario) -> BTreeSet<usize> {
    reduce(&to_model(s))
        .blocked
        .into_iter()
        .map(|id| id as usize - 1)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The oracle
// ---------------------------------------------------------------------------------------------

/// Grant rule of one primitive: can waiter `wi` of `d` be granted, given what is held now and
/// which waiters are still queued (in order)?
fn can_grant(d: &PrimDef, holds: &[(usize, u32, Acc)], queued: &[usize], wi: usize) -> bool {
    let w = d.waits[wi];
    match d.kind {
        Kind::Mutex | Kind::RwLock(_) | Kind::Semaphore(_) => {
            // tokio's batch semaphore: strictly first come, first served; closed grants nothing.
            let held: u64 = holds.iter().map(|h| u64::from(h.1)).sum();
            !d.closed
                && queued.first() == Some(&wi)
                && d.kind.capacity().saturating_sub(held) >= u64::from(w.permits)
        }
        Kind::PlMutex => holds.is_empty(),
        Kind::PlRwLock => {
            let writer_holds = holds.iter().any(|h| h.2 == Acc::Lock);
            // A queued writer owns WRITER_BIT unless another actor's upgradable read is in.
            let claimer = queued
                .iter()
                .map(|&q| d.waits[q])
                .filter(|q| q.acc == Acc::Lock)
                .map(|q| q.actor)
                .find(|&c| !holds.iter().any(|h| h.2 == Acc::Upgradable && h.0 != c));
            match w.acc {
                // An upgrade keeps its own upgradable read; anything else in the way blocks it.
                Acc::Lock => holds
                    .iter()
                    .all(|h| h.0 == w.actor && h.2 == Acc::Upgradable),
                Acc::Upgradable => {
                    !writer_holds
                        && claimer.is_none()
                        && !holds.iter().any(|h| h.2 == Acc::Upgradable)
                }
                Acc::Read => !writer_holds && claimer.is_none(),
                Acc::ReadRecursive => {
                    // Readers still in, not counting an upgrading reader's upgradable read
                    // (upgrading trades it for WRITER_BIT).
                    let upgrading = |a: usize| {
                        queued
                            .iter()
                            .any(|&q| d.waits[q].actor == a && d.waits[q].acc == Acc::Lock)
                    };
                    let readers = holds
                        .iter()
                        .filter(|h| h.2.is_reader() && !(h.2 == Acc::Upgradable && upgrading(h.0)))
                        .count();
                    !writer_holds && (claimer.is_none() || readers > 0)
                }
                Acc::Permits => unreachable!("a parking_lot RwLock has no permit waits"),
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Status {
    /// Waits, granted nothing yet.
    Waiting,
    /// Granted (or never waited, or gave up): will finish once it can run.
    Running,
    /// Finished, released everything.
    Done,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct St {
    /// Per primitive: (actor, permits, access).
    holds: Vec<Vec<(usize, u32, Acc)>>,
    /// Per primitive: indices of the waits still queued, in order.
    queued: Vec<Vec<usize>>,
    status: Vec<Status>,
}

struct Oracle<'a> {
    s: &'a Scenario,
    /// Per actor: threads it is pinned to.
    pinned: Vec<Vec<u64>>,
}

impl<'a> Oracle<'a> {
    fn new(s: &'a Scenario) -> Oracle<'a> {
        let mut pinned = vec![Vec::new(); s.actors.len()];
        for (p, d) in s.prims.iter().enumerate() {
            for h in &d.holds {
                if let Some(t) = s.pinned_thread(p, h.actor) {
                    pinned[h.actor].push(t);
                }
            }
        }
        Oracle { s, pinned }
    }

    /// Whether actor `a` can run: no other actor blocks a thread it is pinned to.
    fn can_run(&self, st: &St, a: usize) -> bool {
        self.pinned[a].iter().all(|&t| {
            st.queued.iter().enumerate().all(|(p, q)| {
                q.iter().all(|&wi| {
                    let w = self.s.prims[p].waits[wi];
                    w.actor == a || self.s.blocks_thread(p, w.actor) != Some(t)
                })
            })
        })
    }

    fn successors(&self, st: &St) -> Vec<St> {
        let mut out = Vec::new();
        for a in 0..self.s.actors.len() {
            if st.status[a] == Status::Done || !self.can_run(st, a) {
                continue;
            }
            if st.status[a] == Status::Running {
                // Finish: release everything, drop the waits still queued, leave WRITER_BIT.
                let mut n = st.clone();
                for h in &mut n.holds {
                    h.retain(|h| h.0 != a);
                }
                for (p, q) in n.queued.iter_mut().enumerate() {
                    q.retain(|&wi| self.s.prims[p].waits[wi].actor != a);
                }
                n.status[a] = Status::Done;
                out.push(n);
                continue;
            }
            // Waiting: a timed wait gives up, a wait on a closed semaphore fails.
            for (p, q) in st.queued.iter().enumerate() {
                for (pos, &wi) in q.iter().enumerate() {
                    let w = self.s.prims[p].waits[wi];
                    if w.actor == a && (w.timed || self.s.prims[p].closed) {
                        let mut n = st.clone();
                        n.queued[p].remove(pos);
                        n.status[a] = Status::Running;
                        out.push(n);
                    }
                }
            }
        }
        // Grants. A task granted one branch of a `select!` keeps its other waits queued until
        // it runs, and those may be granted too.
        for (p, d) in self.s.prims.iter().enumerate() {
            for (pos, &wi) in st.queued[p].iter().enumerate() {
                if can_grant(d, &st.holds[p], &st.queued[p], wi) {
                    let w = d.waits[wi];
                    let mut n = st.clone();
                    n.queued[p].remove(pos);
                    n.holds[p].push((w.actor, w.permits, w.acc));
                    if n.status[w.actor] == Status::Waiting {
                        n.status[w.actor] = Status::Running;
                    }
                    out.push(n);
                }
            }
        }
        out
    }

    /// Actors that finish in no reachable state.
    fn deadlocked(&self) -> BTreeSet<usize> {
        let s = self.s;
        let n = s.actors.len();
        let init = St {
            // Owned guards may be anywhere: whoever has them releases them.
            holds: s
                .prims
                .iter()
                .map(|d| {
                    d.holds
                        .iter()
                        .filter(|h| !h.movable)
                        .map(|h| (h.actor, h.permits, h.acc))
                        .collect()
                })
                .collect(),
            queued: s
                .prims
                .iter()
                .map(|d| (0..d.waits.len()).collect())
                .collect(),
            status: (0..n)
                .map(|a| {
                    if s.prims.iter().any(|d| d.waits.iter().any(|w| w.actor == a)) {
                        Status::Waiting
                    } else {
                        Status::Running
                    }
                })
                .collect(),
        };
        let mut done = vec![false; n];
        let mut seen = HashSet::from([init.clone()]);
        let mut stack = vec![init];
        while let Some(st) = stack.pop() {
            for (d, status) in done.iter_mut().zip(&st.status) {
                *d |= *status == Status::Done;
            }
            if done.iter().all(|d| *d) {
                break;
            }
            for next in self.successors(&st) {
                if seen.insert(next.clone()) {
                    stack.push(next);
                }
            }
            assert!(seen.len() < 2_000_000, "state space too large: {s:?}");
        }
        (0..n).filter(|&a| !done[a]).collect()
    }
}

fn oracle(s: &Scenario) -> BTreeSet<usize> {
    Oracle::new(s).deadlocked()
}

// ---------------------------------------------------------------------------------------------
// Generation: raw choices, then made consistent
// ---------------------------------------------------------------------------------------------

/// (actor, primitive, amount 1..=4, access selector, owned/timed, for a wait: choose the
/// primitive among those held)
type Raw = (Index, Index, u32, u8, bool, bool);

fn who() -> impl Strategy<Value = Who> {
    prop_oneof![
        3 => Just(Who::Task),
        2 => Just(Who::Thread),
        3 => (0u8..2).prop_map(Who::CtTask),
        1 => (0u8..2).prop_map(Who::Driver),
    ]
}

fn kind() -> impl Strategy<Value = (Kind, bool)> {
    prop_oneof![
        2 => Just((Kind::Mutex, false)),
        1 => (2u32..=3).prop_map(|n| (Kind::RwLock(n), false)),
        2 => (1u32..=4, prop::bool::weighted(0.1)).prop_map(|(n, c)| (Kind::Semaphore(n), c)),
        2 => Just((Kind::PlMutex, false)),
        3 => Just((Kind::PlRwLock, false)),
    ]
}

fn raw(flag: f64) -> impl Strategy<Value = Raw> {
    (
        any::<Index>(),
        any::<Index>(),
        1u32..=4,
        0u8..4,
        prop::bool::weighted(flag),
        prop::bool::weighted(0.8),
    )
}

fn scenario(actors: usize, prims: usize, events: usize) -> impl Strategy<Value = Scenario> {
    (
        prop::collection::vec(who(), 1..=actors),
        prop::collection::vec(kind(), 1..=prims),
        prop::collection::vec(raw(0.15), 1..=events),
        prop::collection::vec(raw(0.15), 1..=events),
    )
        .prop_map(|(w, k, h, q)| build(w, k, &h, &q))
}

/// Access and permits selected by `sel`/`n` for primitive kind `k`.
fn access(k: Kind, n: u32, sel: u8) -> (Acc, u32) {
    match k {
        Kind::Mutex | Kind::PlMutex => (Acc::Lock, 1),
        Kind::RwLock(max) => {
            if sel.is_multiple_of(2) {
                (Acc::Read, 1)
            } else {
                (Acc::Lock, max)
            }
        }
        Kind::Semaphore(cap) => (Acc::Permits, 1 + (n - 1) % cap),
        Kind::PlRwLock => match sel {
            0 => (Acc::Read, 1),
            1 => (Acc::ReadRecursive, 1),
            2 => (Acc::Upgradable, 1),
            _ => (Acc::Lock, 1),
        },
    }
}

fn build(mut actors: Vec<Who>, kinds: Vec<(Kind, bool)>, holds: &[Raw], waits: &[Raw]) -> Scenario {
    // One block_on driver per runtime.
    let mut drivers = HashSet::new();
    for w in &mut actors {
        if let Who::Driver(r) = *w
            && !drivers.insert(r)
        {
            *w = Who::Thread;
        }
    }
    let mut s = Scenario {
        actors,
        prims: kinds
            .into_iter()
            .map(|(kind, closed)| PrimDef {
                kind,
                closed,
                holds: Vec::new(),
                waits: Vec::new(),
            })
            .collect(),
    };
    // Holds: within capacity, compatible with each other.
    for &(a, p, n, sel, owned, _) in holds {
        let a = a.index(s.actors.len());
        let d = p.get_mut(&mut s.prims);
        let (acc, permits) = access(d.kind, n, sel);
        let held: u64 = d.holds.iter().map(|h| u64::from(h.permits)).sum();
        let ok = match d.kind {
            Kind::Mutex | Kind::RwLock(_) | Kind::Semaphore(_) => {
                held + u64::from(permits) <= d.kind.capacity()
            }
            Kind::PlMutex => d.holds.is_empty(),
            Kind::PlRwLock => match acc {
                Acc::Lock => d.holds.is_empty(),
                Acc::Upgradable => !d
                    .holds
                    .iter()
                    .any(|h| matches!(h.acc, Acc::Lock | Acc::Upgradable)),
                _ => !d.holds.iter().any(|h| h.acc == Acc::Lock),
            },
        };
        if ok {
            d.holds.push(Hold {
                actor: a,
                permits,
                acc,
                // Owned guards exist only for tokio's primitives here.
                movable: owned && !d.kind.blocking(),
            });
        }
    }
    // Waits: a thread waits for one primitive; a task for one parking_lot lock or up to two
    // tokio primitives; one blocking wait per thread.
    for &(a, p, n, sel, timed, on_held) in waits {
        let a = a.index(s.actors.len());
        let held: Vec<usize> = (0..s.prims.len())
            .filter(|&q| !s.prims[q].holds.is_empty())
            .collect();
        let p = if on_held && !held.is_empty() {
            *p.get(&held)
        } else {
            p.index(s.prims.len())
        };
        let kind = s.prims[p].kind;
        // Upgrades are rare by chance: one wait in four on a lock with an upgradable holder
        // is that holder upgrading.
        let upgrader = s.prims[p]
            .holds
            .iter()
            .find(|h| h.acc == Acc::Upgradable)
            .map(|h| h.actor);
        let (a, sel) = match upgrader {
            Some(u) if n == 1 => (u, 3),
            _ => (a, sel),
        };
        let mine: Vec<usize> = (0..s.prims.len())
            .filter(|&q| s.prims[q].waits.iter().any(|w| w.actor == a))
            .collect();
        let max = if s.actors[a] == Who::Thread || kind.blocking() {
            1
        } else {
            2
        };
        if mine.contains(&p)
            || mine.len() >= max
            || mine.iter().any(|&q| s.prims[q].kind.blocking())
        {
            continue;
        }
        if kind.blocking() {
            let t = s.actors[a].thread(a);
            let taken = s.prims.iter().enumerate().any(|(q, d)| {
                d.kind.blocking()
                    && d.waits
                        .iter()
                        .any(|w| s.blocks_thread(q, w.actor) == Some(t))
            });
            if taken {
                continue;
            }
        }
        let (acc, permits) = access(kind, n, sel);
        s.prims[p].waits.push(Wait {
            actor: a,
            permits,
            acc,
            timed,
        });
    }
    // The model knows a current-thread task is pinned to its thread only by its blocking
    // guards (and knows nothing of a block_on driver's thread): keep a thread blocked only when
    // every other actor living on it holds a blocking guard.
    for r in 0..2u8 {
        let others_pinned = |s: &Scenario, blocker: usize| {
            s.actors.iter().enumerate().all(|(c, w)| {
                c == blocker
                    || match *w {
                        Who::CtTask(x) => x != r || s.holds_blocking(c),
                        Who::Driver(x) => x != r,
                        _ => true,
                    }
            })
        };
        for p in 0..s.prims.len() {
            let blocking = s.prims[p].kind.blocking();
            let keep: Vec<Wait> = s.prims[p]
                .waits
                .iter()
                .copied()
                .filter(|w| {
                    !blocking
                        || s.actors[w.actor].thread(w.actor) != u64::from(r)
                        || others_pinned(&s, w.actor)
                })
                .collect();
            s.prims[p].waits = keep;
        }
    }
    // Every waiter must be one the primitive could not grant now (else it would have been).
    loop {
        let mut changed = false;
        for d in &mut s.prims {
            let holds: Vec<(usize, u32, Acc)> = d
                .holds
                .iter()
                .map(|h| (h.actor, h.permits, h.acc))
                .collect();
            let queued: Vec<usize> = (0..d.waits.len()).collect();
            let grantable = (0..d.waits.len()).find(|&wi| can_grant(d, &holds, &queued, wi));
            if let Some(wi) = grantable {
                d.waits.remove(wi);
                changed = true;
            }
        }
        if !changed {
            return prune(s);
        }
    }
}

/// Drops the primitives and actors nothing refers to (shorter counterexamples).
fn prune(s: Scenario) -> Scenario {
    let prims: Vec<PrimDef> = s
        .prims
        .into_iter()
        .filter(|d| !d.holds.is_empty() || !d.waits.is_empty())
        .collect();
    let used: Vec<usize> = (0..s.actors.len())
        .filter(|&a| {
            prims.iter().any(|d| {
                d.holds.iter().any(|h| h.actor == a) || d.waits.iter().any(|w| w.actor == a)
            })
        })
        .collect();
    let renumber = |a: usize| used.iter().position(|&u| u == a).unwrap_or(a);
    Scenario {
        actors: used.iter().map(|&a| s.actors[a]).collect(),
        prims: prims
            .into_iter()
            .map(|mut d| {
                for h in &mut d.holds {
                    h.actor = renumber(h.actor);
                }
                for w in &mut d.waits {
                    w.actor = renumber(w.actor);
                }
                d
            })
            .collect(),
    }
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

/// This test's proptest configuration (see `common/proptest_config.rs`).
fn config(cases: u32) -> ProptestConfig {
    proptest_config::config(cases, 0x10c5_c0de)
}

proptest! {
    #![proptest_config(config(4000))]

    /// `reduce` finds exactly the actors that can never finish.
    #[test]
    fn reduce_matches_the_exhaustive_oracle(s in scenario(6, 4, 8)) {
        let want = oracle(&s);
        let got = reduced(&s);
        prop_assert_eq!(got, want, "reduce (left) vs oracle (right) on {:?}", s);
    }
}

proptest! {
    #![proptest_config(config(1000))]

    /// The same on larger states: longer chains, several knots at once.
    #[test]
    fn reduce_matches_the_exhaustive_oracle_on_larger_states(s in scenario(10, 6, 16)) {
        let want = oracle(&s);
        let got = reduced(&s);
        prop_assert_eq!(got, want, "reduce (left) vs oracle (right) on {:?}", s);
    }

    /// Listing order means nothing except a FIFO queue's: `reduce` gives the same answer with
    /// primitives, holds and unordered (parking_lot) waiters listed backwards.
    #[test]
    fn reduce_ignores_listing_order(s in scenario(8, 5, 12)) {
        let mut model = to_model(&s);
        let want = reduce(&model).blocked;
        model.reverse();
        for p in &mut model {
            p.holds.reverse();
            if p.policy != Policy::Fifo {
                p.waiters.reverse();
            }
        }
        prop_assert_eq!(reduce(&model).blocked, want, "on {:?}", s);
    }
}

// ---------------------------------------------------------------------------------------------
// The oracle on the documented examples (it must be right before it judges `reduce`)
// ---------------------------------------------------------------------------------------------

fn hold(actor: usize, permits: u32, acc: Acc) -> Hold {
    Hold {
        actor,
        permits,
        acc,
        movable: false,
    }
}

fn wait(actor: usize, permits: u32, acc: Acc) -> Wait {
    Wait {
        actor,
        permits,
        acc,
        timed: false,
    }
}

/// A tokio mutex held by `holder` (one acquisition) and waited for by `waiter`.
fn mutex(holder: usize, waiter: usize) -> PrimDef {
    prim(
        Kind::Mutex,
        vec![hold(holder, 1, Acc::Lock)],
        vec![wait(waiter, 1, Acc::Lock)],
    )
}

fn prim(kind: Kind, holds: Vec<Hold>, waits: Vec<Wait>) -> PrimDef {
    PrimDef {
        kind,
        closed: false,
        holds,
        waits,
    }
}

fn set(v: &[usize]) -> BTreeSet<usize> {
    v.iter().copied().collect()
}

/// Checks the oracle's answer and that `reduce` agrees.
fn check(s: &Scenario, want: &[usize]) {
    assert_eq!(oracle(s), set(want), "oracle on {s:?}");
    assert_eq!(reduced(s), set(want), "reduce on {s:?}");
}

#[test]
fn oracle_abba_and_free_holders() {
    let abba = Scenario {
        actors: vec![Who::Task, Who::Task],
        prims: vec![mutex(0, 1), mutex(1, 0)],
    };
    check(&abba, &[0, 1]);
    // a2 holds the other permit and waits for nothing: it frees a permit for a1.
    let free = Scenario {
        actors: vec![Who::Task; 3],
        prims: vec![
            prim(
                Kind::Semaphore(2),
                vec![hold(0, 1, Acc::Permits), hold(2, 1, Acc::Permits)],
                vec![wait(1, 1, Acc::Permits)],
            ),
            mutex(1, 0),
        ],
    };
    check(&free, &[]);
}

#[test]
fn oracle_semaphore_knot_and_fifo_head() {
    let knot = Scenario {
        actors: vec![Who::Task; 3],
        prims: vec![prim(
            Kind::Semaphore(3),
            (0..3).map(|a| hold(a, 1, Acc::Permits)).collect(),
            (0..3).map(|a| wait(a, 1, Acc::Permits)).collect(),
        )],
    };
    check(&knot, &[0, 1, 2]);
    // a2 holds 2 of 3 permits and waits for a mutex held by a0; a0 waits for 1 permit behind
    // a1, who wants 2: the free permit is not enough for the head, so all three are stuck.
    let head = Scenario {
        actors: vec![Who::Task; 3],
        prims: vec![
            prim(
                Kind::Semaphore(3),
                vec![hold(2, 2, Acc::Permits)],
                vec![wait(1, 2, Acc::Permits), wait(0, 1, Acc::Permits)],
            ),
            mutex(0, 2),
        ],
    };
    check(&head, &[0, 1, 2]);
    // The same with the queue the other way round: a0 is granted the free permit.
    let mut swapped = head.clone();
    swapped.prims[0].waits.reverse();
    check(&swapped, &[]);
}

#[test]
fn oracle_rwlocks() {
    // tokio: a read inside a read with a writer queued between them.
    let tokio = Scenario {
        actors: vec![Who::Task; 2],
        prims: vec![prim(
            Kind::RwLock(3),
            vec![hold(0, 1, Acc::Read)],
            vec![wait(1, 3, Acc::Lock), wait(0, 1, Acc::Read)],
        )],
    };
    check(&tokio, &[0, 1]);
    // parking_lot: the same deadlocks with read, not with read_recursive.
    let pl = |acc| Scenario {
        actors: vec![Who::Thread; 2],
        prims: vec![prim(
            Kind::PlRwLock,
            vec![hold(0, 1, Acc::Read)],
            vec![wait(1, 1, Acc::Lock), wait(0, 1, acc)],
        )],
    };
    check(&pl(Acc::Read), &[0, 1]);
    check(&pl(Acc::ReadRecursive), &[]);
    // a0's upgradable read keeps the waiting writer a1 from claiming the lock; a0 finishes,
    // but a2's read still keeps a1 out, and a2 waits for a1's mutex.
    let upgradable = Scenario {
        actors: vec![Who::Thread; 3],
        prims: vec![
            prim(
                Kind::PlRwLock,
                vec![hold(0, 1, Acc::Upgradable), hold(2, 1, Acc::Read)],
                vec![wait(1, 1, Acc::Lock)],
            ),
            prim(
                Kind::PlMutex,
                vec![hold(1, 1, Acc::Lock)],
                vec![wait(2, 1, Acc::Lock)],
            ),
        ],
    };
    check(&upgradable, &[1, 2]);
    // a2 reads again while two writers wait: the timed a0 gives up, but a1 still owns
    // WRITER_BIT (and waits for a2 to leave).
    let mut two_writers = Scenario {
        actors: vec![Who::Thread; 3],
        prims: vec![prim(
            Kind::PlRwLock,
            vec![hold(2, 1, Acc::Read)],
            vec![
                wait(0, 1, Acc::Lock),
                wait(1, 1, Acc::Lock),
                wait(2, 1, Acc::Read),
            ],
        )],
    };
    two_writers.prims[0].waits[0].timed = true;
    check(&two_writers, &[1, 2]);
}

#[test]
fn oracle_timed_closed_owned_pinned() {
    let mut timed = Scenario {
        actors: vec![Who::Task, Who::Task],
        prims: vec![mutex(0, 1), mutex(1, 0)],
    };
    timed.prims[0].waits[0].timed = true;
    check(&timed, &[]);
    let mut closed = Scenario {
        actors: vec![Who::Task],
        prims: vec![prim(
            Kind::Semaphore(1),
            vec![hold(0, 1, Acc::Permits)],
            vec![wait(0, 1, Acc::Permits)],
        )],
    };
    closed.prims[0].closed = true;
    check(&closed, &[]);
    let mut owned = closed.clone();
    owned.prims[0].closed = false;
    owned.prims[0].holds[0].movable = true;
    check(&owned, &[]);
    // a0 holds a parking_lot mutex on thread 0 (current-thread runtime) across an await; a1,
    // on the same thread, blocks the thread waiting for it.
    let pinned = Scenario {
        actors: vec![Who::CtTask(0), Who::CtTask(0)],
        prims: vec![prim(
            Kind::PlMutex,
            vec![hold(0, 1, Acc::Lock)],
            vec![wait(1, 1, Acc::Lock)],
        )],
    };
    check(&pinned, &[0, 1]);
}

#[test]
fn generated_states_are_consistent_and_cover_every_feature() {
    // Every waiter is one its primitive could not grant now, and holds fit; and the states
    // exercise every feature often enough for the properties to mean something.
    let mut runner = proptest::test_runner::TestRunner::new(config(2000));
    let seen = std::cell::RefCell::new(std::collections::BTreeMap::<&str, u32>::new());
    runner
        .run(&scenario(6, 4, 8), |s| {
            for d in &s.prims {
                let held: u64 = d.holds.iter().map(|h| u64::from(h.permits)).sum();
                prop_assert!(held <= d.kind.capacity());
                let holds: Vec<_> = d
                    .holds
                    .iter()
                    .map(|h| (h.actor, h.permits, h.acc))
                    .collect();
                let queued: Vec<usize> = (0..d.waits.len()).collect();
                for wi in 0..d.waits.len() {
                    prop_assert!(!can_grant(d, &holds, &queued, wi), "{:?}", s);
                }
            }
            let waits: Vec<(usize, Wait)> = s
                .prims
                .iter()
                .enumerate()
                .flat_map(|(p, d)| d.waits.iter().map(move |w| (p, *w)))
                .collect();
            let kind = |p: usize| s.prims[p].kind;
            let features = [
                ("deadlock", !oracle(&s).is_empty()),
                ("deadlock of 3 or more", oracle(&s).len() >= 3),
                ("timed wait", waits.iter().any(|(_, w)| w.timed)),
                (
                    "wait on a closed semaphore",
                    waits.iter().any(|(p, _)| s.prims[*p].closed),
                ),
                (
                    "owned guard",
                    s.prims.iter().any(|d| d.holds.iter().any(|h| h.movable)),
                ),
                (
                    "thread blocked, a pinned task on it",
                    waits.iter().any(|(p, w)| {
                        let t = s.blocks_thread(*p, w.actor);
                        t.is_some()
                            && (0..s.prims.len()).any(|q| {
                                s.prims[q]
                                    .holds
                                    .iter()
                                    .any(|h| h.actor != w.actor && s.pinned_thread(q, h.actor) == t)
                            })
                    }),
                ),
                (
                    "select! over two primitives",
                    (0..s.actors.len())
                        .any(|a| waits.iter().filter(|(_, w)| w.actor == a).count() > 1),
                ),
                (
                    "semaphore queue of 2+ with a multi-permit request",
                    s.prims.iter().any(|d| {
                        matches!(d.kind, Kind::Semaphore(_))
                            && d.waits.len() >= 2
                            && d.waits.iter().any(|w| w.permits > 1)
                    }),
                ),
                (
                    "tokio rwlock write queued",
                    waits
                        .iter()
                        .any(|(p, w)| matches!(kind(*p), Kind::RwLock(_)) && w.acc == Acc::Lock),
                ),
                (
                    "upgradable read waiting",
                    waits.iter().any(|(_, w)| w.acc == Acc::Upgradable),
                ),
                (
                    "read_recursive waiting",
                    waits.iter().any(|(_, w)| w.acc == Acc::ReadRecursive),
                ),
                (
                    "upgrade waiting",
                    waits.iter().any(|(p, w)| {
                        w.acc == Acc::Lock
                            && s.prims[*p]
                                .holds
                                .iter()
                                .any(|h| h.actor == w.actor && h.acc == Acc::Upgradable)
                    }),
                ),
            ];
            let mut seen = seen.borrow_mut();
            for (name, hit) in features {
                *seen.entry(name).or_default() += u32::from(hit);
            }
            Ok(())
        })
        .unwrap();
    let seen = seen.into_inner();
    println!("{seen:#?}");
    for (name, n) in &seen {
        assert!(*n >= 20, "only {n} of 2000 states have: {name}");
    }
}

// ---------------------------------------------------------------------------------------------
// Disagreements found by the properties (issue 3): `reduce` is wrong on these (see each
// reason). The generator avoids them until they are fixed; `--ignored` shows them failing.
// ---------------------------------------------------------------------------------------------

/// Checks the oracle's answer on `s` (pinned down as `want`), then `reduce`'s; panics with
/// every case where `reduce` differs.
fn check_bugs(cases: &[(&Scenario, &[usize])]) {
    let mut wrong = Vec::new();
    for (s, want) in cases {
        assert_eq!(oracle(s), set(want), "oracle on {s:?}");
        let got = reduced(s);
        if got != set(want) {
            wrong.push(format!("reduce says {got:?}, should be {want:?}, on {s:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn select_with_a_timed_or_failing_branch_is_not_deadlocked() {
    // a0 holds p0 and waits in a select! for p0 again (never) and for p1 with a timeout; a1
    // holds p1 and waits for nothing. a1 releases p1 and a0 gets it; or the timeout fires.
    let mut timed = Scenario {
        actors: vec![Who::Task, Who::Task],
        prims: vec![mutex(0, 0), mutex(1, 0)],
    };
    let untimed = timed.clone();
    timed.prims[1].waits[0].timed = true;
    // Without the timeout, reduce (rightly) sees a1's release grant it.
    assert_eq!(reduced(&untimed), set(&[]));
    // a0's other branch acquires from a closed semaphore: it fails at once, ending the select!.
    let mut closed = Scenario {
        actors: vec![Who::Task],
        prims: vec![
            mutex(0, 0),
            prim(Kind::Semaphore(1), vec![], vec![wait(0, 1, Acc::Permits)]),
        ],
    };
    closed.prims[1].closed = true;
    check_bugs(&[(&timed, &[]), (&closed, &[])]);
}

#[test]
fn upgradable_read_waits_behind_a_writer_owning_the_lock() {
    // Thread a0 holds a read and asks for an upgradable read; thread a1 asked for a write in
    // between, took WRITER_BIT and waits for a0's read to go: try_lock_upgradable fails while
    // WRITER_BIT is set, so a0 parks behind a1 for ever.
    let s = Scenario {
        actors: vec![Who::Thread, Who::Thread],
        prims: vec![prim(
            Kind::PlRwLock,
            vec![hold(0, 1, Acc::Read)],
            vec![wait(1, 1, Acc::Lock), wait(0, 1, Acc::Upgradable)],
        )],
    };
    check_bugs(&[(&s, &[0, 1])]);
}

#[test]
fn pinned_task_granted_while_its_thread_is_blocked_stays_stuck() {
    // Current-thread runtime on thread 0: a0 holds parking_lot mutex p1 across an await on
    // tokio mutex p0; a1 blocks the thread waiting for p1; a2, elsewhere, holds p0 and will
    // release it. p0 goes to a0, but a0 can never be polled again: a0 and a1 are stuck.
    let granted = Scenario {
        actors: vec![Who::CtTask(0), Who::CtTask(0), Who::Task],
        prims: vec![
            mutex(2, 0),
            prim(
                Kind::PlMutex,
                vec![hold(0, 1, Acc::Lock)],
                vec![wait(1, 1, Acc::Lock)],
            ),
        ],
    };
    // The same task waits for p0 with a timeout instead, queued first, with a2 (now holding
    // p1) queued behind it. It cannot run to give up, so its waiter stays at the head of p0's
    // queue: when a3 releases p0, tokio hands p0 to it, and a2 behind it is stuck too.
    let mut timed = Scenario {
        actors: vec![Who::CtTask(0), Who::CtTask(0), Who::Task, Who::Task],
        prims: vec![
            prim(
                Kind::Mutex,
                vec![hold(3, 1, Acc::Lock)],
                vec![wait(0, 1, Acc::Lock), wait(2, 1, Acc::Lock)],
            ),
            prim(
                Kind::PlMutex,
                vec![hold(0, 1, Acc::Lock)],
                vec![wait(1, 1, Acc::Lock)],
            ),
        ],
    };
    timed.prims[0].waits[0].timed = true;
    check_bugs(&[(&granted, &[0, 1]), (&timed, &[0, 1, 2])]);
}

#[test]
fn readers_get_in_when_a_timed_upgrade_gives_up() {
    // a0 holds an upgradable read and tries to upgrade with a timeout; a1 holds a read and
    // asks for a write (a self-deadlock); a2 asks for a read. When a0's upgrade times out it
    // holds an upgradable read again, so a1 cannot take WRITER_BIT, and parking_lot wakes the
    // readers (skipping writers while the upgradable bit is set): a2 gets in. Only a1 is stuck.
    let mut s = Scenario {
        actors: vec![Who::Thread, Who::Thread, Who::Thread],
        prims: vec![prim(
            Kind::PlRwLock,
            vec![hold(0, 1, Acc::Upgradable), hold(1, 1, Acc::Read)],
            vec![
                wait(2, 1, Acc::Read),
                wait(0, 1, Acc::Lock),
                wait(1, 1, Acc::Lock),
            ],
        )],
    };
    s.prims[0].waits[1].timed = true;
    check_bugs(&[(&s, &[1])]);
}
