//! What the benches share: interleaved rounds (raw and lockscope back to back in every round,
//! so that machine noise hits both alike), medians, and the budget table every bench prints.
#![allow(dead_code, unused_macros)]

use std::time::Instant;

/// One timed batch: `n` iterations of `f`, ns per iteration.
pub fn batch(n: u64, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Per-round samples of several cases (ns per iteration), measured back to back in every
/// round so that drift and noise hit all of them alike.
pub struct Samples(pub Vec<Vec<f64>>);

impl Samples {
    /// Median ns of case `i`.
    pub fn ns(&self, i: usize) -> f64 {
        median(self.0[i].clone())
    }

    /// Median over the rounds of `case i / case j`, each ratio within one round.
    pub fn ratio(&self, i: usize, j: usize) -> f64 {
        median(
            self.0[i]
                .iter()
                .zip(&self.0[j])
                .map(|(a, b)| a / b)
                .collect(),
        )
    }
}

/// `rounds` rounds of `n` iterations of each closure (monomorphized: no indirect call inside
/// the timed loop).
macro_rules! interleaved {
    ($rounds:expr, $n:expr, [$($f:expr),+ $(,)?]) => {{
        let mut fs = ($($f,)+);
        let mut samples: Vec<Vec<f64>> = Vec::new();
        for _ in 0..$rounds {
            let mut i = 0;
            interleaved!(@each fs, samples, i, $n, [$($f),+]);
            let _ = i;
        }
        Samples(samples)
    }};
    (@each $fs:ident, $samples:ident, $i:ident, $n:expr, [$f0:expr, $f1:expr]) => {
        interleaved!(@one $fs.0, $samples, $i, $n);
        interleaved!(@one $fs.1, $samples, $i, $n);
    };
    (@each $fs:ident, $samples:ident, $i:ident, $n:expr, [$f0:expr, $f1:expr, $f2:expr]) => {
        interleaved!(@one $fs.0, $samples, $i, $n);
        interleaved!(@one $fs.1, $samples, $i, $n);
        interleaved!(@one $fs.2, $samples, $i, $n);
    };
    (@one $f:expr, $samples:ident, $i:ident, $n:expr) => {
        let t = batch($n, &mut $f);
        if $samples.len() <= $i {
            $samples.push(Vec::new());
        }
        $samples[$i].push(t);
        $i += 1;
    };
}

/// One line of the budget table.
pub struct Row {
    pub case: &'static str,
    /// The raw primitive (ns per operation); NaN for an absolute budget.
    pub raw: f64,
    /// lockscope (ns per operation), or the measured value of an absolute budget.
    pub ours: f64,
    /// Median per-round `ours / raw` (time); for throughput rows, `raw / ours`.
    pub ratio: f64,
    pub budget: Budget,
    /// The unit of `raw` and `ours` for ratio rows (`ns` unless [`Row::in_unit`] says).
    pub unit: &'static str,
}

/// What a row must stay within.
#[derive(Clone, Copy)]
pub enum Budget {
    /// Time ratio to raw, at most.
    AtMost(f64),
    /// Throughput ratio to raw, at least.
    AtLeast(f64),
    /// The value itself, at most this, in this unit (`ms`, `B`).
    Below(f64, &'static str),
}

impl Row {
    /// A time ratio row (lockscope ns / raw ns, at most `budget`).
    pub fn time(case: &'static str, raw: f64, ours: f64, ratio: f64, budget: f64) -> Row {
        Row {
            case,
            raw,
            ours,
            ratio,
            budget: Budget::AtMost(budget),
            unit: "ns",
        }
    }

    /// The same row with `raw` and `ours` in `unit` (`ms`, `MB`) rather than ns.
    pub fn in_unit(self, unit: &'static str) -> Row {
        Row { unit, ..self }
    }

    /// A throughput row (`ratio` = raw ns / lockscope ns, at least `budget`).
    pub fn throughput(case: &'static str, raw: f64, ours: f64, ratio: f64, budget: f64) -> Row {
        Row {
            case,
            raw,
            ours,
            ratio,
            budget: Budget::AtLeast(budget),
            unit: "ns",
        }
    }

    /// An absolute row: `value` (in `unit`) at most `budget`.
    pub fn below(case: &'static str, value: f64, budget: f64, unit: &'static str) -> Row {
        Row {
            case,
            raw: f64::NAN,
            ours: value,
            ratio: f64::NAN,
            budget: Budget::Below(budget, unit),
            unit,
        }
    }

    fn within(&self) -> bool {
        match self.budget {
            Budget::AtMost(b) => self.ratio <= b,
            Budget::AtLeast(b) => self.ratio >= b,
            Budget::Below(b, _) => self.ours <= b,
        }
    }

    fn cells(&self) -> [String; 5] {
        let num = |v: f64, unit: &str| {
            if v.is_nan() {
                "-".to_string()
            } else {
                format!("{v:.2} {unit}")
            }
        };
        let unit = self.unit;
        let (ratio, budget) = match self.budget {
            Budget::AtMost(b) => (format!("{:.2}x", self.ratio), format!("<={b:.1}x")),
            Budget::AtLeast(b) => (format!("{:.2}x", self.ratio), format!(">={b:.1}x")),
            Budget::Below(b, u) => ("-".to_string(), format!("<={b} {u}")),
        };
        [
            num(self.raw, unit),
            num(self.ours, unit),
            ratio,
            budget,
            self.verdict().to_string(),
        ]
    }

    fn verdict(&self) -> &'static str {
        if self.within() { "within" } else { "OVER" }
    }
}

/// Prints the budget table; with `LOCKSCOPE_BENCH_ROWS=1` (as `scripts/bench` runs the
/// benches) one tab-separated `ROW` line per row instead, for it to gather into one table.
pub fn table(rows: &[Row]) {
    if std::env::var_os("LOCKSCOPE_BENCH_ROWS").is_some() {
        for r in rows {
            println!("ROW\t{}\t{}", r.case, r.cells().join("\t"));
        }
        return;
    }
    println!(
        "{:<56} {:>11} {:>11} {:>7} {:>9}  verdict",
        "case", "raw", "lockscope", "ratio", "budget"
    );
    for r in rows {
        let [raw, ours, ratio, budget, verdict] = r.cells();
        println!(
            "{:<56} {raw:>11} {ours:>11} {ratio:>7} {budget:>9}  {verdict}",
            r.case
        );
    }
}

/// Whether only the table is wanted (no criterion report): `scripts/bench` sets
/// `LOCKSCOPE_BENCH_ROWS`, and `--table` on the command line asks for it.
pub fn table_only() -> bool {
    std::env::var_os("LOCKSCOPE_BENCH_ROWS").is_some() || std::env::args().any(|a| a == "--table")
}

/// `rounds` rounds of every case, each a closure timing one whole batch (ns per operation),
/// called back to back within a round. (A dynamic call per batch, not per operation.)
pub fn rounds(rounds: usize, cases: &mut [&mut dyn FnMut() -> f64]) -> Samples {
    let mut samples = vec![Vec::with_capacity(rounds); cases.len()];
    for _ in 0..rounds {
        for (i, case) in cases.iter_mut().enumerate() {
            samples[i].push(case());
        }
    }
    Samples(samples)
}
