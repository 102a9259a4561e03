//! Headless Chromium driven over WebDriver, with nothing but `std`: chromedriver is a child
//! process speaking JSON over HTTP on loopback, and a dozen commands are all a test needs.
//!
//! Every exchange has a socket timeout, every wait a deadline, and [`Browser`]'s `Drop` ends
//! the session (Chromium exits) and then kills chromedriver's process group, panics included.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The Debian packages that provide the browser and its driver.
pub const INSTALL: &str = "apt-get install -y chromium chromium-driver";
/// Set to `1` to skip browser tests on a machine without Chromium (they fail otherwise).
pub const SKIP_VAR: &str = "LOCKSCOPE_SKIP_BROWSER";

/// Longest any one WebDriver command may take (starting the browser included).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(20);

/// `chromium` and `chromedriver` on `PATH`, or why not.
fn find(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

/// What to run, or `None` after printing loudly that the test is skipped on purpose.
///
/// # Panics
///
/// When Chromium or chromedriver is missing and [`SKIP_VAR`] is not `1`: the failure says how
/// to install them.
pub fn locate() -> Option<(PathBuf, PathBuf)> {
    if std::env::var(SKIP_VAR).as_deref() == Ok("1") {
        // Straight to the stream, past the test harness's capture: a skip must be seen.
        let _ = writeln!(
            std::io::stderr().lock(),
            "\n*** SKIPPED: {SKIP_VAR}=1, the live view was NOT checked in a browser. ***\n"
        );
        return None;
    }
    let browser = find(&["chromium", "chromium-browser", "google-chrome"]);
    let driver = find(&["chromedriver"]);
    match (browser, driver) {
        (Some(b), Some(d)) => Some((b, d)),
        (b, d) => panic!(
            "this test drives headless Chromium, but {} not on PATH.\n\
             Install them with:\n    {INSTALL}\n\
             (or set {SKIP_VAR}=1 to skip the browser tests on purpose)",
            match (b, d) {
                (None, None) => "chromium and chromedriver are",
                (None, Some(_)) => "chromium is",
                _ => "chromedriver is",
            }
        ),
    }
}

/// A headless Chromium session, ended on drop.
pub struct Browser {
    driver: Child,
    addr: SocketAddr,
    session: String,
}

impl Browser {
    /// Starts chromedriver on a free port and a headless Chromium at `width` x `height`,
    /// with its profile under `profile_dir`.
    pub fn start(
        chromium: &Path,
        chromedriver: &Path,
        profile_dir: &Path,
        width: u32,
        height: u32,
    ) -> Browser {
        let mut driver = Command::new(chromedriver)
            .arg("--port=0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            // Its own process group: the whole group (Chromium's helpers too) is killed on drop.
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromedriver.display()));
        let port = read_port(&mut driver);
        let mut b = Browser {
            driver,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            session: String::new(),
        };
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium.to_str().expect("UTF-8 path"),
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--no-first-run", "--disable-extensions", "--force-device-scale-factor=1",
                    format!("--window-size={width},{height}"),
                    format!("--user-data-dir={}", profile_dir.display()),
                ],
            },
            "timeouts": {"script": 10_000, "pageLoad": 15_000, "implicit": 0},
        }}});
        let v = b.http("POST", "/session", Some(&caps));
        b.session = v["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id in {v}"))
            .to_owned();
        // The window's size includes the browser's frame; the page gets exactly this size.
        b.cmd(
            "POST",
            "/goog/cdp/execute",
            Some(
                &json!({"cmd": "Emulation.setDeviceMetricsOverride", "params": {
                    "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false,
                }}),
            ),
        );
        b
    }

    /// One WebDriver command; its `value`, or a panic with the driver's error.
    pub fn cmd(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        self.http(method, &path, body)
    }

    /// Like [`cmd`](Self::cmd), but a WebDriver error is returned as its `error` code.
    pub fn try_cmd(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
        let path = format!("/session/{}{path}", self.session);
        let (status, v) = self.exchange(method, &path, body);
        if status == 200 {
            Ok(v["value"].clone())
        } else {
            Err(v["value"]["error"].as_str().unwrap_or("unknown").to_owned())
        }
    }

    fn http(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let (status, v) = self.exchange(method, path, body);
        assert_eq!(status, 200, "WebDriver {method} {path} failed: {v}");
        v["value"].clone()
    }

    fn exchange(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("cannot reach chromedriver: {e}"));
        s.set_read_timeout(Some(COMMAND_TIMEOUT)).expect("timeout");
        s.set_write_timeout(Some(COMMAND_TIMEOUT)).expect("timeout");
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes())
            .unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"));
        let (head, payload) = read_response(&mut s)
            .unwrap_or_else(|e| panic!("WebDriver {method} {path}: no answer: {e}"));
        let status: u16 = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("status code");
        let v = serde_json::from_slice(&payload).unwrap_or_else(|e| {
            panic!(
                "WebDriver {method} {path}: not JSON ({e}): {}",
                String::from_utf8_lossy(&payload)
            )
        });
        (status, v)
    }

    /// Opens `url` and waits for it to load.
    pub fn goto(&self, url: &str) {
        self.cmd("POST", "/url", Some(&json!({ "url": url })));
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page; its result.
    pub fn js(&self, script: &str, args: Value) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(&json!({ "script": script, "args": args })),
        )
    }

    /// Polls `script` every 50 ms until it returns something truthy (its value), or panics
    /// with `what` and the last value after `timeout`.
    pub fn wait_for(&self, what: &str, timeout: Duration, script: &str) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let v = self.js(script, json!([]));
            let truthy = match &v {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::String(s) => !s.is_empty(),
                Value::Number(n) => n.as_f64() != Some(0.0),
                _ => true,
            };
            if truthy {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {timeout:?} waiting for {what} (last: {v})"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The element matching `css` (its WebDriver reference), or a panic.
    pub fn find(&self, css: &str) -> String {
        let v = self.cmd(
            "POST",
            "/element",
            Some(&json!({ "using": "css selector", "value": css })),
        );
        v.as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_owned()
    }

    /// Clicks the element as a user would (WebDriver scrolls it into view, checks nothing
    /// covers it, and sends real pointer events).
    pub fn click(&self, element: &str) {
        self.cmd(
            "POST",
            &format!("/element/{element}/click"),
            Some(&json!({})),
        );
    }

    /// Types `text` into the element, key by key.
    pub fn type_into(&self, element: &str, text: &str) {
        self.cmd(
            "POST",
            &format!("/element/{element}/value"),
            Some(&json!({ "text": text })),
        );
    }

    /// Empties a text field as a person would: Ctrl+A (released with the NULL key), Backspace.
    pub fn clear_input(&self, element: &str) {
        self.type_into(element, "\u{E009}a\u{E000}\u{E003}");
    }

    /// The text of an open alert, prompt or confirm, if one is showing.
    pub fn alert_text(&self) -> Option<String> {
        match self.try_cmd("GET", "/alert/text", None) {
            Ok(v) => Some(v.as_str().unwrap_or_default().to_owned()),
            Err(code) if code == "no such alert" => None,
            Err(code) => panic!("GET /alert/text: {code}"),
        }
    }

    /// A PNG of the viewport, written to `path`.
    pub fn screenshot(&self, path: &Path) {
        let v = self.cmd("GET", "/screenshot", None);
        let png = base64_decode(v.as_str().expect("base64 PNG"));
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        std::fs::write(path, png)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            // Ends Chromium; ignore failures (the group kill below is the backstop).
            let path = format!("/session/{}", self.session);
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.exchange("DELETE", &path, None)
            }));
        }
        // chromedriver leads its own process group: kill it and whatever it started.
        let pgid = self.driver.id();
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .stderr(Stdio::null())
            .status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Reads chromedriver's stdout until it says which port it listens on (10 s at most).
