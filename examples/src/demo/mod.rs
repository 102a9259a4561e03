//! The demo service behind `cargo run --example demo`: a small bank on axum whose every lock
//! is a lockscope primitive, a load generator, the exporter, and a tour of the pathologies.
//!
//! - [`bank`]: the service's state and operations (healthy and buggy);
//! - [`api`]: its HTTP API;
//! - [`load`]: the load generator;
//! - [`pathology`]: what the tour injects, and the wait for each report;
//! - [`args`]: the command line.
//!
//! The detector runs in production mode (what a service runs: it logs and counts findings,
//! never panics) with thresholds shortened for a tour that lasts seconds, not minutes.

pub mod api;
pub mod args;
pub mod bank;
pub mod load;
pub mod pathology;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lockscope::detector::{Config, FindingKind};
use lockscope::exporter::ServeErrorKind;
use tokio::sync::watch;
use tracing::{error, info};

use args::{Args, ParseError, Plan, USAGE};
use pathology::{Injected, Pathology};

/// The tour's thresholds (production defaults: 10 s, 10 s, 60 s). Stuck is shorter than
/// starvation so that a holder that blocks its queue is reported as a stuck queue, and a
/// holder that hogs a busy primitive (others still get through) as starvation.
const STUCK: Duration = Duration::from_secs(2);
const STARVATION: Duration = Duration::from_secs(3);
const LEAK: Duration = Duration::from_secs(4);
/// How long the service runs healthy before the first injection.
const HEALTHY_START: Duration = Duration::from_secs(3);
/// Pause between two injections of the tour.
const BETWEEN: Duration = Duration::from_millis(500);
/// Load generator clients.
const CLIENTS: u64 = 4;

/// Runs the demo with the process's arguments; the exit code to return from `main`: 0 after
/// a clean shutdown (Ctrl-C or `--duration`), 2 for a bad command line, 1 for a start-up
/// failure (an address already in use, say).
pub fn main() -> ExitCode {
    let args = match args::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(ParseError::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(ParseError::Usage(msg)) => {
            eprintln!("demo: {msg}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = lockscope::exporter::init_tracing() {
        eprintln!("demo: {e}");
        return ExitCode::from(2);
    }
    Config::builder()
        .stuck(STUCK)
        .starvation(STARVATION)
        .leak(Some(LEAK))
        .build()
        // UNWRAP: constant, non-zero thresholds.
        .expect("valid thresholds")
        .install();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("demo: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = rt.block_on(run(args));
    // Deadlocked tasks never finish; the runtime drops them.
    rt.shutdown_timeout(Duration::from_secs(2));
    code
}

/// Resolves when Ctrl-C is pressed or `duration` has passed.
async fn until_stopped(duration: Option<Duration>) -> &'static str {
    let timer = async {
        match duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        r = tokio::signal::ctrl_c() => match r {
            Ok(()) => "Ctrl-C",
            Err(e) => {
                error!(target: "demo", "cannot listen for Ctrl-C: {e}; stop with --duration or a kill");
                std::future::pending().await
            }
        },
        () = timer => "--duration elapsed",
    }
}

/// The service, from start to clean shutdown.
async fn run(args: Args) -> ExitCode {
    let exporter = match lockscope::exporter::serve(&args.addr).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("demo: cannot serve /metrics on {}: {e}", args.addr);
            return if e.kind() == ServeErrorKind::InvalidAddress {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            };
        }
    };
    let listener = match tokio::net::TcpListener::bind(&args.api_addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!(
                "demo: cannot listen on {} for the bank API: {e}",
                args.api_addr
            );
            exporter.shutdown().await;
            return ExitCode::FAILURE;
        }
    };
    let api_addr: SocketAddr = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("demo: the API listener has no address: {e}");
            exporter.shutdown().await;
            return ExitCode::FAILURE;
        }
    };
    let metrics_addr = exporter.local_addr();
    // On stdout, one line each, for scripts (and the tests) to find the ports.
    println!("lockscope demo: live view on http://{metrics_addr}/");
    println!("lockscope demo: metrics on http://{metrics_addr}/metrics");
    println!("lockscope demo: bank API on http://{api_addr}/");
    info!(
        target: "demo",
        "exporter on http://{metrics_addr}: /metrics, /debug/findings, /debug/locks, /debug/graph; bank API on http://{api_addr}/"
    );
    info!(
        target: "demo",
        "detector in production mode with short thresholds for the tour: stuck {} s, starvation {} s, leak {} s (production defaults: 10 s, 10 s, 60 s)",
        STUCK.as_secs(),
        STARVATION.as_secs(),
        LEAK.as_secs()
    );

    let bank = bank::Bank::new();
    let stats = Arc::new(load::LoadStats::default());
    let service = Arc::new(api::Service {
        bank: bank.clone(),
        injected: Arc::new(Injected::default()),
        stats: stats.clone(),
        injecting: AtomicBool::new(false),
    });
    let (stop_tx, stop_rx) = watch::channel(false);

    // The API server, with graceful shutdown.
    let mut api_stop = stop_rx.clone();
    let router = api::router(service.clone());
    let api_server = tokio::spawn(async move {
        let serve = axum::serve(listener, router).with_graceful_shutdown(async move {
            let _ = api_stop.wait_for(|s| *s).await;
        });
        if let Err(e) = serve.await {
            error!(target: "demo", "bank API server failed: {e}");
        }
    });

    // Background work: the rates refresher and the house's payback, every second.
    let (b, mut rstop) = (bank.clone(), stop_rx.clone());
    tokio::spawn(async move {
        for tick in 0u64.. {
            tokio::select! {
                _ = rstop.changed() => break,
                () = tokio::time::sleep(Duration::from_secs(1)) => {
                    b.refresh_rates(tick).await;
                    b.pay_back().await;
                }
            }
        }
    });

    // The load.
    let mut clients = load::spawn(api_addr, CLIENTS, stop_rx.clone(), stats.clone());
    let started = Instant::now();
    let reporter = tokio::spawn(report_load(stats.clone(), stop_rx.clone()));

    // The tour.
    let plan = args.plan;
    let tour = tokio::spawn(async move { tour(service, plan).await });

    let why = until_stopped(args.duration).await;
    info!(target: "demo", "{why}: shutting down");
    tour.abort();
    let _ = stop_tx.send(true);
    while clients.join_next().await.is_some() {}
    let _ = reporter.await;
    if tokio::time::timeout(Duration::from_secs(5), api_server)
        .await
        .is_err()
    {
        error!(target: "demo", "the bank API did not finish its requests within 5 s");
    }
    exporter.shutdown().await;
    let (ok, refused, failed) = stats.get();
    info!(
        target: "demo",
        "stopped after {:.1} s: {ok} requests served, {refused} refused, {failed} failed; books: {}; findings per kind: {}",
        started.elapsed().as_secs_f64(),
        bank.audit().await,
        totals_line()
    );
    ExitCode::SUCCESS
}

