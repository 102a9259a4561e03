//! Findings: what the rules report, kept once each, logged, counted and handed to armed tests.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;
use serde::Serialize;

use crate::base::{clock, config, names};
use crate::runtime::scope;
use crate::state::prim::PrimitiveId;

/// The kind of a finding (API.md's table).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FindingKind {
    /// Tasks or threads that can never proceed.
    Deadlock,
    /// A primitive acquired, or waited for, by its own holder.
    NestedAcquire,
    /// Primitives taken in inconsistent orders.
    LockOrderInversion,
    /// Permits that are not coming back.
    LeakedPermit,
    /// Waiters queued past the stuck threshold while nothing was granted.
    StuckQueue,
    /// A waiter bypassed, or a contended primitive held, past the starvation threshold.
    Starvation,
    /// A blocking lock waited for, or held across `.await`, on an async worker.
    BlockingInAsync,
}

impl FindingKind {
    /// Every kind, in API.md's order.
    pub const ALL: [FindingKind; 7] = [
        FindingKind::Deadlock,
        FindingKind::NestedAcquire,
        FindingKind::LockOrderInversion,
        FindingKind::LeakedPermit,
        FindingKind::StuckQueue,
        FindingKind::Starvation,
        FindingKind::BlockingInAsync,
    ];

    /// The kind string, e.g. `"lock-order-inversion"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            FindingKind::Deadlock => names::FINDING_DEADLOCK,
            FindingKind::NestedAcquire => names::FINDING_NESTED_ACQUIRE,
            FindingKind::LockOrderInversion => names::FINDING_LOCK_ORDER_INVERSION,
            FindingKind::LeakedPermit => names::FINDING_LEAKED_PERMIT,
            FindingKind::StuckQueue => names::FINDING_STUCK_QUEUE,
            FindingKind::Starvation => names::FINDING_STARVATION,
            FindingKind::BlockingInAsync => names::FINDING_BLOCKING_IN_ASYNC,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for FindingKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FindingKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A primitive named in a finding.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PrimRef {
    /// Its id.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// Its kind string.
    pub kind: &'static str,
    /// Where it was created (`file:line:col`).
    pub created_at: String,
    /// Which of the unnamed primitives created at that site it is (1 for the first), or 0
    /// when that tells nothing: it has a name of its own, or it is the only one so far.
    pub instance: u32,
}

impl PrimRef {
    /// Its name as reports show it: with `#<instance>` when there is one
    /// (`src/lib.rs:59#2`: the second primitive created on that line).
    pub fn label(&self) -> String {
        if self.instance > 0 {
            format!("{}#{}", self.name, self.instance)
        } else {
            self.name.clone()
        }
    }
}

impl std::fmt::Display for PrimRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {:?} (created at {})",
            self.kind,
            self.label(),
            self.created_at
        )
    }
}

/// A hold or a wait of one actor, as a report shows it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Access {
    /// The primitive.
    pub primitive: PrimRef,
    /// `lock`, `read`, `write`, `acquire`, ...
    pub mode: &'static str,
    /// Permits held or wanted.
    pub permits: u32,
    /// Call site of the acquisition.
    pub site: String,
    /// For how long, in milliseconds, when the report was made.
    pub for_ms: u64,
}

/// A task or thread named in a finding, with what it holds and waits for.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ActorReport {
    /// Raw actor id (see `ActorId::as_u64`).
    pub id: u64,
    /// `task 12` or `thread 'main' (#1)`.
    pub name: String,
    /// What it holds.
    pub holds: Vec<Access>,
    /// What it waits for.
    pub waits: Vec<Access>,
}

/// One lock-order edge: `from` was held while `to` was acquired.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct OrderEdge {
    /// Held primitive.
    pub from: PrimRef,
    /// Acquired primitive.
    pub to: PrimRef,
    /// Where `from` was acquired.
    pub from_site: String,
    /// Where `to` was acquired while `from` was held.
    pub to_site: String,
    /// Who did it first.
    pub actor: String,
}

/// One finding: a kind, the primitives and actors involved, and the sites.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Finding {
    /// The kind.
    pub kind: FindingKind,
    /// One sentence after `lockscope: <kind>: `.
    pub summary: String,
    /// Primitives involved.
    pub primitives: Vec<PrimRef>,
    /// Tasks and threads involved, each with its holds and waits.
    pub actors: Vec<ActorReport>,
    /// Lock-order edges (inversions).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub orders: Vec<OrderEdge>,
    /// Further explanation, one line each (e.g. the locking scenario table).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
    /// Every call site named, in order of appearance.
    pub sites: Vec<String>,
    /// A one-line suggested fix.
    pub fix: String,
    /// When it was first seen (Unix ms).
    pub first_seen_unix_ms: u64,
    /// Whether it still holds now.
    pub active: bool,
    #[serde(skip)]
    pub(crate) key: String,
    #[serde(skip)]
    pub(crate) scopes: Vec<u32>,
    #[serde(skip)]
    pub(crate) prim_ids: Vec<PrimitiveId>,
}

