//! `/metrics` render time (collector + text encoding) with 10,000 live primitives.
//!
//! Issue 4's budget: under 100 ms. Run with `cargo bench -p lockscope-exporter --bench scrape`;
//! the first lines printed give the mean against the budget, then criterion's own report.
//!
//! The workload is the heaviest shape the label cap allows: 10,000 semaphores with distinct
//! names, so 1,000 named series plus `lock="other"` (every family, permits included), each
//! primitive with one completed hold (non-empty histograms) and every tenth with a live hold.

use std::hint::black_box;
use std::panic::Location;
use std::time::{Duration, Instant};

use criterion::Criterion;
use lockscope_detector::__private::hooks::{self, Acq, Hold, Mode};
use lockscope_detector::__private::prim::{PrimCell, PrimKind};

const PRIMITIVES: usize = 10_000;
const BUDGET: Duration = Duration::from_millis(100);

fn workload() -> (Vec<PrimCell>, Vec<(usize, Hold)>) {
    let site = Location::caller();
    let cells: Vec<PrimCell> = (0..PRIMITIVES)
        .map(|i| {
            PrimCell::new(
                Some(format!("bench/sem-{i}").into()),
                PrimKind::Semaphore,
                site,
                4,
            )
        })
        .collect();
    let mut live = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        let prim = cell.get();
        let hold = hooks::acquired::<hooks::Threads>(prim, Acq::new(site, 1, Mode::Permits));
        hooks::released(prim, hold);
        if i % 10 == 0 {
            live.push((
                i,
                hooks::acquired::<hooks::Threads>(prim, Acq::new(site, 2, Mode::Permits)),
            ));
        }
    }
    (cells, live)
}

#[path = "../../instrumented/benches/common/mod.rs"]
#[macro_use]
mod common;

fn main() {
    let (cells, live) = workload();

    // A plain measurement first, so that the number against the budget is printed clearly.
    let warm = lockscope_exporter::render();
    let runs = 20;
    let start = Instant::now();
    for _ in 0..runs {
        black_box(lockscope_exporter::render());
    }
    let mean = start.elapsed() / runs;
    if common::table_only() {
        common::table(&[common::Row::below(
            "/metrics render, 10,000 live primitives",
            mean.as_secs_f64() * 1e3,
            BUDGET.as_secs_f64() * 1e3,
            "ms",
        )]);
        for (i, hold) in live {
            hooks::released(cells[i].get(), hold);
        }
        return;
    }
    println!(
        "lockscope /metrics render, {PRIMITIVES} live primitives, {} lines, {} KiB: mean {:.2} ms \
         over {runs} runs; budget {} ms; {:.1}% of budget",
        warm.lines().count(),
        warm.len() / 1024,
        mean.as_secs_f64() * 1e3,
        BUDGET.as_millis(),
        100.0 * mean.as_secs_f64() / BUDGET.as_secs_f64(),
    );

    let mut c = Criterion::default().configure_from_args();
    c.bench_function("render_10k_primitives", |b| {
        b.iter(|| black_box(lockscope_exporter::render()))
    });
    // The detector's share of it: the walk over primitives and holds, without the families
    // and the text.
    c.bench_function("detector_metrics_10k_primitives", |b| {
        b.iter(|| black_box(lockscope_detector::metrics()))
    });
    c.final_summary();

    for (i, hold) in live {
        hooks::released(cells[i].get(), hold);
    }
}
