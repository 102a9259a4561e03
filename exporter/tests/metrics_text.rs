//! `/metrics` as exact text for small known workloads, fed through the detector's hooks.
//!
//! Tests in this binary run in parallel against the one process-wide detector, so each uses
//! lock names of its own and looks only at its own lines.

mod common;

use std::panic::Location;

use lockscope_detector::__private::hooks::{self, Acq, Mode};
use lockscope_detector::__private::prim::{PrimCell, PrimKind};

fn cell(name: &str, kind: PrimKind, capacity: u64) -> PrimCell {
    PrimCell::new(Some(name.into()), kind, Location::caller(), capacity)
}

fn acq(permits: u32, mode: Mode) -> Acq {
    Acq::new(Location::caller(), permits, mode)
}

/// The lines of `text` with a `lock="<lock>"` label, in output order.
fn lines_of(text: &str, lock: &str) -> String {
    let needle = format!("{{lock=\"{lock}\"");
    text.lines()
        .filter(|l| l.contains(&needle))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The value of the sample line starting with `prefix ` (exactly one).
fn value(text: &str, prefix: &str) -> f64 {
    let found: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix(prefix)?.strip_prefix(' '))
        .collect();
    assert_eq!(found.len(), 1, "{prefix}: {found:?}");
    found[0].parse().unwrap()
}

fn zero_histogram(family: &str, labels: &str) -> String {
    let mut out = String::new();
    for le in [
        "0.0001", "0.0005", "0.001", "0.005", "0.01", "0.05", "0.1", "0.5", "1", "5", "10", "30",
        "60", "+Inf",
    ] {
        out.push_str(&format!("{family}_bucket{{{labels},le=\"{le}\"}} 0\n"));
    }
    out.push_str(&format!(
        "{family}_sum{{{labels}}} 0\n{family}_count{{{labels}}} 0\n"
    ));
    out
}

#[test]
fn a_held_mutex_with_failed_tries_and_a_timeout() {
    let m = cell("text/mutex", PrimKind::Mutex, 1);
    let prim = m.get();
    let hold = hooks::acquired::<hooks::Threads>(prim, acq(1, Mode::Exclusive));
    hooks::try_failed(prim);
    hooks::try_failed(prim);
    hooks::timed_out_at_once(prim);

    let l = r#"lock="text/mutex",kind="mutex""#;
    let expected = format!(
        "lockscope_acquisitions_total{{{l}}} 1\n\
         lockscope_cancelled_total{{{l}}} 0\n\
         lockscope_contended_acquisitions_total{{{l}}} 0\n\
         {}\
         lockscope_holders{{{l}}} 1\n\
         lockscope_oldest_wait_seconds{{{l}}} 0\n\
         lockscope_timeouts_total{{{l}}} 1\n\
         lockscope_try_failures_total{{{l}}} 2\n\
         {}\
         lockscope_waiters{{{l}}} 0\n",
        zero_histogram("lockscope_hold_seconds", l),
        zero_histogram("lockscope_wait_seconds", l),
    );
    assert_eq!(
        lines_of(&lockscope_exporter::render(), "text/mutex"),
        expected
    );
    hooks::released(prim, hold);
}

#[test]
fn a_semaphore_shows_its_permits() {
    let s = cell("text/sem", PrimKind::Semaphore, 5);
    let prim = s.get();
    let hold = hooks::acquired::<hooks::Threads>(prim, acq(3, Mode::Permits));
    hooks::added_permits(prim, 2);

    let text = lockscope_exporter::render();
    let l = r#"lock="text/sem",kind="semaphore""#;
    let expected = format!(
        "lockscope_acquisitions_total{{{l}}} 1\n\
         lockscope_cancelled_total{{{l}}} 0\n\
         lockscope_contended_acquisitions_total{{{l}}} 0\n\
         {}\
         lockscope_holders{{{l}}} 1\n\
         lockscope_oldest_wait_seconds{{{l}}} 0\n\
         lockscope_permits_available{{lock=\"text/sem\"}} 4\n\
         lockscope_permits_capacity{{lock=\"text/sem\"}} 7\n\
         lockscope_timeouts_total{{{l}}} 0\n\
         lockscope_try_failures_total{{{l}}} 0\n\
         {}\
         lockscope_waiters{{{l}}} 0\n",
        zero_histogram("lockscope_hold_seconds", l),
        zero_histogram("lockscope_wait_seconds", l),
    );
    assert_eq!(lines_of(&text, "text/sem"), expected);
    // Families with a lock label and samples come out with their HELP and TYPE lines.
    assert!(text.contains(
        "# HELP lockscope_permits_capacity Semaphore capacity now (after add_permits and forget).\n\
         # TYPE lockscope_permits_capacity gauge\n"
    ));
    hooks::released(prim, hold);
}

