//! Let the detector see your tokio runtime: its threads, its workers, and (with
//! `--cfg tokio_unstable`) its tasks.
//!
//! Locks alone do not decide who can make progress. A task holding a blocking guard across an
//! `.await` needs a thread to run again; a blocking wait takes a thread away. When the thread
//! a holder needs is blocked behind that very holder (the only thread of a `current_thread`
//! runtime, every worker of a multi-thread one), nothing can ever move: a `deadlock` that no
//! cycle of locks shows. `#[lockscope::test]` does this for the runtime it builds; call
//! [`instrument`] on the builder of a runtime you build yourself.
//!
//! | | without `tokio_unstable` | with `--cfg tokio_unstable` |
//! |---|---|---|
//! | threads and workers in the deadlock model | yes | yes |
//! | a blocking guard held across `.await` | when another task runs on that thread, or the guard is released on another thread | also at once, when the holding task's poll ends |
//! | a permit or guard outliving its task | at the leak threshold (production) or the end of the test | also as soon as the task has ended (tests) or past the leak threshold |
//!
//! ```
//! let mut builder = tokio::runtime::Builder::new_multi_thread();
//! builder.worker_threads(2).enable_all();
//! lockscope::runtime::instrument(&mut builder);
//! let rt = builder.build().unwrap();
//! rt.block_on(async {
//!     let m = lockscope::parking_lot::Mutex::new(0);
//!     *m.lock() += 1;
//! });
//! ```

use lockscope_detector::executor::{self, RuntimeKey};

/// Instruments a runtime builder: installs `on_thread_start` and `on_thread_stop` hooks that
/// tell the detector which threads serve the runtime (and, with `--cfg tokio_unstable`, task
/// hooks: see the [module docs](self)). Returns the builder for chaining.
///
/// tokio keeps one hook of each kind: this replaces thread-start and thread-stop hooks set
/// before it, and hooks set after it replace these. To keep your own, call
/// [`thread_started`] and [`thread_stopped`] from them instead.
pub fn instrument(builder: &mut tokio::runtime::Builder) -> &mut tokio::runtime::Builder {
    let key = RuntimeKey::new();
    builder
        .on_thread_start(move || executor::thread_started(key))
        .on_thread_stop(executor::thread_stopped);
    task_hooks(builder);
    builder
}

/// What [`instrument`]'s thread-start hook does, for a runtime whose `on_thread_start` is
/// your own: call it there with one key per runtime.
///
/// ```
/// use lockscope::detector::executor::RuntimeKey;
///
/// let key = RuntimeKey::new();
/// let rt = tokio::runtime::Builder::new_multi_thread()
///     .on_thread_start(move || {
///         lockscope::runtime::thread_started(key);
///         // ... your own start-up ...
///     })
///     .on_thread_stop(lockscope::runtime::thread_stopped)
///     .build()
///     .unwrap();
/// # drop(rt);
/// ```
pub fn thread_started(key: RuntimeKey) {
    executor::thread_started(key);
}

/// What [`instrument`]'s thread-stop hook does (see [`thread_started`]).
pub fn thread_stopped() {
    executor::thread_stopped();
}

/// Installs the task hooks of `--cfg tokio_unstable` builds (nothing otherwise).
#[cfg(not(tokio_unstable))]
pub(crate) fn task_hooks(_builder: &mut tokio::runtime::Builder) {}

/// Installs the task hooks of `--cfg tokio_unstable` builds.
#[cfg(tokio_unstable)]
pub(crate) fn task_hooks(builder: &mut tokio::runtime::Builder) {
    use lockscope_detector::__private::hooks;
    builder
        .on_after_task_poll(|meta| hooks::task_poll_ended(meta.id()))
        .on_task_terminate(|meta| hooks::task_ended(meta.id()));
}

/// Keeps a runtime's handle where deadlock reports can take its tasks' await traces (see
/// [`traced`]); forgets it when dropped.
pub(crate) struct Traced {
    #[cfg(all(tokio_unstable, feature = "taskdump", target_os = "linux"))]
    id: u64,
}

