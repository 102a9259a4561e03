//! Same observability as the tokio wrappers: `acquire` spans with `kind = blocking_mutex |
//! blocking_rwlock`, per-primitive statistics, names, sites, and attribution of each hold to
//! its thread or task.

use std::io::Write;
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use lockscope::detector;
use lockscope::parking_lot::{Mutex, ReentrantMutex, RwLock};

/// The tests of this file run one at a time: tracing's callsite interest cache is global, and
/// a thread hitting lockscope's callsites while another installs a scoped subscriber
/// (`with_default`) can leave that subscriber blind (a known limitation of scoped dispatchers
/// under parallel tests, not of lockscope).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn lock_named(name: &str) -> Option<detector::LockSnapshot> {
    detector::locks().into_iter().find(|l| l.name == name)
}

fn wait_for_waiters(name: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while lock_named(name).map_or(0, |l| l.waiters.len()) != n {
        assert!(Instant::now() < deadline, "{name} never had {n} waiters");
        thread::yield_now();
    }
}

/// A `MakeWriter` that appends to a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

#[test]
fn spans_and_events_carry_the_blocking_kinds() {
    let _serial = serial();
    let out = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(out.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let m = Mutex::named("pl_obs_span_m", 0);
        *m.lock() += 1;
        let r = RwLock::named("pl_obs_span_r", 0);
        drop(r.read());
        drop(r.upgradable_read());
        let re = ReentrantMutex::named("pl_obs_span_re", ());
        drop(re.lock());
        let g = m.lock();
        assert!(m.try_lock().is_none());
        drop(g);
        // A timed form that gives up (a writer of this thread holds the lock: a self-wait,
        // which the detector also reports; this binary asserts nothing about findings).
        let w = r.write();
        assert!(r.try_read_for(Duration::from_millis(1)).is_none());
        drop(w);
    });
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    // fmt's layout: `acquire{lock="m" kind=".." permits=1 site=..}: lockscope: <event> <fields>`.
    let lines = |lock: &str, event: &str| {
        let (lock, event) = (
            format!("{{lock=\"{lock}\""),
            format!(": lockscope: {event}"),
        );
        text.lines()
            .filter(|l| l.contains(&lock) && l.contains(&event))
            .count()
    };
    assert!(
        text.contains(r#"acquire{lock="pl_obs_span_m" kind="blocking_mutex" permits=1 site="#),
        "{text}"
    );
    assert!(
        text.contains(r#"lock="pl_obs_span_r" kind="blocking_rwlock""#),
        "{text}"
    );
    assert!(
        text.contains(r#"lock="pl_obs_span_re" kind="blocking_mutex""#),
        "{text}"
    );
    assert!(
        text.contains("parking_lot_observability.rs:"),
        "the site: {text}"
    );
    assert!(lines("pl_obs_span_m", "acquiring") >= 2, "{text}");
    assert!(lines("pl_obs_span_m", "acquired") >= 2, "{text}");
    assert!(lines("pl_obs_span_m", "released") >= 2, "{text}");
    assert!(lines("pl_obs_span_m", "gave_up") == 1, "{text}");
    assert!(lines("pl_obs_span_r", "timed_out") == 1, "{text}");
    assert!(text.contains("hold_ms="), "{text}");
}

#[test]
fn statistics_count_acquisitions_waits_try_failures_and_timeouts() {
    let _serial = serial();
    const NAME: &str = "pl_obs_stats";
    let m = Arc::new(Mutex::named(NAME, 0));
    *m.lock() += 1;
    let g = m.lock();
    let m2 = m.clone();
    let waiter = thread::spawn(move || *m2.lock() += 1);
    wait_for_waiters(NAME, 1);
    drop(g);
    waiter.join().unwrap();
    let g = m.lock();
    thread::scope(|s| {
        s.spawn(|| {
            assert!(m.try_lock().is_none());
            assert!(m.try_lock_for(Duration::from_millis(1)).is_none());
        });
    });
    drop(g);
    let s = detector::metrics()
        .series
        .into_iter()
        .find(|s| &*s.lock == NAME)
        .unwrap();
    assert_eq!(s.kind.as_str(), "blocking_mutex");
    assert_eq!(s.acquisitions, 4);
    assert_eq!(s.contended, 1);
    assert_eq!(s.try_failures, 1);
    assert_eq!(s.timeouts, 1);
    assert_eq!(s.hold.count(), 4);
    assert_eq!(s.wait.count(), 1);
    assert_eq!((s.holders, s.waiters), (0, 0));
}

#[test]
fn holds_are_attributed_to_their_thread_or_task() {
    let _serial = serial();
    let m = Arc::new(Mutex::named("pl_obs_actor", ()));
    let (tx, rx) = mpsc::channel();
    let m2 = m.clone();
    thread::Builder::new()
        .name("pl-obs-thread".into())
        .spawn(move || {
            let _g = m2.lock();
            tx.send(lock_named("pl_obs_actor").unwrap()).unwrap();
        })
        .unwrap()
        .join()
        .unwrap();
    let seen = rx.recv().unwrap();
    assert!(seen.holders[0].actor.contains("pl-obs-thread"), "{seen:?}");
    assert!(
        seen.holders[0]
            .site
            .contains("parking_lot_observability.rs"),
        "{seen:?}"
    );
    assert_eq!(seen.kind, "blocking_mutex");

    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let seen = rt.block_on(async move {
        tokio::spawn(async move {
            let _g = m.lock();
            lock_named("pl_obs_actor").unwrap()
        })
        .await
        .unwrap()
    });
    assert!(seen.holders[0].actor.starts_with("task"), "{seen:?}");
}
