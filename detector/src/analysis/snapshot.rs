//! Snapshots of the live state: what the rules judge and what `/debug/locks` shows.
//!
//! A snapshot is consistent enough, not atomic: primitives are read one by one and holds
//! thread table by thread table while the program runs. Rules that would report on a torn
//! view (a deadlock) confirm it on a second snapshot first.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

use crate::base::clock;
use crate::state::actor;
use crate::state::channels::{self, ChanWaitView};
use crate::state::executor::Executors;
use crate::state::held::{self, HoldView};
use crate::state::joins::{self, JoinView};
use crate::state::prim::{self, Prim, PrimKind};
use crate::state::wait::WaiterRec;

/// One primitive in a [`State`].
pub struct PrimState {
    /// The primitive.
    pub prim: Arc<Prim>,
    /// Permits in existence.
    pub capacity: u64,
    /// Closed (semaphores).
    pub closed: bool,
    /// Forgotten permits not added back.
    pub forgotten: u64,
    /// Progress counter (see [`Prim::progress`]).
    pub progress: u64,
    /// Acquisitions granted so far: released ones and live holds (a split-off part is not an
    /// acquisition of its own). Unlike `progress`, capacity changes do not count.
    pub granted: u64,
    /// Holds.
    pub holds: Vec<HoldView>,
    /// Waiters in queue order.
    pub waiters: Vec<WaiterRec>,
}

/// The live state at one moment (roughly).
pub struct State {
    /// Coarse clock at capture.
    pub now_coarse: u64,
    /// Precise clock at capture.
    pub now_precise: u64,
    /// Every live primitive.
    pub prims: Vec<PrimState>,
    /// Known runtimes and their threads (see [`crate::state::executor`]).
    pub executors: Executors,
    /// Joins in progress (see `state::joins`).
    pub joins: Vec<JoinView>,
    /// Channel sends and receives waiting (see `state::channels`).
    pub chan_waits: Vec<ChanWaitView>,
    /// The stuck threshold of a queue that belongs to no test, while tests are armed: the
    /// loosest of theirs (such a finding goes to each of them). `None`: no test is armed, the
    /// process-wide threshold applies. Set by the watchdog, which knows the armed tests.
    pub unscoped_stuck: Option<std::time::Duration>,
    index: HashMap<u64, usize>,
}

impl State {
    /// Reads the live state: every primitive, every hold, every waiter.
    pub fn capture() -> State {
        let mut prims: Vec<PrimState> = Vec::new();
        let mut index = HashMap::new();
        // Read before the primitives: a count only grows, so progress is never overstated.
        let tallies = held::tallies();
        // Waits in threads' slots (see `state::held::waits`), placed among the queue's.
        let mut slot_waits = held::waits_by_prim();
        prim::for_each(|p| {
            let slots = slot_waits.remove(&p.id().0);
            let waiters = match slots {
                Some(w) => p.waiters.lock().ordered_with(w),
                None if p.waiting() > 0 => p.waiters.lock().ordered(),
                None => Vec::new(),
            };
            index.insert(p.id().0, prims.len());
            let tallied = tallies.get(&p.id().0).copied().unwrap_or_default();
            prims.push(PrimState {
                prim: p.clone(),
                capacity: p.capacity(),
                closed: p.is_closed(),
                forgotten: p.forgotten(),
                progress: p.progress_with(&tallied),
                granted: p.released_with(&tallied),
                holds: Vec::new(),
                waiters,
            });
        });
        held::for_each_all(|h| {
            if let Some(&i) = index.get(&h.prim) {
                prims[i].granted += u64::from(h.flags & held::FLAG_SPLIT == 0);
                prims[i].holds.push(h);
            }
        });
        State {
            now_coarse: clock::coarse_now(),
            now_precise: clock::precise_now(),
            prims,
            executors: Executors::capture(),
            joins: joins::snapshot(),
            chan_waits: channels::snapshot(),
            unscoped_stuck: None,
            index,
        }
    }

