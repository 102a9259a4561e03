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
//! Each edge also keeps its *gate*: the mutexes held at every sighting of it (the intersection
//! of the sets held each time, so it only shrinks). Two orders seen under one common mutex can
//! never be waited for at the same time, so a cycle is a possible deadlock only when its
//! edges' gates are pairwise disjoint: Bensalem and Havelund's guard locks ("Dynamic deadlock
//! analysis of multi-threaded programs", 2005), the gatelock of GoodLock. Only mutexes count
//! as gates: every hold of one excludes every other (an rwlock read or a semaphore permit does
//! not, and the caches below key on ids, not on modes). A cycle whose edges all share a gate is
//! kept out of the order without a report, and looked for again whenever a sighting without the
//! gate shrinks the gate of one of its edges.
//!
//! Known sightings never reach the graph's lock: a sighting is the set of holds under which a
//! primitive is acquired (its *context*, keyed by a hash of the held ids), and intersecting a
//! gate again with a set it was already intersected with changes nothing. Each primitive
//! caches a few contexts it has been acquired under, and each thread a small direct-mapped
//! table of recent ones, so steady nesting costs a hash of the held ids and a few loads. Nodes
//! are primitive instances and leave the graph when their primitive is dropped; ids are never
//! reused, so stale cache entries are harmless.

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
use crate::state::prim::{self, Prim, PrimitiveId};

/// How many gate locks an edge remembers (the smallest ids: gates are usually long-lived
/// locks, created early). Remembering fewer than were held only reports more.
pub const GATE_MAX: usize = 4;

/// The mutexes held at every sighting of an edge (besides the edge's own first primitive), at
/// most [`GATE_MAX`] of them, sorted by id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gate {
    ids: [u64; GATE_MAX],
    len: u8,
}

impl Gate {
    /// The gate of a first sighting under the mutexes `held` (sorted, without duplicates):
    /// the smallest [`GATE_MAX`] of them.
    pub(crate) fn first(held: &[u64]) -> Gate {
        let mut g = Gate::default();
        for (slot, &id) in g.ids.iter_mut().zip(held) {
            *slot = id;
        }
        g.len = held.len().min(GATE_MAX) as u8;
        g
    }

    /// The ids, sorted.
    pub fn ids(&self) -> &[u64] {
        &self.ids[..usize::from(self.len)]
    }

    /// Keeps only the ids also in `held` (sorted); whether any was dropped.
    pub(crate) fn meet(&mut self, held: &[u64]) -> bool {
        let kept: Vec<u64> = self
            .ids()
            .iter()
            .copied()
            .filter(|id| held.binary_search(id).is_ok())
            .collect();
        let changed = kept.len() != self.ids().len();
        *self = Gate::first(&kept);
        changed
    }
}

/// What is known of one edge: the first time it was seen, and its gate now.
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
    /// The mutexes held at every sighting.
    pub gate: Gate,
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
    /// Edges that closed a cycle (reported or gated): kept out of the order, remembered.
    inverted: HashMap<(u64, u64), EdgeInfo>,
    /// Edges whose sighting was reported as closing a cycle.
    reported: HashSet<(u64, u64)>,
    /// The ranks of the nodes whose primitive has a declared level (the others have none).
    levels: HashMap<u64, u32>,
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

