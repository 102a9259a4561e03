//! Correct programs the detector must stay silent on. Each is an armed
//! `#[lockscope::test]`: any finding at all fails it. A false positive is worse than a miss.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lockscope::tokio::{Mutex, RwLock, Semaphore};

mod common;

#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn heavy_contention_with_progress() {
    let m = Arc::new(Mutex::named("neg_contended", 0u64));
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let m = m.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..200 {
                *m.lock().await += 1;
                tokio::task::yield_now().await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*m.lock().await, 64 * 200);
}

#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_ordered_by_account_id_across_64_tasks() {
    let accounts: Arc<Vec<Mutex<i64>>> =
        Arc::new((0..8).map(|_| Mutex::named("neg_account", 1000)).collect());
    let mut tasks = Vec::new();
    for t in 0..64u64 {
        let accounts = accounts.clone();
        tasks.push(tokio::spawn(async move {
            let mut x = t.wrapping_mul(2654435761) | 1;
            for _ in 0..50 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let (from, to) = ((x % 8) as usize, ((x >> 8) % 8) as usize);
                if from == to {
                    continue;
                }
                // Always the lower id first, whichever direction the money goes.
                let (lo, hi) = (from.min(to), from.max(to));
                let mut a = accounts[lo].lock().await;
                let mut b = accounts[hi].lock().await;
                let (src, dst) = if from == lo {
                    (&mut *a, &mut *b)
                } else {
                    (&mut *b, &mut *a)
                };
                *src -= 1;
                *dst += 1;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut total = 0;
    for a in accounts.iter() {
        total += *a.lock().await;
    }
    assert_eq!(total, 8000);
}

#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_owned_then_spawn_the_work() {
    // The pattern tokio documents: the loop keeps acquiring while earlier permits live on in
    // spawned tasks. Not a nested acquire.
    let sem = Arc::new(Semaphore::named("neg_spawn_pool", 4));
    let done = Arc::new(AtomicU64::new(0));
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..100 {
        let permit = sem.clone().acquire_owned().await.unwrap();
        let done = done.clone();
        set.spawn(async move {
            tokio::task::yield_now().await;
            done.fetch_add(1, Ordering::Relaxed);
            drop(permit);
        });
    }
    while set.join_next().await.is_some() {}
    assert_eq!(done.load(Ordering::Relaxed), 100);
    assert_eq!(sem.available_permits(), 4);
}

#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_lock_back_off_in_opposite_orders() {
    let a = Arc::new(Mutex::named("neg_try_a", 0));
    let b = Arc::new(Mutex::named("neg_try_b", 0));
    let mut tasks = Vec::new();
    for flip in [false, true] {
        let (a, b) = (a.clone(), b.clone());
        tasks.push(tokio::spawn(async move {
            let (first, second) = if flip { (b, a) } else { (a, b) };
            let mut done = 0;
            while done < 200 {
                let g1 = first.lock().await;
                match second.try_lock() {
                    Ok(mut g2) => {
                        *g2 += 1;
                        done += 1;
                    }
                    Err(_) => {
                        drop(g1);
                        tokio::task::yield_now().await;
                        continue;
                    }
                }
                drop(g1);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn reader_heavy_rwlock_without_reentry() {
    let cache = Arc::new(RwLock::named("neg_cache", vec![0u64; 16]));
    let mut tasks = Vec::new();
    for i in 0..32 {
        let cache = cache.clone();
        tasks.push(tokio::spawn(async move {
            for n in 0..100 {
                if (i + n) % 25 == 0 {
                    cache.write().await[n % 16] += 1;
                } else {
                    let r = cache.read().await;
                    std::hint::black_box(r.iter().sum::<u64>());
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[lockscope::test]
async fn guards_moved_between_tasks() {
    let m = Arc::new(Mutex::named("neg_moved", 0));
    for _ in 0..20 {
        let mut g = m.clone().lock_owned().await;
        // The guard moves into another task, which releases it; meanwhile we queue again.
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            *g += 1;
        });
        let g2 = m.lock().await;
        drop(g2);
    }
    assert_eq!(*m.lock().await, 20);
    let sem = Arc::new(Semaphore::named("neg_moved_sem", 1));
    let p = sem.clone().acquire_owned().await.unwrap();
    let h = tokio::spawn(async move { drop(p) });
    let _again = sem.acquire().await.unwrap();
    h.await.unwrap();
}

#[lockscope::test]
async fn long_but_finite_waits_under_the_thresholds() {
    let m = Arc::new(Mutex::named("neg_slow", ()));
    let g = m.clone().lock_owned().await;
    let m2 = m.clone();
    let waiter = tokio::spawn(async move {
        let _g = m2.lock().await;
    });
    // Hold it 400 ms of real time (thresholds are 1 s in tests).
    tokio::time::sleep(Duration::from_millis(400)).await;
    drop(g);
    waiter.await.unwrap();
}

#[lockscope::test]
async fn timeouts_and_select_are_not_deadlocks() {
    let a = Arc::new(Mutex::named("neg_to_a", ()));
    let b = Arc::new(Mutex::named("neg_to_b", ()));
    let ga = a.lock().await;
    let (a2, b2) = (a.clone(), b.clone());
    let other = tokio::spawn(async move {
        let _gb = b2.lock().await;
        // Waits for `a` but gives up: a bounded wait, not a deadlock.
        let r = a2.lock_timeout(Duration::from_millis(50)).await;
        assert!(r.is_err());
    });
    other.await.unwrap();
    drop(ga);
    let gb = b.lock().await;
    tokio::select! {
        _ = a.lock() => {}
        _ = tokio::time::sleep(Duration::from_millis(10)) => {}
    }
    drop(gb);
}

#[lockscope::test]
async fn rate_limiter_permits_held_across_awaits() {
    let limiter = Arc::new(Semaphore::named("neg_limiter", 3));
    let mut tasks = Vec::new();
    for _ in 0..12 {
        let limiter = limiter.clone();
        tasks.push(tokio::spawn(async move {
            let _p = limiter.acquire().await.unwrap();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[lockscope::test]
async fn downgrade_then_read_elsewhere() {
    let lock = Arc::new(RwLock::named("neg_downgrade", 0));
    let w = lock.write().await;
    let r = w.downgrade();
    // A second reader in another task: fine after a downgrade. (The same task reading again
    // would be a read inside a read, which lockscope rightly reports.)
    let l = lock.clone();
    let other = tokio::spawn(async move { *l.read().await }).await.unwrap();
    assert_eq!(*r + other, 0);
}

#[lockscope::test]
async fn add_permits_pays_forgotten_ones_back() {
    let sem = Semaphore::named("neg_forget", 2);
    sem.acquire().await.unwrap().forget();
    sem.add_permits(1);
    assert_eq!(sem.available_permits(), 2);
}

#[lockscope::test]
async fn cancelled_waits_leave_no_trace() {
    let m = Arc::new(Mutex::named("neg_cancel", ()));
    let g = m.clone().lock_owned().await;
    let m2 = m.clone();
    tokio::spawn(async move {
        for _ in 0..10 {
            let r = tokio::time::timeout(Duration::from_millis(1), m2.lock()).await;
            assert!(r.is_err());
        }
    })
    .await
    .unwrap();
    drop(g);
    let _ok = m.lock().await;
}

#[lockscope::test]
async fn nested_locks_in_one_consistent_order() {
    let outer = Mutex::named("neg_outer", ());
    let inner = Mutex::named("neg_inner", ());
    let sem = Semaphore::named("neg_inner_sem", 2);
    for _ in 0..50 {
        let _o = outer.lock().await;
        let _i = inner.lock().await;
        let _p = sem.acquire().await.unwrap();
    }
}

/// A short critical section under a parking_lot mutex in async code, never held across an
/// `.await` (what tokio's docs recommend for plain shared data): two workers do contend for
/// it, for microseconds, which stalls nothing worth reporting. At the test default of 10 ms:
/// a holder descheduled by the OS inside its section stalls the other worker for real, but
/// that is the machine's doing, which the rule takes off before judging (and
/// `negative_controls_under_load` runs this beside two CPU hogs).
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_parking_lot_sections_in_tasks() {
    common::short_parking_lot_sections("neg_pl_counter", 50_000).await;
}

// Futures polled side by side in one task each take and release the primitive on their own:
// the task holds it in one future while another waits for it, which is not a nested acquire.

async fn bump_slowly(m: &Mutex<u64>) {
    for _ in 0..5 {
        let mut g = m.lock().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
        *g += 1;
    }
}

async fn read_then_bump(m: &Mutex<u64>) -> u64 {
    let v = *m.lock().await;
    *m.lock().await += 1;
    v
}

#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn joined_futures_share_a_mutex() {
    let m = Mutex::named("neg_joined_mutex", 0u64);
    // The same code twice (one call site), and two different functions (two call sites).
    tokio::join!(bump_slowly(&m), bump_slowly(&m));
    let (_, _) = tokio::join!(bump_slowly(&m), read_then_bump(&m));
    assert_eq!(*m.lock().await, 16);
}

/// The same for a second and a half, so that the watchdog looks many times while one sibling
/// holds the mutex and the other waits for it: a sibling's wait that began just before a look
/// is not a tick old, whatever the published clock it started on says.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn joined_futures_share_a_mutex_across_many_ticks() {
    let m = Mutex::named("neg_joined_mutex_ticks", 0u64);
    let deadline = std::time::Instant::now() + Duration::from_millis(1_500);
    let mut rounds = 0u64;
    while std::time::Instant::now() < deadline {
        tokio::join!(bump_slowly(&m), bump_slowly(&m));
        rounds += 1;
    }
    assert_eq!(*m.lock().await, 10 * rounds);
}

#[lockscope::test]
async fn join_all_limited_by_a_semaphore() {
    let sem = Semaphore::named("neg_join_all", 3);
    let done = AtomicU64::new(0);
    futures_util::future::join_all((0..10).map(|i| {
        let (sem, done) = (&sem, &done);
        async move {
            let _permit = sem.acquire().await.unwrap();
            tokio::time::sleep(Duration::from_millis(1 + i % 3)).await;
            done.fetch_add(1, Ordering::Relaxed);
        }
    }))
    .await;
    assert_eq!(done.load(Ordering::Relaxed), 10);
    assert_eq!(sem.available_permits(), 3);
}

#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn for_each_concurrent_limited_by_a_semaphore() {
    use futures_util::StreamExt;
    let sem = Semaphore::named("neg_for_each_concurrent", 2);
    let rw = RwLock::named("neg_for_each_concurrent_rw", 7u64);
    let sum = AtomicU64::new(0);
    futures_util::stream::iter(0..12u64)
        .for_each_concurrent(4, |i| {
            let (sem, rw, sum) = (&sem, &rw, &sum);
            async move {
                let _permit = sem.acquire().await.unwrap();
                let v = *rw.read().await;
                tokio::time::sleep(Duration::from_millis(1 + i % 2)).await;
                sum.fetch_add(v, Ordering::Relaxed);
            }
        })
        .await;
    assert_eq!(sum.load(Ordering::Relaxed), 12 * 7);
}

/// A semaphore as an event counter: a permit added per job, consumed with `forget`; the worker
/// idles between jobs longer than the stuck threshold (1 s here), waiting for the next.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_as_a_job_signal() {
    let jobs = Arc::new(Semaphore::named("neg_job_signal", 0));
    let done = Arc::new(AtomicU64::new(0));
    let worker = {
        let (jobs, done) = (jobs.clone(), done.clone());
        tokio::spawn(async move {
            for _ in 0..3 {
                jobs.acquire().await.unwrap().forget();
                done.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    jobs.add_permits(1);
    tokio::time::sleep(Duration::from_millis(50)).await;
    jobs.add_permits(1);
    // Idle past the stuck threshold: the worker waits for an event, not behind anyone.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    jobs.add_permits(1);
    worker.await.unwrap();
    assert_eq!(done.load(Ordering::Relaxed), 3);
    assert_eq!(jobs.available_permits(), 0);
}
