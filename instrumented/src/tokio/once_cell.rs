//! [`OnceCell`]: a drop-in `tokio::sync::OnceCell`.
//!
//! The model: an initialiser at work holds the cell (one permit, as inside tokio's own
//! `OnceCell`, which is a semaphore of one permit closed once the value is set), and a caller
//! of `get_or_init` that has to wait for it waits in the cell's queue. So a wait for an
//! initialiser is a precise edge to the actor running it, in the same books as a lock's: an
//! initialiser that waits for a lock held by a task that waits for the cell is a `deadlock`,
//! and an initialiser that waits for its own cell a `nested-acquire`.
//!
//! tokio's cell does the work: lockscope watches its `get_or_init` from outside. The closure
//! given to tokio runs only once this caller holds tokio's permit, so calling it is the grant;
//! a poll that returns `Pending` before it ran is a wait in tokio's queue; a poll that returns
//! the value without it ran is a wait that ended because another caller set the value.
//!
//! | step | books |
//! |---|---|
//! | the cell is initialised at the first poll | nothing (one load) |
//! | `Pending` before the closure ran | a wait begins (once) |
//! | the closure runs (after a wait or not) | the wait ends, the hold begins |
//! | the initialiser's future ends, fails, panics or is dropped | the hold ends |
//! | the value arrives from another caller | the wait ends |
//! | the future is dropped while it waits | the wait is cancelled |

use std::fmt;
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::sync::Mutex as StdMutex;
use std::task::{Context, Poll};

use lockscope_detector::__private::hooks::{Acq, Mode, PrimCell, PrimKind};
use lockscope_detector::__private::prim::Prim;
use pin_project_lite::pin_project;

use crate::probe::{State, Token};

/// Wrapper for [`tokio::sync::OnceCell`]: a thread-safe cell written once, by an
/// asynchronous initialiser whose run lockscope sees.
///
/// Same API, same behaviour: the cell is tokio's own, so its callers are served in the same
/// order and a cancelled or failed initialiser lets the next caller try. lockscope adds a
/// name ([`OnceCell::named`], else the creation site) and sees each caller that waits for a
/// running initialiser as waiting for the task that runs it. A cell that is already set costs
/// what tokio's does: one load, nothing recorded.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use lockscope::tokio::OnceCell;
///
/// static CONFIG: OnceCell<u32> = OnceCell::const_new();
///
/// let port = CONFIG.get_or_init(|| async { 8080 }).await;
/// assert_eq!(*port, 8080);
/// assert_eq!(CONFIG.get(), Some(&8080));
/// # }
/// ```
pub struct OnceCell<T> {
    cell: PrimCell,
    inner: tokio::sync::OnceCell<T>,
}

impl<T> OnceCell<T> {
    /// Wrapper for [`tokio::sync::OnceCell::new`], named after the caller's location.
    ///
    /// ```
    /// let cell = lockscope::tokio::OnceCell::<u8>::new();
    /// assert!(!cell.initialized());
    /// assert!(cell.name().contains(".rs:"));
    /// ```
    #[track_caller]
    pub fn new() -> Self {
        OnceCell {
            cell: PrimCell::new(None, PrimKind::OnceCell, Location::caller(), 1),
            inner: tokio::sync::OnceCell::new(),
        }
    }

    /// An empty cell named `name` in spans, metrics and reports (lockscope addition).
    ///
    /// ```
    /// let cell = lockscope::tokio::OnceCell::<String>::named("settings");
    /// assert_eq!(cell.name(), "settings");
    /// ```
    #[track_caller]
    pub fn named(name: impl AsRef<str>) -> Self {
        OnceCell {
            cell: PrimCell::new(
                Some(name.as_ref().into()),
                PrimKind::OnceCell,
                Location::caller(),
                1,
            ),
            inner: tokio::sync::OnceCell::new(),
        }
    }

