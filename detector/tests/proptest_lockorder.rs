//! Property tests of lock-order inversion detection (issue 3, "Property tests").
//!
//! Random nestings of a few primitives go through the public hooks, exactly as a wrapper
//! feeds them (acquire A, acquire B, release both: the edge A -> B), and the
//! `lock-order-inversion` findings are compared with a naive oracle that keeps every edge
//! taken (between live instances) with its gate: the other mutexes held at every sighting of
//! it (the intersection of the sets held each time). Orders seen under one common mutex can
//! never be waited for at the same time, so only a simple cycle whose edges' gates are
//! pairwise disjoint is a possible deadlock (issue 29). Each sighting that adds an edge or
//! shrinks its gate is an event; the oracle enumerates the unserialised simple cycles through
//! its edge then. Every finding must be one of those cycles for an event, and every event with
//! one must have a finding naming the primitives of one of them (findings are one per set of
//! primitives). Consistent orders (every nesting follows one random ranking) must never be
//! reported, and a dropped primitive takes its edges with it (sequences drop and recreate
//! primitives at random).
//!
//! The first two properties run on rwlocks taken for writing, which the detector never counts
//! as gates (only mutexes are: a gate must exclude every other holder, and the caches key on
//! ids, not modes), so every cycle counts; the gated one runs on mutexes nested up to four
//! deep, where gates are everywhere.
//!
//! A cycle may run through an edge that itself closed a cycle earlier (the detector keeps such
//! edges out of its topological order, and still finds cycles through them:
//! `cycle_through_a_reported_edge_is_reported`).
//!
//! Findings are global and the tests of this file run in parallel: each case names its
//! primitives with a prefix of its own and looks only at findings about them.
//!
//! The seed is fixed so that CI is deterministic; explore more with `PROPTEST_RNG_SEED=<n>`
//! and `PROPTEST_CASES=<n>`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};

use lockscope_detector::__private::hooks::{self, Acq, Mode};
use lockscope_detector::__private::prim::PrimCell;
use lockscope_detector::{Finding, FindingKind, PrimKind, findings};
use proptest::prelude::*;
use proptest::sample::Index;

#[path = "common/proptest_config.rs"]
mod proptest_config;

/// This test's proptest configuration (see `common/proptest_config.rs`).
fn config(cases: u32) -> ProptestConfig {
    proptest_config::config(cases, 0x10c5_0dee)
}

static CASE: AtomicU64 = AtomicU64::new(0);

/// The primitives of one case: `slots[i]` is the live instance of slot `i` (a dropped slot
/// can be recreated as a new instance, with a new name).
struct Case {
    prefix: String,
    slots: Vec<Option<PrimCell>>,
    generation: Vec<u32>,
    /// Every instance this case created, live or dropped.
    ids: HashSet<u64>,
    /// Of every instance: mutexes (gates) or rwlocks taken for writing (never gates).
    kind: PrimKind,
}

impl Case {
    fn new(test: &str, n: usize) -> Case {
        Case::of(test, n, PrimKind::Mutex)
    }

    /// Rwlocks taken for writing: exclusive, but never a gate.
    fn ungated(test: &str, n: usize) -> Case {
        Case::of(test, n, PrimKind::BlockingRwLock)
    }

    fn of(test: &str, n: usize, kind: PrimKind) -> Case {
        let prefix = format!("plo-{test}-{}", CASE.fetch_add(1, Ordering::Relaxed));
        let mut c = Case {
            prefix,
            slots: (0..n).map(|_| None).collect(),
            generation: vec![0; n],
            ids: HashSet::new(),
            kind,
        };
        for i in 0..n {
            c.create(i);
        }
        c
    }

    fn create(&mut self, i: usize) {
        let name = format!("{}-m{i}.{}", self.prefix, self.generation[i]);
        self.generation[i] += 1;
        let cell = PrimCell::new(Some(name.into()), self.kind, Location::caller(), 1);
        self.ids.insert(cell.get().id().0);
        self.slots[i] = Some(cell);
    }

