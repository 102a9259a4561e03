//! lockscope's tokio wrappers against raw tokio, measured in the same run (issue 7).
//!
//! Budgets: uncontended Mutex lock, Semaphore acquire and RwLock read with their release
//! within 1.5x of raw tokio (detector on, no subscriber), 1.6x with a subscriber that filters
//! `lockscope` out, 1.1x with lockscope switched off; 64 tasks on 2 workers contending for one
//! Mutex, and for a Semaphore(4), at 0.9x raw throughput or better.
//!
//! Run with `cargo bench -p lockscope --bench tokio`. It prints one table from interleaved
//! rounds (raw and lockscope back to back in every round, median of the per-round ratios, so
//! that machine noise hits both sides alike); `-- --criterion` adds criterion's report of the
//! uncontended cases.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use tracing_subscriber::layer::SubscriberExt;

#[path = "common/mod.rs"]
#[macro_use]
mod common;
use common::{Row, rounds, table};

const ROUNDS: usize = 31;
const OPS: u64 = 20_000;

/// Times `$ops` runs of `$op` in one task spawned on `$rt`; ns per operation.
macro_rules! in_task {
    ($rt:expr, $ops:expr, $prim:expr, |$p:ident| $op:expr) => {{
        let $p = $prim.clone();
        let ops = $ops;
        $rt.block_on(async move {
            tokio::spawn(async move {
                let start = Instant::now();
                for _ in 0..ops {
                    $op;
                }
                start.elapsed().as_nanos() as f64 / ops as f64
            })
            .await
            .expect("bench task")
        })
    }};
}

/// One uncontended case: raw, lockscope, lockscope under a filtering subscriber, lockscope off.
macro_rules! uncontended {
    ($rows:expr, $what:expr, $raw:expr, $ours:expr, |$p:ident| $op:expr) => {{
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let raw = Arc::new($raw);
        let ours = Arc::new($ours);
        let filtered = tracing_subscriber::registry()
            .with(tracing_subscriber::EnvFilter::new("info,lockscope=off"));
        let filtered = tracing::Dispatch::new(filtered);
        let s = rounds(
            ROUNDS,
            &mut [
                &mut || in_task!(rt, OPS, raw, |$p| $op),
                &mut || in_task!(rt, OPS, ours, |$p| $op),
                &mut || {
                    tracing::dispatcher::with_default(&filtered, || {
                        in_task!(rt, OPS, ours, |$p| $op)
                    })
                },
                &mut || {
                    lockscope::detector::set_enabled(false);
                    let ns = in_task!(rt, OPS, ours, |$p| $op);
                    lockscope::detector::set_enabled(true);
                    ns
                },
            ],
        );
        for (i, case, budget) in [
            (1, concat!($what, ", uncontended, detector on"), 1.5),
            (
                2,
                concat!($what, ", subscriber filtering lockscope out"),
                1.6,
            ),
            (3, concat!($what, ", lockscope off"), 1.1),
        ] {
            $rows.push(Row::time(case, s.ns(0), s.ns(i), s.ratio(i, 0), budget));
        }
    }};
}

const TASKS: usize = 64;
const PER_TASK: u64 = 200;

/// 64 tasks on 2 workers, each taking the primitive `PER_TASK` times with a yield inside the
/// critical section (so that they really queue); ns per acquisition.
macro_rules! contended {
    ($rt:expr, $make:expr, |$p:ident| $op:expr) => {{
        let shared = Arc::new($make);
        $rt.block_on(async move {
            let start = Instant::now();
            let tasks: Vec<_> = (0..TASKS)
                .map(|_| {
                    let $p = shared.clone();
                    tokio::spawn(async move {
                        for _ in 0..PER_TASK {
                            $op;
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.expect("task");
            }
            start.elapsed().as_nanos() as f64 / (TASKS as u64 * PER_TASK) as f64
        })
    }};
}

fn table_rows() -> Vec<Row> {
    let mut rows = Vec::new();
    uncontended!(
        rows,
        "tokio Mutex lock",
        tokio::sync::Mutex::new(0u64),
        lockscope::tokio::Mutex::named("bench_mutex", 0u64),
        |m| *m.lock().await += 1
    );
    uncontended!(
        rows,
        "tokio Semaphore acquire",
        tokio::sync::Semaphore::new(4),
        lockscope::tokio::Semaphore::named("bench_semaphore", 4),
        |s| drop(black_box(s.acquire().await.expect("open")))
    );
    uncontended!(
        rows,
        "tokio RwLock read",
        tokio::sync::RwLock::new(0u64),
        lockscope::tokio::RwLock::named("bench_rwlock", 0u64),
        |l| black_box(*l.read().await)
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime");
    let s = rounds(
        9,
        &mut [
            &mut || {
                contended!(rt, tokio::sync::Mutex::new(0u64), |m| {
                    let mut g = m.lock().await;
                    *g += 1;
                    tokio::task::yield_now().await;
                })
            },
            &mut || {
                contended!(
                    rt,
                    lockscope::tokio::Mutex::named("bench_contended", 0u64),
                    |m| {
                        let mut g = m.lock().await;
                        *g += 1;
                        tokio::task::yield_now().await;
                    }
                )
            },
            &mut || {
                contended!(rt, tokio::sync::Semaphore::new(4), |s| {
                    let p = s.acquire().await.expect("open");
                    tokio::task::yield_now().await;
                    drop(p);
                })
            },
            &mut || {
                contended!(
                    rt,
                    lockscope::tokio::Semaphore::named("bench_contended_sem", 4),
                    |s| {
                        let p = s.acquire().await.expect("open");
                        tokio::task::yield_now().await;
                        drop(p);
                    }
                )
            },
        ],
    );
    for (case, raw, ours) in [
        ("64 tasks on 2 workers, one tokio Mutex (throughput)", 0, 1),
        (
            "64 tasks on 2 workers, tokio Semaphore(4) (throughput)",
            2,
            3,
        ),
    ] {
        rows.push(Row::throughput(
            case,
            s.ns(raw),
            s.ns(ours),
            s.ratio(raw, ours),
            0.9,
        ));
    }
    rows
}

/// criterion's report of the uncontended mutex (`-- --criterion`; criterion's own flags are
/// not parsed, as it would refuse `--criterion`).
fn criterion_report() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let raw = Arc::new(tokio::sync::Mutex::new(0u64));
    let ours = Arc::new(lockscope::tokio::Mutex::named("bench_criterion", 0u64));
    let mut g = c.benchmark_group("tokio_mutex_uncontended");
    g.bench_function("raw", |b| {
        b.iter_custom(|n| {
            Duration::from_nanos((in_task!(rt, n, raw, |m| *m.lock().await += 1) * n as f64) as u64)
        })
    });
    g.bench_function("lockscope", |b| {
        b.iter_custom(|n| {
            Duration::from_nanos(
                (in_task!(rt, n, ours, |m| *m.lock().await += 1) * n as f64) as u64,
            )
        })
    });
    g.finish();
    c.final_summary();
}

fn main() {
    table(&table_rows());
    if !common::table_only() && std::env::args().any(|a| a == "--criterion") {
        criterion_report();
    }
}