/// One held primitive's share of a context key: the key of a set of holds is the wrapping sum
/// of its members' shares. The share is not linear in the id (the xor-shift between the two
/// multiplications), so sets of sequential ids with equal sums still get different keys.
///
/// mutants: replacing the body with 0, `^` with `|` or `&`, or `>>` with `<<` is equivalent in
/// behaviour: a key only lets a sighting skip the graph when the same key was recorded before,
/// and a constant or weaker share only makes more sets share a key (0 is never a hit: every
/// sighting then takes the slow path, which is correct and slower). Two sets sharing a key
/// would skip a sighting; no test can pick the ids that collide under the real share.
#[inline(always)]
pub(crate) fn context_part(id: u64) -> u64 {
    let x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (x ^ (x >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9)
}

/// Whether `prim` was already acquired under the holds whose key is `ctx` (from
/// [`context_part`]), by any thread (the primitive's cache) or by this one (its table): then
/// every edge and gate that sighting gives is known, and nothing is left to record.
#[inline]
pub(crate) fn known(prim: &Prim, ctx: u64) -> bool {
    if ctx == 0 {
        // The caches' empty word: never a hit.
        return false;
    }
    if prim
        .order_cache
        .iter()
        .any(|c| c.load(Ordering::Relaxed) == ctx)
    {
        return true;
    }
    let b = prim.id.0;
    SEEN.try_with(|s| s[slot(ctx, b)].get() == (ctx, b))
        .unwrap_or(false)
}

/// A cycle of the graph: the new edge first, then the path of known edges that closes it.
pub type Cycle = Vec<(u64, u64, EdgeInfo)>;

/// A path of the graph, its edges in order.
pub type Path = Vec<(u64, u64, EdgeInfo)>;

/// What one sighting found for the caller to report.
#[derive(Default)]
#[must_use]
pub(crate) struct Observed {
    /// The cycles it closes.
    pub(crate) cycles: Vec<Cycle>,
    /// Paths from a primitive with a declared level, through primitives without one, to a
    /// primitive of a lower level, that a new edge of this sighting completes: learned orders
    /// that contradict the declared ones (with the declared order, a cycle).
    pub(crate) contradictions: Vec<Path>,
}

impl Observed {
    /// Whether it found nothing.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.cycles.is_empty() && self.contradictions.is_empty()
    }
}

/// How many nodes a search for a declared level's contradiction visits at most (each way):
/// past it, the search stops and reports less.
const LEVEL_SEARCH_MAX: usize = 4096;

fn remember(prim: &Prim, ctx: u64) {
    if ctx == 0 {
        return;
    }
    for c in &prim.order_cache {
        // Relaxed: the cache is a hint; a miss only costs a trip to the graph.
        if c.load(Ordering::Relaxed) == ctx
            || c.compare_exchange(0, ctx, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return;
        }
    }
    let b = prim.id.0;
    let _ = SEEN.try_with(|s| s[slot(ctx, b)].set((ctx, b)));
}

/// Records that `prim` is acquired (in a form that can wait) while every hold of `held` is
/// held (the actor's own, neither `prim` itself nor an owned guard that may have moved);
/// `ctx` is the holds' key (the sum of their [`context_part`]s), remembered once recorded.
/// Returns the cycles a sighting closes, first sighting or one that shrank a gate, and the
/// contradictions of declared levels its new edges complete: the caller reports them.
#[cold]
#[inline(never)]
pub(crate) fn observe(
    held: &[HoldView],
    prim: &Prim,
    actor: ActorId,
    acq: &Acq,
    ctx: u64,
) -> Observed {
    // The mutexes among the holds (looked up before the graph's lock is taken).
    let mut gates: Vec<u64> = held
        .iter()
        .filter(|h| {
            h.mode == Mode::Exclusive
                && prim::get(PrimitiveId(h.prim)).is_some_and(|p| p.kind.is_mutex())
        })
        .map(|h| h.prim)
        .collect();
    gates.sort_unstable();
    gates.dedup();
    let y = prim.id.0;
    let scope = actor::current_scope();
    // The declared levels among the primitives, looked up before the lock too.
    let leveled = prim::levels_in_use();
    let mut levels: Vec<(u64, u32)> = Vec::new();
    if leveled {
        let held_levels = held.iter().filter_map(|h| {
            let level = prim::get(PrimitiveId(h.prim))?.level()?;
            Some((h.prim, level.rank()))
        });
        levels.extend(held_levels);
        levels.extend(prim.level().map(|l| (y, l.rank())));
    }
    let mut found = Observed::default();
    let mut complete = true;
    {
        let mut g = GRAPH.lock();
        for &(id, rank) in &levels {
            g.levels.insert(id, rank);
        }
        for h in held {
            let x = h.prim;
            let own: Vec<u64> = gates.iter().copied().filter(|&id| id != x).collect();
            let info = EdgeInfo {
                from_site: h.site,
                to_site: acq.site(),
                from_mode: h.mode,
                to_mode: acq.mode(),
                actor,
                scope,
                gate: Gate::first(&own),
            };
            let new = leveled && g.edge(x, y).is_none();
            match g.sighting(x, y, info, &own) {
                Sighting::Dropped => complete = false,
                Sighting::Closes(cycle) => found.cycles.push(cycle),
                Sighting::Nothing => {}
            }
            // A new edge in the order may complete a learned path against the declared order
            // (an edge kept out of it closed a cycle, reported above).
            if new
                && g.edges.contains_key(&(x, y))
                && let Some(path) = g.declared_path(x, y)
            {
                found.contradictions.push(path);
            }
        }
    }
    if complete {
        remember(prim, ctx);
    }
    found
}

