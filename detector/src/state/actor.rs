//! Who acquires: a tokio task (by its task id) or, outside any task, an OS thread.
//!
//! The hot path needs the current actor in a few nanoseconds: `tokio::task::try_id()` is one
//! thread-local read, and threads get a small sequential id in a `const` thread-local the first
//! time they touch a lockscope primitive. Thread names are recorded then, for reports.

use std::cell::Cell;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::state::tls::{LOCAL, Local};

/// A task or a thread that acquires, holds or waits for primitives.
///
/// Task ids are tokio's own (`tokio::task::Id`), so they match tokio-console and tracing;
/// thread ids are lockscope's own small sequence numbers (see [`ActorId::thread_seq`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct ActorId(u64);

const THREAD_BIT: u64 = 1 << 63;

impl ActorId {
    /// The actor for tokio task `id`.
    pub fn task(id: tokio::task::Id) -> ActorId {
        ActorId(task_id_u64(id) & !THREAD_BIT)
    }

    /// The actor for the task with the raw id `id` (as tokio prints it).
    pub fn from_task_u64(id: u64) -> ActorId {
        ActorId(id & !THREAD_BIT)
    }

    /// The actor for lockscope thread number `seq`.
    pub fn from_thread_seq(seq: u64) -> ActorId {
        ActorId(THREAD_BIT | seq)
    }

    /// The raw encoding (task ids as is, thread ids with the top bit set).
    pub fn as_u64(self) -> u64 {
        self.0
    }

    /// Rebuilds an actor from [`ActorId::as_u64`]; `None` for 0.
    pub fn from_u64(raw: u64) -> Option<ActorId> {
        (raw != 0).then_some(ActorId(raw))
    }

    /// Whether this is a tokio task.
    pub fn is_task(self) -> bool {
        self.0 & THREAD_BIT == 0
    }

    /// The tokio task id, if this is a task.
    pub fn task_id(self) -> Option<u64> {
        self.is_task().then_some(self.0)
    }

    /// lockscope's thread number, if this is a thread.
    pub fn thread_seq(self) -> Option<u64> {
        (!self.is_task()).then_some(self.0 & !THREAD_BIT)
    }

    /// A human name: `task 42` or `thread 'main' (#1)`.
    pub fn describe(self) -> String {
        match self.thread_seq() {
            None => format!("task {}", self.0),
            Some(seq) => match thread_name(seq) {
                Some(name) => format!("thread '{name}' (#{seq})"),
                None => format!("thread #{seq}"),
            },
        }
    }
}

impl std::fmt::Display for ActorId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// Extracts the `u64` inside a `tokio::task::Id` without formatting it.
///
/// `Id` derives `Hash` over its `NonZeroU64`, which hashes as one `write_u64`; this hasher
/// keeps that value. Stable public API only, one inlined call.
#[inline]
fn task_id_u64(id: tokio::task::Id) -> u64 {
    struct Capture(u64);
    impl Hasher for Capture {
        #[inline]
        fn finish(&self) -> u64 {
            self.0
        }
        #[inline]
        fn write(&mut self, bytes: &[u8]) {
            // Not reached with tokio 1.x (it writes a u64); fold bytes so ids stay distinct.
            for b in bytes {
                self.0 = self.0.rotate_left(8) ^ u64::from(*b);
            }
        }
        #[inline]
        fn write_u64(&mut self, v: u64) {
            self.0 = v;
        }
    }
    let mut h = Capture(0);
    id.hash(&mut h);
    h.0
}

static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);
static THREAD_NAMES: Mutex<Option<HashMap<u64, String>>> = Mutex::new(None);
/// The OS ids of live lockscope threads, by number (see [`thread_tid`]).
static THREAD_TIDS: Mutex<Option<HashMap<u64, i32>>> = Mutex::new(None);

struct ThreadNameGuard(u64);

impl Drop for ThreadNameGuard {
    fn drop(&mut self) {
        if let Some(map) = THREAD_NAMES.lock().as_mut() {
            map.remove(&self.0);
        }
        if let Some(map) = THREAD_TIDS.lock().as_mut() {
            map.remove(&self.0);
        }
    }
}

