//! `leaked-permit`: permits that are not coming back.
//!
//! - permits `forget`-ed and not added back: at the end of a test, or past the leak threshold
//!   in long-running mode;
//! - guards and permits still held when a `#[lockscope::test]` ends (its body has returned, so
//!   whatever still holds one is a task left running or a structure that outlived the test);
//! - in long-running mode, a hold older than the leak threshold whose holder has gone quiet
//!   (it waits for nothing and has acquired nothing since), or that is an owned guard or
//!   permit (it may have moved away from its acquirer, which may be busy).

use std::collections::{HashMap, HashSet};

use crate::analysis::snapshot::{PrimState, State};
use crate::model::finding::{Finding, FindingKind, PrimRef};
use crate::rules::{Rule, Verdict, holder, noun, prim_ref};
use crate::state::actor;
use crate::state::held::HoldView;
use crate::state::prim::{Prim, PrimKind, site_string};

fn forgotten_finding(p: &PrimState, why: &str, end: bool) -> Finding {
    forgotten_of(&p.prim, p.forgotten, p.capacity, why, end)
}

fn forgotten_of(prim: &Prim, forgotten: u64, capacity: u64, why: &str, end: bool) -> Finding {
    let r = prim_ref(prim);
    let mut f = Finding::new(
        FindingKind::LeakedPermit,
        format!("{}|forgotten{}", prim.id().0, if end { "|end" } else { "" }),
        format!(
            "{} permit{} of {} {} forgotten and never added back {why}; the semaphore now has {} permit{}",
            forgotten,
            if forgotten == 1 { "" } else { "s" },
            noun(&r),
            if forgotten == 1 { "was" } else { "were" },
            capacity,
            if capacity == 1 { "" } else { "s" },
        ),
    );
    if let Some(site) = prim.forgot_site() {
        let site = site_string(site);
        f.details.push(format!(
            "the latest forgotten permits were acquired at {site}"
        ));
        f.add_site(&site);
    }
    f.add_scope(prim.scope());
    f.add_prim(r);
    f.fix = "drop the permit instead of calling forget(), or call add_permits() once the work it stood for is done".into();
    f
}

/// A test's semaphore is dropped with forgotten permits.
pub(crate) fn dropped_forgotten(prim: &Prim) -> Finding {
    forgotten_of(
        prim,
        prim.forgotten(),
        prim.capacity(),
        "before it was dropped",
        true,
    )
}

/// A test's primitive is dropped while holds of it are still in the books: guards or permits
/// that were leaked (`std::mem::forget`, `Box::leak`), never to be released.
pub(crate) fn dropped_with_holds(prim: &Prim) -> Option<Finding> {
    let mut holds = Vec::new();
    crate::state::held::for_each_all(|h| {
        if h.prim == prim.id().0 && h.flags & crate::state::held::FLAG_SPLIT == 0 {
            holds.push(h);
        }
    });
    let h = holds.first()?;
    let r = prim_ref(prim);
    let permits: u32 = holds.iter().map(|h| h.permits).sum();
    let holds: Vec<&HoldView> = holds.iter().collect();
    let what = what_is_held(prim, &r, &holds);
    let now = crate::base::clock::coarse_now();
    let mut f = Finding::new(
        FindingKind::LeakedPermit,
        format!("{}|{}|dropped", prim.id().0, site_string(h.site)),
        format!(
            "{what} of {} acquired at {} by {} {} never released: the {} was dropped with {} still held (std::mem::forget or a leaked guard)",
            noun(&r),
            site_string(h.site),
            h.actor.describe(),
            if holds.len() == 1 && permits <= 1 {
                "was"
            } else {
                "were"
            },
            r.kind,
            if holds.len() == 1 && permits <= 1 {
                "it"
            } else {
                "them"
            },
        ),
    );
    for h in &holds {
        f.actors.push(holder(&r, h, now.saturating_sub(h.since)));
        f.add_scope(h.scope);
    }
    f.add_scope(prim.scope());
    f.add_prim(r);
    f.fix = "let the guard or permit drop (do not std::mem::forget it); to give permits up on purpose, use the permit's own forget() and add_permits() later".into();
    Some(f)
}

/// `3 permits`, `a lock guard`, `2 read guards`: what `holds` (at least one) keep of `prim`.
fn what_is_held(prim: &Prim, r: &PrimRef, holds: &[&HoldView]) -> String {
    let h = holds[0];
    let permits: u32 = holds.iter().map(|h| h.permits).sum();
    if prim.kind() == PrimKind::Semaphore {
        format!("{permits} permit{}", if permits == 1 { "" } else { "s" })
    } else if holds.len() == 1 {
        format!("a {} guard", h.mode.verb_in(r.kind))
    } else {
        format!("{} {} guards", holds.len(), h.mode.verb_in(r.kind))
    }
}

