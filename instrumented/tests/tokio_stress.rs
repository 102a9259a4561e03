//! The books stay right under stress: 64 tasks on a 2-worker runtime run 10,000 random
//! operations (seeded, reproducible: set `LOCKSCOPE_STRESS_SEED` to replay one) on one shared
//! Mutex, RwLock and Semaphore: acquisitions in every form (borrowed, owned, timed, try),
//! cancellations (a waiting future dropped by `select!` or `tokio::time::timeout`), guards and
//! permits moved to other tasks, permits split and merged, forgotten and paid back. At the
//! end each primitive shows no holder, no waiter and `available == capacity` in
//! `lockscope::detector::locks()`, and the counters that can be known exactly match what the
//! tasks counted.
//!
//! No task ever waits while it holds something (only `try_` forms and bounded waits happen
//! under a hold), so the workload cannot deadlock whatever the interleaving.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use lockscope::detector::{self, FindingKind, LockSnapshot};
use lockscope::tokio::{
    Mutex, OwnedRwLockWriteGuard, RwLock, RwLockWriteGuard, Semaphore, SemaphorePermit,
};

const TASKS: u64 = 64;
const OPS: u64 = 10_000;
const PERMITS: usize = 4;
const MAX_READS: u64 = (u32::MAX >> 3) as u64;

/// Independent runs, each with its own seed and primitives (`LOCKSCOPE_STRESS_SEED` runs one).
const RUNS: u64 = 8;

/// xorshift64*: small, fast, reproducible.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, stream: u64) -> Rng {
        let mut s = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        if s == 0 {
            s = 1;
        }
        let mut r = Rng(s);
        r.next();
        r
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }

    fn micros(&mut self, max: u64) -> Duration {
        Duration::from_micros(self.below(max + 1))
    }
}

/// What the tasks did, for the counters that can be known exactly.
#[derive(Default)]
struct Tally {
    /// Per primitive (mutex, rwlock, semaphore): acquisitions that produced a guard/permit.
    granted: [AtomicU64; 3],
    /// `try_` forms that failed.
    try_failed: [AtomicU64; 3],
    /// Timed forms that gave up.
    timed_out: [AtomicU64; 3],
    /// Split-off permit parts (a hold of their own in the books, not an acquisition).
    splits: AtomicU64,
    /// Cancellations attempted (the future may have been granted first).
    cancel_attempts: AtomicU64,
    /// Writes into the mutex's counter.
    mutex_writes: AtomicU64,
}

struct Shared {
    m: Arc<Mutex<u64>>,
    l: Arc<RwLock<u64>>,
    s: Arc<Semaphore>,
    tally: Tally,
}

/// Holds for a little while: lets other tasks queue up behind.
async fn hold(rng: &mut Rng) {
    for _ in 0..rng.below(3) {
        tokio::task::yield_now().await;
    }
}

/// Polls `fut` once or waits for a tiny timeout, then drops it if it is not done: the
/// cancellation of a (probably) waiting acquire future.
async fn cancel_soon<F: Future>(rng: &mut Rng, fut: F) -> Option<F::Output> {
    if rng.chance(2) {
        tokio::select! {
            biased;
            out = fut => Some(out),
            () = std::future::ready(()) => None,
        }
    } else {
        tokio::time::timeout(rng.micros(200), fut).await.ok()
    }
}

/// Hands a guard or permit to a new task that drops it after a yield or two.
fn move_away<T: Send + 'static>(
    helpers: &mut Vec<tokio::task::JoinHandle<()>>,
    held: T,
    yields: u64,
) {
    helpers.push(tokio::spawn(async move {
        for _ in 0..yields {
            tokio::task::yield_now().await;
        }
        drop(held);
    }));
}

