//! What `#[lockscope::test]` expands to call. Not a public API: use the attribute.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

pub use lockscope_detector::scope::ScopeOptions;
pub use tokio;

use lockscope_detector::{TestScope, actor, render_all};

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
    builder.on_thread_start(move || actor::set_thread_scope(id));
    let rt = builder
        .build()
        .expect("Failed building the Runtime (lockscope::test)");
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
            body.as_mut().poll(cx).map(Ok)
        })
        .await
    });
    match outcome {
        Ok(out) => {
            // Leaks are judged while the runtime (and any task left running) still exists.
            let findings = scope.finish();
            rt.shutdown_timeout(Duration::from_secs(5));
            if !findings.is_empty() {
                panic!("{}", render_all(&findings));
            }
            out
        }
        Err(_report) => {
            let findings = scope.findings();
            drop(scope);
            // The deadlocked tasks can never finish: do not wait for them.
            rt.shutdown_background();
            panic!("{}", render_all(&findings));
        }
    }
}
