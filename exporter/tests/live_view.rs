//! The live view's routes over real HTTP: the page itself, `/debug/report`, `/debug/status`,
//! the report text in `/debug/findings`, and hostile lock names in the DOT output. (The page
//! in a real browser is `examples/tests/live_view.rs`.)

mod common;

use std::panic::Location;
use std::time::{Duration, Instant};

use common::{get, request};
use lockscope_detector::__private::hooks::{self, Acq, Mode};
use lockscope_detector::__private::prim::{PrimCell, PrimKind};

fn mutex(name: &str) -> PrimCell {
    PrimCell::new(Some(name.into()), PrimKind::Mutex, Location::caller(), 1)
}

#[tokio::test]
async fn the_page_is_served_whole_by_serve_and_by_router() {
    let server = lockscope_exporter::serve("127.0.0.1:0").await.unwrap();
    let r = get(server.local_addr(), "/").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let csp = r.header("content-security-policy").expect("a CSP");
    assert!(csp.starts_with("default-src 'none';"), "{csp}");
    assert!(csp.contains("connect-src 'self'"), "{csp}");
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    let page = r.text();
    assert!(page.starts_with("<!doctype html>"), "{}", &page[..40]);
    for part in [
        "debug/findings",
        "debug/locks",
        "debug/graph",
        "debug/status",
    ] {
        assert!(page.contains(part), "the page does not read {part}");
    }
    let head = request(server.local_addr(), "HEAD", "/").await;
    assert_eq!(head.status, 200);

    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt as _;
    let r = lockscope_exporter::router()
        .oneshot(Request::get("/").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
    assert_eq!(&body[..], page.as_bytes(), "router() serves the same page");
    server.shutdown().await;
}

#[tokio::test]
async fn the_report_is_what_a_failing_test_prints() {
    let server = lockscope_exporter::serve("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr();
    // An inversion: report/a then report/b, later report/b then report/a.
    let (a, b) = (mutex("report/a"), mutex("report/b"));
    for (first, second) in [(&a, &b), (&b, &a)] {
        let h1 = hooks::acquired::<hooks::Threads>(
            first.get(),
            Acq::new(Location::caller(), 1, Mode::Exclusive),
        );
        let h2 = hooks::acquired::<hooks::Threads>(
            second.get(),
            Acq::new(Location::caller(), 1, Mode::Exclusive),
        );
        hooks::released(second.get(), h2);
        hooks::released(first.get(), h1);
    }

    let r = get(addr, "/debug/report").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    // Exactly the text `assert_clean` and `#[lockscope::test]` panic with.
    let all = lockscope_detector::findings();
    assert_eq!(r.text(), lockscope_detector::render_all(&all));
    assert!(
        r.text().contains("lockscope: lock-order-inversion: ")
            && r.text().contains("\"report/a\"")
            && r.text().contains("\"report/b\""),
        "{}",
        r.text()
    );

    // Each finding in /debug/findings carries its own part of that text.
    let json = get(addr, "/debug/findings").await.json();
    let list = json.as_array().unwrap();
    assert_eq!(list.len(), all.len());
    for (j, f) in list.iter().zip(&all) {
        assert_eq!(j["report"].as_str(), Some(f.to_string().as_str()));
        assert!(r.text().contains(&f.to_string()));
    }
    server.shutdown().await;
}

#[tokio::test]
async fn status_says_mode_thresholds_label_cap_and_a_live_watchdog() {
    let server = lockscope_exporter::serve("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr();
    let _m = mutex("status/m"); // the first primitive starts the watchdog
    let first = get(addr, "/debug/status").await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("content-type"), Some("application/json"));
    let s = first.json();
    let cfg = lockscope_detector::config::current();
    assert_eq!(s["mode"], "production");
    assert_eq!(s["stuck_ms"], cfg.stuck.as_millis() as u64);
    assert_eq!(s["starvation_ms"], cfg.starvation.as_millis() as u64);
    assert_eq!(
        s["leak_ms"].as_u64(),
        cfg.leak.map(|d| d.as_millis() as u64)
    );
    assert_eq!(s["max_series"], cfg.max_series);
    assert!(s["series"].as_u64().unwrap() >= 1, "{s}");
    assert!(s["live_primitives"].as_u64().unwrap() >= 1, "{s}");
    assert_eq!(s["version"], env!("CARGO_PKG_VERSION"));
    // The watchdog ticks every 100 ms: the count grows (5 s at most to see it).
    let t0 = s["watchdog_ticks"].as_u64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let s = get(addr, "/debug/status").await.json();
        if s["watchdog_ticks"].as_u64().unwrap() > t0 {
            assert!(s["uptime_ms"].as_u64().unwrap() > 0);
            break;
        }
        assert!(Instant::now() < deadline, "the watchdog never ticked: {s}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.shutdown().await;
}

/// The quoted strings of one DOT statement, read as Graphviz reads them: in a quoted string
/// `\"` is a quote and `\\` stays a pair; then a label turns `\\` into one backslash. Returns
/// the statement's tokens, each quoted string decoded.
fn dot_tokens(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = line.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' => {}
            '"' => {
                let mut lexed = String::new();
                loop {
                    match chars.next().expect("an unterminated quoted string") {
                        '"' => break,
                        '\\' if chars.peek() == Some(&'"') => lexed.push(chars.next().unwrap()),
                        '\\' if chars.peek() == Some(&'\\') => {
                            chars.next();
                            lexed.push_str("\\\\");
                        }
                        c => lexed.push(c),
                    }
                }
                // escString: `\\` is one backslash, `\"` a quote, other escapes unused here.
                let mut label = String::new();
                let mut l = lexed.chars();
                while let Some(c) = l.next() {
                    if c == '\\' {
                        label.push(l.next().expect("a lone backslash at the end"));
                    } else {
                        label.push(c);
                    }
                }
                out.push(format!("q:{label}"));
            }
            c if c.is_alphanumeric() || c == '_' => {
                let mut word = c.to_string();
                while let Some(&n) = chars.peek() {
                    if n.is_alphanumeric() || n == '_' {
                        word.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push(word);
            }
            c => out.push(c.to_string()),
        }
    }
    out
}

#[tokio::test]
async fn hostile_names_are_labels_in_dot() {
    let server = lockscope_exporter::serve("127.0.0.1:0").await.unwrap();
    let names = [
        "<script>alert(1)</script>",
        "\"]; evil",
        "ends with a backslash\\",
        "\\N \\G \\l",
        "a\" -> \"b",
    ];
    let cells: Vec<PrimCell> = names.iter().map(|n| mutex(n)).collect();
    let holds: Vec<_> = cells
        .iter()
        .map(|c| {
            hooks::acquired::<hooks::Threads>(
                c.get(),
                Acq::new(Location::caller(), 1, Mode::Exclusive),
            )
        })
        .collect();
    let r = get(server.local_addr(), "/debug/graph?format=dot").await;
    assert_eq!(r.status, 200);
    let dot = r.text();
    for (name, cell) in names.iter().zip(&cells) {
        let id = format!("lock:{}", cell.get().id().0);
        let line = dot
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("\"{id}\" [")))
            .unwrap_or_else(|| panic!("no node for {name:?}:\n{dot}"));
        // One node statement with one label: nothing leaked out of the quoted string.
        let want_label = format!("mutex {name:?}");
        assert_eq!(
            dot_tokens(line),
            [
                format!("q:{id}"),
                "[".into(),
                "label".into(),
                "=".into(),
                format!("q:{want_label}"),
                ",".into(),
                "shape".into(),
                "=".into(),
                "box".into(),
                "]".into(),
                ";".into()
            ],
            "{line}"
        );
    }
    for (c, h) in cells.iter().zip(holds) {
        hooks::released(c.get(), h);
    }
    server.shutdown().await;
}
