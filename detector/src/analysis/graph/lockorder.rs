//! The lock-order graph: an edge `A -> B` when some task or thread acquired `B` (in a form
//! that can wait) while holding `A`. A new edge that closes a cycle is a lock-order inversion:
//! a potential deadlock, reported even if this run never deadlocked.
//!
//! Cycle detection is incremental: Pearce and Kelly's dynamic topological order ("A dynamic
//! topological sort algorithm for directed acyclic graphs", JEA 2007), as in tracing-mutex and
//! Abseil. Every node keeps an order index `ord` such that each edge goes from a lower to a
//! higher index. Inserting `x -> y` with `ord[x] < ord[y]` costs nothing more; otherwise a
//! forward search from `y` bounded by `ord[x]` either reaches `x` (a cycle) or, with a
//! backward search from `x` bounded by `ord[y]`, yields the affected region, whose indices are
//! reassigned (backward set first) from the same pool.
//!
//! Known edges never reach the graph's lock: each primitive caches a few predecessors it has
//! seen, and each thread a small direct-mapped table of recent edges, so steady nesting costs a
//! few loads. Nodes are primitive instances and leave the graph when their primitive is
//! dropped; ids are never reused, so stale cache entries are harmless.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::panic::Location;
use std::sync::LazyLock;
use std::sync::atomic::Ordering;

use parking_lot::Mutex;
use serde::Serialize;

use crate::base::config;
use crate::model::acq::Acq;
use crate::state::actor;
use crate::state::actor::ActorId;
use crate::state::held::{HoldView, Mode};
use crate::state::prim::{Prim, PrimitiveId};

/// What is known of one edge: the first time it was seen.
#[derive(Clone, Debug)]
pub struct EdgeInfo {
    /// Where the held primitive was acquired.
    pub from_site: &'static Location<'static>,
    /// Where the second one was acquired while the first was held.
    pub to_site: &'static Location<'static>,
    /// How the first was held.
    pub from_mode: Mode,
    /// How the second was acquired.
    pub to_mode: Mode,
    /// Who nested them.
    pub actor: ActorId,
    /// Test scope of the thread that did it.
    pub scope: u32,
}

#[derive(Default)]
struct Node {
    ord: u64,
    out: Vec<u64>,
    inn: Vec<u64>,
}

#[derive(Default)]
struct Graph {
    nodes: HashMap<u64, Node>,
    edges: HashMap<(u64, u64), EdgeInfo>,
    /// Edges that closed a cycle: reported, kept out of the order, remembered.
    inverted: HashMap<(u64, u64), EdgeInfo>,
    next_ord: u64,
}

static GRAPH: LazyLock<Mutex<Graph>> = LazyLock::new(Mutex::default);

/// New edges dropped because the graph was full (`max_edges`).
pub(crate) static DROPPED_EDGES: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0);

const TLS_CACHE: usize = 64;

thread_local! {
    static SEEN: [Cell<(u64, u64)>; TLS_CACHE] = const { [const { Cell::new((0, 0)) }; TLS_CACHE] };
}

#[inline]
fn slot(a: u64, b: u64) -> usize {
    (a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F)) as usize >> 3
        & (TLS_CACHE - 1)
}

/// Whether the edge `held -> prim` is known to the caches (no graph lock).
#[inline]
pub(crate) fn known(prim: &Prim, held: u64) -> bool {
    if prim
        .order_cache
        .iter()
        .any(|c| c.load(Ordering::Relaxed) == held)
    {
        return true;
    }
    let b = prim.id.0;
    SEEN.try_with(|s| s[slot(held, b)].get() == (held, b))
        .unwrap_or(false)
}

/// A cycle of the graph: the new edge first, then the path of known edges that closes it.
pub type Cycle = Vec<(u64, u64, EdgeInfo)>;

