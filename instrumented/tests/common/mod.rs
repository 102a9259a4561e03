//! Shared helpers of the detector tests.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use lockscope::detector::{Finding, FindingKind, ScopeOptions, TestScope};

/// Arms a test scope on this thread (a current-thread runtime's tasks run here too).
pub fn arm(name: &str, stuck_ms: u64, starvation_ms: u64) -> TestScope {
    TestScope::arm(
        name,
        ScopeOptions {
            stuck_ms: Some(stuck_ms),
            starvation_ms: Some(starvation_ms),
            leak_ms: None,
        },
    )
}

/// Polls the detector (bounded: 5 s) until a finding of `kind` naming `lock` reached
/// `scope`; returns it. The detector's clocks are real, so this waits in real time.
pub async fn until(scope: &TestScope, kind: FindingKind, lock: &str) -> Finding {
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
            "no {kind} finding naming {lock:?} within 5 s; findings: {:#?}",
            scope.findings()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every finding naming `lock`, after two more analyses.
pub fn naming(lock: &str) -> Vec<Finding> {
    lockscope::detector::check_now();
    lockscope::detector::check_now();
    lockscope::detector::findings()
        .into_iter()
        .filter(|f| f.involves(lock))
        .collect()
}

/// The line of the caller, for asserting sites.
#[track_caller]
pub fn line() -> u32 {
    std::panic::Location::caller().line()
}

/// `file:line` of a site in this test file.
pub fn site(file: &str, line: u32) -> String {
    format!("{file}:{line}:")
}