/// What one sighting of an edge did.
enum Sighting {
    /// Nothing to report.
    Nothing,
    /// The graph is full: the edge was not recorded.
    Dropped,
    /// The sighting (a new edge, or a gate shrunk) closes this cycle no lock serialises.
    Closes(Cycle),
}

/// A search of [`Graph::open_path`]: which cycles count.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Serialised {
    /// Pairwise: a cycle two of whose edges share a gate is serialised (exact).
    ByAnyTwo,
    /// A cycle is serialised only if one gate is common to all its edges (fewer states to
    /// search: the fallback when the exact search runs past its budget).
    ByAll,
}

/// States the exact search may visit before it falls back to the coarser one.
const SEARCH_BUDGET: usize = 4096;

impl Graph {
    /// Records the sighting of `x -> y` under the mutexes `held` (sorted) whose first-sighting
    /// form is `info`.
    fn sighting(&mut self, x: u64, y: u64, info: EdgeInfo, held: &[u64]) -> Sighting {
        let no_cycle = self.inverted.is_empty();
        let known = match self.edges.get_mut(&(x, y)) {
            Some(e) => Some(e),
            None => self.inverted.get_mut(&(x, y)),
        };
        if let Some(e) = known {
            // Seen before: only a gate shrunk by this sighting can open a cycle, and every
            // cycle runs through an edge kept out of the order.
            if !e.gate.meet(held) || no_cycle {
                return Sighting::Nothing;
            }
            let gate = e.gate;
            // Told with this sighting's sites: the one without the gate.
            return self.closes(x, y, EdgeInfo { gate, ..info }, None);
        }
        if self.edges.len() + self.inverted.len() >= config::current().max_edges {
            DROPPED_EDGES.fetch_add(1, Ordering::Relaxed);
            return Sighting::Dropped;
        }
        match self.insert(x, y) {
            Ok(()) => {
                self.edges.insert((x, y), info.clone());
                // An edge kept out of the order may close a cycle with this one.
                if self.inverted.is_empty() {
                    return Sighting::Nothing;
                }
            }
            Err(path) => {
                self.inverted.insert((x, y), info.clone());
                // The path the order's search found, when no lock serialises it: the
                // shortest way to a report (and the one among the edges in the order).
                return self.closes(x, y, info, Some(path));
            }
        }
        self.closes(x, y, info, None)
    }

    /// The cycle through `x -> y` (told with `info`) that no lock serialises, if any: `found`
    /// (a path `y -> ... -> x`) if that one is, else the first of a search.
    fn closes(&mut self, x: u64, y: u64, info: EdgeInfo, found: Option<Vec<u64>>) -> Sighting {
        let path = found
            .filter(|p| self.disjoint(info.gate, p))
            .or_else(|| self.open_path(x, y, info.gate));
        let Some(path) = path else {
            return Sighting::Nothing;
        };
        self.reported.insert((x, y));
        let mut cycle = vec![(x, y, info)];
        for w in path.windows(2) {
            if let Some(e) = self.edge(w[0], w[1]) {
                cycle.push((w[0], w[1], e.clone()));
            }
        }
        Sighting::Closes(cycle)
    }

    /// Whether the gates of the path `y -> ... -> x` and `gate` (of `x -> y`) are pairwise
    /// disjoint.
    fn disjoint(&self, gate: Gate, path: &[u64]) -> bool {
        let mut used: Vec<u64> = gate.ids().to_vec();
        for w in path.windows(2) {
            let g = self.edge(w[0], w[1]).map(|e| e.gate).unwrap_or_default();
            if g.ids().iter().any(|id| used.contains(id)) {
                return false;
            }
            used.extend_from_slice(g.ids());
        }
        true
    }

