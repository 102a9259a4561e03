//! What the waits beyond locks cost (issue 28, deliverable 6): an uncontended bounded
//! `send` + `recv` pair, a oneshot round trip, and `spawn` + join, each written once and run
//! against raw tokio and lockscope in the same process, taking turns (raw and lockscope back
//! to back in every round, median of the per-round ratios).
//!
//! Budgets: within 1.3x of raw tokio with the detector on; within 1.05x with lockscope
//! switched off (`lockscope::detector::set_enabled(false)`).
//!
//! ```text
//! cargo bench -p lockscope --bench channels
//! ```

use std::hint::black_box;
use std::time::Instant;

#[path = "common/mod.rs"]
#[macro_use]
mod common;
use common::{Row, rounds, table};

const ROUNDS: usize = 31;
const OPS: u64 = 20_000;
const ON_BUDGET: f64 = 1.3;
const OFF_BUDGET: f64 = 1.05;

/// Times `OPS` runs of `$op` in one task of a current-thread runtime, with `$setup`'s bindings
/// made once before the loop; ns per operation.
macro_rules! timed {
    ($rt:expr, { $($setup:tt)* }, $op:expr) => {{
        $rt.block_on(async {
            $($setup)*
            let start = Instant::now();
            for i in 0..OPS {
                black_box(i);
                $op;
            }
            start.elapsed().as_nanos() as f64 / OPS as f64
        })
    }};
}

/// One case, raw (`$raw` module path) against lockscope's (`$ours`), detector on and off.
macro_rules! case {
    ($rows:expr, $what:expr, $raw:path, $ours:path, |$m:ident| { $($setup:tt)* } $op:expr) => {{
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let s = rounds(
            ROUNDS,
            &mut [
                &mut || {
                    use $raw as $m;
                    timed!(rt, { $($setup)* }, $op)
                },
                &mut || {
                    use $ours as $m;
                    timed!(rt, { $($setup)* }, $op)
                },
                &mut || {
                    use $ours as $m;
                    lockscope::detector::set_enabled(false);
                    let ns = timed!(rt, { $($setup)* }, $op);
                    lockscope::detector::set_enabled(true);
                    ns
                },
            ],
        );
        $rows.push(Row::time(
            concat!($what, ", detector on"),
            s.ns(0),
            s.ns(1),
            s.ratio(1, 0),
            ON_BUDGET,
        ));
        $rows.push(Row::time(
            concat!($what, ", lockscope off"),
            s.ns(0),
            s.ns(2),
            s.ratio(2, 0),
            OFF_BUDGET,
        ));
    }};
}

fn main() {
    let mut rows = Vec::new();
    case!(
        rows,
        "mpsc bounded(16) send + recv, one task",
        tokio::sync::mpsc,
        lockscope::tokio::mpsc,
        |mpsc| {
            let (tx, mut rx) = mpsc::channel::<u64>(16);
        } {
            tx.send(1).await.expect("open");
            black_box(rx.recv().await.expect("a message"));
        }
    );
    case!(
        rows,
        "oneshot channel + send + await",
        tokio::sync::oneshot,
        lockscope::tokio::oneshot,
        |oneshot| {} {
            let (tx, rx) = oneshot::channel::<u64>();
            tx.send(1).expect("open");
            black_box(rx.await.expect("a reply"));
        }
    );
    case!(
        rows,
        "spawn + await the JoinHandle",
        tokio::task,
        lockscope::tokio::task,
        |task| {} {
            black_box(task::spawn(async { 1u64 }).await.expect("no panic"));
        }
    );
    table(&rows);
}