async fn mutex_op(sh: &Shared, rng: &mut Rng, helpers: &mut Vec<tokio::task::JoinHandle<()>>) {
    let t = &sh.tally;
    match rng.below(7) {
        0 => {
            let mut g = sh.m.lock().await;
            t.granted[0].fetch_add(1, Relaxed);
            *g += 1;
            t.mutex_writes.fetch_add(1, Relaxed);
            hold(rng).await;
        }
        1 => match sh.m.try_lock() {
            Ok(mut g) => {
                t.granted[0].fetch_add(1, Relaxed);
                *g += 1;
                t.mutex_writes.fetch_add(1, Relaxed);
            }
            Err(_) => {
                t.try_failed[0].fetch_add(1, Relaxed);
            }
        },
        2 => {
            t.cancel_attempts.fetch_add(1, Relaxed);
            if let Some(mut g) = cancel_soon(rng, sh.m.lock()).await {
                t.granted[0].fetch_add(1, Relaxed);
                *g += 1;
                t.mutex_writes.fetch_add(1, Relaxed);
            }
        }
        3 => match sh.m.lock_timeout(rng.micros(300)).await {
            Ok(mut g) => {
                t.granted[0].fetch_add(1, Relaxed);
                *g += 1;
                t.mutex_writes.fetch_add(1, Relaxed);
                hold(rng).await;
            }
            Err(_) => {
                t.timed_out[0].fetch_add(1, Relaxed);
            }
        },
        4 => {
            // An owned guard, mapped, moved to another task and released there.
            let g = sh.m.clone().lock_owned().await;
            t.granted[0].fetch_add(1, Relaxed);
            let mut g = lockscope::tokio::OwnedMutexGuard::map(g, |v| v);
            *g += 1;
            t.mutex_writes.fetch_add(1, Relaxed);
            let yields = rng.below(3);
            move_away(helpers, g, yields);
        }
        5 => match sh.m.clone().lock_owned_timeout(rng.micros(300)).await {
            Ok(g) => {
                t.granted[0].fetch_add(1, Relaxed);
                let yields = rng.below(2);
                move_away(helpers, g, yields);
            }
            Err(_) => {
                t.timed_out[0].fetch_add(1, Relaxed);
            }
        },
        _ => match sh.m.clone().try_lock_owned() {
            Ok(g) => {
                t.granted[0].fetch_add(1, Relaxed);
                let g = lockscope::tokio::OwnedMutexGuard::map(g, |v| v);
                drop(g);
            }
            Err(_) => {
                t.try_failed[0].fetch_add(1, Relaxed);
            }
        },
    }
}

async fn rwlock_op(sh: &Shared, rng: &mut Rng, helpers: &mut Vec<tokio::task::JoinHandle<()>>) {
    let t = &sh.tally;
    let l = &sh.l;
    match rng.below(10) {
        0 => {
            let r = l.read().await;
            t.granted[1].fetch_add(1, Relaxed);
            let _ = *r;
            hold(rng).await;
        }
        1 => {
            let mut w = l.write().await;
            t.granted[1].fetch_add(1, Relaxed);
            *w += 1;
            hold(rng).await;
            if rng.chance(2) {
                // Downgrade, and keep reading for a while.
                let r = RwLockWriteGuard::downgrade(w);
                hold(rng).await;
                drop(r);
            }
        }
        2 => {
            let r = l.clone().read_owned().await;
            t.granted[1].fetch_add(1, Relaxed);
            let yields = rng.below(3);
            move_away(helpers, r, yields);
        }
        3 => {
            let w = l.clone().write_owned().await;
            t.granted[1].fetch_add(1, Relaxed);
            let mapped = OwnedRwLockWriteGuard::map(w, |v| v);
            let yields = rng.below(2);
            move_away(helpers, mapped, yields);
        }
        4 => match l.try_read() {
            Ok(r) => {
                t.granted[1].fetch_add(1, Relaxed);
                drop(r);
            }
            Err(_) => {
                t.try_failed[1].fetch_add(1, Relaxed);
            }
        },
        5 => match l.try_write() {
            Ok(mut w) => {
                t.granted[1].fetch_add(1, Relaxed);
                *w += 1;
            }
            Err(_) => {
                t.try_failed[1].fetch_add(1, Relaxed);
            }
        },
        6 => match l.read_timeout(rng.micros(300)).await {
            Ok(r) => {
                t.granted[1].fetch_add(1, Relaxed);
                drop(r);
            }
            Err(_) => {
                t.timed_out[1].fetch_add(1, Relaxed);
            }
        },
        7 => match l.write_timeout(rng.micros(300)).await {
            Ok(w) => {
                t.granted[1].fetch_add(1, Relaxed);
                let r = RwLockWriteGuard::downgrade_map(w, |v| v);
                hold(rng).await;
                drop(r);
            }
            Err(_) => {
                t.timed_out[1].fetch_add(1, Relaxed);
            }
        },
        8 => {
            t.cancel_attempts.fetch_add(1, Relaxed);
            if let Some(w) = cancel_soon(rng, l.write()).await {
                t.granted[1].fetch_add(1, Relaxed);
                drop(w);
            }
        }
        _ => {
            t.cancel_attempts.fetch_add(1, Relaxed);
            if let Some(r) = cancel_soon(rng, l.clone().read_owned()).await {
                t.granted[1].fetch_add(1, Relaxed);
                drop(r);
            }
        }
    }
}