    fn edge(&self, a: u64, b: u64) -> Option<&EdgeInfo> {
        self.edges
            .get(&(a, b))
            .or_else(|| self.inverted.get(&(a, b)))
    }

    /// A path `y -> ... -> x` over every edge (in the order and out of it) that closes with
    /// `x -> y` (gated by `gate`) a cycle no lock serialises: the exact search, or the coarse
    /// one when the exact one runs past [`SEARCH_BUDGET`].
    fn open_path(&self, x: u64, y: u64, gate: Gate) -> Option<Vec<u64>> {
        self.search(x, y, gate, Serialised::ByAnyTwo, SEARCH_BUDGET)
            .unwrap_or_else(|| {
                self.search(x, y, gate, Serialised::ByAll, usize::MAX)
                    .flatten()
            })
    }

    /// Depth-first search over (node, gates so far) from `y` to `x`. "Gates so far" is the
    /// union of the path's gates for [`Serialised::ByAnyTwo`] (an edge whose gate meets it
    /// cannot be taken) and their intersection for [`Serialised::ByAll`] (the path counts if
    /// it is empty at `x`). A state is skipped when its node was reached with a subset of its
    /// gates: whatever it reaches, the smaller set reaches too. Every path on the stack is
    /// simple (a node met again carries a superset). `None`: past `budget` states.
    fn search(
        &self,
        x: u64,
        y: u64,
        gate: Gate,
        rule: Serialised,
        budget: usize,
    ) -> Option<Option<Vec<u64>>> {
        let mut inverted_out: HashMap<u64, Vec<u64>> = HashMap::new();
        for &(a, b) in self.inverted.keys() {
            inverted_out.entry(a).or_default().push(b);
        }
        let next = |n: u64| {
            let known = self.nodes.get(&n).map(|n| n.out.as_slice()).unwrap_or(&[]);
            let inverted = inverted_out.get(&n).map(Vec::as_slice).unwrap_or(&[]);
            // Edges kept out of the order first: a cycle through a new edge in the order
            // runs through one of them.
            inverted
                .iter()
                .chain(known.iter().rev())
                .copied()
                .collect::<Vec<u64>>()
        };
        let start: Vec<u64> = gate.ids().to_vec();
        let mut seen: HashMap<u64, Vec<Vec<u64>>> = HashMap::from([(y, vec![start.clone()])]);
        // (node, its gates so far, its successors, how many of them were tried)
        let mut stack = vec![(y, start, next(y), 0usize)];
        let mut states = 1;
        while let Some((n, gates, succ, tried)) = stack.last_mut() {
            let Some(&m) = succ.get(*tried) else {
                stack.pop();
                continue;
            };
            *tried += 1;
            let n = *n;
            let g = self.edge(n, m).map(|e| e.gate).unwrap_or_default();
            let g = g.ids();
            let after: Vec<u64> = match rule {
                Serialised::ByAnyTwo => {
                    if g.iter().any(|id| gates.contains(id)) {
                        continue;
                    }
                    let mut u: Vec<u64> = gates.iter().chain(g).copied().collect();
                    u.sort_unstable();
                    u
                }
                Serialised::ByAll => gates.iter().copied().filter(|id| g.contains(id)).collect(),
            };
            if stack.iter().any(|f| f.0 == m) {
                // Only a simple cycle is a possible deadlock.
                continue;
            }
            if m == x {
                if rule == Serialised::ByAll && !after.is_empty() {
                    continue;
                }
                let mut path: Vec<u64> = stack.iter().map(|f| f.0).collect();
                path.push(x);
                return Some(Some(path));
            }
            let at = seen.entry(m).or_default();
            if at.iter().any(|s| s.iter().all(|id| after.contains(id))) {
                continue;
            }
            states += 1;
            // mutants: `>` -> `>=` is equivalent: the budget is a bound on effort, one state
            // either way; the fallback it starts finds a cycle at least as often.
            if states > budget {
                return None;
            }
            at.push(after.clone());
            let succ = next(m);
            stack.push((m, after, succ, 0));
        }
        Some(None)
    }

