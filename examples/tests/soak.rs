//! The demo runs for hours (issue 17): a soak of the demo under 200 scraping clients, with
//! the injected pathologies bounded. Ignored by `cargo test` (it lasts a minute); `.ci/run`
//! runs it:
//!
//! ```text
//! cargo build -p lockscope-examples --examples
//! cargo test -p lockscope-examples --test soak -- --ignored --nocapture
//! DEMO_SOAK_SECS=600 cargo test -p lockscope-examples --test soak -- --ignored --nocapture
//! ```
//!
//! It checks, every interval (10 s; 60 s when the soak lasts 5 minutes or more): the books
//! balance (accounts plus house), every account can still pay, no scrape fails; at the end,
//! the served rate of every interval is within 10% of the intervals' median (more where the
//! hypervisor took the CPU, see below), and the resident memory grew less than 5 MB since the
//! warm-up. The demo runs as the user runs it, a child process killed on every way out of the
//! test.
//!
//! The served rate is wall-clock throughput, and a virtual machine's host can take the CPU
//! away: each interval's tolerance grows by [`STEAL_WEIGHT`] times the share of the machine's
//! time the hypervisor stole in it (`steal` in `/proc/stat`), and an interval in which it stole
//! [`STEAL_EXCUSES`] or more is printed but not judged, as long as most intervals are. Each
//! interval also prints the demo's CPU time, which grows with the demo's own costs.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

const SCRAPERS: usize = 200;
/// Pause between two scrapes of one scraper.
const SCRAPE_EVERY: Duration = Duration::from_secs(1);
/// Longest one HTTP exchange may take before the soak fails.
const EXCHANGE_LIMIT: Duration = Duration::from_secs(15);
/// Largest resident-memory growth after the warm-up.
const RSS_GROWTH_LIMIT_KB: u64 = 5 * 1024;
/// Largest change of an interval's served rate from the median of the intervals.
const RATE_TOLERANCE: f64 = 0.10;
/// How much an interval's rate may fall per share of the machine stolen by the hypervisor, on
/// top of [`RATE_TOLERANCE`]: on this VM class, 0.1% stolen is usual, 4.5% slowed the rate by
/// 3%, and 7.5% by 3.3% (the runs that drifted 15% with the machine to themselves did so over
/// several intervals). Twice the share leaves room above what was seen.
const STEAL_WEIGHT: f64 = 2.0;
/// Share of the machine's time stolen by the hypervisor from which an interval's rate says
/// nothing about the demo: the tolerance would be past 40%.
const STEAL_EXCUSES: f64 = 0.15;

/// `target/<profile>/examples/demo`, next to this test binary's `deps/` directory.
fn demo_path() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lives in target/<profile>/deps")
        .join("examples")
        .join(format!("demo{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "{} not found: run `cargo build -p lockscope-examples --examples` first",
        path.display()
    );
    path
}

/// One request on a fresh connection; returns (status, body).
async fn exchange(addr: SocketAddr, method: &str, path: &str) -> (u16, String) {
    let run = async {
        let mut s = TcpStream::connect(addr).await?;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        );
        s.write_all(head.as_bytes()).await?;
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).await?;
        std::io::Result::Ok(String::from_utf8_lossy(&answer).into_owned())
    };
    let answer = tokio::time::timeout(EXCHANGE_LIMIT, run)
        .await
        .unwrap_or_else(|_| panic!("{method} {path}: no answer within {EXCHANGE_LIMIT:?}"))
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("{method} {path}: not an HTTP answer: {head}"));
    (status, body.to_owned())
}

/// The child's resident memory, in KiB.
fn rss_kb(child: &Child) -> u64 {
    let pid = child.id().expect("the demo is running");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc status")
}

/// The child's CPU time (user plus system), in clock ticks.
fn cpu_ticks(child: &Child) -> u64 {
    let pid = child.id().expect("the demo is running");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc stat");
    // After the command's closing parenthesis: the state (field 3) first, utime is field 14
    // and stime field 15.
    let rest = stat.rsplit_once(')').expect("a stat line").1;
    let field = |n: usize| -> u64 {
        rest.split_whitespace()
            .nth(n - 3)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("field {n} of {stat:?}"))
    };
    field(14) + field(15)
}

/// The machine's time so far, as `(stolen by the hypervisor, all)`, in clock ticks summed
/// over the CPUs (`/proc/stat`'s first line).
fn machine_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
    let ticks: Vec<u64> = stat
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("cpu "))
        .expect("the cpu line of /proc/stat")
        .split_whitespace()
        .map(|n| n.parse().expect("a tick count"))
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is within user).
    (ticks[7], ticks[..8].iter().sum())
}

