//! The load generator: clients sending plain HTTP/1.1 requests to the bank API, and its
//! counters.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::bank::ACCOUNTS;

/// Longest a client waits for one answer before counting the request as failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause between two requests of one client.
const THINK: Duration = Duration::from_millis(10);

/// What the clients saw.
#[derive(Default, Debug)]
pub struct LoadStats {
    /// Answers with a 2xx status.
    pub ok: AtomicU64,
    /// Answers with another status (a refused transfer: 4xx).
    pub refused: AtomicU64,
    /// No answer: connection refused or reset, or no answer in time.
    pub failed: AtomicU64,
}

impl LoadStats {
    /// `(ok, refused, failed)` now.
    pub fn get(&self) -> (u64, u64, u64) {
        (
            self.ok.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }
}

/// A small xorshift generator: enough to pick accounts, and no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One request with `Connection: close`; returns the status code.
async fn request(api: SocketAddr, method: &str, path: &str) -> std::io::Result<u16> {
    let mut stream = TcpStream::connect(api).await?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {api}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    let status = answer
        .split(|b| *b == b' ')
        .nth(1)
        .and_then(|s| std::str::from_utf8(s).ok())
        .and_then(|s| s.parse().ok());
    status.ok_or_else(|| std::io::Error::other("not an HTTP answer"))
}

/// Starts `clients` clients against `api` until `stop` turns true: each asks for a balance
/// (60%) or makes a small transfer between two random accounts (40%), then pauses 10 ms.
pub fn spawn(
    api: SocketAddr,
    clients: u64,
    stop: watch::Receiver<bool>,
    stats: Arc<LoadStats>,
) -> JoinSet<()> {
    let mut set = JoinSet::new();
    for c in 0..clients {
        let (mut stop, stats) = (stop.clone(), stats.clone());
        set.spawn(async move {
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (c + 1).wrapping_mul(0x2545_F491));
            while !*stop.borrow() {
                let a = 1 + rng.below(u64::from(ACCOUNTS));
                let path = if rng.below(10) < 6 {
                    ("GET", format!("/balance/{a}"))
                } else {
                    let b = 1 + (a + rng.below(u64::from(ACCOUNTS) - 1)) % u64::from(ACCOUNTS);
                    ("POST", format!("/transfer/{a}/{b}/{}", 1 + rng.below(500)))
                };
                let answer = tokio::time::timeout(REQUEST_TIMEOUT, request(api, path.0, &path.1));
                let counter = match answer.await {
                    Ok(Ok(s)) if (200..300).contains(&s) => &stats.ok,
                    Ok(Ok(_)) => &stats.refused,
                    _ => &stats.failed,
                };
                counter.fetch_add(1, Ordering::Relaxed);
                tokio::select! {
                    _ = stop.changed() => {}
                    () = tokio::time::sleep(THINK) => {}
                }
            }
        });
    }
    set
}
