//! Proof against the real thing: a real Prometheus scrapes the real exporter, and every panel
//! query of the Grafana dashboard returns data; the alert rules load and evaluate cleanly.
//!
//! The workload drives named primitives through the detector's hooks so that every metric
//! family moves: holds, contended waits, try failures, timeouts, cancellations, a semaphore
//! with its permits held and a waiter queued. The exporter serves it on a free port;
//! Prometheus (the `prometheus` binary, Debian's package in CI) scrapes it every second
//! with `dashboards/prometheus/alerts.yml` loaded.
//!
//! Skips, with a message saying so, only where `prometheus` is not installed.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::panic::Location;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lockscope_detector::hooks::{self, Acq, Mode};
use lockscope_detector::prim::{PrimCell, PrimKind};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const JOB: &str = "lockscope-e2e";
/// The locks the workload names; `$lock` is substituted with all of them, as Grafana writes
/// a multi-value selection, and then with `.*` (its "All").
const LOCKS: [&str; 3] = ["e2e/db", "e2e/pool", "e2e/cache"];
/// Everything (start, scrapes, every query) must be done by then.
const DEADLINE: Duration = Duration::from_secs(45);

fn repo_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// The Prometheus child: killed and reaped, and its temporary directory removed, on every
/// path out of the test (panics included).
struct PrometheusGuard {
    child: Child,
    dir: PathBuf,
}

impl Drop for PrometheusGuard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl PrometheusGuard {
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }
}

fn free_port() -> u16 {
    // Bound and released at once; Prometheus binds it next. A clash would surface as
    // Prometheus exiting, which the readiness poll reports with its log.
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn start_prometheus(target: SocketAddr) -> io::Result<(PrometheusGuard, SocketAddr)> {
    let dir = std::env::temp_dir().join(format!(
        "lockscope-prometheus-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    std::fs::create_dir_all(dir.join("data"))?;
    let rules = repo_path("dashboards/prometheus/alerts.yml").canonicalize()?;
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
         rule_files:\n  - {rules:?}\n\
         scrape_configs:\n  - job_name: {JOB}\n    static_configs:\n      - targets: [\"{target}\"]\n"
    );
    std::fs::write(dir.join("prometheus.yml"), config)?;
    let log = std::fs::File::create(dir.join("prometheus.log"))?;
    let addr: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let child = Command::new("prometheus")
        .arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .arg("--log.level=warn")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn();
    match child {
        Ok(child) => Ok((PrometheusGuard { child, dir }, addr)),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            Err(e)
        }
    }
}

/// Percent-encodes a query-string value (everything but RFC 3986's unreserved bytes).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `GET path` on `addr`; returns status and body. Connection-level errors are `Err` (the
/// server may not be up yet).
async fn http_get(addr: SocketAddr, path: &str) -> io::Result<(u16, String)> {
    let exchange = async {
        let mut s = TcpStream::connect(addr).await?;
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await?;
        Ok::<_, io::Error>(raw)
    };
    let raw = tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no answer in 10 s"))??;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no header end"))?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no status"))?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Ok((status, body))
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || tail.len() < n {
            break;
        }
        out.push_str(&tail[..n]);
        rest = tail[n..].strip_prefix("\r\n").unwrap_or(&tail[n..]);
    }
    out
}

