//! The test timeout: an armed test still running with nothing moving in it fails with a dump
//! of its live state (`Config::test_timeout`, `#[lockscope::test(timeout_ms = ..)]`,
//! `LOCKSCOPE_TEST_TIMEOUT_MS`).
//!
//! Movement is measured on the watchdog thread, from the snapshot it reads anyway, with
//! nothing added to the hot path: each tick digests, for every primitive that concerns the
//! test (created in it, held or waited for by its threads, or created outside any test), the
//! counters the primitive keeps already (acquisitions granted, releases and capacity changes,
//! `try_` failures, timeouts, cancelled waits, its holds and waiters now) and its identity. A
//! digest that differs from the last tick's restarts the test's idle clock; a primitive
//! created or dropped changes it too. A test that uses no lockscope primitive never moves by
//! this measure: it simply times out after the timeout.
//!
//! When the clock passes the timeout (and no `deadlock` or `stuck-queue` of the test is
//! already ending it), the dump is composed and:
//! - an async test's body, wrapped in [`WithTimeout`] by `#[lockscope::test]`, is woken and
//!   panics with it: a clean test failure;
//! - a test that cannot panic (a plain `fn`, whose thread never returns to lockscope, or an
//!   async body that has not been polled since, as its thread is blocked or busy) has the
//!   process ended by the watchdog with the dump on stderr, at once for a plain `fn`, after
//!   [`GRACE`] for an async one.

use std::collections::hash_map::DefaultHasher;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::analysis::snapshot::State;
use crate::report::scopes::ScopeState;
use crate::report::{dump, finding, scopes};
use crate::state::actor;

/// How long a fired timeout may go unanswered by the test's body before the watchdog ends the
/// process: a pending body is woken and polled at once, so only a blocked or busy thread
/// leaves it unanswered this long.
pub(crate) const GRACE: Duration = Duration::from_secs(1);

/// A digest of what can move in test scope `scope`, read from `state` (see the module docs).
fn movement(state: &State, scope: u32) -> u64 {
    let mut h = DefaultHasher::new();
    for p in &state.prims {
        let own = p.prim.scope();
        // Unlike the dump, an idle primitive created outside any test counts: a static used
        // now and then by the test moves when it is.
        if !(own == 0 || dump::concerns(p, scope)) {
            continue;
        }
        let stats = &p.prim.stats;
        (
            p.prim.id().0,
            p.progress,
            p.granted,
            p.closed,
            p.capacity,
            p.holds.len(),
            p.waiters.len(),
            stats.try_failures.load(Relaxed),
            stats.timeouts.load(Relaxed),
            stats.cancelled.load(Relaxed),
        )
            .hash(&mut h);
    }
    // A join or channel wait of the test that begins or ends is movement too.
    for j in state.joins.iter().filter(|j| j.scope == scope) {
        j.seq.hash(&mut h);
    }
    for c in state.chan_waits.iter().filter(|c| c.scope == scope) {
        c.seq.hash(&mut h);
    }
    h.finish()
}

/// One tick of the test timeout over every armed test. Returns the report to end the process
/// with, when a timed-out test cannot fail by itself.
pub(crate) fn check(state: &State) -> Option<String> {
    let now = Instant::now();
    for s in scopes::armed() {
        let Some(limit) = s.config.test_timeout else {
            continue;
        };
        let mut t = s.timeout.lock();
        // Only a test that the attribute runs is timed: its body wrapped in `WithTimeout`, or
        // a plain `fn` that listens (`TestScope::listen`). A scope armed by hand is not.
        if !t.listening && !s.deadlock.lock().listening {
            continue;
        }
        let digest = movement(state, s.id);
        if let Some((at, dump)) = &t.fired {
            if !t.listening || now.duration_since(*at) >= GRACE {
                return Some(unanswered(&s, dump));
            }
            continue;
        }
        if t.digest != Some(digest) {
            t.digest = Some(digest);
            t.idle_since = now;
            continue;
        }
        let idle = now.duration_since(t.idle_since);
        if idle < limit {
            continue;
        }
        // A deadlock or a stuck queue of the test is ending it already, within its own bound.
        if s.deadlock.lock().report.is_some() {
            continue;
        }
        let dump = compose(&s, state, idle);
        t.fired = Some((now, dump.clone()));
        if !t.listening {
            return Some(unanswered(&s, &dump));
        }
        if let Some(w) = t.waker.take() {
            w.wake();
        }
    }
    None
}

