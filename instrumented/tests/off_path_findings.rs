//! Findings sighted inside a user's critical section (a nested acquire, a lock-order
//! inversion) are built and reported off it (issue 29, item 6): not on the acquiring thread
//! while it holds the lock, yet to that thread's own tracing subscriber, seen by the next read
//! of findings, and never piling up when a loop repeats them.
//!
//! Each test uses primitives of its own (unique names). The watchdog thread must be running
//! for a sighting to wait for it (else it is reported on its own thread, as before), so each
//! test first waits, bounded, for its first tick. The tests run one at a time, and the
//! detector's event callsite is registered before any test installs its subscriber: tracing
//! caches a callsite's interest over the dispatchers alive when it registers, and a callsite
//! registered on one thread while another thread creates its scoped dispatcher can miss that
//! dispatcher for good (a race of tracing's own, with or without lockscope).

use std::sync::{Arc, Mutex as StdMutex, MutexGuard as StdGuard};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use lockscope::detector::{self, FindingKind};
use lockscope::parking_lot::{Mutex, RwLock};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

const DEADLINE: Duration = Duration::from_secs(10);

/// Serialises the tests (see the module docs), once the watchdog thread has ticked (from then
/// on it drains sightings) and the detector's event callsite is registered.
fn watchdog_running() -> StdGuard<'static, ()> {
    static SERIAL: StdMutex<()> = StdMutex::new(());
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let first = RwLock::named("off_watchdog_start", 0);
    let deadline = Instant::now() + DEADLINE;
    while detector::watchdog_ticks() == 0 {
        assert!(Instant::now() < deadline, "the watchdog never ticked");
        thread::sleep(Duration::from_millis(5));
    }
    // A finding reported on this thread, with no test's subscriber yet: the callsite is
    // registered by the time this returns (the first test to get here does it).
    let _a = first.read();
    let _b = first.read();
    let _ = detector::findings();
    serial
}

/// The detector's events this subscriber received: the thread each came on, and its text.
#[derive(Clone, Default)]
struct Events(Arc<StdMutex<Vec<(ThreadId, String)>>>);

impl<S: Subscriber> Layer<S> for Events {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != "lockscope::detector" {
            return;
        }
        struct Text(String);
        impl tracing::field::Visit for Text {
            fn record_debug(&mut self, _: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                self.0.push_str(&format!("{v:?} "));
            }
        }
        let mut text = Text(String::new());
        event.record(&mut text);
        self.0
            .lock()
            .unwrap()
            .push((thread::current().id(), text.0));
    }
}

impl Events {
    /// The events that name `what`.
    fn about(&self, what: &str) -> Vec<(ThreadId, String)> {
        let all = self.0.lock().unwrap();
        all.iter()
            .filter(|(_, t)| t.contains(what))
            .cloned()
            .collect()
    }

    /// Waits (bounded) for an event that names `what`, without reading findings here.
    fn wait_for(&self, what: &str) -> (ThreadId, String) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(e) = self.about(what).into_iter().next() {
                return e;
            }
            assert!(
                Instant::now() < deadline,
                "no event about {what} within {DEADLINE:?}"
            );
            thread::sleep(Duration::from_millis(2));
        }
    }
}

/// A latent nested acquire inside a critical section: nothing is built on the acquiring
/// thread while it holds the lock, yet this thread's own (thread-local) subscriber receives the
/// event, on another thread, while the section is still open.
#[test]
fn a_nested_acquire_is_built_elsewhere_and_reaches_the_threads_own_subscriber() {
    let _serial = watchdog_running();
    let events = Events::default();
    let subscriber = tracing_subscriber::registry().with(events.clone());
    let me = thread::current().id();
    tracing::subscriber::with_default(subscriber, || {
        let rw = RwLock::named("off_nested_sink", 0);
        let before = detector::__private::finding::built_here();
        let _a = rw.read();
        let _b = rw.read(); // latent: a writer queued in between deadlocks both
        assert_eq!(
            detector::__private::finding::built_here(),
            before,
            "the finding was built inside the critical section"
        );
        let (on, text) = events.wait_for("off_nested_sink");
        assert_ne!(on, me, "the event was formatted on the acquiring thread");
        assert!(text.contains("nested-acquire"), "{text}");
        assert!(text.contains("latent deadlock"), "{text}");
        assert_eq!(detector::__private::finding::built_here(), before);
    });
    // The subscriber was this thread's only: the event went to it, and once.
    assert_eq!(events.about("off_nested_sink").len(), 1);
}

