//! The bank: accounts, a connection pool, a rates cache, a configuration and a ledger, each
//! behind a lockscope primitive, and the operations that use them, healthy and buggy.
//!
//! | primitive | name | used by |
//! |---|---|---|
//! | `lockscope::tokio::Semaphore` (8 permits) | `db_pool` | every query: a database connection |
//! | `lockscope::tokio::Mutex` per account | `account:<id>` | balances, transfers |
//! | `lockscope::tokio::RwLock` | `rates_cache` | read per request, refreshed every second |
//! | `lockscope::parking_lot::RwLock` | `config` | the transfer fee, read per transfer |
//! | `lockscope::tokio::Mutex` | `ledger` | one entry per transfer; nightly settlement |
//! | `lockscope::tokio::Mutex` | `exports` | statement exports in progress |
//!
//! The healthy paths ([`Bank::balance`], [`Bank::transfer`]) keep one lock order (accounts by
//! id), hold the blocking lock for a copy and never across an `.await`, and release the
//! connection before touching the ledger. The buggy ones are what the pathologies inject.
//!
//! Money is conserved, so that the demo can run for hours: each transfer's fee goes to the
//! house, and the house pays its takings back every second to the accounts below the average
//! ([`Bank::pay_back`]). [`Bank::audit`] checks the books: the accounts plus the house always
//! hold what the accounts started with.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use lockscope::parking_lot::RwLock as BlockingRwLock;
use lockscope::tokio::{Mutex, OwnedSemaphorePermit, RwLock, Semaphore};
use tokio::sync::oneshot;

/// Accounts of the healthy service: ids `1..=ACCOUNTS`.
pub const ACCOUNTS: u32 = 10;
/// Connections in the pool.
pub const POOL_SIZE: usize = 8;
/// Ledger entries kept (older ones are archived, that is, dropped).
const LEDGER_KEEP: usize = 1000;
/// What each account starts with, in cents.
pub const OPENING_CENTS: i64 = 100_000;

/// An account: its balance behind its own mutex, named `account:<id>`.
pub struct Account {
    /// The account number; transfers lock accounts in this order.
    pub id: u32,
    /// The balance in cents.
    pub balance: Mutex<i64>,
}

impl Account {
    /// A new account with `cents`.
    pub fn new(id: u32, cents: i64) -> Arc<Account> {
        Arc::new(Account {
            id,
            balance: Mutex::named(format!("account:{id}"), cents),
        })
    }
}

/// The service configuration, behind a blocking lock (read far more often than written).
pub struct Settings {
    /// Fee per transfer, in cents.
    pub fee_cents: i64,
    /// Bumped by every reload.
    pub version: u64,
}

/// A statement export in progress; it keeps the database connection it streams from.
pub struct Export {
    /// The account exported.
    pub account: u32,
    /// The connection (a permit of `db_pool`).
    pub conn: OwnedSemaphorePermit,
}

/// Why a transfer was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum TransferError {
    /// No such account.
    NoSuchAccount(u32),
    /// Payer and payee are the same account.
    SameAccount,
    /// Not enough money.
    InsufficientFunds,
}

impl std::fmt::Display for TransferError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransferError::NoSuchAccount(id) => write!(f, "no account {id}"),
            TransferError::SameAccount => f.write_str("payer and payee are the same account"),
            TransferError::InsufficientFunds => f.write_str("insufficient funds"),
        }
    }
}

/// The bank's state.
pub struct Bank {
    /// Accounts `1..=ACCOUNTS`, index `id - 1`.
    pub accounts: Vec<Arc<Account>>,
    /// The database connection pool.
    pub pool: Arc<Semaphore>,
    /// Exchange rates, refreshed every second.
    pub rates: RwLock<HashMap<&'static str, f64>>,
    /// The configuration (a blocking lock: the reload runs on a plain thread).
    pub config: Arc<BlockingRwLock<Settings>>,
    /// The ledger: one line per transfer.
    pub ledger: Mutex<Vec<String>>,
    /// Statement exports in progress. Lives as long as the bank.
    pub exports: Mutex<Vec<Export>>,
    /// The house account: the fees taken and not yet paid back, in cents. Changed only while
    /// the account it pays or is paid from is locked, so that [`Bank::audit`], which locks
    /// every account, sees no transfer half done.
    pub house: AtomicI64,
}

/// The books at one instant (every account locked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Audit {
    /// The customer accounts' balances, summed, in cents.
    pub accounts: i64,
    /// The house account, in cents.
    pub house: i64,
    /// The lowest balance of an account.
    pub lowest: i64,
}

