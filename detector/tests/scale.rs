//! Scale (issues 3 and 7): a live state of 10,000 tasks and 1,000 primitives, analysed for
//! deadlocks. `benches/analysis.rs` times the analysis (budget: under 50 ms); the test here
//! checks that it finds exactly the deadlocks hidden in the state, within ten times the
//! budget (not a timing test: a loose bound that only catches a blow-up).
//!
//! The state, built by [`scale_state`] (also used by the bench), looks like a busy service:
//! most tasks hold one or two primitives (tokio mutexes, rwlocks and semaphores, parking_lot
//! mutexes and rwlocks), a few hundred wait in queues and chains that all end at holders
//! waiting for nothing, and four real deadlocks are hidden among them, next to a decoy (a
//! semaphore cycle with a free holder, which is not a deadlock).

use std::collections::{BTreeSet, HashMap};
use std::panic::Location;
use std::sync::Arc;

use lockscope_detector::__private::held::{FLAG_MOVABLE, HoldView, Mode};
use lockscope_detector::__private::hooks::{self, Acq};
use lockscope_detector::__private::prim::{self, Prim, PrimCell, PrimKind};
use lockscope_detector::__private::snapshot::{PrimState, State};
use lockscope_detector::__private::wait::WaiterRec;
use lockscope_detector::ActorId;

/// Tasks in the state.
pub const TASKS: u64 = 10_000;
/// Primitives in the state.
pub const PRIMS: usize = 1_000;

/// A state and the deadlocks hidden in it.
pub struct Scale {
    /// The state to analyse.
    pub state: State,
    /// The actors of each hidden deadlock (raw ids), one set per deadlock.
    pub deadlocks: BTreeSet<BTreeSet<u64>>,
    /// Holds in the state.
    pub holds: usize,
    /// Waits in the state.
    pub waits: usize,
}

/// splitmix64: a fixed, dependency-free sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One primitive of the state being built.
struct Slot {
    prim: Arc<Prim>,
    capacity: u64,
    holds: Vec<HoldView>,
    waiters: Vec<WaiterRec>,
}

/// Builds the state.
struct Builder {
    prims: Vec<Slot>,
    /// A hold and a wait as the detector's books record them: copied, with only the fields
    /// that matter here set, so this file keeps compiling when the books gain a field.
    hold_template: HoldView,
    wait_template: WaiterRec,
    /// Per primitive: actors waiting for it or queued for it (for the no-cycle rule).
    depends: Vec<Vec<u64>>,
    /// Actors some waiter depends on (they may not start waiting: that could close a cycle).
    depended_on: BTreeSet<u64>,
    /// Actors waiting now.
    waiting: BTreeSet<u64>,
    /// Worker threads blocked by a waiting actor.
    blocked_threads: BTreeSet<u64>,
    holds: usize,
    waits: usize,
}

const MAX_READERS: u64 = 32;
const PL_MAX_READERS: u64 = (usize::MAX >> 5) as u64;

fn task(n: u64) -> ActorId {
    ActorId::from_task_u64(n)
}

fn thread(n: u64) -> ActorId {
    ActorId::from_thread_seq(n)
}

impl Builder {
    fn add(&mut self, name: String, kind: PrimKind, capacity: u64) -> usize {
        let p: Arc<Prim> = prim::register(Some(name.into()), kind, Location::caller(), capacity);
        self.prims.push(Slot {
            prim: p,
            capacity,
            holds: Vec::new(),
            waiters: Vec::new(),
        });
        self.depends.push(Vec::new());
        self.prims.len() - 1
    }

    fn kind(&self, p: usize) -> PrimKind {
        self.prims[p].prim.kind()
    }

    fn held(&self, p: usize) -> u64 {
        self.prims[p]
            .holds
            .iter()
            .map(|h| u64::from(h.permits))
            .sum()
    }

