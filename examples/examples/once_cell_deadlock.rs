//! `once_cell_deadlock`: an initialiser waits for a lock held by a task that waits for the cell.
//!
//! A client keeps its auth token in a `OnceCell`, fetched on first use; the fetch records the
//! new token's expiry in the connection's state, behind a lock. A request handler takes the
//! state's lock to build a request, then asks the cell for the token to sign it. When the
//! handler arrives while the token is still being fetched, it waits for the fetch; the fetch,
//! done, waits for the state's lock the handler holds. Nothing moves, and the only lock queue
//! has one waiter.
//!
//! 1. The deadlock: lockscope reports it as one, naming the cell (`once_cell "auth token"`),
//!    the lock, both tasks and the line of each wait.
//! 2. The fix: the handler gets the token before it takes the lock. The same requests
//!    complete; nothing is reported.
//!
//! Run: `cargo run --example once_cell_deadlock`
use std::sync::Arc;
use std::time::Duration;

use lockscope::detector::FindingKind;
use lockscope::tokio::{Mutex, OnceCell};
use lockscope_examples::{
    detector_for_examples, exit, expect_finding, findings_about, print_finding, step,
};
use tokio::sync::Notify;

/// A connection: its token, fetched once, and its state.
struct Client {
    token: OnceCell<String>,
    state: Mutex<State>,
    /// Told when a fetch begins (so that the example's handler arrives during it).
    fetching: Notify,
}

#[derive(Default)]
struct State {
    expires_in: u64,
    sent: u32,
}

impl Client {
    fn new(name: &str) -> Arc<Client> {
        Arc::new(Client {
            token: OnceCell::named(format!("{name} token")),
            state: Mutex::named(format!("{name} state"), State::default()),
            fetching: Notify::new(),
        })
    }

    /// The token, fetched on first use; the fetch records the expiry in the state.
    async fn token(&self) -> &str {
        self.token
            .get_or_init(|| async {
                self.fetching.notify_one();
                tokio::time::sleep(Duration::from_millis(20)).await;
                self.state.lock().await.expires_in = 3600;
                "t0k3n".to_owned()
            })
            .await
    }

    /// BUG: holds the state's lock while it waits for the token, whose fetch needs the lock.
    async fn send(&self) {
        let mut state = self.state.lock().await;
        let token = self.token().await;
        state.sent += 1;
        println!("sent a request signed with {token}");
    }

    /// The fix: the token first, then the lock.
    async fn send_fixed(&self) {
        let token = self.token().await;
        let mut state = self.state.lock().await;
        state.sent += 1;
        println!("sent a request signed with {token}");
    }
}

#[tokio::main]
async fn main() {
    detector_for_examples(Duration::from_secs(1), Duration::from_secs(1), None);

    step("1. a handler holds the state and waits for the token, whose fetch needs the state");
    let client = Client::new("auth");
    let c = client.clone();
    tokio::spawn(async move { c.token().await.len() });
    client.fetching.notified().await;
    let c = client.clone();
    tokio::spawn(async move { c.send().await });
    print_finding(&expect_finding(FindingKind::Deadlock, &["auth token"]).await);

    step("2. the fix: the token first, then the lock; a fresh client");
    let fresh = Client::new("fresh");
    let c = fresh.clone();
    let first = tokio::spawn(async move { c.send_fixed().await });
    fresh.fetching.notified().await;
    fresh.send_fixed().await;
    first.await.expect("the first request does not panic");
    lockscope::detector::check_now();
    let about_fixed = findings_about(&["fresh token", "fresh state"]);
    let state = fresh.state.lock().await;
    println!(
        "requests sent: {}, token expires in {} s; lockscope findings about the fresh client: {}",
        state.sent,
        state.expires_in,
        about_fixed.len()
    );
    exit(if about_fixed.is_empty() { 0 } else { 1 });
}
