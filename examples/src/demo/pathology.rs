//! The pathologies the demo injects into the live bank, one finding kind each, and the wait
//! for the detector's report.
//!
//! Each is confined so that the service keeps serving, for hours: the deadlock takes the two
//! accounts of a legacy partner (not the ones the load uses) down for [`LINGER`], then its
//! transfers are cancelled; the leak costs one connection of eight for as long; the stuck
//! ledger and the hogged connection are released once reported; the slow config reload
//! blocks workers for a quarter of a second. At most one injected deadlock and one leak live
//! at a time: asking for another meanwhile is refused ([`Injected::refusal`], a `409`), so
//! that repeated requests cannot pile up deadlocked tasks, leaked connections or findings.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lockscope::detector::FindingKind;
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tracing::{info, warn};

use super::bank::{ACCOUNTS, Account, Bank};

/// One injectable pathology.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pathology {
    /// `audited_balance` takes a second connection while holding one.
    NestedAcquire,
    /// Legacy transfers, one after the other, in opposite orders (no hang).
    LockOrderInversion,
    /// The same legacy transfers at once: two accounts deadlock for good.
    Deadlock,
    /// A config reload holds the blocking config lock while handlers read it on workers.
    BlockingInAsync,
    /// The nightly settlement holds the ledger while it waits for the clearing house.
    StuckQueue,
    /// A monthly report hogs a connection while a traffic burst saturates the pool.
    Starvation,
    /// A statement export keeps its connection in a table nothing cleans up.
    LeakedPermit,
}

impl Pathology {
    /// Every pathology, in the tour's order.
    pub const ALL: [Pathology; 7] = [
        Pathology::NestedAcquire,
        Pathology::LockOrderInversion,
        Pathology::Deadlock,
        Pathology::BlockingInAsync,
        Pathology::StuckQueue,
        Pathology::Starvation,
        Pathology::LeakedPermit,
    ];

    /// The finding kind it produces (also its name on the command line).
    pub fn kind(self) -> FindingKind {
        match self {
            Pathology::NestedAcquire => FindingKind::NestedAcquire,
            Pathology::LockOrderInversion => FindingKind::LockOrderInversion,
            Pathology::Deadlock => FindingKind::Deadlock,
            Pathology::BlockingInAsync => FindingKind::BlockingInAsync,
            Pathology::StuckQueue => FindingKind::StuckQueue,
            Pathology::Starvation => FindingKind::Starvation,
            Pathology::LeakedPermit => FindingKind::LeakedPermit,
        }
    }

    /// Its name: the finding kind's string.
    pub fn name(self) -> &'static str {
        self.kind().as_str()
    }

    /// The pathology called `name`, if any.
    pub fn from_name(name: &str) -> Option<Pathology> {
        Pathology::ALL.into_iter().find(|p| p.name() == name)
    }

    /// What the injection does, in one line.
    pub fn story(self) -> &'static str {
        match self {
            Pathology::NestedAcquire => {
                "an audited balance takes a second db_pool connection while holding one"
            }
            Pathology::LockOrderInversion => {
                "legacy transfers 901 -> 902, then 902 -> 901, lock payer then payee (no hang yet)"
            }
            Pathology::Deadlock => {
                "the same two legacy transfers, large ones (a fraud check between the locks), at once"
            }
            Pathology::BlockingInAsync => {
                "a config reload holds the blocking config lock for 250 ms while transfers read the fee"
            }
            Pathology::StuckQueue => {
                "the nightly settlement holds the ledger while waiting for a silent clearing house"
            }
            Pathology::Starvation => {
                "a monthly report hogs a db_pool connection during a traffic burst"
            }
            Pathology::LeakedPermit => {
                "a statement export stores its db_pool connection in a table nothing cleans up"
            }
        }
    }
}

/// How long an injected deadlock or leak lives before the demo cleans it up.
pub const LINGER: Duration = Duration::from_secs(60);

