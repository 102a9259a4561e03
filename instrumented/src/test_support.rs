//! What `#[lockscope::test]` expands to call. Not a public API: use the attribute.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

pub use lockscope_detector::scope::ScopeOptions;
pub use tokio;

use std::sync::atomic::Ordering;

use lockscope_detector::executor::{self, RuntimeKey};
use lockscope_detector::{Finding, TestScope, actor, ci, render_all};

/// Runs one armed test: arms a scope, stamps the runtime's threads with it, runs `body`
/// until it ends or a live deadlock of this test is reported, then checks for leftover
/// findings.
///
/// # Panics
///
/// With the report, when any finding belongs to the test; and as `#[tokio::test]` does when
/// the runtime cannot be built or the body panics.
#[track_caller]
pub fn run_test<F: Future>(
    name: &str,
    options: ScopeOptions,
    mut builder: tokio::runtime::Builder,
    body: F,
) -> F::Output {
    let scope = TestScope::arm(name, options);
    let id = scope.id();
    let key = RuntimeKey::new();
    builder
        .on_thread_start(move || {
            actor::set_thread_scope(id);
            executor::thread_started(key);
        })
        .on_thread_stop(executor::thread_stopped);
    crate::runtime::task_hooks(&mut builder);
    let rt = builder
        .build()
        .expect("Failed building the Runtime (lockscope::test)");
    // This thread drives the body: the model learns that the body can only run here, and,
    // on a multi-thread runtime, that once parked it needs a worker to wake it.
    let block_on = executor::enter_block_on(key, rt.handle());
    let deadlock = scope.deadlock();
    let outcome = rt.block_on(async {
        let mut body = pin!(body);
        let mut deadlock = pin!(deadlock);
        std::future::poll_fn(|cx| {
            // The deadlock signal first: a body that blocks its thread in its very first poll
            // (a parking_lot self-deadlock before any `.await`) must find the watchdog already
            // told that this test listens, so that it ends the process with the report.
            if let Poll::Ready(report) = deadlock.as_mut().poll(cx) {
                return Poll::Ready(Err(report));
            }
            block_on.polling().store(true, Ordering::Relaxed);
            let polled = body.as_mut().poll(cx).map(Ok);
            block_on.polling().store(false, Ordering::Relaxed);
            polled
        })
        .await
    });
    drop(block_on);
    match outcome {
        Ok(out) => {
            // Leaks are judged while the runtime (and any task left running) still exists.
            let findings = scope.finish();
            rt.shutdown_timeout(Duration::from_secs(5));
            if !findings.is_empty() {
                failed(name, &findings);
            }
            out
        }
        Err(_report) => {
            let findings = scope.findings();
            drop(scope);
            // The deadlocked tasks can never finish: do not wait for them.
            rt.shutdown_background();
            failed(name, &findings);
        }
    }
}

/// Runs one armed plain (non-async) test: as [`run_test`], with no runtime. A deadlock that
/// blocks the test's thread ends the process with the report (the thread can never notice).
///
/// # Panics
///
/// With the report, when any finding belongs to the test; and as the body does.
#[track_caller]
pub fn run_plain_test<T>(name: &str, options: ScopeOptions, body: impl FnOnce() -> T) -> T {
    let scope = TestScope::arm(name, options);
    scope.listen();
    let out = body();
    let findings = scope.finish();
    if !findings.is_empty() {
        failed(name, &findings);
    }
    out
}

/// Fails test `name` on `findings`: the reports `LOCKSCOPE_REPORT` asks for, then the panic
/// with the report.
#[track_caller]
fn failed(name: &str, findings: &[Finding]) -> ! {
    ci::test_failed(name, findings);
    panic!("{}", render_all(findings));
}