/// Records that `held` is held while `prim` is acquired (the hot part: cache lookups), and
/// returns the cycle the new edge closes, if it closes one: the caller reports it.
#[inline]
#[must_use]
pub(crate) fn note_edge(held: &HoldView, prim: &Prim, actor: ActorId, acq: &Acq) -> Option<Cycle> {
    let a = held.prim;
    for c in &prim.order_cache {
        if c.load(Ordering::Relaxed) == a {
            return None;
        }
    }
    let b = prim.id.0;
    let i = slot(a, b);
    if SEEN.try_with(|s| s[i].get() == (a, b)).unwrap_or(false) {
        return None;
    }
    add_edge_slow(held, prim, actor, acq)
}

fn remember(prim: &Prim, a: u64) {
    for c in &prim.order_cache {
        // Relaxed: the cache is a hint; a miss only costs a trip to the graph.
        if c.load(Ordering::Relaxed) == a
            || c.compare_exchange(0, a, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return;
        }
    }
    let b = prim.id.0;
    let _ = SEEN.try_with(|s| s[slot(a, b)].set((a, b)));
}

#[cold]
#[inline(never)]
fn add_edge_slow(held: &HoldView, prim: &Prim, actor: ActorId, acq: &Acq) -> Option<Cycle> {
    let (x, y) = (held.prim, prim.id.0);
    let info = EdgeInfo {
        from_site: held.site,
        to_site: acq.site(),
        from_mode: held.mode,
        to_mode: acq.mode(),
        actor,
        scope: actor::current_scope(),
    };
    let cycle = {
        let mut g = GRAPH.lock();
        if g.edges.contains_key(&(x, y)) || g.inverted.contains_key(&(x, y)) {
            drop(g);
            remember(prim, x);
            return None;
        }
        if g.edges.len() + g.inverted.len() >= config::current().max_edges {
            DROPPED_EDGES.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        match g.insert(x, y) {
            Ok(()) => {
                g.edges.insert((x, y), info.clone());
                // An edge that closed a cycle is kept out of the order (it has none), but a
                // later cycle may run through it: look for one along every edge, inverted
                // ones included.
                g.cycle_through_inverted(x, y).map(|path| {
                    let mut cycle = vec![(x, y, info)];
                    for w in path.windows(2) {
                        let e = g
                            .edges
                            .get(&(w[0], w[1]))
                            .or_else(|| g.inverted.get(&(w[0], w[1])));
                        if let Some(e) = e {
                            cycle.push((w[0], w[1], e.clone()));
                        }
                    }
                    cycle
                })
            }
            Err(path) => {
                // path: y -> ... -> x along existing edges; with x -> y it is a cycle.
                let mut cycle = vec![(x, y, info.clone())];
                for w in path.windows(2) {
                    if let Some(e) = g.edges.get(&(w[0], w[1])) {
                        cycle.push((w[0], w[1], e.clone()));
                    }
                }
                g.inverted.insert((x, y), info);
                Some(cycle)
            }
        }
    };
    remember(prim, x);
    cycle
}

impl Graph {
    fn ensure(&mut self, id: u64) {
        if !self.nodes.contains_key(&id) {
            self.next_ord += 1;
            let ord = self.next_ord;
            self.nodes.insert(
                id,
                Node {
                    ord,
                    ..Node::default()
                },
            );
        }
    }

    fn ord(&self, id: u64) -> u64 {
        self.nodes.get(&id).map_or(0, |n| n.ord)
    }

    /// Pearce-Kelly insertion of `x -> y`. `Err(path)` is a path `y -> ... -> x`.
    fn insert(&mut self, x: u64, y: u64) -> Result<(), Vec<u64>> {
        self.ensure(x);
        self.ensure(y);
        let (lb, ub) = (self.ord(y), self.ord(x));
        // mutants: `>` -> `>=` and `>` -> `==` are equivalent. Indices are distinct, so
        // `lb == ub` only for a self edge, which never gets here (the hooks skip a primitive
        // acquired under itself: a nested acquire). And with `lb > ub` the searches below move
        // nothing: every node reachable from y has an index above y's (so above ub), every
        // node reaching x one below x's (so below lb), and x and y get their own indices back.
        if lb > ub {
            self.link(x, y);
            return Ok(());
        }
        // Forward search from y over nodes with ord <= ub ("delta F").
        let mut parent: HashMap<u64, u64> = HashMap::new();
        let mut fwd = vec![y];
        let mut seen: HashSet<u64> = HashSet::from([y]);
        let mut stack = vec![y];
        while let Some(n) = stack.pop() {
            for &m in &self.nodes[&n].out {
                if m == x {
                    return Err(path_to(&parent, n, x));
                }
                let o = self.ord(m);
                // mutants: `<` -> `<=` is equivalent: only x has index ub, handled above.
                if o < ub && seen.insert(m) {
                    parent.insert(m, n);
                    fwd.push(m);
                    stack.push(m);
                }
            }
        }
        // Backward search from x over nodes with ord > lb ("delta B").
        let mut bwd = vec![x];
        let mut seen_b: HashSet<u64> = HashSet::from([x]);
        let mut stack = vec![x];
        while let Some(n) = stack.pop() {
            for &m in &self.nodes[&n].inn {
                // mutants: `>` -> `>=` is equivalent: only y has index lb, and y cannot reach
                // x here (every path from y to x runs through indices in [lb, ub], so the
                // forward search would have returned the cycle).
                if self.ord(m) > lb && seen_b.insert(m) {
                    bwd.push(m);
                    stack.push(m);
                }
            }
        }
        // Reorder: delta B keeps its relative order and goes before delta F.
        bwd.sort_by_key(|n| self.ord(*n));
        fwd.sort_by_key(|n| self.ord(*n));
        let mut pool: Vec<u64> = bwd.iter().chain(&fwd).map(|n| self.ord(*n)).collect();
        pool.sort_unstable();
        for (n, o) in bwd.iter().chain(&fwd).zip(pool) {
            if let Some(node) = self.nodes.get_mut(n) {
                node.ord = o;
            }
        }
        self.link(x, y);
        Ok(())
    }

    /// A path `y -> ... -> x` over known and inverted edges, when inverted edges exist.
    fn cycle_through_inverted(&self, x: u64, y: u64) -> Option<Vec<u64>> {
        if self.inverted.is_empty() {
            return None;
        }
        let mut inverted_out: HashMap<u64, Vec<u64>> = HashMap::new();
        for &(a, b) in self.inverted.keys() {
            inverted_out.entry(a).or_default().push(b);
        }
        let mut parent: HashMap<u64, u64> = HashMap::new();
        let mut seen: HashSet<u64> = HashSet::from([y]);
        let mut stack = vec![y];
        while let Some(n) = stack.pop() {
            let known = self.nodes.get(&n).map(|n| n.out.as_slice()).unwrap_or(&[]);
            let inverted = inverted_out.get(&n).map(Vec::as_slice).unwrap_or(&[]);
            for &m in known.iter().chain(inverted) {
                if m == x {
                    return Some(path_to(&parent, n, x));
                }
                if seen.insert(m) {
                    parent.insert(m, n);
                    stack.push(m);
                }
            }
        }
        None
    }

    fn link(&mut self, x: u64, y: u64) {
        if let Some(n) = self.nodes.get_mut(&x) {
            n.out.push(y);
        }
        if let Some(n) = self.nodes.get_mut(&y) {
            n.inn.push(x);
        }
    }

    fn remove(&mut self, id: u64) {
        let Some(node) = self.nodes.remove(&id) else {
            return;
        };
        for t in node.out {
            if let Some(n) = self.nodes.get_mut(&t) {
                n.inn.retain(|&s| s != id);
            }
            self.edges.remove(&(id, t));
        }
        for s in node.inn {
            if let Some(n) = self.nodes.get_mut(&s) {
                n.out.retain(|&t| t != id);
            }
            self.edges.remove(&(s, id));
        }
        self.inverted.retain(|&(a, b), _| a != id && b != id);
    }
}

/// Drops a primitive's node and edges (its wrapper was dropped).
pub(crate) fn remove_node(id: PrimitiveId) {
    GRAPH.lock().remove(id.0);
}

/// One edge of the lock-order graph, for `/debug/graph`.
#[derive(Clone, Debug, Serialize)]
pub struct OrderEdgeSnapshot {
    /// Held primitive id.
    pub from: u64,
    /// Acquired primitive id.
    pub to: u64,
    /// Where the held one was acquired.
    pub from_site: String,
    /// Where the second was acquired.
    pub to_site: String,
    /// Who nested them first.
    pub actor: String,
    /// Whether this edge closed a cycle (reported as an inversion).
    pub inverted: bool,
}

/// Every edge now (known and inverted).
pub fn edges() -> Vec<OrderEdgeSnapshot> {
    let g = GRAPH.lock();
    let conv = |(&(a, b), e): (&(u64, u64), &EdgeInfo), inverted| OrderEdgeSnapshot {
        from: a,
        to: b,
        from_site: crate::state::prim::site_string(e.from_site),
        to_site: crate::state::prim::site_string(e.to_site),
        actor: e.actor.describe(),
        inverted,
    };
    let mut out: Vec<_> = g.edges.iter().map(|e| conv(e, false)).collect();
    out.extend(g.inverted.iter().map(|e| conv(e, true)));
    out.sort_by_key(|e| (e.from, e.to));
    out
}

/// Number of edges kept.
pub fn edge_count() -> usize {
    let g = GRAPH.lock();
    g.edges.len() + g.inverted.len()
}

pub(crate) fn graph_lock() -> parking_lot::MutexGuard<'static, impl Sized> {
    GRAPH.lock()
}

