//! Declared lock levels (issue 30, item 2): a lock taken while its task or thread holds one of
//! an equal or higher level is a `lock-order-inversion` at that acquisition, on the first run,
//! with no second task; the right order, released locks, locks of other tasks, re-entry,
//! `try_` forms and locks without a level are not.

use std::sync::Arc;

use lockscope::Level;
use lockscope::detector::{Finding, FindingKind, TestScope};
use lockscope::tokio::{MultiLock, Mutex, ReentrantMutex, RwLock, Semaphore};

#[path = "common/mod.rs"]
mod common;
use common::{arm, line, naming, until};

/// Set in the child's environment only: the armed child tests do nothing without it.
const CHILD_ENV: &str = "LOCKSCOPE_LEVELS_CHILD";

fn child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// The lock-order inversions `scope` has now, naming a lock whose name starts with `prefix`
/// (each test's locks share one): no analysis is run, so only what was reported at an
/// acquisition itself is there.
fn inversions_now(scope: &TestScope, prefix: &str) -> Vec<Finding> {
    scope
        .findings()
        .into_iter()
        .filter(|f| {
            f.kind == FindingKind::LockOrderInversion
                && f.primitives.iter().any(|p| p.name.starts_with(prefix))
        })
        .collect()
}

/// Every lock-order inversion naming `lock`, after two more analyses.
fn inversions(lock: &str) -> Vec<Finding> {
    naming(lock)
        .into_iter()
        .filter(|f| f.kind == FindingKind::LockOrderInversion)
        .collect()
}

/// The site `<this file>:<line>:` as reports show it.
fn at(line: u32) -> String {
    common::site(file!(), line)
}

/// The program's lock classes, for the `LockLevel` form.
#[derive(Clone, Copy)]
enum Rank {
    Accounts = 1,
    Ledger = 2,
}

impl lockscope::LockLevel for Rank {
    fn level(&self) -> Level {
        let name = match self {
            Rank::Accounts => "Accounts",
            Rank::Ledger => "Ledger",
        };
        Level::named(*self as u32, name)
    }
}

/// The armed test the parent runs in a child: one task, no other, takes a level 1 lock under a
/// level 2 one.
#[lockscope::test]
#[ignore = "run by wrong_order_fails_an_armed_test_on_the_first_run, in a child process"]
async fn child_wrong_order() {
    if !child() {
        return;
    }
    let accounts = Mutex::named("lv_child_accounts", 0).with_level(Level::new(2));
    let ledger = Mutex::named("lv_child_ledger", 0).with_level(Level::new(1));
    let _a = accounts.lock().await;
    println!("held at line {}", line() - 1);
    let _l = ledger.lock().await;
    println!("taken at line {}", line() - 1);
}

#[test]
fn wrong_order_fails_an_armed_test_on_the_first_run() {
    let run = common::run_child(
        &[
            "child_wrong_order",
            "--exact",
            "--ignored",
            "--test-threads=1",
            "--nocapture",
        ],
        CHILD_ENV,
    );
    let (out, err) = (&run.stdout, &run.stderr);
    assert!(!out.contains("running 0 tests"), "{out}");
    assert_eq!(run.code, Some(101), "stdout:\n{out}\nstderr:\n{err}");
    let line_of = |what: &str| -> u32 {
        out.lines()
            .find_map(|l| l.split(what).nth(1))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {what:?} in:\n{out}"))
    };
    let (held, taken) = (line_of("held at line"), line_of("taken at line"));
    let both = format!("{out}{err}");
    let summary = "lockscope: lock-order-inversion: \"lv_child_ledger\" (level 1) acquired at ";
    let at_summary = both
        .find(summary)
        .unwrap_or_else(|| panic!("no {summary:?} in:\n{both}"));
    let rest = &both[at_summary..];
    let sentence = rest.lines().next().unwrap();
    assert!(sentence.contains(&at(taken)), "{sentence}");
    assert!(
        sentence.contains(" while holding \"lv_child_accounts\" (level 2) since ")
            && sentence.contains(&at(held)),
        "{sentence}"
    );
    assert!(
        sentence.ends_with("; declared order: lower levels first"),
        "{sentence}"
    );
}

