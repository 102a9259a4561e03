//! Load and abuse on loopback: 200 concurrent clients plus malformed and slow ones, bounded
//! in count and time; the server must stay up and answer correctly afterwards.

mod common;

use std::net::SocketAddr;
use std::panic::Location;
use std::time::{Duration, Instant};

use common::{exchange, get, parse};
use lockscope_detector::__private::prim::{PrimCell, PrimKind};
use lockscope_exporter::ServeOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const CLIENTS: usize = 200;
const REQUESTS_PER_CLIENT: usize = 5;
const HEADER_READ_TIMEOUT: Duration = Duration::from_millis(800);
/// The whole test, every phase, must finish within this.
const TEST_LIMIT: Duration = Duration::from_secs(60);

const PATHS: [(&str, &str); 5] = [
    ("/metrics", "text/plain; version=0.0.4; charset=utf-8"),
    ("/debug/findings", "application/json"),
    ("/debug/locks", "application/json"),
    ("/debug/graph", "application/json"),
    (
        "/debug/graph?format=dot",
        "text/vnd.graphviz; charset=utf-8",
    ),
];

async fn well_behaved_client(addr: SocketAddr, id: usize) {
    for i in 0..REQUESTS_PER_CLIENT {
        let (path, content_type) = PATHS[(id + i) % PATHS.len()];
        let r = get(addr, path).await;
        assert_eq!(r.status, 200, "client {id}: {path}");
        assert_eq!(
            r.header("content-type"),
            Some(content_type),
            "client {id}: {path}"
        );
        if path == "/metrics" {
            assert!(
                r.text()
                    .contains("lockscope_waiters{lock=\"load/sem\",kind=\"semaphore\"} 0\n")
            );
        }
    }
}

/// Status code of the response the server sent before closing, if any.
fn status_of(bytes: &[u8]) -> Option<u16> {
    parse(bytes, true).map(|r| r.status)
}

