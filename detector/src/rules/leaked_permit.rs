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
mod tests;
