//! `/metrics`: the one table of metric definitions, the [`LockscopeCollector`] that turns the
//! detector's scrape-time aggregates into Prometheus families, and the text rendering.
//!
//! Nothing here runs on the acquire path: the primitives keep plain atomics in the detector,
//! and [`lockscope_detector::metrics()`] adds them up when Prometheus scrapes.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use lockscope_detector::{
    BUCKETS_SECONDS, ChannelMetrics, FindingKind, HistogramSnapshot, MetricsSnapshot, SeriesMetrics,
};
use prometheus::core::{Collector, Desc};
use prometheus::proto::{self, MetricType};
use prometheus::{Encoder as _, Registry, TextEncoder};

/// Content type of the `/metrics` response (Prometheus text format 0.0.4).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

const LOCK: &str = "lock";
const CHANNEL: &str = "channel";
const KIND: &str = "kind";
const WHAT: &str = "what";
const VERSION: &str = "version";

/// Where a family's samples come from in a [`MetricsSnapshot`].
#[derive(Clone, Copy)]
pub(crate) enum Source {
    /// One sample per `(lock, kind)` series.
    Series(fn(&SeriesMetrics) -> f64),
    /// One histogram per `(lock, kind)` series.
    SeriesHistogram(fn(&SeriesMetrics) -> &HistogramSnapshot),
    /// One sample per semaphore series, labelled by `lock` only.
    Semaphore(fn(&SeriesMetrics) -> Option<u64>),
    /// One sample per finding kind, every kind present (zero included).
    FindingKinds(fn(&MetricsSnapshot) -> &[(FindingKind, u64)]),
    /// One sample per `what` of [`lockscope_detector::dropped_counts`].
    DetectorDropped,
    /// One sample per primitive `kind` label: the live primitives of that kind.
    LiveByKind,
    /// One sample, always 1, labelled with this crate's version.
    BuildInfo,
    /// One unlabelled sample.
    Scalar(fn(&MetricsSnapshot) -> f64),
    /// One sample per `(channel, kind)` series that has a value (`None`: none, as an unbounded
    /// channel's capacity).
    Channel(fn(&ChannelMetrics) -> Option<f64>),
    /// One histogram per `(channel, kind)` series.
    ChannelHistogram(fn(&ChannelMetrics) -> &HistogramSnapshot),
}

/// One row of [`METRICS`]: a metric family exactly as API.md names it.
pub(crate) struct MetricDef {
    /// Family name.
    pub(crate) name: &'static str,
    /// `# HELP` text (no backslash, no newline: it is written as is).
    pub(crate) help: &'static str,
    /// Prometheus type.
    pub(crate) kind: MetricType,
    /// Label names, in the order they are written.
    pub(crate) labels: &'static [&'static str],
    /// Where the values come from.
    pub(crate) source: Source,
}