    fn id(&self, i: usize) -> Option<u64> {
        self.slots[i].as_ref().map(|c| c.get().id().0)
    }

    /// Acquires the live slots of `order` one inside the other, then releases them.
    fn nest(&self, order: &[usize]) {
        let site = Location::caller();
        let mut held = Vec::new();
        for &i in order {
            if let Some(c) = &self.slots[i] {
                let h =
                    hooks::acquired::<hooks::Threads>(c.get(), Acq::new(site, 1, Mode::Exclusive));
                held.push((c, h));
            }
        }
        while let Some((c, h)) = held.pop() {
            hooks::released(c.get(), h);
        }
    }

    /// This case's inversion findings.
    fn inversions(&self) -> Vec<Finding> {
        findings()
            .into_iter()
            .filter(|f| {
                f.kind == FindingKind::LockOrderInversion
                    && f.primitives.iter().all(|p| self.ids.contains(&p.id))
            })
            .collect()
    }
}

enum Op {
    /// Acquire these slots one inside the other (distinct slots, 2 to 4).
    Nest(Vec<usize>),
    /// Drop slot's instance and create a new one in its place.
    Replace(usize),
}

impl std::fmt::Debug for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Op::Nest(o) => {
                let names: Vec<String> = o.iter().map(|i| format!("m{i}")).collect();
                write!(f, "lock {}", names.join(" > "))
            }
            Op::Replace(i) => write!(f, "drop m{i} and create a new m{i}"),
        }
    }
}

/// A simple cycle, as its edges in order.
type Cycle = Vec<(u64, u64)>;

/// The gate-aware oracle: every edge between live instances with its gate (the intersection
/// of the sets of other mutexes held at its sightings), and every sighting that added an edge
/// or shrank its gate, with the cycles it then closes that no mutex serialises.
#[derive(Default)]
struct Gated {
    /// Whether the primitives are mutexes (gates), or rwlocks (none).
    gates: bool,
    edges: BTreeMap<(u64, u64), BTreeSet<u64>>,
    events: Vec<((u64, u64), Vec<Cycle>)>,
}

impl Gated {
    /// `x` acquired while holding each of `held` (all mutexes).
    fn acquire(&mut self, held: &[u64], x: u64) {
        let mut changed = Vec::new();
        for &h in held {
            let gate: BTreeSet<u64> = held
                .iter()
                .copied()
                .filter(|&g| g != h && self.gates)
                .collect();
            match self.edges.get_mut(&(h, x)) {
                None => {
                    self.edges.insert((h, x), gate);
                    changed.push((h, x));
                }
                Some(old) => {
                    let meet: BTreeSet<u64> = old.intersection(&gate).copied().collect();
                    if meet != *old {
                        *old = meet;
                        changed.push((h, x));
                    }
                }
            }
        }
        for e in changed {
            let mut open = Vec::new();
            self.extend(&mut vec![e], &mut open);
            self.events.push((e, open));
        }
    }

    /// Every simple cycle that starts with `path` and whose edges' gates are pairwise
    /// disjoint, into `out`.
    fn extend(&self, path: &mut Cycle, out: &mut Vec<Cycle>) {
        let x = path[0].0;
        let at = path[path.len() - 1].1;
        for (&(a, b), _) in self.edges.range((at, 0)..=(at, u64::MAX)) {
            if b != x && path.iter().any(|&(p, _)| p == b) {
                continue;
            }
            path.push((a, b));
            if self.disjoint(path) {
                if b == x {
                    out.push(path.clone());
                } else {
                    self.extend(path, out);
                }
            }
            path.pop();
        }
    }

    fn disjoint(&self, path: &[(u64, u64)]) -> bool {
        let gates: Vec<&BTreeSet<u64>> = path.iter().map(|e| &self.edges[e]).collect();
        gates
            .iter()
            .enumerate()
            .all(|(i, g)| gates[i + 1..].iter().all(|h| g.is_disjoint(h)))
    }

    fn drop_node(&mut self, id: u64) {
        self.edges.retain(|&(a, b), _| a != id && b != id);
    }
}

