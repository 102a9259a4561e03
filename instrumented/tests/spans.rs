//! Spans and events as API.md says: target `lockscope`, span `acquire` with `lock`, `kind`,
//! `permits`, `site` (the caller's `file:line:col`), and inside it `acquiring`, `acquired`
//! (`wait_ms`), `released` (`hold_ms`) in order; `cancelled`, `timed_out` and `gave_up` for
//! the acquisitions that end without a guard. With a subscriber that filters `lockscope` out,
//! no span is built (the layer sees nothing) while the detector still keeps its books.
//!
//! A tiny capturing `Layer` stands in for `tracing-mock`. Each test installs its own
//! subscriber for the current thread only (`with_default`) and drives its futures on that
//! thread (a current-thread runtime, or `tokio_test` polling). Tests take a process-wide lock
//! because tracing caches each callsite's interest across all live subscribers, and a
//! filtering subscriber alive at the same moment would make that cache part of the outcome.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex as StdMutex, MutexGuard as StdGuard};
use std::time::Duration;

use lockscope::tokio::{Mutex, RwLock, Semaphore};
use tokio_test::task::spawn;
use tokio_test::{assert_pending, assert_ready};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

// ---------------------------------------------------------------------------------------------
// The capturing layer
// ---------------------------------------------------------------------------------------------

/// One event as captured.
#[derive(Clone, Debug)]
struct EventRec {
    name: String,
    target: String,
    fields: BTreeMap<String, String>,
}

/// One span as captured, with the events whose parent it is, in order.
#[derive(Clone, Debug)]
struct SpanRec {
    name: String,
    target: String,
    level: tracing::Level,
    fields: BTreeMap<String, String>,
    events: Vec<EventRec>,
    closed: bool,
}

#[derive(Default)]
struct Captured {
    spans: Vec<SpanRec>,
    /// Registry span id -> index in `spans` (ids are reused after close).
    live: HashMap<u64, usize>,
    /// Events with no captured parent.
    orphans: Vec<EventRec>,
    /// Every callsite the layer was asked about with target `lockscope`.
    lockscope_callsites: usize,
}

#[derive(Clone, Default)]
struct Capture(Arc<StdMutex<Captured>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S> Layer<S> for Capture
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let meta = attrs.metadata();
        let mut c = self.0.lock().unwrap();
        if meta.target() == "lockscope" {
            c.lockscope_callsites += 1;
        }
        let i = c.spans.len();
        c.spans.push(SpanRec {
            name: meta.name().to_owned(),
            target: meta.target().to_owned(),
            level: *meta.level(),
            fields,
            events: Vec::new(),
            closed: false,
        });
        c.live.insert(id.into_u64(), i);
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        fields.remove("message");
        let rec = EventRec {
            name: event.metadata().name().to_owned(),
            target: event.metadata().target().to_owned(),
            fields,
        };
        let parent = ctx.event_span(event).map(|s| s.id().into_u64());
        let mut c = self.0.lock().unwrap();
        if event.metadata().target() == "lockscope" {
            c.lockscope_callsites += 1;
        }
        match parent.and_then(|p| c.live.get(&p).copied()) {
            Some(i) => c.spans[i].events.push(rec),
            None => c.orphans.push(rec),
        }
    }

    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        let mut c = self.0.lock().unwrap();
        if let Some(i) = c.live.remove(&id.into_u64()) {
            c.spans[i].closed = true;
        }
    }
}

impl Capture {
    /// The `acquire` spans of the primitive named `lock`, in creation order.
    fn acquires(&self, lock: &str) -> Vec<SpanRec> {
        self.0
            .lock()
            .unwrap()
            .spans
            .iter()
            .filter(|s| {
                s.name == "acquire" && s.fields.get("lock").map(String::as_str) == Some(lock)
            })
            .cloned()
            .collect()
    }

    fn nothing_from_lockscope(&self) -> bool {
        let c = self.0.lock().unwrap();
        c.lockscope_callsites == 0
            && c.spans.iter().all(|s| !s.target.starts_with("lockscope"))
            && c.orphans.iter().all(|e| e.target != "lockscope")
    }
}

