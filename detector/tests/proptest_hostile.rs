//! Hostile input, as property tests (issue 17): lock names (quotes, newlines, `<script>`,
//! `"]; evil`, control characters, huge), `LOCKSCOPE_*` values, and the JSON, DOT and text
//! renderings of hostile names. Nothing may panic; names come out valid; every rendering
//! escapes what it must so that a name can neither break the format nor smuggle content.
//!
//! The seed is fixed (see `common/proptest_config.rs`); explore more with
//! `PROPTEST_RNG_SEED=<n>` and `PROPTEST_CASES=<n>`.

use std::panic::Location;

use lockscope_detector::__private::graph::lockorder::OrderEdgeSnapshot;
use lockscope_detector::__private::prim::{MAX_NAME_LEN, register};
use lockscope_detector::config::parse_ms;
use lockscope_detector::{GraphSnapshot, PrimKind, WaitEdge, WaitNode, validate_name};
use proptest::prelude::*;

#[path = "common/proptest_config.rs"]
mod proptest_config;

fn config(cases: u32) -> ProptestConfig {
    proptest_config::config(cases, 0x0b57_11e5)
}

/// Names a hostile or careless user could pass: fragments that break formats, any Unicode,
/// control characters, and lengths around and far past the limit.
fn hostile_name() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("\"".to_owned()),
        Just("\\".to_owned()),
        Just("\n".to_owned()),
        Just("\r\n".to_owned()),
        Just("\u{0}".to_owned()),
        Just("\u{1b}[31m".to_owned()),
        Just("<script>alert(1)</script>".to_owned()),
        Just("\"]; evil [label=\"".to_owned()),
        Just("}\"".to_owned()),
        Just("é😀".to_owned()),
        Just(" ".to_owned()),
        "\\PC{0,8}",
        any::<char>().prop_map(String::from),
    ];
    prop_oneof![
        proptest::collection::vec(fragment, 0..12).prop_map(|v| v.concat()),
        (0usize..600, any::<char>()).prop_map(|(n, c)| std::iter::repeat_n(c, n).collect()),
    ]
}

#[path = "common/dot.rs"]
mod dot;
use dot::{dot_strings, dot_syntax};

fn snapshot_with(label: &str, site: &str) -> GraphSnapshot {
    GraphSnapshot {
        wait_for_nodes: vec![
            WaitNode {
                id: "lock:1".into(),
                label: label.to_owned(),
                kind: "lock",
                holders_total: Some(0),
                waiters_total: Some(1),
            },
            WaitNode {
                id: "actor:2".into(),
                label: label.to_owned(),
                kind: "actor",
                holders_total: None,
                waiters_total: None,
            },
        ],
        wait_for_edges: vec![WaitEdge {
            from: "actor:2".into(),
            to: "lock:1".into(),
            relation: "waits",
            site: site.to_owned(),
            permits: 1,
        }],
        lock_order: vec![OrderEdgeSnapshot {
            from: 1,
            to: 3,
            from_site: site.to_owned(),
            to_site: site.to_owned(),
            actor: label.to_owned(),
            inverted: true,
            gate: vec![2],
        }],
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Any name is accepted without a panic, and the name the primitive gets is valid: not
    /// empty, no control character (so no line of a report can be forged), within the limit.
    #[test]
    fn any_name_registers_as_a_valid_name(name in hostile_name()) {
        let prim = register(Some(name.as_str().into()), PrimKind::Mutex, Location::caller(), 1);
        let got = prim.name();
        prop_assert!(validate_name(got).is_ok(), "{got:?} from {name:?}");
        prop_assert!(got.len() <= MAX_NAME_LEN);
        prop_assert!(!got.contains('\n') && !got.contains('\r'));
        if validate_name(&name).is_ok() {
            // A valid name is kept as given (a series suffix aside).
            prop_assert!(got.starts_with(name.as_str()), "{got:?} from {name:?}");
        }
    }

    /// A `LOCKSCOPE_*_MS` value parses or gives an error naming the variable and the value;
    /// never a panic, never a zero threshold.
    #[test]
    fn any_threshold_value_parses_or_says_why(value in prop_oneof![
        "\\PC{0,24}",
        "[ 0-9+-]{0,24}",
        any::<u64>().prop_map(|n| n.to_string()),
        Just("18446744073709551616".to_owned()),
    ]) {
        match parse_ms("LOCKSCOPE_STUCK_MS", &value) {
            Ok(d) => {
                prop_assert!(!d.is_zero());
                prop_assert_eq!(Some(d.as_millis() as u64), value.trim().parse::<u64>().ok());
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains("LOCKSCOPE_STUCK_MS"), "{msg}");
                prop_assert!(value.trim().parse::<u64>().map_or(true, |n| n == 0), "{value:?} refused: {msg}");
            }
        }
    }

    /// The graph's JSON round-trips every hostile string exactly, and its DOT keeps each one
    /// inside one quoted string: nothing of it outside the quotes, every quote closed.
    #[test]
    fn graph_renderings_escape_hostile_strings(label in hostile_name(), site in hostile_name()) {
        let snap = snapshot_with(&label, &site);
        let json = serde_json::to_string(&snap).expect("serializable");
        let back: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        prop_assert_eq!(back["wait_for_nodes"][0]["label"].as_str(), Some(label.as_str()));
        prop_assert_eq!(back["lock_order"][0]["to_site"].as_str(), Some(site.as_str()));
        prop_assert_eq!(back["lock_order"][0]["actor"].as_str(), Some(label.as_str()));

        let dot = snap.to_dot();
        let (strings, outside) = dot_strings(&dot).ok_or_else(|| TestCaseError::fail(format!("a quote left open:\n{dot}")))?;
        prop_assert!(strings.iter().any(|s| s == &label), "{dot}");
        prop_assert!(strings.iter().any(|s| s == &site), "{dot}");
        // Outside the quotes: only the DOT we wrote, whatever the names were.
        prop_assert!(outside.chars().all(dot_syntax), "content outside quotes: {outside:?}");
        prop_assert_eq!(outside.matches("->").count(), 2, "{}", dot);
    }
}
