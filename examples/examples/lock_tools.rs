//! `lock_tools`: the lock tools lockscope adds beyond the drop-ins.
//!
//! 1. `MultiLock`: the `abba` example's transfers, alice-to-bob and bob-to-alice at once,
//!    each taking both accounts through a `MultiLock` listed payer first. Listed in opposite
//!    orders, the two sets are still taken in one global order: no deadlock, no finding.
//! 2. Status queries: inside a transfer, the task asks whether it holds the payer's account
//!    (`held_by_current`) and who holds the payee's (`holders`), as a debug check would.
//!
//! Run: `cargo run --example lock_tools`
use std::sync::Arc;
use std::time::Duration;

use lockscope::tokio::{MultiLock, Mutex};
use lockscope_examples::{detector_for_examples, exit, findings_about, step};

/// Pays `amount` from `from` to `to`, both locked at once whatever their order.
async fn transfer(from: Arc<Mutex<i64>>, to: Arc<Mutex<i64>>, amount: i64) {
    let accounts = MultiLock::new([&*from, &*to]).expect("two different accounts");
    let mut g = accounts.lock().await;
    // The fraud check: an `.await` with both accounts held, where `abba` deadlocked.
    tokio::time::sleep(Duration::from_millis(20)).await;
    debug_assert!(from.held_by_current() && to.held_by_current());
    *g.get_mut(0) -= amount;
    *g.get_mut(1) += amount;
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    detector_for_examples(Duration::from_secs(1), Duration::from_secs(1), None);
    let alice = Arc::new(Mutex::named("account:alice", 100i64));
    let bob = Arc::new(Mutex::named("account:bob", 100i64));

    step("1. alice pays bob while bob pays alice, each through a MultiLock listed payer first");
    let t1 = tokio::spawn(transfer(alice.clone(), bob.clone(), 10));
    let t2 = tokio::spawn(transfer(bob.clone(), alice.clone(), 5));
    t1.await.expect("no panic");
    t2.await.expect("no panic");
    println!(
        "both transfers done: alice {}, bob {}",
        *alice.lock().await,
        *bob.lock().await
    );

    step("2. status queries: who holds an account, from the detector's books");
    let g = alice.lock().await;
    let holder = &alice.holders()[0];
    println!(
        "account:alice is_locked: {}, held by the caller: {}, holder: {} since {} ms, acquired at {}",
        alice.is_locked(),
        alice.held_by_current(),
        holder.actor,
        holder.held_ms,
        holder.site
    );
    println!(
        "account:bob is_locked: {}, can_lock: {}",
        bob.is_locked(),
        bob.can_lock()
    );
    drop(g);

    lockscope::detector::check_now();
    let about = findings_about(&["account:alice", "account:bob"]);
    println!("lockscope findings about the accounts: {}", about.len());
    exit(if about.is_empty() { 0 } else { 1 });
}
