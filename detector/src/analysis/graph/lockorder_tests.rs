//! Unit tests of the lock-order graph (kept beside it to keep its file short).

use super::search::Serialised;
use super::*;

fn check_order(g: &Graph) {
    for &(a, b) in g.edges.keys() {
        assert!(g.ord(a) < g.ord(b), "edge {a}->{b} against the order");
    }
}

fn info() -> EdgeInfo {
    EdgeInfo {
        from_site: Location::caller(),
        to_site: Location::caller(),
        from_mode: Mode::Exclusive,
        to_mode: Mode::Exclusive,
        actor: ActorId::from_thread_seq(1),
        scope: 0,
        gate: Gate::default(),
    }
}

/// A hold of `p` as `mode` by thread 1, acquired at the caller.
#[track_caller]
fn held(p: &Prim, mode: Mode) -> HoldView {
    HoldView {
        prim: p.id.0,
        actor: ActorId::from_thread_seq(1),
        site: Location::caller(),
        since: 0,
        permits: 1,
        mode,
        flags: 0,
        scope: 0,
        thread: 1,
    }
}

#[test]
fn pearce_kelly_keeps_a_topological_order_and_finds_cycles() {
    let mut g = Graph::default();
    // Insert nodes in an order that forces reorders.
    for (a, b) in [(5, 4), (4, 3), (3, 2), (2, 1), (6, 5), (1, 7)] {
        g.insert(a, b).unwrap();
        g.edges.insert((a, b), info());
        check_order(&g);
    }
    let path = g.insert(7, 6).unwrap_err();
    assert_eq!(path.first(), Some(&6));
    assert_eq!(path.last(), Some(&7));
    assert!(g.insert(7, 8).is_ok());
}

/// Removing a node drops it from its neighbours' lists and nothing else: a neighbour keeps
/// its other incoming and outgoing edges (kills `!=` -> `==` in both `retain`s of
/// `Graph::remove`).
#[test]
fn removing_a_node_keeps_its_neighbours_other_edges() {
    let mut g = Graph::default();
    // 1 -> 2 -> 3, and 4 -> 2, 2 -> 5: node 2 has two ins and two outs.
    for (a, b) in [(1, 2), (2, 3), (4, 2), (2, 5), (1, 3), (4, 3)] {
        g.insert(a, b).unwrap();
        g.edges.insert((a, b), info());
    }
    g.remove(1);
    assert!(!g.nodes.contains_key(&1));
    // 2 lost its in-edge from 1 only; 3 lost its in-edge from 1 only.
    assert_eq!(g.nodes[&2].inn, vec![4]);
    let mut ins3 = g.nodes[&3].inn.clone();
    ins3.sort_unstable();
    assert_eq!(ins3, vec![2, 4]);
    g.remove(3);
    // 2 and 4 lost their out-edge to 3 only.
    assert_eq!(g.nodes[&2].out, vec![5]);
    assert_eq!(g.nodes[&4].out, vec![2]);
    let mut left: Vec<(u64, u64)> = g.edges.keys().copied().collect();
    left.sort_unstable();
    assert_eq!(left, vec![(2, 5), (4, 2)]);
    check_order(&g);
}

/// Every index distinct, every edge from a lower to a higher one.
fn check_strict_order(g: &Graph) {
    check_order(g);
    let mut ords: Vec<u64> = g.nodes.values().map(|n| n.ord).collect();
    ords.sort_unstable();
    ords.dedup();
    assert_eq!(ords.len(), g.nodes.len(), "two nodes share an index");
}

