//! Exact answers where tokio can tell: with `--cfg tokio_unstable`, `#[lockscope::test]` and
//! `lockscope::runtime::instrument` install tokio's task hooks. Run by CI as
//! `RUSTFLAGS="--cfg tokio_unstable" cargo test -p lockscope --test tokio_unstable`; without
//! the cfg this file is empty.
#![cfg(tokio_unstable)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use lockscope::detector::{FindingKind, ScopeOptions, TestScope};

/// Polls (bounded, 5 s) until `scope` has a finding of `kind` naming `lock`.
fn until(scope: &TestScope, kind: FindingKind, lock: &str) -> lockscope::detector::Finding {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        lockscope::detector::check_now();
        if let Some(f) = scope
            .findings()
            .into_iter()
            .find(|f| f.kind == kind && f.involves(lock))
        {
            return f;
        }
        assert!(
            Instant::now() < deadline,
            "no {kind} naming {lock} within 5 s: {:#?}",
            scope.findings()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn instrumented_runtime() -> tokio::runtime::Runtime {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    b.worker_threads(2).enable_all();
    lockscope::runtime::instrument(&mut b);
    b.build().unwrap()
}

/// A task yields holding a blocking guard, with nobody contending: reported when its poll
/// ends, without waiting for a neighbour to give it away.
#[test]
fn a_poll_that_ends_holding_a_blocking_guard_is_reported_at_once() {
    let scope = TestScope::arm("poll_ends_holding", ScopeOptions::default());
    // A blocking guard is !Send: a task holding one across an .await is a local task. tokio
    // runs poll hooks for tasks of a LocalRuntime (a LocalSet's tasks get none).
    let mut b = tokio::runtime::Builder::new_current_thread();
    b.enable_all();
    lockscope::runtime::instrument(&mut b);
    let rt = b.build_local(Default::default()).unwrap();
    let m = Arc::new(lockscope::parking_lot::Mutex::named("held_at_poll_end", 0));
    let m2 = m.clone();
    rt.block_on(async move {
        tokio::task::spawn_local(async move {
            let g = m2.lock();
            tokio::task::yield_now().await;
            drop(g);
        })
        .await
        .unwrap();
    });
    let f = until(&scope, FindingKind::BlockingInAsync, "held_at_poll_end");
    assert!(f.to_string().contains("its poll returned Pending"), "{f}");
    drop(scope);
}

/// The linkerd pattern: owned permits moved into responses that outlive the request tasks.
/// Reported while the test runs, once the permit has outlived its task by the threshold.
#[test]
fn a_permit_that_outlives_its_task_is_reported_during_the_test() {
    let mut options = ScopeOptions::default();
    options.stuck_ms = Some(200);
    let scope = TestScope::arm("permit_outlives_task", options);
    let rt = instrumented_runtime();
    let limit = Arc::new(lockscope::tokio::Semaphore::named("concurrency_limit", 4));
    let responses = rt.block_on(async {
        let mut responses = Vec::new();
        for _ in 0..2 {
            let limit = limit.clone();
            let response = tokio::spawn(async move {
                let permit = limit.acquire_owned().await.unwrap();
                ("body", permit)
            })
            .await
            .unwrap();
            responses.push(response);
        }
        responses
    });
    let f = until(&scope, FindingKind::LeakedPermit, "concurrency_limit");
    let text = f.to_string();
    assert!(text.contains("outlived that task"), "{text}");
    drop(responses);
    drop(scope);
}

/// A permit handed on and released soon after its task ends is no leak.
#[test]
fn a_permit_released_soon_after_its_task_stays_silent() {
    let mut options = ScopeOptions::default();
    options.stuck_ms = Some(1000);
    let scope = TestScope::arm("permit_handed_on", options);
    let rt = instrumented_runtime();
    let limit = Arc::new(lockscope::tokio::Semaphore::named("handed_on", 1));
    rt.block_on(async {
        let l = limit.clone();
        let permit = tokio::spawn(async move { l.acquire_owned().await.unwrap() })
            .await
            .unwrap();
        tokio::task::yield_now().await;
        drop(permit);
    });
    lockscope::detector::check_now();
    lockscope::detector::check_now();
    assert!(
        scope.findings().iter().all(|f| !f.involves("handed_on")),
        "{:#?}",
        scope.findings()
    );
    drop(scope);
}