/// Every family `/metrics` exposes, in API.md's order. The collector, the descriptors, the
/// sample-less family headers and the tests all read this table and nothing else.
pub(crate) const METRICS: &[MetricDef] = &[
    MetricDef {
        name: "lockscope_acquisitions_total",
        help: "Acquisitions granted (completed holds plus holds alive now).",
        kind: MetricType::COUNTER,
        labels: &[LOCK, KIND],
        source: Source::Series(|s| s.acquisitions as f64),
    },
    MetricDef {
        name: "lockscope_contended_acquisitions_total",
        help: "Acquisitions that had to wait.",
        kind: MetricType::COUNTER,
        labels: &[LOCK, KIND],
        source: Source::Series(|s| s.contended as f64),
    },
    MetricDef {
        name: "lockscope_try_failures_total",
        help: "try_ acquisitions that gave up because the primitive was unavailable.",
        kind: MetricType::COUNTER,
        labels: &[LOCK, KIND],
        source: Source::Series(|s| s.try_failures as f64),
    },
    MetricDef {
        name: "lockscope_timeouts_total",
        help: "Timed acquisitions that gave up at their deadline.",
        kind: MetricType::COUNTER,
        labels: &[LOCK, KIND],
        source: Source::Series(|s| s.timeouts as f64),
    },
    MetricDef {
        name: "lockscope_cancelled_total",
        help: "Acquire futures dropped while waiting.",
        kind: MetricType::COUNTER,
        labels: &[LOCK, KIND],
        source: Source::Series(|s| s.cancelled as f64),
    },
    MetricDef {
        name: "lockscope_wait_seconds",
        help: "Time waited by acquisitions that had to wait, in seconds.",
        kind: MetricType::HISTOGRAM,
        labels: &[LOCK, KIND],
        source: Source::SeriesHistogram(wait_histogram),
    },
    MetricDef {
        name: "lockscope_hold_seconds",
        help: "Time guards and permits were held, in seconds (completed holds).",
        kind: MetricType::HISTOGRAM,
        labels: &[LOCK, KIND],
        source: Source::SeriesHistogram(hold_histogram),
    },
    MetricDef {
        name: "lockscope_waiters",
        help: "Acquisitions waiting now (queue depth).",
        kind: MetricType::GAUGE,
        labels: &[LOCK, KIND],
        source: Source::Series(|s| s.waiters as f64),
    },
    MetricDef {
        name: "lockscope_oldest_wait_seconds",
        help: "Age of the oldest waiter now, in seconds (0 when nobody waits).",
        kind: MetricType::GAUGE,
        labels: &[LOCK, KIND],
        source: Source::Series(|s| s.oldest_wait_seconds),
    },
    MetricDef {
        name: "lockscope_holders",
        help: "Guards and permits held now.",
        kind: MetricType::GAUGE,
        labels: &[LOCK, KIND],
        source: Source::Series(|s| s.holders as f64),
    },
    MetricDef {
        name: "lockscope_permits_available",
        help: "Semaphore permits not held by anyone now.",
        kind: MetricType::GAUGE,
        labels: &[LOCK],
        source: Source::Semaphore(|s| s.permits_available),
    },
    MetricDef {
        name: "lockscope_permits_capacity",
        help: "Semaphore capacity now (after add_permits and forget).",
        kind: MetricType::GAUGE,
        labels: &[LOCK],
        source: Source::Semaphore(|s| s.permits_capacity),
    },
    MetricDef {
        name: "lockscope_findings_total",
        help: "Findings made, per finding kind.",
        kind: MetricType::COUNTER,
        labels: &[KIND],
        source: Source::FindingKinds(|m| &m.findings_total),
    },
    MetricDef {
        name: "lockscope_active_findings",
        help: "Findings that still hold now, per finding kind.",
        kind: MetricType::GAUGE,
        labels: &[KIND],
        source: Source::FindingKinds(|m| &m.active_findings),
    },
    MetricDef {
        name: "lockscope_dropped_series_total",
        help: "Primitives and channels folded into lock=\"other\" or channel=\"other\" by the label cap.",
        kind: MetricType::COUNTER,
        labels: &[],
        source: Source::Scalar(|m| m.dropped_series as f64),
    },
    MetricDef {
        name: "lockscope_detector_dropped_total",
        help: "Events, edges or findings the detector dropped to stay within its memory bounds, and watchdog ticks lost to a panicking rule (what=\"tick\").",
        kind: MetricType::COUNTER,
        labels: &[WHAT],
        source: Source::DetectorDropped,
    },
    MetricDef {
        name: "lockscope_live_primitives",
        help: "Primitives alive now, per kind.",
        kind: MetricType::GAUGE,
        labels: &[KIND],
        source: Source::LiveByKind,
    },
    MetricDef {
        name: "lockscope_watchdog_ticks_total",
        help: "Analyses the watchdog thread has run (a flat line is a dead watchdog).",
        kind: MetricType::COUNTER,
        labels: &[],
        source: Source::Scalar(|m| m.watchdog_ticks as f64),
    },
    MetricDef {
        name: "lockscope_build_info",
        help: "Always 1; the version label is the lockscope version serving these metrics.",
        kind: MetricType::GAUGE,
        labels: &[VERSION],
        source: Source::BuildInfo,
    },
    MetricDef {
        name: "lockscope_channel_depth",
        help: "Messages queued now in the channels of this name (mpsc: sent and not yet received; broadcast: not yet taken by the slowest receiver; watch: always 0).",
        kind: MetricType::GAUGE,
        labels: &[CHANNEL, KIND],
        source: Source::Channel(|c| Some(c.depth as f64)),
    },
    MetricDef {
        name: "lockscope_channel_capacity",
        help: "Capacity of the live bounded channels of this name (0 when none is alive).",
        kind: MetricType::GAUGE,
        labels: &[CHANNEL, KIND],
        source: Source::Channel(|c| c.capacity.map(|n| n as f64)),
    },
    MetricDef {
        name: "lockscope_channel_send_wait_seconds",
        help: "Time sends waited for capacity, in seconds (waits that ended, completed or cancelled).",
        kind: MetricType::HISTOGRAM,
        labels: &[CHANNEL, KIND],
        source: Source::ChannelHistogram(|c| &c.send_wait),
    },
    MetricDef {
        name: "lockscope_channel_recv_wait_seconds",
        help: "Time receives waited for a message, in seconds (waits that ended, completed or cancelled).",
        kind: MetricType::HISTOGRAM,
        labels: &[CHANNEL, KIND],
        source: Source::ChannelHistogram(|c| &c.recv_wait),
    },
];

