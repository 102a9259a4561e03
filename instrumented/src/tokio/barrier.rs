//! Drop-in replacement for `tokio::sync::Barrier`: the same `new` and `wait`, tokio's own
//! [`BarrierWaitResult`], the same trait impls and `Send`/`Sync`/`Unpin`. tokio's barrier does
//! all the work: the wrapper only translates.
//!
//! What you gain: a task waiting at the barrier for the other parties is a wait the detector
//! sees. It is an open wait (which tasks will arrive is not known), so it is never part of a
//! proven deadlock, but a test that hangs on it fails after its test timeout with a dump
//! naming the barrier, its creation site and the waiter. The last party to arrive, which does
//! not wait, records nothing.

use std::fmt;
use std::future::Future;
use std::panic::Location;
use std::sync::Arc;

use lockscope_detector::__private::hooks::{self, ChanOp, Channel};

use super::chan_wait::Waiting;

/// tokio's own result type, re-exported unchanged.
pub use tokio::sync::BarrierWaitResult;

/// A barrier for `n` tasks: wrapper for [`tokio::sync::Barrier`].
///
/// lockscope adds a name ([`Barrier::named`], else the creation site) for reports.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use lockscope::tokio::Barrier;
///
/// let start = Arc::new(Barrier::named("start", 3));
/// let tasks: Vec<_> = (0..3)
///     .map(|_| tokio::spawn({
///         let start = start.clone();
///         async move { start.wait().await.is_leader() }
///     }))
///     .collect();
/// let mut leaders = 0;
/// for t in tasks {
///     leaders += t.await.unwrap() as usize;
/// }
/// assert_eq!(leaders, 1);
/// # }
/// ```
pub struct Barrier {
    inner: tokio::sync::Barrier,
    chan: Arc<Channel>,
}

impl Barrier {
    /// Wrapper for [`tokio::sync::Barrier::new`], named after the line that calls it.
    #[track_caller]
    pub fn new(n: usize) -> Barrier {
        Barrier::make(n, None)
    }

    /// A barrier for `n` tasks named `name` in reports (lockscope addition).
    ///
    /// ```
    /// let b = lockscope::tokio::Barrier::named("workers ready", 4);
    /// assert_eq!(b.name(), "workers ready");
    /// ```
    #[track_caller]
    pub fn named(name: impl AsRef<str>, n: usize) -> Barrier {
        Barrier::make(n, Some(name.as_ref()))
    }

    #[track_caller]
    fn make(n: usize, name: Option<&str>) -> Barrier {
        Barrier {
            inner: tokio::sync::Barrier::new(n),
            chan: hooks::channel("barrier", name, Location::caller(), None),
        }
    }

    /// The name used in reports (lockscope addition): the one given to [`Barrier::named`],
    /// or the creation site's `file:line`.
    pub fn name(&self) -> &str {
        self.chan.name()
    }

    /// Wrapper for [`tokio::sync::Barrier::wait`]: a task that has to wait for the other
    /// parties is a wait the detector sees (an open one).
    #[track_caller]
    pub fn wait(&self) -> impl Future<Output = BarrierWaitResult> + Send + '_ {
        Waiting::new(
            self.inner.wait(),
            &self.chan,
            ChanOp::Barrier,
            Location::caller(),
        )
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}
