//! Shared code of the lockscope examples.
//!
//! Every example under `examples/examples/` reproduces one pathology on purpose, waits for
//! lockscope's detector to report it, prints the report and exits 0. What they share lives
//! here:
//!
//! - [`detector_for_examples`]: the detector in production mode with thresholds short enough
//!   for a program that must finish in a few seconds;
//! - [`expect_finding`] / [`expect_finding_blocking`]: a bounded wait for a finding, driving
//!   the detector with [`lockscope::detector::check_now`] (a deadlock is confirmed on two
//!   consecutive checks, so it takes two polls at least);
//! - [`findings_about`], [`print_finding`], [`step`], [`metric_lines`], [`exit`]: filtering,
//!   printing and leaving;
//! - [`demo`]: the demo service behind `cargo run --example demo`.
//!
//! The examples print to stdout only; the tests in `examples/tests/examples.rs` run each one
//! as a child process and check what it printed.
#![warn(missing_docs)]

use std::io::Write as _;
use std::time::{Duration, Instant};

use lockscope::detector::{Config, Finding, FindingKind};

pub mod demo;

/// How often the bounded waits run the detector.
const POLL: Duration = Duration::from_millis(20);

/// How long an example waits for a finding before it gives up (and exits 1, so that a test
/// or a reader sees that the detector missed it). Every example must finish within 5 s.
pub const PATIENCE: Duration = Duration::from_secs(4);

/// Installs the detector in production mode (what a real service runs) with the given
/// thresholds, a 20 ms watchdog tick, and a silent tracing subscriber (each example prints
/// its findings itself).
///
/// The production defaults (10 s stuck and starvation, 60 s leak) are right for a service and
/// far too slow for an example that must finish within 5 s; call this first thing in `main`,
/// before creating any primitive.
///
/// # Panics
///
/// When a threshold is zero (the builder rejects it): a bug in the example.
pub fn detector_for_examples(stuck: Duration, starvation: Duration, leak: Option<Duration>) {
    Config::builder()
        .stuck(stuck)
        .starvation(starvation)
        .leak(leak)
        .tick(POLL)
        .build()
        // UNWRAP: the examples pass non-zero thresholds and a tick in the allowed range.
        .expect("example thresholds are valid")
        .install();
    // The examples print their findings themselves: a subscriber that shows nothing keeps
    // lockscope's stderr fallback (for programs with no subscriber at all) from repeating them.
    let _ = tracing::subscriber::set_global_default(tracing::subscriber::NoSubscriber::default());
}

/// The findings made so far that involve any of the primitives named in `names`.
pub fn findings_about(names: &[&str]) -> Vec<Finding> {
    lockscope::detector::findings()
        .into_iter()
        .filter(|f| names.iter().any(|n| f.involves(n)))
        .collect()
}

fn first_match(
    kind: FindingKind,
    names: &[&str],
    pred: &dyn Fn(&Finding) -> bool,
) -> Option<Finding> {
    findings_about(names)
        .into_iter()
        .find(|f| f.kind == kind && pred(f))
}

fn missing(kind: FindingKind, names: &[&str]) -> ! {
    println!(
        "lockscope reported no matching {kind} finding about {names:?} within {} s; everything it reported:",
        PATIENCE.as_secs()
    );
    for f in lockscope::detector::findings() {
        println!("\n{f}");
    }
    exit(1)
}

/// Waits, at most [`PATIENCE`], for a finding of `kind` that involves one of `names`,
/// running the detector every 20 ms; returns it. For async code: it sleeps with
/// `tokio::time::sleep`, so the tasks of a current-thread runtime keep running meanwhile.
///
/// If the detector does not report it in time, prints everything it did report and exits
/// the process with status 1.
pub async fn expect_finding(kind: FindingKind, names: &[&str]) -> Finding {
    expect_finding_where(kind, names, |_| true).await
}

/// [`expect_finding`] for a finding that also satisfies `pred`.
pub async fn expect_finding_where(
    kind: FindingKind,
    names: &[&str],
    pred: impl Fn(&Finding) -> bool,
) -> Finding {
    let deadline = Instant::now() + PATIENCE;
    loop {
        lockscope::detector::check_now();
        if let Some(f) = first_match(kind, names, &pred) {
            return f;
        }
        if Instant::now() >= deadline {
            missing(kind, names);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// [`expect_finding`] for plain threads (it sleeps the calling thread between polls). Use it
/// from a thread that is not an async runtime's worker, for instance `main` while the
/// runtime runs on another thread.
pub fn expect_finding_blocking(kind: FindingKind, names: &[&str]) -> Finding {
    expect_finding_blocking_where(kind, names, |_| true)
}

/// [`expect_finding_blocking`] for a finding that also satisfies `pred`.
pub fn expect_finding_blocking_where(
    kind: FindingKind,
    names: &[&str],
    pred: impl Fn(&Finding) -> bool,
) -> Finding {
    let deadline = Instant::now() + PATIENCE;
    loop {
        lockscope::detector::check_now();
        if let Some(f) = first_match(kind, names, &pred) {
            return f;
        }
        if Instant::now() >= deadline {
            missing(kind, names);
        }
        std::thread::sleep(POLL);
    }
}

/// Prints a step of the story: a blank line, then `== title`.
pub fn step(title: &str) {
    println!("\n== {title}");
}

/// Prints a finding as lockscope reports it (its `Display`, which starts
/// `lockscope: <kind>: `), after a blank line.
pub fn print_finding(f: &Finding) {
    println!("\n{f}");
}

/// The lines of the Prometheus text that `/metrics` would serve now
/// ([`lockscope::exporter::render`]) for the series labelled `lock="<lock>"`, restricted to
/// the families named in `families` (exact names, such as `lockscope_try_failures_total`).
pub fn metric_lines(lock: &str, families: &[&str]) -> Vec<String> {
    let label = format!("lock=\"{lock}\"");
    lockscope::exporter::render()
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(&label))
        .filter(|l| {
            let name = l.split(['{', ' ']).next().unwrap_or_default();
            families.contains(&name)
        })
        .map(str::to_owned)
        .collect()
}

/// Flushes stdout and stderr and ends the process with `code`.
///
/// The examples that deadlock on purpose leave through here: tasks or threads that can never
/// proceed cannot be joined, and a runtime with a worker blocked forever cannot be dropped.
pub fn exit(code: i32) -> ! {
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    std::process::exit(code)
}
