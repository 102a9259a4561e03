//! Findings sighted on the acquiring thread, built and reported off it.
//!
//! A nested acquire or a new lock-order edge is sighted inside the user's critical section:
//! building its finding there (names, sites, keys, the scenario table, the text of the
//! tracing event) would lengthen every such section and slow the very loop that repeats the
//! bug. So the hook records only what the report needs, as owned small data (the primitives
//! as `Arc`s, which keep a name after the primitive is dropped; the holds, sites, actor,
//! scope and a timestamp), with the [`Sink`] of the acquiring thread: its current tracing
//! dispatcher and span, so that a test's thread-local subscriber (`with_default`) still gets
//! the event. The finding is built later, by [`drain`]:
//!
//! - on the watchdog thread, which the first record after a drain wakes at once (and on each
//!   tick, before the rules run, so that a self-deadlock that follows its nested acquire is
//!   reported with it);
//! - before anything reads findings: [`findings`](super::finding::findings), the totals and
//!   active counts, a test scope's findings (its `finish`, and the watchdog's checks of armed
//!   tests), and so [`check_now`](crate::check_now) and the exporter's pages, which go
//!   through them. A drain waits for one in progress on another thread, so a read right
//!   after a sighting sees its finding.
//!
//! Nothing is lost: with no watchdog thread running (it failed to start, or has not started
//! yet), or with the queue full, the finding is built and reported on the acquiring thread,
//! as before. A repeat is dropped cheaply: an occurrence (rule, primitive, sites, scopes)
//! pending or already reported is not queued again, first by a per-thread memo of the
//! thread's last one (no lock), else under the queue's lock. The queue's lock is taken only on
//! this path, never on an uncontended acquisition.

use std::cell::Cell;
use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, Location};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};
use std::thread::Thread;

use parking_lot::Mutex;

use crate::model::finding::Finding;
use crate::report::finding;
use crate::state::prim::{self, Prim};

/// Records pending at most: past this, a sighting is reported on its own thread.
const MAX_PENDING: usize = 256;
/// Occurrences remembered as reported at most: past this, the memory starts over (a repeat
/// is then built once more and found known by the store).
const MAX_DONE: usize = 4096;

/// One occurrence of a sighting, as cheaply as it can be told apart: the rule, the
/// primitive, the two sites (by address) and the test scopes it belongs to. Not the actor:
/// another task or thread of the same tests repeating the bug adds nothing (the store keeps
/// the first sighting, and each of those tests has it already).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct Occurrence {
    rule: u8,
    prim: u64,
    held_site: usize,
    site: usize,
    scopes: (u32, u32),
}

impl Occurrence {
    /// A nested acquire: an actor (in test scope `scope`) acquires `prim` at `site`, which it
    /// holds from `held_site` (taken in scope `held_scope`).
    pub(crate) fn nested(
        prim: &Prim,
        held_site: &'static Location<'static>,
        site: &'static Location<'static>,
        scope: u32,
        held_scope: u32,
    ) -> Occurrence {
        Occurrence {
            rule: 1,
            prim: prim.id().0,
            held_site: std::ptr::from_ref(held_site).addr(),
            site: std::ptr::from_ref(site).addr(),
            scopes: (scope, held_scope),
        }
    }
}

/// Where the acquiring thread's tracing events went when the sighting was made: its current
/// dispatcher (a test's thread-local subscriber, or the global one) and span.
pub(crate) struct Sink {
    dispatch: tracing::Dispatch,
    span: tracing::Span,
}

impl Sink {
    /// This thread's sink now.
    fn here() -> Sink {
        Sink {
            dispatch: tracing::dispatcher::get_default(tracing::Dispatch::clone),
            span: tracing::Span::current(),
        }
    }

    /// Runs `emit` as if on the sighting's thread: under its dispatcher, in its span. A
    /// sighting thread with no subscriber at all is not dispatched to: setting even a scoped
    /// no-op dispatcher marks the process as having had one (`dispatcher::has_been_set`),
    /// which would silence the stderr fallback of every later report.
    pub(crate) fn emit(&self, emit: impl FnOnce()) {
        if self.dispatch.is::<tracing::subscriber::NoSubscriber>() {
            emit();
        } else {
            tracing::dispatcher::with_default(&self.dispatch, || self.span.in_scope(emit));
        }
    }
}

