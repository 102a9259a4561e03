//! The backpressure workload users put semaphores in (issue 16): `N` tasks spawned at once on a
//! 2-worker runtime, each taking an owned permit of a `Semaphore(20)`, yielding once and
//! releasing (a pool limit in front of a database, fire-and-forget writes). Raw tokio and
//! lockscope, each in its own process, so that each peak RSS is its own: this bench runs
//! itself again as a child (`--child raw|lockscope N`) and reads the child's report.
//!
//! Budget per size: time at most 1.2x raw, peak RSS at most 1.1x raw. The variants take turns,
//! each cell is the median of its runs and each ratio the median of the per-run ratios. Each
//! variant runs `LOCKSCOPE_BACKPRESSURE_RUNS` times if set; by default, at least 3 times and
//! enough times for ten million tasks in all (100 runs at 100k, 10 at 1M, 4 at 3M): a run of
//! 100k tasks is short, and three of those are too few samples of a time that moves
//! widely from one run to the next on a 2-core machine (docs/performance.md).
//!
//! ```text
//! cargo bench -p lockscope --bench backpressure
//! LOCKSCOPE_BACKPRESSURE_SIZES=100000,1000000 cargo bench -p lockscope --bench backpressure
//! ```

use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

#[path = "common/mod.rs"]
#[macro_use]
mod common;
use common::{Row, median, table};

const PERMITS: usize = 20;
const WORKERS: usize = 2;
const TIME_BUDGET: f64 = 1.2;
const RSS_BUDGET: f64 = 1.1;
/// Tasks each variant runs per size by default, over as many runs as it takes (at least 3).
const TASKS_PER_SIZE: usize = 10_000_000;

/// One row per size: what, its unit, its budget, and which half of a run's `(ms, MB)` it reads.
type RowSpec = (&'static str, &'static str, f64, fn(&(f64, f64)) -> f64);

/// The workload, written once for both semaphores.
macro_rules! workload {
    ($sem:ty, $n:expr) => {{
        let n: usize = $n;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .build()
            .expect("a 2-worker runtime");
        rt.block_on(async move {
            let sem = Arc::new(<$sem>::new(PERMITS));
            let start = Instant::now();
            let mut tasks = Vec::with_capacity(n);
            for _ in 0..n {
                let sem = sem.clone();
                tasks.push(tokio::spawn(async move {
                    let permit = sem.acquire_owned().await.expect("never closed");
                    tokio::task::yield_now().await;
                    drop(permit);
                }));
            }
            for t in tasks {
                t.await.expect("no task panics");
            }
            start.elapsed()
        })
    }};
}

/// Peak resident set of this process, in MB (`VmHWM`).
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn child(variant: &str, n: usize) {
    let took = match variant {
        "raw" => workload!(tokio::sync::Semaphore, n),
        "lockscope" => workload!(lockscope::tokio::Semaphore, n),
        other => panic!("unknown variant {other:?}: raw or lockscope"),
    };
    println!("{} {}", took.as_secs_f64() * 1e3, peak_rss_mb());
}

/// One child run: (ms, peak RSS MB).
fn run(variant: &str, n: usize) -> (f64, f64) {
    let exe = std::env::current_exe().expect("the bench's own path");
    let out = Command::new(exe)
        .args(["--child", variant, &n.to_string()])
        .output()
        .expect("the bench runs itself");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child {variant} {n} failed: {}{}",
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut it = text
        .split_whitespace()
        .map(|v| v.parse::<f64>().unwrap_or(f64::NAN));
    (it.next().unwrap_or(f64::NAN), it.next().unwrap_or(f64::NAN))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let n = args[i + 2].parse().expect("a task count");
        return child(&args[i + 1], n);
    }
    let sizes: Vec<usize> = std::env::var("LOCKSCOPE_BACKPRESSURE_SIZES")
        .unwrap_or_else(|_| "100000,1000000,3000000".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("LOCKSCOPE_BACKPRESSURE_SIZES: task counts, comma-separated")
        })
        .collect();
    let runs_set: Option<usize> = std::env::var("LOCKSCOPE_BACKPRESSURE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&r| r > 0);
    let mut rows = Vec::new();
    for n in sizes {
        let runs = runs_set.unwrap_or_else(|| TASKS_PER_SIZE.div_ceil(n.max(1)).max(3));
        let (mut raw, mut ours) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            raw.push(run("raw", n));
            ours.push(run("lockscope", n));
        }
        let ratio = |f: fn(&(f64, f64)) -> f64| {
            median(raw.iter().zip(&ours).map(|(r, o)| f(o) / f(r)).collect())
        };
        let med = |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| median(v.iter().map(f).collect());
        let cells: [RowSpec; 2] = [
            ("time", "ms", TIME_BUDGET, |r| r.0),
            ("peak RSS", "MB", RSS_BUDGET, |r| r.1),
        ];
        for (what, unit, budget, f) in cells {
            let case = String::leak(format!("backpressure {n} tasks: {what}"));
            rows.push(Row::time(case, med(&raw, f), med(&ours, f), ratio(f), budget).in_unit(unit));
        }
    }
    table(&rows);
}
