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

use crate::base::stats::{Stats, StatsSnapshot};
use crate::base::{actor, config, names};
use crate::state::wait::WaitQueue;

/// A primitive's lasting identity (never reused within a process).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, serde::Serialize)]
pub struct PrimitiveId(pub u64);

impl std::fmt::Display for PrimitiveId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// What kind of primitive this is; decides the `kind` label and how waiters are granted.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[non_exhaustive]
pub enum PrimKind {
    /// `tokio::sync::Mutex`: one permit, strict FIFO.
    Mutex,
    /// `tokio::sync::RwLock`: `max_readers` permits, a write takes all; strict FIFO, so a
    /// queued writer blocks later readers.
    RwLock,
    /// `tokio::sync::Semaphore`: strict FIFO, a large `acquire_many` blocks later small ones.
    Semaphore,
    /// `parking_lot::Mutex`: exclusive, no queue order.
    BlockingMutex,
    /// `parking_lot::ReentrantMutex`: exclusive to one thread, which may re-enter freely.
    BlockingReentrantMutex,
    /// `parking_lot::RwLock`: task-fair (readers wait behind a waiting writer, except
    /// `read_recursive` while readers hold it), with upgradable reads.
    BlockingRwLock,
}

impl PrimKind {
    /// The `kind` string of spans and metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            PrimKind::Mutex => names::KIND_MUTEX,
            PrimKind::RwLock => names::KIND_RWLOCK,
            PrimKind::Semaphore => names::KIND_SEMAPHORE,
            PrimKind::BlockingMutex | PrimKind::BlockingReentrantMutex => {
                names::KIND_BLOCKING_MUTEX
            }
            PrimKind::BlockingRwLock => names::KIND_BLOCKING_RWLOCK,
        }
    }

    /// Whether waiting blocks the OS thread (parking_lot) rather than a task.
    pub const fn is_blocking(self) -> bool {
        matches!(
            self,
            PrimKind::BlockingMutex | PrimKind::BlockingReentrantMutex | PrimKind::BlockingRwLock
        )
    }

    /// Whether the primitive grants waiters in strict FIFO order (tokio's batch semaphore).
    pub const fn is_fifo(self) -> bool {
        matches!(
            self,
            PrimKind::Mutex | PrimKind::RwLock | PrimKind::Semaphore
        )
    }

    /// Whether the primitive counts permits (semaphore) rather than being a lock.
    pub const fn is_semaphore(self) -> bool {
        matches!(self, PrimKind::Semaphore)
    }
}

impl std::fmt::Display for PrimKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a name given to `named(..)` was refused. The primitive still works: it is named
/// after a cleaned-up version of the name (see [`clean_name`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameError {
    reason: &'static str,
}

impl std::fmt::Display for NameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid lock name: {}", self.reason)
    }
}

impl std::error::Error for NameError {}

/// Longest accepted name, in bytes.
pub const MAX_NAME_LEN: usize = 200;

/// Checks a primitive name: 1 to [`MAX_NAME_LEN`] bytes, no control characters.
///
/// ```
/// use lockscope_detector::validate_name;
/// assert!(validate_name("db_pool").is_ok());
/// assert_eq!(validate_name("").unwrap_err().to_string(), "invalid lock name: empty");
/// ```
pub fn validate_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError { reason: "empty" });
    }
    if name.len() > MAX_NAME_LEN {
        return Err(NameError {
            reason: "longer than 200 bytes",
        });
    }
    if name.chars().any(char::is_control) {
        return Err(NameError {
            reason: "contains a control character",
        });
    }
    Ok(())
}

/// The name a refused name is replaced with: control characters become `?`, the rest is cut
/// at [`MAX_NAME_LEN`] bytes, and an empty name becomes `unnamed`.
pub fn clean_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if out.len() > MAX_NAME_LEN {
        let mut cut = MAX_NAME_LEN;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    if out.is_empty() {
        out.push_str("unnamed");
    }
    out
}

/// The name of a primitive created without one: `path/to/file.rs:LINE`.
pub fn site_name(site: &Location<'_>) -> String {
    format!("{}:{}", site.file(), site.line())
}

/// A site as `file:line:col`, the form of the `site` span field.
pub fn site_string(site: &Location<'_>) -> String {
    format!("{}:{}:{}", site.file(), site.line(), site.column())
}