/// Diamonds reached from both ends of a reordered region (issue 17: the only test was a
/// chain, so the search bounds could be loosened without a failure): inserting the edges
/// of layered diamonds against their order keeps one strict topological order, and every
/// back edge is a cycle whose path runs along edges.
#[test]
fn pearce_kelly_keeps_the_order_through_diamonds() {
    // Layers of two nodes, every node linked to both of the next layer: 2^depth paths.
    const LAYERS: u64 = 6;
    let node = |layer: u64, i: u64| 100 + layer * 2 + i;
    let mut edges = Vec::new();
    for layer in 0..LAYERS - 1 {
        for i in 0..2 {
            for j in 0..2 {
                edges.push((node(layer, i), node(layer + 1, j)));
            }
        }
    }
    // Create the nodes deepest first, so that every edge runs against the order, and
    // insert the edges from the bottom layer up, each one forcing a reorder.
    for orders in [
        edges.iter().rev().copied().collect::<Vec<_>>(),
        edges.clone(),
    ] {
        let mut g = Graph::default();
        for layer in (0..LAYERS).rev() {
            g.ensure(node(layer, 1));
            g.ensure(node(layer, 0));
        }
        for &(a, b) in &orders {
            g.insert(a, b)
                .unwrap_or_else(|p| panic!("{a}->{b}: false cycle {p:?}"));
            g.edges.insert((a, b), info());
            check_strict_order(&g);
        }
        let (top, bottom) = (node(0, 0), node(LAYERS - 1, 1));
        let path = g.insert(bottom, top).unwrap_err();
        assert_eq!(path.first(), Some(&top), "{path:?}");
        assert_eq!(path.last(), Some(&bottom), "{path:?}");
        for w in path.windows(2) {
            assert!(
                g.edges.contains_key(&(w[0], w[1])),
                "{path:?} leaves the edges"
            );
        }
        // A cross edge between the two nodes of one layer is no cycle.
        g.insert(node(2, 0), node(2, 1)).unwrap();
        g.edges.insert((node(2, 0), node(2, 1)), info());
        check_strict_order(&g);
    }
}

/// An edge seen again after the caches forgot it (the slow path runs again) keeps its
/// first sighting, and an inversion seen again stays one (issue 17: no test evicted the
/// caches).
#[test]
fn an_edge_seen_again_past_the_caches_keeps_its_first_sighting() {
    use crate::state::prim::{PrimKind, register};
    let first = Location::caller();
    let second = Location::caller();
    let a = register(Some("lockorder/again_a".into()), PrimKind::Mutex, first, 1);
    let b = register(Some("lockorder/again_b".into()), PrimKind::Mutex, first, 1);
    let actor = ActorId::from_thread_seq(1);
    let holding = |p: &Prim| HoldView {
        site: first,
        ..held(p, Mode::Exclusive)
    };
    let acq = |site| Acq::new(site, 1, Mode::Exclusive);
    // a -> b, then again from another site, straight to the slow path both times.
    assert!(observe(&[holding(&a)], &b, actor, &acq(first), 0).is_empty());
    assert!(observe(&[holding(&a)], &b, actor, &acq(second), 0).is_empty());
    let (x, y) = (a.id.0, b.id.0);
    {
        let g = GRAPH.lock();
        assert!(
            std::ptr::eq(g.edges[&(x, y)].to_site, first),
            "first sighting lost"
        );
        assert_eq!(g.nodes[&x].out.iter().filter(|&&n| n == y).count(), 1);
    }
    // b -> a closes the cycle: inverted, once, with its first sighting.
    // The edge returns the cycle it closes (the caller reports it), and only once.
    let cycle = observe(&[holding(&b)], &a, actor, &acq(first), 0)
        .cycles
        .pop()
        .expect("b -> a closes");
    let pairs: Vec<(u64, u64)> = cycle.iter().map(|(f, t, _)| (*f, *t)).collect();
    assert_eq!(pairs, [(y, x), (x, y)]);
    assert!(observe(&[holding(&b)], &a, actor, &acq(second), 0).is_empty());
    let g = GRAPH.lock();
    assert!(
        std::ptr::eq(g.inverted[&(y, x)].to_site, first),
        "first sighting lost"
    );
    assert!(
        !g.edges.contains_key(&(y, x)),
        "an inversion entered the order"
    );
}

/// The forward search visits each node once: a node reached along two paths (a diamond
/// inside the region to reorder) must not take two indices from the pool, or two nodes
/// end up sharing one and an edge runs against the order.
#[test]
fn a_node_reached_twice_by_the_forward_search_is_reordered_once() {
    let mut g = Graph::default();
    // Indices in creation order: y 1, a 2, n 3, w 4, x 5.
    let (y, a, n, w, x) = (1, 2, 3, 4, 5);
    for id in [y, a, n, w, x] {
        g.ensure(id);
    }
    // y reaches n directly and through a; w -> x. All along the order: no reorder yet.
    for (from, to) in [(y, a), (y, n), (a, n), (w, x)] {
        g.insert(from, to).unwrap();
        g.edges.insert((from, to), info());
    }
    // x -> y runs against the order: y, a, n move after w and x.
    g.insert(x, y).unwrap();
    g.edges.insert((x, y), info());
    check_strict_order(&g);
    let mut by_ord: Vec<u64> = [y, a, n, w, x].into_iter().collect();
    by_ord.sort_by_key(|&id| g.ord(id));
    assert_eq!(by_ord, [w, x, y, a, n]);
}

