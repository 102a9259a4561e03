//! The uncontended fast path allocates nothing and takes no global lock (issue 7).
//!
//! Not a timing test: a counting allocator counts allocations made by this thread while the
//! fast path runs, and the detector's global locks are held by another thread meanwhile, so a
//! fast path that touched one would block (the run has a generous deadline).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COUNT_HERE: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNT_HERE.try_with(Cell::get).unwrap_or(false) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
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
                COUNT_HERE.with(|c| c.set(true));
                tokio::task::coop::unconstrained(async {
                    for _ in 0..ROUNDS {
                        round(&p).await;
                    }
                })
                .await;
                COUNT_HERE.with(|c| c.set(false));
                done_tx
                    .send(ALLOCS.load(Ordering::Relaxed))
                    .expect("report");
            })
            .await
            .expect("task");
        });
    });
    // Creating primitives does take global locks: wait until they exist.
    ready_rx.recv().expect("warm-up");
    // Hold every global lock of the detector while the fast path runs.
    let locks = lockscope::detector::testing::hold_global_locks();
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
