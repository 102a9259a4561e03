//! `/debug/graph`: the current wait-for graph and the lock-order graph, as JSON or DOT.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

use serde::Serialize;

use crate::analysis::graph::lockorder::{self, OrderEdgeSnapshot};
use crate::analysis::snapshot::{Listing, oldest_first};
use crate::state::actor::ActorId;
use crate::state::channels::{self, ChanOp};
use crate::state::joins;
use crate::state::prim::site_string;

/// A node of the wait-for graph: a task/thread or a primitive.
#[derive(Clone, Debug, Serialize)]
pub struct WaitNode {
    /// `actor:<raw id>`, `lock:<id>` or `channel:<key>` (a channel, `Notify` or `Barrier`
    /// someone waits on).
    pub id: String,
    /// Display label.
    pub label: String,
    /// `actor`, `lock` or `channel`.
    pub kind: &'static str,
    /// A lock's holders in all, drawn or not (`None` for an actor).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holders_total: Option<usize>,
    /// A lock's waiters in all, drawn or not, or a channel's waits now (`None` for an actor).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiters_total: Option<usize>,
}

/// An edge of the wait-for graph: an actor waits for a lock or a channel, a lock is held by an
/// actor, a full channel is drained by its receiver's owner, an actor joins another.
#[derive(Clone, Debug, Serialize)]
pub struct WaitEdge {
    /// Source node id.
    pub from: String,
    /// Target node id.
    pub to: String,
    /// `waits`, `held_by`, `drained_by` or `joins`.
    pub relation: &'static str,
    /// Call site of the acquisition or wait (a `drained_by` edge: the channel's creation).
    pub site: String,
    /// Permits.
    pub permits: u32,
}

/// Both graphs.
#[derive(Clone, Debug, Serialize)]
pub struct GraphSnapshot {
    /// Nodes of the wait-for graph.
    pub wait_for_nodes: Vec<WaitNode>,
    /// Edges of the wait-for graph.
    pub wait_for_edges: Vec<WaitEdge>,
    /// Edges of the lock-order graph (nodes are primitive ids).
    pub lock_order: Vec<OrderEdgeSnapshot>,
}

/// The graphs now.
pub fn graph() -> GraphSnapshot {
    graph_limited(usize::MAX)
}

/// [`graph`], with at most `limit` `held_by` edges (the oldest holds) and `limit` `waits`
/// edges (the first in queue order) per primitive, besides those of the actors that both hold
/// and wait, which are always drawn: only they can close a cycle, so a deadlock is whole
/// whatever the limit (`/debug/graph?limit=N`, which the live view reads). The lock nodes
/// carry the totals.
///
/// ```
/// let g = lockscope_detector::graph_limited(0);
/// assert!(g.wait_for_nodes.iter().all(|n| (n.kind != "actor") == n.waiters_total.is_some()));
/// ```
pub fn graph_limited(limit: usize) -> GraphSnapshot {
    let state = Listing::capture(limit, true);
    let holding = &state.holding;
    let waiting: HashSet<u64> = state
        .prims
        .iter()
        .flat_map(|p| p.waiters.iter().map(|w| w.actor.as_u64()))
        .collect();
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    let mut actors = BTreeMap::new();
    for p in &state.prims {
        if p.holds.is_empty() && p.waiters_total == 0 {
            continue;
        }
        let lid = format!("lock:{}", p.prim.id().0);
        nodes.push(WaitNode {
            id: lid.clone(),
            label: format!("{} {:?}", p.prim.kind(), p.prim.name()),
            kind: "lock",
            holders_total: Some(p.holds.len()),
            waiters_total: Some(p.waiters_total),
        });
        let mut drawn = 0;
        for h in oldest_first(&p.holds, limit) {
            if !waiting.contains(&h.actor.as_u64()) {
                if drawn == limit {
                    continue;
                }
                drawn += 1;
            }
            actors.insert(h.actor.as_u64(), h.actor.describe());
            edges.push(WaitEdge {
                from: lid.clone(),
                to: format!("actor:{}", h.actor.as_u64()),
                relation: "held_by",
                site: site_string(h.site),
                permits: h.permits,
            });
        }
        let mut drawn = 0;
        for w in &p.waiters {
            if !holding.contains(&w.actor.as_u64()) {
                if drawn == limit {
                    continue;
                }
                drawn += 1;
            }
            actors.insert(w.actor.as_u64(), w.actor.describe());
            edges.push(WaitEdge {
                from: format!("actor:{}", w.actor.as_u64()),
                to: lid.clone(),
                relation: "waits",
                site: site_string(w.site),
                permits: w.permits,
            });
        }
    }
    other_waits(&mut nodes, &mut edges, &mut actors);
    for (id, label) in actors {
        nodes.push(WaitNode {
            id: format!("actor:{id}"),
            label,
            kind: "actor",
            holders_total: None,
            waiters_total: None,
        });
    }
    GraphSnapshot {
        wait_for_nodes: nodes,
        wait_for_edges: edges,
        lock_order: lockorder::edges(),
    }
}