/// Forty predecessors of one primitive noted on one thread are all known afterwards
/// (four in the primitive's own cache, the rest in the thread's table, where consecutive
/// ids take different slots); another thread knows the four the
/// primitive keeps (issue 17: nothing checked the caches).
#[test]
fn noted_edges_are_known_to_the_caches() {
    use crate::state::prim::{PrimKind, register};
    let b = register(
        Some("lockorder/cached".into()),
        PrimKind::Mutex,
        Location::caller(),
        1,
    );
    let preds: Vec<u64> = (1_000_001..=1_000_040).collect();
    assert!(preds.iter().all(|&a| !known(&b, a)));
    for &a in &preds {
        remember(&b, a);
    }
    // Remembering again changes nothing.
    remember(&b, preds[0]);
    let unknown: Vec<u64> = preds.iter().copied().filter(|&a| !known(&b, a)).collect();
    assert!(unknown.is_empty(), "forgotten: {unknown:?}");
    assert!(!known(&b, 7));
    let elsewhere = std::thread::scope(|s| {
        s.spawn(|| preds.iter().filter(|&&a| known(&b, a)).count())
            .join()
            .unwrap()
    });
    assert_eq!(elsewhere, crate::state::prim::ORDER_CACHE);
    // The table's slots (Fibonacci hashing): 40 consecutive predecessors of any primitive
    // take 40 different ones.
    for b in [1, 2, 3, 100, 12_345, u64::MAX] {
        let slots: HashSet<usize> = (1..=40).map(|a| slot(a, b)).collect();
        assert_eq!(slots.len(), 40, "primitive {b}");
    }
}

/// A context's key tells sets of holds apart (a key shared by two sets would let the second
/// skip the graph, and its edges with it): each single primitive from the others, and sets
/// of consecutive ids with equal sums; none is the caches' empty word.
#[test]
fn context_keys_tell_sets_of_holds_apart() {
    let key = |ids: &[u64]| {
        ids.iter()
            .fold(0u64, |k, &id| k.wrapping_add(context_part(id)))
    };
    let sets: [&[u64]; 7] = [&[1], &[2], &[3], &[1, 4], &[2, 3], &[1, 2, 3], &[2, 4]];
    let keys: HashSet<u64> = sets.iter().map(|s| key(s)).collect();
    assert_eq!(keys.len(), sets.len(), "two sets share a key");
    assert!(!keys.contains(&0));
}

/// An inversion under a mutex held exclusively at both sightings is serialised by it: no
/// report. A read of an rwlock or a permit of a semaphore held at both is no gate (others
/// hold them at once): the inversion is reported.
#[test]
fn only_a_mutex_held_exclusively_gates_an_inversion() {
    use crate::state::prim::{PrimKind, register};
    let site = Location::caller();
    let actor = ActorId::from_thread_seq(1);
    let acq = Acq::new(site, 1, Mode::Exclusive);
    for (kind, mode, gated) in [
        (PrimKind::Mutex, Mode::Exclusive, true),
        (PrimKind::BlockingRwLock, Mode::Shared, false),
        (PrimKind::BlockingRwLock, Mode::Exclusive, false),
        (PrimKind::Semaphore, Mode::Permits, false),
    ] {
        let gate = register(Some("lockorder/gate".into()), kind, site, 2);
        let a = register(Some("lockorder/gated_a".into()), PrimKind::Mutex, site, 1);
        let b = register(Some("lockorder/gated_b".into()), PrimKind::Mutex, site, 1);
        let under = |p: &Prim| [held(&gate, mode), held(p, Mode::Exclusive)];
        assert!(observe(&under(&a), &b, actor, &acq, 0).is_empty());
        let found = observe(&under(&b), &a, actor, &acq, 0);
        assert_eq!(found.cycles.len(), usize::from(!gated), "{kind:?} {mode:?}");
    }
}