/// One live primitive as the detector sees it.
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
    pub(crate) capacity: AtomicU64,
    /// Permits `forget`-ed and not yet added back.
    pub(crate) forgotten: AtomicU64,
    /// Permits `forget`-ed so far, and added by `add_permits` so far (both only grow): the
    /// leak rule pays forgets back oldest first from these (see `rules::leaked_permit`).
    pub(crate) forgot_total: AtomicU64,
    pub(crate) added_total: AtomicU64,
    /// Where the latest forgotten permits were acquired (null: not known), for reports.
    pub(crate) forgot_site: AtomicPtr<Location<'static>>,
    pub(crate) closed: AtomicBool,
    /// Bumped by capacity changes and `close`: progress that is not a release.
    pub(crate) epoch: AtomicU64,
    /// Waiters queued now (kept equal to the queue length under its lock; read without it).
    pub(crate) waiting: AtomicU32,
    /// The actor that created it (raw id).
    pub(crate) creator: u64,
    pub(crate) stats: Stats,
    pub(crate) waiters: Mutex<WaitQueue>,
    /// Predecessors `A` for which the lock-order edge `A -> self` is already known.
    pub(crate) order_cache: [AtomicU64; 4],
    /// Its tokio-console resource (empty without the `console` feature).
    pub(crate) resource: crate::state::console::Resource,
}

impl Prim {
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
        // SAFETY: only `&'static Location`s are stored (in `hooks::forgot`), or null.
        unsafe { self.forgot_site.load(Ordering::Relaxed).as_ref() }
    }
    /// Its statistics now (with the short holds tallied on threads' tables).
    pub fn stats(&self) -> StatsSnapshot {
        self.stats_with(crate::state::held::tally_of(self.id.0))
    }

    /// [`stats`](Prim::stats) with its tallied short holds already summed.
    pub(crate) fn stats_with(&self, tallied: u64) -> StatsSnapshot {
        let mut st = self.stats.read();
        st.hold.buckets[0] += tallied;
        st
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
        self.progress_with(crate::state::held::tally_of(self.id.0))
    }

    /// [`progress`](Prim::progress) with its tallied short holds already summed.
    pub(crate) fn progress_with(&self, tallied: u64) -> u64 {
        self.released_with(tallied) + self.epoch.load(Ordering::Relaxed)
    }

    /// Acquisitions released so far, with its tallied short holds already summed.
    pub(crate) fn released_with(&self, tallied: u64) -> u64 {
        self.stats.hold.read().count() + tallied
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
    let (series, name) = series_for(&name, kind);
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
        creator: actor::current().as_u64(),
        stats: Stats::default(),
        waiters: Mutex::new(WaitQueue::default()),
        order_cache: Default::default(),
        resource,
    });
    REGISTRY[id as usize % SHARDS]
        .lock()
        .insert(id, prim.clone());
    // The first primitive starts the watchdog (and the clock thread): a program that only
    // swapped its imports gets its deadlocks, stuck queues, starvation and leaks found too.
    if crate::base::config::enabled() {
        crate::runtime::watchdog::ensure_started();
    }
    prim
}