/// What builds the findings of one sighting, from the primitives it pinned.
type Build = Box<dyn FnOnce(&[Arc<Prim>]) -> Vec<Finding> + Send>;

struct Deferred {
    what: Option<Occurrence>,
    pins: Vec<Arc<Prim>>,
    sink: Sink,
    build: Build,
}

#[derive(Default)]
struct Queue {
    list: Vec<Deferred>,
    pending: HashSet<Occurrence>,
    done: HashSet<Occurrence>,
    /// The value of [`FORGET`] when `done` was last valid.
    epoch: u64,
}

impl Queue {
    /// Empties `done` if the store forgot findings since (see [`forget_reported`]).
    fn refresh(&mut self) -> u64 {
        let now = FORGET.load(Ordering::Acquire);
        if self.epoch != now {
            self.done.clear();
            self.epoch = now;
        }
        now
    }
}

static QUEUE: LazyLock<Mutex<Queue>> = LazyLock::new(Mutex::default);
/// Held while a batch is built and reported: a reader's drain waits for one in progress.
static DRAINING: Mutex<()> = Mutex::new(());
/// Some record is pending or being reported (cleared by a drain that found none left).
static WAITING: AtomicBool = AtomicBool::new(false);
/// Bumped when repeats must be reported again (see [`forget_reported`]).
static FORGET: AtomicU64 = AtomicU64::new(0);
/// The watchdog thread, once it runs: it drains, and is woken for a new record.
static DRAINER: OnceLock<Thread> = OnceLock::new();

thread_local! {
    /// The last occurrence this thread queued or found known, with the [`FORGET`] epoch then.
    static LAST: Cell<Option<(Occurrence, u64)>> = const { Cell::new(None) };
    /// Findings built on this thread (see [`built_here`]).
    static BUILT: Cell<u64> = const { Cell::new(0) };
    /// This thread is draining (a subscriber that reads findings must not drain again).
    static IN_DRAIN: Cell<bool> = const { Cell::new(false) };
}

/// The watchdog thread runs and drains from now on (called on that thread).
pub(crate) fn set_drainer() {
    let _ = DRAINER.set(std::thread::current());
}

/// Whether some record waits for a [`drain`].
pub(crate) fn waiting() -> bool {
    WAITING.load(Ordering::Acquire)
}

/// A repeat must be reported again: the store forgot findings (cleared, or dropped the
/// oldest), or a test was armed (a finding of no test goes to every test armed when it is
/// reported, and the same bug seen again by another test fails that test too).
pub(crate) fn forget_reported() {
    FORGET.fetch_add(1, Ordering::AcqRel);
}

/// Whether `what` was queued or found known by this thread last (no lock taken): the repeat
/// of a loop is dropped here.
#[inline]
pub(crate) fn repeated(what: &Occurrence) -> bool {
    let epoch = FORGET.load(Ordering::Acquire);
    LAST.try_with(|l| l.get() == Some((*what, epoch)))
        .unwrap_or(false)
}

/// Hands a sighting on: `build` makes its findings from `pins` (the primitives it names,
/// kept alive until then), on the watchdog or before the next read (see the module docs);
/// on this thread when nobody would drain or the queue is full. `what`: the occurrence, for
/// dropping repeats (`None`: never a repeat).
#[cold]
pub(crate) fn defer(
    what: Option<Occurrence>,
    pins: Vec<Arc<Prim>>,
    build: impl FnOnce(&[Arc<Prim>]) -> Vec<Finding> + Send + 'static,
) {
    let drainer = DRAINER.get();
    // Taken before the queue's lock: it asks the subscriber for its current span.
    let sink = drainer.map(|_| Sink::here());
    let mut q = QUEUE.lock();
    let epoch = q.refresh();
    if let Some(w) = what
        && (q.pending.contains(&w) || q.done.contains(&w))
    {
        drop(q);
        remember(w, epoch);
        return;
    }
    let (Some(drainer), Some(sink)) = (drainer, sink) else {
        // Nobody would drain (the watchdog thread does not run): reported here, as before.
        drop(q);
        return report_here(what, &pins, Box::new(build));
    };
    if q.list.len() >= MAX_PENDING {
        // Bounded: a sighting past the bound cannot wait, and must not be lost.
        drop(q);
        return report_here(what, &pins, Box::new(build));
    }
    if let Some(w) = what {
        q.pending.insert(w);
        remember(w, epoch);
    }
    q.list.push(Deferred {
        what,
        pins,
        sink,
        build: Box::new(build),
    });
    WAITING.store(true, Ordering::Release);
    drop(q);
    drainer.unpark();
}