    /// Builds a state from parts (tests, benchmarks).
    pub fn from_parts(prims: Vec<PrimState>) -> State {
        let index = prims
            .iter()
            .enumerate()
            .map(|(i, p)| (p.prim.id().0, i))
            .collect();
        State {
            now_coarse: clock::coarse_now(),
            now_precise: clock::precise_now(),
            prims,
            executors: Executors::default(),
            joins: Vec::new(),
            chan_waits: Vec::new(),
            unscoped_stuck: None,
            index,
        }
    }

    /// The primitive with id `id`, if live.
    pub fn get(&self, id: u64) -> Option<&PrimState> {
        self.index.get(&id).map(|&i| &self.prims[i])
    }

    /// Age of a hold now, in ns.
    pub fn hold_age(&self, h: &HoldView) -> u64 {
        self.now_coarse.saturating_sub(h.since)
    }

    /// Age of a wait now, in ns.
    pub fn wait_age(&self, w: &WaiterRec) -> u64 {
        self.now_precise.saturating_sub(w.since_ns)
    }
}

/// What a listing (`/debug/locks`, `/debug/graph`) reads of one primitive: a [`PrimState`]
/// whose waiters may be cut short, with their number and the oldest's start.
pub(crate) struct Listed {
    pub(crate) prim: Arc<Prim>,
    pub(crate) capacity: u64,
    pub(crate) closed: bool,
    pub(crate) forgotten: u64,
    /// Every hold.
    pub(crate) holds: Vec<HoldView>,
    /// In queue order: the first ones up to the listing's limit, and any other it keeps.
    pub(crate) waiters: Vec<WaiterRec>,
    pub(crate) waiters_total: usize,
    /// When the longest wait began (precise clock).
    pub(crate) oldest_wait_since: Option<u64>,
}

/// The live state as the listings read it: [`State::capture`]'s primitives and holds, with at
/// most `limit` waiters copied per primitive (the first in queue order) besides those of the
/// actors that hold something when `keep_holders` (only they can close a cycle). A queue of a
/// million waiters is counted, not copied.
pub(crate) struct Listing {
    pub(crate) now_coarse: u64,
    pub(crate) now_precise: u64,
    pub(crate) prims: Vec<Listed>,
    /// The actors that hold something (raw ids), when asked for with `keep_holders`.
    pub(crate) holding: std::collections::HashSet<u64>,
}

impl Listing {
    pub(crate) fn capture(limit: usize, keep_holders: bool) -> Listing {
        let mut holds: HashMap<u64, Vec<HoldView>> = HashMap::new();
        held::for_each_all(|h| holds.entry(h.prim).or_default().push(h));
        let holding: std::collections::HashSet<u64> = if keep_holders {
            holds.values().flatten().map(|h| h.actor.as_u64()).collect()
        } else {
            Default::default()
        };
        let keep = |w: &WaiterRec| holding.contains(&w.actor.as_u64());
        let mut slot_waits = held::waits_by_prim();
        let mut prims = Vec::new();
        prim::for_each(|p| {
            let slots = slot_waits.remove(&p.id().0).unwrap_or_default();
            let (waiters, waiters_total, oldest_wait_since) =
                if slots.is_empty() && p.waiting() == 0 {
                    (Vec::new(), 0, None)
                } else {
                    p.waiters.lock().listed(&slots, limit, keep)
                };
            prims.push(Listed {
                prim: p.clone(),
                capacity: p.capacity(),
                closed: p.is_closed(),
                forgotten: p.forgotten(),
                holds: holds.remove(&p.id().0).unwrap_or_default(),
                waiters,
                waiters_total,
                oldest_wait_since,
            });
        });
        Listing {
            now_coarse: clock::coarse_now(),
            now_precise: clock::precise_now(),
            prims,
            holding,
        }
    }