async fn semaphore_op(sh: &Shared, rng: &mut Rng, helpers: &mut Vec<tokio::task::JoinHandle<()>>) {
    let t = &sh.tally;
    let s = &sh.s;
    let n = 1 + rng.below(3) as u32;
    match rng.below(10) {
        0 => {
            let p = s.acquire_many(n).await.unwrap();
            t.granted[2].fetch_add(1, Relaxed);
            hold(rng).await;
            drop(p);
        }
        1 => {
            // Split, release one part here and the rest elsewhere.
            let mut p = s.clone().acquire_many_owned(n).await.unwrap();
            t.granted[2].fetch_add(1, Relaxed);
            if let Some(part) = p.split(1) {
                t.splits.fetch_add(1, Relaxed);
                drop(part);
            }
            let yields = rng.below(3);
            move_away(helpers, p, yields);
        }
        2 => {
            // Merge two acquisitions into one permit.
            let mut p: SemaphorePermit<'_> = s.acquire().await.unwrap();
            t.granted[2].fetch_add(1, Relaxed);
            if let Ok(q) = s.try_acquire() {
                t.granted[2].fetch_add(1, Relaxed);
                p.merge(q);
            } else {
                t.try_failed[2].fetch_add(1, Relaxed);
            }
            hold(rng).await;
            drop(p);
        }
        3 => match s.try_acquire_many(n) {
            Ok(p) => {
                t.granted[2].fetch_add(1, Relaxed);
                drop(p);
            }
            Err(_) => {
                t.try_failed[2].fetch_add(1, Relaxed);
            }
        },
        4 => match s.clone().try_acquire_owned() {
            Ok(p) => {
                t.granted[2].fetch_add(1, Relaxed);
                move_away(helpers, p, 1);
            }
            Err(_) => {
                t.try_failed[2].fetch_add(1, Relaxed);
            }
        },
        5 => match s.acquire_many_timeout(n, rng.micros(300)).await {
            Ok(p) => {
                t.granted[2].fetch_add(1, Relaxed);
                hold(rng).await;
                drop(p);
            }
            Err(_) => {
                t.timed_out[2].fetch_add(1, Relaxed);
            }
        },
        6 => match s.clone().acquire_owned_timeout(rng.micros(300)).await {
            Ok(p) => {
                t.granted[2].fetch_add(1, Relaxed);
                move_away(helpers, p, 2);
            }
            Err(_) => {
                t.timed_out[2].fetch_add(1, Relaxed);
            }
        },
        7 => {
            t.cancel_attempts.fetch_add(1, Relaxed);
            if let Some(p) = cancel_soon(rng, s.acquire_many(n)).await {
                t.granted[2].fetch_add(1, Relaxed);
                drop(p.unwrap());
            }
        }
        8 => {
            // Forget a permit, then pay it back.
            if let Ok(p) = s.try_acquire() {
                t.granted[2].fetch_add(1, Relaxed);
                p.forget();
                hold(rng).await;
                s.add_permits(1);
            } else {
                t.try_failed[2].fetch_add(1, Relaxed);
            }
        }
        _ => {
            // Shrink the capacity for a moment, then restore it.
            let removed = s.forget_permits(n as usize);
            hold(rng).await;
            s.add_permits(removed);
        }
    }
}

async fn worker(sh: Arc<Shared>, seed: u64, id: u64) {
    let mut rng = Rng::new(seed, id);
    let mut helpers = Vec::new();
    let mut op = id;
    while op < OPS {
        match rng.below(3) {
            0 => mutex_op(&sh, &mut rng, &mut helpers).await,
            1 => rwlock_op(&sh, &mut rng, &mut helpers).await,
            _ => semaphore_op(&sh, &mut rng, &mut helpers).await,
        }
        op += TASKS;
    }
    for h in helpers {
        h.await.unwrap();
    }
}

fn snapshot(name: &str) -> LockSnapshot {
    let all: Vec<_> = detector::locks()
        .into_iter()
        .filter(|l| l.name == name)
        .collect();
    assert_eq!(
        all.len(),
        1,
        "exactly one live primitive named {name}: {all:#?}"
    );
    all.into_iter().next().unwrap()
}

#[test]
fn books_balance_after_10000_random_operations() {
    let seeds: Vec<u64> = match std::env::var("LOCKSCOPE_STRESS_SEED") {
        Ok(s) => vec![s.parse().expect("LOCKSCOPE_STRESS_SEED: a u64")],
        Err(_) => (0..RUNS)
            .map(|i| 0x5EED_1234_ABCD_0001 + i * 7919)
            .collect(),
    };
    let started = Instant::now();
    let mut timeouts = [0; 3];
    for seed in &seeds {
        let t = run(*seed);
        for i in 0..3 {
            timeouts[i] += t[i];
        }
    }
    if seeds.len() > 1 {
        // The workload really makes the timed forms give up, on every primitive.
        assert!(timeouts.iter().all(|&n| n > 0), "timeouts {timeouts:?}");
    }
    let elapsed = started.elapsed();
    println!("all runs in {elapsed:?}");
}

