//! Aggregates for `/metrics`, computed at scrape time from the primitives' atomics.
//!
//! One [`SeriesMetrics`] per `(lock, kind)` series: live primitives of that series plus the
//! retired statistics of dropped ones. `acquisitions` is derived (completed holds plus holds
//! alive now) and clamped so it never goes backwards between scrapes, as a counter must not.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use crate::base::clock;
use crate::base::stats::{HistogramSnapshot, StatsSnapshot};
use crate::model::finding::FindingKind;
use crate::report::finding;
use crate::state::channels;
use crate::state::held;
use crate::state::prim::{self, PrimKind};

/// Everything one series shows.
#[derive(Clone, Debug)]
pub struct SeriesMetrics {
    /// The `lock` label (a name, or `other` past the label cap).
    pub lock: Arc<str>,
    /// The primitive kind (its `kind` label).
    pub kind: PrimKind,
    /// `lockscope_acquisitions_total`.
    pub acquisitions: u64,
    /// `lockscope_contended_acquisitions_total`.
    pub contended: u64,
    /// `lockscope_try_failures_total`.
    pub try_failures: u64,
    /// `lockscope_timeouts_total`.
    pub timeouts: u64,
    /// `lockscope_cancelled_total`.
    pub cancelled: u64,
    /// `lockscope_wait_seconds`.
    pub wait: HistogramSnapshot,
    /// `lockscope_hold_seconds`.
    pub hold: HistogramSnapshot,
    /// `lockscope_waiters`.
    pub waiters: u64,
    /// `lockscope_oldest_wait_seconds`.
    pub oldest_wait_seconds: f64,
    /// `lockscope_holders`.
    pub holders: u64,
    /// `lockscope_permits_available` (semaphores).
    pub permits_available: Option<u64>,
    /// `lockscope_permits_capacity` (semaphores).
    pub permits_capacity: Option<u64>,
}

/// One channel series: the metered channels sharing a `(channel, kind)` label pair (see
/// `lockscope::tokio::mpsc`).
#[derive(Clone, Debug)]
pub struct ChannelMetrics {
    /// The `channel` label (a name, or `other` past the label cap).
    pub channel: Arc<str>,
    /// The `kind` label: `mpsc`, ...
    pub kind: &'static str,
    /// `lockscope_channel_depth`: messages queued now in its live channels.
    pub depth: u64,
    /// `lockscope_channel_capacity`: capacity of its live bounded channels; `None` for a
    /// series that only ever counted unbounded ones.
    pub capacity: Option<u64>,
    /// `lockscope_channel_send_wait_seconds`.
    pub send_wait: HistogramSnapshot,
    /// `lockscope_channel_recv_wait_seconds`.
    pub recv_wait: HistogramSnapshot,
}

