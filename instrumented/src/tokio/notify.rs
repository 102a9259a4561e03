//! Drop-in replacement for `tokio::sync::Notify`: the same methods, futures ([`Notified`],
//! [`OwnedNotified`], with `enable`), trait impls and `Send`/`Sync`/`Unpin`. tokio's own
//! `Notify` does all the work: the wrapper only translates.
//!
//! What you gain: awaiting a notification that is not there yet is a wait the detector sees.
//! It is an open wait (any task can call `notify_one`), so it is never part of a proven
//! deadlock, but a test that hangs on it fails after its test timeout with a dump naming the
//! `Notify`, its creation site and the waiter. A notification that is already there records
//! nothing; a `Notified` dropped while it waits (a `select!` taking another branch) leaves
//! nothing behind.

use std::fmt;
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use lockscope_detector::__private::hooks::{self, ChanOp, ChanWait, Channel};
use pin_project_lite::pin_project;
use tokio::sync::futures::Notified as RawNotified;

/// Notifies a single task to wake up, or all waiting tasks: wrapper for
/// [`tokio::sync::Notify`].
///
/// lockscope adds a name ([`Notify::named`], else the creation site) for reports, and sees a
/// task waiting in [`notified`](Notify::notified) once it has to wait.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use lockscope::tokio::Notify;
///
/// let ready = Arc::new(Notify::named("ready"));
/// let waiter = tokio::spawn({
///     let ready = ready.clone();
///     async move { ready.notified().await }
/// });
/// ready.notify_one();
/// waiter.await.unwrap();
/// # }
/// ```
pub struct Notify {
    inner: tokio::sync::Notify,
    site: &'static Location<'static>,
    name: Option<Box<str>>,
    /// The record the detector's waits point to, made by the first wait (so that `const_new`
    /// and a `Notify` that never makes anyone wait cost nothing).
    chan: OnceLock<Arc<Channel>>,
}

impl Notify {
    /// Wrapper for [`tokio::sync::Notify::new`], named after the line that calls it.
    #[track_caller]
    pub fn new() -> Notify {
        Notify {
            inner: tokio::sync::Notify::new(),
            site: Location::caller(),
            name: None,
            chan: OnceLock::new(),
        }
    }

    /// Wrapper for [`tokio::sync::Notify::const_new`]: usable in `static`s, named after the
    /// line that calls it.
    ///
    /// ```
    /// use lockscope::tokio::Notify;
    /// static SHUTDOWN: Notify = Notify::const_new();
    /// SHUTDOWN.notify_one();
    /// ```
    #[track_caller]
    pub const fn const_new() -> Notify {
        Notify {
            inner: tokio::sync::Notify::const_new(),
            site: Location::caller(),
            name: None,
            chan: OnceLock::new(),
        }
    }

    /// A `Notify` named `name` in reports (lockscope addition).
    ///
    /// ```
    /// let n = lockscope::tokio::Notify::named("config reloaded");
    /// assert_eq!(n.name(), "config reloaded");
    /// ```
    #[track_caller]
    pub fn named(name: impl AsRef<str>) -> Notify {
        Notify {
            name: Some(name.as_ref().into()),
            ..Notify::new()
        }
    }

    /// The name used in reports (lockscope addition): the one given to [`Notify::named`], or
    /// the creation site's `file:line`.
    pub fn name(&self) -> &str {
        self.chan().name()
    }

