//! `OnceCell` waits are waits the detector sees (issue 28): a caller of `get_or_init` that
//! waits for a running initialiser waits for the task running it. An initialiser that waits
//! for a lock held by a task that waits for the cell is a `deadlock` within an armed test's
//! second, naming the cell and both sites; an initialiser that waits for its own cell is
//! reported; and the shapes a naive detector would flag (slow initialisers, cancelled and
//! failed ones, locks taken inside an initialiser, cells nested in cells) stay silent.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lockscope::tokio::{Mutex, OnceCell, task};

#[path = "common/mod.rs"]
mod common;

use common::armed_failure;

/// Lines of the two `get_or_init` calls of [`init_against_the_body`], for the report's sites.
static INIT_LINE: AtomicU32 = AtomicU32::new(0);
static WAIT_LINE: AtomicU32 = AtomicU32::new(0);

/// Polls (bounded) until `name` has `n` waiters, yielding so that a current-thread runtime
/// runs them.
async fn until_waiters(name: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !lockscope::detector::locks()
        .iter()
        .any(|l| l.name == name && l.waiters_total >= n)
    {
        assert!(Instant::now() < deadline, "no {n} waiters on {name}");
        tokio::task::yield_now().await;
    }
}

/// Holders and waiters of `name` in the books now.
fn books(name: &str) -> (usize, usize) {
    lockscope::detector::locks()
        .iter()
        .find(|l| l.name == name)
        .map_or((0, 0), |l| (l.holders.len(), l.waiters_total))
}

/// The test body holds a lock; a task it spawned runs the cell's initialiser, which waits
/// for that lock; the body then waits for the cell.
async fn init_against_the_body(name: &'static str) {
    let lock = Arc::new(Mutex::named(format!("{name}_lock"), 1u32));
    let cell = Arc::new(OnceCell::<u32>::named(format!("{name}_cell")));
    let g = lock.lock().await;
    let (l2, c2) = (lock.clone(), cell.clone());
    let _initialiser = task::spawn(async move {
        INIT_LINE.store(line!() + 1, Ordering::Relaxed);
        *c2.get_or_init(|| async { *l2.lock().await + 1 }).await
    });
    until_waiters(&format!("{name}_lock"), 1).await;
    WAIT_LINE.store(line!() + 1, Ordering::Relaxed);
    let v = cell.get_or_init(|| async { 0 }).await;
    unreachable!(
        "the initialiser waits for the lock the body holds ({v}, {})",
        *g
    );
}

fn assert_cell_deadlock(msg: &str, took: Duration, name: &str) {
    assert!(msg.contains("lockscope: deadlock"), "{msg}");
    assert!(msg.contains(&format!("once_cell \"{name}_cell\"")), "{msg}");
    assert!(msg.contains(&format!("mutex \"{name}_lock\"")), "{msg}");
    for line in [&INIT_LINE, &WAIT_LINE] {
        let site = format!(
            "instrumented/tests/once_cell.rs:{}:",
            line.load(Ordering::Relaxed)
        );
        assert!(msg.contains(&site), "{site} in {msg}");
    }
    assert!(
        msg.contains("fix: do not wait for a once-cell while holding a lock its initialiser needs"),
        "{msg}"
    );
    assert!(!msg.contains("stuck-queue"), "{msg}");
    assert!(took < Duration::from_secs(1), "took {took:?}: {msg}");
}

#[test]
fn an_initialiser_waiting_for_a_lock_whose_holder_waits_for_the_cell_is_a_deadlock_current_thread()
{
    let (msg, took) = armed_failure("cell_ct", false, init_against_the_body("cell_ct"));
    assert_cell_deadlock(&msg, took, "cell_ct");
}

#[test]
fn an_initialiser_waiting_for_a_lock_whose_holder_waits_for_the_cell_is_a_deadlock_multi_thread() {
    let (msg, took) = armed_failure("cell_mt", true, init_against_the_body("cell_mt"));
    assert_cell_deadlock(&msg, took, "cell_mt");
}

