//! The executor in the model: which threads serve which tokio runtime, how many workers it
//! has, and which thread drives its `block_on` future.
//!
//! Locks alone do not decide who can make progress: a task that holds a blocking guard across
//! an `.await` needs a thread to run again, and a blocking wait takes a thread away. A
//! `current_thread` runtime (or a `LocalSet`) has one thread for all its tasks; a multi-thread
//! runtime has `num_workers` of them. The deadlock rule reads this registry to tell when the
//! thread an actor needs is itself blocked behind that actor.
//!
//! Runtimes are known when `#[lockscope::test]` builds them or a user passes their builder to
//! `lockscope::runtime::instrument`: both install thread hooks that call [`thread_started`]
//! and [`thread_stopped`]. Unknown runtimes still get everything else (a blocking wait on a
//! worker is still a `blocking-in-async` once it stalls the worker).
//!
//! Nothing here is on an acquisition's fast path: hooks run once per thread, the registry is
//! read by the watchdog, and the one per-poll flag is set by the test harness.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::state::actor;

/// A runtime known to lockscope (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RuntimeKey(u64);

impl RuntimeKey {
    /// A fresh key, for one runtime about to be built.
    pub fn new() -> RuntimeKey {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        RuntimeKey(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The raw number (0 is never used).
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl Default for RuntimeKey {
    fn default() -> RuntimeKey {
        RuntimeKey::new()
    }
}

#[derive(Default)]
struct RuntimeInfo {
    /// A multi-thread runtime (else `current_thread`).
    multi: bool,
    /// `num_workers()` (1 for `current_thread`).
    workers: usize,
    /// lockscope number of the thread driving its `block_on`, while it does.
    block_on: Option<u64>,
    /// Set while that thread polls the `block_on` future (it is running, not parked).
    polling: Option<Arc<AtomicBool>>,
    /// Threads of the runtime (workers and blocking-pool threads), by lockscope number.
    threads: usize,
}

struct Registry {
    runtimes: HashMap<u64, RuntimeInfo>,
    /// lockscope thread number -> runtime.
    threads: HashMap<u64, u64>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn with_registry<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    let mut g = REGISTRY.lock();
    let r = g.get_or_insert_with(|| Registry {
        runtimes: HashMap::new(),
        threads: HashMap::new(),
    });
    f(r)
}

thread_local! {
    /// The runtime this thread serves (0: none known).
    static RUNTIME: Cell<u64> = const { Cell::new(0) };
}

/// Describes the runtime of the current thread into `key`'s record (flavor, worker count).
fn describe_current(info: &mut RuntimeInfo) {
    if let Ok(h) = tokio::runtime::Handle::try_current() {
        info.multi = matches!(
            h.runtime_flavor(),
            tokio::runtime::RuntimeFlavor::MultiThread
        );
        info.workers = h.metrics().num_workers();
    }
}

/// A thread of runtime `key` starts (its `on_thread_start` hook).
pub fn thread_started(key: RuntimeKey) {
    let _ = RUNTIME.try_with(|r| r.set(key.0));
    let seq = actor::thread_seq();
    with_registry(|r| {
        r.threads.insert(seq, key.0);
        let info = r.runtimes.entry(key.0).or_default();
        info.threads += 1;
        if info.workers == 0 {
            describe_current(info);
        }
    });
}

/// A thread of a known runtime stops (its `on_thread_stop` hook).
pub fn thread_stopped() {
    let key = RUNTIME.try_with(|r| r.replace(0)).unwrap_or(0);
    if key == 0 {
        return;
    }
    let seq = actor::thread_seq();
    with_registry(|r| {
        r.threads.remove(&seq);
        if let Some(info) = r.runtimes.get_mut(&key) {
            info.threads = info.threads.saturating_sub(1);
            if info.threads == 0 && info.block_on.is_none() {
                r.runtimes.remove(&key);
            }
        }
    });
}

/// Marks the current thread as the one driving runtime `key`'s `block_on` until the returned
/// guard drops. `handle` is the runtime's, read for its flavor and worker count. The guard's
/// [`BlockOn::polling`] flag is to be set while the `block_on` future is being polled.
pub fn enter_block_on(key: RuntimeKey, handle: &tokio::runtime::Handle) -> BlockOn {
    let seq = actor::thread_seq();
    let polling = Arc::new(AtomicBool::new(false));
    let multi = matches!(
        handle.runtime_flavor(),
        tokio::runtime::RuntimeFlavor::MultiThread
    );
    with_registry(|r| {
        let info = r.runtimes.entry(key.0).or_default();
        info.multi = multi;
        info.workers = handle.metrics().num_workers();
        info.block_on = Some(seq);
        info.polling = Some(polling.clone());
        if !multi {
            // The block_on thread is the current-thread runtime's one worker.
            r.threads.insert(seq, key.0);
        }
    });
    let previous_rt = RUNTIME.try_with(|r| r.replace(key.0)).unwrap_or(0);
    BlockOn {
        key,
        seq,
        polling,
        previous_rt,
    }
}

/// Keeps a thread marked as a runtime's `block_on` thread (see [`enter_block_on`]).
pub struct BlockOn {
    key: RuntimeKey,
    seq: u64,
    polling: Arc<AtomicBool>,
    previous_rt: u64,
}

impl BlockOn {
    /// Set to `true` while the `block_on` future is polled, `false` while it is parked.
    pub fn polling(&self) -> &AtomicBool {
        &self.polling
    }
}

impl Drop for BlockOn {
    fn drop(&mut self) {
        let _ = RUNTIME.try_with(|r| r.set(self.previous_rt));
        let (key, seq) = (self.key.0, self.seq);
        with_registry(|r| {
            if r.threads.get(&seq) == Some(&key) {
                r.threads.remove(&seq);
            }
            if let Some(info) = r.runtimes.get_mut(&key) {
                info.block_on = None;
                info.polling = None;
                if info.threads == 0 {
                    r.runtimes.remove(&key);
                }
            }
        });
    }
}

/// One known runtime, as the rules read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeView {
    /// Its key.
    pub key: u64,
    /// Multi-thread (else `current_thread`).
    pub multi: bool,
    /// Worker threads.
    pub workers: usize,
    /// The thread driving its `block_on` future, and whether that future is parked (not
    /// being polled) now.
    pub block_on: Option<(u64, bool)>,
}

/// The registry at one moment.
#[derive(Clone, Debug, Default)]
pub struct Executors {
    /// Known runtimes by key.
    pub runtimes: HashMap<u64, RuntimeView>,
    /// Runtime of each known thread (lockscope thread numbers).
    pub threads: HashMap<u64, u64>,
}

impl Executors {
    /// Reads the registry.
    pub fn capture() -> Executors {
        with_registry(|r| Executors {
            runtimes: r
                .runtimes
                .iter()
                .map(|(&key, i)| {
                    let view = RuntimeView {
                        key,
                        multi: i.multi,
                        workers: i.workers,
                        block_on: i.block_on.map(|t| {
                            let parked = i
                                .polling
                                .as_ref()
                                .is_some_and(|p| !p.load(Ordering::Relaxed));
                            (t, parked)
                        }),
                    };
                    (key, view)
                })
                .collect(),
            threads: r.threads.clone(),
        })
    }

    /// The runtime thread `seq` serves, if known.
    pub fn runtime_of(&self, seq: u64) -> Option<&RuntimeView> {
        self.threads
            .get(&seq)
            .and_then(|k| self.runtimes.get(k))
            .or_else(|| {
                self.runtimes
                    .values()
                    .find(|r| r.block_on.is_some_and(|(t, _)| t == seq))
            })
    }

    /// The multi-thread runtime whose `block_on` future thread `seq` drives, if that future is
    /// parked now (it needs a worker to wake it: its timers and I/O are driven by workers).
    pub fn parked_block_on(&self, seq: u64) -> Option<&RuntimeView> {
        self.runtimes
            .values()
            .find(|r| r.multi && r.block_on == Some((seq, true)))
    }
}

// Not under loom: tokio built with `--cfg loom` has no thread hooks.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_runtime_registers_its_threads_and_block_on() {
        let key = RuntimeKey::new();
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(2)
            .on_thread_start(move || thread_started(key))
            .on_thread_stop(thread_stopped);
        let rt = b.build().unwrap();
        let guard = enter_block_on(key, rt.handle());
        let here = actor::thread_seq();
        let worker =
            rt.block_on(async { tokio::spawn(async { actor::thread_seq() }).await.unwrap() });
        let ex = Executors::capture();
        let view = &ex.runtimes[&key.as_u64()];
        assert!(view.multi);
        assert_eq!(view.workers, 2);
        assert_eq!(view.block_on, Some((here, true)), "parked: not polling now");
        assert_eq!(ex.runtime_of(worker).map(|r| r.key), Some(key.as_u64()));
        assert_eq!(ex.parked_block_on(here).map(|r| r.key), Some(key.as_u64()));
        guard.polling().store(true, Ordering::Relaxed);
        assert!(Executors::capture().parked_block_on(here).is_none());
        drop(guard);
        drop(rt);
        let ex = Executors::capture();
        assert!(ex.parked_block_on(here).is_none());
        assert!(!ex.threads.contains_key(&worker), "stopped threads leave");
    }
}
