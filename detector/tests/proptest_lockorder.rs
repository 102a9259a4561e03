//! Property tests of lock-order inversion detection (issue 3, "Property tests").
//!
//! Random nestings of a few mutexes go through the public hooks, exactly as a wrapper feeds
//! them (acquire A, acquire B, release both: the edge A -> B), and the `lock-order-inversion`
//! findings are compared with a naive oracle: the set of edges taken so far and a depth-first
//! search. A new edge `x -> y` closes a cycle iff `x` is reachable from `y` along the edges
//! taken before it. Each edge that closes a cycle must be reported by exactly one finding,
//! whose orders are a simple cycle of edges really taken and closed by that edge alone; no
//! other finding may appear. Consistent orders (every nesting follows one random ranking)
//! must never be reported, and a dropped primitive takes its edges with it (sequences drop
//! and recreate primitives at random).
//!
//! A cycle may run through an edge that itself closed a cycle earlier (the detector keeps such
//! edges out of its topological order, and still finds cycles through them:
//! `cycle_through_a_reported_edge_is_reported`); the finding's closing edge is then the one
//! taken last among its orders.
//!
//! Findings are global and the tests of this file run in parallel: each case names its
//! primitives with a prefix of its own and looks only at findings about them.
//!
//! The seed is fixed so that CI is deterministic; explore more with `PROPTEST_RNG_SEED=<n>`
//! and `PROPTEST_CASES=<n>`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};

use lockscope_detector::hooks::{self, Acq, Mode};
use lockscope_detector::prim::PrimCell;
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
}

impl Case {
    fn new(test: &str, n: usize) -> Case {
        let prefix = format!("plo-{test}-{}", CASE.fetch_add(1, Ordering::Relaxed));
        let mut c = Case {
            prefix,
            slots: (0..n).map(|_| None).collect(),
            generation: vec![0; n],
            ids: HashSet::new(),
        };
        for i in 0..n {
            c.create(i);
        }
        c
    }