/// tokio deadlocks on an initialiser that awaits its own cell; lockscope says so.
#[test]
fn an_initialiser_waiting_for_its_own_cell_is_reported() {
    let (msg, took) = armed_failure("cell_recursive", false, async {
        let cell = Arc::new(OnceCell::<u32>::named("cell_recursive"));
        let c2 = cell.clone();
        let v = cell
            .get_or_init(|| async move { *c2.get_or_init(|| async { 1 }).await + 1 })
            .await;
        unreachable!("tokio never finishes a recursive initialisation ({v})");
    });
    assert!(
        msg.contains("lockscope: nested-acquire") || msg.contains("lockscope: deadlock"),
        "{msg}"
    );
    assert!(msg.contains("once_cell \"cell_recursive\""), "{msg}");
    assert!(!msg.contains("stuck-queue"), "{msg}");
    assert!(took < Duration::from_secs(2), "took {took:?}: {msg}");
}

// --- negative controls: each must stay silent in an armed test ---------------------------

/// A hundred tasks race `get_or_init` on an initialiser that sleeps (paused time): one runs
/// it, the others wait for it, and they all get its value.
#[lockscope::test(start_paused = true)]
async fn many_tasks_racing_a_slow_initialiser_are_silent() {
    let cell = Arc::new(OnceCell::<u32>::named("neg_cell_race"));
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..100 {
        let (c, r) = (cell.clone(), runs.clone());
        tasks.push(task::spawn(async move {
            *c.get_or_init(|| async move {
                r.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_secs(30)).await;
                i
            })
            .await
        }));
    }
    let first = tasks.remove(0).await.unwrap();
    for t in tasks {
        assert_eq!(t.await.unwrap(), first);
    }
    assert_eq!(runs.load(Ordering::Relaxed), 1);
    assert_eq!(books("neg_cell_race"), (0, 0));
}

/// Waiters queued behind an initialiser that works (in real time) for several times the
/// stuck and starvation thresholds, while a lock it does not need is held by one of them:
/// not a stuck queue, not a long hold, not a deadlock.
#[lockscope::test(
    flavor = "multi_thread",
    worker_threads = 2,
    stuck_ms = 100,
    starvation_ms = 100
)]
async fn waiters_behind_a_long_initialiser_are_silent() {
    let cell = Arc::new(OnceCell::<u32>::named("neg_cell_long"));
    let lock = Arc::new(Mutex::named("neg_cell_long_lock", 0));
    let started = Arc::new(tokio::sync::Notify::new());
    let (c, s) = (cell.clone(), started.clone());
    let initialiser = task::spawn(async move {
        *c.get_or_init(|| async move {
            s.notify_one();
            tokio::time::sleep(Duration::from_millis(600)).await;
            7
        })
        .await
    });
    // The others come after the initialiser began, so that they all wait for it.
    started.notified().await;
    let (c, l2) = (cell.clone(), lock.clone());
    let holder = task::spawn(async move {
        let _g = l2.lock().await;
        *c.get_or_init(|| async { 0 }).await
    });
    let mut waiters = Vec::new();
    for _ in 0..4 {
        let c = cell.clone();
        waiters.push(task::spawn(
            async move { *c.get_or_init(|| async { 0 }).await },
        ));
    }
    assert_eq!(initialiser.await.unwrap(), 7);
    assert_eq!(holder.await.unwrap(), 7);
    for w in waiters {
        assert_eq!(w.await.unwrap(), 7);
    }
    assert_eq!(*lock.lock().await, 0);
}

/// An initialiser cancelled (its task aborted) while another caller waits: the waiter takes
/// over and initialises, and the books keep no ghost holder or waiter.
#[lockscope::test]
async fn a_cancelled_initialiser_and_the_next_taking_over_are_silent() {
    let cell = Arc::new(OnceCell::<u32>::named("neg_cell_cancel"));
    let c = cell.clone();
    let first = task::spawn(async move { *c.get_or_init(std::future::pending::<u32>).await });
    let c = cell.clone();
    let second = task::spawn(async move { *c.get_or_init(|| async { 2 }).await });
    until_waiters("neg_cell_cancel", 1).await;
    assert_eq!(books("neg_cell_cancel"), (1, 1));
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());
    assert_eq!(second.await.unwrap(), 2);
    assert_eq!(books("neg_cell_cancel"), (0, 0));
    // A waiter dropped while it waits (a `select!` with a timer) leaves no waiter either.
    let empty = OnceCell::<u32>::named("neg_cell_select");
    let started = Arc::new(tokio::sync::Notify::new());
    let s2 = started.clone();
    let empty = Arc::new(empty);
    let e2 = empty.clone();
    let runner = task::spawn(async move {
        *e2.get_or_init(|| async move {
            s2.notify_one();
            std::future::pending::<u32>().await
        })
        .await
    });
    started.notified().await;
    tokio::select! {
        _ = empty.get_or_init(|| async { 0 }) => unreachable!("the runner never finishes"),
        _ = tokio::time::sleep(Duration::from_millis(20)) => {}
    }
    assert_eq!(books("neg_cell_select"), (1, 0));
    runner.abort();
    assert!(runner.await.unwrap_err().is_cancelled());
    assert_eq!(books("neg_cell_select"), (0, 0));
}

