//! `JoinSet`: tokio's, with the set's tasks known to the detector, so that waiting for the
//! next one to end is a wait for any one of them.

use std::future::Future;
use std::panic::Location;
use std::sync::Arc;
use std::task::{Context, Poll};

use lockscope_detector::__private::hooks::{self, JoinTarget, JoinWait, SetMembers};
use tokio::runtime::Handle;
use tokio::task::{AbortHandle, Id, JoinError, LocalSet};

/// A collection of tasks spawned on a tokio runtime: wrapper for [`tokio::task::JoinSet`].
///
/// The tasks are tokio's, in tokio's set; lockscope keeps their ids and spawn sites beside
/// it. Waiting in [`join_next`](JoinSet::join_next) (or `join_next_with_id`, `shutdown`,
/// `join_all`) while every task of the set still runs is a wait for any one of them: when
/// each of them waits, directly or not, for something the waiter holds, that is a
/// `deadlock`. The `poll_*` methods record no wait (nothing tells when their caller stops
/// polling).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use lockscope::tokio::task::JoinSet;
///
/// let mut set = JoinSet::new();
/// for i in 0..3 {
///     set.spawn(async move { i });
/// }
/// let mut sum = 0;
/// while let Some(r) = set.join_next().await {
///     sum += r.unwrap();
/// }
/// assert_eq!(sum, 3);
/// # }
/// ```
pub struct JoinSet<T> {
    inner: tokio::task::JoinSet<T>,
    /// The set's tasks, by actor, with their spawn sites (read by the analysis).
    members: Arc<SetMembers>,
    /// Where the set was created: the site a wait on it is reported at (an `.await` gives a
    /// future no caller location).
    created_at: &'static Location<'static>,
}

impl<T> JoinSet<T> {
    /// Wrapper for [`tokio::task::JoinSet::new`].
    ///
    /// ```
    /// let set = lockscope::tokio::task::JoinSet::<()>::new();
    /// assert!(set.is_empty());
    /// ```
    #[track_caller]
    pub fn new() -> Self {
        JoinSet {
            inner: tokio::task::JoinSet::new(),
            members: Arc::default(),
            created_at: Location::caller(),
        }
    }

    /// Wrapper for [`tokio::task::JoinSet::len`].
    ///
    /// ```
    /// assert_eq!(lockscope::tokio::task::JoinSet::<()>::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Wrapper for [`tokio::task::JoinSet::is_empty`].
    ///
    /// ```
    /// assert!(lockscope::tokio::task::JoinSet::<()>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }
}