    /// Wrapper for [`tokio::sync::OnceCell::const_new`]: usable in `static`s; registers with
    /// the detector on first use, named after the caller's location.
    ///
    /// ```
    /// use lockscope::tokio::OnceCell;
    /// static CELL: OnceCell<u8> = OnceCell::const_new();
    /// assert!(CELL.get().is_none());
    /// ```
    #[track_caller]
    pub const fn const_new() -> Self {
        OnceCell {
            cell: PrimCell::lazy(PrimKind::OnceCell, Location::caller(), 1),
            inner: tokio::sync::OnceCell::const_new(),
        }
    }

    /// Wrapper for [`tokio::sync::OnceCell::new_with`], named after the caller's location.
    ///
    /// ```
    /// let cell = lockscope::tokio::OnceCell::new_with(Some(3));
    /// assert_eq!(cell.get(), Some(&3));
    /// ```
    #[track_caller]
    pub fn new_with(value: Option<T>) -> Self {
        match value {
            Some(v) => OnceCell::set_at(v, Location::caller()),
            None => OnceCell::new(),
        }
    }

    /// Wrapper for [`tokio::sync::OnceCell::const_new_with`]: usable in `static`s.
    ///
    /// ```
    /// use lockscope::tokio::OnceCell;
    /// static CELL: OnceCell<u8> = OnceCell::const_new_with(7);
    /// assert_eq!(CELL.get(), Some(&7));
    /// ```
    #[track_caller]
    pub const fn const_new_with(value: T) -> Self {
        OnceCell {
            cell: PrimCell::lazy(PrimKind::OnceCell, Location::caller(), 1),
            inner: tokio::sync::OnceCell::const_new_with(value),
        }
    }

    /// A cell born set: it can never be waited for, so it registers only if it is emptied
    /// ([`OnceCell::take`]) and used again.
    fn set_at(value: T, site: &'static Location<'static>) -> Self {
        OnceCell {
            cell: PrimCell::lazy(PrimKind::OnceCell, site, 1),
            inner: tokio::sync::OnceCell::from(value),
        }
    }

    /// The name used in spans, metrics and reports (lockscope addition).
    ///
    /// ```
    /// let cell = lockscope::tokio::OnceCell::<u8>::named("token");
    /// assert_eq!(cell.name(), "token");
    /// ```
    pub fn name(&self) -> &str {
        self.cell.get().name()
    }

    /// Wrapper for [`tokio::sync::OnceCell::initialized`].
    ///
    /// ```
    /// let cell = lockscope::tokio::OnceCell::new();
    /// assert!(!cell.initialized());
    /// cell.set(1).unwrap();
    /// assert!(cell.initialized());
    /// ```
    #[inline]
    pub fn initialized(&self) -> bool {
        self.inner.initialized()
    }

    /// Wrapper for [`tokio::sync::OnceCell::get`].
    ///
    /// ```
    /// let cell = lockscope::tokio::OnceCell::from(5);
    /// assert_eq!(cell.get(), Some(&5));
    /// ```
    #[inline]
    pub fn get(&self) -> Option<&T> {
        self.inner.get()
    }

    /// Wrapper for [`tokio::sync::OnceCell::get_mut`].
    ///
    /// ```
    /// let mut cell = lockscope::tokio::OnceCell::from(5);
    /// *cell.get_mut().unwrap() += 1;
    /// assert_eq!(cell.get(), Some(&6));
    /// ```
    #[inline]
    pub fn get_mut(&mut self) -> Option<&mut T> {
        self.inner.get_mut()
    }

    /// Wrapper for [`tokio::sync::OnceCell::set`].
    ///
    /// # Errors
    ///
    /// As tokio's: [`SetError::AlreadyInitializedError`](super::SetError) when the cell is
    /// set, [`SetError::InitializingError`](super::SetError) while an initialiser runs.
    ///
    /// ```
    /// let cell = lockscope::tokio::OnceCell::new();
    /// assert!(cell.set(1).is_ok());
    /// assert!(cell.set(2).unwrap_err().is_already_init_err());
    /// ```
    #[inline]
    pub fn set(&self, value: T) -> Result<(), super::SetError<T>> {
        self.inner.set(value)
    }

