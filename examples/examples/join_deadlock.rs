//! `join_deadlock`: a task holds a lock and awaits a task it spawned that needs the same lock.
//!
//! A cache refresher takes the cache's lock, then hands the slow part (fetching the new
//! entries) to a task of its own and awaits it, keeping the lock "so that nobody reads a
//! half-refreshed cache". The fetch task, when done, writes its entries into the cache: it
//! locks the cache too. The refresher waits for the task; the task waits for the lock the
//! refresher holds. Nothing moves, and no lock queue ever grows past one waiter.
//!
//! 1. The deadlock: lockscope reports it as one, naming the join (`join of task N (spawned
//!    at ...)`), the lock and both tasks.
//! 2. The fix: the task returns its entries and the refresher writes them after the join;
//!    the lock is taken only for the write. The same refresh completes; nothing is reported.
//!
//! Run: `cargo run --example join_deadlock`
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use lockscope::detector::FindingKind;
use lockscope::tokio::{Mutex, task};
use lockscope_examples::{
    detector_for_examples, exit, expect_finding, findings_about, print_finding, step,
};

type Cache = Arc<Mutex<HashMap<String, u32>>>;

/// The slow part of a refresh: fetching the new entries.
async fn fetch() -> Vec<(String, u32)> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    vec![("a".into(), 1), ("b".into(), 2)]
}

/// BUG: awaits the fetch task while holding the cache's lock, and the task needs the lock.
async fn refresh(cache: Cache) {
    let _held = cache.lock().await;
    let c = cache.clone();
    let fetcher = task::spawn(async move {
        let entries = fetch().await;
        c.lock().await.extend(entries);
    });
    fetcher.await.expect("the fetch task does not panic");
}

/// The fix: the task returns what it fetched; the lock is taken after the join, for the write.
async fn refresh_fixed(cache: Cache) {
    let entries = task::spawn(fetch())
        .await
        .expect("the fetch task does not panic");
    cache.lock().await.extend(entries);
}

#[tokio::main]
async fn main() {
    detector_for_examples(Duration::from_secs(1), Duration::from_secs(1), None);

    step("1. the refresher holds the cache and awaits the fetch task, which needs the cache");
    let cache: Cache = Arc::new(Mutex::named("cache", HashMap::new()));
    tokio::spawn(refresh(cache.clone()));
    print_finding(&expect_finding(FindingKind::Deadlock, &["cache"]).await);

    step("2. the fix: join first, then lock for the write; a fresh cache");
    let fresh: Cache = Arc::new(Mutex::named("fresh cache", HashMap::new()));
    refresh_fixed(fresh.clone()).await;
    lockscope::detector::check_now();
    let about_fixed = findings_about(&["fresh cache"]);
    println!(
        "refreshed: {} entries; lockscope findings about the fresh cache: {}",
        fresh.lock().await.len(),
        about_fixed.len()
    );
    exit(if about_fixed.is_empty() { 0 } else { 1 });
}
