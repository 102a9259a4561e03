//! The uncontended fast path allocates nothing and takes no global lock (issue 7).
//!
//! Not a timing test: a counting allocator counts allocations made by this thread while the
//! fast path runs, and the detector's global locks are held by another thread meanwhile, so a
//! fast path that touched one would block (the run has a generous deadline).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::mpsc;
use std::time::Duration;

struct Counting;

thread_local! {
    static COUNT_HERE: Cell<bool> = const { Cell::new(false) };
    /// Allocations counted on this thread (each test counts on a thread of its own).
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

/// Allocations counted on this thread so far.
fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNT_HERE.try_with(Cell::get).unwrap_or(false) {
            let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
        }
        // SAFETY: the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller upholds `dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const ROUNDS: u32 = 10_000;

/// One round of every uncontended operation the budgets name.
async fn round(p: &Prims) {
    *p.mutex.lock().await += 1;
    drop(p.sem.acquire().await.expect("open"));
    drop(p.sem.acquire_many(2).await.expect("open"));
    std::hint::black_box(*p.rw.read().await);
    *p.rw.write().await += 1;
    drop(p.mutex.try_lock().expect("free"));
    *p.pl.lock() += 1;
    std::hint::black_box(*p.pl_rw.read());
    {
        // Two nested blocking locks in one order: a known lock-order edge after round one.
        let _a = p.pl.lock();
        let _b = p.pl_inner.lock();
    }
}

struct Prims {
    mutex: lockscope::tokio::Mutex<u64>,
    sem: lockscope::tokio::Semaphore,
    rw: lockscope::tokio::RwLock<u64>,
    pl: lockscope::parking_lot::Mutex<u64>,
    pl_inner: lockscope::parking_lot::Mutex<u64>,
    pl_rw: lockscope::parking_lot::RwLock<u64>,
}

#[test]
fn uncontended_fast_path_allocates_nothing_and_takes_no_global_lock() {
    let (done_tx, done_rx) = mpsc::channel();
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let worker = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            tokio::spawn(async move {
                let p = Prims {
                    mutex: lockscope::tokio::Mutex::named("fast_mutex", 0),
                    sem: lockscope::tokio::Semaphore::named("fast_sem", 4),
                    rw: lockscope::tokio::RwLock::named("fast_rw", 0),
                    pl: lockscope::parking_lot::Mutex::named("fast_pl", 0),
                    pl_inner: lockscope::parking_lot::Mutex::named("fast_pl_inner", 0),
                    pl_rw: lockscope::parking_lot::RwLock::named("fast_pl_rw", 0),
                };
                // Warm up: thread-local tables, lazy statics, the lock-order edge.
                round(&p).await;
                ready_tx.send(()).expect("ready");
                go_rx.recv().expect("locks held");
                let before = allocs();
                COUNT_HERE.with(|c| c.set(true));
                tokio::task::coop::unconstrained(async {
                    for _ in 0..ROUNDS {
                        round(&p).await;
                    }
                })
                .await;
                COUNT_HERE.with(|c| c.set(false));
                done_tx.send(allocs() - before).expect("report");
            })
            .await
            .expect("task");
        });
    });
    // Creating primitives does take global locks: wait until they exist.
    ready_rx.recv().expect("warm-up");
    // Hold every global lock of the detector while the fast path runs.
    let locks = lockscope::detector::__private::testing::hold_global_locks();
    go_tx.send(()).expect("start");
    let allocs = done_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the fast path blocked: it needs one of the detector's global locks");
    drop(locks);
    worker.join().expect("worker");
    assert_eq!(
        allocs, 0,
        "the uncontended fast path allocated {allocs} times in {ROUNDS} rounds"
    );
}

/// Allocations made by this thread while `work` runs on a current-thread runtime (outside
/// tokio's cooperative budget, so that no receive is forced to wait), after one warm-up run.
fn allocations_of<F: std::future::Future<Output = ()>>(work: impl Fn() -> F) -> u64 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(async {
        work().await;
        let before = allocs();
        COUNT_HERE.with(|c| c.set(true));
        tokio::task::coop::unconstrained(work()).await;
        COUNT_HERE.with(|c| c.set(false));
        allocs() - before
    })
}

/// A message through a lockscope channel allocates nothing that it does not through tokio's
/// (issue 28: one record per channel, made with the channel; nothing per message): 10,000
/// messages through a bounded and an unbounded `mpsc` channel made once, 10,000 oneshot
/// round trips (tokio allocates each oneshot's shared state; lockscope adds nothing to it),
/// and 10,000 spawns each joined while its task has not run yet (a join that waits, and so
/// is recorded).
#[test]
fn a_channel_message_or_a_join_allocates_no_more_than_tokio_does() {
    macro_rules! messages {
        ($mpsc:path, $oneshot:path, $task:path) => {
            allocations_of(|| async {
                use $mpsc as mpsc;
                use $oneshot as oneshot;
                use $task as task;
                let (tx, mut rx) = mpsc::channel::<u64>(16);
                let (utx, mut urx) = mpsc::unbounded_channel::<u64>();
                for i in 0..ROUNDS as u64 {
                    tx.send(i).await.expect("open");
                    std::hint::black_box(rx.recv().await);
                    utx.send(i).expect("open");
                    std::hint::black_box(urx.recv().await);
                    let (otx, orx) = oneshot::channel::<u64>();
                    otx.send(i).expect("open");
                    std::hint::black_box(orx.await.expect("sent"));
                    // The task has not run when its handle is awaited: the join waits.
                    std::hint::black_box(task::spawn(async { 1u8 }).await.expect("ran"));
                }
            })
        };
    }
    let raw = messages!(tokio::sync::mpsc, tokio::sync::oneshot, tokio::task);
    let ours = messages!(
        lockscope::tokio::mpsc,
        lockscope::tokio::oneshot,
        lockscope::tokio::task
    );
    // The run's two channels themselves, made once per run: each has its record, its name
    // and its meter in `/metrics`. Per message, the difference would be thousands.
    let per_run = 16;
    assert!(
        ours <= raw + per_run,
        "lockscope's channels allocated {ours} times for {ROUNDS} messages each, tokio's {raw}"
    );
    assert!(
        raw >= u64::from(ROUNDS),
        "tokio allocates each oneshot: counted {raw}"
    );
}
