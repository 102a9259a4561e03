//! A scrape of a process where no primitive exists yet: exact text.
//!
//! This file is its own test binary, so its process never creates a primitive. Every family
//! of API.md is named (families without samples get their `# HELP`/`# TYPE` lines), and the
//! per-finding-kind and per-`what` families have a zero sample for every value.

mod common;

const EXPECTED: &str = concat!(
    "\
# HELP lockscope_acquisitions_total Acquisitions granted (completed holds plus holds alive now).\n\
# TYPE lockscope_acquisitions_total counter\n\
# HELP lockscope_active_findings Findings that still hold now, per finding kind.\n\
# TYPE lockscope_active_findings gauge\n\
lockscope_active_findings{kind=\"blocking-in-async\"} 0\n\
lockscope_active_findings{kind=\"deadlock\"} 0\n\
lockscope_active_findings{kind=\"leaked-permit\"} 0\n\
lockscope_active_findings{kind=\"lock-order-inversion\"} 0\n\
lockscope_active_findings{kind=\"nested-acquire\"} 0\n\
lockscope_active_findings{kind=\"starvation\"} 0\n\
lockscope_active_findings{kind=\"stuck-queue\"} 0\n\
# HELP lockscope_build_info Always 1; the version label is the lockscope version serving these metrics.\n\
# TYPE lockscope_build_info gauge\n\
lockscope_build_info{version=\"",
    env!("CARGO_PKG_VERSION"),
    "\"} 1\n\
# HELP lockscope_cancelled_total Acquire futures dropped while waiting.\n\
# TYPE lockscope_cancelled_total counter\n\
# HELP lockscope_channel_capacity Capacity of the live bounded channels of this name (0 when none is alive).\n\
# TYPE lockscope_channel_capacity gauge\n\
# HELP lockscope_channel_depth Messages queued now in the channels of this name (mpsc: sent and not yet received; broadcast: not yet taken by the slowest receiver; watch: always 0).\n\
# TYPE lockscope_channel_depth gauge\n\
# HELP lockscope_channel_recv_wait_seconds Time receives waited for a message, in seconds (waits that ended, completed or cancelled).\n\
# TYPE lockscope_channel_recv_wait_seconds histogram\n\
# HELP lockscope_channel_send_wait_seconds Time sends waited for capacity, in seconds (waits that ended, completed or cancelled).\n\
# TYPE lockscope_channel_send_wait_seconds histogram\n\
# HELP lockscope_contended_acquisitions_total Acquisitions that had to wait.\n\
# TYPE lockscope_contended_acquisitions_total counter\n\
# HELP lockscope_detector_dropped_total Events, edges or findings the detector dropped to stay within its memory bounds, and watchdog ticks lost to a panicking rule (what=\"tick\").\n\
# TYPE lockscope_detector_dropped_total counter\n\
lockscope_detector_dropped_total{what=\"edges\"} 0\n\
lockscope_detector_dropped_total{what=\"events\"} 0\n\
lockscope_detector_dropped_total{what=\"findings\"} 0\n\
lockscope_detector_dropped_total{what=\"tick\"} 0\n\
# HELP lockscope_dropped_series_total Primitives and channels folded into lock=\"other\" or channel=\"other\" by the label cap.\n\
# TYPE lockscope_dropped_series_total counter\n\
lockscope_dropped_series_total 0\n\
# HELP lockscope_findings_total Findings made, per finding kind.\n\
# TYPE lockscope_findings_total counter\n\
lockscope_findings_total{kind=\"blocking-in-async\"} 0\n\
lockscope_findings_total{kind=\"deadlock\"} 0\n\
lockscope_findings_total{kind=\"leaked-permit\"} 0\n\
lockscope_findings_total{kind=\"lock-order-inversion\"} 0\n\
lockscope_findings_total{kind=\"nested-acquire\"} 0\n\
lockscope_findings_total{kind=\"starvation\"} 0\n\
lockscope_findings_total{kind=\"stuck-queue\"} 0\n\
# HELP lockscope_hold_seconds Time guards and permits were held, in seconds (completed holds).\n\
# TYPE lockscope_hold_seconds histogram\n\
# HELP lockscope_holders Guards and permits held now.\n\
# TYPE lockscope_holders gauge\n\
# HELP lockscope_live_primitives Primitives alive now, per kind.\n\
# TYPE lockscope_live_primitives gauge\n\
# HELP lockscope_oldest_wait_seconds Age of the oldest waiter now, in seconds (0 when nobody waits).\n\
# TYPE lockscope_oldest_wait_seconds gauge\n\
# HELP lockscope_permits_available Semaphore permits not held by anyone now.\n\
# TYPE lockscope_permits_available gauge\n\
# HELP lockscope_permits_capacity Semaphore capacity now (after add_permits and forget).\n\
# TYPE lockscope_permits_capacity gauge\n\
# HELP lockscope_timeouts_total Timed acquisitions that gave up at their deadline.\n\
# TYPE lockscope_timeouts_total counter\n\
# HELP lockscope_try_failures_total try_ acquisitions that gave up because the primitive was unavailable.\n\
# TYPE lockscope_try_failures_total counter\n\
# HELP lockscope_wait_seconds Time waited by acquisitions that had to wait, in seconds.\n\
# TYPE lockscope_wait_seconds histogram\n\
# HELP lockscope_waiters Acquisitions waiting now (queue depth).\n\
# TYPE lockscope_waiters gauge\n\
# HELP lockscope_watchdog_ticks_total Analyses the watchdog thread has run (a flat line is a dead watchdog).\n\
# TYPE lockscope_watchdog_ticks_total counter\n\
lockscope_watchdog_ticks_total 0\n\
"
);

#[test]
fn an_empty_scrape_is_exactly_the_headers_and_the_zero_samples() {
    assert_eq!(lockscope_exporter::render(), EXPECTED);
}

#[test]
fn every_api_md_family_is_named_on_an_empty_scrape() {
    let text = lockscope_exporter::render();
    for (name, kind) in common::API_MD_FAMILIES {
        assert!(
            text.contains(&format!("# TYPE {name} {kind}\n")),
            "{name}: TYPE line"
        );
        assert!(
            text.contains(&format!("# HELP {name} ")),
            "{name}: HELP line"
        );
    }
}

#[test]
fn an_empty_scrape_passes_promtool() {
    common::promtool_check_metrics(&lockscope_exporter::render());
}
