//! Behaviours tokio's own test suite (`tests/sync_*.rs`, run by `scripts/conformance`) checks
//! and lockscope once got wrong, kept here so that `cargo test` catches them without the
//! script: permit counts past `u32::MAX`, and FIFO order for a task out of coop budget.

use std::sync::Arc;

use futures_util::FutureExt;
use lockscope::tokio::{Mutex, RwLock, Semaphore};
use tokio_test::task::spawn;
use tokio_test::{assert_pending, assert_ready};

/// Spends the task's whole coop budget (as tokio's `mutex_fifo_with_coop_budget` does).
fn spend_budget() {
    while tokio::task::coop::consume_budget().now_or_never().is_some() {}
}

#[test]
fn merged_permits_count_past_u32() {
    let s = Semaphore::new(6_000_000_000);
    let mut a = s.try_acquire_many(3_000_000_000).unwrap();
    let b = s.try_acquire_many(3_000_000_000).unwrap();
    a.merge(b);
    assert_eq!(a.num_permits(), 6_000_000_000);
    assert_eq!(s.available_permits(), 0);
    let c = a.split(5_000_000_000).expect("split past u32::MAX");
    assert_eq!(
        (a.num_permits(), c.num_permits()),
        (1_000_000_000, 5_000_000_000)
    );
    drop(c);
    assert_eq!(s.available_permits(), 5_000_000_000);
    drop(a);
    assert_eq!(s.available_permits(), 6_000_000_000);
}

#[test]
fn merged_owned_permits_count_past_u32() {
    let s = Arc::new(Semaphore::new(6_000_000_000));
    let mut a = s.clone().try_acquire_many_owned(3_000_000_000).unwrap();
    let b = s.clone().try_acquire_many_owned(3_000_000_000).unwrap();
    a.merge(b);
    assert_eq!(a.num_permits(), 6_000_000_000);
    let c = a.split(4_500_000_000).expect("split past u32::MAX");
    assert_eq!(c.num_permits(), 4_500_000_000);
    drop((a, c));
    assert_eq!(s.available_permits(), 6_000_000_000);
}

#[test]
fn forgetting_merged_permits_past_u32_pays_back() {
    let s = Semaphore::new(6_000_000_000);
    let mut a = s.try_acquire_many(3_000_000_000).unwrap();
    a.merge(s.try_acquire_many(3_000_000_000).unwrap());
    a.forget();
    assert_eq!(s.available_permits(), 0);
    s.add_permits(6_000_000_000);
    assert_eq!(s.available_permits(), 6_000_000_000);
}

/// tokio's `mutex_fifo_with_coop_budget`, for every async acquire form: `$hold` takes the
/// primitive; a task out of budget then waits with `$a` and another with `$b`. The first is
/// queued on its first poll (it yields, but holds its place), so the release wakes it first.
macro_rules! fifo_with_coop_budget {
    ($name:ident, $prim:expr, |$p:ident| $hold:expr, $a:expr, $b:expr) => {
        #[tokio::test]
        async fn $name() {
            let shared = Arc::new($prim);
            let $p = shared.clone();
            let mut t0 = spawn(async move { $hold });
            let g0 = assert_ready!(t0.poll());

            let $p = shared.clone();
            let mut t_a = spawn(async move {
                spend_budget();
                drop($a);
            });
            assert_pending!(t_a.poll());

            let $p = shared.clone();
            let mut t_b = spawn(async move { drop($b) });
            assert_pending!(t_b.poll());

            drop(g0);
            assert!(
                t_a.is_woken(),
                "the task out of budget kept its place in the queue"
            );
            assert!(!t_b.is_woken());
        }
    };
}

fifo_with_coop_budget!(
    mutex_lock_owned,
    Mutex::new(()),
    |m| m.lock_owned().await,
    m.lock_owned().await,
    m.lock_owned().await
);
fifo_with_coop_budget!(
    mutex_lock,
    Mutex::new(()),
    |m| m.lock_owned().await,
    m.lock().await,
    m.lock().await
);
fifo_with_coop_budget!(
    rwlock_write,
    RwLock::new(()),
    |l| l.write_owned().await,
    l.write().await,
    l.write_owned().await
);
fifo_with_coop_budget!(
    rwlock_read_before_writer,
    RwLock::new(()),
    |l| l.write_owned().await,
    l.read().await,
    l.write().await
);
fifo_with_coop_budget!(
    rwlock_read_owned_before_writer,
    RwLock::new(()),
    |l| l.write_owned().await,
    l.clone().read_owned().await,
    l.write().await
);
fifo_with_coop_budget!(
    semaphore_acquire,
    Semaphore::new(1),
    |s| s.acquire_owned().await.unwrap(),
    s.acquire().await.unwrap(),
    s.acquire_owned().await.unwrap()
);
fifo_with_coop_budget!(
    semaphore_acquire_many_owned,
    Semaphore::new(2),
    |s| s.clone().acquire_many_owned(2).await.unwrap(),
    s.clone().acquire_many_owned(2).await.unwrap(),
    s.acquire_many(2).await.unwrap()
);

/// tokio's `mutex_coop_drop_after_take_permit`: a task out of budget that took the lock on
/// its first poll and is then dropped gives it back.
#[tokio::test]
async fn dropped_out_of_budget_acquire_gives_back() {
    let m = Arc::new(Mutex::new(()));
    let m_a = m.clone();
    let mut t_a = spawn(async move {
        spend_budget();
        m_a.lock_owned().await
    });
    assert_pending!(t_a.poll());
    drop(t_a);
    assert!(m.try_lock().is_ok());

    let s = Arc::new(Semaphore::new(1));
    let s_a = s.clone();
    let mut t_a = spawn(async move {
        spend_budget();
        s_a.acquire_owned().await
    });
    assert_pending!(t_a.poll());
    drop(t_a);
    assert_eq!(s.available_permits(), 1);
}