/// Polls `f` every 200 ms until it returns `Some`, up to `deadline`.
async fn poll<T>(deadline: Instant, mut f: impl AsyncFnMut() -> Option<T>) -> Option<T> {
    loop {
        if let Some(v) = f().await {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The outcome of one instant query.
enum QueryResult {
    /// Prometheus refused the query (a bad expression): never retried.
    Invalid(String),
    /// A valid query; how many series it returned.
    Series(usize),
}

async fn query(prom: SocketAddr, expr: &str) -> io::Result<QueryResult> {
    let (status, body) = http_get(prom, &format!("/api/v1/query?query={}", encode(expr))).await?;
    let json: Value = serde_json::from_str(&body)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{e}: {body}")))?;
    if status != 200 || json["status"] != "success" {
        return Ok(QueryResult::Invalid(format!("HTTP {status}: {body}")));
    }
    let result = json["data"]["result"].as_array().map_or(0, Vec::len);
    Ok(QueryResult::Series(result))
}

/// Holds and waits that make every family move, until `stop`.
fn workload(stop: Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
    let site = Location::caller();
    let db = Arc::new(PrimCell::new(
        Some(LOCKS[0].into()),
        PrimKind::Mutex,
        site,
        1,
    ));
    let pool = Arc::new(PrimCell::new(
        Some(LOCKS[1].into()),
        PrimKind::Semaphore,
        site,
        4,
    ));
    let cache = Arc::new(PrimCell::new(
        Some(LOCKS[2].into()),
        PrimKind::RwLock,
        site,
        16,
    ));
    let acq = |permits, mode| Acq::new(site, permits, mode);
    let mut threads = Vec::new();

    // The pool: every permit held by one thread, one more wanted by another, until the end
    // (permits_available 0 of 4, a waiter, a growing oldest wait).
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    {
        let (pool, stop) = (pool.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            let hold = hooks::acquired(pool.get(), acq(4, Mode::Permits));
            held_tx.send(()).unwrap();
            while !stop.load(Ordering::Relaxed) {
                std::thread::park_timeout(Duration::from_millis(50));
            }
            hooks::released(pool.get(), hold);
        }));
    }
    held_rx.recv().unwrap();
    {
        let (pool, stop) = (pool.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            let wait = hooks::wait_begin(pool.get(), acq(1, Mode::Permits), false);
            while !stop.load(Ordering::Relaxed) {
                std::thread::park_timeout(Duration::from_millis(50));
            }
            hooks::wait_cancelled(pool.get(), wait);
        }));
    }
    // The db mutex and the cache rwlock: a steady stream of holds, contended waits, try
    // failures, timeouts and cancellations.
    threads.push(std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let (db, cache) = (db.get(), cache.get());
            let h = hooks::acquired(db, acq(1, Mode::Exclusive));
            hooks::try_failed(db);
            hooks::released(db, h);
            let w = hooks::wait_begin(db, acq(1, Mode::Exclusive), false);
            std::thread::sleep(Duration::from_millis(2));
            let h = hooks::acquired_after_wait(db, acq(1, Mode::Exclusive), w);
            let r = hooks::acquired(cache, acq(1, Mode::Shared));
            std::thread::sleep(Duration::from_millis(1));
            hooks::released(cache, r);
            hooks::released(db, h);
            let t = hooks::wait_begin(db, acq(1, Mode::Exclusive), true);
            hooks::wait_timed_out(db, t);
            let c = hooks::wait_begin(db, acq(1, Mode::Exclusive), false);
            hooks::wait_cancelled(db, c);
            std::thread::sleep(Duration::from_millis(5));
        }
    }));
    threads
}