/// Nine semaphores of tokio's `MAX_PERMITS` sharing a name hold more permits than a u64 counts:
/// the gauge saturates instead of panicking (debug) or wrapping (release).
#[test]
fn huge_semaphores_sharing_a_name_saturate_their_gauges() {
    const MAX_PERMITS: u64 = usize::MAX as u64 >> 3;
    let cells: Vec<PrimCell> = (0..9)
        .map(|_| cell("text/huge", PrimKind::Semaphore, MAX_PERMITS))
        .collect();
    let text = lockscope_exporter::render();
    let max = u64::MAX as f64;
    assert_eq!(
        value(&text, r#"lockscope_permits_capacity{lock="text/huge"}"#),
        max
    );
    assert_eq!(
        value(&text, r#"lockscope_permits_available{lock="text/huge"}"#),
        max
    );
    drop(cells);
}

#[test]
fn primitives_sharing_a_name_share_a_series() {
    let a = cell("text/shared", PrimKind::RwLock, 8);
    let b = cell("text/shared", PrimKind::RwLock, 8);
    let ha = hooks::acquired::<hooks::Threads>(a.get(), acq(1, Mode::Shared));
    let hb = hooks::acquired::<hooks::Threads>(b.get(), acq(1, Mode::Shared));
    let hb2 = hooks::acquired::<hooks::Threads>(b.get(), acq(1, Mode::Shared));
    let text = lockscope_exporter::render();
    let l = r#"lock="text/shared",kind="rwlock""#;
    assert_eq!(value(&text, &format!("lockscope_holders{{{l}}}")), 3.0);
    assert_eq!(
        value(&text, &format!("lockscope_acquisitions_total{{{l}}}")),
        3.0
    );
    hooks::released(a.get(), ha);
    hooks::released(b.get(), hb);
    hooks::released(b.get(), hb2);
    drop(b);
    // A dropped primitive's counts stay in its series: counters never go back.
    let text = lockscope_exporter::render();
    assert_eq!(value(&text, &format!("lockscope_holders{{{l}}}")), 0.0);
    assert_eq!(
        value(&text, &format!("lockscope_acquisitions_total{{{l}}}")),
        3.0
    );
    assert_eq!(
        value(&text, &format!("lockscope_hold_seconds_count{{{l}}}")),
        3.0
    );
    assert_eq!(
        value(
            &text,
            &format!("lockscope_hold_seconds_bucket{{{l},le=\"+Inf\"}}")
        ),
        3.0
    );
}

#[test]
fn blocking_mutexes_and_reentrant_mutexes_of_one_name_are_one_series() {
    // Both are kind="blocking_mutex": the detector keeps two series, the exporter one.
    let m = cell("text/blocking", PrimKind::BlockingMutex, 1);
    let r = cell("text/blocking", PrimKind::BlockingReentrantMutex, 1);
    let hm = hooks::acquired::<hooks::Threads>(m.get(), acq(1, Mode::Exclusive));
    hooks::try_failed(r.get());
    let text = lockscope_exporter::render();
    let l = r#"lock="text/blocking",kind="blocking_mutex""#;
    assert_eq!(
        value(&text, &format!("lockscope_acquisitions_total{{{l}}}")),
        1.0
    );
    assert_eq!(
        value(&text, &format!("lockscope_try_failures_total{{{l}}}")),
        1.0
    );
    hooks::released(m.get(), hm);
}

#[test]
fn waits_cancellations_and_timeouts_are_counted_and_timed() {
    let m = cell("text/contended", PrimKind::Mutex, 1);
    let prim = m.get();
    let l = r#"lock="text/contended",kind="mutex""#;
    let hold = hooks::acquired::<hooks::Threads>(prim, acq(1, Mode::Exclusive));
    std::thread::scope(|s| {
        // Another thread queues behind the holder; one more gives up, one more is cancelled.
        let (queued_tx, queued_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let waiter = s.spawn(move || {
            let w = hooks::wait_begin(prim, acq(1, Mode::Exclusive), false);
            let t = hooks::wait_begin(prim, acq(1, Mode::Exclusive), true);
            let c = hooks::wait_begin(prim, acq(1, Mode::Exclusive), false);
            queued_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            hooks::wait_timed_out(prim, t);
            hooks::wait_cancelled(prim, c);
            go_rx.recv().unwrap();
            let h = hooks::acquired_after_wait(prim, acq(1, Mode::Exclusive), w);
            hooks::released(prim, h);
        });
        queued_rx.recv().unwrap();
        let text = lockscope_exporter::render();
        assert_eq!(value(&text, &format!("lockscope_waiters{{{l}}}")), 3.0);
        let oldest = value(&text, &format!("lockscope_oldest_wait_seconds{{{l}}}"));
        assert!(oldest > 0.0 && oldest < 60.0, "oldest wait {oldest}");
        go_tx.send(()).unwrap();
        hooks::released(prim, hold);
        go_tx.send(()).unwrap();
        waiter.join().unwrap();
    });
    let text = lockscope_exporter::render();
    for (family, v) in [
        ("lockscope_waiters", 0.0),
        ("lockscope_holders", 0.0),
        ("lockscope_oldest_wait_seconds", 0.0),
        ("lockscope_acquisitions_total", 2.0),
        ("lockscope_contended_acquisitions_total", 1.0),
        ("lockscope_timeouts_total", 1.0),
        ("lockscope_cancelled_total", 1.0),
        ("lockscope_wait_seconds_count", 1.0),
        ("lockscope_hold_seconds_count", 2.0),
    ] {
        assert_eq!(value(&text, &format!("{family}{{{l}}}")), v, "{family}");
    }
    // Buckets are cumulative: non-decreasing, ending at the count.
    for family in ["lockscope_wait_seconds", "lockscope_hold_seconds"] {
        let buckets: Vec<f64> = text
            .lines()
            .filter(|line| line.starts_with(&format!("{family}_bucket{{{l},")))
            .map(|line| line.rsplit(' ').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(buckets.len(), 14, "{family}");
        assert!(
            buckets.windows(2).all(|w| w[0] <= w[1]),
            "{family}: {buckets:?}"
        );
        assert_eq!(
            *buckets.last().unwrap(),
            value(&text, &format!("{family}_count{{{l}}}"))
        );
        let sum = value(&text, &format!("{family}_sum{{{l}}}"));
        assert!((0.0..60.0).contains(&sum), "{family}_sum {sum}");
    }
}

#[test]
fn any_name_is_a_valid_label_value() {
    let names = [
        ("quote\"and\\backslash", r#"quote\"and\\backslash"#),
        (
            "ünïcödé ❄ {braces} = , spaces",
            "ünïcödé ❄ {braces} = , spaces",
        ),
        // Refused names are cleaned by the detector: control characters become `?`.
        ("line\nbreak", "line?break"),
        ("", "unnamed"),
    ];
    let cells: Vec<PrimCell> = names
        .iter()
        .map(|(n, _)| cell(n, PrimKind::Mutex, 1))
        .collect();
    let text = lockscope_exporter::render();
    for (given, escaped) in names {
        let line = format!("lockscope_holders{{lock=\"{escaped}\",kind=\"mutex\"}} 0");
        assert!(
            text.lines().any(|l| l == line),
            "{given:?}: no line {line:?}"
        );
    }
    common::promtool_check_metrics(&text);
    drop(cells);
}

#[test]
fn every_family_has_samples_after_a_workload() {
    let s = cell("text/every", PrimKind::Semaphore, 2);
    let h = hooks::acquired::<hooks::Threads>(s.get(), acq(1, Mode::Permits));
    hooks::released(s.get(), h);
    let _chan = channel("text/every_channel", Some(1));
    let text = lockscope_exporter::render();
    for (name, kind) in common::API_MD_FAMILIES {
        assert!(
            text.contains(&format!("# TYPE {name} {kind}\n")),
            "{name}: TYPE"
        );
        let sample = if *kind == "histogram" {
            format!("{name}_bucket")
        } else {
            (*name).to_owned()
        };
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{sample}{{"))
                    || l.starts_with(&format!("{sample} "))),
            "{name}: no sample"
        );
    }
    common::promtool_check_metrics(&text);
}

/// `lockscope_live_primitives{kind}` counts the live primitives of each kind, down to 0 when
/// they are dropped (other tests of this binary only ever add theirs on top, and no test keeps
/// a blocking rwlock, so that kind is this test's alone).
#[test]
fn live_primitives_count_each_kind() {
    const LINE: &str = r#"lockscope_live_primitives{kind="blocking_rwlock"}"#;
    let cells: Vec<PrimCell> = (0..3)
        .map(|_| cell("text/live", PrimKind::BlockingRwLock, 1))
        .collect();
    assert_eq!(value(&lockscope_exporter::render(), LINE), 3.0);
    drop(cells);
    assert_eq!(value(&lockscope_exporter::render(), LINE), 0.0);
    // A kind's line is there while one of its primitives lives, whatever else this process
    // (one test alone, under cargo-nextest) has made.
    let _mutex = cell("text/live_mutex", PrimKind::Mutex, 1);
    let text = lockscope_exporter::render();
    assert!(value(&text, r#"lockscope_live_primitives{kind="mutex"}"#) >= 1.0);
}

#[test]
fn build_info_names_the_version() {
    let text = lockscope_exporter::render();
    assert_eq!(
        value(
            &text,
            &format!(
                "lockscope_build_info{{version=\"{}\"}}",
                env!("CARGO_PKG_VERSION")
            )
        ),
        1.0
    );
}

/// The watchdog thread, started by the first primitive, counts each analysis it runs.
#[test]
fn watchdog_ticks_move() {
    let _keep = cell("text/ticks", PrimKind::Mutex, 1);
    let ticks = || {
        value(
            &lockscope_exporter::render(),
            "lockscope_watchdog_ticks_total",
        )
    };
    let first = ticks();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while ticks() <= first {
        assert!(
            std::time::Instant::now() < deadline,
            "lockscope_watchdog_ticks_total stayed at {first} for 5 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(lockscope_detector::watchdog_ticks() as f64 > first);
}

// --- channels ---------------------------------------------------------------------------------

/// A metered channel as the `mpsc` wrappers make it: `sent` and `received` are what they count
/// as messages pass.
fn channel(name: &str, capacity: Option<usize>) -> std::sync::Arc<hooks::Channel> {
    hooks::Channel::metered("mpsc", Some(name), Location::caller(), capacity)
}

/// The lines of `text` with a `channel="<name>"` label, in output order.
fn channel_lines(text: &str, name: &str) -> String {
    let needle = format!("{{channel=\"{name}\"");
    text.lines()
        .filter(|l| l.contains(&needle))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn a_channel_shows_its_depth_capacity_and_waits() {
    let chan = channel("text/chan", Some(4));
    chan.sent(3);
    chan.received(1);
    let l = r#"channel="text/chan",kind="mpsc""#;
    let expected = format!(
        "lockscope_channel_capacity{{{l}}} 4\n\
         lockscope_channel_depth{{{l}}} 2\n\
         {}{}",
        zero_histogram("lockscope_channel_recv_wait_seconds", l),
        zero_histogram("lockscope_channel_send_wait_seconds", l),
    );
    assert_eq!(
        channel_lines(&lockscope_exporter::render(), "text/chan"),
        expected
    );
    // A send that waited (its record ended: completed or dropped) is one observation.
    drop(hooks::chan_wait_begin(
        &chan,
        hooks::ChanOp::Send,
        Location::caller(),
        false,
    ));
    let text = lockscope_exporter::render();
    assert_eq!(
        value(
            &text,
            &format!("lockscope_channel_send_wait_seconds_count{{{l}}}")
        ),
        1.0
    );
    assert_eq!(
        value(
            &text,
            &format!("lockscope_channel_send_wait_seconds_bucket{{{l},le=\"+Inf\"}}")
        ),
        1.0
    );
    assert_eq!(
        value(
            &text,
            &format!("lockscope_channel_recv_wait_seconds_count{{{l}}}")
        ),
        0.0
    );
    common::promtool_check_metrics(&text);
}

#[test]
fn an_unbounded_channel_has_no_capacity_line_and_a_dropped_one_keeps_its_series() {
    let chan = channel("text/unbounded", None);
    chan.sent(5);
    let text = lockscope_exporter::render();
    let l = r#"channel="text/unbounded",kind="mpsc""#;
    assert_eq!(
        value(&text, &format!("lockscope_channel_depth{{{l}}}")),
        5.0
    );
    assert!(!text.contains(&format!("lockscope_channel_capacity{{{l}}}")));
    drop(chan);
    let bounded = channel("text/dropped", Some(2));
    bounded.sent(1);
    drop(bounded);
    let text = lockscope_exporter::render();
    assert_eq!(
        value(&text, &format!("lockscope_channel_depth{{{l}}}")),
        0.0
    );
    let l = r#"channel="text/dropped",kind="mpsc""#;
    assert_eq!(
        value(&text, &format!("lockscope_channel_depth{{{l}}}")),
        0.0
    );
    assert_eq!(
        value(&text, &format!("lockscope_channel_capacity{{{l}}}")),
        0.0
    );
    assert_eq!(
        value(
            &text,
            &format!("lockscope_channel_send_wait_seconds_count{{{l}}}")
        ),
        0.0
    );
}

#[test]
fn any_channel_name_is_a_valid_label_value() {
    let names = [
        ("chan\"quote\\backslash", r#"chan\"quote\\backslash"#),
        ("chan ❄ {braces} = , spaces", "chan ❄ {braces} = , spaces"),
        // Control characters are made harmless by the detector: `?`.
        ("chan\nline\rbreak", "chan?line?break"),
    ];
    let chans: Vec<_> = names
        .iter()
        .map(|(n, _)| {
            let c = channel(n, Some(1));
            c.sent(1);
            c
        })
        .collect();
    let text = lockscope_exporter::render();
    for (given, escaped) in names {
        let line = format!("lockscope_channel_depth{{channel=\"{escaped}\",kind=\"mpsc\"}} 1");
        assert!(
            text.lines().any(|l| l == line),
            "{given:?}: no line {line:?}"
        );
    }
    common::promtool_check_metrics(&text);
    drop(chans);
}
