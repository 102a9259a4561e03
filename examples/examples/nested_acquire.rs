//! `nested_acquire`: a task asks again for a primitive it already holds.
//!
//! Part 1, a mutex: `restock` locks the inventory and, still holding the guard, calls
//! `low_stock`, which locks the inventory again. tokio's Mutex is not reentrant: the task
//! waits for itself, forever, without a panic or an error (field note 1: "re-entering the
//! same non-reentrant lock from inside its own critical section waits forever, silently").
//!
//! Part 2, a semaphore (field note 4): `handle` takes a connection from a pool of 3 and,
//! before giving it back, `audit` takes a second one. Alone, the request gets both permits and
//! finishes: the bug is latent, and lockscope reports it on that very run. Under load, 3
//! requests each hold one permit and each wait for a second: nobody ever releases.
//!
//! The fix: pass the guard (or the connection) you already hold down to the code that needs
//! it; acquire all the permits a task needs in one `acquire_many`.
//!
//! Run: `cargo run --example nested_acquire`
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use lockscope::detector::FindingKind;
use lockscope::tokio::{Mutex, Semaphore};
use lockscope_examples::{detector_for_examples, expect_finding, print_finding, step};

struct Inventory {
    stock: Mutex<HashMap<&'static str, u32>>,
}

impl Inventory {
    async fn restock(&self, item: &'static str, n: u32) {
        let mut stock = self.stock.lock().await;
        *stock.entry(item).or_default() += n;
        // BUG: still holding `stock`, and `low_stock` locks it again.
        let low = self.low_stock().await;
        println!("low on: {low:?}"); // never printed
    }

    async fn low_stock(&self) -> Vec<&'static str> {
        let stock = self.stock.lock().await;
        stock
            .iter()
            .filter(|(_, n)| **n < 5)
            .map(|(k, _)| *k)
            .collect()
    }
}

/// One request: a connection for the query, then (the bug) a second one for the audit log.
async fn handle(pool: &Semaphore, request: u32) {
    let _conn = pool.acquire().await.expect("the pool is never closed");
    // The query: the only await between the two acquisitions.
    tokio::time::sleep(Duration::from_millis(10)).await;
    audit(pool, request).await;
}

async fn audit(pool: &Semaphore, request: u32) {
    // BUG: the caller still holds a connection of this same pool.
    let _conn = pool.acquire().await.expect("the pool is never closed");
    println!("request {request}: audited");
}

// A current-thread runtime: every task runs on this thread, so the order of events is easy
// to follow. On a multi-threaded runtime the deadlocks are found the same way, but the
// nested acquisition itself is checked against the holds recorded on the current thread:
// a task moved to another worker by the `.await` between the two acquisitions escapes it.
#[tokio::main(flavor = "current_thread")]
async fn main() {
    detector_for_examples(Duration::from_secs(1), Duration::from_secs(1), None);

    step("part 1: a task locks the inventory mutex, then locks it again");
    let inventory = Arc::new(Inventory {
        stock: Mutex::named("inventory", HashMap::new()),
    });
    let inv = inventory.clone();
    tokio::spawn(async move { inv.restock("widget", 3).await });
    // Reported when the task starts waiting for itself...
    print_finding(&expect_finding(FindingKind::NestedAcquire, &["inventory"]).await);
    // ...and, two detector checks later, the resulting deadlock.
    print_finding(&expect_finding(FindingKind::Deadlock, &["inventory"]).await);

    step("part 2a: one request on an idle pool of 3 connections: it finishes");
    let pool = Arc::new(Semaphore::named("db_pool", 3));
    let p = pool.clone();
    tokio::spawn(async move { handle(&p, 0).await })
        .await
        .expect("the request task does not panic");
    // It got both permits, yet the nested acquisition is reported: latent, not harmless.
    print_finding(&expect_finding(FindingKind::NestedAcquire, &["db_pool"]).await);

    step("part 2b: 3 requests at once: each holds a connection and waits for a second");
    for request in 1..=3 {
        let pool = pool.clone();
        tokio::spawn(async move { handle(&pool, request).await });
    }
    print_finding(&expect_finding(FindingKind::Deadlock, &["db_pool"]).await);
    println!(
        "\ndb_pool: {} of 3 connections available, nobody will ever give one back",
        pool.available_permits()
    );
    // Leaving main drops the runtime, and with it the stuck tasks.
}