fn wait_histogram(s: &SeriesMetrics) -> &HistogramSnapshot {
    &s.wait
}

fn hold_histogram(s: &SeriesMetrics) -> &HistogramSnapshot {
    &s.hold
}

/// A [`prometheus::core::Collector`] exposing every lockscope family, computed from
/// [`lockscope_detector::metrics()`] each time it is collected.
///
/// `/metrics` uses one internally. Register another in your own [`prometheus::Registry`] to
/// serve lockscope's families beside your own metrics from an endpoint you already have;
/// do not register it twice in one registry (the registry refuses duplicate descriptors).
///
/// ```
/// use lockscope_exporter::LockscopeCollector;
///
/// let registry = prometheus::Registry::new();
/// registry.register(Box::new(LockscopeCollector::new())).unwrap();
/// let families = registry.gather();
/// assert!(families.iter().any(|f| f.name() == "lockscope_findings_total"));
/// ```
pub struct LockscopeCollector {
    descs: Vec<Desc>,
}

impl LockscopeCollector {
    /// A collector for every family of lockscope's metric table.
    pub fn new() -> LockscopeCollector {
        let descs = METRICS
            .iter()
            .map(|def| {
                Desc::new(
                    def.name.to_owned(),
                    def.help.to_owned(),
                    def.labels.iter().map(|l| (*l).to_owned()).collect(),
                    Default::default(),
                )
                // UNWRAP: the names and labels are constants checked by the
                // `descriptors_are_valid` test; Desc::new only rejects invalid names.
                .expect("lockscope metric definitions are valid")
            })
            .collect();
        LockscopeCollector { descs }
    }
}

impl Default for LockscopeCollector {
    fn default() -> LockscopeCollector {
        LockscopeCollector::new()
    }
}

impl std::fmt::Debug for LockscopeCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockscopeCollector")
            .field("families", &self.descs.len())
            .finish()
    }
}

impl Collector for LockscopeCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<proto::MetricFamily> {
        families(&lockscope_detector::metrics())
    }
}

/// Builds every family of [`METRICS`] from one snapshot. Families without samples are
/// returned empty (a registry prunes them; [`render`] writes their headers).
pub(crate) fn families(snapshot: &MetricsSnapshot) -> Vec<proto::MetricFamily> {
    let series = merge_series(&snapshot.series);
    METRICS
        .iter()
        .map(|def| {
            let mut mf = proto::MetricFamily::default();
            mf.set_name(def.name.to_owned());
            mf.set_help(def.help.to_owned());
            mf.set_field_type(def.kind);
            mf.set_metric(samples(def, snapshot, &series));
            mf
        })
        .collect()
}

/// Series keyed by their `(lock, kind)` label values. The detector keys series by
/// `(name, PrimKind)`, and two kinds share a label (`parking_lot::Mutex` and `ReentrantMutex`
/// are both `blocking_mutex`): they are added up here so no label set appears twice.
fn merge_series(all: &[SeriesMetrics]) -> Vec<SeriesMetrics> {
    let mut by_labels: BTreeMap<(Arc<str>, &'static str), SeriesMetrics> = BTreeMap::new();
    for s in all {
        match by_labels.entry((s.lock.clone(), s.kind.as_str())) {
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(s.clone());
            }
            std::collections::btree_map::Entry::Occupied(mut e) => add_series(e.get_mut(), s),
        }
    }
    by_labels.into_values().collect()
}