/// An initialiser that panics: its hold ends as its task unwinds, and a waiter initialises.
/// The waiter is spawned once the first initialiser runs (else it may initialise first, and
/// the first never panics).
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_initialiser_is_silent() {
    let cell = Arc::new(OnceCell::<u32>::named("neg_cell_panic"));
    let c = cell.clone();
    let (started, running) = tokio::sync::oneshot::channel();
    let first = task::spawn(async move {
        *c.get_or_init(|| async move {
            let _ = started.send(());
            tokio::time::sleep(Duration::from_millis(50)).await;
            panic!("the initialiser's own bug")
        })
        .await
    });
    running.await.expect("the first initialiser runs");
    let c = cell.clone();
    let second = task::spawn(async move { *c.get_or_init(|| async { 3 }).await });
    assert!(first.await.unwrap_err().is_panic());
    assert_eq!(second.await.unwrap(), 3);
    assert_eq!(books("neg_cell_panic"), (0, 0));
}

/// Initialisers that take a lock nobody else holds, from many tasks, and a cell initialised
/// inside another cell's initialiser.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_and_cells_inside_an_initialiser_are_silent() {
    let lock = Arc::new(Mutex::named("neg_cell_inner_lock", 5u32));
    let outer = Arc::new(OnceCell::<u32>::named("neg_cell_outer"));
    let inner = Arc::new(OnceCell::<u32>::named("neg_cell_inner"));
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (l, o, i) = (lock.clone(), outer.clone(), inner.clone());
        tasks.push(task::spawn(async move {
            *o.get_or_init(|| async {
                let base = *l.lock().await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                base + *i.get_or_init(|| async { *l.lock().await + 1 }).await
            })
            .await
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), 11);
    }
}

/// `get_or_try_init` whose first attempts fail while others wait: each failure ends its
/// hold and the next caller tries.
#[lockscope::test(start_paused = true)]
async fn failing_initialisers_are_silent() {
    let cell = Arc::new(OnceCell::<u32>::named("neg_cell_try"));
    let attempts = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..10 {
        let (c, a) = (cell.clone(), attempts.clone());
        tasks.push(task::spawn(async move {
            c.get_or_try_init(|| async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                match a.fetch_add(1, Ordering::Relaxed) {
                    n @ 0..3 => Err(n),
                    _ => Ok(9),
                }
            })
            .await
            .copied()
        }));
    }
    let mut errors = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            Ok(v) => assert_eq!(v, 9),
            Err(n) => errors.push(n),
        }
    }
    errors.sort_unstable();
    assert_eq!(errors, [0, 1, 2]);
    assert_eq!(books("neg_cell_try"), (0, 0));
}

/// A test that ends while a task it spawned still runs an initialiser (awaiting something
/// that never comes): the hold is work cut short by the runtime's end, not a leaked guard.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initialiser_still_running_when_the_test_ends_is_silent() {
    let cell = Arc::new(OnceCell::<u32>::named("neg_cell_unfinished"));
    let c = cell.clone();
    let _running = task::spawn(async move { *c.get_or_init(std::future::pending::<u32>).await });
    let deadline = Instant::now() + Duration::from_secs(5);
    while books("neg_cell_unfinished").0 == 0 {
        assert!(Instant::now() < deadline, "the initialiser never began");
        tokio::task::yield_now().await;
    }
    // Several watchdog ticks with the initialiser at work, past the task-ended grace.
    tokio::time::sleep(Duration::from_millis(300)).await;
}