fn held_finding(p: &PrimState, holds: &[&HoldView], now: u64, why: &str, end: bool) -> Finding {
    let r = prim_ref(&p.prim);
    let h = holds[0];
    let what = what_is_held(&p.prim, &r, holds);
    let mut who: Vec<String> = holds.iter().map(|h| h.actor.describe()).collect();
    who.dedup();
    let age = holds
        .iter()
        .map(|h| now.saturating_sub(h.since))
        .max()
        .unwrap_or(0);
    let mut f = Finding::new(
        FindingKind::LeakedPermit,
        format!(
            "{}|{}{}",
            p.prim.id().0,
            site_string(h.site),
            if end { "|end" } else { "" }
        ),
        format!(
            "{what} of {} acquired at {} by {} {why} ({} ms)",
            noun(&r),
            site_string(h.site),
            who.join(", "),
            age / 1_000_000
        ),
    );
    for h in holds {
        f.actors.push(holder(&r, h, now.saturating_sub(h.since)));
        f.add_scope(h.scope);
    }
    match holds.iter().filter(|h| h.movable()).count() {
        0 => {}
        1 if holds.len() == 1 => f.details.push(
            "it is an owned guard/permit: look for a struct, a collection or a task that keeps it"
                .into(),
        ),
        _ => f.details.push(
            "owned guards/permits: look for a struct, a collection or a task that keeps them"
                .into(),
        ),
    }
    f.add_scope(p.prim.scope());
    f.add_prim(r);
    f.fix = "scope the guard or permit to the work it protects (drop it when done); do not store it in long-lived structures".into();
    f
}

/// End of a test scope (`scope` 0: a plain test calling `assert_clean`, judged by what the
/// calling thread acquired and created).
pub(crate) fn check_end_of_scope(scope: u32) -> Vec<Finding> {
    let mut out = Vec::new();
    let state = State::capture();
    let me = actor::current().as_u64();
    for p in &state.prims {
        let mine = if scope == 0 {
            p.prim.creator == me
        } else {
            p.prim.scope() == scope
        };
        if p.forgotten > 0 && mine {
            out.push(forgotten_finding(p, "by the end of the test", true));
        }
        // An initialiser still at work ends with its future, which the runtime's end drops.
        if p.prim.kind().is_once_cell() {
            continue;
        }
        // One finding per acquisition site: three permits leaked at one line are one bug.
        let mut by_site: Vec<(&'static std::panic::Location<'static>, Vec<&HoldView>)> = Vec::new();
        for h in &p.holds {
            let belongs = if scope == 0 {
                h.actor.as_u64() == me
            } else {
                h.scope == scope
            };
            if !belongs || h.flags & crate::state::held::FLAG_SPLIT != 0 {
                continue;
            }
            match by_site.iter_mut().find(|(s, _)| std::ptr::eq(*s, h.site)) {
                Some((_, v)) => v.push(h),
                None => by_site.push((h.site, vec![h])),
            }
        }
        for (_, holds) in by_site {
            let why = if holds.len() == 1 {
                "is still held when the test ends"
            } else {
                "are still held when the test ends"
            };
            out.push(held_finding(p, &holds, state.now_coarse, why, true));
        }
    }
    out
}

/// Long-running leak checks (only with a leak threshold).
#[derive(Default)]
pub(crate) struct LeakedPermit {
    /// Per semaphore with forgotten permits: when it forgot how many in all.
    forgets: HashMap<u64, ForgetLog>,
    pub(crate) active: HashSet<String>,
}

/// Samples `(precise ns, permits forgotten so far)` of one semaphore, oldest first: enough to
/// tell how many permits had been forgotten by any moment of the last leak threshold.
///
/// `add_permits` pays back the oldest forget first (a pool forgets a permit at checkout and
/// adds one at return), so a permit forgotten before `t` is still unpaid exactly when the
/// permits added so far number fewer than those forgotten by `t`. Every sample is an exact
/// reading, so a thinned log only reports later, never wrongly: the log keeps one sample per
/// 1/[`ForgetLog::PER_WINDOW`] of the threshold, and at most [`ForgetLog::CAP`].
#[derive(Default)]
struct ForgetLog {
    samples: std::collections::VecDeque<(u64, u64)>,
}

impl ForgetLog {
    const PER_WINDOW: u64 = 32;
    const CAP: usize = 2 * Self::PER_WINDOW as usize;