/// Every `expr` of every panel target in the dashboard, with the panel's title.
fn dashboard_targets(dashboard: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut panels: Vec<&Value> = dashboard["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .collect();
    while let Some(p) = panels.pop() {
        if let Some(nested) = p["panels"].as_array() {
            panels.extend(nested);
        }
        for t in p["targets"].as_array().into_iter().flatten() {
            assert_eq!(
                t["datasource"]["uid"], "${datasource}",
                "{}: target data source",
                p["title"]
            );
            let expr = t["expr"].as_str().expect("a PromQL target");
            out.push((
                p["title"].as_str().unwrap_or("?").to_owned(),
                expr.to_owned(),
            ));
        }
    }
    out
}

fn substitute(expr: &str, instance: &str, lock: &str) -> String {
    expr.replace("$__rate_interval", "5s")
        .replace("$__range", "30s")
        .replace("$job", JOB)
        .replace("$instance", instance)
        .replace("$lock", lock)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboards_and_alerts_work_against_a_real_prometheus() {
    match Command::new("prometheus").arg("--version").output() {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            eprintln!(
                "SKIPPED: the `prometheus` binary is not installed (apt-get install prometheus); \
                 the dashboards were not checked against a real Prometheus"
            );
            return;
        }
        Err(e) => panic!("cannot run prometheus: {e}"),
    }
    let deadline = Instant::now() + DEADLINE;

    let stop = Arc::new(AtomicBool::new(false));
    // Stops the workload however the test ends.
    struct StopOnDrop(Arc<AtomicBool>);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let _stop_guard = StopOnDrop(stop.clone());
    let threads = workload(stop.clone());

    let server = lockscope_exporter::serve("127.0.0.1:0")
        .await
        .expect("exporter");
    let target = server.local_addr();
    let instance = target.to_string();
    let (prom_guard, prom) = start_prometheus(target).expect("start prometheus");

    // 1. Prometheus is up.
    let ready = poll(deadline, async || {
        matches!(http_get(prom, "/-/ready").await, Ok((200, _))).then_some(())
    })
    .await;
    assert!(
        ready.is_some(),
        "Prometheus never became ready; its log:\n{}",
        prom_guard.log()
    );

    // 2. The target is scraped and healthy.
    let health = poll(deadline, async || {
        let (_, body) = http_get(prom, "/api/v1/targets").await.ok()?;
        let json: Value = serde_json::from_str(&body).ok()?;
        let t = json["data"]["activeTargets"].as_array()?.first()?.clone();
        (t["health"] == "up").then_some(t)
    })
    .await;
    assert!(
        health.is_some(),
        "the exporter was never scraped successfully; log:\n{}",
        prom_guard.log()
    );

    // 3. Every panel target, variables substituted, is valid and returns data.
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_path("dashboards/grafana/lockscope.json"))
            .expect("dashboard"),
    )
    .expect("dashboard JSON");
    let targets = dashboard_targets(&dashboard);
    assert!(
        targets.len() >= 15,
        "only {} targets in the dashboard",
        targets.len()
    );
    let multi = format!("({})", LOCKS.join("|"));
    let mut checked = 0;
    for (title, raw) in &targets {
        for lock in [multi.as_str(), ".*"] {
            let expr = substitute(raw, &instance, lock);
            assert!(
                !expr.contains('$'),
                "{title}: unsubstituted variable in {expr}"
            );
            let mut last = String::new();
            let outcome = poll(deadline, async || match query(prom, &expr).await {
                Ok(QueryResult::Series(n)) if n > 0 => Some(Ok(n)),
                Ok(QueryResult::Series(_)) => {
                    last = "no series yet".into();
                    None
                }
                Ok(QueryResult::Invalid(e)) => Some(Err(e)),
                Err(e) => {
                    last = e.to_string();
                    None
                }
            })
            .await;
            match outcome {
                Some(Ok(_)) => checked += 1,
                Some(Err(e)) => panic!("panel {title:?}: invalid query\n  {expr}\n  {e}"),
                None => panic!("panel {title:?}: no data before the deadline ({last})\n  {expr}"),
            }
        }
    }
    println!(
        "{checked} panel queries ({} targets x 2 lock selections) returned data",
        targets.len()
    );

    // 4. The template variables' label_values() queries list the workload.
    for (label, matcher, want) in [
        ("job", "lockscope_findings_total".to_owned(), JOB.to_owned()),
        (
            "instance",
            format!("lockscope_findings_total{{job=~\"{JOB}\"}}"),
            instance.clone(),
        ),
        (
            "lock",
            format!("lockscope_acquisitions_total{{job=~\"{JOB}\", instance=~\"{instance}\"}}"),
            LOCKS[0].to_owned(),
        ),
    ] {
        let path = format!("/api/v1/label/{label}/values?match[]={}", encode(&matcher));
        let (status, body) = http_get(prom, &path).await.expect("label values");
        assert_eq!(status, 200, "{body}");
        let json: Value = serde_json::from_str(&body).unwrap();
        assert!(
            json["data"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v == &Value::from(want.as_str())),
            "variable {label}: {want} not in {body}"
        );
    }

    // 5. The alert rules are loaded and evaluate without error on real data.
    let expected = [
        "LockscopeDeadlock",
        "LockscopeStuckQueue",
        "LockscopePermitsExhausted",
        "LockscopeLeakedPermit",
        "LockscopeHighContention",
        "LockscopeFinding",
    ];
    let rules = poll(deadline, async || {
        let (_, body) = http_get(prom, "/api/v1/rules").await.ok()?;
        let json: Value = serde_json::from_str(&body).ok()?;
        let rules: Vec<Value> = json["data"]["groups"]
            .as_array()?
            .iter()
            .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
            .collect();
        // Evaluated at least once each ("unknown" before the first evaluation).
        rules
            .iter()
            .all(|r| r["health"] != "unknown")
            .then_some(rules)
    })
    .await
    .expect("the rules were loaded and evaluated");
    for name in expected {
        let r = rules
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("alert {name} not loaded: {rules:?}"));
        assert_eq!(r["type"], "alerting", "{name}");
        assert_eq!(r["health"], "ok", "{name}: {}", r["lastError"]);
    }
    assert_eq!(rules.len(), expected.len(), "{rules:?}");

    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("workload thread");
    }
    drop(prom_guard);
    server.shutdown().await;
}
