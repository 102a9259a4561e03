//! The HTTP surface: `/metrics` and the read-only `/debug/*` endpoints, as an axum `Router`.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Query, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::sync::Semaphore;

use crate::{live, metrics};

/// Content type of the JSON endpoints.
const JSON: &str = "application/json";
/// Content type of `/debug/graph?format=dot`.
const DOT: &str = "text/vnd.graphviz; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";

/// Longest a request may take once its head is read, queueing for a render slot included.
pub(crate) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Renders (a scrape, a snapshot of the locks or graphs) running at once, process-wide. Each
/// walks every live primitive on a blocking thread; more at once would only compete for the
/// same registry shards and CPU, while waiting requests hold no thread.
const RENDER_SLOTS: usize = 2;

/// A plain tokio semaphore on purpose: the exporter must not observe itself (see
/// `server::conns`).
static RENDER: LazyLock<Arc<Semaphore>> = LazyLock::new(|| Arc::new(Semaphore::new(RENDER_SLOTS)));

const NOT_FOUND: &str = "not found; lockscope serves / (the live view), /metrics, /debug/findings, \
     /debug/locks, /debug/graph, /debug/report and /debug/status\n";

/// The lockscope endpoints as an axum [`Router`], to mount in your own application:
///
/// | route | answer |
/// |---|---|
/// | `GET /` | the live view: one self-contained HTML page reading the routes below |
/// | `GET /metrics` | Prometheus text format ([`render`](crate::render)) |
/// | `GET /debug/findings` | JSON array of [`lockscope_detector::findings`], each with `"kind"` and `"report"` (its text) |
/// | `GET /debug/locks` | JSON array of [`lockscope_detector::locks`]; `?limit=N` lists at most `N` holders and `N` waiters per primitive ([`lockscope_detector::locks_limited`]) |
/// | `GET /debug/graph` | JSON of [`lockscope_detector::graph()`]; `?format=dot` for Graphviz; `?limit=N` as for the locks ([`lockscope_detector::graph_limited`]) |
/// | `GET /debug/report` | the findings as plain text, as a failing `#[lockscope::test]` prints them |
/// | `GET /debug/status` | JSON: mode, thresholds, watchdog ticks, uptime, label cap |
///
/// Every route is read-only and answers `HEAD` too; other methods get `405`, other paths
/// `404`. Each request is bounded by a 10-second timeout (`503` past it), and at most two
/// renders run at once process-wide, each on a blocking thread so that a scrape of many
/// primitives never stalls the runtime's workers. Connection-level limits (header size and
/// read timeout, connection count, stalled writes) are the server's: [`serve`](crate::serve)
/// applies them; in your own server, apply yours.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use axum::Router;
/// use axum::routing::get;
///
/// let app: Router = Router::new()
///     .route("/healthz", get(|| async { "ok" }))
///     .merge(lockscope_exporter::router());
/// # let _ = app;
/// # }
/// ```
pub fn router() -> Router {
    router_with_timeout(DEFAULT_REQUEST_TIMEOUT)
}

pub(crate) fn router_with_timeout(timeout: Duration) -> Router {
    live::start_clock();
    Router::new()
        .route("/", get(index_handler))
        .route("/metrics", get(metrics_handler))
        .route("/debug/findings", get(findings_handler))
        .route("/debug/locks", get(locks_handler))
        .route("/debug/graph", get(graph_handler))
        .route("/debug/report", get(report_handler))
        .route("/debug/status", get(status_handler))
        .fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                [(header::CONTENT_TYPE, TEXT)],
                NOT_FOUND,
            )
        })
        .layer(middleware::from_fn(move |req: Request, next: Next| {
            request_timeout(timeout, req, next)
        }))
        // gzip when the client asks (`Accept-Encoding: gzip`, as Prometheus does).
        .layer(tower_http::compression::CompressionLayer::new())
}

async fn request_timeout(timeout: Duration, req: Request, next: Next) -> Response {
    match tokio::time::timeout(timeout, next.run(req)).await {
        Ok(response) => response,
        Err(_) => text(StatusCode::SERVICE_UNAVAILABLE, "request timed out\n"),
    }
}

fn text(status: StatusCode, body: &'static str) -> Response {
    (status, [(header::CONTENT_TYPE, TEXT)], body).into_response()
}

