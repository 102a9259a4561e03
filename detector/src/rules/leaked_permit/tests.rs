use super::{ForgetLog, LeakedPermit};
use crate::model::finding::FindingKind;
use crate::rules::Rule;
use crate::rules::testkit::{MS, Scope, at, forgot_at, found, hold, state, task, wait};
use crate::state::held::{FLAG_MOVABLE, Mode};
use crate::state::prim::PrimKind;

/// The running check (issue 17: only a child-process example ran it): a quiet holder's
/// hold past the leak threshold is reported, in these words, once per hold.
#[test]
fn a_hold_past_the_leak_threshold_by_a_quiet_holder_is_reported() {
    let scope = Scope::arm(10_000, 10_000, Some(100));
    let sem = scope.prim("leak/quiet_sem", PrimKind::Semaphore, 5);
    let h = hold(&sem, task(71), Mode::Permits, 2, 0);
    let site = crate::state::prim::site_string(h.site);
    let mut rule = LeakedPermit::default();
    assert_eq!(rule.kind(), FindingKind::LeakedPermit);
    let s = state(vec![at(&sem, vec![h], vec![])], &scope, 250 * MS);
    let f = found(rule.check(&s));
    assert_eq!(f.len(), 1);
    assert_eq!(
        f[0].summary,
        format!(
            "2 permits of semaphore \"leak/quiet_sem\" acquired at {site} by task 71 has been held past the leak threshold by a holder that has gone quiet (250 ms)"
        )
    );
    // A borrowed permit: no word about owned guards.
    assert!(f[0].details.is_empty(), "{:?}", f[0].details);
    assert_eq!(f[0].actors.len(), 1);
    assert_eq!(f[0].actors[0].holds[0].for_ms, 250);
    assert!(
        rule.active
            .contains(&format!("leaked-permit:{}", f[0].key()))
    );
}

/// A holder that acquired something recently, or waits for something, is busy, not
/// quiet: its old hold is no leak. An owned guard past the threshold is one whatever its
/// holder does (it may have moved); a young one is not, even from a quiet holder.
#[test]
fn busy_holders_and_young_holds_are_not_leaks_but_old_owned_guards_are() {
    let scope = Scope::arm(10_000, 10_000, Some(100));
    let m = scope.prim("leak/busy_mutex", PrimKind::Mutex, 1);
    let other = scope.prim("leak/busy_other", PrimKind::Mutex, 1);
    let now = 1_000 * MS;
    // Task 1: an old hold, and a hold taken 50 ms ago.
    let old1 = hold(&m, task(1), Mode::Exclusive, 1, 0);
    let recent1 = hold(&other, task(1), Mode::Exclusive, 1, now - 50 * MS);
    // Task 2: an old hold, and waiting for `other` for a long time.
    let old2 = hold(&m, task(2), Mode::Exclusive, 1, 0);
    let waits2 = wait(task(2), 1, Mode::Exclusive, 1, 0);
    // Task 3: quiet, but its only hold (an owned guard) is 50 ms old.
    let mut young3 = hold(&m, task(3), Mode::Exclusive, 1, now - 50 * MS);
    young3.flags |= FLAG_MOVABLE;
    let s = state(
        vec![
            at(&m, vec![old1, old2, young3], vec![]),
            at(&other, vec![recent1], vec![waits2]),
        ],
        &scope,
        now,
    );
    let mut rule = LeakedPermit::default();
    assert!(rule.check(&s).is_empty());
    assert!(rule.active.is_empty());

    // An owned guard 1 s old whose acquirer (task 4) is quiet: reported, without calling
    // whoever keeps it now quiet (it may be a busy task it was handed to).
    let mut handed = hold(&m, task(4), Mode::Exclusive, 1, 0);
    handed.flags |= FLAG_MOVABLE;
    let s = state(vec![at(&m, vec![handed], vec![])], &scope, now);
    let f = found(LeakedPermit::default().check(&s));
    assert_eq!(f.len(), 1);
    assert!(
        f[0].summary.ends_with(
            "by task 4 has been held past the leak threshold by whoever keeps it now (its acquirer has taken and waited for nothing since) (1000 ms)"
        ),
        "{}",
        f[0].summary
    );

    // An owned guard 1 s old, held by task 1, which is busy: reported, as owned.
    let mut owned = hold(&m, task(1), Mode::Exclusive, 1, 0);
    owned.flags |= FLAG_MOVABLE;
    let site = crate::state::prim::site_string(owned.site);
    let s = state(
        vec![
            at(&m, vec![owned], vec![]),
            at(&other, vec![recent1], vec![]),
        ],
        &scope,
        now,
    );
    let f = found(rule.check(&s));
    assert_eq!(f.len(), 1);
    assert_eq!(
        f[0].summary,
        format!(
            "a lock guard of mutex \"leak/busy_mutex\" acquired at {site} by task 1 has been held past the leak threshold while its acquirer went on with other work (1000 ms)"
        )
    );
    assert_eq!(
        f[0].details,
        ["it is an owned guard/permit: look for a struct, a collection or a task that keeps it"]
    );
}

