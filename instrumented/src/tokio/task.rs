//! Drop-in replacements for `tokio::spawn` and `tokio::task::{spawn, spawn_blocking,
//! spawn_local, JoinHandle, JoinSet}`: awaiting a handle is a wait the detector sees.
//!
//! Swap `use tokio::task;` for `use lockscope::tokio::task;` (and `tokio::spawn` for
//! `lockscope::tokio::spawn`) and nothing else changes: the same functions, the same
//! [`JoinError`] and [`AbortHandle`] (tokio's own, re-exported), the same `Send`/`Sync`, the
//! same cancellation (dropping a [`JoinHandle`] detaches its task; [`JoinHandle::abort`]
//! cancels it). Each spawned task is tokio's own; lockscope only keeps, beside the handle, the
//! spawn site.
//!
//! What you gain: a task that awaits a [`JoinHandle`] (or a [`JoinSet`]'s `join_next`)
//! before the task has ended waits for exactly that task (any task of the set), and the
//! detector sees it. A task that holds a lock and awaits a task that needs the same lock is
//! a `deadlock`, reported within the usual second, naming the join (`join of task 7
//! (spawned at src/main.rs:10:17)`), the lock and both tasks:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use std::sync::Arc;
//! use lockscope::tokio::{Mutex, task};
//!
//! let state = Arc::new(Mutex::named("state", 0));
//! let guard = state.lock().await;
//! let s = state.clone();
//! let worker = task::spawn(async move { *s.lock().await += 1 });
//! drop(guard); // awaiting `worker` while holding `guard` would be a deadlock
//! worker.await.unwrap();
//! assert_eq!(*state.lock().await, 1);
//! # }
//! ```
//!
//! # What the books cannot see
//!
//! - An `.await` gives a future no caller location, so a report names a join by the spawn
//!   site of its task; the joining task's holds still carry their own sites.
//! - A handle polled by reference inside a `select!` whose other branch won keeps its wait
//!   until it is polled again or dropped. The detector counts such a wait as one its task may
//!   leave once that task takes a lock or waits for anything else after it.
//! - `block_in_place` (tokio's `rt-multi-thread` feature) and `task::Builder`
//!   (`tokio_unstable`) are not re-exported; use tokio's.

use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use lockscope_detector::__private::hooks::{self, JoinTarget, JoinWait};

pub use super::join_set::JoinSet;
/// tokio's own task items, passed through unchanged.
pub use tokio::task::{
    AbortHandle, Id, JoinError, LocalEnterGuard, LocalKey, LocalSet, coop, futures, id, try_id,
    yield_now,
};

/// An owned permission to join on a task (await its termination): wrapper for
/// [`tokio::task::JoinHandle`].
///
/// Awaiting it before the task has ended is a wait the detector sees: a wait for exactly that
/// task. Dropping it detaches the task, as tokio's does (no wait is left in the books).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let handle = lockscope::tokio::spawn(async { 7 });
/// assert_eq!(handle.await.unwrap(), 7);
/// # }
/// ```
pub struct JoinHandle<T> {
    inner: tokio::task::JoinHandle<T>,
    spawned_at: &'static Location<'static>,
    /// `abort` was called through this handle: the task ends at its next `.await`, so a join
    /// after it is no wait worth recording (a deadlock claim through it would be false).
    aborted: AtomicBool,
    /// The join in the books while this handle is awaited and its task runs on.
    wait: JoinWait,
}

impl<T> JoinHandle<T> {
    #[inline]
    pub(crate) fn new(
        inner: tokio::task::JoinHandle<T>,
        spawned_at: &'static Location<'static>,
    ) -> Self {
        JoinHandle {
            inner,
            spawned_at,
            aborted: AtomicBool::new(false),
            wait: JoinWait::none(),
        }
    }

    /// Wrapper for [`tokio::task::JoinHandle::abort`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let h = lockscope::tokio::spawn(std::future::pending::<()>());
    /// h.abort();
    /// assert!(h.await.unwrap_err().is_cancelled());
    /// # }
    /// ```
    pub fn abort(&self) {
        self.aborted.store(true, Ordering::Relaxed);
        // A wait left by an earlier poll (say, a `timeout(d, &mut handle)` that expired) ends
        // here: the task ends at its next `.await`.
        self.wait.end();
        self.inner.abort();
    }

