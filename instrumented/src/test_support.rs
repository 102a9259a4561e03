//! What `#[lockscope::test]` expands to call. Not a public API: use the attribute.

use std::future::Future;
use std::pin::pin;
use std::process::{ExitCode, Termination};
use std::task::Poll;
use std::time::Duration;

pub use lockscope_detector::__private::scope::ScopeOptions;
pub use tokio;

use std::sync::atomic::Ordering;

use lockscope_detector::__private::{actor, ci, stress};
use lockscope_detector::executor::{self, RuntimeKey};
use lockscope_detector::{Finding, FindingKind, TestScope, render_all};

/// Runs one armed test: arms a scope, stamps the runtime's threads with it, runs `body`
/// until it ends or a live deadlock of this test is reported, then checks for leftover
/// findings.
///
/// # Panics
///
/// With the report, when any finding belongs to the test; and as `#[tokio::test]` does when
/// the runtime cannot be built or the body panics.
#[track_caller]
pub fn run_test<F: Future>(
    name: &str,
    options: ScopeOptions,
    builder: tokio::runtime::Builder,
    body: F,
) -> F::Output {
    let run = run_armed(name, options, builder, body, |_| {});
    match run.outcome {
        Some(out) if run.findings.is_empty() => out,
        _ => failed(name, &run.findings),
    }
}

/// One armed run of a test body (see [`run_test`]): its output (`None` when a live deadlock
/// ended it) and the findings of the test.
pub(crate) struct Run<T> {
    pub(crate) outcome: Option<T>,
    pub(crate) findings: Vec<Finding>,
}

/// [`run_test`] without the verdict; `armed` is told the scope's id before the body starts.
pub(crate) fn run_armed<F: Future>(
    name: &str,
    options: ScopeOptions,
    mut builder: tokio::runtime::Builder,
    body: F,
    armed: impl FnOnce(u32),
) -> Run<F::Output> {
    let scope = TestScope::arm(name, options);
    let id = scope.id();
    armed(id);
    let key = RuntimeKey::new();
    builder
        .on_thread_start(move || {
            actor::set_thread_scope(id);
            executor::thread_started(key);
        })
        .on_thread_stop(executor::thread_stopped);
    crate::runtime::task_hooks(&mut builder);
    let rt = builder
        .build()
        .expect("Failed building the Runtime (lockscope::test)");
    // This thread drives the body: the model learns that the body can only run here, and,
    // on a multi-thread runtime, that once parked it needs a worker to wake it.
    let block_on = executor::enter_block_on(key, rt.handle());
    let _traced = crate::runtime::traced(rt.handle());
    let deadlock = scope.deadlock();
    let outcome = rt.block_on(async {
        let mut body = pin!(body);
        let mut deadlock = pin!(deadlock);
        std::future::poll_fn(|cx| {
            // The deadlock signal first: a body that blocks its thread in its very first poll
            // (a parking_lot self-deadlock before any `.await`) must find the watchdog already
            // told that this test listens, so that it ends the process with the report.
            if let Poll::Ready(report) = deadlock.as_mut().poll(cx) {
                return Poll::Ready(Err(report));
            }
            block_on.polling().store(true, Ordering::Relaxed);
            let polled = body.as_mut().poll(cx).map(Ok);
            block_on.polling().store(false, Ordering::Relaxed);
            polled
        })
        .await
    });
    drop(block_on);
    match outcome {
        Ok(out) => {
            // Leaks are judged while the runtime (and any task left running) still exists.
            let findings = scope.finish();
            rt.shutdown_timeout(Duration::from_secs(5));
            Run {
                outcome: Some(out),
                findings,
            }
        }
        Err(_report) => {
            let findings = scope.findings();
            drop(scope);
            // The deadlocked tasks can never finish: do not wait for them.
            rt.shutdown_background();
            Run {
                outcome: None,
                findings,
            }
        }
    }
}

/// Runs one armed plain (non-async) test: as [`run_test`], with no runtime. A deadlock that
/// blocks the test's thread ends the process with the report (the thread can never notice).
///
/// # Panics
///
/// With the report, when any finding belongs to the test; and as the body does.
#[track_caller]
pub fn run_plain_test<T>(name: &str, options: ScopeOptions, body: impl FnOnce() -> T) -> T {
    let scope = TestScope::arm(name, options);
    scope.listen();
    let out = body();
    let findings = scope.finish();
    if !findings.is_empty() {
        failed(name, &findings);
    }
    out
}

