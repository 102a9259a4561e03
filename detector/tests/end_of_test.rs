//! What a test leaves behind (issue 17: the end-of-test leak check was only run by an
//! example's child process, and the plain-test path through `assert_clean` never): permits
//! forgotten, guards and permits still held, and primitives dropped with holds in the books,
//! each reported for the test that owns them, in these words, and nothing of anyone else's.
//!
//! The tests run one at a time: `assert_clean` judges the process-wide store of findings.

use std::panic::Location;
use std::sync::Mutex;

use lockscope_detector::__private::hooks::{self, Acq, Mode};
use lockscope_detector::__private::prim::{self, PrimCell, PrimKind};
use lockscope_detector::__private::{actor, held::FLAG_MOVABLE};
use lockscope_detector::{Finding, ScopeOptions, TestScope};

static SERIAL: Mutex<()> = Mutex::new(());

fn cell(name: &str, kind: PrimKind, capacity: u64) -> PrimCell {
    PrimCell::new(Some(name.into()), kind, Location::caller(), capacity)
}

fn at(site: &Location<'_>) -> String {
    format!("{}:{}:{}", site.file(), site.line(), site.column())
}

/// The one finding whose summary starts with `start` (the hold's age in ms ends some).
fn one<'a>(findings: &'a [Finding], start: &str) -> &'a Finding {
    let hits: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.summary.starts_with(start))
        .collect();
    assert_eq!(hits.len(), 1, "{start:?} in {:#?}", summaries(findings));
    hits[0]
}

fn summaries(findings: &[Finding]) -> Vec<&str> {
    findings.iter().map(|f| f.summary.as_str()).collect()
}

/// Forgets `n` permits of a semaphore, acquired at `site`.
fn forget(sem: &PrimCell, site: &'static Location<'static>, n: u32) {
    let h = hooks::acquired::<hooks::Threads>(sem.get(), Acq::new(site, n, Mode::Permits));
    hooks::forgot(sem.get(), h, u64::from(n));
}

#[test]
fn a_scope_is_told_of_what_it_left_held_or_forgotten_and_of_nothing_else() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let me = actor::current().describe();
    let (before, pool_site, borrowed_site) =
        (Location::caller(), Location::caller(), Location::caller());
    // Before the scope: a semaphore with a forgotten permit and a mutex held, both the
    // business of no test.
    let outside_sem = cell("end/outside_sem", PrimKind::Semaphore, 3);
    forget(&outside_sem, before, 1);
    let borrowed = cell("end/borrowed", PrimKind::Mutex, 1);
    let outside_mutex = cell("end/outside_mutex", PrimKind::Mutex, 1);
    let held_before = hooks::acquired::<hooks::Threads>(
        outside_mutex.get(),
        Acq::new(before, 1, Mode::Exclusive),
    );

    let scope = TestScope::arm("end_of_test", ScopeOptions::default());
    let pool = cell("end/pool", PrimKind::Semaphore, 5);
    let p1 = hooks::acquired::<hooks::Threads>(pool.get(), Acq::new(pool_site, 2, Mode::Permits));
    let p2 = hooks::acquired::<hooks::Threads>(
        pool.get(),
        Acq::new(pool_site, 2, Mode::Permits).with_flags(FLAG_MOVABLE),
    );
    let forgetful = cell("end/forgetful", PrimKind::Semaphore, 3);
    forget(&forgetful, pool_site, 1);
    // A primitive from outside, held in the test: the hold is the test's.
    let b = hooks::acquired::<hooks::Threads>(
        borrowed.get(),
        Acq::new(borrowed_site, 1, Mode::Exclusive),
    );
    let found = scope.finish();

    assert_eq!(found.len(), 3, "{:#?}", summaries(&found));
    let f = one(&found, "1 permit of semaphore \"end/forgetful\"");
    assert_eq!(
        f.summary,
        "1 permit of semaphore \"end/forgetful\" was forgotten and never added back by the end of the test; the semaphore now has 2 permits"
    );
    assert_eq!(
        f.details,
        [format!(
            "the latest forgotten permits were acquired at {}",
            at(pool_site)
        )]
    );
    // Two acquisitions at one line are one finding; one of them owned.
    let f = one(
        &found,
        &format!(
            "4 permits of semaphore \"end/pool\" acquired at {} by {me} are still held when the test ends (",
            at(pool_site)
        ),
    );
    assert!(f.summary.ends_with(" ms)"), "{}", f.summary);
    assert_eq!(f.actors.len(), 2);
    assert_eq!(
        f.details,
        ["owned guards/permits: look for a struct, a collection or a task that keeps them"]
    );
    let f = one(
        &found,
        &format!(
            "a lock guard of mutex \"end/borrowed\" acquired at {} by {me} is still held when the test ends (",
            at(borrowed_site)
        ),
    );
    assert!(f.details.is_empty(), "{:?}", f.details);

    for (c, h) in [
        (&pool, p1),
        (&pool, p2),
        (&borrowed, b),
        (&outside_mutex, held_before),
    ] {
        hooks::released(c.get(), h);
    }
    hooks::added_permits(outside_sem.get(), 1);
    hooks::added_permits(forgetful.get(), 1);
    lockscope_detector::clear_findings();
}