    /// Whether `actor` may take `mode`/`permits` of `p` at once, as the real primitive would.
    fn grantable(&self, p: usize, permits: u32, mode: Mode) -> bool {
        let s = &self.prims[p];
        match self.kind(p) {
            PrimKind::Mutex | PrimKind::RwLock | PrimKind::Semaphore => {
                s.waiters.is_empty() && self.held(p) + u64::from(permits) <= s.capacity
            }
            PrimKind::BlockingMutex | PrimKind::BlockingReentrantMutex => s.holds.is_empty(),
            PrimKind::BlockingRwLock => {
                let writer = s.holds.iter().any(|h| h.mode == Mode::Exclusive)
                    || s.waiters.iter().any(|w| w.mode == Mode::Exclusive);
                match mode {
                    Mode::Exclusive => s.holds.is_empty(),
                    _ => !writer,
                }
            }
            k => panic!("the scale model has no rule for {k:?}"),
        }
    }

    fn hold(&mut self, p: usize, actor: ActorId, permits: u32, mode: Mode, flags: u8) {
        let id = self.prims[p].prim.id().0;
        self.prims[p].holds.push(HoldView {
            prim: id,
            actor,
            permits,
            mode,
            flags,
            thread: actor.thread_seq().unwrap_or(1 + actor.as_u64() % 2),
            ..self.hold_template
        });
        self.holds += 1;
    }

    fn wait(&mut self, p: usize, actor: ActorId, permits: u32, mode: Mode, timed: bool) {
        let seq = self.prims[p].waiters.len() as u64 + 1;
        // A task waiting for a parking_lot lock blocks its worker thread.
        let thread = actor.thread_seq().unwrap_or(1000 + actor.as_u64());
        self.prims[p].waiters.push(WaiterRec {
            seq,
            actor,
            thread,
            permits,
            mode,
            timed,
            ..self.wait_template.clone()
        });
        let a = actor.as_u64();
        self.waiting.insert(a);
        self.blocked_threads.insert(thread);
        // The waiter depends on every holder and every waiter queued before it.
        let before: Vec<u64> = self.prims[p]
            .holds
            .iter()
            .map(|h| h.actor.as_u64())
            .chain(self.depends[p].iter().copied())
            .collect();
        self.depended_on.extend(before);
        self.depends[p].push(a);
        self.waits += 1;
    }
}

