//! Test scope ids are never truncated (issue 17): hold entries kept 16 bits of the scope, so
//! after 65,535 armed tests in one process a hold's scope aliased another test's (or none),
//! and its findings went to the wrong test or nowhere. Its own test binary: it arms 100,000
//! scopes in this process.

use lockscope::detector::{FindingKind, ScopeOptions, TestScope};

#[test]
fn a_scope_armed_after_100000_others_still_gets_its_findings() {
    for _ in 0..100_000 {
        drop(TestScope::arm("filler", ScopeOptions::default()));
    }
    // Created outside any scope: only the hold can tie the leak below to the test.
    let sem = lockscope::tokio::Semaphore::named("scope_ids/sem", 1);
    let scope = TestScope::arm("past 16 bits", ScopeOptions::default());
    let id = scope.id();
    assert!(id > 100_000, "scope id {id}");
    let permit = sem.try_acquire().expect("a free permit");
    let mut scopes = Vec::new();
    lockscope::detector::__private::held::for_each_all(|h| scopes.push(h.scope));
    assert!(
        scopes.contains(&id),
        "no hold carries scope {id} whole: {scopes:?}"
    );
    // Still held when the test ends: a leak of this test's, found through the hold's scope.
    let findings = scope.finish();
    drop(permit);
    assert!(
        findings
            .iter()
            .any(|f| f.kind == FindingKind::LeakedPermit && f.involves("scope_ids/sem")),
        "scope {id} did not get its leak: {findings:#?}"
    );
}