impl SpanRec {
    fn event_names(&self) -> Vec<&str> {
        self.events.iter().map(|e| e.name.as_str()).collect()
    }

    fn event(&self, name: &str) -> &EventRec {
        self.events
            .iter()
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("no {name:?} event in {self:#?}"))
    }

    fn field(&self, name: &str) -> &str {
        self.fields
            .get(name)
            .unwrap_or_else(|| panic!("no field {name:?} in {self:#?}"))
    }
}

impl EventRec {
    /// A numeric field, which must be a finite, non-negative number of milliseconds.
    fn ms(&self, name: &str) -> f64 {
        let v: f64 = self
            .fields
            .get(name)
            .unwrap_or_else(|| panic!("no field {name:?} in {self:#?}"))
            .parse()
            .unwrap_or_else(|e| panic!("field {name:?} of {self:#?} is not a number: {e}"));
        assert!(v.is_finite() && v >= 0.0, "{name} = {v}");
        v
    }
}

/// Runs `f` with only `capture` as this thread's subscriber, one test at a time.
fn with_capture<R>(f: impl FnOnce(&Capture) -> R) -> R {
    let _serial = serial();
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    tracing::subscriber::with_default(subscriber, || f(&capture))
}

fn serial() -> StdGuard<'static, ()> {
    static SERIAL: StdMutex<()> = StdMutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn current_thread(paused: bool) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(paused)
        .build()
        .unwrap()
}

/// Checks `site` is `file:line:col` for the method call `needle` (`receiver.method(`) on
/// `line` of this file: `col` is the 1-based column where the method name starts, which is
/// where rustc puts the caller location of a method call.
fn assert_site(site: &str, line: u32, needle: &str) {
    let src = include_str!("spans.rs");
    let text = src.lines().nth(line as usize - 1).unwrap();
    let call = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not on line {line}: {text:?}"));
    let method = needle[..needle.rfind('(').unwrap_or(needle.len())]
        .rfind('.')
        .map_or(0, |dot| dot + 1);
    let col = call + method + 1;
    assert_eq!(
        site,
        format!("{}:{line}:{col}", file!()),
        "line {line}: {text:?}"
    );
}

const MAX_READS: u32 = u32::MAX >> 3;

// ---------------------------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------------------------

#[test]
fn uncontended_lock_acquiring_acquired_released_in_order() {
    with_capture(|cap| {
        let rt = current_thread(false);
        let m = Mutex::named("spans_plain", 0u32);
        let line = line!() + 1;
        let g = rt.block_on(m.lock());
        drop(g);
        let spans = cap.acquires("spans_plain");
        assert_eq!(spans.len(), 1, "{spans:#?}");
        let s = &spans[0];
        assert_eq!(
            (s.target.as_str(), s.level),
            ("lockscope", tracing::Level::TRACE)
        );
        assert_eq!(s.field("kind"), "mutex");
        assert_eq!(s.field("permits"), "1");
        assert_site(s.field("site"), line, "m.lock()");
        assert_eq!(s.event_names(), ["acquiring", "acquired", "released"]);
        assert!(s.events.iter().all(|e| e.target == "lockscope"));
        assert_eq!(s.event("acquired").ms("wait_ms"), 0.0);
        s.event("released").ms("hold_ms");
        assert!(s.closed, "the span ends with the release");
    });
}

#[test]
fn contended_lock_reports_the_wait_then_the_hold() {
    with_capture(|cap| {
        let m = Mutex::named("spans_contended", ());
        let held = m.try_lock().unwrap();
        let line = line!() + 1;
        let mut waiter = spawn(m.lock());
        assert_pending!(waiter.poll());
        {
            let spans = cap.acquires("spans_contended");
            assert_eq!(spans.len(), 2, "{spans:#?}");
            assert_eq!(
                spans[1].event_names(),
                ["acquiring"],
                "waiting: nothing else yet"
            );
        }
        drop(held);
        let g = assert_ready!(waiter.poll());
        drop(g);
        let spans = cap.acquires("spans_contended");
        assert_eq!(spans.len(), 2, "{spans:#?}");
        // The try_lock that held it...
        assert_eq!(
            spans[0].event_names(),
            ["acquiring", "acquired", "released"]
        );
        // ...and the waiter.
        let w = &spans[1];
        assert_site(w.field("site"), line, "m.lock()");
        assert_eq!(w.event_names(), ["acquiring", "acquired", "released"]);
        w.event("acquired").ms("wait_ms");
        w.event("released").ms("hold_ms");
        assert!(w.closed);
    });
}