fn run(seed: u64) -> [u64; 3] {
    println!("seed {seed} (LOCKSCOPE_STRESS_SEED={seed} replays this run)");
    let owned_names = [
        format!("stress_mutex_{seed}"),
        format!("stress_rwlock_{seed}"),
        format!("stress_semaphore_{seed}"),
    ];
    let names = owned_names.each_ref().map(String::as_str);
    let [mutex, rwlock, semaphore] = names;
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sh = Arc::new(Shared {
        m: Arc::new(Mutex::named(mutex, 0)),
        l: Arc::new(RwLock::named(rwlock, 0)),
        s: Arc::new(Semaphore::named(semaphore, PERMITS)),
        tally: Tally::default(),
    });
    rt.block_on(async {
        let tasks: Vec<_> = (0..TASKS)
            .map(|id| tokio::spawn(worker(sh.clone(), seed, id)))
            .collect();
        let all = async {
            for t in tasks {
                t.await.unwrap();
            }
        };
        tokio::time::timeout(Duration::from_secs(60), all)
            .await
            .expect("the workload finished within 60 s (a deadlock?)");
    });
    println!(
        "{OPS} operations by {TASKS} tasks in {:?}",
        started.elapsed()
    );

    let t = &sh.tally;
    // The data itself: every write into the mutex happened exactly once.
    assert_eq!(*sh.m.try_lock().unwrap(), t.mutex_writes.load(Relaxed));

    // The books: nobody holds or waits, everything is available, capacity as at the start.
    for (name, capacity) in [(mutex, 1), (rwlock, MAX_READS), (semaphore, PERMITS as u64)] {
        let l = snapshot(name);
        assert!(l.holders.is_empty(), "{name}: ghost holders {l:#?}");
        assert!(l.waiters.is_empty(), "{name}: ghost waiters {l:#?}");
        assert_eq!(l.capacity, capacity, "{name}: capacity {l:#?}");
        assert_eq!(
            l.available, l.capacity,
            "{name}: available != capacity {l:#?}"
        );
        assert_eq!(l.forgotten, 0, "{name}: forgotten permits {l:#?}");
        assert!(!l.closed);
    }
    // The real primitives agree.
    assert_eq!(sh.s.available_permits(), PERMITS);
    assert_eq!(
        sh.s.try_acquire_many(PERMITS as u32)
            .map(|p| p.num_permits()),
        Ok(PERMITS)
    );
    assert!(sh.m.try_lock().is_ok());
    assert!(sh.l.try_write().is_ok());

    // Counters that the tasks could count exactly. (The three checks above took holds of
    // their own: one each.)
    let metrics = detector::metrics();
    let series = |name: &str| {
        metrics
            .series
            .iter()
            .find(|s| &*s.lock == name)
            .unwrap_or_else(|| panic!("no series {name}"))
            .clone()
    };
    for (i, name) in [mutex, rwlock, semaphore].into_iter().enumerate() {
        let s = series(name);
        assert_eq!(
            s.try_failures,
            t.try_failed[i].load(Relaxed),
            "{name}: try_failures"
        );
        assert_eq!(s.timeouts, t.timed_out[i].load(Relaxed), "{name}: timeouts");
        assert_eq!(
            (s.holders, s.waiters),
            (0, 0),
            "{name}: holders/waiters gauges"
        );
    }
    assert_eq!(series(mutex).acquisitions, t.granted[0].load(Relaxed) + 2);
    assert_eq!(series(rwlock).acquisitions, t.granted[1].load(Relaxed) + 1);
    // Split-off parts are not acquisitions; merged-away and forgotten permits were.
    assert_eq!(
        series(semaphore).acquisitions,
        t.granted[2].load(Relaxed) + 1
    );
    println!(
        "granted {:?} (splits {}), try failures {:?}, timeouts {:?}, cancel attempts {}, cancelled {:?}, contended {:?}",
        t.granted.each_ref().map(|a| a.load(Relaxed)),
        t.splits.load(Relaxed),
        t.try_failed.each_ref().map(|a| a.load(Relaxed)),
        t.timed_out.each_ref().map(|a| a.load(Relaxed)),
        t.cancel_attempts.load(Relaxed),
        [mutex, rwlock, semaphore].map(|n| series(n).cancelled),
        [mutex, rwlock, semaphore].map(|n| series(n).contended),
    );
    // The workload really was contended and really cancelled waiters.
    assert!(
        [mutex, rwlock, semaphore]
            .iter()
            .all(|n| series(n).contended > 0)
    );
    assert!(
        [mutex, rwlock, semaphore]
            .iter()
            .all(|n| series(n).cancelled > 0)
    );

    // No deadlock was ever claimed on these primitives.
    for f in detector::findings() {
        if f.kind == FindingKind::Deadlock {
            assert!(
                f.primitives
                    .iter()
                    .all(|p| !names.contains(&p.name.as_str())),
                "false deadlock: {f}"
            );
        }
    }
    t.timed_out.each_ref().map(|a| a.load(Relaxed))
}