/// Remembers `what` as this thread's last occurrence, as of `epoch` (see [`FORGET`]).
fn remember(what: Occurrence, epoch: u64) {
    let _ = LAST.try_with(|l| l.set(Some((what, epoch))));
}

/// Builds and reports every pending sighting; returns once none is left, waiting for a drain
/// in progress on another thread. Each finding is kept and delivered to its tests before the
/// drain ends; the tracing events are sent after, each under its sighting's sink, so that a
/// subscriber never runs while a reader waits for the drain. A no-op on a thread already
/// draining (a subscriber that reads findings).
pub(crate) fn drain() {
    if !waiting() || IN_DRAIN.try_with(Cell::get).unwrap_or(true) {
        return;
    }
    /// Clears the thread's draining mark however the drain ends.
    struct Mark;
    impl Drop for Mark {
        fn drop(&mut self) {
            let _ = IN_DRAIN.try_with(|d| d.set(false));
        }
    }
    let _ = IN_DRAIN.try_with(|d| d.set(true));
    let _mark = Mark;
    let mut events = Vec::new();
    {
        let _one = DRAINING.lock();
        loop {
            let batch = {
                let mut q = QUEUE.lock();
                if q.list.is_empty() {
                    WAITING.store(false, Ordering::Release);
                    break;
                }
                std::mem::take(&mut q.list)
            };
            for d in batch {
                let new: Vec<finding::Event> = build_all(&d.pins, d.build)
                    .into_iter()
                    .filter_map(finding::report_quiet)
                    .collect();
                settle(d.what, &d.pins);
                events.push((new, d.sink));
            }
        }
    }
    for (new, sink) in &events {
        for e in new {
            e.emit(Some(sink));
        }
    }
}

/// Builds and reports one sighting's findings on this thread, with its event.
fn report_here(what: Option<Occurrence>, pins: &[Arc<Prim>], build: Build) {
    for f in build_all(pins, build) {
        finding::report(f);
    }
    settle(what, pins);
}

/// Builds one sighting's findings. A rule that panics loses its sighting, not the thread.
fn build_all(pins: &[Arc<Prim>], build: Build) -> Vec<Finding> {
    let _ = BUILT.try_with(|b| b.set(b.get() + 1));
    std::panic::catch_unwind(AssertUnwindSafe(|| build(pins))).unwrap_or_default()
}

/// After a sighting's findings were reported: a primitive dropped since the sighting makes
/// them stop holding (as they would have, reported before the drop), and the occurrence is
/// remembered as reported.
fn settle(what: Option<Occurrence>, pins: &[Arc<Prim>]) {
    for p in pins {
        if prim::get(p.id()).is_none() {
            finding::primitive_dropped(p.id());
        }
    }
    let Some(w) = what else { return };
    let mut q = QUEUE.lock();
    q.refresh();
    q.pending.remove(&w);
    if q.done.len() >= MAX_DONE {
        q.done.clear();
    }
    q.done.insert(w);
}

/// How many sightings wait to be reported now (for lockscope's own tests).
#[doc(hidden)]
pub fn pending_len() -> usize {
    QUEUE.lock().list.len()
}

/// How many sightings this thread has built and reported (for lockscope's own tests: a
/// sighting made inside a critical section must not be built there).
#[doc(hidden)]
pub fn built_here() -> u64 {
    BUILT.try_with(Cell::get).unwrap_or(0)
}