impl Finding {
    /// A finding of `kind` with `summary`; rules fill in the rest.
    pub(crate) fn new(kind: FindingKind, key: String, summary: String) -> Finding {
        Finding {
            kind,
            summary,
            primitives: Vec::new(),
            actors: Vec::new(),
            orders: Vec::new(),
            details: Vec::new(),
            sites: Vec::new(),
            fix: String::new(),
            first_seen_unix_ms: clock::unix_ms(),
            active: true,
            key,
            scopes: Vec::new(),
            prim_ids: Vec::new(),
        }
    }

    /// The deduplication key (kind plus what identifies this occurrence).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether this finding involves the primitive named `name`.
    pub fn involves(&self, name: &str) -> bool {
        self.primitives.iter().any(|p| p.name == name)
    }

    pub(crate) fn add_prim(&mut self, p: PrimRef) {
        if !self.primitives.iter().any(|q| q.id == p.id) {
            self.prim_ids.push(PrimitiveId(p.id));
            self.primitives.push(p);
        }
    }

    pub(crate) fn add_scope(&mut self, s: u32) {
        if s != 0 && !self.scopes.contains(&s) {
            self.scopes.push(s);
        }
    }

    pub(crate) fn add_site(&mut self, s: &str) {
        if !self.sites.iter().any(|x| x == s) {
            self.sites.push(s.to_owned());
        }
    }

    /// Collects every site of actors and orders into `sites`.
    pub(crate) fn collect_sites(&mut self) {
        let mut all = Vec::new();
        for a in &self.actors {
            for x in a.holds.iter().chain(&a.waits) {
                all.push(x.site.clone());
            }
        }
        for o in &self.orders {
            all.push(o.from_site.clone());
            all.push(o.to_site.clone());
        }
        for s in all {
            self.add_site(&s);
        }
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::new();
        let _ = writeln!(out, "lockscope: {}: {}", self.kind, self.summary);
        for a in &self.actors {
            let _ = writeln!(out, "  {}:", a.name);
            for h in &a.holds {
                let _ = writeln!(
                    out,
                    "    holds     {} {} ({}) for {} ms, acquired at {}",
                    h.primitive.kind,
                    quoted(&h.primitive.label()),
                    how(h),
                    h.for_ms,
                    h.site
                );
            }
            for w in &a.waits {
                let _ = writeln!(
                    out,
                    "    waits for {} {} ({}) for {} ms, at {}",
                    w.primitive.kind,
                    quoted(&w.primitive.label()),
                    how(w),
                    w.for_ms,
                    w.site
                );
            }
        }
        for d in &self.details {
            let _ = writeln!(out, "  {d}");
        }
        if !self.primitives.is_empty() {
            let _ = writeln!(out, "  primitives:");
            for p in &self.primitives {
                let _ = writeln!(out, "    {p}");
            }
        }
        if !self.fix.is_empty() {
            let _ = writeln!(out, "  fix: {}", self.fix);
        }
        f.write_str(out.trim_end())
    }
}

fn quoted(s: &str) -> String {
    format!("{s:?}")
}