/// The state: 10,000 tasks, 67 threads and 1,000 primitives, four deadlocks hidden in it.
pub fn scale_state() -> Scale {
    let mut rng = Rng(0x5ca1_ab1e);
    let (hold_template, wait_template) = templates();
    let mut b = Builder {
        prims: Vec::with_capacity(PRIMS),
        hold_template,
        wait_template,
        depends: Vec::new(),
        depended_on: BTreeSet::new(),
        waiting: BTreeSet::new(),
        blocked_threads: BTreeSet::new(),
        holds: 0,
        waits: 0,
    };
    let mut deadlocks = BTreeSet::new();

    // --- The hidden deadlocks, on primitives of their own, by actors that hold nothing else:
    // the last ten task ids, and threads 101...
    let t = |n: u64| task(TASKS - 10 + n);
    // 1. ABBA between two tasks on tokio mutexes, and a third task queued behind.
    let m1 = b.add("scale-abba-a".into(), PrimKind::Mutex, 1);
    let m2 = b.add("scale-abba-b".into(), PrimKind::Mutex, 1);
    b.hold(m1, t(1), 1, Mode::Exclusive, 0);
    b.hold(m2, t(2), 1, Mode::Exclusive, 0);
    b.wait(m2, t(1), 1, Mode::Exclusive, false);
    b.wait(m1, t(2), 1, Mode::Exclusive, false);
    b.wait(m1, t(3), 1, Mode::Exclusive, false);
    deadlocks.insert([t(1), t(2), t(3)].map(ActorId::as_u64).into());
    // 2. A semaphore knot: 3 permits, three tasks each holding one and waiting for another.
    let s = b.add("scale-knot".into(), PrimKind::Semaphore, 3);
    for n in 4..=6 {
        b.hold(s, t(n), 1, Mode::Permits, 0);
    }
    for n in 4..=6 {
        b.wait(s, t(n), 1, Mode::Permits, false);
    }
    deadlocks.insert([t(4), t(5), t(6)].map(ActorId::as_u64).into());
    // 3. A thread and a task: the thread holds a parking_lot mutex and waits (blocking_lock)
    //    for a tokio mutex the task holds; the task blocks its worker on the parking_lot one.
    let pl = b.add("scale-mixed-pl".into(), PrimKind::BlockingMutex, 1);
    let tm = b.add("scale-mixed-tokio".into(), PrimKind::Mutex, 1);
    b.hold(pl, thread(101), 1, Mode::Exclusive, 0);
    b.hold(tm, t(7), 1, Mode::Exclusive, 0);
    b.wait(tm, thread(101), 1, Mode::Exclusive, false);
    b.wait(pl, t(7), 1, Mode::Exclusive, false);
    deadlocks.insert([thread(101).as_u64(), t(7).as_u64()].into());
    // 4. parking_lot rwlock: a thread reads, a writer queues (and takes WRITER_BIT), the first
    //    thread reads again (not read_recursive): both stuck.
    let rw = b.add(
        "scale-reread".into(),
        PrimKind::BlockingRwLock,
        PL_MAX_READERS,
    );
    b.hold(rw, thread(102), 1, Mode::Shared, 0);
    b.wait(rw, thread(103), 1, Mode::Exclusive, false);
    b.wait(rw, thread(102), 1, Mode::Shared, false);
    deadlocks.insert([thread(102), thread(103)].map(ActorId::as_u64).into());
    // Decoy: a cycle through a semaphore with a free holder: t8 holds a permit and waits for
    // mx, t9 holds mx and waits for the semaphore, t10 holds the other permit and waits for
    // nothing. Not a deadlock.
    let s2 = b.add("scale-decoy-sem".into(), PrimKind::Semaphore, 2);
    let mx = b.add("scale-decoy-mutex".into(), PrimKind::Mutex, 1);
    b.hold(s2, t(8), 1, Mode::Permits, 0);
    b.hold(s2, t(10), 1, Mode::Permits, 0);
    b.hold(mx, t(9), 1, Mode::Exclusive, 0);
    b.wait(mx, t(8), 1, Mode::Exclusive, false);
    b.wait(s2, t(9), 1, Mode::Permits, false);
    let hidden = b.prims.len();

    // --- The busy service: the rest of the 1,000 primitives.
    while b.prims.len() < PRIMS {
        let i = b.prims.len();
        let (kind, cap) = match rng.below(20) {
            0..=7 => (PrimKind::Mutex, 1),
            8..=10 => (PrimKind::RwLock, MAX_READERS),
            11..=14 => (PrimKind::Semaphore, 5 + rng.below(46)),
            15..=17 => (PrimKind::BlockingMutex, 1),
            _ => (PrimKind::BlockingRwLock, PL_MAX_READERS),
        };
        b.add(format!("scale-{i}"), kind, cap);
    }
    let busy = hidden..PRIMS;
    let pick = |rng: &mut Rng| busy.start + rng.below((busy.end - busy.start) as u64) as usize;

    // Holds: every task one or two; threads hold parking_lot locks.
    for n in 1..=TASKS - 10 {
        let want = if rng.below(4) == 0 { 2 } else { 1 };
        let mut got = 0;
        for _ in 0..32 {
            if got == want {
                break;
            }
            let p = pick(&mut rng);
            let (permits, mode) = match b.kind(p) {
                PrimKind::Mutex | PrimKind::BlockingMutex | PrimKind::BlockingReentrantMutex => {
                    (1, Mode::Exclusive)
                }
                PrimKind::RwLock => {
                    if rng.below(10) == 0 {
                        (MAX_READERS as u32, Mode::Exclusive)
                    } else {
                        (1, Mode::Shared)
                    }
                }
                PrimKind::Semaphore => (1 + rng.below(2) as u32, Mode::Permits),
                PrimKind::BlockingRwLock => {
                    if rng.below(10) == 0 {
                        (1, Mode::Exclusive)
                    } else {
                        (1, Mode::Shared)
                    }
                }
                k => panic!("the scale model has no rule for {k:?}"),
            };
            if b.prims[p].holds.iter().any(|h| h.actor == task(n)) || !b.grantable(p, permits, mode)
            {
                continue;
            }
            // Some permits and guards are owned ones (`acquire_owned`, `lock_owned`).
            let flags = if b.kind(p).is_fifo() && rng.below(10) == 0 {
                FLAG_MOVABLE
            } else {
                0
            };
            b.hold(p, task(n), permits, mode, flags);
            got += 1;
        }
    }
    for n in 1..=64 {
        for _ in 0..4 {
            let p = pick(&mut rng);
            if b.kind(p).is_blocking() && b.grantable(p, 1, Mode::Shared) {
                let mode = if b.kind(p) == PrimKind::BlockingRwLock {
                    Mode::Shared
                } else {
                    Mode::Exclusive
                };
                b.hold(p, thread(n), 1, mode, 0);
                break;
            }
        }
    }

    // Waits: a few hundred actors queue for primitives they cannot have now. An actor starts
    // waiting only while nobody depends on it, so the waits form chains and trees, never a
    // cycle, and every chain ends at holders waiting for nothing.
    let target = b.waits + 300;
    let mut tries = 0;
    while b.waits < target && tries < 100_000 {
        tries += 1;
        let actor = if rng.below(10) == 0 {
            thread(1 + rng.below(64))
        } else {
            task(1 + rng.below(TASKS - 10))
        };
        let a = actor.as_u64();
        if b.waiting.contains(&a) || b.depended_on.contains(&a) {
            continue;
        }
        let p = pick(&mut rng);
        let kind = b.kind(p);
        if kind.is_blocking()
            && b.blocked_threads
                .contains(&actor.thread_seq().unwrap_or(1000 + a))
        {
            continue;
        }
        if b.prims[p].holds.iter().any(|h| h.actor == actor) {
            continue;
        }
        let (permits, mode) = match kind {
            PrimKind::Mutex | PrimKind::BlockingMutex | PrimKind::BlockingReentrantMutex => {
                (1, Mode::Exclusive)
            }
            PrimKind::RwLock => {
                if b.prims[p].holds.iter().any(|h| h.mode == Mode::Exclusive) {
                    (1, Mode::Shared)
                } else {
                    (MAX_READERS as u32, Mode::Exclusive)
                }
            }
            PrimKind::Semaphore => {
                let free = b.prims[p].capacity - b.held(p);
                (free.min(b.prims[p].capacity - 1) as u32 + 1, Mode::Permits)
            }
            PrimKind::BlockingRwLock => {
                if b.prims[p].holds.iter().any(|h| h.mode == Mode::Exclusive)
                    || b.prims[p].waiters.iter().any(|w| w.mode == Mode::Exclusive)
                {
                    (1, Mode::Shared)
                } else {
                    (1, Mode::Exclusive)
                }
            }
            k => panic!("the scale model has no rule for {k:?}"),
        };
        if b.prims[p].holds.is_empty() || b.grantable(p, permits, mode) {
            continue;
        }
        b.wait(p, actor, permits, mode, rng.below(20) == 0);
    }
    assert_eq!(b.waits, target, "could not place the waits");

    // The primitives' own parts (capacity, progress, ...) as the detector reads them, with the
    // holds and waits built here.
    let mut live: HashMap<u64, PrimState> = State::capture()
        .prims
        .into_iter()
        .map(|s| (s.prim.id().0, s))
        .collect();
    let prims = b
        .prims
        .into_iter()
        .map(|slot| {
            // UNWRAP: registered above and never dropped.
            let mut s = live.remove(&slot.prim.id().0).expect("a live primitive");
            assert_eq!(s.capacity, slot.capacity);
            s.holds = slot.holds;
            s.waiters = slot.waiters;
            s
        })
        .collect();
    Scale {
        holds: b.holds,
        waits: b.waits,
        state: State::from_parts(prims),
        deadlocks,
    }
}