impl<T: 'static> JoinSet<T> {
    fn added(&self, a: AbortHandle, site: &'static Location<'static>) -> AbortHandle {
        self.members.add(hooks::task_actor(a.id()), site);
        a
    }

    fn left(&self, id: Id) {
        self.members.remove(hooks::task_actor(id));
    }

    /// Wrapper for [`tokio::task::JoinSet::spawn`].
    ///
    /// # Panics
    ///
    /// As tokio's: outside a tokio runtime.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut set = lockscope::tokio::task::JoinSet::new();
    /// set.spawn(async { 1 });
    /// assert_eq!(set.join_next().await.unwrap().unwrap(), 1);
    /// # }
    /// ```
    #[track_caller]
    pub fn spawn<F>(&mut self, task: F) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
        T: Send,
    {
        let a = self.inner.spawn(task);
        self.added(a, Location::caller())
    }

    /// Wrapper for [`tokio::task::JoinSet::spawn_on`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut set = lockscope::tokio::task::JoinSet::new();
    /// set.spawn_on(async { 1 }, &tokio::runtime::Handle::current());
    /// assert_eq!(set.join_next().await.unwrap().unwrap(), 1);
    /// # }
    /// ```
    #[track_caller]
    pub fn spawn_on<F>(&mut self, task: F, handle: &Handle) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
        T: Send,
    {
        let a = self.inner.spawn_on(task, handle);
        self.added(a, Location::caller())
    }

    /// Wrapper for [`tokio::task::JoinSet::spawn_local`].
    ///
    /// # Panics
    ///
    /// As tokio's: outside a [`LocalSet`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let local = tokio::task::LocalSet::new();
    /// local.run_until(async {
    ///     let mut set = lockscope::tokio::task::JoinSet::new();
    ///     let rc = std::rc::Rc::new(1);
    ///     set.spawn_local(async move { *rc });
    ///     assert_eq!(set.join_next().await.unwrap().unwrap(), 1);
    /// }).await;
    /// # }
    /// ```
    #[track_caller]
    pub fn spawn_local<F>(&mut self, task: F) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        let a = self.inner.spawn_local(task);
        self.added(a, Location::caller())
    }

    /// Wrapper for [`tokio::task::JoinSet::spawn_local_on`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let local = tokio::task::LocalSet::new();
    /// let mut set = lockscope::tokio::task::JoinSet::new();
    /// set.spawn_local_on(async { 1 }, &local);
    /// local.run_until(async {
    ///     assert_eq!(set.join_next().await.unwrap().unwrap(), 1);
    /// }).await;
    /// # }
    /// ```
    #[track_caller]
    pub fn spawn_local_on<F>(&mut self, task: F, local_set: &LocalSet) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        let a = self.inner.spawn_local_on(task, local_set);
        self.added(a, Location::caller())
    }

    /// Wrapper for [`tokio::task::JoinSet::spawn_blocking`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut set = lockscope::tokio::task::JoinSet::new();
    /// set.spawn_blocking(|| 1);
    /// assert_eq!(set.join_next().await.unwrap().unwrap(), 1);
    /// # }
    /// ```
    #[track_caller]
    pub fn spawn_blocking<F>(&mut self, f: F) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send,
    {
        let a = self.inner.spawn_blocking(f);
        self.added(a, Location::caller())
    }

    /// Wrapper for [`tokio::task::JoinSet::spawn_blocking_on`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut set = lockscope::tokio::task::JoinSet::new();
    /// set.spawn_blocking_on(|| 1, &tokio::runtime::Handle::current());
    /// assert_eq!(set.join_next().await.unwrap().unwrap(), 1);
    /// # }
    /// ```
    #[track_caller]
    pub fn spawn_blocking_on<F>(&mut self, f: F, handle: &Handle) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send,
    {
        let a = self.inner.spawn_blocking_on(f, handle);
        self.added(a, Location::caller())
    }

    /// One poll of the set for [`join_next_with_id`](JoinSet::join_next_with_id), with the
    /// wait it keeps in the books while every task still runs (`wait`, owned by the future:
    /// dropping the future ends the wait).
    fn poll_recorded(
        &mut self,
        cx: &mut Context<'_>,
        wait: &mut JoinWait,
    ) -> Poll<Option<Result<(Id, T), JoinError>>> {
        let out = self.poll_join_next_with_id(cx);
        if out.is_ready() {
            wait.end();
        } else if !wait.is_recorded() && hooks::enabled() {
            *wait = self.join_any();
        }
        out
    }

    #[cold]
    #[inline(never)]
    fn join_any(&self) -> JoinWait {
        let site = self.created_at;
        hooks::join_begin(JoinTarget::AnyOf(self.members.clone()), site, site, false)
    }

    /// Wrapper for [`tokio::task::JoinSet::join_next`]: a wait for any task of the set.
    ///
    /// # Cancel safety
    ///
    /// As tokio's: cancel safe. Dropping the future also ends its wait in the books.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut set = lockscope::tokio::task::JoinSet::<()>::new();
    /// assert!(set.join_next().await.is_none());
    /// # }
    /// ```
    pub async fn join_next(&mut self) -> Option<Result<T, JoinError>> {
        self.join_next_with_id().await.map(|r| r.map(|(_, t)| t))
    }

    /// Wrapper for [`tokio::task::JoinSet::join_next_with_id`].
    ///
    /// # Cancel safety
    ///
    /// As tokio's: cancel safe.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut set = lockscope::tokio::task::JoinSet::new();
    /// let id = set.spawn(async { 1 }).id();
    /// let (got, v) = set.join_next_with_id().await.unwrap().unwrap();
    /// assert_eq!((got, v), (id, 1));
    /// # }
    /// ```
    pub async fn join_next_with_id(&mut self) -> Option<Result<(Id, T), JoinError>> {
        let mut wait = JoinWait::none();
        std::future::poll_fn(|cx| self.poll_recorded(cx, &mut wait)).await
    }

    /// Wrapper for [`tokio::task::JoinSet::try_join_next`].
    ///
    /// ```
    /// let mut set = lockscope::tokio::task::JoinSet::<()>::new();
    /// assert!(set.try_join_next().is_none());
    /// ```
    pub fn try_join_next(&mut self) -> Option<Result<T, JoinError>> {
        self.try_join_next_with_id().map(|r| r.map(|(_, t)| t))
    }

    /// Wrapper for [`tokio::task::JoinSet::try_join_next_with_id`].
    ///
    /// ```
    /// let mut set = lockscope::tokio::task::JoinSet::<()>::new();
    /// assert!(set.try_join_next_with_id().is_none());
    /// ```
    pub fn try_join_next_with_id(&mut self) -> Option<Result<(Id, T), JoinError>> {
        let out = self.inner.try_join_next_with_id();
        self.note(&out);
        out
    }

    fn note(&self, out: &Option<Result<(Id, T), JoinError>>) {
        match out {
            Some(Ok((id, _))) => self.left(*id),
            Some(Err(e)) => self.left(e.id()),
            None => {}
        }
    }

    /// Wrapper for [`tokio::task::JoinSet::shutdown`]: aborts every task and waits for them.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut set = lockscope::tokio::task::JoinSet::new();
    /// set.spawn(std::future::pending::<()>());
    /// set.shutdown().await;
    /// assert!(set.is_empty());
    /// # }
    /// ```
    pub async fn shutdown(&mut self) {
        self.abort_all();
        while self.join_next().await.is_some() {}
    }

    /// Wrapper for [`tokio::task::JoinSet::join_all`].
    ///
    /// # Panics
    ///
    /// As tokio's: re-raises a task's panic, and panics on a cancelled task.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut set = lockscope::tokio::task::JoinSet::new();
    /// set.spawn(async { 1 });
    /// assert_eq!(set.join_all().await, [1]);
    /// # }
    /// ```
    pub async fn join_all(mut self) -> Vec<T> {
        let mut output = Vec::with_capacity(self.len());
        while let Some(res) = self.join_next().await {
            match res {
                Ok(t) => output.push(t),
                Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
                Err(err) => panic!("{err}"),
            }
        }
        output
    }

    /// Wrapper for [`tokio::task::JoinSet::abort_all`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut set = lockscope::tokio::task::JoinSet::new();
    /// set.spawn(std::future::pending::<()>());
    /// set.abort_all();
    /// assert!(set.join_next().await.unwrap().unwrap_err().is_cancelled());
    /// # }
    /// ```
    pub fn abort_all(&mut self) {
        self.inner.abort_all();
    }

    /// Wrapper for [`tokio::task::JoinSet::detach_all`]: the tasks leave the set (and the
    /// detector's list of it).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut set = lockscope::tokio::task::JoinSet::new();
    /// set.spawn(async {});
    /// set.detach_all();
    /// assert!(set.is_empty());
    /// # }
    /// ```
    pub fn detach_all(&mut self) {
        self.inner.detach_all();
        self.members.clear();
    }

    /// Wrapper for [`tokio::task::JoinSet::poll_join_next`] (records no wait).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut set = lockscope::tokio::task::JoinSet::new();
    /// set.spawn(async { 1 });
    /// let r = std::future::poll_fn(|cx| set.poll_join_next(cx)).await;
    /// assert_eq!(r.unwrap().unwrap(), 1);
    /// # }
    /// ```
    pub fn poll_join_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, JoinError>>> {
        self.poll_join_next_with_id(cx)
            .map(|o| o.map(|r| r.map(|(_, t)| t)))
    }

    /// Wrapper for [`tokio::task::JoinSet::poll_join_next_with_id`] (records no wait).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut set = lockscope::tokio::task::JoinSet::new();
    /// let id = set.spawn(async { 1 }).id();
    /// let r = std::future::poll_fn(|cx| set.poll_join_next_with_id(cx)).await;
    /// assert_eq!(r.unwrap().unwrap(), (id, 1));
    /// # }
    /// ```
    pub fn poll_join_next_with_id(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<(Id, T), JoinError>>> {
        let out = self.inner.poll_join_next_with_id(cx);
        if let Poll::Ready(o) = &out {
            self.note(o);
        }
        out
    }
}

impl<T> Default for JoinSet<T> {
    #[track_caller]
    fn default() -> Self {
        Self::new()
    }
}

impl<T> std::fmt::Debug for JoinSet<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl<T, F> std::iter::FromIterator<F> for JoinSet<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    #[track_caller]
    fn from_iter<I: IntoIterator<Item = F>>(iter: I) -> Self {
        let mut set = Self::new();
        set.extend(iter);
        set
    }
}

impl<T, F> std::iter::Extend<F> for JoinSet<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    #[track_caller]
    fn extend<I: IntoIterator<Item = F>>(&mut self, iter: I) {
        let site = Location::caller();
        for task in iter {
            let a = self.inner.spawn(task);
            self.added(a, site);
        }
    }
}