fn read_port(driver: &mut Child) -> u16 {
    let out = driver.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.split("started successfully on port ").nth(1) {
                let port = rest.trim_end_matches('.').trim().parse::<u16>().ok();
                let _ = tx.send(port);
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(Some(port)) => port,
        other => {
            let _ = driver.kill();
            let _ = driver.wait();
            panic!("chromedriver did not say its port within 10 s ({other:?})")
        }
    }
}

/// One HTTP response: its head, and its body read by `Content-Length` (chromedriver may keep
/// the connection open whatever the request asked), chunked, or to the end.
fn read_response(s: &mut TcpStream) -> std::io::Result<(String, Vec<u8>)> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let end = loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::Error::other(
                "connection closed before the headers",
            ));
        }
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let mut body = raw[end + 4..].to_vec();
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_ascii_lowercase())
        })
    };
    if let Some(len) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        while body.len() < len {
            let n = s.read(&mut buf)?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&buf[..n]);
        }
        body.truncate(len);
    } else {
        s.read_to_end(&mut body)?;
        if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            body = dechunk(&body);
        }
    }
    Ok((head, body))
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = body.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = std::str::from_utf8(&body[..eol])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next()?.trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 || body.len() < eol + 2 + size {
            return out;
        }
        out.extend_from_slice(&body[eol + 2..eol + 2 + size]);
        body = &body[(eol + 4 + size).min(body.len())..];
    }
}

/// Standard base64 (the screenshot), padding and whitespace tolerated.
fn base64_decode(text: &str) -> Vec<u8> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for v in text.bytes().filter_map(val) {
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

#[test]
fn base64_decodes_what_it_should() {
    assert_eq!(base64_decode("aGVsbG8="), b"hello");
    assert_eq!(base64_decode("iVBORw0KGgo="), b"\x89PNG\r\n\x1a\n");
}