/// Runs `ops` on a case's primitives and checks the findings against the oracle: each finding
/// is one of the cycles a sighting closed, unserialised then, and every sighting that closed
/// one has a finding about one of its cycles' primitives (findings are one per set of
/// primitives, so a later cycle through the same ones is told by the first finding).
fn run(mut case: Case, ops: &[Op]) -> Result<(), String> {
    let mut oracle = Gated {
        gates: case.kind == PrimKind::Mutex,
        ..Gated::default()
    };
    for op in ops {
        match op {
            Op::Replace(i) => {
                if let Some(id) = case.id(*i) {
                    oracle.drop_node(id);
                }
                case.slots[*i] = None;
                case.create(*i);
            }
            Op::Nest(order) => {
                let ids: Vec<u64> = order.iter().filter_map(|&i| case.id(i)).collect();
                for j in 1..ids.len() {
                    oracle.acquire(&ids[..j], ids[j]);
                }
                case.nest(order);
            }
        }
    }
    let found = case.inversions();
    let edge_set = |c: &[(u64, u64)]| c.iter().copied().collect::<BTreeSet<(u64, u64)>>();
    let node_set = |c: &[(u64, u64)]| c.iter().map(|e| e.0).collect::<BTreeSet<u64>>();
    for f in &found {
        let orders: Vec<(u64, u64)> = f.orders.iter().map(|o| (o.from.id, o.to.id)).collect();
        let closed = oracle.events.iter().any(|(e, open)| {
            orders.contains(e) && open.iter().any(|c| edge_set(c) == edge_set(&orders))
        });
        if !closed {
            return Err(format!(
                "a finding is no cycle a sighting closed unserialised: {orders:?}: {}",
                f.summary
            ));
        }
    }
    let reported: Vec<BTreeSet<u64>> = found
        .iter()
        .map(|f| f.primitives.iter().map(|p| p.id).collect())
        .collect();
    for (e, open) in &oracle.events {
        if !open.is_empty() && !open.iter().any(|c| reported.contains(&node_set(c))) {
            return Err(format!(
                "{e:?} closed {open:?}, not reported; findings: {:?}",
                found.iter().map(|f| &f.summary).collect::<Vec<_>>()
            ));
        }
    }
    Ok(())
}

fn nest(n: usize) -> impl Strategy<Value = Op> {
    Just((0..n).collect::<Vec<usize>>())
        .prop_shuffle()
        .prop_flat_map(move |v| (2..=n.min(4)).prop_map(move |k| Op::Nest(v[..k].to_vec())))
}

fn ops(n: usize, replace: bool) -> impl Strategy<Value = Vec<Op>> {
    let op = if replace {
        prop_oneof![4 => nest(n), 1 => any::<Index>().prop_map(move |i| Op::Replace(i.index(n)))]
            .boxed()
    } else {
        nest(n).boxed()
    };
    prop::collection::vec(op, 1..=12)
}

fn case_with_ops(replace: bool) -> impl Strategy<Value = (usize, Vec<Op>)> {
    (2usize..=6).prop_flat_map(move |n| (Just(n), ops(n, replace)))
}

