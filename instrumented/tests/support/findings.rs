//! Findings of the detector tests on blocking locks (`parking_lot_detector`, `std_detector`):
//! tests run in parallel in one process and share the detector, so every helper looks only at
//! findings that involve the primitives a test created (unique names); the detector is polled
//! with `check_now()` under a deadline, never slept on.

use std::rc::Rc;
use std::thread;
use std::time::{Duration, Instant};

use lockscope::detector::{self, Finding, FindingKind};

pub const DEADLINE: Duration = Duration::from_secs(10);

/// Findings that involve any primitive named in `names`.
pub fn findings_about(names: &[&str]) -> Vec<Finding> {
    detector::findings()
        .into_iter()
        .filter(|f| names.iter().any(|n| f.involves(n)))
        .collect()
}

/// Waits (bounded, analysing on each turn) for a finding of `kind` involving every name in
/// `names`.
pub fn wait_for_finding(kind: FindingKind, names: &[&str]) -> Finding {
    let deadline = Instant::now() + DEADLINE;
    loop {
        detector::check_now();
        if let Some(f) = detector::findings()
            .into_iter()
            .find(|f| f.kind == kind && names.iter().all(|n| f.involves(n)))
        {
            // Shown with `--nocapture`.
            println!("{f}\n");
            return f;
        }
        assert!(
            Instant::now() < deadline,
            "no {kind} finding involving {names:?}; findings about them: {:#?}",
            findings_about(names)
        );
        thread::yield_now();
    }
}

/// Runs the analysis twice (deadlocks are confirmed over two passes) and asserts that nothing
/// involves `names`.
pub fn assert_silent(names: &[&str]) {
    detector::check_now();
    detector::check_now();
    let found = findings_about(names);
    assert!(
        found.is_empty(),
        "expected no finding about {names:?}, got:\n{}",
        detector::render_all(&found)
    );
}

/// The live snapshot of the primitive named `name`.
pub fn lock_named(name: &str) -> Option<detector::LockSnapshot> {
    detector::locks().into_iter().find(|l| l.name == name)
}

/// Waits (bounded) until `name` has `n` waiters in the books.
pub fn wait_for_waiters(name: &str, n: usize) {
    let deadline = Instant::now() + DEADLINE;
    while lock_named(name).map_or(0, |l| l.waiters.len()) != n {
        assert!(Instant::now() < deadline, "{name} never had {n} waiters");
        thread::yield_now();
    }
}

/// Runs two local tasks on a current-thread runtime: `holder` takes a blocking lock with `hold`,
/// signals, and awaits a go-ahead (keeping the guard across that `.await` when `across` is
/// true); `other` runs lockscope code on the same thread (a tokio mutex) in between.
pub fn two_tasks_on_one_thread<G: 'static>(
    hold: impl FnOnce() -> G + 'static,
    other: Rc<lockscope::tokio::Mutex<u32>>,
    across: bool,
) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let (held_tx, held_rx) = tokio::sync::oneshot::channel();
        let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
        let holder = tokio::task::spawn_local(async move {
            let g = hold();
            let g = if across {
                Some(g)
            } else {
                drop(g);
                None
            };
            held_tx.send(()).unwrap();
            go_rx.await.unwrap();
            drop(g);
        });
        let runner = tokio::task::spawn_local(async move {
            held_rx.await.unwrap();
            *other.lock().await += 1;
            go_tx.send(()).unwrap();
        });
        holder.await.unwrap();
        runner.await.unwrap();
    });
}
