// A small program written against `std::sync`: a job queue (Mutex + Condvar) drained by
// worker threads, a settings registry (RwLock), a static counter, and a worker that panics
// while holding the queue (poisoning it) and is recovered from. It is compiled twice by
// `tests/api_swap.rs`: the only line that differs between the two copies is the `pub use` in
// the parent's `sync_impl` module (`std::sync::{...}` or `lockscope::std::sync::{...}`),
// which the `use` below reads.
//
// `run()` returns a transcript of everything it observed; the two copies must produce the
// same transcript. Between them, the functions here call every stable method of std's Mutex,
// RwLock and Condvar and their guards, and use `LockResult`, `TryLockResult`, `PoisonError`,
// `TryLockError` and `WaitTimeoutResult` by name, `Debug`, `Display`, `Default` and `From`.

use std::collections::{BTreeMap, VecDeque};
use std::error::Error;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::sync_impl::{
    Condvar, LockResult, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard,
    TryLockError, TryLockResult, WaitTimeoutResult,
};

/// The transcript.
pub type Log = Vec<String>;

/// Runs every part and returns what each observed, in order.
///
/// The static counter makes a run observe the state left by the previous one, so runs of
/// one copy of this module are serialized (the test harness calls `run()` from several
/// tests).
pub fn run() -> Log {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut log = Log::new();
    jobs(&mut log);
    settings(&mut log);
    counter(&mut log);
    poisoning(&mut log);
    condvar_timeouts(&mut log);
    errors(&mut log);
    log
}

// ---------------------------------------------------------------------------------------------
// A job queue: Mutex + Condvar, worker threads
// ---------------------------------------------------------------------------------------------

/// Jobs waiting, and whether the queue is closed.
#[derive(Debug, Default)]
pub struct Queue {
    jobs: VecDeque<u64>,
    closed: bool,
}

/// A queue shared by a producer and its workers.
#[derive(Default)]
pub struct JobQueue {
    state: Mutex<Queue>,
    ready: Condvar,
}

impl JobQueue {
    pub fn push(&self, job: u64) {
        self.state.lock().unwrap().jobs.push_back(job);
        self.ready.notify_one();
    }

    pub fn close(&self) {
        self.state.lock().unwrap().closed = true;
        self.ready.notify_all();
    }

    /// The next job, waiting for one; `None` once closed and drained.
    pub fn pop(&self) -> Option<u64> {
        let guard: MutexGuard<'_, Queue> = self.state.lock().unwrap();
        let mut q = self
            .ready
            .wait_while(guard, |q| q.jobs.is_empty() && !q.closed)
            .unwrap();
        q.jobs.pop_front()
    }

    /// The next job with the plain `wait` loop.
    pub fn pop_looping(&self) -> Option<u64> {
        let mut q = self.state.lock().unwrap();
        while q.jobs.is_empty() && !q.closed {
            q = self.ready.wait(q).unwrap();
        }
        q.jobs.pop_front()
    }
}

fn jobs(log: &mut Log) {
    let queue = Arc::new(JobQueue::default());
    let workers: Vec<_> = (0..3)
        .map(|i| {
            let q = queue.clone();
            thread::spawn(move || {
                let mut sum = 0;
                loop {
                    let job = if i == 0 { q.pop_looping() } else { q.pop() };
                    match job {
                        Some(j) => sum += j,
                        None => return sum,
                    }
                }
            })
        })
        .collect();
    for job in 1..=100 {
        queue.push(job);
    }
    queue.close();
    let total: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    log.push(format!("jobs total {total}"));
    log.push(format!("queue debug {:?}", queue.state));
}

// ---------------------------------------------------------------------------------------------
// A settings registry: RwLock
// ---------------------------------------------------------------------------------------------

/// Settings read often, written rarely.
pub struct Settings {
    values: RwLock<BTreeMap<String, String>>,
}

impl Settings {
    pub fn new() -> Self {
        Settings {
            values: RwLock::new(BTreeMap::new()),
        }
    }

    pub fn get(&self, key: &str) -> Option<String> {
        let values: RwLockReadGuard<'_, _> = self.values.read().unwrap();
        values.get(key).cloned()
    }

    pub fn set(&self, key: &str, value: &str) {
        let mut values: RwLockWriteGuard<'_, _> = self.values.write().unwrap();
        values.insert(key.into(), value.into());
    }

    /// Without waiting: `None` while a writer holds the lock.
    pub fn try_get(&self, key: &str) -> Option<Option<String>> {
        match self.values.try_read() {
            Ok(v) => Some(v.get(key).cloned()),
            Err(TryLockError::WouldBlock) => None,
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner().get(key).cloned()),
        }
    }
}