/// The path from a search's start to `n` (following `parent` back), then on to `x`.
fn path_to(parent: &HashMap<u64, u64>, n: u64, x: u64) -> Vec<u64> {
    let mut path = vec![x, n];
    let mut cur = n;
    while let Some(&p) = parent.get(&cur) {
        path.push(p);
        cur = p;
    }
    path.reverse();
    path
}

#[cfg(test)]
mod tests {
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
            prim: p.id.0,
            actor,
            site: first,
            since: 0,
            permits: 1,
            mode: Mode::Exclusive,
            flags: 0,
            scope: 0,
            thread: 1,
        };
        let acq = |site| Acq::new(site, 1, Mode::Exclusive);
        // a -> b, then again from another site, straight to the slow path both times.
        assert!(add_edge_slow(&holding(&a), &b, actor, &acq(first)).is_none());
        assert!(add_edge_slow(&holding(&a), &b, actor, &acq(second)).is_none());
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
        let cycle = add_edge_slow(&holding(&b), &a, actor, &acq(first)).expect("b -> a closes");
        let pairs: Vec<(u64, u64)> = cycle.iter().map(|(f, t, _)| (*f, *t)).collect();
        assert_eq!(pairs, [(y, x), (x, y)]);
        assert!(add_edge_slow(&holding(&b), &a, actor, &acq(second)).is_none());
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
        assert_eq!(elsewhere, b.order_cache.len());
        // The table's slots (Fibonacci hashing): 40 consecutive predecessors of any primitive
        // take 40 different ones.
        for b in [1, 2, 3, 100, 12_345, u64::MAX] {
            let slots: HashSet<usize> = (1..=40).map(|a| slot(a, b)).collect();
            assert_eq!(slots.len(), 40, "primitive {b}");
        }
    }

    #[test]
    fn removal_breaks_cycles() {
        let mut g = Graph::default();
        g.insert(1, 2).unwrap();
        g.edges.insert((1, 2), info());
        g.remove(2);
        assert!(g.insert(3, 1).is_ok());
        assert!(g.edges.is_empty());
    }
}