/// Everything `/metrics` shows.
#[derive(Clone, Debug)]
pub struct MetricsSnapshot {
    /// One entry per series, in series order.
    pub series: Vec<SeriesMetrics>,
    /// `lockscope_dropped_series_total`.
    pub dropped_series: u64,
    /// `lockscope_findings_total{kind}`.
    pub findings_total: Vec<(FindingKind, u64)>,
    /// `lockscope_active_findings{kind}`.
    pub active_findings: Vec<(FindingKind, u64)>,
    /// `lockscope_detector_dropped_total{what}`.
    pub detector_dropped: [(&'static str, u64); 4],
    /// Live primitives.
    pub live_primitives: usize,
    /// `lockscope_live_primitives{kind}`: live primitives per `kind` label, in label order;
    /// every kind that has a series is listed, 0 included.
    pub live_by_kind: Vec<(&'static str, u64)>,
    /// `lockscope_watchdog_ticks_total`: analyses the watchdog thread has run.
    pub watchdog_ticks: u64,
    /// The `lockscope_channel_*` families: one entry per channel series, in creation order.
    pub channels: Vec<ChannelMetrics>,
}

static LAST_ACQ: LazyLock<Mutex<HashMap<u32, u64>>> = LazyLock::new(Mutex::default);

/// Aggregates every series now.
///
/// Completed acquisitions are read before live holds: a release leaves the books before it is
/// counted, so an acquisition ending during the scrape is seen once or not at all (an
/// undercount the clamp below hides), never twice.
pub fn metrics() -> MetricsSnapshot {
    let now = clock::precise_now();
    let mut live = 0;
    let mut by_kind: BTreeMap<&'static str, u64> = BTreeMap::new();
    let (mut series, dropped_series) = prim::with_series(|all, dropped, walk| {
        // Under the series lock, as unregistering moves a primitive's tallies into `retired`.
        let tallies = held::tallies();
        let mut series: Vec<SeriesMetrics> = all
            .iter()
            .map(|s| {
                let st: StatsSnapshot = s.retired;
                SeriesMetrics {
                    lock: s.name.clone(),
                    kind: s.kind,
                    acquisitions: st.hold.count(),
                    contended: st.contended,
                    try_failures: st.try_failures,
                    timeouts: st.timeouts,
                    cancelled: st.cancelled,
                    wait: st.wait,
                    hold: st.hold,
                    waiters: 0,
                    oldest_wait_seconds: 0.0,
                    holders: 0,
                    permits_available: s.kind.is_semaphore().then_some(0),
                    permits_capacity: s.kind.is_semaphore().then_some(0),
                }
            })
            .collect();
        // Live primitives: id -> (series, capacity if a semaphore, permits held).
        let mut prims: HashMap<u64, (usize, Option<u64>, u64)> = HashMap::new();
        for s in all {
            by_kind.entry(s.kind.as_str()).or_insert(0);
        }
        // The waits recorded in threads' slots (see `state::held::waits`), by primitive.
        let slot_waits = held::waits_by_prim();
        walk(&mut |p| {
            live += 1;
            *by_kind.entry(p.kind().as_str()).or_insert(0) += 1;
            let i = p.series() as usize;
            let Some(m) = series.get_mut(i) else {
                return;
            };
            let st = p.stats_with(&tallies.get(&p.id().0).copied().unwrap_or_default());
            m.acquisitions += st.hold.count();
            m.contended += st.contended;
            m.try_failures += st.try_failures;
            m.timeouts += st.timeouts;
            m.cancelled += st.cancelled;
            m.wait.merge(&st.wait);
            m.hold.merge(&st.hold);
            let mut oldest = None;
            if p.waiting() > 0 {
                let q = p.waiters.lock();
                m.waiters += q.len() as u64;
                oldest = q.oldest_since();
            }
            if let Some(w) = slot_waits.get(&p.id().0) {
                m.waiters += w.len() as u64;
                // Sorted by start: the first is the oldest.
                let first = w.first().map(|w| w.since_ns);
                oldest = match (oldest, first) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            if let Some(oldest) = oldest {
                let age = now.saturating_sub(oldest) as f64 / 1e9;
                if age > m.oldest_wait_seconds {
                    m.oldest_wait_seconds = age;
                }
            }
            let cap = p.kind().is_semaphore().then(|| p.capacity());
            prims.insert(p.id().0, (i, cap, 0));
        });
        // Then the live holds.
        held::for_each_all(|h| {
            let Some((i, _, permits)) = prims.get_mut(&h.prim) else {
                return;
            };
            *permits += u64::from(h.permits);
            // A split-off part is not an acquisition of its own, but holds its permits.
            if h.flags & held::FLAG_SPLIT == 0 {
                series[*i].acquisitions += 1;
                series[*i].holders += 1;
            }
        });
        for (i, cap, held) in prims.into_values() {
            if let Some(cap) = cap {
                let m = &mut series[i];
                // Saturating: nine semaphores of `MAX_PERMITS` sharing a name overflow a u64.
                let total = m.permits_capacity.get_or_insert(0);
                *total = total.saturating_add(cap);
                let available = m.permits_available.get_or_insert(0);
                *available = available.saturating_add(cap.saturating_sub(held));
            }
        }
        (series, dropped)
    });
    {
        let mut last = LAST_ACQ.lock();
        for (i, m) in series.iter_mut().enumerate() {
            let l = last.entry(i as u32).or_default();
            m.acquisitions = m.acquisitions.max(*l);
            *l = m.acquisitions;
        }
    }
    MetricsSnapshot {
        series,
        dropped_series,
        findings_total: finding::totals(),
        active_findings: finding::active_counts(),
        detector_dropped: finding::dropped_counts(),
        live_primitives: live,
        live_by_kind: by_kind.into_iter().collect(),
        watchdog_ticks: crate::base::ticks::watchdog_ticks(),
        channels: channel_metrics(),
    }
}

/// The channel series now (histograms read after the gauges: both only ever move forward or
/// are a sample, so no lock orders them).
fn channel_metrics() -> Vec<ChannelMetrics> {
    channels::series_now()
        .into_iter()
        .map(|now| ChannelMetrics {
            channel: now.series.name().clone(),
            kind: now.series.kind(),
            depth: now.depth,
            capacity: now.capacity,
            send_wait: now.series.send_wait(),
            recv_wait: now.series.recv_wait(),
        })
        .collect()
}

pub(crate) fn last_lock() -> parking_lot::MutexGuard<'static, impl Sized> {
    LAST_ACQ.lock()
}