/// A hold and a wait recorded through the hooks on a primitive of its own, as templates.
fn templates() -> (HoldView, WaiterRec) {
    let site = Location::caller();
    let cell = PrimCell::new(Some("scale-template".into()), PrimKind::Mutex, site, 1);
    let p = cell.get();
    let books = || {
        State::capture()
            .prims
            .into_iter()
            .find(|s| s.prim.id() == p.id())
            .map(|s| (s.holds, s.waiters))
            .unwrap_or_default()
    };
    let h = hooks::acquired::<hooks::Threads>(p, Acq::new(site, 1, Mode::Exclusive));
    let hold = books().0.first().copied();
    hooks::released(p, h);
    let w = hooks::wait_begin(p, Acq::new(site, 1, Mode::Exclusive), false);
    let wait = books().1.first().cloned();
    hooks::wait_cancelled(p, w);
    // UNWRAP: the hooks record holds and waits whenever the detector is on (the default).
    (
        hold.expect("the hold in the books"),
        wait.expect("the wait in the books"),
    )
}

#[test]
fn analysis_finds_exactly_the_hidden_deadlocks() {
    use lockscope_detector::__private::rules::deadlock::{blocked_groups, model};
    use std::time::Duration;

    /// The CPU time this thread has used (Linux's `CLOCK_THREAD_CPUTIME_ID`).
    fn thread_cpu_time() -> std::time::Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid clock id and a valid pointer to a timespec.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
        std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    let scale = scale_state();
    let actors: BTreeSet<u64> = scale
        .state
        .prims
        .iter()
        .flat_map(|p| p.holds.iter().map(|h| h.actor.as_u64()))
        .collect();
    assert_eq!(scale.state.prims.len(), PRIMS);
    let tasks = actors.iter().filter(|&&a| a < 1 << 63).count();
    assert!(tasks > 9_900, "{tasks} tasks hold something");
    assert!(scale.waits >= 300);
    // Chains, not just single waits: some waiter waits for a primitive a waiter holds.
    let waiters: BTreeSet<u64> = scale
        .state
        .prims
        .iter()
        .flat_map(|p| p.waiters.iter().map(|w| w.actor.as_u64()))
        .collect();
    let chained = scale.state.prims.iter().any(|p| {
        !p.waiters.is_empty() && p.holds.iter().any(|h| waiters.contains(&h.actor.as_u64()))
    });
    assert!(chained);

    // Warm up once, then time the best of three (the bound is 10x the 50 ms budget) in this
    // thread's CPU time: the bound is there to catch an analysis that grew superlinear, and
    // wall time also counts the time other processes on a loaded machine take the core.
    let _ = blocked_groups(&scale.state);
    let mut best = Duration::MAX;
    let mut groups = Vec::new();
    for _ in 0..3 {
        let start = thread_cpu_time();
        groups = blocked_groups(&scale.state);
        best = best.min(thread_cpu_time().saturating_sub(start));
    }
    let found: BTreeSet<BTreeSet<u64>> = groups.iter().map(|g| g.actors.clone()).collect();
    assert_eq!(found, scale.deadlocks);
    let bound = Duration::from_millis(500);
    println!(
        "{} holds, {} waits, {} model primitives: blocked_groups in {best:?}",
        scale.holds,
        scale.waits,
        model(&scale.state).len()
    );
    assert!(best < bound, "analysis took {best:?}, bound {bound:?}");
}
