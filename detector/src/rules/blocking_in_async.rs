//! `blocking-in-async`: a blocking (parking_lot) lock waited for on an async runtime's worker
//! thread, or a blocking guard held across an `.await`.
//!
//! - A contended blocking wait is on a worker when tokio's scheduler context is set on this
//!   thread with its core: there a blocked thread stalls every task of the runtime. The check
//!   polls `tokio::task::yield_now()` once with a private waker: outside a scheduler (a plain
//!   thread, `spawn_blocking`, `block_in_place`, the `block_on` thread of a multi-thread
//!   runtime) tokio wakes it at once, on a worker it defers the wake. Only on the slow path.
//!   Reported once the wait has stalled the worker for the worker-stall threshold
//!   ([`Config::worker_stall`](crate::Config::worker_stall): 10 ms in tests, 50 ms in
//!   production; when it ends, or by the watchdog while it lasts): a brief wait for a short
//!   critical section is fine.
//! - A stall is confirmed before it is reported, so that a machine loaded past its cores does
//!   not pass for a program that blocks: one that ended counts without the time the OS kept
//!   the waiting thread, or the thread of a holder, runnable but off the CPU (a holder
//!   descheduled inside a microsecond section, a waiter woken late; see `base::sched`), and
//!   only if a holder was there to blame when it began; one that lasts is reported by the
//!   watchdog once a later look, at least a threshold later, sees the same wait still stalled.
//! - A guard is held across an `.await` when its task yields while holding it: seen when the
//!   same task starts an async wait, when another task runs lockscope code on that thread
//!   while the guard is held, or when the guard is released on another thread.

use std::collections::HashMap;

use crate::analysis::snapshot::State;
use crate::base::clock;
use crate::model::acq::Acq;
use crate::model::finding::{Finding, FindingKind};
use crate::rules::{holder, noun, prim_ref, prim_ref_id, waiter};
use crate::state::actor;
use crate::state::actor::ActorId;
use crate::state::held::{self, FLAG_BLOCKING_IN_TASK, HoldView};
use crate::state::prim::{self, Prim, PrimitiveId, site_string};
use crate::state::wait::WaiterRec;
use crate::state::worker::{os_share_end, os_share_of, passes_end};

/// A blocking wait on a worker (`w`, on `prim`) ended after `waited` ns, on the thread that
/// waited: reported if it stalled the worker past the threshold once the OS's share is taken
/// off (see [`os_share_end`](crate::state::worker::os_share_end)).
#[cold]
pub(crate) fn wait_ended(prim: &Prim, w: &WaiterRec, waited: u64) -> Option<Finding> {
    let long = stalled(prim, w, waited, 0);
    let os_ns = os_share_end(long);
    // A wait that let many holds pass (short sections whose race it lost again and again, on
    // a loaded machine) stalled behind all of them together, none of which need have been
    // long: that is contention, not a guard held across long work. Reported only when the
    // holds that passed average the threshold, so that one of them at least lasted it.
    let passes = passes_end(prim, long);
    if !stalled(prim, w, waited.saturating_sub(os_ns) / passes, 0) {
        return None;
    }
    check_worker_stall(prim, w, waited, os_ns)
}

/// Whether a wait of `waited` ns (of which the OS took `os_ns`, see [`os_share_end`](crate::state::worker::os_share_end)) stalled a
/// worker past the worker-stall threshold of the test it belongs to (the process-wide one
/// otherwise).
fn stalled(prim: &Prim, w: &WaiterRec, waited: u64, os_ns: u64) -> bool {
    let threshold = crate::base::config::for_scopes(&[w.scope, prim.scope()]).worker_stall;
    w.on_worker && u128::from(waited.saturating_sub(os_ns)) >= threshold.as_nanos()
}

