//! The bank's HTTP API (axum).
//!
//! | route | answer |
//! |---|---|
//! | `GET /` | this list |
//! | `GET /balance/{id}` | the balance of account `id` |
//! | `POST /transfer/{from}/{to}/{cents}` | a transfer (`422` when refused) |
//! | `GET /audit` | the books: accounts plus house, conserved or not |
//! | `GET /stats` | the load generator's counts: `served R refused F failed X` |
//! | `POST /pathology/{name}` | injects one pathology (`202`; `409` while another runs, or while an injected deadlock or leak of that kind lives) |

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};

use super::bank::Bank;
use super::load::LoadStats;
use super::pathology::{Injected, Pathology, inject};

/// What the handlers share.
pub struct Service {
    /// The bank.
    pub bank: Arc<Bank>,
    /// What the injections left behind (the legacy accounts, a live deadlock or leak).
    pub injected: Arc<Injected>,
    /// The load generator's counts.
    pub stats: Arc<LoadStats>,
    /// An injection is in progress (the tour's or one asked over HTTP).
    pub injecting: AtomicBool,
}

type Answer = (StatusCode, String);

const HELP: &str = "lockscope demo bank
GET  /balance/{id}                 balance of account id (1-10)
GET  /audit                        the books: accounts plus house, conserved or not
GET  /stats                        requests the load generator got served, refused, failed
POST /transfer/{from}/{to}/{cents}  a transfer
POST /pathology/{name}             inject one: nested-acquire, lock-order-inversion, deadlock,
                                   blocking-in-async, stuck-queue, starvation, leaked-permit
";

async fn help() -> &'static str {
    HELP
}

async fn balance(State(s): State<Arc<Service>>, Path(id): Path<u32>) -> Answer {
    match s.bank.balance(id).await {
        Ok((cents, eur)) => (
            StatusCode::OK,
            format!(
                "account {id}: {}.{:02} USD ({eur:.2} EUR)\n",
                cents / 100,
                cents % 100
            ),
        ),
        Err(e) => (StatusCode::NOT_FOUND, format!("{e}\n")),
    }
}

async fn transfer(
    State(s): State<Arc<Service>>,
    Path((from, to, cents)): Path<(u32, u32, u32)>,
) -> Answer {
    match s.bank.transfer(from, to, i64::from(cents)).await {
        Ok(()) => (StatusCode::OK, "done\n".into()),
        Err(e) => (StatusCode::UNPROCESSABLE_ENTITY, format!("{e}\n")),
    }
}

async fn audit(State(s): State<Arc<Service>>) -> Answer {
    (StatusCode::OK, format!("{}\n", s.bank.audit().await))
}

async fn stats(State(s): State<Arc<Service>>) -> Answer {
    let (ok, refused, failed) = s.stats.get();
    (
        StatusCode::OK,
        format!("served {ok} refused {refused} failed {failed}\n"),
    )
}

async fn pathology(State(s): State<Arc<Service>>, Path(name): Path<String>) -> Answer {
    let Some(p) = Pathology::from_name(&name) else {
        return (
            StatusCode::NOT_FOUND,
            format!("no pathology {name:?}\n\n{HELP}"),
        );
    };
    if let Some(why) = s.injected.refusal(p) {
        return (StatusCode::CONFLICT, format!("{why}\n"));
    }
    if s.injecting.swap(true, Ordering::SeqCst) {
        return (
            StatusCode::CONFLICT,
            "another pathology is being injected; try again when the log says it was reported\n"
                .into(),
        );
    }
    let svc = s.clone();
    tokio::spawn(async move {
        inject(&svc.bank, &svc.injected, p).await;
        svc.injecting.store(false, Ordering::SeqCst);
    });
    (
        StatusCode::ACCEPTED,
        format!(
            "injecting {name}: {}; watch the log and /debug/findings\n",
            p.story()
        ),
    )
}

/// The API's router.
pub fn router(service: Arc<Service>) -> Router {
    Router::new()
        .route("/", get(help))
        .route("/balance/{id}", get(balance))
        .route("/audit", get(audit))
        .route("/stats", get(stats))
        .route("/transfer/{from}/{to}/{cents}", post(transfer))
        .route("/pathology/{name}", post(pathology))
        .with_state(service)
}
