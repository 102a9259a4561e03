//! `lock-order-inversion`: primitives taken in inconsistent orders.
//!
//! Reported when a new lock-order edge closes a cycle (see [`crate::analysis::graph::lockorder`]), with
//! every order of the cycle and its sites, in the style of lockdep's "possible unsafe locking
//! scenario". Consistent orders by any rule (say, by account id) never form a cycle, so they
//! are never reported; `try_` acquisitions add no edges; a cycle made only of
//! `read_recursive` acquisitions cannot deadlock and is not reported.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::analysis::graph::lockorder::EdgeInfo;
use crate::model::finding::{Finding, FindingKind, OrderEdge, PrimRef};
use crate::rules::{prim_ref, prim_ref_id};
use crate::state::held::Mode;
use crate::state::prim::{self, Prim, PrimitiveId, site_string};

/// Primitive `id`: from `pins` (the primitives a sighting kept alive until its finding is
/// built, so that one dropped since still has its name), else from the registry.
pub(crate) fn pinned(pins: &[Arc<Prim>], id: u64) -> Option<Arc<Prim>> {
    pins.iter()
        .find(|p| p.id().0 == id)
        .cloned()
        .or_else(|| prim::get(PrimitiveId(id)))
}

/// The reference to primitive `id` (see [`pinned`]).
pub(crate) fn pinned_ref(pins: &[Arc<Prim>], id: u64) -> PrimRef {
    match pinned(pins, id) {
        Some(p) => prim_ref(&p),
        None => prim_ref_id(id),
    }
}

/// Adds the order edge `a` -> `b` seen as `e` to `f`, with the scopes it belongs to: the
/// acquiring actor's, and those of the tests that created the two primitives (threads a test
/// spawns itself carry no scope, and the finding must go to that test, not to every test armed).
pub(crate) fn add_order(f: &mut Finding, a: u64, b: u64, e: &EdgeInfo, pins: &[Arc<Prim>]) {
    f.orders.push(OrderEdge {
        from: pinned_ref(pins, a),
        to: pinned_ref(pins, b),
        from_site: site_string(e.from_site),
        to_site: site_string(e.to_site),
        actor: e.actor.describe(),
    });
    f.add_scope(e.scope);
    for id in [a, b] {
        if let Some(p) = pinned(pins, id) {
            f.add_scope(p.scope());
        }
    }
}