thread_local! {
    static NAME_GUARD: Cell<Option<ThreadNameGuard>> = const { Cell::new(None) };
}

/// This thread's lockscope number (assigned on first use, never reused).
#[inline]
pub fn thread_seq() -> u64 {
    LOCAL.try_with(thread_seq_in).unwrap_or(u64::MAX)
}

#[inline]
pub(crate) fn thread_seq_in(l: &Local) -> u64 {
    let seq = l.thread_seq.get();
    if seq != 0 { seq } else { assign_thread_seq(l) }
}

#[cold]
#[inline(never)]
fn assign_thread_seq(l: &Local) -> u64 {
    let seq = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
    l.thread_seq.set(seq);
    {
        let name = std::thread::current()
            .name()
            .map(str::to_owned)
            .unwrap_or_else(|| format!("{:?}", std::thread::current().id()));
        THREAD_NAMES
            .lock()
            .get_or_insert_with(HashMap::new)
            .insert(seq, name);
        THREAD_TIDS
            .lock()
            .get_or_insert_with(HashMap::new)
            .insert(seq, crate::base::sched::current_tid());
        let _ = NAME_GUARD.try_with(|g| g.set(Some(ThreadNameGuard(seq))));
    }
    seq
}

/// The OS id of lockscope thread `seq`, while that thread lives (0 where the OS has none).
pub(crate) fn thread_tid(seq: u64) -> Option<i32> {
    THREAD_TIDS.lock().as_ref()?.get(&seq).copied()
}

/// The name of lockscope thread `seq`, while that thread lives.
pub fn thread_name(seq: u64) -> Option<String> {
    THREAD_NAMES.lock().as_ref()?.get(&seq).cloned()
}

/// The actor running now: the current tokio task, else this thread.
#[inline]
pub fn current() -> ActorId {
    match tokio::task::try_id() {
        Some(id) => ActorId::task(id),
        None => ActorId::from_thread_seq(thread_seq()),
    }
}

/// The current actor, this thread's lockscope number and the test scope it works for, from
/// one visit to the thread's locals: what a wait's record names (a join, a channel wait).
#[inline]
pub(crate) fn here() -> (ActorId, u64, u32) {
    here_in(crate::state::tls::local())
}

/// As [`here`], with this thread's locals already at hand.
#[inline]
pub(crate) fn here_in(l: &Local) -> (ActorId, u64, u32) {
    (current_in(l), thread_seq_in(l), l.scope.get())
}

/// As [`current`], with this thread's locals already at hand.
#[inline]
pub(crate) fn current_in(l: &Local) -> ActorId {
    match tokio::task::try_id() {
        Some(id) => ActorId::task(id),
        None => ActorId::from_thread_seq(thread_seq_in(l)),
    }
}

/// The test scope this thread works for (0: none). Set by `#[lockscope::test]` runtimes.
#[inline]
pub fn current_scope() -> u32 {
    LOCAL.try_with(|l| l.scope.get()).unwrap_or(0)
}

/// Marks this thread as working for test scope `scope` (0 clears it).
pub fn set_thread_scope(scope: u32) {
    let _ = LOCAL.try_with(|l| l.scope.set(scope));
}

pub(crate) fn names_lock() -> parking_lot::MutexGuard<'static, impl Sized> {
    THREAD_NAMES.lock()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_ids_are_distinct_and_named() {
        let here = current();
        assert!(!here.is_task());
        let there = std::thread::Builder::new()
            .name("worker-x".into())
            .spawn(|| {
                let a = current();
                (a, a.describe())
            })
            .unwrap()
            .join()
            .unwrap();
        assert_ne!(here, there.0);
        assert!(there.1.contains("worker-x"), "{}", there.1);
    }

    #[test]
    fn task_ids_match_tokio() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let h = tokio::spawn(async { (tokio::task::id(), current()) });
            let (id, actor) = h.await.unwrap();
            assert!(actor.is_task());
            assert_eq!(actor.task_id().unwrap().to_string(), id.to_string());
        });
    }
}