    /// Wrapper for [`tokio::sync::OnceCell::get_or_init`]. A caller that finds an initialiser
    /// at work waits for the task running it, and the detector sees that wait; the caller
    /// whose closure runs holds the cell until its future ends.
    ///
    /// # Cancel safety
    ///
    /// As tokio's: dropping the future while it waits gives up its place in the queue;
    /// dropping it while its initialiser runs cancels that attempt, and the next caller in
    /// the queue tries. lockscope records the wait as cancelled, or the hold as ended.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let cell = lockscope::tokio::OnceCell::named("answer");
    /// let v = cell.get_or_init(|| async { 42 }).await;
    /// assert_eq!(*v, 42);
    /// // Set already: the closure does not run.
    /// assert_eq!(*cell.get_or_init(|| async { 0 }).await, 42);
    /// # }
    /// ```
    #[track_caller]
    pub fn get_or_init<F, Fut>(&self, f: F) -> impl Future<Output = &T>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        let site = Location::caller();
        async move {
            if let Some(v) = self.inner.get() {
                return v;
            }
            let prim = self.cell.get();
            let books = Books::new(prim, site);
            let inner = self.inner.get_or_init(|| books.initialise(f));
            Watch::new(inner, &books).await
        }
    }

    /// Wrapper for [`tokio::sync::OnceCell::get_or_try_init`]: as
    /// [`get_or_init`](OnceCell::get_or_init); an initialiser that returns an error ends its
    /// hold, and the next caller in the queue tries.
    ///
    /// # Errors
    ///
    /// The initialiser's error, as tokio's.
    ///
    /// # Cancel safety
    ///
    /// As [`get_or_init`](OnceCell::get_or_init).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let cell = lockscope::tokio::OnceCell::<u8>::new();
    /// let e = cell.get_or_try_init(|| async { Err::<u8, _>("offline") }).await;
    /// assert_eq!(e, Err("offline"));
    /// assert_eq!(cell.get_or_try_init(|| async { Ok::<_, ()>(1) }).await, Ok(&1));
    /// # }
    /// ```
    #[track_caller]
    pub fn get_or_try_init<E, F, Fut>(&self, f: F) -> impl Future<Output = Result<&T, E>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let site = Location::caller();
        async move {
            if let Some(v) = self.inner.get() {
                return Ok(v);
            }
            let prim = self.cell.get();
            let books = Books::new(prim, site);
            let inner = self.inner.get_or_try_init(|| books.initialise(f));
            Watch::new(inner, &books).await
        }
    }

    /// Wrapper for [`tokio::sync::OnceCell::into_inner`].
    ///
    /// ```
    /// let cell = lockscope::tokio::OnceCell::from("v");
    /// assert_eq!(cell.into_inner(), Some("v"));
    /// ```
    pub fn into_inner(self) -> Option<T> {
        self.inner.into_inner()
    }

    /// Wrapper for [`tokio::sync::OnceCell::take`]: the cell is empty after, and keeps its
    /// name.
    ///
    /// ```
    /// let mut cell = lockscope::tokio::OnceCell::from(1);
    /// assert_eq!(cell.take(), Some(1));
    /// assert!(!cell.initialized());
    /// ```
    pub fn take(&mut self) -> Option<T> {
        self.inner.take()
    }
}

/// One slow call's books: the probe's state for `prim`, shared by the future that watches
/// tokio's and the closure tokio calls when this caller is granted the cell.
///
/// A lock, where one poll at a time touches it: the closure runs inside the watcher's poll,
/// so they never contend, and the future stays `Send` with a `Sync` field borrowed by both.
struct Books<'a> {
    prim: &'a Prim,
    acq: Acq,
    state: StdMutex<State>,
}

