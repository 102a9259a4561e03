//! The dump a timed-out test fails with: every live primitive that concerns the test, who
//! holds it and who waits for it (since when, and where), then the same by task and thread.
//!
//! It walks the snapshot generically: every primitive kind the books know (locks,
//! semaphores, and whatever waits are modelled as primitives later) shows here as it is
//! added, with its own kind string and verbs.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::analysis::snapshot::{PrimState, State};
use crate::rules::{noun, other_waits, prim_ref};
use crate::state::actor::ActorId;
use crate::state::prim::site_string;

/// Primitives shown at most (the busiest first); the rest are counted.
const MAX_PRIMS: usize = 50;
/// Holders or waiters shown at most per primitive; the rest are counted.
const MAX_PER_PRIM: usize = 20;
/// Tasks and threads shown at most in the by-actor listing.
const MAX_ACTORS: usize = 50;

/// Whether primitive `p` concerns test scope `scope`: created in it, held or waited for by
/// one of its threads, or created outside any test and in use now (a static lock the test
/// may be stuck on).
pub(crate) fn concerns(p: &PrimState, scope: u32) -> bool {
    let own = p.prim.scope();
    own == scope
        || p.holds.iter().any(|h| h.scope == scope)
        || p.waiters.iter().any(|w| w.scope == scope)
        || (own == 0 && (!p.holds.is_empty() || !p.waiters.is_empty()))
}

/// The live state of test scope `scope`, in lines indented by two spaces: each primitive
/// with its holders and waiters, then each task and thread with what it holds and waits for.
/// `test_thread`: the test's own thread (lockscope number), said to be parked in the
/// runtime's `block_on` (its body pending) when the executor registry says so.
pub(crate) fn live_dump(state: &State, scope: u32, test_thread: u64) -> String {
    let mut out = String::new();
    let mut prims: Vec<&PrimState> = state.prims.iter().filter(|p| concerns(p, scope)).collect();
    // Those with waiters first, then those held, then the idle ones, each by creation.
    prims.sort_by_key(|p| (p.waiters.is_empty(), p.holds.is_empty(), p.prim.id().0));
    let _ = writeln!(
        out,
        "live state: {} lockscope primitive(s) of this test or in use by it",
        prims.len()
    );
    // Per task or thread: (what it holds, what it waits for), as lines.
    let mut actors: BTreeMap<u64, (ActorId, Vec<String>, Vec<String>)> = BTreeMap::new();
    for (i, p) in prims.iter().enumerate() {
        let r = prim_ref(&p.prim);
        let what = noun(&r);
        let kind = p.prim.kind().as_str();
        if i < MAX_PRIMS {
            let status = match (p.holds.len(), p.waiters.len()) {
                (0, 0) => "free, no waiter".to_owned(),
                (h, w) => format!("{h} holder(s), {w} waiter(s)"),
            };
            let _ = writeln!(out, "  {what} (created at {}): {status}", r.created_at);
        }
        for (j, h) in p.holds.iter().enumerate() {
            let age = state.hold_age(h) / 1_000_000;
            let site = site_string(h.site);
            let verb = h.mode.verb_in(kind);
            if i < MAX_PRIMS && j < MAX_PER_PRIM {
                let _ = writeln!(
                    out,
                    "    held ({verb}{}) by {}{} for {age} ms, acquired at {site}",
                    permits(h.permits),
                    h.actor.describe(),
                    on_thread(h.actor, h.thread),
                );
            }
            actors
                .entry(h.actor.as_u64())
                .or_insert_with(|| (h.actor, Vec::new(), Vec::new()))
                .1
                .push(format!(
                    "holds {what} ({verb}) for {age} ms, acquired at {site}"
                ));
        }
        if i < MAX_PRIMS && p.holds.len() > MAX_PER_PRIM {
            let _ = writeln!(
                out,
                "    ... and {} more holder(s)",
                p.holds.len() - MAX_PER_PRIM
            );
        }
        for (j, w) in p.waiters.iter().enumerate() {
            let age = state.wait_age(w) / 1_000_000;
            let site = site_string(w.site);
            let verb = w.mode.verb_in(kind);
            let timed = if w.timed { ", timed" } else { "" };
            if i < MAX_PRIMS && j < MAX_PER_PRIM {
                let _ = writeln!(
                    out,
                    "    waited for ({verb}{}{timed}) by {}{} for {age} ms, at {site}",
                    permits(w.permits),
                    w.actor.describe(),
                    on_thread(w.actor, w.thread),
                );
            }
            actors
                .entry(w.actor.as_u64())
                .or_insert_with(|| (w.actor, Vec::new(), Vec::new()))
                .2
                .push(format!(
                    "waits to {verb} {what}{timed} for {age} ms, at {site}"
                ));
        }
        if i < MAX_PRIMS && p.waiters.len() > MAX_PER_PRIM {
            let _ = writeln!(
                out,
                "    ... and {} more waiter(s)",
                p.waiters.len() - MAX_PER_PRIM
            );
        }
    }
    if prims.len() > MAX_PRIMS {
        let _ = writeln!(
            out,
            "  ... and {} more primitive(s)",
            prims.len() - MAX_PRIMS
        );
    }
    other_waits(state, scope, &mut out, &mut actors);
    let _ = writeln!(out, "tasks and threads that hold or wait for any of them:");
    if actors.is_empty() {
        out.push_str(
            "  (none: nothing lockscope sees is held or waited for, so the test waits on \
             something it does not see: a raw tokio or std primitive, I/O, a timer, a task)\n",
        );
    }
    for (shown, (actor, holds, waits)) in actors.values().enumerate() {
        if shown == MAX_ACTORS {
            let _ = writeln!(out, "  ... and {} more", actors.len() - MAX_ACTORS);
            break;
        }
        let _ = writeln!(out, "  {}:", actor.describe());
        for l in holds.iter().chain(waits) {
            let _ = writeln!(out, "    {l}");
        }
        if waits.is_empty() {
            let _ = writeln!(
                out,
                "    waits for nothing lockscope sees (pending on something else, or running)"
            );
        }
    }
    let thread = ActorId::from_thread_seq(test_thread).describe();
    let parked = state
        .executors
        .runtimes
        .values()
        .find_map(|r| r.block_on.filter(|(t, _)| *t == test_thread));
    let _ = match parked {
        Some((_, true)) => writeln!(
            out,
            "the test's thread, {thread}, is parked in the runtime's block_on: its body is pending"
        ),
        Some((_, false)) => writeln!(
            out,
            "the test's thread, {thread}, is inside its body's poll: blocked or busy, it never returns to the runtime"
        ),
        None => writeln!(out, "the test's thread: {thread}"),
    };
    out
}