impl Audit {
    /// What the accounts started with: what `accounts + house` must always be.
    pub const EXPECTED: i64 = ACCOUNTS as i64 * OPENING_CENTS;

    /// Whether no money was made or lost.
    pub fn conserved(&self) -> bool {
        self.accounts + self.house == Audit::EXPECTED
    }
}

impl std::fmt::Display for Audit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "accounts {} + house {} = {} cents (expected {}: {}); lowest balance {}",
            self.accounts,
            self.house,
            self.accounts + self.house,
            Audit::EXPECTED,
            if self.conserved() {
                "conserved"
            } else {
                "NOT conserved"
            },
            self.lowest
        )
    }
}

/// A database round trip.
async fn query() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

impl Bank {
    /// A bank with `ACCOUNTS` accounts of 1,000.00 each.
    pub fn new() -> Arc<Bank> {
        Arc::new(Bank {
            accounts: (1..=ACCOUNTS)
                .map(|id| Account::new(id, OPENING_CENTS))
                .collect(),
            pool: Arc::new(Semaphore::named("db_pool", POOL_SIZE)),
            rates: RwLock::named("rates_cache", HashMap::from([("EUR", 0.92), ("GBP", 0.79)])),
            config: Arc::new(BlockingRwLock::named(
                "config",
                Settings {
                    fee_cents: 25,
                    version: 1,
                },
            )),
            ledger: Mutex::named("ledger", Vec::new()),
            exports: Mutex::named("exports", Vec::new()),
            house: AtomicI64::new(0),
        })
    }

    fn account(&self, id: u32) -> Result<&Arc<Account>, TransferError> {
        id.checked_sub(1)
            .and_then(|i| self.accounts.get(i as usize))
            .ok_or(TransferError::NoSuchAccount(id))
    }

    /// The balance of account `id`, in cents, and in euros at the cached rate.
    pub async fn balance(&self, id: u32) -> Result<(i64, f64), TransferError> {
        let account = self.account(id)?;
        let eur = *self.rates.read().await.get("EUR").unwrap_or(&1.0);
        let _conn = self.pool.acquire().await.expect("the pool is never closed");
        query().await;
        let cents = *account.balance.lock().await;
        Ok((cents, cents as f64 * eur / 100.0))
    }

    /// Moves `cents` from `from` to `to`, plus the configured fee: locks both accounts in id
    /// order (never a lock-order inversion), on one connection, then appends to the ledger.
    pub async fn transfer(&self, from: u32, to: u32, cents: i64) -> Result<(), TransferError> {
        if from == to {
            return Err(TransferError::SameAccount);
        }
        let (payer, payee) = (self.account(from)?, self.account(to)?);
        // A blocking lock, held for a copy only: never across an `.await`.
        let fee = self.config.read().fee_cents;
        {
            let _conn = self.pool.acquire().await.expect("the pool is never closed");
            let (first, second) = if from < to {
                (payer, payee)
            } else {
                (payee, payer)
            };
            let mut g1 = first.balance.lock().await;
            let mut g2 = second.balance.lock().await;
            let (p, q) = if from < to {
                (&mut *g1, &mut *g2)
            } else {
                (&mut *g2, &mut *g1)
            };
            if *p < cents + fee {
                return Err(TransferError::InsufficientFunds);
            }
            *p -= cents + fee;
            *q += cents;
            // Relaxed: the account locks order this against `audit` and `pay_back`.
            self.house.fetch_add(fee, Ordering::Relaxed);
            query().await;
        }
        // Connection and accounts released first: the ledger never holds them up.
        self.append_ledger(format!("{from} -> {to}: {cents} (fee {fee})"))
            .await;
        Ok(())
    }

    /// Appends a line to the ledger.
    pub async fn append_ledger(&self, line: String) {
        let mut ledger = self.ledger.lock().await;
        if ledger.len() >= LEDGER_KEEP {
            ledger.drain(..LEDGER_KEEP / 2);
        }
        ledger.push(line);
    }

