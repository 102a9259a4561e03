//! States built by hand for the rules' unit tests: a primitive, holds and waits placed where a
//! test wants them, the clock where it wants it, and thresholds of the test's own (an armed
//! scope), so that each rule can be judged on one state in microseconds.

use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::analysis::snapshot::{PrimState, State};
use crate::base::config::{self, Config};
use crate::state::actor::{self, ActorId};
use crate::state::channels::{ChanOp, ChanWaitView, Channel};
use crate::state::held::{HoldView, Mode};
use crate::state::joins::JoinView;
use crate::state::prim::{Prim, PrimKind, register};
use crate::state::wait::WaiterRec;

/// One millisecond in ns.
pub(crate) const MS: u64 = 1_000_000;

/// A test scope armed with thresholds of its own (disarmed on drop): what a test puts in it
/// is judged by them, whatever the process-wide configuration.
pub(crate) struct Scope(pub(crate) u32);

impl Scope {
    /// `stuck`, `starvation` and `leak` (`None`: checked at the end of the test) in ms.
    pub(crate) fn arm(stuck: u64, starvation: u64, leak: Option<u64>) -> Scope {
        // Far above the ids `TestScope` hands out.
        static NEXT: AtomicU32 = AtomicU32::new(0xF000_0000);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        config::arm_scope(
            id,
            Config {
                stuck: Duration::from_millis(stuck),
                starvation: Duration::from_millis(starvation),
                leak: leak.map(Duration::from_millis),
                ..Config::test()
            },
        );
        Scope(id)
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        config::disarm_scope(self.0);
    }
}

impl Scope {
    /// A primitive named `name`, registered in this scope (as a test's own primitives are).
    #[track_caller]
    pub(crate) fn prim(&self, name: &str, kind: PrimKind, capacity: u64) -> Arc<Prim> {
        let previous = actor::current_scope();
        actor::set_thread_scope(self.0);
        let p = register(Some(name.into()), kind, Location::caller(), capacity);
        actor::set_thread_scope(previous);
        p
    }
}

/// Task `n`.
pub(crate) fn task(n: u64) -> ActorId {
    ActorId::from_task_u64(n)
}

/// A hold of `permits` of `p` by `actor` since `since` (coarse ns), in `scope`, acquired at
/// the caller.
#[track_caller]
pub(crate) fn hold(p: &Prim, actor: ActorId, mode: Mode, permits: u32, since: u64) -> HoldView {
    HoldView {
        prim: p.id().0,
        actor,
        site: Location::caller(),
        since,
        permits,
        mode,
        flags: 0,
        scope: 0,
        thread: 1,
    }
}

/// A wait of `actor` for `permits` since `since_ns` (precise ns), queued `seq`-th, at the
/// caller.
#[track_caller]
pub(crate) fn wait(actor: ActorId, seq: u64, mode: Mode, permits: u32, since_ns: u64) -> WaiterRec {
    WaiterRec {
        seq,
        actor,
        thread: 1,
        site: Location::caller(),
        since_ns,
        permits,
        mode,
        timed: false,
        owned: false,
        scope: 0,
        on_worker: false,
        retries: 0,
    }
}

/// `p` as a snapshot sees it, with these holds and waits; its capacity as registered,
/// nothing forgotten, progress and grants 0.
pub(crate) fn at(p: &Arc<Prim>, holds: Vec<HoldView>, waiters: Vec<WaiterRec>) -> PrimState {
    PrimState {
        prim: p.clone(),
        capacity: p.capacity(),
        closed: false,
        forgotten: 0,
        progress: 0,
        granted: 0,
        holds,
        waiters,
    }
}

/// An ABBA of tasks 1 and 2 over the mutexes `a` and `b`: task 1 holds `a` and waits for `b`,
/// task 2 the other way round (holds since 10 ms, waits since 30 ms, one queued on each).
pub(crate) fn abba(a: &Arc<Prim>, b: &Arc<Prim>) -> Vec<PrimState> {
    let side = |p: &Arc<Prim>, holder: u64, waiter: u64| {
        at(
            p,
            vec![hold(p, task(holder), Mode::Exclusive, 1, 10 * MS)],
            vec![wait(task(waiter), 1, Mode::Exclusive, 1, 30 * MS)],
        )
    };
    vec![side(a, 1, 2), side(b, 2, 1)]
}

/// A state of `prims` read at `now` (both clocks), every hold and wait made in `scope`.
pub(crate) fn state(mut prims: Vec<PrimState>, scope: &Scope, now: u64) -> State {
    for p in &mut prims {
        p.holds.iter_mut().for_each(|h| h.scope = scope.0);
        p.waiters.iter_mut().for_each(|w| w.scope = scope.0);
    }
    let mut s = State::from_parts(prims);
    s.now_coarse = now;
    s.now_precise = now;
    s
}

