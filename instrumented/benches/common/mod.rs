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

pub struct Row {
    pub case: &'static str,
    pub raw: f64,
    pub ours: f64,
    /// Median per-round `ours / raw` (time); for throughput rows, `raw / ours`.
    pub ratio: f64,
    /// Budget on the ratio: at most (time) or at least (throughput).
    pub budget: f64,
    pub throughput: bool,
}

pub fn table(rows: &[Row]) {
    println!(
        "{:<52} {:>9} {:>11} {:>7} {:>8}  verdict",
        "case", "raw ns", "lockscope", "ratio", "budget"
    );
    for r in rows {
        let (ratio, ok, budget) = if r.throughput {
            (r.ratio, r.ratio >= r.budget, format!(">={:.1}x", r.budget))
        } else {
            (r.ratio, r.ratio <= r.budget, format!("<={:.1}x", r.budget))
        };
        println!(
            "{:<52} {:>9.2} {:>11.2} {:>6.2}x {:>8}  {}",
            r.case,
            r.raw,
            r.ours,
            ratio,
            budget,
            if ok { "within" } else { "OVER" }
        );
    }
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
