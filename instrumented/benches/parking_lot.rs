//! `lockscope::parking_lot` against raw parking_lot (and std), measured in the same run.
//!
//! Issue 7's budgets: an uncontended parking_lot Mutex lock+unlock within 2.5x of raw
//! parking_lot; two nested locks with a known lock-order edge within 2.5x; two threads
//! contending on one mutex at 0.8x raw throughput or better.
//!
//! Run with `cargo bench -p lockscope --bench parking_lot`. It first prints one table from a
//! plain interleaved measurement (rounds of raw / lockscope back to back, median of the
//! rounds, so that machine noise hits both sides alike), then criterion's own report of the
//! same cases. `-- --table` prints only the table.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use criterion::Criterion;

#[path = "common/mod.rs"]
#[macro_use]
mod common;
use common::{Row, Samples, batch, table};

/// Two threads each taking the mutex `per_thread` times (a tiny critical section); total ns
/// per acquisition.
fn contended<M: Send + Sync + 'static>(m: Arc<M>, per_thread: u64, op: fn(&M)) -> f64 {
    let barrier = Arc::new(Barrier::new(3));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (m, barrier) = (m.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                for _ in 0..per_thread {
                    op(&m);
                }
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    for t in threads {
        t.join().unwrap();
    }
    start.elapsed().as_nanos() as f64 / (2 * per_thread) as f64
}

/// Each lock on its own cache lines, so that neighbours on the stack (the raw lock and
/// lockscope's, measured back to back) neither share a line nor alias differently from one
/// run to the next.
#[repr(align(128))]
struct Padded<T>(T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

fn plain_table() {
    const ROUNDS: usize = 41;
    const N: u64 = 200_000;

    let raw = Padded(parking_lot::Mutex::new(0u64));
    let std_m = Padded(std::sync::Mutex::new(0u64));
    let ours = Padded(lockscope::parking_lot::Mutex::named("bench_mutex", 0u64));
    let single = interleaved!(
        ROUNDS,
        N,
        [
            || *black_box(&raw).lock() += 1,
            || *black_box(&ours).lock() += 1,
            || *black_box(&std_m).lock().unwrap() += 1,
        ]
    );

    let (ra, rb) = (
        Padded(parking_lot::Mutex::new(0u64)),
        Padded(parking_lot::Mutex::new(0u64)),
    );
    let (oa, ob) = (
        Padded(lockscope::parking_lot::Mutex::named("bench_nested_a", 0u64)),
        Padded(lockscope::parking_lot::Mutex::named("bench_nested_b", 0u64)),
    );
    let nested = interleaved!(
        ROUNDS,
        N / 2,
        [
            || {
                let mut a = black_box(&ra).lock();
                *black_box(&rb).lock() += 1;
                *a += 1;
            },
            || {
                let mut a = black_box(&oa).lock();
                *black_box(&ob).lock() += 1;
                *a += 1;
            },
        ]
    );

    let rr = Padded(parking_lot::RwLock::new(0u64));
    let or = Padded(lockscope::parking_lot::RwLock::named("bench_rwlock", 0u64));
    let read = interleaved!(
        ROUNDS,
        N,
        [
            || {
                black_box(*black_box(&rr).read());
            },
            || {
                black_box(*black_box(&or).read());
            },
        ]
    );

    let mut pairs = vec![Vec::new(), Vec::new()];
    for _ in 0..15 {
        pairs[0].push(contended(
            Arc::new(parking_lot::Mutex::new(0u64)),
            100_000,
            |m| *m.lock() += 1,
        ));
        pairs[1].push(contended(
            Arc::new(lockscope::parking_lot::Mutex::named(
                "bench_contended",
                0u64,
            )),
            100_000,
            |m| *m.lock() += 1,
        ));
    }
    let contention = Samples(pairs);

    // Last: the runtime switch off (global), then back on.
    lockscope::detector::set_enabled(false);
    let off = interleaved!(
        ROUNDS,
        N,
        [
            || *black_box(&raw).lock() += 1,
            || *black_box(&ours).lock() += 1,
        ]
    );
    lockscope::detector::set_enabled(true);

    if !common::table_only() {
        println!(
            "\nlockscope::parking_lot vs parking_lot 0.12: medians of {ROUNDS} rounds, each case back \
         to back in every round; ratio = median of the per-round ratios.\n\
         std::sync::Mutex lock+unlock: {:.2} ns; lockscope / std = {:.2}x\n",
            single.ns(2),
            single.ratio(1, 2)
        );
    }
    let row = |case, s: &Samples, budget| Row::time(case, s.ns(0), s.ns(1), s.ratio(1, 0), budget);
    table(&[
        row(
            "parking_lot Mutex lock, uncontended, detector on",
            &single,
            2.5,
        ),
        row(
            "two nested parking_lot Mutex locks (known edge)",
            &nested,
            2.5,
        ),
        row("parking_lot RwLock read, uncontended", &read, 2.5),
        Row::throughput(
            "2 threads on one parking_lot Mutex (throughput)",
            contention.ns(0),
            contention.ns(1),
            contention.ratio(0, 1),
            0.8,
        ),
        row("parking_lot Mutex lock, lockscope off", &off, 1.1),
    ]);
}

fn criterion_report() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();

    let raw = parking_lot::Mutex::new(0u64);
    let std_m = std::sync::Mutex::new(0u64);
    let ours = lockscope::parking_lot::Mutex::named("bench_mutex", 0u64);
    let mut g = c.benchmark_group("mutex_uncontended");
    g.bench_function("parking_lot", |b| b.iter(|| *black_box(&raw).lock() += 1));
    g.bench_function("std", |b| {
        b.iter(|| *black_box(&std_m).lock().unwrap() += 1)
    });
    g.bench_function("lockscope", |b| b.iter(|| *black_box(&ours).lock() += 1));
    g.finish();

    let (ra, rb) = (parking_lot::Mutex::new(0u64), parking_lot::Mutex::new(0u64));
    let (oa, ob) = (
        lockscope::parking_lot::Mutex::named("bench_nested_a", 0u64),
        lockscope::parking_lot::Mutex::named("bench_nested_b", 0u64),
    );
    let mut g = c.benchmark_group("two_nested");
    g.bench_function("parking_lot", |b| {
        b.iter(|| {
            let _a = black_box(&ra).lock();
            *black_box(&rb).lock() += 1;
        })
    });
    g.bench_function("lockscope", |b| {
        b.iter(|| {
            let _a = black_box(&oa).lock();
            *black_box(&ob).lock() += 1;
        })
    });
    g.finish();

    let rr = parking_lot::RwLock::new(0u64);
    let or = lockscope::parking_lot::RwLock::named("bench_rwlock", 0u64);
    let mut g = c.benchmark_group("rwlock_read_uncontended");
    g.bench_function("parking_lot", |b| {
        b.iter(|| black_box(*black_box(&rr).read()))
    });
    g.bench_function("lockscope", |b| {
        b.iter(|| black_box(*black_box(&or).read()))
    });
    g.finish();

    let mut g = c.benchmark_group("two_threads_contended");
    g.bench_function("parking_lot", |b| {
        b.iter_custom(|iters| {
            let ns = contended(Arc::new(parking_lot::Mutex::new(0u64)), iters, |m| {
                *m.lock() += 1
            });
            Duration::from_nanos((ns * 2.0 * iters as f64) as u64)
        })
    });
    g.bench_function("lockscope", |b| {
        b.iter_custom(|iters| {
            let m = Arc::new(lockscope::parking_lot::Mutex::named(
                "bench_contended",
                0u64,
            ));
            let ns = contended(m, iters, |m| *m.lock() += 1);
            Duration::from_nanos((ns * 2.0 * iters as f64) as u64)
        })
    });
    g.finish();

    c.final_summary();
}

