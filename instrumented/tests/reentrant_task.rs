//! `lockscope::tokio::ReentrantMutex`: the owning task re-enters (across `.await`s, on a
//! multi-thread runtime), other tasks are excluded and wait, re-entry is never a finding, and
//! a real deadlock through it is still reported.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use lockscope::tokio::ReentrantMutex;

async fn recurse(m: &ReentrantMutex<AtomicU32>, depth: u32) {
    if depth == 0 {
        return;
    }
    let g = m.lock().await;
    assert!(m.held_by_current());
    tokio::task::yield_now().await;
    g.fetch_add(1, Ordering::Relaxed);
    Box::pin(recurse(m, depth - 1)).await;
}

/// Armed: deep re-entry across awaits is no finding (never `nested-acquire`).
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_reenters_across_awaits_and_nothing_is_reported() {
    let m = Arc::new(ReentrantMutex::named("re_deep", AtomicU32::new(0)));
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let m = m.clone();
            tokio::spawn(async move { recurse(&m, 8).await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(m.lock().await.load(Ordering::Relaxed), 32);
    assert!(!m.is_locked(), "the last guard released the lock");
}

/// Mutual exclusion between tasks, hammered: no two tasks are ever inside at once, whatever
/// the depth each re-enters to.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_exclude_each_other() {
    let m = Arc::new(ReentrantMutex::named("re_excl", AtomicBool::new(false)));
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let m = m.clone();
            tokio::spawn(async move {
                for i in 0..300 {
                    let outer = m.lock().await;
                    assert!(!outer.swap(true, Ordering::SeqCst), "two tasks inside");
                    for _ in 0..(i + t) % 3 {
                        let inner = m.lock().await;
                        tokio::task::yield_now().await;
                        assert!(inner.load(Ordering::SeqCst));
                    }
                    tokio::task::yield_now().await;
                    outer.store(false, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
}

/// Another task waits while the owner holds, and gets in when the owner's last guard goes,
/// even when that guard is not the first one taken.
#[tokio::test(start_paused = true)]
async fn another_task_waits_for_the_owners_last_guard() {
    let m = Arc::new(ReentrantMutex::named("re_wait", ()));
    let outer = m.lock().await;
    let inner = m.lock().await;
    let other = {
        let m = m.clone();
        tokio::spawn(async move {
            let _g = m.lock().await;
            m.held_by_current()
        })
    };
    let waiting = {
        let m = m.clone();
        tokio::spawn(async move {
            tokio::time::timeout(Duration::from_millis(100), m.lock())
                .await
                .is_err()
        })
    };
    assert!(
        waiting.await.unwrap(),
        "another task got in while the owner held it"
    );
    assert!(m.try_lock().is_ok(), "the owner may always enter");
    drop(outer); // the first guard; `inner` still holds
    assert!(m.is_locked() && !other.is_finished());
    drop(inner);
    assert!(other.await.unwrap());
    assert!(!m.is_locked());
}

/// Re-entry is by task, not by thread: on a current-thread runtime, every task runs on one
/// thread, and still a second task waits.
#[tokio::test(start_paused = true)]
async fn a_second_task_on_the_same_thread_is_not_the_owner() {
    let m = Arc::new(ReentrantMutex::named("re_same_thread", ()));
    let g = m.lock().await;
    let m2 = m.clone();
    let t = tokio::spawn(async move { m2.try_lock().is_err() });
    assert!(
        t.await.unwrap(),
        "a second task entered a lock held by the first"
    );
    drop(g);
}

/// Two tasks, two reentrant mutexes, opposite orders: a deadlock like any other.
#[lockscope::test]
#[should_panic(expected = "lockscope: deadlock")]
async fn a_deadlock_through_reentrant_mutexes_is_reported() {
    let a = Arc::new(ReentrantMutex::named("re_dl_a", ()));
    let b = Arc::new(ReentrantMutex::named("re_dl_b", ()));
    let ga = a.lock().await;
    let (a2, b2) = (a.clone(), b.clone());
    let other = tokio::spawn(async move {
        let _gb = b2.lock().await;
        let _ga = a2.lock().await;
    });
    while !b.is_locked() {
        tokio::task::yield_now().await;
    }
    let _gb = b.lock().await; // waits forever: deadlock
    drop(ga);
    other.await.unwrap();
}
