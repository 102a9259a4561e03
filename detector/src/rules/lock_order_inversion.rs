//! `lock-order-inversion`: primitives taken in inconsistent orders.
//!
//! Reported when a new lock-order edge closes a cycle (see [`crate::analysis::graph::lockorder`]), with
//! every order of the cycle and its sites, in the style of lockdep's "possible unsafe locking
//! scenario". Consistent orders by any rule (say, by account id) never form a cycle, so they
//! are never reported; `try_` acquisitions add no edges; a cycle made only of
//! `read_recursive` acquisitions cannot deadlock and is not reported.

use std::fmt::Write as _;

use crate::analysis::graph::lockorder::EdgeInfo;
use crate::model::finding::{Finding, FindingKind, OrderEdge};
use crate::rules::prim_ref_id;
use crate::state::held::Mode;
use crate::state::prim::{self, PrimitiveId, site_string};

/// The finding for the cycle `edges` (first the new edge, then the path that closes it).
#[cold]
pub(crate) fn cycle(edges: &[(u64, u64, EdgeInfo)]) -> Option<Finding> {
    if edges
        .iter()
        .all(|(_, _, e)| e.to_mode == Mode::SharedRecursive && e.from_mode != Mode::Exclusive)
    {
        return None;
    }
    let mut nodes: Vec<u64> = edges.iter().map(|(a, _, _)| *a).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let refs: Vec<_> = nodes.iter().map(|&id| prim_ref_id(id)).collect();
    let name = |id: u64| {
        refs.iter()
            .find(|r| r.id == id)
            .map(|r| format!("{:?}", r.name))
            .unwrap_or_else(|| format!("#{id}"))
    };
    // One finding per bug: the set of (name, creation site) of the nodes.
    let mut key_parts: Vec<String> = refs
        .iter()
        .map(|r| format!("{}@{}", r.name, r.created_at))
        .collect();
    key_parts.sort();
    // The cycle in order: the older path y -> ... -> x, then the new edge x -> y.
    let mut chain: Vec<String> = edges[1..].iter().map(|(a, _, _)| name(*a)).collect();
    chain.push(name(edges[0].0));
    chain.push(name(edges[0].1));
    // edges[0] is the new edge, edges[1..] the older path it closes: tell them oldest first.
    let summary = if edges.len() == 2 {
        format!(
            "{} and {} are taken in opposite orders ({} then {} at {}, {} then {} at {}): a possible deadlock",
            name(edges[1].0),
            name(edges[1].1),
            name(edges[1].0),
            name(edges[1].1),
            site_string(edges[1].2.to_site),
            name(edges[0].0),
            name(edges[0].1),
            site_string(edges[0].2.to_site),
        )
    } else {
        format!(
            "{} primitives are taken in a cyclic order ({}): a possible deadlock",
            edges.len(),
            chain.join(" -> ")
        )
    };
    let mut f = Finding::new(
        FindingKind::LockOrderInversion,
        key_parts.join("|"),
        summary,
    );
    for r in &refs {
        f.add_prim(r.clone());
    }
    for (a, b, e) in edges.iter().rev() {
        f.orders.push(OrderEdge {
            from: prim_ref_id(*a),
            to: prim_ref_id(*b),
            from_site: site_string(e.from_site),
            to_site: site_string(e.to_site),
            actor: e.actor.describe(),
        });
        f.add_scope(e.scope);
        // Also the tests that created the primitives: threads a test spawns itself carry no
        // scope, and the finding must go to that test, not to every test armed.
        for id in [*a, *b] {
            if let Some(p) = prim::get(PrimitiveId(id)) {
                f.add_scope(p.scope());
            }
        }
    }
    f.details = scenario(edges, &name);
    f.fix = "take these primitives in one global order everywhere (for instances of one type, order them by a key such as an id), or take them together under one lock".into();
    Some(f)
}

/// lockdep's "possible unsafe locking scenario" table, one column per actor.
fn scenario(edges: &[(u64, u64, EdgeInfo)], name: &dyn Fn(u64) -> String) -> Vec<String> {
    let mut out = Vec::new();
    for (a, b, e) in edges.iter().rev() {
        out.push(format!(
            "order: {} held ({} at {}) while acquiring {} ({} at {}) by {}",
            name(*a),
            e.from_mode.verb(),
            site_string(e.from_site),
            name(*b),
            e.to_mode.verb(),
            site_string(e.to_site),
            e.actor.describe()
        ));
    }
    if edges.len() == 2 {
        let (a, b, e1) = &edges[1];
        let (_, _, e2) = &edges[0];
        let (c1, c2) = if e1.actor == e2.actor {
            // One actor did both orders, one after the other: two copies of it could deadlock.
            ("one run".to_string(), "a concurrent run".to_string())
        } else {
            (e1.actor.describe(), e2.actor.describe())
        };
        let w = c1.len().max(24);
        let mut t = String::new();
        let _ = writeln!(t, "possible unsafe locking scenario:");
        let _ = writeln!(t, "      {c1:<w$}  {c2}");
        let _ = writeln!(t, "      {:<w$}  ----", "----");
        let _ = writeln!(
            t,
            "      {:<w$}",
            format!("{}({})", e1.from_mode.verb(), name(*a))
        );
        let _ = writeln!(t, "      {:<w$}  {}({})", "", e2.from_mode.verb(), name(*b));
        let _ = writeln!(
            t,
            "      {:<w$}",
            format!("{}({})", e1.to_mode.verb(), name(*b))
        );
        let _ = writeln!(t, "      {:<w$}  {}({})", "", e2.to_mode.verb(), name(*a));
        let _ = write!(t, "      *** DEADLOCK ***");
        out.extend(t.lines().map(|l| l.trim_end().to_owned()));
    }
    out
}
