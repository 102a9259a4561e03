//! This thread as the runtime and the OS see it, for the worker-stall rule (see
//! `rules::blocking_in_async`): whether it is an async runtime's worker now, and how much of
//! a blocking wait on a worker the OS took (run-queue time of the waiter and the holders,
//! from `base::sched`), by a baseline noted when the wait begins.

use std::cell::Cell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use crate::state::actor;
use crate::state::held;
use crate::state::prim::Prim;

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
pub(crate) fn on_async_worker() -> bool {
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

/// Where a blocking wait on a worker began, in the OS's books: the run-queue time so far
/// of the waiting thread and of up to two threads holding the primitive then, by OS thread id
/// (0: none; -1: a holder on the waiting thread itself). The baseline [`os_share_end`]
/// measures from.
#[derive(Clone, Copy, Default)]
pub(crate) struct OsBaseline(pub(crate) [(i32, u64); 3]);

thread_local! {
    /// The baseline of this thread's blocking wait on a worker: a blocking wait blocks its
    /// thread, so there is at most one at a time.
    pub(crate) static OS_BASELINE: Cell<Option<OsBaseline>> = const { Cell::new(None) };
    /// The primitive's progress (releases) when this thread's blocking wait on a worker
    /// began: see [`passes_end`].
    static PROGRESS_BASELINE: Cell<Option<u64>> = const { Cell::new(None) };
}

/// How many holds of `prim` ended while this thread's blocking wait on a worker lasted (at
/// least 1): the holds the wait had to let pass. Read only when `measure` (a long wait); the
/// baseline is dropped either way.
#[cold]
pub(crate) fn passes_end(prim: &Prim, measure: bool) -> u64 {
    let Some(then) = PROGRESS_BASELINE.try_with(Cell::take).ok().flatten() else {
        return 1;
    };
    if !measure {
        return 1;
    }
    prim.progress().saturating_sub(then).max(1)
}

/// The same baselines by lockscope thread number, for the watchdog's look at a stall that
/// lasts (see [`check_stalls`]).
pub(crate) static BASELINES: parking_lot::Mutex<Option<HashMap<u64, OsBaseline>>> =
    parking_lot::Mutex::new(None);

/// A blocking wait on a worker begins on this thread for `prim`: notes the baseline of
/// [`os_share_end`]. On the slow path of a contended blocking wait on a worker only (it reads
/// the holders' books and a few small files).
#[cold]
pub(crate) fn os_share_begin(prim: &Prim) {
    let _ = PROGRESS_BASELINE.try_with(|c| c.set(Some(prim.progress())));
    let me = crate::base::sched::current_tid();
    let Some(mine) = crate::base::sched::runqueue_ns(me) else {
        return;
    };
    let mut b = OsBaseline::default();
    b.0[0] = (me, mine);
    let mut threads: Vec<u64> = Vec::new();
    held::for_each_all(|h| {
        if h.prim == prim.id().0 && !threads.contains(&h.thread) {
            threads.push(h.thread);
        }
    });
    // A holder on this very thread (a task of this runtime that yielded holding it) cannot
    // run while this thread waits: noted as seen (-1), with nothing of the OS's to count.
    let holders = threads
        .into_iter()
        .filter_map(actor::thread_tid)
        .filter_map(|tid| {
            if tid == me {
                Some((-1, 0))
            } else {
                Some((tid, crate::base::sched::runqueue_ns(tid)?))
            }
        });
    for (slot, h) in b.0[1..].iter_mut().zip(holders) {
        *slot = h;
    }
    let _ = OS_BASELINE.try_with(|c| c.set(Some(b)));
    BASELINES
        .lock()
        .get_or_insert_with(HashMap::new)
        .insert(actor::thread_seq(), b);
}

/// This thread's blocking wait on a worker ends: how much of it the OS took, in ns: the time
/// this thread and the most delayed of the holders noted at its start spent runnable but off
/// the CPU since. 0 where the OS tells nothing (no baseline); all of it (`u64::MAX`) when it
/// does but no holder was seen at the start: the lock was free by the books then, and the
/// stall cannot be laid at a holder's door (seen on a loaded machine: a worker descheduled
/// right after taking back, again and again, a lock its neighbour was woken for). Such a
/// stall is only reported by the watchdog, if it lasts. `measure`: whether to read it at all
/// (the wait was long enough to matter); the baseline is dropped either way.
#[cold]
pub(crate) fn os_share_end(measure: bool) -> u64 {
    let Some(b) = OS_BASELINE.try_with(Cell::take).ok().flatten() else {
        return 0;
    };
    if let Some(all) = BASELINES.lock().as_mut() {
        all.remove(&actor::thread_seq());
    }
    if !measure {
        return 0;
    }
    os_share(b)
}

/// What the OS has taken so far of the blocking wait on a worker that lockscope thread
/// `thread` is in, as [`os_share_end`] counts it (0 when nothing is known): the watchdog's.
pub(crate) fn os_share_of(thread: u64) -> u64 {
    let b = BASELINES
        .lock()
        .as_ref()
        .and_then(|all| all.get(&thread).copied());
    b.map_or(0, os_share)
}

/// The run-queue time grown since baseline `b` (see [`os_share_end`]).
fn os_share(b: OsBaseline) -> u64 {
    if b.0[1].0 == 0 {
        return u64::MAX;
    }
    let grown = |(tid, then): (i32, u64)| {
        crate::base::sched::runqueue_ns(tid).map_or(0, |now| now.saturating_sub(then))
    };
    let holder = b.0[1..]
        .iter()
        .filter(|(tid, _)| *tid != 0)
        .map(|&h| grown(h))
        .max()
        .unwrap_or(0);
    grown(b.0[0]) + holder
}

#[cfg(test)]
mod tests {
    use super::*;

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