async fn malformed(addr: SocketAddr) {
    // Bad paths and methods.
    for (raw, status) in [
        (&b"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"[..], 404),
        (b"GET //metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 404),
        (b"GET /%6detrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 404),
        (b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello", 405),
        (b"BREW /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405),
        // A body announced but never sent: the GET is answered without reading it.
        (b"GET /debug/findings HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n", 200),
    ] {
        let out = exchange(addr, raw).await.expect("answered and closed");
        assert_eq!(status_of(&out), Some(status), "{:?}", String::from_utf8_lossy(raw));
    }

    // A huge header (64 KiB, over the 16 KiB cap): 431 and closed, whether the server
    // answers before or after the client has finished sending.
    let mut huge = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Huge: ".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 64 * 1024));
    huge.extend_from_slice(b"\r\n\r\n");
    let out = exchange_tolerating_reset(addr, &huge).await;
    assert_eq!(status_of(&out), Some(431), "huge header");

    // Too many headers.
    let mut many = b"GET /metrics HTTP/1.1\r\nHost: x\r\n".to_vec();
    for i in 0..200 {
        many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    let out = exchange_tolerating_reset(addr, &many).await;
    assert_eq!(status_of(&out), Some(431), "too many headers");

    // Garbage, an HTTP/2 preface, a request line without a version, a truncated request.
    for raw in [
        &b"\x00\x01\x02\xff\xfe garbage \r\n\r\n"[..],
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        b"GET /metrics\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nHost",
    ] {
        let start = Instant::now();
        let out = exchange_tolerating_reset(addr, raw).await;
        // Either an error status or a plain close; never a 200, never a hang.
        if let Some(status) = status_of(&out) {
            assert!(
                (400..500).contains(&status) || status == 505,
                "{raw:?}: {status}"
            );
        }
        assert!(
            start.elapsed() < HEADER_READ_TIMEOUT * 4,
            "{raw:?} held the connection"
        );
    }
}

/// Like `exchange`, but a reset (the server closing while we still write) counts as an
/// empty answer; and it half-closes after writing so truncated requests end.
async fn exchange_tolerating_reset(addr: SocketAddr, raw: &[u8]) -> Vec<u8> {
    tokio::time::timeout(common::EXCHANGE_TIMEOUT, async {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let _ = s.write_all(raw).await;
        let _ = s.shutdown().await;
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
        out
    })
    .await
    .expect("the server answers or closes")
}

/// Sends a request head one byte every `gap`; returns what came back and when the server
/// closed.
async fn trickle(addr: SocketAddr, raw: &[u8], gap: Duration) -> (Vec<u8>, Duration) {
    let start = Instant::now();
    let mut s = TcpStream::connect(addr).await.unwrap();
    for b in raw {
        if s.write_all(&[*b]).await.is_err() {
            break;
        }
        tokio::time::sleep(gap).await;
    }
    let mut out = Vec::new();
    let _ = tokio::time::timeout(common::EXCHANGE_TIMEOUT, s.read_to_end(&mut out)).await;
    (out, start.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_survives_load_and_abuse() {
    let _sem = PrimCell::new(
        Some("load/sem".into()),
        PrimKind::Semaphore,
        Location::caller(),
        2,
    );
    let server = ServeOptions::new()
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr();

    tokio::time::timeout(TEST_LIMIT, async {
        // Slow clients start first and stay through the load.
        // 1. Too slow: 200 bytes of head at 20 ms a byte (4 s) against a 0.8 s limit.
        let mut slow_head = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: ".to_vec();
        slow_head.extend(std::iter::repeat_n(b'p', 160));
        slow_head.extend_from_slice(b"\r\n\r\n");
        let too_slow = tokio::spawn(trickle(
            addr,
            &slow_head.clone().leak()[..],
            Duration::from_millis(20),
        ));
        // 2. Slow but within the limit: a 44-byte head at 2 ms a byte (90 ms, a ninth of the
        //    limit, so that timer delays under load cannot push it over) is served.
        let slow_ok = tokio::spawn(trickle(
            addr,
            b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n",
            Duration::from_millis(2),
        ));
        // 3. Connects and never sends a byte.
        let silent = tokio::spawn(async move {
            let start = Instant::now();
            let mut s = TcpStream::connect(addr).await.unwrap();
            let mut out = Vec::new();
            let _ = tokio::time::timeout(common::EXCHANGE_TIMEOUT, s.read_to_end(&mut out)).await;
            start.elapsed()
        });

        // 200 concurrent well-behaved clients, 5 requests each, with malformed traffic
        // interleaved.
        let start = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for id in 0..CLIENTS {
            tasks.spawn(well_behaved_client(addr, id));
        }
        for _ in 0..4 {
            tasks.spawn(malformed(addr));
        }
        while let Some(r) = tasks.join_next().await {
            r.expect("a client failed");
        }
        println!(
            "{CLIENTS} clients x {REQUESTS_PER_CLIENT} requests + malformed traffic: {:?}",
            start.elapsed()
        );

        let (out, took) = too_slow.await.unwrap();
        // hyper answers a head timeout with 408 or just closes; either way, within bounds.
        if let Some(status) = status_of(&out) {
            assert_eq!(status, 408, "{}", String::from_utf8_lossy(&out));
        }
        println!("too-slow client: {:?} after {took:?}", status_of(&out));
        // Cut off at the head timeout, well before its 4 s of trickling would end.
        assert!(
            took < Duration::from_secs(3),
            "the slow client was cut off after {took:?}"
        );
        assert!(
            !String::from_utf8_lossy(&out).contains("200 OK"),
            "the too-slow client was served"
        );

        let (out, _) = slow_ok.await.unwrap();
        assert_eq!(
            status_of(&out),
            Some(200),
            "{}",
            String::from_utf8_lossy(&out)
        );

        let took = silent.await.unwrap();
        assert!(
            took >= HEADER_READ_TIMEOUT && took < HEADER_READ_TIMEOUT * 4,
            "silent client held {took:?}"
        );

        // Still up, still correct.
        let r = get(addr, "/metrics").await;
        assert_eq!(r.status, 200);
        assert!(
            r.text()
                .contains("lockscope_permits_capacity{lock=\"load/sem\"} 2\n")
        );
        assert!(get(addr, "/debug/findings").await.json().is_array());
    })
    .await
    .expect("load test finished within its limit");

    server.shutdown().await;
}