#[test]
fn every_form_has_its_kind_permits_and_site() {
    with_capture(|cap| {
        let rt = current_thread(false);
        let m = Arc::new(Mutex::named("spans_forms_m", 0u8));
        let l = Arc::new(RwLock::named("spans_forms_l", 0u8));
        let s = Arc::new(Semaphore::named("spans_forms_s", 5));
        // (line, needle) of every acquisition, in order.
        let mut sites: Vec<(u32, &str)> = Vec::new();
        rt.block_on(async {
            sites.push((line!() + 1, "m.clone().lock_owned()"));
            drop(m.clone().lock_owned().await);
            sites.push((line!() + 1, "m.try_lock()"));
            drop(m.try_lock().unwrap());
            sites.push((line!() + 1, "m.clone().try_lock_owned()"));
            drop(m.clone().try_lock_owned().unwrap());
            sites.push((line!() + 1, "m.lock_timeout("));
            drop(m.lock_timeout(Duration::from_secs(1)).await.unwrap());
        });
        sites.push((line!() + 1, "m.blocking_lock()"));
        drop(m.blocking_lock());
        let mut lsites: Vec<(u32, &str, &str)> = Vec::new();
        rt.block_on(async {
            lsites.push((line!() + 1, "l.read()", "1"));
            drop(l.read().await);
            lsites.push((line!() + 1, "l.write()", "w"));
            drop(l.write().await);
            lsites.push((line!() + 1, "l.clone().read_owned()", "1"));
            drop(l.clone().read_owned().await);
            lsites.push((line!() + 1, "l.clone().write_owned()", "w"));
            drop(l.clone().write_owned().await);
            lsites.push((line!() + 1, "l.try_read()", "1"));
            drop(l.try_read().unwrap());
            lsites.push((line!() + 1, "l.try_write()", "w"));
            drop(l.try_write().unwrap());
            lsites.push((line!() + 1, "l.write_timeout(", "w"));
            drop(l.write_timeout(Duration::from_secs(1)).await.unwrap());
        });
        lsites.push((line!() + 1, "l.blocking_read()", "1"));
        drop(l.blocking_read());
        let mut ssites: Vec<(u32, &str, &str)> = Vec::new();
        rt.block_on(async {
            ssites.push((line!() + 1, "s.acquire()", "1"));
            drop(s.acquire().await.unwrap());
            ssites.push((line!() + 1, "s.acquire_many(3)", "3"));
            drop(s.acquire_many(3).await.unwrap());
            ssites.push((line!() + 1, "s.clone().acquire_many_owned(2)", "2"));
            drop(s.clone().acquire_many_owned(2).await.unwrap());
            ssites.push((line!() + 1, "s.try_acquire_many(4)", "4"));
            drop(s.try_acquire_many(4).unwrap());
            let second = Duration::from_secs(1);
            ssites.push((line!() + 1, "s.acquire_many_timeout(5,", "5"));
            drop(s.acquire_many_timeout(5, second).await.unwrap());
        });
        ssites.push((line!() + 1, "s.blocking_acquire_many(2)", "2"));
        drop(s.blocking_acquire_many(2).unwrap());

        let spans = cap.acquires("spans_forms_m");
        assert_eq!(spans.len(), sites.len(), "{spans:#?}");
        for (span, (line, needle)) in spans.iter().zip(&sites) {
            assert_eq!(span.field("kind"), "mutex", "{needle}");
            assert_eq!(span.field("permits"), "1", "{needle}");
            assert_site(span.field("site"), *line, needle);
            assert_eq!(
                span.event_names(),
                ["acquiring", "acquired", "released"],
                "{needle}"
            );
        }
        let spans = cap.acquires("spans_forms_l");
        assert_eq!(spans.len(), lsites.len(), "{spans:#?}");
        for (span, (line, needle, permits)) in spans.iter().zip(&lsites) {
            let permits = if *permits == "w" {
                MAX_READS.to_string()
            } else {
                permits.to_string()
            };
            assert_eq!(span.field("kind"), "rwlock", "{needle}");
            assert_eq!(span.field("permits"), permits, "{needle}");
            assert_site(span.field("site"), *line, needle);
            assert_eq!(
                span.event_names(),
                ["acquiring", "acquired", "released"],
                "{needle}"
            );
        }
        let spans = cap.acquires("spans_forms_s");
        assert_eq!(spans.len(), ssites.len(), "{spans:#?}");
        for (span, (line, needle, permits)) in spans.iter().zip(&ssites) {
            assert_eq!(span.field("kind"), "semaphore", "{needle}");
            assert_eq!(span.field("permits"), *permits, "{needle}");
            assert_site(span.field("site"), *line, needle);
            assert_eq!(
                span.event_names(),
                ["acquiring", "acquired", "released"],
                "{needle}"
            );
        }
    });
}

