//! Findings: what the rules report, kept once each, logged, counted and handed to armed tests.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use crate::analysis::graph::lockorder;
use crate::base::config;
use crate::model::finding::{Finding, FindingKind};
use crate::model::prim::PrimitiveId;
use crate::report::pending::{self, Sink};
use crate::report::scopes as scope;
use crate::state::held;

#[doc(hidden)]
pub use crate::report::pending::{built_here, pending_len};

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
/// Watchdog analyses lost to a panicking rule (counted by the watchdog).
pub(crate) static DROPPED_TICKS: AtomicU64 = AtomicU64::new(0);

/// Reports a finding: logged and counted the first time its key is seen; a known key that had
/// stopped holding is marked active again. Returns whether it was new.
pub(crate) fn report(f: Finding) -> bool {
    match keep(f) {
        Some(new) => {
            new.emit(None);
            scope::deliver(&new.rec);
            true
        }
        None => false,
    }
}

/// [`report`] but for the tracing event, returned for the caller to send (see
/// [`pending`](super::pending), which sends it under the sighting thread's sink once the
/// finding is kept and delivered). `None`: the finding was known.
pub(crate) fn report_quiet(f: Finding) -> Option<Event> {
    let new = keep(f)?;
    scope::deliver(&new.rec);
    Some(new)
}

/// The tracing event of a new finding (see [`report_quiet`]).
pub(crate) struct Event {
    rec: Arc<Rec>,
    text: String,
}

impl Event {
    /// Sends the event: to `sink` (the dispatcher and span of the thread that sighted the
    /// finding), else to this thread's subscriber; to stderr when there is none at all.
    pub(crate) fn emit(&self, sink: Option<&Sink>) {
        let (f, text) = (&self.rec.finding, &self.text);
        let emit = || {
            if f.kind == FindingKind::Deadlock {
                tracing::error!(target: "lockscope::detector", kind = f.kind.as_str(), "{text}");
            } else {
                tracing::warn!(target: "lockscope::detector", kind = f.kind.as_str(), "{text}");
            }
            // A program that only swapped its imports may have no tracing subscriber at all:
            // the report must not vanish. (An armed test gets it in its failure message
            // instead.)
            if !tracing::dispatcher::has_been_set()
                && tracing::dispatcher::get_default(|d| d.is::<tracing::subscriber::NoSubscriber>())
                && !scope::any_armed()
            {
                to_stderr(text);
            }
        };
        match sink {
            Some(sink) => sink.emit(emit),
            None => emit(),
        }
    }
}

/// Keeps and counts `f` if its key is new, and returns its event to send and deliver; a
/// known key is marked active again and this sighting delivered to its scopes.
fn keep(mut f: Finding) -> Option<Event> {
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
            return None;
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
                pending::forget_reported();
            }
        }
        s.list.push_back(rec.clone());
        s.by_key.insert(rec.finding.key.clone(), rec.clone());
        rec
    };
    TOTALS[rec.finding.kind.index()].fetch_add(1, Ordering::Relaxed);
    let text = rec.finding.to_string();
    Some(Event { rec, text })
}

/// Whether a finding with `f`'s kind and key was reported before (and is still kept).
pub(crate) fn known(f: &Finding) -> bool {
    STORE
        .lock()
        .by_key
        .contains_key(&format!("{}:{}", f.kind, f.key))
}

/// Reports each of `found` (see [`report`]): how the runtime hands a rule's verdicts on.
pub(crate) fn report_all(found: impl IntoIterator<Item = Finding>) {
    for f in found {
        report(f);
    }
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

/// Every finding kept, oldest first (sightings still pending are reported first).
pub fn findings() -> Vec<Finding> {
    pending::drain();
    STORE.lock().list.iter().map(|r| materialize(r)).collect()
}

/// Findings made so far, per kind (monotonic; `lockscope_findings_total`).
pub fn totals() -> Vec<(FindingKind, u64)> {
    pending::drain();
    FindingKind::ALL
        .iter()
        .map(|k| (*k, TOTALS[k.index()].load(Ordering::Relaxed)))
        .collect()
}

/// Findings that still hold now, per kind (`lockscope_active_findings`).
pub fn active_counts() -> Vec<(FindingKind, u64)> {
    pending::drain();
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
/// `events` (holds of a task its fixed-size task index had no room for, which a nested-acquire
/// check may then miss), and `tick`: watchdog analyses lost to a panicking rule
/// (`lockscope_detector_dropped_total`).
pub fn dropped_counts() -> [(&'static str, u64); 4] {
    [
        ("findings", DROPPED_FINDINGS.load(Ordering::Relaxed)),
        ("edges", lockorder::DROPPED_EDGES.load(Ordering::Relaxed)),
        ("events", held::UNINDEXED.load(Ordering::Relaxed)),
        ("tick", DROPPED_TICKS.load(Ordering::Relaxed)),
    ]
}

/// Forgets every finding (totals stay: they are monotonic counters).
pub fn clear_findings() {
    pending::drain();
    let mut s = STORE.lock();
    s.list.clear();
    s.by_key.clear();
    pending::forget_reported();
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