/// Removes a primitive (its wrapper was dropped): folds its statistics into its series and
/// drops its lock-order edges.
pub fn unregister(prim: &Prim) {
    // Under the series lock, so that a scrape (which holds it across its walk) sees this
    // primitive either live or retired, never neither: counters must not go backwards.
    let mut series = SERIES.lock();
    let removed = REGISTRY[prim.id.0 as usize % SHARDS]
        .lock()
        .remove(&prim.id.0);
    if removed.is_none() {
        return;
    }
    // The tallies are final: nothing releases a hold of a primitive being dropped.
    let mut st = prim.stats.read();
    st.hold.buckets[0] += crate::state::held::claim_tallies(prim.id.0);
    if let Some(s) = series.series.get_mut(prim.series as usize) {
        s.retired.merge(&st);
    }
    drop(series);
    if prim.forgotten() > 0 && crate::runtime::scope::is_armed(prim.scope) {
        // A test's semaphore dropped with permits forgotten: they can never come back now.
        crate::rules::leaked_permit::report_dropped_forgotten(prim);
    }
    if crate::runtime::scope::is_armed(prim.scope) {
        // A borrowed guard cannot outlive its primitive, so a hold still in the books now was
        // leaked (`std::mem::forget`, `Box::leak`): it can never be released.
        crate::rules::leaked_permit::report_dropped_with_holds(prim);
    }
    crate::analysis::graph::lockorder::remove_node(prim.id);
    crate::report::finding::primitive_dropped(prim.id);
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

// ---------------------------------------------------------------------------------------------
// PrimCell: the wrapper's handle, registered eagerly or on first use
// ---------------------------------------------------------------------------------------------

/// The handle a wrapper keeps to its [`Prim`]. `const` constructors build an empty cell that
/// registers on first use; the others register at once.
pub struct PrimCell {
    ptr: AtomicPtr<Prim>,
    kind: PrimKind,
    site: &'static Location<'static>,
    init_capacity: u64,
}

impl PrimCell {
    /// A registered cell (non-`const` constructors).
    pub fn new(
        name: Option<Cow<'_, str>>,
        kind: PrimKind,
        site: &'static Location<'static>,
        capacity: u64,
    ) -> PrimCell {
        let prim = register(name, kind, site, capacity);
        PrimCell {
            ptr: AtomicPtr::new(Arc::into_raw(prim).cast_mut()),
            kind,
            site,
            init_capacity: capacity,
        }
    }

    /// An unregistered cell for `const` constructors; it registers on first [`get`](Self::get).
    pub const fn lazy(kind: PrimKind, site: &'static Location<'static>, capacity: u64) -> PrimCell {
        PrimCell {
            ptr: AtomicPtr::new(std::ptr::null_mut()),
            kind,
            site,
            init_capacity: capacity,
        }
    }

    /// The primitive, registering it first if this cell is lazy.
    #[inline]
    pub fn get(&self) -> &Prim {
        // Acquire: pairs with the Release publish in `init`, so the Prim's fields are visible.
        let p = self.ptr.load(Ordering::Acquire);
        if p.is_null() {
            return self.init();
        }
        // SAFETY: a non-null pointer came from `Arc::into_raw` in `new`/`init`; this cell owns
        // that reference until `drop`, which needs `&mut self`, so it outlives `&self`.
        unsafe { &*p }
    }

    #[cold]
    #[inline(never)]
    fn init(&self) -> &Prim {
        let fresh = Arc::into_raw(register(None, self.kind, self.site, self.init_capacity));
        // AcqRel: publishes the new Prim (Release) and, on failure, reads the winner's (Acquire).
        match self.ptr.compare_exchange(
            std::ptr::null_mut(),
            fresh.cast_mut(),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // SAFETY: we just stored `fresh`, a live Arc reference owned by this cell.
            Ok(_) => unsafe { &*fresh },
            Err(winner) => {
                // SAFETY: `fresh` came from `Arc::into_raw` above and was never shared.
                let lost = unsafe { Arc::from_raw(fresh) };
                unregister(&lost);
                // SAFETY: `winner` is the non-null pointer another thread published; owned by
                // this cell until drop.
                unsafe { &*winner }
            }
        }
    }

    /// The primitive if registered, without registering it.
    pub fn try_get(&self) -> Option<&Prim> {
        let p = self.ptr.load(Ordering::Acquire);
        // SAFETY: as in `get`.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// The kind given at construction.
    pub fn kind(&self) -> PrimKind {
        self.kind
    }

    /// The creation site.
    pub fn site(&self) -> &'static Location<'static> {
        self.site
    }
}

impl Drop for PrimCell {
    fn drop(&mut self) {
        let p = *self.ptr.get_mut();
        if !p.is_null() {
            // SAFETY: the pointer came from `Arc::into_raw` and this is the cell's only release.
            let prim = unsafe { Arc::from_raw(p) };
            unregister(&prim);
        }
    }
}

impl std::fmt::Debug for PrimCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.try_get() {
            Some(p) => write!(f, "{:?}", p.name()),
            None => write!(f, "{:?}", site_name(self.site)),
        }
    }
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
    fn memory_per_primitive_stays_within_budget() {
        // The performance budget: <= 512 bytes per live primitive beyond the raw one
        // (registry + statistics). Prim lives in an Arc (16 bytes of counts), the registry
        // map holds (u64, Arc) plus a control byte, the wrapper a PrimCell.
        let total = std::mem::size_of::<Prim>()
            + 16
            + std::mem::size_of::<(u64, Arc<Prim>)>()
            + 1
            + std::mem::size_of::<PrimCell>();
        println!("Prim {} bytes, total {total}", std::mem::size_of::<Prim>());
        assert!(total <= 512, "{total} bytes per primitive");
    }

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