#[test]
fn a_tests_primitive_dropped_with_holds_or_forgotten_permits_is_reported() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let me = actor::current().describe();
    let (site, other_site) = (Location::caller(), Location::caller());
    let scope = TestScope::arm("dropped", ScopeOptions::default());
    let mutex = cell("end/dropped_mutex", PrimKind::Mutex, 1);
    let sem = cell("end/dropped_sem", PrimKind::Semaphore, 4);
    let forgetful = cell("end/dropped_forgetful", PrimKind::Semaphore, 3);
    let other = cell("end/dropped_other", PrimKind::Mutex, 1);
    // Leaked: never released (as `std::mem::forget` of a guard leaves them).
    let _m = hooks::acquired::<hooks::Threads>(mutex.get(), Acq::new(site, 1, Mode::Exclusive));
    let _s1 = hooks::acquired::<hooks::Threads>(sem.get(), Acq::new(site, 1, Mode::Permits));
    let _s2 = hooks::acquired::<hooks::Threads>(sem.get(), Acq::new(site, 2, Mode::Permits));
    forget(&forgetful, site, 2);
    // Held, but not by a primitive being dropped.
    let o =
        hooks::acquired::<hooks::Threads>(other.get(), Acq::new(other_site, 1, Mode::Exclusive));
    drop((mutex, sem, forgetful));
    let found = scope.findings();
    assert_eq!(found.len(), 3, "{:#?}", summaries(&found));
    let f = one(&found, "a lock guard of mutex \"end/dropped_mutex\"");
    assert_eq!(
        f.summary,
        format!(
            "a lock guard of mutex \"end/dropped_mutex\" acquired at {} by {me} was never released: the mutex was dropped with it still held (std::mem::forget or a leaked guard)",
            at(site)
        )
    );
    assert_eq!(f.actors.len(), 1);
    let f = one(&found, "3 permits of semaphore \"end/dropped_sem\"");
    assert_eq!(
        f.summary,
        format!(
            "3 permits of semaphore \"end/dropped_sem\" acquired at {} by {me} were never released: the semaphore was dropped with them still held (std::mem::forget or a leaked guard)",
            at(site)
        )
    );
    assert_eq!(f.actors.len(), 2);
    let f = one(&found, "2 permits of semaphore \"end/dropped_forgetful\"");
    assert_eq!(
        f.summary,
        "2 permits of semaphore \"end/dropped_forgetful\" were forgotten and never added back before it was dropped; the semaphore now has 1 permit"
    );
    hooks::released(other.get(), o);
    drop(scope);
    lockscope_detector::clear_findings();
}

/// A plain `#[test]` calling `assert_clean` (no scope): judged by what its own thread
/// created and acquired.
#[test]
fn assert_clean_reports_what_the_calling_thread_left() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    lockscope_detector::clear_findings();
    let me = actor::current().describe();
    let (site, held_site) = (Location::caller(), Location::caller());
    let sem = cell("end/plain_sem", PrimKind::Semaphore, 2);
    forget(&sem, site, 1);
    let mutex = cell("end/plain_mutex", PrimKind::Mutex, 1);
    let h = hooks::acquired::<hooks::Threads>(mutex.get(), Acq::new(held_site, 1, Mode::Exclusive));
    // Another thread's semaphore with a forgotten permit, and its hold of ours: not ours.
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let foreign = std::thread::spawn(move || {
        let theirs = cell("end/foreign_sem", PrimKind::Semaphore, 2);
        forget(&theirs, Location::caller(), 1);
        let their_mutex = cell("end/foreign_mutex", PrimKind::Mutex, 1);
        let h = hooks::acquired::<hooks::Threads>(
            their_mutex.get(),
            Acq::new(Location::caller(), 1, Mode::Exclusive),
        );
        ready_tx.send(()).unwrap();
        done_rx.recv().unwrap();
        hooks::released(their_mutex.get(), h);
        hooks::added_permits(theirs.get(), 1);
    });
    ready_rx.recv().unwrap();
    let report = std::panic::catch_unwind(lockscope_detector::assert_clean)
        .expect_err("assert_clean passed with a forgotten permit and a guard held");
    let report = report.downcast_ref::<String>().expect("a formatted report");
    assert!(
        report.contains(
            "1 permit of semaphore \"end/plain_sem\" was forgotten and never added back by the end of the test; the semaphore now has 1 permit"
        ),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "a lock guard of mutex \"end/plain_mutex\" acquired at {} by {me} is still held when the test ends (",
            at(held_site)
        )),
        "{report}"
    );
    assert!(!report.contains("end/foreign"), "{report}");
    assert!(report.starts_with("lockscope found 2 problems"), "{report}");
    done_tx.send(()).unwrap();
    foreign.join().unwrap();

    // Released and paid back: clean.
    hooks::released(mutex.get(), h);
    hooks::added_permits(sem.get(), 1);
    lockscope_detector::clear_findings();
    lockscope_detector::assert_clean();
}

/// Dropping a primitive outside any test says nothing (only a test's primitives are judged).
#[test]
fn a_primitive_of_no_test_dropped_with_a_hold_is_not_reported() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    lockscope_detector::clear_findings();
    let m = cell("end/no_test", PrimKind::Mutex, 1);
    let _h = hooks::acquired::<hooks::Threads>(
        m.get(),
        Acq::new(Location::caller(), 1, Mode::Exclusive),
    );
    prim::unregister(m.get());
    assert!(lockscope_detector::findings().is_empty());
    drop(m);
}
