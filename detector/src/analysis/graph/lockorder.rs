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

mod search;

use search::Sighting;

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
/// mutants: replacing `^` with `|` or `&`, or `>>` with `<<`, is equivalent in behaviour: it
/// is another mixing function, under which other sets share a key (two sets sharing a key
/// would skip a sighting), and no test can pick the ids that collide under the real share
/// rather than under a mutant's. A constant share (every set of one size alike) is caught
/// (`context_keys_tell_sets_of_holds_apart`).
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
    if prim.order_known(ctx) {
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
    if prim.remember_order(ctx) {
        return;
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