/// The wrong order is reported at the acquisition itself, by one task, with both levels,
/// names and sites, the order, and a fix; the right order, and the same locks taken one after
/// the other, are silent.
#[tokio::test]
async fn a_wrong_order_is_reported_at_the_acquisition_and_the_right_order_is_silent() {
    let scope = arm("lv_wrong", 10_000, 10_000);
    let accounts = Mutex::named("lv_wrong_accounts", 0).with_level(Rank::Ledger);
    let ledger = Mutex::named("lv_wrong_ledger", 0).with_level(Rank::Accounts);
    // The right order, then each alone, the higher first: nothing.
    {
        let _l = ledger.lock().await;
        let _a = accounts.lock().await;
    }
    {
        let _a = accounts.lock().await;
    }
    let _l = ledger.lock().await;
    drop(_l);
    assert!(inversions_now(&scope, "lv_wrong_ledger").is_empty());
    let _a = accounts.lock().await;
    let held = line() - 1;
    let _l = ledger.lock().await;
    let taken = line() - 1;
    let found = inversions_now(&scope, "lv_wrong_ledger");
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    let text = f.to_string();
    assert!(
        f.summary
            .starts_with("\"lv_wrong_ledger\" (level 1, Accounts) acquired at ")
            && f.summary.contains(&at(taken))
            && f.summary
                .contains(" while holding \"lv_wrong_accounts\" (level 2, Ledger) since ")
            && f.summary.contains(&at(held))
            && f.summary.ends_with("; declared order: lower levels first"),
        "{text}"
    );
    assert_eq!(f.primitives.len(), 2, "{text}");
    assert_eq!(f.orders.len(), 1, "{text}");
    assert_eq!(
        (f.orders[0].from.name.as_str(), f.orders[0].to.name.as_str()),
        ("lv_wrong_accounts", "lv_wrong_ledger")
    );
    assert!(
        f.details
            .iter()
            .any(|d| d.starts_with("declared: \"lv_wrong_ledger\" is level 1 (Accounts), \"lv_wrong_accounts\" is level 2 (Ledger): ")),
        "{text}"
    );
    assert!(
        f.fix
            .starts_with("take \"lv_wrong_ledger\" before \"lv_wrong_accounts\""),
        "{text}"
    );
    // Seen again: one finding.
    drop((_l, _a));
    let _a = accounts.lock().await;
    let _l = ledger.lock().await;
    assert_eq!(inversions("lv_wrong_ledger").len(), 1);
}

/// Outside any armed test (production), the inversion is recorded and logged like any other
/// finding, and the acquisition goes on: no panic.
#[test]
fn without_a_test_armed_it_is_recorded_and_the_program_goes_on() {
    let high = lockscope::parking_lot::Mutex::named("lv_prod_high", 1).with_level(9);
    let low = lockscope::parking_lot::Mutex::named("lv_prod_low", 2).with_level(3);
    let h = high.lock();
    let l = low.lock();
    assert_eq!(*h + *l, 3, "both taken");
    drop((l, h));
    let found = inversions("lv_prod_low");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].summary.contains("(level 3)") && found[0].summary.contains("(level 9)"));
}

/// Two locks of one level are never nested, in either order; through a `MultiLock` (one
/// global order, one call) they are taken together, and a set over several levels takes
/// them lower first, whatever order it lists them in.
#[tokio::test]
async fn equal_levels_are_an_inversion_unless_taken_together_by_a_multilock() {
    let scope = arm("lv_equal", 10_000, 10_000);
    let a = Mutex::named("lv_equal_a", 0).with_level(2);
    let b = Mutex::named("lv_equal_b", 0).with_level(2);
    let low = Mutex::named("lv_equal_low", 0).with_level(1);
    // Listed high first: taken low first.
    let set = MultiLock::new([&b, &a, &low]).unwrap();
    for _ in 0..2 {
        let g = set.lock().await;
        assert_eq!(g.len(), 3);
    }
    let pl_a = lockscope::parking_lot::Mutex::named("lv_equal_pl_a", 0).with_level(5);
    let pl_b = lockscope::parking_lot::Mutex::named("lv_equal_pl_b", 0).with_level(5);
    drop(
        lockscope::parking_lot::MultiLock::new([&pl_b, &pl_a])
            .unwrap()
            .lock(),
    );
    assert!(
        inversions_now(&scope, "lv_equal").is_empty(),
        "{:#?}",
        scope.findings()
    );
    let _a = a.lock().await;
    let _b = b.lock().await;
    let found = inversions_now(&scope, "lv_equal_b");
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert!(
        f.summary
            .starts_with("\"lv_equal_b\" (level 2) acquired at ")
            && f.summary.contains("while holding \"lv_equal_a\" (level 2)"),
        "{f}"
    );
    assert!(
        f.details.iter().any(|d| d.contains("are both level 2")),
        "{f}"
    );
    assert!(f.fix.contains("MultiLock"), "{f}");
}