fn settings(log: &mut Log) {
    let s = Arc::new(Settings::new());
    s.set("mode", "fast");
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let s = s.clone();
            thread::spawn(move || s.get("mode"))
        })
        .collect();
    let seen: Vec<_> = readers.into_iter().map(|r| r.join().unwrap()).collect();
    log.push(format!("readers saw {seen:?}"));
    {
        let mut w = s.values.write().unwrap();
        w.insert("writer".into(), "here".into());
        log.push(format!("try_get while written {:?}", s.try_get("mode")));
        log.push(format!(
            "try_write while written {}",
            s.values.try_write().is_err()
        ));
        log.push(format!("write guard {w:?}"));
        log.push(format!("rwlock debug while written {:?}", s.values));
    }
    {
        let r1 = s.values.read().unwrap();
        let r2 = s.values.try_read().unwrap();
        log.push(format!("two readers {} {}", r1.len(), r2.len()));
        log.push(format!(
            "try_write while read {}",
            s.values.try_write().is_err()
        ));
    }
    let mut owned = Arc::try_unwrap(s).ok().unwrap();
    owned
        .values
        .get_mut()
        .unwrap()
        .insert("x".into(), "1".into());
    log.push(format!(
        "into_inner {:?}",
        owned.values.into_inner().unwrap()
    ));
    let d: RwLock<u8> = RwLock::default();
    let f: RwLock<&str> = RwLock::from("from");
    let read = format!("{}", f.read().unwrap());
    let written = format!("{}", f.write().unwrap());
    log.push(format!(
        "rwlock default/from {} {read} {written}",
        d.read().unwrap()
    ));
}

// ---------------------------------------------------------------------------------------------
// A static counter
// ---------------------------------------------------------------------------------------------

static HITS: Mutex<u64> = Mutex::new(0);

