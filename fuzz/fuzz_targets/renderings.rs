//! Any bytes as the names and sites in `/debug/graph`: the JSON round-trips them exactly and
//! the DOT keeps each inside one closed quoted string.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockscope_detector::__private::graph::lockorder::OrderEdgeSnapshot;
use lockscope_detector::{GraphSnapshot, WaitEdge, WaitNode};

#[path = "../../detector/tests/common/dot.rs"]
mod dot;
use dot::{dot_strings, dot_syntax};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // The first half of the characters is a label, the rest a site.
    let half = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(text.len(), |(i, _)| i);
    let (label, site) = text.split_at(half);
    let snap = GraphSnapshot {
        wait_for_nodes: vec![WaitNode {
            id: "lock:1".into(),
            label: label.to_owned(),
            kind: "lock",
            holders_total: Some(1),
            waiters_total: Some(0),
        }],
        wait_for_edges: vec![WaitEdge {
            from: "actor:2".into(),
            to: "lock:1".into(),
            relation: "held_by",
            site: site.to_owned(),
            permits: 1,
        }],
        lock_order: vec![OrderEdgeSnapshot {
            from: 1,
            to: 2,
            from_site: site.to_owned(),
            to_site: label.to_owned(),
            actor: label.to_owned(),
            inverted: false,
        }],
    };
    let json = serde_json::to_string(&snap).expect("serializable");
    let back: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert_eq!(back["wait_for_nodes"][0]["label"].as_str(), Some(label));
    assert_eq!(back["wait_for_edges"][0]["site"].as_str(), Some(site));
    let dot = snap.to_dot();
    let (strings, outside) = dot_strings(&dot).expect("every quote closed");
    assert!(strings.iter().any(|s| s == label));
    assert!(outside.chars().all(dot_syntax), "{outside:?}");
});
