//! `abba`: two tasks take the same two locks in opposite orders.
//!
//! `transfer(from, to)` locks the payer's account, checks the balance (an `.await`: a fraud
//! check, say), then locks the payee's. Alice pays Bob while Bob pays Alice: one task holds
//! Alice and waits for Bob, the other holds Bob and waits for Alice. The classic ABBA
//! deadlock (field note 3: "callers must keep one order everywhere or deadlock").
//!
//! 1. The two transfers run one after the other: nothing hangs, and still lockscope reports
//!    the lock-order inversion, with both orders and their call sites. This is the report that
//!    catches the bug in CI, long before the unlucky interleaving happens in production.
//! 2. The two transfers run at once: the deadlock, reported with who holds what and waits
//!    for what.
//! 3. The fix: lock the two accounts in one global order (by account id). The same concurrent
//!    transfers complete, and lockscope reports nothing.
//!
//! Run: `cargo run --example abba`
use std::sync::Arc;
use std::time::Duration;

use lockscope::detector::FindingKind;
use lockscope::tokio::Mutex;
use lockscope_examples::{
    detector_for_examples, exit, expect_finding, findings_about, print_finding, step,
};

struct Account {
    id: u32,
    balance: Mutex<i64>,
}

impl Account {
    fn new(id: u32, name: &str, balance: i64) -> Arc<Account> {
        Arc::new(Account {
            id,
            balance: Mutex::named(name, balance),
        })
    }
}

/// The fraud check between the two locks: the `.await` that lets the other transfer in.
async fn fraud_check() {
    tokio::time::sleep(Duration::from_millis(20)).await;
}

/// BUG: locks in argument order, so `transfer(a, b)` and `transfer(b, a)` take the two
/// locks in opposite orders.
async fn transfer(from: Arc<Account>, to: Arc<Account>, amount: i64) {
    let mut payer = from.balance.lock().await;
    fraud_check().await;
    let mut payee = to.balance.lock().await;
    *payer -= amount;
    *payee += amount;
}

/// The fix: always lock the account with the smaller id first.
async fn transfer_ordered(from: Arc<Account>, to: Arc<Account>, amount: i64) {
    let (first, second) = if from.id < to.id {
        (&from, &to)
    } else {
        (&to, &from)
    };
    let mut g1 = first.balance.lock().await;
    fraud_check().await;
    let mut g2 = second.balance.lock().await;
    let (payer, payee) = if from.id < to.id {
        (&mut *g1, &mut *g2)
    } else {
        (&mut *g2, &mut *g1)
    };
    *payer -= amount;
    *payee += amount;
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    detector_for_examples(Duration::from_secs(1), Duration::from_secs(1), None);
    let alice = Account::new(1, "account:alice", 100);
    let bob = Account::new(2, "account:bob", 100);
    let names = ["account:alice", "account:bob"];

    step("1. alice pays bob, then bob pays alice, one after the other: no hang");
    tokio::spawn(transfer(alice.clone(), bob.clone(), 10))
        .await
        .expect("no panic");
    tokio::spawn(transfer(bob.clone(), alice.clone(), 5))
        .await
        .expect("no panic");
    println!(
        "both transfers done: alice {}, bob {}",
        *alice.balance.lock().await,
        *bob.balance.lock().await
    );
    // Reported even though this run did not deadlock.
    print_finding(&expect_finding(FindingKind::LockOrderInversion, &names).await);

    step("2. the same two transfers at once: each holds one account and waits for the other");
    tokio::spawn(transfer(alice.clone(), bob.clone(), 10));
    tokio::spawn(transfer(bob.clone(), alice.clone(), 5));
    print_finding(&expect_finding(FindingKind::Deadlock, &names).await);

    step("3. the fix: lock by account id; the same concurrent transfers on fresh accounts");
    let carol = Account::new(3, "account:carol", 100);
    let dave = Account::new(4, "account:dave", 100);
    let t1 = tokio::spawn(transfer_ordered(carol.clone(), dave.clone(), 10));
    let t2 = tokio::spawn(transfer_ordered(dave.clone(), carol.clone(), 5));
    t1.await.expect("no panic");
    t2.await.expect("no panic");
    lockscope::detector::check_now();
    let about_fixed = findings_about(&["account:carol", "account:dave"]);
    println!(
        "both transfers done: carol {}, dave {}; lockscope findings about them: {}",
        *carol.balance.lock().await,
        *dave.balance.lock().await,
        about_fixed.len()
    );
    exit(if about_fixed.is_empty() { 0 } else { 1 });
}
