//! Uncontended acquire+release and contended throughput: raw tokio vs lockscope, measured in
//! the same run (issue 7's budgets). Every case runs inside a spawned task, as real code does.
//!
//! Groups (`raw` is the baseline of each): `tokio_mutex`, `tokio_semaphore`, `tokio_rwlock_read`
//! with `raw`, `lockscope`, `lockscope_filtered` (a subscriber that filters `lockscope` out)
//! and `lockscope_off` (the runtime switch); `contended_mutex_64_tasks` and
//! `contended_semaphore4_64_tasks` with `raw` and `lockscope` (2 worker threads).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tracing_subscriber::layer::SubscriberExt;

fn current() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
}

/// Times `iters` runs of `$op` inside one spawned task on `$rt`.
macro_rules! in_task {
    ($rt:expr, $iters:expr, $setup:expr, |$p:ident| $op:expr) => {{
        let iters = $iters;
        $rt.block_on(async move {
            tokio::spawn(async move {
                let $p = $setup;
                let start = Instant::now();
                for _ in 0..iters {
                    $op;
                }
                start.elapsed()
            })
            .await
            .expect("bench task")
        })
    }};
}

macro_rules! uncontended {
    ($c:expr, $group:expr, $raw_setup:expr, $ls_setup:expr, |$p:ident| $op:expr) => {{
        let rt = current();
        let mut g = $c.benchmark_group($group);
        g.bench_function("raw", |b| {
            b.iter_custom(|n| in_task!(rt, n, $raw_setup, |$p| $op))
        });
        g.bench_function("lockscope", |b| {
            b.iter_custom(|n| in_task!(rt, n, $ls_setup, |$p| $op))
        });
        {
            let filtered = tracing_subscriber::registry()
                .with(tracing_subscriber::EnvFilter::new("info,lockscope=off"));
            let _guard = tracing::subscriber::set_default(filtered);
            g.bench_function("lockscope_filtered", |b| {
                b.iter_custom(|n| in_task!(rt, n, $ls_setup, |$p| $op))
            });
        }
        lockscope::detector::set_enabled(false);
        g.bench_function("lockscope_off", |b| {
            b.iter_custom(|n| in_task!(rt, n, $ls_setup, |$p| $op))
        });
        lockscope::detector::set_enabled(true);
        g.finish();
    }};
}

fn uncontended_benches(c: &mut Criterion) {
    uncontended!(
        c,
        "tokio_mutex",
        tokio::sync::Mutex::new(0u64),
        lockscope::tokio::Mutex::named("bench_mutex", 0u64),
        |m| {
            let mut g = m.lock().await;
            *g += 1;
        }
    );
    uncontended!(
        c,
        "tokio_semaphore",
        tokio::sync::Semaphore::new(4),
        lockscope::tokio::Semaphore::named("bench_semaphore", 4),
        |s| {
            let p = s.acquire().await.expect("open");
            black_box(&p);
        }
    );
    uncontended!(
        c,
        "tokio_rwlock_read",
        tokio::sync::RwLock::new(0u64),
        lockscope::tokio::RwLock::named("bench_rwlock", 0u64),
        |l| {
            let g = l.read().await;
            black_box(*g);
        }
    );
}

const TASKS: usize = 64;
const OPS_PER_TASK: u64 = 200;

/// `TASKS` tasks on 2 workers, each doing `OPS_PER_TASK` acquisitions of one shared primitive
/// with a yield inside the critical section (so that tasks really queue).
macro_rules! contended {
    ($rt:expr, $iters:expr, $make:expr, |$p:ident| $op:expr) => {{
        let mut total = Duration::ZERO;
        for _ in 0..$iters {
            let shared = Arc::new($make);
            total += $rt.block_on(async move {
                let start = Instant::now();
                let mut tasks = Vec::with_capacity(TASKS);
                for _ in 0..TASKS {
                    let $p = shared.clone();
                    tasks.push(tokio::spawn(async move {
                        for _ in 0..OPS_PER_TASK {
                            $op;
                        }
                    }));
                }
                for t in tasks {
                    t.await.expect("task");
                }
                start.elapsed()
            });
        }
        total
    }};
}

fn contended_benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime");
    let mut g = c.benchmark_group("contended_mutex_64_tasks");
    g.sample_size(20);
    g.bench_function("raw", |b| {
        b.iter_custom(|n| {
            contended!(rt, n, tokio::sync::Mutex::new(0u64), |m| {
                let mut g = m.lock().await;
                *g += 1;
                tokio::task::yield_now().await;
            })
        })
    });
    g.bench_function("lockscope", |b| {
        b.iter_custom(|n| {
            contended!(
                rt,
                n,
                lockscope::tokio::Mutex::named("bench_contended", 0u64),
                |m| {
                    let mut g = m.lock().await;
                    *g += 1;
                    tokio::task::yield_now().await;
                }
            )
        })
    });
    g.finish();
    let mut g = c.benchmark_group("contended_semaphore4_64_tasks");
    g.sample_size(20);
    g.bench_function("raw", |b| {
        b.iter_custom(|n| {
            contended!(rt, n, tokio::sync::Semaphore::new(4), |s| {
                let p = s.acquire().await.expect("open");
                tokio::task::yield_now().await;
                drop(p);
            })
        })
    });
    g.bench_function("lockscope", |b| {
        b.iter_custom(|n| {
            contended!(
                rt,
                n,
                lockscope::tokio::Semaphore::named("bench_contended_sem", 4),
                |s| {
                    let p = s.acquire().await.expect("open");
                    tokio::task::yield_now().await;
                    drop(p);
                }
            )
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = uncontended_benches, contended_benches
}
criterion_main!(benches);
