//! Proof against the real thing: a real Prometheus scrapes the real exporter, and every panel
//! query of the Grafana dashboard returns data; the alert rules load and evaluate cleanly.
//!
//! The workload uses `lockscope::tokio`'s named wrappers so that every metric family moves:
//! holds, contended waits, try failures, timeouts, cancellations, a semaphore with its
//! permits held and a waiter queued, a bounded channel whose sends and receives wait. `lockscope::exporter` serves it on a free port;
//! Prometheus (the `prometheus` binary, Debian's package in CI) scrapes it every second
//! with `dashboards/prometheus/alerts.yml` loaded.
//!
//! Without `prometheus` installed it fails with the line that installs it, unless
//! `LOCKSCOPE_SKIP_REAL=1` asks to skip (it then says so on stderr).

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lockscope::tokio::{Mutex, RwLock, Semaphore};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

const JOB: &str = "lockscope-e2e";
/// The locks the workload names; `$lock` is substituted with all of them, as Grafana writes
/// a multi-value selection, and then with `.*` (its "All").
const LOCKS: [&str; 3] = ["e2e/db", "e2e/pool", "e2e/cache"];
/// The channel the workload names (the channel panels draw every channel).
const CHANNEL: &str = "e2e/queue";
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
    /// A valid query: how many series it returned, and how many of them have a number
    /// (not NaN, as a quantile of empty buckets is).
    Series { series: usize, finite: usize },
}