    /// Wrapper for [`tokio::task::JoinHandle::is_finished`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let h = lockscope::tokio::spawn(async {});
    /// while !h.is_finished() {
    ///     tokio::task::yield_now().await;
    /// }
    /// # }
    /// ```
    #[inline]
    pub fn is_finished(&self) -> bool {
        self.inner.is_finished()
    }

    /// Wrapper for [`tokio::task::JoinHandle::abort_handle`] (tokio's [`AbortHandle`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let h = lockscope::tokio::spawn(std::future::pending::<()>());
    /// let a = h.abort_handle();
    /// assert_eq!(a.id(), h.id());
    /// a.abort();
    /// assert!(h.await.unwrap_err().is_cancelled());
    /// # }
    /// ```
    #[inline]
    pub fn abort_handle(&self) -> AbortHandle {
        self.inner.abort_handle()
    }

    /// Wrapper for [`tokio::task::JoinHandle::id`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let h = lockscope::tokio::spawn(async { tokio::task::id() });
    /// let id = h.id();
    /// assert_eq!(h.await.unwrap(), id);
    /// # }
    /// ```
    #[inline]
    pub fn id(&self) -> Id {
        self.inner.id()
    }

    /// Where the task was spawned (lockscope's; reports name the join after it).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let h = lockscope::tokio::spawn(async {});
    /// assert_eq!(h.spawned_at().file(), file!());
    /// # }
    /// ```
    pub fn spawned_at(&self) -> &'static Location<'static> {
        self.spawned_at
    }

    /// tokio's handle inside (lockscope's): for an API that wants `tokio::task::JoinHandle`.
    /// Awaiting it is no longer a wait the detector sees.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let h: tokio::task::JoinHandle<u8> = lockscope::tokio::spawn(async { 1 }).into_inner();
    /// assert_eq!(h.await.unwrap(), 1);
    /// # }
    /// ```
    pub fn into_inner(self) -> tokio::task::JoinHandle<T> {
        self.inner
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    // Always: see `chan_wait::Waiting`'s poll.
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let out = Pin::new(&mut this.inner).poll(cx);
        if out.is_ready() {
            // Ends the join in the books (if one was recorded).
            this.wait.end();
        } else if !this.wait.is_recorded() && !this.aborted.load(Ordering::Relaxed) {
            this.wait = join_task(this.inner.id(), this.spawned_at);
        }
        out
    }
}

/// The join of task `id`, spawned at `site`, begins (cold: only a join that waits gets here).
#[cold]
#[inline(never)]
pub(crate) fn join_task(id: Id, site: &'static Location<'static>) -> JoinWait {
    if !hooks::enabled() {
        return JoinWait::none();
    }
    hooks::join_begin(JoinTarget::Task(hooks::task_actor(id)), site, site, false)
}

impl<T: std::fmt::Debug> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

/// Wrapper for [`tokio::task::spawn`]: the task is tokio's; its handle is lockscope's.
///
/// # Panics
///
/// As tokio's: outside a tokio runtime.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let h = lockscope::tokio::task::spawn(async { "done" });
/// assert_eq!(h.await.unwrap(), "done");
/// # }
/// ```
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    JoinHandle::new(tokio::task::spawn(future), Location::caller())
}

/// Wrapper for [`tokio::task::spawn_blocking`]. The closure runs on a blocking thread as the
/// blocking task tokio gives it, the actor its locks are attributed to and its join waits for.
///
/// # Panics
///
/// As tokio's: outside a tokio runtime.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let h = lockscope::tokio::task::spawn_blocking(|| 2 + 2);
/// assert_eq!(h.await.unwrap(), 4);
/// # }
/// ```
#[track_caller]
pub fn spawn_blocking<F, R>(f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    JoinHandle::new(tokio::task::spawn_blocking(f), Location::caller())
}

/// Wrapper for [`tokio::task::spawn_local`].
///
/// # Panics
///
/// As tokio's: outside a [`LocalSet`] (or a local runtime).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let local = lockscope::tokio::task::LocalSet::new();
/// let out = local
///     .run_until(async {
///         let rc = std::rc::Rc::new(3);
///         lockscope::tokio::task::spawn_local(async move { *rc }).await.unwrap()
///     })
///     .await;
/// assert_eq!(out, 3);
/// # }
/// ```
#[track_caller]
pub fn spawn_local<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    JoinHandle::new(tokio::task::spawn_local(future), Location::caller())
}
