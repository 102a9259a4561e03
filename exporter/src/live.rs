//! The live view: `GET /`, one HTML page embedded in the binary, and the small JSON and text
//! endpoints it reads besides `/debug/findings`, `/debug/locks` and `/debug/graph`.
//!
//! | route | answer |
//! |---|---|
//! | `GET /` | the page: findings, locks, the wait-for and lock-order graphs, the detector's state |
//! | `GET /debug/status` | JSON: mode, thresholds, watchdog ticks, uptime, label cap, what was dropped |
//! | `GET /debug/report` | the findings as plain text, as a failing `#[lockscope::test]` prints them |
//!
//! The page loads nothing from elsewhere (no CDN, no fonts): its scripts and styles are inline,
//! and its `Content-Security-Policy` forbids any other origin. It only reads, with `fetch`
//! `GET`s every 1.5 s, and writes every name it shows as text (`textContent`), never as markup.

use std::sync::LazyLock;
use std::time::Instant;

use lockscope_detector::config::{self, Mode};
use serde::Serialize;

/// The page, every byte of it.
pub(crate) const INDEX_HTML: &str = include_str!("live/index.html");

/// Content type of the page.
pub(crate) const HTML: &str = "text/html; charset=utf-8";

/// What the page may load: itself, its inline script and style, and `fetch`es to this origin.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// When the exporter's router was first built: the uptime the page shows.
static STARTED: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Starts the uptime clock (idempotent).
pub(crate) fn start_clock() {
    LazyLock::force(&STARTED);
}

/// `GET /debug/report`: every finding as a failing test prints it, or one line saying there is
/// none.
pub(crate) fn report_text() -> String {
    let all = lockscope_detector::findings();
    if all.is_empty() {
        "lockscope found no problems\n".to_owned()
    } else {
        lockscope_detector::render_all(&all)
    }
}

/// One finding in `/debug/findings`: its fields, plus `report`, the text a failing test
/// prints for it.
#[derive(Serialize)]
pub(crate) struct FindingWithReport {
    #[serde(flatten)]
    finding: lockscope_detector::Finding,
    report: String,
}

/// Every finding, oldest first, each with its report text.
pub(crate) fn findings_with_reports() -> Vec<FindingWithReport> {
    lockscope_detector::findings()
        .into_iter()
        .map(|finding| FindingWithReport {
            report: finding.to_string(),
            finding,
        })
        .collect()
}

/// `GET /debug/status`.
#[derive(Serialize)]
pub(crate) struct Status {
    /// The exporter's version.
    version: &'static str,
    /// `off`, `production` or `test`.
    mode: &'static str,
    stuck_ms: u64,
    starvation_ms: u64,
    /// `null`: leaks are checked at the end of each test only.
    leak_ms: Option<u64>,
    /// The watchdog's period.
    tick_ms: u64,
    /// Analyses the watchdog thread has run; the page warns when it stops growing.
    watchdog_ticks: u64,
    /// Since the exporter started.
    uptime_ms: u64,
    live_primitives: usize,
    /// `lock` label values in use (a name with a kind), and the cap on them.
    series: usize,
    max_series: usize,
    /// Primitives counted under `lock="other"` because the cap was reached.
    folded_series: u64,
    lock_order_edges: usize,
    max_edges: usize,
    dropped_findings: u64,
    dropped_edges: u64,
    dropped_events: u64,
    dropped_ticks: u64,
}

/// The detector's state now; cheap (no walk over the primitives' holds).
pub(crate) fn status() -> Status {
    let cfg = config::current();
    let (series, folded_series) =
        lockscope_detector::__private::prim::with_series(|all, dropped, _| (all.len(), dropped));
    let [findings, edges, events, ticks] = lockscope_detector::dropped_counts();
    let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    Status {
        version: env!("CARGO_PKG_VERSION"),
        mode: match config::mode() {
            Mode::Off => "off",
            Mode::Production => "production",
            Mode::Test => "test",
            _ => "unknown",
        },
        stuck_ms: ms(cfg.stuck),
        starvation_ms: ms(cfg.starvation),
        leak_ms: cfg.leak.map(ms),
        tick_ms: ms(cfg.tick),
        watchdog_ticks: lockscope_detector::watchdog_ticks(),
        uptime_ms: ms(STARTED.elapsed()),
        live_primitives: lockscope_detector::__private::prim::live_count(),
        series,
        max_series: cfg.max_series,
        folded_series,
        lock_order_edges: lockscope_detector::__private::graph::lockorder::edge_count(),
        max_edges: cfg.max_edges,
        dropped_findings: findings.1,
        dropped_edges: edges.1,
        dropped_events: events.1,
        dropped_ticks: ticks.1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_nothing_from_elsewhere() {
        // Every URL in the page is relative; the only absolute one is the SVG namespace,
        // which names and never fetches.
        for (i, _) in INDEX_HTML.match_indices("://") {
            let start = INDEX_HTML[..i].rfind(['"', '\'', '`']).unwrap_or(0);
            let url = &INDEX_HTML[start + 1..i + 30.min(INDEX_HTML.len() - i)];
            assert!(
                url.starts_with("http://www.w3.org/2000/svg"),
                "absolute URL in the page: {url}"
            );
        }
        for banned in ["<link", "src=", "@import", "innerHTML", "outerHTML"] {
            assert!(!INDEX_HTML.contains(banned), "the page uses {banned}");
        }
        // `url(#id)`: SVG markers in the page itself.
        for (i, _) in INDEX_HTML.match_indices("url(") {
            assert!(
                INDEX_HTML[i + 4..].starts_with('#'),
                "the page loads a url(...)"
            );
        }
        assert!(!INDEX_HTML.contains("insertAdjacentHTML") && !INDEX_HTML.contains("eval("));
    }

    #[test]
    fn status_says_the_mode_and_thresholds() {
        start_clock();
        let s = serde_json::to_value(status()).unwrap();
        assert!(["off", "production", "test"].contains(&s["mode"].as_str().unwrap()));
        let cfg = config::current();
        assert_eq!(s["stuck_ms"], cfg.stuck.as_millis() as u64);
        assert_eq!(s["max_series"], cfg.max_series);
        assert!(s["uptime_ms"].is_u64());
        assert!(s["watchdog_ticks"].is_u64());
    }
}