    /// Age of a hold now, in ns.
    pub(crate) fn hold_age(&self, h: &HoldView) -> u64 {
        self.now_coarse.saturating_sub(h.since)
    }

    /// Age of a wait begun at `since_ns` now, in ns.
    pub(crate) fn wait_age(&self, since_ns: u64) -> u64 {
        self.now_precise.saturating_sub(since_ns)
    }
}

/// A holder in `/debug/locks`.
#[derive(Clone, Debug, Serialize)]
pub struct HolderSnapshot {
    /// Raw actor id.
    pub actor_id: u64,
    /// `task 12` or `thread 'main' (#1)`.
    pub actor: String,
    /// Acquisition site.
    pub site: String,
    /// Held for this long (ms).
    pub held_ms: u64,
    /// Permits held.
    pub permits: u32,
    /// `lock`, `read`, `write`, `acquire`, ...
    pub mode: &'static str,
    /// An owned guard or permit (may have moved to another task).
    pub owned: bool,
}

impl HolderSnapshot {
    /// The listing of hold `h` of a primitive of `kind`, `age_ns` old.
    pub(crate) fn of(h: &HoldView, kind: PrimKind, age_ns: u64) -> HolderSnapshot {
        HolderSnapshot {
            actor_id: h.actor.as_u64(),
            actor: h.actor.describe(),
            site: prim::site_string(h.site),
            held_ms: age_ns / 1_000_000,
            permits: h.permits,
            mode: h.mode.verb_in(kind.as_str()),
            owned: h.movable(),
        }
    }
}

/// A waiter in `/debug/locks`.
#[derive(Clone, Debug, Serialize)]
pub struct WaiterSnapshot {
    /// Raw actor id.
    pub actor_id: u64,
    /// `task 12` or `thread 'main' (#1)`.
    pub actor: String,
    /// Acquisition site.
    pub site: String,
    /// Waiting for this long (ms).
    pub waiting_ms: u64,
    /// Permits wanted.
    pub permits: u32,
    /// `lock`, `read`, `write`, `acquire`, ...
    pub mode: &'static str,
    /// A timed form.
    pub timed: bool,
}

/// One live primitive in `/debug/locks`.
#[derive(Clone, Debug, Serialize)]
pub struct LockSnapshot {
    /// Id.
    pub id: u64,
    /// Name.
    pub name: String,
    /// Kind string.
    pub kind: &'static str,
    /// Creation site.
    pub created_at: String,
    /// Which of the unnamed primitives created at that site it is (see [`Prim::instance`]);
    /// 0 when it has its own name or is the only one.
    pub instance: u32,
    /// Permits in existence (1 for a mutex, `max_readers` for an rwlock).
    pub capacity: u64,
    /// Permits not held by anyone.
    pub available: u64,
    /// Closed (semaphores).
    pub closed: bool,
    /// Permits forgotten and not added back.
    pub forgotten: u64,
    /// Holders (all of them, or the oldest ones first up to the limit of [`locks_limited`]).
    pub holders: Vec<HolderSnapshot>,
    /// Waiters, in queue order (all of them, or the first ones up to the limit of
    /// [`locks_limited`]).
    pub waiters: Vec<WaiterSnapshot>,
    /// Holders in all, listed or not.
    pub holders_total: usize,
    /// Waiters in all, listed or not.
    pub waiters_total: usize,
    /// How long the longest wait among all the waiters has lasted (ms); `None` with no waiter.
    pub oldest_wait_ms: Option<u64>,
    /// Who holds it outside this process, as its last waiter saw (a cross-process lock, e.g.
    /// ``process 4121 (`cargo test`)``); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_elsewhere: Option<String>,
}

/// Permits a hold occupies for availability accounting.
pub fn occupied(kind: PrimKind, h: &HoldView) -> u64 {
    match kind {
        PrimKind::BlockingMutex | PrimKind::BlockingReentrantMutex => 1,
        _ => u64::from(h.permits),
    }
}