/// The finding for the cycle `edges` (first the new edge, then the path that closes it), its
/// primitives looked up in `pins` first (see [`pinned`]).
#[cold]
pub(crate) fn cycle(edges: &[(u64, u64, EdgeInfo)], pins: &[Arc<Prim>]) -> Option<Finding> {
    if edges
        .iter()
        .all(|(_, _, e)| e.to_mode == Mode::SharedRecursive && e.from_mode != Mode::Exclusive)
    {
        return None;
    }
    let mut nodes: Vec<u64> = edges.iter().map(|(a, _, _)| *a).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let refs: Vec<_> = nodes.iter().map(|&id| pinned_ref(pins, id)).collect();
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
        add_order(&mut f, *a, *b, e, pins);
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

#[cfg(test)]
mod tests {
    use super::cycle;
    use crate::analysis::graph::lockorder::EdgeInfo;
    use crate::model::finding::FindingKind;
    use crate::rules::testkit::{Scope, task};
    use crate::state::actor::ActorId;
    use crate::state::held::Mode;
    use crate::state::prim::{PrimKind, site_string};
    use std::panic::Location;

    fn edge(from_mode: Mode, to_mode: Mode, actor: ActorId) -> EdgeInfo {
        EdgeInfo {
            from_site: Location::caller(),
            to_site: Location::caller(),
            from_mode,
            to_mode,
            actor,
            scope: 0,
            gate: Default::default(),
        }
    }

    /// Two primitives taken in opposite orders: the orders oldest first, with their sites,
    /// and lockdep's table.
    #[test]
    fn an_abba_is_told_oldest_order_first_with_the_scenario() {
        let scope = Scope::arm(10_000, 10_000, None);
        let a = scope.prim("loi/a", PrimKind::Mutex, 1);
        let b = scope.prim("loi/b", PrimKind::Mutex, 1);
        let (ia, ib) = (a.id().0, b.id().0);
        let old = EdgeInfo {
            to_site: Location::caller(),
            ..edge(Mode::Exclusive, Mode::Exclusive, task(1))
        };
        let new = EdgeInfo {
            from_mode: Mode::Shared,
            ..edge(Mode::Exclusive, Mode::Exclusive, task(2))
        };
        let (s_old, s_new) = (site_string(old.to_site), site_string(new.to_site));
        let f = cycle(&[(ib, ia, new.clone()), (ia, ib, old.clone())], &[]).expect("a cycle");
        assert_eq!(f.kind, FindingKind::LockOrderInversion);
        assert_eq!(
            f.summary,
            format!(
                "\"loi/a\" and \"loi/b\" are taken in opposite orders (\"loi/a\" then \"loi/b\" at {s_old}, \"loi/b\" then \"loi/a\" at {s_new}): a possible deadlock"
            )
        );
        let from = site_string(old.from_site);
        let table: Vec<&str> = f.details.iter().map(String::as_str).collect();
        assert_eq!(
            table[0],
            format!(
                "order: \"loi/a\" held (lock at {from}) while acquiring \"loi/b\" (lock at {s_old}) by task 1"
            )
        );
        assert!(
            table[1].starts_with("order: \"loi/b\" held (read at "),
            "{}",
            table[1]
        );
        assert_eq!(
            &table[2..],
            [
                "possible unsafe locking scenario:",
                "      task 1                    task 2",
                "      ----                      ----",
                "      lock(\"loi/a\")",
                "                                read(\"loi/b\")",
                "      lock(\"loi/b\")",
                "                                lock(\"loi/a\")",
                "      *** DEADLOCK ***",
            ]
        );
        let orders: Vec<(u64, u64, &str)> = f
            .orders
            .iter()
            .map(|o| (o.from.id, o.to.id, o.actor.as_str()))
            .collect();
        assert_eq!(orders, [(ia, ib, "task 1"), (ib, ia, "task 2")]);
        assert_eq!(f.primitives.len(), 2);
        assert!(
            f.fix
                .starts_with("take these primitives in one global order")
        );
        // One actor both ways: two runs of it.
        let again = cycle(&[(ib, ia, old.clone()), (ia, ib, old)], &[]).expect("a cycle");
        assert!(
            again.details[3].contains("one run") && again.details[3].contains("a concurrent run")
        );
        assert_eq!(again.key(), f.key(), "one finding per pair of primitives");
    }

    /// A primitive dropped between the sighting of a cycle and the building of its finding
    /// keeps its name when the sighting pinned it; unpinned, it is told as dropped.
    #[test]
    fn a_pinned_primitive_keeps_its_name_once_dropped() {
        let scope = Scope::arm(10_000, 10_000, None);
        let a = scope.prim("loi/pinned_a", PrimKind::Mutex, 1);
        let b = scope.prim("loi/pinned_b", PrimKind::Mutex, 1);
        let (ia, ib) = (a.id().0, b.id().0);
        let e = || edge(Mode::Exclusive, Mode::Exclusive, task(1));
        let edges = [(ib, ia, e()), (ia, ib, e())];
        assert!(crate::state::prim::unregister(&a));
        let f = cycle(&edges, std::slice::from_ref(&a)).expect("a cycle");
        assert!(
            f.summary.contains("\"loi/pinned_a\" and \"loi/pinned_b\""),
            "{}",
            f.summary
        );
        assert_eq!(f.primitives.len(), 2);
        let unpinned = cycle(&edges, &[]).expect("a cycle");
        assert!(
            unpinned.summary.contains("(dropped)"),
            "{}",
            unpinned.summary
        );
    }

    /// Longer cycles are told as a chain; a cycle of read_recursive acquisitions under shared
    /// holds cannot deadlock and is not reported.
    #[test]
    fn longer_cycles_are_a_chain_and_recursive_reads_are_no_inversion() {
        let scope = Scope::arm(10_000, 10_000, None);
        let p: Vec<u64> = ["loi/x", "loi/y", "loi/z"]
            .iter()
            .map(|n| scope.prim(n, PrimKind::BlockingRwLock, 1).id().0)
            .collect();
        let e = || edge(Mode::Exclusive, Mode::Exclusive, task(1));
        let f = cycle(
            &[(p[2], p[0], e()), (p[0], p[1], e()), (p[1], p[2], e())],
            &[],
        )
        .expect("a cycle");
        assert_eq!(
            f.summary,
            "3 primitives are taken in a cyclic order (\"loi/x\" -> \"loi/y\" -> \"loi/z\" -> \"loi/x\"): a possible deadlock"
        );
        assert_eq!(f.details.len(), 3, "the orders, no table: {:?}", f.details);
        let rr = || edge(Mode::Shared, Mode::SharedRecursive, task(1));
        assert!(cycle(&[(p[1], p[0], rr()), (p[0], p[1], rr())], &[]).is_none());
        let write = edge(Mode::Exclusive, Mode::SharedRecursive, task(1));
        assert!(cycle(&[(p[1], p[0], rr()), (p[0], p[1], write)], &[]).is_some());
        let read = edge(Mode::Shared, Mode::Shared, task(1));
        assert!(cycle(&[(p[1], p[0], rr()), (p[0], p[1], read)], &[]).is_some());
    }
}
