//! Primitives: their identity, live counters, waiter queue, and the registry that lists them.
//!
//! A wrapper owns a [`PrimCell`]; the cell owns one reference to an `Arc<Prim>` and the
//! registry the other, so the detector can read a primitive while its wrapper is being dropped.
//! Ids come from a global counter and are never reused, so a stale id in a cache or an old
//! finding can never name a different primitive.

use std::borrow::Cow;
use std::collections::HashMap;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use crate::base::stats::{Stats, StatsSnapshot, Tallied};
use crate::base::{config, names};
use crate::model::level::Level;
pub use crate::model::prim::*;
use crate::state::actor;
use crate::state::wait::WaitQueue;

mod books;

/// How many lock-order contexts a primitive remembers (see [`Prim::order_known`]).
pub(crate) const ORDER_CACHE: usize = 4;

/// One live primitive as the detector sees it. Its books change through its methods: the
/// hooks say what happened (permits forgotten, added, removed, the semaphore closed, a wait
/// for several permits, a wait given up, a lock order seen), never which field to write.
pub struct Prim {
    pub(crate) id: PrimitiveId,
    pub(crate) name: Arc<str>,
    pub(crate) kind: PrimKind,
    pub(crate) site: &'static Location<'static>,
    pub(crate) scope: u32,
    pub(crate) series: u32,
    /// Which of the unnamed primitives created at `site` this is: 1 for the first; 0 for a
    /// primitive given a name of its own (see [`instance`](Prim::instance)).
    pub(crate) instance: u32,
    /// Permits in existence (held + available): 1 for a mutex, `max_readers` for an rwlock.
    capacity: AtomicU64,
    /// Permits `forget`-ed and not yet added back.
    forgotten: AtomicU64,
    /// Permits `forget`-ed so far, and added by `add_permits` so far (both only grow): the
    /// leak rule pays forgets back oldest first from these (see `rules::leaked_permit`).
    forgot_total: AtomicU64,
    added_total: AtomicU64,
    /// Where the latest forgotten permits were acquired (null: not known), for reports.
    forgot_site: AtomicPtr<Location<'static>>,
    closed: AtomicBool,
    /// Bumped by capacity changes and `close`: progress that is not a release.
    epoch: AtomicU64,
    /// Waiters queued now (kept equal to the queue length under its lock; read without it).
    waiting: AtomicU32,
    /// The queue remembers waits that gave up (a retry loop may be at work): every wait goes
    /// to the queue, which tells a retry from a new wait (kept under the queue's lock).
    retrying: AtomicBool,
    /// A semaphore that saw a wait for more than one permit: its waits keep their FIFO order
    /// in the queue from then on (see `runtime::hooks::wait_begin`).
    mixed: AtomicBool,
    /// The actor that created it (raw id).
    pub(crate) creator: u64,
    pub(crate) stats: Stats,
    pub(crate) waiters: Mutex<WaitQueue>,
    /// Predecessors `A` for which the lock-order edge `A -> self` is already known.
    order_cache: [AtomicU64; ORDER_CACHE],
    /// Its tokio-console resource (empty without the `console` feature).
    pub(crate) resource: crate::state::console::Resource,
    /// Its declared level, if any, as an index (see [`level_word`]): set once, before its
    /// first use; read on the cold path of a nested acquisition only (see
    /// `rules::lock_levels`). 32 bits, not a `Level`: every primitive pays for the field, and
    /// it fills the padding beside the other 32-bit fields.
    level: AtomicU32,
}

impl Prim {
    /// Publishes what the lock-free readers see of the wait queue `q` (this primitive's,
    /// locked by the caller) after a change: whether a waiter is retrying, how many wait,
    /// and tokio-console's waiter count.
    pub(crate) fn queue_changed(&self, q: &WaitQueue) {
        self.retrying.store(q.retrying(), Ordering::Relaxed);
        self.waiting.store(q.len() as u32, Ordering::Relaxed);
        self.resource.waiters(q.len());
    }