/// Async and blocking locks in one order: tokio, parking_lot and std locks, read and write,
/// and a semaphore's permit; a read hold counts like a write.
#[tokio::test]
async fn async_and_blocking_locks_share_one_order_and_reads_count() {
    let scope = arm("lv_mixed", 10_000, 10_000);
    let sem = Semaphore::named("lv_mixed_sem", 2).with_level(1);
    let rw = RwLock::named("lv_mixed_rw", 0).with_level(2);
    let pl = lockscope::parking_lot::Mutex::named("lv_mixed_pl", 0).with_level(3);
    let std_rw = lockscope::std::sync::RwLock::named("lv_mixed_std", 0).with_level(4);
    {
        // Async ones first, then the blocking ones, held over no `.await`.
        let _p = sem.acquire().await.unwrap();
        let _r = rw.read().await;
        let _m = pl.lock();
        let _s = std_rw.write().unwrap();
    }
    assert!(
        inversions_now(&scope, "lv_mixed").is_empty(),
        "{:#?}",
        scope.findings()
    );
    {
        let _s = std_rw.read().unwrap();
        let _m = pl.lock();
    }
    let found = inversions_now(&scope, "lv_mixed_pl");
    assert_eq!(found.len(), 1, "a read hold counts: {found:#?}");
    assert!(
        found[0]
            .summary
            .starts_with("\"lv_mixed_pl\" (level 3) acquired at ")
    );
    {
        let _r = rw.read().await;
        let _p = sem.acquire().await.unwrap();
    }
    let found = inversions_now(&scope, "lv_mixed_sem");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0]
            .summary
            .contains("while holding \"lv_mixed_rw\" (level 2)")
    );
}

/// The holder of a lock across `.await` points is its task, whichever worker it resumes on:
/// its level still counts when it takes the next lock there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_level_held_across_awaits_on_a_multi_thread_runtime_still_counts() {
    let scope = arm("lv_await", 10_000, 10_000);
    let high = Arc::new(Mutex::named("lv_await_high", 0).with_level(7));
    let low = Arc::new(Mutex::named("lv_await_low", 0).with_level(6));
    let task = tokio::spawn(async move {
        let _h = high.lock().await;
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        let _l = low.lock().await;
    });
    task.await.unwrap();
    let f = until(&scope, FindingKind::LockOrderInversion, "lv_await_low").await;
    assert!(
        f.summary
            .starts_with("\"lv_await_low\" (level 6) acquired at ")
            && f.summary
                .contains("while holding \"lv_await_high\" (level 7)"),
        "{f}"
    );
    assert!(f.orders[0].actor.starts_with("task "), "{f}");
}

/// Locks without a level keep the learned order: among declared ones they constrain nothing
/// by level, and an opposite order of theirs is the usual learned inversion.
#[tokio::test]
async fn locks_without_a_level_keep_the_learned_order() {
    let scope = arm("lv_undeclared", 10_000, 10_000);
    let one = Mutex::named("lv_undeclared_one", 0).with_level(1);
    let free = Mutex::named("lv_undeclared_free", 0);
    let two = Mutex::named("lv_undeclared_two", 0).with_level(2);
    let other = Mutex::named("lv_undeclared_other", 0);
    {
        let _one = one.lock().await;
        let _f = free.lock().await;
        let _two = two.lock().await;
    }
    {
        // Undeclared under a level: nothing.
        let _two = two.lock().await;
        let _o = other.lock().await;
    }
    assert!(
        inversions_now(&scope, "lv_undeclared").is_empty(),
        "{:#?}",
        scope.findings()
    );
    // `free` then `one` reverses the learned `one` then `free`: the learned inversion.
    {
        let _f = free.lock().await;
        let _one = one.lock().await;
    }
    let found = inversions_now(&scope, "lv_undeclared_free");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].summary.contains("are taken in opposite orders"),
        "the learned wording: {}",
        found[0]
    );
}