/// Every live primitive with its holders and waiters (`/debug/locks`).
///
/// ```
/// let m = lockscope_detector::__private::prim::PrimCell::new(
///     Some("docs/locks".into()),
///     lockscope_detector::__private::prim::PrimKind::Mutex,
///     std::panic::Location::caller(),
///     1,
/// );
/// let locks = lockscope_detector::locks();
/// let l = locks.iter().find(|l| l.id == m.get().id().0).unwrap();
/// assert_eq!((l.name.as_str(), l.waiters_total), ("docs/locks", 0));
/// ```
pub fn locks() -> Vec<LockSnapshot> {
    locks_limited(usize::MAX)
}

/// [`locks`], listing at most `limit` holders (the oldest) and `limit` waiters (the first in
/// queue order) of each primitive; the counts and the oldest wait still cover them all
/// (`/debug/locks?limit=N`, which the live view reads). A semaphore a million tasks queue on
/// is then a few lines, not a million: the whole listing of each waiter, its actor and site
/// formatted, is what costs at that size.
///
/// ```
/// let locks = lockscope_detector::locks_limited(0);
/// assert!(locks.iter().all(|l| l.holders.is_empty() && l.waiters.is_empty()));
/// ```
pub fn locks_limited(limit: usize) -> Vec<LockSnapshot> {
    let state = Listing::capture(limit, false);
    let mut out: Vec<LockSnapshot> = state
        .prims
        .iter()
        .map(|p| {
            let kind = p.prim.kind();
            let held: u64 = match kind {
                PrimKind::BlockingMutex | PrimKind::BlockingReentrantMutex => {
                    u64::from(!p.holds.is_empty())
                }
                PrimKind::BlockingRwLock => {
                    if p.holds.iter().any(|h| h.mode.is_exclusive()) {
                        p.capacity
                    } else {
                        p.holds.len() as u64
                    }
                }
                _ => p.holds.iter().map(|h| occupied(kind, h)).sum(),
            };
            LockSnapshot {
                id: p.prim.id().0,
                name: p.prim.name().to_owned(),
                kind: kind.as_str(),
                created_at: prim::site_string(p.prim.site()),
                instance: p.prim.instance(),
                capacity: p.capacity,
                available: p.capacity.saturating_sub(held),
                closed: p.closed,
                forgotten: p.forgotten,
                holders: oldest_first(&p.holds, limit)
                    .into_iter()
                    .take(limit)
                    .map(|h| HolderSnapshot::of(h, kind, state.hold_age(h)))
                    .collect(),
                waiters: p
                    .waiters
                    .iter()
                    .map(|w| WaiterSnapshot {
                        actor_id: w.actor.as_u64(),
                        actor: w.actor.describe(),
                        site: prim::site_string(w.site),
                        waiting_ms: state.wait_age(w.since_ns) / 1_000_000,
                        permits: w.permits,
                        mode: w.mode.verb_in(kind.as_str()),
                        timed: w.timed,
                    })
                    .collect(),
                holders_total: p.holds.len(),
                waiters_total: p.waiters_total,
                oldest_wait_ms: p.oldest_wait_since.map(|t| state.wait_age(t) / 1_000_000),
                held_elsewhere: crate::state::elsewhere::of(p.prim.id().0).map(|w| w.to_string()),
            }
        })
        .collect();
    out.sort_by_key(|l| l.id);
    out
}

/// `holds` oldest first when more than `limit` of them (in their order otherwise), for a
/// listing that shows the first `limit`.
pub(crate) fn oldest_first(holds: &[HoldView], limit: usize) -> Vec<&HoldView> {
    let mut order: Vec<&HoldView> = holds.iter().collect();
    if order.len() > limit {
        order.sort_by_key(|h| h.since);
    }
    order
}

/// Names of the current actor, for reports (`task 12`, `thread 'main' (#1)`).
pub fn current_actor_name() -> String {
    actor::current().describe()
}
