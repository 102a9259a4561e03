//! A tiny HTTP/1.1 client over raw `TcpStream`s: the tests need to send malformed requests
//! anyway, and it keeps an HTTP client crate out of the dev-dependencies.
#![allow(dead_code)]

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest any one exchange may take before the test fails.
pub const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(20);

/// A parsed response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.body).expect("UTF-8 body")
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }
}

/// Sends `raw` on a fresh connection and reads until the server closes it.
pub async fn exchange(addr: SocketAddr, raw: &[u8]) -> io::Result<Vec<u8>> {
    tokio::time::timeout(EXCHANGE_TIMEOUT, async {
        let mut s = TcpStream::connect(addr).await?;
        s.write_all(raw).await?;
        let mut out = Vec::new();
        s.read_to_end(&mut out).await?;
        Ok(out)
    })
    .await
    .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "exchange timed out"))?
}

/// `GET path` with `Connection: close`.
pub async fn get(addr: SocketAddr, path: &str) -> Response {
    request(addr, "GET", path).await
}

/// `method path` with `Connection: close`.
pub async fn request(addr: SocketAddr, method: &str, path: &str) -> Response {
    request_with(addr, method, path, "").await
}

/// `method path` with `Connection: close` and the `extra` header lines (each ending `\r\n`).
pub async fn request_with(addr: SocketAddr, method: &str, path: &str, extra: &str) -> Response {
    let raw = format!(
        "{method} {path} HTTP/1.1\r\nHost: lockscope.test\r\nConnection: close\r\n{extra}\r\n"
    );
    let bytes = exchange(addr, raw.as_bytes())
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    parse(&bytes, method == "HEAD").unwrap_or_else(|| {
        panic!(
            "{method} {path}: unparsable response {:?}",
            String::from_utf8_lossy(&bytes)
        )
    })
}

/// Parses one response (`Content-Length` or chunked body).
pub fn parse(bytes: &[u8], head_only: bool) -> Option<Response> {
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&bytes[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let mut parts = status_line.splitn(3, ' ');
    if parts.next()? != "HTTP/1.1" {
        return None;
    }
    let status: u16 = parts.next()?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':')?;
            Some((n.trim().to_owned(), v.trim().to_owned()))
        })
        .collect::<Option<_>>()?;
    let mut r = Response {
        status,
        headers,
        body: Vec::new(),
    };
    let rest = &bytes[end + 4..];
    if head_only {
        return Some(r);
    }
    if let Some(len) = r.header("content-length") {
        let len: usize = len.parse().ok()?;
        if rest.len() < len {
            return None;
        }
        r.body = rest[..len].to_vec();
    } else if r.header("transfer-encoding") == Some("chunked") {
        r.body = dechunk(rest)?;
    } else {
        r.body = rest.to_vec();
    }
    Some(r)
}

fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size =
            usize::from_str_radix(std::str::from_utf8(&rest[..line_end]).ok()?.trim(), 16).ok()?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

/// Polls `f` every 10 ms until it returns `Some`, failing the test after `limit`.
pub async fn eventually<T>(
    what: &str,
    limit: Duration,
    mut f: impl AsyncFnMut() -> Option<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// API.md's metric table, copied by hand: `(family, type)`.
pub const API_MD_FAMILIES: &[(&str, &str)] = &[
    ("lockscope_acquisitions_total", "counter"),
    ("lockscope_contended_acquisitions_total", "counter"),
    ("lockscope_try_failures_total", "counter"),
    ("lockscope_timeouts_total", "counter"),
    ("lockscope_cancelled_total", "counter"),
    ("lockscope_wait_seconds", "histogram"),
    ("lockscope_hold_seconds", "histogram"),
    ("lockscope_waiters", "gauge"),
    ("lockscope_oldest_wait_seconds", "gauge"),
    ("lockscope_holders", "gauge"),
    ("lockscope_permits_available", "gauge"),
    ("lockscope_permits_capacity", "gauge"),
    ("lockscope_findings_total", "counter"),
    ("lockscope_active_findings", "gauge"),
    ("lockscope_dropped_series_total", "counter"),
    ("lockscope_detector_dropped_total", "counter"),
    ("lockscope_live_primitives", "gauge"),
    ("lockscope_watchdog_ticks_total", "counter"),
    ("lockscope_build_info", "gauge"),
    ("lockscope_channel_depth", "gauge"),
    ("lockscope_channel_capacity", "gauge"),
    ("lockscope_channel_send_wait_seconds", "histogram"),
    ("lockscope_channel_recv_wait_seconds", "histogram"),
];

/// Runs `promtool check metrics` (Prometheus's own parser and linter) on `text`, with no
/// lint allowed. Without promtool the test fails with the line that installs it, unless
/// `LOCKSCOPE_SKIP_REAL=1` asks to skip (then it says so loudly on stderr).
pub fn promtool_check_metrics(text: &str) {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            const MISSING: &str = "promtool is not installed, so the /metrics text was not \
                checked by Prometheus's own linter; install it with \
                `sudo apt-get install -y prometheus` (scripts/test does), or set \
                LOCKSCOPE_SKIP_REAL=1 to skip this check";
            if std::env::var_os("LOCKSCOPE_SKIP_REAL").is_some_and(|v| v == "1") {
                eprintln!("SKIPPED (LOCKSCOPE_SKIP_REAL=1): {MISSING}");
                return;
            }
            panic!("{MISSING}");
        }
        Err(e) => panic!("cannot run promtool: {e}"),
    };
    // UNWRAP: stdin was piped above.
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .expect("write to promtool");
    let out = child.wait_with_output().expect("promtool runs");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Exit 1: the text does not parse. Exit 3: lint findings. Both fail.
    assert!(
        out.status.success(),
        "promtool check metrics failed ({}):\n{report}",
        out.status
    );
}