/// A learned path from one level, through a lock without a level, to a lower level
/// contradicts the declared order (with it, a cycle): reported when the edge that completes
/// it is first seen, though no acquisition nested the two declared locks.
#[tokio::test]
async fn a_learned_path_against_the_declared_levels_is_reported() {
    let scope = arm("lv_path", 10_000, 10_000);
    let high = Mutex::named("lv_path_high", 0).with_level(2);
    let cache = Mutex::named("lv_path_cache", 0);
    let low = Mutex::named("lv_path_low", 0).with_level(1);
    {
        let _h = high.lock().await;
        let _c = cache.lock().await;
    }
    assert!(inversions_now(&scope, "lv_path").is_empty());
    let _c = cache.lock().await;
    let _l = low.lock().await;
    let completed = line() - 1;
    let found = inversions_now(&scope, "lv_path_low");
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert!(
        f.summary.starts_with(
            "\"lv_path_high\" (level 2) is taken before \"lv_path_low\" (level 1) through \"lv_path_cache\" without a level (\"lv_path_high\" then \"lv_path_cache\" at "
        ) && f.summary.contains(&format!("\"lv_path_cache\" then \"lv_path_low\" at {}", at(completed)))
            && f.summary.ends_with("; declared order: lower levels first"),
        "{f}"
    );
    assert_eq!(f.orders.len(), 2, "{f}");
    assert_eq!(f.primitives.len(), 3, "{f}");
}

/// A path through an undeclared lock from a lower level to a higher one agrees with the
/// declared order: nothing.
#[tokio::test]
async fn a_learned_path_along_the_declared_levels_is_silent() {
    let scope = arm("lv_along", 10_000, 10_000);
    let low = Mutex::named("lv_along_low", 0).with_level(1);
    let cache = Mutex::named("lv_along_cache", 0);
    let high = Mutex::named("lv_along_high", 0).with_level(2);
    {
        let _l = low.lock().await;
        let _c = cache.lock().await;
    }
    {
        let _c = cache.lock().await;
        let _h = high.lock().await;
    }
    assert!(
        inversions_now(&scope, "lv_along").is_empty(),
        "{:#?}",
        scope.findings()
    );
}

/// Re-entering a reentrant lock is no acquisition: silent, for tokio's task-reentrant mutex
/// and parking_lot's; nor does a `try_` form (which cannot wait) break the order.
#[tokio::test]
async fn reentry_and_try_forms_are_silent() {
    let scope = arm("lv_reentry", 10_000, 10_000);
    let re = ReentrantMutex::named("lv_reentry_tokio", ()).with_level(3);
    let low = Mutex::named("lv_reentry_low", 0).with_level(1);
    {
        let _a = re.lock().await;
        let _b = re.lock().await;
        assert!(low.try_lock().is_ok());
    }
    let pl = lockscope::parking_lot::ReentrantMutex::named("lv_reentry_pl", ()).with_level(3);
    {
        let _a = pl.lock();
        let _b = pl.lock();
    }
    // Only this test's locks: a finding of no test, made meanwhile by another, reaches every
    // armed scope.
    let mine: Vec<Finding> = scope
        .findings()
        .into_iter()
        .filter(|f| f.involves("lv_reentry_tokio") || f.involves("lv_reentry_pl"))
        .collect();
    assert!(mine.is_empty(), "{mine:#?}");
}

/// Two tasks each holding a lock of a different level, at the same time, without nesting:
/// no order between them, nothing to report.
#[tokio::test]
async fn two_tasks_holding_one_level_each_are_silent() {
    let scope = arm("lv_apart", 10_000, 10_000);
    let high = Arc::new(Mutex::named("lv_apart_high", 0).with_level(2));
    let low = Arc::new(Mutex::named("lv_apart_low", 0).with_level(1));
    let both = Arc::new(tokio::sync::Barrier::new(2));
    let (h, b) = (high.clone(), both.clone());
    let first = tokio::spawn(async move {
        let _h = h.lock().await;
        b.wait().await;
        b.wait().await;
    });
    let (l, b) = (low.clone(), both.clone());
    let second = tokio::spawn(async move {
        b.wait().await;
        // Taken while the other task holds the higher level.
        let _l = l.lock().await;
        b.wait().await;
    });
    first.await.unwrap();
    second.await.unwrap();
    assert!(
        inversions_now(&scope, "lv_apart").is_empty(),
        "{:#?}",
        scope.findings()
    );
}

/// A lock keeps the first level it was given.
#[test]
fn a_lock_keeps_its_first_level() {
    let m = lockscope::std::sync::Mutex::named("lv_first", ())
        .with_level(4)
        .with_level(1);
    assert_eq!(m.level(), Some(Level::new(4)));
    assert_eq!(Mutex::named("lv_none", ()).level(), None);
}