proptest! {
    #![proptest_config(config(400))]

    /// A finding at exactly the acquisitions whose edge closes a cycle, naming that cycle.
    #[test]
    fn inversions_are_the_edges_that_close_a_cycle((n, ops) in case_with_ops(false)) {
        let r = run(Case::ungated("cycle", n), &ops);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    /// The same while primitives are dropped and replaced by new instances: a dropped
    /// primitive's edges are gone, and cycles through it are no longer possible.
    #[test]
    fn dropped_primitives_take_their_edges((n, ops) in case_with_ops(true)) {
        let r = run(Case::ungated("drop", n), &ops);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    /// On mutexes, nested up to four deep: a cycle is reported exactly when a sighting (a new
    /// edge, or one that shrinks an edge's gate) closes one whose gates are pairwise disjoint.
    #[test]
    fn gated_cycles_are_reported_only_when_no_mutex_serialises_them(
        (n, ops) in case_with_ops(true)
    ) {
        let r = run(Case::new("gated", n), &ops);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    /// Nestings that all follow one ranking (say, by account id) are never reported, however
    /// primitives come and go.
    #[test]
    fn consistent_orders_are_never_reported(
        (n, ops, rank) in (2usize..=6).prop_flat_map(|n| {
            (Just(n), ops(n, true), Just((0..n).collect::<Vec<usize>>()).prop_shuffle())
        })
    ) {
        let mut case = Case::new("ranked", n);
        for op in &ops {
            match op {
                Op::Nest(order) => {
                    let mut order = order.clone();
                    order.sort_by_key(|&i| rank[i]);
                    case.nest(&order);
                }
                Op::Replace(i) => {
                    case.slots[*i] = None;
                    case.create(*i);
                }
            }
        }
        let found: Vec<String> = case.inversions().into_iter().map(|f| f.summary).collect();
        prop_assert!(found.is_empty(), "{:?}", found);
    }
}

#[test]
fn abba_is_reported_once_with_both_orders() {
    let case = Case::new("abba", 2);
    case.nest(&[0, 1]);
    assert!(case.inversions().is_empty());
    case.nest(&[1, 0]);
    case.nest(&[1, 0]);
    case.nest(&[0, 1]);
    let found = case.inversions();
    assert_eq!(found.len(), 1, "{found:?}");
    let orders: Vec<(u64, u64)> = found[0]
        .orders
        .iter()
        .map(|o| (o.from.id, o.to.id))
        .collect();
    let (a, b) = (case.id(0).unwrap(), case.id(1).unwrap());
    assert_eq!(orders, vec![(a, b), (b, a)]);
}

#[test]
fn a_dropped_primitive_takes_its_edges() {
    // m0 -> m1 -> m2, then m1 is dropped: m2 -> m0 closes no cycle any more.
    let mut case = Case::new("dropped", 3);
    case.nest(&[0, 1]);
    case.nest(&[1, 2]);
    case.slots[1] = None;
    case.nest(&[2, 0]);
    assert!(case.inversions().is_empty());
    // Without the drop it would have been an inversion of three.
    let control = Case::new("kept", 3);
    control.nest(&[0, 1]);
    control.nest(&[1, 2]);
    control.nest(&[2, 0]);
    assert_eq!(control.inversions().len(), 1);
    // And the reverse edge to a dropped-and-recreated primitive is a new instance's edge.
    let mut case = Case::new("recreated", 2);
    case.nest(&[0, 1]);
    case.slots[0] = None;
    case.create(0);
    case.nest(&[1, 0]);
    assert!(case.inversions().is_empty());
}

#[test]
fn cycle_through_a_reported_edge_is_reported() {
    // m0 -> m1 -> m2 -> m0 is reported when m2 -> m0 is first taken. Then m0 -> m3 and
    // m3 -> m2 make m3 -> m2 -> m0 -> m3 a cycle of its own: three threads holding m3, m2 and
    // m0 and each taking the next can deadlock, even once m0 -> m1 is gone.
    let case = Case::new("through", 4);
    case.nest(&[0, 1]);
    case.nest(&[1, 2]);
    case.nest(&[2, 0]);
    assert_eq!(case.inversions().len(), 1);
    case.nest(&[0, 3]);
    case.nest(&[3, 2]);
    let sets: Vec<BTreeSet<u64>> = case
        .inversions()
        .iter()
        .map(|f| f.primitives.iter().map(|p| p.id).collect())
        .collect();
    let want: BTreeSet<u64> = [0, 2, 3].iter().map(|&i| case.id(i).unwrap()).collect();
    assert!(sets.contains(&want), "found only {sets:?}");
}

#[test]
fn a_cyclic_inversion_summary_follows_the_orders_taken() {
    let case = Case::new("chain", 3);
    case.nest(&[0, 1]);
    case.nest(&[1, 2]);
    case.nest(&[2, 0]);
    let found = case.inversions();
    assert_eq!(found.len(), 1, "{found:?}");
    let summary = &found[0].summary;
    // "3 primitives are taken in a cyclic order ("a" -> "b" -> "c" -> "a"): ..."
    let chain = summary
        .split_once('(')
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(chain, _)| chain)
        .unwrap_or_default();
    let name = |i: usize| format!("{}-m{i}.0", case.prefix);
    let taken: Vec<(String, String)> = [(0, 1), (1, 2), (2, 0)]
        .iter()
        .map(|&(a, b)| (name(a), name(b)))
        .collect();
    let names: Vec<String> = chain
        .split(" -> ")
        .map(|n| n.trim_matches('"').to_string())
        .collect();
    assert_eq!(names.len(), 4, "{summary}");
    for w in names.windows(2) {
        assert!(
            taken.contains(&(w[0].clone(), w[1].clone())),
            "{summary}: {} then {} was never taken",
            w[0],
            w[1]
        );
    }
}

/// Both orders under one gate are no inversion; the same with one side outside it is.
#[test]
fn orders_under_a_common_gate_are_serialised() {
    // m0 is the gate: m0 > m1 > m2 and m0 > m2 > m1.
    let case = Case::new("gate", 3);
    case.nest(&[0, 1, 2]);
    case.nest(&[0, 2, 1]);
    assert!(case.inversions().is_empty(), "{:?}", case.inversions());
    // The gate held by one side only.
    let case = Case::new("halfgate", 3);
    case.nest(&[0, 1, 2]);
    case.nest(&[2, 1]);
    assert_eq!(case.inversions().len(), 1);
}

/// A gate shrunk by a later sighting: both orders first seen under the gate, then m1 > m2
/// without it, reported then (and the gate of the edge is gone from the graph too).
#[test]
fn a_sighting_without_the_gate_opens_the_cycle() {
    let case = Case::new("shrink", 3);
    case.nest(&[0, 1, 2]);
    case.nest(&[0, 2, 1]);
    // Seen again under the gate: nothing new.
    case.nest(&[0, 1, 2]);
    assert!(case.inversions().is_empty());
    case.nest(&[1, 2]);
    let found = case.inversions();
    assert_eq!(found.len(), 1, "{found:?}");
    let listed: BTreeSet<u64> = found[0].primitives.iter().map(|p| p.id).collect();
    assert_eq!(
        listed,
        BTreeSet::from([case.id(1).unwrap(), case.id(2).unwrap()])
    );
    // Its orders: the ungated sighting's, then the gated reverse.
    let orders: Vec<(u64, u64)> = found[0]
        .orders
        .iter()
        .map(|o| (o.from.id, o.to.id))
        .collect();
    assert_eq!(orders.len(), 2);
}

/// Three edges of a cycle, two of them under one gate: those two can never be waited for at
/// once, so the cycle is no deadlock although no gate is common to all three; with the gate on
/// one edge only it is one.
#[test]
fn two_edges_sharing_a_gate_serialise_a_longer_cycle() {
    // Gate m0: m1 > m2 and m2 > m3 under it, m3 > m1 outside it.
    let case = Case::new("pairgate", 4);
    case.nest(&[0, 1, 2]);
    case.nest(&[0, 2, 3]);
    case.nest(&[3, 1]);
    assert!(case.inversions().is_empty(), "{:?}", case.inversions());
    let case = Case::new("onegate", 4);
    case.nest(&[0, 1, 2]);
    case.nest(&[2, 3]);
    case.nest(&[3, 1]);
    assert_eq!(case.inversions().len(), 1);
}

/// A gate remembered by an edge is a mutex: an rwlock held for writing is exclusive too, but
/// the detector does not count it (see the module docs), so both orders under it are reported.
#[test]
fn an_rwlock_is_never_a_gate() {
    let case = Case::ungated("rwgate", 3);
    case.nest(&[0, 1, 2]);
    case.nest(&[0, 2, 1]);
    assert_eq!(case.inversions().len(), 1);
}
