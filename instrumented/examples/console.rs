//! lockscope's locks in tokio-console: a few named locks under steady load, with
//! console-subscriber's server on 127.0.0.1:6669. See `docs/tokio-console.md`.
//!
//! ```sh
//! cargo run -p lockscope --example console --features console   # then, elsewhere: tokio-console
//! ```
//!
//! `--seconds N` ends it after N seconds (default: run until Ctrl-C).

use std::sync::Arc;
use std::time::Duration;

use lockscope::tokio::{Mutex, RwLock, Semaphore};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The fmt layer (RUST_LOG) plus, with the `console` feature, console-subscriber's layer.
    lockscope::exporter::init_tracing()?;
    let seconds: Option<u64> = match std::env::args().skip(1).collect::<Vec<_>>().as_slice() {
        [] => None,
        [flag, n] if flag == "--seconds" => Some(n.parse()?),
        _ => return Err("usage: console [--seconds N]".into()),
    };

    let accounts = Arc::new(Mutex::named("accounts", 0u64));
    let rates = Arc::new(RwLock::named("rates", 1.0f64));
    let pool = Arc::new(Semaphore::named("db_pool", 2));
    for worker in 0..4u64 {
        let (accounts, rates, pool) = (accounts.clone(), rates.clone(), pool.clone());
        tokio::spawn(async move {
            loop {
                // Four workers, two connections: two of them queue on `db_pool` at any time.
                let _conn = pool.acquire().await.expect("the pool is never closed");
                let rate = *rates.read().await;
                *accounts.lock().await += (rate * worker as f64) as u64;
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        });
    }
    println!("lockscope console example: run `tokio-console` (it connects to 127.0.0.1:6669)");
    match seconds {
        Some(s) => tokio::time::sleep(Duration::from_secs(s)).await,
        None => tokio::signal::ctrl_c().await?,
    }
    Ok(())
}