/// The test's waits that are not for a primitive: joins (precise: only the joined task or
/// thread can end them) and channel sends and receives (a send into a full bounded channel
/// waits for the receiver's owner; a receive is open: any holder of a sender could end it).
/// Listed after the primitives, and added to each waiter's lines in `actors`.
fn other_waits(
    state: &State,
    scope: u32,
    out: &mut String,
    actors: &mut BTreeMap<u64, (ActorId, Vec<String>, Vec<String>)>,
) {
    let joins = state.joins.iter().filter(|j| j.scope == scope);
    let chans = state.chan_waits.iter().filter(|c| c.scope == scope);
    let lines: Vec<(ActorId, String)> = joins
        .map(|j| (j.waiter, other_waits::join_line(state, j)))
        .chain(chans.map(|c| (c.waiter, other_waits::chan_line(state, c))))
        .collect();
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "joins and channel waits of this test: {}", lines.len());
    for (i, (who, line)) in lines.into_iter().enumerate() {
        if i < MAX_PRIMS {
            let _ = writeln!(out, "  {} {line}", who.describe());
        }
        actors
            .entry(who.as_u64())
            .or_insert_with(|| (who, Vec::new(), Vec::new()))
            .2
            .push(line);
    }
}

/// `, N permits` when more than one.
fn permits(n: u32) -> String {
    if n > 1 {
        format!(", {n} permits")
    } else {
        String::new()
    }
}