#[test]
fn dropped_waiting_future_emits_cancelled() {
    with_capture(|cap| {
        let s = Semaphore::named("spans_cancel", 1);
        let held = s.try_acquire().unwrap();
        let line = line!() + 1;
        let mut waiter = spawn(s.acquire_many(1));
        assert_pending!(waiter.poll());
        drop(waiter);
        drop(held);
        let spans = cap.acquires("spans_cancel");
        assert_eq!(spans.len(), 2, "{spans:#?}");
        let w = &spans[1];
        assert_site(w.field("site"), line, "s.acquire_many(1)");
        assert_eq!(w.event_names(), ["acquiring", "cancelled"]);
        w.event("cancelled").ms("wait_ms");
        assert!(w.closed, "the span of a cancelled acquisition is closed");
        // The holder's own span is unaffected.
        assert_eq!(
            spans[0].event_names(),
            ["acquiring", "acquired", "released"]
        );
    });
}

#[test]
fn timed_form_that_gives_up_emits_timed_out() {
    with_capture(|cap| {
        let rt = current_thread(true);
        let l = RwLock::named("spans_timeout", ());
        rt.block_on(async {
            let _r = l.read().await;
            let t = Duration::from_millis(50);
            let line = line!() + 1;
            let err = l.write_timeout(t).await.unwrap_err();
            assert_eq!(err.lock(), "spans_timeout");
            let spans = cap.acquires("spans_timeout");
            assert_eq!(spans.len(), 2, "{spans:#?}");
            let w = &spans[1];
            assert_site(w.field("site"), line, "l.write_timeout(");
            assert_eq!(w.field("permits"), MAX_READS.to_string());
            assert_eq!(w.event_names(), ["acquiring", "timed_out"]);
            w.event("timed_out").ms("wait_ms");
            assert!(w.closed);
        });
    });
}

#[test]
fn failed_try_emits_gave_up() {
    with_capture(|cap| {
        let m = Arc::new(Mutex::named("spans_try", ()));
        let held = m.try_lock().unwrap();
        let line = line!() + 1;
        assert!(m.try_lock().is_err());
        assert!(m.clone().try_lock_owned().is_err());
        drop(held);
        let spans = cap.acquires("spans_try");
        assert_eq!(spans.len(), 3, "{spans:#?}");
        assert_site(spans[1].field("site"), line, "m.try_lock()");
        for s in &spans[1..] {
            assert_eq!(s.event_names(), ["acquiring", "gave_up"]);
            assert!(s.closed);
        }
        let s = Semaphore::named("spans_try_sem", 0);
        assert!(s.try_acquire().is_err());
        let l = RwLock::named("spans_try_rw", ());
        let _w = l.try_write().unwrap();
        assert!(l.try_read().is_err());
        assert_eq!(
            cap.acquires("spans_try_sem")[0].event_names(),
            ["acquiring", "gave_up"]
        );
        assert_eq!(
            cap.acquires("spans_try_rw")[1].event_names(),
            ["acquiring", "gave_up"]
        );
    });
}