/// `served N refused N failed N` from `/stats`.
async fn served(api: SocketAddr) -> (u64, u64) {
    let (status, body) = exchange(api, "GET", "/stats").await;
    assert_eq!(status, 200, "{body}");
    let word = |name: &str| -> u64 {
        body.split_whitespace()
            .skip_while(|w| *w != name)
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {name} count in /stats: {body:?}"))
    };
    (word("served"), word("refused"))
}

/// Checks the books; returns the audit line.
async fn audit(api: SocketAddr) -> String {
    let (status, body) = exchange(api, "GET", "/audit").await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("(expected") && body.contains(": conserved)"),
        "money not conserved: {body}"
    );
    let lowest: i64 = body
        .rsplit("lowest balance ")
        .next()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no lowest balance in {body:?}"));
    // A transfer is at most 5.00 plus a 0.25 fee: an account with more can always pay.
    assert!(lowest > 525, "an account can no longer pay: {body}");
    body.trim().to_owned()
}

/// POSTs `/pathology/{name}` until it is not refused for another injection in progress;
/// returns (status, body).
async fn inject(api: SocketAddr, name: &str) -> (u16, String) {
    let start = Instant::now();
    loop {
        let (status, body) = exchange(api, "POST", &format!("/pathology/{name}")).await;
        if !(status == 409 && body.contains("another pathology is being injected")) {
            return (status, body);
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{name}: still refused: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a one-minute soak; .ci/run runs it"]
async fn the_demo_stays_healthy_under_scrapes_and_repeated_injections() {
    let secs: u64 = std::env::var("DEMO_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let interval = Duration::from_secs(if secs >= 300 { 60 } else { 10 });
    let intervals = (secs / interval.as_secs()).max(3) as usize;

    let mut child = Command::new(demo_path())
        .args(["--addr", "127.0.0.1:0", "--pathology", "none"])
        // Outlives the soak: the warm-up, the intervals, the injections and a margin.
        .args([
            "--duration",
            &(secs + 2 * interval.as_secs() + 120).to_string(),
        ])
        .env_remove("RUST_LOG")
        .env_remove("LOCKSCOPE_MODE")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the demo");
    let mut out = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let (mut metrics, mut api) = (None, None);
    let addr_after = |line: &str, tag: &str| -> Option<SocketAddr> {
        let rest = line.split(tag).nth(1)?.split("http://").nth(1)?;
        rest.trim_end_matches("/metrics")
            .trim_end_matches('/')
            .parse()
            .ok()
    };
    tokio::time::timeout(Duration::from_secs(30), async {
        while metrics.is_none() || api.is_none() {
            let line = out
                .next_line()
                .await
                .expect("demo stdout")
                .expect("the demo printed its addresses");
            metrics = metrics.or(addr_after(&line, "metrics on"));
            api = api.or(addr_after(&line, "bank API on"));
        }
    })
    .await
    .expect("the demo printed its addresses within 30 s");
    let (metrics, api) = (metrics.unwrap(), api.unwrap());
    // Keep draining stdout so that the demo never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = out.next_line().await {} });

    // 200 scrapers for the whole soak.
    let stop = Arc::new(AtomicBool::new(false));
    let scrapes = Arc::new(AtomicU64::new(0));
    let mut scrapers = tokio::task::JoinSet::new();
    for i in 0..SCRAPERS {
        let (stop, scrapes) = (stop.clone(), scrapes.clone());
        scrapers.spawn(async move {
            // Spread the scrapers over the second.
            tokio::time::sleep(SCRAPE_EVERY * i as u32 / SCRAPERS as u32).await;
            while !stop.load(Ordering::Relaxed) {
                let (status, body) = exchange(metrics, "GET", "/metrics").await;
                assert_eq!(status, 200, "scrape failed: {body}");
                scrapes.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(SCRAPE_EVERY).await;
            }
        });
    }

    // The injected pathologies are bounded: one live deadlock, one live leak.
    let (status, body) = inject(api, "deadlock").await;
    assert_eq!(status, 202, "{body}");
    let (status, body) = inject(api, "deadlock").await;
    assert_eq!(status, 409, "a second deadlock was injected: {body}");
    assert!(body.contains("deadlocked already"), "{body}");
    let (status, body) = inject(api, "lock-order-inversion").await;
    assert_eq!(
        status, 409,
        "an inversion queued behind the deadlock: {body}"
    );
    let (status, body) = inject(api, "leaked-permit").await;
    assert_eq!(status, 202, "{body}");
    let (status, body) = inject(api, "leaked-permit").await;
    assert_eq!(status, 409, "a second leak was injected: {body}");
    assert!(body.contains("lives already"), "{body}");

    // Warm-up: one interval.
    tokio::time::sleep(interval).await;
    println!("after warm-up: {}", audit(api).await);
    let rss_start = rss_kb(&child);
    let mut last = served(api).await;
    let (mut last_cpu, mut last_machine) = (cpu_ticks(&child), machine_ticks());
    // (served rate, share of the machine's time stolen) per interval.
    let mut rates = Vec::new();
    for i in 0..intervals {
        tokio::time::sleep(interval).await;
        let now = served(api).await;
        let rate = (now.0 - last.0) as f64 / interval.as_secs_f64();
        let refused = now.1 - last.1;
        last = now;
        let books = audit(api).await;
        let rss = rss_kb(&child);
        let (cpu, machine) = (cpu_ticks(&child), machine_ticks());
        let stolen =
            (machine.0 - last_machine.0) as f64 / (machine.1 - last_machine.1).max(1) as f64;
        println!(
            "interval {}: {rate:.1} requests/s served, {refused} refused, RSS {rss} KiB, demo CPU {} ticks, {:.1}% of the machine stolen, {} scrapes so far; {books}",
            i + 1,
            cpu - last_cpu,
            100.0 * stolen,
            scrapes.load(Ordering::Relaxed)
        );
        (last_cpu, last_machine) = (cpu, machine);
        rates.push((rate, stolen));
        assert!(
            refused as f64 <= 0.01 * rate * interval.as_secs_f64(),
            "{refused} transfers refused in interval {}: accounts are running dry",
            i + 1
        );
        // The deadlock may be cancelled by now; the leak too. Both live at most LINGER.
    }
    let rss_end = rss_kb(&child);
    stop.store(true, Ordering::Relaxed);
    while let Some(r) = scrapers.join_next().await {
        r.expect("a scraper failed");
    }
    let served: Vec<f64> = rates.iter().map(|r| r.0).collect();
    println!(
        "served per interval: {served:.1?}; RSS {rss_start} KiB after warm-up, {rss_end} KiB at the end"
    );
    check_rates(&rates);
    assert!(
        rss_end < rss_start + RSS_GROWTH_LIMIT_KB,
        "RSS grew from {rss_start} KiB to {rss_end} KiB"
    );
    child.kill().await.expect("stop the demo");
}

/// Every interval's served rate within [`RATE_TOLERANCE`] of the median, plus
/// [`STEAL_WEIGHT`] times the share of the machine the hypervisor stole in it, except those in
/// which it stole [`STEAL_EXCUSES`] of the machine; most intervals are judged.
fn check_rates(rates: &[(f64, f64)]) {
    let mut sorted: Vec<f64> = rates.iter().map(|r| r.0).collect();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let mut judged = 0;
    for (i, &(rate, stolen)) in rates.iter().enumerate() {
        if stolen >= STEAL_EXCUSES {
            println!(
                "interval {}: not judged, the hypervisor stole {:.1}% of the machine",
                i + 1,
                100.0 * stolen
            );
            continue;
        }
        judged += 1;
        let tolerance = RATE_TOLERANCE + STEAL_WEIGHT * stolen;
        assert!(
            (rate - median).abs() <= tolerance * median,
            "interval {}: {rate:.1} requests/s against a median of {median:.1}, past {:.1}% ({:.1}% of the machine stolen): {rates:.3?}",
            i + 1,
            100.0 * tolerance,
            100.0 * stolen
        );
    }
    assert!(
        2 * judged > rates.len(),
        "only {judged} of {} intervals could be judged: the hypervisor stole {STEAL_EXCUSES} or more of the machine in the others: {rates:.3?}",
        rates.len()
    );
}

/// The CI run that failed on the earlier rule (three of six intervals with 2% or more stolen,
/// none of them slower than 3.3% below the median) passes.
#[test]
fn a_drop_the_hypervisor_explains_passes() {
    check_rates(&[
        (276.9, 0.002),
        (271.1, 0.012),
        (271.0, 0.018),
        (260.1, 0.075),
        (267.8, 0.026),
        (266.3, 0.043),
    ]);
    check_rates(&[(280.0, 0.001), (278.0, 0.0), (250.0, 0.05), (281.0, 0.002)]);
}

#[test]
#[should_panic(expected = "interval 3: 200.0 requests/s against a median of 280.0, past 20.0%")]
fn a_drop_larger_than_the_steal_explains_fails() {
    check_rates(&[(280.0, 0.001), (278.0, 0.0), (200.0, 0.05), (281.0, 0.002)]);
}

#[test]
#[should_panic(expected = "interval 3: 233.0 requests/s against a median of 280.0, past 12.0%")]
fn a_drop_with_the_machine_to_itself_fails() {
    check_rates(&[(280.0, 0.001), (278.0, 0.0), (233.0, 0.01), (281.0, 0.002)]);
}

#[test]
#[should_panic(expected = "only 1 of 3 intervals could be judged")]
fn a_soak_the_hypervisor_took_over_fails() {
    check_rates(&[(280.0, 0.2), (278.0, 0.0), (233.0, 0.3)]);
}
