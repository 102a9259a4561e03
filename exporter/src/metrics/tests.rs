use super::*;

/// The families of API.md's table, copied from it by hand: the table above must match.
const API_MD: &[(&str, &str, &[&str])] = &[
    ("lockscope_acquisitions_total", "counter", &["lock", "kind"]),
    (
        "lockscope_contended_acquisitions_total",
        "counter",
        &["lock", "kind"],
    ),
    ("lockscope_try_failures_total", "counter", &["lock", "kind"]),
    ("lockscope_timeouts_total", "counter", &["lock", "kind"]),
    ("lockscope_cancelled_total", "counter", &["lock", "kind"]),
    ("lockscope_wait_seconds", "histogram", &["lock", "kind"]),
    ("lockscope_hold_seconds", "histogram", &["lock", "kind"]),
    ("lockscope_waiters", "gauge", &["lock", "kind"]),
    ("lockscope_oldest_wait_seconds", "gauge", &["lock", "kind"]),
    ("lockscope_holders", "gauge", &["lock", "kind"]),
    ("lockscope_permits_available", "gauge", &["lock"]),
    ("lockscope_permits_capacity", "gauge", &["lock"]),
    ("lockscope_findings_total", "counter", &["kind"]),
    ("lockscope_active_findings", "gauge", &["kind"]),
    ("lockscope_dropped_series_total", "counter", &[]),
    ("lockscope_detector_dropped_total", "counter", &["what"]),
    ("lockscope_live_primitives", "gauge", &["kind"]),
    ("lockscope_watchdog_ticks_total", "counter", &[]),
    ("lockscope_build_info", "gauge", &["version"]),
    ("lockscope_channel_depth", "gauge", &["channel", "kind"]),
    ("lockscope_channel_capacity", "gauge", &["channel", "kind"]),
    (
        "lockscope_channel_send_wait_seconds",
        "histogram",
        &["channel", "kind"],
    ),
    (
        "lockscope_channel_recv_wait_seconds",
        "histogram",
        &["channel", "kind"],
    ),
];

#[test]
fn table_matches_api_md() {
    assert_eq!(METRICS.len(), API_MD.len());
    for (def, (name, kind, labels)) in METRICS.iter().zip(API_MD) {
        assert_eq!(def.name, *name);
        assert_eq!(format!("{:?}", def.kind).to_lowercase(), *kind, "{name}");
        assert_eq!(def.labels, *labels, "{name}");
        assert!(
            !def.help.contains(['\\', '\n']),
            "{name}: help must not need escaping"
        );
        let label_count = match def.source {
            Source::Series(_)
            | Source::SeriesHistogram(_)
            | Source::Channel(_)
            | Source::ChannelHistogram(_) => 2,
            Source::Semaphore(_)
            | Source::FindingKinds(_)
            | Source::DetectorDropped
            | Source::LiveByKind
            | Source::BuildInfo => 1,
            Source::Scalar(_) => 0,
        };
        assert_eq!(def.labels.len(), label_count, "{name}: labels vs source");
        assert_eq!(
            matches!(
                def.source,
                Source::SeriesHistogram(_) | Source::ChannelHistogram(_)
            ),
            def.kind == MetricType::HISTOGRAM,
            "{name}: histogram source"
        );
    }
}

#[test]
fn descriptors_are_valid() {
    let c = LockscopeCollector::new();
    assert_eq!(c.desc().len(), METRICS.len());
}

#[test]
fn histogram_is_cumulative() {
    let mut snap = HistogramSnapshot::default();
    snap.buckets[0] = 2;
    snap.buckets[3] = 1;
    snap.buckets[13] = 4; // +Inf only
    snap.sum_ns = 1_500_000_000;
    let h = histogram(&snap);
    let counts: Vec<u64> = h
        .get_bucket()
        .iter()
        .map(|b| b.cumulative_count())
        .collect();
    assert_eq!(counts, [2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3]);
    assert_eq!(h.get_sample_count(), 7);
    assert_eq!(h.get_sample_sum(), 1.5);
    let bounds: Vec<f64> = h.get_bucket().iter().map(|b| b.upper_bound()).collect();
    assert_eq!(bounds, BUCKETS_SECONDS);
}

#[test]
fn empty_families_get_headers_in_name_order() {
    let text = render_families(&[]);
    let mut expected = String::new();
    let mut defs: Vec<&MetricDef> = METRICS.iter().collect();
    defs.sort_by_key(|d| d.name);
    for d in defs {
        let mut out = Vec::new();
        write_header(&mut out, d);
        expected.push_str(std::str::from_utf8(&out).unwrap());
    }
    assert_eq!(text, expected);
    assert!(text.starts_with(
        "# HELP lockscope_acquisitions_total Acquisitions granted (completed holds plus \
         holds alive now).\n# TYPE lockscope_acquisitions_total counter\n"
    ));
}