impl<'a> Books<'a> {
    fn new(prim: &'a Prim, site: &'static Location<'static>) -> Self {
        Books {
            prim,
            acq: Acq::new(site, 1, Mode::Exclusive),
            state: StdMutex::new(State::start()),
        }
    }

    /// Runs `f` with `step` on the state. A panic cannot leave the state half-written (each
    /// step is the detector's, which does not unwind through it), so a poisoned lock is used
    /// as it stands.
    fn with<R>(&self, step: impl FnOnce(&mut State, &'a Prim, Acq) -> R) -> R {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        step(&mut state, self.prim, self.acq)
    }

    /// tokio granted the cell to this caller: the wait (if any) ends and the hold begins,
    /// before `f` runs, so that what the initialiser takes is ordered after the cell and a
    /// wait of its own for the cell is seen as nested. The hold ends with the returned
    /// future: when it completes (before tokio stores the value), fails, panics or is dropped.
    fn initialise<F, Fut>(&self, f: F) -> impl Future<Output = Fut::Output> + use<'a, F, Fut>
    where
        F: FnOnce() -> Fut,
        Fut: Future,
    {
        let token = self.with(|state, prim, acq| {
            if state.is_off() {
                Token::none()
            } else {
                state.granted(prim, acq)
            }
        });
        // Made before `f` runs: if `f` itself panics, the hold ends as the stack unwinds.
        let hold = InitHold {
            prim: self.prim,
            token,
        };
        let fut = f();
        async move {
            let value = fut.await;
            drop(hold);
            value
        }
    }
}

/// The hold of a running initialiser: released when dropped.
struct InitHold<'a> {
    prim: &'a Prim,
    token: Token,
}

impl Drop for InitHold<'_> {
    fn drop(&mut self) {
        self.token.release(self.prim);
    }
}

pin_project! {
    /// tokio's `get_or_init` future, watched: see the module docs.
    struct Watch<'b, 'a, F> {
        #[pin]
        inner: F,
        books: &'b Books<'a>,
    }

    impl<'b, 'a, F> PinnedDrop for Watch<'b, 'a, F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            this.books.with(|state, prim, _| state.cancel(prim));
        }
    }
}

impl<'b, 'a, F> Watch<'b, 'a, F> {
    fn new(inner: F, books: &'b Books<'a>) -> Self {
        Watch { inner, books }
    }
}

impl<F: Future> Future for Watch<'_, '_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let out = this.inner.poll(cx);
        this.books.with(|state, prim, acq| {
            if state.is_off() {
                return;
            }
            match out {
                // Granted in an earlier step (the state is done) or never: the value came
                // from another caller, and a wait in progress ends.
                Poll::Ready(_) => state.failed(prim),
                // Waiting in tokio's queue, unless the closure ran (the state is done).
                Poll::Pending => state.pending(prim, acq),
            }
        });
        out
    }
}

impl<T> Default for OnceCell<T> {
    /// Wrapper for tokio's `Default`: an empty cell named after the caller's location.
    #[track_caller]
    fn default() -> Self {
        OnceCell::new()
    }
}

impl<T: fmt::Debug> fmt::Debug for OnceCell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

impl<T: Clone> Clone for OnceCell<T> {
    /// As tokio's: a new cell holding a clone of the value, if set; named after the caller's
    /// location.
    #[track_caller]
    fn clone(&self) -> Self {
        OnceCell::new_with(self.get().cloned())
    }
}

impl<T: PartialEq> PartialEq for OnceCell<T> {
    fn eq(&self, other: &OnceCell<T>) -> bool {
        self.get() == other.get()
    }
}

impl<T: Eq> Eq for OnceCell<T> {}

impl<T> From<T> for OnceCell<T> {
    /// As tokio's: a cell set to `value`, named after the caller's location.
    #[track_caller]
    fn from(value: T) -> Self {
        OnceCell::set_at(value, Location::caller())
    }
}
