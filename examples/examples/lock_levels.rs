//! `lock_levels`: declared lock levels, checked on the first run.
//!
//! A bank declares its lock classes as an enum: the ledger (level 1) before the accounts
//! (level 2). One task, nothing racing it:
//!
//! 1. takes the ledger, then an account: the declared order, no finding;
//! 2. takes both accounts (one level) together through a `MultiLock`: no finding;
//! 3. takes an account, then the ledger: a `lock-order-inversion` at that acquisition, with
//!    both levels and sites, though no second task ever ran (the program goes on: the
//!    finding is recorded, not a panic).
//!
//! Run: `cargo run --example lock_levels`
use std::time::Duration;

use lockscope::tokio::{MultiLock, Mutex};
use lockscope::{Level, LockLevel};
use lockscope_examples::{detector_for_examples, exit, findings_about, print_finding, step};

/// The bank's lock classes, lower first.
#[derive(Clone, Copy)]
enum Rank {
    Ledger = 1,
    Account = 2,
}

impl LockLevel for Rank {
    fn level(&self) -> Level {
        let name = match self {
            Rank::Ledger => "Ledger",
            Rank::Account => "Account",
        };
        Level::named(*self as u32, name)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    detector_for_examples(Duration::from_secs(1), Duration::from_secs(1), None);
    let ledger = Mutex::named("ledger", Vec::<String>::new()).with_level(Rank::Ledger);
    let alice = Mutex::named("account:alice", 100i64).with_level(Rank::Account);
    let bob = Mutex::named("account:bob", 100i64).with_level(Rank::Account);
    let names = ["ledger", "account:alice", "account:bob"];

    step("1. the ledger, then an account: the declared order");
    {
        let mut log = ledger.lock().await;
        *alice.lock().await -= 10;
        log.push("alice -10".into());
    }
    println!("findings so far: {}", findings_about(&names).len());

    step("2. both accounts (one level) together, through a MultiLock");
    {
        let both = MultiLock::new([&bob, &alice]).expect("two accounts");
        let mut g = both.lock().await;
        *g.get_mut(0) -= 5;
        *g.get_mut(1) += 5;
    }
    println!("findings so far: {}", findings_about(&names).len());

    step("3. an account, then the ledger: against the declared order, one task, first run");
    {
        let mut a = alice.lock().await;
        *a += 1;
        ledger.lock().await.push("alice +1".into());
    }
    let found = findings_about(&names);
    for f in &found {
        print_finding(f);
    }
    println!(
        "balances: alice {}, bob {}; ledger entries: {}",
        *alice.lock().await,
        *bob.lock().await,
        ledger.lock().await.len()
    );
    exit(if found.len() == 1 { 0 } else { 1 });
}
