//! The label cap counts channels and primitives together: past it, a channel is counted in
//! `channel="other"` (its depth and capacity summed there) and in
//! `lockscope_dropped_series_total`, as a primitive past it is in `lock="other"`.
//!
//! Its own test binary: the cap (1,000 series by default) is process-wide, and this test
//! fills it.

use std::panic::Location;

use lockscope_detector::__private::hooks::Channel;
use lockscope_detector::__private::prim::{PrimCell, PrimKind};

#[test]
fn channels_past_the_label_cap_fold_into_other() {
    let cap = lockscope_detector::config::Config::default().max_series;
    let site = Location::caller();
    let kept: Vec<_> = (0..cap)
        .map(|i| Channel::metered("mpsc", Some(&format!("cap/{i}")), site, Some(2)))
        .collect();
    let folded: Vec<_> = (0..3)
        .map(|i| {
            let c = Channel::metered("mpsc", Some(&format!("past/{i}")), site, Some(4));
            c.sent(1);
            c
        })
        .collect();
    // One more channel of a name already counted takes no slot.
    let again = Channel::metered("mpsc", Some("cap/0"), site, Some(2));
    // A primitive past the cap folds too: one cap for both.
    let lock = PrimCell::new(Some("cap/lock".into()), PrimKind::Mutex, site, 1);
    lock.get();

    let text = lockscope_exporter::render();
    assert_eq!(
        text.matches("lockscope_channel_depth{").count(),
        cap + 1,
        "{cap} names and other"
    );
    assert!(
        text.contains("lockscope_channel_depth{channel=\"other\",kind=\"mpsc\"} 3\n"),
        "other sums the folded depths"
    );
    assert!(text.contains("lockscope_channel_capacity{channel=\"other\",kind=\"mpsc\"} 12\n"));
    assert!(text.contains("lockscope_channel_capacity{channel=\"cap/0\",kind=\"mpsc\"} 4\n"));
    assert!(!text.contains("past/"));
    assert!(text.contains("lockscope_holders{lock=\"other\",kind=\"mutex\"} 0\n"));
    assert!(
        text.contains("lockscope_dropped_series_total 4\n"),
        "three channels and a lock folded"
    );
    drop((kept, folded, again, lock));
}
