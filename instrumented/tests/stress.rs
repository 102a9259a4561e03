//! Stress mode (`#[lockscope::test(stress)]`): latent deadlocks that an ordinary run passes
//! become confirmed `deadlock`s with a seed, the seed replays, and a consistent program stays
//! silent.
//!
//! Most tests drive the runner under the attribute (`__private::run_stressed`) in-process, so
//! that they can read the verdict's message and count verdicts over many stress tests.

use std::future::Future;
use std::sync::Arc;

use lockscope::__private::{ScopeOptions, run_stressed};
use lockscope::detector::__private::scope::with_timeout;
use lockscope::tokio::{Mutex, Semaphore};

/// Two tasks take `a` then `b` and `b` then `a`. On a current-thread runtime, with nothing
/// perturbed, the first runs to its end before the second starts: no deadlock, only the
/// inversion.
async fn latent_abba() {
    let a = Arc::new(Mutex::named("stress_a", ()));
    let b = Arc::new(Mutex::named("stress_b", ()));
    let (a1, b1) = (a.clone(), b.clone());
    let one = tokio::spawn(async move {
        let _a = a1.lock().await;
        let _b = b1.lock().await;
    });
    let two = tokio::spawn(async move {
        let _b = b.lock().await;
        let _a = a.lock().await;
    });
    one.await.unwrap();
    two.await.unwrap();
}