/// `-- --profile <case>`: only a loop of one case, for a profiler
/// (`valgrind --tool=callgrind <bench binary> --profile mutex`).
fn profile(case: &str) {
    const N: u64 = 1_000_000;
    let ours = lockscope::parking_lot::Mutex::named("bench_profile", 0u64);
    let other = lockscope::parking_lot::Mutex::named("bench_profile_b", 0u64);
    let raw = parking_lot::Mutex::new(0u64);
    let raw_b = parking_lot::Mutex::new(0u64);
    let ns = match case {
        "raw" => batch(N, || *black_box(&raw).lock() += 1),
        "mutex" => batch(N, || *black_box(&ours).lock() += 1),
        "off" => {
            lockscope::detector::set_enabled(false);
            batch(N, || *black_box(&ours).lock() += 1)
        }
        "raw_nested" => batch(N, || {
            let _a = black_box(&raw).lock();
            *black_box(&raw_b).lock() += 1;
        }),
        "nested" => batch(N, || {
            let _a = black_box(&ours).lock();
            *black_box(&other).lock() += 1;
        }),
        "contended" => contended(
            Arc::new(lockscope::parking_lot::Mutex::named(
                "bench_profile_c",
                0u64,
            )),
            N,
            |m| *m.lock() += 1,
        ),
        "raw_contended" => contended(Arc::new(parking_lot::Mutex::new(0u64)), N, |m| {
            *m.lock() += 1
        }),
        _ => panic!("cases: raw, mutex, off, raw_nested, nested, raw_contended, contended"),
    };
    println!("{case}: {ns:.2} ns/op over {N} iterations");
    for m in lockscope::detector::metrics().series {
        if m.lock.starts_with("bench_profile") && m.acquisitions > 0 {
            println!(
                "  {}: {} acquisitions, {} waited ({:.1}%)",
                m.lock,
                m.acquisitions,
                m.contended,
                100.0 * m.contended as f64 / m.acquisitions as f64
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--profile") {
        return profile(args.get(i + 1).map_or("mutex", String::as_str));
    }
    plain_table();
    if !common::table_only() {
        criterion_report();
    }
}