/// `lock`, `read`, `acquire 1 permit`, `acquire 3 permits`, `write`.
fn how(a: &Access) -> String {
    match (a.mode, a.permits) {
        ("acquire", 1) => "acquire 1 permit".into(),
        ("acquire", n) => format!("acquire {n} permits"),
        (m, _) => m.to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// The store
// ---------------------------------------------------------------------------------------------

pub(crate) struct Rec {
    pub(crate) finding: Finding,
    pub(crate) active: AtomicBool,
}

#[derive(Default)]
struct Store {
    list: VecDeque<Arc<Rec>>,
    by_key: HashMap<String, Arc<Rec>>,
}

static STORE: LazyLock<Mutex<Store>> = LazyLock::new(Mutex::default);
static TOTALS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];

/// Counters of what the detector dropped to stay within its memory bounds.
pub(crate) static DROPPED_FINDINGS: AtomicU64 = AtomicU64::new(0);
pub(crate) static DROPPED_EDGES: AtomicU64 = AtomicU64::new(0);
pub(crate) static DROPPED_EVENTS: AtomicU64 = AtomicU64::new(0);

/// Reports a finding: logged and counted the first time its key is seen; a known key that had
/// stopped holding is marked active again. Returns whether it was new.
pub(crate) fn report(mut f: Finding) -> bool {
    f.key = format!("{}:{}", f.kind, f.key);
    if f.sites.is_empty() {
        f.collect_sites();
    }
    let rec = {
        let mut s = STORE.lock();
        if let Some(old) = s.by_key.get(&f.key).cloned() {
            old.active.store(true, Ordering::Relaxed);
            drop(s);
            // The same bug seen again, maybe by another test: it fails that test too, with
            // this sighting (its own tasks and threads), not the first test's.
            let scopes = f.scopes.clone();
            let sighting = Arc::new(Rec {
                active: AtomicBool::new(true),
                finding: f,
            });
            scope::deliver_to(&sighting, &scopes);
            return false;
        }
        let rec = Arc::new(Rec {
            active: AtomicBool::new(true),
            finding: f,
        });
        let max = config::current().max_findings;
        while s.list.len() >= max {
            if let Some(old) = s.list.pop_front() {
                s.by_key.remove(&old.finding.key);
                DROPPED_FINDINGS.fetch_add(1, Ordering::Relaxed);
            }
        }
        s.list.push_back(rec.clone());
        s.by_key.insert(rec.finding.key.clone(), rec.clone());
        rec
    };
    TOTALS[rec.finding.kind.index()].fetch_add(1, Ordering::Relaxed);
    let text = rec.finding.to_string();
    if rec.finding.kind == FindingKind::Deadlock {
        tracing::error!(target: "lockscope::detector", kind = rec.finding.kind.as_str(), "{text}");
    } else {
        tracing::warn!(target: "lockscope::detector", kind = rec.finding.kind.as_str(), "{text}");
    }
    // A program that only swapped its imports may have no tracing subscriber at all: the
    // report must not vanish. (An armed test gets it in its failure message instead.)
    if !tracing::dispatcher::has_been_set()
        && tracing::dispatcher::get_default(|d| d.is::<tracing::subscriber::NoSubscriber>())
        && !scope::any_armed()
    {
        to_stderr(&text);
    }
    scope::deliver(&rec);
    true
}

/// Writes `text` and a newline to the process's stderr stream itself, not through
/// `eprintln!`: the test harness captures the print macros per test, and the watchdog thread
/// inherits the capture of the test that happened to start it, so a finding it printed after
/// that test ended would be dropped (a plain `#[tokio::test]` suite would never show it).
pub(crate) fn to_stderr(text: &str) {
    use std::io::Write as _;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
    let _ = err.flush();
}

/// Marks findings of `kind` whose keys are not in `still` as no longer holding.
pub(crate) fn retain_active(kind: FindingKind, still: &std::collections::HashSet<String>) {
    let s = STORE.lock();
    for r in &s.list {
        if r.finding.kind == kind && !still.contains(&r.finding.key) {
            r.active.store(false, Ordering::Relaxed);
        }
    }
}

/// A primitive was dropped: findings naming it stop holding.
pub(crate) fn primitive_dropped(id: PrimitiveId) {
    let s = STORE.lock();
    for r in &s.list {
        if r.finding.prim_ids.contains(&id) {
            r.active.store(false, Ordering::Relaxed);
        }
    }
}

pub(crate) fn materialize(r: &Rec) -> Finding {
    let mut f = r.finding.clone();
    f.active = r.active.load(Ordering::Relaxed);
    f
}

/// Every finding kept, oldest first.
pub fn findings() -> Vec<Finding> {
    STORE.lock().list.iter().map(|r| materialize(r)).collect()
}

/// Findings made so far, per kind (monotonic; `lockscope_findings_total`).
pub fn totals() -> Vec<(FindingKind, u64)> {
    FindingKind::ALL
        .iter()
        .map(|k| (*k, TOTALS[k.index()].load(Ordering::Relaxed)))
        .collect()
}

/// Findings that still hold now, per kind (`lockscope_active_findings`).
pub fn active_counts() -> Vec<(FindingKind, u64)> {
    let s = STORE.lock();
    FindingKind::ALL
        .iter()
        .map(|k| {
            let n = s
                .list
                .iter()
                .filter(|r| r.finding.kind == *k && r.active.load(Ordering::Relaxed))
                .count();
            (*k, n as u64)
        })
        .collect()
}

/// What the detector dropped to stay bounded: `(what, count)` for `findings`, `edges`,
/// `events`, and `tick`: watchdog analyses lost to a panicking rule
/// (`lockscope_detector_dropped_total`).
pub fn dropped_counts() -> [(&'static str, u64); 4] {
    [
        ("findings", DROPPED_FINDINGS.load(Ordering::Relaxed)),
        ("edges", DROPPED_EDGES.load(Ordering::Relaxed)),
        ("events", DROPPED_EVENTS.load(Ordering::Relaxed)),
        ("tick", crate::runtime::watchdog::panicked_ticks()),
    ]
}

/// Forgets every finding (totals stay: they are monotonic counters).
pub fn clear_findings() {
    let mut s = STORE.lock();
    s.list.clear();
    s.by_key.clear();
}

/// Panics with the report if any finding was made.
///
/// # Panics
///
/// When [`findings`] is not empty; the message lists every finding, each starting
/// `lockscope: <kind>`.
#[track_caller]
pub fn assert_clean() {
    crate::rules::leaked_permit::check_end_of_scope(0);
    let all = findings();
    if !all.is_empty() {
        panic!("{}", render_all(&all));
    }
}

/// All findings as one report.
pub fn render_all(all: &[Finding]) -> String {
    let mut out = format!(
        "lockscope found {} problem{}:\n",
        all.len(),
        if all.len() == 1 { "" } else { "s" }
    );
    for f in all {
        let _ = writeln!(out, "\n{f}");
    }
    out
}

pub(crate) fn store_lock() -> parking_lot::MutexGuard<'static, impl Sized> {
    STORE.lock()
}