    /// Records `forgot` (permits forgotten so far) at `now`; returns how many permits
    /// forgotten at least `leak` ns ago `added` (permits added so far) has not paid back.
    fn unpaid(&mut self, now: u64, forgot: u64, added: u64, leak: u64) -> u64 {
        let n = self.samples.len();
        if self.samples.back().is_none_or(|&(_, f)| f != forgot) {
            // The newest sample keeps up with the count; the ones before it stay spaced.
            // mutants: `<` -> `<=` keeps samples at least, rather than more than, 1/PER_WINDOW
            // of the threshold apart: both keep the promise above (late by at most that
            // much), which is all a report can show.
            let recent =
                n >= 2 && now.saturating_sub(self.samples[n - 2].0) < leak / Self::PER_WINDOW;
            if recent {
                self.samples[n - 1] = (now, forgot);
            } else {
                if n == Self::CAP {
                    self.samples.pop_front();
                }
                self.samples.push_back((now, forgot));
            }
        }
        let Some(cutoff) = now.checked_sub(leak) else {
            return 0;
        };
        // Keep only the newest sample at or before the cutoff, and the ones after it.
        while self.samples.len() > 1 && self.samples[1].0 <= cutoff {
            self.samples.pop_front();
        }
        match self.samples.front() {
            Some(&(t, f)) if t <= cutoff => f.saturating_sub(added),
            _ => 0,
        }
    }
}

impl Rule for LeakedPermit {
    fn kind(&self) -> FindingKind {
        FindingKind::LeakedPermit
    }

    fn check(&mut self, state: &State) -> Vec<Verdict> {
        let mut out = Vec::new();
        self.active.clear();
        let mut kept = HashMap::new();
        // Latest activity per actor: newest hold start; waiting actors are active.
        let mut newest: HashMap<u64, u64> = HashMap::new();
        let mut waiting: HashSet<u64> = HashSet::new();
        for p in &state.prims {
            for h in &p.holds {
                let e = newest.entry(h.actor.as_u64()).or_default();
                *e = (*e).max(h.since);
            }
            for w in &p.waiters {
                waiting.insert(w.actor.as_u64());
            }
        }
        for p in &state.prims {
            // An initialiser's hold ends with its future (see `PrimKind::is_once_cell`).
            if p.prim.kind().is_once_cell() {
                continue;
            }
            let mut scopes: Vec<u32> = p.holds.iter().map(|h| h.scope).collect();
            scopes.push(p.prim.scope());
            let Some(leak) = crate::base::config::for_scopes(&scopes).leak else {
                continue;
            };
            let leak = leak.as_nanos() as u64;
            let id = p.prim.id().0;
            let (forgot, added) = p.prim.forgot_and_added();
            // mutants: `>` -> `>=` is equivalent: with nothing ever forgotten, `unpaid` is
            // 0 whatever the log holds (0 minus the permits added, saturating).
            if forgot > 0 {
                let mut log = self.forgets.remove(&id).unwrap_or_default();
                // Never more than the balance (a racing read of the two totals).
                let unpaid = log
                    .unpaid(state.now_precise, forgot, added, leak)
                    .min(p.forgotten);
                kept.insert(id, log);
                if unpaid > 0 {
                    let f = forgotten_of(
                        &p.prim,
                        unpaid,
                        p.capacity,
                        &format!("for over {} ms", leak / 1_000_000),
                        false,
                    );
                    self.active
                        .insert(format!("{}:{}", FindingKind::LeakedPermit, f.key()));
                    out.push(Verdict::Found(Box::new(f)));
                }
            }
            for h in &p.holds {
                let age = state.hold_age(h);
                let a = h.actor.as_u64();
                let quiet = !waiting.contains(&a)
                    && state
                        .now_coarse
                        .saturating_sub(newest.get(&a).copied().unwrap_or(0))
                        >= leak;
                if age >= leak && (quiet || h.movable()) {
                    // An owned guard is reported even while its acquirer is busy (it may live
                    // elsewhere now): the summary says which. Its acquirer's quiet says nothing
                    // of whoever keeps it now (issue 29: "a holder that has gone quiet" was
                    // printed for an owned guard kept by a busy task), so it is not claimed.
                    let why = match (h.movable(), quiet) {
                        (false, _) => {
                            "has been held past the leak threshold by a holder that has gone quiet"
                        }
                        (true, true) => {
                            "has been held past the leak threshold by whoever keeps it now (its acquirer has taken and waited for nothing since)"
                        }
                        (true, false) => {
                            "has been held past the leak threshold while its acquirer went on with other work"
                        }
                    };
                    let f = held_finding(p, &[h], state.now_coarse, why, false);
                    self.active
                        .insert(format!("{}:{}", FindingKind::LeakedPermit, f.key()));
                    out.push(Verdict::Found(Box::new(f)));
                }
            }
        }
        self.forgets = kept;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{ForgetLog, LeakedPermit};
    use crate::model::finding::FindingKind;
    use crate::rules::Rule;
    use crate::rules::testkit::{MS, Scope, at, forgot_at, found, hold, state, task, wait};
    use crate::state::held::{FLAG_MOVABLE, Mode};
    use crate::state::prim::PrimKind;
    use std::sync::atomic::Ordering::Relaxed;

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
            [
                "it is an owned guard/permit: look for a struct, a collection or a task that keeps it"
            ]
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
            sem.forgot_total.store(forgot, Relaxed);
            sem.added_total.store(added, Relaxed);
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
}