/// The waits that are not for a primitive: a join (`joins`, from the joiner to each task or
/// thread that can end it) and a wait on a channel, `Notify` or `Barrier` (a `channel:` node,
/// which the waiter `waits` for; a send into a full bounded channel is `drained_by` the
/// receiver's owner, the one actor that can make room). Few at a time (only waits that
/// happen are recorded), so all are drawn.
fn other_waits(
    nodes: &mut Vec<WaitNode>,
    edges: &mut Vec<WaitEdge>,
    actors: &mut BTreeMap<u64, String>,
) {
    let actor = |a: ActorId| format!("actor:{}", a.as_u64());
    for j in joins::snapshot() {
        actors.insert(j.waiter.as_u64(), j.waiter.describe());
        for &(target, _) in &j.targets {
            actors.insert(target.as_u64(), target.describe());
            edges.push(WaitEdge {
                from: actor(j.waiter),
                to: actor(target),
                relation: "joins",
                site: site_string(j.site),
                permits: 0,
            });
        }
    }
    let mut chans: BTreeMap<usize, (String, usize)> = BTreeMap::new();
    for w in channels::snapshot() {
        // The record's address names the channel while it lives (every handle shares it).
        let key = Arc::as_ptr(&w.chan) as usize;
        let cid = format!("channel:{key}");
        chans.entry(key).or_insert_with(|| (w.chan.noun(), 0)).1 += 1;
        actors.insert(w.waiter.as_u64(), w.waiter.describe());
        edges.push(WaitEdge {
            from: actor(w.waiter),
            to: cid.clone(),
            relation: "waits",
            site: site_string(w.site),
            permits: 1,
        });
        if let (ChanOp::Send, Some(owner), false) = (w.op, w.owner, w.receiver_gone)
            && w.chan.capacity().is_some()
            && owner != w.waiter
        {
            actors.insert(owner.as_u64(), owner.describe());
            edges.push(WaitEdge {
                from: cid,
                to: actor(owner),
                relation: "drained_by",
                site: site_string(w.chan.created_at()),
                permits: 0,
            });
        }
    }
    for (key, (label, waiters)) in chans {
        nodes.push(WaitNode {
            id: format!("channel:{key}"),
            label,
            kind: "channel",
            holders_total: None,
            waiters_total: Some(waiters),
        });
    }
}

impl GraphSnapshot {
    /// Graphviz DOT: the wait-for graph and the lock-order graph as two clusters.
    pub fn to_dot(&self) -> String {
        let q = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
        let mut out = String::from("digraph lockscope {\n  rankdir=LR;\n");
        out.push_str("  subgraph cluster_wait_for {\n    label=\"wait-for\";\n");
        for n in &self.wait_for_nodes {
            let shape = match n.kind {
                "lock" => "box",
                "channel" => "parallelogram",
                _ => "ellipse",
            };
            let _ = writeln!(
                out,
                "    {} [label={}, shape={shape}];",
                q(&n.id),
                q(&n.label)
            );
        }
        for e in &self.wait_for_edges {
            let style = if matches!(e.relation, "waits" | "joins") {
                "dashed"
            } else {
                "solid"
            };
            let _ = writeln!(
                out,
                "    {} -> {} [label={}, style={style}];",
                q(&e.from),
                q(&e.to),
                q(&format!("{} {}", e.relation, e.site))
            );
        }
        out.push_str("  }\n  subgraph cluster_lock_order {\n    label=\"lock order\";\n");
        for e in &self.lock_order {
            let color = if e.inverted { "red" } else { "black" };
            let _ = writeln!(
                out,
                "    {} -> {} [label={}, color={color}];",
                q(&format!("order:{}", e.from)),
                q(&format!("order:{}", e.to)),
                q(&e.to_site)
            );
        }
        out.push_str("  }\n}\n");
        out
    }
}
