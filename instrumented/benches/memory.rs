//! Memory per live primitive, measured (issue 7's budget: at most 512 bytes beyond the raw
//! primitive, registry and statistics included).
//!
//! A counting global allocator measures the heap that 10,000 live primitives of each kind
//! take (their registry entries, statistics and any lazily built parts, after one use each),
//! and the wrapper's own size is compared with the raw primitive's. Run with
//! `cargo bench -p lockscope --bench memory`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

#[path = "common/mod.rs"]
#[macro_use]
mod common;
use common::{Row, table};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: as the caller promised for `layout`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: as the caller promised.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: as the caller promised.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const N: usize = 10_000;

/// Heap bytes per primitive that `make` + `touch` leave live, plus `extra` (the wrapper's
/// size beyond the raw type's).
fn per_primitive<P>(make: impl Fn() -> P, touch: impl Fn(&P), extra: usize) -> f64 {
    // Warm up what is built once per process (registry shards, the series, the thread's
    // hold table), so that it is not charged to the primitives.
    let warm: Vec<P> = (0..64).map(|_| make()).collect();
    warm.iter().for_each(&touch);
    let before = LIVE.load(Ordering::Relaxed);
    let all: Vec<P> = Vec::with_capacity(N);
    let vec_bytes = LIVE.load(Ordering::Relaxed) - before;
    let mut all = all;
    for _ in 0..N {
        all.push(make());
    }
    all.iter().for_each(&touch);
    let heap = LIVE.load(Ordering::Relaxed) - before - vec_bytes;
    drop(all);
    drop(warm);
    heap as f64 / N as f64 + extra as f64
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mutex = per_primitive(
        || lockscope::tokio::Mutex::new(0u64),
        |m| drop(m.try_lock().expect("free")),
        size_of::<lockscope::tokio::Mutex<u64>>() - size_of::<tokio::sync::Mutex<u64>>(),
    );
    let sem = per_primitive(
        || lockscope::tokio::Semaphore::new(4),
        |s| rt.block_on(async { drop(s.acquire().await.expect("open")) }),
        size_of::<lockscope::tokio::Semaphore>() - size_of::<tokio::sync::Semaphore>(),
    );
    let rw = per_primitive(
        || lockscope::tokio::RwLock::new(0u64),
        |l| drop(l.try_read().expect("free")),
        size_of::<lockscope::tokio::RwLock<u64>>() - size_of::<tokio::sync::RwLock<u64>>(),
    );
    let pl = per_primitive(
        || lockscope::parking_lot::Mutex::new(0u64),
        |m| drop(m.lock()),
        size_of::<lockscope::parking_lot::Mutex<u64>>() - size_of::<parking_lot::Mutex<u64>>(),
    );
    table(&[
        Row::below("memory per live tokio Mutex", mutex, 512.0, "B"),
        Row::below("memory per live tokio Semaphore", sem, 512.0, "B"),
        Row::below("memory per live tokio RwLock", rw, 512.0, "B"),
        Row::below("memory per live parking_lot Mutex", pl, 512.0, "B"),
    ]);
}