async fn query(prom: SocketAddr, expr: &str) -> io::Result<QueryResult> {
    let (status, body) = http_get(prom, &format!("/api/v1/query?query={}", encode(expr))).await?;
    let json: Value = serde_json::from_str(&body)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{e}: {body}")))?;
    if status != 200 || json["status"] != "success" {
        return Ok(QueryResult::Invalid(format!("HTTP {status}: {body}")));
    }
    let result = json["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let finite = result
        .iter()
        .filter(|r| {
            r["value"][1]
                .as_str()
                .and_then(|v| v.parse::<f64>().ok())
                .is_some_and(f64::is_finite)
        })
        .count();
    Ok(QueryResult::Series {
        series: result.len(),
        finite,
    })
}

/// A service-like workload on `lockscope::tokio`'s wrappers that makes every family move,
/// until `stop` turns true: a mutex two tasks fight over (holds, contended waits, try
/// failures, timeouts, cancellations), an rwlock read under it, and a semaphore with every
/// permit held and one more caller queued (permits 0 of 4, a waiter, a growing oldest wait).
async fn workload(stop: watch::Receiver<bool>) -> Vec<tokio::task::JoinHandle<()>> {
    let db = Arc::new(Mutex::named(LOCKS[0], 0u64));
    let pool = Arc::new(Semaphore::named(LOCKS[1], 4));
    let cache = Arc::new(RwLock::named(LOCKS[2], String::from("warm")));
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let mut tasks = Vec::new();

    let (held_tx, held_rx) = tokio::sync::oneshot::channel();
    tasks.push(tokio::spawn({
        let (pool, stop) = (pool.clone(), stop.clone());
        async move {
            let _all = pool.acquire_many(4).await.expect("open semaphore");
            let _ = held_tx.send(());
            stopped(stop).await;
        }
    }));
    held_rx.await.expect("the pool holder started");
    tasks.push(tokio::spawn({
        let (pool, stop) = (pool.clone(), stop.clone());
        let ended = stop.clone();
        async move {
            // Queued until the end, then cancelled by the select. Both branches can be ready
            // together at the end (the holder lets its permits go once `stop` is true, and
            // tokio's cooperative budgeting may defer the watch), so a grant is a failure
            // only while `stop` is still false.
            tokio::select! {
                biased;
                () = stopped(stop) => {}
                _ = pool.acquire() => {
                    assert!(*ended.borrow(), "a permit of the pool freed up before the end");
                }
            }
        }
    }));
    // Holds the mutex 2 ms out of every 3.
    tasks.push(tokio::spawn({
        let (db, stop) = (db.clone(), stop.clone());
        async move {
            while !*stop.borrow() {
                let mut g = db.lock().await;
                *g += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
                drop(g);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    }));
    // A bounded channel fed in bursts of twice its capacity: the fifth send of a burst waits
    // for the consumer, and between bursts the consumer waits for a message, so both wait
    // histograms move all the time.
    let (tx, mut rx) = lockscope::tokio::mpsc::channel_named::<u64>(CHANNEL, 4);
    tasks.push(tokio::spawn({
        let stop = stop.clone();
        async move {
            let mut i = 0;
            while !*stop.borrow() {
                for _ in 0..8 {
                    tx.send(i)
                        .await
                        .expect("the consumer outlives the producer");
                    i += 1;
                }
                // Longer than the consumer takes to drain a full channel.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }));
    // Ends when the producer does (its sender dropped).
    tasks.push(tokio::spawn(async move {
        while rx.recv().await.is_some() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }));
    // Contends for it, and gives up on it in every way there is.
    tasks.push(tokio::spawn(async move {
        while !*stop.borrow() {
            {
                let g = db.lock().await;
                let r = cache.read().await;
                std::hint::black_box((*g, r.len()));
            }
            if let Ok(g) = db.try_lock() {
                drop(g);
            }
            if let Ok(g) = db.lock_timeout(Duration::from_micros(500)).await {
                drop(g);
            }
            let _ = tokio::time::timeout(Duration::from_micros(500), db.lock()).await;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }));
    tasks
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

fn substitute(expr: &str, instance: &str, lock: &str, top: usize) -> String {
    expr.replace("$__rate_interval", "5s")
        .replace("$top", &top.to_string())
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
            const MISSING: &str = "the `prometheus` binary is not installed, so the dashboards \
                and alerts were not checked against a real Prometheus; install it with \
                `sudo apt-get install -y prometheus` (scripts/test does), or set \
                LOCKSCOPE_SKIP_REAL=1 to skip this test";
            if std::env::var_os("LOCKSCOPE_SKIP_REAL").is_some_and(|v| v == "1") {
                eprintln!("SKIPPED (LOCKSCOPE_SKIP_REAL=1): {MISSING}");
                return;
            }
            panic!("{MISSING}");
        }
        Err(e) => panic!("cannot run prometheus: {e}"),
    }
    let deadline = Instant::now() + DEADLINE;

    // The workload's tasks end with the runtime however the test ends; `stop` ends them
    // first on success.
    let (stop, stop_rx) = watch::channel(false);
    let tasks = workload(stop_rx).await;

    let server = lockscope::exporter::serve("127.0.0.1:0")
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
            let expr = substitute(raw, &instance, lock, 10);
            assert!(
                !expr.contains('$'),
                "{title}: unsubstituted variable in {expr}"
            );
            let mut last = String::new();
            let outcome = poll(deadline, async || match query(prom, &expr).await {
                Ok(QueryResult::Series { series, finite }) if finite > 0 => Some(Ok(series)),
                Ok(QueryResult::Series { series, .. }) => {
                    last = format!("{series} series, none with a number yet");
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

    // 3b. The per-lock panels draw at most `$top` locks: with `$top` at 1, one series each
    // (the workload has three locks with data in every measure).
    let mut limited = 0;
    for (title, raw) in targets.iter().filter(|(_, e)| e.contains("$top")) {
        let expr = substitute(raw, &instance, ".*", 1);
        match query(prom, &expr).await.expect("query") {
            QueryResult::Series { series, .. } => assert!(
                series <= 1,
                "panel {title:?}: {series} series with $top = 1\n  {expr}"
            ),
            QueryResult::Invalid(e) => panic!("panel {title:?}: invalid query\n  {expr}\n  {e}"),
        }
        limited += 1;
    }
    assert!(limited >= 10, "only {limited} targets use $top");

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
        "LockscopeExporterDown",
        "LockscopeExporterAbsent",
        "LockscopeDetectorDropping",
        "LockscopeLabelCapHit",
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

    stop.send_replace(true);
    for t in tasks {
        t.await.expect("workload task");
    }
    drop(prom_guard);
    server.shutdown().await;
}
