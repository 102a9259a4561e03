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
    use lockscope_detector::hooks;
    builder
        .on_after_task_poll(|meta| hooks::task_poll_ended(meta.id()))
        .on_task_terminate(|meta| hooks::task_ended(meta.id()));
}