    /// The primitive's id.
    pub fn id(&self) -> PrimitiveId {
        self.id
    }
    /// The primitive's name (explicit, or its creation site).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The primitive's kind.
    pub fn kind(&self) -> PrimKind {
        self.kind
    }
    /// Where it was created.
    pub fn site(&self) -> &'static Location<'static> {
        self.site
    }
    /// Which of the unnamed primitives created at its site this is (1 for the first, counting
    /// every one ever created there), or 0 when that tells nothing: it was given a name of its own,
    /// or it is the only one created there so far. Reports show it after the name
    /// (`src/lib.rs:59#2`), so that two pools a library creates on one line are told apart.
    /// Metrics keep one series per name, so their label cardinality stays bounded.
    pub fn instance(&self) -> u32 {
        if self.instance > 0 && site_instances(self.site) > 1 {
            self.instance
        } else {
            0
        }
    }
    /// The metrics series it is counted in.
    pub fn series(&self) -> u32 {
        self.series
    }
    /// Permits in existence now. (Stored wrapping, so that racing changes always sum exactly;
    /// a transiently negative value reads as 0.)
    pub fn capacity(&self) -> u64 {
        let c = self.capacity.load(Ordering::Relaxed) as i64;
        c.max(0) as u64
    }
    /// Whether a semaphore was closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
    /// Permits forgotten and not made up for by `add_permits` (before or after: a semaphore
    /// used as an event counter adds a permit per event and consumes it with `forget`).
    pub fn forgotten(&self) -> u64 {
        // A signed balance kept wrapping: forgotten minus added, never below zero here.
        let balance = self.forgotten.load(Ordering::Relaxed) as i64;
        balance.max(0) as u64
    }
    /// Permits forgotten so far and permits added by `add_permits` so far (both only grow).
    pub fn forgot_and_added(&self) -> (u64, u64) {
        (
            self.forgot_total.load(Ordering::Relaxed),
            self.added_total.load(Ordering::Relaxed),
        )
    }
    /// Where the latest forgotten permits had been acquired, when known.
    pub fn forgot_site(&self) -> Option<&'static Location<'static>> {
        // SAFETY: only `&'static Location`s are stored (in `forgot_permits`), or null.
        unsafe { self.forgot_site.load(Ordering::Relaxed).as_ref() }
    }
    /// Its statistics now (with the short holds tallied on threads' tables).
    pub fn stats(&self) -> StatsSnapshot {
        self.stats_with(&crate::state::held::tally_of(self.id.0))
    }

    /// [`stats`](Prim::stats) with its tallied short holds already summed.
    pub(crate) fn stats_with(&self, tallied: &Tallied) -> StatsSnapshot {
        self.stats.read_with(tallied)
    }
    /// Its declared level, if it was given one (see [`Level`]).
    pub fn level(&self) -> Option<Level> {
        level_of_word(self.level.load(Ordering::Relaxed))
    }