/// A cycle is judged by each edge's gate over every sighting of it: `b -> a` seen under `g1`
/// (serialised with `a -> b`, taken under `g1` and `g2`), then under `g2` alone, is held
/// under no common mutex at every sighting, so the shrunk gate opens the cycle, told once.
#[test]
fn a_gate_shrunk_by_a_later_sighting_opens_the_cycle() {
    use crate::state::prim::{PrimKind, register};
    let site = Location::caller();
    let actor = ActorId::from_thread_seq(1);
    let acq = Acq::new(site, 1, Mode::Exclusive);
    let mutex = |name: &str| register(Some(name.into()), PrimKind::Mutex, site, 1);
    let (g1, g2) = (mutex("lockorder/shrink_g1"), mutex("lockorder/shrink_g2"));
    let (a, b) = (mutex("lockorder/shrink_a"), mutex("lockorder/shrink_b"));
    let x = |p: &Prim| held(p, Mode::Exclusive);
    assert!(observe(&[x(&g1), x(&g2), x(&a)], &b, actor, &acq, 0).is_empty());
    assert!(observe(&[x(&g1), x(&b)], &a, actor, &acq, 0).is_empty());
    let found = observe(&[x(&g2), x(&b)], &a, actor, &acq, 0);
    let cycle: Vec<(u64, u64)> = found.cycles[0].iter().map(|(f, t, _)| (*f, *t)).collect();
    assert_eq!(cycle, [(b.id.0, a.id.0), (a.id.0, b.id.0)]);
    assert!(found.cycles[0][0].2.gate.ids().is_empty());
    assert!(observe(&[x(&g2), x(&b)], &a, actor, &acq, 0).is_empty());
}

/// A declared node reached along two paths of undeclared ones (a diamond) is found once,
/// along the first.
#[test]
fn a_declared_node_behind_a_diamond_is_reached_once() {
    let mut g = Graph::default();
    g.levels.insert(23, 1);
    for (a, b) in [(20, 21), (20, 22), (21, 23), (22, 23)] {
        g.insert(a, b).unwrap();
        g.edges.insert((a, b), info());
    }
    let down = g.declared_reach(20, |n| &n.out);
    assert_eq!(down, [(23, vec![20, 21, 23])]);
}

/// A learned path against the declared levels (9 -> undeclared -> 1) is reported by the
/// sighting whose new edge completes it, and not again when that edge is seen again.
#[test]
fn a_contradiction_of_the_levels_is_reported_by_the_new_edge_only() {
    use crate::model::level::Level;
    use crate::state::prim::{PrimKind, register};
    let site = Location::caller();
    let actor = ActorId::from_thread_seq(1);
    let acq = Acq::new(site, 1, Mode::Exclusive);
    let mutex = |name: &str| register(Some(name.into()), PrimKind::Mutex, site, 1);
    let (hi, mid, lo) = (
        mutex("lockorder/level_hi"),
        mutex("lockorder/level_mid"),
        mutex("lockorder/level_lo"),
    );
    assert!(hi.set_level(Level::new(9)) && lo.set_level(Level::new(1)));
    let one = |p: &Prim| [held(p, Mode::Exclusive)];
    assert!(observe(&one(&hi), &mid, actor, &acq, 0).is_empty());
    let found = observe(&one(&mid), &lo, actor, &acq, 0);
    let path: Vec<(u64, u64)> = found.contradictions[0]
        .iter()
        .map(|(a, b, _)| (*a, *b))
        .collect();
    assert_eq!(path, [(hi.id.0, mid.id.0), (mid.id.0, lo.id.0)]);
    assert!(observe(&one(&mid), &lo, actor, &acq, 0).is_empty());
}

#[test]
fn removal_breaks_cycles() {
    let mut g = Graph::default();
    g.insert(1, 2).unwrap();
    g.edges.insert((1, 2), info());
    g.remove(2);
    assert!(g.insert(3, 1).is_ok());
    assert!(g.edges.is_empty());
    // Inversions and reports go with either end, and only with them.
    for e in [(3, 1), (1, 4), (5, 6)] {
        g.inverted.insert(e, info());
        g.reported.insert(e);
    }
    g.remove(1);
    assert_eq!(g.inverted.keys().collect::<Vec<_>>(), [&(5, 6)]);
    assert_eq!(g.reported, HashSet::from([(5, 6)]));
}

/// A gate keeps the smallest ids (at most `GATE_MAX`), sorted, and only shrinks: a meet
/// drops what the other sighting did not hold and says whether anything went. Its size is
/// fixed, whatever was held (the memory an edge costs stays bounded).
#[test]
fn a_gate_keeps_the_smallest_ids_and_only_shrinks() {
    let mut g = Gate::first(&[2, 3, 5, 7, 11, 13]);
    assert_eq!(g.ids(), [2, 3, 5, 7]);
    assert!(!g.meet(&[1, 2, 3, 5, 7, 8]), "nothing dropped");
    assert_eq!(g.ids(), [2, 3, 5, 7]);
    assert!(g.meet(&[3, 7, 11]));
    assert_eq!(g.ids(), [3, 7]);
    assert!(g.meet(&[]));
    assert!(g.ids().is_empty());
    assert!(!g.meet(&[3]), "an empty gate stays empty");
    assert_eq!(Gate::first(&[]), Gate::default());
    assert_eq!(std::mem::size_of::<Gate>(), 40);
    assert_eq!(std::mem::size_of::<EdgeInfo>(), 72);
}