fn add_series(into: &mut SeriesMetrics, s: &SeriesMetrics) {
    into.acquisitions += s.acquisitions;
    into.contended += s.contended;
    into.try_failures += s.try_failures;
    into.timeouts += s.timeouts;
    into.cancelled += s.cancelled;
    into.wait.merge(&s.wait);
    into.hold.merge(&s.hold);
    into.waiters += s.waiters;
    into.oldest_wait_seconds = into.oldest_wait_seconds.max(s.oldest_wait_seconds);
    into.holders += s.holders;
    into.permits_available = add_opt(into.permits_available, s.permits_available);
    into.permits_capacity = add_opt(into.permits_capacity, s.permits_capacity);
}

fn add_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    }
}

fn samples(
    def: &MetricDef,
    snapshot: &MetricsSnapshot,
    series: &[SeriesMetrics],
) -> Vec<proto::Metric> {
    match def.source {
        Source::Series(value) => series
            .iter()
            .map(|s| scalar(def.kind, labels(def, &[&s.lock, s.kind.as_str()]), value(s)))
            .collect(),
        Source::SeriesHistogram(hist) => series
            .iter()
            .map(|s| {
                let mut m = proto::Metric::from_label(labels(def, &[&s.lock, s.kind.as_str()]));
                m.set_histogram(histogram(hist(s)));
                m
            })
            .collect(),
        Source::Semaphore(value) => series
            .iter()
            .filter(|s| s.kind.is_semaphore())
            .map(|s| {
                let v = value(s).unwrap_or(0) as f64;
                scalar(def.kind, labels(def, &[&s.lock]), v)
            })
            .collect(),
        Source::FindingKinds(counts) => FindingKind::ALL
            .iter()
            .map(|k| {
                let n = counts(snapshot)
                    .iter()
                    .find(|(kind, _)| kind == k)
                    .map_or(0, |(_, n)| *n);
                scalar(def.kind, labels(def, &[k.as_str()]), n as f64)
            })
            .collect(),
        Source::DetectorDropped => snapshot
            .detector_dropped
            .iter()
            .map(|(what, n)| scalar(def.kind, labels(def, &[what]), *n as f64))
            .collect(),
        Source::LiveByKind => snapshot
            .live_by_kind
            .iter()
            .map(|(kind, n)| scalar(def.kind, labels(def, &[kind]), *n as f64))
            .collect(),
        Source::BuildInfo => vec![scalar(
            def.kind,
            labels(def, &[env!("CARGO_PKG_VERSION")]),
            1.0,
        )],
        Source::Scalar(value) => vec![scalar(def.kind, Vec::new(), value(snapshot))],
        Source::Channel(value) => snapshot
            .channels
            .iter()
            .filter_map(|c| {
                let v = value(c)?;
                Some(scalar(def.kind, labels(def, &[&c.channel, c.kind]), v))
            })
            .collect(),
        Source::ChannelHistogram(hist) => snapshot
            .channels
            .iter()
            .map(|c| {
                let mut m = proto::Metric::from_label(labels(def, &[&c.channel, c.kind]));
                m.set_histogram(histogram(hist(c)));
                m
            })
            .collect(),
    }
}

fn labels(def: &MetricDef, values: &[&str]) -> Vec<proto::LabelPair> {
    debug_assert_eq!(def.labels.len(), values.len(), "{}: label count", def.name);
    def.labels
        .iter()
        .zip(values)
        .map(|(name, value)| {
            let mut p = proto::LabelPair::default();
            p.set_name((*name).to_owned());
            p.set_value((*value).to_owned());
            p
        })
        .collect()
}

fn scalar(kind: MetricType, labels: Vec<proto::LabelPair>, v: f64) -> proto::Metric {
    let mut m = proto::Metric::from_label(labels);
    match kind {
        MetricType::COUNTER => {
            let mut c = proto::Counter::default();
            c.set_value(v);
            m.set_counter(c);
        }
        _ => {
            let mut g = proto::Gauge::default();
            g.set_value(v);
            m.set_gauge(g);
        }
    }
    m
}

