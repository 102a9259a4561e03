//! What a finding is: its kind, the primitives and actors it names, and its wording.

use std::fmt::Write as _;

use serde::Serialize;

use crate::base::{clock, names};
use crate::model::prim::PrimitiveId;

/// The kind of a finding (API.md's table).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FindingKind {
    /// Tasks or threads that can never proceed.
    Deadlock,
    /// A primitive acquired, or waited for, by its own holder.
    NestedAcquire,
    /// Primitives taken in inconsistent orders.
    LockOrderInversion,
    /// Permits that are not coming back.
    LeakedPermit,
    /// Waiters queued past the stuck threshold while nothing was granted.
    StuckQueue,
    /// A waiter bypassed, or a contended primitive held, past the starvation threshold.
    Starvation,
    /// A blocking lock waited for, or held across `.await`, on an async worker.
    BlockingInAsync,
}

impl FindingKind {
    /// Every kind, in API.md's order.
    pub const ALL: [FindingKind; 7] = [
        FindingKind::Deadlock,
        FindingKind::NestedAcquire,
        FindingKind::LockOrderInversion,
        FindingKind::LeakedPermit,
        FindingKind::StuckQueue,
        FindingKind::Starvation,
        FindingKind::BlockingInAsync,
    ];

    /// The kind string, e.g. `"lock-order-inversion"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            FindingKind::Deadlock => names::FINDING_DEADLOCK,
            FindingKind::NestedAcquire => names::FINDING_NESTED_ACQUIRE,
            FindingKind::LockOrderInversion => names::FINDING_LOCK_ORDER_INVERSION,
            FindingKind::LeakedPermit => names::FINDING_LEAKED_PERMIT,
            FindingKind::StuckQueue => names::FINDING_STUCK_QUEUE,
            FindingKind::Starvation => names::FINDING_STARVATION,
            FindingKind::BlockingInAsync => names::FINDING_BLOCKING_IN_ASYNC,
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for FindingKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FindingKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A primitive named in a finding.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PrimRef {
    /// Its id.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// Its kind string.
    pub kind: &'static str,
    /// Where it was created (`file:line:col`).
    pub created_at: String,
    /// Which of the unnamed primitives created at that site it is (1 for the first), or 0
    /// when that tells nothing: it has a name of its own, or it is the only one so far.
    pub instance: u32,
}

impl PrimRef {
    /// Its name as reports show it: with `#<instance>` when there is one
    /// (`src/lib.rs:59#2`: the second primitive created on that line).
    pub fn label(&self) -> String {
        if self.instance > 0 {
            format!("{}#{}", self.name, self.instance)
        } else {
            self.name.clone()
        }
    }
}

impl std::fmt::Display for PrimRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {:?} (created at {})",
            self.kind,
            self.label(),
            self.created_at
        )
    }
}

/// A hold or a wait of one actor, as a report shows it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Access {
    /// The primitive.
    pub primitive: PrimRef,
    /// `lock`, `read`, `write`, `acquire`, ...
    pub mode: &'static str,
    /// Permits held or wanted.
    pub permits: u32,
    /// Call site of the acquisition.
    pub site: String,
    /// For how long, in milliseconds, when the report was made.
    pub for_ms: u64,
}

/// A task or thread named in a finding, with what it holds and waits for.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ActorReport {
    /// Raw actor id (see `ActorId::as_u64`).
    pub id: u64,
    /// `task 12` or `thread 'main' (#1)`.
    pub name: String,
    /// What it holds.
    pub holds: Vec<Access>,
    /// What it waits for.
    pub waits: Vec<Access>,
}

/// One lock-order edge: `from` was held while `to` was acquired.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct OrderEdge {
    /// Held primitive.
    pub from: PrimRef,
    /// Acquired primitive.
    pub to: PrimRef,
    /// Where `from` was acquired.
    pub from_site: String,
    /// Where `to` was acquired while `from` was held.
    pub to_site: String,
    /// Who did it first.
    pub actor: String,
}

/// One finding: a kind, the primitives and actors involved, and the sites.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Finding {
    /// The kind.
    pub kind: FindingKind,
    /// One sentence after `lockscope: <kind>: `.
    pub summary: String,
    /// Primitives involved.
    pub primitives: Vec<PrimRef>,
    /// Tasks and threads involved, each with its holds and waits. For a `deadlock`, the
    /// knot: the actors whose waits close it.
    pub actors: Vec<ActorReport>,
    /// For a `deadlock`: tasks and threads stuck for good behind the knot (queued on its
    /// primitives, or on what a stuck one holds), but no part of what keeps it stuck.
    /// Left out of the JSON when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub behind: Vec<ActorReport>,
    /// Lock-order edges (inversions).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub orders: Vec<OrderEdge>,
    /// Further explanation, one line each (e.g. the locking scenario table).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
    /// For a `deadlock` among tasks: where each task of the knot is suspended, as tokio's
    /// task dump tells it (builds with `--cfg tokio_unstable` and lockscope's `taskdump`
    /// feature, in `#[lockscope::test]`). Left out of the JSON when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub traces: Vec<AwaitTrace>,
    /// Every call site named, in order of appearance.
    pub sites: Vec<String>,
    /// A one-line suggested fix.
    pub fix: String,
    /// When it was first seen (Unix ms).
    pub first_seen_unix_ms: u64,
    /// Whether it still holds now.
    pub active: bool,
    #[serde(skip)]
    pub(crate) key: String,
    #[serde(skip)]
    pub(crate) scopes: Vec<u32>,
    #[serde(skip)]
    pub(crate) prim_ids: Vec<PrimitiveId>,
    /// Its actors' await traces may be taken: a deadlock among tasks, not one through the
    /// executor (whose blocked workers a task dump would wait for).
    #[serde(skip)]
    pub(crate) traceable: bool,
}

