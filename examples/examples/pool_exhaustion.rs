//! `pool_exhaustion`: a task holds a pool connection while it waits for a second one.
//!
//! The pool hands out connections that give their slot back when dropped (a semaphore of 4
//! permits, as in deadpool or bb8). An order handler takes a connection for the order, and,
//! before releasing it, calls `check_stock`, which takes another connection from the same
//! pool. With a few clients there is always a spare connection and everything works. Under
//! load, 4 handlers each hold one connection and each wait for a second: the pool is
//! exhausted for good, and every later request queues behind them (field note 4: "a gauge of
//! available permits that drops to zero and stays there is a deadlock").
//!
//! lockscope reports the stuck queue: the waiters, how long nothing was granted, and the 4
//! holders with the line where each took its connection. The metrics show the same:
//! `lockscope_permits_available` at 0 and `lockscope_waiters` growing.
//!
//! The fix: pass the connection you hold down to `check_stock` (or take both at once with
//! `acquire_many_owned(2)`).
//!
//! Run: `cargo run --example pool_exhaustion`
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use lockscope::detector::FindingKind;
use lockscope::tokio::{OwnedSemaphorePermit, Semaphore};
use lockscope_examples::{
    detector_for_examples, exit, expect_finding, findings_about, metric_lines, print_finding, step,
};

const POOL_SIZE: usize = 4;

/// A connection pool: at most `POOL_SIZE` connections out at once.
struct Pool {
    slots: Arc<Semaphore>,
}

/// A pooled connection: its slot goes back to the pool when it is dropped.
struct Conn {
    _slot: OwnedSemaphorePermit,
}

impl Pool {
    fn new(name: &str) -> Pool {
        Pool {
            slots: Arc::new(Semaphore::named(name, POOL_SIZE)),
        }
    }

    /// A connection, once one is free. `#[track_caller]`, and the semaphore's acquire is
    /// called before the future is returned, so that lockscope's reports name the line that
    /// called `get()` rather than this one.
    #[track_caller]
    fn get(&self) -> impl Future<Output = Conn> + use<> {
        let slot = self.slots.clone().acquire_owned();
        async move {
            Conn {
                _slot: slot.await.expect("never closed"),
            }
        }
    }
}

async fn query(_conn: &Conn) {
    tokio::time::sleep(Duration::from_millis(2)).await;
}

/// BUG: holds the order's connection while `check_stock` takes a second one.
async fn place_order(pool: &Pool) {
    let conn = pool.get().await;
    query(&conn).await;
    check_stock(pool).await;
    query(&conn).await;
}

async fn check_stock(pool: &Pool) {
    let conn = pool.get().await;
    query(&conn).await;
}

/// The fix: the stock check runs on the order's own connection.
async fn place_order_fixed(pool: &Pool) {
    let conn = pool.get().await;
    query(&conn).await;
    check_stock_on(&conn).await;
    query(&conn).await;
}

async fn check_stock_on(conn: &Conn) {
    query(conn).await;
}

/// `clients` concurrent clients placing `orders` orders each; returns how many completed
/// within `patience`.
async fn load(pool: &Arc<Pool>, clients: u32, orders: u32, fixed: bool, patience: Duration) -> u32 {
    let done = Arc::new(AtomicU32::new(0));
    for _ in 0..clients {
        let (pool, done) = (pool.clone(), done.clone());
        tokio::spawn(async move {
            for _ in 0..orders {
                if fixed {
                    place_order_fixed(&pool).await;
                } else {
                    place_order(&pool).await;
                }
                done.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    let all = clients * orders;
    let deadline = tokio::time::Instant::now() + patience;
    while done.load(Ordering::Relaxed) < all && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    done.load(Ordering::Relaxed)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    detector_for_examples(Duration::from_millis(500), Duration::from_millis(500), None);
    let pool = Arc::new(Pool::new("db_pool"));

    step("1. light load: 2 clients, 20 orders each, on a pool of 4 connections");
    let done = load(&pool, 2, 20, false, Duration::from_secs(2)).await;
    println!("{done} of 40 orders completed");

    step("2. a burst: 16 clients, 10 orders each");
    let done = load(&pool, 16, 10, false, Duration::from_millis(300)).await;
    println!("{done} of 160 orders completed; the rest never will");
    for line in metric_lines(
        "db_pool",
        &["lockscope_permits_available", "lockscope_waiters"],
    ) {
        println!("{line}");
    }
    print_finding(&expect_finding(FindingKind::StuckQueue, &["db_pool"]).await);

    step("3. the fix: check_stock uses the order's connection; the same burst");
    let fixed = Arc::new(Pool::new("db_pool_fixed"));
    let done = load(&fixed, 16, 10, true, Duration::from_secs(2)).await;
    lockscope::detector::check_now();
    let found = findings_about(&["db_pool_fixed"]);
    println!(
        "{done} of 160 orders completed; lockscope findings about db_pool_fixed: {}",
        found.len()
    );
    // The exhausted pool's tasks are stuck for good.
    exit(if done == 160 && found.is_empty() {
        0
    } else {
        1
    });
}