/// ` on thread ...` for a task (the thread it held or waited on); nothing for a thread.
fn on_thread(actor: ActorId, thread: u64) -> String {
    if actor.is_task() {
        format!(" on {}", ActorId::from_thread_seq(thread).describe())
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testkit::{MS, Scope, at, hold, state, task, wait};
    use crate::state::held::Mode;
    use crate::state::prim::PrimKind;

    #[test]
    fn the_dump_names_holders_and_waiters_with_sites_and_escapes_names() {
        let s = Scope::arm(1000, 1000, None);
        let m = s.prim("dump\"\n<m>", PrimKind::Mutex, 1);
        let idle = s.prim("dump_idle", PrimKind::Mutex, 1);
        let st = state(
            vec![
                at(&idle, vec![], vec![]),
                at(
                    &m,
                    vec![hold(&m, task(1), Mode::Exclusive, 1, 0)],
                    vec![wait(task(2), 1, Mode::Exclusive, 1, 600 * MS)],
                ),
            ],
            &s,
            1500 * MS,
        );
        let d = live_dump(&st, s.0, 0);
        assert!(d.contains("2 lockscope primitive(s)"), "{d}");
        // Quoted and escaped, the control character made harmless at registration.
        assert!(
            d.contains(r#"mutex "dump\"?<m>""#),
            "the name is escaped: {d}"
        );
        assert!(!d.contains("dump\"\n"), "never raw: {d}");
        assert!(d.contains("held (lock) by task 1 on thread"), "{d}");
        assert!(
            d.contains("for 1500 ms, acquired at detector/src/report/dump.rs:"),
            "{d}"
        );
        assert!(d.contains("waited for (lock) by task 2 on thread"), "{d}");
        assert!(
            d.contains("for 900 ms, at detector/src/report/dump.rs:"),
            "{d}"
        );
        // The primitive with a waiter comes first, the idle one after it.
        let (busy, free) = (d.find("<m>").unwrap(), d.find("dump_idle").unwrap());
        assert!(busy < free, "{d}");
        assert!(d.contains("free, no waiter"), "{d}");
        assert!(d.contains("  task 1:\n    holds mutex"), "{d}");
        assert!(d.contains("  task 2:\n    waits to "), "{d}");
        let other = Scope::arm(1000, 1000, None);
        // Joins and channel waits of the test are listed, and under their waiters.
        let mut st = st;
        let here = std::panic::Location::caller();
        st.joins.push(crate::state::joins::JoinView {
            seq: 1,
            waiter: task(1),
            thread: 1,
            blocking: false,
            targets: vec![(task(3), here)],
            set: None,
            site: here,
            since_ns: 1000 * MS,
            scope: s.0,
        });
        let chan = std::sync::Arc::new(crate::state::channels::Channel::new(
            "oneshot",
            Some("reply"),
            here,
            None,
        ));
        st.chan_waits.push(crate::state::channels::ChanWaitView {
            seq: 2,
            chan,
            op: crate::state::channels::ChanOp::Recv,
            waiter: task(3),
            thread: 1,
            blocking: false,
            owner: None,
            receiver_gone: false,
            permits_out: 0,
            site: here,
            since_ns: 1200 * MS,
            scope: s.0,
        });
        let d = live_dump(&st, s.0, 0);
        assert!(d.contains("joins and channel waits of this test: 2"), "{d}");
        assert!(
            d.contains(
                "  task 1 waits for the join of task 3 (spawned at detector/src/report/dump.rs:"
            ),
            "{d}"
        );
        assert!(
            d.contains("task 3 waits to receive from oneshot channel \"reply\" (created at detector/src/report/dump.rs:"),
            "{d}"
        );
        assert!(d.contains("for 300 ms, at "), "{d}");
        assert!(
            d.contains("(open: any holder of a sender can end it)"),
            "{d}"
        );
        assert!(d.contains("  task 3:\n    waits to receive from"), "{d}");
        let d = live_dump(&st, other.0, 0);
        assert!(
            d.contains("0 lockscope primitive(s)"),
            "another test's primitives are not this test's: {d}"
        );
        assert!(d.contains("(none: nothing lockscope sees"), "{d}");
    }
}
