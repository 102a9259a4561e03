//! `rwlock_reentrant_read`: a read lock taken again inside a read, while a writer queues.
//!
//! `price` reads the rates cache and, still holding the read guard, calls `convert`, which
//! reads the cache again. Two readers at once are fine, so this works in every quiet test.
//! But tokio's RwLock is write-preferring (fair, FIFO): once a writer queues, new readers
//! wait behind it. When the refresher asks for the write lock between the two reads, the
//! writer waits for the first read guard, and the second read waits for the writer.
//!
//! 1. Without a writer: the request finishes; lockscope reports the nested read anyway.
//! 2. With the refresher queueing between the two reads: the deadlock.
//!
//! The fix: pass the guard you hold down (`convert(&rates, ..)`) instead of locking again.
//!
//! Run: `cargo run --example rwlock_reentrant_read`
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use lockscope::detector::FindingKind;
use lockscope::tokio::RwLock;
use lockscope_examples::{detector_for_examples, expect_finding, print_finding, step};

type Rates = RwLock<HashMap<&'static str, f64>>;

/// A price in `currency`.
async fn price(rates: &Rates, amount: f64, currency: &'static str) -> f64 {
    let table = rates.read().await;
    let markup = table.get("markup").copied().unwrap_or(1.0);
    // Time for the refresher to queue its write (in production: any await at all).
    tokio::time::sleep(Duration::from_millis(100)).await;
    // BUG: `convert` reads the cache again while `table` is still held.
    convert(rates, amount * markup, currency).await
}

async fn convert(rates: &Rates, amount: f64, currency: &'static str) -> f64 {
    let table = rates.read().await;
    amount * table.get(currency).copied().unwrap_or(1.0)
}

/// The refresher: replaces the rates every now and then.
async fn refresh(rates: &Rates) {
    let mut table = rates.write().await;
    table.insert("EUR", 0.92);
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    detector_for_examples(Duration::from_secs(1), Duration::from_secs(1), None);
    let rates: Arc<Rates> = Arc::new(RwLock::named(
        "rates",
        HashMap::from([("EUR", 0.9), ("markup", 1.1)]),
    ));

    step("1. a price request, no writer around: it finishes");
    let r = rates.clone();
    let p = tokio::spawn(async move { price(&r, 100.0, "EUR").await })
        .await
        .expect("no panic");
    println!("price: {p:.2} EUR");
    print_finding(&expect_finding(FindingKind::NestedAcquire, &["rates"]).await);

    step("2. the same request while the refresher asks for the write lock in between");
    let r = rates.clone();
    tokio::spawn(async move { price(&r, 100.0, "EUR").await });
    tokio::time::sleep(Duration::from_millis(5)).await; // the request holds its first read
    let r = rates.clone();
    tokio::spawn(async move { refresh(&r).await });
    print_finding(&expect_finding(FindingKind::Deadlock, &["rates"]).await);
}