/// Runs `f` on a blocking thread once a render slot is free.
async fn render_blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    let unavailable = || text(StatusCode::SERVICE_UNAVAILABLE, "exporter unavailable\n");
    // The semaphore is never closed; an error cannot happen, and is answered as a 503.
    let permit = RENDER
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| unavailable())?;
    tokio::task::spawn_blocking(move || {
        let out = f();
        drop(permit);
        out
    })
    .await
    .map_err(|e| {
        tracing::error!(target: "lockscope::exporter", "render failed: {e}");
        text(StatusCode::INTERNAL_SERVER_ERROR, "render failed\n")
    })
}

fn body(status: StatusCode, content_type: &'static str, body: impl Into<Body>) -> Response {
    let mut r = Response::new(body.into());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn json<T: serde::Serialize>(value: &T) -> Response {
    json_encoded(serde_json::to_vec(value))
}

/// The response for a JSON encoding (done where the caller chose: a large one on the blocking
/// thread that rendered it).
fn json_encoded(encoded: serde_json::Result<Vec<u8>>) -> Response {
    match encoded {
        Ok(bytes) => body(StatusCode::OK, JSON, bytes),
        Err(e) => {
            tracing::error!(target: "lockscope::exporter", "JSON encoding failed: {e}");
            text(StatusCode::INTERNAL_SERVER_ERROR, "JSON encoding failed\n")
        }
    }
}

/// The `limit` query parameter of `/debug/locks` and `/debug/graph`: the most holders and
/// waiters to list per primitive (all when absent); `None` for a value that is not a whole
/// number (see [`bad_limit`]).
fn limit(query: &HashMap<String, String>) -> Option<usize> {
    match query.get("limit") {
        None => Some(usize::MAX),
        Some(v) => v.trim().parse().ok(),
    }
}

/// The answer to a `limit` that is not a whole number.
fn bad_limit() -> Response {
    text(
        StatusCode::BAD_REQUEST,
        "limit must be a whole number: the most holders and waiters to list per primitive \
         (all of them without it)\n",
    )
}

async fn metrics_handler() -> Response {
    match render_blocking(metrics::render).await {
        Ok(text) => body(StatusCode::OK, metrics::CONTENT_TYPE, text),
        Err(r) => r,
    }
}

async fn index_handler() -> Response {
    let mut r = body(StatusCode::OK, live::HTML, live::INDEX_HTML);
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(live::CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}

async fn report_handler() -> Response {
    match render_blocking(live::report_text).await {
        Ok(text) => body(StatusCode::OK, TEXT, text),
        Err(r) => r,
    }
}

async fn status_handler() -> Response {
    json(&live::status())
}

async fn findings_handler() -> Response {
    match render_blocking(live::findings_with_reports).await {
        Ok(findings) => json(&findings),
        Err(r) => r,
    }
}

async fn locks_handler(Query(query): Query<HashMap<String, String>>) -> Response {
    let Some(limit) = limit(&query) else {
        return bad_limit();
    };
    let render = move || serde_json::to_vec(&lockscope_detector::locks_limited(limit));
    match render_blocking(render).await {
        Ok(encoded) => json_encoded(encoded),
        Err(r) => r,
    }
}

async fn graph_handler(Query(query): Query<HashMap<String, String>>) -> Response {
    let dot = match query.get("format").map(String::as_str) {
        None | Some("json") => false,
        Some("dot") => true,
        Some(_) => {
            return text(
                StatusCode::BAD_REQUEST,
                "unknown format; use ?format=json (the default) or ?format=dot\n",
            );
        }
    };
    let Some(limit) = limit(&query) else {
        return bad_limit();
    };
    let render = move || {
        let graph = lockscope_detector::graph_limited(limit);
        if dot {
            Ok(graph.to_dot().into_bytes())
        } else {
            serde_json::to_vec(&graph)
        }
    };
    match render_blocking(render).await {
        Ok(Ok(dot_text)) if dot => body(StatusCode::OK, DOT, dot_text),
        Ok(encoded) => json_encoded(encoded),
        Err(r) => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;
    use tower::ServiceExt as _;

    #[tokio::test]
    async fn a_request_past_its_timeout_is_a_503() {
        // Take every render slot, so that /metrics waits for one past its timeout.
        let held = RENDER
            .clone()
            .acquire_many_owned(RENDER_SLOTS as u32)
            .await
            .unwrap();
        let app = router_with_timeout(Duration::from_millis(50));
        let r = app
            .clone()
            .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        let body = axum::body::to_bytes(r.into_body(), 1024).await.unwrap();
        assert_eq!(&body[..], b"request timed out\n");
        // Once slots are free, the same router answers.
        drop(held);
        let r = app
            .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(RENDER.available_permits(), RENDER_SLOTS);
    }
}