    /// Pays the house's takings back to the accounts below the average balance, in equal
    /// shares (the remainder to the poorest), one account locked at a time; returns what it
    /// paid. Run every second by a background task, it keeps every account usable however
    /// long the demo runs.
    pub async fn pay_back(&self) -> i64 {
        // A glance at the balances to choose who gets paid (not a consistent snapshot: it
        // need not be).
        let mut balances = Vec::with_capacity(self.accounts.len());
        for a in &self.accounts {
            balances.push((*a.balance.lock().await, a));
        }
        let takings = self.house.load(Ordering::Relaxed);
        if takings <= 0 {
            return 0;
        }
        let mean = balances.iter().map(|(b, _)| b).sum::<i64>() / balances.len() as i64;
        balances.sort_by_key(|(b, _)| *b);
        balances.retain(|(b, _)| *b <= mean);
        let n = balances.len().max(1) as i64;
        let (share, rest) = (takings / n, takings % n);
        for (i, (_, account)) in balances.iter().enumerate() {
            let pay = share + if i == 0 { rest } else { 0 };
            let mut balance = account.balance.lock().await;
            // Relaxed: the account lock orders this against `audit`; only this task takes
            // money out of the house, so it holds at least `pay`.
            self.house.fetch_sub(pay, Ordering::Relaxed);
            *balance += pay;
        }
        takings
    }

    /// Checks the books: locks every account (in id order, as transfers do) and adds them up
    /// with the house.
    pub async fn audit(&self) -> Audit {
        let mut guards = Vec::with_capacity(self.accounts.len());
        for a in &self.accounts {
            guards.push(a.balance.lock().await);
        }
        Audit {
            accounts: guards.iter().map(|g| **g).sum(),
            // Relaxed: every account is locked, so no transfer or payback is half done.
            house: self.house.load(Ordering::Relaxed),
            lowest: guards.iter().map(|g| **g).min().unwrap_or(0),
        }
    }

    /// Refreshes the rates cache (every second, from a background task).
    pub async fn refresh_rates(&self, tick: u64) {
        let mut rates = self.rates.write().await;
        let wiggle = (tick % 7) as f64 / 1000.0;
        rates.insert("EUR", 0.92 + wiggle);
        rates.insert("GBP", 0.79 + wiggle);
    }

    // --- the buggy paths the pathologies inject -------------------------------------------

    /// BUG (legacy partner transfers): locks the payer, then the payee, in argument order.
    /// Large transfers await a fraud check between the two locks.
    pub async fn transfer_legacy(from: &Account, to: &Account, cents: i64) {
        let mut payer = from.balance.lock().await;
        if cents >= 100_000 {
            tokio::time::sleep(Duration::from_millis(300)).await; // the fraud check
        }
        let mut payee = to.balance.lock().await;
        *payer -= cents;
        *payee += cents;
    }

    /// BUG (audited balance): takes a connection for the balance and, still holding it, a
    /// second one for the audit log: a nested acquisition of `db_pool`.
    pub async fn audited_balance(&self, id: u32) -> Result<i64, TransferError> {
        let account = self.account(id)?;
        let _conn = self.pool.acquire().await.expect("the pool is never closed");
        let _audit = self.pool.acquire().await.expect("the pool is never closed");
        query().await;
        Ok(*account.balance.lock().await)
    }

    /// BUG (statement export): moves its connection into the long-lived `exports` table,
    /// which nothing ever cleans up: the connection is leaked.
    pub async fn export_statement(&self, id: u32) {
        let conn = self
            .pool
            .clone()
            .acquire_owned()
            .await
            .expect("the pool is never closed");
        query().await;
        self.exports.lock().await.push(Export { account: id, conn });
    }

    /// BUG (nightly settlement): holds the ledger while it waits for the clearing house,
    /// which answers when it pleases: every transfer queues behind it meanwhile.
    pub async fn settle(&self, clearing_house: oneshot::Receiver<()>) {
        let ledger = self.ledger.lock().await;
        let lines = ledger.len();
        let _ = clearing_house.await;
        tracing::info!(target: "demo", "settlement: the clearing house answered; {lines} ledger lines settled, ledger released");
    }

    /// BUG (monthly report): holds one database connection for the whole report, however
    /// busy the pool is, until `done`.
    pub async fn monthly_report(&self, done: oneshot::Receiver<()>) {
        let _conn = self.pool.acquire().await.expect("the pool is never closed");
        let _ = done.await;
    }

    /// BUG (config reload): a plain thread parses the new configuration while holding the
    /// write lock for `parse`; request handlers reading the fee block their worker threads
    /// meanwhile.
    pub fn reload_config_slowly(&self, parse: Duration) -> std::thread::JoinHandle<()> {
        let config = self.config.clone();
        std::thread::Builder::new()
            .name("config-reload".into())
            .spawn(move || {
                let mut c = config.write();
                std::thread::sleep(parse);
                c.version += 1;
            })
            .expect("spawn the config reload thread")
    }
}
