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
//! - A guard is held across an `.await` when its task yields while holding it: seen when the
//!   same task starts an async wait, when another task runs lockscope code on that thread
//!   while the guard is held, or when the guard is released on another thread.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

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

struct Flag(AtomicBool);

impl Wake for Flag {
    // mutants: `wake` -> `()` cannot change an answer a test can see: the probe reads the
    // flag within its own poll, where tokio wakes by reference (outside a scheduler) or not
    // yet (on a worker it defers the wake, which comes by value after the probe has read the
    // flag; such a late wake can only turn a later probe's "yes" into a miss).
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Relaxed);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Relaxed);
    }
}

thread_local! {
    /// This thread's probe waker, made once (no allocation per contended wait).
    static PROBE: (Arc<Flag>, Waker) = {
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        (flag.clone(), Waker::from(flag))
    };
}

/// Whether this thread is an async worker now (see module docs). A wake deferred by an
/// earlier probe that lands during this one can only make it answer "no": a miss, never a
/// false report.
pub fn on_async_worker() -> bool {
    PROBE
        .try_with(|(flag, waker)| {
            flag.0.store(false, Ordering::Relaxed);
            let mut cx = Context::from_waker(waker);
            let fut = pin!(tokio::task::yield_now());
            match fut.poll(&mut cx) {
                Poll::Ready(()) => false,
                Poll::Pending => !flag.0.load(Ordering::Relaxed),
            }
        })
        .unwrap_or(false)
}

/// A blocking wait on a worker (`w`, on `prim`) has lasted `waited` ns: reported once past
/// the worker-stall threshold of the test it belongs to (the process-wide one otherwise).
/// Called when the wait ends and by the watchdog while it lasts.
#[cold]
pub(crate) fn check_worker_stall(prim: &Prim, w: &WaiterRec, waited: u64) -> Option<Finding> {
    if !w.on_worker {
        return None;
    }
    let threshold = crate::base::config::for_scopes(&[w.scope, prim.scope()]).worker_stall;
    if u128::from(waited) < threshold.as_nanos() {
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

/// Blocking waits on workers that have lasted past the worker-stall threshold (the watchdog's check,
/// for stalls that have not ended, such as a worker frozen for good).
pub(crate) fn check_stalls(state: &State) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in &state.prims {
        for w in p.waiters.iter().filter(|w| w.on_worker) {
            out.extend(check_worker_stall(&p.prim, w, state.wait_age(w)));
        }
    }
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
            check_worker_stall(&m, &w, 100 * MS).is_none(),
            "not on a worker"
        );
        w.on_worker = true;
        assert!(check_worker_stall(&m, &w, 10 * MS - 1).is_none());
        let f = check_worker_stall(&m, &w, 10 * MS).expect("reported at the threshold");
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
        let s = state(vec![at(&m, vec![], vec![w, off])], &scope, 25 * MS);
        let found = check_stalls(&s);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].summary.contains("(25 ms so far)"),
            "{}",
            found[0].summary
        );
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

    /// A plain thread is no async worker; a multi-thread runtime's worker is.
    #[test]
    fn only_a_runtime_worker_is_an_async_worker() {
        assert!(!on_async_worker());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        assert!(
            !rt.block_on(async { on_async_worker() }),
            "the block_on thread"
        );
        let on_worker = rt.block_on(async { tokio::spawn(async { on_async_worker() }).await });
        assert!(on_worker.unwrap());
    }
}
