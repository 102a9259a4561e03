//! Await traces in deadlock reports: where each task of a deadlock among tasks is suspended.
//!
//! The detector cannot take a trace itself: only the runtime can, by polling its tasks in a
//! tracing mode (tokio's `Handle::dump`, under `--cfg tokio_unstable` with its `taskdump`
//! feature, on Linux). lockscope's wrapper crate registers a [`Tracer`] that does so for the
//! runtimes it knows (those `#[lockscope::test]` builds); the watchdog calls it once per new
//! deadlock, on its own thread, with a time budget, so that a runtime that cannot answer (its
//! workers blocked) costs the report its traces, never its delivery.

use std::sync::OnceLock;
use std::time::Duration;

use crate::model::finding::{AwaitTrace, Finding};
use crate::state::actor::ActorId;

/// Takes the await traces of `tasks` (raw actor ids, see `ActorId::as_u64`), giving up after
/// `budget`: returns `(actor, trace)` for those it could trace.
pub type Tracer = fn(tasks: &[u64], budget: Duration) -> Vec<(u64, String)>;

static TRACER: OnceLock<Tracer> = OnceLock::new();

/// How long a report waits for its traces. A dump pauses the runtime's workers, polls every
/// task once and resolves the symbols of each trace (the first time, reading the binary's
/// debug info: the slow part, see docs/performance.md); a runtime that cannot pause at all
/// would make the report wait for nothing, so the budget stays well under the test's second.
const BUDGET: Duration = Duration::from_millis(750);

/// Installs the tracer (the first one stays: there is one wrapper crate per program).
pub fn set_task_tracer(tracer: Tracer) {
    let _ = TRACER.set(tracer);
}

/// Adds the await traces of the tasks of `f`'s knot, where a tracer is installed and `f` is
/// a deadlock among tasks (see `Finding::traceable`).
pub(crate) fn attach(f: &mut Finding) {
    let Some(tracer) = TRACER.get() else {
        return;
    };
    if !f.traceable {
        return;
    }
    let tasks: Vec<u64> = f
        .actors
        .iter()
        .map(|a| a.id)
        .filter(|&id| ActorId::from_u64(id).is_some_and(ActorId::is_task))
        .collect();
    if tasks.is_empty() {
        return;
    }
    let traces = tracer(&tasks, BUDGET);
    for a in &f.actors {
        if let Some((_, trace)) = traces.iter().find(|(id, _)| *id == a.id) {
            f.traces.push(AwaitTrace {
                actor: a.name.clone(),
                trace: trace.clone(),
            });
        }
    }
}
