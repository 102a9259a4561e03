//! `actor_deadlock`: a task holds a lock while it `send().await`s into a full bounded channel
//! whose consumer first needs that lock.
//!
//! An audit actor drains a bounded mailbox: for each event it receives, it locks the ledger
//! to stamp the event with the ledger's balance. A batch job takes the ledger's lock, applies
//! a batch of transfers, and sends one audit event per transfer while it still holds the lock
//! "so that the events come out in ledger order". The mailbox holds 4 events: once it is
//! full, the job waits for the actor to drain it, and the actor waits for the ledger's lock
//! the job holds. Nothing moves, and the lock's queue never grows past one waiter.
//!
//! 1. The deadlock: lockscope reports it as one, naming the channel (`mpsc channel "audit"`),
//!    the lock, both tasks and the line of the send.
//! 2. The fix: the job builds its events under the lock and sends them after releasing it.
//!    The same batch is audited; nothing is reported.
//!
//! Run: `cargo run --example actor_deadlock`
use std::sync::Arc;
use std::time::Duration;

use lockscope::detector::FindingKind;
use lockscope::tokio::{Mutex, mpsc, task};
use lockscope_examples::{
    detector_for_examples, exit, expect_finding, findings_about, print_finding, step,
};

type Ledger = Arc<Mutex<i64>>;

/// The audit actor: stamps each event with the ledger's balance.
fn audit_actor(ledger: Ledger, mut mailbox: mpsc::Receiver<i64>) -> task::JoinHandle<usize> {
    task::spawn(async move {
        let mut audited = 0;
        while let Some(amount) = mailbox.recv().await {
            let balance = *ledger.lock().await;
            let _record = (amount, balance);
            audited += 1;
        }
        audited
    })
}

/// BUG: sends into the actor's bounded mailbox while holding the ledger the actor needs.
async fn apply_batch(ledger: Ledger, audit: mpsc::Sender<i64>, batch: Vec<i64>) {
    let mut balance = ledger.lock().await;
    for amount in batch {
        *balance += amount;
        audit.send(amount).await.expect("the audit actor runs");
    }
}

/// The fix: the events are built under the lock, in ledger order, and sent after it.
async fn apply_batch_fixed(ledger: Ledger, audit: mpsc::Sender<i64>, batch: Vec<i64>) {
    let events: Vec<i64> = {
        let mut balance = ledger.lock().await;
        batch
            .into_iter()
            .inspect(|amount| *balance += amount)
            .collect()
    };
    for amount in events {
        audit.send(amount).await.expect("the audit actor runs");
    }
}

#[tokio::main]
async fn main() {
    detector_for_examples(Duration::from_secs(1), Duration::from_secs(1), None);
    let batch: Vec<i64> = (1..=20).collect();

    step("1. the batch job holds the ledger and sends into the audit actor's full mailbox");
    let ledger: Ledger = Arc::new(Mutex::named("ledger", 0));
    let (audit, mailbox) = mpsc::channel_named("audit", 4);
    let _actor = audit_actor(ledger.clone(), mailbox);
    tokio::spawn(apply_batch(ledger.clone(), audit, batch.clone()));
    print_finding(&expect_finding(FindingKind::Deadlock, &["ledger"]).await);

    step("2. the fix: send after releasing the ledger; a fresh ledger and mailbox");
    let fresh: Ledger = Arc::new(Mutex::named("fresh ledger", 0));
    let (audit, mailbox) = mpsc::channel_named("fresh audit", 4);
    let actor = audit_actor(fresh.clone(), mailbox);
    apply_batch_fixed(fresh.clone(), audit, batch).await;
    let audited = actor.await.expect("the audit actor does not panic");
    lockscope::detector::check_now();
    let about_fixed = findings_about(&["fresh ledger"]);
    println!(
        "audited: {audited} events, balance {}; lockscope findings about the fresh ledger: {}",
        *fresh.lock().await,
        about_fixed.len()
    );
    exit(if about_fixed.is_empty() { 0 } else { 1 });
}