/// The search for an open cycle: two edges sharing a gate serialise a cycle even when no gate
/// is common to all its edges (the exact rule), and the coarse fallback (a gate common to all)
/// reports that cycle; a path that would pass a node twice is not a cycle.
#[test]
fn the_search_tells_pairwise_gates_from_a_common_one() {
    let gated = |ids: &[u64]| EdgeInfo {
        gate: Gate::first(ids),
        ..info()
    };
    let mut g = Graph::default();
    // 1 -> 2 and 2 -> 3 under gate 9; 3 -> 1 outside it.
    for (a, b, e) in [(1, 2, gated(&[9])), (2, 3, gated(&[9]))] {
        g.insert(a, b).unwrap();
        g.edges.insert((a, b), e);
    }
    g.insert(3, 1).unwrap_err();
    g.inverted.insert((3, 1), info());
    assert_eq!(g.open_path(3, 1, Gate::default()), None);
    assert_eq!(
        g.search(3, 1, Gate::default(), Serialised::ByAll, usize::MAX),
        Some(Some(vec![1, 2, 3]))
    );
    // Past its budget the exact search gives up (None), and `open_path` falls back.
    assert_eq!(
        g.search(3, 1, Gate::default(), Serialised::ByAnyTwo, 1),
        None
    );
    // 3 -> 1 under gate 9 too: serialised by any rule.
    assert_eq!(
        g.search(3, 1, Gate::first(&[9]), Serialised::ByAll, usize::MAX),
        Some(None)
    );
    // A gate on one edge only: open.
    g.edges.insert((2, 3), info());
    assert_eq!(g.open_path(3, 1, Gate::default()), Some(vec![1, 2, 3]));
    assert!(g.disjoint(Gate::first(&[8]), &[1, 2, 3]));
    assert!(!g.disjoint(Gate::first(&[9]), &[1, 2, 3]));
}

/// A path against the declared levels: from the nearest declared node behind the new edge,
/// through undeclared nodes only, to the nearest declared node ahead of it, the highest level
/// behind and the lowest ahead; none along the levels, none between two declared ends (the
/// hooks check those), and a node's level leaves with it.
#[test]
fn a_path_against_the_declared_levels_runs_between_the_nearest_declared_nodes() {
    let mut g = Graph::default();
    let add = |g: &mut Graph, a: u64, b: u64| {
        g.insert(a, b).unwrap();
        g.edges.insert((a, b), info());
    };
    // 10 (level 5) -> 11 (level 9) -> 12 -> 13 -> 14 (level 1), 15 (level 0) -> 12.
    for (id, rank) in [(10, 5), (11, 9), (14, 1), (15, 0)] {
        g.levels.insert(id, rank);
    }
    for (a, b) in [(10, 11), (11, 12), (15, 12), (12, 13)] {
        add(&mut g, a, b);
    }
    assert!(
        g.declared_path(12, 13).is_none(),
        "nothing declared ahead yet"
    );
    add(&mut g, 13, 14);
    let path = g.declared_path(13, 14).expect("11 -> 12 -> 13 -> 14");
    let pairs: Vec<(u64, u64)> = path.iter().map(|(a, b, _)| (*a, *b)).collect();
    assert_eq!(
        pairs,
        [(11, 12), (12, 13), (13, 14)],
        "from 11, not 10 or 15"
    );
    assert!(g.declared_path(10, 11).is_none(), "both ends declared");
    // Along the levels: 20 (level 1) -> 21 -> 22 (level 2).
    g.levels.insert(20, 1);
    g.levels.insert(22, 2);
    add(&mut g, 20, 21);
    add(&mut g, 21, 22);
    assert!(g.declared_path(21, 22).is_none());
    // Equal levels through an undeclared node: no declared edge between them, no cycle.
    g.levels.insert(30, 3);
    g.levels.insert(32, 3);
    add(&mut g, 30, 31);
    add(&mut g, 31, 32);
    assert!(g.declared_path(31, 32).is_none());
    g.remove(11);
    assert!(!g.levels.contains_key(&11));
}
