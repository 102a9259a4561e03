//! Stress mode: a latent deadlock that an ordinary run passes, turned into a confirmed one.
//!
//! ```sh
//! cargo test -p lockscope --example stress -- --nocapture
//! ```
//!
//! `transfers` moves money both ways between two accounts, each transfer locking its source
//! then its destination. On a current-thread runtime nothing makes the two transfers overlap:
//! the first takes both locks and finishes before the second starts, so an ordinary test
//! passes. `#[lockscope::test(stress)]` runs the same body with perturbation at every
//! acquisition and, once a run reported the lock-order inversion, pauses at its sites: the
//! two transfers deadlock, and the failure reads `lockscope: deadlock: ... (confirmed in run
//! k of 16 (seed S) by stress mode)`, with `LOCKSCOPE_STRESS_SEED=S` to replay that run.
//! (The deadlock is the point here, so the stress test expects its panic; `--nocapture`
//! shows the report.)

use std::sync::Arc;

use lockscope::tokio::Mutex;

/// Two accounts and a transfer each way, run as two tasks.
async fn transfers() {
    let alice = Arc::new(Mutex::named("alice", 100u64));
    let bob = Arc::new(Mutex::named("bob", 100u64));
    let pay = |from: Arc<Mutex<u64>>, to: Arc<Mutex<u64>>| async move {
        let mut from = from.lock().await;
        let mut to = to.lock().await;
        *from -= 10;
        *to += 10;
    };
    let one = tokio::spawn(pay(alice.clone(), bob.clone()));
    let two = tokio::spawn(pay(bob.clone(), alice.clone()));
    one.await.unwrap();
    two.await.unwrap();
    assert_eq!(*alice.lock().await + *bob.lock().await, 200);
}

/// An ordinary run: it passes.
fn main() {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(transfers());
    println!(
        "an ordinary run passed; `cargo test -p lockscope --example stress -- --nocapture` shows stress mode confirm its deadlock"
    );
}

#[cfg(test)]
mod tests {
    /// An ordinary test of the same code: it passes, the bug stays latent.
    #[tokio::test]
    async fn an_ordinary_run_passes() {
        super::transfers().await;
    }

    /// The stress test: the deadlock happens, confirmed, with the seed that replays it.
    #[lockscope::test(stress)]
    #[should_panic(expected = "confirmed in run")]
    async fn a_stress_run_confirms_the_deadlock() {
        super::transfers().await;
    }
}