/// Three tasks around a cycle of three mutexes, each path alone harmless.
async fn latent_cycle_of_three() {
    let locks: Vec<_> = ["stress_x", "stress_y", "stress_z"]
        .into_iter()
        .map(|n| Arc::new(Mutex::named(n, ())))
        .collect();
    let mut tasks = Vec::new();
    for i in 0..3 {
        let (first, second) = (locks[i].clone(), locks[(i + 1) % 3].clone());
        tasks.push(tokio::spawn(async move {
            let _f = first.lock().await;
            let _s = second.lock().await;
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// Two tasks each take a permit of a two-permit pool and, holding it, a second one. One at a
/// time (as a current-thread runtime runs them unperturbed) there are spare permits; with both
/// holding one, neither gets its second.
async fn latent_nested_semaphore() {
    let pool = Arc::new(Semaphore::named("stress_pool", 2));
    let tasks: Vec<_> = (0..2)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let _first = pool.acquire().await.unwrap();
                let _second = pool.acquire().await.unwrap();
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
}

/// Two tasks, both `a` then `b`: contention under stress, never a cycle.
async fn consistent_order() {
    let a = Arc::new(Mutex::named("stress_ok_a", 0));
    let b = Arc::new(Semaphore::named("stress_ok_b", 1));
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let (a, b) = (a.clone(), b.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..4 {
                let mut ga = a.lock().await;
                let _p = b.acquire().await.unwrap();
                *ga += 1;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*a.lock().await, 12);
}

/// [`latent_abba`] through the owned forms and a one-permit semaphore.
async fn latent_abba_owned() {
    let a = Arc::new(Mutex::named("stress_oa", ()));
    let b = Arc::new(Semaphore::named("stress_ob", 1));
    let (a1, b1) = (a.clone(), b.clone());
    let one = tokio::spawn(async move {
        let _a = a1.lock_owned().await;
        let _b = b1.acquire().await.unwrap();
    });
    let two = tokio::spawn(async move {
        let _b = b.acquire_owned().await.unwrap();
        let _a = a.lock().await;
    });
    one.await.unwrap();
    two.await.unwrap();
}

/// Two blocking-pool threads take parking_lot's `a` then `b` and `b` then `a`.
async fn latent_abba_threads() {
    let a = Arc::new(lockscope::parking_lot::Mutex::named("stress_ta", ()));
    let b = Arc::new(lockscope::parking_lot::Mutex::named("stress_tb", ()));
    let (a1, b1) = (a.clone(), b.clone());
    let one = tokio::task::spawn_blocking(move || {
        let _a = a1.lock();
        let _b = b1.lock();
    });
    let two = tokio::task::spawn_blocking(move || {
        let _b = b.lock();
        let _a = a.lock();
    });
    one.await.unwrap();
    two.await.unwrap();
}

/// The order in which two tasks took a shared mutex, four times each, in the last run.
static TRACE: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());

async fn interleaving() {
    let shared = Arc::new(Mutex::named("stress_trace", Vec::new()));
    let tasks: Vec<_> = (1..=2u8)
        .map(|id| {
            let shared = shared.clone();
            tokio::spawn(async move {
                for _ in 0..4 {
                    shared.lock().await.push(id);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    *TRACE.lock().unwrap() = shared.lock().await.clone();
}

/// The verdict of a stress test of `body` on a current-thread runtime: `Ok` when it passes,
/// else its panic message.
fn stress<F: Future<Output = ()>>(
    runs: u32,
    replay: Option<u64>,
    body: impl Fn() -> F,
) -> Result<(), String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_stressed(
            "stress_test",
            ScopeOptions::default(),
            runs,
            replay,
            None,
            |_| {
                let mut b = tokio::runtime::Builder::new_current_thread();
                b.enable_all();
                b
            },
            || with_timeout(body()),
        )
    }))
    .map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

/// The seed in "confirmed in run k of N (seed S)".
fn confirmed_seed(message: &str) -> u64 {
    let at = message.find("(seed ").expect("a seed") + "(seed ".len();
    message[at..]
        .split(')')
        .next()
        .unwrap()
        .parse()
        .expect("a number")
}

fn assert_confirmed(message: &str) {
    assert!(
        message.contains("lockscope: deadlock") && message.contains("confirmed in run"),
        "{message}"
    );
    assert!(
        !message.contains("lockscope: lock-order-inversion"),
        "the inversion made real is not repeated: {message}"
    );
}

#[test]
fn an_ordinary_run_of_the_latent_abba_reports_the_inversion_only() {
    let out = std::panic::catch_unwind(|| {
        lockscope::__private::run_test(
            "stress_plain_run",
            ScopeOptions::default(),
            {
                let mut b = tokio::runtime::Builder::new_current_thread();
                b.enable_all();
                b
            },
            with_timeout(latent_abba()),
        )
    });
    let message = *out.unwrap_err().downcast::<String>().unwrap();
    assert!(
        message.contains("lockscope: lock-order-inversion") && !message.contains("deadlock:"),
        "{message}"
    );
}

#[test]
fn stress_confirms_the_latent_abba_as_a_deadlock_every_time() {
    for _ in 0..20 {
        let message = stress(16, None, latent_abba).unwrap_err();
        assert_confirmed(&message);
        assert!(message.contains("stress_a") && message.contains("stress_b"));
        assert!(message.contains("LOCKSCOPE_STRESS_SEED="), "{message}");
    }
}

#[test]
fn stress_confirms_a_latent_cycle_of_three() {
    for _ in 0..5 {
        assert_confirmed(&stress(16, None, latent_cycle_of_three).unwrap_err());
    }
}

#[test]
fn an_ordinary_run_of_the_latent_nested_semaphore_reports_it_latent_only() {
    let out = std::panic::catch_unwind(|| {
        lockscope::__private::run_test(
            "stress_plain_pool",
            ScopeOptions::default(),
            {
                let mut b = tokio::runtime::Builder::new_current_thread();
                b.enable_all();
                b
            },
            with_timeout(latent_nested_semaphore()),
        )
    });
    let message = *out.unwrap_err().downcast::<String>().unwrap();
    assert!(
        message.contains("lockscope: nested-acquire") && message.contains("a latent deadlock"),
        "{message}"
    );
    assert!(!message.contains("lockscope: deadlock"), "{message}");
}

#[test]
fn stress_exhausts_a_latent_nested_semaphore_acquire() {
    for _ in 0..10 {
        let message = stress(16, None, latent_nested_semaphore).unwrap_err();
        assert_confirmed(&message);
        assert!(message.contains("stress_pool"), "{message}");
        assert!(
            !message.contains("lockscope: nested-acquire"),
            "the latent finding made real is not repeated: {message}"
        );
    }
}

#[test]
fn a_consistent_order_under_stress_is_silent() {
    for _ in 0..10 {
        stress(16, None, consistent_order).unwrap();
    }
}

/// One task takes `a` then `b`, later `b` then `a`: an inversion (two copies of the task could
/// deadlock) that no schedule of this program makes real.
async fn inversion_of_one_task() {
    let a = Mutex::named("stress_one_a", ());
    let b = Mutex::named("stress_one_b", ());
    {
        let _a = a.lock().await;
        let _b = b.lock().await;
    }
    let _b = b.lock().await;
    let _a = a.lock().await;
}

#[test]
fn an_inversion_directed_runs_cannot_make_real_stays_an_inversion() {
    let message = stress(4, None, inversion_of_one_task).unwrap_err();
    assert!(
        message.contains("lockscope: lock-order-inversion")
            && message.contains("not confirmed in 3 directed runs")
            && !message.contains("lockscope: deadlock"),
        "{message}"
    );
    assert_eq!(
        message.matches("lockscope: lock-order-inversion").count(),
        1,
        "one report per bug, not one per run: {message}"
    );
}

#[test]
fn the_seed_of_a_confirmed_deadlock_replays_it() {
    for _ in 0..5 {
        let message = stress(16, None, latent_abba).unwrap_err();
        let seed = confirmed_seed(&message);
        let again = stress(16, Some(seed), latent_abba).unwrap_err();
        assert_confirmed(&again);
        assert!(again.contains(&format!("(seed {seed})")), "{again}");
    }
}

/// Behind an owned guard the detector does not call the knot a deadlock (the guard might be
/// dropped by another task): the run ends on the stuck queues, which stress mode reports as a
/// hang it provoked, with the seed.
#[test]
fn stress_provokes_a_latent_abba_through_owned_forms_and_a_semaphore() {
    for _ in 0..2 {
        let message = stress(16, None, latent_abba_owned).unwrap_err();
        assert!(
            message.contains("lockscope: stuck-queue") && message.contains("provoked in run"),
            "{message}"
        );
        assert!(message.contains("stress_oa") && message.contains("stress_ob"));
    }
}

#[test]
fn stress_confirms_a_latent_abba_between_threads() {
    for _ in 0..3 {
        assert_confirmed(&stress(16, None, latent_abba_threads).unwrap_err());
    }
}

#[test]
fn perturbation_changes_the_schedule_and_a_seed_replays_it() {
    let _one_at_a_time = TRACE_TEST.lock().unwrap();
    let plain = [1, 1, 1, 1, 2, 2, 2, 2];
    let trace = |seed| {
        stress(1, Some(seed), interleaving).unwrap();
        TRACE.lock().unwrap().clone()
    };
    let first: Vec<Vec<u8>> = (1..=8).map(trace).collect();
    assert!(first.iter().all(|t| t.len() == 8));
    assert!(
        first.iter().any(|t| t[..] != plain),
        "some seed perturbs the schedule: {first:?}"
    );
    let again: Vec<Vec<u8>> = (1..=8).map(trace).collect();
    assert_eq!(first, again, "each seed gives its own schedule again");
}

/// [`TRACE`] is one per process: its test runs alone.
static TRACE_TEST: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[lockscope::test(stress = 4)]
#[should_panic(expected = "confirmed in run")]
async fn the_attribute_runs_a_stress_test() {
    latent_abba().await;
}

#[lockscope::test(stress, flavor = "multi_thread", worker_threads = 2)]
async fn the_attribute_stresses_a_multi_thread_runtime() {
    consistent_order().await;
}