fn counter(log: &mut Log) {
    *HITS.lock().unwrap() = 0;
    let threads: Vec<_> = (0..4)
        .map(|_| {
            thread::spawn(|| {
                for _ in 0..250 {
                    *HITS.lock().unwrap() += 1;
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let hits = HITS.lock().unwrap();
    log.push(format!("hits {hits} display {hits}"));
    log.push(format!("try_lock while held {}", HITS.try_lock().is_err()));
    let d: Mutex<String> = Mutex::default();
    let f: Mutex<u8> = 9.into();
    log.push(format!("mutex default/from {:?} {:?}", d, f));
}

// ---------------------------------------------------------------------------------------------
// Poisoning: a worker panics while holding the queue
// ---------------------------------------------------------------------------------------------

/// Locks `m`, taking the data over from a panicked holder if need be.
pub fn lock_recovering<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn poisoning(log: &mut Log) {
    let queue = Arc::new(JobQueue::default());
    queue.push(1);
    let q = queue.clone();
    let r = thread::spawn(move || {
        let mut state = q.state.lock().unwrap();
        state.jobs.push_back(2);
        panic!("worker crashed while holding the queue");
    })
    .join();
    log.push(format!("worker panicked {}", r.is_err()));
    log.push(format!("poisoned {}", queue.state.is_poisoned()));
    let lock: LockResult<MutexGuard<'_, Queue>> = queue.state.lock();
    log.push(format!("lock is_err {}", lock.is_err()));
    let mut recovered = lock.unwrap_err().into_inner();
    log.push(format!("recovered {:?}", recovered.jobs));
    recovered.jobs.clear();
    drop(recovered);
    let t: TryLockResult<MutexGuard<'_, Queue>> = queue.state.try_lock();
    log.push(format!(
        "try_lock poisoned {}",
        matches!(t, Err(TryLockError::Poisoned(_)))
    ));
    drop(t);
    log.push(format!("debug poisoned {:?}", queue.state));
    queue.state.clear_poison();
    log.push(format!("after clear {}", queue.state.is_poisoned()));
    log.push(format!(
        "recovering lock {:?}",
        lock_recovering(&queue.state).jobs
    ));

    // A condvar wait woken by a holder that panics returns the poison, with the guard.
    let q = queue.clone();
    let (waiting_tx, waiting_rx) = std::sync::mpsc::channel();
    let waiter = thread::spawn(move || {
        let g = q.state.lock().unwrap();
        waiting_tx.send(()).unwrap();
        match q.ready.wait_while(g, |s| s.jobs.is_empty()) {
            Ok(g) => format!("woken ok {:?}", g.jobs),
            Err(p) => format!("woken poisoned {:?}", p.into_inner().jobs),
        }
    });
    waiting_rx.recv().unwrap();
    let q = queue.clone();
    let _ = thread::spawn(move || {
        // The waiter sees the job only once this guard is dropped, poisoning the mutex.
        let mut g = q.state.lock().unwrap();
        g.jobs.push_back(7);
        q.ready.notify_all();
        panic!("the notifier crashed");
    })
    .join();
    log.push(waiter.join().unwrap());

    let mut m = Mutex::new(5);
    let _ = thread::scope(|s| {
        s.spawn(|| {
            let _g = m.lock().unwrap();
            panic!("poison for get_mut");
        })
        .join()
    });
    log.push(format!("get_mut poisoned {}", m.get_mut().is_err()));
    log.push(format!(
        "into_inner {:?}",
        m.into_inner().map_err(|e| e.into_inner())
    ));
}

// ---------------------------------------------------------------------------------------------
// Condvar timeouts
// ---------------------------------------------------------------------------------------------

fn condvar_timeouts(log: &mut Log) {
    let m = Mutex::new(0);
    let cv = Condvar::new();
    let (g, r): (MutexGuard<'_, i32>, WaitTimeoutResult) = cv
        .wait_timeout(m.lock().unwrap(), Duration::from_millis(1))
        .unwrap();
    log.push(format!("wait_timeout timed out {}", r.timed_out()));
    let (g, r) = cv
        .wait_timeout_while(g, Duration::from_millis(1), |n| *n == 0)
        .unwrap();
    log.push(format!(
        "wait_timeout_while timed out {} {r:?}",
        r.timed_out()
    ));
    let (g, r) = cv
        .wait_timeout_while(g, Duration::from_secs(60), |n| *n != 0)
        .unwrap();
    log.push(format!("condition already false {}", r.timed_out()));
    #[allow(deprecated)]
    let (g, notified) = cv.wait_timeout_ms(g, 1).unwrap();
    log.push(format!("wait_timeout_ms notified {notified} {g}"));
    log.push(format!("condvar debug {cv:?}"));
}

// ---------------------------------------------------------------------------------------------
// Errors: through `?` and `Box<dyn Error>`
// ---------------------------------------------------------------------------------------------

/// Reads the value, failing on a poisoned mutex.
pub fn read_strict(m: &Mutex<u32>) -> Result<u32, Box<dyn Error + '_>> {
    Ok(*m.lock()?)
}

/// Reads without waiting, failing when held or poisoned.
pub fn read_now(m: &Mutex<u32>) -> Result<u32, Box<dyn Error + '_>> {
    Ok(*m.try_lock()?)
}

fn errors(log: &mut Log) {
    let m = Mutex::new(3);
    log.push(format!(
        "strict {:?}",
        read_strict(&m).map_err(|e| e.to_string())
    ));
    {
        let _g = m.lock().unwrap();
        let e = read_now(&m).unwrap_err();
        log.push(format!(
            "read_now while held: {e} / source {:?}",
            e.source().is_some()
        ));
    }
    let _ = thread::scope(|s| {
        s.spawn(|| {
            let _g = m.lock().unwrap();
            panic!("poison");
        })
        .join()
    });
    let e = read_strict(&m).unwrap_err();
    log.push(format!("strict poisoned: {e} / {e:?}"));
    // The error carries the guard: the mutex stays held until it is dropped.
    log.push(format!("held by the error {}", m.try_lock().is_err()));
    drop(e);
    let e = read_now(&m).unwrap_err();
    log.push(format!("read_now poisoned: {e} / {e:?}"));
    drop(e);
    let err: TryLockError<MutexGuard<'_, u32>> = m.try_lock().unwrap_err();
    let back: PoisonError<MutexGuard<'_, u32>> = match err {
        TryLockError::Poisoned(p) => p,
        TryLockError::WouldBlock => unreachable!("the mutex is free"),
    };
    log.push(format!("poison get_ref {}", **back.get_ref()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_job_is_done_once() {
        let queue = Arc::new(JobQueue::default());
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let q = queue.clone();
                thread::spawn(move || std::iter::from_fn(|| q.pop()).count())
            })
            .collect();
        for job in 0..50 {
            queue.push(job);
        }
        queue.close();
        let done: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
        assert_eq!(done, 50);
    }

    #[test]
    fn settings_are_read_back() {
        let s = Settings::new();
        s.set("a", "1");
        assert_eq!(s.get("a").as_deref(), Some("1"));
        assert_eq!(s.try_get("b"), Some(None));
    }

    #[test]
    fn a_poisoned_queue_is_recovered() {
        let m = Arc::new(Mutex::new(1));
        let m2 = m.clone();
        let _ = thread::spawn(move || {
            let _g = m2.lock().unwrap();
            panic!("poison");
        })
        .join();
        assert!(read_strict(&m).is_err());
        assert_eq!(*lock_recovering(&m), 1);
    }
}