/// The failure message of a timed-out test.
fn compose(s: &ScopeState, state: &State, idle: Duration) -> String {
    let mut out = format!(
        "lockscope test timeout: test `{}` has not finished, and nothing has moved in it for {} ms \
         (the test timeout: `#[lockscope::test(timeout_ms = ..)]` or LOCKSCOPE_TEST_TIMEOUT_MS; \
         0 disables it).\n",
        s.name,
        idle.as_millis()
    );
    let findings = s.all_findings();
    if findings.is_empty() {
        out.push_str("lockscope found nothing that explains the hang.\n");
    } else {
        out.push_str("findings of the test so far:\n");
        out.push_str(&finding::render_all(&findings));
        out.push('\n');
    }
    out.push_str(&dump::live_dump(state, s.id, s.thread));
    out
}

/// What the watchdog prints before ending the process for a timed-out test.
fn unanswered(s: &ScopeState, dump: &str) -> String {
    format!(
        "in test {}: the test timed out, and its thread cannot fail it (a plain `fn` test, or a body that blocks or never yields its thread).\n{dump}",
        s.name
    )
}

/// Races a test's body against its test timeout: see [`with_timeout`].
pub struct WithTimeout<F> {
    // Structurally pinned: never moved out of `self` once pinned (see `poll`).
    body: F,
    scope: Option<Arc<ScopeState>>,
    looked: bool,
}

/// Wraps the body of a `#[lockscope::test]` (the attribute does it): polled on the test's
/// thread, it finds the test armed there and, once the test timeout fires, panics with the
/// dump instead of polling the body again. Until then it polls the body with the same
/// context and returns what the body returns: the body runs, wakes and is cancelled exactly
/// as it would unwrapped. Outside an armed test (or with no timeout) it only polls the body.
pub fn with_timeout<F: Future>(body: F) -> WithTimeout<F> {
    WithTimeout {
        body,
        scope: None,
        looked: false,
    }
}

impl<F: Future> Future for WithTimeout<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `body` is never moved out of `self`, and `WithTimeout` has no `Drop` impl
        // and is `Unpin` only when `F` is (the auto trait): structural pinning holds.
        let this = unsafe { self.get_unchecked_mut() };
        if !this.looked {
            this.looked = true;
            this.scope =
                scopes::get(actor::current_scope()).filter(|s| s.config.test_timeout.is_some());
        }
        if let Some(s) = &this.scope {
            let mut t = s.timeout.lock();
            if let Some((_, dump)) = &t.fired {
                let dump = dump.clone();
                drop(t);
                panic!("{dump}");
            }
            t.listening = true;
            if !t.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                t.waker = Some(cx.waker().clone());
            }
        }
        // SAFETY: see above; `body` stays where it is.
        unsafe { Pin::new_unchecked(&mut this.body) }.poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testkit::{MS, Scope, at, hold, state, task, wait};
    use crate::state::held::Mode;
    use crate::state::prim::PrimKind;

    #[test]
    fn movement_changes_with_the_tests_own_primitives_only() {
        let mine = Scope::arm(1000, 1000, None);
        let other = Scope::arm(1000, 1000, None);
        let m = mine.prim("moving_mine", PrimKind::Mutex, 1);
        let o = other.prim("moving_other", PrimKind::Mutex, 1);
        // The digest when the test's mutex was granted `granted` times (held by task 1, and
        // `waiters` waiting) and the other test's `other_granted` times, read at `now`.
        let digest = |granted: u64, waiters, other_granted: u64, now| {
            let mut a = at(&m, vec![hold(&m, task(1), Mode::Exclusive, 1, 0)], waiters);
            a.granted = granted;
            let mut b = at(&o, vec![], vec![]);
            b.granted = other_granted;
            movement(&state(vec![a, b], &mine, now), mine.0)
        };
        let idle = |granted, other_granted| digest(granted, vec![], other_granted, 100 * MS);
        let base = idle(1, 0);
        assert_eq!(base, idle(1, 0), "nothing moved: the same digest");
        assert_ne!(
            base,
            idle(2, 0),
            "an acquisition of the test's primitive moves it"
        );
        assert_eq!(
            base,
            idle(1, 7),
            "another test's primitive, which this test does not use, does not"
        );
        // A new waiter is movement; the clock going on is not.
        let later = digest(1, vec![], 0, 900 * MS);
        assert_eq!(base, later, "time alone moves nothing");
        let waiter = wait(task(2), 1, Mode::Exclusive, 1, 50 * MS);
        assert_ne!(base, digest(1, vec![waiter], 0, 100 * MS));
    }
}