/// The detector counts per bucket; Prometheus wants cumulative counts. The `+Inf` bucket is
/// the sample count, which the encoder writes itself.
fn histogram(h: &HistogramSnapshot) -> proto::Histogram {
    let mut cumulative = 0u64;
    let buckets = BUCKETS_SECONDS
        .iter()
        .zip(h.buckets)
        .map(|(bound, n)| {
            cumulative += n;
            let mut b = proto::Bucket::default();
            b.set_upper_bound(*bound);
            b.set_cumulative_count(cumulative);
            b
        })
        .collect();
    let mut out = proto::Histogram::default();
    out.set_bucket(buckets);
    out.set_sample_count(h.count());
    out.set_sample_sum(h.sum_ns as f64 / 1e9);
    out
}

static REGISTRY: LazyLock<Registry> = LazyLock::new(|| {
    let registry = Registry::new();
    registry
        .register(Box::new(LockscopeCollector::new()))
        // UNWRAP: a fresh registry holding one collector whose descriptors are distinct.
        .expect("a fresh registry accepts the lockscope collector");
    registry
});

/// Renders `/metrics` now: every lockscope family in Prometheus text format 0.0.4, sorted by
/// name, as [`serve`](crate::serve)'s `/metrics` answers it.
///
/// Families with samples come from the `prometheus` crate's [`TextEncoder`]. That encoder
/// refuses a family without samples, and a per-lock family has none until a primitive of
/// its kind exists (`lockscope_permits_*` until a semaphore exists); for those this writes
/// the `# HELP` and `# TYPE` lines alone, which the text format allows, so every family of
/// the contract is named on every scrape. Prometheus stores no series for such a family:
/// queries over it return no data until the first primitive appears (the dashboards show
/// `0` then; see `dashboards/README.md`).
///
/// Cost: proportional to the live primitives (one pass over them and their holds) plus the
/// series (at most the label cap, 1,000 names by default, plus `other`).
///
/// ```
/// let text = lockscope_exporter::render();
/// assert!(text.contains("# TYPE lockscope_wait_seconds histogram"));
/// assert!(text.contains("lockscope_active_findings{kind=\"deadlock\"} 0"));
/// ```
pub fn render() -> String {
    render_families(&REGISTRY.gather())
}

/// Writes gathered families, plus the headers of the families of [`METRICS`] that had no
/// sample, in name order.
pub(crate) fn render_families(gathered: &[proto::MetricFamily]) -> String {
    let mut by_name: BTreeMap<&str, Option<&proto::MetricFamily>> =
        METRICS.iter().map(|d| (d.name, None)).collect();
    for mf in gathered {
        by_name.insert(mf.name(), Some(mf));
    }
    let encoder = TextEncoder::new();
    let mut out = Vec::with_capacity(64 * 1024);
    for (name, mf) in by_name {
        match mf {
            Some(mf) => {
                // UNWRAP: writing into a Vec cannot fail, and `gather` pruned the families
                // without samples, the only input the text encoder rejects.
                encoder
                    .encode(std::slice::from_ref(mf), &mut out)
                    .expect("the text encoder accepts a gathered family");
            }
            None => {
                // UNWRAP: only names of METRICS are ever absent from `gathered`.
                let def = METRICS
                    .iter()
                    .find(|d| d.name == name)
                    .expect("a METRICS row");
                write_header(&mut out, def);
            }
        }
    }
    // UNWRAP: the encoder writes UTF-8 (names, escaped UTF-8 label values, numbers), and so
    // does `write_header`.
    String::from_utf8(out).expect("the text format is UTF-8")
}

/// `# HELP` and `# TYPE` of a family without samples, byte for byte as the encoder writes
/// them for one with samples.
fn write_header(out: &mut Vec<u8>, def: &MetricDef) {
    let kind = match def.kind {
        MetricType::COUNTER => "counter",
        MetricType::GAUGE => "gauge",
        MetricType::HISTOGRAM => "histogram",
        MetricType::SUMMARY => "summary",
        MetricType::UNTYPED => "untyped",
    };
    out.extend_from_slice(format!("# HELP {} {}\n", def.name, def.help).as_bytes());
    out.extend_from_slice(format!("# TYPE {} {kind}\n", def.name).as_bytes());
}

#[cfg(test)]
mod tests;