/// `deadlock=1 nested-acquire=1 ...` from the findings totals.
fn totals_line() -> String {
    lockscope::detector::totals()
        .into_iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Logs the load every 5 seconds.
async fn report_load(stats: Arc<load::LoadStats>, mut stop: watch::Receiver<bool>) {
    let mut last = stats.get();
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            () = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
        let now = stats.get();
        info!(
            target: "demo",
            "load: {:.0} requests/s served, {} refused, {} failed in the last 5 s; findings so far: {}",
            (now.0 - last.0) as f64 / 5.0,
            now.1 - last.1,
            now.2 - last.2,
            totals_line()
        );
        last = now;
    }
}

/// The healthy start, then the injections of `plan`, one at a time.
async fn tour(service: Arc<api::Service>, plan: Plan) {
    info!(target: "demo", "healthy start: {CLIENTS} clients for {} s", HEALTHY_START.as_secs());
    tokio::time::sleep(HEALTHY_START).await;
    let found = lockscope::detector::findings();
    info!(target: "demo", "healthy: {} findings", found.len());
    let list: Vec<Pathology> = match plan {
        Plan::Healthy => {
            info!(target: "demo", "no pathology to inject (--pathology none); serving until stopped");
            return;
        }
        Plan::One(p) => vec![p],
        Plan::Tour => Pathology::ALL.to_vec(),
    };
    let n = list.len();
    let mut reported = Vec::new();
    for (i, p) in list.into_iter().enumerate() {
        info!(target: "demo", "--- {}/{n}: {}", i + 1, p.name());
        // Wait for an injection asked over HTTP to finish first.
        while service.injecting.swap(true, Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if pathology::inject(&service.bank, &service.injected, p).await {
            reported.push(p.kind());
        }
        service.injecting.store(false, Ordering::SeqCst);
        tokio::time::sleep(BETWEEN).await;
    }
    let missing: Vec<&str> = FindingKind::ALL
        .iter()
        .filter(|k| plan == Plan::Tour && !reported.contains(k))
        .map(|k| k.as_str())
        .collect();
    info!(
        target: "demo",
        "tour complete: {} of {n} reported{}; the service keeps serving (the legacy accounts deadlocked for {} s aside); findings per kind: {}",
        reported.len(),
        if missing.is_empty() { String::new() } else { format!(", missing: {}", missing.join(", ")) },
        pathology::LINGER.as_secs(),
        totals_line()
    );
}
