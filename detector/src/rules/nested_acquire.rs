//! `nested-acquire`: a task or thread acquires, or waits for, a primitive it already holds.
//!
//! Checked at acquire time, before any wait, against the holder word of exclusive primitives
//! and the current thread's hold table. On a tokio or parking_lot mutex, and for a write
//! inside a read, it is a certain self-deadlock; on a semaphore a latent one (N holders each
//! waiting for one more permit), and on tokio's write-preferring RwLock a read inside a read
//! deadlocks as soon as a writer queues between them. Reported even when the acquisition
//! succeeds. Owned guards are not counted (they may have moved to another task), nor
//! `ReentrantMutex` re-entries.

use crate::actor::{self, ActorId};
use crate::finding::{ActorReport, Finding, FindingKind};
use crate::held::{HoldView, Mode};
use crate::hooks::Acq;
use crate::prim::{Prim, PrimKind, site_string};
use crate::rules::{access, noun, prim_ref};
use crate::{clock, finding};

fn build(
    prim: &Prim,
    actor: ActorId,
    acq: &Acq,
    held: Option<&HoldView>,
    waiting: bool,
) -> Finding {
    let p = prim_ref(prim);
    // Certain when the two accesses exclude each other outright (or a semaphore has too few
    // permits for both); latent when they only collide once others hold or queue.
    let held_mode = held.map(|h| h.mode);
    let certain = match prim.kind() {
        PrimKind::Semaphore => {
            held.map_or(0, |h| u64::from(h.permits)) + u64::from(acq.permits()) > prim.capacity()
        }
        _ => {
            acq.mode().is_exclusive()
                || held_mode.is_none_or(Mode::is_exclusive)
                || (held_mode == Some(Mode::Upgradable) && acq.mode() == Mode::Upgradable)
        }
    };
    let what = if certain {
        "a certain self-deadlock: it waits for itself to release it"
    } else if prim.kind() == PrimKind::Semaphore {
        "a latent deadlock: once every permit is held by a task waiting for one more, none is ever released"
    } else {
        "a latent deadlock: a writer queued between the two reads blocks the second read, and the writer waits for the first"
    };
    let mut f = Finding::new(
        FindingKind::NestedAcquire,
        // One finding per bug, not per instance: name, creation site and both call sites.
        format!(
            "{}|{}|{}|{}",
            prim.name(),
            site_string(prim.site()),
            held.map(|h| site_string(h.site)).unwrap_or_default(),
            site_string(acq.site())
        ),
        format!(
            "{} {} {} it already holds, at {}: {}",
            actor.describe(),
            if waiting { "waits for" } else { "acquires" },
            noun(&p),
            site_string(acq.site()),
            what
        ),
    );
    let now = clock::coarse_now();
    let holds = held
        .map(|h| {
            vec![access(
                p.clone(),
                h.mode,
                h.permits,
                h.site,
                now.saturating_sub(h.since),
            )]
        })
        .unwrap_or_default();
    f.actors.push(ActorReport {
        id: actor.as_u64(),
        name: actor.describe(),
        holds,
        waits: vec![access(p.clone(), acq.mode(), acq.permits(), acq.site(), 0)],
    });
    f.add_prim(p);
    f.add_scope(prim.scope());
    f.add_scope(actor::current_scope());
    if let Some(h) = held {
        f.add_scope(h.scope);
    }
    f.fix = match prim.kind() {
        PrimKind::Semaphore => "acquire all the permits the task needs in one `acquire_many`, or release the first permit before asking for another".into(),
        PrimKind::RwLock | PrimKind::BlockingRwLock => "pass the guard you already hold down to the code that needs it instead of locking again (or use read_recursive for parking_lot)".into(),
        _ => "pass the guard you already hold down to the code that needs it instead of locking again".into(),
    };
    f
}

/// `actor` holds `prim` (`held`) and acquires it again.
#[cold]
pub(crate) fn report_shared(
    prim: &Prim,
    actor: ActorId,
    acq: &Acq,
    held: &HoldView,
    waiting: bool,
) {
    finding::report(build(prim, actor, acq, Some(held), waiting));
}
