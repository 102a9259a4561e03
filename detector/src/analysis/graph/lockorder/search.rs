//! The graph's updates and searches: a sighting recorded, the order kept topological
//! (Pearce and Kelly), and the searches for a cycle no gate serialises.

use super::*;

/// What one sighting of an edge did.
pub(super) enum Sighting {
    /// Nothing to report.
    Nothing,
    /// The graph is full: the edge was not recorded.
    Dropped,
    /// The sighting (a new edge, or a gate shrunk) closes this cycle no lock serialises.
    Closes(Cycle),
}

/// A search of [`Graph::open_path`]: which cycles count.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Serialised {
    /// Pairwise: a cycle two of whose edges share a gate is serialised (exact).
    ByAnyTwo,
    /// A cycle is serialised only if one gate is common to all its edges (fewer states to
    /// search: the fallback when the exact search runs past its budget).
    ByAll,
}

/// States the exact search may visit before it falls back to the coarser one.
pub(super) const SEARCH_BUDGET: usize = 4096;

impl Graph {
    /// Records the sighting of `x -> y` under the mutexes `held` (sorted) whose first-sighting
    /// form is `info`.
    pub(super) fn sighting(&mut self, x: u64, y: u64, info: EdgeInfo, held: &[u64]) -> Sighting {
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
    pub(super) fn closes(
        &mut self,
        x: u64,
        y: u64,
        info: EdgeInfo,
        found: Option<Vec<u64>>,
    ) -> Sighting {
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
    pub(super) fn disjoint(&self, gate: Gate, path: &[u64]) -> bool {
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

    pub(super) fn edge(&self, a: u64, b: u64) -> Option<&EdgeInfo> {
        self.edges
            .get(&(a, b))
            .or_else(|| self.inverted.get(&(a, b)))
    }

    /// A path `y -> ... -> x` over every edge (in the order and out of it) that closes with
    /// `x -> y` (gated by `gate`) a cycle no lock serialises: the exact search, or the coarse
    /// one when the exact one runs past [`SEARCH_BUDGET`].
    pub(super) fn open_path(&self, x: u64, y: u64, gate: Gate) -> Option<Vec<u64>> {
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
    pub(super) fn search(
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
    pub(super) fn declared_path(&self, x: u64, y: u64) -> Option<Path> {
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
    pub(super) fn declared_reach(
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

    pub(super) fn ensure(&mut self, id: u64) {
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

    pub(super) fn ord(&self, id: u64) -> u64 {
        self.nodes.get(&id).map_or(0, |n| n.ord)
    }

    /// Pearce-Kelly insertion of `x -> y`. `Err(path)` is a path `y -> ... -> x`.
    pub(super) fn insert(&mut self, x: u64, y: u64) -> Result<(), Vec<u64>> {
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

    pub(super) fn link(&mut self, x: u64, y: u64) {
        if let Some(n) = self.nodes.get_mut(&x) {
            n.out.push(y);
        }
        if let Some(n) = self.nodes.get_mut(&y) {
            n.inn.push(x);
        }
    }

    pub(super) fn remove(&mut self, id: u64) {
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
