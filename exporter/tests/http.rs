//! The server over real HTTP on loopback: endpoints, content types, errors, shutdown.

mod common;

use std::panic::Location;
use std::time::Duration;

use common::{get, request, request_with};
use lockscope_detector::__private::hooks::{self, Acq, Mode};
use lockscope_detector::__private::prim::{PrimCell, PrimKind};
use lockscope_exporter::{ServeErrorKind, ServeOptions};

#[tokio::test]
async fn metrics_over_http() {
    let server = lockscope_exporter::serve("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr();
    assert!(addr.ip().is_loopback());
    assert_ne!(addr.port(), 0);

    let s = PrimCell::new(
        Some("http/sem".into()),
        PrimKind::Semaphore,
        Location::caller(),
        3,
    );
    let r = get(addr, "/metrics").await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    // Not asked for gzip: plain text.
    assert_eq!(r.header("content-encoding"), None);
    assert!(
        r.text()
            .contains("lockscope_permits_capacity{lock=\"http/sem\"} 3\n"),
        "{}",
        r.text()
    );
    for (name, kind) in common::API_MD_FAMILIES {
        assert!(
            r.text().contains(&format!("# TYPE {name} {kind}\n")),
            "{name}"
        );
    }
    drop(s);
    server.shutdown().await;
}

/// Prometheus sends `Accept-Encoding: gzip`; the answer is then gzip-compressed, and
/// decompresses to the same text format.
#[tokio::test]
async fn metrics_are_gzipped_when_the_scraper_asks() {
    use std::io::Read as _;

    let server = lockscope_exporter::serve("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr();
    let s = PrimCell::new(
        Some("http/gzip".into()),
        PrimKind::Semaphore,
        Location::caller(),
        5,
    );
    let r = request_with(addr, "GET", "/metrics", "Accept-Encoding: gzip\r\n").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(
        r.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert!(
        r.body.starts_with(&[0x1f, 0x8b]),
        "not a gzip stream: {:?}",
        &r.body[..r.body.len().min(16)]
    );
    let mut text = String::new();
    flate2::read::GzDecoder::new(&r.body[..])
        .read_to_string(&mut text)
        .expect("a valid gzip stream of UTF-8 text");
    assert!(
        text.contains("lockscope_permits_capacity{lock=\"http/gzip\"} 5\n"),
        "{text}"
    );
    for (name, kind) in common::API_MD_FAMILIES {
        assert!(text.contains(&format!("# TYPE {name} {kind}\n")), "{name}");
    }
    assert!(
        r.body.len() * 3 < text.len(),
        "gzip saved little: {} bytes for {} of text",
        r.body.len(),
        text.len()
    );
    // An encoding the exporter does not offer gets plain text.
    let r = request_with(addr, "GET", "/metrics", "Accept-Encoding: br\r\n").await;
    assert_eq!(r.header("content-encoding"), None);
    assert!(
        r.text()
            .contains("lockscope_permits_capacity{lock=\"http/gzip\"} 5\n")
    );
    drop(s);
    server.shutdown().await;
}

/// Held by the tests that compare two reads of the whole graph and by those that change it
/// meanwhile (tests run at once, and the detector's state is the process's).
static GRAPH: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn debug_endpoints_are_json_and_dot() {
    let _graph = GRAPH.lock().await;
    let server = lockscope_exporter::serve("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr();
    let m = PrimCell::new(
        Some("http/held".into()),
        PrimKind::Mutex,
        Location::caller(),
        1,
    );
    let hold = hooks::acquired::<hooks::Threads>(
        m.get(),
        Acq::new(Location::caller(), 1, Mode::Exclusive),
    );

    let r = get(addr, "/debug/locks").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let locks = r.json();
    let mine = locks
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "http/held")
        .expect("the held mutex is listed");
    assert_eq!(mine["kind"], "mutex");
    assert_eq!(mine["holders"].as_array().unwrap().len(), 1);
    assert!(
        mine["holders"][0]["site"]
            .as_str()
            .unwrap()
            .contains("http.rs")
    );

    let r = get(addr, "/debug/findings").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let findings = r.json();
    for f in findings.as_array().expect("a JSON array") {
        assert!(f["kind"].is_string(), "{f}");
    }

    let r = get(addr, "/debug/graph").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let g = r.json();
    assert!(
        g["wait_for_nodes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["kind"] == "lock" && n["label"].as_str().unwrap().contains("http/held"))
    );
    assert!(g["lock_order"].is_array());
    assert_eq!(
        get(addr, "/debug/graph?format=json").await.json(),
        get(addr, "/debug/graph").await.json()
    );

    let r = get(addr, "/debug/graph?format=dot").await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("text/vnd.graphviz; charset=utf-8")
    );
    assert!(r.text().starts_with("digraph lockscope {"), "{}", r.text());
    assert!(r.text().contains("http/held"));

    let r = get(addr, "/debug/graph?format=svg").await;
    assert_eq!(r.status, 400);
    assert!(r.text().contains("format=dot"));

    hooks::released(m.get(), hold);
    server.shutdown().await;
}

#[tokio::test]
async fn unknown_paths_404_and_wrong_methods_405() {
    let server = lockscope_exporter::serve("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr();
    for path in [
        "/nope",
        "/metrics/",
        "/metrics/x",
        "/debug",
        "/debug/",
        "/Metrics",
        "/debug/locks/1",
    ] {
        let r = get(addr, path).await;
        assert_eq!(r.status, 404, "{path}");
        assert!(
            r.text().contains("/metrics"),
            "{path}: the 404 names the endpoints"
        );
    }
    for method in ["POST", "PUT", "DELETE", "PATCH"] {
        for path in [
            "/",
            "/metrics",
            "/debug/findings",
            "/debug/locks",
            "/debug/graph",
            "/debug/report",
            "/debug/status",
        ] {
            let r = request(addr, method, path).await;
            assert_eq!(r.status, 405, "{method} {path}");
            assert!(
                r.header("allow").unwrap().contains("GET"),
                "{method} {path}"
            );
        }
    }
    let r = request(addr, "HEAD", "/metrics").await;
    assert_eq!(r.status, 200);
    server.shutdown().await;
}

#[tokio::test]
async fn keep_alive_serves_several_requests_on_one_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = lockscope_exporter::serve("127.0.0.1:0").await.unwrap();
    let mut s = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    s.write_all(
        b"GET /debug/findings HTTP/1.1\r\nHost: x\r\n\r\nGET /debug/locks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    let mut all = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut all))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&all);
    assert_eq!(text.matches("HTTP/1.1 200 OK\r\n").count(), 2, "{text}");
    server.shutdown().await;
}

#[tokio::test]
async fn bad_addresses_are_errors() {
    for addr in [
        "",
        "nonsense",
        "127.0.0.1",
        "127.0.0.1:99999",
        ":9464",
        "127.0.0.1:port",
        "[::1",
        "a b:80",
    ] {
        let err = lockscope_exporter::serve(addr)
            .await
            .err()
            .unwrap_or_else(|| panic!("{addr:?} accepted"));
        assert_eq!(
            err.kind(),
            ServeErrorKind::InvalidAddress,
            "{addr:?}: {err}"
        );
        assert_eq!(err.address(), addr);
        assert_eq!(
            err.to_string(),
            format!("invalid address {addr:?}: expected host:port, such as 127.0.0.1:9464")
        );
    }
}

#[tokio::test]
async fn a_busy_port_is_an_error() {
    let first = lockscope_exporter::serve("127.0.0.1:0").await.unwrap();
    let addr = first.local_addr().to_string();
    let err = lockscope_exporter::serve(&addr).await.unwrap_err();
    assert_eq!(err.kind(), ServeErrorKind::AddressInUse);
    assert_eq!(err.to_string(), format!("address {addr} is already in use"));
    assert!(std::error::Error::source(&err).is_some());
    // The first server is unharmed.
    assert_eq!(get(first.local_addr(), "/metrics").await.status, 200);
    first.shutdown().await;
}

#[tokio::test]
async fn a_host_name_resolves() {
    let server = lockscope_exporter::serve("localhost:0").await.unwrap();
    assert!(server.local_addr().ip().is_loopback());
    assert_eq!(get(server.local_addr(), "/metrics").await.status, 200);
    server.shutdown().await;
}

#[test]
fn outside_a_runtime_is_an_error() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let mut fut = std::pin::pin!(lockscope_exporter::serve("127.0.0.1:0"));
    let mut cx = Context::from_waker(Waker::noop());
    let Poll::Ready(Err(err)) = fut.as_mut().poll(&mut cx) else {
        panic!("serve outside a runtime did not fail at once");
    };
    assert_eq!(err.kind(), ServeErrorKind::NoRuntime);
    assert_eq!(
        err.to_string(),
        "lockscope exporter must be started from within a tokio runtime"
    );
}

#[tokio::test]
async fn shutdown_closes_idle_connections_and_frees_the_port() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = ServeOptions::new().serve("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr();
    // An idle kept-alive connection must not hold shutdown up.
    let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
    idle.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 64];
    let n = idle.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200 OK"));

    tokio::time::timeout(Duration::from_secs(4), server.shutdown())
        .await
        .expect("shutdown with an idle keep-alive connection returns within the grace");
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "still listening"
    );
    // The port can be bound again at once.
    let again = lockscope_exporter::serve(&addr.to_string()).await.unwrap();
    again.shutdown().await;
}

#[tokio::test]
async fn the_router_mounts_in_a_user_app() {
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt as _;
    let app = axum::Router::new()
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .merge(lockscope_exporter::router());
    let r = app
        .clone()
        .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = app
        .oneshot(Request::get("/healthz").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn the_collector_registers_in_a_user_registry() {
    use lockscope_exporter::prometheus::{Encoder as _, IntCounter, Registry, TextEncoder};
    let registry = Registry::new();
    let mine = IntCounter::new("app_requests_total", "Requests.").unwrap();
    registry.register(Box::new(mine.clone())).unwrap();
    registry
        .register(Box::new(lockscope_exporter::LockscopeCollector::new()))
        .unwrap();
    // Registering it twice is refused (duplicate descriptors), not a panic.
    assert!(
        registry
            .register(Box::new(lockscope_exporter::LockscopeCollector::new()))
            .is_err()
    );
    mine.inc();
    let mut out = Vec::new();
    TextEncoder::new()
        .encode(&registry.gather(), &mut out)
        .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("app_requests_total 1\n"));
    assert!(text.contains("lockscope_findings_total{kind=\"deadlock\"} 0\n"));
}

#[tokio::test]
async fn shutdown_is_bounded_by_the_grace_when_a_client_stalls() {
    use tokio::io::AsyncWriteExt;
    let server = ServeOptions::new()
        .shutdown_grace(Duration::from_millis(300))
        .serve("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr();
    // Half a request head, then nothing: the connection is mid-request at shutdown.
    let mut stalled = tokio::net::TcpStream::connect(addr).await.unwrap();
    stalled
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Half: ")
        .await
        .unwrap();
    // Make sure the server has accepted it before shutting down.
    assert_eq!(get(addr, "/debug/findings").await.status, 200);
    let start = std::time::Instant::now();
    server.shutdown().await;
    let took = start.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "shutdown took {took:?} with a 300 ms grace"
    );
}

/// `?limit=N` on `/debug/locks` and `/debug/graph`: at most `N` holders and waiters listed per
/// primitive, the totals and the oldest wait still whole, and in the graph every edge of an
/// actor that holds and waits (only those can close a cycle) drawn whatever the limit.
#[tokio::test]
async fn a_limit_bounds_the_listings_but_not_the_counts_or_a_cycle() {
    use std::sync::{Arc, Barrier, mpsc};

    let _graph = GRAPH.lock().await;

    let server = lockscope_exporter::serve("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr();
    let cell = |name: &str, kind, capacity| {
        Arc::new(PrimCell::new(
            Some(name.into()),
            kind,
            Location::caller(),
            capacity,
        ))
    };
    let sem = cell("limit/sem", PrimKind::Semaphore, 1);
    let held = cell("limit/held", PrimKind::Mutex, 1);
    let acq = || Acq::new(Location::caller(), 1, Mode::Exclusive);
    let sem_hold = hooks::acquired::<hooks::Threads>(sem.get(), acq());

    // Four threads wait on the semaphore in turn; the last holds the mutex while it waits.
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let done_rx = Arc::new(std::sync::Mutex::new(done_rx));
    let mut threads = Vec::new();
    for i in 0..4 {
        let (sem, held, done_rx) = (sem.clone(), held.clone(), done_rx.clone());
        let queued = Arc::new(Barrier::new(2));
        let q = queued.clone();
        threads.push(std::thread::spawn(move || {
            let hold = (i == 3).then(|| hooks::acquired::<hooks::Threads>(held.get(), acq()));
            let w = hooks::wait_begin(sem.get(), acq(), false);
            q.wait();
            // Err: the test failed and is unwinding; end the wait all the same.
            let _ = done_rx.lock().unwrap().recv();
            hooks::wait_failed(sem.get(), w);
            if let Some(hold) = hold {
                hooks::released(held.get(), hold);
            }
        }));
        queued.wait();
    }

    let find = |locks: &serde_json::Value, name: &str| {
        locks
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} is listed"))
    };
    let all = find(&get(addr, "/debug/locks").await.json(), "limit/sem");
    assert_eq!(all["waiters"].as_array().unwrap().len(), 4, "{all}");
    assert_eq!(
        (all["waiters_total"].as_u64(), all["holders_total"].as_u64()),
        (Some(4), Some(1))
    );
    let r = get(addr, "/debug/locks?limit=1").await;
    assert_eq!(r.status, 200);
    let one = find(&r.json(), "limit/sem");
    assert_eq!(one["waiters"].as_array().unwrap().len(), 1, "{one}");
    assert_eq!(
        one["waiters"][0]["actor_id"], all["waiters"][0]["actor_id"],
        "the head of the queue is listed"
    );
    assert_eq!(
        (one["waiters_total"].as_u64(), one["holders_total"].as_u64()),
        (Some(4), Some(1))
    );
    assert!(one["oldest_wait_ms"].as_u64().is_some(), "{one}");
    let none = find(&get(addr, "/debug/locks?limit=0").await.json(), "limit/sem");
    assert!(
        none["waiters"].as_array().unwrap().is_empty()
            && none["holders"].as_array().unwrap().is_empty()
    );
    assert_eq!(none["waiters_total"].as_u64(), Some(4));

    // The graph: one plain waiter of the four, and the one that holds the mutex.
    let g = get(addr, "/debug/graph?limit=1").await.json();
    let node = g["wait_for_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["label"].as_str().unwrap().contains("limit/sem"))
        .cloned()
        .expect("the semaphore's node");
    assert_eq!(node["waiters_total"].as_u64(), Some(4), "{node}");
    let to_sem: Vec<_> = g["wait_for_edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["to"] == node["id"] && e["relation"] == "waits")
        .cloned()
        .collect();
    assert_eq!(to_sem.len(), 2, "{to_sem:?}");
    let holder_of_mutex = g["wait_for_edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            e["relation"] == "held_by"
                && g["wait_for_nodes"].as_array().unwrap().iter().any(|n| {
                    n["id"] == e["from"] && n["label"].as_str().unwrap().contains("limit/held")
                })
        })
        .map(|e| e["to"].clone())
        .expect("the mutex's holder");
    assert!(
        to_sem.iter().any(|e| e["from"] == holder_of_mutex),
        "{to_sem:?}"
    );
    assert!(
        get(addr, "/debug/graph?limit=1&format=dot")
            .await
            .text()
            .starts_with("digraph lockscope {")
    );

    for bad in ["/debug/locks?limit=some", "/debug/graph?limit=-1"] {
        let r = get(addr, bad).await;
        assert_eq!(r.status, 400, "{bad}");
        assert!(
            r.text().contains("limit must be a whole number"),
            "{bad}: {}",
            r.text()
        );
    }

    for _ in &threads {
        done_tx.send(()).unwrap();
    }
    for t in threads {
        t.join().unwrap();
    }
    hooks::released(sem.get(), sem_hold);
    server.shutdown().await;
}