/// A read of findings right after the sighting sees it, on the acquiring thread or any other,
/// whether or not the watchdog is reporting it at that moment: many rounds, each its own bug.
#[test]
fn findings_read_right_after_a_sighting_include_it() {
    let _serial = watchdog_running();
    for i in 0..200 {
        let name = format!("off_read_after_{i}");
        let rw = RwLock::named(&name, 0);
        let _a = rw.read();
        let _b = rw.read();
        let found = detector::findings();
        assert!(
            found
                .iter()
                .any(|f| f.kind == FindingKind::NestedAcquire && f.involves(&name)),
            "round {i}: the sighting is missing from findings()"
        );
    }
}

/// A lock-order inversion is built off the acquiring thread too, and names its primitives.
#[test]
fn a_lock_order_inversion_is_built_elsewhere_and_reaches_the_threads_own_subscriber() {
    let _serial = watchdog_running();
    let events = Events::default();
    let subscriber = tracing_subscriber::registry().with(events.clone());
    let me = thread::current().id();
    tracing::subscriber::with_default(subscriber, || {
        let (a, b) = (
            Mutex::named("off_abba_a", ()),
            Mutex::named("off_abba_b", ()),
        );
        let before = detector::__private::finding::built_here();
        {
            let _a = a.lock();
            let _b = b.lock();
        }
        let _b = b.lock();
        let _a = a.lock(); // closes the cycle
        assert_eq!(detector::__private::finding::built_here(), before);
        let (on, text) = events.wait_for("off_abba_a");
        assert_ne!(on, me, "the event was formatted on the acquiring thread");
        assert!(text.contains("lock-order-inversion"), "{text}");
        assert!(text.contains("off_abba_b"), "{text}");
    });
    let found = detector::findings();
    let f = found
        .iter()
        .find(|f| f.kind == FindingKind::LockOrderInversion && f.involves("off_abba_a"))
        .expect("the inversion is in findings()");
    assert!(f.involves("off_abba_b"), "{f}");
}

/// A hot loop that repeats two nested acquisitions a hundred thousand times leaves at most
/// one pending sighting of each, and one finding of each: repeats are dropped at the door
/// (the alternating sites miss the per-thread memo, so the queue's own check is tested too).
#[test]
fn a_hot_loop_of_repeated_nested_acquires_leaves_the_queue_bounded() {
    let _serial = watchdog_running();
    let rw = RwLock::named("off_hot_loop", 0);
    let _held = rw.read();
    let mut most = 0;
    for i in 0..100_000 {
        // Two call sites, taken in turn.
        let again: fn(&RwLock<i32>) = if i % 2 == 0 { read_here } else { read_there };
        again(&rw);
        if i % 1_000 == 0 {
            most = most.max(detector::__private::finding::pending_len());
        }
    }
    most = most.max(detector::__private::finding::pending_len());
    assert!(most <= 2, "{most} sightings pending at once");
    let nested = detector::findings()
        .into_iter()
        .filter(|f| f.kind == FindingKind::NestedAcquire && f.involves("off_hot_loop"))
        .count();
    assert_eq!(nested, 2, "one finding per pair of sites");
    assert_eq!(
        detector::__private::finding::pending_len(),
        0,
        "findings() drained it"
    );
}

fn read_here(rw: &RwLock<i32>) {
    drop(rw.read());
}

fn read_there(rw: &RwLock<i32>) {
    drop(rw.read());
}

/// An armed test's scope still gets the finding (and fails on it) when the sighting waits for
/// the watchdog: its findings are read through the same drain.
#[test]
fn an_armed_scope_gets_a_pending_sighting() {
    use lockscope::detector::{ScopeOptions, TestScope};
    let _serial = watchdog_running();
    let found = thread::Builder::new()
        .name("off_scoped".into())
        .spawn(|| {
            let scope = TestScope::arm("off_scoped", ScopeOptions::default());
            let rw = RwLock::named("off_scoped_rw", 0);
            let _a = rw.read();
            let _b = rw.read();
            scope.finish()
        })
        .unwrap()
        .join()
        .unwrap();
    let f = found
        .iter()
        .find(|f| f.kind == FindingKind::NestedAcquire && f.involves("off_scoped_rw"))
        .unwrap_or_else(|| panic!("{found:#?}"));
    assert!(f.to_string().contains("thread 'off_scoped'"), "{f}");
}