    /// Wrapper for [`tokio::sync::Notify::notified`]. As with tokio's, the future takes part
    /// in [`notify_waiters`](Notify::notify_waiters) calls made after this call, even before
    /// it is first polled.
    #[track_caller]
    pub fn notified(&self) -> Notified<'_> {
        Notified {
            inner: self.inner.notified(),
            notify: self,
            site: Location::caller(),
            wait: ChanWait::none(),
        }
    }

    /// Wrapper for [`tokio::sync::Notify::notified_owned`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// let notify = Arc::new(lockscope::tokio::Notify::new());
    /// let notified = notify.clone().notified_owned();
    /// notify.notify_one();
    /// notified.await;
    /// # }
    /// ```
    #[track_caller]
    pub fn notified_owned(self: Arc<Self>) -> OwnedNotified {
        // SAFETY: the reference points into the `Arc`'s allocation, which `OwnedNotified`
        // keeps alive in its `notify` field for as long as `inner` exists: `inner` is declared
        // before it and so dropped first, and is never handed out. An `Arc` gives only shared
        // access, so the `Notify` is neither moved nor mutated while borrowed.
        let notify: &'static Notify = unsafe { &*Arc::as_ptr(&self) };
        OwnedNotified {
            inner: notify.inner.notified(),
            notify: self,
            site: Location::caller(),
            wait: ChanWait::none(),
        }
    }

    /// Wrapper for [`tokio::sync::Notify::notify_one`].
    #[inline]
    pub fn notify_one(&self) {
        self.inner.notify_one();
    }

    /// Wrapper for [`tokio::sync::Notify::notify_last`].
    #[inline]
    pub fn notify_last(&self) {
        self.inner.notify_last();
    }

    /// Wrapper for [`tokio::sync::Notify::notify_waiters`].
    #[inline]
    pub fn notify_waiters(&self) {
        self.inner.notify_waiters();
    }

    /// The detector's record of this `Notify`, made on first use.
    fn chan(&self) -> &Arc<Channel> {
        self.chan
            .get_or_init(|| hooks::channel("notify", self.name.as_deref(), self.site, None))
    }
}

impl Default for Notify {
    #[track_caller]
    fn default() -> Notify {
        Notify::new()
    }
}

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl std::panic::UnwindSafe for Notify {}
impl std::panic::RefUnwindSafe for Notify {}

/// Polls tokio's future `inner`, waiting on `notify` since `site`, and keeps `wait` in the
/// books while it is pending.
#[inline]
fn poll_notified<F: Future<Output = ()>>(
    inner: Pin<&mut F>,
    cx: &mut Context<'_>,
    notify: &Notify,
    site: &'static Location<'static>,
    wait: &mut ChanWait,
) -> Poll<()> {
    let out = inner.poll(cx);
    if out.is_ready() {
        wait.end();
    } else if !wait.is_recorded() {
        begin_wait(notify, site, wait);
    }
    out
}

/// The wait begins (cold: only a `Notified` that has to wait gets here).
#[cold]
#[inline(never)]
fn begin_wait(notify: &Notify, site: &'static Location<'static>, wait: &mut ChanWait) {
    if hooks::enabled() {
        *wait = hooks::chan_wait_begin(notify.chan(), ChanOp::Notified, site, false);
    }
}

pin_project! {
    /// Future returned from [`Notify::notified`]: wrapper for
    /// [`tokio::sync::futures::Notified`].
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Notified<'a> {
        #[pin]
        inner: RawNotified<'a>,
        notify: &'a Notify,
        site: &'static Location<'static>,
        wait: ChanWait,
    }
}

impl Notified<'_> {
    /// Wrapper for [`tokio::sync::futures::Notified::enable`]: registers for a
    /// `notify_one` without waiting (nothing enters the books).
    pub fn enable(self: Pin<&mut Self>) -> bool {
        self.project().inner.enable()
    }
}

impl Future for Notified<'_> {
    type Output = ();

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        poll_notified(this.inner, cx, this.notify, this.site, this.wait)
    }
}

impl fmt::Debug for Notified<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

pin_project! {
    /// Future returned from [`Notify::notified_owned`]: wrapper for
    /// [`tokio::sync::futures::OwnedNotified`].
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct OwnedNotified {
        // Borrows `*notify`: declared first so that it is dropped first (see `notified_owned`).
        #[pin]
        inner: RawNotified<'static>,
        notify: Arc<Notify>,
        site: &'static Location<'static>,
        wait: ChanWait,
    }
}

impl OwnedNotified {
    /// Wrapper for [`tokio::sync::futures::OwnedNotified::enable`]: registers for a
    /// `notify_one` without waiting (nothing enters the books).
    pub fn enable(self: Pin<&mut Self>) -> bool {
        self.project().inner.enable()
    }
}

impl Future for OwnedNotified {
    type Output = ();

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        poll_notified(this.inner, cx, this.notify, this.site, this.wait)
    }
}

impl fmt::Debug for OwnedNotified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}