/// What the injections leave behind: the legacy partner's two accounts (shared by the
/// inversion and the deadlock), and the live deadlock and leak, if any. Plain std types:
/// demo bookkeeping, not part of the service.
pub struct Injected {
    legacy: (Arc<Account>, Arc<Account>),
    /// The two deadlocked legacy transfers, while the deadlock lives.
    deadlock: std::sync::Mutex<Option<[tokio::task::AbortHandle; 2]>>,
    /// Whether a leaked export connection lives.
    leak: AtomicBool,
}

impl Default for Injected {
    fn default() -> Injected {
        Injected {
            legacy: (Account::new(901, 0), Account::new(902, 0)),
            deadlock: std::sync::Mutex::new(None),
            leak: AtomicBool::new(false),
        }
    }
}

impl Injected {
    fn deadlock_lives(&self) -> bool {
        self.deadlock
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Why `p` cannot be injected now, if it cannot: a deadlock (or a leak) lives already, or
    /// the inversion would queue behind the deadlocked legacy accounts.
    pub fn refusal(&self, p: Pathology) -> Option<String> {
        let secs = LINGER.as_secs();
        match p {
            Pathology::Deadlock | Pathology::LockOrderInversion if self.deadlock_lives() => {
                Some(format!(
                    "the legacy accounts 901 and 902 are deadlocked already; the demo cancels the deadlock {secs} s after it was injected"
                ))
            }
            Pathology::LeakedPermit if self.leak.load(Ordering::SeqCst) => Some(format!(
                "a leaked connection lives already; the demo reclaims it {secs} s after it was injected"
            )),
            _ => None,
        }
    }

    /// Cancels the deadlocked transfers: their waits end, the accounts are usable again.
    fn end_deadlock(&self) {
        let handles = self
            .deadlock
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        for h in handles.into_iter().flatten() {
            h.abort();
        }
    }
}

/// How long to wait for a report: the threshold involved, plus a margin.
fn patience(p: Pathology, thresholds: &lockscope::detector::Config) -> Duration {
    let margin = Duration::from_secs(5);
    match p {
        Pathology::StuckQueue => thresholds.stuck + margin,
        Pathology::Starvation => thresholds.starvation + margin,
        Pathology::LeakedPermit => thresholds.leak.unwrap_or(Duration::from_secs(60)) + margin,
        _ => margin,
    }
}

/// Keys of the findings of `kind` made so far.
fn keys(kind: FindingKind) -> HashSet<String> {
    lockscope::detector::findings()
        .into_iter()
        .filter(|f| f.kind == kind)
        .map(|f| f.key().to_owned())
        .collect()
}

/// Waits until a finding of `kind` involving `name`, not among `before`, is reported;
/// returns how long it took.
async fn reported(
    kind: FindingKind,
    name: &str,
    before: &HashSet<String>,
    within: Duration,
) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < within {
        let new = lockscope::detector::findings()
            .iter()
            .any(|f| f.kind == kind && f.involves(name) && !before.contains(f.key()));
        if new {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    None
}

/// Injects `p` into `bank`, waits (bounded) for the detector's report and logs the outcome;
/// undoes what can be undone once reported, and the deadlock and the leak [`LINGER`] later.
/// Returns whether a new finding of its kind was reported; `false` at once, with a log line,
/// if [`Injected::refusal`] refuses it.
pub async fn inject(bank: &Arc<Bank>, injected: &Arc<Injected>, p: Pathology) -> bool {
    if let Some(why) = injected.refusal(p) {
        info!(target: "demo", "not injecting {}: {why}", p.name());
        return false;
    }
    let kind = p.kind();
    let before = keys(kind);
    let within = patience(p, &lockscope::detector::config::current());
    info!(target: "demo", "injecting {}: {}", p.name(), p.story());
    let mut undo: Option<oneshot::Sender<()>> = None;
    let mut burst = JoinSet::new();
    // The primitive the finding must name.
    let watched: String = match p {
        Pathology::NestedAcquire => {
            let b = bank.clone();
            tokio::spawn(async move { b.audited_balance(1).await });
            bank.pool.name().to_owned()
        }
        Pathology::LockOrderInversion => {
            let (a, b) = injected.legacy.clone();
            let name = a.balance.name().to_owned();
            tokio::spawn(async move {
                Bank::transfer_legacy(&a, &b, 100).await;
                Bank::transfer_legacy(&b, &a, 100).await;
            });
            name
        }
        Pathology::Deadlock => {
            let (a, b) = injected.legacy.clone();
            let (a2, b2) = (a.clone(), b.clone());
            let name = a.balance.name().to_owned();
            let one = tokio::spawn(async move { Bank::transfer_legacy(&a, &b, 100_000).await });
            let two = tokio::spawn(async move { Bank::transfer_legacy(&b2, &a2, 100_000).await });
            *injected.deadlock.lock().unwrap_or_else(|e| e.into_inner()) =
                Some([one.abort_handle(), two.abort_handle()]);
            let injected = injected.clone();
            tokio::spawn(async move {
                tokio::time::sleep(LINGER).await;
                injected.end_deadlock();
                info!(target: "demo", "deadlock injected {} s ago cancelled: accounts 901 and 902 are usable again", LINGER.as_secs());
            });
            name
        }
        Pathology::BlockingInAsync => {
            let reload = bank.reload_config_slowly(Duration::from_millis(250));
            tokio::time::sleep(Duration::from_millis(20)).await;
            for i in 0..4 {
                let b = bank.clone();
                tokio::spawn(async move { b.transfer(1 + i, 2 + i, 1).await });
            }
            // The reload ends by itself; join it off the workers.
            tokio::task::spawn_blocking(move || reload.join());
            bank.config.name().to_owned()
        }
        Pathology::StuckQueue => {
            let (answer, clearing_house) = oneshot::channel();
            undo = Some(answer);
            let b = bank.clone();
            tokio::spawn(async move { b.settle(clearing_house).await });
            tokio::time::sleep(Duration::from_millis(20)).await;
            for i in 0..2 {
                let b = bank.clone();
                tokio::spawn(async move { b.append_ledger(format!("late entry {i}")).await });
            }
            bank.ledger.name().to_owned()
        }
        Pathology::Starvation => {
            let (done, report) = oneshot::channel();
            undo = Some(done);
            let b = bank.clone();
            tokio::spawn(async move { b.monthly_report(report).await });
            tokio::time::sleep(Duration::from_millis(20)).await;
            // The burst: three times as many clients as connections, straight at the bank.
            for c in 0..24u32 {
                let b = bank.clone();
                burst.spawn(async move {
                    loop {
                        let _ = b.balance(1 + c % ACCOUNTS).await;
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                });
            }
            bank.pool.name().to_owned()
        }
        Pathology::LeakedPermit => {
            injected.leak.store(true, Ordering::SeqCst);
            let (b, injected) = (bank.clone(), injected.clone());
            tokio::spawn(async move {
                b.export_statement(7).await;
                tokio::time::sleep(LINGER).await;
                b.exports.lock().await.clear();
                injected.leak.store(false, Ordering::SeqCst);
                info!(target: "demo", "leaked connection reclaimed after {} s", LINGER.as_secs());
            });
            bank.pool.name().to_owned()
        }
    };
    let outcome = reported(kind, &watched, &before, within).await;
    match outcome {
        Some(after) => info!(
            target: "demo",
            "detector reported {} on {watched:?} after {} ms: see the report above, /debug/findings and lockscope_findings_total{{kind=\"{}\"}}",
            p.name(),
            after.as_millis(),
            p.name()
        ),
        None => warn!(
            target: "demo",
            "no new {} finding on {watched:?} within {} s (a bug already reported is not reported again)",
            p.name(),
            within.as_secs()
        ),
    }
    burst.shutdown().await;
    if let Some(undo) = undo {
        let _ = undo.send(());
        info!(target: "demo", "{}: released; the finding stays in /debug/findings, lockscope_active_findings drops back", p.name());
    }
    outcome.is_some()
}