/// Lets deadlock reports carry the await traces of `handle`'s tasks while the returned guard
/// lives (builds with `--cfg tokio_unstable` and the `taskdump` feature on Linux; a no-op
/// otherwise). `#[lockscope::test]` does this for the runtime it builds.
#[cfg(not(all(tokio_unstable, feature = "taskdump", target_os = "linux")))]
pub(crate) fn traced(_handle: &tokio::runtime::Handle) -> Traced {
    Traced {}
}

#[cfg(all(tokio_unstable, feature = "taskdump", target_os = "linux"))]
pub(crate) use dumps::traced;

/// Await traces through tokio's task dump.
#[cfg(all(tokio_unstable, feature = "taskdump", target_os = "linux"))]
mod dumps {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Mutex, PoisonError};
    use std::time::{Duration, Instant};

    use lockscope_detector::__private::hooks;
    use tokio::runtime::Handle;

    use super::Traced;

    /// The runtimes whose tasks may be traced, each with the number its guard forgets it by.
    static RUNTIMES: Mutex<Vec<(u64, Handle)>> = Mutex::new(Vec::new());
    static NEXT: AtomicU64 = AtomicU64::new(1);

    pub(crate) fn traced(handle: &Handle) -> Traced {
        hooks::set_task_tracer(trace);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        runtimes().push((id, handle.clone()));
        Traced { id }
    }

    impl Drop for Traced {
        fn drop(&mut self) {
            runtimes().retain(|(id, _)| *id != self.id);
        }
    }

    fn runtimes() -> std::sync::MutexGuard<'static, Vec<(u64, Handle)>> {
        RUNTIMES.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `trace` (tokio's tree, one frame a line, `╼` after the indent) without the frames in
    /// lockscope's own source and those under them (tokio's internals that lockscope's
    /// wrapper awaits): the user's frames end at the line that awaits a lockscope primitive,
    /// which the report already names. Frames under anything else (a raw tokio channel) stay.
    pub(super) fn users_frames(trace: &str) -> String {
        let ours = concat!(" at ", env!("CARGO_MANIFEST_DIR"), "/src/");
        let mut cut: Option<usize> = None;
        let mut out = String::new();
        for line in trace.lines() {
            let depth = line.chars().take_while(|c| *c != '╼').count();
            if cut.is_some_and(|d| depth > d) {
                continue;
            }
            cut = None;
            if line.contains(ours) {
                cut = Some(depth);
                continue;
            }
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    /// The detector's [`hooks::Tracer`]: dumps each known runtime from a task spawned on it
    /// (a current-thread runtime can only be dumped from inside; its thread is free, parked
    /// in `block_on`, when its tasks are deadlocked), and gives up on one that does not answer
    /// within the budget (a worker blocked for good never joins the dump).
    fn trace(tasks: &[u64], budget: Duration) -> Vec<(u64, String)> {
        let deadline = Instant::now() + budget;
        let handles: Vec<Handle> = runtimes().iter().map(|(_, h)| h.clone()).collect();
        let mut out = Vec::new();
        for handle in handles {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || out.len() == tasks.len() {
                break;
            }
            let (tx, rx) = std::sync::mpsc::channel();
            let wanted = tasks.to_vec();
            let job = handle.spawn(async move {
                let dump = Handle::current().dump().await;
                let found: Vec<(u64, String)> = dump
                    .tasks()
                    .iter()
                    .filter_map(|t| {
                        let actor = hooks::task_actor(t.id()).as_u64();
                        wanted
                            .contains(&actor)
                            .then(|| (actor, users_frames(&t.trace().to_string())))
                    })
                    .collect();
                let _ = tx.send(found);
            });
            match rx.recv_timeout(left) {
                Ok(found) => out.extend(found),
                Err(_) => job.abort(),
            }
        }
        out
    }
}