/// Forgotten permits not added back for the leak threshold are reported with how many
/// are unpaid, and no longer once they all are added back (issue 17: only an example's
/// child process ran this).
#[test]
fn forgotten_permits_unpaid_past_the_threshold_are_reported_until_paid_back() {
    let scope = Scope::arm(10_000, 10_000, Some(100));
    let sem = scope.prim("leak/forgetful", PrimKind::Semaphore, 5);
    let site = std::panic::Location::caller();
    forgot_at(&sem, site);
    let mut rule = LeakedPermit::default();
    let mut check = |forgot: u64, added: u64, capacity: u64, now_ms: u64| {
        sem.set_forgot_and_added(forgot, added);
        let mut p = at(&sem, vec![], vec![]);
        p.forgotten = forgot - added;
        p.capacity = capacity;
        let s = state(vec![p], &scope, now_ms * MS);
        let verdicts = rule.check(&s);
        let f = found(verdicts);
        (f, rule.active.len())
    };
    // Forgotten at 1000 ms: not yet a leak.
    let (f, active) = check(3, 0, 2, 1_000);
    assert!(f.is_empty() && active == 0);
    let (f, _) = check(3, 0, 2, 1_050);
    assert!(f.is_empty());
    // 100 ms later, still unpaid.
    let (f, active) = check(3, 0, 2, 1_100);
    assert_eq!(f.len(), 1);
    assert_eq!(active, 1);
    assert_eq!(
        f[0].summary,
        "3 permits of semaphore \"leak/forgetful\" were forgotten and never added back for over 100 ms; the semaphore now has 2 permits"
    );
    let at_site = crate::state::prim::site_string(site);
    assert_eq!(
        f[0].details,
        [format!(
            "the latest forgotten permits were acquired at {at_site}"
        )]
    );
    assert!(f[0].sites.contains(&at_site));
    // Two added back: one unpaid, in the singular.
    let (f, _) = check(3, 2, 1, 1_200);
    assert_eq!(f.len(), 1);
    assert_eq!(
        f[0].summary,
        "1 permit of semaphore \"leak/forgetful\" was forgotten and never added back for over 100 ms; the semaphore now has 1 permit"
    );
    // All paid back: nothing.
    let (f, active) = check(3, 3, 4, 1_300);
    assert!(f.is_empty() && active == 0);
}

/// Without a leak threshold (tests: leaks are judged at the end) the check says nothing.
#[test]
fn without_a_leak_threshold_nothing_is_checked_while_running() {
    let scope = Scope::arm(10_000, 10_000, None);
    let m = scope.prim("leak/no_threshold", PrimKind::Mutex, 1);
    let s = state(
        vec![at(
            &m,
            vec![hold(&m, task(5), Mode::Exclusive, 1, 0)],
            vec![],
        )],
        &scope,
        1_000_000 * MS,
    );
    assert!(LeakedPermit::default().check(&s).is_empty());
}

#[test]
fn a_pool_that_keeps_returning_its_permits_never_leaks() {
    // 4 permits always out, one returned and one taken every ms, for 10 leak windows.
    let mut log = ForgetLog::default();
    let leak = 500 * MS;
    for ms in 0..5000 {
        let forgot = 4 + ms;
        assert_eq!(
            log.unpaid(ms * MS, forgot, forgot - 4, leak),
            0,
            "at {ms} ms"
        );
    }
    assert!(log.samples.len() <= ForgetLog::CAP);
}

#[test]
fn a_forget_unpaid_once_the_pool_goes_quiet_is_a_leak_past_the_threshold() {
    // One permit forgotten and never paid while three cycle for a second: the adds pay
    // the oldest forgets first, so the unpaid one is the latest; once the pool goes
    // quiet, it is reported a threshold later.
    let mut log = ForgetLog::default();
    let leak = 500 * MS;
    let base = 10_000;
    for ms in 0..1000 {
        let forgot = 4 + ms;
        let t = (base + ms) * MS;
        assert_eq!(log.unpaid(t, forgot, forgot - 4, leak), 0, "at {ms} ms");
    }
    let (forgot, added) = (4 + 999 + 1, 999 + 3 + 1);
    let mut first = None;
    for ms in 1000..3000 {
        let unpaid = log.unpaid((base + ms) * MS, forgot, added, leak);
        if unpaid > 0 {
            assert_eq!(unpaid, 1);
            first = Some(ms);
            break;
        }
    }
    let first = first.expect("reported");
    // Reported after the threshold, and late by at most 1/PER_WINDOW of it.
    assert!(
        (1500..=1500 + 500 / ForgetLog::PER_WINDOW).contains(&first),
        "{first}"
    );
    assert!(log.samples.len() <= ForgetLog::CAP);
}

/// A pool that forgets a permit every ms and adds one back every ms, but keeps 400 out:
/// of them, those forgotten over a threshold (320 ms) ago are unpaid, 80, and the log,
/// thinned to one sample per 1/32 of the threshold and at most `CAP`, tells at most 10
/// (one spacing) fewer, never more, at every moment.
#[test]
fn a_busy_pool_that_falls_behind_is_counted_within_one_spacing() {
    let mut log = ForgetLog::default();
    let leak = 320 * MS;
    for ms in 0..3_000 {
        let forgot = 1_000 + ms;
        let unpaid = log.unpaid(ms * MS, forgot, forgot - 400, leak);
        if ms >= 1_000 {
            assert!((70..=80).contains(&unpaid), "{unpaid} at {ms} ms");
        }
        assert!(log.samples.len() <= ForgetLog::CAP);
    }
}

#[test]
fn permits_added_before_the_forgets_pay_for_them() {
    let mut log = ForgetLog::default();
    assert_eq!(log.unpaid(0, 3, 5, MS), 0);
    assert_eq!(log.unpaid(10 * MS, 3, 5, MS), 0);
}
