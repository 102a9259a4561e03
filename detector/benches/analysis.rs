//! Deadlock analysis of a live state with 10,000 tasks and 1,000 primitives.
//!
//! Issue 7's budget: under 50 ms. Run with `cargo bench -p lockscope-detector --bench analysis`;
//! the first lines printed give the means against the budget, then criterion's own report.
//!
//! The state is `tests/scale.rs`'s (shared with the test that checks the analysis finds
//! exactly the deadlocks hidden in it): every task holds one or two primitives of five kinds,
//! some 300 wait in queues and chains, four deadlocks and a decoy are hidden among them. What
//! is timed is what the watchdog does on every tick after capturing the state: build the
//! wait-for model (`rules::deadlock::model`), reduce it (`graph::waitfor::reduce`) and split
//! what stays blocked into groups (`rules::deadlock::blocked_groups`, which does all three).

use std::collections::BTreeSet;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use lockscope_detector::__private::graph::waitfor::reduce;
use lockscope_detector::__private::rules::deadlock::{blocked_groups, model};

#[path = "../tests/scale.rs"]
mod scale;

#[path = "../../instrumented/benches/common/mod.rs"]
#[macro_use]
mod common;

const BUDGET: Duration = Duration::from_millis(50);

/// Mean and best of `runs` calls of `f`, after one warm-up call.
fn measure<R>(runs: u32, mut f: impl FnMut() -> R) -> (Duration, Duration) {
    black_box(f());
    let mut best = Duration::MAX;
    let mut total = Duration::ZERO;
    for _ in 0..runs {
        let start = Instant::now();
        black_box(f());
        let d = start.elapsed();
        best = best.min(d);
        total += d;
    }
    (total / runs, best)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let s = scale::scale_state();
    let state = &s.state;

    // The analysis must be right before its time means anything.
    let found: BTreeSet<BTreeSet<u64>> = blocked_groups(state)
        .into_iter()
        .map(|g| g.actors)
        .collect();
    assert_eq!(
        found, s.deadlocks,
        "the analysis missed or invented a deadlock"
    );

    // A plain measurement first, so that the numbers against the budget are printed clearly.
    let runs = 50;
    let (analysis, analysis_best) = measure(runs, || blocked_groups(state));
    let (build, _) = measure(runs, || model(state));
    let m = model(state);
    let (reduction, _) = measure(runs, || reduce(&m));
    if common::table_only() {
        return common::table(&[common::Row::below(
            "deadlock analysis, 10,000 tasks x 1,000 primitives",
            ms(analysis),
            ms(BUDGET),
            "ms",
        )]);
    }
    println!(
        "lockscope deadlock analysis, {} tasks x {} primitives ({} holds, {} waits, {} hidden \
         deadlocks): mean {:.2} ms (best {:.2} ms) over {runs} runs; budget {} ms; {:.1}% of \
         budget",
        scale::TASKS,
        scale::PRIMS,
        s.holds,
        s.waits,
        s.deadlocks.len(),
        ms(analysis),
        ms(analysis_best),
        BUDGET.as_millis(),
        100.0 * analysis.as_secs_f64() / BUDGET.as_secs_f64(),
    );
    println!(
        "  of which: model construction mean {:.2} ms, reduction mean {:.2} ms",
        ms(build),
        ms(reduction),
    );

    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("deadlock_analysis_10k_tasks_1k_prims");
    g.bench_function("blocked_groups", |b| {
        b.iter(|| black_box(blocked_groups(state)))
    });
    g.bench_function("model", |b| b.iter(|| black_box(model(state))));
    g.bench_function("reduce", |b| b.iter(|| black_box(reduce(&m))));
    g.finish();
    c.final_summary();
}