    fn create(&mut self, i: usize) {
        let name = format!("{}-m{i}.{}", self.prefix, self.generation[i]);
        self.generation[i] += 1;
        let cell = PrimCell::new(Some(name.into()), PrimKind::Mutex, Location::caller(), 1);
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
                let h = hooks::acquired(c.get(), Acq::new(site, 1, Mode::Exclusive));
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

/// The naive oracle: every edge seen (between live instances), and a DFS.
#[derive(Clone, Default)]
struct Oracle {
    /// Edges between live instances.
    edges: BTreeSet<(u64, u64)>,
    /// Edges that closed a cycle when first taken (live instances).
    closing: BTreeSet<(u64, u64)>,
    /// Every edge ever taken, and how: `true` if it closed a cycle.
    ever: HashMap<(u64, u64), bool>,
    /// When each edge was first taken (a counter).
    taken_at: HashMap<(u64, u64), usize>,
    /// Closing edges that must be reported.
    must: BTreeSet<(u64, u64)>,
    /// Closing edges whose cycles all go through an earlier closing edge (see
    /// `cycle_through_a_reported_edge_is_reported`): they must be reported too.
    may: BTreeSet<(u64, u64)>,
}

impl Oracle {
    /// Whether `to` is reachable from `from` along the edges, minus `skip`.
    fn path(&self, from: u64, to: u64, skip: &BTreeSet<(u64, u64)>) -> bool {
        let mut seen = HashSet::from([from]);
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            if n == to {
                return true;
            }
            for &(a, b) in self.edges.range((n, 0)..=(n, u64::MAX)) {
                if !skip.contains(&(a, b)) && seen.insert(b) {
                    stack.push(b);
                }
            }
        }
        false
    }

    /// `x` acquired while holding each of `held` (edges into one node are independent: none
    /// lies on a simple path out of it).
    fn acquire(&mut self, held: &[u64], x: u64) {
        let mut new = Vec::new();
        for &h in held {
            if self.edges.contains(&(h, x)) {
                continue;
            }
            let closes = self.path(x, h, &BTreeSet::new());
            if closes {
                if self.path(x, h, &self.closing) {
                    self.must.insert((h, x));
                } else {
                    self.may.insert((h, x));
                }
            }
            new.push(((h, x), closes));
        }
        for (e, closes) in new {
            self.edges.insert(e);
            self.ever.insert(e, closes);
            let t = self.taken_at.len();
            self.taken_at.entry(e).or_insert(t);
            if closes {
                self.closing.insert(e);
            }
        }
    }

    fn drop_node(&mut self, id: u64) {
        self.edges.retain(|&(a, b)| a != id && b != id);
        self.closing.retain(|&(a, b)| a != id && b != id);
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

/// Runs `ops` and checks the findings against the oracle. `Err` says how they differ.
fn run(test: &str, n: usize, ops: &[Op]) -> Result<(), String> {
    let mut case = Case::new(test, n);
    let mut oracle = Oracle::default();
    let mut names: HashMap<u64, String> = HashMap::new();
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
                for (&i, &id) in order.iter().zip(&ids) {
                    names.insert(id, format!("m{i}.{}", case.generation[i] - 1));
                }
                let mut next = oracle.clone();
                for j in 1..ids.len() {
                    next.acquire(&ids[..j], ids[j]);
                }
                oracle = next;
                case.nest(order);
            }
        }
    }
    let found = case.inversions();
    drop(case);
    let name = |e: &(u64, u64)| format!("{} -> {}", names[&e.0], names[&e.1]);
    let mut reported = BTreeSet::new();
    for f in &found {
        let orders: Vec<(u64, u64)> = f.orders.iter().map(|o| (o.from.id, o.to.id)).collect();
        let shown: Vec<String> = orders
            .iter()
            .map(|e| {
                names
                    .get(&e.0)
                    .zip(names.get(&e.1))
                    .map_or(format!("{e:?}"), |_| name(e))
            })
            .collect();
        // A simple cycle: one edge out of each primitive listed, and following them from any
        // one goes through all of them.
        let next: HashMap<u64, u64> = orders.iter().copied().collect();
        let listed: BTreeSet<u64> = f.primitives.iter().map(|p| p.id).collect();
        let mut at = orders.first().map_or(0, |e| e.0);
        let mut steps = 0;
        while steps < orders.len() {
            match next.get(&at) {
                Some(&b) => at = b,
                None => break,
            }
            steps += 1;
        }
        let cycle = next.len() == orders.len()
            && steps == orders.len()
            && orders.first().is_some_and(|e| e.0 == at)
            && next.keys().copied().collect::<BTreeSet<u64>>() == listed;
        // Of edges really taken; the one taken last closed the cycle (the others may include
        // earlier closing edges the cycle runs through).
        let last = orders
            .iter()
            .copied()
            .max_by_key(|e| oracle.taken_at.get(e).copied().unwrap_or(0));
        let closing: Vec<(u64, u64)> = last
            .into_iter()
            .filter(|e| oracle.ever.get(e) == Some(&true))
            .collect();
        let taken = orders.iter().all(|e| oracle.ever.contains_key(e));
        if !cycle || !taken || closing.len() != 1 {
            return Err(format!(
                "a finding is not a cycle of edges taken, closed by one new edge: {shown:?}: {}",
                f.summary
            ));
        }
        if !reported.insert(closing[0]) {
            return Err(format!("two findings for {}", name(&closing[0])));
        }
    }
    let must: BTreeSet<(u64, u64)> = oracle.must.union(&oracle.may).copied().collect();
    let missed: Vec<String> = must.difference(&reported).map(name).collect();
    let extra: Vec<String> = reported.difference(&must).map(name).collect();
    if !missed.is_empty() || !extra.is_empty() {
        return Err(format!(
            "edges closing a cycle but not reported: {missed:?}; reported but closing none: \
             {extra:?}; findings: {:?}",
            found.iter().map(|f| &f.summary).collect::<Vec<_>>()
        ));
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
        let r = run("cycle", n, &ops);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    /// The same while primitives are dropped and replaced by new instances: a dropped
    /// primitive's edges are gone, and cycles through it are no longer possible.
    #[test]
    fn dropped_primitives_take_their_edges((n, ops) in case_with_ops(true)) {
        let r = run("drop", n, &ops);
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
fn oracle_sees_the_cycle_through_a_reported_edge() {
    // The oracle's side of the test above.
    let mut o = Oracle::default();
    o.acquire(&[0], 1);
    o.acquire(&[1], 2);
    o.acquire(&[2], 0);
    o.acquire(&[0], 3);
    o.acquire(&[3], 2);
    assert_eq!(o.must, BTreeSet::from([(2, 0)]));
    assert_eq!(o.may, BTreeSet::from([(3, 2)]));
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