/// Fails test `name` on `findings`: the reports `LOCKSCOPE_REPORT` asks for, then the panic
/// with the report.
#[track_caller]
pub(crate) fn failed(name: &str, findings: &[Finding]) -> ! {
    ci::test_failed(name, findings);
    panic!("{}", render_all(findings));
}

/// How many stress runs a test makes: the attribute's `stress = N` (`Some(0)` for a bare
/// `stress`: the default), else `LOCKSCOPE_STRESS=N`; `None`: one ordinary run.
///
/// # Panics
///
/// When `LOCKSCOPE_STRESS` or `LOCKSCOPE_STRESS_SEED` is set but not a number: a test should
/// fail loudly on a bad setting.
pub fn stress_runs(attr: Option<u32>) -> Option<u32> {
    let runs = match attr {
        Some(n) => Some(n),
        None => env_number(stress::RUNS_VAR).map(|n| {
            u32::try_from(n)
                .unwrap_or_else(|_| panic!("lockscope: {} is too large", stress::RUNS_VAR))
        }),
    };
    runs.map(|n| if n == 0 { stress::DEFAULT_RUNS } else { n })
}

fn env_number(var: &str) -> Option<u64> {
    let v = std::env::var(var).ok()?;
    Some(
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("lockscope: {var}={v:?}: expected a whole number")),
    )
}

/// Runs an async armed test: once as [`run_test`], or, in stress mode ([`stress_runs`]),
/// [`run_stressed`]. `build` makes the test's runtime builder, with the worker count to use
/// when it is given; `workers` is the test's own count for a multi-thread runtime (`None`:
/// current-thread).
#[track_caller]
pub fn run_async_test<F>(
    name: &str,
    options: ScopeOptions,
    stress: Option<u32>,
    workers: Option<usize>,
    build: impl Fn(Option<usize>) -> tokio::runtime::Builder,
    mut body: impl FnMut() -> F,
) -> F::Output
where
    F: Future,
    F::Output: Termination,
{
    match stress_runs(stress) {
        None => run_test(name, options, build(None), body()),
        Some(runs) => {
            let replay = env_number(stress::SEED_VAR);
            run_stressed(name, options, runs, replay, workers, build, body)
        }
    }
}

/// What stress runs have seen of latent deadlocks (lock-order inversions, latent nested
/// acquisitions): their findings and the run that first reported one.
struct Latent {
    findings: Vec<Finding>,
    first_run: u32,
}