    /// The path through the new edge `x -> y` from a primitive of a declared level to one of
    /// a strictly lower level, all others on it without a level, if there is one: the
    /// highest level first, then the lowest. `None` when `x` and `y` both have levels (the
    /// hooks check that acquisition itself) or neither end has a contradiction.
    fn declared_path(&self, x: u64, y: u64) -> Option<Path> {
        if self.levels.contains_key(&x) && self.levels.contains_key(&y) {
            return None;
        }
        let up = self.declared_reach(x, |n| &n.inn);
        let down = self.declared_reach(y, |n| &n.out);
        let (hi, to_x) = up.iter().max_by_key(|(id, _)| self.levels[id])?;
        let (lo, from_y) = down.iter().min_by_key(|(id, _)| self.levels[id])?;
        if hi == lo || self.levels[hi] <= self.levels[lo] {
            return None;
        }
        // `to_x` runs x -> ... -> hi (a backward search): reversed, it runs hi -> ... -> x.
        let nodes: Vec<u64> = to_x.iter().rev().chain(from_y).copied().collect();
        Some(
            nodes
                .windows(2)
                .filter_map(|w| Some((w[0], w[1], self.edge(w[0], w[1])?.clone())))
                .collect(),
        )
    }

    /// The nodes with a declared level reached from `start` along `next` (in-edges: backward;
    /// out-edges: forward) through nodes without one, each with the path to it from `start`
    /// (`start` first). `start` itself, alone, when it has a level.
    fn declared_reach(
        &self,
        start: u64,
        next: impl Fn(&Node) -> &Vec<u64>,
    ) -> Vec<(u64, Vec<u64>)> {
        if self.levels.contains_key(&start) {
            return vec![(start, vec![start])];
        }
        let mut parent: HashMap<u64, u64> = HashMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut found = Vec::new();
        while let Some(n) = queue.pop_front() {
            let Some(node) = self.nodes.get(&n) else {
                continue;
            };
            for &m in next(node) {
                if m == start || parent.contains_key(&m) || parent.len() >= LEVEL_SEARCH_MAX {
                    continue;
                }
                parent.insert(m, n);
                if self.levels.contains_key(&m) {
                    let mut path = vec![m];
                    let mut cur = m;
                    while let Some(&p) = parent.get(&cur) {
                        path.push(p);
                        cur = p;
                    }
                    path.reverse();
                    found.push((m, path));
                } else {
                    queue.push_back(m);
                }
            }
        }
        found
    }

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

    fn link(&mut self, x: u64, y: u64) {
        if let Some(n) = self.nodes.get_mut(&x) {
            n.out.push(y);
        }
        if let Some(n) = self.nodes.get_mut(&y) {
            n.inn.push(x);
        }
    }

    fn remove(&mut self, id: u64) {
        // First: a level is recorded even for a node the full graph never took.
        self.levels.remove(&id);
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
        self.reported.retain(|&(a, b)| a != id && b != id);
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
    /// Whether a sighting of this edge closed a cycle reported as an inversion.
    pub inverted: bool,
    /// The mutexes held at every sighting of it (ids): a cycle two of whose edges share one is
    /// no possible deadlock.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gate: Vec<u64>,
}

/// Every edge now (known and inverted).
pub fn edges() -> Vec<OrderEdgeSnapshot> {
    let g = GRAPH.lock();
    let conv = |(&(a, b), e): (&(u64, u64), &EdgeInfo)| OrderEdgeSnapshot {
        from: a,
        to: b,
        from_site: crate::state::prim::site_string(e.from_site),
        to_site: crate::state::prim::site_string(e.to_site),
        actor: e.actor.describe(),
        inverted: g.reported.contains(&(a, b)),
        gate: e.gate.ids().to_vec(),
    };
    let mut out: Vec<_> = g.edges.iter().chain(&g.inverted).map(conv).collect();
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
#[path = "lockorder_tests.rs"]
mod tests;
