//! The bank's HTTP API (axum).
//!
//! | route | answer |
//! |---|---|
//! | `GET /` | this list |
//! | `GET /balance/{id}` | the balance of account `id` |
//! | `POST /transfer/{from}/{to}/{cents}` | a transfer (`422` when refused) |
//! | `POST /pathology/{name}` | injects one pathology (`202`; `409` while another runs) |

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};

use super::bank::Bank;
use super::pathology::{LegacyPair, Pathology, inject};

/// What the handlers share.
pub struct Service {
    /// The bank.
    pub bank: Arc<Bank>,
    /// The legacy partner's accounts (the inversion and deadlock pathologies).
    pub legacy: LegacyPair,
    /// An injection is in progress (the tour's or one asked over HTTP).
    pub injecting: AtomicBool,
}

type Answer = (StatusCode, String);

const HELP: &str = "lockscope demo bank
GET  /balance/{id}                 balance of account id (1-10)
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

async fn pathology(State(s): State<Arc<Service>>, Path(name): Path<String>) -> Answer {
    let Some(p) = Pathology::from_name(&name) else {
        return (
            StatusCode::NOT_FOUND,
            format!("no pathology {name:?}\n\n{HELP}"),
        );
    };
    if s.injecting.swap(true, Ordering::SeqCst) {
        return (
            StatusCode::CONFLICT,
            "another pathology is being injected; try again when the log says it was reported\n"
                .into(),
        );
    }
    let svc = s.clone();
    tokio::spawn(async move {
        inject(&svc.bank, &svc.legacy, p).await;
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
        .route("/transfer/{from}/{to}/{cents}", post(transfer))
        .route("/pathology/{name}", post(pathology))
        .with_state(service)
}