/// Stress mode (see `docs/testing.md`): `runs` runs of `body`, each with its own seed and
/// perturbation at the acquisition points; once a run reports a latent deadlock (a
/// `lock-order-inversion`, a latent `nested-acquire`), the following runs pause at its sites.
/// `replay` (`LOCKSCOPE_STRESS_SEED`) replays one run instead: the run with that seed, then,
/// if it reports a latent deadlock and no live one, the same run with the directed pauses it
/// asks for (as the run that printed the seed had).
#[track_caller]
pub fn run_stressed<F>(
    name: &str,
    options: ScopeOptions,
    runs: u32,
    replay: Option<u64>,
    workers: Option<usize>,
    build: impl Fn(Option<usize>) -> tokio::runtime::Builder,
    mut body: impl FnMut() -> F,
) -> F::Output
where
    F: Future,
    F::Output: Termination,
{
    let base = replay.unwrap_or_else(fresh_seed);
    let runs = if replay.is_some() { 2 } else { runs };
    let session = stress::Stress::start();
    let mut latents: Option<Latent> = None;
    let mut k = 0;
    loop {
        k += 1;
        let seed = if replay.is_some() {
            base
        } else {
            stress::mix(base ^ u64::from(k))
        };
        // Captured with the test's output: shown when the test fails, whatever ends it.
        eprintln!("lockscope stress: {name}: run {k} of {runs}, seed {seed}");
        // A multi-thread runtime gets a random worker count within the test's.
        let count = workers.map(|w| 1 + (stress::draw(seed, 1) % w.max(1) as u64) as usize);
        let builder = build(count);
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_armed(name, options, builder, body(), |scope| {
                session.begin_run(seed, scope);
            })
        }));
        session.end_run();
        let run = match ran {
            Ok(run) => run,
            Err(panic) => {
                eprintln!(
                    "lockscope stress: the panic above is run {k} of {runs} (seed {seed}); replay it with {}={seed}",
                    stress::SEED_VAR
                );
                std::panic::resume_unwind(panic);
            }
        };
        // Latent deadlocks (inversions, latent nested acquisitions) let the runs go on, with
        // directed pauses at their sites; any other finding ends the test.
        let latent: Option<Vec<String>> = run.findings.iter().try_fold(Vec::new(), |mut all, f| {
            all.extend(stress::latent_sites(f)?);
            Some(all)
        });
        match run.outcome {
            None => confirmed(name, run.findings, k, runs, seed, latents.as_ref()),
            Some(_) if latent.is_none() => {
                let mut findings = run.findings;
                for f in &mut findings {
                    f.details.push(seed_line(k, runs, seed));
                }
                failed(name, &findings)
            }
            Some(out) => {
                if !run.findings.is_empty() {
                    session.direct(latent.unwrap_or_default());
                    let seen = latents.get_or_insert(Latent {
                        findings: Vec::new(),
                        first_run: k,
                    });
                    // One per bug: a later run's copy names other tasks, at the same sites.
                    for f in run.findings {
                        if !seen
                            .findings
                            .iter()
                            .any(|s| s.kind == f.kind && s.sites == f.sites)
                        {
                            seen.findings.push(f);
                        }
                    }
                }
                let last = k >= runs || (replay.is_some() && !session.directed());
                if last {
                    match latents {
                        None => return out,
                        Some(inv) => not_confirmed(name, inv, k),
                    }
                }
                if out.report() != ExitCode::SUCCESS {
                    panic!(
                        "lockscope stress: {name}: run {k} of {runs} (seed {seed}) returned an error (printed above); replay it with {}={seed}",
                        stress::SEED_VAR
                    );
                }
            }
        }
    }
}

/// A seed for a stress session: different every time.
fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.finish()
}

fn seed_line(k: u32, runs: u32, seed: u64) -> String {
    format!(
        "stress: run {k} of {runs} (seed {seed}); replay it with {}={seed}",
        stress::SEED_VAR
    )
}

/// Fails a stress test whose run `k` deadlocked (or hung: a `stuck-queue` ends a run too):
/// the `deadlock` says it is confirmed, in which run and with which seed; the latent
/// deadlocks it makes real (and any other of the run) are not repeated.
#[track_caller]
fn confirmed(
    name: &str,
    findings: Vec<Finding>,
    k: u32,
    runs: u32,
    seed: u64,
    latents: Option<&Latent>,
) -> ! {
    let mut out: Vec<Finding> = findings
        .into_iter()
        .filter(|f| stress::latent_sites(f).is_none())
        .collect();
    for f in &mut out {
        // A stuck queue ends a run too: a hang the detector cannot prove a deadlock (say,
        // behind an owned guard that another task might drop).
        let verdict = match f.kind {
            FindingKind::Deadlock => Some("confirmed"),
            FindingKind::StuckQueue => Some("provoked"),
            _ => None,
        };
        if let Some(verdict) = verdict {
            f.summary.push_str(&format!(
                " ({verdict} in run {k} of {runs} (seed {seed}) by stress mode)"
            ));
        }
        if let (FindingKind::Deadlock, Some(inv)) = (f.kind, latents) {
            f.details.push(format!(
                "stress: the latent deadlock reported in run {} was made real by directed pauses at its sites",
                inv.first_run
            ));
        }
        f.details.push(seed_line(k, runs, seed));
    }
    failed(name, &out)
}

/// Fails a stress test on the latent deadlocks its runs reported and no directed run made
/// real.
#[track_caller]
fn not_confirmed(name: &str, mut inv: Latent, runs: u32) -> ! {
    let directed = runs - inv.first_run;
    for f in &mut inv.findings {
        f.summary
            .push_str(&format!(" (not confirmed in {directed} directed runs)"));
    }
    failed(name, &inv.findings)
}