    /// Declares its level: acquisitions out of the order of levels are reported from now on.
    /// A primitive's level is set once, before it is first used (a level given after a
    /// nested acquisition was seen may go unchecked for the sets of holds seen before);
    /// `false` when it already had one (which it keeps).
    pub fn set_level(&self, level: Level) -> bool {
        // Relaxed: see `LEVELED`.
        let set = self
            .level
            .compare_exchange(0, level_word(level), Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
        if set {
            LEVELED.store(true, Ordering::Relaxed);
        }
        set
    }

    /// Test scope that created it (0: none).
    pub fn scope(&self) -> u32 {
        self.scope
    }
    /// Waiters queued now.
    pub fn waiting(&self) -> u32 {
        self.waiting.load(Ordering::Relaxed)
    }
    /// A number that grows whenever the primitive makes progress (a release, a capacity
    /// change, `close`); unchanged means nothing was freed.
    pub fn progress(&self) -> u64 {
        self.progress_with(&crate::state::held::tally_of(self.id.0))
    }

    /// [`progress`](Prim::progress) with its tallied short holds already summed.
    pub(crate) fn progress_with(&self, tallied: &Tallied) -> u64 {
        self.released_with(tallied) + self.epoch.load(Ordering::Relaxed)
    }

    /// Acquisitions released so far, with its tallied short holds already summed.
    pub(crate) fn released_with(&self, tallied: &Tallied) -> u64 {
        self.stats.released_with(tallied)
    }
}

// The detector's books stay consistent across a panic (a guard dropped while unwinding still
// releases its hold), so a lock holding a `&Prim` is as unwind-safe as the lock it wraps:
// parking_lot's `Mutex<T>` is `UnwindSafe` when `T` is, and so must the wrapper be.
impl std::panic::RefUnwindSafe for Prim {}
impl std::panic::UnwindSafe for Prim {}

impl std::fmt::Debug for Prim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prim")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

// ---------------------------------------------------------------------------------------------
// Registry
// ---------------------------------------------------------------------------------------------

const SHARDS: usize = 16;

type Shard = Mutex<HashMap<u64, Arc<Prim>>>;

static REGISTRY: LazyLock<[Shard; SHARDS]> =
    LazyLock::new(|| std::array::from_fn(|_| Mutex::new(HashMap::new())));
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Whether any primitive was ever given a level: until one is, the level checks are skipped.
/// (Relaxed: a primitive's level is set before its first acquisition, by the thread that
/// built it, which hands it to others through a release of its own.)
static LEVELED: AtomicBool = AtomicBool::new(false);

/// The distinct levels given so far (each once), indexed by [`level_word`]: a program has
/// few, written in its code. Read on the slow path of an acquisition only (see
/// `rules::lock_levels`), never on the fast path.
static LEVELS: LazyLock<Mutex<Vec<Level>>> = LazyLock::new(Mutex::default);

/// A level in 32 bits, so that it fits beside the record's other 32-bit fields: 0 for no level,
/// `1 + i` for `LEVELS[i]`.
fn level_word(level: Level) -> u32 {
    let mut levels = LEVELS.lock();
    let i = match levels.iter().position(|l| *l == level) {
        Some(i) => i,
        None => {
            levels.push(level);
            levels.len() - 1
        }
    };
    u32::try_from(i + 1).unwrap_or(u32::MAX)
}

/// The level of a [`level_word`], `None` for 0.
fn level_of_word(word: u32) -> Option<Level> {
    let i = usize::try_from(word.checked_sub(1)?).ok()?;
    LEVELS.lock().get(i).copied()
}

#[cfg(test)]
#[test]
fn a_level_word_keeps_rank_and_name() {
    for l in [
        Level::new(0),
        Level::new(u32::MAX),
        Level::named(5, "prim/level_word"),
        Level::named(u32::MAX, "prim/level_word_max"),
    ] {
        assert_eq!(level_of_word(level_word(l)), Some(l));
    }
    assert_eq!(level_of_word(0), None);
}

/// Whether any primitive was ever given a declared level.
#[inline]
pub(crate) fn levels_in_use() -> bool {
    LEVELED.load(Ordering::Relaxed)
}

/// A metrics series: the primitives sharing one `(lock, kind)` label pair.
pub struct Series {
    /// The `lock` label value.
    pub name: Arc<str>,
    /// The primitive kind (its `kind` label).
    pub kind: PrimKind,
    /// Statistics of primitives of this series that were dropped.
    pub retired: StatsSnapshot,
}

#[derive(Default)]
struct SeriesTable {
    index: HashMap<(Arc<str>, PrimKind), u32>,
    series: Vec<Series>,
    distinct_names: usize,
    dropped: u64,
}

static SERIES: LazyLock<Mutex<SeriesTable>> = LazyLock::new(Mutex::default);

/// Unnamed primitives created so far per creation site (keyed by the site's address: sites are
/// `'static` and finite, so the map is bounded by the program's code).
static SITES: LazyLock<Mutex<HashMap<usize, u32>>> = LazyLock::new(Mutex::default);

/// Counts one more unnamed primitive created at `site`; returns its instance number (1 for the first).
fn next_instance(site: &'static Location<'static>) -> u32 {
    let mut sites = SITES.lock();
    let n = sites
        .entry(site as *const Location<'static> as usize)
        .or_insert(0);
    *n = n.saturating_add(1);
    *n
}

/// How many unnamed primitives were created at `site` so far.
fn site_instances(site: &'static Location<'static>) -> u32 {
    SITES
        .lock()
        .get(&(site as *const Location<'static> as usize))
        .copied()
        .unwrap_or(0)
}

/// A series name as a primitive's name would be cleaned (see [`register`]).
fn clean_series(series: &str) -> Arc<str> {
    match validate_name(series) {
        Ok(()) => Arc::from(series),
        Err(_) => Arc::from(clean_name(series)),
    }
}

fn series_for(name: &Arc<str>, kind: PrimKind) -> (u32, Arc<str>) {
    let mut t = SERIES.lock();
    if let Some(&i) = t.index.get(&(name.clone(), kind)) {
        return (i, t.series[i as usize].name.clone());
    }
    let cap = config::current().max_series;
    let folded = t.distinct_names >= cap;
    let key_name: Arc<str> = if folded {
        t.dropped += 1;
        Arc::from(names::OTHER_SERIES)
    } else {
        name.clone()
    };
    if let Some(&i) = t.index.get(&(key_name.clone(), kind)) {
        // `other` already exists for this kind; the prim keeps its own name for reports.
        return (i, name.clone());
    }
    if !folded {
        t.distinct_names += 1;
    }
    let i = t.series.len() as u32;
    t.series.push(Series {
        name: key_name.clone(),
        kind,
        retired: StatsSnapshot::default(),
    });
    t.index.insert((key_name, kind), i);
    (i, name.clone())
}

/// Claims one series of the label cap for a label value counted outside this table (a
/// channel's: see `state::channels`), as [`register`] would for a new name: `true` while the
/// cap has room; past it `false`, counted as folded (`lockscope_dropped_series_total`), and
/// the caller counts it in `other`. One cap for both, so that it bounds every series.
pub(crate) fn claim_series() -> bool {
    let mut t = SERIES.lock();
    if t.distinct_names >= config::current().max_series {
        t.dropped += 1;
        false
    } else {
        t.distinct_names += 1;
        true
    }
}

/// Calls `f` with every series (index order), the number of primitives folded into `other`
/// so far, and a walk over the live primitives, all under the series lock: a primitive
/// dropped meanwhile is seen either live or retired, never neither. Used at scrape time.
pub fn with_series<R>(
    f: impl FnOnce(&[Series], u64, &mut dyn FnMut(&mut dyn FnMut(&Arc<Prim>))) -> R,
) -> R {
    let t = SERIES.lock();
    f(&t.series, t.dropped, &mut |g| for_each(g))
}

/// Registers a new primitive. `name: None` names it after `site`.
pub fn register(
    name: Option<Cow<'_, str>>,
    kind: PrimKind,
    site: &'static Location<'static>,
    capacity: u64,
) -> Arc<Prim> {
    register_in(name, None, kind, site, capacity)
}

/// [`register`], counted in the metrics series named `series` rather than its own name: a
/// keyed lock's `"map[key]"` primitives all count as `"map"`, so that keys never become metric
/// labels (reports and `/debug/*` still show the full name).
pub fn register_in(
    name: Option<Cow<'_, str>>,
    series: Option<&str>,
    kind: PrimKind,
    site: &'static Location<'static>,
    capacity: u64,
) -> Arc<Prim> {
    let instance = if name.is_none() {
        next_instance(site)
    } else {
        0
    };
    let name: Arc<str> = match name {
        Some(n) => match validate_name(&n) {
            Ok(()) => Arc::from(n.as_ref()),
            Err(e) => {
                let cleaned = clean_name(&n);
                tracing::warn!(
                    target: "lockscope",
                    site = %site_string(site),
                    "{e}; the primitive is named {cleaned:?} instead"
                );
                Arc::from(cleaned)
            }
        },
        None => Arc::from(site_name(site)),
    };
    let (series, name) = match series {
        None => series_for(&name, kind),
        Some(series) => (series_for(&clean_series(series), kind).0, name),
    };
    let resource = crate::state::console::Resource::new(kind, &name, site, capacity);
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let prim = Arc::new(Prim {
        id: PrimitiveId(id),
        name,
        kind,
        site,
        scope: actor::current_scope(),
        series,
        instance,
        capacity: AtomicU64::new(capacity),
        forgotten: AtomicU64::new(0),
        forgot_total: AtomicU64::new(0),
        added_total: AtomicU64::new(0),
        forgot_site: AtomicPtr::new(std::ptr::null_mut()),
        closed: AtomicBool::new(false),
        epoch: AtomicU64::new(0),
        waiting: AtomicU32::new(0),
        retrying: AtomicBool::new(false),
        mixed: AtomicBool::new(false),
        creator: actor::current().as_u64(),
        stats: Stats::default(),
        waiters: Mutex::new(WaitQueue::default()),
        order_cache: Default::default(),
        resource,
        level: AtomicU32::new(0),
    });
    REGISTRY[id as usize % SHARDS]
        .lock()
        .insert(id, prim.clone());
    prim
}

/// Removes a primitive from the registry (its wrapper was dropped) and folds its statistics
/// into its series. Returns whether it was registered: only then has the caller (the runtime's
/// `unregister`) anything to judge, report or forget about it.
#[must_use]
pub fn unregister(prim: &Prim) -> bool {
    // Under the series lock, so that a scrape (which holds it across its walk) sees this
    // primitive either live or retired, never neither: counters must not go backwards.
    let mut series = SERIES.lock();
    let removed = REGISTRY[prim.id.0 as usize % SHARDS]
        .lock()
        .remove(&prim.id.0);
    if removed.is_none() {
        return false;
    }
    // The tallies are final: nothing releases a hold of a primitive being dropped.
    let st = prim
        .stats
        .read_with(&crate::state::held::claim_tallies(prim.id.0));
    if let Some(s) = series.series.get_mut(prim.series as usize) {
        s.retired.merge(&st);
    }
    drop(series);
    true
}

/// Calls `f` for every live primitive (shard by shard; not one atomic snapshot).
pub fn for_each(mut f: impl FnMut(&Arc<Prim>)) {
    for shard in REGISTRY.iter() {
        for p in shard.lock().values() {
            f(p);
        }
    }
}

/// Every live primitive.
pub fn all() -> Vec<Arc<Prim>> {
    let mut out = Vec::new();
    for_each(|p| out.push(p.clone()));
    out
}

/// The live primitive with this id.
pub fn get(id: PrimitiveId) -> Option<Arc<Prim>> {
    REGISTRY[id.0 as usize % SHARDS].lock().get(&id.0).cloned()
}

/// Number of live primitives.
pub fn live_count() -> usize {
    REGISTRY.iter().map(|s| s.lock().len()).sum()
}

pub(crate) fn series_lock() -> parking_lot::MutexGuard<'static, impl Sized> {
    SERIES.lock()
}

pub(crate) fn registry_locks() -> Vec<parking_lot::MutexGuard<'static, impl Sized>> {
    REGISTRY.iter().map(|s| s.lock()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_validated_and_cleaned() {
        assert!(validate_name("pool").is_ok());
        assert!(validate_name("").is_err());
        assert!(validate_name("a\nb").is_err());
        assert!(validate_name(&"x".repeat(201)).is_err());
        assert_eq!(clean_name("a\nb"), "a?b");
        assert_eq!(clean_name(""), "unnamed");
        assert_eq!(clean_name(&"é".repeat(150)).len(), 200);
    }
}
