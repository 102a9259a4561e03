//! Object pools on a semaphore, as deadpool builds them: a permit is `forget`-ed at checkout
//! and `add_permits(1)` gives it back at return. A busy pool always has permits out, so its
//! forgotten count never reads 0; that is not a leak. An exhausted pool's stuck queue says
//! its permits are checked out, not that they do not exist.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use lockscope::detector::{FindingKind, ScopeOptions, TestScope};
use lockscope::tokio::Semaphore;

use common::until;

fn arm(name: &str, leak_ms: u64) -> TestScope {
    let mut options = ScopeOptions::default();
    options.stuck_ms = Some(300);
    options.starvation_ms = Some(60_000);
    options.leak_ms = Some(leak_ms);
    TestScope::arm(name, options)
}

/// Checks out one object (the permit forgotten, as deadpool does).
async fn checkout(pool: &Semaphore) {
    pool.acquire().await.unwrap().forget(); // site:checkout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_pool_whose_permits_keep_coming_back_never_leaks() {
    let scope = arm("busy_pool", 300);
    let pool = Arc::new(Semaphore::named("busy_pool", 4));
    // 4 tasks take and return objects for four leak thresholds: some permits are always out.
    let until_t = Instant::now() + Duration::from_millis(900);
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let pool = pool.clone();
        tasks.push(tokio::spawn(async move {
            let mut cycles = 0u64;
            while Instant::now() < until_t {
                checkout(&pool).await;
                tokio::time::sleep(Duration::from_millis(2)).await;
                pool.add_permits(1);
                cycles += 1;
            }
            cycles
        }));
    }
    // Meanwhile the detector looks, again and again (the watchdog does too).
    let mut saw_out = false;
    while Instant::now() < until_t {
        lockscope::detector::check_now();
        saw_out |= pool.available_permits() < 4;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut cycles = 0;
    for t in tasks {
        cycles += t.await.unwrap();
    }
    assert!(
        saw_out && cycles > 40,
        "the pool was busy ({cycles} cycles)"
    );
    let findings = scope.finish();
    assert!(
        !findings.iter().any(|f| f.involves("busy_pool")),
        "{findings:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checked_out_object_never_returned_is_a_leak_once_the_pool_is_quiet() {
    let scope = arm("lost_object", 150);
    let pool = Arc::new(Semaphore::named("lost_object_pool", 3));
    checkout(&pool).await; // never returned
    for _ in 0..20 {
        checkout(&pool).await;
        pool.add_permits(1);
    }
    let f = until(&scope, FindingKind::LeakedPermit, "lost_object_pool").await;
    let text = f.to_string();
    assert!(
        text.contains("1 permit of semaphore \"lost_object_pool\" was forgotten and never added back for over 150 ms"),
        "{text}"
    );
    assert!(
        text.contains("pool_semaphores.rs"),
        "the checkout site: {text}"
    );
    pool.add_permits(1);
    drop(scope.finish());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_pool_says_its_permits_are_checked_out() {
    let scope = arm("exhausted_pool", 60_000);
    let pool = Arc::new(Semaphore::named("exhausted_pool", 2));
    checkout(&pool).await;
    checkout(&pool).await;
    let p = pool.clone();
    let waiter = tokio::spawn(async move { checkout(&p).await });
    let f = until(&scope, FindingKind::StuckQueue, "exhausted_pool").await;
    let text = f.to_string();
    assert!(
        text.contains("2 permits are checked out: forgotten with forget() when taken"),
        "{text}"
    );
    assert!(
        text.contains("pool_semaphores.rs"),
        "the checkout site: {text}"
    );
    assert!(!text.contains("only 0 exist"), "{text}");
    assert!(!text.contains("ask for no more permits"), "{text}");
    assert!(text.contains("checked-out objects"), "{text}");
    waiter.abort();
    let _ = waiter.await;
    pool.add_permits(2);
    drop(scope.finish());
}