#[test]
fn mapped_downgraded_split_guards_release_once_in_their_span() {
    with_capture(|cap| {
        let rt = current_thread(false);
        rt.block_on(async {
            let l = RwLock::named("spans_downgrade", (1u8, 2u8));
            let w = l.write().await;
            let r = lockscope::tokio::RwLockWriteGuard::downgrade_map(w, |t| &t.0);
            assert_eq!(*r, 1);
            drop(r);
            let spans = cap.acquires("spans_downgrade");
            assert_eq!(spans.len(), 1);
            assert_eq!(
                spans[0].event_names(),
                ["acquiring", "acquired", "released"]
            );

            let s = Semaphore::named("spans_split", 4);
            let mut p = s.acquire_many(4).await.unwrap();
            let q = p.split(1).unwrap();
            drop(q);
            drop(p);
            let spans = cap.acquires("spans_split");
            assert!(!spans.is_empty(), "{spans:#?}");
            let released: usize = spans
                .iter()
                .map(|s| s.events.iter().filter(|e| e.name == "released").count())
                .sum();
            assert_eq!(
                released, 2,
                "one release per part of the split permit: {spans:#?}"
            );
        });
    });
}

#[test]
fn a_filter_that_drops_lockscope_sees_nothing_and_the_books_still_work() {
    let _serial = serial();
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::EnvFilter::new("info"))
        .with(capture.clone());
    tracing::subscriber::with_default(subscriber, || {
        let rt = current_thread(true);
        let m = Arc::new(Mutex::named("spans_filtered", ()));
        let s = Semaphore::named("spans_filtered_sem", 1);
        rt.block_on(async {
            let g = m.lock().await;
            // Contended, timed out, tried, cancelled: every event kind, none of them seen.
            let m2 = m.clone();
            let gave_up = tokio::spawn(async move {
                m2.lock_timeout(Duration::from_millis(5)).await.is_err() && m2.try_lock().is_err()
            });
            assert!(gave_up.await.unwrap());
            let m3 = m.clone();
            let waiter = tokio::spawn(async move { drop(m3.lock().await) });
            // The detector is not blinded by the filter: it sees the holder and the waiter.
            let mut seen = None;
            for _ in 0..1000 {
                tokio::task::yield_now().await;
                let snap = lockscope::detector::locks();
                let me = snap
                    .into_iter()
                    .find(|l| l.name == "spans_filtered")
                    .unwrap();
                if !me.waiters.is_empty() {
                    seen = Some((me.holders.len(), me.waiters.len()));
                    break;
                }
            }
            assert_eq!(seen, Some((1, 1)), "holder and waiter in the books");
            waiter.abort();
            assert!(waiter.await.unwrap_err().is_cancelled());
            drop(g);
            drop(s.acquire().await.unwrap());
        });
        assert!(
            capture.nothing_from_lockscope(),
            "a subscriber filtering lockscope out saw: {:#?}",
            capture.0.lock().unwrap().spans
        );
        // An `info` event from the test itself still goes through the same layer: the
        // filter, not a broken capture, is what kept lockscope out.
        tracing::info!(target: "spans_test", "visible");
        let c = capture.0.lock().unwrap();
        assert_eq!(
            c.orphans
                .iter()
                .filter(|e| e.target == "spans_test")
                .count(),
            1
        );
    });
}

#[test]
fn a_trace_filter_for_lockscope_lets_everything_through() {
    let _serial = serial();
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::EnvFilter::new("warn,lockscope=trace"))
        .with(capture.clone());
    tracing::subscriber::with_default(subscriber, || {
        let m = Mutex::named("spans_enabled_by_filter", ());
        drop(m.try_lock().unwrap());
    });
    let spans = capture.acquires("spans_enabled_by_filter");
    assert_eq!(spans.len(), 1);
    assert_eq!(
        spans[0].event_names(),
        ["acquiring", "acquired", "released"]
    );
}