/// A blocking wait on a worker (`w`, on `prim`) has lasted `waited` ns, of which the OS took
/// `os_ns` (see [`os_share_end`](crate::state::worker::os_share_end)): reported once the rest passes the worker-stall threshold
/// (see [`stalled`]). Called when the wait ends, and by the watchdog for one that lasts (see
/// [`check_stalls`]).
#[cold]
pub(crate) fn check_worker_stall(
    prim: &Prim,
    w: &WaiterRec,
    waited: u64,
    os_ns: u64,
) -> Option<Finding> {
    if !stalled(prim, w, waited, os_ns) {
        return None;
    }
    let r = prim_ref(prim);
    let mut f = Finding::new(
        FindingKind::BlockingInAsync,
        format!(
            "wait|{}|{}|{}",
            prim.name(),
            site_string(prim.site()),
            site_string(w.site)
        ),
        format!(
            "{} waits for {} at {} on an async runtime worker thread: the whole worker stalls until it is granted ({} ms so far)",
            w.actor.describe(),
            noun(&r),
            site_string(w.site),
            waited / 1_000_000
        ),
    );
    f.actors.push(waiter(&r, w, waited));
    f.add_scope(prim.scope());
    f.add_scope(w.scope);
    f.add_prim(r);
    f.fix = "use lockscope::tokio::Mutex (an async lock) for data shared across .await, or move the blocking work to tokio::task::spawn_blocking".into();
    Some(f)
}

/// Blocking waits on workers stalled past the worker-stall threshold (the watchdog's check,
/// for stalls that have not ended, such as a worker frozen for good), each confirmed by a
/// second look: reported once a wait seen stalled (in `seen`, by primitive and queue number,
/// with its age then) is seen again a threshold later, still stalled, once the OS's share so
/// far is taken off (as for a wait that ended, see [`os_share_end`](crate::state::worker::os_share_end)). A worker descheduled by
/// the OS for a time slice or two is not; a frozen one is, a tick later. `seen` is left
/// holding the stalls of this look.
pub(crate) fn check_stalls(state: &State, seen: &mut HashMap<(u64, u64), u64>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut now_seen = HashMap::new();
    for p in &state.prims {
        for w in p.waiters.iter().filter(|w| w.on_worker) {
            let age = state.wait_age(w);
            if !stalled(&p.prim, w, age, 0) {
                continue;
            }
            let key = (p.prim.id().0, w.seq);
            let first = seen.get(&key).copied().unwrap_or(age);
            now_seen.insert(key, first);
            if stalled(&p.prim, w, age, first) {
                out.extend(check_worker_stall(&p.prim, w, age, os_share_of(w.thread)));
            }
        }
    }
    *seen = now_seen;
    out
}

fn held_across_await(h: &HoldView, evidence: String) -> Finding {
    let r = prim_ref_id(h.prim);
    let mut f = Finding::new(
        FindingKind::BlockingInAsync,
        format!("held|{}|{}|{}", r.name, r.created_at, site_string(h.site)),
        format!(
            "{} holds {} (acquired at {}) across an .await: {evidence}",
            h.actor.describe(),
            noun(&r),
            site_string(h.site),
        ),
    );
    f.actors
        .push(holder(&r, h, clock::coarse_now().saturating_sub(h.since)));
    f.add_scope(h.scope);
    if let Some(p) = prim::get(PrimitiveId(h.prim)) {
        f.add_scope(p.scope());
    }
    f.add_prim(r);
    f.fix = "drop the blocking guard before the .await (copy out what you need), or use lockscope::tokio::Mutex for data held across awaits".into();
    f
}

/// A task starts an async wait while holding a blocking guard `held`.
#[cold]
pub(crate) fn check_async_wait(
    prim: &Prim,
    actor: ActorId,
    acq: &Acq,
    held: Option<HoldView>,
) -> Option<Finding> {
    let h = held?;
    let r = prim_ref(prim);
    let evidence = format!(
        "{} is about to wait for {} at {}",
        actor.describe(),
        noun(&r),
        site_string(acq.site())
    );
    Some(held_across_await(&h, evidence))
}