/// Where a task named in a finding is suspended: its await trace, from tokio's task dump.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct AwaitTrace {
    /// The task, as named in the finding's actors (`task 12`).
    pub actor: String,
    /// The trace as tokio prints it: one line per future on the path to the `.await` it is
    /// suspended at, innermost last.
    pub trace: String,
}

impl Finding {
    /// A finding of `kind` with `summary`; rules fill in the rest.
    pub(crate) fn new(kind: FindingKind, key: String, summary: String) -> Finding {
        Finding {
            kind,
            summary,
            primitives: Vec::new(),
            actors: Vec::new(),
            behind: Vec::new(),
            orders: Vec::new(),
            details: Vec::new(),
            traces: Vec::new(),
            sites: Vec::new(),
            fix: String::new(),
            first_seen_unix_ms: clock::unix_ms(),
            active: true,
            key,
            scopes: Vec::new(),
            prim_ids: Vec::new(),
            traceable: false,
        }
    }

    /// The deduplication key (kind plus what identifies this occurrence).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether this finding involves the primitive named `name`.
    pub fn involves(&self, name: &str) -> bool {
        self.primitives.iter().any(|p| p.name == name)
    }

    pub(crate) fn add_prim(&mut self, p: PrimRef) {
        if !self.primitives.iter().any(|q| q.id == p.id) {
            self.prim_ids.push(PrimitiveId(p.id));
            self.primitives.push(p);
        }
    }

    pub(crate) fn add_scope(&mut self, s: u32) {
        if s != 0 && !self.scopes.contains(&s) {
            self.scopes.push(s);
        }
    }

    pub(crate) fn add_site(&mut self, s: &str) {
        if !self.sites.iter().any(|x| x == s) {
            self.sites.push(s.to_owned());
        }
    }

    /// Collects every site of actors and orders into `sites`.
    pub(crate) fn collect_sites(&mut self) {
        let mut all = Vec::new();
        for a in self.actors.iter().chain(&self.behind) {
            for x in a.holds.iter().chain(&a.waits) {
                all.push(x.site.clone());
            }
        }
        for o in &self.orders {
            all.push(o.from_site.clone());
            all.push(o.to_site.clone());
        }
        for s in all {
            self.add_site(&s);
        }
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::new();
        let _ = writeln!(out, "lockscope: {}: {}", self.kind, self.summary);
        for a in &self.actors {
            write_actor(&mut out, a, "  ");
        }
        if !self.behind.is_empty() {
            let _ = writeln!(out, "  {}:", more_behind(self.behind.len()));
            for a in &self.behind {
                write_actor(&mut out, a, "    ");
            }
        }
        for d in &self.details {
            let _ = writeln!(out, "  {d}");
        }
        for t in &self.traces {
            let _ = writeln!(out, "  await trace of {}:", t.actor);
            for line in t.trace.lines().filter(|l| !l.trim().is_empty()) {
                let _ = writeln!(out, "    {line}");
            }
        }
        if !self.primitives.is_empty() {
            let _ = writeln!(out, "  primitives:");
            for p in &self.primitives {
                let _ = writeln!(out, "    {p}");
            }
        }
        if !self.fix.is_empty() {
            let _ = writeln!(out, "  fix: {}", self.fix);
        }
        f.write_str(out.trim_end())
    }
}

/// `6 more wait behind it`: how a deadlock's report counts the actors stuck behind its knot.
pub(crate) fn more_behind(n: usize) -> String {
    format!("{n} more wait{} behind it", if n == 1 { "s" } else { "" })
}

/// One actor of a report, its name at `indent`, each hold and wait one line under it.
fn write_actor(out: &mut String, a: &ActorReport, indent: &str) {
    let _ = writeln!(out, "{indent}{}:", a.name);
    for h in &a.holds {
        let _ = writeln!(
            out,
            "{indent}  holds     {} {} ({}) for {} ms, acquired at {}",
            h.primitive.kind,
            quoted(&h.primitive.label()),
            how(h),
            h.for_ms,
            h.site
        );
    }
    for w in &a.waits {
        if w.primitive.kind == names::KIND_JOIN {
            // Not a primitive: the end of a task or thread, named with its spawn site.
            let _ = writeln!(
                out,
                "{indent}  waits for join of {} (spawned at {}) for {} ms, at {}",
                w.primitive.name, w.primitive.created_at, w.for_ms, w.site
            );
            continue;
        }
        let _ = writeln!(
            out,
            "{indent}  waits for {} {} ({}) for {} ms, at {}",
            w.primitive.kind,
            quoted(&w.primitive.label()),
            how(w),
            w.for_ms,
            w.site
        );
    }
}

fn quoted(s: &str) -> String {
    format!("{s:?}")
}

/// `lock`, `read`, `acquire 1 permit`, `acquire 3 permits`, `write`.
fn how(a: &Access) -> String {
    match (a.mode, a.permits) {
        ("acquire", 1) => "acquire 1 permit".into(),
        ("acquire", n) => format!("acquire {n} permits"),
        (m, _) => m.to_owned(),
    }
}