/// The findings among `verdicts`.
pub(crate) fn found(verdicts: Vec<crate::rules::Verdict>) -> Vec<crate::model::finding::Finding> {
    verdicts
        .into_iter()
        .filter_map(|v| match v {
            crate::rules::Verdict::Found(f) => Some(*f),
            _ => None,
        })
        .collect()
}

/// The deadlocks a fresh deadlock rule finds in `s` on its second look (the first only
/// notes candidates).
pub(crate) fn deadlocks_confirmed(s: &State) -> Vec<crate::model::finding::Finding> {
    use crate::rules::{Rule, Verdict};
    let mut rule = crate::rules::deadlock::Deadlock::default();
    let first = rule.check(s);
    assert!(first.iter().all(|v| matches!(v, Verdict::Recheck)));
    found(rule.check(s))
}

/// Records `site` as where `p`'s latest forgotten permits were acquired (what `forget` does).
pub(crate) fn forgot_at(p: &Prim, site: &'static Location<'static>) {
    p.set_forgot_site(site);
}

/// A join by `waiter` of `targets` (each spawned at the caller), numbered `seq`, since
/// `since_ns` (precise ns), at the caller, on thread 1 (not blocking it).
#[track_caller]
pub(crate) fn join(seq: u64, waiter: ActorId, targets: Vec<ActorId>, since_ns: u64) -> JoinView {
    let here = Location::caller();
    JoinView {
        seq,
        waiter,
        thread: 1,
        blocking: false,
        targets: targets.into_iter().map(|t| (t, here)).collect(),
        set: None,
        site: here,
        since_ns,
        scope: 0,
    }
}

/// A send by `waiter`, numbered `seq`, since `since_ns` (precise ns), into a full channel
/// `jobs` of capacity 1 made at the caller (a new one each call) whose receiver `owner` last
/// used, on thread 1 (not blocking it).
#[track_caller]
pub(crate) fn send(
    seq: u64,
    waiter: ActorId,
    owner: Option<ActorId>,
    since_ns: u64,
) -> ChanWaitView {
    let here = Location::caller();
    ChanWaitView {
        seq,
        chan: Arc::new(Channel::new("mpsc", Some("jobs"), here, Some(1))),
        op: ChanOp::Send,
        waiter,
        thread: 1,
        blocking: false,
        owner,
        receiver_gone: false,
        permits_out: 0,
        site: here,
        since_ns,
        scope: 0,
    }
}

/// A task 3 whose wait (added to a state by `add`, given the wait's number) is for task 1 of
/// an ABBA cycle over `{prefix}/a` and `{prefix}/b` is stuck behind the cycle, but no part of
/// it: counted, its wait not named among what the knot waits for, the fix the cycle's, and
/// the finding's key ends with `{tag}11` (its number). Then the same with task 3 holding a
/// third lock since after its wait began (it ran since: a `select!`): it may leave its wait,
/// so it is not even behind. Returns the first finding, for the caller's own checks.
pub(crate) fn behind_a_lock_cycle(
    prefix: &str,
    tag: char,
    add: impl Fn(&mut State, u64),
) -> crate::model::finding::Finding {
    let scope = Scope::arm(10_000, 10_000, None);
    let a = scope.prim(&format!("{prefix}/a"), PrimKind::Mutex, 1);
    let b = scope.prim(&format!("{prefix}/b"), PrimKind::Mutex, 1);
    let mut s = state(abba(&a, &b), &scope, 1_000 * MS);
    add(&mut s, 11);
    let f = deadlocks_confirmed(&s);
    assert_eq!(f.len(), 1, "{f:#?}");
    let cycle = format!(
        "2 tasks can never proceed: each waits for mutex \"{prefix}/b\", mutex \"{prefix}/a\" held by another of them"
    );
    assert_eq!(f[0].summary, format!("{cycle}; 1 more waits behind it"));
    assert!(f[0].key().ends_with(&format!(",{tag}11")), "{}", f[0].key());
    assert_eq!(f[0].behind[0].name, "task 3");
    assert!(f[0].fix.starts_with("take primitives in one global order"));
    let found = f.into_iter().next().expect("one finding");

    let c = scope.prim(&format!("{prefix}/c"), PrimKind::Mutex, 1);
    let mut left = abba(&a, &b);
    left.push(at(
        &c,
        vec![hold(&c, task(3), Mode::Exclusive, 1, 40 * MS)],
        vec![],
    ));
    let mut s = state(left, &scope, 1_000 * MS);
    add(&mut s, 12);
    let f = deadlocks_confirmed(&s);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].summary, cycle);
    assert!(f[0].behind.is_empty() && !f[0].key().contains(tag));
    found
}
