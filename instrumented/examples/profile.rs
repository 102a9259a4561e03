//! One case in a loop, for a profiler: the harness behind the numbers in issue 7's notes.
//!
//! ```sh
//! cargo build --release --example profile -p lockscope
//! # instructions per acquire+release (stable on a noisy machine): the difference of two runs
//! valgrind --tool=callgrind target/release/examples/profile mutex 200000
//! valgrind --tool=callgrind target/release/examples/profile mutex 0
//! # where the time goes
//! perf record -e cpu-clock target/release/examples/profile sem 20000000
//! ```
//!
//! Cases (`raw_` for raw tokio, `_off` for lockscope switched off, `_traced` with a tracing
//! registry that records lockscope's spans at TRACE): `mutex`, `sem`, `rw` (uncontended, one
//! task on a current-thread runtime) and `contended` (64 tasks on two workers taking one mutex
//! with a yield inside, as the bench does), `pl` and `pl_nested` (one parking_lot Mutex, two
//! nested ones, on the main thread). It prints ns per iteration.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use tracing_subscriber::layer::SubscriberExt;

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args.next().unwrap_or_else(|| "mutex".into());
    let iterations: u64 = args
        .next()
        .map(|s| s.parse().expect("iterations: a number"))
        .unwrap_or(1_000_000);
    if case.ends_with("_off") {
        lockscope::detector::set_enabled(false);
    }
    if case.ends_with("_traced") {
        let registry = tracing_subscriber::registry()
            .with(tracing_subscriber::EnvFilter::new("lockscope=trace"));
        tracing::subscriber::set_global_default(registry).expect("first subscriber");
    }
    let base = case
        .trim_start_matches("raw_")
        .trim_end_matches("_off")
        .trim_end_matches("_traced");
    let raw = case.starts_with("raw_");
    let start = Instant::now();
    if base == "contended" {
        contended(raw, iterations);
    } else if base.starts_with("pl") {
        parking_lot(base, raw, iterations);
    } else {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            tokio::spawn(uncontended(base.to_string(), raw, iterations))
                .await
                .expect("the loop");
        });
    }
    let ns = start.elapsed().as_nanos() as f64 / iterations.max(1) as f64;
    println!("{case}: {ns:.1} ns per iteration");
}

async fn uncontended(case: String, raw: bool, iterations: u64) {
    let (rm, lm) = (
        tokio::sync::Mutex::new(0u64),
        lockscope::tokio::Mutex::new(0u64),
    );
    let (rs, ls) = (
        tokio::sync::Semaphore::new(4),
        lockscope::tokio::Semaphore::new(4),
    );
    let (rr, lr) = (
        tokio::sync::RwLock::new(0u64),
        lockscope::tokio::RwLock::new(0u64),
    );
    for _ in 0..iterations {
        match (case.as_str(), raw) {
            ("mutex", true) => *rm.lock().await += 1,
            ("mutex", false) => *lm.lock().await += 1,
            ("sem", true) => drop(black_box(rs.acquire().await.expect("open"))),
            ("sem", false) => drop(black_box(ls.acquire().await.expect("open"))),
            ("rw", true) => drop(black_box(*rr.read().await)),
            ("rw", false) => drop(black_box(*lr.read().await)),
            (other, _) => panic!("unknown case {other}: mutex, sem, rw, contended"),
        }
    }
}

fn parking_lot(case: &str, raw: bool, iterations: u64) {
    let (ra, rb) = (parking_lot::Mutex::new(0u64), parking_lot::Mutex::new(0u64));
    let (la, lb) = (
        lockscope::parking_lot::Mutex::new(0u64),
        lockscope::parking_lot::Mutex::new(0u64),
    );
    for _ in 0..iterations {
        match (case, raw) {
            ("pl", true) => *black_box(&ra).lock() += 1,
            ("pl", false) => *black_box(&la).lock() += 1,
            ("pl_nested", true) => {
                let mut a = black_box(&ra).lock();
                *black_box(&rb).lock() += 1;
                *a += 1;
            }
            ("pl_nested", false) => {
                let mut a = black_box(&la).lock();
                *black_box(&lb).lock() += 1;
                *a += 1;
            }
            (other, _) => panic!("unknown case {other}: pl, pl_nested"),
        }
    }
}

fn contended(raw: bool, iterations: u64) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime");
    let per_task = iterations / 64;
    rt.block_on(async move {
        let rm = Arc::new(tokio::sync::Mutex::new(0u64));
        let lm = Arc::new(lockscope::tokio::Mutex::new(0u64));
        let tasks: Vec<_> = (0..64)
            .map(|_| {
                let (rm, lm) = (rm.clone(), lm.clone());
                tokio::spawn(async move {
                    for _ in 0..per_task {
                        if raw {
                            let mut g = rm.lock().await;
                            *g += 1;
                            tokio::task::yield_now().await;
                        } else {
                            let mut g = lm.lock().await;
                            *g += 1;
                            tokio::task::yield_now().await;
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("task");
        }
    });
}