/// A task's poll ended while it held a blocking guard (tokio's task hooks told us): it has
/// yielded at an `.await` with the guard held.
#[cold]
pub(crate) fn yielded_holding(h: &HoldView) -> Option<Finding> {
    let evidence = "its poll returned Pending while it held the guard (seen by lockscope's tokio_unstable task hooks), so it is suspended at an .await with the guard held".to_owned();
    Some(held_across_await(h, evidence))
}

/// Another task runs on a thread where a task holds a blocking guard.
#[cold]
pub(crate) fn check_neighbours(running: ActorId) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut found = Vec::new();
    let here = actor::thread_seq();
    held::for_each_all(|h| {
        if h.flags & FLAG_BLOCKING_IN_TASK != 0 && h.thread == here && h.actor != running {
            found.push(h);
        }
    });
    for h in found {
        let evidence = format!(
            "{} ran on the same thread while it was held, so its holder had yielded",
            running.describe()
        );
        out.push(held_across_await(&h, evidence));
    }
    out
}

/// A blocking guard taken by a task was released on another thread: the task moved while it
/// held the guard, which only happens at an `.await`.
#[cold]
pub(crate) fn moved_holding(_prim: &Prim, h: &HoldView, released_on: u64) -> Option<Finding> {
    let evidence = format!(
        "it was acquired on thread #{} and released on thread #{released_on}, so the task was suspended and moved while holding it",
        h.thread
    );
    Some(held_across_await(h, evidence))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testkit::{MS, Scope, at, hold, state, task, wait};
    use crate::state::held::Mode;
    use crate::state::prim::PrimKind;
    use crate::state::worker::{
        BASELINES, OS_BASELINE, OsBaseline, os_share_begin, os_share_end, os_share_of,
    };
    use std::cell::Cell;

    /// A blocking wait on a worker is reported once it passes the worker-stall threshold, in
    /// these words; one that is not on a worker, or is shorter, is not.
    #[test]
    fn a_blocking_wait_on_a_worker_past_the_stall_threshold_is_reported() {
        let scope = Scope::arm(10_000, 10_000, None);
        let m = scope.prim("bia/wait", PrimKind::BlockingMutex, 1);
        let mut w = wait(task(7), 1, Mode::Exclusive, 1, 0);
        w.scope = scope.0;
        let site = site_string(w.site);
        // Config::test(): a 10 ms worker stall.
        assert!(
            check_worker_stall(&m, &w, 100 * MS, 0).is_none(),
            "not on a worker"
        );
        w.on_worker = true;
        assert!(check_worker_stall(&m, &w, 10 * MS - 1, 0).is_none());
        // The OS's share is not the program's: 12 ms of which it took 3 is no stall.
        assert!(check_worker_stall(&m, &w, 12 * MS, 3 * MS).is_none());
        assert!(check_worker_stall(&m, &w, 12 * MS, 2 * MS).is_some());
        let f = check_worker_stall(&m, &w, 10 * MS, 0).expect("reported at the threshold");
        assert_eq!(
            f.summary,
            format!(
                "task 7 waits for blocking_mutex \"bia/wait\" at {site} on an async runtime worker thread: the whole worker stalls until it is granted (10 ms so far)"
            )
        );
        assert_eq!(f.kind, FindingKind::BlockingInAsync);
        assert_eq!(f.actors[0].waits[0].for_ms, 10);
        assert!(f.fix.starts_with("use lockscope::tokio::Mutex"));
        // The watchdog's check, over a state: only the waits on workers, by their age.
        let mut off = wait(task(8), 2, Mode::Exclusive, 1, 0);
        off.on_worker = false;
        let looks = |at_ms: u64, seen: &mut HashMap<(u64, u64), u64>| {
            let s = state(
                vec![at(&m, vec![], vec![w.clone(), off.clone()])],
                &scope,
                at_ms * MS,
            );
            check_stalls(&s, seen)
        };
        // A first look at a 25 ms stall only notes it; so does a second one less than a
        // threshold later; one a threshold later reports it.
        let mut seen = HashMap::new();
        assert!(looks(25, &mut seen).is_empty());
        assert_eq!(seen, HashMap::from([((m.id().0, 1), 25 * MS)]));
        assert!(looks(34, &mut seen).is_empty());
        let found = looks(35, &mut seen);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].summary.contains("(35 ms so far)"),
            "{}",
            found[0].summary
        );
        // A wait no longer stalled (gone, or too young) is forgotten.
        assert!(looks(5, &mut seen).is_empty() && seen.is_empty());
        assert!(looks(25, &mut seen).is_empty());
    }

    /// Held across an `.await`, told by each kind of evidence.
    #[test]
    fn a_guard_held_across_an_await_is_reported_with_its_evidence() {
        let scope = Scope::arm(10_000, 10_000, None);
        let m = scope.prim("bia/held", PrimKind::BlockingMutex, 1);
        let next = scope.prim("bia/next", PrimKind::Mutex, 1);
        let mut h = hold(&m, task(9), Mode::Exclusive, 1, 0);
        h.thread = 3;
        let site = site_string(h.site);
        let acq = Acq::new(std::panic::Location::caller(), 1, Mode::Exclusive);
        let at_site = site_string(acq.site());
        assert!(check_async_wait(&next, task(9), &acq, None).is_none());
        let f = check_async_wait(&next, task(9), &acq, Some(h)).expect("held");
        let start = format!(
            "task 9 holds blocking_mutex \"bia/held\" (acquired at {site}) across an .await: "
        );
        assert_eq!(
            f.summary,
            format!("{start}task 9 is about to wait for mutex \"bia/next\" at {at_site}")
        );
        assert_eq!(f.actors[0].holds.len(), 1);
        assert_eq!(f.primitives[0].name, "bia/held");
        assert!(
            f.fix
                .starts_with("drop the blocking guard before the .await")
        );
        let f = yielded_holding(&h).expect("held");
        assert_eq!(
            f.summary,
            format!(
                "{start}its poll returned Pending while it held the guard (seen by lockscope's tokio_unstable task hooks), so it is suspended at an .await with the guard held"
            )
        );
        let f = moved_holding(&m, &h, 4).expect("held");
        assert_eq!(
            f.summary,
            format!(
                "{start}it was acquired on thread #3 and released on thread #4, so the task was suspended and moved while holding it"
            )
        );
    }

    // A hold of `p` by this thread in its table, as the hooks record one (never released:
    // the primitives here are this test's own).
    #[cfg(target_os = "linux")]
    fn hold_here(p: &Prim) {
        let hold = held::NewHold {
            prim: p.id().0,
            actor: ActorId::from_thread_seq(actor::thread_seq()).as_u64(),
            site: std::panic::Location::caller(),
            since: 0,
            meta: held::Meta::new(1, Mode::Exclusive, 0),
            scope: 0,
        };
        crate::state::tls::LOCAL
            .with(|l| held::push_in(l, hold))
            .expect("room in the table");
    }

    /// A blocking wait on a worker that lasted past the threshold behind one hold is a stall;
    /// the same wait while a thousand holds passed (short sections it lost the race for) is
    /// contention, silent; four holds averaging past the threshold are a stall again.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_wait_that_let_many_short_holds_pass_is_not_a_worker_stall() {
        let scope = Scope::arm(10_000, 10_000, None);
        let m = scope.prim("bia/passes", PrimKind::BlockingMutex, 1);
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let m2 = m.clone();
        // A holder on another thread, so that the stall is laid at its door.
        let holder = std::thread::spawn(move || {
            hold_here(&m2);
            tx.send(()).unwrap();
            done_rx.recv().unwrap();
        });
        rx.recv().unwrap();
        let mut w = wait(
            ActorId::from_thread_seq(actor::thread_seq()),
            1,
            Mode::Exclusive,
            1,
            0,
        );
        w.on_worker = true;
        w.scope = scope.0;
        let waited = 50 * MS;
        let ended = |passed: u64| {
            os_share_begin(&m);
            m.progressed(passed);
            wait_ended(&m, &w, waited)
        };
        assert!(ended(0).is_some(), "behind one hold: a stall");
        assert!(ended(1_000).is_none(), "a thousand short holds passed");
        assert!(ended(4).is_some(), "four holds of 12.5 ms on average");
        done_tx.send(()).unwrap();
        holder.join().unwrap();
    }

    /// The OS's share of a wait: the baseline names this thread and the thread holding the
    /// primitive (not a thread that holds something else), and the share is what their
    /// run-queue time grew by since; a short wait is not measured, and the baseline is gone
    /// after the wait either way.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_os_share_of_a_wait_is_the_run_queue_time_of_waiter_and_holder() {
        use crate::base::sched::{current_tid, runqueue_ns};
        let scope = Scope::arm(10_000, 10_000, None);
        let m = scope.prim("bia/os_share", PrimKind::BlockingMutex, 1);
        let other = scope.prim("bia/os_other", PrimKind::BlockingMutex, 1);
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let (m2, o2) = (m.clone(), other.clone());
        let holder = std::thread::spawn(move || {
            hold_here(&m2);
            hold_here(&o2);
            tx.send(current_tid()).unwrap();
            done_rx.recv().unwrap();
        });
        let holder_tid = rx.recv().unwrap();
        os_share_begin(&m);
        let b = OS_BASELINE.with(Cell::get).expect("a baseline");
        let me = current_tid();
        assert_eq!(b.0[0].0, me);
        assert_eq!(b.0[1].0, holder_tid);
        assert_eq!(b.0[2].0, 0, "only the holder of this primitive");
        // The watchdog finds it by the thread's number, while the wait lasts.
        let seq = actor::thread_seq();
        assert!(
            BASELINES
                .lock()
                .as_ref()
                .is_some_and(|all| all.contains_key(&seq))
        );
        assert!(os_share_of(seq) < u64::MAX, "a holder was seen");
        // Not measured: 0, and the baseline is dropped, for the watchdog too.
        assert_eq!(os_share_end(false), 0);
        assert_eq!(os_share_of(seq), 0);
        assert!(OS_BASELINE.with(Cell::get).is_none());
        assert_eq!(os_share_end(true), 0, "no baseline, nothing known");
        // No holder seen at the start: the stall is not laid at anyone's door.
        OS_BASELINE.with(|c| c.set(Some(OsBaseline([(me, u64::MAX), (0, 0), (0, 0)]))));
        assert_eq!(os_share_end(true), u64::MAX);
        // Measured from a baseline of nothing: the whole run-queue time of both threads.
        let (mine, theirs) = (runqueue_ns(me).unwrap(), runqueue_ns(holder_tid).unwrap());
        OS_BASELINE.with(|c| c.set(Some(OsBaseline([(me, 0), (holder_tid, 0), (0, 0)]))));
        assert!(os_share_end(true) >= mine + theirs);
        // From now on: only what grew since.
        OS_BASELINE.with(|c| {
            c.set(Some(OsBaseline([
                (me, u64::MAX),
                (holder_tid, u64::MAX),
                (0, 0),
            ])))
        });
        assert_eq!(os_share_end(true), 0);
        done_tx.send(()).unwrap();
        holder.join().unwrap();
        // A holder on this very thread (a frozen current_thread runtime): seen, and nothing of
        // the OS's counted for it; the stall is the program's.
        let own = scope.prim("bia/os_own", PrimKind::BlockingMutex, 1);
        hold_here(&own);
        os_share_begin(&own);
        assert_eq!(
            OS_BASELINE.with(Cell::get).expect("a baseline").0[1],
            (-1, 0)
        );
        assert!(os_share_end(true) < u64::MAX);
    }
}
